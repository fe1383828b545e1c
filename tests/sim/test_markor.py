"""Markor on SimDroid: near-miss verifier checks for every task and key interactions driven by actions."""

import numpy as np
import pytest

from voyager_gym.actions import Action
from voyager_gym.backends.sim.apps.markor import MARKOR_DIR, with_extension
from voyager_gym.backends.sim.apps.sms import PKG as SMS
from voyager_gym.backends.sim.apps.vlc import clip_frames
from voyager_gym.backends.sim.device import SDCARD
from voyager_gym.backends.sim.expert import run_expert
from voyager_gym.backends.sim.tasks.base import aw_fuzzy_match as created_text_matches
from voyager_gym.backends.sim.tasks.common import created_file_ok
from voyager_gym.backends.sim.tasks.markor import top_level_files

M = MARKOR_DIR


def start(backend, name, seed=1):
    params = backend.generate_params(name, seed)
    backend.reset(name, params, np.random.default_rng(0))
    return backend.task, backend.phone.dev


def idx(backend, text=None, desc=None, hint=None):
    """Index of the first element with the given text / description / hint."""
    for i, e in enumerate(backend.phone.elements()):
        if (text is None or e.text == text) and (desc is None or e.content_description == desc) and \
                (hint is None or e.hint_text == hint):
            return i
    raise AssertionError(f"no element text={text!r} desc={desc!r} hint={hint!r}")


def act(backend, action_type, **kw):
    backend.execute(Action(action_type, **kw))


def score(backend):
    return backend.score()


def new_file_dialog(backend, name):
    """Start MarkorCreateNote, open Markor's new-file dialog and type `name`; returns the device."""
    start(backend, "MarkorCreateNote")
    act(backend, "open_app", app_name="Markor")
    act(backend, "click", index=idx(backend, desc="Create a new file or folder"))
    act(backend, "input_text", index=idx(backend, hint="Name"), text=name)
    return backend.phone.dev


# -- near misses --------------------------------------------------------------------------------------------
def test_create_note_near_misses(backend):
    task, dev = start(backend, "MarkorCreateNote")
    name, text = task.params["file_name"], task.params["text"]
    dev.write_file(f"{M}/{name}", "something else entirely")
    assert score(backend) == 0.0
    dev.remove(f"{M}/{name}")
    dev.write_file(f"{M}/{name}.md", text)  # extension doubled
    assert score(backend) == 0.0
    dev.write_file(f"{M}/Sub/{name}", text)  # wrong folder
    assert score(backend) == 0.0
    dev.write_file(f"{M}/{name}", text.upper() + "\n")  # case and trailing newline do not matter
    assert score(backend) == 1.0


def test_create_folder_near_misses(backend):
    task, dev = start(backend, "MarkorCreateFolder")
    folder = task.params["folder_name"]
    dev.mkdir(f"{M}/{folder}_1")
    assert score(backend) == 0.0
    dev.mkdir(f"/storage/emulated/0/Documents/{folder}")  # outside Markor's folder
    assert score(backend) == 0.0
    dev.mkdir(f"{M}/{folder}")
    assert score(backend) == 1.0


def test_delete_note_near_miss(backend):
    task, dev = start(backend, "MarkorDeleteNote")
    target = task.params["file_name"]
    others = [f for f in dev.listdir(M)[1] if f != target]
    assert others, "noise notes exist"
    dev.remove(f"{M}/{others[0]}")
    assert score(backend) == 0.0
    dev.remove(f"{M}/{target}")
    assert score(backend) == 1.0


def test_delete_newest_near_misses(backend):
    task, dev = start(backend, "MarkorDeleteNewestNote", seed=4)
    files = top_level_files(dev)
    assert len(files) >= 2 and len({t for _, t in files}) == len(files)
    oldest, newest = files[0][0], files[-1][0]
    snap = dev.snapshot()
    dev.remove(f"{M}/{oldest}")
    assert score(backend) == 0.0
    backend.phone.reset(snap.snapshot())  # the device as it was (the phone only; no episode state)
    dev = backend.phone.dev
    dev.remove(f"{M}/{newest}")
    dev.advance(60_000)
    dev.write_file(f"{M}/{oldest}", "edited")  # touching another note changes its time
    assert score(backend) == 0.0
    backend.phone.reset(snap.snapshot())  # the device as it was (the phone only; no episode state)
    dev = backend.phone.dev
    dev.remove(f"{M}/{newest}")
    assert score(backend) == 1.0


def test_delete_all_near_miss(backend):
    task, dev = start(backend, "MarkorDeleteAllNotes")
    files = dev.listdir(M)[1]
    for f in files[1:]:
        dev.remove(f"{M}/{f}")
    assert score(backend) == 0.0
    dev.remove(f"{M}/{files[0]}")
    dev.mkdir(f"{M}/KeptFolder")  # folders are not notes
    assert score(backend) == 1.0


@pytest.mark.parametrize("seed", range(6))
def test_edit_note_near_miss(backend, seed):
    task, dev = start(backend, "MarkorEditNote", seed=seed)
    path = f"{M}/{task.params['file_name']}"
    assert score(backend) == 0.0  # untouched
    dev.write_file(path, task.expected() + "\nand one more long line that should not be there")
    assert score(backend) == 0.0
    dev.write_file(path, task.expected() + "\n")
    assert score(backend) == 1.0


def test_add_note_header_near_misses(backend):
    task, dev = start(backend, "MarkorAddNoteHeader")
    p = task.params
    good = p["header"] + "\n\n" + p["original_content"] + "\n"
    dev.write_file(f"{M}/{p['original_name']}", good)
    assert score(backend) == 0.0  # not renamed
    dev.remove(f"{M}/{p['original_name']}")
    dev.write_file(f"{M}/{p['new_name']}", p["header"] + "\n" + p["original_content"] + "\n")  # no blank line
    assert score(backend) == 0.0
    dev.write_file(f"{M}/{p['new_name']}", good)
    assert score(backend) == 1.0


def test_change_note_content_near_misses(backend):
    task, dev = start(backend, "MarkorChangeNoteContent")
    p = task.params
    old = dev.read_file(f"{M}/{p['original_name']}")
    dev.remove(f"{M}/{p['original_name']}")
    dev.write_file(f"{M}/{p['new_name']}", old)  # renamed, content unchanged
    assert score(backend) == 0.0
    dev.write_file(f"{M}/{p['original_name']}", p["updated_content"])  # both names present
    dev.write_file(f"{M}/{p['new_name']}", p["updated_content"])
    assert score(backend) == 0.0
    dev.remove(f"{M}/{p['original_name']}")
    assert score(backend) == 1.0


def test_move_note_near_misses(backend):
    task, dev = start(backend, "MarkorMoveNote")
    p = task.params
    src, dst = f"{M}/{p['source_folder']}", f"{M}/{p['destination_folder']}"
    dev.write_file(f"{dst}/{p['file_name']}", "copy")  # copied, not moved
    assert score(backend) == 0.0
    dev.remove(f"{dst}/{p['file_name']}")
    dev.move(f"{src}/{p['file_name']}", M)  # moved to the wrong folder
    assert score(backend) == 0.0
    dev.move(f"{M}/{p['file_name']}", dst)
    assert score(backend) == 1.0


# -- interactions --------------------------------------------------------------------------------------------
def test_delete_through_the_ui(backend):
    task, dev = start(backend, "MarkorDeleteNote", seed=3)
    act(backend, "open_app", app_name="markor")
    name = sorted(dev.listdir(M)[1], key=str.lower)[0]
    act(backend, "long_press", index=idx(backend, text=name))
    assert backend.phone.find(text="1 selected") is not None
    act(backend, "click", index=idx(backend, desc="Delete"))
    act(backend, "click", index=idx(backend, text="Cancel"))
    assert dev.exists(f"{M}/{name}")
    act(backend, "click", index=idx(backend, desc="Delete"))
    act(backend, "click", index=idx(backend, text="OK"))
    assert not dev.exists(f"{M}/{name}")
    assert backend.phone.find(text="1 selected") is None


def test_new_note_editor_saves_on_back(backend):
    dev = new_file_dialog(backend, "groceries")
    act(backend, "click", index=idx(backend, text="Plain Text"))
    act(backend, "click", index=idx(backend, text="OK"))
    assert dev.read_file(f"{M}/groceries.txt") == ""  # created empty at once, editor open
    editor = next(i for i, e in enumerate(backend.phone.elements()) if e.is_editable)
    act(backend, "input_text", index=editor, text="milk and eggs")
    assert dev.read_file(f"{M}/groceries.txt") == ""  # not saved while editing
    act(backend, "navigate_back")  # closes the keyboard
    act(backend, "navigate_back")  # leaves the editor: autosave
    assert dev.read_file(f"{M}/groceries.txt") == "milk and eggs\n"
    assert backend.phone.find(text="groceries.txt") is not None


def test_with_extension():
    assert with_extension("a", ".md") == "a.md"
    assert with_extension("a.txt", ".md") == "a.txt"
    assert with_extension("a.md", ".md") == "a.md"


def test_rename_and_move_through_selection(backend):
    task, dev = start(backend, "MarkorMoveNote", seed=2)
    p = task.params
    act(backend, "open_app", app_name="markor")
    act(backend, "click", index=idx(backend, text=p["source_folder"]))
    names = sorted(dev.listdir(f"{M}/{p['source_folder']}")[1], key=str.lower)
    act(backend, "long_press", index=idx(backend, text=names[0]))
    act(backend, "click", index=idx(backend, desc="More options"))
    act(backend, "click", index=idx(backend, text="Rename"))
    act(backend, "input_text", index=idx(backend, hint="Name"), text="0renamed.md", clear_text=True)
    assert dev.exists(f"{M}/{p['source_folder']}/0renamed.md")
    act(backend, "long_press", index=idx(backend, text="0renamed.md"))
    act(backend, "click", index=idx(backend, desc="Move"))
    act(backend, "click", index=idx(backend, text=".."))
    act(backend, "click", index=idx(backend, text=p["destination_folder"]))
    act(backend, "click", index=idx(backend, text="OK"))
    assert dev.exists(f"{M}/{p['destination_folder']}/0renamed.md")
    assert not dev.exists(f"{M}/{p['source_folder']}/0renamed.md")


def test_sort_by_date_shows_newest_first(backend):
    task, dev = start(backend, "MarkorDeleteNewestNote", seed=5)
    newest = top_level_files(dev)[-1][0]
    act(backend, "open_app", app_name="markor")
    act(backend, "click", index=idx(backend, desc="Sort by"))
    act(backend, "click", index=idx(backend, text="Date"))
    rows = [e.text for e in backend.phone.elements()
            if (e.resource_name or "").endswith("filesystem_item__title")]
    assert rows[0] == newest


def test_expert_run_is_short(backend):
    run = run_expert(backend, "MarkorAddNoteHeader", 11)
    assert run.score == 1.0 and run.steps <= run.max_steps


# -- a note longer than the page scrolls (the rows of the add-from-Markor tasks) ----------------------------
def test_long_note_scrolls_and_its_text_stays_whole(backend):
    start(backend, "ExpenseAddMultipleFromMarkor")
    text = backend.phone.dev.read_file(f"{M}/my_expenses.txt")
    act(backend, "open_app", app_name="markor")
    act(backend, "click", index=idx(backend, text="my_expenses.txt"))
    editor = next(e for e in backend.phone.elements() if e.is_editable)
    assert editor.is_scrollable and editor.text == text
    first, _, _ = backend.observe(pixels=True)
    act(backend, "scroll", direction="down")
    down, _, _ = backend.observe(pixels=True)
    assert not np.array_equal(first, down)  # the drawing moved on
    assert next(e for e in backend.phone.elements() if e.is_editable).text == text  # the a11y text did not
    for _ in range(30):
        act(backend, "scroll", direction="down")  # stops at the end
    act(backend, "scroll", direction="up")
    assert not np.array_equal(first, backend.observe(pixels=True)[0])
    for _ in range(30):
        act(backend, "scroll", direction="up")
    assert np.array_equal(first, backend.observe(pixels=True)[0])  # back at the top


def test_short_note_does_not_scroll(backend):
    start(backend, "RecipeAddMultipleRecipesFromMarkor")
    backend.phone.dev.write_file(f"{M}/recipes.txt", "one line\ntwo lines\n")
    act(backend, "open_app", app_name="markor")
    act(backend, "click", index=idx(backend, text="recipes.txt"))
    assert not next(e for e in backend.phone.elements() if e.is_editable).is_scrollable


def test_paste_into_a_new_note(backend):
    dev = new_file_dialog(backend, "pasted.md")
    dev.clipboard = "pasted text"
    act(backend, "click", index=idx(backend, text="OK"))
    editor = next(i for i, e in enumerate(backend.phone.elements()) if e.is_editable)
    act(backend, "long_press", index=editor)
    act(backend, "navigate_back")  # closes the keyboard
    act(backend, "navigate_back")  # then the toolbar, staying in the editor
    assert backend.phone.find(text="Paste") is None and backend.phone.find(text="pasted.md") is not None
    act(backend, "long_press", index=editor)
    act(backend, "click", index=idx(backend, desc="Paste"))
    assert backend.phone.find(text="Paste") is None  # the toolbar closes
    act(backend, "navigate_back")  # keyboard
    act(backend, "navigate_back")  # editor: autosave
    assert dev.read_file(f"{M}/pasted.md") == "pasted text"


def test_new_note_without_extension(backend):
    dev = new_file_dialog(backend, "plain")
    act(backend, "input_text", index=idx(backend, hint="Extension"), text="", clear_text=True)
    act(backend, "click", index=idx(backend, text="OK"))
    assert dev.exists(f"{M}/plain") and not dev.exists(f"{M}/plain.md")


# -- MarkorCreateNoteFromClipboard: AndroidWorld's CreateFile check on the clipboard text -------------------
def test_create_note_from_clipboard_near_misses(backend):
    task, dev = start(backend, "MarkorCreateNoteFromClipboard")
    name, clip = task.params["file_name"], task.params["file_content"]
    assert dev.clipboard == clip and len(clip) == 10
    assert dev.listdir(M) == ([], []) and score(backend) == 0.0
    dev.write_file(f"{M}/{name}", clip[:8] + "##")  # two of ten characters differ: ratio 0.8
    assert score(backend) == 0.0
    dev.write_file(f"{M}/{name}.md", clip)  # the right text under another name
    assert score(backend) == 0.0
    dev.write_file(f"{M}/{name}", clip[:9] + "#")  # one differs: ratio 0.9, accepted as AndroidWorld does
    assert score(backend) == 1.0
    dev.write_file(f"{M}/{name}", "\r\n" + clip.upper() + "\n")  # CRs, surrounding newlines and case ignored
    assert score(backend) == 1.0


# -- MarkorMergeNotes: CreateFile on the merged text, then exactly 5 lines with the 2nd and 4th empty --------
def test_merge_notes_near_misses(backend):
    task, dev = start(backend, "MarkorMergeNotes")
    p = task.params
    c1, c2, c3 = (p[f"file{i}_content"] for i in (1, 2, 3))
    for i in (1, 2, 3):
        assert dev.read_file(f"{M}/{p[f'file{i}_name']}") == p[f"file{i}_content"] + "\n"
    new = f"{M}/{p['new_file_name']}"
    assert "." not in p["new_file_name"] and score(backend) == 0.0
    dev.write_file(new, f"{c1}\n{c2}\n{c3}\n")  # no blank lines: the fuzzy check passes, the line check fails
    assert created_file_ok(dev, p["new_file_name"], f"{c1}\n\n{c2}\n\n{c3}\n") and score(backend) == 0.0
    dev.write_file(new, f"{c1}\n\n\n{c2}\n\n{c3}\n")  # one blank line too many
    assert score(backend) == 0.0
    dev.write_file(new, f"{c2}\n\n{c1}\n\n{c3}\n")  # out of order
    assert score(backend) == 0.0
    dev.write_file(new + ".md", f"{c1}\n\n{c2}\n\n{c3}\n")  # Markor's default extension kept
    assert score(backend) == 0.0
    dev.write_file(new, f"{c1}\n\n{c2[:-1]}#\n\n{c3}")  # a typo is within the fuzzy match
    assert score(backend) == 1.0
    dev.write_file(new, f"\r\n{c1}\r\n\r\n{c2}\r\n\r\n{c3}\r\n\r\n")  # CRs and outer newlines do not count
    assert score(backend) == 1.0


# -- MarkorCreateNoteAndSms: half for the note (MarkorCreateNote), half for the SMS (SimpleSMSSendSms) -------
def test_create_note_and_sms_scores_each_half(backend):
    task, dev = start(backend, "MarkorCreateNoteAndSms")
    p = task.params
    assert dev.sms == [] and score(backend) == 0.0
    sms = {"address": p["number"], "body": p["text"], "time_ms": dev.time_ms, "box": "sent", "read": True}
    dev.sms.append(dict(sms, address=p["number"][:-1]))  # another number
    dev.foreground = SMS
    assert score(backend) == 0.0
    dev.sms.append(dict(sms))
    assert score(backend) == 0.5  # the SMS alone, Simple SMS in front
    dev.write_file(f"{M}/{p['file_name']}", p["text"] + "\n")
    assert score(backend) == 1.0
    dev.foreground = "net.gsantner.markor"
    assert score(backend) == 0.5  # the SMS check needs Simple SMS in front
    dev.foreground = SMS
    dev.advance(5 * 60 * 1000 + 1)
    assert score(backend) == 0.5  # sent more than five minutes ago
    dev.sms.append(dict(sms, time_ms=dev.time_ms))
    dev.write_file(f"{M}/{p['file_name']}", "another text entirely\n")
    assert score(backend) == 0.5  # the note's text is wrong


# -- MarkorTranscribeVideo: CreateFile's check on the clip's names, comma separated ------------------------
def test_transcribe_video_start_state(backend):
    task, dev = start(backend, "MarkorTranscribeVideo")
    p = task.params
    clips = [f for f in dev.files if f.startswith(f"{SDCARD}/Download/")]
    assert f"{SDCARD}/Download/{p['video_name']}" in clips
    assert len(clips) == 1 + len(set(p["noise_files"]) - {p["video_name"]})
    assert clip_frames(dev, f"{SDCARD}/Download/{p['video_name']}") == (p["messages"], 8)
    noise = [clip_frames(dev, f"{SDCARD}/Download/{f}") for f in p["noise_files"]]
    assert all(len(t) == 1 and len(t[0]) == 10 and 20 <= s <= 180 for t, s in noise)
    assert not any(f.startswith(M + "/") for f in dev.files)


def test_transcribe_video_near_misses(backend):
    task, dev = start(backend, "MarkorTranscribeVideo", seed=7)
    p = task.params
    names, path = p["messages"], f"{M}/{p['file_name']}"
    assert p["text"] == ",".join(names) and len(names) == 3
    dev.write_file(path, ", ".join(names[:-1]) + "\n")  # the last frame left out
    assert score(backend) == 0.0
    dev.write_file(path, ", ".join(reversed(names)) + "\n")  # out of order
    assert score(backend) == 0.0
    dev.write_file(f"{M}/{p['file_name'][:-4]}.md", ", ".join(names))  # another file name
    dev.remove(path)
    assert score(backend) == 0.0
    dev.write_file(f"{SDCARD}/Documents/{p['file_name']}", ", ".join(names))  # outside Markor's folder
    assert score(backend) == 0.0
    dev.write_file(path, ", ".join(names).lower() + "\n")  # spaces as in the goal's example, any case
    assert score(backend) == 1.0
    dev.write_file(path, ",".join(names))  # exactly the params' text
    assert score(backend) == 1.0


def test_transcribe_video_shortest_names_still_match():
    """The goal's ", " separator against the params' "," stays within the 0.9 ratio for the shortest names."""
    assert created_text_matches("Ali, Ana, Ava, Ema", "Ali,Ana,Ava,Ema")
    assert not created_text_matches("Ali, Ana, Ava", "Ali,Ana,Ava,Ema")
