"""Files (com.google.android.documentsui): Android's file manager over /storage/emulated/0.

It opens on Recent; the roots drawer ("Show roots") leads to Downloads, the type filters and the storage root
(the device's name). Folders open on tap and a breadcrumb shows the path; long-press selects; the selection
toolbar deletes (with a confirmation) and its "More options" menu offers "Move to…" / "Copy to…", which open
a folder picker whose bottom bar confirms with "Move" / "Copy".
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable

from voyager_gym.backends.sim import widgets as w
from voyager_gym.backends.sim.apps import chrome
from voyager_gym.backends.sim.apps.markor import fmt_time, move_path, mtime_ms, size_str
from voyager_gym.backends.sim.device import SDCARD, DeviceState
from voyager_gym.backends.sim.ui import GREY, LIGHT, PAD, ROW2_H, ROW_H, UI, WHITE, App, Screen, register_app
from voyager_gym.backends.sim.widgets import SCREEN_W, Node

PKG = "com.google.android.documentsui"
DEVICE_ROOT = "sdk_gphone64_x86_64"
CRUMB_H = 110
ROOTS = (  # label, icon, kind
    ("Recent", "recent", "recent"),
    ("Images", "image", "images"),
    ("Videos", "video", "videos"),
    ("Audio", "audio", "audio"),
    ("Documents", "file", "documents"),
    ("Downloads", "download", "downloads"),
    (DEVICE_ROOT, "storage", "storage"),
)
TYPE_EXTS = {
    "images": (".jpg", ".jpeg", ".png", ".gif", ".webp"),
    "videos": (".mp4", ".mkv", ".3gp", ".webm"),
    "audio": (".mp3", ".m4a", ".wav", ".ogg", ".flac"),
    "documents": (".pdf", ".txt", ".md", ".doc", ".docx", ".csv"),
}


def _icon_for(name: str, folder: bool) -> str:
    if folder:
        return "folder"
    ext = posixpath.splitext(name)[1].lower()
    for kind, exts in TYPE_EXTS.items():
        if ext in exts:
            return {"images": "image", "videos": "video", "audio": "audio"}.get(kind, "file")
    return "file"


def _label(path: str) -> str:
    return DEVICE_ROOT if path == SDCARD else posixpath.basename(path)


def _toolbar(ui: UI, title: str, lead: tuple[str, str, Callable[[], object]],
             actions: list[tuple[str, str, Callable[[], object] | None]]) -> Node:
    """The app bar with a custom leading button (the roots drawer, or close-selection)."""
    bar = ui.app_bar(title, back=True, actions=actions)
    btn = bar.children[0]
    btn.desc, btn.icon, btn.on_click = lead
    return bar


def _popup(ui: UI, items: list[tuple[str, Callable[[], object]]]) -> Node:
    y0 = ui.top + 24
    panel = Node(w.FRAME, bounds=(SCREEN_W - 560, y0, SCREEN_W - 24, y0 + 40 + 150 * len(items)), bg=WHITE,
                 radius=16, border=LIGHT, absorb=True, a11y=False, rid=f"{PKG}:id/popup")
    for i, (label, handler) in enumerate(items):
        y = y0 + 20 + 150 * i
        panel.add(Node(w.TEXT, text=label, bounds=(SCREEN_W - 560, y, SCREEN_W - 24, y + 150), clickable=True,
                       on_click=handler, pad=48, size=44, rid=f"{PKG}:id/title"))
    return panel


def _crumbs(ui: UI, path: str, y: int, on_pick: Callable[[str], None]) -> Node:
    """The breadcrumb row: each ancestor folder is a tappable crumb."""
    row = Node(w.LINEAR, bounds=(0, y, SCREEN_W, y + CRUMB_H), bg=(248, 249, 250), a11y=False,
               rid=f"{PKG}:id/breadcrumb")
    parts = [SDCARD]
    for seg in path[len(SDCARD):].strip("/").split("/"):
        if seg:
            parts.append(f"{parts[-1]}/{seg}")
    x = PAD
    shown = parts[-3:]
    for i, p in enumerate(shown):
        label = _label(p)
        wdt = min(560, 40 + 22 * len(label))
        last = i == len(shown) - 1
        row.add(Node(w.TEXT, text=label, bounds=(x, y, x + wdt, y + CRUMB_H), clickable=True,
                     on_click=(lambda p=p: on_pick(p)), size=34, bold=last,
                     fg=(26, 115, 232) if last else GREY, rid=f"{PKG}:id/breadcrumb_text"))
        x += wdt
        if not last:
            row.add(Node(w.TEXT, text="›", bounds=(x, y, x + 40, y + CRUMB_H), size=34, fg=GREY, a11y=False))
            x += 40
    return row


class BrowseScreen(Screen):
    """One root (Recent, a type filter, Downloads) or one folder of the storage root."""

    def __init__(self, kind: str = "recent", path: str | None = None):
        super().__init__()
        self.kind = kind
        self.path = path
        self.selected: list[str] = []

    @property
    def is_folder(self) -> bool:
        return self.path is not None

    def title(self) -> str:
        if self.path is None:
            return next(lb for lb, _, k in ROOTS if k == self.kind)
        if self.kind == "downloads" and self.path == f"{SDCARD}/Download":
            return "Downloads"
        return _label(self.path)

    def entries(self, dev: DeviceState) -> list[tuple[str, bool]]:
        if self.path is not None:
            dirs, files = dev.listdir(self.path)
            return [(f"{self.path}/{d}", True) for d in sorted(dirs, key=str.lower)] + \
                [(f"{self.path}/{f}", False) for f in sorted(files, key=str.lower)]
        files = list(dev.files)
        if self.kind in TYPE_EXTS:
            files = [f for f in files if f.lower().endswith(TYPE_EXTS[self.kind])]
        files = [f for f in files if "/Android/" not in f]
        files.sort(key=lambda f: (-dev.files[f].mtime_ms, posixpath.basename(f).lower()))
        return [(f, False) for f in files]

    def back(self, ui: UI) -> bool:
        if self.selected:
            self.selected = []
            return True
        return False

    def open_folder(self, ui: UI, path: str) -> None:
        ui.push(BrowseScreen("storage" if self.kind != "downloads" else "downloads", path))

    def jump(self, ui: UI, path: str) -> None:
        """Breadcrumb: pop back to the screen showing `path` (or open it from the storage root)."""
        st = ui.phone.stack(PKG)
        for i in range(len(st) - 1, -1, -1):
            s = st[i]
            if isinstance(s, BrowseScreen) and s.path == path:
                del st[i + 1:]
                return
        st[:] = [BrowseScreen("storage", path)]

    def build(self, ui: UI) -> list[Node]:
        dev = ui.dev
        self.selected = [p for p in self.selected if dev.exists(p)]
        if self.selected:
            lead = ("Clear selection", "close", self.selected.clear)
            bar = _toolbar(ui, f"{len(self.selected)} selected", lead,
                           [("Share", "share", lambda: ui.toast("Sharing is not available")),
                            ("Delete", "delete", lambda: ui.push(ConfirmDelete(self))),
                            ("More options", "more", lambda: ui.push(SelectionMenu(self)))])
        else:
            bar = _toolbar(ui, self.title(), ("Show roots", "menu", lambda: ui.push(RootsDrawer())),
                           [("Search", "search", lambda: ui.toast("Search is not available")),
                            ("More options", "more", lambda: ui.push(BrowseMenu(self)))])
        out = [bar]
        y = ui.below_bar()
        if self.path is not None:
            out.append(_crumbs(ui, self.path, y, lambda p: self.jump(ui, p)))
            y += CRUMB_H
        rows = [(ROW2_H, lambda b, p=p, f=f: self._row(ui, p, f, b)) for p, f in self.entries(dev)]
        out.append(ui.list("dir_list", rows, y0=y, empty="No items"))
        return out

    def _row(self, ui: UI, path: str, folder: bool, b: w.Bounds) -> Node:
        dev = ui.dev
        name = posixpath.basename(path)
        date = fmt_time(mtime_ms(dev, path), "%b %-d, %Y")
        sub = date if folder else f"{size_str(len(dev.files[path].content.encode()))}, {date}"

        def click() -> None:
            if self.selected:
                self.toggle(path)
            elif folder:
                self.open_folder(ui, path)
            elif name.lower().endswith((".html", ".htm")):
                ui.push(OpenWith(path))
            else:
                ui.toast(f"No app can open {name}")

        return ui.item(name, b, on_click=click, on_long_click=lambda: self.toggle(path), subtitle=sub,
                       icon=_icon_for(name, folder), selected=path in self.selected, rid="android:id/title")

    def toggle(self, path: str) -> None:
        if path in self.selected:
            self.selected.remove(path)
        else:
            self.selected.append(path)


class OpenWith(Screen):
    """Android's app chooser for a web page: "Open with" and the one browser, Chrome."""

    modal = True

    def __init__(self, path: str):
        super().__init__()
        self.path = path

    def build(self, ui: UI) -> list[Node]:
        y0 = ui.bottom - 460
        sheet = Node(w.FRAME, bounds=(0, y0, SCREEN_W, ui.bottom), bg=WHITE, absorb=True, a11y=False,
                     rid="android:id/resolver_list")
        sheet.add(ui.text("Open with", (PAD, y0 + 40, SCREEN_W - PAD, y0 + 140), size=48, bold=True,
                          rid="android:id/title"))

        def pick() -> None:
            ui.pop()
            chrome.open_file(ui, self.path)

        sheet.add(ui.item("Chrome", (0, y0 + 180, SCREEN_W, y0 + 180 + ROW_H), on_click=pick, icon="app:C",
                          rid="android:id/text1"))
        return [sheet]


class RootsDrawer(Screen):
    """The navigation drawer listing the roots."""

    modal = True

    def build(self, ui: UI) -> list[Node]:
        panel = Node(w.FRAME, bounds=(0, ui.top, 820, ui.bottom), bg=WHITE, absorb=True, a11y=False,
                     rid=f"{PKG}:id/drawer_roots")
        panel.add(ui.text("Files", (PAD, ui.top + 40, 780, ui.top + 160), size=56, bold=True))
        y = ui.top + 200

        def pick(kind: str) -> Callable[[], None]:
            def f() -> None:
                path = {"storage": SDCARD, "downloads": f"{SDCARD}/Download"}.get(kind)
                ui.phone.stack(PKG)[:] = [BrowseScreen(kind, path)]
            return f

        for label, icon, kind in ROOTS:
            h = ROW2_H if kind == "storage" else ROW_H
            sub = "21.19 GB free" if kind == "storage" else None
            if kind == "storage":
                panel.add(Node(w.VIEW, bounds=(0, y + 10, 820, y + 14), bg=LIGHT, a11y=False))
                y += 24
            panel.add(ui.item(label, (0, y, 820, y + h), on_click=pick(kind), icon=icon, subtitle=sub,
                              rid="android:id/title"))
            y += h
        return [panel]


class _OverBrowse(Screen):
    """A menu or dialog over a BrowseScreen (its `owner`)."""

    modal = True

    def __init__(self, owner: BrowseScreen):
        super().__init__()
        self.owner = owner

    def select_all(self, ui: UI) -> None:
        """Select every entry the owner lists and close this menu."""
        self.owner.selected = [p for p, _ in self.owner.entries(ui.dev)]
        ui.pop()


class BrowseMenu(_OverBrowse):
    def build(self, ui: UI) -> list[Node]:
        owner = self.owner

        def new_folder() -> None:
            ui.pop()
            ui.push(NewFolderDialog(owner.path or SDCARD))

        items = [("Select all", lambda: self.select_all(ui))]
        if owner.is_folder:
            items.insert(0, ("New folder", new_folder))
        return [_popup(ui, items)]


class SelectionMenu(_OverBrowse):
    def build(self, ui: UI) -> list[Node]:
        owner = self.owner

        def picker(mode: str) -> Callable[[], None]:
            def f() -> None:
                ui.pop()
                ui.push(PickerScreen(mode, owner))
            return f

        items = [("Select all", lambda: self.select_all(ui)), ("Copy to…", picker("copy"))]
        if owner.is_folder:  # Recent and the type filters cannot move (no parent folder)
            items.append(("Move to…", picker("move")))
        return [_popup(ui, items)]


class ConfirmDelete(_OverBrowse):
    def build(self, ui: UI) -> list[Node]:
        sel = self.owner.selected
        one = f"Delete \u201c{posixpath.basename(sel[0])}\u201d?" if sel else ""
        msg = one if len(sel) == 1 else f"Delete {len(sel)} items?"
        panel, _ = ui.dialog_box(None, 420, msg)

        def ok() -> None:
            n = len(sel)
            for p in list(sel):
                ui.dev.remove(p)
            self.owner.selected = []
            ui.pop()
            ui.toast(f"Deleted {n} item{'s' if n != 1 else ''}")

        ui.dialog_buttons(panel, [("Cancel", ui.pop), ("OK", ok)])
        return [panel]


class NewFolderDialog(Screen):
    modal = True

    def __init__(self, folder: str):
        super().__init__()
        self.folder = folder

    def submit(self, ui: UI, key: str) -> None:
        self.ok(ui)

    def ok(self, ui: UI) -> None:
        name = self.field("name").strip()
        if not name or "/" in name or ui.dev.exists(f"{self.folder}/{name}"):
            ui.toast("Can't create folder")
            return
        ui.dev.mkdir(f"{self.folder}/{name}")
        ui.unfocus()
        ui.pop()

    def build(self, ui: UI) -> list[Node]:
        panel, y = ui.dialog_box("New folder", 520)
        x0, x1 = panel.bounds[0] + 60, panel.bounds[2] - 60
        panel.add(ui.field("name", (x0, y, x1, y + 150), hint="Folder name"))
        ui.dialog_buttons(panel, [("Cancel", ui.pop), ("OK", lambda: self.ok(ui))])
        return [panel]


class PickerScreen(Screen):
    """The "Move to…" / "Copy to…" destination picker: folders only, confirmed from the bottom bar."""

    def __init__(self, mode: str, owner: BrowseScreen):
        super().__init__()
        self.mode = mode
        self.owner = owner
        self.path = SDCARD

    def go(self, path: str) -> None:
        self.path = path
        self.scroll.pop("picker_list", None)

    def back(self, ui: UI) -> bool:
        if self.path != SDCARD:
            self.go(posixpath.dirname(self.path))
            return True
        return False

    def confirm(self, ui: UI) -> None:
        dev = ui.dev
        done = 0
        for p in list(self.owner.selected):
            target = f"{self.path}/{posixpath.basename(p)}"
            if posixpath.dirname(p) == self.path or self.path == p or self.path.startswith(p + "/"):
                ui.toast("Can't move a file into the folder it is in")
                continue
            if dev.exists(target):
                ui.toast(f"{posixpath.basename(p)} already exists here")
                continue
            if self.mode == "move":
                move_path(dev, p, self.path)
            elif p in dev.files:
                dev.write_file(target, dev.files[p].content)
            done += 1
        self.owner.selected = []
        ui.pop()
        if done:
            verb = "Moved" if self.mode == "move" else "Copied"
            ui.toast(f"{verb} {done} item{'s' if done != 1 else ''}")

    def build(self, ui: UI) -> list[Node]:
        dev = ui.dev
        bar = _toolbar(ui, _label(self.path), ("Navigate up", "back",
                                               lambda: self.back(ui) or ui.pop()), [])
        y = ui.below_bar()
        out = [bar, _crumbs(ui, self.path, y, self.go)]
        y += CRUMB_H
        dirs, files = dev.listdir(self.path)
        rows: list[tuple[int, Callable[[w.Bounds], Node]]] = []
        for d in sorted(dirs, key=str.lower):
            p = f"{self.path}/{d}"
            rows.append((ROW_H, lambda b, p=p, d=d: ui.item(d, b, icon="folder", on_click=lambda: self.go(p),
                                                            rid="android:id/title")))
        for f in sorted(files, key=str.lower):
            def row(b: w.Bounds, f=f) -> Node:
                n = ui.item(f, b, icon=_icon_for(f, False), rid="android:id/title")
                for c in n.walk():
                    c.enabled = False
                    c.fg = (189, 193, 198)
                return n
            rows.append((ROW_H, row))
        bottom_h = 200
        out.append(ui.list("picker_list", rows, y0=y, y1=ui.bottom - bottom_h, empty="No items"))
        bb = Node(w.LINEAR, bounds=(0, ui.bottom - bottom_h, SCREEN_W, ui.bottom), bg=(241, 243, 244),
                  a11y=False, rid=f"{PKG}:id/container_save")
        verb = "Move" if self.mode == "move" else "Copy"
        bb.add(ui.button("Cancel", (SCREEN_W - 660, ui.bottom - 160, SCREEN_W - 360, ui.bottom - 40), ui.pop,
                         style="text", rid="android:id/button2"))
        bb.add(ui.button(verb, (SCREEN_W - 330, ui.bottom - 160, SCREEN_W - PAD, ui.bottom - 40),
                         lambda: self.confirm(ui), rid="android:id/button1"))
        out.append(bb)
        return out


@register_app
class Files(App):
    package = PKG
    name = "Files"
    aliases = r"files"
    color = (25, 103, 210)

    def main(self, dev: DeviceState) -> Screen:
        return BrowseScreen("recent")
