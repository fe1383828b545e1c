"""Simple SMS Messenger app and tasks: near misses fail the verifiers; sending, pasting, copying and deleting
work through actions."""


from tests.sim import helpers
from tests.sim.helpers import run_expert_until_done, view
from voyager_gym.actions import Action
from voyager_gym.backends.sim.apps import sms as app
from voyager_gym.backends.sim.tasks.base import back, click, digits, long_press, open_app, type_into
from voyager_gym.backends.sim.tasks.common import sent_messages
from voyager_gym.backends.sim.tasks.sms import RESEND_ASK

PKG = app.PKG


def reset(backend, name, seed=11):
    return helpers.reset(backend, name, seed)


def act(backend, action: Action) -> None:
    backend.execute(action)


def start_thread(backend, number: str) -> None:
    act(backend, open_app("Simple SMS Messenger"))
    act(backend, click(view(backend).find(desc="Start a conversation")))
    act(backend, type_into(view(backend).find(rid=f"{PKG}:id/recipient"), number))
    assert digits(view(backend).title) == digits(number)


def send(backend, text: str) -> None:
    act(backend, type_into(view(backend).find(rid=f"{PKG}:id/message"), text))
    act(backend, click(view(backend).find(rid=f"{PKG}:id/thread_send_message")))


def other_number(number: str) -> str:
    return number[:-1] + str((int(number[-1]) + 1) % 10)


# -- SimpleSmsSend ---------------------------------------------------------------------------------------
def test_send_through_ui_stamps_the_device_time(backend):
    p = reset(backend, "SimpleSmsSend")
    dev = backend.phone.dev
    start_thread(backend, p["number"])
    before = len(dev.sms)
    send(backend, p["message"])
    assert len(dev.sms) == before + 1
    m = dev.sms[-1]
    assert (m["address"], m["body"], m["box"]) == (p["number"], p["message"], "sent")
    assert m["time_ms"] == dev.time_ms - 5000  # the step's own time; the clock moved on after it
    assert view(backend).find(rid=f"{PKG}:id/thread_message_sent", text=p["message"]) is not None
    assert backend.score() == 1.0


def test_send_near_misses(backend):
    p = reset(backend, "SimpleSmsSend")
    dev = backend.phone.dev
    start_thread(backend, other_number(p["number"]))
    send(backend, p["message"])
    assert backend.score() == 0.0, "wrong number"
    act(backend, back())
    act(backend, back())
    start_thread(backend, p["number"])
    send(backend, "Something else entirely.")
    assert backend.score() == 0.0, "wrong text"
    send(backend, p["message"][:-1])  # one character short: still a fuzzy match
    assert backend.score() == 1.0
    act(backend, Action("navigate_home"))
    assert backend.score() == 0.0, "Simple SMS Messenger must be in front"
    act(backend, open_app("Simple SMS Messenger"))
    dev.advance(6 * 60 * 1000)
    assert backend.score() == 0.0, "sent more than five minutes ago"


def test_inbox_message_does_not_count(backend):
    p = reset(backend, "SimpleSmsSend")
    dev = backend.phone.dev
    app.receive_sms(dev, p["number"], p["message"], dev.time_ms)
    act(backend, open_app("Simple SMS Messenger"))
    assert backend.score() == 0.0


# -- SimpleSmsReply / ReplyMostRecent ----------------------------------------------------------------------
def test_reply_to_another_thread_fails(backend):
    p = reset(backend, "SimpleSmsReply")
    act(backend, open_app("Simple SMS Messenger"))
    rows = view(backend).find_all(rid=f"{PKG}:id/conversation_address")
    wrong = next(i for i in rows if digits(view(backend).el(i).text) != digits(p["number"]))
    act(backend, click(wrong))
    send(backend, p["message"])
    assert backend.score() == 0.0


def test_reply_marks_thread_read(backend):
    p = reset(backend, "SimpleSmsReply")
    dev = backend.phone.dev
    assert any(not m["read"] for m in dev.sms if m["address"] == p["number"])
    run_expert_until_done(backend)
    assert all(m["read"] for m in dev.sms if m["address"] == p["number"])
    assert backend.score() == 1.0


def test_reply_most_recent_second_row_fails(backend):
    for seed in range(10):
        p = reset(backend, "SimpleSmsReplyMostRecent", seed)
        act(backend, open_app("Simple SMS Messenger"))
        rows = view(backend).find_all(rid=f"{PKG}:id/conversation_address")
        assert digits(view(backend).el(rows[0]).text) == digits(p["number"]), "newest conversation first"
        if len(rows) < 2:  # AndroidWorld sends 0-5 other texts first
            continue
        act(backend, click(rows[1]))
        send(backend, p["message"])
        assert backend.score() == 0.0


# -- SimpleSmsSendClipboardContent -------------------------------------------------------------------------
def test_paste_from_clipboard_and_typed_near_miss(backend):
    p = reset(backend, "SimpleSmsSendClipboardContent")
    assert backend.phone.dev.clipboard == p["message"]
    start_thread(backend, p["number"])
    send(backend, "Please see the clipboard.")
    assert backend.score() == 0.0
    field = view(backend).find(rid=f"{PKG}:id/message")
    act(backend, long_press(field))
    act(backend, click(view(backend).find(text="Paste")))
    assert view(backend).el(view(backend).find(rid=f"{PKG}:id/message")).text == p["message"]
    act(backend, click(view(backend).find(rid=f"{PKG}:id/thread_send_message")))
    assert backend.score() == 1.0


# -- SimpleSmsResend -------------------------------------------------------------------------------------
def test_resend_rules(backend):
    p = reset(backend, "SimpleSmsResend")
    dev = backend.phone.dev
    act(backend, open_app("Simple SMS Messenger"))
    act(backend, click(view(backend).find(text=p["name"])))
    assert view(backend).find(text=RESEND_ASK) is not None
    assert backend.score() == 0.0
    send(backend, p["message"])
    assert backend.score() == 1.0
    send(backend, p["message"])
    assert backend.score() == 0.0, "sent twice: the count must grow by exactly one"
    p = reset(backend, "SimpleSmsResend")
    dev = backend.phone.dev
    app.send_sms(dev, p["number"], "A different message.")
    assert backend.score() == 0.0, "different body"
    p = reset(backend, "SimpleSmsResend")
    app.send_sms(backend.phone.dev, other_number(p["number"]), p["message"])
    assert backend.score() == 0.0, "different number"


# -- SimpleSmsSendReceivedAddress ------------------------------------------------------------------------
def test_received_address_to_wrong_contact_fails(backend):
    p = reset(backend, "SimpleSmsSendReceivedAddress")
    act(backend, open_app("Simple SMS Messenger"))
    act(backend, click(view(backend).find(desc="Start a conversation")))
    act(backend, type_into(view(backend).find(rid=f"{PKG}:id/recipient"), p["name2"]))
    act(backend, click(view(backend).find(text=p["name2"], rid=f"{PKG}:id/item_contact_name")))
    assert view(backend).title == p["name2"]
    send(backend, p["message"])
    assert backend.score() == 0.0, "sent back to the sender"
    act(backend, back())
    act(backend, click(view(backend).find(desc="Start a conversation")))
    act(backend, type_into(view(backend).find(rid=f"{PKG}:id/recipient"), p["name1"]))
    act(backend, click(view(backend).find(text=p["name1"], rid=f"{PKG}:id/item_contact_name")))
    send(backend, "See you there!")
    assert backend.score() == 0.0, "not the address"
    send(backend, p["message"])
    assert backend.score() == 1.0


# -- app interactions --------------------------------------------------------------------------------------
def test_copy_and_delete_message(backend):
    p = reset(backend, "SimpleSmsResend")
    dev = backend.phone.dev
    act(backend, open_app("Simple SMS Messenger"))
    act(backend, click(view(backend).find(text=p["name"])))
    bubble = view(backend).find(rid=f"{PKG}:id/thread_message_sent")
    act(backend, long_press(bubble))
    assert view(backend).title == "1 selected"
    act(backend, click(view(backend).find(desc="Copy to clipboard")))
    assert dev.clipboard == p["message"]
    n = len(dev.sms)
    act(backend, long_press(view(backend).find(text=RESEND_ASK)))
    act(backend, click(view(backend).find(desc="Delete")))
    act(backend, click(view(backend).find(text="Yes")))
    assert len(dev.sms) == n - 1 and all(m["body"] != RESEND_ASK for m in dev.sms)
    assert len(sent_messages(dev)) == backend.task.before_sent


def test_contacts_text_button_opens_thread(backend):
    p = reset(backend, "SimpleSmsResend")
    act(backend, open_app("Contacts"))
    act(backend, click(view(backend).find(text=p["name"])))
    act(backend, click(view(backend).find(text="Text")))
    assert view(backend).app == PKG and view(backend).title == p["name"]
    send(backend, p["message"])
    assert backend.score() == 1.0
