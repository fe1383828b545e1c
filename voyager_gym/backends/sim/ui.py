"""SimDroid's app framework: apps, screens, and the widget builders every app shares.

An `App` is a package with a name, open_app aliases and a main `Screen`. A `Screen` holds its own UI state
(form fields, focus, scroll offsets) and builds its widgets from (device state, its UI state) on every frame;
handlers are closures made during the build, so screens stay plain data that deep-copies with the device.
`UI` is what a screen's build and handlers receive: the device, navigation (push, pop, home, toast) and
builders that lay out standard Material-style widgets at absolute logical coordinates. `AppHost` is what the
framework needs of the phone that runs the apps; `phone.Phone` provides it (phone.py imports this module,
never the reverse).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, ClassVar, Protocol

from voyager_gym.backends.sim import widgets as w
from voyager_gym.backends.sim.device import DeviceState
from voyager_gym.backends.sim.widgets import APPBAR_H, CONTENT_BOTTOM, CONTENT_TOP, KEYBOARD_H, SCREEN_W, Node

# Palette
WHITE = (255, 255, 255)
BLACK = (0, 0, 0)
INK = (32, 33, 36)
GREY = (95, 99, 104)
LIGHT = (232, 234, 237)
SURFACE = (248, 249, 250)
HINT = (128, 134, 139)
ACCENT = (26, 115, 232)
DANGER = (217, 48, 37)
SCRIM = (60, 64, 67)

PAD = 48
ROW_H = 168
ROW2_H = 200


class Screen:
    """One screen of an app. Subclasses set `title` and implement `build`; state lives in attributes."""

    modal: ClassVar[bool] = False  # a dialog drawn over the screen below it
    paste_for: str | None = None  # the field whose Paste toolbar is open (`make_pasteable`)

    def __init__(self) -> None:
        self.focus: str | None = None
        self.fields: dict[str, str] = {}
        self.scroll: dict[str, int] = {}

    def build(self, ui: UI) -> list[Node]:
        raise NotImplementedError

    def submit(self, ui: UI, key: str) -> None:
        """Enter pressed in single-line field `key`: by default the keyboard closes."""
        ui.unfocus()

    def back(self, ui: UI) -> bool:
        """Handle navigate_back before the default pop; return True if handled."""
        return False

    def field(self, key: str) -> str:
        return self.fields.get(key, "")

    def set_field(self, key: str, value: str) -> None:
        self.fields[key] = value


def make_pasteable(screen: Screen, key: str, field: Node) -> None:
    """A long press on text field `key` focuses it and opens the Paste toolbar (`UI.paste_popup`); the screen
    keeps which field it is for in `paste_for` (cleared when the text changes or Back is pressed)."""

    def long_click() -> None:
        screen.focus = key
        screen.paste_for = key

    field.long_clickable = True
    field.on_long_click = long_click


class App:
    """A simulated app: package, launcher name, AndroidWorld's open_app regex, colour, main screen."""

    package: ClassVar[str] = ""
    name: ClassVar[str] = ""
    aliases: ClassVar[str] = ""  # regex matched (re.match, lower-case) against open_app's app_name
    color: ClassVar[tuple[int, int, int]] = ACCENT
    on_launcher: ClassVar[bool] = True

    def main(self, dev: DeviceState) -> Screen:
        raise NotImplementedError

    def setup(self, dev: DeviceState) -> None:
        """Install the app's default data on a fresh device."""


APPS: dict[str, App] = {}


def register_app(cls: type[App]) -> type[App]:
    if cls.package in APPS:
        raise ValueError(f"app package {cls.package!r} registered twice")
    APPS[cls.package] = cls()
    return cls


class AppHost(Protocol):
    """The phone as apps see it (`UI.phone`): the device, each app's back stack (built on first use), going
    home (`reset_app`: the foreground app's stack is dropped), launching an app by package, and where the
    last tap landed (screen pixels)."""

    dev: DeviceState
    last_tap: tuple[int, int]

    def stack(self, package: str) -> list[Screen]: ...

    def go_home(self, reset_app: bool = False) -> None: ...

    def launch(self, package: str) -> None: ...


class UI:
    """The context a screen builds and handles events in."""

    def __init__(self, phone: AppHost, app: App, screen: Screen):
        self.phone = phone
        self.dev: DeviceState = phone.dev
        self.app = app
        self.screen = screen
        self.top = CONTENT_TOP
        self.keyboard = screen.focus is not None
        self.bottom = CONTENT_BOTTOM - (KEYBOARD_H if self.keyboard else 0)
        self.W = SCREEN_W

    # -- navigation ------------------------------------------------------------------------------------
    def push(self, screen: Screen) -> None:
        self.phone.stack(self.app.package).append(screen)

    def pop(self) -> None:
        st = self.phone.stack(self.app.package)
        if len(st) > 1:
            st.pop()
        else:
            self.phone.go_home(reset_app=True)

    def replace(self, screen: Screen) -> None:
        st = self.phone.stack(self.app.package)
        st[-1] = screen

    def pop_to_root(self) -> None:
        st = self.phone.stack(self.app.package)
        del st[1:]

    def home(self) -> None:
        self.phone.go_home()

    def open_app(self, package: str) -> None:
        self.phone.launch(package)

    def toast(self, text: str) -> None:
        self.dev.toast = text

    def focus(self, key: str) -> None:
        self.screen.focus = key

    def unfocus(self) -> None:
        self.screen.focus = None

    # -- builders --------------------------------------------------------------------------------------
    def text(
        self,
        text: str | None,
        bounds: w.Bounds,
        size: int = 40,
        fg=INK,
        bold: bool = False,
        align: str = "left",
        rid: str | None = None,
        lines: int = 1,
        **kw: Any,
    ) -> Node:
        return Node(
            w.TEXT,
            text=text,
            bounds=bounds,
            size=size,
            fg=fg,
            bold=bold,
            align=align,
            rid=rid,
            lines=lines,
            **kw,
        )

    def app_bar(
        self,
        title: str,
        back: bool = True,
        actions: Sequence[tuple[str, str, Callable[[], Any] | None]] = (),
        color: tuple[int, int, int] | None = None,
    ) -> Node:
        """Toolbar with an optional Navigate-up button, a title and icon actions (desc, icon, handler)."""
        y0, y1 = self.top, self.top + APPBAR_H
        bar = Node(
            w.VIEW_GROUP,
            bounds=(0, y0, SCREEN_W, y1),
            bg=color or self.app.color,
            rid=f"{self.app.package}:id/toolbar",
            tile=True,
        )
        x = 24
        if back:
            bar.add(
                Node(
                    w.IMAGE_BUTTON,
                    desc="Navigate up",
                    bounds=(x, y0 + 24, x + 120, y1 - 24),
                    clickable=True,
                    icon="back",
                    icon_fg=WHITE,
                    on_click=self.pop,
                )
            )
            x += 144
        else:
            x = PAD
        xr = SCREEN_W - 24
        for desc, icon, handler in reversed(list(actions)):
            bar.add(
                Node(
                    w.IMAGE_BUTTON,
                    desc=desc,
                    bounds=(xr - 120, y0 + 24, xr, y1 - 24),
                    clickable=True,
                    icon=icon,
                    icon_fg=WHITE,
                    on_click=handler,
                )
            )
            xr -= 132
        bar.children.insert(
            0 if not back else 1,
            Node(
                w.TEXT,
                text=title,
                bounds=(x, y0, xr, y1),
                size=54,
                fg=WHITE,
                rid=f"{self.app.package}:id/toolbar_title",
            ),
        )
        return bar

    def search_bar(self, color: tuple[int, int, int]) -> Node:
        """Toolbar with a Navigate-up button and a white "query" search field."""
        y0 = self.top
        bar = Node(
            w.VIEW_GROUP, bounds=(0, y0, SCREEN_W, y0 + 168), bg=color, rid=f"{self.app.package}:id/toolbar"
        )
        bar.add(
            Node(
                w.IMAGE_BUTTON,
                desc="Navigate up",
                bounds=(24, y0 + 24, 144, y0 + 144),
                clickable=True,
                icon="back",
                icon_fg=WHITE,
                on_click=self.pop,
            )
        )
        field = self.field("query", (168, y0 + 24, SCREEN_W - 48, y0 + 144), hint="Search")
        field.bg = WHITE
        bar.add(field)
        return bar

    def below_bar(self) -> int:
        return self.top + APPBAR_H

    def list(
        self,
        key: str,
        rows: Sequence[tuple[int, Callable[[w.Bounds], Node]]],
        y0: int | None = None,
        y1: int | None = None,
        x0: int = 0,
        x1: int = SCREEN_W,
        empty: str | None = None,
    ) -> Node:
        """A vertically scrolling list. `rows` are (height, build(bounds) -> Node); only rows that intersect
        the viewport are built. The offset lives in `screen.scroll[key]` and is clamped here."""
        y0 = self.below_bar() if y0 is None else y0
        y1 = self.bottom if y1 is None else y1
        view_h = y1 - y0
        total = sum(h for h, _ in rows)
        max_off = max(0, total - view_h)
        off = min(max(0, self.screen.scroll.get(key, 0)), max_off)
        self.screen.scroll[key] = off
        lst = Node(
            w.RECYCLER,
            bounds=(x0, y0, x1, y1),
            scrollable=max_off > 0,
            clip=True,
            rid=f"{self.app.package}:id/{key}",
        )
        if max_off > 0:
            screen = self.screen

            step = max(1, view_h // 2)  # AndroidWorld scrolls from the centre to the edge: half a viewport

            def on_scroll(direction: str, _key=key, _max=max_off, _step=step) -> None:
                cur = screen.scroll.get(_key, 0)
                if direction == "down":
                    screen.scroll[_key] = min(_max, cur + _step)
                elif direction == "up":
                    screen.scroll[_key] = max(0, cur - _step)

            lst.on_scroll = on_scroll
        y = y0 - off
        for h, make in rows:
            if y + h > y0 and y < y1:
                lst.add(make((x0, y, x1, y + h)))
            y += h
        if not rows and empty:
            lst.add(self.text(empty, (x0 + PAD, y0 + 80, x1 - PAD, y0 + 200), fg=HINT, align="center"))
        return lst

    def item(
        self,
        title: str,
        bounds: w.Bounds,
        on_click: Callable[[], Any] | None = None,
        subtitle: str | None = None,
        on_long_click: Callable[[], Any] | None = None,
        icon: str | None = None,
        rid: str | None = None,
        selected: bool = False,
        trailing: Node | None = None,
        desc: str | None = None,
    ) -> Node:
        """A list row: optional leading icon, title, optional subtitle, optional trailing widget."""
        x0, y0, x1, y1 = bounds
        row = Node(
            w.LINEAR,
            bounds=bounds,
            clickable=on_click is not None,
            on_click=on_click,
            long_clickable=on_long_click is not None,
            on_long_click=on_long_click,
            bg=(210, 227, 252) if selected else WHITE,
            selected=selected,
            border=LIGHT,
            desc=desc,
            tile=True,
        )
        tx = x0 + PAD
        if icon:
            row.add(
                Node(
                    w.IMAGE,
                    bounds=(x0 + 36, y0 + (y1 - y0) // 2 - 48, x0 + 132, y0 + (y1 - y0) // 2 + 48),
                    icon=icon,
                    icon_fg=GREY,
                    a11y=False,
                )
            )
            tx = x0 + 168
        tr = x1 - PAD - (160 if trailing is not None else 0)
        if subtitle:
            mid = (y0 + y1) // 2
            row.add(Node(w.TEXT, text=title, bounds=(tx, mid - 58, tr, mid + 2), size=44, rid=rid or "title"))
            row.add(
                Node(
                    w.TEXT, text=subtitle, bounds=(tx, mid + 6, tr, mid + 58), size=34, fg=GREY, rid="summary"
                )
            )
        else:
            row.add(Node(w.TEXT, text=title, bounds=(tx, y0, tr, y1), size=44, rid=rid or "title"))
        if trailing is not None:
            row.add(trailing)
        return row

    def switch(
        self, checked: bool, bounds: w.Bounds, on_click: Callable[[], Any] | None, desc: str | None = None
    ) -> Node:
        return Node(
            w.SWITCH,
            bounds=bounds,
            checkable=True,
            checked=checked,
            clickable=True,
            on_click=on_click,
            icon="switch_on" if checked else "switch_off",
            desc=desc,
            rid="android:id/switch_widget",
        )

    def checkbox(
        self, checked: bool, bounds: w.Bounds, on_click: Callable[[], Any] | None, desc: str | None = None
    ) -> Node:
        return Node(
            w.CHECKBOX,
            bounds=bounds,
            checkable=True,
            checked=checked,
            clickable=True,
            on_click=on_click,
            icon="check_on" if checked else "check_off",
            desc=desc,
        )

    def toggle_row(
        self,
        title: str,
        checked: bool,
        bounds: w.Bounds,
        on_toggle: Callable[[], Any],
        subtitle: str | None = None,
    ) -> Node:
        """A settings row whose click (anywhere) flips a switch."""
        x0, y0, x1, y1 = bounds
        mid = (y0 + y1) // 2
        sw = self.switch(checked, (x1 - PAD - 132, mid - 40, x1 - PAD, mid + 40), on_toggle)
        return self.item(title, bounds, on_click=on_toggle, subtitle=subtitle, trailing=sw)

    def field(
        self,
        key: str,
        bounds: w.Bounds,
        hint: str | None = None,
        multiline: bool = False,
        label: str | None = None,
        numeric: bool = False,
    ) -> Node:
        """An EditText bound to `screen.fields[key]`; tapping it focuses it (and opens the keyboard)."""
        value = self.screen.field(key)
        screen = self.screen
        focused = screen.focus == key

        def on_click() -> None:
            screen.focus = key

        node = Node(
            w.EDIT,
            text=value or None,
            hint=hint,
            bounds=bounds,
            editable=True,
            focusable=True,
            focused=focused,
            clickable=True,
            on_click=on_click,
            field=(screen, key, multiline),
            border=ACCENT if focused else GREY,
            size=42,
            lines=20 if multiline else 1,
            desc=label,
            rid=f"{self.app.package}:id/{key}",
            pad=24,
        )
        return node

    def paste_popup(self, key: str, field: Node) -> Node | None:
        """The text-selection toolbar a long press on field `key` opened (`make_pasteable`): Paste appends the
        clipboard. Drawn above where the press landed: the field, or the centre of a tall (multiline) one."""
        screen = self.screen
        if screen.paste_for != key:
            return None
        x0, y0, _, y1 = field.bounds
        if y1 - y0 > 300:
            x0, y0 = x0 + PAD, (y0 + y1) // 2
        top = y0 - 140

        def paste() -> None:
            screen.set_field(key, screen.field(key) + self.dev.clipboard)
            screen.paste_for = None
            screen.focus = key

        rim = Node(w.FRAME, bounds=(x0 - 6, top - 6, x0 + 266, top + 130), bg=(189, 193, 198), radius=16,
                   a11y=False)  # the toolbar's edge, which its shadow draws on a phone
        rim.add(Node(w.BUTTON, text="Paste", desc="Paste", bounds=(x0, top, x0 + 260, top + 124), bg=WHITE,
                     clickable=True, on_click=paste, align="center", size=38,
                     rid="android:id/floating_toolbar_menu_item_text"))
        return rim

    def button(
        self,
        text: str,
        bounds: w.Bounds,
        on_click: Callable[[], Any] | None,
        style: str = "filled",
        rid: str | None = None,
        enabled: bool = True,
    ) -> Node:
        filled = style == "filled"
        return Node(
            w.BUTTON,
            text=text,
            bounds=bounds,
            clickable=True,
            on_click=on_click if enabled else None,
            enabled=enabled,
            bold=True,
            bg=(self.app.color if filled else None) if enabled else LIGHT,
            radius=48 if filled else 0,
            fg=WHITE if filled and enabled else (ACCENT if enabled else HINT),
            align="center",
            size=40,
            rid=rid,
        )

    def fab(self, desc: str, on_click: Callable[[], Any], icon: str = "add", text: str | None = None) -> Node:
        """Floating action button at the bottom right of the content area."""
        y1 = self.bottom - 48
        return Node(
            w.IMAGE_BUTTON,
            desc=desc,
            text=text,
            bounds=(SCREEN_W - 240, y1 - 192, SCREEN_W - 48, y1),
            clickable=True,
            on_click=on_click,
            icon=icon,
            icon_fg=WHITE,
            bg=self.app.color,
            radius=56,
            rid=f"{self.app.package}:id/fab",
        )

    def bottom_tabs(
        self,
        tabs: Sequence[tuple[str, str]],
        current: str,
        on_pick: Callable[[str], Any],
        accent: tuple[int, int, int],
        rid_of: Callable[[str], str],
        rid: str,
        size: int = 34,
        height: int = 168,
    ) -> Node:
        """A bottom navigation bar of text tabs (label, key) at the bottom of the content area; the current
        tab is selected, bold and in `accent`; a tab's resource name is `rid_of(key)`."""
        y1 = self.bottom
        bar = Node(
            w.VIEW_GROUP,
            bounds=(0, y1 - height, SCREEN_W, y1),
            bg=WHITE,
            border=LIGHT,
            absorb=True,
            rid=rid,
        )
        tw = SCREEN_W // len(tabs)
        for i, (label, key) in enumerate(tabs):
            sel = key == current
            bar.add(
                Node(
                    w.TEXT,
                    text=label,
                    desc=label,
                    bounds=(i * tw, y1 - height, (i + 1) * tw, y1),
                    clickable=True,
                    selected=sel,
                    on_click=(lambda k=key: on_pick(k)),
                    align="center",
                    size=size,
                    fg=accent if sel else GREY,
                    bold=sel,
                    rid=rid_of(key),
                )
            )
        return bar

    def dialog_box(self, title: str | None, height: int, message: str | None = None) -> tuple[Node, int]:
        """A centred dialog panel; returns (panel, y of its first free line)."""
        y0 = max(self.top + 200, (self.top + self.bottom) // 2 - height // 2)
        panel = Node(
            w.FRAME,
            bounds=(72, y0, SCREEN_W - 72, y0 + height),
            bg=WHITE,
            radius=36,
            rid="android:id/parentPanel",
        )
        y = y0 + 48
        if title:
            panel.add(
                Node(
                    w.TEXT,
                    text=title,
                    bounds=(132, y, SCREEN_W - 132, y + 80),
                    size=50,
                    bold=True,
                    rid="android:id/alertTitle",
                )
            )
            y += 104
        if message:
            panel.add(
                Node(
                    w.TEXT,
                    text=message,
                    bounds=(132, y, SCREEN_W - 132, y + 180),
                    size=40,
                    fg=GREY,
                    lines=3,
                    rid="android:id/message",
                )
            )
            y += 200
        return panel, y

    def dialog_buttons(self, panel: Node, buttons: Sequence[tuple[str, Callable[[], Any]]]) -> None:
        """Text buttons at the bottom right of a dialog panel (e.g. [("Cancel", ...), ("OK", ...)])."""
        x1 = panel.bounds[2] - 48
        y1 = panel.bounds[3] - 36
        for i, (label, handler) in enumerate(reversed(list(buttons))):
            wdt = 60 + 28 * len(label)
            panel.add(
                Node(
                    w.BUTTON,
                    text=label,
                    bounds=(x1 - wdt, y1 - 120, x1, y1),
                    clickable=True,
                    on_click=handler,
                    fg=ACCENT,
                    bold=True,
                    align="center",
                    size=40,
                    rid=f"android:id/button{i + 1}",
                )
            )
            x1 -= wdt + 24


def date_str(dev: DeviceState, fmt: str = "%b %-d, %Y") -> str:
    return dev.now.strftime(fmt)
