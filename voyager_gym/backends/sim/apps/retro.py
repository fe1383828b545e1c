"""Retro Music (code.name.monkey.retromusic): For you, Songs, Albums, Artists and Playlists tabs; a song's
menu and the Songs tab's multi-selection (Play next, Add to playing queue, Add to playlist); the Add to
playlist and New playlist dialogs; playlist details with Save as file (the system's save picker, opened in
Downloads); album and artist pages that list each song's length; the mini player, the player and its queue.

The library is every audio file on shared storage, read from its tags as the media scanner would (title,
artist, length; album = the folder, as for AndroidWorld's untagged files), without songs under 20 s (Retro's
default length filter), sorted A-Z. Playlists mirror Retro's playlist.db: `dev.table("retro_playlists")`
rows {playlist_id, playlist_name} (PlaylistEntity) and `dev.table("retro_playlist_songs")` rows {song_key,
playlist_creator_id, id, title, artist_name, duration, data} (SongEntity: unique per playlist and song, so
adding a song again moves it to the end). The playing queue mirrors music_playback_state.db's playing_queue.
"""

from __future__ import annotations

import posixpath
import random
import zlib
from collections.abc import Callable
from typing import Any

from voyager_gym.backends.sim import widgets as w
from voyager_gym.backends.sim.device import SDCARD, DeviceState
from voyager_gym.backends.sim.ui import GREY, HINT, LIGHT, PAD, UI, WHITE, App, Screen, register_app
from voyager_gym.backends.sim.widgets import SCREEN_W, Node

PKG = "code.name.monkey.retromusic"
PLAYLISTS = "retro_playlists"
PLAYLIST_SONGS = "retro_playlist_songs"
QUEUE = "retro_playing_queue"
MUSIC_DIR = f"{SDCARD}/Music"
DOWNLOAD_DIR = f"{SDCARD}/Download"
AUDIO_EXT = (".mp3", ".m4a", ".wav", ".ogg", ".flac")
MIN_MS = 20_000  # Retro's default "filter song duration" (20 s)
ACCENT = (0, 150, 136)
DARK = (32, 33, 36)
ROW_H = 180
NAV_H = 168
MINI_H = 150
TABS = (
    ("For you", "home"),
    ("Songs", "song"),
    ("Albums", "album"),
    ("Artists", "artist"),
    ("Playlists", "playlist"),
)
Song = dict[str, Any]


def rid(name: str) -> str:
    return f"{PKG}:id/{name}"


# -- the library -------------------------------------------------------------------------------------------
def mp3_content(title: str, artist: str, duration_ms: int) -> str:
    """An audio file's stand-in content: the ID3 tags AndroidWorld writes (title, artist) and its length."""
    return f"MP3 ID3v2;title={title};artist={artist};duration_ms={int(duration_ms)}"


def tags(content: str) -> dict[str, str]:
    return dict(p.split("=", 1) for p in content.split(";") if "=" in p)


def song_of(dev: DeviceState, path: str) -> Song:
    t = tags(dev.files[path].content)
    return {
        "id": zlib.crc32(path.encode()),
        "title": t.get("title") or posixpath.splitext(posixpath.basename(path))[0],
        "artist_name": t.get("artist") or "<unknown>",
        "album": posixpath.basename(posixpath.dirname(path)),
        "duration": int(t.get("duration_ms") or 0),
        "data": path,
    }


def songs(dev: DeviceState) -> list[Song]:
    """The songs Retro lists: audio files on shared storage of at least 20 s, A-Z by title."""
    out = [
        song_of(dev, p)
        for p in dev.files
        if p.startswith(SDCARD + "/") and p.lower().endswith(AUDIO_EXT) and "/Android/" not in p
    ]
    out = [s for s in out if s["duration"] >= MIN_MS]
    return sorted(out, key=lambda s: (s["title"].lower(), s["data"]))


def fmt_ms(ms: int) -> str:
    """Retro's readable duration: mm:ss, or hh:mm:ss from an hour."""
    m, s = divmod(ms // 1000, 60)
    return f"{m:02d}:{s:02d}" if m < 60 else f"{m // 60:02d}:{m % 60:02d}:{s:02d}"


def count_str(n: int) -> str:
    return f"{n} Song" if n == 1 else f"{n} Songs"


def item(ui: UI, *args: Any, **kw: Any) -> Node:
    """`ui.item` without the tile cache: rows at 180 px would reuse a tile at a position whose rounding
    differs (the same row one step further down a scrolled list), so Retro's rows are drawn each frame."""
    row = ui.item(*args, **kw)
    row.tile = False
    return row


# -- playlists (playlist.db) --------------------------------------------------------------------------------
def playlists(dev: DeviceState) -> list[dict[str, Any]]:
    return dev.table(PLAYLISTS)


def playlist_songs(dev: DeviceState, pid: int) -> list[dict[str, Any]]:
    rows = [r for r in dev.table(PLAYLIST_SONGS) if r["playlist_creator_id"] == pid]
    return sorted(rows, key=lambda r: r["song_key"])


def insert_songs(dev: DeviceState, pid: int, items: list[Song]) -> None:
    """Insert with REPLACE on (playlist, song): a song already in the playlist gets a new key, at the end."""
    tbl = dev.table(PLAYLIST_SONGS)
    for s in items:
        tbl[:] = [r for r in tbl if not (r["playlist_creator_id"] == pid and r["id"] == s["id"])]
        row = {k: s[k] for k in ("id", "title", "artist_name", "duration", "data")}
        tbl.append({"song_key": dev.new_id(), "playlist_creator_id": pid, **row})


def add_to_playlist(dev: DeviceState, name: str, items: list[Song]) -> tuple[int, bool]:
    """Retro's addToPlaylist: into the first playlist called `name`, creating it when there is none.
    Returns (playlist id, created)."""
    same = [p for p in playlists(dev) if p["playlist_name"] == name]
    created = not same
    if created:
        same = [{"playlist_id": dev.new_id(), "playlist_name": name}]
        playlists(dev).append(same[0])
    pid = same[0]["playlist_id"]
    insert_songs(dev, pid, items)
    return pid, created


def delete_playlist(dev: DeviceState, pid: int) -> None:
    playlists(dev)[:] = [p for p in playlists(dev) if p["playlist_id"] != pid]
    tbl = dev.table(PLAYLIST_SONGS)
    tbl[:] = [r for r in tbl if r["playlist_creator_id"] != pid]


def m3u(rows: list[dict[str, Any]]) -> str:
    """The file Retro's M3U writer produces for a playlist's songs (empty for an empty playlist)."""
    if not rows:
        return ""
    lines = ["#EXTM3U"]
    for r in rows:
        lines += [f"#EXTINF:{r['duration']},{r['artist_name']} - {r['title']}", r["data"]]
    return "\n".join(lines)


# -- the playing queue (music_playback_state.db) -------------------------------------------------------
def queue(dev: DeviceState) -> list[dict[str, Any]]:
    return dev.table(QUEUE)


def player(dev: DeviceState) -> dict[str, Any]:
    d = dev.data(PKG)
    d.setdefault("position", 0)
    d.setdefault("playing", False)
    return d


def open_queue(dev: DeviceState, items: list[Song], position: int, play: bool) -> None:
    queue(dev)[:] = [dict(s) for s in items]
    player(dev).update(position=position, playing=play)


def enqueue(dev: DeviceState, items: list[Song], next_up: bool = False) -> str:
    """Add to playing queue (at the end) or Play next (after the current song); an empty queue is opened
    with the songs, not playing. Returns Retro's toast."""
    q = queue(dev)
    if not q:
        open_queue(dev, items, 0, False)
    elif next_up:
        pos = player(dev)["position"] + 1
        q[pos:pos] = [dict(s) for s in items]
    else:
        q.extend(dict(s) for s in items)
    n = len(items)
    return "Added 1 title to the playing queue." if n == 1 else f"Added {n} titles to the playing queue."


def current(dev: DeviceState) -> Song | None:
    q = queue(dev)
    return q[min(player(dev)["position"], len(q) - 1)] if q else None


# -- shared widgets ------------------------------------------------------------------------------------------
def popup(ui: UI, items: list[tuple[str, Callable[[], Any]]], y: int | None = None) -> Node:
    """A popup menu (one text item per row), right-aligned, kept on screen."""
    h = 40 + 140 * len(items)
    y0 = ui.top + 24 if y is None else max(ui.top + 24, min(y, ui.bottom - h - 24))
    panel = Node(
        w.FRAME,
        bounds=(SCREEN_W - 640, y0, SCREEN_W - 24, y0 + h),
        bg=WHITE,
        radius=16,
        border=LIGHT,
        absorb=True,
        a11y=False,
        rid=rid("popup"),
    )
    for i, (label, handler) in enumerate(items):
        yy = y0 + 20 + 140 * i
        panel.add(
            Node(
                w.TEXT,
                text=label,
                bounds=(SCREEN_W - 640, yy, SCREEN_W - 24, yy + 140),
                clickable=True,
                on_click=handler,
                pad=48,
                size=42,
                rid="android:id/title",
            )
        )
    return panel


class Menu(Screen):
    """A popup menu over the screen below (`kind` and `arg` name its items: plain data, so it snapshots with
    the device); picking an item closes the menu, then runs the item."""

    modal = True

    def __init__(self, kind: str, arg: Any = None, y: int | None = None):
        super().__init__()
        self.kind = kind
        self.arg = arg
        self.y = y

    def build(self, ui: UI) -> list[Node]:
        def pick(f: Callable[[UI], Any]) -> Callable[[], None]:
            def run() -> None:
                ui.pop()
                f(ui)

            return run

        return [popup(ui, [(label, pick(f)) for label, f in menu_items(ui, self.kind, self.arg)], self.y)]


MenuItems = list[tuple[str, Callable[[UI], Any]]]


def menu_items(ui: UI, kind: str, arg: Any) -> MenuItems:
    """The items of each of Retro's popup menus (the ones SimDroid acts on)."""
    if kind == "song":  # menu_item_song
        return song_items(arg)
    if kind == "playlist_song":  # menu_item_playlist_song: (song, song key)
        s, key = arg
        return [("Remove from playlist", lambda u: u.push(RemoveSongDialog(key, s["title"])))] + song_items(s)
    if kind == "playlist":  # menu_item_playlist / menu_playlist_detail
        return playlist_menu(arg)
    if kind == "queue_song":  # menu_item_playing_queue_song: the song's index in the queue
        return [
            ("Remove from playing queue", lambda u: remove_from_queue(u.dev, arg)),
            ("Add to playlist", lambda u: add_to_playlist_flow(u, [queue(u.dev)[arg]])),
        ]
    if kind == "player":
        return [
            ("Add to playlist", lambda u: add_to_playlist_flow(u, list(queue(u.dev)))),
            ("Clear playing queue", clear_queue),
        ]
    if kind == "playlists_tab":
        return [
            ("New playlist", lambda u: u.push(CreatePlaylistDialog([]))),
            ("Import playlist", lambda u: u.toast("No playlists to import")),
        ]
    if kind == "selection":  # the Songs tab's selection overflow
        return [("Share", lambda u: u.toast("Sharing is not available")), ("Select all", select_all)]
    raise ValueError(
        f"unknown menu {kind!r}; expected song, playlist_song, playlist, queue_song, player, ..."
    )


def select_all(ui: UI) -> None:
    main = ui.phone.stack(PKG)[0]
    if isinstance(main, MainScreen):
        main.selection += [s["id"] for s in songs(ui.dev) if s["id"] not in main.selection]


def remove_from_queue(dev: DeviceState, k: int) -> None:
    q, st = queue(dev), player(dev)
    if 0 <= k < len(q):
        del q[k]
        if st["position"] > k or st["position"] >= len(q):
            st["position"] = max(0, st["position"] - 1)


def more_button(b: w.Bounds, on_click: Callable[[], Any]) -> Node:
    x0, y0, x1, y1 = b
    return Node(
        w.IMAGE_BUTTON,
        desc="More options",
        bounds=(x1 - 152, y0 + 32, x1 - 32, y1 - 32),
        clickable=True,
        on_click=on_click,
        icon="more",
        icon_fg=GREY,
        rid=rid("menu"),
    )


def song_row(
    ui: UI,
    s: Song,
    b: w.Bounds,
    on_click: Callable[[], Any],
    on_long: Callable[[], Any] | None = None,
    selected: bool = False,
    menu: Callable[[], Any] | None = None,
    length: bool = False,
) -> Node:
    """A song: title, artist (and its length on album, artist and queue pages), a ⋮ menu unless selected."""
    x0, y0, x1, y1 = b
    row = Node(
        w.LINEAR,
        bounds=b,
        clickable=True,
        on_click=on_click,
        long_clickable=on_long is not None,
        on_long_click=on_long,
        selected=selected,
        bg=(204, 235, 231) if selected else WHITE,
        border=LIGHT,
    )
    row.add(
        Node(
            w.IMAGE,
            bounds=(x0 + 36, y0 + 32, x0 + 156, y1 - 32),
            bg=(224, 242, 241),
            radius=16,
            icon="check" if selected else "audio",
            icon_fg=ACCENT,
            a11y=False,
        )
    )
    tr = x1 - (332 if length else 180)
    row.add(
        ui.text(s["title"], (x0 + 192, y0 + 28, tr, y0 + 100), size=44, rid=rid("title"), selected=selected)
    )
    row.add(ui.text(s["artist_name"], (x0 + 192, y0 + 100, tr, y1 - 24), size=34, fg=GREY, rid=rid("text")))
    if length:
        row.add(ui.text(fmt_ms(s["duration"]), (tr, y0, x1 - 172, y1), size=36, fg=GREY, rid=rid("time")))
    if menu is not None and not selected:
        row.add(more_button(b, menu))
    return row


def add_to_playlist_flow(ui: UI, items: list[Song]) -> None:
    ui.push(AddToPlaylistDialog(items))


def song_items(s: Song) -> MenuItems:
    return [
        ("Play next", lambda u: u.toast(enqueue(u.dev, [s], next_up=True))),
        ("Add to playing queue", lambda u: u.toast(enqueue(u.dev, [s]))),
        ("Add to playlist", lambda u: add_to_playlist_flow(u, [s])),
        ("Go to album", lambda u: u.push(SongListScreen("album", s["album"]))),
        ("Go to artist", lambda u: u.push(SongListScreen("artist", s["artist_name"]))),
        ("Details", lambda u: u.push(DetailsDialog(s))),
    ]


def song_menu(ui: UI, s: Song, y: int) -> None:
    ui.push(Menu("song", s, y))


def mini_player(ui: UI, y1: int) -> Node | None:
    s = current(ui.dev)
    if s is None:
        return None
    st = player(ui.dev)
    bar = Node(
        w.LINEAR,
        bounds=(0, y1 - MINI_H, SCREEN_W, y1),
        bg=(241, 243, 244),
        clickable=True,
        on_click=lambda: ui.push(PlayerScreen()),
        rid=rid("miniPlayerFragment"),
    )
    bar.add(ui.text(s["title"], (PAD, y1 - MINI_H, SCREEN_W - 200, y1), size=40, rid=rid("miniPlayerTitle")))

    def toggle() -> None:
        st["playing"] = not st["playing"]

    bar.add(
        Node(
            w.IMAGE_BUTTON,
            desc="Pause" if st["playing"] else "Play",
            bounds=(SCREEN_W - 180, y1 - MINI_H + 15, SCREEN_W - 60, y1 - 15),
            clickable=True,
            on_click=toggle,
            icon="pause" if st["playing"] else "play",
            icon_fg=DARK,
            rid=rid("miniPlayerPlayPauseButton"),
        )
    )
    return bar


def dark_bar(bar: Node) -> Node:
    """Retro's light toolbar: dark title and icons."""
    for m in bar.walk():
        if m.rid and m.rid.endswith("toolbar_title"):
            m.fg = DARK
        if m.cls == w.IMAGE_BUTTON:
            m.icon_fg = GREY
    return bar


def bottom_nav(ui: UI, current_tab: str, on_pick: Callable[[str], Any]) -> Node:
    return ui.bottom_tabs(
        TABS, current_tab, on_pick, ACCENT, lambda k: rid(f"action_{k}"), rid("navigationView"), 32, NAV_H
    )


# -- the main screen -------------------------------------------------------------------------------------
class MainScreen(Screen):
    """The main activity: a tab, the mini player when the queue has songs, and the bottom navigation.
    The Songs tab's long-press starts a selection kept in the order songs were checked."""

    def __init__(self) -> None:
        super().__init__()
        self.tab = "home"
        self.selection: list[int] = []  # song ids, in the order they were checked

    def pick_tab(self, key: str) -> None:
        self.tab = key
        self.selection = []

    def back(self, ui: UI) -> bool:
        if self.selection:
            self.selection = []
            return True
        return False

    def build(self, ui: UI) -> list[Node]:
        y1 = ui.bottom - NAV_H
        out: list[Node] = []
        mini = mini_player(ui, y1)
        if mini is not None:
            y1 -= MINI_H
        if self.tab == "song":
            out += self.build_songs(ui, y1)
        else:
            out.append(self.toolbar(ui))
            out.append(self.build_tab(ui, y1))
        if mini is not None:
            out.append(mini)
        out.append(bottom_nav(ui, self.tab, self.pick_tab))
        return out

    def toolbar(self, ui: UI) -> Node:
        actions: list[tuple[str, str, Callable[[], Any] | None]] = [
            ("Search", "search", lambda: ui.push(SearchScreen()))
        ]
        if self.tab == "playlist":
            actions.append(("More options", "more", lambda: ui.push(Menu("playlists_tab"))))
        return dark_bar(ui.app_bar("Retro Music", back=False, actions=actions, color=WHITE))

    def build_tab(self, ui: UI, y1: int) -> Node:
        dev = ui.dev
        lib = songs(dev)
        rows: list[tuple[int, Callable[[w.Bounds], Node]]] = []
        empty = None
        if self.tab == "home":
            shortcuts: list[tuple[str, str, Callable[[], Any]]] = [
                ("History", "recent", lambda: ui.push(SongListScreen("history", "History"))),
                ("Last added", "add", lambda: ui.push(SongListScreen("last_added", "Last added"))),
                ("Most played", "star", lambda: ui.push(SongListScreen("top", "Most played"))),
                ("Shuffle", "shuffle", lambda: shuffle_all(ui, lib)),
            ]
            rows = [
                (ROW_H, (lambda b, t=t, i=i, f=f: item(ui, t, b, on_click=f, icon=i)))
                for t, i, f in shortcuts
            ]
        elif self.tab == "album":
            albums = sorted({s["album"] for s in lib}, key=str.lower)
            rows = [(ROW_H, (lambda b, a=a: self.group_row(ui, lib, "album", a, b))) for a in albums]
            empty = "You have no albums"
        elif self.tab == "artist":
            artists = sorted({s["artist_name"] for s in lib}, key=str.lower)
            rows = [(ROW_H, (lambda b, a=a: self.group_row(ui, lib, "artist", a, b))) for a in artists]
            empty = "You have no artists"
        else:
            rows = [(ROW_H, (lambda b, p=p: playlist_row(ui, p, b))) for p in playlists(dev)]
            empty = "You have no playlists"
        return ui.list(f"list_{self.tab}", rows, y1=y1, empty=empty)

    def group_row(self, ui: UI, lib: list[Song], kind: str, name: str, b: w.Bounds) -> Node:
        mine = [s for s in lib if s[kind if kind == "album" else "artist_name"] == name]
        sub = (
            f"{mine[0]['artist_name']} • {count_str(len(mine))}" if kind == "album" else count_str(len(mine))
        )
        icon = "album" if kind == "album" else "person"
        return item(
            ui,
            name,
            b,
            subtitle=sub,
            icon=icon,
            on_click=lambda: ui.push(SongListScreen(kind, name)),
            rid=rid("title"),
        )

    def build_songs(self, ui: UI, y1: int) -> list[Node]:
        lib = songs(ui.dev)
        ids = {s["id"] for s in lib}
        self.selection = [i for i in self.selection if i in ids]
        sel = self.selection
        chosen = [next(s for s in lib if s["id"] == i) for i in sel]

        def toggle(s: Song) -> None:
            sel.remove(s["id"]) if s["id"] in sel else sel.append(s["id"])

        def click(s: Song, k: int) -> None:
            if sel:
                toggle(s)
            else:
                open_queue(ui.dev, lib, k, True)
                ui.push(PlayerScreen())

        def act(f: Callable[[], Any]) -> Callable[[], None]:
            def run() -> None:
                f()
                sel.clear()

            return run

        out: list[Node] = []
        if sel:
            out.append(
                ui.app_bar(
                    f"{len(sel)} selected",
                    back=False,
                    color=(55, 71, 79),
                    actions=[
                        ("Play next", "play", act(lambda: ui.toast(enqueue(ui.dev, chosen, next_up=True)))),
                        ("Add to playing queue", "queue", act(lambda: ui.toast(enqueue(ui.dev, chosen)))),
                        ("Add to playlist", "add", act(lambda: add_to_playlist_flow(ui, chosen))),
                        ("Delete from device", "delete", lambda: ui.toast("Deletion is disabled")),
                        ("More options", "more", lambda: ui.push(Menu("selection"))),
                    ],
                )
            )
        else:
            out.append(self.toolbar(ui))
        rows = [
            (
                ROW_H,
                (
                    lambda b, s=s, k=k: song_row(
                        ui,
                        s,
                        b,
                        lambda: click(s, k),
                        lambda: toggle(s),
                        s["id"] in sel,
                        lambda: song_menu(ui, s, b[3]),
                    )
                ),
            )
            for k, s in enumerate(lib)
        ]
        out.append(ui.list("list_song", rows, y1=y1, empty="You have no songs"))
        return out


def shuffle_all(ui: UI, lib: list[Song]) -> None:
    if not lib:
        ui.toast("You have no songs")
        return
    order = list(lib)
    random.Random(ui.dev.time_ms).shuffle(order)
    open_queue(ui.dev, order, 0, True)
    ui.push(PlayerScreen())


def playlist_row(ui: UI, p: dict[str, Any], b: w.Bounds) -> Node:
    items = playlist_songs(ui.dev, p["playlist_id"])
    info = f"{count_str(len(items))} • {fmt_ms(sum(r['duration'] for r in items))}"
    row = item(
        ui,
        p["playlist_name"],
        b,
        subtitle=info,
        icon="queue",
        on_click=lambda: ui.push(PlaylistScreen(p["playlist_id"])),
        rid=rid("title"),
        trailing=more_button(b, lambda: ui.push(Menu("playlist", p["playlist_id"], b[3]))),
    )
    return row


def playlist_menu(pid: int) -> list[tuple[str, Callable[[UI], Any]]]:
    """Retro's menu_item_playlist: the playlist's songs played, queued, copied; rename, delete, save."""

    def items(dev: DeviceState) -> list[Song]:
        return [
            dict(r, album=posixpath.basename(posixpath.dirname(r["data"]))) for r in playlist_songs(dev, pid)
        ]

    def play(u: UI) -> None:
        if items(u.dev):
            open_queue(u.dev, items(u.dev), 0, True)
            u.push(PlayerScreen())
        else:
            u.toast("Playlist is empty")

    return [
        ("Play", play),
        ("Play next", lambda u: u.toast(enqueue(u.dev, items(u.dev), next_up=True))),
        ("Add to playing queue", lambda u: u.toast(enqueue(u.dev, items(u.dev)))),
        ("Add to playlist", lambda u: add_to_playlist_flow(u, items(u.dev))),
        ("Rename", lambda u: u.push(RenameDialog(pid))),
        ("Delete", lambda u: u.push(DeletePlaylistDialog(pid))),
        ("Save as file", lambda u: u.push(SaveDocumentScreen(pid))),
    ]


# -- dialogs -------------------------------------------------------------------------------------------------
class AddToPlaylistDialog(Screen):
    """ "Add to playlist": New playlist, then every playlist by name; Cancel."""

    modal = True

    def __init__(self, items: list[Song]):
        super().__init__()
        self.items = items

    def build(self, ui: UI) -> list[Node]:
        names = [p["playlist_name"] for p in playlists(ui.dev)][:8]
        panel, y = ui.dialog_box("Add to playlist", 330 + 130 * (1 + len(names)))

        def new() -> None:
            ui.pop()
            ui.push(CreatePlaylistDialog(self.items))

        def pick(name: str) -> None:
            ui.pop()
            add_to_playlist(ui.dev, name, self.items)
            ui.toast(f"Added {len(self.items)} song(s) to {name}")

        for label, handler in [("New playlist", new)] + [(n, (lambda n=n: pick(n))) for n in names]:
            panel.add(
                Node(
                    w.TEXT,
                    text=label,
                    bounds=(72, y, SCREEN_W - 72, y + 130),
                    clickable=True,
                    on_click=handler,
                    pad=60,
                    size=42,
                    rid="android:id/text1",
                )
            )
            y += 130
        ui.dialog_buttons(panel, [("Cancel", ui.pop)])
        return [panel]


class CreatePlaylistDialog(Screen):
    """ "New playlist": a "Playlist name" field; Create adds the songs (to the playlist of that name if one
    exists). Enter only closes the keyboard, as in the app."""

    modal = True

    def __init__(self, items: list[Song]):
        super().__init__()
        self.items = items

    def create(self, ui: UI) -> None:
        name = self.field("name")
        ui.unfocus()
        ui.pop()
        if not name:
            ui.toast("Playlist name can't be empty")
            return
        _, created = add_to_playlist(ui.dev, name, self.items)
        ui.toast(f"{name} created successfully" if created else f"Added {len(self.items)} song(s) to {name}")

    def build(self, ui: UI) -> list[Node]:
        panel, y = ui.dialog_box("New playlist", 520)
        panel.add(ui.field("name", (120, y, SCREEN_W - 120, y + 150), hint="Playlist name"))
        ui.dialog_buttons(panel, [("Cancel", ui.pop), ("Create", lambda: self.create(ui))])
        return [panel]


class RenameDialog(Screen):
    modal = True

    def __init__(self, pid: int):
        super().__init__()
        self.pid = pid
        self.started = False

    def build(self, ui: UI) -> list[Node]:
        p = next((x for x in playlists(ui.dev) if x["playlist_id"] == self.pid), None)
        if p is None:
            return []
        if not self.started:
            self.set_field("name", p["playlist_name"])
            self.started = True

        def ok() -> None:
            name = self.field("name")
            ui.unfocus()
            ui.pop()
            if name:
                p["playlist_name"] = name

        panel, y = ui.dialog_box("Rename playlist", 520)
        panel.add(ui.field("name", (120, y, SCREEN_W - 120, y + 150), hint="Playlist name"))
        ui.dialog_buttons(panel, [("Cancel", ui.pop), ("Rename", ok)])
        return [panel]


class DeletePlaylistDialog(Screen):
    modal = True

    def __init__(self, pid: int):
        super().__init__()
        self.pid = pid

    def build(self, ui: UI) -> list[Node]:
        p = next((x for x in playlists(ui.dev) if x["playlist_id"] == self.pid), None)
        name = p["playlist_name"] if p else ""
        panel, _ = ui.dialog_box("Delete playlist", 420, f"Delete the playlist {name}?")

        def ok() -> None:
            delete_playlist(ui.dev, self.pid)
            ui.pop()
            if isinstance(ui.phone.stack(PKG)[-1], PlaylistScreen):
                ui.pop()

        ui.dialog_buttons(panel, [("Cancel", ui.pop), ("Delete", ok)])
        return [panel]


class RemoveSongDialog(Screen):
    modal = True

    def __init__(self, key: int, title: str):
        super().__init__()
        self.key = key
        self.title = title

    def build(self, ui: UI) -> list[Node]:
        panel, _ = ui.dialog_box(
            "Remove song from playlist", 420, f"Remove the song {self.title} from the playlist?"
        )

        def ok() -> None:
            tbl = ui.dev.table(PLAYLIST_SONGS)
            tbl[:] = [r for r in tbl if r["song_key"] != self.key]
            ui.pop()

        ui.dialog_buttons(panel, [("Cancel", ui.pop), ("Remove", ok)])
        return [panel]


class DetailsDialog(Screen):
    """A song's details: file name, path, length, title and artist."""

    modal = True

    def __init__(self, song: Song):
        super().__init__()
        self.song = song

    def build(self, ui: UI) -> list[Node]:
        s = self.song
        lines = [
            f"File name: {posixpath.basename(s['data'])}",
            f"File path: {s['data']}",
            f"Length: {fmt_ms(s['duration'])}",
            f"Title: {s['title']}",
            f"Artist: {s['artist_name']}",
        ]
        panel, y = ui.dialog_box("Details", 330 + 110 * len(lines))
        for t in lines:
            panel.add(ui.text(t, (132, y, SCREEN_W - 132, y + 100), size=36, rid=rid("detail")))
            y += 110
        ui.dialog_buttons(panel, [("OK", ui.pop)])
        return [panel]


# -- pages ---------------------------------------------------------------------------------------------------
class SongListScreen(Screen):
    """An album's or an artist's songs (with their lengths and the total), or a For you list."""

    def __init__(self, kind: str, name: str):
        super().__init__()
        self.kind = kind
        self.name = name

    def items(self, dev: DeviceState) -> list[Song]:
        lib = songs(dev)
        if self.kind == "album":
            return [s for s in lib if s["album"] == self.name]
        if self.kind == "artist":
            return [s for s in lib if s["artist_name"] == self.name]
        if self.kind == "last_added":
            return sorted(lib, key=lambda s: -dev.files[s["data"]].mtime_ms)
        return []  # History, Most played: nothing played yet

    def build(self, ui: UI) -> list[Node]:
        items = self.items(ui.dev)
        out: list[Node] = [dark_bar(ui.app_bar(self.name, color=WHITE))]
        y = ui.below_bar()
        if self.kind in ("album", "artist"):
            info = f"{count_str(len(items))} • {fmt_ms(sum(s['duration'] for s in items))}"
            out.append(
                ui.text(info, (PAD, y, SCREEN_W - PAD, y + 110), size=36, fg=GREY, rid=rid("songTitle"))
            )
            y += 110
        y1 = ui.bottom
        mini = mini_player(ui, y1)
        if mini is not None:
            y1 -= MINI_H

        def play(k: int) -> None:
            open_queue(ui.dev, items, k, True)
            ui.push(PlayerScreen())

        rows = [
            (
                ROW_H,
                (
                    lambda b, s=s, k=k: song_row(
                        ui, s, b, lambda: play(k), menu=lambda: song_menu(ui, s, b[3]), length=True
                    )
                ),
            )
            for k, s in enumerate(items)
        ]
        out.append(ui.list("recycler_view", rows, y0=y, y1=y1, empty="You have no songs"))
        if mini is not None:
            out.append(mini)
        return out


class PlaylistScreen(Screen):
    """A playlist's songs in order; the toolbar has Shuffle playlist and the playlist's menu."""

    def __init__(self, pid: int):
        super().__init__()
        self.pid = pid

    def build(self, ui: UI) -> list[Node]:
        dev = ui.dev
        p = next((x for x in playlists(dev) if x["playlist_id"] == self.pid), None)
        if p is None:
            return [dark_bar(ui.app_bar("Playlist", color=WHITE))]
        rows_ = playlist_songs(dev, self.pid)
        items = [dict(r, album=posixpath.basename(posixpath.dirname(r["data"]))) for r in rows_]

        def shuffle() -> None:
            if items:
                order = list(items)
                random.Random(dev.time_ms).shuffle(order)
                open_queue(dev, order, 0, True)
                ui.push(PlayerScreen())

        bar = ui.app_bar(
            p["playlist_name"],
            color=WHITE,
            actions=[
                ("Shuffle playlist", "shuffle", shuffle),
                ("More options", "more", lambda: ui.push(Menu("playlist", self.pid))),
            ],
        )
        y1 = ui.bottom
        mini = mini_player(ui, y1)
        if mini is not None:
            y1 -= MINI_H

        def play(k: int) -> None:
            open_queue(dev, items, k, True)
            ui.push(PlayerScreen())

        def menu(s: Song, r: dict[str, Any], y: int) -> None:
            ui.push(Menu("playlist_song", (s, r["song_key"]), y))

        rows = [
            (
                ROW_H,
                (lambda b, s=s, k=k, r=r: song_row(ui, s, b, lambda: play(k), menu=lambda: menu(s, r, b[3]))),
            )
            for k, (s, r) in enumerate(zip(items, rows_, strict=True))
        ]
        out = [dark_bar(bar), ui.list("recycler_view", rows, y1=y1, empty="Playlist is empty")]
        if mini is not None:
            out.append(mini)
        return out


class SearchScreen(Screen):
    """Search: songs whose title or artist contains the query."""

    def build(self, ui: UI) -> list[Node]:
        q = self.field("query").strip().lower()
        found = [s for s in songs(ui.dev) if q and (q in s["title"].lower() or q in s["artist_name"].lower())]

        def play(k: int) -> None:
            open_queue(ui.dev, found, k, True)
            ui.push(PlayerScreen())

        rows = [
            (
                ROW_H,
                (
                    lambda b, s=s, k=k: song_row(
                        ui, s, b, lambda: play(k), menu=lambda: song_menu(ui, s, b[3])
                    )
                ),
            )
            for k, s in enumerate(found)
        ]
        return [ui.search_bar(ACCENT), ui.list("recycler_view", rows, y0=ui.top + 168, empty="No results")]


class SaveDocumentScreen(Screen):
    """The system's save picker (Storage Access Framework), opened by Save as file: it starts in Downloads
    with the playlist's name as the file name; folders open on tap, Navigate up goes to the parent; Save
    writes the M3U file into the folder shown."""

    def __init__(self, pid: int):
        super().__init__()
        self.pid = pid
        self.path = DOWNLOAD_DIR
        self.started = False

    def back(self, ui: UI) -> bool:
        if self.path != SDCARD:
            self.go(posixpath.dirname(self.path))
            return True
        return False

    def go(self, path: str) -> None:
        self.path = path
        self.scroll.pop("dir_list", None)

    def save(self, ui: UI) -> None:
        dev = ui.dev
        name = self.field("name").strip()
        if not name:
            ui.toast("File name can't be empty")
            return
        stem, ext = posixpath.splitext(name)
        target, k = f"{self.path}/{name}", 1
        while dev.exists(target):  # DocumentsUI never overwrites: "name (1).m3u"
            target, k = f"{self.path}/{stem} ({k}){ext}", k + 1
        dev.write_file(target, m3u(playlist_songs(dev, self.pid)))
        ui.unfocus()
        ui.pop()
        ui.toast(f"Saved playlist to {posixpath.basename(target)}.")

    def build(self, ui: UI) -> list[Node]:
        dev = ui.dev
        p = next((x for x in playlists(dev) if x["playlist_id"] == self.pid), None)
        if not self.started:
            self.set_field("name", f"{p['playlist_name'] if p else 'Playlist'}.m3u")
            self.started = True
        title = (
            "Downloads"
            if self.path == DOWNLOAD_DIR
            else ("sdk_gphone64_x86_64" if self.path == SDCARD else posixpath.basename(self.path))
        )
        bar = ui.app_bar(title, color=(25, 103, 210))
        bar.children[0].on_click = lambda: self.back(ui) or ui.pop()
        bar.children[0].desc = "Navigate up"
        dirs, files = dev.listdir(self.path)
        rows: list[tuple[int, Callable[[w.Bounds], Node]]] = [
            (
                ROW_H,
                (
                    lambda b, d=d: item(
                        ui,
                        d,
                        b,
                        icon="folder",
                        on_click=lambda: self.go(f"{self.path}/{d}"),
                        rid="android:id/title",
                    )
                ),
            )
            for d in sorted(dirs, key=str.lower)
        ]
        rows += [
            (ROW_H, (lambda b, f=f: item(ui, f, b, icon="file", rid="android:id/title")))
            for f in sorted(files, key=str.lower)
        ]
        bottom_h = 260
        out = [bar, ui.list("dir_list", rows, y1=ui.bottom - bottom_h, empty="No items")]
        panel = Node(
            w.LINEAR,
            bounds=(0, ui.bottom - bottom_h, SCREEN_W, ui.bottom),
            bg=(241, 243, 244),
            a11y=False,
            rid="com.google.android.documentsui:id/container_save",
        )
        y0 = ui.bottom - bottom_h
        panel.add(ui.field("name", (PAD, y0 + 60, SCREEN_W - 340, y0 + 200), hint="File name"))
        panel.add(
            ui.button(
                "Save",
                (SCREEN_W - 300, y0 + 70, SCREEN_W - PAD, y0 + 190),
                lambda: self.save(ui),
                rid="android:id/button1",
            )
        )
        out.append(panel)
        return out


# -- the player ----------------------------------------------------------------------------------------------
class PlayerScreen(Screen):
    """Now playing: the current song's title, artist, time and controls; the queue and the player menu."""

    def build(self, ui: UI) -> list[Node]:
        dev = ui.dev
        s = current(dev)
        st = player(dev)
        bar = dark_bar(
            ui.app_bar(
                "Now playing",
                color=WHITE,
                actions=[
                    ("Now playing queue", "queue", lambda: ui.push(QueueScreen())),
                    ("More options", "more", lambda: ui.push(Menu("player"))),
                ],
            )
        )
        out = [bar]
        if s is None:
            out.append(
                ui.text("Playing queue is empty", (PAD, 900, SCREEN_W - PAD, 1000), fg=HINT, align="center")
            )
            return out
        top = ui.below_bar() + 60
        out.append(
            Node(
                w.IMAGE,
                bounds=(140, top, SCREEN_W - 140, top + 800),
                bg=(224, 242, 241),
                radius=32,
                icon="audio",
                icon_fg=ACCENT,
                a11y=False,
            )
        )
        y = top + 860
        out.append(
            ui.text(
                s["title"],
                (PAD, y, SCREEN_W - PAD, y + 90),
                size=56,
                bold=True,
                align="center",
                rid=rid("title"),
            )
        )
        out.append(
            ui.text(
                s["artist_name"],
                (PAD, y + 100, SCREEN_W - PAD, y + 170),
                size=40,
                fg=GREY,
                align="center",
                rid=rid("text"),
            )
        )
        y += 230
        out.append(ui.text("00:00", (PAD, y, 400, y + 70), size=34, fg=GREY, rid=rid("songCurrentProgress")))
        out.append(
            ui.text(
                fmt_ms(s["duration"]),
                (SCREEN_W - 400, y, SCREEN_W - PAD, y + 70),
                size=34,
                fg=GREY,
                align="right",
                rid=rid("songTotalTime"),
            )
        )
        y += 140
        q = queue(dev)

        def move(d: int) -> None:
            st["position"] = max(0, min(len(q) - 1, st["position"] + d))

        def toggle() -> None:
            st["playing"] = not st["playing"]

        for i, (desc, icon, f) in enumerate(
            [
                ("Previous", "prev", lambda: move(-1)),
                ("Pause" if st["playing"] else "Play", "pause" if st["playing"] else "play", toggle),
                ("Next", "next", lambda: move(1)),
            ]
        ):
            x = SCREEN_W // 2 + (i - 1) * 300
            out.append(
                Node(
                    w.IMAGE_BUTTON,
                    desc=desc,
                    bounds=(x - 90, y, x + 90, y + 180),
                    clickable=True,
                    on_click=f,
                    icon=icon,
                    icon_fg=DARK,
                    rid=rid(f"player_{desc.lower()}"),
                )
            )
        return out


def clear_queue(ui: UI) -> None:
    queue(ui.dev).clear()
    player(ui.dev).update(position=0, playing=False)
    ui.pop_to_root()


class QueueScreen(Screen):
    """The playing queue: each song with its length; a song's menu removes it; the toolbar clears all."""

    def build(self, ui: UI) -> list[Node]:
        dev = ui.dev
        q = queue(dev)
        st = player(dev)

        def play(k: int) -> None:
            st.update(position=k, playing=True)

        def menu(k: int, y: int) -> None:
            ui.push(Menu("queue_song", k, y))

        rows = [
            (
                ROW_H,
                (
                    lambda b, s=s, k=k: song_row(
                        ui, s, b, lambda: play(k), selected=False, menu=lambda: menu(k, b[3]), length=True
                    )
                ),
            )
            for k, s in enumerate(q)
        ]
        bar = ui.app_bar(
            "Now playing queue",
            color=WHITE,
            actions=[("Clear playing queue", "delete", lambda: clear_queue(ui))],
        )
        return [dark_bar(bar), ui.list("recycler_view", rows, empty="Playing queue is empty")]


@register_app
class RetroMusic(App):
    package = PKG
    name = "Retro Music"
    aliases = r"retro music|retro"
    color = ACCENT

    def main(self, dev: DeviceState) -> Screen:
        return MainScreen()

    def setup(self, dev: DeviceState) -> None:
        dev.mkdir(MUSIC_DIR)
