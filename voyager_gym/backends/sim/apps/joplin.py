"""Joplin (net.cozic.joplin): notebooks in a side menu, a note list with to-do checkboxes, search, a viewer.

Data: `dev.table("joplin_folders")` rows {id, title} and `dev.table("joplin_notes")` rows {id, folder, title,
body, is_todo, todo_completed, updated_ms}, as Joplin's `folders` and `notes` tables hold them.
"""

from __future__ import annotations

from typing import Any

from voyager_gym.backends.sim import widgets as w
from voyager_gym.backends.sim.device import DeviceState
from voyager_gym.backends.sim.ui import GREY, HINT, INK, LIGHT, PAD, UI, WHITE, App, Screen, register_app
from voyager_gym.backends.sim.widgets import APPBAR_H, SCREEN_W, Node

PKG = "net.cozic.joplin"
NOTES, FOLDERS = "joplin_notes", "joplin_folders"
COLOR = (49, 61, 90)
NOTE_ROW_H = 140
ALL_NOTES = "All notes"
FOOTER_H = 220  # empty space under the last note, so the FAB never hides it


def notes_in(dev: DeviceState, folder: str | None) -> list[dict[str, Any]]:
    """Notes of a notebook (None: all notes), newest first, as Joplin's list sorts them by default."""
    rows = [n for n in dev.table(NOTES) if folder is None or n["folder"] == folder]
    return sorted(rows, key=lambda n: (-n.get("updated_ms", 0), n["id"]))


def add_note(
    dev: DeviceState,
    folder: str,
    title: str,
    body: str,
    is_todo: bool = False,
    completed: bool = False,
    updated_ms: int | None = None,
) -> dict[str, Any]:
    """Insert a note (creating its notebook if needed) and return the row."""
    if not any(f["title"] == folder for f in dev.table(FOLDERS)):
        dev.table(FOLDERS).append({"id": dev.new_id(), "title": folder})
    row = {
        "id": dev.new_id(),
        "folder": folder,
        "title": title,
        "body": body,
        "is_todo": int(is_todo),
        "todo_completed": int(completed),
        "updated_ms": dev.time_ms if updated_ms is None else updated_ms,
    }
    dev.table(NOTES).append(row)
    return row


def toolbar(ui: UI, title: str, left: Node, actions: list[tuple[str, str, Any]]) -> Node:
    """Joplin's dark header: a left button (menu or back), the title, icon actions at the right."""
    y0, y1 = ui.top, ui.top + APPBAR_H
    bar = Node(w.VIEW_GROUP, bounds=(0, y0, SCREEN_W, y1), bg=COLOR)
    bar.add(left)
    xr = SCREEN_W - 24
    for desc, icon, handler in reversed(actions):
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
    bar.add(
        Node(w.TEXT, text=title, bounds=(168, y0, xr, y1), size=52, fg=WHITE, rid=f"{PKG}:id/toolbar_title")
    )
    return bar


def back_button(ui: UI) -> Node:
    return Node(
        w.IMAGE_BUTTON,
        desc="Back",
        bounds=(24, ui.top + 24, 144, ui.top + APPBAR_H - 24),
        clickable=True,
        icon="back",
        icon_fg=WHITE,
        on_click=ui.pop,
    )


def todo_checkbox(dev: DeviceState, note: dict[str, Any], bounds: w.Bounds) -> Node:
    """A to-do's checkbox: tapping it toggles completion and stamps the note as updated."""

    def toggle() -> None:
        note["todo_completed"] = 0 if note["todo_completed"] else 1
        note["updated_ms"] = dev.time_ms

    return Node(
        w.CHECKBOX,
        bounds=bounds,
        checkable=True,
        checked=bool(note["todo_completed"]),
        clickable=True,
        on_click=toggle,
        icon="check_on" if note["todo_completed"] else "check_off",
        icon_fg=COLOR,
    )


def note_row(ui: UI, note: dict[str, Any], b: w.Bounds) -> Node:
    """A note list item: a checkbox for to-dos, then the title (struck through grey when completed)."""
    x0, y0, x1, y1 = b
    row = Node(
        w.VIEW_GROUP, bounds=b, clickable=True, border=LIGHT, on_click=lambda: ui.push(NoteScreen(note["id"]))
    )
    tx = x0 + PAD
    if note["is_todo"]:
        mid = (y0 + y1) // 2
        row.add(todo_checkbox(ui.dev, note, (x0 + 30, mid - 50, x0 + 130, mid + 50)))
        tx = x0 + 150
    done = note["is_todo"] and note["todo_completed"]
    row.add(
        Node(w.TEXT, text=note["title"], bounds=(tx, y0, x1 - PAD, y1), size=42, fg=HINT if done else INK)
    )
    return row


def note_list(ui: UI, key: str, notes: list[dict[str, Any]], y0: int | None = None, empty: str = "") -> Node:
    rows = [(NOTE_ROW_H, (lambda b, n=n: note_row(ui, n, b))) for n in notes]
    if rows:
        rows.append((FOOTER_H, lambda b: Node(w.VIEW, bounds=b, a11y=False)))
    return ui.list(key, rows, y0=y0, empty=empty)


class NotesScreen(Screen):
    """The main screen: the notes of the selected notebook (or all notes)."""

    def __init__(self, folder: str | None = None):
        super().__init__()
        self.folder = folder
        self.fab_open = False

    def build(self, ui: UI) -> list[Node]:
        menu = Node(
            w.IMAGE_BUTTON,
            desc="Side menu",
            bounds=(24, ui.top + 24, 144, ui.top + APPBAR_H - 24),
            clickable=True,
            icon="menu",
            icon_fg=WHITE,
            on_click=lambda: ui.push(SideMenu()),
        )
        out = [
            toolbar(
                ui,
                self.folder or ALL_NOTES,
                menu,
                [("Search", "search", lambda: ui.push(SearchScreen())), ("Options", "more", lambda: None)],
            )
        ]
        out.append(
            note_list(
                ui,
                "notes",
                notes_in(ui.dev, self.folder),
                empty="There are currently no notes. Create one by clicking on the (+) button.",
            )
        )
        if self.fab_open:
            for i, (label, todo) in enumerate((("New to-do", True), ("New note", False))):
                y1 = ui.bottom - 290 - i * 170
                out.append(
                    Node(
                        w.BUTTON,
                        text=label,
                        bounds=(SCREEN_W - 520, y1 - 130, SCREEN_W - 60, y1),
                        clickable=True,
                        bg=WHITE,
                        border=LIGHT,
                        radius=30,
                        align="center",
                        size=40,
                        on_click=(lambda t=todo: self._new(ui, t)),
                    )
                )

        def toggle_fab() -> None:
            self.fab_open = not self.fab_open

        out.append(ui.fab("Add new", toggle_fab, icon="close" if self.fab_open else "add"))
        return out

    def _new(self, ui: UI, todo: bool) -> None:
        self.fab_open = False
        ui.push(EditNoteScreen(None, self.folder or _default_folder(ui.dev), todo))

    def back(self, ui: UI) -> bool:
        if self.fab_open:
            self.fab_open = False
            return True
        return False


def _default_folder(dev: DeviceState) -> str:
    folders = sorted(f["title"] for f in dev.table(FOLDERS))
    if not folders:
        dev.table(FOLDERS).append({"id": dev.new_id(), "title": "Notebook"})
        return "Notebook"
    return folders[0]


class SideMenu(Screen):
    """The drawer: All notes, then every notebook (alphabetical); tapping one shows its notes."""

    modal = True

    def build(self, ui: UI) -> list[Node]:
        panel_r = SCREEN_W - 220
        panel = Node(w.FRAME, bounds=(0, ui.top, panel_r, ui.bottom), bg=(38, 48, 72), absorb=True)
        folders = sorted((f["title"] for f in ui.dev.table(FOLDERS)), key=str.lower)

        def pick(folder: str | None) -> None:
            st = ui.phone.stack(PKG)
            base = next(s for s in reversed(st) if isinstance(s, NotesScreen))
            base.folder = folder
            base.scroll.clear()
            ui.pop()

        def row(label: str, folder: str | None, icon: str, b: w.Bounds) -> Node:
            return Node(
                w.TEXT,
                text=label,
                bounds=b,
                clickable=True,
                on_click=lambda: pick(folder),
                icon=icon,
                icon_fg=WHITE,
                fg=WHITE,
                size=42,
                pad=40,
            )

        rows = [
            (150, lambda b: row(ALL_NOTES, None, "file", b)),
            (
                110,
                lambda b: Node(
                    w.TEXT,
                    text="NOTEBOOKS",
                    bounds=(b[0] + 40, b[1], b[2], b[3]),
                    size=34,
                    fg=(180, 190, 210),
                    bold=True,
                ),
            ),
        ]
        rows += [(130, (lambda b, f=f: row(f, f, "folder", b))) for f in folders]
        panel.add(ui.list("menu", rows, y0=ui.top + 40, y1=ui.bottom - 170, x1=panel_r))
        panel.add(
            Node(
                w.TEXT,
                text="Configuration",
                bounds=(0, ui.bottom - 160, panel_r, ui.bottom - 30),
                clickable=True,
                on_click=lambda: ui.toast("Configuration"),
                icon="more",
                icon_fg=WHITE,
                fg=WHITE,
                size=40,
                pad=40,
            )
        )
        return [panel]


class SearchScreen(Screen):
    """Full-text search over titles and bodies; title matches are listed first."""

    def __init__(self) -> None:
        super().__init__()
        self.focus = "query"

    def build(self, ui: UI) -> list[Node]:
        y = ui.below_bar()
        out = [toolbar(ui, "Search", back_button(ui), [])]
        out.append(ui.field("query", (PAD, y + 24, SCREEN_W - PAD, y + 164), hint="Search..."))
        q = self.field("query").strip().lower()
        results: list[dict[str, Any]] = []
        if q:
            notes = notes_in(ui.dev, None)
            results = [n for n in notes if q in n["title"].lower()]
            results += [n for n in notes if q not in n["title"].lower() and q in n["body"].lower()]
        out.append(note_list(ui, "results", results, y0=y + 190, empty="No results" if q else ""))
        return out


def _body_lines(body: str) -> list[tuple[str, bool]]:
    """Rendered markdown: (text, is_bullet) per non-empty line; '- ' list markers become bullets."""
    out = []
    for line in body.replace("\r", "").split("\n"):
        s = line.strip()
        if not s:
            continue
        if s.startswith(("- ", "* ")):
            out.append((s[2:].strip(), True))
        else:
            out.append((s, False))
    return out


def _line_h(text: str, indent: bool) -> tuple[int, int]:
    per_line = 44 if indent else 47
    n = max(1, -(-len(text) // per_line))
    return n, 30 + 62 * n


class NoteScreen(Screen):
    """The note viewer: title, a completion checkbox for to-dos, and the rendered body."""

    def __init__(self, note_id: int):
        super().__init__()
        self.note_id = note_id

    def build(self, ui: UI) -> list[Node]:
        note = next((n for n in ui.dev.table(NOTES) if n["id"] == self.note_id), None)
        if note is None:
            return [
                toolbar(ui, "", back_button(ui), []),
                ui.text("This note has been deleted.", (PAD, 400, SCREEN_W - PAD, 500), fg=GREY),
            ]

        def delete() -> None:
            ui.push(ConfirmDelete(self.note_id))

        out = [
            toolbar(
                ui,
                note["folder"],
                back_button(ui),
                [
                    (
                        "Edit",
                        "edit",
                        lambda: ui.push(EditNoteScreen(note["id"], note["folder"], bool(note["is_todo"]))),
                    ),
                    ("Delete", "delete", delete),
                ],
            )
        ]
        y = ui.below_bar() + 30
        tx = PAD
        if note["is_todo"]:
            out.append(todo_checkbox(ui.dev, note, (PAD - 10, y + 10, PAD + 90, y + 110)))
            tx = PAD + 110
        out.append(
            Node(
                w.TEXT,
                text=note["title"],
                bounds=(tx, y, SCREEN_W - PAD, y + 120),
                size=54,
                bold=True,
                lines=2,
            )
        )
        y += 150
        rows = []
        for text, bullet in _body_lines(note["body"]):
            n, h = _line_h(text, bullet)

            def make(b: w.Bounds, text=text, bullet=bullet, n=n) -> Node:
                x0 = b[0] + PAD + (50 if bullet else 0)
                node = Node(
                    w.TEXT, text=text, bounds=(x0, b[1] + 15, b[2] - PAD, b[3] - 15), size=40, lines=n
                )
                if not bullet:
                    return node
                holder = Node(w.FRAME, bounds=b, a11y=False)
                holder.add(
                    Node(
                        w.VIEW,
                        bounds=(b[0] + PAD + 8, b[1] + 40, b[0] + PAD + 24, b[1] + 56),
                        bg=INK,
                        radius=8,
                        a11y=False,
                    ),
                    node,
                )
                return holder

            rows.append((h, make))
        out.append(ui.list("body", rows, y0=y))
        return out


class ConfirmDelete(Screen):
    modal = True

    def __init__(self, note_id: int):
        super().__init__()
        self.note_id = note_id

    def build(self, ui: UI) -> list[Node]:
        panel, _ = ui.dialog_box("Delete note?", 360, "Delete this note?")

        def ok() -> None:
            tbl = ui.dev.table(NOTES)
            tbl[:] = [n for n in tbl if n["id"] != self.note_id]
            ui.pop()
            ui.pop()

        ui.dialog_buttons(panel, [("Cancel", ui.pop), ("OK", ok)])
        return [panel]


class EditNoteScreen(Screen):
    """Note editor: title and body fields; going back saves (Joplin saves automatically)."""

    def __init__(self, note_id: int | None, folder: str, todo: bool):
        super().__init__()
        self.note_id = note_id
        self.folder = folder
        self.todo = todo
        self.loaded = False
        self.focus = "title" if note_id is None else None

    def build(self, ui: UI) -> list[Node]:
        if not self.loaded and self.note_id is not None:
            note = next((n for n in ui.dev.table(NOTES) if n["id"] == self.note_id), None)
            if note is not None:
                self.fields = {"title": note["title"], "body": note["body"]}
        self.loaded = True
        y = ui.below_bar()
        save = ("Save", "check", lambda: self._save(ui))
        return [
            toolbar(
                ui,
                self.folder,
                Node(
                    w.IMAGE_BUTTON,
                    desc="Back",
                    icon="back",
                    icon_fg=WHITE,
                    bounds=(24, ui.top + 24, 144, ui.top + APPBAR_H - 24),
                    clickable=True,
                    on_click=lambda: self._save(ui),
                ),
                [save],
            ),
            ui.field("title", (PAD, y + 30, SCREEN_W - PAD, y + 170), hint="Add title"),
            ui.field(
                "body", (PAD, y + 200, SCREEN_W - PAD, ui.bottom - 40), hint="Your note...", multiline=True
            ),
        ]

    def _save(self, ui: UI) -> None:
        title, body = self.field("title").strip(), self.field("body")
        if self.note_id is None:
            if title or body.strip():
                add_note(ui.dev, self.folder, title or "Untitled", body, self.todo)
        else:
            for n in ui.dev.table(NOTES):
                if n["id"] == self.note_id and (n["title"], n["body"]) != (title, body):
                    n.update(title=title, body=body, updated_ms=ui.dev.time_ms)
        ui.pop()

    def back(self, ui: UI) -> bool:
        self._save(ui)
        return True


@register_app
class Joplin(App):
    package = PKG
    name = "Joplin"
    aliases = r"joplin|joplin app"
    color = COLOR

    def main(self, dev: DeviceState) -> Screen:
        return NotesScreen()
