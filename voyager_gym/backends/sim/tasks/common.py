"""What several task families share (AndroidWorld's task_evals/utils and common_validators).

First the bases for the repeated task shapes: tasks on the rows of one app table (add, delete, dedupe:
AndroidWorld's sqlite_validators) and information-retrieval questions (targets seeded among noise rows).
Then the helpers: file storage, Markor notes other apps' tasks read or write, gallery images of text, contact
names and numbers, sending an SMS, watching a VLC clip, playlist checks, time parsing and list ends.
Task-family modules import only this module, base, vocab and ir_vocab, never each other, so that each family
reads on its own (tests/sim/test_task_modules.py checks it)."""

from __future__ import annotations

import copy
import datetime as dt
import functools
import posixpath
import random
import textwrap
from typing import Any, ClassVar

from PIL import ImageFont

from voyager_gym.actions import Action
from voyager_gym.backends.sim.apps.gallery import PKG as GALLERY
from voyager_gym.backends.sim.apps.markor import EDITOR_KEY, MARKOR_DIR
from voyager_gym.backends.sim.apps.markor import PKG as MARKOR
from voyager_gym.backends.sim.apps.simple_commons import INTERNAL, picture_content
from voyager_gym.backends.sim.apps.sms import PKG as SMS
from voyager_gym.backends.sim.apps.vlc import PKG as VLC
from voyager_gym.backends.sim.apps.vlc import stem
from voyager_gym.backends.sim.device import SDCARD, DeviceState
from voyager_gym.backends.sim.tasks import ir_vocab, vocab
from voyager_gym.backends.sim.tasks.base import (
    SimTask,
    View,
    addition_ok,
    answer_score,
    aw_fuzzy_match,
    back,
    click,
    dedupe_ok,
    digits,
    done,
    draw_noise,
    long_press,
    open_app,
    removal_ok,
    scroll,
    scroll_to_find,
    sms_number,
    type_into,
    wait,
)


# -- tasks on one table of an app's database (AndroidWorld's sqlite_validators) ----------------------------
class RowsTask(SimTask):
    """A task on the rows of one app table: the noise rows (`noise_row_objects`), then the targets
    (`row_objects`) unless the task adds them, are inserted at the start, and the table is kept as `before`
    for the verdict."""

    table: ClassVar[str] = ""  # the table's name in `dev.table`
    id_key: ClassVar[str] = ""  # its primary key
    insert_targets: ClassVar[bool] = True

    @classmethod
    def distinct_rows(cls, rng: random.Random, n: int) -> list[dict[str, Any]]:
        """`n` distinct rows of the table, drawn as AndroidWorld draws them."""
        raise NotImplementedError

    def insert_rows(self, dev: DeviceState, rows: list[dict[str, Any]]) -> None:
        """Put the start rows in the table, in order (the family knows the app's columns and ids)."""
        raise NotImplementedError

    def initialize(self, dev: DeviceState) -> None:
        rows = self.params.get("noise_row_objects", [])
        if self.insert_targets:
            rows = rows + self.params.get("row_objects", [])
        self.insert_rows(dev, rows)
        self.before = copy.deepcopy(dev.table(self.table))

    @property
    def target_ids(self) -> list[int]:
        """The ids of the target rows: the last rows inserted."""
        n = len(self.params.get("row_objects", []))
        return [r[self.id_key] for r in self.before[len(self.before) - n :]]


class AddRows(RowsTask):
    """Add `n_rows` target rows, which the goal lists as csv or text blocks (`rows_as_text`), to a table that
    holds `n_noise` other rows: each must match a new row (`free_form` columns fuzzily, the other `compare`
    columns exactly), the table must grow by their number and keep every earlier row."""

    insert_targets = False
    n_rows: ClassVar[int] = 1
    n_noise: ClassVar[int] = 10
    compare: ClassVar[tuple[str, ...]] = ()
    free_form: ClassVar[tuple[str, ...]] = ()

    @staticmethod
    def rows_as_text(rows: list[dict[str, Any]], fmt: str, wrap: int | None = None) -> str:
        """AndroidWorld's text of the rows: "csv", or "text_block" with values wrapped at `wrap` columns."""
        raise NotImplementedError

    @classmethod
    def noise_rows(cls, rng: random.Random, targets: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The `n_noise` rows already in the table, drawn after the targets as AndroidWorld draws them."""
        raise NotImplementedError

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        targets = cls.distinct_rows(rng, cls.n_rows)
        return {
            "row_objects": targets,
            "noise_row_objects": cls.noise_rows(rng, targets),
            "text_representation_type": rng.choice(["csv", "text_block"]),
        }

    @property
    def goal(self) -> str:
        text = self.rows_as_text(self.params["row_objects"], self.params["text_representation_type"])
        return self.template.format(rows_text=text)

    def is_successful(self, dev: DeviceState) -> float:
        ok = addition_ok(self.before, dev.table(self.table), self.params["row_objects"], self.compare,
                         self.free_form)
        return 1.0 if ok else 0.0


class DeleteRows(RowsTask):
    """Delete the target rows: exactly they are gone, every other row is unchanged."""

    def is_successful(self, dev: DeviceState) -> float:
        return 1.0 if removal_ok(self.before, dev.table(self.table), self.target_ids, self.id_key) else 0.0


class DedupeRows(RowsTask):
    """Delete all but one of exact duplicates: `n_noise` + 1 distinct rows are drawn, the last one is the
    target and is inserted twice after the others; exactly one of the two copies must go."""

    n_noise: ClassVar[int] = 5

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        rows = cls.distinct_rows(rng, cls.n_noise + 1)
        target = rows.pop()
        return {"row_objects": [target, dict(target)], "noise_row_objects": rows}

    def is_successful(self, dev: DeviceState) -> float:
        return 1.0 if dedupe_ok(self.before, dev.table(self.table), self.id_key) else 0.0


# -- questions (AndroidWorld's information-retrieval tasks) ----------------------------------------------
class Question(SimTask):
    """A question answered with the `answer` action: params drawn as AndroidWorld draws the task's (see
    tasks/ir_vocab.py), the answer checked by `answer_score` against `expected()` with the task's match type
    ("string", "number" with an optional `tolerance`, or "datetime")."""

    complexity = 1.0
    match: ClassVar[str] = "string"
    tolerance: ClassVar[float | None] = None

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return ir_vocab.draw(cls.name, rng)

    def expected(self) -> list[str] | str:
        raise NotImplementedError

    def is_successful(self, dev: DeviceState) -> float:
        return answer_score(dev, self.expected(), self.match, self.tolerance)


class SeededQuestion(Question):
    """A question about an app's rows: the `targets` that answer it, among `n_noise` rows drawn by `noise_row`
    that are not `excluded` (noise that would change the answer), inserted in a shuffled order; by default
    the answer is the targets' titles. As in AndroidWorld, a generator seeded with the instance seed first
    draws `setup_params`, then the goal's date rewording."""

    n_noise: ClassVar[int] = 0

    def targets(self) -> list[dict[str, Any]]:
        raise NotImplementedError

    def excluded(self, row: dict[str, Any]) -> bool:
        raise NotImplementedError

    def noise_row(self, rng: random.Random) -> dict[str, Any]:
        raise NotImplementedError

    def insert_rows(self, dev: DeviceState, rows: list[dict[str, Any]]) -> None:
        raise NotImplementedError

    def setup_params(self, rng: random.Random) -> None:
        """AndroidWorld's setup draws before it rewords the goal's dates: the targets' `_without_replacement`
        fields (none by default)."""

    def expected(self) -> list[str] | str:
        return [r["title"] for r in self.targets()]

    def initialize(self, dev: DeviceState) -> None:
        rng = random.Random(self.params.get("seed", 0))
        self.setup_params(rng)
        vocab.reword_dates(self.params, rng)
        rng = self.rng("noise")
        rows = self.targets() + draw_noise(rng, self.n_noise, self.noise_row, lambda r: not self.excluded(r))
        rng.shuffle(rows)
        self.insert_rows(dev, rows)


# -- storage (AndroidWorld's file_utils) ----------------------------------------------------------------
def clear_storage(dev: DeviceState) -> None:
    """AndroidWorld's clear_device_storage: every regular file under the sdcard goes; folders stay."""
    for f in [f for f in dev.files if f.startswith(SDCARD + "/")]:
        del dev.files[f]


def exists_under(dev: DeviceState, base: str, name: str) -> bool:
    """AndroidWorld's check_file_or_folder_exists: `base/name` is among the files and folders below `base`."""
    return dev.exists(f"{base}/{name}")


def moved(dev: DeviceState, root: str, params: dict[str, Any]) -> bool:
    """AndroidWorld's move check: `file_name` is under `root`/`destination_folder` and no longer under
    `root`/`source_folder`."""
    src = exists_under(dev, f"{root}/{params['source_folder']}", params["file_name"])
    dst = exists_under(dev, f"{root}/{params['destination_folder']}", params["file_name"])
    return dst and not src


def create_file(dev: DeviceState, path: str, content: str, rng: random.Random | None = None) -> str:
    """AndroidWorld's create_file: `echo` the content (random text if empty), so a newline ends it."""
    if not content:
        content = vocab.random_string(rng or random.Random(path), 20)
    dev.write_file(path, content + "\n")
    return content


def noise_names(rng: random.Random, base: str, variants: tuple[str, ...], n: int = 20) -> list[str]:
    """Between 1 and n distinct file names: mostly variants of `variants`, sometimes of `base`."""
    count = rng.randint(1, n)
    names: list[str] = []
    while len(names) < count:
        name = vocab.modified_file_name(rng, rng.choice(variants) if rng.random() <= 0.85 else base)
        if "." not in name:
            name += posixpath.splitext(rng.choice(variants))[1]
        if name not in names and name != base:
            names.append(name)
    return names


# -- Markor notes (AndroidWorld's write_to_markor; the expert's way through Markor) ---------------------
ITEM_RID = f"{MARKOR}:id/ui__filesystem_item__title"


def clear_markor(dev: DeviceState) -> None:
    """Markor's task setup: empty Documents/Markor (files and sub-folders)."""
    for f in [f for f in dev.files if f.startswith(MARKOR_DIR + "/")]:
        del dev.files[f]
    for d in [d for d in dev.dirs if d.startswith(MARKOR_DIR + "/")]:
        dev.dirs.discard(d)
    dev.mkdir(MARKOR_DIR)


def created_file_ok(dev: DeviceState, name: str, text: str) -> bool:
    """AndroidWorld's CreateFile check: `name` exists in Markor's folder and its content (CR removed,
    stripped) fuzzy-matches `text` as given (not stripped)."""
    if not exists_under(dev, MARKOR_DIR, name):
        return False
    content = (dev.read_file(f"{MARKOR_DIR}/{name}") or "").replace("\r", "").strip()
    return aw_fuzzy_match(content, text)


def write_note(dev: DeviceState, name: str, text: str) -> None:
    """AndroidWorld's write_to_markor after clearing Markor's folder: the text as is (no newline added)."""
    clear_markor(dev)
    dev.write_file(f"{MARKOR_DIR}/{name}", text)


def markor_screen(view: View) -> str:
    """Which Markor screen is showing: other | dialog:<title> | menu | editor | selection | list."""
    if view.app != MARKOR:
        return "other"
    t = view.find(rid="android:id/alertTitle")
    if t is not None:
        return f"dialog:{view.el(t).text}"
    if view.has(rid=f"{MARKOR}:id/title"):
        return "menu"
    if view.has(rid=f"{MARKOR}:id/{EDITOR_KEY}") or \
            view.has(rid=f"{MARKOR}:id/document__fragment_view_webview"):
        return "editor"
    title = view.title or ""
    if title.endswith(" selected"):
        return "selection"
    if view.has(rid=f"{MARKOR}:id/path"):
        return "list"
    return "unknown"


def at_markor_root(view: View) -> bool:
    i = view.find(rid=f"{MARKOR}:id/path")
    return i is not None and view.el(i).text == MARKOR_DIR[len(SDCARD):]


def find_note(view: View, mem: dict[str, Any], name: str) -> Action | int:
    """The index of the notebook row titled `name`, or a scroll that looks for it."""
    return scroll_to_find(view, mem, f"find:{name}", text=name, rid=ITEM_RID)


def open_note(view: View, mem: dict[str, Any], name: str, press: bool = False) -> Action:
    """From the notebook root: find `name` and tap (or long-press) it."""
    if not at_markor_root(view):
        return back()
    found = find_note(view, mem, name)
    if isinstance(found, int):
        return long_press(found) if press else click(found)
    return found


def editor_text(view: View) -> str:
    i = view.find(rid=f"{MARKOR}:id/{EDITOR_KEY}")
    return (view.el(i).text or "") if i is not None else ""


def read_note(view: View, mem: dict[str, Any], name: str) -> Action | str:
    """Open note `name` from Markor's notebook root: the next action, or its text once the editor shows it."""
    s = markor_screen(view)
    if s == "other":
        return open_app("Markor")
    if s == "editor" and view.title == name:
        return editor_text(view)
    return open_note(view, mem, name) if s == "list" else back()


def new_file_expert(view: View, file_name: str, button: str = "OK") -> Action:
    """A new note named `file_name` is wanted: from the notebook root, FAB -> name -> OK (Markor adds the
    extension field's text to a name without one); with `button="Folder"`, a new folder."""
    s = markor_screen(view)
    if s == "other":
        return open_app("Markor")
    if s == "dialog:Create a new file or folder":
        f = view.find(hint="Name", editable=True)
        if view.el(f).text != file_name:
            return type_into(f, file_name)
        return click(view.find(text=button))
    if s == "list" and view.has(desc="Create a new file or folder") and at_markor_root(view):
        return click(view.find(desc="Create a new file or folder"))
    return back()


def create_note_expert(view: View, mem: dict[str, Any], file_name: str, text: str) -> Action:
    """FAB -> name -> OK -> type the text -> Save -> done."""
    if markor_screen(view) != "editor" or view.title != file_name:
        return new_file_expert(view, file_name)
    if not mem.get("typed"):
        mem["typed"] = True
        return type_into(view.find(rid=f"{MARKOR}:id/{EDITOR_KEY}"), text)
    if not mem.get("saved"):
        mem["saved"] = True
        return click(view.find(desc="Save"))
    return done()


# -- gallery images of text (AndroidWorld's write_to_gallery) -------------------------------------------
DCIM = f"{SDCARD}/DCIM"
FONT_FILES = (
    "arial.ttf",
    "Arial Unicode.ttf",
    "Roboto-Regular.ttf",
    "DejaVuSans-Bold.ttf",
    "LiberationSans-Regular.ttf",
)  # AndroidWorld's font search order


@functools.cache
def text_font(size: int) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    for name in FONT_FILES:
        try:
            return ImageFont.truetype(name, size=float(size))
        except OSError:
            continue
    return ImageFont.load_default(float(size))


def text_picture(text: str, font_size: int = 24) -> str:
    """AndroidWorld's text image (user_data_generation's _draw_text) as a picture file's content: each
    non-empty line at x 10 below the last by its glyph box's bottom, an empty line half the font size; the
    image 20 px wider than the widest line and 20 px taller than the lines."""
    font = text_font(font_size)
    runs, y, width = [], 10, 0
    for line in text.split("\n"):
        box = font.getbbox(line)
        width = max(width, int(box[2]))
        if line.strip():
            runs.append((y, font_size, line))
            y += int(box[3])
        else:
            y += font_size // 2
    return picture_content("JPEG", width + 20, y + 10, runs)


def wrapped(value: str, width: int | None) -> str:
    """A text block's value as AndroidWorld wraps it for an image: lines of at most `width` columns
    (textwrap's wrap, joined by newlines); unchanged without a width."""
    return value if width is None else "\n".join(textwrap.wrap(value, width))


def write_to_gallery(dev: DeviceState, text: str, file_name: str, age_s: int = 0) -> None:
    """AndroidWorld's write_to_gallery: `text` drawn into an image, saved as DCIM/`file_name`, `age_s` seconds
    old (images written one after the other keep their order, newest last)."""
    path = f"{DCIM}/{file_name}"
    dev.write_file(path, text_picture(text))
    dev.files[path].mtime_ms -= age_s * 1000


def folder_picker_expert(view: View, dest: str) -> Action | None:
    """In the commons folder picker: up to Internal, into `dest` (a folder of the storage root), OK. None
    when no picker is showing."""
    if not view.has(text="Select a folder", rid="android:id/alertTitle"):
        return None
    crumbs = view.find_all(rid_suffix=":id/breadcrumb_text")
    current = view.el(crumbs[-1]).text if crumbs else None
    if current == dest:
        return click(view.find(text="OK", rid="android:id/button1"))
    target = view.find(text=dest, rid_suffix=":id/list_item_name")
    if current == INTERNAL and target is not None:
        return click(target)
    root = view.find(text=INTERNAL, rid_suffix=":id/breadcrumb_text")
    return click(root) if root is not None else back()


def view_medium(view: View, mem: dict[str, Any], name: str, folder: str = "DCIM") -> Action | None:
    """Simple Gallery Pro -> `folder` -> its first thumbnail -> swipes through the viewer until its title is
    `name`; None once the viewer shows it."""
    if view.app != GALLERY:
        return open_app("Simple Gallery Pro")
    title = view.title or ""
    image = view.find(rid=f"{GALLERY}:id/gestures_view")
    if image is not None:  # the viewer
        if title == name:
            return None
        seen = mem.setdefault("viewed", [])
        if title in seen:  # every medium seen: the file is not here (should not happen)
            return back()
        seen.append(title)
        return scroll("right", image)
    if title == folder:
        thumbs = view.find_all(rid=f"{GALLERY}:id/medium_thumbnail")
        if thumbs:
            return click(thumbs[0])
    if view.has(desc="Done"):  # a selection is open
        return click(view.find(desc="Done"))
    tile = view.find(text=folder, rid=f"{GALLERY}:id/dir_name")
    return click(tile) if tile is not None else back()


class FromImage(AddRows):
    """For an add-many task (listed before its base class) whose rows AndroidWorld draws into a DCIM image as
    text blocks wrapped at 60 columns, after clearing storage: the image `image_name` of `rows_as_text`. The
    goal names only the image. Its expert views the image in the gallery, then takes the rows from the params
    that drew it, standing for reading the image's pixels (the accessibility tree shows only the ImageView),
    and adds them as the base task's expert does with `mem["rows"]`."""

    image_name: ClassVar[str] = ""

    @property
    def goal(self) -> str:
        return self.template

    def initialize(self, dev: DeviceState) -> None:
        super().initialize(dev)
        clear_storage(dev)
        text = self.rows_as_text(self.params["row_objects"], "text_block", wrap=60)
        write_to_gallery(dev, text, self.image_name)

    def expert(self, view: View, mem: dict[str, Any]) -> Action:
        if "rows" not in mem:
            step = view_medium(view, mem, self.image_name)
            if step is not None:
                return step
            mem["rows"] = self.params["row_objects"]
        return super().expert(view, mem)


# -- contacts -------------------------------------------------------------------------------------------
def random_name(rng: random.Random, exclude: tuple[str, ...] | list[str] = ()) -> str:
    """A 'Given Family' name drawn as AndroidWorld draws it, redrawn while it is in `exclude` (AndroidWorld's
    own exclusion never takes effect, so a first draw outside `exclude` is exactly its name)."""
    while True:
        name = vocab.random_name(rng)
        if name not in exclude:
            return name


def random_number(rng: random.Random) -> str:
    """A +1 and ten digits, as AndroidWorld's generator makes (Simple SMS then adds no country code)."""
    return vocab.random_number(rng)


# -- SMS (AndroidWorld's SimpleSMSSendSms check and the expert's way to send) ---------------------------
WINDOW_MS = 5 * 60 * 1000


def sent_messages(dev: DeviceState) -> list[dict[str, Any]]:
    """The sent box, newest first (as `content query --uri content://sms/sent` lists it)."""
    rows = [(i, m) for i, m in enumerate(dev.sms) if m.get("box") == "sent"]
    return [m for _, m in sorted(rows, key=lambda t: (-t[1]["time_ms"], -t[0]))]


def was_sent(dev: DeviceState, number: str, body: str, window_ms: int = WINDOW_MS) -> bool:
    """A sent message to `number` whose body fuzzy-matches `body`, at most `window_ms` old. As AndroidWorld
    compares them, the address has only '-' and ' ' removed and must then equal `number` as drawn."""
    return any(
        sms_number(m["address"]) == number
        and aw_fuzzy_match(m["body"], body)
        and dev.time_ms - m["time_ms"] <= window_ms
        for m in sent_messages(dev)
    )


def sms_params(rng: random.Random) -> dict[str, Any]:
    """AndroidWorld's SimpleSMSSendSms params, in its order of draws: a number, then a message."""
    return {"number": random_number(rng), "message": rng.choice(vocab.SENTENCES)}


def clear_sms(dev: DeviceState) -> None:
    """AndroidWorld's SimpleSMSSendSms setup: the SMS database (sms and threads tables) emptied, and no
    contacts."""
    dev.sms.clear()
    dev.contacts.clear()


def sms_sent_score(dev: DeviceState, number: str, message: str) -> float:
    """AndroidWorld's SimpleSMSSendSms verdict: `message` sent to `number` within 5 minutes, with Simple SMS
    in front."""
    return 1.0 if was_sent(dev, number, message) and dev.foreground == SMS else 0.0


def in_thread(view: View) -> bool:
    return view.find(rid=f"{SMS}:id/thread_send_message") is not None


def fill_and_send(view: View, mem: dict[str, Any], message: str) -> Action:
    """In a thread: type `message` into the message box, then tap Send (remembered in mem['sent'])."""
    field = view.find(rid=f"{SMS}:id/message")
    if field is None:
        return back()
    if (view.el(field).text or "") != message:
        return type_into(field, message)
    mem["sent"] = True
    return click(view.find(rid=f"{SMS}:id/thread_send_message"))


def compose_expert(view: View, mem: dict[str, Any], to: str, message: str, by_name: bool = False) -> Action:
    """Start a conversation with `to` (a number, or a contact name when `by_name`) and send `message`."""
    if mem.get("sent"):
        return done()
    if view.app != SMS:
        return open_app("Simple SMS Messenger")
    title = view.title or ""
    if in_thread(view):
        same = title == to if by_name else digits(title) == digits(to)
        return fill_and_send(view, mem, message) if same else back()
    if title == "Simple SMS Messenger":
        return click(view.find(desc="Start a conversation"))
    if title == "New conversation":
        field = view.find(rid=f"{SMS}:id/recipient")
        if by_name:
            row = view.find(text=to, rid=f"{SMS}:id/item_contact_name")
            if row is not None and (view.el(field).text or "") == to:
                return click(row)
        return type_into(field, to)
    return back()


# -- VLC videos and playlists ---------------------------------------------------------------------------
PREFIXES = ("clip", "footage", "scene", "recording", "highlight", "moment", "episode")
SUFFIXES = ("", "HD", "4K", "raw", "export")


def video_file_name(rng: random.Random) -> str:
    """A video name as AndroidWorld draws it: prefix_num_suffix.mp4 (prefix, suffix, then the number), varied
    with a date, a random tag or backup/copy/final/edited."""
    prefix, suffix = rng.choice(PREFIXES), rng.choice(SUFFIXES)
    return vocab.modified_file_name(rng, f"{prefix}_{rng.randint(1, 99)}_{suffix}.mp4")


def playlist_matches(rows: list[tuple[str, str, int]], name: str, files: list[str]) -> bool:
    """AndroidWorld's verify_playlist over (playlist name, media name, position) rows (VLC, Retro)."""
    rows = [r for r in rows if aw_fuzzy_match(r[0], name)]
    if len(rows) != len(files):
        return False
    return all(any(r[1] == f and r[2] == i for r in rows) for i, f in enumerate(files))


def find_video(view: View, mem: dict[str, Any], target: str) -> Action | int:
    """On the Videos list (sorted by title): the index of the row titled `target`, or a scroll towards it."""
    hit = view.find(text=target, rid=f"{VLC}:id/ml_item_title")
    if hit is not None:
        mem.pop("find", None)
        return hit
    titles = [view.el(k).text or "" for k in view.find_all(rid=f"{VLC}:id/ml_item_title")]
    if titles and target.lower() < titles[0].lower():
        return scroll("up", view.scrollable())
    if titles and target.lower() > titles[-1].lower():
        return scroll("down", view.scrollable())
    return scroll_to_find(view, mem, "find", text=target)


def videos_tab(view: View) -> Action:
    tab = view.find(desc="Video", rid=f"{VLC}:id/nav_video")
    return click(tab) if tab is not None else back()


def watch_expert(view: View, mem: dict[str, Any], video: str, n_frames: int) -> Action | None:
    """Play `video` from the Videos list and watch until each of its `n_frames` frames has been on screen
    (the time text tells which part of the clip shows; Replay if one was missed); None once all were."""
    if view.app != VLC:
        return open_app("VLC")
    title = view.find(rid=f"{VLC}:id/player_overlay_title")
    if title is not None:
        if view.el(title).text != stem(video):
            return back()
        shown = view.el(view.find(rid=f"{VLC}:id/player_overlay_time")).text or "0:00 / 0:00"
        pos, total = (
            sum(int(x) * m for x, m in zip(t.split(":"), (60, 1), strict=True)) for t in shown.split(" / ")
        )
        seen = mem.setdefault("frames_seen", [])
        if pos < total and pos * n_frames // total not in seen:
            seen.append(pos * n_frames // total)
        if len(seen) == n_frames:
            return None
        for label in ("Play", "Replay"):
            if view.has(desc=label):
                return click(view.find(desc=label))
        return wait()
    if view.has(desc="Add to playlist"):  # selection mode
        return back()
    if view.title == "Videos":
        found = find_video(view, mem, stem(video))
        return click(found) if isinstance(found, int) else found
    return videos_tab(view)


# -- time and lists -------------------------------------------------------------------------------------
def parse_time(s: str) -> dt.time:
    """AndroidWorld's time formats: '21:45', '9:45am', '4pm'."""
    for fmt in ("%H:%M", "%I:%M%p", "%I%p"):
        try:
            return dt.datetime.strptime(s, fmt).time()
        except ValueError:
            pass
    raise ValueError(f"bad time {s!r}")


def list_at_end(view: View, lst: int) -> bool:
    """The list shows its last row: the space under the last text is the list's empty footer."""
    box = view.el(lst).bbox_pixels
    bottoms = [
        e.bbox_pixels.y_max
        for e in view.elements
        if e.class_name.endswith("TextView")
        and e.bbox_pixels.y_min >= box.y_min
        and e.bbox_pixels.y_max <= box.y_max
    ]
    return bool(bottoms) and max(bottoms) < box.y_max - 100
