"""Markor tasks: create (typed, pasted, or merged from three notes), edit, rename, move and delete notes
(files under Documents/Markor), a note whose text is then sent by SMS, and one transcribing a video's frames.

Verifiers follow AndroidWorld's file checks: a name "exists" when that exact path is under the folder (file or
folder), contents fuzzy-match (SequenceMatcher >= 0.9, case-insensitive, CR removed, stripped) except
MarkorAddNoteHeader's exact match, and MarkorDeleteNewestNote compares the (name, time) list oldest-first.
MarkorMergeNotes adds AndroidWorld's line check; MarkorCreateNoteAndSms scores half per app.
Noise notes are generated around the targets the way AndroidWorld varies file names (date prefixes, random or
fixed suffixes). The word lists are AndroidWorld's.
"""

from __future__ import annotations

import datetime as dt
import posixpath
import random
from typing import Any

from voyager_gym.actions import Action
from voyager_gym.backends.sim.apps.markor import EDITOR_KEY, MARKOR_DIR
from voyager_gym.backends.sim.apps.markor import PKG as MARKOR
from voyager_gym.backends.sim.apps.vlc import clip_content
from voyager_gym.backends.sim.device import SDCARD, START_MS, DeviceState
from voyager_gym.backends.sim.tasks import vocab
from voyager_gym.backends.sim.tasks.base import (
    SimTask,
    View,
    aw_fuzzy_match,
    back,
    click,
    done,
    long_press,
    open_app,
    register_task,
    scroll_to_find,
    type_into,
)
from voyager_gym.backends.sim.tasks.common import (
    ITEM_RID,
    at_markor_root,
    clear_markor,
    clear_sms,
    clear_storage,
    compose_expert,
    create_file,
    create_note_expert,
    created_file_ok,
    editor_text,
    exists_under,
    find_note,
    markor_screen,
    moved,
    new_file_expert,
    noise_names,
    open_note,
    sms_params,
    sms_sent_score,
    video_file_name,
    watch_expert,
)

SENTENCES = vocab.SENTENCES
# AndroidWorld's usual note titles (noise files vary them) and MarkorMoveNote's folders, in its order.
NOTE_TITLES = (
    "grocery_list_weekly.md", "meeting_notes_project_team.md", "personal_goals_2024.md",
    "reading_list_2024.md", "research_paper_summary.md", "summer_vacation_plans.md",
    "budget_home_renovation.md", "april_workout_routine.md", "birthday_gift_ideas_mom.md",
    "recipe_homemade_pizza.md", "weekend_todo_list.md", "insurance_plan_comparison.md",
    "art_project_sketches.md", "python_learning_goals.md", "trip_reflections_recent.md",
    "startup_ideas_launch.md", "client_meetings_schedule.md", "favorite_book_quotes.md",
    "garden_layout_plan.md", "upcoming_presentation_outline.md",
)
MARKOR_SUBFOLDERS = (
    "BookNotes", "CodeSnippets", "DailyNotes", "FitnessPlans", "MeetingMinutes",
    "PersonalJournal", "RecipeCollections", "StudyGuides", "TravelItineraries", "WorkProjects",
)
NOTE_EXTS = (".md", ".txt")
# -- generators (AndroidWorld's naming scheme and words, in its order of draws) --------------------------
random_string = vocab.random_string
random_file_name = vocab.random_file_name


def random_note(rng: random.Random) -> tuple[str, str]:
    """(file name with .md or .txt, a sentence): AndroidWorld draws both even where only the name is used."""
    name = random_file_name(rng) + rng.choice(NOTE_EXTS)
    return name, rng.choice(SENTENCES)


def random_note_name(rng: random.Random) -> str:
    return random_note(rng)[0]


def top_level_files(dev: DeviceState, folder: str = MARKOR_DIR) -> list[tuple[str, int]]:
    """(name, change time) of the regular files directly in `folder`, oldest first."""
    return sorted(((posixpath.basename(f), e.mtime_ms) for f, e in dev.files.items()
                   if posixpath.dirname(f) == folder), key=lambda t: (t[1], t[0]))


class _Markor(SimTask):
    app_names = ("markor",)

    def initialize(self, dev: DeviceState) -> None:
        clear_markor(dev)

    def add_noise(self, dev: DeviceState, base: str, folder: str = MARKOR_DIR, n: int = 20,
                  rng: random.Random | None = None) -> None:
        rng = rng or self.setup_rng()
        for name in noise_names(rng, base, NOTE_TITLES, n):
            if not dev.exists(f"{folder}/{name}"):
                create_file(dev, f"{folder}/{name}", "", rng)


@register_task
class MarkorCreateNote(_Markor):
    complexity = 1.6
    template = "Create a new note in Markor named {file_name} with the following text: {text}"

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        name, text = random_note(rng)
        return {"file_name": name, "text": text}

    def initialize(self, dev: DeviceState) -> None:
        super().initialize(dev)
        clear_storage(dev)

    def is_successful(self, dev: DeviceState) -> float:
        return 1.0 if created_file_ok(dev, self.params["file_name"], self.params["text"]) else 0.0

    def expert(self, view: View, mem: dict[str, Any]) -> Action:
        return create_note_expert(view, mem, self.params["file_name"], self.params["text"])


@register_task
class MarkorCreateNoteFromClipboard(_Markor):
    """The clipboard holds the text (AndroidWorld sets it through Clipper); the note must hold it too."""

    app_names = ("markor", "clipper")
    complexity = 1.4
    template = ("Create a note in Markor named {file_name}. Perform a paste operation in the note and save "
                "the note.")

    def __init__(self, params: dict[str, Any]):
        super().__init__(params)
        if not self.params.get("file_content"):  # as AndroidWorld's constructor fills it in
            self.params["file_content"] = random_string(self.rng("content"), 20)

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return {"file_name": random_note_name(rng), "file_content": random_string(rng, 10)}

    def initialize(self, dev: DeviceState) -> None:
        super().initialize(dev)
        dev.clipboard = self.params["file_content"]
        clear_storage(dev)

    def is_successful(self, dev: DeviceState) -> float:
        return 1.0 if created_file_ok(dev, self.params["file_name"], self.params["file_content"]) else 0.0

    def expert(self, view: View, mem: dict[str, Any]) -> Action:
        """New note, long-press the editor, Paste, Save."""
        name = self.params["file_name"]
        if markor_screen(view) != "editor" or view.title != name:
            return new_file_expert(view, name)
        if mem.get("saved"):
            return done()
        if editor_text(view):
            mem["saved"] = True
            return click(view.find(desc="Save"))
        paste = view.find(desc="Paste")
        return click(paste) if paste is not None else long_press(view.find(rid=f"{MARKOR}:id/{EDITOR_KEY}"))


@register_task
class MarkorCreateFolder(_Markor):
    complexity = 1.0
    template = "Create a new folder in Markor named {folder_name}."

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        t = dt.datetime(2023, 10, 15, 15, 34) - dt.timedelta(seconds=rng.randint(0, 400 * 86400))
        return {"folder_name": "folder_" + t.strftime("%Y%m%d_%H%M%S")}

    def initialize(self, dev: DeviceState) -> None:
        super().initialize(dev)
        self.add_noise(dev, "file")

    def is_successful(self, dev: DeviceState) -> float:
        return 1.0 if exists_under(dev, MARKOR_DIR, self.params["folder_name"]) else 0.0

    def expert(self, view: View, mem: dict[str, Any]) -> Action:
        """As for a new note, with the dialog's Folder button instead of OK."""
        if mem.get("created"):
            return done()
        a = new_file_expert(view, self.params["folder_name"], button="Folder")
        in_dialog = markor_screen(view) == "dialog:Create a new file or folder"
        mem["created"] = in_dialog and a.action_type == "click"  # the Folder button
        return a


@register_task
class MarkorDeleteNote(_Markor):
    complexity = 1.0
    template = "Delete the note in Markor named {file_name}."

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return {"file_name": random_file_name(rng), "noise_candidates": list(NOTE_TITLES)}

    def initialize(self, dev: DeviceState) -> None:
        super().initialize(dev)
        clear_storage(dev)
        rng = self.setup_rng()
        create_file(dev, f"{MARKOR_DIR}/{self.params['file_name']}", "", rng)
        self.add_noise(dev, self.params["file_name"], rng=rng)

    def is_successful(self, dev: DeviceState) -> float:
        return 0.0 if exists_under(dev, MARKOR_DIR, self.params["file_name"]) else 1.0

    def expert(self, view: View, mem: dict[str, Any]) -> Action:
        return delete_expert(view, mem, self.params["file_name"])


def delete_expert(view: View, mem: dict[str, Any], name: str | None, select_all: bool = False) -> Action:
    """Long-press the note (or the first row), Delete, OK, done."""
    if mem.get("deleted"):
        return done()
    s = markor_screen(view)
    if s == "other":
        return open_app("Markor")
    if s == "dialog:Delete":
        mem["deleted"] = True
        return click(view.find(text="OK"))
    if s == "selection":
        title = view.title or ""
        if select_all and not mem.get("all"):
            mem["all"] = True
            return click(view.find(desc="Select all"))
        if select_all or title == "1 selected":
            return click(view.find(desc="Delete"))
        return back()
    if s == "list":
        if name is None:
            rows = view.find_all(rid=ITEM_RID)
            return long_press(rows[0]) if rows and at_markor_root(view) else back()
        return open_note(view, mem, name, press=True)
    return back()


@register_task
class MarkorDeleteNewestNote(_Markor):
    complexity = 1.0
    template = "Delete the newest note in Markor."

    def initialize(self, dev: DeviceState) -> None:
        """2-6 notes, the device clock moved by -500..500 minutes after each (a repeated name overwrites the
        note, as there), drawn as AndroidWorld draws them."""
        super().initialize(dev)
        rng = self.setup_rng()
        t = START_MS
        for _ in range(rng.randint(2, 6)):
            name, text = random_note(rng)
            create_file(dev, f"{MARKOR_DIR}/{name}", text)
            dev.files[f"{MARKOR_DIR}/{name}"].mtime_ms = t
            t += rng.randint(-500, 500) * 60_000
        dev.time_ms = t  # the clock stays where the last move left it, as on the emulator
        self.initial = top_level_files(dev)

    def is_successful(self, dev: DeviceState) -> float:
        now = top_level_files(dev)
        if len(now) != len(self.initial) - 1:
            return 0.0
        return 1.0 if all(a == b for a, b in zip(now, self.initial, strict=False)) else 0.0

    def expert(self, view: View, mem: dict[str, Any]) -> Action:
        s = markor_screen(view)
        if not mem.get("deleted") and s == "menu":
            mem["sorted"] = True
            return click(view.find(text="Date"))
        if not mem.get("deleted") and s == "list" and not mem.get("sorted"):
            return click(view.find(desc="Sort by")) if at_markor_root(view) else back()
        return delete_expert(view, mem, None)


@register_task
class MarkorDeleteAllNotes(_Markor):
    complexity = 1.4
    template = "Delete all my notes in Markor."

    def initialize(self, dev: DeviceState) -> None:
        super().initialize(dev)
        rng = self.setup_rng()
        self.add_noise(dev, random_string(rng, 5), n=rng.randint(2, 6), rng=rng)

    def is_successful(self, dev: DeviceState) -> float:
        return 0.0 if top_level_files(dev) else 1.0

    def expert(self, view: View, mem: dict[str, Any]) -> Action:
        return delete_expert(view, mem, None, select_all=True)


@register_task
class MarkorEditNote(_Markor):
    complexity = 1.2
    templates = {
        "header": "Edit {file_name} in Markor. Add to the top of the note {header}",
        "footer": "Edit {file_name} in Markor. Add to the bottom of the note {footer}",
        "replace": "Edit {file_name} in Markor. Replace the text with {replace_text}",
    }

    @property
    def goal(self) -> str:
        return self.templates[self.params["edit_type"]].format(**self.params)

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        params: dict[str, Any] = {"file_name": "note_" + random_string(rng, 5) + rng.choice(NOTE_EXTS),
                                  "edit_type": rng.choice(("header", "footer", "replace"))}
        if params["edit_type"] == "header":
            params["header"] = rng.choice(SENTENCES)
        elif params["edit_type"] == "footer":
            params["footer"] = rng.choice(SENTENCES)
        else:
            params["replace_text"] = "\n".join(rng.choice(SENTENCES) for _ in range(3))
        return params

    def initialize(self, dev: DeviceState) -> None:
        """Noise notes, then the note with a random sentence, drawn as AndroidWorld draws them (its setup
        seeds `random` with the instance seed): the rule compares with that sentence."""
        super().initialize(dev)
        rng = self.setup_rng()
        self.add_noise(dev, self.params["file_name"], rng=rng)
        self.original = create_file(dev, f"{MARKOR_DIR}/{self.params['file_name']}", rng.choice(SENTENCES))

    def expected(self) -> str:
        p = self.params
        if p["edit_type"] == "header":
            return p["header"] + "\n" + self.original
        if p["edit_type"] == "footer":
            return self.original + "\n" + p["footer"]
        return p["replace_text"]

    def is_successful(self, dev: DeviceState) -> float:
        content = dev.read_file(f"{MARKOR_DIR}/{self.params['file_name']}") or ""
        return 1.0 if aw_fuzzy_match(content.replace("\r", "").strip(), self.expected()) else 0.0

    def expert(self, view: View, mem: dict[str, Any]) -> Action:
        p = self.params
        s = markor_screen(view)
        if mem.get("saved"):
            return done()
        if s == "other":
            return open_app("Markor")
        if s == "editor":
            if view.title != p["file_name"]:
                return back()
            if not mem.get("typed"):
                cur = editor_text(view).strip()  # the note as the editor shows it
                new = {"header": lambda: p.get("header", "") + "\n" + cur,
                       "footer": lambda: cur + "\n" + p.get("footer", ""),
                       "replace": lambda: p.get("replace_text", "")}[p["edit_type"]]()
                mem["typed"] = True
                return type_into(view.find(rid=f"{MARKOR}:id/{EDITOR_KEY}"), new)
            mem["saved"] = True
            return click(view.find(desc="Save"))
        if s == "list":
            return open_note(view, mem, p["file_name"])
        return back()


class _EditAndRename(_Markor):
    """Shared by MarkorAddNoteHeader and MarkorChangeNoteContent: new content, then rename from the title."""

    def new_content(self) -> str:
        raise NotImplementedError

    def expert(self, view: View, mem: dict[str, Any]) -> Action:
        p = self.params
        s = markor_screen(view)
        if mem.get("renamed") and s == "editor" and view.title == p["new_name"]:
            return done()
        if s == "other":
            return open_app("Markor")
        if s == "dialog:Rename":
            f = view.find(hint="Name", editable=True)
            mem["renamed"] = True
            return type_into(f, p["new_name"])
        if s == "editor":
            if view.title != p["original_name"]:
                return back()
            if not mem.get("typed"):
                mem["typed"] = True
                return type_into(view.find(rid=f"{MARKOR}:id/{EDITOR_KEY}"), self.new_content())
            return click(view.find(rid_suffix=":id/toolbar_title"))
        if s == "list":
            return open_note(view, mem, p["original_name"])
        return back()

    def renamed_ok(self, dev: DeviceState) -> bool:
        return not exists_under(dev, MARKOR_DIR, self.params["original_name"]) and \
            exists_under(dev, MARKOR_DIR, self.params["new_name"])


@register_task
class MarkorAddNoteHeader(_EditAndRename):
    complexity = 1.2
    template = ('Update the Markor note {original_name} by adding the following text, along with a new blank '
                'line before the existing content: "{header}", and rename it to {new_name}.')

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        original = random_note_name(rng)
        content = rng.choice(SENTENCES)
        new = random_note_name(rng)  # as AndroidWorld: not redrawn if equal (no state passes; never seen)
        return {"original_name": original, "original_content": content, "new_name": new,
                "header": random_string(rng, 20)}

    def initialize(self, dev: DeviceState) -> None:
        super().initialize(dev)
        create_file(dev, f"{MARKOR_DIR}/{self.params['original_name']}", self.params["original_content"])
        self.add_noise(dev, self.params["original_name"], rng=self.setup_rng())

    def new_content(self) -> str:
        # input_text presses Enter after typing, which ends the text with the file's final newline
        return self.params["header"] + "\n\n" + self.params["original_content"]

    def is_successful(self, dev: DeviceState) -> float:
        if not self.renamed_ok(dev):
            return 0.0
        want = self.params["header"] + "\n\n" + self.params["original_content"] + "\n"
        return 1.0 if dev.read_file(f"{MARKOR_DIR}/{self.params['new_name']}") == want else 0.0


@register_task
class MarkorChangeNoteContent(_EditAndRename):
    complexity = 1.2
    template = ('Update the content of {original_name} to "{updated_content}" in Markor and change its name '
                'to {new_name}.')

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        original = random_note_name(rng)
        new = random_note_name(rng)  # as AndroidWorld, not redrawn if equal
        return {"original_name": original, "new_name": new, "updated_content": random_string(rng, 20)}

    def initialize(self, dev: DeviceState) -> None:
        super().initialize(dev)
        rng = self.setup_rng()
        create_file(dev, f"{MARKOR_DIR}/{self.params['original_name']}", "", rng)
        self.add_noise(dev, self.params["original_name"], rng=rng)

    def new_content(self) -> str:
        return self.params["updated_content"]

    def is_successful(self, dev: DeviceState) -> float:
        if not self.renamed_ok(dev):
            return 0.0
        content = dev.read_file(f"{MARKOR_DIR}/{self.params['new_name']}")
        text = None if content is None else content.replace("\r", "").strip()
        ok = text is not None and aw_fuzzy_match(text, self.params["updated_content"])
        return 1.0 if ok else 0.0


@register_task
class MarkorMoveNote(_Markor):
    complexity = 1.4
    template = "In Markor, move the note {file_name} from {source_folder} to {destination_folder}."

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        src = rng.choice(MARKOR_SUBFOLDERS)
        dst = rng.choice([f for f in MARKOR_SUBFOLDERS if f != src])
        return {
            "file_name": random_note_name(rng),
            "source_folder": src,
            "destination_folder": dst,
            "noise_candidates": list(NOTE_TITLES),
        }

    def initialize(self, dev: DeviceState) -> None:
        super().initialize(dev)
        clear_storage(dev)
        src = f"{MARKOR_DIR}/{self.params['source_folder']}"
        rng = self.setup_rng()
        self.add_noise(dev, self.params["file_name"], folder=src, rng=rng)
        create_file(dev, f"{src}/{self.params['file_name']}", "", rng)
        dev.mkdir(f"{MARKOR_DIR}/{self.params['destination_folder']}")

    def is_successful(self, dev: DeviceState) -> float:
        return 1.0 if moved(dev, MARKOR_DIR, self.params) else 0.0

    def expert(self, view: View, mem: dict[str, Any]) -> Action:
        p = self.params
        if mem.get("moved"):
            return done()
        s = markor_screen(view)
        if s == "other":
            return open_app("Markor")
        if s == "dialog:Move to":
            path = view.el(view.find(rid=f"{MARKOR}:id/folder_path")).text or ""
            if path == f"{MARKOR_DIR[len(SDCARD):]}/{p['destination_folder']}":
                mem["moved"] = True
                return click(view.find(text="OK"))
            if path == MARKOR_DIR[len(SDCARD):]:
                found = scroll_to_find(view, mem, "dest", text=p["destination_folder"])
                return click(found) if isinstance(found, int) else found
            return click(view.find(text=".."))
        if s == "selection":
            return click(view.find(desc="Move")) if view.title == "1 selected" else back()
        if s == "list":
            i = view.find(rid=f"{MARKOR}:id/path")
            here = view.el(i).text if i is not None else ""
            if here == f"{MARKOR_DIR[len(SDCARD):]}/{p['source_folder']}":
                found = find_note(view, mem, p["file_name"])
                return long_press(found) if isinstance(found, int) else found
            if at_markor_root(view):
                found = find_note(view, mem, p["source_folder"])
                return click(found) if isinstance(found, int) else found
        return back()


@register_task
class MarkorMergeNotes(_Markor):
    """Three notes (20 letters and digits each) merged, in order and a blank line apart, into a new note."""

    complexity = 7.8
    template = ("Merge the contents of Markor notes {file1_name}, {file2_name} and {file3_name} (in the same "
                "order) into a new Markor note named {new_file_name} and save it. Add a new line between the "
                "content of each note.")

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        names = [random_note_name(rng) for _ in range(3)]
        new = random_string(rng, 8)
        contents = [random_string(rng, 20) for _ in range(3)]
        return {**{f"file{i + 1}_name": n for i, n in enumerate(names)}, "new_file_name": new,
                **{f"file{i + 1}_content": c for i, c in enumerate(contents)}}

    def initialize(self, dev: DeviceState) -> None:
        super().initialize(dev)
        clear_storage(dev)
        for i in (1, 2, 3):
            create_file(dev, f"{MARKOR_DIR}/{self.params[f'file{i}_name']}", self.params[f"file{i}_content"])

    def is_successful(self, dev: DeviceState) -> float:
        p = self.params
        # AndroidWorld's reference text is the three contents a blank line apart, ending with create_file's
        # newline; then the file itself must be exactly 5 lines with the 2nd and 4th empty.
        merged = "\n\n".join(p[f"file{i}_content"] for i in (1, 2, 3)) + "\n"
        if not created_file_ok(dev, p["new_file_name"], merged):
            return 0.0
        content = dev.read_file(f"{MARKOR_DIR}/{p['new_file_name']}") or ""
        lines = content.replace("\r", "").strip().split("\n")
        return 1.0 if len(lines) == 5 and not lines[1] and not lines[3] else 0.0

    def expert(self, view: View, mem: dict[str, Any]) -> Action:
        """Note by note from the last: open it and read its text off the editor, then open the new note
        (created the first time, and renamed to drop the extension Markor adds) and put that text at its top,
        a blank line above what the note already holds; Save at the end."""
        p = self.params
        new = p["new_file_name"]
        k = mem.setdefault("merged", 0)  # notes typed into the new note so far
        if k == 3:
            if mem.get("saved") or not view.has(desc="Save"):
                return done()
            mem["saved"] = True
            return click(view.find(desc="Save"))
        source = p[f"file{3 - k}_name"]
        s = markor_screen(view)
        if s == "other":
            return open_app("Markor")
        if source not in mem:
            if s == "editor" and view.title == source:
                mem[source] = editor_text(view).strip()
                return back()
            return open_note(view, mem, source) if s == "list" else back()
        if s == "dialog:Rename":
            return type_into(view.find(hint="Name", editable=True), new)
        if s == "editor" and (view.title or "").startswith(new + "."):
            # Markor added its default extension to the new note: rename it from the title
            return click(view.find(rid_suffix=":id/toolbar_title"))
        if s != "editor" or view.title != new:
            if k == 0:
                return new_file_expert(view, new)
            return open_note(view, mem, new) if s == "list" else back()
        below = editor_text(view).rstrip("\n")
        mem["merged"] = k + 1
        return type_into(view.find(rid=f"{MARKOR}:id/{EDITOR_KEY}"),
                         mem[source] + ("\n\n" + below if below else ""))


@register_task
class MarkorCreateNoteAndSms(_Markor):
    """AndroidWorld's composite: MarkorCreateNote and SimpleSMSSendSms (the note's text to the number), each
    worth half the score."""

    app_names = ("markor", "simple sms messenger")
    complexity = 1.8
    template = ("Create a new note in Markor named {file_name} with the following text: {text}. Share the "
                "entire content of the note with the phone number {number} via SMS using Simple SMS "
                "Messenger")

    def __init__(self, params: dict[str, Any]):
        super().__init__(params)
        p = self.params
        self.markor_task = MarkorCreateNote({"file_name": p["file_name"], "text": p["text"]})

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        note = MarkorCreateNote.generate_random_params(rng)
        return {**note, "number": sms_params(rng)["number"]}

    def initialize(self, dev: DeviceState) -> None:
        super().initialize(dev)
        self.markor_task.initialize(dev)
        clear_sms(dev)

    def is_successful(self, dev: DeviceState) -> float:
        sms = sms_sent_score(dev, self.params["number"], self.params["text"])
        return (self.markor_task.is_successful(dev) + sms) / 2.0

    def expert(self, view: View, mem: dict[str, Any]) -> Action:
        """The note as MarkorCreateNote's expert writes it, then the same text sent from Simple SMS."""
        if not mem.get("noted"):
            a = create_note_expert(view, mem.setdefault("note", {}), self.params["file_name"],
                                   self.params["text"])
            if a.action_type != "status":
                return a
            mem["noted"] = True
        return compose_expert(view, mem.setdefault("sms", {}), self.params["number"], self.params["text"])


@register_task
class MarkorTranscribeVideo(_Markor):
    """A clip in Download shows 2-4 names, 8 s each, among 5-20 one-frame noise clips of 20-180 s."""

    app_names = ("markor", "vlc")
    complexity = 2.0
    template = (
        "Transcribe the contents of video {video_name} by watching it in VLC player (located in Download) "
        "and writing the sequence of strings shown on each frame to the text file {file_name} in Markor as a "
        'comma separated list. For example, if the first frame shows the text "edna" and the second frame '
        'shows the text "pineapple", then the text file should contain only the following text: '
        '"edna, pineapple".'
    )

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        messages = rng.sample(vocab.GIVEN_NAMES, rng.randint(2, 4))
        video = video_file_name(rng)
        return {
            "file_name": f"{video.split('.')[0]}_transcription.txt",
            "text": ",".join(messages),
            "messages": messages,
            "video_name": video,
            "noise_files": [video_file_name(rng) for _ in range(rng.randint(5, 20))],
        }

    def initialize(self, dev: DeviceState) -> None:
        super().initialize(dev)
        clear_storage(dev)
        download = f"{SDCARD}/Download"
        dev.write_file(f"{download}/{self.params['video_name']}", clip_content(self.params["messages"], 8))
        rng = self.rng("noise")
        for name in self.params["noise_files"]:
            frame = random_string(rng, 10)
            content = clip_content([frame], rng.randint(20, 180))
            if not dev.exists(f"{download}/{name}"):  # a repeated name would overwrite the clip to transcribe
                dev.write_file(f"{download}/{name}", content)

    def is_successful(self, dev: DeviceState) -> float:
        return 1.0 if created_file_ok(dev, self.params["file_name"], self.params["text"]) else 0.0

    def expert(self, view: View, mem: dict[str, Any]) -> Action:
        """Play the clip in VLC until every frame has shown, then write the names, comma separated as the goal
        shows, into the new note. The frame texts are pixels only (no element carries them): the expert takes
        them from the params that drew the frames, standing for reading them off the screen."""
        messages = self.params["messages"]
        if not mem.get("watched"):
            a = watch_expert(view, mem, self.params["video_name"], len(messages))
            if a is not None:
                return a
            mem["watched"] = True
        return create_note_expert(view, mem, self.params["file_name"], ", ".join(messages))
