"""SimDroid's widget tree: one tree per frame, read by the a11y filter, the hit-tester and the renderer. A
`Node` carries what Android's accessibility node carries (class, text, description, hint, bounds, flags)
plus what SimDroid needs to act and draw: event handlers (closures made when the screen is built) and a
few visual attributes (fill, text colour and size, an icon name). Bounds are logical pixels of a 1080x2400
screen."""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Callable, Iterator
from typing import Any

from voyager_gym.observation import BoundingBox, UIElement

SCREEN_W, SCREEN_H = 1080, 2400
STATUS_H = 96  # status bar
NAV_H = 132  # 3-button navigation bar
APPBAR_H = 168  # toolbar
KEYBOARD_H = 780  # soft keyboard (above the navigation bar)
CONTENT_TOP = STATUS_H
CONTENT_BOTTOM = SCREEN_H - NAV_H

Bounds = tuple[int, int, int, int]  # x0, y0, x1, y1


# Android widget class names used across apps.
TEXT = "android.widget.TextView"
BUTTON = "android.widget.Button"
IMAGE_BUTTON = "android.widget.ImageButton"
IMAGE = "android.widget.ImageView"
EDIT = "android.widget.EditText"
SWITCH = "android.widget.Switch"
CHECKBOX = "android.widget.CheckBox"
FRAME = "android.widget.FrameLayout"
LINEAR = "android.widget.LinearLayout"
RECYCLER = "androidx.recyclerview.widget.RecyclerView"
SCROLL = "android.widget.ScrollView"
VIEW = "android.view.View"
VIEW_GROUP = "android.view.ViewGroup"
SEEKBAR = "android.widget.SeekBar"
WEBVIEW = "android.webkit.WebView"


@dataclasses.dataclass(eq=False)
class Node:
    """One widget. Visual fields: `bg` fill, `radius` corner radius, `fg` text colour, `size` font size,
    `icon` glyph name, `align` text alignment, `lines` max text lines (wrapping). `volatile` marks nodes
    whose content is noise (the status-bar clock): drawn and listed, but left out of `screen_key`."""

    cls: str = FRAME
    text: str | None = None
    desc: str | None = None
    hint: str | None = None
    rid: str | None = None
    bounds: Bounds = (0, 0, 0, 0)
    children: list[Node] = dataclasses.field(default_factory=list)
    clickable: bool = False
    long_clickable: bool = False
    editable: bool = False
    scrollable: bool = False
    checkable: bool = False
    checked: bool = False
    enabled: bool = True
    focused: bool = False
    focusable: bool = False
    selected: bool = False
    package: str | None = None
    # behaviour (not part of the logical state; closures over the screen that built the node)
    on_click: Callable[[], Any] | None = None
    on_long_click: Callable[[], Any] | None = None
    on_scroll: Callable[[str], Any] | None = None
    field: Any = None  # (screen, key, multiline) for editable nodes
    # visuals
    bg: tuple[int, int, int] | None = None
    radius: int = 0
    border: tuple[int, int, int] | None = None
    fg: tuple[int, int, int] = (32, 33, 36)
    size: int = 40
    bold: bool = False
    align: str = "left"  # left | center | right
    pad: int = 0
    icon: str | None = None
    icon_fg: tuple[int, int, int] | None = None
    lines: int = 1
    shown: str | None = None  # text drawn instead of `text` (a long text scrolled past its first lines)
    volatile: bool = False
    a11y: bool = True  # listed in ui_elements when it qualifies
    clip: bool = False  # children are clipped to this node's bounds (lists)
    absorb: bool = False  # taps inside stop here even if nothing handles them (dialogs, keyboard, bars)
    dim: bool = False  # drawn as a translucent dark layer over what is below (dialog scrims)
    tile: bool = False  # opaque subtree the renderer may cache as a tile (bars, keyboard, list rows)

    def add(self, *nodes: Node | None) -> Node:
        self.children.extend(n for n in nodes if n is not None)
        return self

    def walk(self) -> Iterator[Node]:
        """This node and its descendants in drawing order (a node before its children, children in order)."""
        return iter(self.nodes())

    def nodes(self) -> list[Node]:
        """`walk()` as a list, built with an explicit stack: a recursive generator costs a call per level
        for every node, and trees are walked several times a frame."""
        out: list[Node] = []
        stack = [self]
        while stack:
            n = stack.pop()
            out.append(n)
            if n.children:
                stack.extend(reversed(n.children))
        return out

    def contains(self, x: int, y: int) -> bool:
        x0, y0, x1, y1 = self.bounds
        return x0 <= x < x1 and y0 <= y < y1

    @property
    def center(self) -> tuple[int, int]:
        x0, y0, x1, y1 = self.bounds
        return (x0 + x1) // 2, (y0 + y1) // 2

    @property
    def visible(self) -> bool:
        x0, y0, x1, y1 = self.bounds
        return x1 > x0 and y1 > y0 and x1 > 0 and y1 > 0 and x0 < SCREEN_W and y0 < SCREEN_H

    def logical_tuple(self) -> tuple:
        """What this node contributes to the ground-truth screen identity."""
        return (
            self.cls,
            self.text,
            self.desc,
            self.hint,
            self.rid,
            self.bounds,
            self.clickable,
            self.editable,
            self.scrollable,
            self.checkable,
            self.checked,
            self.enabled,
            self.focused,
            self.selected,
            self.package,
        )

    def visual_tuple(self) -> tuple:
        return (
            self.bounds,
            self.text,
            self.hint,
            self.bg,
            self.radius,
            self.border,
            self.fg,
            self.size,
            self.bold,
            self.align,
            self.pad,
            self.icon,
            self.icon_fg,
            self.lines,
            self.shown,
            self.checked,
            self.focused,
            self.editable,
            self.clip,
            self.enabled,
            self.dim,
        )

    def tile_key(self) -> int:
        """Hash of the subtree's visuals relative to this node's origin (tiles are position-independent)."""
        ox, oy = self.bounds[0], self.bounds[1]
        parts = []
        for n in self.nodes():
            v = n.visual_tuple()
            b = v[0]
            parts.append(((b[0] - ox, b[1] - oy, b[2] - ox, b[3] - oy),) + v[1:])
        return hash(tuple(parts))

    def to_element(self) -> UIElement:
        x0, y0, x1, y1 = self.bounds
        return UIElement(
            text=self.text or None,
            content_description=self.desc or None,
            class_name=self.cls,
            bbox=None,
            bbox_pixels=BoundingBox(max(0, x0), min(SCREEN_W, x1), max(0, y0), min(SCREEN_H, y1)),
            hint_text=self.hint or None,
            is_checked=self.checked,
            is_checkable=self.checkable,
            is_clickable=self.clickable,
            is_editable=self.editable,
            is_enabled=self.enabled,
            is_focused=self.focused,
            is_focusable=self.focusable or self.editable,
            is_long_clickable=self.long_clickable,
            is_scrollable=self.scrollable,
            is_selected=self.selected,
            is_visible=True,
            package_name=self.package,
            resource_name=self.rid,
            tooltip=None,
            resource_id=self.rid,
        )


def clip_bounds(b: Bounds, clip: Bounds) -> Bounds:
    """`b` cut to `clip` (conditionals: several times cheaper than max/min calls on this hot path)."""
    x0, y0, x1, y1 = b
    c0, c1, c2, c3 = clip
    return (x0 if x0 > c0 else c0, y0 if y0 > c1 else c1, x1 if x1 < c2 else c2, y1 if y1 < c3 else c3)


def a11y_nodes(root: Node) -> list[Node]:
    """AndroidWorld's filter: visible nodes that are leaves, or have a content description, or scroll."""
    out: list[Node] = []
    _a11y_visit(root, (0, 0, SCREEN_W, SCREEN_H), out)
    return out


# The walks below are module functions, not closures: a nested function that calls itself is a reference
# cycle (function -> closure cell -> function) that keeps whatever it captured, a whole dropped tree, alive
# until Python's cyclic collector runs, which the training loop pauses during an iteration.
def _a11y_visit(n: Node, clip: Bounds, out: list[Node]) -> None:
    b = clip_bounds(n.bounds, clip)
    vis = b[2] > b[0] and b[3] > b[1]
    if not vis:
        return
    if (
        n.a11y
        and (not n.children or n.desc or n.scrollable)
        and (
            n.text
            or n.desc
            or n.hint
            or n.clickable
            or n.editable
            or n.scrollable
            or n.checkable
            or n.rid
        )
    ):
        if b != n.bounds:
            n.bounds = b  # report the visible part, as Android does
        out.append(n)
    inner = b if n.clip else clip
    for c in n.children:
        _a11y_visit(c, inner, out)


def hit_test(root: Node, x: int, y: int, want: str = "click") -> Node | None:
    """The topmost node under (x, y) that handles `want` ('click', 'long', 'scroll'); children draw on top
    of parents and later siblings on top of earlier ones, as in Android's view hierarchy."""
    attr = {"click": "on_click", "long": "on_long_click", "scroll": "on_scroll"}[want]
    return _hit_visit(root, (0, 0, SCREEN_W, SCREEN_H), x, y, attr, want == "click")


def _hit_visit(n: Node, clip: Bounds, x: int, y: int, attr: str, click: bool) -> Node | None:
    b = clip_bounds(n.bounds, clip)
    if not (b[0] <= x < b[2] and b[1] <= y < b[3]):
        return None
    inner = b if n.clip else clip
    for c in reversed(n.children):
        hit = _hit_visit(c, inner, x, y, attr, click)
        if hit is not None:
            return hit
    if getattr(n, attr) is not None or (click and n.editable and n.field is not None):
        return n
    return n if n.absorb else None


def screen_key(root: Node, extra: tuple = ()) -> str:
    """Ground-truth identity of the logical screen: a hash of every non-volatile node's logical fields.
    Stable across processes and machines (blake2b of a repr, not Python's salted hash)."""
    parts = [n.logical_tuple() for n in root.nodes() if not n.volatile]
    parts.append(extra)
    return hashlib.blake2b(repr(parts).encode(), digest_size=12).hexdigest()
