"""Simple Calendar Pro tasks: add an event (absolute date, tomorrow, this weekday, in two weeks, a daily or
weekly series), delete one event or a day's events, and the calendar information-retrieval questions.
Verifiers read `dev.table("events")` with AndroidWorld's rules: an add needs the expected row
(title/location/description fuzzy, times and repetition exact), exactly one more row and every earlier row
unchanged; a delete needs exactly the target rows gone; questions compare the `answer` text with the titles
(or location, or start) computed from the seeded events.
"""

from __future__ import annotations

import datetime as dt
import random
import re
from collections.abc import Callable
from typing import Any

from voyager_gym.actions import Action
from voyager_gym.backends.sim.apps.calendar import (
    PKG,
    REPEATS,
    dt_of,
    events,
    long_date,
    make_event,
    repeat_label,
    ts_of,
    weekday_bit,
)
from voyager_gym.backends.sim.device import START_TIME, DeviceState
from voyager_gym.backends.sim.tasks import ir_vocab, vocab
from voyager_gym.backends.sim.tasks.base import (
    View,
    answer_once,
    aw_fuzzy_match,
    back,
    click,
    done,
    open_app,
    register_task,
    scroll,
    scroll_to_find,
    type_into,
)
from voyager_gym.backends.sim.tasks.common import (
    DeleteRows,
    RowsTask,
    SeededQuestion,
    parse_time,
)

TODAY = START_TIME.date()  # Sunday, October 15 2023
APP = "Simple Calendar Pro"

# AndroidWorld's event generator vocabulary (parameter values of its calendar tasks).
TITLE_PREFIXES = (
    "Meeting with",
    "Call with",
    "Workshop on",
    "Appointment for",
    "Catch up on",
    "Review session for",
)
NAMES = ("Alice", "Bob", "the Team", "HR", "Dr. Smith", "Marketing")
SUBJECTS = ("Project X", "Annual Report", "Budget Planning", "Campaign")
ACTIONS = (
    "discuss",
    "finalize",
    "plan",
    "celebrate",
    "prepare for",
    "review",
    "explore",
    "understand",
    "organize",
    "strategize about",
)
TOPICS = (
    "upcoming project milestones",
    "marketing strategies",
    "annual budget",
    "product launch",
    "team roles",
    "client feedback",
    "contract details",
    "software updates",
    "business objectives",
)
NOTES = (
    "Please bring relevant documents.",
    "Remember to confirm attendance.",
    "Let's be punctual.",
    "Looking forward to productive discussions.",
    "Snacks will be provided.",
)


def gen_title(rng: random.Random) -> str:
    prefix = rng.choice(TITLE_PREFIXES)
    return f"{prefix} {rng.choice(NAMES) if 'with' in prefix else rng.choice(SUBJECTS)}"


def gen_description(rng: random.Random) -> str:
    text = f"We will {rng.choice(ACTIONS)} {rng.choice(TOPICS)}."
    if rng.choice([False, True]):
        text += f" {rng.choice(NOTES)}"
    return text


def event_row(
    start_ts: int, end_ts: int, title: str, description: str = "", location: str = ""
) -> dict[str, Any]:
    """A row with every column of AndroidWorld's CalendarEvent, in its order, at its defaults (id -1 until
    the row is inserted)."""
    return {
        "start_ts": int(start_ts),
        "end_ts": int(end_ts),
        "title": title,
        "location": location,
        "description": description,
        "repeat_interval": 0,
        "repeat_rule": 0,
        "reminder_1_minutes": -1,
        "reminder_2_minutes": -1,
        "reminder_3_minutes": -1,
        "reminder_1_type": 0,
        "reminder_2_type": 0,
        "reminder_3_type": 0,
        "repeat_limit": 0,
        "repetition_exceptions": "[]",
        "attendees": "",
        "import_id": "",
        "time_zone": "UTC",
        "flags": 0,
        "event_type": 1,
        "parent_id": 0,
        "last_updated": 0,
        "source": "imported-ics",
        "availability": 0,
        "color": 0,
        "type": 0,
        "id": -1,
    }


def gen_event(rng: random.Random, first_day: int = 15, last_day: int = 31) -> dict[str, Any]:
    """A random October-2023 event on the hour, 15-60 minutes long, drawn as AndroidWorld draws it (day and
    hour, then the length, the title and the description)."""
    start = vocab.random_october_2023_ts(rng, first_day, last_day)
    end = start + rng.choice([15, 30, 45, 60]) * 60
    return event_row(start, end, gen_title(rng), gen_description(rng))


def any_day_event(rng: random.Random) -> dict[str, Any]:
    """A noise event on any day of October 2023."""
    return gen_event(rng, 1, 31)


def noise_events(rng: random.Random, n: int, keep: Callable[[dict[str, Any]], bool]) -> list[dict[str, Any]]:
    """`n` distinct noise events (any day of October) that `keep` accepts (AndroidWorld's rejection
    sampling)."""
    out: list[dict[str, Any]] = []
    while len(out) < n:
        e = any_day_event(rng)
        if keep(e) and e not in out:
            out.append(e)
    return out


def event_params(e: dict[str, Any]) -> dict[str, Any]:
    """The goal's fields of event `e` (AndroidWorld's add and delete-one params)."""
    start = dt_of(e["start_ts"])
    return {
        "year": 2023,
        "month": 10,
        "day": start.day,
        "hour": start.hour,
        "duration_mins": (e["end_ts"] - e["start_ts"]) // 60,
        "event_title": e["title"],
        "event_description": e["description"],
    }


def insert(dev: DeviceState, specs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    rows = [
        make_event(
            dev, s["title"], s["start_ts"], s["end_ts"], s.get("description", ""), s.get("location", "")
        )
        for s in specs
    ]
    events(dev).extend(rows)
    return rows


# -- the expert's calendar navigation ----------------------------------------------------------------------
def cal_title(view: View) -> str | None:
    return view.title


def goto_day(view: View, mem: dict[str, Any], day: dt.date) -> Action | None:
    """Open the calendar and walk to the day view of `day`; None once there."""
    if view.app != PKG:
        return open_app(APP)
    label = view.find(rid=f"{PKG}:id/top_value")
    title = view.title
    if (
        title == day.strftime("%B %Y")
        and label is not None
        and view.el(label).text == day.strftime("%A, %B %-d")
    ):
        return None
    if title == "Simple Calendar" and view.has(desc="Previous month"):
        want = day.strftime("%B %Y")
        cur = view.el(label).text if label is not None else ""
        if cur != want:
            cur_d = dt.datetime.strptime(cur, "%B %Y")
            return click(
                view.find(
                    desc="Next month"
                    if (day.year, day.month) > (cur_d.year, cur_d.month)
                    else "Previous month"
                )
            )
        cells = view.find_all(text=str(day.day), rid=f"{PKG}:id/month_day")
        return click(cells[0] if day.day < 15 else cells[-1])  # low numbers repeat in next month's tail
    return back()


def collect_rows(view: View, mem: dict[str, Any], key: str) -> list[tuple[str, str]] | Action:
    """Read every (title, time) row of the visible event list, scrolling down until it stops moving."""
    seen: list = mem.setdefault(key, {"rows": [], "sigs": []})["rows"]
    st = mem[key]
    titles = view.find_all(rid=f"{PKG}:id/event_item_title")
    times = view.find_all(rid=f"{PKG}:id/event_item_time")
    for k, ti in enumerate(titles):
        # a row's time follows its title; a row cut off at the list's edge may show only one of them
        nxt = titles[k + 1] if k + 1 < len(titles) else len(view.elements)
        tm = next((j for j in times if ti < j < nxt), None)
        if tm is None:
            continue
        pair = (view.el(ti).text, view.el(tm).text, view.el(ti).bbox_pixels.y_min)
        if not any(p[0] == pair[0] and p[1] == pair[1] for p in seen):
            seen.append(pair)
    lst = view.find(rid=f"{PKG}:id/day_events")
    sig = tuple(view.texts())
    if lst is not None and view.el(lst).is_scrollable and sig not in st["sigs"]:
        st["sigs"].append(sig)
        return scroll("down", lst)
    return [(t, tm) for t, tm, _ in seen]


def fmt_time_param(t: dt.time) -> str:
    return f"{t.hour:02d}:{t.minute:02d}"


# -- add tasks ---------------------------------------------------------------------------------------------
class _Events(RowsTask):
    """A task on the calendar's events table."""

    app_names = ("simple calendar pro",)
    table = "events"
    id_key = "id"

    def insert_rows(self, dev: DeviceState, rows: list[dict[str, Any]]) -> None:
        insert(dev, rows)


class _AddEvent(_Events):
    """Create one event; AndroidWorld's SimpleCalendarAddOneEvent family (its own match of the new row)."""

    insert_targets = False
    complexity = 3.4
    first_day, last_day = 15, 31
    template = (
        "In Simple Calendar Pro, create a calendar event on {year}-{month}-{day} at {hour}h with the title "
        "'{event_title}' and the description '{event_description}'. The event should last for "
        "{duration_mins} mins."
    )

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        e = gen_event(rng, cls.first_day, cls.last_day)
        n_noise = rng.randint(0, 20)
        noise = noise_events(rng, n_noise, lambda c: c["title"] != e["title"])
        return {**event_params(e), "row_objects": [e], "noise_row_objects": noise}

    @property
    def goal(self) -> str:
        day_of_week = dt_of(self.params["row_objects"][0]["start_ts"]).strftime("%A")
        return self.template.format(**{**self.params, "day_of_week": day_of_week})

    def is_successful(self, dev: DeviceState) -> float:
        after = events(dev)
        p = self.params["row_objects"][0]

        def matches(r: dict[str, Any]) -> bool:
            return (
                r["start_ts"] == p["start_ts"]
                and r["end_ts"] == p["end_ts"]
                and aw_fuzzy_match(r["title"], p["title"])
                and aw_fuzzy_match(r.get("location", ""), p["location"])
                and aw_fuzzy_match(r.get("description", ""), p["description"])
                and r.get("repeat_interval", 0) == p["repeat_interval"]
                and r.get("repeat_rule", 0) == p["repeat_rule"]
            )

        if not any(matches(r) for r in after):
            return 0.0
        if len(after) != len(self.before) + 1:
            return 0.0
        return 1.0 if all(r in after for r in self.before) else 0.0

    def expert(self, view: View, mem: dict[str, Any]) -> Action:
        e = self.params["row_objects"][0]
        start, end = dt_of(e["start_ts"]), dt_of(e["end_ts"])
        title = view.title
        if title in ("New Event", "Edit Event"):
            return self._fill(view, mem, start, end)
        if view.has(text="Type in time"):
            return self._time_dialog(view, mem)
        if view.has(text="Daily", cls="CheckBox"):  # the Repetition dialog
            return click(view.find(text=repeat_label(e["repeat_interval"]), cls="CheckBox"))
        if view.has(rid="android:id/date_picker_header_date"):
            want = mem.get("date_target")
            cell = view.find(desc=want.strftime("%d %B %Y")) if want else None
            if cell is not None and not view.el(cell).is_selected:
                return click(cell)
            month = view.find(rid="android:id/month_view")
            if cell is None and want is not None and month is not None:
                # the picker shows another month (an end past midnight at a month's end): step towards `want`
                shown = dt.datetime.strptime(view.el(month).text, "%B %Y").date()
                return click(view.find(rid="android:id/prev" if want < shown else "android:id/next"))
            return click(view.find(text="OK" if cell is not None else "Cancel"))
        if mem.get("saved"):
            return done()
        act = goto_day(view, mem, start.date())
        if act is not None:
            return act
        return click(view.find(desc="New Event"))

    def _fill(self, view: View, mem: dict[str, Any], start: dt.datetime, end: dt.datetime) -> Action:
        """Fix the first wrong field of the editor, top to bottom, then save. A field scrolled out of view
        that was seen right (noted in `mem["form_ok"]`) is not scrolled back to."""
        p = self.params
        ok: set = mem.setdefault("form_ok", set())
        form = view.find(rid=f"{PKG}:id/form")
        for key, want in (("title", p["event_title"]), ("description", p["event_description"])):
            i = view.find(rid=f"{PKG}:id/{key}")
            if i is None:
                if key in ok:
                    continue
                return scroll("up", form)
            if (view.el(i).text or "").strip() != want:
                return type_into(i, want)
            ok.add(key)
        for which, target in (("start", start), ("end", end)):
            di = view.find(rid=f"{PKG}:id/event_{which}_date")
            ti = view.find(rid=f"{PKG}:id/event_{which}_time")
            if di is None or ti is None:
                if which in ok:
                    continue
                return scroll("down", form)
            if view.el(di).text != long_date(target.date()):
                mem["date_target"] = target.date()
                return click(di)
            if view.el(ti).text != target.strftime("%H:%M"):
                mem["time_target"] = target
                return click(ti)
            ok.add(which)
        want = repeat_label(p["row_objects"][0]["repeat_interval"])
        rep = view.find(rid=f"{PKG}:id/event_repetition")
        if rep is None and want != repeat_label(0):  # a new event starts without repetition
            return scroll("down", form)
        shown = [j for j in view.find_all(rid="summary") if rep is not None and j > rep]
        if rep is not None and (not shown or view.el(shown[0]).text != want):
            return click(rep)
        mem["saved"] = True
        return click(view.find(desc="Save"))

    def _time_dialog(self, view: View, mem: dict[str, Any]) -> Action:
        target: dt.datetime | None = mem.get("time_target")
        if target is None:
            return click(view.find(text="Cancel"))
        for key, want in (("hour", f"{target.hour:02d}"), ("minute", f"{target.minute:02d}")):
            i = view.find(rid=f"{PKG}:id/{key}")
            cur = (view.el(i).text or "").strip()
            if not cur.isdigit() or int(cur) != int(want):
                return type_into(i, want)
        mem.pop("time_target", None)
        return click(view.find(text="OK"))


@register_task
class SimpleCalendarAddOneEvent(_AddEvent):
    """One event on a day from the 15th to the 31st, among noise events."""


@register_task
class SimpleCalendarAddOneEventTomorrow(_AddEvent):
    first_day = last_day = 16
    template = (
        "In Simple Calendar Pro, create a calendar event for tomorrow at {hour}h with the title "
        "'{event_title}' and the description '{event_description}'. The event should last for "
        "{duration_mins} mins."
    )


@register_task
class SimpleCalendarAddOneEventRelativeDay(_AddEvent):
    first_day, last_day = 16, 21
    template = (
        "In Simple Calendar Pro, create a calendar event for this {day_of_week} at {hour}h with the title "
        "'{event_title}' and the description '{event_description}'. The event should last for "
        "{duration_mins} mins."
    )


@register_task
class SimpleCalendarAddOneEventInTwoWeeks(_AddEvent):
    first_day = last_day = 29
    template = (
        "In Simple Calendar Pro, create a calendar event in two weeks from today at {hour}h with the title "
        "'{event_title}' and the description '{event_description}'. The event should last for "
        "{duration_mins} mins."
    )


@register_task
class SimpleCalendarAddRepeatingEvent(_AddEvent):
    """A daily or weekly series, forever: the row also needs AndroidWorld's repeat_interval (seconds) and
    repeat_rule (0 for daily, the start's weekday bit for weekly)."""

    template = (
        "In Simple Calendar Pro, create a recurring calendar event titled '{event_title}' starting on "
        "{year}-{month}-{day} at {hour}h. The event recurs {repeat_rule}, forever, and lasts for "
        "{duration_mins} minutes each occurrence. The event description should be '{event_description}'."
    )

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        e = gen_event(rng, cls.first_day, cls.last_day)
        interval = rng.choice(["daily", "weekly"])
        rule = weekday_bit(dt_of(e["start_ts"]).date()) if interval == "weekly" else 0
        e = {**e, "repeat_interval": REPEATS[interval.capitalize()], "repeat_rule": rule}
        noise = noise_events(rng, rng.randint(0, 20), lambda c: c["title"] != e["title"])
        return {**event_params(e), "row_objects": [e], "noise_row_objects": noise, "repeat_rule": interval}


# -- delete tasks ------------------------------------------------------------------------------------------
class _DeleteEvents(DeleteRows, _Events):
    """Delete the target events; every other row must stay exactly as it was."""

    n_rows = 3
    n_noise = 20


@register_task
class SimpleCalendarDeleteOneEvent(_DeleteEvents):
    complexity = 1.2
    n_rows = 1
    template = (
        "In Simple Calendar Pro, delete the calendar event on {year}-{month}-{day} at {hour}h with the title "
        "'{event_title}'"
    )

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        e = gen_event(rng)
        noise = noise_events(
            rng, cls.n_noise, lambda c: c["start_ts"] != e["start_ts"] and c["title"] != e["title"]
        )
        return {**event_params(e), "row_objects": [e], "noise_row_objects": noise}

    def expert(self, view: View, mem: dict[str, Any]) -> Action:
        p = {**self.params, **self.params["row_objects"][0]}
        if view.has(text="Are you sure you want to delete this event?"):
            mem["deleted"] = True
            return click(view.find(text="Yes"))
        if view.title == "Edit Event":
            return click(view.find(desc="Delete"))
        if mem.get("deleted"):
            return done()
        act = goto_day(view, mem, dt_of(p["start_ts"]).date())
        if act is not None:
            return act
        want = dt_of(p["start_ts"]).strftime("%H:%M")
        for i in view.find_all(rid=f"{PKG}:id/event_item_title"):
            if view.el(i).text == p["event_title"]:
                times = [j for j in view.find_all(rid=f"{PKG}:id/event_item_time") if j > i]
                if times and view.el(times[0]).text.startswith(want):
                    return click(i)
        found = scroll_to_find(view, mem, "find_event", text=p["event_title"])
        return click(found) if isinstance(found, int) else found


@register_task
class SimpleCalendarDeleteEvents(_DeleteEvents):
    complexity = 1.4
    first_day, last_day = 15, 31
    template = "In Simple Calendar Pro, delete all the calendar events on {year}-{month}-{day}"

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        # AndroidWorld draws a whole event only to pick the day, then the targets on that day.
        day = dt_of(gen_event(rng, cls.first_day, cls.last_day)["start_ts"]).day
        targets = [gen_event(rng, day, day) for _ in range(cls.n_rows)]
        noise = noise_events(rng, cls.n_noise, lambda c: dt_of(c["start_ts"]).day != day)
        return {"year": 2023, "month": 10, "day": day, "row_objects": targets, "noise_row_objects": noise}

    def expert(self, view: View, mem: dict[str, Any]) -> Action:
        if view.has(text="Are you sure you want to delete this event?"):
            return click(view.find(text="Yes"))
        if view.title == "Edit Event":
            return click(view.find(desc="Delete"))
        act = goto_day(view, mem, dt.date(2023, 10, self.params["day"]))
        if act is not None:
            return act
        rows = view.find_all(rid=f"{PKG}:id/event_item_title")
        return click(rows[0]) if rows else done()


@register_task
class SimpleCalendarDeleteEventsOnRelativeDay(SimpleCalendarDeleteEvents):
    """Delete the two events of "this <weekday>" (Monday 16 to Saturday 21 October)."""

    complexity = 1.2
    n_rows = 2
    first_day, last_day = 16, 21
    template = "In Simple Calendar Pro, delete all events scheduled for this {day_of_week}."

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        p = super().generate_random_params(rng)
        return {**p, "day_of_week": dt.date(2023, 10, p["day"]).strftime("%A")}


# -- information retrieval (params and their vocabularies: tasks/ir_vocab.py) -------------------------------
def parse_duration(s: str) -> int:
    """Seconds in '30 m', '1.5 hours', '45min' (AndroidWorld's parser: 'h' before 'm')."""
    if "h" in s:
        return int(3600 * float(s[: s.find("h")].strip()))
    return 60 * int(s[: s.find("m")].strip())


def random_noise_event(rng: random.Random) -> dict[str, Any]:
    """An IR noise event: any minute within 15 days of the device time, 15-60 minutes long."""
    start = int((START_TIME - dt.timedelta(days=15)).timestamp()) + 60 * rng.randrange(30 * 24 * 60)
    return {
        "title": gen_title(rng),
        "description": gen_description(rng),
        "location": "",
        "start_ts": start,
        "end_ts": start + 60 * rng.choice([15, 30, 45, 60]),
    }


def overlaps_day(e: dict[str, Any], d: dt.date) -> bool:
    """AndroidWorld's date exclusion: the event's start date <= d <= its end date."""
    return dt_of(e["start_ts"]).date() <= d <= dt_of(e["end_ts"]).date()


class _CalendarIR(SeededQuestion):
    """A calendar question: seeded target events among 75 noise events (AndroidWorld: STRING_MATCH on the
    targets' field, here titles or the location)."""

    app_names = ("simple calendar pro",)
    n_noise = 75

    def noise_row(self, rng: random.Random) -> dict[str, Any]:
        return random_noise_event(rng)

    def insert_rows(self, dev: DeviceState, rows: list[dict[str, Any]]) -> None:
        insert(dev, rows)

    def initialize(self, dev: DeviceState) -> None:
        self.day = vocab.ir_date(self.params["date"]) if "date" in self.params else TODAY  # before rewording
        super().initialize(dev)


def _event(date: dt.date, time_s: str, title: str, dur_s: int, location: str = "") -> dict[str, Any]:
    t = parse_time(time_s)
    start = ts_of(date, t.hour, t.minute)
    return {
        "title": title,
        "description": "",
        "location": location,
        "start_ts": start,
        "end_ts": start + dur_s,
    }


class _DayQuestion(_CalendarIR):
    """Questions answered by reading one day's event list; by default about one event on the day, at the
    `time_param` param, `duration` long, titled `title`."""

    time_param = "time"

    def the_day(self) -> dt.date:
        return self.day  # the `date` param before it was reworded

    def targets(self) -> list[dict[str, Any]]:
        p = self.params
        return [_event(self.the_day(), p[self.time_param], p["title"], parse_duration(p["duration"]))]

    def excluded(self, e: dict[str, Any]) -> bool:
        return overlaps_day(e, self.the_day())

    def expert(self, view: View, mem: dict[str, Any]) -> Action:
        if mem.get("answered"):
            return done()
        act = goto_day(view, mem, self.the_day())
        if act is not None:
            return act
        rows = collect_rows(view, mem, "rows")
        if not isinstance(rows, list):
            return rows
        return answer_once(mem, ", ".join(self.pick(rows)))

    def pick(self, rows: list[tuple[str, str]]) -> list[str]:
        """The titles that answer the question, from the day's (title, time) rows: all of them."""
        return [t for t, _ in rows]


def row_span(tm: str) -> tuple[int, int]:
    """Start and end, in minutes from the shown day's midnight, of a day-view row's time ('09:00 - 09:30',
    '23:30 - 00:15' past midnight, 'Oct 19, 23:30 - 00:15' begun the day before: start -1)."""
    if tm == "All-day":
        return 0, 24 * 60
    m = re.search(r"(\d\d):(\d\d) - (\d\d):(\d\d)$", tm)
    if m is None:
        raise ValueError(f"unexpected event time {tm!r}; expected 'HH:MM - HH:MM'")
    start, end = int(m[1]) * 60 + int(m[2]), int(m[3]) * 60 + int(m[4])
    if "," in tm:
        return -1, end
    return start, end if end >= start else end + 24 * 60


def minutes(time_s: str) -> int:
    t = parse_time(time_s)
    return t.hour * 60 + t.minute


def time_of_day(ts: int) -> dt.time:
    return dt_of(ts).time()


@register_task
class SimpleCalendarEventsOnDate(_DayQuestion):
    template = (
        "What events do I have {date} in Simple Calendar Pro? Answer with the titles only. If there are "
        "multiple titles, format your answer as a comma separated list."
    )



@register_task
class SimpleCalendarAnyEventsOnDate(_DayQuestion):
    template = (
        "Do I have any events {date} in Simple Calendar Pro? Answer with the titles only. If there are "
        "multiples titles, format your answer in a comma separated list."
    )


    def setup_params(self, rng: random.Random) -> None:
        """Three one-hour events on the date, each a time then a title drawn without replacement (the
        `title` and `time` params excluded), as AndroidWorld fills its definition."""
        pool = vocab.WithoutReplacement(dict(ir_vocab.IR_PARAMS[self.name]), self.params)
        self.events = [(pool.draw(rng, "time"), pool.draw(rng, "title")) for _ in range(3)]

    def targets(self) -> list[dict[str, Any]]:
        return [_event(self.the_day(), tm, t, 3600) for tm, t in self.events]


@register_task
class SimpleCalendarLocationOfEvent(_CalendarIR):
    template = (
        "What is the location of my {title} event in Simple Calendar Pro? Answer with the location only."
    )


    def targets(self) -> list[dict[str, Any]]:
        p = self.params
        return [_event(self.day, p["time"], p["title"], 1800, p["location"])]  # AndroidWorld's default 30 min

    def excluded(self, e: dict[str, Any]) -> bool:
        return self.params["title"].lower() in e["title"].lower()

    def expected(self) -> list[str]:
        return [self.params["location"]]

    def expert(self, view: View, mem: dict[str, Any]) -> Action:
        title = self.params["title"]
        if mem.get("answered"):
            return done()
        if view.app != PKG:
            return open_app(APP)
        if view.title == "Edit Event":
            loc = view.find(rid=f"{PKG}:id/location")
            t = view.find(rid=f"{PKG}:id/title")
            if loc is not None and t is not None and view.el(t).text == title:
                return answer_once(mem, view.el(loc).text or "")
            return back()
        q = view.find(rid=f"{PKG}:id/query")
        if q is not None:
            if (view.el(q).text or "") != title:
                return type_into(q, title)
            hit = view.find(text=title, rid=f"{PKG}:id/event_item_title")
            return click(hit) if hit is not None else back()
        search = view.find(desc="Search")
        return click(search) if search is not None else back()


@register_task
class SimpleCalendarNextEvent(_CalendarIR):
    """The next event today, from params time, duration and title. AndroidWorld's times include "12:00am", an
    event already over at 15:34, which its verifier still expects as the answer."""

    template = (
        "What is my next upcoming event in Simple Calendar Pro? Answer with the title only. If there are "
        "multiples titles, format your answer in a comma separated list."
    )

    def targets(self) -> list[dict[str, Any]]:
        p = self.params
        return [_event(TODAY, p["time"], p["title"], parse_duration(p["duration"]))]

    def excluded(self, e: dict[str, Any]) -> bool:
        """AndroidWorld's rule: on Oct 15, (start or end time of day) <= {time}, (start or end) >= 15:30."""
        if not overlaps_day(e, TODAY):
            return False
        t = parse_time(self.params["time"])
        s, en = dt_of(e["start_ts"]).time(), dt_of(e["end_ts"]).time()
        limit = dt.time(15, 30)
        return (s <= t or en <= t) and (s >= limit or en >= limit)

    def expert(self, view: View, mem: dict[str, Any]) -> Action:
        if mem.get("answered"):
            return done()
        act = goto_day(view, mem, TODAY)
        if act is not None:
            return act
        rows = collect_rows(view, mem, "rows")
        if not isinstance(rows, list):
            return rows
        now = START_TIME.strftime("%H:%M")
        if parse_time(self.params["time"]).strftime("%H:%M") < now:
            # AndroidWorld's "12:00am": its verifier expects that past event's title; answer what it reads.
            now = parse_time(self.params["time"]).strftime("%H:%M")
        upcoming = [(tm[:5], t) for t, tm in rows if re.match(r"\d\d:\d\d - ", tm) and tm[:5] >= now]
        if not upcoming:
            return answer_once(mem, "")
        first = min(s for s, _ in upcoming)
        return answer_once(mem, ", ".join(t for s, t in upcoming if s == first))


@register_task
class SimpleCalendarEventOnDateAtTime(_DayQuestion):
    """The events under way at {date} {time}; AndroidWorld's noise avoids every event from start to end
    (inclusive) containing that moment."""

    template = (
        "What is on my schedule for {date} at {time} in Simple Calendar Pro? Answer with the titles only. If "
        "there are multiples titles, format your answer in a comma separated list."
    )

    def moment(self) -> int:
        t = parse_time(self.params["time"])
        return ts_of(self.the_day(), t.hour, t.minute)

    def excluded(self, e: dict[str, Any]) -> bool:
        return e["start_ts"] <= self.moment() <= e["end_ts"]

    def pick(self, rows: list[tuple[str, str]]) -> list[str]:
        t = minutes(self.params["time"])
        return [title for title, tm in rows if row_span(tm)[0] <= t <= row_span(tm)[1]]


@register_task
class SimpleCalendarFirstEventAfterStartTime(_DayQuestion):
    """The first event starting at or after {time} on {date}; AndroidWorld's noise avoids that day's events
    whose start or end time of day is at or after {time}."""

    template = (
        "What is my first event after {time} {date} in Simple Calendar Pro? Answer with the titles only. If "
        "there are multiples titles, format your answer in a comma separated list."
    )

    def excluded(self, e: dict[str, Any]) -> bool:
        t = parse_time(self.params["time"])
        return overlaps_day(e, self.the_day()) and (
            time_of_day(e["start_ts"]) >= t or time_of_day(e["end_ts"]) >= t
        )

    def pick(self, rows: list[tuple[str, str]]) -> list[str]:
        t = minutes(self.params["time"])
        after = [(row_span(tm)[0], title) for title, tm in rows if row_span(tm)[0] >= t]
        first = min((s for s, _ in after), default=None)
        return [title for s, title in after if s == first]


@register_task
class SimpleCalendarEventsInTimeRange(_DayQuestion):
    """The events between {start_time} and 8pm on {date}; AndroidWorld's noise avoids that day's events with
    a start or end at or after {start_time} and a start or end at or before 20:00."""

    template = (
        "Do I have any events between {start_time} and 8pm {date} in Simple Calendar Pro? Answer with the "
        "titles only. If there are multiples titles, format your answer in a comma separated list."
    )
    time_param = "start_time"
    end_time = "8pm"

    def excluded(self, e: dict[str, Any]) -> bool:
        lo, hi = parse_time(self.params["start_time"]), parse_time(self.end_time)
        s, en = time_of_day(e["start_ts"]), time_of_day(e["end_ts"])
        return overlaps_day(e, self.the_day()) and (s >= lo or en >= lo) and (s <= hi or en <= hi)

    def pick(self, rows: list[tuple[str, str]]) -> list[str]:
        lo, hi = minutes(self.params["start_time"]), minutes(self.end_time)
        return [title for title, tm in rows if row_span(tm)[0] <= hi and row_span(tm)[1] >= lo]


@register_task
class SimpleCalendarEventsInNextWeek(_CalendarIR):
    """Two events in Monday 16 - Sunday 22 October: the first on a date and at a time drawn without
    replacement with the `duration` and `title` params, the second on another such date and time with a
    title drawn without replacement (30 minutes); AndroidWorld's noise avoids 15-22 October."""

    template = (
        "What events do I have in the next week in Simple Calendar Pro? Assume the week starts from Monday. "
        "Answer with the titles only. If there are multiples titles, format your answer in a comma separated "
        "list."
    )
    first, last = dt.date(2023, 10, 16), dt.date(2023, 10, 22)

    def setup_params(self, rng: random.Random) -> None:
        """Each event's fields in AndroidWorld's proto order (date, time, then title); titles name the
        `person` param ("Meet with {person}")."""
        pool = vocab.WithoutReplacement(dict(ir_vocab.IR_PARAMS[self.name]), self.params)
        person = self.params["person"]
        self.events = [
            (pool.draw(rng, "date"), pool.draw(rng, "time"), self.params["title"].format(person=person)),
            (pool.draw(rng, "date"), pool.draw(rng, "time"), pool.draw(rng, "title").format(person=person)),
        ]

    def targets(self) -> list[dict[str, Any]]:
        (d1, t1, title1), (d2, t2, title2) = self.events
        return [
            _event(vocab.ir_date(d1), t1, title1, parse_duration(self.params["duration"])),
            _event(vocab.ir_date(d2), t2, title2, 1800),  # AndroidWorld's default 30 minutes
        ]

    def excluded(self, e: dict[str, Any]) -> bool:
        s, en = dt_of(e["start_ts"]).date(), dt_of(e["end_ts"]).date()
        return (s <= self.last or en <= self.last) and (s >= TODAY or en >= TODAY)

    def expert(self, view: View, mem: dict[str, Any]) -> Action:
        """Switch to the simple event list (it opens at today) and read the titles under 16-22 October."""
        if mem.get("answered"):
            return done()
        if view.app != PKG:
            return open_app(APP)
        if view.has(text="Simple event list", cls="CheckBox"):
            return click(view.find(text="Simple event list", cls="CheckBox"))
        if view.find(rid=f"{PKG}:id/event_section_title") is None and not view.has(text="No upcoming events"):
            change = view.find(desc="Change view")
            return click(change) if change is not None else back()
        seen: dict = mem.setdefault("week", {"titles": [], "sigs": [], "past": False})
        day = None
        for e in view.elements:
            if e.resource_name == f"{PKG}:id/event_section_title":
                day = dt.datetime.strptime(e.text, "%A, %B %d %Y").date()
                seen["past"] = seen["past"] or day > self.last
            elif e.resource_name == f"{PKG}:id/event_item_title" and day is not None:
                if self.first <= day <= self.last and (day, e.text) not in seen["titles"]:
                    seen["titles"].append((day, e.text))
        sig = tuple(view.texts())
        lst = view.find(rid=f"{PKG}:id/list")
        if not seen["past"] and lst is not None and sig not in seen["sigs"]:
            seen["sigs"].append(sig)
            return scroll("down", lst)
        return answer_once(mem, ", ".join(t for _, t in seen["titles"]))


@register_task
class SimpleCalendarNextMeetingWithPerson(_CalendarIR):
    """When the meeting "Drinks with {person}" starts (30 minutes long); AndroidWorld's noise avoids titles
    naming the person on that date. The answer is checked as a date and time ('October 27 2023 15:15')."""

    match = "datetime"
    template = (
        "When is my next meeting with {person} in Simple Calendar Pro? Express your answer in the format "
        "<month name> <day> <year> <hour in 24-hour format>:<minutes>."
    )

    def targets(self) -> list[dict[str, Any]]:
        p = self.params
        return [_event(self.day, p["time"], f"Drinks with {p['person']}", 1800)]

    def excluded(self, e: dict[str, Any]) -> bool:
        return self.params["person"].lower() in e["title"].lower() and overlaps_day(e, self.day)

    def expected(self) -> list[str]:
        return [dt_of(e["start_ts"]).strftime(vocab.IR_DATE_FORMAT + " %H:%M") for e in self.targets()]

    def expert(self, view: View, mem: dict[str, Any]) -> Action:
        """Search the person's name; answer the first upcoming result's start (the last one if all passed)."""
        person = self.params["person"]
        if mem.get("answered"):
            return done()
        if view.app != PKG:
            return open_app(APP)
        q = view.find(rid=f"{PKG}:id/query")
        if q is None:
            search = view.find(desc="Search")
            return click(search) if search is not None else back()
        if (view.el(q).text or "") != person:
            return type_into(q, person)
        starts = []
        for i in view.find_all(rid=f"{PKG}:id/event_item_time"):
            day, _, span = view.el(i).text.rpartition(", ")  # "Fri, Oct 27 2023, 15:15 - 15:45"
            starts.append(dt.datetime.strptime(f"{day} {span[:5]}", "%a, %b %d %Y %H:%M"))
        if not starts:
            return answer_once(mem, "")
        now = START_TIME.replace(tzinfo=None)
        when = next((s for s in starts if s >= now), starts[-1])
        return answer_once(mem, when.strftime(vocab.IR_DATE_FORMAT + " %H:%M"))
