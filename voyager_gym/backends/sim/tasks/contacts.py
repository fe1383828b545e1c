"""Contacts tasks: ContactsAddContact (checked in the contacts provider) and ContactsNewContactDraft (checked
on the open editor, unsaved, as AndroidWorld reads it from the screen). The name and number generators,
which the SMS tasks share, are in tasks/common.py."""

from __future__ import annotations

import random
from typing import Any

from voyager_gym.actions import Action
from voyager_gym.backends.sim.apps import contacts as app
from voyager_gym.backends.sim.device import DeviceState
from voyager_gym.backends.sim.tasks.base import (
    SimTask,
    View,
    aw_fuzzy_match,
    back,
    click,
    digits,
    done,
    open_app,
    register_task,
    type_into,
)
from voyager_gym.backends.sim.tasks.common import (
    random_name,
    random_number,
)

PKG = app.PKG
DRAFT_FIRST = ("Alice", "Bob", "Charlie", "David", "Eva", "Frank", "Grace", "Hannah", "Ivan", "Jack")
DRAFT_LAST = ("Johnson", "Smith", "Brown", "Taylor", "Adams", "Wilson", "Lee", "White", "Harris", "Clark")


def contacts_editor_expert(
    view: View, mem: dict[str, Any], first: str, last: str, phone: str, label: str | None
) -> Action | None:
    """Fill the Create contact form (and pick `label` when given); None once the form shows everything."""
    if view.app != PKG:
        return open_app("Contacts")
    opt = view.find(rid="android:id/text1")
    if opt is not None:  # the phone-label popup
        want = view.find(text=label, rid="android:id/text1") if label else None
        return click(want) if want is not None else back()
    if view.title not in ("Create contact", "Edit contact"):
        fab = view.find(desc="Create contact")
        return click(fab) if fab is not None else back()
    for hint, value in (("First name", first), ("Last name", last), ("Phone", phone)):
        i = view.find(hint=hint, editable=True)
        if i is None:
            return back()
        cur = view.el(i).text or ""
        ok = digits(cur) == digits(value) if hint == "Phone" else cur == value
        if not ok:
            return type_into(i, value)
    if label:
        sp = view.find(cls="Spinner")
        if sp is None:
            return back()
        if view.el(sp).text != label:
            return click(sp)
    return None


@register_task
class ContactsAddContact(SimTask):
    """Create a contact; the provider must then hold (display name, digits of the number)."""

    app_names = ("contacts",)
    complexity = 1.2
    template = "Create a new contact for {name}. Their number is {number}."

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return {"name": random_name(rng), "number": random_number(rng)}

    def initialize(self, dev: DeviceState) -> None:
        dev.contacts.clear()  # AndroidWorld clears the contacts provider first

    def is_successful(self, dev: DeviceState) -> float:
        want = (self.params["name"], digits(self.params["number"]))
        return 1.0 if any((c.get("name"), digits(c.get("phone", ""))) == want for c in dev.contacts) else 0.0

    def expert(self, view: View, mem: dict[str, Any]) -> Action:
        if mem.get("saved"):
            if view.find(rid=f"{PKG}:id/large_title", text=self.params["name"]) is not None:
                return done()
            mem.pop("saved")
        first, _, last = self.params["name"].partition(" ")
        act = contacts_editor_expert(view, mem, first, last, self.params["number"], None)
        if act is not None:
            return act
        mem["saved"] = True
        return click(view.find(text="Save"))


@register_task
class ContactsNewContactDraft(SimTask):
    """Fill the new-contact form without saving; AndroidWorld checks the editor on screen."""

    app_names = ("contacts",)
    complexity = 1.2
    template = (
        "Go to the new contact screen and enter the following details: First Name: {first}, Last Name: "
        "{last}, Phone: {phone}, Phone Label: {phone_label}. Do NOT hit save."
    )

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return {
            "first": rng.choice(DRAFT_FIRST),
            "last": rng.choice(DRAFT_LAST),
            "phone": f"{rng.randint(100, 999)}-{rng.randint(100, 999)}-{rng.randint(1000, 9999)}",
            "phone_label": rng.choice(("Home", "Work")),
        }

    def initialize(self, dev: DeviceState) -> None:
        dev.contacts.clear()  # AndroidWorld adds no contacts for this task

    def is_successful(self, dev: DeviceState) -> float:
        """The editor must be the screen in front of Contacts, showing the four values (not saved)."""
        if dev.foreground != PKG or not dev.stacks.get(PKG):
            return 0.0
        top = next((s for s in reversed(dev.stacks[PKG]) if not s.modal), None)
        if not isinstance(top, app.ContactEditorScreen):
            return 0.0
        p = self.params
        ok = (
            aw_fuzzy_match(top.field("first"), p["first"])
            and aw_fuzzy_match(top.field("last"), p["last"])
            and digits(top.field("phone")) == digits(p["phone"])
            and top.label == p["phone_label"]
        )
        return 1.0 if ok else 0.0

    def expert(self, view: View, mem: dict[str, Any]) -> Action:
        p = self.params
        return (
            contacts_editor_expert(view, mem, p["first"], p["last"], p["phone"], p["phone_label"]) or done()
        )
