"""Pieces the Simple Mobile Tools apps share (Simple Gallery Pro, Simple Draw Pro): the commons folder picker
("Select a folder": breadcrumbs from "Internal", sub-folders, Cancel / OK) and pictures.

A picture file's content is a plain-text description of its pixels: a header line "<FORMAT> <w>x<h>", then
one line per text run drawn on a white canvas, "<y> <font size> <text>", in the image's own pixel units.
`picture_nodes` draws it into screen bounds, scaled to fit: the runs are drawn but not listed in the
accessibility tree (an image shows no text there), so a pixel reader can read the picture and an
elements-only agent sees an ImageView. Content without runs (a camera photo, a drawing) draws as a plain
photo placeholder.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable
from typing import Protocol

from voyager_gym.backends.sim import widgets as w
from voyager_gym.backends.sim.device import SDCARD
from voyager_gym.backends.sim.ui import ACCENT, GREY, PAD, ROW_H, UI, WHITE, Screen
from voyager_gym.backends.sim.widgets import SCREEN_W, Node

INTERNAL = "Internal"  # how the commons library names the internal storage root in paths and breadcrumbs
MEDIA_EXTS = (".jpg", ".jpeg", ".png", ".gif", ".webp", ".svg", ".mp4", ".mkv", ".3gp", ".webm")
PHOTO_FILL = (120, 130, 122)


def humanize(path: str) -> str:
    """'/storage/emulated/0/Pictures' -> 'Internal/Pictures' (the commons library's humanizePath)."""
    return INTERNAL + path[len(SDCARD) :] if path.startswith(SDCARD) else path


# -- pictures --------------------------------------------------------------------------------------------
def picture_content(fmt: str, width: int, height: int, runs: list[tuple[int, int, str]]) -> str:
    return "\n".join([f"{fmt} {width}x{height}"] + [f"{y} {size} {text}" for y, size, text in runs])


def parse_picture(content: str) -> tuple[int, int, list[tuple[int, int, str]]] | None:
    """(width, height, runs) of picture content, or None when the header has no size."""
    lines = content.split("\n")
    head = lines[0].split(" ")
    if len(head) < 2 or "x" not in head[1]:
        return None
    try:
        width, height = (int(v) for v in head[1].split("x", 1))
        runs = []
        for line in lines[1:]:
            if line:
                y, size, text = line.split(" ", 2)
                runs.append((int(y), int(size), text))
    except ValueError:
        return None
    return width, height, runs


def picture_nodes(content: str, bounds: w.Bounds, rid: str, desc: str | None = None) -> list[Node]:
    """An ImageView filling `bounds` (listed as AndroidWorld lists an image: its resource id, no text) with
    the picture drawn inside it, scaled to fit and centred."""
    x0, y0, x1, y1 = bounds
    image = Node(w.IMAGE, bounds=bounds, rid=rid, desc=desc)
    parsed = parse_picture(content)
    if parsed is None or not parsed[2]:
        image.bg = PHOTO_FILL
        return [image]
    pw, ph, runs = parsed
    s = min((x1 - x0) / pw, (y1 - y0) / ph)
    cw, ch = int(pw * s), int(ph * s)
    cx, cy = x0 + (x1 - x0 - cw) // 2, y0 + (y1 - y0 - ch) // 2
    out = [image, Node(w.VIEW, bounds=(cx, cy, cx + cw, cy + ch), bg=WHITE, a11y=False)]
    for y, size, text in runs:
        top = cy + int(y * s)
        out.append(
            Node(
                w.TEXT,
                text=text,
                bounds=(cx + int(10 * s), top, cx + cw, top + int(size * 1.25 * s) + 1),
                size=max(4, int(size * s)),
                fg=(0, 0, 0),
                a11y=False,
            )
        )
    return out


def media_files(dev, folder: str) -> list[str]:
    """Paths of the media files directly in `folder`, newest first (the gallery's default order)."""
    _, files = dev.listdir(folder)
    paths = [f"{folder}/{f}" for f in files if f.lower().endswith(MEDIA_EXTS)]
    return sorted(paths, key=lambda p: (-dev.files[p].mtime_ms, p))


# -- dialogs ---------------------------------------------------------------------------------------------
def tall_dialog(ui: UI, title: str, top: int, bottom: int) -> Node:
    """A dialog panel from `top` to `bottom` with its title (content and buttons are the caller's)."""
    panel = Node(
        w.FRAME,
        bounds=(48, top, SCREEN_W - 48, bottom),
        bg=WHITE,
        radius=36,
        absorb=True,
        a11y=False,
        rid="android:id/parentPanel",
    )
    panel.add(
        ui.text(
            title, (96, top + 40, SCREEN_W - 96, top + 130), size=50, bold=True, rid="android:id/alertTitle"
        )
    )
    return panel


class PickerOwner(Protocol):
    def folder_picked(self, ui: UI, path: str) -> None: ...


class FolderPicker(Screen):
    """The commons FilePickerDialog picking a folder: it opens at `path` (the storage root when that folder
    does not exist), taps open sub-folders, a breadcrumb goes back up, OK hands the folder to `owner`."""

    modal = True

    def __init__(self, owner: PickerOwner, path: str):
        super().__init__()
        self.owner = owner
        self.path = path

    def go(self, path: str) -> None:
        self.path = path
        self.scroll.pop("picker_items", None)

    def back(self, ui: UI) -> bool:
        if self.path != SDCARD:
            self.go(posixpath.dirname(self.path))
            return True
        return False

    def ok(self, ui: UI) -> None:
        ui.pop()
        self.owner.folder_picked(ui, self.path)

    def build(self, ui: UI) -> list[Node]:
        if self.path not in ui.dev.dirs:
            self.path = SDCARD
        pkg = ui.app.package
        top, bottom = ui.top + 120, ui.bottom - 120
        panel = tall_dialog(ui, "Select a folder", top, bottom)
        y = top + 150
        panel.add(self._crumbs(ui, y, pkg))
        y += 110
        dirs, _ = ui.dev.listdir(self.path)
        rows: list[tuple[int, Callable[[w.Bounds], Node]]] = []
        for d in sorted((d for d in dirs if not d.startswith(".")), key=str.lower):
            p = f"{self.path}/{d}"
            n_items = sum(len(x) for x in ui.dev.listdir(p))
            sub = f"{n_items} item{'s' if n_items != 1 else ''}"
            rows.append(
                (
                    ROW_H,
                    lambda b, p=p, d=d, sub=sub: ui.item(
                        d,
                        b,
                        on_click=lambda: self.go(p),
                        subtitle=sub,
                        icon="folder",
                        rid=f"{pkg}:id/list_item_name",
                    ),
                )
            )
        panel.add(
            ui.list(
                "picker_items", rows, y0=y, y1=bottom - 170, x0=48, x1=SCREEN_W - 48, empty="No sub-folders"
            )
        )
        ui.dialog_buttons(panel, [("Cancel", ui.pop), ("OK", lambda: self.ok(ui))])
        return [panel]

    def _crumbs(self, ui: UI, y: int, pkg: str) -> Node:
        row = Node(
            w.LINEAR,
            bounds=(96, y, SCREEN_W - 96, y + 100),
            a11y=False,
            rid=f"{pkg}:id/filepicker_breadcrumbs",
        )
        parts = [SDCARD]
        for seg in self.path[len(SDCARD) :].strip("/").split("/"):
            if seg:
                parts.append(f"{parts[-1]}/{seg}")
        x = 96
        for p in parts[-3:]:
            label = INTERNAL if p == SDCARD else posixpath.basename(p)
            last = p == self.path
            wdt = min(420, 60 + 24 * len(label))
            row.add(
                Node(
                    w.TEXT,
                    text=label,
                    bounds=(x, y, x + wdt, y + 100),
                    clickable=True,
                    on_click=(lambda p=p: self.go(p)),
                    size=38,
                    bold=last,
                    fg=ACCENT if last else GREY,
                    rid=f"{pkg}:id/breadcrumb_text",
                )
            )
            x += wdt
            if not last:
                row.add(Node(w.TEXT, text="/", bounds=(x, y, x + 40, y + 100), size=38, fg=GREY, a11y=False))
                x += 40
        return row


def popup_menu(ui: UI, items: list[tuple[str, Callable[[], object]]], rid: str) -> Node:
    """An overflow menu anchored at the top right (the toolbar's More options)."""
    y0 = ui.top + 24
    panel = Node(
        w.FRAME,
        bounds=(SCREEN_W - 600, y0, SCREEN_W - 24, y0 + 40 + 150 * len(items)),
        bg=WHITE,
        radius=16,
        absorb=True,
        a11y=False,
        rid=rid,
    )
    for i, (label, handler) in enumerate(items):
        y = y0 + 20 + 150 * i
        panel.add(
            Node(
                w.TEXT,
                text=label,
                bounds=(SCREEN_W - 600, y, SCREEN_W - 24, y + 150),
                clickable=True,
                on_click=handler,
                pad=PAD,
                size=44,
                rid="android:id/title",
            )
        )
    return panel
