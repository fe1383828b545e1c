"""Files (DocumentsUI) on SimDroid: near-miss verifier checks and delete/move driven through actions."""

import numpy as np

from voyager_gym.actions import Action
from voyager_gym.backends.sim.apps.files import DEVICE_ROOT
from voyager_gym.backends.sim.device import SDCARD

S = SDCARD


def start(backend, name, seed=1):
    params = backend.generate_params(name, seed)
    backend.reset(name, params, np.random.default_rng(0))
    return backend.task, backend.phone.dev


def idx(backend, text=None, desc=None, rid=None):
    for i, e in enumerate(backend.phone.elements()):
        if (text is None or e.text == text) and (desc is None or e.content_description == desc) and \
                (rid is None or e.resource_name == rid):
            return i
    raise AssertionError(f"no element text={text!r} desc={desc!r}")


def act(backend, action_type, **kw):
    backend.execute(Action(action_type, **kw))


def goto_folder(backend, folder):
    """Open Files, the roots drawer, the storage root and `folder` (scrolling the list if needed)."""
    act(backend, "open_app", app_name="files")
    act(backend, "click", index=idx(backend, desc="Show roots"))
    act(backend, "click", index=idx(backend, text=DEVICE_ROOT, rid="android:id/title"))
    for _ in range(3):
        if backend.phone.find(text=folder) is not None:
            break
        act(backend, "scroll", direction="down")
    act(backend, "click", index=idx(backend, text=folder))


def test_delete_file_near_miss(backend):
    task, dev = start(backend, "FilesDeleteFile")
    p = task.params
    folder = f"{S}/{p['subfolder']}"
    noise = [f for f in dev.listdir(folder)[1] if f != p["file_name"]]
    assert noise, "noise files exist around the target"
    dev.remove(f"{folder}/{noise[0]}")
    assert backend.score() == 0.0
    dev.remove(f"{folder}/{p['file_name']}")
    assert backend.score() == 1.0


def test_move_file_near_misses(backend):
    task, dev = start(backend, "FilesMoveFile")
    p = task.params
    src, dst = f"{S}/{p['source_folder']}", f"{S}/{p['destination_folder']}"
    dev.write_file(f"{dst}/{p['file_name']}", "copy")  # copied: still in the source
    assert backend.score() == 0.0
    dev.remove(f"{dst}/{p['file_name']}")
    used = (p["source_folder"], p["destination_folder"])
    other = next(f for f in ("Music", "Movies", "Pictures") if f not in used)
    dev.move(f"{src}/{p['file_name']}", f"{S}/{other}")  # wrong destination
    assert backend.score() == 0.0
    dev.move(f"{S}/{other}/{p['file_name']}", dst)
    assert backend.score() == 1.0


def test_storage_starts_without_stray_files(backend):
    task, dev = start(backend, "FilesMoveFile", seed=7)
    p = task.params
    assert not dev.exists(f"{S}/{p['destination_folder']}/{p['file_name']}")
    assert all(f.startswith(f"{S}/{p['source_folder']}/") for f in dev.files)


def test_delete_through_the_ui(backend):
    task, dev = start(backend, "FilesDeleteFile", seed=2)
    folder = task.params["subfolder"]
    first = sorted(dev.listdir(f"{S}/{folder}")[1], key=str.lower)[0]
    goto_folder(backend, folder)
    assert backend.phone.find(text=folder) is not None  # title and breadcrumb
    act(backend, "long_press", index=idx(backend, text=first))
    act(backend, "click", index=idx(backend, desc="Delete"))
    assert backend.phone.find(text=f"Delete \u201c{first}\u201d?") is not None
    act(backend, "click", index=idx(backend, text="OK"))
    assert not dev.exists(f"{S}/{folder}/{first}")
    assert backend.phone.find(text="1 selected") is None


def test_move_through_the_picker(backend):
    task, dev = start(backend, "FilesMoveFile", seed=3)
    p = task.params
    first = sorted(dev.listdir(f"{S}/{p['source_folder']}")[1], key=str.lower)[0]
    goto_folder(backend, p["source_folder"])
    act(backend, "long_press", index=idx(backend, text=first))
    act(backend, "click", index=idx(backend, desc="More options"))
    act(backend, "click", index=idx(backend, text="Move to…"))
    assert backend.phone.find(text="Move") is not None
    for _ in range(3):
        if backend.phone.find(text=p["destination_folder"]) is not None:
            break
        act(backend, "scroll", direction="down")
    act(backend, "click", index=idx(backend, text=p["destination_folder"]))
    act(backend, "click", index=idx(backend, text="Move"))
    assert dev.exists(f"{S}/{p['destination_folder']}/{first}")
    assert not dev.exists(f"{S}/{p['source_folder']}/{first}")


def test_recent_lists_files_and_back_leaves_folders(backend):
    task, dev = start(backend, "FilesDeleteFile", seed=4)
    act(backend, "open_app", app_name="Files")
    names = [e.text for e in backend.phone.elements() if e.resource_name == "android:id/title"]
    assert names and all(n in {f.rsplit("/", 1)[1] for f in dev.files} for n in names)
    goto_folder(backend, task.params["subfolder"])
    act(backend, "navigate_back")
    assert backend.phone.top_screen.title() == DEVICE_ROOT
