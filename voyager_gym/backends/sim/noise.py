"""Screen noise like a real phone's, drawn at render time from the env's RNG; it never changes logical state.

Sources, each switchable: the status-bar clock ticks with device time (`clock`), the text caret blinks in a
focused field (`caret`), heads-up notifications and status-bar notification icons (`notifications`), system
toasts (`toasts`), and screenshots caught mid-transition, a blend of the old and new screen (`transitions`).
The same number of random draws is made every frame whatever is drawn, so trajectories do not depend on
which sources are on or whether pixels are rendered at all.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from voyager_gym.backends.sim.render import Renderer, font
from voyager_gym.backends.sim.widgets import SCREEN_W, STATUS_H, Node

_NOTIFY = (
    ("Messages", "New message from Alex"),
    ("Gmail", "Your weekly digest is ready"),
    ("Calendar", "Standup in 10 minutes"),
    ("Play Store", "3 apps updated"),
    ("Photos", "Backup complete"),
    ("Clock", "Alarm set for 07:00"),
)
_TOASTS = (
    "Battery saver is on",
    "Connected to Wi-Fi",
    "Screenshot saved",
    "Syncing...",
    "Copied to clipboard",
    "No internet connection",
)


@dataclasses.dataclass(frozen=True)
class NoiseConfig:
    """Which noise sources are on. Probabilities are per observed frame."""

    clock: bool = True
    caret: bool = True
    notifications: float = 0.05
    toasts: float = 0.03
    transitions: float = 0.10

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if f.type in ("bool", bool):
                if not isinstance(v, bool):
                    raise ValueError(f"noise[{f.name!r}]={v!r}: expected true or false")
            elif isinstance(v, bool) or not isinstance(v, int | float) or not 0.0 <= v <= 1.0:
                raise ValueError(f"noise[{f.name!r}]={v!r}: expected a probability in [0, 1]")

    @classmethod
    def none(cls) -> NoiseConfig:
        return cls(clock=False, caret=False, notifications=0.0, toasts=0.0, transitions=0.0)

    @classmethod
    def default(cls) -> NoiseConfig:
        return cls()

    @classmethod
    def heavy(cls) -> NoiseConfig:
        return cls(notifications=0.25, toasts=0.2, transitions=0.35)

    @classmethod
    def parse(cls, spec: Any) -> NoiseConfig:
        """Accepts a NoiseConfig, None/'none'/False, 'default'/True, 'heavy', or a dict of fields."""
        if isinstance(spec, NoiseConfig):
            return spec
        if spec is None or spec is False or spec == "none":
            return cls.none()
        if spec is True or spec == "default":
            return cls.default()
        if spec == "heavy":
            return cls.heavy()
        if isinstance(spec, dict):
            names = {f.name for f in dataclasses.fields(cls)}
            bad = set(spec) - names
            if bad:
                raise ValueError(f"unknown noise option(s) {sorted(bad)}; expected some of {sorted(names)}")
            return cls(**spec)
        raise ValueError(f"noise must be 'none', 'default', 'heavy', a dict or a NoiseConfig, got {spec!r}")


@dataclasses.dataclass
class NoiseDraw:
    """One frame's noise decisions."""

    caret_on: bool
    notification: int  # -1: none, else index into _NOTIFY
    notif_icon: bool
    toast: int  # -1: none
    blend: float  # 0: no blend, else weight of the previous frame


def draw_noise(cfg: NoiseConfig, rng: np.random.Generator) -> NoiseDraw:
    u = rng.random(6)
    return NoiseDraw(
        caret_on=cfg.caret and u[0] < 0.5,
        notification=int(u[1] * len(_NOTIFY)) if u[2] < cfg.notifications else -1,
        notif_icon=u[3] < cfg.notifications * 4,
        toast=int(u[4] * len(_TOASTS)) if u[5] < cfg.toasts else -1,
        blend=0.0,
    )


def _focused_field(root: Node) -> Node | None:
    for n in root.walk():
        if n.editable and n.focused:
            return n
    return None


def noise_shows(nd: NoiseDraw, root: Node) -> bool:
    """Whether `apply_noise` would draw anything for this draw on this screen (a caret needs a focused
    field); when not, the clean frame is the screenshot and no copy of it is needed."""
    if nd.notif_icon or nd.notification >= 0 or nd.toast >= 0:
        return True
    return nd.caret_on and _focused_field(root) is not None


def apply_noise(frame: np.ndarray, nd: NoiseDraw, r: Renderer, root: Node) -> np.ndarray:
    """Draw the frame's noise onto `frame` (a writable copy) and return it."""
    full = (0, 0, r.W, r.H)
    n = _focused_field(root) if nd.caret_on else None
    if n is not None:
        x0, y0, x1, y1 = r.rect(n.bounds)
        size = max(6, r.px(n.size))
        text = (n.text or "").split("\n")[-1]
        tx = x0 + r.px(n.pad) + int(font(size).getlength(text)) + 2
        lines = (n.text or "").count("\n") if n.lines > 1 else 0
        line_h = int(size * 1.3)
        cy0 = y0 + r.px(n.pad) + lines * line_h if n.lines > 1 else (y0 + y1) // 2 - size // 2 - 2
        r.fill(
            frame,
            (min(tx, x1 - 3), max(cy0, y0), min(tx + max(2, r.px(4)), x1), min(cy0 + line_h, y1)),
            (26, 115, 232),
        )
    if nd.notif_icon:
        s = r.px(48)
        for mask, _ in r.icon_layers("record", s, s):
            r.blit(frame, r.px(260), r.px(24), mask, (60, 64, 67), full)
    if nd.notification >= 0:
        app, msg = _NOTIFY[nd.notification]
        box = (r.px(36), r.px(STATUS_H + 12), r.px(SCREEN_W - 36), r.px(STATUS_H + 232))
        r.round_rect(frame, box, r.px(36), (250, 250, 250), full)
        r.fill(frame, (box[0], box[3] - 2, box[2], box[3]), (200, 200, 200))
        r.blit(
            frame,
            box[0] + r.px(48),
            box[1] + r.px(36),
            r.text_mask(app, max(6, r.px(34)), True),
            (95, 99, 104),
            full,
        )
        r.blit(
            frame,
            box[0] + r.px(48),
            box[1] + r.px(110),
            r.text_mask(msg, max(6, r.px(42)), False),
            (32, 33, 36),
            full,
        )
    if nd.toast >= 0:
        text = _TOASTS[nd.toast]
        m = r.text_mask(text, max(6, r.px(38)), False)
        mh, mw = m.shape[:2]
        cx, y1 = r.W // 2, r.px(2400 - 132 - 160)
        box = (cx - mw // 2 - r.px(48), y1 - mh - r.px(48), cx + mw // 2 + r.px(48), y1)
        r.round_rect(frame, box, r.px(50), (60, 64, 67), full)
        r.blit(frame, cx - mw // 2, box[1] + r.px(24), m, (255, 255, 255), full)
    return frame


_LOW6 = np.uint64(0x3F3F3F3F3F3F3F3F)  # the low 6 bits of each of 8 bytes


def _words(a: np.ndarray) -> np.ndarray | None:
    """A C-contiguous uint8 array seen as uint64 words (8 channel values at once), or None if it can't be."""
    if not a.flags.c_contiguous or a.nbytes % 8:
        return None
    return a.reshape(-1).view(np.uint64)


def blend(
    prev: np.ndarray, cur: np.ndarray, w_prev: float, scratch: np.ndarray | None = None,
    out: np.ndarray | None = None,
) -> np.ndarray:
    """A screenshot caught mid-transition, written into `out` (default `cur`): about w_prev of the previous
    frame (quantised to quarters, which shifts compute exactly and fast), the rest of the new one. Each byte
    is (cur >> 2) * (4 - q) + (prev >> 2) * q <= 252, so no step carries into the next byte and the
    arithmetic runs on 8 bytes at once. `scratch` (a frame-sized buffer) avoids an allocation."""
    q = min(3, max(1, int(round(w_prev * 4))))
    out = cur if out is None else out
    tmp = scratch if scratch is not None and scratch.shape == prev.shape else np.empty_like(prev)
    c, p, o, t = _words(cur), _words(prev), _words(out), _words(tmp)
    if c is None or p is None or o is None or t is None:  # odd sizes: the same arithmetic byte by byte
        c, p, o, t = cur, prev, out, tmp
        mask = None
    else:
        mask = _LOW6
    np.right_shift(c, 2, out=o)
    if mask is not None:
        o &= mask
    o *= 4 - q
    np.right_shift(p, 2, out=t)
    if mask is not None:
        t &= mask
    t *= q
    o += t
    return out
