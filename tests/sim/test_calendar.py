"""Simple Calendar Pro: verifier near-misses for every task and the main UI flows driven through actions."""

import datetime as dt

import numpy as np
import pytest

from voyager_gym.actions import Action
from voyager_gym.backends.sim.apps.calendar import PKG, events, make_event, ts_of
from voyager_gym.backends.sim.expert import run_expert
from voyager_gym.backends.sim.tasks.vocab import date_phrasings

ADD_TASKS = [
    "SimpleCalendarAddOneEvent",
    "SimpleCalendarAddOneEventTomorrow",
    "SimpleCalendarAddOneEventRelativeDay",
    "SimpleCalendarAddOneEventInTwoWeeks",
    "SimpleCalendarAddRepeatingEvent",
]


def start(backend, name, seed=7):
    params = backend.generate_params(name, seed)
    backend.reset(name, params, np.random.default_rng(0))
    return backend.task, backend.phone.dev


def add_expected(dev, task, **changes):
    p = task.params["row_objects"][0]  # the event to add, as AndroidWorld's params hold it
    row = make_event(dev, p["title"], p["start_ts"], p["end_ts"], p["description"])
    row.update({"repeat_interval": p["repeat_interval"], "repeat_rule": p["repeat_rule"], **changes})
    events(dev).append(row)
    return row


@pytest.mark.parametrize("name", ADD_TASKS)
def test_add_event_verifier(backend, name):
    task, dev = start(backend, name)
    add_expected(dev, task)
    assert task.is_successful(dev) == 1.0


@pytest.mark.parametrize("name", ADD_TASKS)
def test_add_event_near_misses(backend, name):
    for change in (
        {"end_ts": None},
        {"start_ts": 86400},
        {"title": "Something else entirely"},
        {"description": "A different description"},
        {"location": "Room 5"},
        {"repeat_interval": "other"},
        {"repeat_rule": "other"},
    ):
        task, dev = start(backend, name)
        p = task.params["row_objects"][0]
        if change.get("end_ts", 0) is None:
            change = {"end_ts": p["end_ts"] + 15 * 60}
        elif "start_ts" in change:
            change = {"start_ts": p["start_ts"] + 86400, "end_ts": p["end_ts"] + 86400}  # the wrong day
        elif "repeat_interval" in change:  # daily for weekly, weekly for a one-off or daily
            change = {"repeat_interval": 86400 if p["repeat_interval"] == 604800 else 604800}
        elif "repeat_rule" in change:  # another weekday bit, or a bit where AndroidWorld expects none
            change = {"repeat_rule": (p["repeat_rule"] << 1) % 127 or 1}
        add_expected(dev, task, **change)
        assert task.is_successful(dev) == 0.0, change


def test_add_event_extra_or_changed_rows_fail(backend):
    task, dev = start(backend, "SimpleCalendarAddOneEvent", seed=11)
    add_expected(dev, task)
    add_expected(dev, task)  # a duplicate: count must be before + 1
    assert task.is_successful(dev) == 0.0
    task, dev = start(backend, "SimpleCalendarAddOneEvent", seed=11)
    assert events(dev), "noise events are seeded"
    add_expected(dev, task)
    events(dev)[0]["title"] += " (moved)"
    assert task.is_successful(dev) == 0.0


def test_add_event_typo_in_title_is_tolerated(backend):
    task, dev = start(backend, "SimpleCalendarAddOneEvent")
    add_expected(dev, task, title=task.params["event_title"][:-1])
    assert task.is_successful(dev) == 1.0


def test_delete_one_event_near_misses(backend):
    name = "SimpleCalendarDeleteOneEvent"
    task, dev = start(backend, name)
    rows = events(dev)
    assert len(rows) == 21
    target = [r for r in rows if r["id"] in task.target_ids]
    other = next(r for r in rows if r["id"] not in task.target_ids)
    rows.remove(other)  # the wrong event
    assert task.is_successful(dev) == 0.0
    rows.remove(target[0])  # right one, but one too many
    assert task.is_successful(dev) == 0.0
    task, dev = start(backend, name)
    events(dev)[:] = [r for r in events(dev) if r["id"] not in task.target_ids]
    assert task.is_successful(dev) == 1.0
    events(dev)[0]["description"] = "edited"
    assert task.is_successful(dev) == 0.0


def test_delete_events_needs_all_three(backend):
    task, dev = start(backend, "SimpleCalendarDeleteEvents")
    assert len(task.target_ids) == 3 and len(events(dev)) == 23
    ids = task.target_ids
    events(dev)[:] = [r for r in events(dev) if r["id"] not in ids[:2]]
    assert task.is_successful(dev) == 0.0
    events(dev)[:] = [r for r in events(dev) if r["id"] != ids[2]]
    assert task.is_successful(dev) == 1.0


@pytest.mark.parametrize(
    "name",
    [
        "SimpleCalendarEventsOnDate",
        "SimpleCalendarAnyEventsOnDate",
        "SimpleCalendarLocationOfEvent",
        "SimpleCalendarNextEvent",
    ],
)
def test_ir_near_misses(backend, name):
    task, dev = start(backend, name)
    expected = task.expected()
    assert len(events(dev)) == 75 + len(task.targets())
    dev.interaction_cache = ", ".join(expected)
    assert task.is_successful(dev) == 1.0
    dev.interaction_cache = ", ".join(expected + ["Meeting with Bob"])  # an extra title
    assert task.is_successful(dev) == 0.0
    dev.interaction_cache = ", ".join(expected[:-1]) or "Meeting with Bob"  # one missing / wrong
    assert task.is_successful(dev) == 0.0
    dev.interaction_cache = ""
    assert task.is_successful(dev) == 0.0


def test_ir_noise_respects_exclusions(backend):
    for seed in range(10):
        task, dev = start(backend, "SimpleCalendarEventsOnDate", seed)
        day = task.the_day()
        on_day = [e["title"] for e in events(dev) if task.excluded(e)]
        assert on_day == [task.params["title"]]
        drawn = backend.generate_params("SimpleCalendarEventsOnDate", seed)["date"]  # e.g. "October 24 2023"
        assert day == dt.datetime.strptime(drawn, "%B %d %Y").date()
        assert task.params["date"] in date_phrasings(day)  # the goal words the date AndroidWorld's way


def _click(backend, **find):
    node = backend.phone.find(**find)
    assert node is not None, find
    backend.execute(Action("click", x=node.center[0], y=node.center[1]))


def test_delete_through_the_ui(backend):
    task, dev = start(backend, "SimpleCalendarDeleteOneEvent")
    p = task.params
    backend.execute(Action("open_app", app_name="simple calendar"))
    assert dev.foreground == PKG
    cells = [
        n for n in backend.phone.element_nodes() if n.text == str(p["day"]) and n.rid == f"{PKG}:id/month_day"
    ]
    backend.execute(Action("click", x=cells[-1].center[0], y=cells[-1].center[1]))
    _click(backend, text=p["event_title"])
    assert backend.phone.find(text="Edit Event") is not None
    _click(backend, desc="Delete")
    _click(backend, text="No")  # cancelling keeps the event
    assert len(events(dev)) == 21
    _click(backend, desc="Delete")
    _click(backend, text="Yes")
    assert len(events(dev)) == 20
    assert backend.phone.find(text=p["event_title"]) is None  # back on the day view, gone
    assert task.is_successful(dev) == 1.0


def test_editor_keeps_duration_and_rejects_end_before_start(backend):
    task, dev = start(backend, "SimpleCalendarAddOneEvent")
    backend.execute(Action("open_app", app_name="Simple Calendar Pro"))
    _click(backend, desc="New Event")
    title = next(n for n in backend.phone.element_nodes() if n.rid == f"{PKG}:id/title")
    backend.execute(
        Action("input_text", x=title.center[0], y=title.center[1], text="Standup", clear_text=True)
    )
    assert backend.phone.find(text="16:00") and backend.phone.find(text="17:00")
    _click(backend, text="16:00")
    hour = next(n for n in backend.phone.element_nodes() if n.rid == f"{PKG}:id/hour")
    backend.execute(Action("input_text", x=hour.center[0], y=hour.center[1], text="09", clear_text=True))
    _click(backend, text="OK")
    assert backend.phone.find(text="09:00") and backend.phone.find(text="10:00")  # the end moved along
    _click(backend, text="10:00")
    hour = next(n for n in backend.phone.element_nodes() if n.rid == f"{PKG}:id/hour")
    backend.execute(Action("input_text", x=hour.center[0], y=hour.center[1], text="08", clear_text=True))
    _click(backend, text="OK")
    n = len(events(dev))
    _click(backend, desc="Save")
    assert dev.toast == "The end date cannot be before the start date" and len(events(dev)) == n


def test_editor_saves_trimmed_texts(backend):
    """Simple Calendar stores the title, location and description trimmed (its EditText.value)."""
    task, dev = start(backend, "SimpleCalendarAddOneEvent")
    backend.execute(Action("open_app", app_name="Simple Calendar Pro"))
    _click(backend, desc="New Event")
    for rid, text in (("title", "  Standup  "), ("location", " Room 5\n"), ("description", "\nNotes  ")):
        node = next(n for n in backend.phone.element_nodes() if n.rid == f"{PKG}:id/{rid}")
        backend.execute(Action("input_text", x=node.center[0], y=node.center[1], text=text, clear_text=True))
    n = len(events(dev))
    _click(backend, desc="Save")
    row = events(dev)[n]
    assert (row["title"], row["location"], row["description"]) == ("Standup", "Room 5", "Notes")


def test_expert_trajectory_adds_exactly_one_row(backend):
    run = run_expert(backend, "SimpleCalendarAddOneEvent", 3)
    assert run.score == 1.0
    dev = backend.phone.dev
    assert len(events(dev)) == len(backend.task.before) + 1


def test_add_event_in_two_weeks_is_on_october_29(backend):
    for seed in range(5):
        task, _ = start(backend, "SimpleCalendarAddOneEventInTwoWeeks", seed)
        assert task.params["day"] == 29 and "in two weeks from today" in task.goal


def test_repeating_event_params(backend):
    kinds = set()
    for seed in range(12):
        task, _ = start(backend, "SimpleCalendarAddRepeatingEvent", seed)
        p = task.params
        e = p["row_objects"][0]
        kinds.add(p["repeat_rule"])
        weekday = dt.date(2023, 10, p["day"]).weekday()  # Monday 0
        if p["repeat_rule"] == "weekly":
            assert (e["repeat_interval"], e["repeat_rule"]) == (604800, 1 << weekday)
        else:
            assert (p["repeat_rule"], e["repeat_interval"], e["repeat_rule"]) == ("daily", 86400, 0)
        assert f"recurs {p['repeat_rule']}, forever" in task.goal
    assert kinds == {"daily", "weekly"}


def _node(backend, **find):
    return next(n for n in backend.phone.element_nodes() if all(getattr(n, k) == v for k, v in find.items()))


def _type(backend, text):
    title = _node(backend, rid=f"{PKG}:id/title")
    backend.execute(Action("input_text", x=title.center[0], y=title.center[1], text=text, clear_text=True))


def test_repetition_through_the_editor(backend):
    """Weekly selects the start's weekday (Sunday 15 October: bit 64) and follows a start moved to another
    weekday; the row saves interval and rule; daily keeps the rule; the editor shows a saved series."""
    task, dev = start(backend, "SimpleCalendarAddOneEvent")
    backend.execute(Action("open_app", app_name="Simple Calendar Pro"))
    _click(backend, desc="New Event")
    _type(backend, "Standup")
    _click(backend, text="Repetition")
    _click(backend, text="Weekly")
    assert backend.phone.find(text="Weekly") is not None and backend.phone.find(text="Forever") is not None
    assert _node(backend, desc="Sunday").checked and not _node(backend, desc="Monday").checked
    _click(backend, text="Sun, Oct 15, 2023")
    _click(backend, desc="17 October 2023")
    _click(backend, text="OK")
    assert _node(backend, desc="Tuesday").checked and not _node(backend, desc="Sunday").checked
    _click(backend, desc="Friday")  # a second day
    _click(backend, desc="Save")
    row = events(dev)[-1]
    assert (row["title"], row["repeat_interval"], row["repeat_rule"]) == ("Standup", 604800, 2 | 16)
    assert row["start_ts"] == ts_of(dt.date(2023, 10, 17), 16)
    backend.execute(Action("open_app", app_name="Simple Calendar Pro"))
    _click(backend, desc="New Event")
    _click(backend, text="Repetition")
    _click(backend, text="Daily")
    _type(backend, "Gym")
    _click(backend, desc="Save")
    row = events(dev)[-1]
    assert (row["title"], row["repeat_interval"], row["repeat_rule"]) == ("Gym", 86400, 0)


def test_delete_events_on_relative_day(backend):
    for seed in range(6):
        task, dev = start(backend, "SimpleCalendarDeleteEventsOnRelativeDay", seed)
        p = task.params
        day = dt.date(2023, 10, p["day"])
        assert 16 <= p["day"] <= 21 and p["day_of_week"] == day.strftime("%A")
        assert task.goal.endswith(f"delete all events scheduled for this {p['day_of_week']}.")
        assert len(task.target_ids) == 2 and len(events(dev)) == 22
        on_day = [r["id"] for r in events(dev) if r["start_ts"] // 86400 == ts_of(day) // 86400]
        assert sorted(on_day) == sorted(task.target_ids)
    ids = task.target_ids
    events(dev)[:] = [r for r in events(dev) if r["id"] != ids[0]]
    assert task.is_successful(dev) == 0.0  # one of two left
    events(dev)[:] = [r for r in events(dev) if r["id"] != ids[1]]
    assert task.is_successful(dev) == 1.0
    events(dev).pop(0)  # and another day's event
    assert task.is_successful(dev) == 0.0


IR_TITLE_TASKS = [
    "SimpleCalendarEventOnDateAtTime",
    "SimpleCalendarEventsInNextWeek",
    "SimpleCalendarEventsInTimeRange",
    "SimpleCalendarFirstEventAfterStartTime",
]


@pytest.mark.parametrize("name", IR_TITLE_TASKS + ["SimpleCalendarNextMeetingWithPerson"])
def test_new_ir_noise_avoids_exactly_the_targets(backend, name):
    """Of the seeded events, exactly the targets meet AndroidWorld's exclusion conditions."""
    for seed in range(8):
        task, dev = start(backend, name, seed)
        targets = task.targets()
        assert len(events(dev)) == 75 + len(targets)
        hit = sorted((e["title"], e["start_ts"]) for e in events(dev) if task.excluded(e))
        assert hit == sorted((e["title"], e["start_ts"]) for e in targets), seed


@pytest.mark.parametrize("name", IR_TITLE_TASKS)
def test_new_ir_title_answers(backend, name):
    task, dev = start(backend, name)
    expected = task.expected()
    dev.interaction_cache = ", ".join(expected)
    assert task.is_successful(dev) == 1.0
    dev.interaction_cache = ", ".join(expected + ["Meeting with Bob"])
    assert task.is_successful(dev) == 0.0
    dev.interaction_cache = ", ".join(expected[:-1]) or "Meeting with Bob"
    assert task.is_successful(dev) == 0.0


def _ev(day, hh, mm, minutes):
    s = ts_of(day, hh, mm)
    return {"title": "x", "start_ts": s, "end_ts": s + 60 * minutes}


def test_ir_exclusion_boundaries(backend):
    """Each condition on both sides of its boundary (AndroidWorld compares inclusively)."""
    task, _ = start(backend, "SimpleCalendarEventOnDateAtTime")
    task.params.update(time="3:15pm")
    d = task.the_day()
    assert task.excluded(_ev(d, 14, 45, 30))  # ends at 15:15
    assert not task.excluded(_ev(d, 14, 44, 30))  # ends a minute before
    assert task.excluded(_ev(d, 15, 15, 15)) and not task.excluded(_ev(d, 15, 16, 15))

    task, _ = start(backend, "SimpleCalendarFirstEventAfterStartTime")
    task.params.update(time="4pm")
    d = task.the_day()
    assert task.excluded(_ev(d, 15, 30, 30))  # ends at 16:00
    assert not task.excluded(_ev(d, 15, 29, 30))
    assert not task.excluded(_ev(d + dt.timedelta(days=1), 17, 0, 30))  # another day

    task, _ = start(backend, "SimpleCalendarEventsInTimeRange")
    task.params.update(start_time="4:15pm")
    d = task.the_day()
    assert task.excluded(_ev(d, 15, 45, 30)) and not task.excluded(_ev(d, 15, 44, 30))
    assert task.excluded(_ev(d, 20, 0, 30)) and not task.excluded(_ev(d, 20, 1, 30))

    task, _ = start(backend, "SimpleCalendarEventsInNextWeek")
    oct_ = dt.date(2023, 10, 1)
    assert task.excluded(_ev(oct_.replace(day=22), 23, 0, 45))
    assert not task.excluded(_ev(oct_.replace(day=23), 0, 0, 45))
    assert task.excluded(_ev(oct_.replace(day=14), 23, 50, 30))  # ends on the 15th
    assert not task.excluded(_ev(oct_.replace(day=14), 23, 0, 45))

    task, _ = start(backend, "SimpleCalendarNextMeetingWithPerson")
    person, d = task.params["person"], task.day
    assert task.excluded({**_ev(d, 9, 0, 30), "title": f"Lunch with {person.lower()}"})
    assert not task.excluded({**_ev(d + dt.timedelta(days=1), 9, 0, 30), "title": f"Lunch with {person}"})
    assert not task.excluded({**_ev(d, 9, 0, 30), "title": "Lunch with Bob"})


def test_next_meeting_answer_is_a_date_and_time(backend):
    task, dev = start(backend, "SimpleCalendarNextMeetingWithPerson")
    e = task.targets()[0]
    assert e["title"] == f"Drinks with {task.params['person']}" and e["end_ts"] - e["start_ts"] == 1800
    when = dt.datetime.fromtimestamp(e["start_ts"], dt.UTC)
    for answer, score in (
        (when.strftime("%B %d %Y %H:%M"), 1.0),
        (when.strftime("%B %-d %Y %H:%M"), 1.0),
        ((when + dt.timedelta(minutes=1)).strftime("%B %d %Y %H:%M"), 0.0),
        ((when + dt.timedelta(days=1)).strftime("%B %d %Y %H:%M"), 0.0),
        (when.strftime("%B %d %Y"), 0.0),
        (when.strftime("%B %d %Y %I:%M%p"), 0.0),
        (e["title"], 0.0),
    ):
        dev.interaction_cache = answer
        assert task.is_successful(dev) == score, answer


def test_next_week_list_view_expert(backend):
    """The expert switches to the simple event list, which opens at today, and answers the week's titles."""
    run = run_expert(backend, "SimpleCalendarEventsInNextWeek", 4)
    assert run.score == 1.0 and run.steps <= 6
    assert backend.phone.dev.data(PKG)["view"] == "list"


def test_row_span_reads_day_view_times():
    from voyager_gym.backends.sim.tasks.calendar import row_span

    assert row_span("09:00 - 09:30") == (540, 570)
    assert row_span("23:30 - 00:15") == (1410, 1455)  # ends after midnight
    assert row_span("Oct 19, 23:30 - 00:15") == (-1, 15)  # began the day before
    assert row_span("All-day") == (0, 1440)


def test_views_show_every_occurrence_of_a_series(backend):
    """A weekly series on Tuesdays and Fridays from 17 October shows on those days only, from its start on,
    at its time; a daily one every day; a one-off on its day alone. Tapping an occurrence opens the series."""
    from voyager_gym.backends.sim.apps.calendar import events_on

    task, dev = start(backend, "SimpleCalendarAddOneEvent")
    events(dev).clear()
    d = dt.date(2023, 10, 17)
    weekly = make_event(dev, "Standup", ts_of(d, 9), ts_of(d, 9, 30))
    weekly.update(repeat_interval=604800, repeat_rule=2 | 16)
    daily = make_event(dev, "Gym", ts_of(d, 23, 30), ts_of(d + dt.timedelta(days=1), 0, 15))
    daily.update(repeat_interval=86400)
    once = make_event(dev, "Dentist", ts_of(d, 12), ts_of(d, 13))
    events(dev).extend([weekly, daily, once])

    def titles(day):
        return [e["title"] for e in events_on(dev, dt.date(2023, 10, day))]

    assert titles(17) == ["Standup", "Dentist", "Gym"]
    assert titles(20) == ["Gym", "Standup", "Gym"]  # Friday: yesterday's 23:30 Gym runs past midnight
    assert titles(24) == ["Gym", "Standup", "Gym"] and titles(18) == ["Gym", "Gym"]
    assert titles(10) == [] and titles(16) == []  # before the series began
    assert [e["start_ts"] for e in events_on(dev, dt.date(2023, 10, 24)) if e["title"] == "Standup"] == [
        ts_of(dt.date(2023, 10, 24), 9)
    ]
    backend.execute(Action("open_app", app_name="Simple Calendar Pro"))
    cells = [n for n in backend.phone.element_nodes() if n.text == "24" and n.rid == f"{PKG}:id/month_day"]
    backend.execute(Action("click", x=cells[-1].center[0], y=cells[-1].center[1]))
    assert backend.phone.find(text="09:00 - 09:30") is not None
    _click(backend, text="Standup")
    assert backend.phone.find(text="Weekly") is not None and backend.phone.find(text="Tue, Oct 17, 2023")
