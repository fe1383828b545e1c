"""Contacts (com.google.android.contacts): a searchable alphabetical list, a contact editor, a detail screen.

Contacts live in the device's contacts provider, `dev.contacts`: one dict per contact with id, first, last,
name (the display name), phone, label, company and email. The editor keeps its draft in its Screen fields, so
a task that checks an unsaved draft (ContactsNewContactDraft) reads the editor on `dev.stacks`.
"""

from __future__ import annotations

from typing import Any

from voyager_gym.backends.sim import widgets as w
from voyager_gym.backends.sim.device import DeviceState
from voyager_gym.backends.sim.ui import (
    ACCENT,
    APPBAR_H,
    GREY,
    HINT,
    LIGHT,
    PAD,
    ROW_H,
    UI,
    WHITE,
    App,
    Screen,
    register_app,
)
from voyager_gym.backends.sim.widgets import SCREEN_W, Node

PKG = "com.google.android.contacts"
PHONE_LABELS = ("Mobile", "Work", "Home", "Main", "Work Fax", "Home Fax", "Pager", "Other")
FIELD_KEYS = ("first", "last", "company", "phone", "email")
FIELD_HINTS = {"first": "First name", "last": "Last name", "company": "Company", "phone": "Phone",
               "email": "Email"}
HEADER_H = 96


def display_name(first: str, last: str) -> str:
    """The provider's display name: given and family names joined by a space."""
    return " ".join(p for p in (first.strip(), last.strip()) if p)


def add_contact(dev: DeviceState, name: str, phone: str, label: str = "Mobile") -> dict[str, Any]:
    """Insert a contact the way `adb content insert` does: the full name splits at its first space."""
    first, _, last = name.strip().partition(" ")
    row = {"id": dev.new_id(), "first": first, "last": last, "name": display_name(first, last),
           "phone": phone, "label": label, "company": "", "email": ""}
    dev.contacts.append(row)
    return row


def find_contact(dev: DeviceState, cid: int) -> dict[str, Any] | None:
    return next((c for c in dev.contacts if c.get("id") == cid), None)


def sorted_contacts(dev: DeviceState) -> list[dict[str, Any]]:
    return sorted(dev.contacts, key=lambda c: (c.get("name") or c.get("phone", "")).lower())


def _title(ui: UI, text: str, x0: int, x1: int) -> Node:
    y0 = ui.top
    return Node(w.TEXT, text=text, bounds=(x0, y0, x1, y0 + APPBAR_H), size=52, rid=f"{PKG}:id/toolbar_title")


class ContactListScreen(Screen):
    """The main screen: a search bar, letter-grouped contacts, and the Create contact FAB."""

    def build(self, ui: UI) -> list[Node]:
        y = ui.top
        query = self.field("search").strip().lower()
        contacts = [c for c in sorted_contacts(ui.dev)
                    if not query or query in c.get("name", "").lower() or query in c.get("phone", "")]
        header = Node(w.FRAME, bounds=(0, y, SCREEN_W, y + APPBAR_H), a11y=False)
        header.add(Node(w.IMAGE_BUTTON, desc="Open navigation drawer", icon="menu", icon_fg=GREY,
                        bounds=(PAD + 12, y + 40, PAD + 100, y + 128), clickable=True, on_click=lambda: None))
        search = ui.field("search", (PAD, y + 24, SCREEN_W - PAD, y + APPBAR_H - 24), hint="Search contacts")
        search.bg, search.radius, search.border, search.pad = (234, 241, 251), 60, None, 120
        header.children.insert(0, search)
        rows: list[tuple[int, Any]] = []
        letter = None
        for c in contacts:
            initial = (c.get("name") or "#")[:1].upper()
            if initial != letter and not query:
                letter = initial
                rows.append((HEADER_H, lambda b, t=initial: ui.text(
                    t, (b[0] + PAD, b[1], b[2] - PAD, b[3]), size=36, fg=ACCENT, bold=True)))
            rows.append((ROW_H, lambda b, c=c: self._row(ui, c, b)))
        lst = ui.list("contacts", rows, y0=y + APPBAR_H,
                      empty="No results" if query else "No contacts yet")
        out = [header, lst]
        if ui.screen.focus is None:
            out.append(ui.fab("Create contact", lambda: ui.push(ContactEditorScreen())))
        return out

    def _row(self, ui: UI, c: dict[str, Any], b: w.Bounds) -> Node:
        x0, y0, x1, y1 = b
        cid = c["id"]
        row = Node(w.LINEAR, bounds=b, clickable=True, on_click=lambda: ui.push(ContactDetailScreen(cid)),
                   long_clickable=True, on_long_click=lambda: None)
        mid = (y0 + y1) // 2
        name = c.get("name") or c.get("phone", "")
        row.add(Node(w.IMAGE, bounds=(x0 + 40, mid - 56, x0 + 152, mid + 56), icon=f"app:{name[:1].upper()}",
                     icon_fg=_avatar_color(name), a11y=False))
        row.add(Node(w.TEXT, text=name, bounds=(x0 + 192, y0, x1 - PAD, y1), size=44,
                     rid=f"{PKG}:id/cliv_name_textview"))
        return row

    def submit(self, ui: UI, key: str) -> None:
        ui.unfocus()

    def back(self, ui: UI) -> bool:
        if self.field("search"):
            self.set_field("search", "")
            return True
        return False


def _avatar_color(name: str) -> tuple[int, int, int]:
    palette = ((26, 115, 232), (217, 48, 37), (30, 142, 62), (249, 171, 0), (161, 66, 244), (0, 137, 123))
    return palette[sum(map(ord, name)) % len(palette)]


class ContactEditorScreen(Screen):
    """Create contact / Edit contact: name, company, phone with its label spinner, email; Save in the bar."""

    def __init__(self, contact: dict[str, Any] | None = None):
        super().__init__()
        self.contact_id = contact["id"] if contact else None
        self.label = contact.get("label", "Mobile") if contact else "Mobile"
        self.original: dict[str, str] = {}
        if contact:
            for k in FIELD_KEYS:
                self.fields[k] = contact.get(k, "") or ""
            self.original = dict(self.fields)

    @property
    def dirty(self) -> bool:
        return any(self.field(k) != self.original.get(k, "") for k in FIELD_KEYS)

    def build(self, ui: UI) -> list[Node]:
        y = ui.top
        bar = Node(w.VIEW_GROUP, bounds=(0, y, SCREEN_W, y + APPBAR_H), bg=WHITE, rid=f"{PKG}:id/toolbar")
        bar.add(Node(w.IMAGE_BUTTON, desc="Cancel", icon="close", icon_fg=GREY, clickable=True,
                     bounds=(24, y + 24, 144, y + APPBAR_H - 24), on_click=lambda: self.cancel(ui)))
        bar.add(_title(ui, "Edit contact" if self.contact_id else "Create contact", 168, SCREEN_W - 300))
        bar.add(ui.button("Save", (SCREEN_W - 276, y + 30, SCREEN_W - 36, y + APPBAR_H - 30),
                          lambda: self.save(ui), rid=f"{PKG}:id/toolbar_button"))

        def field_row(key: str):
            def make(b: w.Bounds) -> Node:
                node = ui.field(key, (b[0] + 168, b[1] + 20, b[2] - PAD, b[3] - 20), hint=FIELD_HINTS[key],
                                numeric=key == "phone")
                return node
            return make

        def label_row(b: w.Bounds) -> Node:
            return Node("android.widget.Spinner", text=self.label, desc=f"{self.label} Phone",
                        bounds=(b[0] + 168, b[1] + 6, b[0] + 560, b[3] - 6), clickable=True,
                        on_click=lambda: ui.push(LabelDialog(self)), border=LIGHT, radius=12, pad=24, size=38,
                        rid=f"{PKG}:id/spinner")

        def photo_row(b: w.Bounds) -> Node:
            cx = SCREEN_W // 2
            return Node(w.IMAGE_BUTTON, desc="Add contact photo", icon="person", icon_fg=WHITE,
                        bg=(174, 203, 250), radius=90, bounds=(cx - 90, b[1] + 30, cx + 90, b[1] + 210),
                        clickable=True, on_click=lambda: None, rid=f"{PKG}:id/photo")

        rows = [(240, photo_row), (190, field_row("first")), (190, field_row("last")),
                (190, field_row("company")), (190, field_row("phone")), (130, label_row),
                (190, field_row("email"))]
        return [ui.list("editor", rows, y0=y + APPBAR_H), bar]

    def submit(self, ui: UI, key: str) -> None:
        """The IME's Next action moves to the following field; Done on the last one closes the keyboard."""
        i = FIELD_KEYS.index(key) if key in FIELD_KEYS else len(FIELD_KEYS) - 1
        self.focus = FIELD_KEYS[i + 1] if i + 1 < len(FIELD_KEYS) else None

    def save(self, ui: UI) -> None:
        dev = ui.dev
        vals = {k: self.field(k).strip() for k in FIELD_KEYS}
        self.focus = None
        if not any(vals.values()):
            ui.pop()
            return
        name = display_name(vals["first"], vals["last"])
        if self.contact_id is not None and (c := find_contact(dev, self.contact_id)) is not None:
            c.update(vals, name=name, label=self.label)
            cid = c["id"]
        else:
            cid = dev.new_id()
            dev.contacts.append({"id": cid, **vals, "name": name, "label": self.label})
        ui.replace(ContactDetailScreen(cid))
        ui.toast("Contact saved" if self.contact_id is None else "Changes saved")

    def cancel(self, ui: UI) -> None:
        self.focus = None
        if self.dirty:
            ui.push(DiscardDialog())
        else:
            ui.pop()

    def back(self, ui: UI) -> bool:
        if self.dirty:
            ui.push(DiscardDialog())
            return True
        return False


class LabelDialog(Screen):
    """The phone-type popup: one row per label."""

    modal = True

    def __init__(self, editor: ContactEditorScreen):
        super().__init__()
        self.editor = editor

    def build(self, ui: UI) -> list[Node]:
        panel, y = ui.dialog_box(None, 48 + 130 * len(PHONE_LABELS) + 24)

        def choose(label: str) -> None:
            self.editor.label = label
            ui.pop()

        for label in PHONE_LABELS:
            panel.add(Node(w.TEXT, text=label, bounds=(72, y, SCREEN_W - 72, y + 130), clickable=True, pad=60,
                           on_click=lambda lb=label: choose(lb), size=42, rid="android:id/text1",
                           selected=label == self.editor.label))
            y += 130
        return [panel]


class DiscardDialog(Screen):
    modal = True

    def build(self, ui: UI) -> list[Node]:
        panel, _ = ui.dialog_box("Discard changes?", 420, None)

        def discard() -> None:
            ui.pop()  # the dialog
            ui.pop()  # the editor

        ui.dialog_buttons(panel, [("Cancel", ui.pop), ("Discard", discard)])
        return [panel]


class ContactDetailScreen(Screen):
    """A contact's card: avatar, name, Call/Text/Video buttons, phone and email rows; Edit and Delete."""

    def __init__(self, contact_id: int):
        super().__init__()
        self.contact_id = contact_id

    def build(self, ui: UI) -> list[Node]:
        c = find_contact(ui.dev, self.contact_id)
        if c is None:
            return [ui.app_bar(""), ui.text("Contact not found", (PAD, 400, SCREEN_W - PAD, 500), fg=HINT)]
        bar = ui.app_bar("", color=WHITE, actions=[
            ("Edit contact", "edit", lambda: ui.push(ContactEditorScreen(c))),
            ("More options", "more", lambda: ui.push(ContactMenu(self.contact_id))),
        ])
        for n in bar.walk():
            if n.icon:
                n.icon_fg = GREY
        y = ui.below_bar()
        name = c.get("name") or c.get("phone", "")
        out: list[Node] = [bar]
        cx = SCREEN_W // 2
        out.append(Node(w.IMAGE, bounds=(cx - 140, y + 20, cx + 140, y + 300), icon=f"app:{name[:1].upper()}",
                        icon_fg=_avatar_color(name), a11y=False))
        out.append(ui.text(name, (PAD, y + 330, SCREEN_W - PAD, y + 440), size=64, align="center",
                           rid=f"{PKG}:id/large_title"))
        by = y + 480
        phone = c.get("phone", "")
        for i, (label, icon, handler) in enumerate((
                ("Call", "phone", lambda: ui.toast("Calling is not available")),
                ("Text", "send", lambda: _text_contact(ui, phone)),
                ("Video", "video", lambda: ui.toast("Video calling is not available")))):
            bx = 120 + i * 300
            out.append(Node(w.BUTTON, text=label, desc=label, bounds=(bx, by, bx + 240, by + 200),
                            clickable=True, on_click=handler, enabled=bool(phone), icon=icon, icon_fg=ACCENT,
                            fg=ACCENT, align="center", size=34))
        cy = by + 260
        card = Node(w.FRAME, bounds=(PAD, cy, SCREEN_W - PAD, cy + 80), a11y=False)
        card.add(ui.text("Contact info", (PAD + 24, cy, SCREEN_W - PAD, cy + 80), size=40, bold=True))
        out.append(card)
        cy += 100
        if phone:
            out.append(ui.item(phone, (0, cy, SCREEN_W, cy + 200), on_click=lambda: None, icon="phone",
                               subtitle=c.get("label") or "Mobile", rid=f"{PKG}:id/header"))
            cy += 200
        if c.get("email"):
            out.append(ui.item(c["email"], (0, cy, SCREEN_W, cy + 200), on_click=lambda: None, icon="mail",
                               subtitle="Home", rid=f"{PKG}:id/header"))
            cy += 200
        if c.get("company"):
            out.append(ui.item(c["company"], (0, cy, SCREEN_W, cy + 200), icon="work", subtitle="Company"))
        return out


def _text_contact(ui: UI, phone: str) -> None:
    """The Text button opens Simple SMS Messenger on the thread with this number."""
    from voyager_gym.backends.sim.apps import sms

    ui.open_app(sms.PKG)
    ui.phone.stack(sms.PKG).append(sms.ThreadScreen(phone))


class ContactMenu(Screen):
    """The overflow menu of a contact card."""

    modal = True

    def __init__(self, contact_id: int):
        super().__init__()
        self.contact_id = contact_id

    def build(self, ui: UI) -> list[Node]:
        y = ui.top + 24
        panel = Node(w.FRAME, bounds=(SCREEN_W - 560, y, SCREEN_W - 24, y + 3 * 140 + 32), bg=WHITE,
                     radius=16, rid="android:id/content")
        items = (("Delete", lambda: ui.replace(DeleteDialog(self.contact_id))),
                 ("Share", lambda: ui.pop()), ("Add to Home screen", lambda: ui.pop()))
        for i, (label, handler) in enumerate(items):
            yy = y + 16 + i * 140
            panel.add(Node(w.TEXT, text=label, bounds=(SCREEN_W - 560, yy, SCREEN_W - 24, yy + 140), pad=48,
                           clickable=True, on_click=handler, size=42, rid=f"{PKG}:id/title"))
        return [panel]


class DeleteDialog(Screen):
    modal = True

    def __init__(self, contact_id: int):
        super().__init__()
        self.contact_id = contact_id

    def build(self, ui: UI) -> list[Node]:
        panel, _ = ui.dialog_box("Delete this contact?", 520,
                                 "This contact will be permanently deleted from this device.")

        def delete() -> None:
            ui.dev.contacts[:] = [c for c in ui.dev.contacts if c.get("id") != self.contact_id]
            ui.pop()  # dialog
            ui.pop()  # detail
            ui.toast("Contact deleted")

        ui.dialog_buttons(panel, [("Cancel", ui.pop), ("Delete", delete)])
        return [panel]


@register_app
class Contacts(App):
    package = PKG
    name = "Contacts"
    aliases = r"contacts"
    color = (26, 115, 232)

    def main(self, dev: DeviceState) -> Screen:
        return ContactListScreen()
