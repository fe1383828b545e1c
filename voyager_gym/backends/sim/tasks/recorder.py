"""Audio Recorder tasks: record one clip; record one clip saved under a given name.

AndroidWorld lists the records folder (name, size, time) at initialization; RecordAudio succeeds when exactly
one non-empty file is new or changed; RecordAudioWithFileName succeeds when "<file_name>.m4a" exists there
(the goal's name already ends in .m4a and the app appends its extension, so the file is "x.m4a.m4a").
"""

from __future__ import annotations

import datetime as dt
import random
import string
from typing import Any

from voyager_gym.actions import Action
from voyager_gym.backends.sim.apps import recorder as app
from voyager_gym.backends.sim.device import DeviceState
from voyager_gym.backends.sim.tasks.base import (
    SimTask,
    View,
    back,
    click,
    done,
    open_app,
    register_task,
    type_into,
)
from voyager_gym.backends.sim.tasks.common import clear_storage

NAMES = (
    "interview",
    "meeting",
    "lecture",
    "session",
    "note",
    "conference",
    "webinar",
    "workshop",
    "seminar",
    "briefing",
    "discussion",
    "talk",
    "presentation",
    "training",
    "guidance",
    "memo",
    "narration",
    "storytelling",
    "journal",
    "diary",
    "debate",
    "symposium",
    "roundtable",
    "consultation",
    "review",
)


def modified_file_name(rng: random.Random, base: str) -> str:
    """AndroidWorld's file-name variant: a date, 4 random characters or a word, as prefix or suffix."""
    kind = rng.choice(["date_prefix", "random_suffix", "fixed_suffix"])
    as_prefix = rng.choice([True, False])
    stem, dot, ext = base.rpartition(".")
    stem, ext = (stem, dot + ext) if dot else (base, "")
    if kind == "date_prefix":
        day = dt.date(2023, 1, 1) + dt.timedelta(days=rng.randint(0, 286))
        mod = day.strftime("%Y_%m_%d")
    elif kind == "random_suffix":
        mod = "".join(rng.choices(string.ascii_letters + string.digits, k=4))
    else:
        mod = rng.choice(["backup", "copy", "final", "edited"])
    return f"{mod}_{stem}{ext}" if as_prefix else f"{stem}_{mod}{ext}"


def snapshot(dev: DeviceState) -> set[tuple[str, int, int]]:
    """(name, size, mtime) of each recording: AndroidWorld's file list with metadata."""
    out = set()
    for p in app.recordings(dev):
        e = dev.files[p]
        out.add((p, len(e.content), e.mtime_ms))
    return out


class _Recorder(SimTask):
    app_names = ("audio recorder",)

    def initialize(self, dev: DeviceState) -> None:
        # AndroidWorld's recordings folder starts empty (RecordAudioWithFileName clears it; RecordAudio
        # snapshots a device that holds none).
        st = app.state(dev)
        st.update(recording=None, last=None)
        for p in app.recordings(dev):
            dev.remove(p)
        st["counter"] = 1
        self.before = snapshot(dev)

    def record_expert(self, view: View, mem: dict[str, Any], name: str | None) -> Action:
        """Record, stop, then (optionally) type `name` into the name dialog and save."""
        if view.app != app.PKG:
            return open_app("Audio Recorder")
        if view.has(text="Record name"):
            field = view.find(editable=True)
            mem["saved"] = True  # Enter in the name field saves, as Save does
            if name is not None and field is not None and view.el(field).text != name:
                return type_into(field, name)
            return click(view.find(text="Save"))
        if mem.get("saved"):
            return done()
        stop = view.find(desc="Stop recording")
        if stop is not None:
            return click(stop)
        start = view.find(desc="Start recording")
        return click(start) if start is not None else back()


@register_task
class AudioRecorderRecordAudio(_Recorder):
    complexity = 1.2
    template = "Record an audio clip using Audio Recorder app and save it."

    def is_successful(self, dev: DeviceState) -> float:
        after = {e for e in snapshot(dev) if e[1] > 0}
        return 1.0 if len(after - self.before) == 1 else 0.0

    def expert(self, view: View, mem: dict[str, Any]) -> Action:
        return self.record_expert(view, mem, None)


@register_task
class AudioRecorderRecordAudioWithFileName(_Recorder):
    complexity = 2.0
    template = 'Record an audio clip and save it with name "{file_name}" using Audio Recorder app.'

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return {"file_name": modified_file_name(rng, rng.choice(NAMES) + ".m4a"), "text": ""}

    def initialize(self, dev: DeviceState) -> None:
        clear_storage(dev)  # AndroidWorld's CreateFile setup clears the device's storage first
        super().initialize(dev)
        dev.remove(f"{app.RECORDS_DIR}/{self.params['file_name']}{app.EXT}")

    def is_successful(self, dev: DeviceState) -> float:
        return 1.0 if dev.find_files(self.params["file_name"] + app.EXT, app.RECORDS_DIR) else 0.0

    def expert(self, view: View, mem: dict[str, Any]) -> Action:
        return self.record_expert(view, mem, self.params["file_name"])
