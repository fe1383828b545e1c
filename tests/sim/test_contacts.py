"""Contacts app and tasks: near misses fail; saving, discarding and deleting work by actions."""


from tests.sim import helpers
from tests.sim.helpers import run_expert_until_done, view
from voyager_gym.actions import Action
from voyager_gym.backends.sim.apps import contacts as app
from voyager_gym.backends.sim.tasks.base import back, click, done, open_app, type_into


def reset(backend, name, seed=7):
    return helpers.reset(backend, name, seed)


def act(backend, action: Action) -> None:
    backend.execute(action)


def open_editor(backend) -> None:
    act(backend, open_app("Contacts"))
    act(backend, click(view(backend).find(desc="Create contact")))
    assert view(backend).title == "Create contact"


def fill(backend, hint: str, text: str) -> None:
    act(backend, type_into(view(backend).find(hint=hint, editable=True), text))


# -- ContactsAddContact ------------------------------------------------------------------------------------
def test_add_contact_provider_checks(backend):
    p = reset(backend, "ContactsAddContact")
    task, dev = backend.task, backend.phone.dev
    assert task.is_successful(dev) == 0.0
    assert dev.contacts == []  # AndroidWorld clears the contacts first
    app.add_contact(dev, p["name"], p["number"][:-1] + str((int(p["number"][-1]) + 1) % 10))
    assert task.is_successful(dev) == 0.0, "wrong number must fail"
    app.add_contact(dev, p["name"] + "s", p["number"])
    assert task.is_successful(dev) == 0.0, "wrong name must fail"
    d = p["number"][2:]
    app.add_contact(dev, p["name"], f"+1 ({d[:3]}) {d[3:6]}-{d[6:]}")
    assert task.is_successful(dev) == 1.0, "the number is compared by digits"


def test_add_contact_unsaved_form_fails_and_save_works(backend):
    p = reset(backend, "ContactsAddContact")
    first, _, last = p["name"].partition(" ")
    open_editor(backend)
    fill(backend, "First name", first)
    fill(backend, "Last name", last)
    fill(backend, "Phone", p["number"])
    assert backend.score() == 0.0, "filled but not saved"
    n = len(backend.phone.dev.contacts)
    act(backend, click(view(backend).find(text="Save")))
    assert len(backend.phone.dev.contacts) == n + 1
    assert view(backend).find(rid=f"{app.PKG}:id/large_title", text=p["name"]) is not None
    assert backend.score() == 1.0


def test_add_contact_last_name_in_wrong_field_fails(backend):
    p = reset(backend, "ContactsAddContact")
    first, _, last = p["name"].partition(" ")
    open_editor(backend)
    fill(backend, "First name", first)
    fill(backend, "Company", last)
    fill(backend, "Phone", p["number"])
    act(backend, click(view(backend).find(text="Save")))
    assert backend.score() == 0.0


def test_discard_dialog_keeps_provider_unchanged(backend):
    reset(backend, "ContactsAddContact")
    n = len(backend.phone.dev.contacts)
    open_editor(backend)
    fill(backend, "First name", "Zed")
    act(backend, back())  # closes the keyboard
    act(backend, back())  # asks to discard
    assert view(backend).has(text="Discard changes?")
    act(backend, click(view(backend).find(text="Discard")))
    assert view(backend).has(desc="Create contact")
    assert len(backend.phone.dev.contacts) == n


def add_others(backend) -> None:
    """Three contacts to list (the tasks start with none)."""
    others = (("Ana Ruiz", "+15550001111"), ("Ben Ode", "+15550002222"), ("Cy Park", "+15550003333"))
    for name, number in others:
        app.add_contact(backend.phone.dev, name, number)


def test_delete_contact_through_ui(backend):
    reset(backend, "ContactsAddContact")
    dev = backend.phone.dev
    add_others(backend)
    victim = sorted(c["name"] for c in dev.contacts)[0]
    act(backend, open_app("Contacts"))
    act(backend, click(view(backend).find(text=victim)))
    act(backend, click(view(backend).find(desc="More options")))
    act(backend, click(view(backend).find(text="Delete")))
    assert view(backend).has(text="Delete this contact?")
    act(backend, click(view(backend).find(text="Delete", cls="Button")))
    assert victim not in [c["name"] for c in dev.contacts]
    assert not view(backend).has(text=victim)


def test_search_filters_the_list(backend):
    reset(backend, "ContactsAddContact")
    add_others(backend)
    names = sorted(c["name"] for c in backend.phone.dev.contacts)
    act(backend, open_app("Contacts"))
    act(backend, type_into(view(backend).find(hint="Search contacts"), names[-1]))
    shown = [view(backend).el(i).text for i in view(backend).find_all(rid=f"{app.PKG}:id/cliv_name_textview")]
    assert shown == [names[-1]]


# -- ContactsNewContactDraft -----------------------------------------------------------------------------
def test_draft_expert_then_save_fails(backend):
    reset(backend, "ContactsNewContactDraft")
    run_expert_until_done(backend)
    assert backend.score() == 1.0
    act(backend, click(view(backend).find(text="Save")))  # AndroidWorld: "Do NOT hit save"
    assert backend.score() == 0.0


def test_draft_wrong_label_or_phone_fails(backend):
    p = reset(backend, "ContactsNewContactDraft")
    open_editor(backend)
    fill(backend, "First name", p["first"])
    fill(backend, "Last name", p["last"])
    fill(backend, "Phone", p["phone"])
    assert backend.score() == 0.0, "label still Mobile"
    act(backend, click(view(backend).find(cls="Spinner")))
    other = "Work" if p["phone_label"] == "Home" else "Home"
    act(backend, click(view(backend).find(text=other)))
    assert backend.score() == 0.0, "wrong label"
    act(backend, click(view(backend).find(cls="Spinner")))
    act(backend, click(view(backend).find(text=p["phone_label"])))
    assert backend.score() == 1.0
    fill(backend, "Phone", p["phone"][:-1])
    assert backend.score() == 0.0, "a digit missing"


def test_draft_fails_when_contacts_not_in_front(backend):
    reset(backend, "ContactsNewContactDraft")
    run_expert_until_done(backend)
    act(backend, Action("navigate_home"))
    assert backend.score() == 0.0
    act(backend, open_app("Contacts"))  # the draft is still there
    assert backend.score() == 1.0
    act(backend, done())
