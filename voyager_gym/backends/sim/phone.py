"""The SimDroid phone: composes the frame's widget tree (app, status bar, keyboard, navigation bar, toast) and
executes AndroidWorld actions on it with AndroidWorld's semantics.

Actions resolve `index` against the element list of the screen at execution time, tap at the element's centre
(as AndroidWorld's actuation does) and hit-test the tree; `input_text` taps the target, optionally clears,
types and presses Enter; `scroll` moves content in `direction`, `swipe` is the finger motion (the inverse).
"""

from __future__ import annotations

import re
from typing import Any

from voyager_gym import actions as A
from voyager_gym.actions import Action, ActionError
from voyager_gym.backends.sim import widgets as w
from voyager_gym.backends.sim.device import LAUNCHER, DeviceState
from voyager_gym.backends.sim.ui import APPS, UI, App, Screen
from voyager_gym.backends.sim.widgets import (
    CONTENT_BOTTOM,
    KEYBOARD_H,
    NAV_H,
    SCREEN_H,
    SCREEN_W,
    STATUS_H,
    Node,
)
from voyager_gym.observation import SYSTEMUI, UIElement

IME = "com.google.android.inputmethod.latin"
KEY_ROWS = ("qwertyuiop", "asdfghjkl", "^zxcvbnm<", "@, .>")  # ^ shift, < delete, @ symbols, > enter


def _ensure_apps_loaded() -> None:
    from voyager_gym.backends.sim import apps  # noqa: F401  (registers every app module)


def simdroid_apps() -> list[App]:
    """Every SimDroid app (each app module registered), by package."""
    _ensure_apps_loaded()
    return [APPS[p] for p in sorted(APPS)]


def launcher_app_names() -> list[str]:
    """Names of the apps on SimDroid's launcher, sorted (what open_app can name by label)."""
    return sorted(a.name for a in simdroid_apps() if a.on_launcher)


class Phone:
    """A deterministic phone. `clock_in_status_bar` False freezes the status-bar clock at the start time."""

    def __init__(self, clock_in_status_bar: bool = True):
        _ensure_apps_loaded()
        self.clock_in_status_bar = clock_in_status_bar
        self.dev = DeviceState()
        self._root: Node | None = None
        self._elements: list[Node] | None = None
        self._element_records: list[UIElement] | None = None
        self.last_tap = (0, 0)
        self._chrome: dict[tuple, Node] = {}
        self.reset()

    # -- state -----------------------------------------------------------------------------------------
    def reset(self, dev: DeviceState | None = None) -> None:
        """A factory-fresh phone on the home screen (or the given state)."""
        if dev is None:
            dev = DeviceState()
            for app in APPS.values():
                app.setup(dev)
        self.dev = dev
        self.invalidate()

    def invalidate(self) -> None:
        self._root = None
        self._elements = None
        self._element_records: list[UIElement] | None = None

    @property
    def apps(self) -> dict[str, App]:
        return APPS

    def stack(self, package: str) -> list[Screen]:
        st = self.dev.stacks.get(package)
        if not st:
            st = self.dev.stacks[package] = [APPS[package].main(self.dev)]
        return st

    @property
    def foreground(self) -> str:
        return self.dev.foreground

    @property
    def top_screen(self) -> Screen:
        return self.stack(self.dev.foreground)[-1]

    def go_home(self, reset_app: bool = False) -> None:
        fg = self.dev.foreground
        if fg != LAUNCHER:
            if reset_app:
                self.dev.stacks.pop(fg, None)
            else:
                self.stack(fg)[-1].focus = None
        self.dev.foreground = LAUNCHER
        self.stack(LAUNCHER)[-1].focus = None
        del self.stack(LAUNCHER)[1:]

    def launch(self, package: str) -> None:
        if package not in APPS:
            raise ActionError(f"no app with package {package!r}")
        self.dev.foreground = package
        self.stack(package)[-1].focus = None

    def find_app(self, name: str) -> App | None:
        """AndroidWorld's open_app matching: lower-cased name, `re.match` against each app's alias regex."""
        n = name.strip().lower()
        for app in APPS.values():
            if app.aliases and re.match(app.aliases, n):
                return app
        for app in APPS.values():  # the launcher label itself, e.g. "Pro Expense"
            if app.name.lower() == n:
                return app
        return None

    # -- the frame -------------------------------------------------------------------------------------
    def ui_for(self, package: str, screen: Screen) -> UI:
        return UI(self, APPS[package], screen)

    def root(self) -> Node:
        if self._root is None:
            self._root = self._compose()
        return self._root

    def _compose(self) -> Node:
        pkg = self.dev.foreground
        st = self.stack(pkg)
        top = st[-1]
        root = Node(w.FRAME, bounds=(0, 0, SCREEN_W, SCREEN_H), bg=(255, 255, 255), a11y=False)
        app_layer = Node(w.FRAME, bounds=(0, STATUS_H, SCREEN_W, CONTENT_BOTTOM), a11y=False)
        if top.modal and len(st) > 1:
            base_idx = max(i for i in range(len(st)) if not st[i].modal)
            below = st[base_idx].build(self.ui_for(pkg, st[base_idx]))
            for n in below:
                for m in n.walk():
                    m.on_click = m.on_long_click = m.on_scroll = None
                    m.field = None
                    m.a11y = False
            app_layer.add(*below)
            scrim = Node(
                w.VIEW,
                bounds=(0, STATUS_H, SCREEN_W, CONTENT_BOTTOM),
                dim=True,
                rid="modal_scrim",
                a11y=False,
                absorb=True,
            )
            top_ui = self.ui_for(pkg, top)

            def dismiss() -> None:
                top_ui.pop()

            scrim.on_click = dismiss
            app_layer.add(scrim)
            app_layer.add(*top.build(top_ui))
        else:
            app_layer.add(*top.build(self.ui_for(pkg, top)))
        for n in app_layer.walk():
            if n.package is None:
                n.package = pkg
        root.add(app_layer)
        # System bars and the keyboard depend on a few values only: built once per value and reused (nothing
        # mutates them after composition; their handlers call back into this phone).
        s = self.dev.settings
        status_key = (self.clock_text(), s.get("wifi_on"), s.get("bluetooth_on"), s.get("airplane_mode_on"))
        root.add(self._cached(("status",) + status_key, self._status_bar))
        if top.focus is not None:
            root.add(self._cached(("keyboard", bool(self.dev.data(IME).get("shift"))), self._keyboard))
        root.add(self._cached(("nav",), self._nav_bar))
        if self.dev.toast:
            tw = min(SCREEN_W - 160, 120 + 22 * len(self.dev.toast))
            y1 = CONTENT_BOTTOM - (KEYBOARD_H if top.focus is not None else 0) - 120
            root.add(
                Node(
                    "android.widget.Toast",
                    text=self.dev.toast,
                    package=pkg,
                    bounds=((SCREEN_W - tw) // 2, y1 - 110, (SCREEN_W + tw) // 2, y1),
                    bg=(60, 64, 67),
                    radius=55,
                    fg=(255, 255, 255),
                    size=38,
                    align="center",
                )
            )
        return root

    def _cached(self, key: tuple, build) -> Node:
        node = self._chrome.get(key)
        if node is None:
            if len(self._chrome) > 64:
                self._chrome.clear()
            node = self._chrome[key] = build()
        return node

    def clock_text(self) -> str:
        from voyager_gym.backends.sim.device import START_TIME

        t = self.dev.now if self.clock_in_status_bar else START_TIME
        return t.strftime("%H:%M")

    def _status_bar(self) -> Node:
        s = self.dev.settings
        bar = Node(
            w.FRAME,
            bounds=(0, 0, SCREEN_W, STATUS_H),
            bg=(241, 243, 244),
            package=SYSTEMUI,
            a11y=False,
            absorb=True,
            rid="com.android.systemui:id/status_bar",
            tile=True,
        )
        bar.add(
            Node(
                w.TEXT,
                text=self.clock_text(),
                bounds=(48, 0, 240, STATUS_H),
                size=38,
                package=SYSTEMUI,
                volatile=True,
                rid="com.android.systemui:id/clock",
            )
        )
        x = SCREEN_W - 48
        icons = [("battery", "Battery 100 percent.")]
        if s.get("wifi_on"):
            icons.append(("wifi", "Wifi signal full."))
        if s.get("bluetooth_on"):
            icons.append(("bluetooth", "Bluetooth on."))
        if s.get("airplane_mode_on"):
            icons.append(("airplane", "Airplane mode on."))
        for icon, desc in icons:
            bar.add(
                Node(
                    w.IMAGE,
                    desc=desc,
                    icon=icon,
                    icon_fg=(60, 64, 67),
                    bounds=(x - 64, 16, x, 80),
                    package=SYSTEMUI,
                )
            )
            x -= 84
        return bar

    def _nav_bar(self) -> Node:
        bar = Node(
            w.FRAME,
            bounds=(0, SCREEN_H - NAV_H, SCREEN_W, SCREEN_H),
            bg=(241, 243, 244),
            package=SYSTEMUI,
            a11y=False,
            absorb=True,
            rid="com.android.systemui:id/navigation_bar",
            tile=True,
        )
        y0, y1 = SCREEN_H - NAV_H + 6, SCREEN_H - 6
        for cx, desc, icon, handler in (
            (270, "Back", "nav_back", self.back),
            (540, "Home", "nav_home", self.go_home),
            (810, "Overview", "nav_recents", None),
        ):
            bar.add(
                Node(
                    w.IMAGE_BUTTON,
                    desc=desc,
                    icon=icon,
                    icon_fg=(60, 64, 67),
                    bounds=(cx - 100, y0, cx + 100, y1),
                    clickable=handler is not None,
                    on_click=handler,
                    package=SYSTEMUI,
                    rid=f"com.android.systemui:id/{desc.lower()}",
                )
            )
        return bar

    def _keyboard(self) -> Node:
        y0 = CONTENT_BOTTOM - KEYBOARD_H
        kb = Node(
            w.FRAME,
            bounds=(0, y0, SCREEN_W, CONTENT_BOTTOM),
            bg=(232, 234, 237),
            package=IME,
            a11y=False,
            absorb=True,
            rid="keyboard",
            tile=True,
        )
        shift = bool(self.dev.data(IME).get("shift"))
        row_h = (KEYBOARD_H - 60) // 4
        for r, row in enumerate(KEY_ROWS):
            y = y0 + 30 + r * row_h
            if r < 3:
                kw = SCREEN_W // 10
                x = (SCREEN_W - kw * len(row)) // 2
                widths = [kw] * len(row)
            else:
                widths = [160, 120, 520, 120, 160]
                x = 0
            for ch, kwid in zip(row, widths, strict=True):
                label = {"^": "shift", "<": "delete", "@": "?123", ">": "enter", " ": "space"}.get(ch, ch)
                shown = {"^": None, "<": None, "@": "?123", ">": None, " ": None}.get(
                    ch, ch.upper() if shift else ch
                )
                icon = {"^": "kb_shift", "<": "kb_del", ">": "kb_enter"}.get(ch)
                kb.add(
                    Node(
                        w.BUTTON,
                        text=shown,
                        desc=label,
                        bounds=(x + 8, y + 10, x + kwid - 8, y + row_h - 10),
                        bg=(255, 255, 255) if ch not in "^<@>" else (189, 193, 198),
                        radius=14,
                        size=44,
                        align="center",
                        package=IME,
                        a11y=False,
                        icon=icon,
                        icon_fg=(60, 64, 67),
                        on_click=(lambda c=ch: self._key(c)),
                    )
                )
                x += kwid
        return kb

    def _key(self, ch: str) -> None:
        ime = self.dev.data(IME)
        if ch == "^":
            ime["shift"] = not ime.get("shift")
        elif ch == "<":
            screen, key = self.top_screen, self.top_screen.focus
            if key is not None:
                screen.set_field(key, screen.field(key)[:-1])
                self._changed(screen, key)
        elif ch == ">":
            self.enter()
        elif ch == "@":
            pass  # symbols page is not simulated; input_text types any character
        else:
            c = ch.upper() if ime.get("shift") else ch
            ime["shift"] = False
            self.type_text(c)

    # -- observations ----------------------------------------------------------------------------------
    def element_nodes(self) -> list[Node]:
        if self._elements is None:
            self._elements = w.a11y_nodes(self.root())
        return self._elements

    def elements(self) -> list[UIElement]:
        if self._element_records is None:  # UIElements are frozen: one list per frame serves every reader
            self._element_records = [n.to_element() for n in self.element_nodes()]
        return list(self._element_records)

    def screen_key(self) -> str:
        return w.screen_key(self.root())

    # -- actions ---------------------------------------------------------------------------------------
    def _point(self, a: Action) -> tuple[int, int] | None:
        if a.index is not None:
            nodes = self.element_nodes()
            if a.index >= len(nodes):
                raise ActionError(
                    f"index {a.index} is out of range: the screen has {len(nodes)} elements "
                    f"(0..{len(nodes) - 1})"
                )
            return nodes[a.index].center
        if a.x is not None and a.y is not None:
            if not (0 <= a.x < SCREEN_W and 0 <= a.y < SCREEN_H):
                raise ActionError(f"point ({a.x}, {a.y}) is off the {SCREEN_W}x{SCREEN_H} screen")
            return a.x, a.y
        return None

    def execute(self, a: Action) -> None:
        """Apply one action. Raises ActionError when it cannot be carried out (the env makes it invalid)."""
        t = a.action_type
        self.dev.toast = None if t != A.WAIT else self.dev.toast
        try:
            if t in (A.CLICK, A.DOUBLE_TAP, A.LONG_PRESS):
                pt = self._point(a)
                assert pt is not None
                if t == A.LONG_PRESS:
                    self.long_press(*pt)
                else:
                    self.tap(*pt)
                    if t == A.DOUBLE_TAP:
                        self.invalidate()
                        self.tap(*pt)
            elif t == A.INPUT_TEXT:
                pt = self._point(a)
                if pt is not None:
                    self.tap(*pt)
                screen = self.top_screen
                if screen.focus is not None and a.clear_text:
                    screen.set_field(screen.focus, "")
                self.type_text(a.text or "")
                self.enter()
            elif t == A.KEYBOARD_ENTER:
                self.enter()
            elif t in (A.SCROLL, A.SWIPE):
                pt = self._point(a) or (SCREEN_W // 2, (STATUS_H + CONTENT_BOTTOM) // 2)
                direction = a.direction if t == A.SCROLL else A.OPPOSITE_DIRECTION[a.direction]
                self.scroll(direction, *pt)
            elif t == A.NAVIGATE_BACK:
                self.back()
            elif t == A.NAVIGATE_HOME:
                self.go_home()
            elif t == A.OPEN_APP:
                app = self.find_app(a.app_name or "")
                if app is None:
                    raise ActionError(
                        f"unknown app {a.app_name!r}; installed apps: "
                        + ", ".join(sorted(x.name for x in APPS.values() if x.on_launcher))
                    )
                self.go_home()
                self.launch(app.package)
            elif t == A.ANSWER:
                self.dev.interaction_cache = a.text or ""
            elif t in (A.WAIT, A.STATUS):
                pass
            else:  # pragma: no cover - validate() rejects other types
                raise ActionError(f"unsupported action type {t!r}")
        finally:
            self.invalidate()

    def tap(self, x: int, y: int) -> None:
        self.last_tap = (x, y)
        node = w.hit_test(self.root(), x, y, "click")
        if node is None:
            return
        if node.on_click is not None:
            node.on_click()

    def long_press(self, x: int, y: int) -> None:
        node = w.hit_test(self.root(), x, y, "long")
        if node is not None and node.on_long_click is not None:
            node.on_long_click()

    def scroll(self, direction: str, x: int, y: int) -> None:
        node = w.hit_test(self.root(), x, y, "scroll")
        if node is not None and node.on_scroll is not None:
            node.on_scroll(direction)

    def _changed(self, screen: Screen, key: str) -> None:
        hook = getattr(screen, "changed", None)
        if hook is not None:
            hook(self.ui_for(self.dev.foreground, screen), key)

    def type_text(self, text: str) -> bool:
        screen = self.top_screen
        key = screen.focus
        if key is None:
            return False
        screen.set_field(key, screen.field(key) + text)
        self._changed(screen, key)
        self.invalidate()
        return True

    def enter(self) -> None:
        screen = self.top_screen
        key = screen.focus
        if key is None:
            return
        multiline = any(n.field is not None and n.field[1] == key and n.field[2] for n in self.root().walk())
        if multiline:
            screen.set_field(key, screen.field(key) + "\n")
            self._changed(screen, key)
        else:
            screen.submit(self.ui_for(self.dev.foreground, screen), key)
        self.invalidate()

    def back(self) -> None:
        pkg = self.dev.foreground
        screen = self.top_screen
        if screen.focus is not None:  # Back closes the keyboard first
            screen.focus = None
            return
        ui = self.ui_for(pkg, screen)
        if screen.back(ui):
            return
        if pkg == LAUNCHER:
            return
        ui.pop()

    # -- helpers for tasks and tests -------------------------------------------------------------------
    def find(self, text: str | None = None, desc: str | None = None) -> Node | None:
        for n in self.element_nodes():
            if (text is None or n.text == text) and (desc is None or n.desc == desc):
                return n
        return None

    def describe(self) -> dict[str, Any]:
        return {"foreground": self.dev.foreground, "screen": type(self.top_screen).__name__}
