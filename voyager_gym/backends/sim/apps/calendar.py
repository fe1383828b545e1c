"""Simple Calendar Pro (com.simplemobiletools.calendar.pro): month view, day view, simple event list, search,
and the event editor with date/time picker dialogs, a check (save) button and delete with a confirmation.

Events live in `dev.table("events")` as AndroidWorld's verifier reads them from events.db: id, title,
location, description, start_ts and end_ts (seconds, UTC), repeat_interval, repeat_rule, flags (1 = all-day).
The editor's Repetition dialog sets the series fields as Simple Calendar does: repeat_interval in seconds
(daily 86400, weekly 604800, monthly 2592001, yearly 31536000), repeat_rule the weekday bits of a weekly
series (Monday 1 ... Sunday 64, the start day's bit by default) or 1 (same day) for monthly and yearly; a
series repeats forever. The month and day views show every occurrence of a series; the event list and
search show it once, at its first occurrence.
"""

from __future__ import annotations

import calendar as _cal
import datetime as dt
from collections.abc import Callable
from typing import Any

from voyager_gym.backends.sim import widgets as w
from voyager_gym.backends.sim.device import DeviceState
from voyager_gym.backends.sim.ui import (
    GREY,
    HINT,
    INK,
    LIGHT,
    PAD,
    ROW2_H,
    ROW_H,
    UI,
    WHITE,
    App,
    Screen,
    register_app,
)
from voyager_gym.backends.sim.widgets import SCREEN_W, Node

PKG = "com.simplemobiletools.calendar.pro"
COLOR = (245, 124, 0)
UTC = dt.UTC
EVENT_COLORS = ((66, 133, 244), (15, 157, 88), (219, 68, 55), (171, 71, 188), (0, 150, 136))
WEEKDAYS = "SMTWTFS"
# Simple Calendar's repetition choices: label -> repeat_interval (seconds).
REPEATS = {"No repetition": 0, "Daily": 86400, "Weekly": 604800, "Monthly": 2592001, "Yearly": 31536000}
REPEAT_SAME_DAY = 1


# -- data helpers (shared with the calendar tasks) ---------------------------------------------------------
def ts_of(d: dt.date, hour: int = 0, minute: int = 0) -> int:
    """Unix seconds of a UTC wall-clock moment (the device runs in UTC)."""
    return int(dt.datetime(d.year, d.month, d.day, hour, minute, tzinfo=UTC).timestamp())


def dt_of(ts: int) -> dt.datetime:
    return dt.datetime.fromtimestamp(ts, tz=UTC)


def hhmm(ts: int) -> str:
    return dt_of(ts).strftime("%H:%M")


def long_date(d: dt.date) -> str:
    """The editor's date label, e.g. 'Sun, Oct 15, 2023'."""
    return d.strftime("%a, %b %-d, %Y")


def day_label(d: dt.date) -> str:
    """The day view's header, e.g. 'Monday, October 16'."""
    return d.strftime("%A, %B %-d")


def events(dev: DeviceState) -> list[dict[str, Any]]:
    return dev.table("events")


def make_event(
    dev: DeviceState,
    title: str,
    start_ts: int,
    end_ts: int,
    description: str = "",
    location: str = "",
    flags: int = 0,
) -> dict[str, Any]:
    """A row shaped like AndroidWorld's CalendarEvent (the fields its verifiers compare)."""
    return {
        "id": dev.new_id(),
        "title": title,
        "location": location,
        "description": description,
        "start_ts": int(start_ts),
        "end_ts": int(end_ts),
        "repeat_interval": 0,
        "repeat_rule": 0,
        "flags": flags,
    }


def weekday_bit(d: dt.date) -> int:
    """Simple Calendar's weekly repeat_rule bit of `d`'s weekday: Monday 1, Tuesday 2, ..., Sunday 64."""
    return 1 << d.weekday()


def repeat_label(interval: int) -> str:
    return next((k for k, v in REPEATS.items() if v == interval), f"Every {interval // 86400} days")


def recurs_on(e: dict[str, Any], first: dt.date, c: dt.date) -> bool:
    """Whether series `e`, first on day `first`, has an occurrence starting on day `c` (>= first)."""
    interval = e["repeat_interval"]
    if interval == REPEATS["Weekly"]:
        return bool(e.get("repeat_rule", 0) & weekday_bit(c))
    if interval == REPEATS["Monthly"]:
        return c.day == first.day
    if interval == REPEATS["Yearly"]:
        return (c.month, c.day) == (first.month, first.day)
    return (c - first).days % max(1, interval // 86400) == 0


def occurrences(rows: list[dict[str, Any]], first: dt.date, last: dt.date) -> list[dict[str, Any]]:
    """The rows as the views show them around days `first`..`last`: a one-off as it is, a series as one copy
    per occurrence starting from the day before `first` to `last` (a copy keeps the series' id, so tapping
    it opens the series)."""
    out = []
    for e in rows:
        if not e.get("repeat_interval"):
            out.append(e)
            continue
        start = dt_of(e["start_ts"]).date()
        c = max(start, first - dt.timedelta(days=1))
        while c <= last:
            if recurs_on(e, start, c):
                shift = (c - start).days * 86400
                out.append({**e, "start_ts": e["start_ts"] + shift, "end_ts": e["end_ts"] + shift})
            c += dt.timedelta(days=1)
    return out


def events_on(dev: DeviceState, d: dt.date) -> list[dict[str, Any]]:
    """Events shown on day `d`: those overlapping it (an event ending at 00:00 belongs to its start day),
    each occurrence of a series included."""
    lo, hi = ts_of(d), ts_of(d + dt.timedelta(days=1))
    rows = occurrences(events(dev), d, d)
    out = [e for e in rows if e["start_ts"] < hi and (e["end_ts"] > lo or e["start_ts"] >= lo)]
    return sorted(out, key=lambda e: (e["start_ts"], e["end_ts"], e["id"]))


def time_range(e: dict[str, Any], d: dt.date | None = None) -> str:
    """'11:00 - 11:30'; prefixed by the start date when the event began before day `d`."""
    if e.get("flags", 0) & 1:
        return "All-day"
    text = f"{hhmm(e['start_ts'])} - {hhmm(e['end_ts'])}"
    start_day = dt_of(e["start_ts"]).date()
    if d is not None and start_day != d:
        text = f"{start_day.strftime('%b %-d')}, {text}"
    return text


def color_of(e: dict[str, Any]) -> tuple[int, int, int]:
    return EVENT_COLORS[e["id"] % len(EVENT_COLORS)]


def find_event(dev: DeviceState, eid: int) -> dict[str, Any] | None:
    return next((e for e in events(dev) if e["id"] == eid), None)


def event_row(ui: UI, e: dict[str, Any], b: w.Bounds, d: dt.date | None, on_click) -> Node:
    """A list row: a colour bar, the title and the time range (and the description's first line)."""
    x0, y0, x1, y1 = b
    row = Node(
        w.LINEAR, bounds=b, clickable=True, on_click=on_click, border=LIGHT, rid=f"{PKG}:id/event_item_holder"
    )
    row.add(Node(w.VIEW, bounds=(x0 + PAD, y0 + 30, x0 + PAD + 14, y1 - 30), bg=color_of(e), a11y=False))
    tx = x0 + PAD + 44
    row.add(ui.text(e["title"], (tx, y0 + 24, x1 - PAD, y0 + 90), size=44, rid=f"{PKG}:id/event_item_title"))
    row.add(
        ui.text(
            time_range(e, d),
            (tx, y0 + 94, x1 - PAD, y0 + 146),
            size=36,
            fg=GREY,
            rid=f"{PKG}:id/event_item_time",
        )
    )
    if e.get("description"):
        row.add(
            ui.text(
                e["description"].splitlines()[0],
                (tx, y0 + 148, x1 - PAD, y1 - 8),
                size=32,
                fg=HINT,
                rid=f"{PKG}:id/event_item_description",
            )
        )
    return row


# -- screens -----------------------------------------------------------------------------------------------
def _main_actions(ui: UI, screen: Screen) -> list:
    return [
        ("Search", "search", lambda: ui.push(SearchScreen())),
        ("Change view", "menu", lambda: ui.push(ViewDialog())),
        ("Go to today", "today", lambda: _go_today(ui, screen)),
    ]


def _go_today(ui: UI, screen: Screen) -> None:
    if isinstance(screen, MonthScreen):
        screen.year, screen.month = ui.dev.now.year, ui.dev.now.month
    else:
        screen.scroll.pop("list", None)


def _stepper(ui: UI, y: int, label: str, size: int, unit: str, step: Callable[[int], None]) -> list[Node]:
    """The '‹ label ›' row whose arrows step the shown month or day back and forward."""

    def arrow(text: str, desc: str, x0: int, n: int, side: str) -> Node:
        return Node(
            w.BUTTON,
            text=text,
            desc=f"{desc} {unit}",
            bounds=(x0, y + 10, x0 + 140, y + 130),
            clickable=True,
            on_click=lambda: step(n),
            size=64,
            fg=GREY,
            align="center",
            rid=f"{PKG}:id/top_{side}_arrow",
        )

    value_b = (PAD + 160, y + 10, SCREEN_W - PAD - 160, y + 130)
    return [
        arrow("‹", "Previous", PAD, -1, "left"),
        ui.text(label, value_b, size=size, bold=True, align="center", rid=f"{PKG}:id/top_value"),
        arrow("›", "Next", SCREEN_W - PAD - 140, 1, "right"),
    ]


class MonthScreen(Screen):
    """The monthly view: a 6x7 grid of days with event bars; tapping a day opens its day view."""

    def __init__(self, today: dt.date):
        super().__init__()
        self.year, self.month = today.year, today.month

    def shift(self, n: int) -> None:
        m = self.year * 12 + self.month - 1 + n
        self.year, self.month = divmod(m, 12)
        self.month += 1

    def build(self, ui: UI) -> list[Node]:
        dev = ui.dev
        y = ui.below_bar()
        out = [ui.app_bar("Simple Calendar", back=False, actions=_main_actions(ui, self))]
        first = dt.date(self.year, self.month, 1)
        out += _stepper(ui, y, first.strftime("%B %Y"), 50, "month", self.shift)
        cw = SCREEN_W // 7
        hy = y + 150
        for i, letter in enumerate(WEEKDAYS):
            out.append(
                ui.text(
                    letter, (i * cw, hy, (i + 1) * cw, hy + 60), size=34, fg=GREY, align="center", a11y=False
                )
            )
        gy = hy + 70
        ch = (ui.bottom - gy) // 6
        start = first - dt.timedelta(days=(first.weekday() + 1) % 7)
        today = dev.now.date()
        by_day: dict[dt.date, list[dict[str, Any]]] = {}
        shown = occurrences(events(dev), start, start + dt.timedelta(days=41))
        for e in sorted(shown, key=lambda e: (e["start_ts"], e["id"])):
            d = dt_of(e["start_ts"]).date()
            end_d = dt_of(max(e["start_ts"], e["end_ts"] - 1)).date()
            while d <= end_d and d < start + dt.timedelta(days=42):
                by_day.setdefault(d, []).append(e)
                d += dt.timedelta(days=1)
        for k in range(42):
            d = start + dt.timedelta(days=k)
            r, c = divmod(k, 7)
            b = (c * cw, gy + r * ch, (c + 1) * cw, gy + (r + 1) * ch)
            out.append(self._cell(ui, d, b, d.month == self.month, d == today, by_day.get(d, [])))
        out.append(ui.fab("New Event", lambda: ui.push(EventScreen.new(dev, today))))
        return out

    def _cell(self, ui: UI, d: dt.date, b: w.Bounds, inside: bool, today: bool, evs: list) -> Node:
        x0, y0, x1, y1 = b

        def open_day() -> None:
            ui.push(DayScreen(d))

        cell = Node(w.FRAME, bounds=b, clickable=True, on_click=open_day, border=LIGHT)
        num = Node(
            w.TEXT,
            text=str(d.day),
            bounds=(x0 + 30, y0 + 8, x1 - 30, y0 + 78),
            size=38,
            align="center",
            fg=(WHITE if today else (INK if inside else HINT)),
            bg=COLOR if today else None,
            radius=35,
            clickable=True,
            on_click=open_day,
            rid=f"{PKG}:id/month_day",
        )
        cell.add(num)
        for i, e in enumerate(evs[:3]):
            ey = y0 + 86 + i * 56
            cell.add(
                Node(
                    w.TEXT,
                    text=e["title"],
                    bounds=(x0 + 4, ey, x1 - 4, ey + 50),
                    size=24,
                    fg=WHITE,
                    bg=color_of(e),
                    radius=6,
                    a11y=False,
                )
            )
        if len(evs) > 3:
            cell.add(
                Node(
                    w.TEXT,
                    text=f"+{len(evs) - 3}",
                    bounds=(x0 + 4, y0 + 256, x1 - 4, y1 - 2),
                    size=24,
                    fg=GREY,
                    align="center",
                    a11y=False,
                )
            )
        return cell


class DayScreen(Screen):
    """The daily view: the chosen day's events in time order, with arrows to the previous/next day."""

    def __init__(self, day: dt.date):
        super().__init__()
        self.day = day

    def move(self, n: int) -> None:
        self.day += dt.timedelta(days=n)
        self.scroll.clear()

    def build(self, ui: UI) -> list[Node]:
        dev = ui.dev
        y = ui.below_bar()
        out = [
            ui.app_bar(
                self.day.strftime("%B %Y"),
                back=True,
                actions=[("Search", "search", lambda: ui.push(SearchScreen()))],
            )
        ]
        out += _stepper(ui, y, day_label(self.day), 46, "day", self.move)
        day = self.day
        rows = [
            (
                ROW2_H + 20,
                lambda b, e=e: event_row(
                    ui, e, b, day, lambda eid=e["id"]: ui.push(EventScreen.edit(dev, eid))
                ),
            )
            for e in events_on(dev, day)
        ]
        out.append(ui.list("day_events", rows, y0=y + 150, empty="No events"))
        out.append(ui.fab("New Event", lambda: ui.push(EventScreen.new(dev, day))))
        return out


class EventListScreen(Screen):
    """The 'Simple event list' view: every event under date headers, opened at today."""

    def build(self, ui: UI) -> list[Node]:
        dev = ui.dev
        out = [ui.app_bar("Simple Calendar", back=False, actions=_main_actions(ui, self))]
        rows: list = []
        today_off = None
        off = 0
        last = None
        for e in sorted(events(dev), key=lambda e: (e["start_ts"], e["id"])):
            d = dt_of(e["start_ts"]).date()
            if d != last:
                if today_off is None and d >= dev.now.date():
                    today_off = off
                label = d.strftime("%A, %B %-d %Y")
                rows.append(
                    (
                        110,
                        lambda b, t=label: ui.text(
                            t,
                            (b[0] + PAD, b[1] + 30, b[2] - PAD, b[3] - 10),
                            size=38,
                            bold=True,
                            fg=COLOR,
                            rid=f"{PKG}:id/event_section_title",
                        ),
                    )
                )
                off += 110
                last = d
            rows.append(
                (
                    ROW2_H + 20,
                    lambda b, e=e: event_row(
                        ui, e, b, None, lambda eid=e["id"]: ui.push(EventScreen.edit(dev, eid))
                    ),
                )
            )
            off += ROW2_H + 20
        if "list" not in self.scroll:
            self.scroll["list"] = today_off if today_off is not None else off
        out.append(ui.list("list", rows, empty="No upcoming events"))
        out.append(ui.fab("New Event", lambda: ui.push(EventScreen.new(dev, dev.now.date()))))
        return out


def _choice(label: str, on: bool, y: int, pick: Callable[[], None]) -> Node:
    """A single-choice dialog's row: a check mark and the label."""
    return Node(
        w.CHECKBOX,
        text=label,
        bounds=(96, y, SCREEN_W - 96, y + 130),
        checkable=True,
        checked=on,
        clickable=True,
        on_click=pick,
        size=42,
        pad=110,
        icon="check_on" if on else "check_off",
        icon_fg=COLOR,
    )


class ViewDialog(Screen):
    """'Change view': a single-choice dialog between the monthly view and the simple event list."""

    modal = True

    def build(self, ui: UI) -> list[Node]:
        cur = ui.dev.data(PKG).get("view", "month")
        panel, y = ui.dialog_box("Change view", 560)
        for key, label in (("month", "Monthly view"), ("list", "Simple event list")):

            def pick(k=key) -> None:
                ui.dev.data(PKG)["view"] = k
                ui.pop_to_root()
                ui.phone.stack(PKG)[0] = EventListScreen() if k == "list" else MonthScreen(ui.dev.now.date())

            panel.add(_choice(label, cur == key, y, pick))
            y += 140
        return [panel]


class SearchScreen(Screen):
    """Search events by title: results in time order; tapping one opens it."""

    def __init__(self):
        super().__init__()
        self.focus = "query"

    def build(self, ui: UI) -> list[Node]:
        dev = ui.dev
        y0 = ui.top
        bar = ui.search_bar(COLOR)
        q = self.field("query").strip().lower()
        rows = []
        if q:
            hits = sorted(
                (e for e in events(dev) if q in e["title"].lower()), key=lambda e: (e["start_ts"], e["id"])
            )
            for e in hits:
                d = dt_of(e["start_ts"]).date()

                def make(b, e=e, d=d):
                    row = event_row(ui, e, b, None, lambda eid=e["id"]: ui.push(EventScreen.edit(dev, eid)))
                    row.children[2].text = f"{d.strftime('%a, %b %-d %Y')}, {time_range(e)}"
                    return row

                rows.append((ROW2_H + 20, make))
        return [
            bar,
            ui.list(
                "search_results", rows, y0=y0 + 168, empty="No items found" if q else "Type a title to search"
            ),
        ]


class EventScreen(Screen):
    """The event editor ('New Event' / 'Edit Event'): text fields, start/end date and time, save, delete."""

    def __init__(self, eid: int | None, start_ts: int, end_ts: int, all_day: bool = False):
        super().__init__()
        self.eid = eid
        self.start_ts = start_ts
        self.end_ts = end_ts
        self.all_day = all_day
        self.repeat_interval = 0
        self.repeat_rule = 0

    @classmethod
    def new(cls, dev: DeviceState, day: dt.date) -> EventScreen:
        """A new event on `day`, starting at the next full hour of the current time, lasting an hour."""
        hour = min(23, dev.now.hour + 1)
        start = ts_of(day, hour)
        return cls(None, start, start + 3600)

    @classmethod
    def edit(cls, dev: DeviceState, eid: int) -> EventScreen:
        e = find_event(dev, eid)
        assert e is not None
        s = cls(eid, e["start_ts"], e["end_ts"], bool(e.get("flags", 0) & 1))
        s.repeat_interval, s.repeat_rule = e.get("repeat_interval", 0), e.get("repeat_rule", 0)
        s.fields = {
            "title": e["title"],
            "location": e.get("location", ""),
            "description": e.get("description", ""),
        }
        return s

    def set_start(self, ts: int) -> None:
        """Moving the start keeps the duration (the end moves with it), as the real editor does; a weekly
        series on the start's weekday alone follows the start to its new weekday."""
        old_bit = weekday_bit(dt_of(self.start_ts).date())
        dur = self.end_ts - self.start_ts
        self.start_ts, self.end_ts = ts, ts + dur
        if self.repeat_interval == REPEATS["Weekly"] and self.repeat_rule == old_bit:
            self.repeat_rule = weekday_bit(dt_of(ts).date())

    def set_repeat(self, interval: int) -> None:
        """The Repetition dialog's choice: weekly selects the start's weekday, monthly and yearly the same
        day of the month; daily keeps the rule as it was (Simple Calendar's setRepeatInterval)."""
        self.repeat_interval = interval
        if interval == REPEATS["Weekly"]:
            self.repeat_rule = weekday_bit(dt_of(self.start_ts).date())
        elif interval in (REPEATS["Monthly"], REPEATS["Yearly"]):
            self.repeat_rule = REPEAT_SAME_DAY

    def toggle_weekday(self, bit: int) -> None:
        """A weekday of a weekly series on or off; the last selected day stays on."""
        if self.repeat_rule != bit:
            self.repeat_rule ^= bit

    def save(self, ui: UI) -> None:
        """Simple Calendar's saveEvent: title, location and description are stored trimmed (the app reads its
        fields through commons' EditText.value, text.toString().trim())."""
        dev = ui.dev
        title = self.field("title").strip()
        if not title:
            ui.toast("Title cannot be empty")
            return
        start, end = self.start_ts, self.end_ts
        if self.all_day:
            start = ts_of(dt_of(start).date())
            end = ts_of(dt_of(end).date())
        if end < start:
            ui.toast("The end date cannot be before the start date")
            return
        values = {
            "title": title,
            "location": self.field("location").strip(),
            "description": self.field("description").strip(),
            "start_ts": start,
            "end_ts": end,
            "flags": 1 if self.all_day else 0,
            "repeat_interval": self.repeat_interval,
            "repeat_rule": self.repeat_rule,
        }
        if self.eid is None:
            row = make_event(dev, title, start, end)
            row.update(values)
            events(dev).append(row)
            ui.toast("Event added successfully")
        else:
            e = find_event(dev, self.eid)
            if e is not None:
                e.update(values)
            ui.toast("Event updated successfully")
        self.focus = None
        ui.pop()

    def build(self, ui: UI) -> list[Node]:
        actions = []
        if self.eid is not None:
            actions.append(("Delete", "delete", lambda: ui.push(DeleteDialog(self.eid))))
        actions.append(("Save", "check", lambda: self.save(ui)))
        out = [ui.app_bar("Edit Event" if self.eid is not None else "New Event", actions=actions)]

        def fld(key: str, hint: str, multiline: bool = False):
            return lambda b: ui.field(
                key, (b[0] + PAD, b[1] + 20, b[2] - PAD, b[3] - 20), hint=hint, multiline=multiline
            )

        def when(label: str, which: str):
            def make(b: w.Bounds) -> Node:
                ts = self.start_ts if which == "start" else self.end_ts
                x0, y0, x1, y1 = b
                row = Node(w.LINEAR, bounds=b, border=LIGHT, rid=f"{PKG}:id/event_{which}_holder")
                row.add(ui.text(label, (x0 + PAD, y0, x0 + 200, y1), size=36, fg=GREY, a11y=False))
                row.add(
                    Node(
                        w.TEXT,
                        text=long_date(dt_of(ts).date()),
                        bounds=(x0 + 200, y0, x0 + 720, y1),
                        clickable=True,
                        on_click=lambda: ui.push(DatePickerDialog(which, dt_of(ts).date())),
                        size=42,
                        rid=f"{PKG}:id/event_{which}_date",
                    )
                )
                if not self.all_day:
                    row.add(
                        Node(
                            w.TEXT,
                            text=hhmm(ts),
                            bounds=(x1 - PAD - 220, y0, x1 - PAD, y1),
                            clickable=True,
                            on_click=lambda: ui.push(
                                TimePickerDialog(which, dt_of(ts).hour, dt_of(ts).minute)
                            ),
                            size=42,
                            align="right",
                            rid=f"{PKG}:id/event_{which}_time",
                        )
                    )
                return row

            return make

        def toggle_all_day() -> None:
            self.all_day = not self.all_day

        def static(title: str, subtitle: str, icon: str):
            return lambda b: ui.item(title, b, on_click=lambda: None, subtitle=subtitle, icon=icon)

        def repetition(b: w.Bounds) -> Node:
            return ui.item(
                "Repetition",
                b,
                on_click=lambda: ui.push(RepeatDialog(self.repeat_interval)),
                subtitle=repeat_label(self.repeat_interval),
                icon="repeat",
                rid=f"{PKG}:id/event_repetition",
            )

        rows = [
            (180, fld("title", "Title")),
            (180, fld("location", "Location")),
            (260, fld("description", "Description", multiline=True)),
            (ROW_H, lambda b: ui.toggle_row("All-day", self.all_day, b, toggle_all_day)),
            (ROW_H, when("Start", "start")),
            (ROW_H, when("End", "end")),
            (ROW2_H, static("Reminder", "10 minutes before", "notifications")),
            (ROW2_H, repetition),
        ]
        if self.repeat_interval == REPEATS["Weekly"]:
            rows.append((ROW_H, self._weekdays))
        if self.repeat_interval:
            rows.append((ROW2_H, static("Repeat till", "Forever", "event")))
        rows.append((ROW2_H, static("Event type", "Regular event", "label")))
        out.append(ui.list("form", rows))
        return out

    def _weekdays(self, b: w.Bounds) -> Node:
        """A weekly series' days: seven round toggles, Monday first, the selected ones filled."""
        x0, y0, x1, y1 = b
        row = Node(w.LINEAR, bounds=b, border=LIGHT, rid=f"{PKG}:id/event_repetition_rule_holder")
        cw = (x1 - x0 - 2 * PAD) // 7
        for i in range(7):
            bit = 1 << i
            on = bool(self.repeat_rule & bit)
            bx = x0 + PAD + i * cw
            row.add(
                Node(
                    w.BUTTON,
                    text="MTWTFSS"[i],
                    desc=_cal.day_name[i],
                    bounds=(bx + 8, y0 + 16, bx + cw - 8, y1 - 16),
                    clickable=True,
                    checkable=True,
                    checked=on,
                    on_click=lambda bit=bit: self.toggle_weekday(bit),
                    size=38,
                    align="center",
                    radius=60,
                    bg=COLOR if on else None,
                    fg=WHITE if on else INK,
                )
            )
        return row


class RepeatDialog(Screen):
    """The Repetition dialog: a single choice among no repetition, daily, weekly, monthly and yearly."""

    modal = True

    def __init__(self, current: int):
        super().__init__()
        self.current = current

    def build(self, ui: UI) -> list[Node]:
        panel, y = ui.dialog_box("Repetition", 240 + 140 * len(REPEATS))
        for label, interval in REPEATS.items():

            def pick(v=interval) -> None:
                parent = ui.phone.stack(PKG)[-2]
                assert isinstance(parent, EventScreen)
                parent.set_repeat(v)
                ui.pop()

            panel.add(_choice(label, interval == self.current, y, pick))
            y += 140
        return [panel]


class DatePickerDialog(Screen):
    """Android's date picker: a month of day buttons with month arrows, Cancel and OK."""

    modal = True

    def __init__(self, which: str, day: dt.date):
        super().__init__()
        self.which = which
        self.day = day
        self.year, self.month = day.year, day.month

    def shift(self, n: int) -> None:
        m = self.year * 12 + self.month - 1 + n
        self.year, self.month = divmod(m, 12)
        self.month += 1

    def ok(self, ui: UI) -> None:
        parent = ui.phone.stack(PKG)[-2]
        assert isinstance(parent, EventScreen)
        ts = parent.start_ts if self.which == "start" else parent.end_ts
        t = dt_of(ts)
        new = ts_of(self.day, t.hour, t.minute)
        if self.which == "start":
            parent.set_start(new)
        else:
            parent.end_ts = new
        ui.pop()

    def build(self, ui: UI) -> list[Node]:
        panel, y = ui.dialog_box(None, 1420)
        x0, x1 = panel.bounds[0], panel.bounds[2]
        head = Node(
            w.FRAME, bounds=(x0, panel.bounds[1], x1, panel.bounds[1] + 260), bg=COLOR, radius=36, a11y=False
        )
        head.add(
            ui.text(
                str(self.day.year),
                (x0 + 60, panel.bounds[1] + 40, x1 - 60, panel.bounds[1] + 100),
                size=38,
                fg=WHITE,
                rid="android:id/date_picker_header_year",
            )
        )
        head.add(
            ui.text(
                self.day.strftime("%a, %b %-d"),
                (x0 + 60, panel.bounds[1] + 110, x1 - 60, panel.bounds[1] + 220),
                size=64,
                fg=WHITE,
                rid="android:id/date_picker_header_date",
            )
        )
        panel.add(head)
        y = panel.bounds[1] + 290
        first = dt.date(self.year, self.month, 1)
        panel.add(
            Node(
                w.IMAGE_BUTTON,
                desc="Previous month",
                text="‹",
                bounds=(x0 + 30, y, x0 + 160, y + 110),
                clickable=True,
                on_click=lambda: self.shift(-1),
                size=60,
                fg=GREY,
                align="center",
                rid="android:id/prev",
            )
        )
        panel.add(
            ui.text(
                first.strftime("%B %Y"),
                (x0 + 170, y, x1 - 170, y + 110),
                size=42,
                bold=True,
                align="center",
                rid="android:id/month_view",
            )
        )
        panel.add(
            Node(
                w.IMAGE_BUTTON,
                desc="Next month",
                text="›",
                bounds=(x1 - 160, y, x1 - 30, y + 110),
                clickable=True,
                on_click=lambda: self.shift(1),
                size=60,
                fg=GREY,
                align="center",
                rid="android:id/next",
            )
        )
        y += 130
        cw = (x1 - x0 - 40) // 7
        for i, letter in enumerate(WEEKDAYS):
            panel.add(
                ui.text(
                    letter,
                    (x0 + 20 + i * cw, y, x0 + 20 + (i + 1) * cw, y + 60),
                    size=32,
                    fg=GREY,
                    align="center",
                    a11y=False,
                )
            )
        y += 70
        lead = (first.weekday() + 1) % 7
        for day in range(1, _cal.monthrange(self.year, self.month)[1] + 1):
            r, c = divmod(lead + day - 1, 7)
            d = dt.date(self.year, self.month, day)
            sel = d == self.day
            bx = x0 + 20 + c * cw
            by = y + r * 130

            def pick(d=d) -> None:
                self.day = d

            panel.add(
                Node(
                    w.VIEW,
                    text=str(day),
                    desc=d.strftime("%d %B %Y"),
                    bounds=(bx + 6, by + 6, bx + cw - 6, by + 124),
                    clickable=True,
                    on_click=pick,
                    selected=sel,
                    bg=COLOR if sel else None,
                    radius=60,
                    fg=WHITE if sel else INK,
                    size=38,
                    align="center",
                )
            )
        ui.dialog_buttons(panel, [("Cancel", ui.pop), ("OK", lambda: self.ok(ui))])
        return [panel]


class TimePickerDialog(Screen):
    """Android's time picker in keyboard mode: hour and minute fields (24-hour), Cancel and OK."""

    modal = True

    def __init__(self, which: str, hour: int, minute: int):
        super().__init__()
        self.which = which
        self.fields = {"hour": f"{hour:02d}", "minute": f"{minute:02d}"}

    def ok(self, ui: UI) -> None:
        try:
            h, m = int(self.field("hour").strip()), int(self.field("minute").strip())
        except ValueError:
            ui.toast("Enter a valid time")
            return
        if not (0 <= h <= 23 and 0 <= m <= 59):
            ui.toast("Enter a valid time")
            return
        parent = ui.phone.stack(PKG)[-2]
        assert isinstance(parent, EventScreen)
        ts = parent.start_ts if self.which == "start" else parent.end_ts
        new = ts_of(dt_of(ts).date(), h, m)
        if self.which == "start":
            parent.set_start(new)
        else:
            parent.end_ts = new
        self.focus = None
        ui.pop()

    def build(self, ui: UI) -> list[Node]:
        panel, y = ui.dialog_box("Type in time", 620)
        x0, x1 = panel.bounds[0], panel.bounds[2]
        mid = (x0 + x1) // 2
        panel.add(ui.field("hour", (x0 + 80, y + 10, mid - 50, y + 200), hint="hour", numeric=True))
        panel.add(ui.text(":", (mid - 50, y + 10, mid + 50, y + 200), size=80, align="center", a11y=False))
        panel.add(ui.field("minute", (mid + 50, y + 10, x1 - 80, y + 200), hint="minute", numeric=True))
        panel.add(ui.text("hour", (x0 + 80, y + 210, mid - 50, y + 270), size=32, fg=GREY, a11y=False))
        panel.add(ui.text("minute", (mid + 50, y + 210, x1 - 80, y + 270), size=32, fg=GREY, a11y=False))
        for n in panel.children:
            if n.editable:
                n.size = 64
                n.align = "center"
        ui.dialog_buttons(panel, [("Cancel", ui.pop), ("OK", lambda: self.ok(ui))])
        return [panel]


class DeleteDialog(Screen):
    """The delete confirmation; Yes removes the event and closes the editor."""

    modal = True

    def __init__(self, eid: int | None):
        super().__init__()
        self.eid = eid

    def yes(self, ui: UI) -> None:
        rows = events(ui.dev)
        rows[:] = [e for e in rows if e["id"] != self.eid]
        ui.pop()
        ui.pop()
        ui.toast("Event deleted")

    def build(self, ui: UI) -> list[Node]:
        panel, _ = ui.dialog_box(None, 420, message="Are you sure you want to delete this event?")
        ui.dialog_buttons(panel, [("No", ui.pop), ("Yes", lambda: self.yes(ui))])
        return [panel]


@register_app
class SimpleCalendar(App):
    package = PKG
    name = "Simple Calendar Pro"
    aliases = r"simple calendar pro|simple calendar"
    color = COLOR

    def main(self, dev: DeviceState) -> Screen:
        if dev.data(PKG).get("view") == "list":
            return EventListScreen()
        return MonthScreen(dev.now.date())

    def setup(self, dev: DeviceState) -> None:
        dev.table("events")
