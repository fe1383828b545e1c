"""Clock (com.google.android.deskclock): Alarm, Clock, Timer and Stopwatch tabs behind a bottom navigation.

The app's visible state (the selected tab, the timer keypad entry, running timers, the stopwatch) lives in
`dev.data(PKG)`, so AndroidWorld's screen-reading clock verifiers can read the same thing from the device:
the timer display "HHh MMm SSs", a running stopwatch's Pause and Lap buttons, a paused one's Start button.
The stopwatch and timers run on device time (`dev.time_ms`), which advances with every step.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from voyager_gym.backends.sim import widgets as w
from voyager_gym.backends.sim.device import DeviceState
from voyager_gym.backends.sim.ui import ACCENT, GREY, INK, LIGHT, PAD, UI, WHITE, App, Screen, register_app
from voyager_gym.backends.sim.widgets import SCREEN_W, Node

PKG = "com.google.android.deskclock"
TABS = ("alarm", "clock", "timer", "stopwatch")
TAB_LABELS = {"alarm": "Alarm", "clock": "Clock", "timer": "Timer", "stopwatch": "Stopwatch"}
TAB_ICONS = {"alarm": "alarm", "clock": "clock", "timer": "timer", "stopwatch": "stopwatch"}
NAV_BAR_H = 220
BG = (253, 252, 255)
SELECTED = (211, 227, 253)
WORLD_CLOCKS = (("London", 1), ("New York", -4), ("Tokyo", 9))


def state(dev: DeviceState) -> dict[str, Any]:
    """The clock app's persistent state (created with defaults on first use)."""
    d = dev.data(PKG)
    d.setdefault("tab", "alarm")
    d.setdefault(
        "alarms",
        [
            {"id": 1, "hour": 8, "minute": 30, "on": False, "label": "", "days": "Mon-Fri"},
            {"id": 2, "hour": 9, "minute": 0, "on": False, "label": "", "days": "Sun, Sat"},
        ],
    )
    d.setdefault("timer_entry", "")  # up to 6 digits typed on the keypad
    d.setdefault("timers", [])  # {"id", "duration_ms", "remaining_ms", "running", "since_ms"}
    d.setdefault("timer_view", "entry")  # entry | timers
    d.setdefault("stopwatch", {"running": False, "accum_ms": 0, "since_ms": 0, "laps": []})
    return d


def entry_text(digits: str) -> str:
    """The timer setup display for typed digits: '00h 01m 23s' after 1, 2, 3."""
    d = digits.rjust(6, "0")
    return f"{d[0:2]}h {d[2:4]}m {d[4:6]}s"


def entry_desc(digits: str) -> str:
    d = digits.rjust(6, "0")
    return f"{int(d[0:2])} hours, {int(d[2:4])} minutes, {int(d[4:6])} seconds"


def entry_ms(digits: str) -> int:
    d = digits.rjust(6, "0")
    return ((int(d[0:2]) * 60 + int(d[2:4])) * 60 + int(d[4:6])) * 1000


def stopwatch_ms(dev: DeviceState) -> int:
    sw = state(dev)["stopwatch"]
    return sw["accum_ms"] + (dev.time_ms - sw["since_ms"] if sw["running"] else 0)


def fmt_stopwatch(ms: int) -> str:
    cs = (ms // 10) % 100
    s = ms // 1000
    h, m, s = s // 3600, (s // 60) % 60, s % 60
    return f"{h}:{m:02d}:{s:02d}.{cs:02d}" if h else f"{m:02d}:{s:02d}.{cs:02d}"


def timer_remaining(dev: DeviceState, t: dict[str, Any]) -> int:
    left = t["remaining_ms"] - (dev.time_ms - t["since_ms"] if t["running"] else 0)
    return max(0, left)


def fmt_timer(ms: int) -> str:
    s = (ms + 999) // 1000
    h, m, s = s // 3600, (s // 60) % 60, s % 60
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


def is_clock_screen_shown(dev: DeviceState) -> bool:
    """True when the Clock app is in front with its main (tabbed) screen on top and no dialog over it."""
    if dev.foreground != PKG:
        return False
    st = dev.stacks.get(PKG)
    return not st or isinstance(st[-1], ClockScreen)


def _round_button(
    desc: str,
    bounds: w.Bounds,
    on_click: Callable[[], Any],
    icon: str,
    rid: str,
    *,
    primary: bool,
    bg: tuple[int, int, int] = LIGHT,
) -> Node:
    """A round icon button: white on the accent colour when primary, else ink on `bg`."""
    return Node(
        w.IMAGE_BUTTON,
        desc=desc,
        bounds=bounds,
        clickable=True,
        on_click=on_click,
        icon=icon,
        icon_fg=WHITE if primary else INK,
        bg=ACCENT if primary else bg,
        radius=70 if primary else 60,
        rid=f"{PKG}:id/{rid}",
    )


def _title(ui: UI, text: str, y0: int) -> Node:
    """The tab's large title above its body."""
    return ui.text(text, (PAD, y0 - 150, SCREEN_W - 200, y0 - 20), size=64)


class ClockScreen(Screen):
    """The tabbed main screen; the tab shown is app state, so it survives leaving and reopening the app."""

    def build(self, ui: UI) -> list[Node]:
        d = state(ui.dev)
        tab = d["tab"]
        top, bottom = ui.top, ui.bottom - NAV_BAR_H
        page = Node(w.FRAME, bounds=(0, top, SCREEN_W, ui.bottom), bg=BG, a11y=False)
        page.add(
            Node(
                w.IMAGE_BUTTON,
                desc="More options",
                bounds=(SCREEN_W - 156, top + 24, SCREEN_W - 36, top + 144),
                clickable=True,
                on_click=lambda: None,
                icon="more",
                icon_fg=INK,
            )
        )
        body = {
            "alarm": self._alarm,
            "clock": self._clock,
            "timer": self._timer,
            "stopwatch": self._stopwatch,
        }[tab](ui, top + 168, bottom)
        page.add(*body)
        page.add(self._nav(ui, tab))
        return [page]

    # -- bottom navigation ------------------------------------------------------------------------------
    def _nav(self, ui: UI, tab: str) -> Node:
        y0, y1 = ui.bottom - NAV_BAR_H, ui.bottom
        bar = Node(
            w.FRAME,
            bounds=(0, y0, SCREEN_W, y1),
            bg=(240, 241, 248),
            a11y=False,
            rid=f"{PKG}:id/bottom_navigation",
        )
        cw = SCREEN_W // len(TABS)
        dev = ui.dev

        def select(t: str) -> None:
            state(dev)["tab"] = t

        for i, t in enumerate(TABS):
            x0 = i * cw
            sel = t == tab
            label = TAB_LABELS[t]
            item = Node(
                w.FRAME,
                desc=label,
                bounds=(x0, y0, x0 + cw, y1),
                clickable=True,
                selected=sel,
                on_click=lambda t=t: select(t),
                rid=f"{PKG}:id/tab_{t}",
            )
            item.add(
                Node(
                    w.IMAGE,
                    bounds=(x0 + cw // 2 - 80, y0 + 24, x0 + cw // 2 + 80, y0 + 104),
                    bg=SELECTED if sel else None,
                    radius=40,
                    icon=TAB_ICONS[t],
                    icon_fg=INK,
                    a11y=False,
                )
            )
            item.add(
                Node(
                    w.TEXT,
                    text=label,
                    bounds=(x0, y0 + 116, x0 + cw, y0 + 180),
                    size=34,
                    align="center",
                    bold=sel,
                    fg=INK if sel else GREY,
                    rid=f"{PKG}:id/navigation_bar_item_large_label_view",
                )
            )
            bar.add(item)
        return bar

    # -- Alarm ------------------------------------------------------------------------------------------
    def _alarm(self, ui: UI, y0: int, y1: int) -> list[Node]:
        d = state(ui.dev)
        out: list[Node] = [_title(ui, "Alarm", y0)]

        def toggle(a: dict[str, Any]) -> None:
            a["on"] = not a["on"]

        def row(a: dict[str, Any], b: w.Bounds) -> Node:
            x0, ry0, x1, ry1 = b
            card = Node(
                w.FRAME,
                bounds=(x0 + 36, ry0 + 16, x1 - 36, ry1 - 16),
                bg=(240, 241, 248),
                radius=40,
                a11y=False,
            )
            card.add(
                Node(
                    w.TEXT,
                    text=f"{a['hour']:02d}:{a['minute']:02d}",
                    bounds=(x0 + 84, ry0 + 40, x1 - 300, ry0 + 180),
                    size=96,
                    fg=INK if a["on"] else GREY,
                    rid=f"{PKG}:id/digital_clock",
                )
            )
            card.add(
                Node(
                    w.TEXT,
                    text=a["days"] if not a["label"] else f"{a['label']} · {a['days']}",
                    bounds=(x0 + 84, ry0 + 190, x1 - 300, ry0 + 250),
                    size=34,
                    fg=GREY,
                    rid=f"{PKG}:id/days_of_week",
                )
            )
            card.add(ui.switch(a["on"], (x1 - 240, ry0 + 80, x1 - 84, ry0 + 160), lambda a=a: toggle(a)))
            return card

        rows = [(300, lambda b, a=a: row(a, b)) for a in d["alarms"]]
        out.append(ui.list("alarm_recycler_view", rows, y0=y0, y1=y1))

        def add_alarm() -> None:
            ui.toast("Alarm set for 24 hours from now")
            d["alarms"].append(
                {
                    "id": ui.dev.new_id(),
                    "hour": ui.dev.now.hour,
                    "minute": ui.dev.now.minute,
                    "on": True,
                    "label": "",
                    "days": "Tomorrow",
                }
            )

        add_b = (SCREEN_W // 2 - 110, y1 - 250, SCREEN_W // 2 + 110, y1 - 40)
        out.append(_round_button("Add alarm", add_b, add_alarm, "add", "fab", primary=False, bg=SELECTED))
        return out

    # -- Clock ------------------------------------------------------------------------------------------
    def _clock(self, ui: UI, y0: int, y1: int) -> list[Node]:
        now = ui.dev.now
        out = [
            _title(ui, "Clock", y0),
            ui.text(
                now.strftime("%H:%M"),
                (PAD, y0 + 20, SCREEN_W - PAD, y0 + 260),
                size=170,
                rid=f"{PKG}:id/digital_clock",
            ),
            ui.text(
                now.strftime("%a, %b %-d"),
                (PAD, y0 + 270, SCREEN_W - PAD, y0 + 340),
                size=40,
                fg=GREY,
                rid=f"{PKG}:id/date",
            ),
        ]
        y = y0 + 400
        for city, off in WORLD_CLOCKS:
            hh = (now.hour + off) % 24
            out.append(ui.text(city, (PAD, y, 620, y + 90), size=46, rid=f"{PKG}:id/city_name"))
            out.append(
                ui.text(
                    f"{hh:02d}:{now.minute:02d}",
                    (620, y, SCREEN_W - PAD, y + 90),
                    size=56,
                    align="right",
                    rid=f"{PKG}:id/digital_clock",
                )
            )
            y += 140
        add_b = (SCREEN_W // 2 - 110, y1 - 250, SCREEN_W // 2 + 110, y1 - 40)

        def add_city() -> None:
            ui.toast("City search is not available offline")

        out.append(_round_button("Add city", add_b, add_city, "add", "fab", primary=False, bg=SELECTED))
        return out

    # -- Timer ------------------------------------------------------------------------------------------
    def _timer(self, ui: UI, y0: int, y1: int) -> list[Node]:
        d = state(ui.dev)
        if d["timers"] and d["timer_view"] == "timers":
            return self._timers(ui, y0, y1)
        dev = ui.dev
        digits = d["timer_entry"]
        out: list[Node] = [_title(ui, "Timer", y0)]
        disp = Node(
            w.TEXT,
            text=entry_text(digits),
            desc=None,
            bounds=(PAD, y0 + 20, SCREEN_W - 200, y0 + 220),
            size=104,
            fg=ACCENT if digits else GREY,
            rid=f"{PKG}:id/timer_setup_time",
        )
        out.append(disp)

        def press(k: str) -> None:
            cur = state(dev)["timer_entry"]
            for ch in k:
                if len(cur) < 6 and not (cur == "" and ch == "0"):
                    cur += ch
            state(dev)["timer_entry"] = cur

        def delete() -> None:
            state(dev)["timer_entry"] = state(dev)["timer_entry"][:-1]

        out.append(
            Node(
                w.IMAGE_BUTTON,
                desc="Delete",
                bounds=(SCREEN_W - 180, y0 + 60, SCREEN_W - 60, y0 + 180),
                clickable=True,
                on_click=delete,
                enabled=bool(digits),
                icon="kb_del",
                icon_fg=GREY,
                rid=f"{PKG}:id/timer_setup_delete",
            )
        )
        keys = ("1", "2", "3", "4", "5", "6", "7", "8", "9", "00", "0")
        kw, kh = 260, 190
        x0 = (SCREEN_W - 3 * kw) // 2
        ky = y0 + 280
        for i, k in enumerate(keys):
            r, c = divmod(i, 3)
            b = (x0 + c * kw + 20, ky + r * kh + 12, x0 + (c + 1) * kw - 20, ky + (r + 1) * kh - 12)
            out.append(
                Node(
                    w.BUTTON,
                    text=k,
                    bounds=b,
                    clickable=True,
                    on_click=lambda k=k: press(k),
                    radius=80,
                    bg=(240, 241, 248),
                    size=64,
                    align="center",
                    rid=f"{PKG}:id/timer_setup_digit_{k}",
                )
            )

        def start() -> None:
            ms = entry_ms(state(dev)["timer_entry"])
            st = state(dev)
            st["timers"].append(
                {
                    "id": dev.new_id(),
                    "duration_ms": ms,
                    "remaining_ms": ms,
                    "running": True,
                    "since_ms": dev.time_ms,
                }
            )
            st["timer_entry"] = ""
            st["timer_view"] = "timers"

        if digits:
            fb = (SCREEN_W // 2 - 120, y1 - 250, SCREEN_W // 2 + 120, y1 - 40)
            out.append(_round_button("Start", fb, start, "play", "fab", primary=True))
        return out

    def _timers(self, ui: UI, y0: int, y1: int) -> list[Node]:
        """Running (or paused) timers: one card each, with pause/resume, +1:00 and delete."""
        d = state(ui.dev)
        dev = ui.dev
        t = d["timers"][-1]
        left = timer_remaining(dev, t)
        out: list[Node] = [_title(ui, "Timer", y0)]
        card = Node(
            w.FRAME,
            bounds=(PAD, y0 + 20, SCREEN_W - PAD, y1 - 300),
            bg=(240, 241, 248),
            radius=48,
            a11y=False,
        )
        card.add(
            ui.text(
                "Timer",
                (PAD + 48, y0 + 60, SCREEN_W - 300, y0 + 140),
                size=40,
                fg=GREY,
                rid=f"{PKG}:id/timer_label",
            )
        )
        card.add(
            ui.text(
                fmt_timer(left) if left else "Time's up",
                (PAD, y0 + 300, SCREEN_W - PAD, y0 + 560),
                size=150,
                align="center",
                rid=f"{PKG}:id/timer_time_text",
            )
        )

        def add_minute() -> None:
            t["remaining_ms"] = timer_remaining(dev, t) + 60_000
            t["since_ms"] = dev.time_ms

        def delete() -> None:
            d["timers"].remove(t)
            if not d["timers"]:
                d["timer_view"] = "entry"

        card.add(
            ui.button(
                "+1:00",
                (PAD + 60, y0 + 700, PAD + 360, y0 + 830),
                add_minute,
                style="text",
                rid=f"{PKG}:id/reset_add",
            )
        )
        card.add(
            Node(
                w.IMAGE_BUTTON,
                desc="Delete",
                bounds=(SCREEN_W - PAD - 220, y0 + 40, SCREEN_W - PAD - 80, y0 + 160),
                clickable=True,
                on_click=delete,
                icon="delete",
                icon_fg=GREY,
                rid=f"{PKG}:id/delete_timer",
            )
        )
        out.append(card)

        def toggle() -> None:
            if t["running"]:
                t["remaining_ms"] = timer_remaining(dev, t)
                t["running"] = False
            else:
                t["since_ms"] = dev.time_ms
                t["running"] = True

        def add_timer() -> None:
            d["timer_view"] = "entry"

        fb = (SCREEN_W // 2 - 120, y1 - 250, SCREEN_W // 2 + 120, y1 - 40)
        desc, icon = ("Pause", "pause") if t["running"] else ("Start", "play")
        out.append(_round_button(desc, fb, toggle, icon, "fab", primary=True))
        rb = (SCREEN_W - 300, y1 - 220, SCREEN_W - 120, y1 - 70)
        out.append(_round_button("Add timer", rb, add_timer, "add", "right_button", primary=False))
        return out

    # -- Stopwatch --------------------------------------------------------------------------------------
    def _stopwatch(self, ui: UI, y0: int, y1: int) -> list[Node]:
        dev = ui.dev
        sw = state(dev)["stopwatch"]
        ms = stopwatch_ms(dev)
        out: list[Node] = []
        cx, cy = SCREEN_W // 2, y0 + 330
        out.append(
            Node(
                w.VIEW,
                bounds=(cx - 330, cy - 330, cx + 330, cy + 330),
                bg=(240, 241, 248),
                radius=330,
                a11y=False,
            )
        )
        out.append(
            ui.text(
                fmt_stopwatch(ms),
                (PAD, cy - 90, SCREEN_W - PAD, cy + 90),
                size=120,
                align="center",
                rid=f"{PKG}:id/stopwatch_time_text",
            )
        )
        if sw["laps"]:
            rows = []
            prev = 0
            for i, lap in enumerate(sw["laps"]):
                split = lap - prev
                prev = lap
                rows.append(
                    (110, lambda b, i=i, split=split, lap=lap: self._lap_row(ui, b, i + 1, split, lap))
                )
            out.append(ui.list("laps", list(reversed(rows)), y0=cy + 360, y1=y1 - 280))

        def start() -> None:
            sw["running"] = True
            sw["since_ms"] = dev.time_ms

        def pause() -> None:
            sw["accum_ms"] = stopwatch_ms(dev)
            sw["running"] = False

        def lap() -> None:
            sw["laps"].append(stopwatch_ms(dev))

        def reset() -> None:
            sw.update(running=False, accum_ms=0, since_ms=0, laps=[])

        fb = (cx - 120, y1 - 250, cx + 120, y1 - 40)
        lb = (cx - 400, y1 - 220, cx - 220, y1 - 70)
        if sw["running"]:
            out.append(_round_button("Pause", fb, pause, "pause", "fab", primary=True))
            out.append(_round_button("Lap", lb, lap, "lap", "left_button", primary=False))
        else:
            out.append(_round_button("Start", fb, start, "play", "fab", primary=True))
            if ms > 0:
                out.append(_round_button("Reset", lb, reset, "reset", "left_button", primary=False))
        return out

    def _lap_row(self, ui: UI, b: w.Bounds, n: int, split: int, total: int) -> Node:
        x0, y0, x1, y1 = b
        row = Node(w.LINEAR, bounds=b, a11y=False)
        row.add(ui.text(f"# {n}", (x0 + 120, y0, x0 + 340, y1), size=38, fg=GREY, rid=f"{PKG}:id/lap_number"))
        row.add(
            ui.text(fmt_stopwatch(split), (x0 + 340, y0, x0 + 660, y1), size=38, rid=f"{PKG}:id/lap_time")
        )
        row.add(
            ui.text(
                fmt_stopwatch(total),
                (x0 + 660, y0, x1 - 120, y1),
                size=38,
                align="right",
                rid=f"{PKG}:id/lap_total",
            )
        )
        return row


@register_app
class Clock(App):
    package = PKG
    name = "Clock"
    aliases = r"clock"
    color = (11, 87, 208)

    def main(self, dev: DeviceState) -> Screen:
        return ClockScreen()

    def setup(self, dev: DeviceState) -> None:
        state(dev)
