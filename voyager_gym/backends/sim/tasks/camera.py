"""Camera tasks: take one photo, take one video.

AndroidWorld clears the photo and video folders, lists them at initialization, and succeeds when exactly one
new entry appeared (Pictures/ for photos, Movies/ for videos). SimDroid does the same with the device's files.
"""

from __future__ import annotations

from typing import Any

from voyager_gym.actions import Action
from voyager_gym.backends.sim.apps import camera as app
from voyager_gym.backends.sim.device import DeviceState
from voyager_gym.backends.sim.tasks.base import SimTask, View, back, click, done, open_app, register_task


def entries(dev: DeviceState, folder: str) -> set[str]:
    """What `ls folder` prints: the names of its files and sub-folders."""
    dirs, files = dev.listdir(folder)
    return set(dirs) | set(files)


class _Camera(SimTask):
    app_names = ("camera",)
    complexity = 1.0
    folder = app.PHOTOS_DIR

    def initialize(self, dev: DeviceState) -> None:
        for d in (app.PHOTOS_DIR, app.VIDEOS_DIR):
            dev.remove(d)
            dev.mkdir(d)
        st = app.state(dev)
        st.update(mode=self.rng("mode").choice(["photo", "photo", "video"]), recording_since=None, last=None)
        self.before = entries(dev, self.folder)

    def is_successful(self, dev: DeviceState) -> float:
        return 1.0 if len(entries(dev, self.folder) - self.before) == 1 else 0.0


@register_task
class CameraTakePhoto(_Camera):
    template = "Take one photo."
    folder = app.PHOTOS_DIR

    def expert(self, view: View, mem: dict[str, Any]) -> Action:
        if mem.get("shot"):
            return done()
        if view.app != app.PKG:
            return open_app("Camera")
        shutter = view.find(desc="Shutter")
        if shutter is not None:
            mem["shot"] = True
            return click(shutter)
        mode = view.find(rid=f"{app.PKG}:id/mode_photo")
        return click(mode) if mode is not None else back()


@register_task
class CameraTakeVideo(_Camera):
    template = "Take one video."
    folder = app.VIDEOS_DIR

    def expert(self, view: View, mem: dict[str, Any]) -> Action:
        if view.app != app.PKG:
            return open_app("Camera")
        stop = view.find(desc="Stop recording")
        if stop is not None:
            mem["stopped"] = True
            return click(stop)
        if mem.get("stopped"):
            return done()
        start = view.find(desc="Start recording")
        if start is not None:
            return click(start)
        mode = view.find(rid=f"{app.PKG}:id/mode_video")
        return click(mode) if mode is not None else back()
