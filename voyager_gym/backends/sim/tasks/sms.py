"""Simple SMS Messenger tasks. As in AndroidWorld, success means the SMS provider's sent box holds a message
to the right number (the address with '-' and ' ' removed equals the number drawn, '+1' included) whose body
fuzzy-matches the expected text, sent within the last five minutes, with Simple SMS Messenger in front;
SimpleSmsResend instead needs exactly one new sent message that repeats the earlier one. Each task starts
with an empty SMS database and only the contacts it names, as AndroidWorld's do."""

from __future__ import annotations

import random
from typing import Any

from voyager_gym.actions import Action
from voyager_gym.backends.sim.apps import contacts as contacts_app
from voyager_gym.backends.sim.apps import sms as app
from voyager_gym.backends.sim.device import DeviceState
from voyager_gym.backends.sim.tasks import vocab
from voyager_gym.backends.sim.tasks.base import (
    SimTask,
    View,
    aw_fuzzy_match,
    back,
    click,
    digits,
    done,
    long_press,
    open_app,
    register_task,
    scroll_to_find,
    sms_number,
    type_into,
)
from voyager_gym.backends.sim.tasks.common import (
    clear_sms,
    compose_expert,
    fill_and_send,
    in_thread,
    random_name,
    random_number,
    sent_messages,
    sms_params,
    sms_sent_score,
)

PKG = app.PKG
MESSAGES = vocab.SENTENCES  # AndroidWorld's message bodies
ADDRESSES = vocab.ADDRESSES
RESEND_ASK = "Sorry, there was a glitch, what was the last message you sent me?"


# -- expert helpers --------------------------------------------------------------------------------------
def to_main(view: View) -> Action | None:
    """Open the app if needed; None when the conversation list is in front."""
    if view.app != PKG:
        return open_app("Simple SMS Messenger")
    if view.title == "Simple SMS Messenger":
        return None
    return back()


def row_with_number(view: View, number: str) -> int | None:
    for i in view.find_all(rid=f"{PKG}:id/conversation_address"):
        if digits(view.el(i).text or "") == digits(number):
            return i
    return None


class _SmsTask(SimTask):
    """AndroidWorld's SimpleSMSSendSms: params number and message; sent within 5 minutes, app in front."""

    app_names = ("simple sms messenger",)
    complexity = 1.2

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return sms_params(rng)

    def initialize(self, dev: DeviceState) -> None:
        clear_sms(dev)

    def is_successful(self, dev: DeviceState) -> float:
        return sms_sent_score(dev, self.params["number"], self.params["message"])

    def recent_texts(self, dev: DeviceState, texts: list[tuple[str, str]]) -> None:
        """Deliver (address, body) texts just now, in order, a few seconds apart, unread."""
        t = dev.time_ms - 3000 * len(texts)
        for address, body in texts:
            app.receive_sms(dev, address, body, t)
            t += 3000


@register_task
class SimpleSmsSend(_SmsTask):
    template = "Send a text message using Simple SMS Messenger to {number} with message: {message}"

    def expert(self, view: View, mem: dict[str, Any]) -> Action:
        return compose_expert(view, mem, self.params["number"], self.params["message"])


@register_task
class SimpleSmsReply(_SmsTask):
    template = "Reply to {number} with message: {message} in Simple SMS Messenger"

    def initialize(self, dev: DeviceState) -> None:
        """1-5 texts from other numbers, the one from {number} among them at a random place (at the end if
        none was placed), drawn as AndroidWorld draws them."""
        super().initialize(dev)
        rng = self.setup_rng()
        texts: list[tuple[str, str]] = []
        relevant = False
        for _ in range(rng.randint(1, 5)):
            if not relevant and rng.choice([True, False]):
                texts.append((self.params["number"], rng.choice(MESSAGES)))
                relevant = True
            number = random_number(rng)
            texts.append((number, rng.choice(MESSAGES)))
        if not relevant:
            texts.append((self.params["number"], rng.choice(MESSAGES)))
        self.recent_texts(dev, texts)

    def expert(self, view: View, mem: dict[str, Any]) -> Action:
        if mem.get("sent"):
            return done()
        if view.app == PKG and in_thread(view):
            if digits(view.title or "") == digits(self.params["number"]):
                return fill_and_send(view, mem, self.params["message"])
            return back()
        act = to_main(view)
        if act is not None:
            return act
        i = row_with_number(view, self.params["number"])
        if i is not None:
            return click(i)
        found = scroll_to_find(view, mem, "row", text=self.params["number"])
        return click(found) if isinstance(found, int) else found


@register_task
class SimpleSmsReplyMostRecent(_SmsTask):
    template = "Reply to the most recent text message using Simple SMS Messenger with message: {message}"

    def initialize(self, dev: DeviceState) -> None:
        """0-5 texts from other numbers, then one from {number}, none of them the message to send, drawn as
        AndroidWorld draws them (a body equal to the message is drawn again)."""
        super().initialize(dev)
        rng = self.setup_rng()

        def other_message() -> str:
            m = rng.choice(MESSAGES)
            while m == self.params["message"]:
                m = rng.choice(MESSAGES)
            return m

        texts = []
        for _ in range(rng.randint(0, 5)):
            number = random_number(rng)
            texts.append((number, other_message()))
        texts.append((self.params["number"], other_message()))
        self.recent_texts(dev, texts)

    def expert(self, view: View, mem: dict[str, Any]) -> Action:
        if mem.get("sent"):
            return done()
        if view.app == PKG and in_thread(view):
            return fill_and_send(view, mem, self.params["message"])
        act = to_main(view)
        if act is not None:
            return act
        rows = view.find_all(rid=f"{PKG}:id/conversation_address")
        return click(rows[0]) if rows else back()


@register_task
class SimpleSmsSendClipboardContent(_SmsTask):
    app_names = ("simple sms messenger", "clipper")
    template = "Send a message to {number} with the clipboard content in Simple SMS Messenger"

    def initialize(self, dev: DeviceState) -> None:
        super().initialize(dev)
        dev.clipboard = self.params["message"]

    def expert(self, view: View, mem: dict[str, Any]) -> Action:
        """Open the thread, long-press the message box, tap Paste, then Send."""
        if mem.get("sent"):
            return done()
        if view.app == PKG and in_thread(view) and digits(view.title or "") == digits(self.params["number"]):
            field = view.find(rid=f"{PKG}:id/message")
            if field is None:
                return back()
            if view.el(field).text:
                mem["sent"] = True
                return click(view.find(rid=f"{PKG}:id/thread_send_message"))
            paste = view.find(text="Paste")
            return click(paste) if paste is not None else long_press(field)
        return compose_expert(view, mem, self.params["number"], "")


@register_task
class SimpleSmsResend(_SmsTask):
    """Exactly one new sent message, equal (number digits, fuzzy body) to the one sent to {name} before."""

    template = "Resend the message I just sent to {name} in Simple SMS Messenger"

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return {"name": random_name(rng), "number": random_number(rng), "message": rng.choice(MESSAGES)}

    def initialize(self, dev: DeviceState) -> None:
        super().initialize(dev)
        contacts_app.add_contact(dev, self.params["name"], self.params["number"])
        dev.sms.append(
            {
                "address": self.params["number"],
                "body": self.params["message"],
                "time_ms": dev.time_ms - 9000,
                "box": "sent",
                "read": True,
            }
        )
        app.receive_sms(dev, self.params["number"], RESEND_ASK, dev.time_ms - 4000)
        self.before_sent = len(sent_messages(dev))

    def is_successful(self, dev: DeviceState) -> float:
        after = sent_messages(dev)
        if len(after) != self.before_sent + 1:
            return 0.0
        newest = after[0]
        ok = sms_number(newest["address"]) == sms_number(self.params["number"]) and aw_fuzzy_match(
            newest["body"], self.params["message"]
        )
        return 1.0 if ok else 0.0

    def expert(self, view: View, mem: dict[str, Any]) -> Action:
        if mem.get("sent"):
            return done()
        if view.app == PKG and in_thread(view):
            if view.title != self.params["name"]:
                return back()
            if "msg" not in mem:
                mine = view.find_all(rid=f"{PKG}:id/thread_message_sent")
                if not mine:
                    return back()
                mem["msg"] = view.el(mine[-1]).text
            return fill_and_send(view, mem, mem["msg"])
        act = to_main(view)
        if act is not None:
            return act
        found = scroll_to_find(view, mem, "row", text=self.params["name"])
        return click(found) if isinstance(found, int) else found


@register_task
class SimpleSmsSendReceivedAddress(_SmsTask):
    """Forward the address that {name2} texted to {name1} (both are contacts)."""

    complexity = 1.8
    template = "Text the address of the event to {name1} that {name2} just sent me in Simple SMS Messenger"

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        name1 = random_name(rng)
        name2 = random_name(rng)  # AndroidWorld's exclusion never takes effect: the two may be alike
        number = random_number(rng)
        return {"name1": name1, "number": number, "name2": name2, "message": rng.choice(ADDRESSES)}

    def initialize(self, dev: DeviceState) -> None:
        super().initialize(dev)
        p = self.params
        contacts_app.add_contact(dev, p["name1"], p["number"])
        name2_number = random_number(self.setup_rng())  # AndroidWorld's draw
        contacts_app.add_contact(dev, p["name2"], name2_number)
        app.receive_sms(dev, name2_number, p["message"], dev.time_ms - 3000)

    def expert(self, view: View, mem: dict[str, Any]) -> Action:
        p = self.params
        if "addr" not in mem:
            if view.app == PKG and in_thread(view) and view.title == p["name2"]:
                got = view.find_all(rid=f"{PKG}:id/thread_message_received")
                if got:
                    mem["addr"] = view.el(got[-1]).text
                    return back()
            act = to_main(view)
            if act is not None:
                return act
            found = scroll_to_find(view, mem, "row", text=p["name2"])
            return click(found) if isinstance(found, int) else found
        if p["name1"] == p["name2"]:  # two contacts of one name (AndroidWorld's draw): write to the number
            if mem.get("sent"):
                return done()
            if view.app == PKG and in_thread(view) and mem.get("typed"):
                return fill_and_send(view, mem, mem["addr"])
            if view.app == PKG and view.title == "New conversation":
                mem["typed"] = True
                return type_into(view.find(rid=f"{PKG}:id/recipient"), p["number"])
            return compose_expert(view, mem, p["number"], mem["addr"])
        return compose_expert(view, mem, p["name1"], mem["addr"], by_name=True)
