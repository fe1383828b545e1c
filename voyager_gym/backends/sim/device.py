"""SimDroid's device state: plain, deterministic data, so a snapshot of the whole phone is a deep copy.

Everything an AndroidWorld verifier reads lives here: system settings, the file system under
/storage/emulated/0, the contacts and SMS providers, the apps' databases (one list of row dicts per table),
the clipboard, the clock and the `interaction_cache` where `answer` text goes. The UI state (each app's
back stack of screens, the foreground app) lives here too, so that a snapshot restores the screen as well.
"""

from __future__ import annotations

import copy
import dataclasses
import datetime as dt
import posixpath
from typing import Any

# AndroidWorld sets the device clock to this moment before each task (24-hour format, UTC).
START_TIME = dt.datetime(2023, 10, 15, 15, 34, 0, tzinfo=dt.UTC)
START_MS = int(START_TIME.timestamp() * 1000)
SDCARD = "/storage/emulated/0"
STEP_MS = 5000  # device time that passes per agent step (a real step takes 3-5 s)

LAUNCHER = "com.google.android.apps.nexuslauncher"


@dataclasses.dataclass
class FileEntry:
    content: str = ""
    mtime_ms: int = START_MS


@dataclasses.dataclass
class DeviceState:
    time_ms: int = START_MS
    settings: dict[str, Any] = dataclasses.field(
        default_factory=lambda: {
            "wifi_on": 1,
            "bluetooth_on": 0,
            "screen_brightness": 102,
            "airplane_mode_on": 0,
            "mobile_data_on": 1,
            "location_on": 1,
            "dark_mode": 0,
            "time_12_24": 24,
        }
    )
    files: dict[str, FileEntry] = dataclasses.field(default_factory=dict)
    dirs: set[str] = dataclasses.field(
        default_factory=lambda: {
            SDCARD,
            f"{SDCARD}/Download",
            f"{SDCARD}/Documents",
            f"{SDCARD}/DCIM",
            f"{SDCARD}/Pictures",
            f"{SDCARD}/Music",
            f"{SDCARD}/Movies",
            f"{SDCARD}/Recordings",
            f"{SDCARD}/Alarms",
            f"{SDCARD}/Notifications",
            f"{SDCARD}/Podcasts",
            f"{SDCARD}/Ringtones",
        }
    )
    contacts: list[dict[str, str]] = dataclasses.field(default_factory=list)
    sms: list[dict[str, Any]] = dataclasses.field(default_factory=list)  # address, body, time_ms, box, read
    db: dict[str, list[dict[str, Any]]] = dataclasses.field(default_factory=dict)
    app_data: dict[str, dict[str, Any]] = dataclasses.field(default_factory=dict)
    clipboard: str = ""
    interaction_cache: str = ""  # the last `answer` text
    foreground: str = LAUNCHER
    stacks: dict[str, list[Any]] = dataclasses.field(default_factory=dict)  # package -> [Screen, ...]
    toast: str | None = None
    next_id: int = 1

    # -- time ------------------------------------------------------------------------------------------
    @property
    def now(self) -> dt.datetime:
        return dt.datetime.fromtimestamp(self.time_ms / 1000, tz=dt.UTC)

    def advance(self, ms: int = STEP_MS) -> None:
        self.time_ms += ms

    # -- ids -------------------------------------------------------------------------------------------
    def new_id(self) -> int:
        self.next_id += 1
        return self.next_id

    # -- file system -----------------------------------------------------------------------------------
    @staticmethod
    def norm(path: str) -> str:
        p = path if path.startswith("/") else f"{SDCARD}/{path}"
        return posixpath.normpath(p)

    def mkdir(self, path: str) -> None:
        p = self.norm(path)
        while p.startswith(SDCARD) and p not in self.dirs:
            self.dirs.add(p)
            p = posixpath.dirname(p)

    def write_file(self, path: str, content: str = "") -> None:
        p = self.norm(path)
        self.mkdir(posixpath.dirname(p))
        self.files[p] = FileEntry(content, self.time_ms)

    def read_file(self, path: str) -> str | None:
        e = self.files.get(self.norm(path))
        return None if e is None else e.content

    def exists(self, path: str) -> bool:
        p = self.norm(path)
        return p in self.files or p in self.dirs

    def remove(self, path: str) -> None:
        p = self.norm(path)
        if p in self.files:
            del self.files[p]
            return
        if p in self.dirs:
            for f in [f for f in self.files if f.startswith(p + "/")]:
                del self.files[f]
            for d in [d for d in self.dirs if d == p or d.startswith(p + "/")]:
                self.dirs.discard(d)

    def move(self, src: str, dst_dir: str) -> str:
        s, d = self.norm(src), self.norm(dst_dir)
        target = f"{d}/{posixpath.basename(s)}"
        self.files[target] = self.files.pop(s)
        return target

    def listdir(self, path: str) -> tuple[list[str], list[str]]:
        """(sub-folder names, file names) directly inside `path`, sorted by name."""
        p = self.norm(path)
        dirs = sorted({posixpath.basename(d) for d in self.dirs if posixpath.dirname(d) == p and d != p})
        files = sorted(posixpath.basename(f) for f in self.files if posixpath.dirname(f) == p)
        return dirs, files

    def find_files(self, name: str, under: str = SDCARD) -> list[str]:
        """Paths of files called `name` anywhere below `under` (AndroidWorld's recursive check)."""
        root = self.norm(under)
        return sorted(f for f in self.files if f.startswith(root + "/") and posixpath.basename(f) == name)

    # -- tables ----------------------------------------------------------------------------------------
    def table(self, name: str) -> list[dict[str, Any]]:
        return self.db.setdefault(name, [])

    def data(self, package: str) -> dict[str, Any]:
        return self.app_data.setdefault(package, {})

    # -- snapshots -------------------------------------------------------------------------------------
    def snapshot(self) -> DeviceState:
        return copy.deepcopy(self)
