"""Markor (net.gsantner.markor): markdown notes kept as plain files under Documents/Markor.

The notebook lists the folder's sub-folders and notes (sortable by name or date, long-press selects, the
selection toolbar deletes, moves and renames); the FAB opens the new-file dialog; the editor holds the note in
one multiline field (a long press offers Paste) and saves it when the user leaves (back), taps Save, or
renames from the title, as Markor's autosave does.
"""

from __future__ import annotations

import datetime as dt
import posixpath
from collections.abc import Callable

from voyager_gym.backends.sim import widgets as w
from voyager_gym.backends.sim.device import SDCARD, START_MS, DeviceState
from voyager_gym.backends.sim.ui import (
    ACCENT,
    GREY,
    LIGHT,
    PAD,
    ROW2_H,
    ROW_H,
    UI,
    WHITE,
    App,
    Screen,
    make_pasteable,
    register_app,
)
from voyager_gym.backends.sim.widgets import SCREEN_W, Node

PKG = "net.gsantner.markor"
MARKOR_DIR = f"{SDCARD}/Documents/Markor"
EDITOR_KEY = "document__fragment__edit__highlighting_editor"
ROW_CHARS = 40  # characters of a note's line that one row of the editor shows, about (long lines wrap)
NAV_TABS = ("Notebook", "To-Do", "QuickNote", "More")
BOTTOM_NAV_H = 168
FILE_TYPES = (("Markdown", ".md"), ("Plain Text", ".txt"), ("Todo.txt", ".todo.txt"))
TEXT_EXTS = (".md", ".txt", ".markdown", ".text", ".csv", ".todo.txt")


# -- file-system helpers (shared by Markor and Files) -------------------------------------------------------
def is_dir(dev: DeviceState, path: str) -> bool:
    return dev.norm(path) in dev.dirs


def move_path(dev: DeviceState, src: str, dst_dir: str) -> str:
    """Move a file or a folder (with everything below it) into `dst_dir`; returns the new path."""
    src, dst_dir = dev.norm(src), dev.norm(dst_dir)
    return rename_path(dev, src, f"{dst_dir}/{posixpath.basename(src)}")


def rename_path(dev: DeviceState, src: str, dst: str) -> str:
    """Rename a file or folder to the full path `dst` (file times are kept, as a rename does)."""
    src, dst = dev.norm(src), dev.norm(dst)
    if src in dev.files:
        dev.mkdir(posixpath.dirname(dst))
        dev.files[dst] = dev.files.pop(src)
        return dst
    if src in dev.dirs:
        for f in [f for f in dev.files if f.startswith(src + "/")]:
            dev.files[dst + f[len(src):]] = dev.files.pop(f)
        for d in [d for d in dev.dirs if d == src or d.startswith(src + "/")]:
            dev.dirs.discard(d)
            dev.dirs.add(dst + d[len(src):])
        dev.mkdir(posixpath.dirname(dst))
    return dst


def mtime_ms(dev: DeviceState, path: str) -> int:
    """A file's modification time; a folder's is that of its newest file (or the device's start)."""
    p = dev.norm(path)
    if p in dev.files:
        return dev.files[p].mtime_ms
    times = [e.mtime_ms for f, e in dev.files.items() if f.startswith(p + "/")]
    return max(times) if times else START_MS


def size_str(n: int) -> str:
    return f"{n} B" if n < 1024 else f"{n / 1024:.1f} kB"


def fmt_time(ms: int, fmt: str = "%d.%m.%y %H:%M") -> str:
    return dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC).strftime(fmt)


def with_extension(name: str, ext: str) -> str:
    """Markor's new-file naming: keep a name that already ends in a text extension, else append `ext`."""
    name = name.strip()
    if name.lower().endswith(TEXT_EXTS) or not ext:
        return name
    return name + (ext if ext.startswith(".") else "." + ext)


# -- screens ---------------------------------------------------------------------------------------------
def _menu(ui: UI, items: list[tuple[str, Callable[[], object]]], rid: str = "menu") -> Node:
    """A popup menu anchored at the top right, as Android's overflow menus are."""
    y0 = ui.top + 24
    panel = Node(w.FRAME, bounds=(SCREEN_W - 620, y0, SCREEN_W - 24, y0 + 40 + 150 * len(items)), bg=WHITE,
                 radius=16, border=LIGHT, rid=f"{PKG}:id/{rid}", absorb=True, a11y=False)
    for i, (label, handler) in enumerate(items):
        y = y0 + 20 + 150 * i
        panel.add(Node(w.TEXT, text=label, bounds=(SCREEN_W - 620, y, SCREEN_W - 24, y + 150), clickable=True,
                       on_click=handler, pad=48, size=44, rid=f"{PKG}:id/title"))
    return panel


class NotebookScreen(Screen):
    """The file browser of the Notebook tab: one folder at a time, folders first."""

    def __init__(self, path: str = MARKOR_DIR):
        super().__init__()
        self.path = path
        self.selected: list[str] = []
        self.sort = "name"
        self.reverse = False

    # state helpers
    def entries(self, dev: DeviceState) -> list[tuple[str, bool]]:
        dirs, files = dev.listdir(self.path)
        items = [(f"{self.path}/{d}", True) for d in dirs] + [(f"{self.path}/{f}", False) for f in files]
        if self.sort == "date":
            items.sort(key=lambda it: (-mtime_ms(dev, it[0]), posixpath.basename(it[0]).lower()))
            items.sort(key=lambda it: not it[1])
        else:
            items.sort(key=lambda it: (not it[1], posixpath.basename(it[0]).lower()))
        if self.reverse:
            items = [i for i in items if i[1]][::-1] + [i for i in items if not i[1]][::-1]
        return items

    def go(self, path: str) -> None:
        self.path = path
        self.selected = []
        self.scroll.pop("files", None)

    def select_all(self, dev: DeviceState) -> None:
        self.selected = [p for p, _ in self.entries(dev)]

    def toggle(self, path: str) -> None:
        if path in self.selected:
            self.selected.remove(path)
        else:
            self.selected.append(path)

    def back(self, ui: UI) -> bool:
        if self.selected:
            self.selected = []
            return True
        if self.path != MARKOR_DIR and self.path.startswith(SDCARD + "/"):
            self.go(posixpath.dirname(self.path))
            return True
        return False

    def build(self, ui: UI) -> list[Node]:
        dev = ui.dev
        self.selected = [p for p in self.selected if dev.exists(p)]
        out: list[Node] = []
        if self.selected:
            n = len(self.selected)
            bar = ui.app_bar(f"{n} selected", back=True, actions=[
                ("Select all", "check", lambda: self.select_all(dev)),
                ("Delete", "delete", lambda: ui.push(DeleteDialog(self))),
                ("Move", "folder", lambda: ui.push(MoveDialog(self))),
                ("More options", "more", lambda: ui.push(SelectionMenu(self))),
            ])
            bar.children[0].on_click = lambda: self.selected.clear()
        else:
            at_root = self.path == MARKOR_DIR
            title = "Markor" if at_root else posixpath.basename(self.path)
            bar = ui.app_bar(title, back=not at_root, actions=[
                ("Search", "search", lambda: ui.toast("Search is not available")),
                ("Sort by", "sort", lambda: ui.push(SortMenu(self))),
                ("More options", "more", lambda: ui.push(MainMenu(self))),
            ])
            if not at_root:
                bar.children[0].on_click = lambda: self.go(posixpath.dirname(self.path))
        out.append(bar)
        y = ui.below_bar()
        rel = self.path[len(SDCARD):] or "/"
        out.append(ui.text(rel, (PAD, y, SCREEN_W - PAD, y + 72), size=32, fg=GREY, rid=f"{PKG}:id/path"))
        rows: list[tuple[int, Callable[[w.Bounds], Node]]] = []
        if self.path != MARKOR_DIR and self.path.startswith(SDCARD + "/"):
            rows.append((ROW_H, lambda b: ui.item("..", b, icon="folder",
                                                  on_click=lambda: self.go(posixpath.dirname(self.path)))))
        for path, folder in self.entries(dev):
            rows.append((ROW2_H, lambda b, p=path, f=folder: self._row(ui, p, f, b)))
        bottom = ui.bottom - (0 if ui.keyboard else BOTTOM_NAV_H)
        out.append(ui.list("files", rows, y0=y + 72, y1=bottom, empty="This folder is empty"))
        if not ui.keyboard:
            if not self.selected:
                fab = ui.fab("Create a new file or folder", lambda: ui.push(NewFileDialog(self.path)))
                x0, y0, x1, y1 = fab.bounds
                fab.bounds = (x0, y0 - BOTTOM_NAV_H, x1, y1 - BOTTOM_NAV_H)
                out.append(fab)
            out.append(self._bottom_nav(ui, bottom))
        return out

    def _row(self, ui: UI, path: str, folder: bool, b: w.Bounds) -> Node:
        dev = ui.dev
        name = posixpath.basename(path)
        if folder:
            n = sum(len(x) for x in dev.listdir(path))
            sub = f"{n} item{'s' if n != 1 else ''} · {fmt_time(mtime_ms(dev, path))}"
        else:
            sub = f"{fmt_time(mtime_ms(dev, path))} · {size_str(len(dev.files[path].content.encode()))}"

        def click() -> None:
            if self.selected:
                self.toggle(path)
            elif folder:
                self.go(path)
            else:
                ui.push(EditorScreen(path))

        return ui.item(name, b, on_click=click, on_long_click=lambda: self.toggle(path), subtitle=sub,
                       icon="folder" if folder else "file", selected=path in self.selected,
                       rid=f"{PKG}:id/ui__filesystem_item__title")

    def _bottom_nav(self, ui: UI, y0: int) -> Node:
        nav = Node(w.LINEAR, bounds=(0, y0, SCREEN_W, y0 + BOTTOM_NAV_H), bg=(245, 245, 245), border=LIGHT,
                   rid=f"{PKG}:id/bottom_navigation_bar", a11y=False)
        tw = SCREEN_W // len(NAV_TABS)
        targets = {"To-Do": f"{MARKOR_DIR}/todo.txt", "QuickNote": f"{MARKOR_DIR}/QuickNote.md"}
        for i, tab in enumerate(NAV_TABS):
            def click(t=tab) -> None:
                if t == "Notebook":
                    self.go(MARKOR_DIR)
                elif t in targets:
                    ui.push(EditorScreen(targets[t]))
                else:
                    ui.push(MoreScreen())

            nav.add(Node(w.TEXT, text=tab, desc=tab, bounds=(i * tw, y0, (i + 1) * tw, y0 + BOTTOM_NAV_H),
                         clickable=True, on_click=click, align="center", size=34, selected=tab == "Notebook",
                         fg=ui.app.color if tab == "Notebook" else GREY, bold=tab == "Notebook",
                         rid=f"{PKG}:id/nav_{tab.lower().replace('-', '')}"))
        return nav


class MoreScreen(Screen):
    """The More tab: settings and about entries (not functional)."""

    def build(self, ui: UI) -> list[Node]:
        rows = [(ROW_H, lambda b, t=t: ui.item(t, b, on_click=lambda: None))
                for t in ("Settings", "About", "Help", "Donate")]
        return [ui.app_bar("More"), ui.list("more", rows)]


class SortMenu(Screen):
    modal = True

    def __init__(self, owner: NotebookScreen):
        super().__init__()
        self.owner = owner

    def build(self, ui: UI) -> list[Node]:
        def choose(kind: str) -> Callable[[], None]:
            def f() -> None:
                if kind == "reverse":
                    self.owner.reverse = not self.owner.reverse
                else:
                    self.owner.sort = kind
                ui.pop()
            return f

        rev = "Reverse order ✓" if self.owner.reverse else "Reverse order"
        return [_menu(ui, [("Name", choose("name")), ("Date", choose("date")), (rev, choose("reverse"))],
                      rid="sort_menu")]


class MainMenu(Screen):
    modal = True

    def __init__(self, owner: NotebookScreen):
        super().__init__()
        self.owner = owner

    def build(self, ui: UI) -> list[Node]:
        def home() -> None:
            self.owner.go(MARKOR_DIR)
            ui.pop()

        return [_menu(ui, [("Go to notebook home", home), ("Settings", ui.pop), ("About", ui.pop)])]


class SelectionMenu(Screen):
    modal = True

    def __init__(self, owner: NotebookScreen):
        super().__init__()
        self.owner = owner

    def build(self, ui: UI) -> list[Node]:
        owner = self.owner

        def rename() -> None:
            ui.pop()
            if len(owner.selected) == 1:
                ui.push(RenameDialog(owner.selected[0], owner=owner))
            else:
                ui.toast("Select a single item to rename")

        def info() -> None:
            ui.pop()
            p = owner.selected[0]
            ui.toast(f"{posixpath.basename(p)} · {fmt_time(mtime_ms(ui.dev, p))}")

        return [_menu(ui, [("Rename", rename), ("Info", info)], rid="selection_menu")]


class DeleteDialog(Screen):
    modal = True

    def __init__(self, owner: NotebookScreen):
        super().__init__()
        self.owner = owner

    def build(self, ui: UI) -> list[Node]:
        sel = self.owner.selected
        names = ", ".join(posixpath.basename(p) for p in sel[:4]) + (" …" if len(sel) > 4 else "")
        panel, _ = ui.dialog_box("Delete", 560, f"Do you really want to delete this? {names}")

        def ok() -> None:
            for p in list(sel):
                ui.dev.remove(p)
            n = len(sel)
            self.owner.selected = []
            ui.pop()
            ui.toast(f"Deleted {n} item{'s' if n != 1 else ''}")

        ui.dialog_buttons(panel, [("Cancel", ui.pop), ("OK", ok)])
        return [panel]


class MoveDialog(Screen):
    """Markor's folder chooser: browse folders and move the selection into the one shown."""

    modal = True

    def __init__(self, owner: NotebookScreen):
        super().__init__()
        self.owner = owner
        self.path = owner.path

    def build(self, ui: UI) -> list[Node]:
        dev = ui.dev
        panel, y = ui.dialog_box("Move to", 1500)
        x0, x1 = panel.bounds[0], panel.bounds[2]
        panel.add(ui.text(self.path[len(SDCARD):] or "/", (x0 + 60, y - 30, x1 - 60, y + 40), size=32,
                          fg=GREY, rid=f"{PKG}:id/folder_path"))
        rows: list[tuple[int, Callable[[w.Bounds], Node]]] = []

        def go(p: str) -> Callable[[], None]:
            def f() -> None:
                self.path = p
                self.scroll.pop("folders", None)
            return f

        if self.path.startswith(SDCARD + "/"):
            up = go(posixpath.dirname(self.path))
            rows.append((ROW_H, lambda b: ui.item("..", b, icon="folder", on_click=up)))
        dirs, _ = dev.listdir(self.path)
        for d in sorted(dirs, key=str.lower):
            rows.append((ROW_H, lambda b, d=d: ui.item(d, b, icon="folder", on_click=go(f"{self.path}/{d}"),
                                                        rid=f"{PKG}:id/folder_title")))
        panel.add(ui.list("folders", rows, y0=y + 50, y1=panel.bounds[3] - 180, x0=x0, x1=x1,
                          empty="No folders"))

        def ok() -> None:
            moved = 0
            for p in list(self.owner.selected):
                if posixpath.dirname(p) == self.path or self.path == p or self.path.startswith(p + "/"):
                    continue
                if dev.exists(f"{self.path}/{posixpath.basename(p)}"):
                    ui.toast("A file with this name already exists")
                    continue
                move_path(dev, p, self.path)
                moved += 1
            self.owner.selected = []
            ui.pop()
            if moved:
                ui.toast(f"Moved {moved} item{'s' if moved != 1 else ''}")

        ui.dialog_buttons(panel, [("Cancel", ui.pop), ("OK", ok)])
        return [panel]


class RenameDialog(Screen):
    """Rename a file or folder; used from the selection menu and from the editor's title."""

    modal = True

    def __init__(self, path: str, owner: NotebookScreen | None = None, editor: EditorScreen | None = None):
        super().__init__()
        self.path = path
        self.owner = owner
        self.editor = editor
        self.fields["name"] = posixpath.basename(path)
        self.focus = "name"

    def submit(self, ui: UI, key: str) -> None:
        self.ok(ui)

    def ok(self, ui: UI) -> None:
        dev = ui.dev
        name = self.field("name").strip()
        if not name or "/" in name:
            ui.toast("Invalid name")
            return
        target = f"{posixpath.dirname(self.path)}/{name}"
        if target != self.path and dev.exists(target):
            ui.toast("A file with this name already exists")
            return
        if self.editor is not None:
            self.editor.save(dev)
        if dev.exists(self.path):
            rename_path(dev, self.path, target)
        if self.editor is not None:
            self.editor.path = target
        if self.owner is not None:
            self.owner.selected = []
        ui.unfocus()
        ui.pop()

    def build(self, ui: UI) -> list[Node]:
        panel, y = ui.dialog_box("Rename", 520)
        panel.add(ui.field("name", (panel.bounds[0] + 60, y, panel.bounds[2] - 60, y + 150), hint="Name"))
        ui.dialog_buttons(panel, [("Cancel", ui.pop), ("OK", lambda: self.ok(ui))])
        return [panel]


class NewFileDialog(Screen):
    """The FAB's dialog: a name, an extension picked by file type, and OK (file) or Folder."""

    modal = True

    def __init__(self, folder: str):
        super().__init__()
        self.folder = folder
        self.fields["ext"] = ".md"
        self.kind = "Markdown"

    def build(self, ui: UI) -> list[Node]:
        dev = ui.dev
        panel, y = ui.dialog_box("Create a new file or folder", 900)
        x0, x1 = panel.bounds[0] + 60, panel.bounds[2] - 60
        panel.add(ui.field("name", (x0, y, x1 - 260, y + 150), hint="Name"))
        panel.add(ui.field("ext", (x1 - 240, y, x1, y + 150), hint="Extension"))
        y += 180
        panel.add(ui.text("Type", (x0, y, x0 + 200, y + 80), size=34, fg=GREY))
        y += 80
        cw = (x1 - x0) // len(FILE_TYPES)
        for i, (label, ext) in enumerate(FILE_TYPES):
            def pick(lb=label, ex=ext) -> None:
                self.kind = lb
                self.fields["ext"] = ex

            on = self.kind == label
            panel.add(Node(w.TEXT, text=label, bounds=(x0 + i * cw + 6, y, x0 + (i + 1) * cw - 6, y + 110),
                           clickable=True, on_click=pick, selected=on, checkable=True, checked=on, radius=20,
                           bg=(210, 227, 252) if on else None, border=ACCENT if on else LIGHT, align="center",
                           size=34, rid=f"{PKG}:id/type_{ext.strip('.').replace('.', '_')}"))

        def create_file() -> None:
            name = self.field("name").strip()
            if not name or "/" in name:
                ui.toast("Please enter a name")
                return
            path = f"{self.folder}/{with_extension(name, self.field('ext').strip())}"
            if dev.exists(path):
                ui.toast("File already exists")
                return
            dev.write_file(path, "")
            ui.pop()
            ui.push(EditorScreen(path))

        def create_folder() -> None:
            name = self.field("name").strip()
            if not name or "/" in name:
                ui.toast("Please enter a name")
                return
            path = f"{self.folder}/{name}"
            if dev.exists(path):
                ui.toast("Folder already exists")
                return
            dev.mkdir(path)
            ui.pop()

        ui.dialog_buttons(panel, [("Cancel", ui.pop), ("Folder", create_folder), ("OK", create_file)])
        return [panel]


class EditorScreen(Screen):
    """A note open for editing (or viewing). Text reaches the file on back, Save or rename."""

    def __init__(self, path: str):
        super().__init__()
        self.path = path
        self.loaded = False
        self.preview = False
        self.top = 0  # first line shown of a note longer than the page

    def load(self, dev: DeviceState) -> None:
        if not self.loaded:
            self.fields[EDITOR_KEY] = dev.read_file(self.path) or ""
            self.loaded = True

    def save(self, dev: DeviceState) -> None:
        if not self.loaded:
            return
        text = self.field(EDITOR_KEY)
        current = dev.read_file(self.path)
        if current is None and not text:
            return  # an untouched To-Do/QuickNote page is not written
        if text != current:
            dev.write_file(self.path, text)

    def back(self, ui: UI) -> bool:
        if self.paste_for is not None:  # Back first dismisses the Paste toolbar
            self.paste_for = None
            return True
        self.save(ui.dev)
        return False

    def changed(self, ui: UI, key: str) -> None:
        self.paste_for = None

    def build(self, ui: UI) -> list[Node]:
        dev = ui.dev
        self.load(dev)

        def up() -> None:
            self.save(dev)
            ui.pop()

        def save() -> None:
            self.save(dev)
            ui.unfocus()
            ui.toast("Saved")

        def toggle_preview() -> None:
            self.save(dev)
            self.preview = not self.preview
            ui.unfocus()

        bar = ui.app_bar(posixpath.basename(self.path), actions=[
            ("Save", "check", save),
            ("Edit" if self.preview else "View", "edit" if self.preview else "view", toggle_preview),
            ("More options", "more", lambda: ui.push(EditorMenu(self))),
        ])
        bar.children[0].on_click = up
        title = bar.children[1]
        title.clickable = True
        title.on_click = lambda: ui.push(RenameDialog(self.path, editor=self))
        y = ui.below_bar()
        if self.preview:
            text = self.field(EDITOR_KEY)
            body = ui.text(text or None, (PAD, y + 24, SCREEN_W - PAD, ui.bottom - 24), size=42, lines=40,
                           rid=f"{PKG}:id/document__fragment_view_webview")
            return [bar, self.scrolling(body)]
        field = ui.field(EDITOR_KEY, (0, y, SCREEN_W, ui.bottom), hint="", multiline=True)
        field.border = None
        field.hint = None
        make_pasteable(self, EDITOR_KEY, field)
        popup = ui.paste_popup(EDITOR_KEY, field)
        return [bar, self.scrolling(field)] + ([popup] if popup is not None else [])

    def scrolling(self, node: Node) -> Node:
        """A note longer than the rows `node` shows scrolls, half a page a swipe. Its accessibility text stays
        whole (as an EditText's does); the drawing starts at the first line shown."""
        lines = (node.text or "").split("\n")
        if sum(1 + len(ln) // ROW_CHARS for ln in lines) <= node.lines:
            self.top = 0
            return node
        step = node.lines // 2
        last = max(0, len(lines) - step)
        self.top = min(self.top, last)

        def on_scroll(direction: str) -> None:
            if direction in ("down", "up"):
                self.top = min(last, self.top + step) if direction == "down" else max(0, self.top - step)

        node.scrollable = True
        node.on_scroll = on_scroll
        if self.top:
            node.shown = "\n".join(lines[self.top :])
        return node


class EditorMenu(Screen):
    modal = True

    def __init__(self, editor: EditorScreen):
        super().__init__()
        self.editor = editor

    def build(self, ui: UI) -> list[Node]:
        ed = self.editor

        def rename() -> None:
            ui.pop()
            ui.push(RenameDialog(ed.path, editor=ed))

        def info() -> None:
            ui.pop()
            text = ed.field(EDITOR_KEY)
            ui.toast(f"{len(text.split())} words · {len(text)} characters")

        return [_menu(ui, [("Rename", rename), ("Info", info)], rid="editor_menu")]


@register_app
class Markor(App):
    package = PKG
    name = "Markor"
    aliases = r"markor"
    color = (56, 142, 60)

    def main(self, dev: DeviceState) -> Screen:
        return NotebookScreen()

    def setup(self, dev: DeviceState) -> None:
        dev.mkdir(MARKOR_DIR)

