"""Clock app and tasks: keypad timer entry, stopwatch start/pause/lap/reset, and near misses for each task."""

import numpy as np

from voyager_gym.actions import Action
from voyager_gym.backends.sim.apps import clock
from voyager_gym.backends.sim.tasks.base import View

PKG = clock.PKG


def tap(backend, **find):
    """Click the first element matching `find` (View.find keywords) through an index action."""
    i = View(backend.phone.elements()).find(**find)
    assert i is not None, f"no element {find}"
    backend.execute(Action("click", index=i))


def start(backend, name, **params):
    params.setdefault("seed", 1)
    backend.reset(name, params, np.random.default_rng(0))
    backend.execute(Action("open_app", app_name="Clock"))


def texts(backend):
    return View(backend.phone.elements()).texts()


def test_timer_keypad_entry_and_near_misses(backend):
    start(backend, "ClockTimerEntry", hours=1, minutes=2, seconds=30)
    tap(backend, desc="Timer", rid=f"{PKG}:id/tab_timer")
    assert "00h 00m 00s" in texts(backend)
    for k in "1023":
        tap(backend, text=k, cls="Button")
    assert "00h 10m 23s" in texts(backend)
    assert backend.score() == 0.0  # one digit short
    tap(backend, text="0", cls="Button")
    assert "01h 02m 30s" in texts(backend)
    assert backend.score() == 1.0
    backend.execute(Action("navigate_home"))
    assert backend.score() == 0.0  # Clock not in front
    backend.execute(Action("open_app", app_name="clock"))
    assert backend.score() == 1.0  # the entry survives leaving the app
    tap(backend, desc="Start")  # starting the timer replaces the entry with a countdown
    assert backend.score() == 0.0
    assert "1:02:25" in texts(backend)  # 5 s of device time passed on the step after starting


def test_timer_delete_key_and_wrong_value(backend):
    start(backend, "ClockTimerEntry", hours=0, minutes=5, seconds=7)
    tap(backend, desc="Timer", rid=f"{PKG}:id/tab_timer")
    for k in "508":
        tap(backend, text=k, cls="Button")
    assert backend.score() == 0.0  # 05m 08s, not 05m 07s
    tap(backend, desc="Delete")
    tap(backend, text="7", cls="Button")
    assert backend.score() == 1.0
    tap(backend, desc="Stopwatch", rid=f"{PKG}:id/tab_stopwatch")
    assert backend.score() == 0.0  # another tab shown


def test_stopwatch_runs_with_device_time(backend):
    start(backend, "ClockStopWatchRunning")
    assert backend.score() == 0.0
    tap(backend, desc="Stopwatch", rid=f"{PKG}:id/tab_stopwatch")
    assert backend.score() == 0.0  # shown but not running
    tap(backend, desc="Start")
    v = View(backend.phone.elements())
    assert v.has(desc="Pause") and v.has(desc="Lap")
    assert "00:05.00" in v.texts()
    assert backend.score() == 1.0
    tap(backend, desc="Lap")
    assert "# 1" in texts(backend)
    tap(backend, desc="Alarm", rid=f"{PKG}:id/tab_alarm")
    assert backend.score() == 0.0  # running, but the Stopwatch tab is not on screen
    tap(backend, desc="Stopwatch", rid=f"{PKG}:id/tab_stopwatch")
    assert backend.score() == 1.0
    tap(backend, desc="Pause")
    v = View(backend.phone.elements())
    assert v.has(desc="Start") and v.has(desc="Reset") and not v.has(desc="Lap")
    assert backend.score() == 0.0  # paused is not running
    tap(backend, desc="Reset")
    assert "00:00.00" in texts(backend)


def test_stopwatch_paused_verify(backend):
    backend.reset("ClockStopWatchPausedVerify", {"seed": 3}, np.random.default_rng(0))
    assert backend.score() == 0.0  # paused, but AndroidWorld reads the Clock screen: home is in front
    backend.execute(Action("open_app", app_name="Clock"))
    assert backend.score() == 0.0  # cleared app data: Clock opens on another tab
    tap(backend, desc="Stopwatch", rid=f"{PKG}:id/tab_stopwatch")
    assert backend.score() == 1.0
    v = View(backend.phone.elements())
    # AndroidWorld's screen rule: Start shown and "Stopwatch" appears twice (tab description and label).
    assert v.has(desc="Start")
    assert sum(1 for e in v.elements if e.text == "Stopwatch" or e.content_description == "Stopwatch") == 2
    tap(backend, desc="Start")
    assert backend.score() == 0.0  # running: near miss
    tap(backend, desc="Pause")
    assert backend.score() == 1.0
    tap(backend, desc="Timer", rid=f"{PKG}:id/tab_timer")
    assert backend.score() == 0.0  # paused, but the stopwatch is not on screen
