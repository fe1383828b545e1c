"""Joplin information-retrieval tasks (AndroidWorld's Notes* IR family): read a note or count to-dos.

As in AndroidWorld, the relevant notes are seeded among 100 noise notes (30% of them in the relevant
notebooks) that never satisfy all of the task's exclusion conditions; answers are checked by `check_answer`.
"""

from __future__ import annotations

import random
import re
from typing import Any

from voyager_gym.actions import Action
from voyager_gym.backends.sim.apps.joplin import PKG, add_note
from voyager_gym.backends.sim.device import DeviceState
from voyager_gym.backends.sim.tasks import ir_vocab, vocab
from voyager_gym.backends.sim.tasks.base import (
    SimTask,
    View,
    answer_once,
    back,
    click,
    done,
    open_app,
    register_task,
    scroll,
    scroll_to_find,
    type_into,
)
from voyager_gym.backends.sim.tasks.common import (
    Question,
    list_at_end,
)

DAY_MS = 86_400_000

# Noise notebooks and notes (our own text): title -> body.
NOISE: dict[str, dict[str, str]] = {
    "Recipes": {
        "Lemon Garlic Chicken": "Ingredients:\n- 2 chicken breasts\n- 1 lemon\n- 3 cloves garlic\n\nBake.",
        "Overnight Oats": "Ingredients:\n- 1/2 cup oats\n- 1/2 cup milk\n- 1 tablespoon honey\n\nChill.",
        "Tomato Basil Soup": "Ingredients:\n- 4 tomatoes\n- 1 onion\n- 1 cup stock\n\nSimmer and blend.",
        "Veggie Omelette": "Ingredients:\n- 3 eggs\n- 1/4 cup peppers\n- 1/4 cup spinach\n\nCook gently.",
        "Banana Muffins": "Ingredients:\n- 2 bananas\n- 1 1/2 cups flour\n- 1/3 cup sugar\n\nBake.",
        "Greek Salad": "Ingredients:\n- 1 cucumber\n- 2 tomatoes\n- 1/2 cup feta\n\nToss with olive oil.",
    },
    "Tasks": {
        "Morning Checklist": "- Stretch\n- Make coffee\n- Review calendar",
        "Errands": "- Post office\n- Pharmacy\n- Hardware store",
        "Weekend Chores": "- Laundry\n- Vacuum\n- Water plants",
        "Email Cleanup": "Archive old threads and unsubscribe from newsletters.",
        "Car Maintenance": "Rotate tires and check the oil level.",
    },
    "Meeting Notes": {
        "Design Review - Sep 12": "Meeting Notes:\n- Reviewed mockups\n- Agreed on colour palette",
        "Ops Standup - Sep 19": "Standup:\n- Deploy went fine\n- Pager rotation updated",
        "Vendor Call - Aug 30": "Call notes:\n- Pricing discussed\n- Follow-up next month",
        "Retro - Sprint 14": "Retro:\n- What went well\n- What to improve\n- Action items",
        "Hiring Sync - Oct 2": "Sync:\n- Two candidates on site\n- Feedback due Friday",
    },
    "Personal": {
        "Books to Read": "- The Hobbit\n- Dune\n- Sapiens",
        "Gift Ideas": "- Scarf for Anna\n- Board game for Tom",
        "Gratitude Log": "Sunny walk in the park. Good call with an old friend.",
        "Movie Night Picks": "- Arrival\n- Amelie\n- Spirited Away",
        "Dream Notes": "Flying over a city made of glass.",
    },
    "Work": {
        "Quarterly Goals": "- Ship the billing revamp\n- Cut build times in half",
        "Onboarding Checklist": "- Laptop setup\n- Accounts\n- Intro meetings",
        "Client Contacts": "Maria - procurement\nKen - engineering lead",
        "Release Notes Draft": "Bug fixes and performance improvements.",
        "One-on-One Topics": "- Career goals\n- Workload\n- Feedback",
    },
    "School": {
        "Biology Chapter 3": "Cells, organelles and membranes.",
        "Essay Outline": "Intro, three arguments, counterpoint, conclusion.",
        "Spanish Vocabulary": "- la ventana: window\n- el cuchillo: knife",
        "Exam Dates": "Math: Nov 3\nHistory: Nov 10",
        "Lab Safety Rules": "Goggles on. No food in the lab.",
    },
    "Home": {
        "Paint Colors": "Living room: sage green. Hallway: warm white.",
        "Plumber Quote": "Replace kitchen faucet: about 180 dollars.",
        "Garden Plan": "- Tomatoes\n- Basil\n- Peppers",
        "Cleaning Schedule": "Monday bathrooms, Thursday floors.",
        "Wi-Fi Setup": "Router in the hallway closet.",
    },
    "Projects": {
        "Bird Feeder Build": "Cedar boards, screws, a small roof.",
        "Photo Book": "Collect summer photos and pick a layout.",
        "Blog Relaunch": "- New theme\n- Migrate posts\n- Write about page",
        "Home Server": "Raspberry Pi with backups every night.",
        "Podcast Pilot": "Record the first episode about local history.",
    },
    "Ideas": {
        "App Ideas": "A plant-watering reminder with photos.",
        "Story Prompts": "A lighthouse keeper who collects letters.",
        "Side Business": "Selling handmade candles online.",
        "Weekend Trips": "Lake cabin, wine country, the coast.",
        "Party Themes": "Retro arcade night.",
    },
    "Health": {
        "Workout Plan": "- Monday: legs\n- Wednesday: back\n- Friday: cardio",
        "Doctor Questions": "Ask about vitamin D levels.",
        "Sleep Log": "Average 7 hours this week.",
        "Meal Prep": "Rice, beans, roasted vegetables.",
        "Stretching Routine": "Ten minutes every morning.",
    },
    "Travel": {
        "Packing List": "- Passport\n- Charger\n- Rain jacket",
        "Lisbon Itinerary": "Day 1: Alfama. Day 2: Belem. Day 3: Sintra.",
        "Hotel Options": "Two near the station, one by the river.",
        "Road Trip Stops": "Diner, canyon viewpoint, hot springs.",
        "Travel Budget": "Flights 600, hotels 450, food 300.",
    },
    "Finance": {
        "Monthly Budget": "Rent, utilities, groceries, savings.",
        "Subscriptions": "- Music\n- Cloud storage\n- News",
        "Tax Documents": "W-2, 1099, donation receipts.",
        "Savings Goals": "Emergency fund: six months of expenses.",
        "Investment Notes": "Rebalance the portfolio in January.",
    },
}
NOISE_FOLDERS = sorted(NOISE)


def seed_notes(
    task: SimTask, dev: DeviceState, relevant: list[dict[str, Any]], excluded: Any, n_noise: int = 100
) -> None:
    """Seed the relevant notes among noise; `excluded(note)` rejects noise that would change the answer."""
    rng = task.rng("notes")
    folders = [r["folder"] for r in relevant]
    notes: list[dict[str, Any]] = []
    while len(notes) < n_noise:
        folder = (
            rng.choice(folders) if rng.random() < 0.3 and folders[0] in NOISE else rng.choice(NOISE_FOLDERS)
        )
        title, body = rng.choice(sorted(NOISE[folder].items()))
        todo = rng.random() < 0.5
        cand = {
            "folder": folder,
            "title": title,
            "body": body,
            "is_todo": todo,
            "completed": todo and rng.random() < 0.5,
        }
        if not excluded(cand):
            notes.append(cand)
    notes += [dict(r, completed=False) for r in relevant]
    rng.shuffle(notes)
    for i, n in enumerate(notes):
        add_note(
            dev,
            n["folder"],
            n["title"],
            n["body"],
            n["is_todo"],
            n["completed"],
            updated_ms=dev.time_ms - (i + 1) * DAY_MS // 3 - rng.randrange(DAY_MS // 4),
        )


class _NotesIR(Question):
    """A Joplin question: the `answer` text against the seeded answer."""

    app_names = ("joplin",)


def open_note(view: View, mem: dict[str, Any], title: str) -> Action | None:
    """Reach the note titled `title` through Joplin's search; None once its viewer is showing."""
    if view.app != PKG:
        return open_app("Joplin")
    if view.has(desc="Edit"):  # the note viewer
        return None if view.has(text=title) else back()
    if view.title == "Search":
        field = view.find(editable=True)
        if field is not None and view.el(field).text != title:
            return type_into(field, title)
        hit = view.find(text=title, editable=False)
        return click(hit) if hit is not None else back()
    if view.has(desc="Side menu") and not view.has(text="NOTEBOOKS"):
        return click(view.find(desc="Search"))
    return back()


class _NoteLookup(_NotesIR):
    """A question answered from the text of one seeded note (params `title` and `body`) in `folder`."""

    folder = ""

    def initialize(self, dev: DeviceState) -> None:
        p = self.params
        seed_notes(
            self,
            dev,
            [{"folder": self.folder, "title": p["title"], "body": self.body(), "is_todo": False}],
            lambda n: p["title"].lower() in n["title"].lower(),
        )

    def body(self) -> str:
        """The note's text: the body param with the other params filled in (as AndroidWorld fills it)."""
        return self.params["body"].format(**self.params)

    def pick(self, text: str) -> str | None:
        """The answer if `text` (one line of the note) holds it, else None."""
        raise NotImplementedError

    def expert(self, view: View, mem: dict[str, Any]) -> Action:
        if mem.get("answered"):
            return done()
        act = open_note(view, mem, self.params["title"])
        if act is not None:
            return act
        for t in view.texts():
            got = self.pick(t)
            if got is not None:
                return answer_once(mem, got)
        return scroll("down", view.scrollable())


@register_task
class NotesIsTodo(_NotesIR):
    template = (
        "Is the note titled '{title}' in the Joplin app marked as a todo item? Respond with either 'True' "
        "if it is a todo or 'False' if not."
    )
    # the params (tasks/ir_vocab.py): title, is_todo, body, folder

    def initialize(self, dev: DeviceState) -> None:
        p = self.params
        seed_notes(
            self,
            dev,
            [
                {
                    "folder": p["folder"],
                    "title": p["title"],
                    "body": p["body"],
                    "is_todo": p["is_todo"] == "True",
                }
            ],
            lambda n: n["title"].lower() == p["title"].lower(),
        )

    def expected(self) -> str:
        return self.params["is_todo"]

    def expert(self, view: View, mem: dict[str, Any]) -> Action:
        if mem.get("answered"):
            return done()
        act = open_note(view, mem, self.params["title"])
        if act is not None:
            return act
        return answer_once(mem, "True" if view.has(cls="CheckBox") else "False")


@register_task
class NotesMeetingAttendeeCount(_NoteLookup):
    match = "number"
    folder = "Meeting Notes"
    template = (
        "How many attendees were present in the meeting titled '{title}' in the Joplin app? Express your "
        "answer as just a single number."
    )
    # the params (tasks/ir_vocab.py): title, attendee_count, and a body that holds "{attendee_count}" until
    # the note is written

    def expected(self) -> str:
        return self.params["attendee_count"]

    def pick(self, text: str) -> str | None:
        if re.search(r"\d", text) and re.search(r"attend|present|particip|people|headcount", text, re.I):
            return re.search(r"\d+", text).group()
        return None


@register_task
class NotesRecipeIngredientCount(_NoteLookup):
    folder = "Recipes"
    template = (
        "What quantity of {ingredient} do I need for the recipe '{title}' in the Joplin app? Express your "
        "answer in the format <amount> <unit> where both the amount and unit exactly match the format in "
        "the recipe."
    )
    # the params (tasks/ir_vocab.py): title, ingredient_quantity, ingredient, and a body holding
    # "{ingredient_quantity} {ingredient}"

    def expected(self) -> str:
        return self.params["ingredient_quantity"]

    def pick(self, text: str) -> str | None:
        ing = self.params["ingredient"].lower()
        return text[: -len(ing)].strip() if text.lower().endswith(ing) and text[:1].isdigit() else None


@register_task
class NotesTodoItemCount(_NotesIR):
    match = "number"
    template = (
        "How many to-dos do I have in the '{folder}' folder in the Joplin app? Express your answer as just "
        "a single number."
    )
    # the params (tasks/ir_vocab.py): folder, title, body (the notes draw their own, see below)

    def initialize(self, dev: DeviceState) -> None:
        """Three to-dos in the folder, each a title then a body drawn without replacement (the `title` and
        `body` params excluded) from a generator seeded with the instance seed, as AndroidWorld fills its
        definition."""
        f = self.params["folder"]
        pool = vocab.WithoutReplacement(dict(ir_vocab.IR_PARAMS[self.name]), self.params)
        rng = random.Random(self.params.get("seed", 0))
        self.notes = [(pool.draw(rng, "title"), pool.draw(rng, "body")) for _ in range(3)]
        rel = [{"folder": f, "title": t, "body": b, "is_todo": True} for t, b in self.notes]
        self.n_todos = len(rel)
        seed_notes(self, dev, rel, lambda n: n["is_todo"] and n["folder"].lower() == f.lower())

    def expected(self) -> str:
        return str(self.n_todos)

    def expert(self, view: View, mem: dict[str, Any]) -> Action:
        if mem.get("answered"):
            return done()
        folder = self.params["folder"]
        if view.app != PKG:
            return open_app("Joplin")
        if view.has(text="NOTEBOOKS"):  # the side menu is open
            found = scroll_to_find(view, mem, "folder", text=folder)
            return click(found) if isinstance(found, int) else found
        if not view.has(desc="Side menu"):
            return back()
        if view.title != folder:
            return click(view.find(desc="Side menu"))
        seen: set[str] = mem.setdefault("todos", set())
        for i in view.find_all(cls="CheckBox"):
            if i + 1 < len(view) and view.el(i + 1).text:
                seen.add(view.el(i + 1).text)
        lst = view.scrollable()
        if lst is None or list_at_end(view, lst):
            return answer_once(mem, str(len(seen)))
        return scroll("down", lst)


