"""Action keys (when two steps took the same action) and accessibility fingerprints (when two steps listed
the same elements), from a step's action dict and its ui_elements (dicts or objects)."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from typing import Any

from algos.forks.config import ForkConfig, Region
from voyager_gym.actions import OPPOSITE_DIRECTION
from voyager_gym.observation import SYSTEMUI


def _eget(e: Any, name: str) -> Any:
    return e.get(name) if isinstance(e, dict) else getattr(e, name, None)


def _bbox(e: Any) -> tuple[float, float, float, float] | None:
    """(x_min, y_min, x_max, y_max) of an element's pixel box, dict or BoundingBox."""
    b = _eget(e, "bbox_pixels")
    if b is None:
        return None
    if isinstance(b, dict):
        return b["x_min"], b["y_min"], b["x_max"], b["y_max"]
    return b.x_min, b.y_min, b.x_max, b.y_max


def _identity(e: Any) -> tuple:
    """What names an element independently of where it is drawn: class, text, description, hint, id."""
    return (_eget(e, "class_name"), _eget(e, "text"), _eget(e, "content_description"), _eget(e, "hint_text"),
            _eget(e, "resource_id") or _eget(e, "resource_name"))


def _fingerprint(e: Any) -> tuple:
    """An element's identity, state flags and box: one entry of a screen's accessibility fingerprint."""
    return _identity(e) + (_eget(e, "is_checked"), _eget(e, "is_selected"), _eget(e, "is_enabled"),
                           _eget(e, "is_focused"), _bbox(e))


def tree(elements: Sequence[Any]) -> Counter:
    """A screen's accessibility fingerprint: the multiset of its elements, system UI (clock, bars) aside."""
    return Counter(_fingerprint(e) for e in elements if _eget(e, "package_name") != SYSTEMUI)


def _target(action: dict, elements: Sequence[Any], screen_size: tuple[int, int]) -> tuple | None:
    """The element an action points at, as (identity, ordinal among equal identities), whether it names it
    by index or by x/y (the smallest element containing the point); coarse coordinates if none does."""
    idx, x, y = action.get("index"), action.get("x"), action.get("y")
    pos = None
    if idx is not None:
        if isinstance(idx, int) and 0 <= idx < len(elements):
            pos = idx
        else:
            return ("index", idx)
    elif x is not None and y is not None:
        best = None
        for i, e in enumerate(elements):
            b = _bbox(e)
            if b is not None and b[0] <= x < b[2] and b[1] <= y < b[3]:
                area = (b[2] - b[0]) * (b[3] - b[1])
                if best is None or area < best[0]:
                    best = (area, i)
        if best is None:  # nothing there: compare coordinates on a 2% grid
            return ("xy", round(50 * x / screen_size[0]), round(50 * y / screen_size[1]))
        pos = best[1]
    else:
        return None
    ident = _identity(elements[pos])
    return ident, sum(_identity(e) == ident for e in elements[:pos])


def action_key(action: dict | None, elements: Sequence[Any] = (), cfg: ForkConfig | None = None) -> Any:
    """A hashable key with equal keys for equal actions; None for an invalid action (never equal to any).
    exact: the dict itself (UI-Voyager's `==`). target: the action type (a swipe as the scroll it makes), the
    element it acts on (see `_target`) and its arguments, so a click by index and one by x/y on the same
    element are the same action."""
    cfg = cfg or ForkConfig()
    if action is None:
        return None
    if cfg.action_match == "exact":
        return json.dumps(action, sort_keys=True, default=str)
    kind = action.get("action_type")
    direction = action.get("direction")
    if kind == "swipe":
        kind, direction = "scroll", OPPOSITE_DIRECTION.get(direction, direction)
    key: tuple = (kind,)
    if kind in ("click", "double_tap", "long_press", "input_text", "scroll"):
        key += (_target(action, elements, cfg.screen_size),)
    if kind == "input_text":
        key += (action.get("text"), bool(action.get("clear_text")))
    elif kind == "scroll":
        key += (direction,)
    elif kind == "open_app":
        key += (str(action.get("app_name", "")).strip().lower(),)
    elif kind == "status":
        key += (action.get("goal_status"),)
    elif kind == "answer":
        key += (str(action.get("text", "")).strip(),)
    return key


def tree_similarity(a: Counter | None, b: Counter | None) -> float:
    """Multiset Jaccard similarity of two screens' fingerprints (`tree`); nan when either has none."""
    if a is None or b is None:
        return float("nan")
    if a == b:
        return 1.0
    inter = sum((a & b).values())
    return inter / (sum(a.values()) + sum(b.values()) - inter)


def region_trees_equal(a: Counter, b: Counter, region: Region, screen_size: tuple[int, int]) -> bool:
    """Whether two fingerprints list the same elements over a screen region (so what differs there is no
    UI); element boxes are in pixels of a `screen_size` (width, height) screen."""
    w, h = screen_size
    x0, y0, x1, y1 = region[0] * w, region[1] * h, region[2] * w, region[3] * h

    def part(t: Counter) -> Counter:
        return Counter({f: c for f, c in t.items() if f[-1] is not None and f[-1][0] < x1
                        and f[-1][2] > x0 and f[-1][1] < y1 and f[-1][3] > y0})
    return part(a) == part(b)
