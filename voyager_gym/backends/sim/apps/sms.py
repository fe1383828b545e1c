"""Simple SMS Messenger (com.simplemobiletools.smsmessenger): conversations, a recipient picker, threads.

Messages live in the device's SMS provider, `dev.sms`: dicts with address, body, time_ms, box ('inbox' or
'sent') and read. Conversations group messages by the digits of their address; a thread shows the contact's
name when the contacts provider knows the number. Sending appends a 'sent' row stamped with the device time.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from typing import Any

from voyager_gym.backends.sim import widgets as w
from voyager_gym.backends.sim.device import DeviceState
from voyager_gym.backends.sim.ui import (
    GREY,
    HINT,
    INK,
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

PKG = "com.simplemobiletools.smsmessenger"
COLOR = (245, 124, 0)
BUBBLE_CHARS = 32  # characters per bubble line at the bubble font size
BOTTOM_BAR_H = 176
BIG = 10**9  # a scroll offset that the list clamps to its end


def digits(s: str) -> str:
    return re.sub(r"\D", "", s or "")


def contact_name(dev: DeviceState, address: str) -> str | None:
    """The display name of the contact whose number has the same digits as `address`."""
    d = digits(address)
    if not d:
        return None
    for c in dev.contacts:
        if digits(c.get("phone", "")) == d:
            return c.get("name") or None
    return None


def thread_messages(dev: DeviceState, address: str) -> list[dict[str, Any]]:
    d = digits(address) or address
    return sorted((m for m in dev.sms if (digits(m["address"]) or m["address"]) == d),
                  key=lambda m: m["time_ms"])


def conversations(dev: DeviceState) -> list[tuple[str, list[dict[str, Any]]]]:
    """(address, messages oldest first) per conversation, the most recent conversation first."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for m in dev.sms:
        groups.setdefault(digits(m["address"]) or m["address"], []).append(m)
    out = []
    for msgs in groups.values():
        msgs.sort(key=lambda m: m["time_ms"])
        out.append((msgs[-1]["address"], msgs))
    out.sort(key=lambda t: -t[1][-1]["time_ms"])
    return out


def send_sms(dev: DeviceState, address: str, body: str) -> dict[str, Any]:
    """What the app's send button does: a row in the sent box, stamped with the device clock."""
    msg = {"address": address, "body": body, "time_ms": dev.time_ms, "box": "sent", "read": True}
    dev.sms.append(msg)
    return msg


def receive_sms(dev: DeviceState, address: str, body: str, time_ms: int,
                read: bool = False) -> dict[str, Any]:
    """An incoming text (what AndroidWorld's `text_emulator` produces)."""
    msg = {"address": address, "body": body, "time_ms": time_ms, "box": "inbox", "read": read}
    dev.sms.append(msg)
    return msg


def when(dev: DeviceState, time_ms: int) -> str:
    """Today's messages show the time (24-hour clock), older ones the date."""
    t = dt.datetime.fromtimestamp(time_ms / 1000, tz=dt.UTC)
    return t.strftime("%H:%M") if t.date() == dev.now.date() else t.strftime("%b %-d")


def looks_like_number(text: str) -> bool:
    return bool(re.fullmatch(r"\+?[\d\s\-().]{3,}", text.strip())) and len(digits(text)) >= 3


class ConversationsScreen(Screen):
    """The main screen: one row per conversation, the newest first; unread ones in bold."""

    def build(self, ui: UI) -> list[Node]:
        dev = ui.dev
        rows = [(ROW2_H, lambda b, a=a, m=msgs: self._row(ui, a, m, b)) for a, msgs in conversations(dev)]
        bar = ui.app_bar("Simple SMS Messenger", back=False, color=COLOR)
        lst = ui.list("conversations", rows, empty="No stored conversations have been found")
        fab = ui.fab("Start a conversation", lambda: ui.push(NewConversationScreen()), icon="add")
        return [bar, lst, fab]

    def _row(self, ui: UI, address: str, msgs: list[dict[str, Any]], b: w.Bounds) -> Node:
        dev = ui.dev
        x0, y0, x1, y1 = b
        last = msgs[-1]
        unread = any(m["box"] == "inbox" and not m.get("read") for m in msgs)
        title = contact_name(dev, address) or address
        row = Node(w.LINEAR, bounds=b, clickable=True, on_click=lambda: ui.push(ThreadScreen(address)),
                   long_clickable=True, on_long_click=lambda: None, border=LIGHT)
        mid = (y0 + y1) // 2
        row.add(Node(w.IMAGE, bounds=(x0 + 36, mid - 60, x0 + 156, mid + 60), icon=f"app:{title[:1].upper()}",
                     icon_fg=COLOR if title[:1].isalpha() else GREY, a11y=False))
        row.add(Node(w.TEXT, text=title, bounds=(x0 + 192, mid - 62, x1 - 220, mid), size=44, bold=unread,
                     rid=f"{PKG}:id/conversation_address"))
        row.add(Node(w.TEXT, text=last["body"], bounds=(x0 + 192, mid + 4, x1 - PAD, mid + 60), size=36,
                     fg=INK if unread else GREY, bold=unread, rid=f"{PKG}:id/conversation_body_short"))
        row.add(Node(w.TEXT, text=when(dev, last["time_ms"]), bounds=(x1 - 220, mid - 62, x1 - PAD, mid),
                     size=32, fg=GREY, align="right", rid=f"{PKG}:id/conversation_date"))
        return row


class NewConversationScreen(Screen):
    """Pick a recipient: type a number (Enter or the check mark confirms) or tap a contact."""

    def __init__(self) -> None:
        super().__init__()
        self.focus = "recipient"
        self.paste_for: str | None = None

    def build(self, ui: UI) -> list[Node]:
        dev = ui.dev
        y = ui.below_bar()
        bar = ui.app_bar("New conversation", color=COLOR)
        field = ui.field("recipient", (PAD, y + 24, SCREEN_W - 200, y + 184), hint="Add Contact or Number…")
        make_pasteable(self, "recipient", field)
        confirm = Node(w.IMAGE_BUTTON, desc="Confirm", icon="check", icon_fg=COLOR,
                       bounds=(SCREEN_W - 176, y + 44, SCREEN_W - 56, y + 164), clickable=True,
                       on_click=lambda: self.confirm(ui), rid=f"{PKG}:id/new_conversation_confirm")
        q = self.field("recipient").strip().lower()
        contacts = sorted((c for c in dev.contacts if not q or q in c.get("name", "").lower()
                           or (digits(q) and digits(q) in digits(c.get("phone", "")))),
                          key=lambda c: c.get("name", "").lower())
        rows = [(ROW_H + 20, lambda b, c=c: self._contact_row(ui, c, b)) for c in contacts]
        out = [bar, field, confirm,
               ui.list("suggestions", rows, y0=y + 220, empty=None if q else "No contacts found")]
        popup = ui.paste_popup("recipient", field)
        if popup is not None:
            out.append(popup)
        return out

    def _contact_row(self, ui: UI, c: dict[str, Any], b: w.Bounds) -> Node:
        x0, y0, x1, y1 = b
        phone = c.get("phone", "")
        row = Node(w.LINEAR, bounds=b, clickable=True, on_click=lambda: self.open(ui, phone))
        mid = (y0 + y1) // 2
        name = c.get("name") or phone
        row.add(Node(w.IMAGE, bounds=(x0 + 36, mid - 56, x0 + 148, mid + 56), icon=f"app:{name[:1].upper()}",
                     icon_fg=COLOR, a11y=False))
        row.add(Node(w.TEXT, text=name, bounds=(x0 + 192, mid - 60, x1 - PAD, mid), size=44,
                     rid=f"{PKG}:id/item_contact_name"))
        row.add(Node(w.TEXT, text=phone, bounds=(x0 + 192, mid + 4, x1 - PAD, mid + 60), size=34, fg=GREY,
                     rid=f"{PKG}:id/item_contact_number"))
        return row

    def open(self, ui: UI, address: str) -> None:
        ui.replace(ThreadScreen(address.strip()))

    def confirm(self, ui: UI) -> None:
        text = self.field("recipient").strip()
        if looks_like_number(text):
            self.open(ui, text)
        elif text:
            ui.toast("Invalid number")

    def submit(self, ui: UI, key: str) -> None:
        if looks_like_number(self.field(key)):
            self.confirm(ui)
        else:
            ui.unfocus()

    def changed(self, ui: UI, key: str) -> None:
        self.paste_for = None
        self.scroll["suggestions"] = 0


class ThreadScreen(Screen):
    """One conversation: bubbles oldest to newest (received left, sent right) and a message box with Send."""

    def __init__(self, address: str):
        super().__init__()
        self.address = address
        self.scroll["messages"] = BIG
        self.selected: int | None = None  # position in the thread of a long-pressed message
        self.paste_for: str | None = None

    def build(self, ui: UI) -> list[Node]:
        dev = ui.dev
        msgs = thread_messages(dev, self.address)
        for m in msgs:
            if m["box"] == "inbox":
                m["read"] = True
        title = contact_name(dev, self.address) or self.address
        if self.selected is not None and self.selected < len(msgs):
            sel = msgs[self.selected]
            bar = ui.app_bar("1 selected", color=GREY, actions=[
                ("Copy to clipboard", "file", lambda: self.copy(ui, sel)),
                ("Delete", "delete", lambda: ui.push(DeleteMessageDialog(self, sel))),
            ])
            bar.children[0].on_click = self.clear_selection
        else:
            self.selected = None
            bar = ui.app_bar(title, color=COLOR, actions=[
                ("Call", "phone", lambda: ui.toast("Calling is not available")),
            ])
        bottom = ui.bottom
        rows = [(self._bubble_h(m), lambda b, i=i, m=m: self._bubble(ui, i, m, b))
                for i, m in enumerate(msgs)]
        lst = ui.list("messages", rows, y1=bottom - BOTTOM_BAR_H)
        by = bottom - BOTTOM_BAR_H
        panel = Node(w.FRAME, bounds=(0, by, SCREEN_W, bottom), bg=(250, 250, 250), border=LIGHT, a11y=False)
        field = ui.field("message", (24, by + 16, SCREEN_W - 220, bottom - 16), hint="Type a message…")
        make_pasteable(self, "message", field)
        has_text = bool(self.field("message").strip())
        send = Node(w.BUTTON, text="SMS", desc="Send", icon="send", icon_fg=COLOR if has_text else HINT,
                    bounds=(SCREEN_W - 196, by + 16, SCREEN_W - 24, bottom - 16), clickable=True,
                    enabled=has_text, on_click=lambda: self.send(ui), fg=COLOR if has_text else HINT, size=30,
                    align="center", rid=f"{PKG}:id/thread_send_message")
        panel.add(field, send)
        out = [bar, lst, panel]
        popup = ui.paste_popup("message", field)
        if popup is not None:
            out.append(popup)
        return out

    @staticmethod
    def _bubble_h(m: dict[str, Any]) -> int:
        lines = max(1, sum(math.ceil(max(1, len(p)) / BUBBLE_CHARS) for p in m["body"].split("\n")))
        return 56 * lines + 120

    def _bubble(self, ui: UI, i: int, m: dict[str, Any], b: w.Bounds) -> Node:
        x0, y0, x1, y1 = b
        sent = m["box"] == "sent"
        longest = max(len(p) for p in m["body"].split("\n"))
        width = min(760, 100 + 20 * max(longest, 4))
        bx0, bx1 = (x1 - 36 - width, x1 - 36) if sent else (x0 + 36, x0 + 36 + width)
        holder = Node(w.FRAME, bounds=b, a11y=False, bg=(210, 227, 252) if self.selected == i else None)
        holder.add(Node(w.TEXT, text=m["body"], bounds=(bx0, y0 + 16, bx1, y1 - 56),
                        bg=COLOR if sent else LIGHT, fg=WHITE if sent else INK, radius=36, pad=32, size=38,
                        lines=20, long_clickable=True, on_long_click=lambda: self.select(i),
                        clickable=self.selected is not None,
                        on_click=(lambda: self.select(i)) if self.selected is not None else None,
                        rid=f"{PKG}:id/thread_message_{'sent' if sent else 'received'}"))
        holder.add(Node(w.TEXT, text=when(ui.dev, m["time_ms"]), bounds=(bx0, y1 - 52, bx1, y1 - 8), size=28,
                        fg=GREY, align="right" if sent else "left", rid=f"{PKG}:id/thread_message_time"))
        return holder

    def select(self, i: int) -> None:
        self.selected = None if self.selected == i else i

    def clear_selection(self) -> None:
        self.selected = None

    def copy(self, ui: UI, m: dict[str, Any]) -> None:
        ui.dev.clipboard = m["body"]
        self.selected = None
        ui.toast("Copied to clipboard")

    def send(self, ui: UI) -> None:
        body = self.field("message").strip()
        if not body:
            return
        send_sms(ui.dev, self.address, body)
        self.set_field("message", "")
        self.scroll["messages"] = BIG
        self.paste_for = None

    def changed(self, ui: UI, key: str) -> None:
        self.paste_for = None

    def back(self, ui: UI) -> bool:
        if self.paste_for is not None:
            self.paste_for = None
            return True
        if self.selected is not None:
            self.selected = None
            return True
        return False


class DeleteMessageDialog(Screen):
    modal = True

    def __init__(self, thread: ThreadScreen, msg: dict[str, Any]):
        super().__init__()
        self.thread = thread
        self.msg = msg

    def build(self, ui: UI) -> list[Node]:
        panel, _ = ui.dialog_box(None, 420, "Are you sure you want to delete 1 message?")

        def delete() -> None:
            for i, m in enumerate(ui.dev.sms):
                if m == self.msg:
                    del ui.dev.sms[i]
                    break
            self.thread.selected = None
            ui.pop()

        ui.dialog_buttons(panel, [("No", ui.pop), ("Yes", delete)])
        return [panel]


@register_app
class SimpleSms(App):
    package = PKG
    name = "Simple SMS Messenger"
    aliases = r"simple sms messenger|simple sms|sms messenger"
    color = COLOR

    def main(self, dev: DeviceState) -> Screen:
        return ConversationsScreen()
