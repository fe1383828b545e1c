"""OpenTracks IR tasks: seeded answers, noise exclusion rules, near misses and the track list/detail UI."""

import datetime as dt

import numpy as np

from voyager_gym.actions import Action
from voyager_gym.backends.sim.apps.opentracks import TRACKS
from voyager_gym.backends.sim.tasks.sports_ir import WEEK_START


def _reset(backend, name, seed=11):
    params = backend.generate_params(name, seed)
    backend.reset(name, params, np.random.default_rng(0))
    return params, backend.phone.dev


def _score(backend, text):
    backend.phone.dev.interaction_cache = text
    return backend.score()


def _day(t):
    return dt.datetime.fromtimestamp(t["starttime"] / 1000, tz=dt.UTC).date()


def _this_week(backend, name, seed):
    """Reset `name`; the tracks of its category this week: the two drawn, no noise among them."""
    params, dev = _reset(backend, name, seed)
    cat = params["category"]
    week = [
        t
        for t in dev.table(TRACKS)
        if cat in t["category"] and WEEK_START <= _day(t) <= dt.date(2023, 10, 15)
    ]
    assert len(week) == 2 and len(dev.table(TRACKS)) == 22
    return week


def test_count_for_week(backend):
    for seed in range(5):
        _this_week(backend, "SportsTrackerActivitiesCountForWeek", seed)
        assert _score(backend, "3") == 0.0
        assert _score(backend, "2") == 1.0


def test_longest_distance_tolerance(backend):
    params, dev = _reset(backend, "SportsTrackerLongestDistanceActivity")
    want = int(backend.task.expected())
    assert _score(backend, str(want + 12)) == 0.0
    assert _score(backend, str(want + 5)) == 1.0
    assert _score(backend, str(want)) == 1.0


def test_duration_near_miss(backend):
    params, _ = _reset(backend, "SportsTrackerActivityDuration")
    minutes = int(params["duration"])  # AndroidWorld's `duration` param is the activity's length
    assert _score(backend, str(minutes + 1)) == 0.0
    assert _score(backend, f"{minutes // 60}:{minutes % 60:02d}") == 0.0
    assert _score(backend, str(minutes)) == 1.0


def test_total_distance_needs_both_activities(backend):
    params, dev = _reset(backend, "SportsTrackerTotalDistanceForCategoryOverInterval")
    rel = [
        t
        for t in dev.table(TRACKS)
        if t["category"] == params["category"] and dt.date(2023, 10, 1) <= _day(t)
    ]
    dists = sorted(
        int(t["totaldistance"]) for t in rel if t["name"] in {a["name"] for a in backend.task.activities}
    )
    assert len(dists) == 2
    assert _score(backend, str(dists[1])) == 0.0  # only one of the two activities
    assert _score(backend, str(sum(dists))) == 1.0


def test_track_detail_via_ui(backend):
    params, dev = _reset(backend, "SportsTrackerActivityDuration")
    backend.execute(Action("open_app", app_name="open tracks sports tracker"))
    els = backend.phone.elements()
    i = next(k for k, e in enumerate(els) if (e.resource_name or "").endswith("trackListItemName"))
    name = els[i].text
    backend.execute(Action("click", index=i))
    texts = [e.text for e in backend.phone.elements()]
    assert name in texts and "Total time" in texts and "Distance" in texts
    backend.execute(Action("navigate_back"))
    assert any(e.text == "OpenTracks" for e in backend.phone.elements())


def test_activities_on_date(backend):
    """The date's two activities are the only ones that day; the answer names both types, in any order."""
    for seed in range(5):
        params, dev = _reset(backend, "SportsTrackerActivitiesOnDate", seed)
        day = [t for t in dev.table(TRACKS) if _day(t) == backend.task.dates["date"]]
        cats = [a["category"] for a in backend.task.activities]
        assert sorted(t["category"] for t in day) == sorted(cats) and len(set(cats)) == 2
        assert len(dev.table(TRACKS)) == 22
        assert _score(backend, ", ".join(reversed(cats))) == 1.0
        assert _score(backend, cats[0]) == 0.0  # one type missing
        assert _score(backend, ", ".join([*cats, "walking"])) == 0.0  # one too many
        assert _score(backend, f"{cats[0]}, {cats[0]}") == 1.0  # AndroidWorld: each part matches some type


def test_total_duration_this_week(backend):
    for seed in range(5):
        week = _this_week(backend, "SportsTrackerTotalDurationForCategoryThisWeek", seed)
        minutes = [t["totaltime"] // 60_000 for t in week]
        assert _score(backend, str(sum(minutes))) == 1.0
        assert _score(backend, str(sum(minutes) + 1)) == 0.0
        assert _score(backend, str(max(minutes))) == 0.0  # one of the two
