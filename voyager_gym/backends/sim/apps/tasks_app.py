"""Tasks (org.tasks): the 'My Tasks' list grouped by due date or priority, a sort dialog, show/hide completed,
search, and the task editor (title, due date, priority, description).

Tasks live in `dev.table("tasks")` shaped like AndroidWorld's Task rows: _id, title, importance (0 high,
1 medium, 2 low, 3 none), dueDate, hideUntil, completed, created, modified (ms since the epoch, UTC), notes.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from voyager_gym.backends.sim import widgets as w
from voyager_gym.backends.sim.device import DeviceState
from voyager_gym.backends.sim.ui import (
    GREY,
    HINT,
    INK,
    LIGHT,
    PAD,
    ROW_H,
    UI,
    WHITE,
    App,
    Screen,
    register_app,
)
from voyager_gym.backends.sim.widgets import SCREEN_W, Node

PKG = "org.tasks"
COLOR = (33, 150, 243)
PRIORITY_NAMES = ("High", "Medium", "Low", "None")
PRIORITY_COLORS = ((244, 67, 54), (251, 140, 0), (33, 150, 243), (158, 158, 158))
SORTS = ("Due date", "Priority", "Title", "Created")
UTC = dt.UTC


def tasks(dev: DeviceState) -> list[dict[str, Any]]:
    return dev.table("tasks")


def make_task(
    dev: DeviceState,
    title: str,
    importance: int = 2,
    due_ms: int = 0,
    hide_ms: int = 0,
    completed_ms: int = 0,
    notes: str | None = None,
) -> dict[str, Any]:
    """A row like AndroidWorld's Task, created when its setup creates one: 7 * 3600 subtracted from the due
    time in milliseconds (25.2 s before it; a task without a due date is created at -25,200 ms, so it sorts as
    the oldest)."""
    created = due_ms - 7 * 3600
    return {
        "_id": dev.new_id(),
        "title": title,
        "importance": importance,
        "dueDate": due_ms,
        "hideUntil": hide_ms,
        "completed": completed_ms,
        "created": created,
        "modified": created,
        "notes": notes,
    }


def due_day(t: dict[str, Any]) -> dt.date | None:
    if not t["dueDate"]:
        return None
    return dt.datetime.fromtimestamp(t["dueDate"] / 1000, tz=UTC).date()


def day_text(d: dt.date | None, today: dt.date) -> str:
    """How the list names a day: 'Today', 'Tomorrow', 'Yesterday' or 'Mon, Oct 16'."""
    if d is None:
        return "No due date"
    delta = (d - today).days
    return {0: "Today", 1: "Tomorrow", -1: "Yesterday"}.get(delta, d.strftime("%a, %b %-d"))


def _settings(dev: DeviceState) -> dict[str, Any]:
    s = dev.data(PKG)
    s.setdefault("sort", "Due date")
    s.setdefault("show_completed", False)
    return s


def task_row(ui: UI, t: dict[str, Any], b: w.Bounds) -> Node:
    """A task row: a priority-coloured checkbox, the title, and the due date under it."""
    x0, y0, x1, y1 = b
    dev = ui.dev
    today = dev.now.date()

    def toggle() -> None:
        t["completed"] = 0 if t["completed"] else dev.time_ms
        t["modified"] = dev.time_ms

    row = Node(
        w.LINEAR,
        bounds=b,
        clickable=True,
        on_click=lambda: ui.push(TaskEditScreen(t["_id"])),
        border=LIGHT,
        rid=f"{PKG}:id/row",
    )
    mid = (y0 + y1) // 2
    row.add(
        Node(
            w.CHECKBOX,
            bounds=(x0 + 24, mid - 60, x0 + 144, mid + 60),
            checkable=True,
            checked=bool(t["completed"]),
            clickable=True,
            on_click=toggle,
            icon="check_on" if t["completed"] else "check_off",
            icon_fg=PRIORITY_COLORS[t["importance"]],
            rid=f"{PKG}:id/completeBox",
        )
    )
    tx = x0 + 176
    due = due_day(t)
    row.add(
        Node(
            w.TEXT,
            text=t["title"],
            bounds=(tx, y0 + 20, x1 - PAD, mid + 6 if due else y1 - 20),
            size=44,
            fg=HINT if t["completed"] else INK,
            rid=f"{PKG}:id/title",
        )
    )
    if due:
        overdue = due < today and not t["completed"]
        row.add(
            Node(
                w.TEXT,
                text=day_text(due, today),
                bounds=(tx, mid + 10, x1 - PAD, y1 - 20),
                size=34,
                fg=(211, 47, 47) if overdue else GREY,
                rid=f"{PKG}:id/due_date",
            )
        )
    return row


def header_row(ui: UI, text: str, b: w.Bounds) -> Node:
    return ui.text(
        text,
        (b[0] + PAD, b[1] + 30, b[2] - PAD, b[3] - 10),
        size=36,
        bold=True,
        fg=COLOR,
        rid=f"{PKG}:id/header",
    )


def grouped_rows(ui: UI, items: list[dict[str, Any]], sort: str) -> list:
    """List rows for `items` under AndroidWorld-style section headers for the sort mode."""
    today = ui.dev.now.date()
    far = dt.date(9999, 1, 1)
    if sort == "Due date":
        items = sorted(
            items, key=lambda t: (due_day(t) or far, t["importance"], t["title"].lower(), t["_id"])
        )
        key = lambda t: day_text(due_day(t), today)  # noqa: E731
    elif sort == "Priority":
        items = sorted(
            items, key=lambda t: (t["importance"], due_day(t) or far, t["title"].lower(), t["_id"])
        )
        key = lambda t: f"{PRIORITY_NAMES[t['importance']]} priority"  # noqa: E731
    elif sort == "Title":
        items = sorted(items, key=lambda t: (t["title"].lower(), t["_id"]))
        key = None
    else:
        items = sorted(items, key=lambda t: (-t["created"], t["_id"]))
        key = None
    rows: list = []
    last = None
    for t in items:
        if key is not None and key(t) != last:
            last = key(t)
            rows.append((110, lambda b, h=last: header_row(ui, h, b)))
        rows.append((ROW_H + 32, lambda b, t=t: task_row(ui, t, b)))
    return rows


class TaskListScreen(Screen):
    """'My Tasks': open tasks grouped by the sort mode, completed ones at the end when shown."""

    def build(self, ui: UI) -> list[Node]:
        dev = ui.dev
        s = _settings(dev)
        out = [
            ui.app_bar(
                "My Tasks",
                back=False,
                actions=[
                    ("Search", "search", lambda: ui.push(TaskSearchScreen())),
                    ("Sort", "sort", lambda: ui.push(SortDialog())),
                    ("More options", "more", lambda: ui.push(MenuDialog())),
                ],
            )
        ]
        open_items = [t for t in tasks(dev) if not t["completed"]]
        rows = grouped_rows(ui, open_items, s["sort"])
        if s["show_completed"]:
            done = [t for t in tasks(dev) if t["completed"]]
            if done:
                rows.append((110, lambda b: header_row(ui, "Completed", b)))
                rows += [
                    (ROW_H + 32, lambda b, t=t: task_row(ui, t, b))
                    for t in sorted(done, key=lambda t: (-t["completed"], t["_id"]))
                ]
        out.append(ui.list("tasks", rows, empty="No tasks"))
        out.append(ui.fab("Create new task", lambda: ui.push(TaskEditScreen(None))))
        return out


class SortDialog(Screen):
    """The sort chooser: a single-choice list; grouping follows the sort mode."""

    modal = True

    def build(self, ui: UI) -> list[Node]:
        s = _settings(ui.dev)
        panel, y = ui.dialog_box("Sort", 200 + 140 * len(SORTS) + 160)
        for name in SORTS:

            def pick(n=name) -> None:
                s["sort"] = n
                ui.pop()
                ui.phone.stack(PKG)[-1].scroll.clear()

            panel.add(
                Node(
                    w.CHECKBOX,
                    text=name,
                    bounds=(96, y, SCREEN_W - 96, y + 130),
                    checkable=True,
                    checked=s["sort"] == name,
                    clickable=True,
                    on_click=pick,
                    size=42,
                    pad=110,
                    icon="check_on" if s["sort"] == name else "check_off",
                    icon_fg=COLOR,
                )
            )
            y += 140
        ui.dialog_buttons(panel, [("Cancel", ui.pop)])
        return [panel]


class MenuDialog(Screen):
    """The overflow menu: show or hide completed tasks."""

    modal = True

    def build(self, ui: UI) -> list[Node]:
        s = _settings(ui.dev)
        y0 = ui.top + 24
        panel = Node(
            w.FRAME,
            bounds=(SCREEN_W - 600, y0, SCREEN_W - 24, y0 + 280),
            bg=WHITE,
            radius=12,
            rid=f"{PKG}:id/menu",
        )

        def toggle() -> None:
            s["show_completed"] = not s["show_completed"]
            ui.pop()

        label = "Hide completed" if s["show_completed"] else "Show completed"
        panel.add(
            Node(
                w.TEXT,
                text=label,
                bounds=(SCREEN_W - 600, y0, SCREEN_W - 24, y0 + 140),
                clickable=True,
                on_click=toggle,
                size=42,
                pad=48,
                rid=f"{PKG}:id/menu_item",
            )
        )
        panel.add(
            Node(
                w.TEXT,
                text="Settings",
                bounds=(SCREEN_W - 600, y0 + 140, SCREEN_W - 24, y0 + 280),
                clickable=True,
                on_click=ui.pop,
                size=42,
                pad=48,
                rid=f"{PKG}:id/menu_item",
            )
        )
        return [panel]


class TaskSearchScreen(Screen):
    """Search tasks by title or notes, open and completed alike."""

    def __init__(self):
        super().__init__()
        self.focus = "query"

    def build(self, ui: UI) -> list[Node]:
        y0 = ui.top
        bar = ui.search_bar(COLOR)
        q = self.field("query").strip().lower()
        hits = [
            t for t in tasks(ui.dev) if q and (q in t["title"].lower() or q in (t["notes"] or "").lower())
        ]
        rows = [
            (ROW_H + 32, lambda b, t=t: task_row(ui, t, b))
            for t in sorted(hits, key=lambda t: (t["title"].lower(), t["_id"]))
        ]
        return [bar, ui.list("results", rows, y0=y0 + 168, empty="No results" if q else None)]


class TaskEditScreen(Screen):
    """The task editor: title, due date, priority buttons and description; the check saves, back discards."""

    def __init__(self, tid: int | None):
        super().__init__()
        self.tid = tid
        self.loaded = False
        self.importance = 2

    def _load(self, dev: DeviceState) -> dict[str, Any] | None:
        t = next((t for t in tasks(dev) if t["_id"] == self.tid), None)
        if not self.loaded:
            self.loaded = True
            if t is not None:
                self.fields = {"title": t["title"], "notes": t["notes"] or ""}
                self.importance = t["importance"]
            else:
                self.focus = "title"
        return t

    def save(self, ui: UI) -> None:
        dev = ui.dev
        title = self.field("title").strip()
        t = self._load(dev)
        if not title:
            ui.pop()
            return
        if t is None:
            t = make_task(dev, title, self.importance, notes=self.field("notes") or None)
            tasks(dev).append(t)
        else:
            t.update(
                {
                    "title": title,
                    "importance": self.importance,
                    "notes": self.field("notes") or None,
                    "modified": dev.time_ms,
                }
            )
        self.focus = None
        ui.pop()

    def build(self, ui: UI) -> list[Node]:
        dev = ui.dev
        t = self._load(dev)
        out = [ui.app_bar("", actions=[("Save", "check", lambda: self.save(ui))])]
        today = dev.now.date()

        def info(label: str, value: str, rid: str):
            def make(b: w.Bounds) -> Node:
                x0, y0, x1, y1 = b
                row = Node(w.LINEAR, bounds=b, border=LIGHT, clickable=True, on_click=lambda: None)
                row.add(ui.text(label, (x0 + PAD, y0, x0 + 380, y1), size=36, fg=GREY, a11y=False))
                row.add(ui.text(value, (x0 + 380, y0, x1 - PAD, y1), size=42, rid=f"{PKG}:id/{rid}"))
                return row

            return make

        def priority(b: w.Bounds) -> Node:
            x0, y0, x1, y1 = b
            row = Node(w.LINEAR, bounds=b, border=LIGHT, rid=f"{PKG}:id/priority_row")
            row.add(ui.text("Priority", (x0 + PAD, y0, x0 + 300, y1), size=36, fg=GREY, a11y=False))
            bw = (x1 - x0 - 300 - PAD) // 4
            for i, name in enumerate(PRIORITY_NAMES):

                def pick(i=i) -> None:
                    self.importance = i

                sel = self.importance == i
                row.add(
                    Node(
                        "android.widget.RadioButton",
                        text=name,
                        desc=f"{name} priority",
                        bounds=(x0 + 300 + i * bw, y0 + 30, x0 + 300 + (i + 1) * bw - 12, y1 - 30),
                        checkable=True,
                        checked=sel,
                        clickable=True,
                        on_click=pick,
                        size=34,
                        align="center",
                        bg=PRIORITY_COLORS[i] if sel else None,
                        fg=WHITE if sel else PRIORITY_COLORS[i],
                        border=PRIORITY_COLORS[i],
                        radius=20,
                        rid=f"{PKG}:id/priority_{name.lower()}",
                    )
                )
            return row

        due = day_text(due_day(t), today) if t is not None else "No due date"
        if t is not None and t["dueDate"]:
            due = dt.datetime.fromtimestamp(t["dueDate"] / 1000, tz=UTC).strftime("%a, %b %-d %Y")
        start = "No start date"
        if t is not None and t["hideUntil"]:
            start = dt.datetime.fromtimestamp(t["hideUntil"] / 1000, tz=UTC).strftime("%a, %b %-d %Y")
        rows = [
            (
                200,
                lambda b: ui.field("title", (b[0] + PAD, b[1] + 24, b[2] - PAD, b[3] - 24), hint="Task name"),
            ),
            (ROW_H, info("Due date", due, "due_date")),
            (ROW_H + 40, priority),
            (
                260,
                lambda b: ui.field(
                    "notes",
                    (b[0] + PAD, b[1] + 24, b[2] - PAD, b[3] - 24),
                    hint="Description",
                    multiline=True,
                ),
            ),
            (ROW_H, info("Start date", start, "start_date")),
        ]
        if t is not None and t["completed"]:
            done = dt.datetime.fromtimestamp(t["completed"] / 1000, tz=UTC).strftime("%a, %b %-d %Y")
            rows.append((ROW_H, info("Completed", done, "completed_date")))
        out.append(ui.list("edit", rows))
        return out


@register_app
class TasksApp(App):
    package = PKG
    name = "Tasks"
    aliases = r"tasks|tasks app|tasks.org:"
    color = COLOR

    def main(self, dev: DeviceState) -> Screen:
        return TaskListScreen()

    def setup(self, dev: DeviceState) -> None:
        dev.table("tasks")
