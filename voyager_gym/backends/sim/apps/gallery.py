"""Simple Gallery Pro (com.simplemobiletools.gallery.pro): folders of media, their thumbnails, a full-screen
viewer, and copying or moving media to another folder.

It opens on the folders that hold media (a grid of tiles: thumbnail, name, count). A folder opens its media as
a grid of thumbnails (no file names, as the app shows them by default); a tap opens the viewer, whose title
is the file name and whose More options menu offers "Copy to" / "Move to"; a long press selects, and the
selection's More options menu offers the same. Both open "Select destination": the media folders, plus
"Other folder", the commons folder picker, for any folder of the storage.
"""

from __future__ import annotations

import posixpath

from voyager_gym.backends.sim import widgets as w
from voyager_gym.backends.sim.apps.markor import move_path
from voyager_gym.backends.sim.apps.simple_commons import (
    FolderPicker,
    media_files,
    picture_nodes,
    popup_menu,
    tall_dialog,
)
from voyager_gym.backends.sim.device import SDCARD, DeviceState
from voyager_gym.backends.sim.ui import UI, WHITE, App, Screen, register_app
from voyager_gym.backends.sim.widgets import SCREEN_W, Node

PKG = "com.simplemobiletools.gallery.pro"
COLOR = (194, 24, 91)
DARK = (0, 0, 0)
COLS = 3
TILE = SCREEN_W // COLS


def media_folders(dev: DeviceState) -> list[str]:
    """Folders with media directly in them, by name (Android/ data excluded)."""
    out = [d for d in dev.dirs if d.startswith(SDCARD) and "/Android" not in d and media_files(dev, d)]
    return sorted(out, key=lambda d: posixpath.basename(d).lower())


def _tile(ui: UI, folder: str, b: w.Bounds, on_click, rid_prefix: str = "dir") -> Node:
    """A folder tile: the newest medium as thumbnail, the folder's name and media count over it."""
    x0, y0, x1, y1 = b
    newest = media_files(ui.dev, folder)
    holder = Node(w.FRAME, bounds=b, clickable=True, on_click=on_click, bg=(60, 64, 67), a11y=False)
    holder.add(
        *picture_nodes(
            ui.dev.files[newest[0]].content,
            (x0 + 2, y0 + 2, x1 - 2, y1 - 2),
            f"{PKG}:id/{rid_prefix}_thumbnail",
        )
    )
    shade = Node(w.VIEW, bounds=(x0 + 2, y1 - 150, x1 - 2, y1 - 2), bg=(33, 33, 33), a11y=False)
    shade.add(
        Node(
            w.TEXT,
            text=posixpath.basename(folder),
            bounds=(x0 + 24, y1 - 146, x1 - 8, y1 - 80),
            size=38,
            fg=WHITE,
            rid=f"{PKG}:id/dir_name",
        ),
        Node(
            w.TEXT,
            text=str(len(newest)),
            bounds=(x0 + 24, y1 - 78, x1 - 8, y1 - 16),
            size=34,
            fg=WHITE,
            rid=f"{PKG}:id/photo_cnt",
        ),
    )
    holder.add(shade)
    return holder


def _grid(ui: UI, key: str, items: list, make, y0: int, y1: int | None = None) -> Node:
    """A scrolling grid of square tiles, COLS to a row."""
    rows = []
    for r in range(0, len(items), COLS):
        chunk = items[r : r + COLS]

        def row(b: w.Bounds, chunk=chunk) -> Node:
            line = Node(w.LINEAR, bounds=b, a11y=False)
            for c, item in enumerate(chunk):
                line.add(make(item, (c * TILE, b[1], (c + 1) * TILE, b[3])))
            return line

        rows.append((TILE, row))
    return ui.list(key, rows, y0=y0, y1=y1, empty="No media files have been found")


class FoldersScreen(Screen):
    def build(self, ui: UI) -> list[Node]:
        bar = ui.app_bar(
            "Simple Gallery",
            back=False,
            actions=[("Search", "search", lambda: ui.toast("Search is not available"))],
        )
        grid = _grid(
            ui,
            "directories_grid",
            media_folders(ui.dev),
            lambda f, b: _tile(ui, f, b, lambda: ui.push(MediaScreen(f))),
            ui.below_bar(),
        )
        return [bar, grid]


class Transfer:
    """A pending "Copy to" / "Move to" of `paths`, started from `origin` (whose selection it clears)."""

    def __init__(self, mode: str, paths: list[str], origin: Screen):
        self.mode = mode
        self.paths = list(paths)
        self.origin = origin

    @property
    def source(self) -> str:
        return posixpath.dirname(self.paths[0])

    def folder_picked(self, ui: UI, dest: str) -> None:
        dev = ui.dev
        if dest == self.source:
            ui.toast("Source and destination cannot be the same")
            return
        done = 0
        for p in self.paths:
            target = f"{dest}/{posixpath.basename(p)}"
            if dev.exists(target) or p not in dev.files:
                continue
            if self.mode == "move":
                move_path(dev, p, dest)
            else:
                dev.write_file(target, dev.files[p].content)
            done += 1
        if isinstance(self.origin, MediaScreen):
            self.origin.selected = []
        if done == 0:
            ui.toast("File already exists")
        else:
            ui.toast("Files moved successfully" if self.mode == "move" else "Files copied successfully")


class MediaScreen(Screen):
    """One folder's media as thumbnails; long press selects."""

    def __init__(self, folder: str):
        super().__init__()
        self.folder = folder
        self.selected: list[str] = []

    def back(self, ui: UI) -> bool:
        if self.selected:
            self.selected = []
            return True
        return False

    def toggle(self, path: str) -> None:
        if path in self.selected:
            self.selected.remove(path)
        else:
            self.selected.append(path)

    def build(self, ui: UI) -> list[Node]:
        media = media_files(ui.dev, self.folder)
        self.selected = [p for p in self.selected if p in media]
        if self.selected:

            def copy_menu() -> None:
                ui.push(MediaMenu(Transfer("copy", self.selected, self), select_all=self))

            bar = ui.app_bar(
                f"{len(self.selected)} / {len(media)}",
                actions=[
                    ("Share", "share", lambda: ui.toast("Sharing is not available")),
                    ("More options", "more", copy_menu),
                ],
            )
            lead = bar.children[0]  # the selection's leading button closes it
            lead.desc, lead.icon, lead.on_click = "Done", "close", self.selected.clear
        else:
            bar = ui.app_bar(
                posixpath.basename(self.folder),
                actions=[("Search", "search", lambda: ui.toast("Search is not available"))],
            )
        grid = _grid(ui, "media_grid", media, lambda p, b: self._thumb(ui, p, b), ui.below_bar())
        return [bar, grid]

    def _thumb(self, ui: UI, path: str, b: w.Bounds) -> Node:
        def click() -> None:
            if self.selected:
                self.toggle(path)
            else:
                ui.push(ViewerScreen(path))

        holder = Node(
            w.FRAME,
            bounds=b,
            clickable=True,
            on_click=click,
            long_clickable=True,
            on_long_click=lambda: self.toggle(path),
            bg=(60, 64, 67),
            a11y=False,
            rid=f"{PKG}:id/media_item_holder",
        )
        x0, y0, x1, y1 = b
        holder.add(
            *picture_nodes(
                ui.dev.files[path].content, (x0 + 2, y0 + 2, x1 - 2, y1 - 2), f"{PKG}:id/medium_thumbnail"
            )
        )
        if path in self.selected:
            holder.add(
                Node(
                    w.IMAGE,
                    bounds=(x1 - 110, y0 + 20, x1 - 20, y0 + 110),
                    icon="check_on",
                    icon_fg=(26, 115, 232),
                    rid=f"{PKG}:id/medium_check",
                    a11y=False,
                )
            )
        return holder


class ViewerScreen(Screen):
    """One medium full screen: its name as title; swipes go to the next or previous medium of the folder."""

    def __init__(self, path: str):
        super().__init__()
        self.path = path

    def build(self, ui: UI) -> list[Node]:
        dev = ui.dev
        folder = posixpath.dirname(self.path)
        media = media_files(dev, folder)
        if self.path not in media:
            if not media:
                ui.pop()
                return [Node(w.FRAME, bounds=(0, ui.top, SCREEN_W, ui.bottom), bg=DARK, a11y=False)]
            self.path = media[0]
        name = posixpath.basename(self.path)

        def menu() -> None:
            ui.push(MediaMenu(Transfer("copy", [self.path], self)))

        bar = ui.app_bar(
            name,
            color=DARK,
            actions=[
                ("Share", "share", lambda: ui.toast("Sharing is not available")),
                ("More options", "more", menu),
            ],
        )
        y = ui.below_bar()
        stage = Node(w.FRAME, bounds=(0, ui.top, SCREEN_W, ui.bottom), bg=DARK, a11y=False)

        def swipe(direction: str) -> None:
            i = media.index(self.path)
            j = i + 1 if direction == "right" else i - 1 if direction == "left" else i
            if 0 <= j < len(media):
                self.path = media[j]

        image = picture_nodes(
            dev.files[self.path].content, (0, y + 40, SCREEN_W, ui.bottom - 200), f"{PKG}:id/gestures_view"
        )
        image[0].on_scroll = swipe
        stage.add(*image)
        return [stage, bar]


class MediaMenu(Screen):
    """The overflow menu of the viewer or of a selection: Copy to, Move to (a selection: Select all too)."""

    modal = True

    def __init__(self, transfer: Transfer, select_all: MediaScreen | None = None):
        super().__init__()
        self.transfer = transfer
        self.select_all = select_all

    def build(self, ui: UI) -> list[Node]:
        t = self.transfer

        def pick(mode: str):
            def f() -> None:
                t.mode = mode
                ui.replace(PickDirectoryDialog(t))

            return f

        items = [("Copy to", pick("copy")), ("Move to", pick("move"))]
        owner = self.select_all
        if owner is not None:

            def all_media() -> None:
                owner.selected = media_files(ui.dev, owner.folder)
                ui.pop()

            items.append(("Select all", all_media))
        return [popup_menu(ui, items, f"{PKG}:id/overflow_menu")]


class PickDirectoryDialog(Screen):
    """ "Select destination": the media folders as tiles; "Other folder" opens the folder picker."""

    modal = True

    def __init__(self, transfer: Transfer):
        super().__init__()
        self.transfer = transfer

    def build(self, ui: UI) -> list[Node]:
        t = self.transfer
        top, bottom = ui.top + 160, ui.bottom - 160
        panel = tall_dialog(ui, "Select destination", top, bottom)

        def choose(folder: str) -> None:
            if folder == t.source:
                ui.toast("Source and destination cannot be the same")
                return
            ui.pop()
            t.folder_picked(ui, folder)

        def other() -> None:
            ui.replace(FolderPicker(t, t.source))

        tiles = _grid(
            ui,
            "directories_grid",
            media_folders(ui.dev),
            lambda f, b: _tile(ui, f, (b[0] + 48, b[1], b[2] - 48, b[3] - 96), lambda: choose(f)),
            top + 160,
            bottom - 170,
        )
        panel.add(tiles)
        ui.dialog_buttons(panel, [("Other folder", other), ("Cancel", ui.pop), ("OK", ui.pop)])
        return [panel]


@register_app
class SimpleGallery(App):
    package = PKG
    name = "Simple Gallery Pro"
    aliases = r"simple gallery pro|simple gallery"
    color = COLOR

    def main(self, dev: DeviceState) -> Screen:
        return FoldersScreen()
