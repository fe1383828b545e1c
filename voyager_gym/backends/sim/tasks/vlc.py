"""VLC playlist tasks: VlcCreatePlaylist and VlcCreateTwoPlaylists (0.5 per playlist).

AndroidWorld's rule (sqlite_validators.verify_playlist): the rows whose playlist name fuzzy-matches the wanted
name must be exactly as many as the wanted files, and file k must sit at position k of such a playlist.
Params are drawn as AndroidWorld draws them, repeats included: about 1% of VlcCreateTwoPlaylists instances
name both playlists alike (16 themes x 7 qualifiers), and then no device state scores more than 0.5 (the rows
of either playlist count for both names); the expert then makes the first playlist only.
"""

from __future__ import annotations

import random
import string
from typing import Any

from voyager_gym.actions import Action
from voyager_gym.backends.sim.apps.vlc import PKG, PLAYLISTS, VIDEOS_DIR, stem
from voyager_gym.backends.sim.device import DeviceState
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
    type_into,
)
from voyager_gym.backends.sim.tasks.common import (
    clear_storage,
    find_video,
    playlist_matches,
    video_file_name,
    videos_tab,
)

THEMES = (
    "Adventure",
    "Comedy",
    "Daily Routines",
    "Documentary Insights",
    "Epic Moments",
    "Family Gatherings",
    "Fitness Challenges",
    "Gaming Sessions",
    "How To",
    "Mystery and Thrills",
    "Recipe Collection",
    "Road Trips",
    "Summer Highlights",
    "Tech Reviews",
    "Travel Guide",
    "Ultimate Fails",
)
QUALIFIERS = ("Essentials", "Favorites", "Marathon", "Playlist", "Series", "Specials", "Ultimate Collection")


def playlist_params(rng: random.Random) -> dict[str, Any]:
    """A playlist name, then 2-5 files and as many noise files, in AndroidWorld's order of draws (a file
    name may repeat, as there: the file is written once and listed twice)."""
    name = f"{rng.choice(THEMES)} {rng.choice(QUALIFIERS)}"
    n = rng.randint(2, 5)
    files = [video_file_name(rng) for _ in range(n)]
    noise = [video_file_name(rng) for _ in range(n)]
    return {"playlist_name": name, "files": files, "noise_files": noise}


def playlist_rows(dev: DeviceState) -> list[tuple[str, str, int]]:
    """(playlist name, media file name, position) rows, as AndroidWorld's join query returns them."""
    return [(p["name"], f, i) for p in dev.table(PLAYLISTS) for i, f in enumerate(p["media"])]


def verify_playlist(dev: DeviceState, name: str, files: list[str]) -> bool:
    return playlist_matches(playlist_rows(dev), name, files)


def write_videos(task: SimTask, dev: DeviceState, files: list[str]) -> None:
    rng = task.rng("videos")
    for f in files:
        dev.write_file(f"{VIDEOS_DIR}/{f}", "".join(rng.choices(string.ascii_letters + string.digits, k=10)))


def playlist_expert(view: View, mem: dict[str, Any], jobs: list[tuple[str, list[str]]]) -> Action:
    """Add each file on its own (VLC adds a multi-selection in list order, not the wanted one): long-press it,
    'Add to playlist', then type the new playlist's name (first file) or tap the existing playlist."""
    j, i = mem.setdefault("job", 0), mem.setdefault("i", 0)
    if j >= len(jobs):
        return done()
    name, files = jobs[j]
    target = stem(files[i])

    def advance() -> None:
        mem["i"] = i + 1
        if mem["i"] == len(files):
            mem["job"], mem["i"] = j + 1, 0

    if view.app != PKG:
        return open_app("VLC")
    if view.has(text="Add to playlist", rid="android:id/alertTitle"):
        row = view.find(text=name, rid=f"{PKG}:id/playlist_item")
        advance()
        if row is not None:
            return click(row)
        return type_into(view.find(editable=True), name)
    if view.has(desc="Add to playlist"):  # selection mode
        chosen = [
            view.el(k).text for k in view.find_all(rid=f"{PKG}:id/ml_item_title") if view.el(k).is_selected
        ]
        return click(view.find(desc="Add to playlist")) if chosen == [target] else back()
    if view.title == "Videos":
        found = find_video(view, mem, target)
        return long_press(found) if isinstance(found, int) else found
    return videos_tab(view)


@register_task
class VlcCreatePlaylist(SimTask):
    app_names = ("vlc",)
    complexity = 2.8
    template = (
        'Create a playlist titled "{playlist_name}" with the following files in VLC (located in Internal '
        "Memory/VLCVideos), in order: {files_text}"
    )

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return playlist_params(rng)

    @property
    def goal(self) -> str:
        return self.template.format(
            playlist_name=self.params["playlist_name"], files_text=", ".join(self.params["files"])
        )

    def initialize(self, dev: DeviceState) -> None:
        clear_storage(dev)  # AndroidWorld's VLC setup clears the internal storage's files first
        dev.table(PLAYLISTS).clear()
        write_videos(self, dev, self.params["files"] + self.params["noise_files"])

    def is_successful(self, dev: DeviceState) -> float:
        return 1.0 if verify_playlist(dev, self.params["playlist_name"], self.params["files"]) else 0.0

    def expert(self, view: View, mem: dict[str, Any]) -> Action:
        return playlist_expert(view, mem, [(self.params["playlist_name"], self.params["files"])])


@register_task
class VlcCreateTwoPlaylists(SimTask):
    app_names = ("vlc",)
    complexity = 4.8
    template = (
        'Create a playlist titled "{playlist_name1}" with the following files in VLC (located in Internal '
        'Memory/VLCVideos), in order: {files1_text}. And then, create a playlist titled "{playlist_name2}" '
        "with the following files in VLC, in order: {files2_text}."
    )

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        a, b = playlist_params(rng), playlist_params(rng)
        return {
            "playlist_name1": a["playlist_name"],
            "files1": a["files"],
            "noise_files1": a["noise_files"],
            "playlist_name2": b["playlist_name"],
            "files2": b["files"],
            "noise_files2": b["noise_files"],
        }

    @property
    def goal(self) -> str:
        p = self.params
        return self.template.format(
            playlist_name1=p["playlist_name1"],
            files1_text=", ".join(p["files1"]),
            playlist_name2=p["playlist_name2"],
            files2_text=", ".join(p["files2"]),
        )

    def initialize(self, dev: DeviceState) -> None:
        p = self.params
        clear_storage(dev)
        dev.table(PLAYLISTS).clear()
        write_videos(self, dev, p["files1"] + p["noise_files1"] + p["files2"] + p["noise_files2"])

    def is_successful(self, dev: DeviceState) -> float:
        p = self.params
        return 0.5 * verify_playlist(dev, p["playlist_name1"], p["files1"]) + 0.5 * verify_playlist(
            dev, p["playlist_name2"], p["files2"]
        )

    def expert(self, view: View, mem: dict[str, Any]) -> Action:
        p = self.params
        jobs = [(p["playlist_name1"], p["files1"]), (p["playlist_name2"], p["files2"])]
        if aw_fuzzy_match(p["playlist_name1"], p["playlist_name2"]):  # one name for both: only one can count
            jobs = jobs[:1]
        return playlist_expert(view, mem, jobs)
