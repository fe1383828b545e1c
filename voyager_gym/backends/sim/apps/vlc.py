"""VLC (org.videolan.vlc): Video, Audio, Browse, Playlists and More tabs, multi-select with "Add to playlist",
the new-playlist dialog, playlist contents and a player screen.

The media library is every video file under the shared storage (AndroidWorld puts them in VLCVideos).
A clip written with `clip_content` holds the texts its frames show, each for some seconds (AndroidWorld draws
them on the frames with OpenCV): the player shows the current one as pixels only, since a video surface has no
text in the accessibility tree. Playback follows the device clock (a step is 5 s of device time).
Playlists live in `dev.table("vlc_playlists")` as rows {id, name, media: [file names in order]}: the same
facts as VLC's Playlist / PlaylistMediaRelation tables (name, media file name, position).
"""

from __future__ import annotations

import hashlib
import json
import posixpath
from typing import Any

from voyager_gym.backends.sim import widgets as w
from voyager_gym.backends.sim.device import SDCARD, DeviceState
from voyager_gym.backends.sim.ui import GREY, HINT, LIGHT, PAD, UI, WHITE, App, Screen, register_app
from voyager_gym.backends.sim.widgets import SCREEN_W, Node

PKG = "org.videolan.vlc"
PLAYLISTS = "vlc_playlists"
VIDEOS_DIR = f"{SDCARD}/VLCVideos"
ORANGE = (255, 136, 0)
VIDEO_EXT = (".mp4", ".mkv", ".avi", ".webm", ".mov", ".3gp")
ROW_H = 180
NAV_H = 168
TABS = (
    ("Video", "video"),
    ("Audio", "audio"),
    ("Browse", "browse"),
    ("Playlists", "playlists"),
    ("More", "more"),
)


def rid(name: str) -> str:
    return f"{PKG}:id/{name}"


def stem(path: str) -> str:
    return posixpath.splitext(posixpath.basename(path))[0]


def duration_s(path: str) -> int:
    """A stable pseudo duration (20-180 s, as AndroidWorld's generated clips) derived from the file name."""
    return 20 + int(hashlib.md5(posixpath.basename(path).encode()).hexdigest(), 16) % 161


def fmt_dur(s: int) -> str:
    return f"{s // 60}:{s % 60:02d}"


CLIP_TAG = "simdroid-clip"


def clip_content(messages: list[str], seconds_each: int) -> str:
    """A video file's content: `messages` shown one after another, each on the frames of `seconds_each` s."""
    return json.dumps({"format": CLIP_TAG, "frames": list(messages), "seconds_each": seconds_each})


def clip_frames(dev: DeviceState, path: str) -> tuple[list[str], int]:
    """(frame texts, seconds each) of the video at `path`. Other content (a file written as plain text) shows
    that text, if short and printable, for the whole of a pseudo duration."""
    content = (dev.read_file(path) or "").strip()
    try:
        data = json.loads(content)
    except ValueError:
        data = None
    if isinstance(data, dict) and data.get("format") == CLIP_TAG:
        return [str(m) for m in data["frames"]], max(1, int(data["seconds_each"]))
    texts = [content] if content and len(content) < 200 and content.isprintable() else []
    return texts, duration_s(path)


def clip_length_s(dev: DeviceState, path: str) -> int:
    frames, each = clip_frames(dev, path)
    return each * max(1, len(frames))


def videos(dev: DeviceState) -> list[str]:
    """Paths of all video files on shared storage, sorted by title like VLC's default sort."""
    vids = [p for p in dev.files if p.startswith(SDCARD + "/") and p.lower().endswith(VIDEO_EXT)]
    return sorted(vids, key=lambda p: (stem(p).lower(), p))


def playlists(dev: DeviceState) -> list[dict[str, Any]]:
    return dev.table(PLAYLISTS)


def add_to_playlist(dev: DeviceState, name: str, files: list[str]) -> dict[str, Any]:
    """Append files (base names) to the playlist called `name`, creating it if there is none."""
    pl = next((p for p in playlists(dev) if p["name"] == name), None)
    if pl is None:
        pl = {"id": dev.new_id(), "name": name, "media": []}
        playlists(dev).append(pl)
    pl["media"].extend(files)
    return pl


def bottom_nav(ui: UI, current: str, on_pick: Any) -> Node:
    return ui.bottom_tabs(
        TABS, current, on_pick, ORANGE, lambda k: rid(f"nav_{k}"), rid("navigation"), 34, NAV_H
    )


def video_row(ui: UI, path: str, b: w.Bounds, selected: bool, on_click: Any, on_long: Any) -> Node:
    x0, y0, x1, y1 = b
    row = Node(
        w.VIEW_GROUP,
        bounds=b,
        clickable=True,
        long_clickable=True,
        on_click=on_click,
        on_long_click=on_long,
        selected=selected,
        bg=(255, 228, 196) if selected else None,
        border=LIGHT,
    )
    row.add(
        Node(
            w.IMAGE,
            bounds=(x0 + 30, y0 + 20, x0 + 250, y1 - 20),
            bg=(40, 40, 40),
            radius=12,
            icon="check" if selected else "play",
            icon_fg=ORANGE if selected else WHITE,
            a11y=False,
        )
    )
    row.add(
        Node(
            w.TEXT,
            text=stem(path),
            bounds=(x0 + 280, y0 + 25, x1 - PAD, y0 + 100),
            size=40,
            selected=selected,
            rid=rid("ml_item_title"),
        )
    )
    row.add(
        Node(
            w.TEXT,
            text=fmt_dur(clip_length_s(ui.dev, path)),
            bounds=(x0 + 280, y0 + 100, x1 - PAD, y1 - 20),
            size=32,
            fg=GREY,
            selected=selected,
            rid=rid("ml_item_subtitle"),
        )
    )
    return row


class MainScreen(Screen):
    """VLC's main activity: the current tab, with the Video tab's multi-selection (action mode)."""

    def __init__(self) -> None:
        super().__init__()
        self.tab = "video"
        self.selection: list[str] = []

    def pick_tab(self, key: str) -> None:
        self.tab = key
        self.selection = []

    def build(self, ui: UI) -> list[Node]:
        out: list[Node] = []
        y1 = ui.bottom - NAV_H
        if self.tab == "video":
            out += self.build_videos(ui, y1)
        elif self.tab == "playlists":
            out.append(ui.app_bar("Playlists", back=False, color=WHITE_BAR))
            rows = [(ROW_H, (lambda b, p=p: playlist_row(ui, p, b))) for p in playlists(ui.dev)]
            out.append(ui.list("playlists", rows, y1=y1, empty="No playlists yet"))
        elif self.tab == "browse":
            out.append(ui.app_bar("Browse", back=False, color=WHITE_BAR))
            rows = [
                (
                    ROW_H,
                    lambda b: ui.item(
                        "Internal memory",
                        b,
                        icon="folder",
                        subtitle=SDCARD,
                        on_click=lambda: ui.push(BrowseScreen(SDCARD)),
                    ),
                )
            ]
            out.append(ui.list("browse", rows, y1=y1))
        elif self.tab == "audio":
            out.append(ui.app_bar("Audio", back=False, color=WHITE_BAR))
            out.append(ui.list("audio", [], y1=y1, empty="No audio files"))
        else:
            out.append(ui.app_bar("More", back=False, color=WHITE_BAR))
            rows = [
                (ROW_H, (lambda b, t=t: ui.item(t, b, on_click=lambda: None)))
                for t in ("History", "Streams", "Settings", "About")
            ]
            out.append(ui.list("more", rows, y1=y1))
        for n in out:
            if n.bg == WHITE_BAR:  # VLC's light toolbar: dark title and icons
                for m in n.walk():
                    if m.rid and m.rid.endswith("toolbar_title"):
                        m.fg = (32, 33, 36)
                    if m.cls == w.IMAGE_BUTTON:
                        m.icon_fg = GREY
        out.append(bottom_nav(ui, self.tab, self.pick_tab))
        return out

    def build_videos(self, ui: UI, y1: int) -> list[Node]:
        vids = videos(ui.dev)
        sel = self.selection

        def toggle(path: str) -> None:
            if path in sel:
                sel.remove(path)
            else:
                sel.append(path)
            sel.sort(key=lambda p: vids.index(p) if p in vids else 0)  # VLC keeps list order

        def click(path: str) -> None:
            if sel:
                toggle(path)
            else:
                play(ui, path)

        def long_click(path: str) -> None:
            toggle(path) if sel else sel.append(path)

        out: list[Node] = []
        if sel:
            out.append(
                ui.app_bar(
                    f"{len(sel)} selected",
                    back=False,
                    color=(60, 64, 67),
                    actions=[
                        ("Play", "play", lambda: play(ui, sel[0])),
                        (
                            "Add to playlist",
                            "add",
                            lambda: ui.push(AddToPlaylistDialog([posixpath.basename(p) for p in sel])),
                        ),
                        ("Delete", "delete", lambda: ui.toast("Deletion is disabled")),
                    ],
                )
            )
        else:
            out.append(
                ui.app_bar(
                    "Videos",
                    back=False,
                    color=WHITE_BAR,
                    actions=[("Search", "search", lambda: None), ("More options", "more", lambda: None)],
                )
            )
        rows = [
            (ROW_H, (lambda b, p=p: video_row(ui, p, b, p in sel, lambda: click(p), lambda: long_click(p))))
            for p in vids
        ]
        out.append(ui.list("videos", rows, y1=y1, empty="No video found.\nAdd media files to your device."))
        return out

    def back(self, ui: UI) -> bool:
        if self.selection:
            self.selection = []
            return True
        return False


WHITE_BAR = (250, 250, 250)


def playlist_row(ui: UI, p: dict[str, Any], b: w.Bounds) -> Node:
    n = len(p["media"])
    return ui.item(
        p["name"],
        b,
        icon="file",
        subtitle=f"{n} video" + ("" if n == 1 else "s"),
        on_click=lambda: ui.push(PlaylistScreen(p["id"])),
        rid=rid("ml_item_title"),
    )


class AddToPlaylistDialog(Screen):
    """VLC's 'Add to playlist' dialog: pick an existing playlist, or name a new one and press Create."""

    modal = True

    def __init__(self, files: list[str]):
        super().__init__()
        self.files = files

    def build(self, ui: UI) -> list[Node]:
        pls = playlists(ui.dev)
        h = 560 + 130 * min(4, len(pls))
        panel, y = ui.dialog_box("Add to playlist", h)
        panel.add(ui.field("name", (132, y, SCREEN_W - 132, y + 130), hint="New playlist"))
        y += 160
        for p in pls[:4]:
            panel.add(
                Node(
                    w.TEXT,
                    text=p["name"],
                    bounds=(132, y, SCREEN_W - 132, y + 120),
                    clickable=True,
                    icon="file",
                    icon_fg=GREY,
                    pad=30,
                    size=40,
                    rid=rid("playlist_item"),
                    on_click=(lambda name=p["name"]: self.save(ui, name)),
                )
            )
            y += 130
        ui.dialog_buttons(panel, [("Cancel", ui.pop), ("Create", lambda: self.save(ui, self.field("name")))])
        return [panel]

    def submit(self, ui: UI, key: str) -> None:
        self.save(ui, self.field("name"))

    def save(self, ui: UI, name: str) -> None:
        name = name.strip()
        if not name:
            ui.toast("Please enter a playlist name")
            return
        add_to_playlist(ui.dev, name, list(self.files))
        ui.pop()
        base = ui.phone.stack(PKG)[-1]
        if isinstance(base, MainScreen):
            base.selection = []
        n = len(self.files)
        ui.toast(f"{n} item{'s' if n != 1 else ''} added to {name}")


class PlaylistScreen(Screen):
    """A playlist's media in order, with Play and Delete (after a confirmation)."""

    def __init__(self, pid: int):
        super().__init__()
        self.pid = pid

    def build(self, ui: UI) -> list[Node]:
        p = next((x for x in playlists(ui.dev) if x["id"] == self.pid), None)
        if p is None:
            return [ui.app_bar("Playlist")]
        rows = [
            (
                ROW_H,
                (
                    lambda b, f=f: ui.item(
                        stem(f), b, icon="play", subtitle=fmt_dur(duration_s(f)), rid=rid("ml_item_title")
                    )
                ),
            )
            for f in p["media"]
        ]
        return [
            ui.app_bar(
                p["name"],
                color=ORANGE,
                actions=[("Delete", "delete", lambda: ui.push(ConfirmDelete(p["id"])))],
            ),
            ui.list("media", rows, empty="This playlist is empty"),
        ]


class ConfirmDelete(Screen):
    modal = True

    def __init__(self, pid: int):
        super().__init__()
        self.pid = pid

    def build(self, ui: UI) -> list[Node]:
        panel, _ = ui.dialog_box("Delete playlist?", 380, "This playlist will be deleted.")

        def ok() -> None:
            tbl = playlists(ui.dev)
            tbl[:] = [p for p in tbl if p["id"] != self.pid]
            ui.pop_to_root()

        ui.dialog_buttons(panel, [("Cancel", ui.pop), ("Delete", ok)])
        return [panel]


class BrowseScreen(Screen):
    """A storage folder: sub-folders, then media files (a tap plays a video)."""

    def __init__(self, path: str):
        super().__init__()
        self.path = path

    def build(self, ui: UI) -> list[Node]:
        dirs, files = ui.dev.listdir(self.path)
        rows = [
            (
                ROW_H,
                (
                    lambda b, d=d: ui.item(
                        d, b, icon="folder", on_click=lambda: ui.push(BrowseScreen(f"{self.path}/{d}"))
                    )
                ),
            )
            for d in dirs
        ]
        rows += [
            (
                ROW_H,
                (lambda b, f=f: ui.item(f, b, icon="play", on_click=lambda: play(ui, f"{self.path}/{f}"))),
            )
            for f in files
            if f.lower().endswith(VIDEO_EXT)
        ]
        title = "Internal memory" if self.path == SDCARD else posixpath.basename(self.path)
        return [ui.app_bar(title, color=ORANGE), ui.list("entries", rows, empty="Empty folder")]


def play(ui: UI, path: str) -> None:
    ui.push(PlayerScreen(path, ui.dev.time_ms))


FRAME_H = SCREEN_W * 3 // 4  # AndroidWorld's clips are 320x240
JUMP_MS = 10_000


class PlayerScreen(Screen):
    """The video player: the clip's current frame (its text drawn, not in the accessibility tree), title,
    position / length, a progress bar, 10 s back and forward, and play/pause (Replay once it has ended,
    where it stays on the last frame)."""

    def __init__(self, path: str, now_ms: int):
        super().__init__()
        self.path = path
        self.playing = True
        self.base_ms = 0  # position when playback last started or stopped
        self.anchor_ms = now_ms  # device time at that moment

    def position_ms(self, dev: DeviceState) -> int:
        total = clip_length_s(dev, self.path) * 1000
        pos = self.base_ms + (dev.time_ms - self.anchor_ms if self.playing else 0)
        return max(0, min(total, pos))

    def seek(self, dev: DeviceState, pos_ms: int, playing: bool) -> None:
        total = clip_length_s(dev, self.path) * 1000
        self.base_ms, self.anchor_ms, self.playing = max(0, min(total, pos_ms)), dev.time_ms, playing

    def build(self, ui: UI) -> list[Node]:
        dev = ui.dev
        frames, each = clip_frames(dev, self.path)
        total = clip_length_s(dev, self.path)
        pos = self.position_ms(dev)
        ended = pos >= total * 1000
        surface = Node(w.FRAME, bounds=(0, ui.top, SCREEN_W, ui.bottom), bg=(0, 0, 0), a11y=False)
        surface.add(
            Node(
                w.TEXT,
                text=stem(self.path),
                bounds=(PAD, ui.top + 40, SCREEN_W - PAD, ui.top + 140),
                size=42,
                fg=WHITE,
                rid=rid("player_overlay_title"),
            )
        )
        fy = (ui.top + ui.bottom - FRAME_H) // 2 - 100
        frame = Node(w.FRAME, bounds=(0, fy, SCREEN_W, fy + FRAME_H), bg=(52, 56, 60), a11y=False)
        if frames:
            k = min(len(frames) - 1, (min(pos, total * 1000 - 1)) // (each * 1000))
            frame.add(
                Node(
                    w.TEXT,
                    text=frames[k],
                    bounds=(PAD, fy + FRAME_H // 2 - 90, SCREEN_W - PAD, fy + FRAME_H // 2 + 90),
                    size=84,
                    bold=True,
                    fg=(255, 255, 0),  # AndroidWorld draws the text in yellow
                    align="center",
                    lines=2,
                    a11y=False,  # pixels only: a video surface exposes no text
                )
            )
        surface.add(frame)
        cy = ui.bottom - 300
        surface.add(
            Node(
                w.TEXT,
                text=f"{fmt_dur(pos // 1000)} / {fmt_dur(total)}",
                bounds=(PAD, cy - 200, SCREEN_W - PAD, cy - 120),
                size=34,
                fg=HINT,
                rid=rid("player_overlay_time"),
            )
        )
        bar_w = SCREEN_W - 2 * PAD
        surface.add(Node(w.FRAME, bounds=(PAD, cy - 90, SCREEN_W - PAD, cy - 78), bg=GREY, a11y=False))
        done_w = bar_w * pos // max(1, total * 1000)
        surface.add(Node(w.FRAME, bounds=(PAD, cy - 90, PAD + done_w, cy - 78), bg=ORANGE, a11y=False))

        def toggle() -> None:
            if self.playing and not ended:
                self.seek(dev, pos, False)
            else:
                self.seek(dev, 0 if ended else pos, True)

        def jump(ms: int) -> Any:
            return lambda: self.seek(dev, pos + ms, self.playing)

        label = "Replay" if ended else ("Pause" if self.playing else "Play")
        buttons = [
            ("Rewind 10 seconds", "rewind", SCREEN_W // 2 - 330, jump(-JUMP_MS)),
            (label, "pause" if label == "Pause" else "play", SCREEN_W // 2 - 90, toggle),
            ("Forward 10 seconds", "forward", SCREEN_W // 2 + 150, jump(JUMP_MS)),
        ]
        for desc, icon, x, fn in buttons:  # VLC's ids: player_overlay_rewind, _play, _forward
            surface.add(
                Node(
                    w.IMAGE_BUTTON,
                    desc=desc,
                    icon=icon,
                    icon_fg=WHITE,
                    bounds=(x, cy, x + 180, cy + 180),
                    clickable=True,
                    on_click=fn,
                    rid=rid(
                        "player_overlay_" + {"Rewind": "rewind", "Forward": "forward"}.get(desc[:6], "play")
                    ),
                )
            )
        return [surface]


@register_app
class VLC(App):
    package = PKG
    name = "VLC"
    aliases = r"vlc|vlc app|vlc player"
    color = ORANGE

    def main(self, dev: DeviceState) -> Screen:
        return MainScreen()

    def setup(self, dev: DeviceState) -> None:
        dev.mkdir(VIDEOS_DIR)
