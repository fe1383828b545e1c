"""Files tasks: delete a file and move a file between the standard folders of the sdcard.

As in AndroidWorld, storage is cleared of files first, the target is created with noise files whose names vary
the folder's usual file names, and the verifier checks only existence: `folder/name` must be gone (delete), or
gone from the source and present in the destination (move). The per-folder file names are AndroidWorld's.
"""

from __future__ import annotations

import posixpath
import random
from typing import Any

from voyager_gym.actions import Action
from voyager_gym.backends.sim.apps.files import DEVICE_ROOT
from voyager_gym.backends.sim.apps.files import PKG as FILES
from voyager_gym.backends.sim.device import SDCARD, DeviceState
from voyager_gym.backends.sim.tasks import vocab
from voyager_gym.backends.sim.tasks.base import (
    SimTask,
    View,
    back,
    click,
    done,
    long_press,
    open_app,
    register_task,
    scroll_to_find,
)
from voyager_gym.backends.sim.tasks.common import (
    clear_storage,
    create_file,
    exists_under,
    moved,
    noise_names,
)

# The standard folders of the sdcard (AndroidWorld's order) and the usual file names in each.
FOLDER_FILES = vocab.FOLDER_FILES
FOLDERS = tuple(FOLDER_FILES)


def _add_noise(dev: DeviceState, rng: random.Random, base: str, folder: str, variants: list[str]) -> None:
    for name in noise_names(rng, base, tuple(variants)):
        path = f"{SDCARD}/{folder}/{name}"
        if not dev.exists(path):
            create_file(dev, path, "", rng)


# -- expert -------------------------------------------------------------------------------------------------
def files_expert(view: View, mem: dict[str, Any], folder: str, name: str, dest: str | None = None) -> Action:
    """Drawer -> storage root -> folder -> long-press the file -> Delete/OK, or Move to… -> dest -> Move."""
    if mem.get("finished"):
        return done()
    if view.app != FILES:
        return open_app("Files")
    if view.has(rid="android:id/message") and view.has(text="OK", rid="android:id/button1"):
        mem["finished"] = True
        return click(view.find(text="OK", rid="android:id/button1"))
    if view.has(text="Move to…"):
        return click(view.find(text="Move to…"))
    title = view.title or ""
    if view.has(text="Move", rid="android:id/button1"):  # the destination picker
        if title == dest:
            mem["finished"] = True
            return click(view.find(text="Move", rid="android:id/button1"))
        if title == DEVICE_ROOT:
            found = scroll_to_find(view, mem, "dest", text=dest, rid="android:id/title")
            return click(found) if isinstance(found, int) else found
        return back()
    if view.has(desc="Show roots") is False and title.endswith(" selected"):
        if title == "1 selected":
            return click(view.find(desc="More options" if dest else "Delete"))
        return click(view.find(desc="Clear selection"))
    drawer_root = view.find(text=DEVICE_ROOT, rid="android:id/title")
    if drawer_root is not None:
        return click(drawer_root)
    if title == folder and view.has(rid=f"{FILES}:id/breadcrumb_text"):
        found = scroll_to_find(view, mem, "file", text=name, rid="android:id/title")
        return long_press(found) if isinstance(found, int) else found
    if title == DEVICE_ROOT:
        found = scroll_to_find(view, mem, "folder", text=folder, rid="android:id/title")
        return click(found) if isinstance(found, int) else found
    i = view.find(desc="Show roots")
    return click(i) if i is not None else back()


@register_task
class FilesDeleteFile(SimTask):
    app_names = ("files",)
    complexity = 2.2
    template = ("Delete the file {file_name} from the Android filesystem located in the {subfolder} folder "
                "within the sdk_gphone_x86_64 storage area.")

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        subfolder = rng.choice(FOLDERS)
        noise = list(FOLDER_FILES[subfolder])
        ext = posixpath.splitext(noise[0])[1]
        file_name = vocab.random_file_name(rng) + ext
        return {"file_name": file_name, "subfolder": subfolder, "noise_candidates": noise}

    def initialize(self, dev: DeviceState) -> None:
        clear_storage(dev)
        p = self.params
        rng = self.setup_rng()
        create_file(dev, f"{SDCARD}/{p['subfolder']}/{p['file_name']}", "", rng)
        _add_noise(dev, rng, p["file_name"], p["subfolder"], p["noise_candidates"])

    def is_successful(self, dev: DeviceState) -> float:
        p = self.params
        return 0.0 if exists_under(dev, f"{SDCARD}/{p['subfolder']}", p["file_name"]) else 1.0

    def expert(self, view: View, mem: dict[str, Any]) -> Action:
        return files_expert(view, mem, self.params["subfolder"], self.params["file_name"])


@register_task
class FilesMoveFile(SimTask):
    app_names = ("files",)
    complexity = 2.0
    template = ("Move the file {file_name} from {source_folder} within the sdk_gphone_x86_64 storage area to "
                "the {destination_folder} within the same sdk_gphone_x86_64 storage area in the Android "
                "filesystem.")

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        src = rng.choice(FOLDERS)
        dst = rng.choice([f for f in FOLDERS if f != src])
        # AndroidWorld names the file after one of the *destination* folder's usual files; the noise around it
        # varies the source folder's.
        return {
            "file_name": rng.choice(FOLDER_FILES[dst]),
            "source_folder": src,
            "destination_folder": dst,
            "noise_candidates": list(FOLDER_FILES[src]),
        }

    def initialize(self, dev: DeviceState) -> None:
        clear_storage(dev)
        p = self.params
        rng = self.setup_rng()
        src = f"{SDCARD}/{p['source_folder']}"
        _add_noise(dev, rng, p["file_name"], p["source_folder"], p["noise_candidates"])
        create_file(dev, f"{src}/{p['file_name']}", "", rng)
        dev.mkdir(f"{SDCARD}/{p['destination_folder']}")

    def is_successful(self, dev: DeviceState) -> float:
        return 1.0 if moved(dev, SDCARD, self.params) else 0.0

    def expert(self, view: View, mem: dict[str, Any]) -> Action:
        p = self.params
        return files_expert(view, mem, p["source_folder"], p["file_name"], p["destination_folder"])
