"""Clock tasks: set a timer without starting it, run the stopwatch, pause the stopwatch (Verify).

AndroidWorld checks these on the screen of the Clock app (DeskClock in front; the timer text
"HHh MMm SSs"; a running stopwatch shows Pause and Lap; a paused one shows Start on the Stopwatch tab).
SimDroid reads the same facts from the state the Clock app shows: the foreground app, the main screen, the
selected tab and the timer/stopwatch state in `dev.data`.
"""

from __future__ import annotations

import random
from typing import Any

from voyager_gym.actions import Action
from voyager_gym.backends.sim.apps import clock as app
from voyager_gym.backends.sim.device import DeviceState
from voyager_gym.backends.sim.tasks.base import SimTask, View, back, click, done, open_app, register_task


def go_to_tab(view: View, tab: str) -> Action | None:
    """Open Clock and select `tab` ('Timer', 'Stopwatch', ...); None once it is shown."""
    if view.app != app.PKG:
        return open_app("Clock")
    i = view.find(desc=tab, rid=f"{app.PKG}:id/tab_{tab.lower()}")
    if i is None:
        return back()
    if not view.el(i).is_selected:
        return click(i)
    return None


class _Clock(SimTask):
    app_names = ("clock",)
    complexity = 1.0

    def initialize(self, dev: DeviceState) -> None:
        # AndroidWorld clears Clock's app data before (and after) each task: its alarms, timers, stopwatch and
        # selected tab are the app's defaults, so Clock opens on its default tab with the stopwatch reset
        dev.data(app.PKG).clear()
        app.state(dev)


@register_task
class ClockTimerEntry(_Clock):
    template = (
        "Create a timer with {hours} hours, {minutes} minutes, and {seconds} seconds. Do not start the timer."
    )

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return {"hours": rng.randint(0, 23), "minutes": rng.randint(0, 59), "seconds": rng.randint(0, 59)}

    @property
    def target(self) -> str:
        p = self.params
        return f"{p['hours']:02d}h {p['minutes']:02d}m {p['seconds']:02d}s"

    def is_successful(self, dev: DeviceState) -> float:
        st = app.state(dev)
        shown = (
            app.is_clock_screen_shown(dev)
            and st["tab"] == "timer"
            and not (st["timers"] and st["timer_view"] == "timers")
        )
        return 1.0 if shown and app.entry_text(st["timer_entry"]) == self.target else 0.0

    def expert(self, view: View, mem: dict[str, Any]) -> Action:
        act = go_to_tab(view, "Timer")
        if act is not None:
            return act
        add = view.find(desc="Add timer")
        if add is not None:
            return click(add)
        disp = view.find(rid=f"{app.PKG}:id/timer_setup_time")
        if disp is None:
            return back()
        shown = view.el(disp).text or ""
        if shown == self.target:
            return done()
        cur = "".join(c for c in shown if c.isdigit()).lstrip("0")
        want = "".join(c for c in self.target if c.isdigit()).lstrip("0")
        if want.startswith(cur) and len(cur) < len(want):
            key = view.find(text=want[len(cur)], rid=f"{app.PKG}:id/timer_setup_digit_{want[len(cur)]}")
            if key is not None:
                return click(key)
        return click(view.find(desc="Delete"))


@register_task
class ClockStopWatchRunning(_Clock):
    template = "Run the stopwatch."

    def is_successful(self, dev: DeviceState) -> float:
        st = app.state(dev)
        ok = app.is_clock_screen_shown(dev) and st["tab"] == "stopwatch" and st["stopwatch"]["running"]
        return 1.0 if ok else 0.0

    def expert(self, view: View, mem: dict[str, Any]) -> Action:
        act = go_to_tab(view, "Stopwatch")
        if act is not None:
            return act
        if view.has(desc="Pause") and view.has(desc="Lap"):
            return done()
        start = view.find(desc="Start")
        return click(start) if start is not None else back()


@register_task
class ClockStopWatchPausedVerify(_Clock):
    """The stopwatch starts paused at 00:00 (AndroidWorld clears the Clock app's data), but AndroidWorld's
    check reads the screen: Clock in front showing the paused stopwatch (Start shown on the Stopwatch tab).
    The phone starts on the home screen, so doing nothing fails, as it does in AndroidWorld."""

    template = "Pause the stopwatch."

    def is_successful(self, dev: DeviceState) -> float:
        st = app.state(dev)
        shown = app.is_clock_screen_shown(dev) and st["tab"] == "stopwatch"
        return 1.0 if shown and not st["stopwatch"]["running"] else 0.0

    def expert(self, view: View, mem: dict[str, Any]) -> Action:
        act = go_to_tab(view, "Stopwatch")
        if act is not None:
            return act
        pause = view.find(desc="Pause")
        if pause is not None:
            return click(pause)
        return done() if view.has(desc="Start") else back()
