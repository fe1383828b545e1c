"""SimDroid draws AndroidWorld's params and goal text for the same instance seed.

`tests/data/androidworld_params.json` holds, for every AndroidWorld task, the params and goal that
android_world's own `generate_random_params()` produced for instances 0-4 of its default suite (seed 30),
written by `tools/export_androidworld_params.py` (dataclass rows as dicts of their fields, dates as ISO
strings). The tasks in MATCHED are the ones SimDroid reproduces exactly; `tools/compare_params.py` reports
the rest.
"""

import json
import re
from pathlib import Path

import numpy as np
import pytest

from voyager_gym.androidworld_params import json_safe
from voyager_gym.backends.sim.tasks import TASKS
from voyager_gym.backends.sim.tasks.vocab import ir_date

FIXTURE = Path(__file__).resolve().parent.parent / "data" / "androidworld_params.json"

MATCHED = [
    # browser (the page starts in Downloads, as AndroidWorld's does)
    "BrowserDraw",
    "BrowserMaze",
    "BrowserMultiply",
    # expense
    "ExpenseAddMultiple",
    "ExpenseAddMultipleFromMarkor",
    "ExpenseAddMultipleFromGallery",
    "ExpenseAddSingle",
    "ExpenseDeleteDuplicates",
    "ExpenseDeleteDuplicates2",
    "ExpenseDeleteMultiple",
    "ExpenseDeleteMultiple2",
    "ExpenseDeleteSingle",
    # sports tracker (information retrieval)
    "SportsTrackerActivitiesCountForWeek",
    "SportsTrackerActivitiesOnDate",
    "SportsTrackerActivityDuration",
    "SportsTrackerLongestDistanceActivity",
    "SportsTrackerTotalDistanceForCategoryOverInterval",
    "SportsTrackerTotalDurationForCategoryThisWeek",
    # system
    "OpenAppTaskEval",
    "SystemBluetoothTurnOff",
    "SystemBluetoothTurnOffVerify",
    "SystemBluetoothTurnOn",
    "SystemBluetoothTurnOnVerify",
    "SystemBrightnessMax",
    "SystemBrightnessMaxVerify",
    "SystemBrightnessMin",
    "SystemBrightnessMinVerify",
    "SystemCopyToClipboard",
    "SystemWifiTurnOff",
    "SystemWifiTurnOffVerify",
    "SystemWifiTurnOn",
    "SystemWifiTurnOnVerify",
    "TurnOffWifiAndTurnOnBluetooth",
    "TurnOnWifiAndOpenApp",
    # contacts, files, markor (MarkorCreateFolder: AndroidWorld names the folder after the wall clock)
    "ContactsAddContact",
    "ContactsNewContactDraft",
    "FilesDeleteFile",
    "FilesMoveFile",
    "MarkorAddNoteHeader",
    "MarkorChangeNoteContent",
    "MarkorCreateNote",
    "MarkorCreateNoteAndSms",
    "MarkorCreateNoteFromClipboard",
    "MarkorDeleteAllNotes",
    "MarkorDeleteNewestNote",
    "MarkorDeleteNote",
    "MarkorEditNote",
    "MarkorMergeNotes",
    "MarkorMoveNote",
    "MarkorTranscribeVideo",
    # osmand
    "OsmAndFavorite",
    "OsmAndMarker",
    "OsmAndTrack",
    # joplin (information retrieval)
    "NotesIsTodo",
    "NotesMeetingAttendeeCount",
    "NotesRecipeIngredientCount",
    "NotesTodoItemCount",
    # recipe
    "RecipeAddMultipleRecipes",
    "RecipeAddMultipleRecipesFromMarkor",
    "RecipeAddMultipleRecipesFromMarkor2",
    "RecipeAddMultipleRecipesFromImage",
    "RecipeAddSingleRecipe",
    "RecipeDeleteDuplicateRecipes",
    "RecipeDeleteDuplicateRecipes2",
    "RecipeDeleteDuplicateRecipes3",
    "RecipeDeleteMultipleRecipes",
    "RecipeDeleteMultipleRecipesWithConstraint",
    "RecipeDeleteMultipleRecipesWithNoise",
    "RecipeDeleteSingleRecipe",
    "RecipeDeleteSingleWithRecipeWithNoise",
    # retro music
    "RetroCreatePlaylist",
    "RetroPlayingQueue",
    "RetroPlaylistDuration",
    "RetroSavePlaylist",
    # calendar (add and delete)
    "SimpleCalendarAddOneEvent",
    "SimpleCalendarAddOneEventInTwoWeeks",
    "SimpleCalendarAddOneEventRelativeDay",
    "SimpleCalendarAddOneEventTomorrow",
    "SimpleCalendarAddRepeatingEvent",
    "SimpleCalendarDeleteEvents",
    "SimpleCalendarDeleteEventsOnRelativeDay",
    "SimpleCalendarDeleteOneEvent",
    # calendar (information retrieval)
    "SimpleCalendarAnyEventsOnDate",
    "SimpleCalendarEventOnDateAtTime",
    "SimpleCalendarEventsInNextWeek",
    "SimpleCalendarEventsInTimeRange",
    "SimpleCalendarEventsOnDate",
    "SimpleCalendarFirstEventAfterStartTime",
    "SimpleCalendarLocationOfEvent",
    "SimpleCalendarNextEvent",
    "SimpleCalendarNextMeetingWithPerson",
    # sms
    "SimpleSmsReply",
    "SimpleSmsReplyMostRecent",
    "SimpleSmsResend",
    "SimpleSmsSend",
    "SimpleSmsSendClipboardContent",
    "SimpleSmsSendReceivedAddress",
    # tasks (information retrieval)
    "TasksCompletedTasksForDate",
    "TasksDueNextWeek",
    "TasksDueOnDate",
    "TasksHighPriorityTasks",
    "TasksHighPriorityTasksDueOnDate",
    "TasksIncompleteTasksOnDate",
    # vlc
    "VlcCreatePlaylist",
    "VlcCreateTwoPlaylists",
    # simple gallery pro (the receipt image is drawn as AndroidWorld draws it: same bytes), simple draw pro
    "SaveCopyOfReceiptTaskEval",
    "MarkorTranscribeReceipt",
    "SimpleDrawProCreateDrawing",
]

# Information-retrieval tasks whose goal after initialization (AndroidWorld rewords dates then, drawing from
# the instance seed) is AndroidWorld's too: the goal `reset` returns equals the fixture's `init_goal`.
INIT_MATCHED = [
    "NotesIsTodo",
    "NotesMeetingAttendeeCount",
    "NotesRecipeIngredientCount",
    "NotesTodoItemCount",
    "SimpleCalendarAnyEventsOnDate",
    "SimpleCalendarEventOnDateAtTime",
    "SimpleCalendarEventsInNextWeek",
    "SimpleCalendarEventsInTimeRange",
    "SimpleCalendarEventsOnDate",
    "SimpleCalendarFirstEventAfterStartTime",
    "SimpleCalendarLocationOfEvent",
    "SimpleCalendarNextEvent",
    "SimpleCalendarNextMeetingWithPerson",
    "SportsTrackerActivitiesCountForWeek",
    "SportsTrackerActivitiesOnDate",
    "SportsTrackerActivityDuration",
    "SportsTrackerLongestDistanceActivity",
    "SportsTrackerTotalDistanceForCategoryOverInterval",
    "SportsTrackerTotalDurationForCategoryThisWeek",
    "TasksCompletedTasksForDate",
    "TasksDueNextWeek",
    "TasksDueOnDate",
    "TasksHighPriorityTasks",
    "TasksHighPriorityTasksDueOnDate",
    "TasksIncompleteTasksOnDate",
]

# Keys SimDroid keeps beside AndroidWorld's (internal values its start state or verifier reads); a task
# listed here produces a superset of AndroidWorld's params, equal on every AndroidWorld key.
EXTRA_KEYS: dict[str, set[str]] = {}


@pytest.fixture(scope="module")
def fixture():
    return json.loads(FIXTURE.read_text())


def test_fixture_covers_androidworld():
    data = json.loads(FIXTURE.read_text())
    assert data["_meta"]["tasks"] == 116 and len(data) == 117
    assert all(len(v) == data["_meta"]["instances"] for k, v in data.items() if k != "_meta")


@pytest.mark.parametrize("name", MATCHED)
def test_params_and_goal_match_androidworld(backend, fixture, name):
    for inst in fixture[name]:
        params = backend.generate_params(name, inst["seed"])
        got = json_safe(params)
        extra = EXTRA_KEYS.get(name, set())
        keys = f"{name}: keys {sorted(got)} vs AndroidWorld's {sorted(inst['params'])}"
        assert set(got) - set(inst["params"]) == extra and set(inst["params"]) <= set(got), keys
        got = {k: v for k, v in got.items() if k not in extra}
        assert got == inst["params"], f"{name} seed {inst['seed']}"
        assert TASKS[name](params).goal == inst["goal"], f"{name} seed {inst['seed']}"
        assert TASKS[name].complexity == inst["complexity"], name


@pytest.mark.parametrize("name", INIT_MATCHED)
def test_initialized_ir_goal_matches_androidworld(backend, fixture, name):
    for inst in fixture[name]:
        goal = backend.reset(name, backend.generate_params(name, inst["seed"]), np.random.default_rng(0))
        assert goal == inst["init_goal"], f"{name} seed {inst['seed']}"


def _aw_drawn_state(name, state):
    """The part of AndroidWorld's initialized relevant state that is drawn at setup, in SimDroid's shape."""
    s = state["state"]
    if name == "NotesTodoItemCount":
        return [(n["title"], n["body"]) for n in s["notes_app"]["notes"]]
    if name == "SimpleCalendarAnyEventsOnDate":
        return [(e["start_time"], e["title"]) for e in s["calendar"]["events"]]
    if name == "SimpleCalendarEventsInNextWeek":
        return [(e["start_date"], e["start_time"], e["title"]) for e in s["calendar"]["events"]]
    if name.startswith("SportsTracker"):
        acts = s["sports_activity_app"]["sports_activities"]
        return [{("distance" if k == "total_distance" else k): v for k, v in a.items()} for a in acts]
    rows = s["tasks_app"]["tasks_app_tasks"]
    hide = [(ir_date(t["hide_until_date"]).day, t["hide_until_time"]) for t in rows]
    if name == "TasksCompletedTasksForDate":
        return [(t["title"], t["notes"], *h, t["completed_time"]) for t, h in zip(rows, hide, strict=True)]
    if name == "TasksDueNextWeek":
        return [(t["title"], ir_date(t["due_date"]), t["notes"], *h) for t, h in zip(rows, hide, strict=True)]
    out = []
    for t in rows:
        day = int(t["hide_until_date"].split()[1])  # "October 10 2023" -> 10
        out.append((t["title"], int(t["importance"]), t["notes"], day, t["hide_until_time"]))
    return out


@pytest.mark.parametrize(
    "name, attr",
    [
        ("NotesTodoItemCount", "notes"),
        ("SimpleCalendarAnyEventsOnDate", "events"),
        ("TasksCompletedTasksForDate", "rows"),
        ("TasksDueNextWeek", "rows"),
        ("SimpleCalendarEventsInNextWeek", "events"),
        ("TasksDueOnDate", "rows"),
        ("TasksIncompleteTasksOnDate", "rows"),
        ("SportsTrackerActivitiesCountForWeek", "activities"),
        ("SportsTrackerActivitiesOnDate", "activities"),
        ("SportsTrackerTotalDurationForCategoryThisWeek", "activities"),
        ("SportsTrackerActivityDuration", "activities"),
        ("SportsTrackerLongestDistanceActivity", "activities"),
        ("SportsTrackerTotalDistanceForCategoryOverInterval", "activities"),
    ],
)
def test_ir_setup_draws_androidworld_relevant_state(backend, fixture, name, attr):
    """Items AndroidWorld draws without replacement at setup are the same ones, in the same order."""
    for inst in fixture[name]:
        backend.reset(name, backend.generate_params(name, inst["seed"]), np.random.default_rng(0))
        assert getattr(backend.task, attr) == _aw_drawn_state(name, inst["init_state"]), inst["seed"]


def test_env_reset_takes_androidworld_params_dict_as_exported(fixture):
    """`reset(options={"task": T, "params": P})` with P exactly as the fixture holds what android_world drew
    (JSON form: rows as dicts of their fields) starts every SimDroid task and gives AndroidWorld's goal (for
    information-retrieval tasks its goal after setup, dates reworded)."""
    from voyager_gym.env import VoyagerEnv

    env = VoyagerEnv(observation_mode="elements", noise="none")
    try:
        for name in sorted(TASKS):
            for inst in fixture[name][:2]:
                obs, _ = env.reset(seed=0, options={"task": name, "params": inst["params"]})
                assert obs["goal"] == inst.get("init_goal", inst["goal"]), f"{name} seed {inst['seed']}"
    finally:
        env.close()


def test_suite_draws_params_with_androidworlds_own_generators(monkeypatch):
    """`eval_suite(backend="androidworld")` calls android_world's generator for each instance as its suite
    does (device time set, `random` seeded with the instance seed, the seed stored), returns the params in
    the fixture's JSON form, and leaves the caller's `random` as it was. A stand-in android_world module
    (the real one is not installed here) records the calls."""
    import dataclasses
    import datetime
    import random
    import sys
    import types

    from voyager_gym.suites import ANDROIDWORLD, eval_suite, instance_seed

    @dataclasses.dataclass
    class Row:
        title: str
        when: datetime.date

    calls = []

    class FakeTask:
        @classmethod
        def set_device_time(cls, env):
            calls.append(("device_time", env))

        @classmethod
        def generate_random_params(cls):
            return {"n": random.randint(0, 10**9), "rows": (Row("a", datetime.date(2023, 10, 15)),)}

    class TaskRegistry:
        ANDROID_WORLD_FAMILY = "android_world"

        def get_registry(self, family):
            assert family == "android_world"
            return {"FakeTask": FakeTask}

    pkg = types.ModuleType("android_world")
    pkg.registry = types.SimpleNamespace(TaskRegistry=TaskRegistry)
    monkeypatch.setitem(sys.modules, "android_world", pkg)
    monkeypatch.setitem(sys.modules, "android_world.registry", pkg.registry)
    random.seed(123)
    expected_next = random.random()
    random.seed(123)
    suite = eval_suite(["FakeTask"], n_per_task=2, backend=ANDROIDWORLD)
    assert random.random() == expected_next  # the caller's random state is untouched
    for i, inst in enumerate(suite):
        s = instance_seed(30, "FakeTask", i)
        random.seed(s)
        assert inst.params == {"n": random.randint(0, 10**9), "rows": [{"title": "a", "when": "2023-10-15"}],
                               "seed": s}
    assert calls == [("device_time", None)] * 2

def _stand_in_android_world(monkeypatch, fixture, names):
    """A stand-in android_world package (the real one is not installed here) whose generators are functions
    of Python's seeded `random`, as android_world's are: each returns the fixture's params for the instance
    seed `random` was seeded with (recognised by its first draw), and fails for any other seed. Returns the
    list of (task, seed) draws."""
    import random
    import sys
    import types

    draws = []

    def task_class(name):
        by_first = {}
        for inst in fixture[name]:
            random.seed(inst["seed"])
            by_first[random.random()] = inst

        class Task:
            @classmethod
            def set_device_time(cls, env):
                pass

            @classmethod
            def generate_random_params(cls):
                state = random.getstate()
                inst = by_first.get(random.random())
                random.setstate(state)
                assert inst is not None, f"{name}: random was not seeded with a fixture instance seed"
                draws.append((name, inst["seed"]))
                return {k: v for k, v in inst["params"].items() if k != "seed"}

        return Task

    class TaskRegistry:
        ANDROID_WORLD_FAMILY = "android_world"

        def get_registry(self, family):
            return {n: task_class(n) for n in names}

    pkg = types.ModuleType("android_world")
    pkg.registry = types.SimpleNamespace(TaskRegistry=TaskRegistry)
    monkeypatch.setitem(sys.modules, "android_world", pkg)
    monkeypatch.setitem(sys.modules, "android_world.registry", pkg.registry)
    return draws


def test_env_params_androidworld_evaluates_androidworlds_instances(monkeypatch, fixture):
    """`env.params=androidworld` makes the evaluation suite AndroidWorld's: every instance's params come from
    android_world's generator seeded with AndroidWorld's instance seed (instances 0 and 1 of suite seed 30,
    the fixture's), and SimDroid plays them (the expert solves them all)."""
    from experiments import evaluate

    names = ["SimpleSmsSend", "SystemBrightnessMax"]
    draws = _stand_in_android_world(monkeypatch, fixture, names)
    result = evaluate.main(["policy=expert", f"tasks={','.join(names)}", "eval_n_per_task=2", "seeds=1",
                            "env.num_envs=2", "env.params=androidworld"])
    assert draws == [(n, fixture[n][i]["seed"]) for n in names for i in range(2)]
    assert result["episodes"] == 4 and result["errored"] == 0 and result["pass_at_1_mean"] == 1.0


def test_env_params_androidworld_keys_the_base_cache_and_needs_the_package(monkeypatch, tmp_path):
    import sys

    from experiments import config as C
    from experiments import pretrain
    from experiments.common import base_key, suite_backend
    from voyager_gym.suites import ANDROIDWORLD, FROM_ENV

    aw = C.parse(["env.params=androidworld"], C.TrainConfig)
    auto, sim = C.parse([], C.TrainConfig), C.parse(["env.params=simdroid"], C.TrainConfig)
    assert suite_backend(aw) == ANDROIDWORLD and suite_backend(auto) is None and suite_backend(sim) is None
    assert suite_backend(C.parse(["env.backend=androidworld"], C.TrainConfig)) == FROM_ENV
    assert base_key(aw, ["SimpleSmsSend"]) != base_key(auto, ["SimpleSmsSend"])
    with pytest.raises(SystemExit, match="env.params='gemini'"):
        C.parse(["env.params=gemini"], C.TrainConfig)
    monkeypatch.setitem(sys.modules, "android_world", None)  # import fails as if not installed
    with pytest.raises(ImportError, match="need the android_world package"):
        pretrain.main(["tasks=SimpleSmsSend", "env.params=androidworld", "env.num_envs=1",
                       f"cache_dir={tmp_path}"])


def test_androidworld_generators_need_the_package(monkeypatch):
    import sys

    from voyager_gym.suites import ANDROIDWORLD, eval_suite

    monkeypatch.setitem(sys.modules, "android_world", None)  # import fails as if not installed
    with pytest.raises(ImportError, match="need the android_world package"):
        eval_suite(["SystemWifiTurnOn"], backend=ANDROIDWORLD)


def test_fidelity_table_has_a_row_per_task():
    """docs/fidelity.md's per-task table (generated by tools/androidworld_fidelity.py) names every SimDroid
    task once, with every column filled in, and says when and at which commit it was generated."""
    doc = (Path(__file__).resolve().parents[2] / "docs" / "fidelity.md").read_text()
    lines = doc.splitlines()
    header = "| Task | Params equal | Goal equal | Start state | Verdicts agree | Differences and notes |"
    start = lines.index(header)
    end = next(i for i in range(start + 2, len(lines)) if not lines[i].startswith("|"))
    cells = [[c.strip() for c in r.strip("|").split("|")] for r in lines[start + 2:end]]
    assert sorted(c[0] for c in cells) == sorted(TASKS)
    assert all(len(c) == 6 and all(c) for c in cells)
    assert re.search(r"Generated \d{4}-\d\d-\d\d at commit \w+", doc)
