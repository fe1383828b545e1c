"""Pro Expense (com.arduia.expense): a home screen with this week's total and recent expenses, Expense Logs
(every expense by date, long-press multi-select and delete), an expense detail sheet (Edit / Delete), and the
Expense Entry form (name, amount, category chips, note). Data lives in `dev.table("expense")` with
AndroidWorld's columns: expense_id, name, amount (cents), category (id 1..11), note, created_date and
modified_date (ms)."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable
from typing import Any

from voyager_gym.backends.sim import widgets as w
from voyager_gym.backends.sim.device import DeviceState
from voyager_gym.backends.sim.ui import (
    GREY,
    HINT,
    LIGHT,
    PAD,
    ROW2_H,
    UI,
    WHITE,
    App,
    Screen,
    register_app,
)
from voyager_gym.backends.sim.widgets import SCREEN_W, Node

PKG = "com.arduia.expense"
TABLE = "expense"
COLOR = (0, 121, 107)
CATEGORIES: dict[int, str] = {
    1: "Others",
    2: "Income",
    3: "Food",
    4: "Housing",
    5: "Social",
    6: "Entertainment",
    7: "Transportation",
    8: "Clothes",
    9: "Health Care",
    10: "Education",
    11: "Donation",
}
CATEGORY_IDS = {v: k for k, v in CATEGORIES.items()}
HEADER_H = 104


def rows(dev: DeviceState) -> list[dict[str, Any]]:
    return dev.table(TABLE)


def find_row(dev: DeviceState, expense_id: int) -> dict[str, Any] | None:
    return next((r for r in rows(dev) if r["expense_id"] == expense_id), None)


def insert_expense(
    dev: DeviceState,
    name: str,
    amount: int,
    category: int,
    note: str,
    created_ms: int,
    modified_ms: int | None = None,
) -> dict[str, Any]:
    """Append a row with the next autoincrement id (as SQLite would assign it)."""
    table = rows(dev)
    row = {
        "expense_id": max((r["expense_id"] for r in table), default=0) + 1,
        "name": name,
        "amount": amount,
        "category": category,
        "note": note,
        "created_date": created_ms,
        "modified_date": created_ms if modified_ms is None else modified_ms,
    }
    table.append(row)
    return row


def money(cents: int) -> str:
    return f"${cents // 100:,}.{cents % 100:02d}"


def day_of(ms: int) -> dt.date:
    return dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC).date()


def day_label(dev: DeviceState, ms: int) -> str:
    d, today = day_of(ms), dev.now.date()
    if d == today:
        return "Today"
    if d == today - dt.timedelta(days=1):
        return "Yesterday"
    return d.strftime("%b %-d, %Y")


def newest_first(dev: DeviceState) -> list[dict[str, Any]]:
    return sorted(rows(dev), key=lambda r: (-r["created_date"], -r["expense_id"]))


def parse_amount(text: str) -> int | None:
    """A decimal amount field accepts digits and one point; anything else typed is dropped."""
    s = re.sub(r"[^0-9.]", "", text or "")
    if s.count(".") > 1 or not re.search(r"\d", s):
        return None
    return round(float(s) * 100)


def close_modals(ui: UI) -> None:
    st = ui.phone.stack(PKG)
    while len(st) > 1 and st[-1].modal:
        st.pop()


def expense_row(
    ui: UI,
    r: dict[str, Any],
    b: w.Bounds,
    on_click: Callable[[], Any] | None,
    on_long: Callable[[], Any] | None = None,
    selected: bool = False,
    show_date: bool = False,
) -> Node:
    """One expense: category badge, name, category (and date), amount at the right."""
    x0, y0, x1, y1 = b
    mid = (y0 + y1) // 2
    cat = CATEGORIES.get(r["category"], "Others")
    row = Node(
        w.LINEAR,
        bounds=b,
        clickable=on_click is not None,
        on_click=on_click,
        long_clickable=on_long is not None,
        on_long_click=on_long,
        border=LIGHT,
        bg=(204, 235, 231) if selected else None,
        selected=selected,
    )
    row.add(
        Node(
            w.IMAGE,
            bounds=(x0 + 36, mid - 48, x0 + 132, mid + 48),
            icon="check" if selected else f"app:{cat[0]}",
            icon_fg=COLOR,
            a11y=False,
        )
    )
    sub = f"{cat} · {day_label(ui.dev, r['created_date'])}" if show_date else cat
    row.add(
        Node(
            w.TEXT,
            text=r["name"],
            bounds=(x0 + 168, mid - 58, x1 - 330, mid + 2),
            size=44,
            selected=selected,
            rid=f"{PKG}:id/tv_name",
        )
    )
    row.add(
        Node(
            w.TEXT,
            text=sub,
            bounds=(x0 + 168, mid + 6, x1 - 330, mid + 58),
            size=34,
            fg=GREY,
            rid=f"{PKG}:id/tv_category",
        )
    )
    row.add(
        Node(
            w.TEXT,
            text=money(r["amount"]),
            bounds=(x1 - 320, y0, x1 - PAD, y1),
            size=42,
            bold=True,
            align="right",
            rid=f"{PKG}:id/tv_amount",
        )
    )
    return row


class HomeScreen(Screen):
    """Home: weekly total card, the five most recent expenses, More -> Expense Logs, add FAB."""

    def build(self, ui: UI) -> list[Node]:
        dev = ui.dev
        bar = ui.app_bar("Pro Expense")
        nav = bar.children[0]
        nav.desc, nav.icon, nav.on_click = "Open navigation drawer", "menu", (lambda: ui.push(DrawerScreen()))
        y = ui.below_bar()
        today = dev.now.date()
        week0 = today - dt.timedelta(days=today.weekday())
        per_day = [0] * 7
        for r in rows(dev):
            d = day_of(r["created_date"])
            if week0 <= d <= today and r["category"] != 2:
                per_day[(d - week0).days] += r["amount"]
        card = Node(w.FRAME, bounds=(PAD, y + 32, SCREEN_W - PAD, y + 452), bg=COLOR, radius=32, a11y=False)
        card.add(
            ui.text(
                "Expenses in this Week",
                (PAD + 40, y + 56, SCREEN_W - PAD - 40, y + 120),
                size=38,
                fg=WHITE,
                rid=f"{PKG}:id/tv_week_title",
            )
        )
        card.add(
            ui.text(
                money(sum(per_day)),
                (PAD + 40, y + 120, SCREEN_W - PAD - 40, y + 210),
                size=64,
                fg=WHITE,
                bold=True,
                rid=f"{PKG}:id/tv_week_total",
            )
        )
        top = max(per_day) or 1
        bw = (SCREEN_W - 2 * PAD - 80) // 7
        for i, (lbl, v) in enumerate(zip(("MO", "TU", "WE", "TH", "FR", "SA", "SU"), per_day, strict=True)):
            bx = PAD + 40 + i * bw
            h = int(140 * v / top)
            card.add(
                Node(
                    w.VIEW,
                    bounds=(bx + 30, y + 370 - h, bx + bw - 30, y + 370),
                    bg=(128, 203, 196),
                    radius=8,
                    a11y=False,
                )
            )
            card.add(
                Node(
                    w.TEXT,
                    text=lbl,
                    bounds=(bx, y + 380, bx + bw, y + 430),
                    size=30,
                    fg=WHITE,
                    align="center",
                    a11y=False,
                )
            )
        hy = y + 480
        out = [
            bar,
            card,
            ui.text("Recent", (PAD, hy, 600, hy + 100), size=46, bold=True, rid=f"{PKG}:id/tv_recent"),
            Node(
                w.BUTTON,
                text="More",
                bounds=(SCREEN_W - 300, hy + 10, SCREEN_W - PAD, hy + 90),
                clickable=True,
                on_click=lambda: ui.push(LogsScreen()),
                fg=COLOR,
                bold=True,
                align="center",
                size=40,
                rid=f"{PKG}:id/btn_more",
            ),
        ]
        recent = newest_first(dev)[:5]
        items = [
            (
                ROW2_H,
                (
                    lambda b, r=r: expense_row(
                        ui, r, b, lambda r=r: ui.push(DetailScreen(r["expense_id"])), show_date=True
                    )
                ),
            )
            for r in recent
        ]
        out.append(ui.list("rv_recent", items, y0=hy + 110, empty="No spending logged yet this month"))
        out.append(ui.fab("Add Expense", lambda: ui.push(EntryScreen())))
        return out


class DrawerScreen(Screen):
    """The navigation drawer over the home screen."""

    modal = True

    def build(self, ui: UI) -> list[Node]:
        panel = Node(w.FRAME, bounds=(0, ui.top, 780, ui.bottom), bg=WHITE, absorb=True, a11y=False)
        panel.add(Node(w.FRAME, bounds=(0, ui.top, 780, ui.top + 320), bg=COLOR, a11y=False))
        panel.add(
            ui.text("Pro Expense", (PAD, ui.top + 180, 740, ui.top + 280), size=56, fg=WHITE, bold=True)
        )

        def go_logs() -> None:
            ui.pop()
            ui.push(LogsScreen())

        entries = [
            ("Home", ui.pop),
            ("Expense Logs", go_logs),
            ("Statistics", lambda: None),
            ("Backup", lambda: None),
            ("Settings", lambda: None),
            ("Feedback", lambda: None),
            ("About", lambda: None),
        ]
        y = ui.top + 350
        for label, fn in entries:
            panel.add(
                ui.item(label, (0, y, 780, y + 150), on_click=fn, rid=f"{PKG}:id/design_menu_item_text")
            )
            y += 150
        return [panel]


class LogsScreen(Screen):
    """Expense Logs: every expense grouped by day; long-press starts multi-select with a Delete action."""

    def __init__(self) -> None:
        super().__init__()
        self.selected: list[int] = []

    def back(self, ui: UI) -> bool:
        if self.selected:
            self.selected = []
            return True
        return False

    def build(self, ui: UI) -> list[Node]:
        dev = ui.dev
        ids = {r["expense_id"] for r in rows(dev)}
        self.selected = [i for i in self.selected if i in ids]

        def toggle(eid: int) -> None:
            if eid in self.selected:
                self.selected.remove(eid)
            else:
                self.selected.append(eid)

        def delete_selected() -> None:
            ui.push(ConfirmDeleteScreen(list(self.selected)))

        def select_all() -> None:
            self.selected = [r["expense_id"] for r in rows(dev)]

        if self.selected:
            n = len(self.selected)
            bar = ui.app_bar(
                f"{n} item" + ("s" if n > 1 else ""),
                actions=[("Select All", "check", select_all), ("Delete", "delete", delete_selected)],
            )
            bar.children[0].desc, bar.children[0].icon = "Close", "close"
            bar.children[0].on_click = lambda: setattr(self, "selected", [])
        else:
            bar = ui.app_bar("Expense Logs", actions=[("Filter", "menu", lambda: None)])
        items: list[tuple[int, Callable[[w.Bounds], Node]]] = []
        last = None
        for r in newest_first(dev):
            label = day_label(dev, r["created_date"])
            if label != last:
                items.append(
                    (
                        HEADER_H,
                        lambda b, t=label: ui.text(
                            t,
                            (b[0] + PAD, b[1], b[2] - PAD, b[3]),
                            size=36,
                            fg=COLOR,
                            bold=True,
                            rid=f"{PKG}:id/tv_date_header",
                        ),
                    )
                )
                last = label
            eid = r["expense_id"]
            sel = eid in self.selected
            if self.selected:
                click, long = (lambda e=eid: toggle(e)), (lambda e=eid: toggle(e))
            else:
                click = lambda e=eid: ui.push(DetailScreen(e))
                long = lambda e=eid: toggle(e)
            items.append((ROW2_H, lambda b, r=r, c=click, lg=long, s=sel: expense_row(ui, r, b, c, lg, s)))
        return [bar, ui.list("rv_logs", items, empty="No Items")]


class DetailScreen(Screen):
    """Expense Detail bottom sheet: the fields plus Edit and Delete."""

    modal = True

    def __init__(self, expense_id: int) -> None:
        super().__init__()
        self.expense_id = expense_id

    def build(self, ui: UI) -> list[Node]:
        r = find_row(ui.dev, self.expense_id)
        if r is None:
            return []
        y0 = ui.bottom - 1040
        sheet = Node(
            w.FRAME,
            bounds=(0, y0, SCREEN_W, ui.bottom),
            bg=WHITE,
            radius=40,
            absorb=True,
            a11y=False,
            rid=f"{PKG}:id/sheet_expense_detail",
        )
        sheet.add(
            ui.text(
                "Expense Detail",
                (PAD, y0 + 40, SCREEN_W - PAD, y0 + 130),
                size=50,
                bold=True,
                rid=f"{PKG}:id/tv_detail_title",
            )
        )
        fields = [
            ("Name", r["name"], "tv_detail_name"),
            ("Amount", money(r["amount"]), "tv_detail_amount"),
            ("Category", CATEGORIES.get(r["category"], "Others"), "tv_detail_category"),
            ("Note", r["note"] or "-", "tv_detail_note"),
            (
                "Date",
                dt.datetime.fromtimestamp(r["created_date"] / 1000, tz=dt.UTC).strftime("%b %-d, %Y %H:%M"),
                "tv_detail_date",
            ),
        ]
        y = y0 + 160
        for label, value, rid in fields:
            sheet.add(ui.text(label, (PAD, y, 360, y + 110), size=38, fg=GREY))
            sheet.add(ui.text(value, (360, y, SCREEN_W - PAD, y + 110), size=42, rid=f"{PKG}:id/{rid}"))
            y += 120
        by = ui.bottom - 200

        def edit() -> None:
            ui.pop()
            ui.push(EntryScreen(self.expense_id, ui.dev))

        sheet.add(
            Node(
                w.BUTTON,
                text="Delete",
                bounds=(PAD, by, SCREEN_W // 2 - 24, by + 140),
                clickable=True,
                on_click=lambda: ui.replace(ConfirmDeleteScreen([self.expense_id])),
                fg=(217, 48, 37),
                border=(217, 48, 37),
                radius=70,
                bold=True,
                align="center",
                size=42,
                rid=f"{PKG}:id/btn_delete",
            )
        )
        sheet.add(
            Node(
                w.BUTTON,
                text="Edit",
                bounds=(SCREEN_W // 2 + 24, by, SCREEN_W - PAD, by + 140),
                clickable=True,
                on_click=edit,
                bg=COLOR,
                fg=WHITE,
                radius=70,
                bold=True,
                align="center",
                size=42,
                rid=f"{PKG}:id/btn_edit",
            )
        )
        return [sheet]


class ConfirmDeleteScreen(Screen):
    """'Delete Items' confirmation: Cancel / Confirm."""

    modal = True

    def __init__(self, ids: list[int]) -> None:
        super().__init__()
        self.ids = list(ids)

    def build(self, ui: UI) -> list[Node]:
        n = len(self.ids)
        panel, _ = ui.dialog_box("Delete Items", 480, f"{n} item{'s' if n > 1 else ''} will be deleted!")

        def confirm() -> None:
            table = rows(ui.dev)
            table[:] = [r for r in table if r["expense_id"] not in self.ids]
            close_modals(ui)
            under = ui.phone.stack(PKG)[-1]
            if isinstance(under, LogsScreen):
                under.selected = []
            ui.toast("Item Deleted" if n == 1 else "Items Deleted")

        ui.dialog_buttons(panel, [("Cancel", ui.pop), ("Confirm", confirm)])
        return [panel]


class EntryScreen(Screen):
    """Expense Entry: name, amount, category chips, note; Save (new) or Update (edit)."""

    def __init__(self, expense_id: int | None = None, dev: DeviceState | None = None) -> None:
        super().__init__()
        self.expense_id = expense_id
        self.category = 1
        if expense_id is not None and dev is not None:
            r = find_row(dev, expense_id)
            if r is not None:
                self.fields = {
                    "name": r["name"],
                    "amount": f"{r['amount'] / 100:.2f}",
                    "note": r["note"] or "",
                }
                self.category = r["category"]

    def build(self, ui: UI) -> list[Node]:
        editing = self.expense_id is not None
        y = ui.below_bar() + 36
        out = [
            ui.app_bar("Update Data" if editing else "Expense Entry"),
            ui.field("name", (PAD, y, SCREEN_W - PAD, y + 140), hint="Name"),
            ui.field("amount", (PAD, y + 170, SCREEN_W - PAD, y + 310), hint="Amount", numeric=True),
            ui.text("Category", (PAD, y + 340, SCREEN_W - PAD, y + 410), size=38, fg=GREY),
        ]
        cw = (SCREEN_W - 2 * PAD) // 3
        gy = y + 420
        for i, (cid, name) in enumerate(CATEGORIES.items()):
            rr, cc = divmod(i, 3)
            sel = cid == self.category
            b = (PAD + cc * cw + 8, gy + rr * 112 + 8, PAD + (cc + 1) * cw - 8, gy + (rr + 1) * 112 - 8)
            out.append(
                Node(
                    w.TEXT,
                    text=name,
                    bounds=b,
                    clickable=True,
                    selected=sel,
                    checkable=True,
                    checked=sel,
                    on_click=(lambda c=cid: setattr(self, "category", c)),
                    bg=COLOR if sel else (241, 243, 244),
                    fg=WHITE if sel else (32, 33, 36),
                    radius=48,
                    size=34,
                    align="center",
                    rid=f"{PKG}:id/category_chip",
                )
            )
        ny = gy + 4 * 112 + 24
        out.append(ui.field("note", (PAD, ny, SCREEN_W - PAD, ny + 140), hint="Note"))
        out.append(
            ui.text(
                f"Date   {ui.dev.now.strftime('%b %-d, %Y  %H:%M')}",
                (PAD, ny + 160, SCREEN_W - PAD, ny + 240),
                size=36,
                fg=HINT,
            )
        )
        out.append(
            ui.button(
                "Update" if editing else "Save",
                (PAD, ny + 270, SCREEN_W - PAD, ny + 410),
                self.save(ui),
                rid=f"{PKG}:id/btn_save",
            )
        )
        return out

    def save(self, ui: UI) -> Callable[[], None]:
        def on_click() -> None:
            amount = parse_amount(self.field("amount"))
            if amount is None:
                ui.toast("Cost is Empty")
                return
            name, note = self.field("name").strip(), self.field("note").strip()
            dev = ui.dev
            r = find_row(dev, self.expense_id) if self.expense_id is not None else None
            if r is not None:
                r.update(
                    name=name, amount=amount, category=self.category, note=note, modified_date=dev.time_ms
                )
            else:
                insert_expense(dev, name, amount, self.category, note, dev.time_ms)
            ui.unfocus()
            ui.pop()
            ui.toast("Data Updated!")

        return on_click


@register_app
class ProExpense(App):
    package = PKG
    name = "Pro Expense"
    aliases = r"pro expense|pro expense app"
    color = COLOR

    def main(self, dev: DeviceState) -> Screen:
        return HomeScreen()

    def setup(self, dev: DeviceState) -> None:
        rows(dev)
