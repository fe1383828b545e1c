"""A fake AndroidWorld device over SimDroid's state, so that android_world's own task code runs on it.

AndroidWorld's tasks read the device through adb: shell commands (`ls`, `find`, `cat`, `settings get`,
`content query`, `date`), file pulls (an app's SQLite database is pulled as a file and queried locally), the
current activity and the accessibility tree. `FakeController.execute_adb_call` answers those requests from
a live `SimDroidBackend`: its files and folders as the file system (`/sdcard` is `/storage/emulated/0`), its
tables as the apps' databases (built as real SQLite files with AndroidWorld's row types as columns), its SMS
and contacts providers, settings, clipboard, clock, foreground app and screen elements. Requests that would
change the device (AndroidWorld's setup: clearing folders, inserting rows, texting the emulator) are not
applied: SimDroid has built its own start state. They are recorded in `World.writes`, so that a test can
compare what AndroidWorld would have put on the device with what SimDroid put there.

This is test scaffolding, not part of the library: it imports android_world and android_env, which the project
does not depend on. Nothing here is AndroidWorld's code; it only speaks the protocol its code uses.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import os
import posixpath
import re
import shlex
import sqlite3
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

SDCARD = "/storage/emulated/0"
SCREEN = (1080, 2400)  # the logical screen, as AndroidWorld's Pixel 6 reports it


def canonical(path: str) -> str:
    """A device path as SimDroid stores it: /sdcard, /mnt/sdcard and /data/media/0 are /storage/emulated/0."""
    p = path.strip().strip('"').strip("'")
    for alias in ("/sdcard", "/mnt/sdcard", "/data/media/0"):
        if p == alias or p.startswith(alias + "/"):
            p = SDCARD + p[len(alias) :]
    p = posixpath.normpath(p) if p else p
    return p


# -- the apps' databases, built from SimDroid's tables ----------------------------------------------------
def _default(field: dataclasses.Field) -> Any:
    if field.default is not dataclasses.MISSING:
        return field.default
    if field.default_factory is not dataclasses.MISSING:  # type: ignore[misc]
        return field.default_factory()  # type: ignore[misc]
    return None


def _sql_value(v: Any) -> Any:
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, (list, dict, tuple)):
        return repr(v)
    return v


@dataclasses.dataclass
class Table:
    columns: list[str]
    rows: list[list[Any]]


def typed_table(row_type: type, rows: list[dict[str, Any]]) -> Table:
    """A table whose columns are the fields of AndroidWorld's row dataclass; a field SimDroid's row lacks
    takes the dataclass's default (the value AndroidWorld's own inserts give it)."""
    fields = dataclasses.fields(row_type)
    cols = [f.name for f in fields]
    out = []
    for r in rows:
        out.append([_sql_value(r[f.name]) if f.name in r else _sql_value(_default(f)) for f in fields])
    return Table(cols, out)


def plain_table(rows: list[dict[str, Any]], columns: list[str]) -> Table:
    return Table(list(columns), [[_sql_value(r.get(c)) for c in columns] for r in rows])


def sqlite_bytes(tables: dict[str, Table]) -> bytes:
    """A SQLite database file holding `tables` (every column untyped, as SQLite allows), built in memory."""
    conn = sqlite3.connect(":memory:")
    for name, t in tables.items():
        cols = ", ".join(f'"{c}"' for c in t.columns)
        conn.execute(f'CREATE TABLE "{name}" ({cols})')
        if t.rows:
            marks = ", ".join("?" for _ in t.columns)
            conn.executemany(f'INSERT INTO "{name}" VALUES ({marks})', t.rows)
    conn.commit()
    data = conn.serialize()
    conn.close()
    return data


def read_tables(data: bytes) -> dict[str, list[dict[str, Any]]]:
    """Every table of a SQLite database file, as rows of column -> value."""
    conn = sqlite3.connect(":memory:")
    conn.deserialize(data)
    conn.row_factory = sqlite3.Row
    names = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    out = {n: [dict(r) for r in conn.execute(f'SELECT * FROM "{n}"')] for n in names}
    conn.close()
    return out


def _vlc_tables(dev: Any) -> dict[str, Table]:
    """VLC's media library: Playlist, Media (every video VLC has scanned, by file name) and the relation."""
    playlists = dev.db.get("vlc_playlists", [])
    media: dict[str, int] = {}
    for p in sorted(dev.files):
        if "/VLCVideos/" in p:
            media.setdefault(posixpath.basename(p), len(media) + 1)
    for pl in playlists:
        for f in pl["media"]:
            media.setdefault(f, len(media) + 1)
    rel = [[pl["id"], media[f], i] for pl in playlists for i, f in enumerate(pl["media"])]
    return {
        "Playlist": Table(["id_playlist", "name"], [[pl["id"], pl["name"]] for pl in playlists]),
        "Media": Table(["id_media", "filename"], [[i, f] for f, i in media.items()]),
        "PlaylistMediaRelation": Table(["playlist_id", "media_id", "position"], rel),
    }


def _keys(rows: list[dict[str, Any]], first: list[str]) -> list[str]:
    cols = list(first)
    for r in rows:
        for k in r:
            if k not in cols:
                cols.append(k)
    return cols


def database_builders() -> dict[str, Callable[[Any], dict[str, Table]]]:
    """AndroidWorld's database paths -> a function of SimDroid's device state giving that file's tables."""
    from android_world.task_evals.utils import sqlite_schema_utils as S

    def retro_playlists(dev: Any) -> dict[str, Table]:
        pls = dev.db.get("retro_playlists", [])
        songs = dev.db.get("retro_playlist_songs", [])
        return {
            "PlaylistEntity": plain_table(pls, _keys(pls, ["playlist_id", "playlist_name"])),
            "SongEntity": plain_table(
                songs, _keys(songs, ["song_key", "playlist_creator_id", "title", "duration"])
            ),
        }

    def joplin(dev: Any) -> dict[str, Table]:
        folders = dev.db.get("joplin_folders", [])
        fid = {f["title"]: str(f["id"]) for f in folders}
        notes = [
            {
                **{k: v for k, v in n.items() if k in ("title", "body", "is_todo", "todo_completed")},
                "id": str(n["id"]),
                "parent_id": fid.get(n.get("folder"), ""),
            }
            for n in dev.db.get("joplin_notes", [])
        ]
        return {
            "folders": typed_table(
                S.JoplinFolder, [{"id": str(f["id"]), "title": f["title"]} for f in folders]
            ),
            "notes": typed_table(S.JoplinNote, notes),
            "notes_normalized": typed_table(S.JoplinNormalizedNote, notes),
        }

    def retro_queue(dev: Any) -> dict[str, Table]:
        q = dev.db.get("retro_playing_queue", [])
        return {"playing_queue": plain_table(q, _keys(q, ["id", "title"]))}

    return {
        "/data/data/com.arduia.expense/databases/accounting.db": lambda dev: {
            "expense": typed_table(S.Expense, dev.db.get("expense", []))
        },
        "/data/data/com.flauschcode.broccoli/databases/broccoli": lambda dev: {
            "recipes": typed_table(S.Recipe, dev.db.get("recipes", []))
        },
        "/data/data/com.simplemobiletools.calendar.pro/databases/events.db": lambda dev: {
            "events": typed_table(S.CalendarEvent, dev.db.get("events", []))
        },
        "/data/data/org.videolan.vlc/app_db/vlc_media.db": _vlc_tables,
        "/data/data/code.name.monkey.retromusic/databases/playlist.db": retro_playlists,
        "/data/data/code.name.monkey.retromusic/databases/music_playback_state.db": retro_queue,
        "/data/data/org.tasks/databases/database": lambda dev: {
            "tasks": typed_table(S.Task, dev.db.get("tasks", []))
        },
        "/data/data/de.dennisguse.opentracks/databases/database.db": lambda dev: {
            "tracks": typed_table(S.SportsActivity, dev.db.get("tracks", []))
        },
        "/data/data/net.cozic.joplin/databases/joplin.sqlite": joplin,
        "/data/data/net.osmand/databases/map_markers_db": lambda dev: {
            "map_markers": typed_table(S.OsmAndMapMarker, dev.db.get("map_markers", []))
        },
    }


# -- the world: a SimDroid backend seen through adb ---------------------------------------------------------
@dataclasses.dataclass
class Write:
    """A request that would have changed the device, as AndroidWorld issued it."""

    kind: str  # "shell", "emu", "push", "settings", "start_activity", "contact", "sms_send", ...
    args: Any


class World:
    """SimDroid's live device as AndroidWorld's code sees it."""

    def __init__(self, backend: Any):
        self.backend = backend
        self.writes: list[Write] = []
        self.builders = database_builders()
        self._db_cache: dict[str, bytes] = {}
        # While AndroidWorld's initialize_task runs, the SMS provider shows only the messages its setup has
        # sent or texted so far (SimDroid's start state has them all already; AW's setup checks the
        # provider before it adds its own messages).
        self.initializing = False
        # Rows AndroidWorld's setup inserted where it reads them back at once and stops if they are missing
        # (Joplin's folders: it adds a folder, then looks up its id). Served only while its setup runs.
        self.setup_rows: dict[tuple[str, str], list[dict[str, Any]]] = {}

    @property
    def dev(self) -> Any:
        return self.backend.phone.dev

    def fresh(self) -> None:
        """Forget the databases built for the last question (the device may have changed since)."""
        self._db_cache.clear()

    # -- file system -----------------------------------------------------------------------------------
    def db_file(self, path: str) -> bytes | None:
        if path not in self.builders:
            return None
        if path not in self._db_cache:
            tables = self.builders[path](self.dev)
            for (p, table), rows in self.setup_rows.items():
                if p == path and self.initializing and table in tables:
                    t = tables[table]
                    t.rows.extend([[_sql_value(r.get(c)) for c in t.columns] for r in rows])
            self._db_cache[path] = sqlite_bytes(tables)
        return self._db_cache[path]

    def pushed(self, path: str, data: bytes) -> None:
        """AndroidWorld's setup pushed database `path`: keep the Joplin folders it added (see setup_rows)."""
        if not self.initializing or not path.endswith("joplin.sqlite"):
            return
        served = {r.get("title") for r in read_tables(self.db_file(path) or b"").get("folders", [])}
        for r in read_tables(data).get("folders", []):
            if r.get("title") not in served:
                self.setup_rows.setdefault((path, "folders"), []).append(
                    {**r, "id": f"setup-{r.get('title')}"}
                )
        self._db_cache.pop(path, None)

    def database_files(self) -> dict[str, bytes]:
        """Every app database as SimDroid's device holds it now, by AndroidWorld's path."""
        self.fresh()
        return {p: self.db_file(p) for p in self.builders}

    def is_file(self, path: str) -> bool:
        p = canonical(path)
        return p in self.dev.files or p in self.builders

    def is_dir(self, path: str) -> bool:
        p = canonical(path)
        if p in self.dev.dirs:
            return True
        return any(b.startswith(p + "/") for b in self.builders)

    def read(self, path: str) -> bytes | None:
        p = canonical(path)
        if p in self.dev.files:
            return self.dev.files[p].content.encode()
        return self.db_file(p)

    def mtime_ms(self, path: str) -> int:
        p = canonical(path)
        e = self.dev.files.get(p)
        return e.mtime_ms if e is not None else self.dev.time_ms

    def children(self, path: str) -> tuple[list[str], list[str]]:
        """(folder names, file names) directly in `path`."""
        p = canonical(path)
        dirs, files = self.dev.listdir(p) if p in self.dev.dirs else ([], [])
        dirs, files = set(dirs), set(files)
        for b in self.builders:
            if b.startswith(p + "/"):
                rest = b[len(p) + 1 :].split("/")
                (files if len(rest) == 1 else dirs).add(rest[0])
        return sorted(dirs), sorted(files)

    def walk(self, path: str) -> list[str]:
        """Every path below `path` (not itself), canonical."""
        out = []
        dirs, files = self.children(path)
        base = canonical(path)
        for d in dirs:
            out.append(f"{base}/{d}")
            out.extend(self.walk(f"{base}/{d}"))
        out.extend(f"{base}/{f}" for f in files)
        return out

    # -- providers -------------------------------------------------------------------------------------
    def _sms_so_far(self, box: str) -> set[int]:
        """Indices of SimDroid's messages that AndroidWorld's setup has produced so far (by its writes)."""
        made = []
        for w in self.writes:
            if box == "inbox" and w.kind == "emu" and list(w.args[:2]) == ["sms", "send"]:
                made.append((w.args[2], w.args[3]))
            elif box == "sent" and w.kind == "sms_send":
                made.append(w.args)
        out: set[int] = set()
        for number, body in made:
            for i, m in enumerate(self.dev.sms):
                if (
                    i not in out
                    and m["box"] == box
                    and m["body"] == body
                    and re.sub(r"\D", "", m["address"]) == re.sub(r"\D", "", number)
                ):
                    out.add(i)
                    break
        return out

    def sms_rows(self, box: str) -> str:
        msgs = [(i, m) for i, m in enumerate(self.dev.sms) if m["box"] == box]
        if self.initializing:
            shown = self._sms_so_far(box)
            msgs = [(i, m) for i, m in msgs if i in shown]
        if not msgs:
            return "No result found.\n"
        msgs.sort(key=lambda im: (im[1]["time_ms"], im[0]), reverse=True)  # the provider's "date DESC"
        kind = 2 if box == "sent" else 1
        lines = []
        for row, (i, m) in enumerate(msgs):
            lines.append(
                f"Row: {row} _id={i + 1}, thread_id=1, address={m['address']}, person=NULL, "
                f"date={m['time_ms']}, date_sent=0, protocol=NULL, read={int(bool(m.get('read')))}, "
                f"status=-1, type={kind}, reply_path_present=NULL, subject=NULL, body={m['body']}, "
                f"service_center=NULL, locked=0, sub_id=1, error_code=0, creator=com.simplemobiletools."
                f"smsmessenger, seen=1"
            )
        return "\n".join(lines) + "\n"

    def contact_rows(self) -> str:
        rows = [c for c in self.dev.contacts if c.get("phone")]
        if not rows:
            return "No result found.\n"
        return "".join(
            f"Row: {i} display_name={c['name']}, number={c['phone']}\n" for i, c in enumerate(rows)
        )

    def setting(self, key: str) -> str:
        v = self.dev.settings.get(key)
        return "null" if v is None else str(v)

    def activity(self) -> str:
        """The foreground app's activity as `am stack list` names it: the launch activity AndroidWorld's
        app table gives for the package (e.g. Clock's ...DeskClock), else <package>/.MainActivity."""
        from android_world.env import adb_utils

        pkg = self.dev.foreground
        for activity in adb_utils._PATTERN_TO_ACTIVITY.values():  # noqa: SLF001 (AW's own app table)
            if activity.split("/")[0] == pkg:
                return activity
        return f"{pkg}/.MainActivity"

    def ui_elements(self) -> list[Any]:
        """The screen's elements as AndroidWorld's UIElement records."""
        from android_world.env import representation_utils as R

        self.backend.phone.invalidate()
        out = []
        for e in self.backend.phone.elements():
            d = {f.name: getattr(e, f.name) for f in dataclasses.fields(e)}
            for k in ("bbox", "bbox_pixels"):
                b = d.get(k)
                d[k] = None if b is None else R.BoundingBox(b.x_min, b.x_max, b.y_min, b.y_max)
            out.append(R.UIElement(**d))
        return out

    # -- shell -----------------------------------------------------------------------------------------
    def shell(self, cmd: str) -> tuple[bool, str]:
        """(ok, output) of an `adb shell` command line; a command that changes the device is recorded."""
        s = cmd.strip()
        m = re.search(r'if \[ -([fde]) "(.*?)" \]; then', s)
        if m:
            test, path = m.groups()
            ok = {"f": self.is_file, "d": self.is_dir, "e": lambda p: self.is_file(p) or self.is_dir(p)}[
                test
            ](path)
            return True, "Exists\n" if ok else "Does not exist\n"
        m = re.fullmatch(r"ls (\S+) -ll -au", s)
        if m:
            return self._ls_long(m.group(1))
        m = re.fullmatch(r"ls (?:-1 )?(\S+)", s)
        if m:
            if not self.is_dir(m.group(1)):
                return False, ""
            dirs, files = self.children(m.group(1))
            names = sorted(dirs + files)
            return True, "".join(n + "\n" for n in names)
        m = re.fullmatch(r"find (\S+) -type f -o -type d", s)
        if m:
            base = m.group(1)
            if not self.is_dir(base):
                return False, ""
            shown = base.rstrip("/")
            root = canonical(base)
            paths = [base] + [shown + p[len(root) :] for p in self.walk(base)]
            return True, "".join(p + "\n" for p in paths)
        m = re.fullmatch(r"cat (.+)", s)
        if m:
            path = " ".join(shlex.split(m.group(1)))
            data = self.read(path) if self.is_file(path) else None
            return (False, "") if data is None else (True, data.decode())
        m = re.fullmatch(r"settings get (system|global|secure) (\S+)", s)
        if m:
            return True, self.setting(m.group(2)) + "\n"
        m = re.fullmatch(r"content query --uri content://sms/(sent|inbox)", s)
        if m:
            return True, self.sms_rows(m.group(1))
        if re.fullmatch(
            r"content query --uri content://contacts/phones/ --projection display_name:number", s
        ):
            return True, self.contact_rows()
        if s == "date +%s":
            return True, f"{self.dev.time_ms // 1000}\n"
        if s == "date":
            return True, self.dev.now.strftime("%a %b %d %H:%M:%S UTC %Y") + "\n"
        m = re.fullmatch(r"am broadcast -a clipper\.(get|set)(?: -e text (.*))?", s, re.S)
        if m:
            if m.group(1) == "set":
                self.writes.append(Write("clipboard", m.group(2)))
                data = m.group(2) or ""
            else:
                data = self.dev.clipboard
            return (
                True,
                f"Broadcasting: Intent {{ act=clipper.{m.group(1)} }}\n"
                f'Broadcast completed: result=-1, data="{data}"\n',
            )
        self.writes.append(Write("shell", s))
        return True, ""

    def _ls_long(self, path: str) -> tuple[bool, str]:
        if not self.is_dir(path):
            return False, ""
        dirs, files = self.children(path)
        lines = [f"total {len(dirs) + len(files)}"]
        base = canonical(path)
        for d in dirs:
            lines.append(f"drwxrws--- 2 u0_a1 media_rw 4096 {self._stamp(self.dev.time_ms)} {d}")
        for f in files:
            data = self.read(f"{base}/{f}") or b""
            lines.append(
                f"-rw-rw---- 1 u0_a1 media_rw {len(data)} {self._stamp(self.mtime_ms(f'{base}/{f}'))} {f}"
            )
        return True, "\n".join(lines) + "\n"

    @staticmethod
    def _stamp(ms: int) -> str:
        t = dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC)
        return t.strftime("%Y-%m-%d %H:%M:%S") + f".{ms % 1000:03d}000000 +0000"


class FakeController:
    """Stands in for AndroidWorld's controller and the android_env environment under it."""

    def __init__(self, world: World):
        self.world = world

    @property
    def env(self) -> FakeController:
        return self

    def execute_adb_call(self, request: Any) -> Any:
        from android_env.proto import adb_pb2

        w = self.world
        ok = adb_pb2.AdbResponse.Status.OK
        kind = request.WhichOneof("command")
        if kind == "generic":
            args = list(request.generic.args)
            if args and args[0] == "shell":
                good, out = w.shell(" ".join(args[1:]))
            else:
                w.writes.append(Write(args[0] if args else "adb", args[1:]))
                good, out = True, ""
            r = adb_pb2.AdbResponse(status=ok if good else adb_pb2.AdbResponse.Status.ADB_ERROR)
            r.generic.output = out.encode()
            return r
        if kind == "pull":
            data = w.read(request.pull.path)
            if data is None:
                return adb_pb2.AdbResponse(status=adb_pb2.AdbResponse.Status.ADB_ERROR)
            r = adb_pb2.AdbResponse(status=ok)
            r.pull.content = data
            return r
        if kind == "get_current_activity":
            r = adb_pb2.AdbResponse(status=ok)
            r.get_current_activity.full_activity = w.activity()
            return r
        if kind == "settings" and request.settings.WhichOneof("verb") == "get":
            r = adb_pb2.AdbResponse(status=ok)
            r.settings.output = w.setting(request.settings.get.key).encode()
            return r
        if kind == "push":
            w.writes.append(Write("push", (request.push.path, bytes(request.push.content))))
            w.pushed(request.push.path, bytes(request.push.content))
        elif kind == "settings":
            put = request.settings.put
            w.writes.append(Write("settings", (put.key, put.value)))
        else:
            w.writes.append(Write(kind or "adb", str(request).strip()))
        return adb_pb2.AdbResponse(status=ok)

    def pull_file(self, remote_path: str, timeout_sec: float | None = None) -> Any:
        from android_world.utils import file_utils

        return file_utils.tmp_directory_from_device(os.path.dirname(remote_path), self, timeout_sec)

    def push_file(self, local_path: str, remote_path: str, timeout_sec: float | None = None) -> None:
        with open(local_path, "rb") as f:
            data = f.read()
        self.world.writes.append(Write("push", (remote_path, data)))
        self.world.pushed(remote_path, data)

    def get_ui_elements(self) -> list[Any]:
        return self.world.ui_elements()

    logical_screen_size = device_screen_size = SCREEN


@dataclasses.dataclass
class FakeForest:
    """Stands in for the accessibility forest: the elements it would be turned into."""

    elements: list[Any]


class FakeEnv:
    """Stands in for AndroidWorld's AsyncEnv: state, controller and the answer cache."""

    def __init__(self, world: World):
        self.world = world
        self._controller = FakeController(world)

    @property
    def controller(self) -> FakeController:
        return self._controller

    @property
    def interaction_cache(self) -> str:
        return self.world.dev.interaction_cache

    @interaction_cache.setter
    def interaction_cache(self, value: str) -> None:
        self.world.writes.append(Write("interaction_cache", value))

    def get_state(self, wait_to_stabilize: bool = False) -> Any:
        from android_world.env import interface

        elements = self.world.ui_elements()
        return interface.State(
            pixels=np.zeros((1, 1, 3), np.uint8),
            forest=FakeForest(elements),
            ui_elements=elements,
            auxiliaries={},
        )

    def reset(self, go_home: bool = False) -> Any:
        return self.get_state()

    def execute_action(self, action: Any) -> None:
        self.world.writes.append(Write("action", action))

    @property
    def foreground_activity_name(self) -> str:
        return self.world.activity()

    logical_screen_size = device_screen_size = SCREEN

    def hide_automation_ui(self) -> None:
        pass

    def close(self) -> None:
        pass


@contextlib.contextmanager
def patched_androidworld(world: World) -> Iterator[None]:
    """AndroidWorld's helpers that need more than adb, replaced while its task code runs: sleeps return at
    once; UI automation (adding a contact through the Contacts editor, sending an SMS through the messaging
    app's Send button) is recorded instead of run; videos are written as a few bytes and songs as SimDroid's
    stand-in text (pixels and samples come from numpy's and pydub's generators, not from `random`, so
    AndroidWorld's draws from `random` are unchanged); accessibility forests from `FakeEnv.get_state` turn
    into their elements."""
    import time

    from android_world.env import representation_utils, tools
    from android_world.task_evals.utils import user_data_generation as udg
    from android_world.utils import contacts_utils

    def tiny_video(path: str, *a: Any, **k: Any) -> None:
        with open(path, "wb") as f:
            f.write(b"\0" * 16)

    def song(path: str, artist: str, title: str, duration_milliseconds: int = 1000) -> str:
        """The MP3 as SimDroid's stand-in content (its ID3 tags and length), so that start states compare."""
        from voyager_gym.backends.sim.apps.retro import mp3_content

        with open(path, "w") as f:
            f.write(mp3_content(title, artist, duration_milliseconds))
        return path

    forest_to_elements = representation_utils.forest_to_ui_elements

    def elements_of(forest: Any, *a: Any, **k: Any) -> Any:
        return (
            list(forest.elements) if isinstance(forest, FakeForest) else forest_to_elements(forest, *a, **k)
        )

    def send_sms(self: Any, phone_number: str, message: str) -> None:
        world.writes.append(Write("sms_send", (phone_number, message)))

    patches = [
        (time, "sleep", lambda s: None),
        (udg, "_create_mpeg_with_messages", tiny_video),
        (udg, "_create_test_mp3", song),
        (
            contacts_utils,
            "add_contact",
            lambda name, number, env, *a, **k: world.writes.append(Write("contact", (name, number))),
        ),
        (tools.AndroidToolController, "send_sms", send_sms),
        (representation_utils, "forest_to_ui_elements", elements_of),
    ]
    saved = [(obj, name, getattr(obj, name)) for obj, name, _ in patches]
    try:
        for obj, name, value in patches:
            setattr(obj, name, value)
        yield
    finally:
        for obj, name, value in saved:
            setattr(obj, name, value)
