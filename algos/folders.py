"""Run folders and caches keep to themselves: every path inside one stays inside it, and each records which
command made it.

A folder's own path (`out_dir`, `cache_dir`) is the user's choice and may pass through symbolic links; below
it nothing is followed: a file or folder inside that is a symbolic link (`.lock`, `metrics.jsonl`,
`checkpoints/`, a pair's folder, a cache entry) is a `RunFolderError` naming it, before anything is read,
written or deleted through it. Files are opened with O_NOFOLLOW as well, so a link made between the check and
the open is refused too.

`made_by` (a small JSON file in the folder) names the command that made it: `train` (experiments/train.py),
`compare` (experiments/compare.py, its pairs' folders too) or `cache` (the base policies and RFT start
checkpoints under `cache_dir`, made by any entry point). A command refuses a folder another one made. A folder
from before the record is recognised by its contents (`infer_made_by`), and the record is written the next
time its own command opens it.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import shutil
import stat
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

MADE_BY = "made_by"
MAKERS = {
    "train": "experiments/train.py (a training run)",
    "compare": "experiments/compare.py (a comparison)",
    "cache": "the cache of base policies and RFT start checkpoints (cache_dir)",
}


class RunFolderError(RuntimeError):
    """A run folder cannot be used as asked: another identity, another process, a damaged checkpoint, a link
    out of it, another command's folder."""


# -- paths ---------------------------------------------------------------------------------------------------
def inside(root: str | Path, *parts: str | Path) -> Path:
    """`root/parts...`, after checking that it stays inside `root`: no absolute part, no `..`, and no existing
    component below `root` is a symbolic link (RunFolderError naming it)."""
    root = Path(root)
    path = root
    for part in parts:
        for name in Path(part).parts:
            if name in ("", ".") or name == os.sep:
                continue
            if name == ".." or os.path.isabs(name):
                raise RunFolderError(f"{root / Path(*parts)} leads out of {root}")
            path = path / name
            refuse_link(path, root)
    return path


def refuse_link(path: Path, root: str | Path) -> None:
    """RunFolderError when `path` is a symbolic link (a missing path is fine)."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISLNK(st.st_mode):
        raise RunFolderError(f"{path} is a symbolic link (to {os.readlink(path)}); nothing in {root} may be "
                             "a link (it could lead out of the folder): remove the link")


def no_links_below(folder: Path, root: str | Path | None = None) -> None:
    """RunFolderError naming the first symbolic link anywhere under `folder` (links are not followed)."""
    for dirpath, dirnames, filenames in os.walk(folder):
        for name in sorted(dirnames + filenames):
            refuse_link(Path(dirpath) / name, root or folder)


def open_fd(path: Path, flags: int, mode: int = 0o644) -> int:
    """os.open that never follows a symbolic link at `path` (a link is a RunFolderError naming it)."""
    try:
        return os.open(path, flags | os.O_NOFOLLOW | os.O_CLOEXEC, mode)
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise RunFolderError(f"{path} is a symbolic link (to {os.readlink(path)}); run folders and "
                                 "caches follow no links: remove the link") from None
        raise


def read_bytes(path: Path) -> bytes:
    fd = open_fd(path, os.O_RDONLY)
    with os.fdopen(fd, "rb") as f:
        return f.read()


def read_text(path: Path) -> str:
    return read_bytes(path).decode()


def atomic_write_text(path: Path, text: str) -> None:
    """Write `text` to a temporary file beside `path`, fsync it, and rename it over `path` (a rename replaces
    a link at `path` itself, never the file it points to; check the folder with `inside`)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    with os.fdopen(fd, "w") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def rmtree(path: Path, root: str | Path) -> None:
    """Delete the folder `path` (inside `root`) and what it holds, following no link (a link at `path` is a
    RunFolderError; links inside it are removed, never followed)."""
    refuse_link(path, root)
    shutil.rmtree(path)


# -- locks ---------------------------------------------------------------------------------------------------
def lock_file(path: Path, busy: str, wait: bool = False) -> Any:
    """An exclusive flock on `path` (created, never followed if a link), held while the returned file stays
    open; its content becomes this process's pid. Held by another process: RunFolderError `busy`, or with
    `wait` a line on stderr and a wait for it."""
    fd = open_fd(path, os.O_RDWR | os.O_CREAT)
    f = os.fdopen(fd, "r+")
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        if not wait:
            f.close()
            raise RunFolderError(busy) from None
        print(f"waiting: {busy}", file=sys.stderr, flush=True)
        fcntl.flock(fd, fcntl.LOCK_EX)
    f.seek(0)
    f.truncate()
    f.write(f"{os.getpid()}\n")
    f.flush()
    return f


@contextlib.contextmanager
def locked(path: Path, busy: str, wait: bool = True) -> Iterator[None]:
    f = lock_file(path, busy, wait)
    try:
        yield
    finally:
        f.close()


# -- which command made a folder -----------------------------------------------------------------------------
def _json(path: Path) -> Any:
    try:
        return json.loads(read_bytes(path))
    except (OSError, RunFolderError, ValueError, UnicodeDecodeError):
        return None


def infer_made_by(folder: Path) -> str | None:
    """The command that made `folder`, from its `made_by` record or, for a folder from before the record, from
    its contents: a comparison has runs/ (or a config with a list of algorithms), a pair of one sits in its
    runs/ or replaced/, a training run has a config with one algorithm or checkpoints, the cache holds base-*
    and rft-* folders, an RFT start a config of only `rft` and `base`, a base policy a `done` file and its
    policy. None: a new or empty folder, or one none of them made."""
    try:
        names = set(os.listdir(folder))
    except (FileNotFoundError, NotADirectoryError):
        return None
    rec = _json(folder / MADE_BY) if MADE_BY in names else None
    if isinstance(rec, dict) and rec.get("command") in MAKERS:
        return rec["command"]
    cfg = _json(folder / "config.json") if "config.json" in names else None
    algo = cfg.get("algo") if isinstance(cfg, dict) else None
    if "runs" in names or "replaced" in names or isinstance(algo, list):
        return "compare"
    if isinstance(cfg, dict) and cfg and set(cfg) <= {"rft", "base"}:
        return "cache"
    if any(n.startswith(("base-", "rft-")) for n in names) or {"done", "policy"} <= names:
        return "cache"
    if isinstance(algo, str) or names & {"checkpoint.json", "checkpoints", "metrics.jsonl"}:
        parent = folder.resolve().parent
        if parent.name in ("runs", "replaced") and infer_made_by(parent.parent) == "compare":
            return "compare"
        return "train"
    return None


def check_made_by(folder: Path, command: str, who: str, key: str = "out_dir") -> None:
    """RunFolderError naming `folder` and its maker when a command other than `command` made it (`who`: the
    entry point asking, `key`: the setting that chose the folder)."""
    if command not in MAKERS:
        raise ValueError(f"command={command!r}: expected one of {', '.join(MAKERS)}")
    maker = infer_made_by(folder)
    if maker not in (None, command):
        raise RunFolderError(f"{key}={str(folder)!r} was made by {MAKERS[maker]}; {who} writes only into "
                             f"folders it made: choose another {key}")


def record_made_by(folder: Path, command: str) -> None:
    """Write the `made_by` record of `folder` (once; an older folder gets it the first time its own command
    opens it)."""
    path = inside(folder, MADE_BY)
    rec = _json(path) if path.exists() else None
    if not (isinstance(rec, dict) and rec.get("command") == command):
        atomic_write_text(path, json.dumps({"command": command}) + "\n")


def claim(folder: Path, command: str, who: str, key: str = "out_dir") -> None:
    """check_made_by, then record_made_by."""
    check_made_by(folder, command, who, key)
    record_made_by(folder, command)


def entry_point_folder(folder: str | Path, command: str, prog: str, key: str = "out_dir") -> Path:
    """An entry point's check of its folder before it touches it: SystemExit `prog: ...` naming the folder and
    its maker when another command made it."""
    folder = Path(folder)
    try:
        check_made_by(folder, command, f"{prog}.py", key)
    except RunFolderError as e:
        raise SystemExit(f"{prog}: {e}") from None
    return folder
