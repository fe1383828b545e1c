"""Retro Music tasks: RetroCreatePlaylist, RetroPlayingQueue, RetroSavePlaylist and RetroPlaylistDuration.

Each starts with 15 songs in Music (2-5 or 9-11 wanted, the rest noise), written as AndroidWorld's setup
writes them (title = file name, a given name as artist, 3-5 minutes; for the duration task the wanted songs
split 47.5 minutes between them). The verifiers read what AndroidWorld reads from Retro's databases: the
playlist join (playlist name, song title, length, position by song key within the playlist's name) and the
playing queue's titles.
"""

from __future__ import annotations

import itertools
import random
import re
from typing import Any

from voyager_gym.actions import Action
from voyager_gym.backends.sim.apps.retro import (
    DOWNLOAD_DIR,
    MUSIC_DIR,
    PKG,
    PLAYLIST_SONGS,
    PLAYLISTS,
    QUEUE,
    mp3_content,
)
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
    scroll,
    type_into,
)
from voyager_gym.backends.sim.tasks.common import (
    playlist_matches,
)

SONGS = (
    "My Heart is Yours",
    "Endless Summer",
    "Whispering Wind",
    "Lost in the Echo",
    "Chasing Shadows",
    "Night Drive",
    "Echoes of Silence",
    "Bright Lights",
    "Moments",
    "Forever Young",
    "Rising Sun",
    "Silent Dreams",
    "City of Stars",
    "Moonlight Sonata",
    "Through the Storm",
    "Return to Paradise",
    "Voices in the Hall",
    "Under the Sky",
    "Dreamer's Awake",
    "Serenity Now",
    "Falling Feathers",
    "Orbiting Stars",
    "Reflections",
    "Beyond the Horizon",
    "Golden Days",
    "Twilight Calling",
    "Heartbeat Away",
    "Mystic Journey",
    "Hidden Paths",
    "Distant Memories",
    "Path to Zenith",
    "Eternal Flame",
    "Shadows of Time",
    "Whispers of the Past",
    "Waves of Change",
)
THEMES = (
    "Chill Beats",
    "Morning Vibes",
    "Workout Energy",
    "Study Sessions",
    "Golden Oldies",
    "Indie Gems",
    "Rock Anthems",
    "Electronic Waves",
    "Jazz Classics",
    "Hip Hop Hits",
    "Country Roads",
    "Classical Moods",
    "Pop Essentials",
    "Latin Grooves",
    "Reggae Rhythms",
    "Soulful Sounds",
    "Blues Vibes",
    "Metal Mayhem",
    "Party Mix",
    "Tranquil Tunes",
    "R&B Favorites",
    "Folk Inspirations",
    "Disco Nights",
    "Global Beats",
    "Sleepytime Songs",
    "Acoustic Sessions",
    "Vintage Vinyl",
    "Instrumental Study",
    "Coffeehouse Jazz",
    "Rainy Day Relax",
    "Gym Pump Up",
    "Retro Pop Hits",
    "Indie Rock Roadtrip",
    "Electronic Chillout",
    "Classical Concentration",
    "Jazz Lounge",
    "Hip Hop Bangers",
    "Country Classics",
    "Classical Opera Highlights",
    "Pop Punk Power",
    "Latin Dance Party",
    "Reggae Sunsplash",
    "Soul Classics",
    "Blues Break",
    "Party Starters",
    "Tranquil Ambient",
    "R&B Grooves",
    "Folk Favourites",
    "Disco Fever",
    "World Music Tour",
)
MIN_TOTAL_MS, MAX_TOTAL_MS = 45 * 60 * 1000, 50 * 60 * 1000


def song_params(rng: random.Random, lo: int, hi: int) -> dict[str, Any]:
    """A playlist name (number, then theme), 15 distinct songs, then how many of them are wanted."""
    number = rng.randint(1, 999)
    name = f"{rng.choice(THEMES)} {number}"
    files = [f"{s}.mp3" for s in rng.sample(SONGS, 15)]
    n = rng.randint(lo, hi)
    return {"playlist_name": name, "files": files[:n], "noise_files": files[n:]}


def title(file: str) -> str:
    """The song's title as AndroidWorld tags it and compares it: the file name up to its first dot."""
    return file.split(".")[0]


def list_with_sum(rng: random.Random, total: int, m: int) -> list[int]:
    """`m` non-negative integers summing to `total`: the gaps between m-1 sorted uniform cut points."""
    cuts = sorted(rng.randint(0, total) for _ in range(m - 1))
    edges = [0, *cuts, total]
    return [edges[i + 1] - edges[i] for i in range(m)]


def write_song(dev: DeviceState, rng: random.Random, file: str, duration_ms: int | None = None) -> None:
    artist = rng.choice(vocab.GIVEN_NAMES)
    ms = rng.randint(3 * 60 * 1000, 5 * 60 * 1000) if duration_ms is None else duration_ms
    dev.write_file(f"{MUSIC_DIR}/{file}", mp3_content(title(file), artist, ms))


def clear_playlists(dev: DeviceState) -> None:
    dev.table(PLAYLISTS).clear()
    dev.table(PLAYLIST_SONGS).clear()


def playlist_rows(dev: DeviceState) -> list[tuple[str, str, int, int]]:
    """AndroidWorld's join: (playlist name, song title, order in playlist, duration ms); the order is the
    song-key rank within all playlists of that name."""
    names = {p["playlist_id"]: p["playlist_name"] for p in dev.table(PLAYLISTS)}
    joined = [
        (names[r["playlist_creator_id"]], r)
        for r in dev.table(PLAYLIST_SONGS)
        if r["playlist_creator_id"] in names
    ]
    joined.sort(key=lambda x: (x[0], x[1]["song_key"]))
    out, rank, last = [], 0, None
    for name, r in joined:
        rank = rank + 1 if name == last else 0
        last = name
        out.append((name, r["title"], rank, r["duration"]))
    return out


def queue_titles(dev: DeviceState) -> list[str]:
    return [r["title"] for r in dev.table(QUEUE)]


# -- the expert ---------------------------------------------------------------------------------------------
TITLE = f"{PKG}:id/title"


def selected_count(view: View) -> int:
    for e in view.elements:
        m = re.fullmatch(r"(\d+) selected", e.text or "")
        if m:
            return int(m.group(1))
    return 0


def select_songs(view: View, mem: dict[str, Any], titles: list[str], action: str) -> Action:
    """On the Songs tab: long-press the first title, tap the others in order (scrolling towards each by the
    A-Z order), then press the selection toolbar's `action`."""
    picked: list[str] = mem.setdefault("picked", [])
    n = selected_count(view)
    if n == 0:
        tab = view.find(desc="Songs", rid=f"{PKG}:id/action_song")
        picked.clear()
        if tab is None:
            return back()
        if not view.el(tab).is_selected:
            return click(tab)
    elif n != len(picked):  # out of step with the screen: start again
        picked.clear()
        return back()
    if len(picked) == len(titles):
        picked.clear()
        mem["stage"] = mem.get("stage", 0) + 1
        return click(view.find(desc=action))
    target = titles[len(picked)]
    hit = view.find(text=target, rid=TITLE)
    if hit is not None:
        picked.append(target)
        return click(hit) if picked[1:] else long_press(hit)
    shown = [view.el(k).text or "" for k in view.find_all(rid=TITLE)]
    lst = view.find(rid=f"{PKG}:id/list_song")
    if shown and target.lower() < shown[0].lower():
        return scroll("up", lst)
    return scroll("down", lst)


def create_in_dialogs(view: View, mem: dict[str, Any], name: str) -> Action | None:
    """Add to playlist -> New playlist -> type the name -> Create. None when no such dialog is up."""
    if view.has(text="New playlist", rid="android:id/alertTitle"):
        field = view.find(editable=True)
        if view.el(field).text != name:
            return type_into(field, name)
        mem["stage"] = mem.get("stage", 0) + 1
        return click(view.find(text="Create"))
    if view.has(text="Add to playlist", rid="android:id/alertTitle"):
        return click(view.find(text="New playlist", rid="android:id/text1"))
    return None


def playlist_expert(view: View, mem: dict[str, Any], name: str, titles: list[str]) -> Action:
    """Stages: 0 select the songs and Add to playlist; 1 name the new playlist; 2 created."""
    if view.app != PKG:
        return open_app("Retro Music")
    stage = mem.setdefault("stage", 0)
    if stage >= 2:
        return done()
    dialog = create_in_dialogs(view, mem, name)
    if dialog is not None:
        return dialog
    if stage == 1:  # the dialog was dismissed: select again
        mem["stage"] = 0
    return select_songs(view, mem, titles, "Add to playlist")


def export_expert(view: View, mem: dict[str, Any], name: str) -> Action:
    """Playlists tab -> the playlist -> More options -> Save as file -> Save (the picker opens in
    Downloads)."""
    if view.app != PKG:
        return open_app("Retro Music")
    if view.has(text="Save", rid="android:id/button1") and view.title == "Downloads":
        mem["stage"] += 1
        return click(view.find(text="Save", rid="android:id/button1"))
    if view.has(text="Save as file"):
        return click(view.find(text="Save as file"))
    if view.title == name:
        return click(view.find(desc="More options"))
    row = view.find(text=name, rid=TITLE)
    if row is not None and view.has(desc="Playlists", rid=f"{PKG}:id/action_playlist"):
        return click(row)
    tab = view.find(desc="Playlists", rid=f"{PKG}:id/action_playlist")
    return click(tab) if tab is not None else back()


# -- tasks --------------------------------------------------------------------------------------------------
@register_task
class RetroCreatePlaylist(SimTask):
    app_names = ("retro music",)
    complexity = 2.4
    template = (
        'Create a playlist in Retro Music titled "{playlist_name}" with the following songs, in order: '
        "{names}"
    )

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return song_params(rng, 2, 5)

    @property
    def titles(self) -> list[str]:
        return [title(f) for f in self.params["files"]]

    @property
    def goal(self) -> str:
        return self.template.format(playlist_name=self.params["playlist_name"], names=", ".join(self.titles))

    def initialize(self, dev: DeviceState) -> None:
        """Internal storage emptied (files only), playlists cleared, then the 15 songs written."""
        for path in [p for p in dev.files if p.startswith(SDCARD + "/")]:
            dev.remove(path)
        clear_playlists(dev)
        rng = self.setup_rng()  # artists and lengths drawn as AndroidWorld's setup draws them
        for f in self.params["files"] + self.params["noise_files"]:
            write_song(dev, rng, f)

    def is_successful(self, dev: DeviceState) -> float:
        rows = [(r[0], r[1], r[2]) for r in playlist_rows(dev)]
        return 1.0 if playlist_matches(rows, self.params["playlist_name"], self.titles) else 0.0

    def expert(self, view: View, mem: dict[str, Any]) -> Action:
        return playlist_expert(view, mem, self.params["playlist_name"], self.titles)


@register_task
class RetroPlayingQueue(RetroCreatePlaylist):
    complexity = 3.2
    template = "Add the following songs, in order, {names} to my playing queue in Retro music."

    @property
    def goal(self) -> str:
        return self.template.format(names=", ".join(self.titles))

    def is_successful(self, dev: DeviceState) -> float:
        return 1.0 if queue_titles(dev) == self.titles else 0.0

    def expert(self, view: View, mem: dict[str, Any]) -> Action:
        if view.app != PKG:
            return open_app("Retro Music")
        if mem.get("stage", 0) >= 1:
            return done()
        return select_songs(view, mem, self.titles, "Add to playing queue")


@register_task
class RetroSavePlaylist(RetroCreatePlaylist):
    complexity = 5.0
    template = (
        'Create a playlist in Retro Music titled "{playlist_name}" with the following songs, in order: '
        "{names}. Then export the playlist to the Downloads directory on the device."
    )

    def is_successful(self, dev: DeviceState) -> float:
        saved = dev.norm(f"{DOWNLOAD_DIR}/{self.params['playlist_name']}.m3u") in dev.files
        return (super().is_successful(dev) + float(saved)) / 2.0

    def expert(self, view: View, mem: dict[str, Any]) -> Action:
        stage = mem.setdefault("stage", 0)
        if stage < 2:
            return playlist_expert(view, mem, self.params["playlist_name"], self.titles)
        if stage >= 3:
            return done()
        return export_expert(view, mem, self.params["playlist_name"])


@register_task
class RetroPlaylistDuration(RetroCreatePlaylist):
    complexity = 3.0
    template = (
        'Create a playlist in Retro Music titled "{playlist_name}" with a duration between 45 and 50 minutes '
        "using the provided songs."
    )

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return song_params(rng, 9, 11)

    @property
    def goal(self) -> str:
        return self.template.format(playlist_name=self.params["playlist_name"])

    def initialize(self, dev: DeviceState) -> None:
        """Playlists cleared (storage left as it is, as AndroidWorld does here); the wanted songs split
        47.5 minutes between them, the noise songs 3-5 minutes each."""
        clear_playlists(dev)
        # AndroidWorld's setup here does not seed `random` (it skips the base class's initialize_task), so its
        # lengths and artists follow whatever drew before; SimDroid draws its own from the instance seed.
        rng = self.rng("songs")
        files = self.params["files"]
        for f, ms in zip(files, list_with_sum(rng, int(47.5 * 60 * 1000), len(files)), strict=True):
            write_song(dev, rng, f, ms)
        for f in self.params["noise_files"]:
            write_song(dev, rng, f)

    def is_successful(self, dev: DeviceState) -> float:
        total = 0
        for name, _, _, ms in playlist_rows(dev):
            if name != self.params["playlist_name"]:
                return 0.0
            total += ms
        return 1.0 if MIN_TOTAL_MS <= total <= MAX_TOTAL_MS else 0.0

    def expert(self, view: View, mem: dict[str, Any]) -> Action:
        """Read every song's length on the Music album's page, pick the fewest songs whose shown lengths
        (whole seconds, so each may be up to 1 s longer) surely total 45-50 minutes, then create the playlist
        from them in A-Z order."""
        if view.app != PKG:
            return open_app("Retro Music")
        if "pick" not in mem:
            return self.read_lengths(view, mem)
        return playlist_expert(view, mem, self.params["playlist_name"], mem["pick"])

    def read_lengths(self, view: View, mem: dict[str, Any]) -> Action:
        lengths: dict[str, int] = mem.setdefault("lengths", {})
        header = next((m for e in view.elements if (m := re.match(r"(\d+) Songs? • ", e.text or ""))), None)
        if header is None or view.title != "Music":
            album = view.find(text="Music", rid=TITLE)
            if album is not None:
                return click(album)
            tab = view.find(desc="Albums", rid=f"{PKG}:id/action_album")
            return click(tab) if tab is not None else back()
        times = [view.el(k) for k in view.find_all(rid=f"{PKG}:id/time")]
        for k in view.find_all(rid=TITLE):
            t = view.el(k)
            cy = (t.bbox_pixels.y_min + t.bbox_pixels.y_max) / 2
            for e in times:
                if e.bbox_pixels.y_min <= cy <= e.bbox_pixels.y_max:
                    mm, ss = (e.text or "0:0").split(":")[-2:]
                    lengths[t.text or ""] = int(mm) * 60 + int(ss)
        if len(lengths) < int(header.group(1)):
            return scroll("down", view.find(rid=f"{PKG}:id/recycler_view"))
        mem["pick"] = sorted(pick_lengths(lengths), key=str.lower)
        return back()


def pick_lengths(lengths: dict[str, int]) -> list[str]:
    """The fewest songs whose total is surely within 45-50 minutes, given lengths shown in whole seconds
    (the true total lies in [sum, sum + count)); among those, the total nearest 47.5 minutes."""
    items = sorted(lengths.items())
    for k in range(1, len(items) + 1):
        ok = [
            c
            for c in itertools.combinations(items, k)
            if sum(s for _, s in c) >= MIN_TOTAL_MS // 1000
            and sum(s for _, s in c) + k <= MAX_TOTAL_MS // 1000
        ]
        if ok:
            best = min(ok, key=lambda c: abs(sum(s for _, s in c) - 2850))
            return [t for t, _ in best]
    raise LookupError(f"no songs total 45-50 minutes among {lengths}")
