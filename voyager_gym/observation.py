"""Observations with AndroidWorld's shapes: `UIElement` (env/representation_utils.py) and its bounding box.

An observation is a dict {"pixels": uint8 (H, W, 3), "ui_elements": list[UIElement], "goal": str}. The element
list is AndroidWorld's filter of the accessibility tree (visible leaves, nodes with a content description,
scrollables) in tree order; an element's index in that list is what `index` actions refer to.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
from gymnasium import spaces

SYSTEMUI = "com.android.systemui"  # the package of the status and navigation bars' elements


@dataclasses.dataclass(frozen=True)
class BoundingBox:
    """Pixel box, AndroidWorld's field order: x_min, x_max, y_min, y_max."""

    x_min: int
    x_max: int
    y_min: int
    y_max: int

    @property
    def center(self) -> tuple[int, int]:
        return (self.x_min + self.x_max) // 2, (self.y_min + self.y_max) // 2

    @property
    def width(self) -> int:
        return self.x_max - self.x_min

    @property
    def height(self) -> int:
        return self.y_max - self.y_min


@dataclasses.dataclass(frozen=True)
class UIElement:
    """One accessibility element, with AndroidWorld's field names. Empty strings are None, as there."""

    text: str | None = None
    content_description: str | None = None
    class_name: str | None = None
    bbox: BoundingBox | None = None  # normalised box: None, as AndroidWorld leaves it
    bbox_pixels: BoundingBox | None = None
    hint_text: str | None = None
    is_checked: bool | None = None
    is_checkable: bool | None = None
    is_clickable: bool | None = None
    is_editable: bool | None = None
    is_enabled: bool | None = None
    is_focused: bool | None = None
    is_focusable: bool | None = None
    is_long_clickable: bool | None = None
    is_scrollable: bool | None = None
    is_selected: bool | None = None
    is_visible: bool | None = None
    package_name: str | None = None
    resource_name: str | None = None
    tooltip: str | None = None
    resource_id: str | None = None

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> UIElement:
        d = dict(d)
        for k in ("bbox", "bbox_pixels"):
            if isinstance(d.get(k), dict):
                d[k] = BoundingBox(**d[k])
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in names})

    @property
    def label(self) -> str:
        """The most human-readable name of the element: text, else description, else hint."""
        return self.text or self.content_description or self.hint_text or ""

    def describe(self) -> str:
        """A compact one-line form used in text prompts."""
        parts = [self.class_name.rsplit(".", 1)[-1] if self.class_name else "View"]
        if self.text:
            parts.append(f'text="{self.text}"')
        if self.content_description:
            parts.append(f'desc="{self.content_description}"')
        if self.hint_text and not self.text:
            parts.append(f'hint="{self.hint_text}"')
        flags = [
            n
            for n, v in (
                ("clickable", self.is_clickable),
                ("editable", self.is_editable),
                ("scrollable", self.is_scrollable),
                ("checked", self.is_checked),
                ("focused", self.is_focused),
                ("selected", self.is_selected),
            )
            if v
        ]
        if self.is_checkable and not self.is_checked:
            flags.append("unchecked")
        if flags:
            parts.append(",".join(flags))
        return " ".join(parts)


def format_elements(elements: list[UIElement]) -> str:
    """The numbered element list most LLM agents (T3A, M3A) show the model."""
    return "\n".join(f"{i}: {e.describe()}" for i, e in enumerate(elements))


class UIElementSpace(spaces.Space):
    """A gymnasium space whose members are `UIElement` records (used inside `spaces.Sequence`)."""

    def __init__(self, seed: int | np.random.Generator | None = None):
        super().__init__(shape=None, dtype=None, seed=seed)

    @property
    def is_np_flattenable(self) -> bool:
        return False

    def sample(self, mask: Any = None, probability: Any = None) -> UIElement:
        r = self.np_random
        x0, y0 = int(r.integers(0, 1000)), int(r.integers(0, 2300))
        words = ["OK", "Cancel", "Settings", "Search", "Save", None]
        return UIElement(
            text=words[int(r.integers(len(words)))],
            class_name="android.widget.TextView",
            bbox_pixels=BoundingBox(x0, x0 + 80, y0, y0 + 100),
            is_clickable=bool(r.integers(2)),
            is_enabled=True,
            is_visible=True,
        )

    def contains(self, x: Any) -> bool:
        return isinstance(x, UIElement)

    def __repr__(self) -> str:
        return "UIElementSpace()"

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, UIElementSpace)
