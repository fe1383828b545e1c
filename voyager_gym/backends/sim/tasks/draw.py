"""Simple Draw Pro task: create a drawing and save it under the goal's name in Pictures.

As in AndroidWorld: the name is a word of its list, a varied file name and an extension (.png, .svg, .jpg);
`text` is in the schema but unused; setup clears the storage; the verifier checks only that Pictures holds a
file or folder of that name (AndroidWorld overrides the content check of its CreateFile validator).
"""

from __future__ import annotations

import posixpath
import random
from typing import Any

from voyager_gym.actions import Action
from voyager_gym.backends.sim.apps import draw as app
from voyager_gym.backends.sim.apps.simple_commons import humanize
from voyager_gym.backends.sim.device import SDCARD, DeviceState
from voyager_gym.backends.sim.tasks import vocab
from voyager_gym.backends.sim.tasks.base import (
    SimTask,
    View,
    back,
    click,
    done,
    open_app,
    register_task,
    scroll,
    type_into,
)
from voyager_gym.backends.sim.tasks.common import (
    clear_storage,
    exists_under,
    folder_picker_expert,
)

PICTURES = f"{SDCARD}/Pictures"
WORDS = ("lorem", "ipsum", "dolor", "sit", "amet", "consectetur", "adipiscing", "elit")  # AndroidWorld's
EXTENSIONS = (".png", ".svg", ".jpg")


@register_task
class SimpleDrawProCreateDrawing(SimTask):
    app_names = ("simple draw pro",)
    complexity = 1.8
    template = (
        "Create a new drawing in Simple Draw Pro. Name it {file_name}. Save it in the Pictures folder "
        "within the sdk_gphone_x86_64 storage area."
    )

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        word = rng.choices(WORDS, k=1)[0]
        name = f"{word}_{vocab.random_file_name(rng)}{rng.choice(EXTENSIONS)}"
        return {"file_name": name, "text": ""}

    def initialize(self, dev: DeviceState) -> None:
        clear_storage(dev)

    def is_successful(self, dev: DeviceState) -> float:
        return 1.0 if exists_under(dev, PICTURES, self.params["file_name"]) else 0.0

    def expert(self, view: View, mem: dict[str, Any]) -> Action:
        """A stroke on the canvas, Save, the Pictures folder, the name without its extension, the extension's
        format, OK."""
        stem, ext = posixpath.splitext(self.params["file_name"])
        if view.has(text="File saved successfully"):
            return done()
        if view.app != app.PKG:
            return open_app("Simple Draw Pro")
        picker = folder_picker_expert(view, "Pictures")
        if picker is not None:
            return picker
        if view.has(text="Save as", rid="android:id/alertTitle"):
            path = view.find(rid=f"{app.PKG}:id/save_image_path")
            if view.el(path).text != humanize(PICTURES):
                return click(path)
            field = view.find(rid=f"{app.PKG}:id/filename")
            if (view.el(field).text or "") != stem:
                return type_into(field, stem)
            radio = view.find(rid=f"{app.PKG}:id/save_image_radio_{ext[1:]}")
            if not view.el(radio).is_checked:
                return click(radio)
            return click(view.find(text="OK", rid="android:id/button1"))
        canvas = view.find(rid=f"{app.PKG}:id/my_canvas")
        if canvas is None:
            return back()
        if not mem.get("drawn"):
            mem["drawn"] = True
            return scroll("down", canvas)
        return click(view.find(desc="Save"))
