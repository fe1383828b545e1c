"""Stand-in of android_world/env/representation_utils.py: `BoundingBox` and `UIElement` with AndroidWorld's
field names and order (mutable dataclasses there, so here too)."""

from __future__ import annotations

import dataclasses
from typing import Any


@dataclasses.dataclass
class BoundingBox:
    x_min: float | int
    x_max: float | int
    y_min: float | int
    y_max: float | int

    @property
    def center(self) -> tuple[float, float]:
        return (self.x_min + self.x_max) / 2.0, (self.y_min + self.y_max) / 2.0

    @property
    def width(self) -> float | int:
        return self.x_max - self.x_min

    @property
    def height(self) -> float | int:
        return self.y_max - self.y_min


@dataclasses.dataclass
class UIElement:
    """One accessibility element, as AndroidWorld's `forest_to_ui_elements` returns it."""

    text: str | None = None
    content_description: str | None = None
    class_name: str | None = None
    bbox: BoundingBox | None = None
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
    metadata: dict[str, Any] | None = None
