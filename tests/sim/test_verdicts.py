"""AndroidWorld's verdicts and start states, checked on both sides of each line: a case AndroidWorld accepts
next to a close one it rejects (clipboard fuzziness, the paused stopwatch on screen, SMS numbers, the
information-retrieval answer rule), and the start states its `initialize_task` leaves."""

import numpy as np
import pytest

from tests.sim import helpers
from tests.sim.helpers import view
from voyager_gym.actions import Action
from voyager_gym.backends.sim.apps import clock as clock_app
from voyager_gym.backends.sim.apps import recorder as recorder_app
from voyager_gym.backends.sim.apps import sms as sms_app
from voyager_gym.backends.sim.tasks.base import TASKS, check_answer, click, open_app


def start(backend, name, params):
    backend.reset(name, params, np.random.default_rng(0))
    return backend.phone.dev


# -- SystemCopyToClipboard: fuzzy_match (ratio >= 0.9, case ignored, nothing stripped) ------------------
@pytest.mark.parametrize(
    ("clip", "score"),
    [
        ("Invoice #98765", 1.0),
        ("invoice #98765", 1.0),  # case ignored
        ("Invoice #987", 1.0),  # ratio 24/26 = 0.92
        (" Invoice #98765 ", 1.0),  # spaces count as characters: 28/30 = 0.93
        ("Invoice #98", 0.0),  # ratio 22/25 = 0.88
        ("Invoice #12345", 0.0),
    ],
)
def test_clipboard_is_matched_fuzzily(backend, clip, score):
    dev = start(backend, "SystemCopyToClipboard", {"clipboard_content": "Invoice #98765"})
    dev.clipboard = clip
    assert backend.score() == score


# -- ClockStopWatchPausedVerify / ClockStopWatchRunning: read on the Clock screen ------------------------
def test_paused_stopwatch_must_be_on_screen(backend):
    start(backend, "ClockStopWatchPausedVerify", {"seed": 3})
    assert not TASKS["ClockStopWatchPausedVerify"].starts_solved
    assert backend.score() == 0.0, "doing nothing (home screen in front) must fail"
    backend.execute(open_app("Clock"))
    assert clock_app.state(backend.phone.dev)["tab"] != "stopwatch"  # cleared app data: default tab
    assert backend.score() == 0.0, "Clock in front but another tab"
    backend.execute(click(view(backend).find(desc="Stopwatch", rid=f"{clock_app.PKG}:id/tab_stopwatch")))
    assert backend.score() == 1.0  # Start shown on the Stopwatch tab
    backend.execute(click(view(backend).find(desc="Start")))
    assert backend.score() == 0.0, "running"
    backend.execute(click(view(backend).find(desc="Pause")))
    assert backend.score() == 1.0
    backend.execute(Action("navigate_home"))
    assert backend.score() == 0.0, "paused, but Clock is not in front"


def test_running_stopwatch_must_be_on_screen(backend):
    start(backend, "ClockStopWatchRunning", {"seed": 3})
    backend.execute(open_app("Clock"))
    backend.execute(click(view(backend).find(desc="Stopwatch", rid=f"{clock_app.PKG}:id/tab_stopwatch")))
    backend.execute(click(view(backend).find(desc="Start")))
    assert backend.score() == 1.0
    backend.execute(Action("navigate_home"))
    assert backend.score() == 0.0, "running, but Clock is not in front"


# -- SMS: the address with '-' and ' ' removed must equal the number ('+' and the rest compared) ----------
@pytest.mark.parametrize(
    ("typed", "score"),
    [
        ("+15551234567", 1.0),
        ("+1 555-123-4567", 1.0),  # dashes and spaces are removed
        ("+1-555 123 4567", 1.0),
        ("15551234567", 0.0),  # no '+': same digits, different string
        ("5551234567", 0.0),
        ("+1 (555) 123-4567", 0.0),  # parentheses are not removed
        ("+1.555.123.4567", 0.0),
    ],
)
def test_sms_number_rule(backend, typed, score):
    msg = "Meeting at 3pm, don't be late."
    dev = start(backend, "SimpleSmsSend", {"number": "+15551234567", "message": msg})
    backend.execute(open_app("Simple SMS Messenger"))
    sms_app.send_sms(dev, typed, msg)
    assert backend.score() == score


def test_sms_resend_number_rule(backend):
    p = helpers.reset(backend, "SimpleSmsResend", 11)
    sms_app.send_sms(backend.phone.dev, p["number"].lstrip("+"), p["message"])
    assert backend.score() == 0.0, "same digits without '+'"
    p = helpers.reset(backend, "SimpleSmsResend", 11)
    n = p["number"]
    sms_app.send_sms(backend.phone.dev, f"{n[:2]} {n[2:5]}-{n[5:8]}-{n[8:]}", p["message"])
    assert backend.score() == 1.0


# -- information retrieval: check_agent_answer ---------------------------------------------------------
@pytest.mark.parametrize(
    ("answer", "expected", "match", "tol", "ok"),
    [
        ("16500", "16500", "number", None, True),
        ("16500.0", "16500", "number", None, True),
        ("16,500", "16500", "number", None, False),  # always split on commas: two answers for one
        ("95,", "95", "number", None, False),  # an empty part is an answer too (and not a number)
        ("95", "95", "number", None, True),
        ("95 km", "95", "number", None, False),
        ("96", "95", "number", None, False),  # no tolerance: exact
        ("1009.9", "1000", "number", 10.0, True),
        ("1010", "1000", "number", 10.0, False),  # |a - e| < tolerance, strictly
        ("Gym, Lunch, Call", ["Call", "Gym", "Lunch"], "string", None, True),
        ("gym,lunch,call", ["Call", "Gym", "Lunch"], "string", None, True),
        ("Gym, Lunch, Call,", ["Call", "Gym", "Lunch"], "string", None, False),  # trailing comma
        ("Gym, Gym, Gym", ["Call", "Gym", "Lunch"], "string", None, True),  # many-to-one
        ("Gym, Lunch", ["Call", "Gym", "Lunch"], "string", None, False),
        ("Gym, Lunch, Dinner", ["Call", "Gym", "Lunch"], "string", None, False),
        ("Conference room B", "Conference Room B", "string", None, True),
        ("Room B, Floor 2", "Room B, Floor 2", "string", None, False),  # a comma inside one answer
        ("True", "True", "string", None, True),
        ("October 27 2023 15:15", "October 27 2023 15:15", "datetime", None, True),
        ("october 27 2023 15:15", "October 27 2023 15:15", "datetime", None, True),  # month name any case
        ("October 27 2023 15:16", "October 27 2023 15:15", "datetime", None, False),
        ("October 27 2023 3:15pm", "October 27 2023 15:15", "datetime", None, False),  # 24-hour only
        ("Oct 27 2023 15:15", "October 27 2023 15:15", "datetime", None, False),
        ("October 27 2023", "October 27 2023 15:15", "datetime", None, False),
        ("October 27 2023 15:15,", "October 27 2023 15:15", "datetime", None, False),
    ],
)
def test_check_answer_rule(answer, expected, match, tol, ok):
    assert check_answer(answer, expected, match, tol) is ok


IR_TASKS = [
    "SimpleCalendarEventsOnDate",
    "SimpleCalendarAnyEventsOnDate",
    "SimpleCalendarLocationOfEvent",
    "SimpleCalendarNextEvent",
    "SimpleCalendarEventOnDateAtTime",
    "SimpleCalendarEventsInNextWeek",
    "SimpleCalendarEventsInTimeRange",
    "SimpleCalendarFirstEventAfterStartTime",
    "SimpleCalendarNextMeetingWithPerson",
    "TasksDueOnDate",
    "TasksIncompleteTasksOnDate",
    "TasksHighPriorityTasks",
    "TasksCompletedTasksForDate",
    "TasksDueNextWeek",
    "TasksHighPriorityTasksDueOnDate",
    "SportsTrackerActivitiesCountForWeek",
    "SportsTrackerLongestDistanceActivity",
    "SportsTrackerActivityDuration",
    "SportsTrackerTotalDistanceForCategoryOverInterval",
    "SportsTrackerActivitiesOnDate",
    "SportsTrackerTotalDurationForCategoryThisWeek",
    "NotesIsTodo",
    "NotesMeetingAttendeeCount",
    "NotesRecipeIngredientCount",
    "NotesTodoItemCount",
]


def expected_answers(task) -> list[str]:
    if hasattr(task, "expected"):
        e = task.expected()
        return [e] if isinstance(e, str) else list(e)
    return [t["title"] for t in task.targets()]


def test_ir_families_are_listed():
    from voyager_gym.backends.sim.tasks import calendar, joplin_ir, sports_ir, tasks_ir

    bases = (calendar._CalendarIR, joplin_ir._NotesIR, sports_ir._SportsIR, tasks_ir._TasksIR)
    assert {n for n, c in TASKS.items() if issubclass(c, bases)} == set(IR_TASKS)


@pytest.mark.parametrize("name", IR_TASKS)
def test_ir_answers_follow_check_agent_answer(backend, name):
    seen_multi = False
    for seed in range(6):
        helpers.reset(backend, name, 300 + seed)
        dev = backend.phone.dev
        exp = expected_answers(backend.task)
        if not exp or any(not e for e in exp):
            continue
        dev.interaction_cache = ", ".join(exp)
        assert backend.score() == 1.0, (seed, exp)
        dev.interaction_cache = ", ".join(exp) + ","
        assert backend.score() == 0.0, ("trailing comma", seed, exp)
        dev.interaction_cache = ""
        assert backend.score() == 0.0
        if len(exp) > 1:
            seen_multi = True
            dev.interaction_cache = ", ".join([exp[0]] * len(exp))
            assert backend.score() == 1.0, ("many-to-one", seed, exp)
            dev.interaction_cache = ", ".join(exp[:-1])
            assert backend.score() == 0.0, ("one short", seed, exp)
    if name in (
        "TasksDueOnDate",
        "TasksIncompleteTasksOnDate",
        "TasksCompletedTasksForDate",
        "SportsTrackerActivitiesOnDate",
        "SimpleCalendarAnyEventsOnDate",
        "SimpleCalendarEventsInNextWeek",
    ):
        assert seen_multi, "no instance with several answers was drawn"


# -- start states (AndroidWorld's initialize_task) -------------------------------------------------------
def test_copy_to_clipboard_starts_with_the_reset_marker(backend):
    dev = start(backend, "SystemCopyToClipboard", {"clipboard_content": "Invoice #98765"})
    assert dev.clipboard == "~~~RESET~~~"
    assert backend.score() == 0.0


def test_contacts_add_contact_starts_without_contacts(backend):
    for seed in range(3):
        helpers.reset(backend, "ContactsAddContact", seed)
        assert backend.phone.dev.contacts == []


@pytest.mark.parametrize(
    "name", ["SimpleSmsSend", "SimpleSmsReply", "SimpleSmsReplyMostRecent", "SimpleSmsSendClipboardContent"]
)
def test_sms_tasks_start_with_only_the_task_texts(backend, name):
    for seed in range(3):
        p = helpers.reset(backend, name, seed)
        dev = backend.phone.dev
        assert dev.contacts == []
        assert all(m["box"] == "inbox" and not m["read"] for m in dev.sms)
        if name == "SimpleSmsSend" or name == "SimpleSmsSendClipboardContent":
            assert dev.sms == []
        else:
            assert 1 <= len(dev.sms) <= 6
            assert any(m["address"] == p["number"] for m in dev.sms)


def test_sms_resend_and_received_address_start_states(backend):
    p = helpers.reset(backend, "SimpleSmsResend", 5)
    dev = backend.phone.dev
    assert [c["name"] for c in dev.contacts] == [p["name"]]
    assert [(m["box"], m["body"]) for m in sorted(dev.sms, key=lambda m: m["time_ms"])] == [
        ("sent", p["message"]),
        ("inbox", "Sorry, there was a glitch, what was the last message you sent me?"),
    ]
    p = helpers.reset(backend, "SimpleSmsSendReceivedAddress", 5)
    dev = backend.phone.dev
    assert sorted(c["name"] for c in dev.contacts) == sorted([p["name1"], p["name2"]])
    assert [(m["box"], m["body"]) for m in dev.sms] == [("inbox", p["message"])]


@pytest.mark.parametrize(
    ("name", "level"),
    [
        ("SystemBrightnessMax", 1),
        ("SystemBrightnessMin", 255),
        ("SystemBrightnessMaxVerify", 255),
        ("SystemBrightnessMinVerify", 1),
    ],
)
def test_brightness_start_states(backend, name, level):
    for seed in range(3):
        helpers.reset(backend, name, seed)
        assert backend.phone.dev.settings["screen_brightness"] == level


@pytest.mark.parametrize("name", ["AudioRecorderRecordAudio", "AudioRecorderRecordAudioWithFileName"])
def test_recorder_tasks_start_without_recordings(backend, name):
    for seed in range(3):
        helpers.reset(backend, name, seed)
        assert recorder_app.recordings(backend.phone.dev) == []


@pytest.mark.parametrize("name", ["ClockTimerEntry", "ClockStopWatchRunning", "ClockStopWatchPausedVerify"])
def test_clock_tasks_start_with_cleared_app_data(backend, name):
    """AndroidWorld clears Clock's app data before each task, so every instance starts on the app's default
    tab with its default alarms, no timers and the stopwatch reset (not a tab drawn per instance)."""
    fresh = clock_app.state(type(backend.phone.dev)())
    for seed in range(6):
        helpers.reset(backend, name, seed)
        assert clock_app.state(backend.phone.dev) == fresh


def test_recipe_add_single_noise_never_shares_the_title():
    import random

    cls = TASKS["RecipeAddSingleRecipe"]
    for seed in range(300):
        p = cls.generate_random_params(random.Random(seed))
        title = p["row_objects"][0]["title"]
        assert all(r["title"] != title for r in p["noise_row_objects"]), seed


# -- per-task match types (AndroidWorld's tasks.textproto) -------------------------------------------------
def test_attendee_count_is_a_number_match(backend):
    helpers.reset(backend, "NotesMeetingAttendeeCount", 1)
    dev = backend.phone.dev
    n = backend.task.expected()
    cases = ((n, 1.0), (f"{n}.0", 1.0), (f"{n},", 0.0), (f"{n} people", 0.0), (str(int(n) + 1), 0.0))
    for text, score in cases:
        dev.interaction_cache = text
        assert backend.score() == score, text


def test_ingredient_quantity_is_a_string_match(backend):
    name = "NotesRecipeIngredientCount"
    dev = start(backend, name, backend.generate_params(name, 2))
    assert backend.task.expected() == "2 cups"
    for text, score in (("2 cups", 1.0), ("2 Cups", 1.0), ("2 cup", 1.0), ("2", 0.0), ("2.0 cups", 0.0)):
        dev.interaction_cache = text
        assert backend.score() == score, text


@pytest.mark.parametrize(
    "name", ["SportsTrackerLongestDistanceActivity", "SportsTrackerTotalDistanceForCategoryOverInterval"]
)
def test_distance_tolerance_is_strictly_under_ten_meters(backend, name):
    helpers.reset(backend, name, 4)
    dev = backend.phone.dev
    e = float(backend.task.expected())
    for delta, score in ((0, 1.0), (9.9995, 1.0), (-9.9995, 1.0), (10, 0.0), (-10.5, 0.0)):
        dev.interaction_cache = str(e + delta)
        assert backend.score() == score, delta


def test_duration_is_an_exact_number_match(backend):
    helpers.reset(backend, "SportsTrackerActivityDuration", 4)
    dev = backend.phone.dev
    e = float(backend.task.expected())
    for text, score in ((str(e), 1.0), (str(int(e)) if e == int(e) else str(e), 1.0), (str(e + 0.5), 0.0)):
        dev.interaction_cache = text
        assert backend.score() == score, text


# -- Database rows (Expense, Recipe, Calendar adds): free-form fields fuzzily, nothing stripped -------------
@pytest.mark.parametrize(
    ("name", "field"),
    [("ExpenseAddSingle", "name"), ("RecipeAddSingleRecipe", "title"),
     ("SimpleCalendarAddOneEvent", "title")],
)
def test_row_text_is_compared_unstripped(backend, name, field):
    """AndroidWorld's row check (validate_rows_addition_integrity) strips no text: padding a short field with
    spaces fails it, as it does on AndroidWorld (ExpenseAddSingle "  Interest Income  ": 0), while the same
    padding on a long text still passes the 0.9 ratio."""
    table = {"ExpenseAddSingle": "expense", "RecipeAddSingleRecipe": "recipes"}.get(name, "events")
    cases = (("  ", "Interest Income", 0.0), ("  ", "Interest Income from Savings", 1.0),
             ("", "Interest Income", 1.0))
    for padded, text, score in cases:
        params = backend.generate_params(name, 3)
        params["row_objects"][0][field] = text
        dev = start(backend, name, params)
        row = dict(params["row_objects"][0], **{field: f"{padded}{text}{padded}"})
        key = {"expense": "expense_id", "recipes": "recipeId"}.get(table, "id")
        row[key] = max((r.get(key, 0) for r in dev.table(table)), default=0) + 1
        dev.table(table).append(row)
        assert backend.score() == score, (text, padded)


# -- start states drawn as AndroidWorld draws them (recorded from android_world d9c569f, instance seed 3) ----
def test_sms_reply_texts_are_androidworlds(backend):
    def texts() -> list[tuple[str, str]]:
        return [(m["address"], m["body"]) for m in sorted(backend.phone.dev.sms, key=lambda m: m["time_ms"])]

    helpers.reset(backend, "SimpleSmsReply", 3)
    assert texts() == [("+13982597919", "Winter is coming."),
                       ("+19791907483", "Dry cleaning is ready for pick-up."),
                       ("+17887623286", "Don't forget to water the plants while I'm away.")]
    helpers.reset(backend, "SimpleSmsReplyMostRecent", 3)
    assert texts() == [("+19825979190", "Actions speak louder than words."),
                       ("+13982597919", "To be or not to be.")]
    helpers.reset(backend, "SimpleSmsSendReceivedAddress", 3)
    assert sorted((c["name"], c["phone"]) for c in backend.phone.dev.contacts) == [
        ("Charlie Pereira", "+13982597919"), ("Nora Gonzalez", "+15979190748")]
    assert texts() == [("+13982597919", "1011 S Maple St, Little Rock, AR, 72204")]


def test_markor_edit_note_content_is_androidworlds(backend):
    p = helpers.reset(backend, "MarkorEditNote", 3)
    assert p["file_name"] == "note_oHwLM.md"
    assert backend.task.original == "The library book is due back on the 15th."
