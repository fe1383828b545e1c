"""A training run's folder: metrics.jsonl, wandb (offline by default), checkpoints, and resuming.

Layout of `out_dir`:
    config.json          the resolved config, written once when the folder is created (the run's identity)
    made_by              which command made the folder (algos/folders.py), where the entry point says
    .lock                held (flock, exclusive) by the one process that owns the folder
    metrics.jsonl        one JSON row per evaluation / iteration (each row one O_APPEND write, fsynced)
    checkpoints/it_K/    the policy and algorithm state after iteration K, with manifest.json (sha256 of
                         every file, checked on load)
    checkpoint.json      which checkpoint is the latest (replaced atomically, last of all)
    wandb/               wandb's offline run files

A folder guards itself: resuming with a config whose identity (everything but the `RESUME_NEUTRAL` keys)
differs from config.json is refused with the differing keys named; a second process on the same folder fails
at once; metrics rows are only ever appended, except that a resume drops the rows past the restored
checkpoint (a truncation, never a rewrite); damaged rows are reported; a checkpoint whose files do not match
their checksums, or that has no manifest, is named and the previous one is used; checkpoint.json can only
point inside checkpoints/; nothing inside the folder may be a symbolic link (algos/folders.py).
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import os
import random
import re
import shutil
import sys
from pathlib import Path
from typing import Any

import numpy as np

from algos.folders import (  # noqa: F401 - RunFolderError and atomic_write_text are this module's API too
    RunFolderError,
    atomic_write_text,
    check_made_by,
    inside,
    lock_file,
    no_links_below,
    open_fd,
    read_bytes,
    record_made_by,
    refuse_link,
    rmtree,
)

# Keys that say how (or how long) a run goes, not what it computes: resuming may change them. Dotted keys of
# the flattened config, fnmatch patterns. A longer budget or more iterations continues the same run.
RESUME_NEUTRAL = (
    "progress", "wandb", "torch_threads", "resume", "out_dir", "cache_dir", "preset", "name", "workers",
    "budget", "sb3_budget", "env_steps", "seeds", "*.iterations",
)
# config keys added after run folders were written without them, each with the value that does what those runs
# did: a stored config without one reads as having it, so resuming an older run is not a change of identity
ADDED_KEYS: dict[str, Any] = {
    "policy.layers": 2, "policy.d_model": 96,
    # GRSD's recipe, fork set and fork-level measurement (2026-12-04), at what GRSD did before them
    "grsd.recipe": "replay", "grsd.teacher": "", "grsd.fork_epochs": 0, "grsd.fork_pool": False,
    "grsd.fork_pool_max": 2048, "grsd.greedy_weight": 1.0, "grsd.fork_eval": False,
    "grsd.fork_eval_arms": ["control", "grpo", "oracle"], "grsd.fork_eval_transfer": 2,
    "grsd.fork_eval_until": 0,
    # the held-out-task split (2026-12-04): runs before it trained and evaluated on the same tasks
    "split": "instances", "heldout_fraction": 0.25, "split_seed": 0,
    # the HF policy's settings (2026-12-04), at what the entry points' HF policy did before them
    "policy.device": "auto", "policy.dtype": "auto", "policy.min_pixels": 0, "policy.max_pixels": 0,
    "policy.crop_status_bar": False, "policy.gradient_checkpointing": "auto", "policy.max_new_tokens": 64,
    "policy.sft_batch_size": 8, "policy.lora_r": 0, "policy.lora_alpha": 16.0, "policy.lora_dropout": 0.0,
    "policy.lora_targets": ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"],
}
MANIFEST = "manifest.json"
_CKPT_NAME = re.compile(r"it_\d+")


def seed_everything(seed: int) -> None:
    """Seed Python, numpy and torch: training draws from these; envs draw only from their own RNG."""
    random.seed(seed)
    np.random.seed(seed % 2**32)
    try:
        import torch

        torch.manual_seed(seed)
    except ImportError:  # pragma: no cover - torch is part of the train extra
        pass


# -- identity ----------------------------------------------------------------------------------------------
def flatten(config: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Dotted key -> leaf value of a nested config dict."""
    out: dict[str, Any] = {}
    for k, v in config.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict) and v:
            out.update(flatten(v, key + "."))
        else:
            out[key] = v
    return out


def identity(config: dict[str, Any], neutral: tuple[str, ...] = RESUME_NEUTRAL) -> dict[str, Any]:
    """The keys that make a run what it is: the flattened config without the resume-neutral ones (JSON-normal
    values, so a tuple and a list compare equal)."""
    flat = json.loads(json.dumps(flatten(config), default=str))
    return {k: v for k, v in flat.items() if not any(fnmatch.fnmatchcase(k, p) for p in neutral)}


def identity_diff(stored: dict[str, Any], new: dict[str, Any],
                  neutral: tuple[str, ...] = RESUME_NEUTRAL) -> list[str]:
    """`key: stored -> new` for every identity key that differs (absent: <unset>; a key of ADDED_KEYS absent
    from `stored` only: its value there)."""
    a, b = identity(stored, neutral), identity(new, neutral)
    a.update({k: v for k, v in ADDED_KEYS.items() if k in b and k not in a})
    unset = "<unset>"
    return [f"{k}: {a.get(k, unset)!r} -> {b.get(k, unset)!r}"
            for k in sorted(set(a) | set(b)) if a.get(k, unset) != b.get(k, unset)]


# -- locking -----------------------------------------------------------------------------------------------
def lock_folder(folder: Path, wait: bool = False, busy: str = "") -> Any:
    """An exclusive flock on folder/.lock (never through a link), held while the returned file stays open.
    Another process holding it is a RunFolderError at once (two writers would interleave their rows), or with
    `wait` a wait for it (`busy`: what the error or the wait says)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    busy = busy or (f"{folder} is in use by another process (its .lock is held); wait for it to finish or "
                    "choose another out_dir")
    return lock_file(inside(folder, ".lock"), busy, wait)


# -- metrics -----------------------------------------------------------------------------------------------
def _counter(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


def good_row(row: Any) -> bool:
    """A metrics row: a JSON object whose `iteration` and `env_steps`, where present, are integers >= 0."""
    return isinstance(row, dict) and all(_counter(row[k]) for k in ("iteration", "env_steps") if k in row)


def read_rows(path: Path) -> tuple[list[dict[str, Any]], list[tuple[int, int, str]]]:
    """The good rows of a metrics.jsonl, and the damaged ones as (line number, byte offset, text): lines cut
    by a kill, empty lines, anything that is not a JSON object, and rows whose iteration or env_steps is not
    a count (`good_row`). A link at `path` is a RunFolderError."""
    rows: list[dict[str, Any]] = []
    damaged: list[tuple[int, int, str]] = []
    if not os.path.lexists(path):
        return rows, damaged
    offset = 0
    for n, raw in enumerate(read_bytes(path).splitlines(keepends=True), 1):
        try:
            row = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError):
            row = None
        if good_row(row):
            rows.append(row)
        else:
            damaged.append((n, offset, raw.decode(errors="replace").rstrip("\n")))
        offset += len(raw)
    return rows, damaged


def report_damaged(path: Path, damaged: list[tuple[int, int, str]], what: str = "skipped") -> None:
    for n, _, text in damaged:
        shown = repr(text[:80]) + ("..." if len(text) > 80 else "")
        try:
            why = "its iteration or env_steps is not a count" if isinstance(json.loads(text), dict) \
                else "not a JSON object"
        except ValueError:
            why = "empty" if not text.strip() else "cut or garbled"
        print(f"{path}: line {n} is not a metrics row ({why}; {what}): {shown}", file=sys.stderr)


def read_metrics(path: Path) -> list[dict[str, Any]]:
    """The rows of a metrics.jsonl; damaged lines are reported on stderr, never silently dropped."""
    rows, damaged = read_rows(path)
    report_damaged(path, damaged)
    return rows


# -- checkpoints -------------------------------------------------------------------------------------------
def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with os.fdopen(open_fd(path, os.O_RDONLY), "rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def _files(folder: Path) -> list[Path]:
    """Every file under `folder` but its manifest, sorted; a link anywhere under it is a RunFolderError."""
    no_links_below(folder)
    return [p for p in sorted(folder.rglob("*"))
            if p.is_file() and p.relative_to(folder).as_posix() != MANIFEST]


def write_manifest(folder: Path) -> None:
    """manifest.json: sha256 and size of every file under `folder` (policy, state, buffers, forks)."""
    files = {p.relative_to(folder).as_posix(): {"sha256": _sha256(p), "bytes": p.stat().st_size}
             for p in _files(folder)}
    atomic_write_text(inside(folder, MANIFEST), json.dumps(files, indent=1, sort_keys=True))


def verify_manifest(folder: Path, what: str = "the checkpoint") -> None:
    """Raise RunFolderError naming the first file of `folder` that is missing, added or differs from its
    manifest, or a link under it. A folder without manifest.json is refused: its files cannot be checked
    (every checkpoint written since checksums came in, 2026-11-30, has one; there is no older format that
    could be verified otherwise)."""
    mf = inside(folder, MANIFEST)
    if not os.path.lexists(mf):
        raise RunFolderError(f"{mf} is missing, so the files of {folder} cannot be checked (its manifest was "
                             f"deleted, or {what} was written before checksums existed)")
    try:
        files = json.loads(read_bytes(mf))
        ok = isinstance(files, dict) and all(isinstance(m, dict) and {"sha256", "bytes"} <= set(m)
                                             for m in files.values())
    except (json.JSONDecodeError, UnicodeDecodeError):
        ok = False
    if not ok:
        raise RunFolderError(f"{mf} is damaged (not a manifest: expected {{file: {{sha256, bytes}}}})")
    present = {p.relative_to(folder).as_posix(): p for p in _files(folder)}
    for rel, meta in sorted(files.items()):
        p = inside(folder, rel)
        if rel not in present:
            raise RunFolderError(f"{p} is missing (listed in {mf})")
        if p.stat().st_size != meta["bytes"] or _sha256(p) != meta["sha256"]:
            raise RunFolderError(f"{p} is damaged: its sha256 differs from {mf}")
    extra = [p for rel, p in present.items() if rel not in files]
    if extra:
        raise RunFolderError(f"{extra[0]} was added after {what} was written (not in {mf})")


def checkpoint_dir(run_dir: str | Path, name: str | None = None) -> Path | None:
    """The folder of checkpoint `name` (default: the one checkpoint.json names) inside run_dir/checkpoints,
    or None when the run has none. A name that is not `it_<K>` or leads outside is a RunFolderError."""
    run_dir = Path(run_dir)
    if name is None:
        ptr = inside(run_dir, "checkpoint.json")
        if not os.path.lexists(ptr):
            return None
        try:
            name = json.loads(read_bytes(ptr))["path"]
        except (json.JSONDecodeError, UnicodeDecodeError, KeyError, TypeError):
            raise RunFolderError(f"{ptr} is damaged: expected {{'iteration': K, 'path': 'it_K'}}") from None
    if not isinstance(name, str) or not _CKPT_NAME.fullmatch(name):
        raise RunFolderError(f"{run_dir / 'checkpoint.json'}: path {name!r} is not a checkpoint of this run "
                             f"(expected it_<K> inside {run_dir / 'checkpoints'})")
    try:
        path = inside(run_dir, "checkpoints", name)
    except RunFolderError as e:
        raise RunFolderError(f"{run_dir / 'checkpoint.json'}: path {name!r} is not a checkpoint of this run "
                             f"({e})") from None
    return path.resolve()


class Run:
    """Owns `out_dir` (locked while open). `log(row)` appends to metrics.jsonl and wandb; `checkpoint(...)`
    saves the state of iteration K so that a killed run resumes from the last completed iteration.
    `neutral`: the config keys a resume may change (see RESUME_NEUTRAL)."""

    def __init__(
        self,
        out_dir: str | Path,
        config: dict[str, Any],
        wandb_mode: str = "offline",
        project: str = "voyager-gym",
        group: str | None = None,
        name: str | None = None,
        neutral: tuple[str, ...] = RESUME_NEUTRAL,
        made_by: str | None = None,
        wait: bool = False,
        busy: str = "",
    ):
        self.dir = Path(out_dir)
        if made_by is not None:  # the entry point's own folder: refuse another command's
            check_made_by(self.dir, made_by, _ENTRY_POINTS.get(made_by, made_by))
        self._lock = lock_folder(self.dir, wait=wait, busy=busy)
        try:
            if made_by is not None:
                record_made_by(self.dir, made_by)
            self._check_identity(config, neutral)
            self.metrics_path = inside(self.dir, "metrics.jsonl")
            refuse_link(inside(self.dir, "wandb"), self.dir)
        except BaseException:
            self._lock.close()
            raise
        self.config = config
        self._wandb = None
        if wandb_mode != "disabled":
            self._wandb = self._start_wandb(wandb_mode, project, group, name)

    def _check_identity(self, config: dict[str, Any], neutral: tuple[str, ...]) -> None:
        """Write config.json for a new run; for an existing one, refuse a config of another identity."""
        path = inside(self.dir, "config.json")
        if not os.path.lexists(path):
            atomic_write_text(path, json.dumps(config, indent=2, sort_keys=True, default=str))
            return
        try:
            stored = json.loads(read_bytes(path))
        except (json.JSONDecodeError, UnicodeDecodeError):
            raise RunFolderError(f"{path} is damaged (not JSON); move the folder away to start afresh") \
                from None
        diff = identity_diff(stored, config, neutral)
        if diff:
            raise RunFolderError(
                f"{self.dir} holds another run; its config differs in {len(diff)} key(s): " + "; ".join(diff)
                + ". Resume it with its own settings, or start a new run with another out_dir (or move this "
                "folder away)")

    def _start_wandb(self, mode: str, project: str, group: str | None, name: str | None):
        try:
            import wandb
        except ImportError:
            return None
        os.environ.setdefault("WANDB_SILENT", "true")
        id_file = inside(self.dir, "wandb_id")
        run_id = read_bytes(id_file).decode().strip() if os.path.lexists(id_file) else None
        run = wandb.init(
            project=project,
            dir=str(self.dir),
            mode=mode,
            config=self.config,
            group=group,
            name=name or self.dir.name,
            id=run_id,
            resume="allow",
            reinit="finish_previous",
        )
        if run_id is None:
            atomic_write_text(id_file, run.id)
        run.define_metric("env_steps")
        run.define_metric("*", step_metric="env_steps")
        return run

    # -- metrics ---------------------------------------------------------------------------------------
    def log(self, row: dict[str, Any]) -> None:
        """Append one row with a single O_APPEND write (fsynced). A row cut by an earlier kill is first ended
        with a newline, so it stays one damaged line and never swallows this one."""
        data = (json.dumps(row, default=_jsonable) + "\n").encode()
        fd = open_fd(self.metrics_path, os.O_RDWR | os.O_APPEND | os.O_CREAT)
        try:
            size = os.fstat(fd).st_size
            if size and os.pread(fd, 1, size - 1) != b"\n":
                data = b"\n" + data
            os.write(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        if self._wandb is not None:
            self._wandb.log(
                {k: v for k, v in row.items() if isinstance(v, int | float) and not isinstance(v, bool)}
            )

    def metrics(self) -> list[dict[str, Any]]:
        """The logged rows; damaged lines (cut by a kill, empty) are reported on stderr and skipped."""
        return read_metrics(self.metrics_path)

    def truncate_metrics(self, keep: Any) -> None:
        """On resume: drop the rows past the restored checkpoint (those for which keep(row) is false) by
        truncating the file after the last row kept; damaged lines among the dropped ones are reported. Rows
        before it are never rewritten."""
        rows, damaged = read_rows(self.metrics_path)
        if not rows and not damaged:
            return
        lines: list[tuple[int, bool]] = []  # (offset, droppable) per line, in file order
        raw = read_bytes(self.metrics_path).splitlines(keepends=True)
        bad = {n: off for n, off, _ in damaged}
        good = iter(rows)
        offset = 0
        for n, line in enumerate(raw, 1):
            lines.append((offset, True if n in bad else not keep(next(good))))
            offset += len(line)
        cut = len(lines)
        while cut > 0 and lines[cut - 1][1]:
            cut -= 1
        if cut == len(lines):
            report_damaged(self.metrics_path, damaged, "kept in place")
            return
        cut_at = lines[cut][0]
        dropped_damaged = [d for d in damaged if d[1] >= cut_at]
        report_damaged(self.metrics_path, [d for d in damaged if d[1] < cut_at], "kept in place")
        report_damaged(self.metrics_path, dropped_damaged, "dropped with the rows past the checkpoint")
        fd = open_fd(self.metrics_path, os.O_WRONLY)
        try:
            os.ftruncate(fd, cut_at)
            os.fsync(fd)
        finally:
            os.close(fd)

    # -- checkpoints -----------------------------------------------------------------------------------
    def checkpoint(
        self, iteration: int, policy: Any, state: dict[str, Any], extra: dict[str, Any] | None = None
    ) -> Path:
        """Save policy + JSON state (+ extra objects with a `.save(path)`) for `iteration` with a manifest of
        checksums, then point checkpoint.json at it. A kill at any moment leaves the previous checkpoint
        usable; the last two are kept."""
        ckpts = inside(self.dir, "checkpoints")
        final = inside(ckpts, f"it_{iteration}")
        tmp = inside(ckpts, f".it_{iteration}.tmp")
        if os.path.lexists(tmp):
            rmtree(tmp, self.dir)
        tmp.mkdir(parents=True)
        policy.save(tmp / "policy")
        for name, obj in (extra or {}).items():
            obj.save(tmp / name)
        atomic_write_text(
            tmp / "state.json", json.dumps({"iteration": iteration, **state}, default=_jsonable)
        )
        write_manifest(tmp)
        if os.path.lexists(final):
            rmtree(final, self.dir)
        os.replace(tmp, final)
        atomic_write_text(
            inside(self.dir, "checkpoint.json"), json.dumps({"iteration": iteration, "path": final.name})
        )
        for old in ckpts.glob("it_*"):  # keep the last two (a link there is left alone, never followed)
            if old.name not in (final.name, f"it_{iteration - 1}") and not old.is_symlink():
                shutil.rmtree(old, ignore_errors=True)
        return final

    def latest(self) -> tuple[Path, dict[str, Any]] | None:
        """The latest checkpoint whose files match their manifest, and its state. A damaged one is named on
        stderr, renamed `damaged-it_K` (kept for inspection) and the previous checkpoint is used instead."""
        path = checkpoint_dir(self.dir)
        if path is None:
            return None
        older = [p for p in inside(self.dir, "checkpoints").resolve().glob("it_*")
                 if _CKPT_NAME.fullmatch(p.name) and int(p.name[3:]) <= int(path.name[3:])]
        candidates = sorted(older, key=lambda p: int(p.name[3:]), reverse=True)
        if path not in candidates:
            candidates.insert(0, path)
        errors = []
        for p in candidates:
            try:
                refuse_link(p, self.dir)
                verify_manifest(p)
                return p, json.loads(read_bytes(p / "state.json"))
            except (RunFolderError, FileNotFoundError, json.JSONDecodeError, UnicodeDecodeError) as e:
                errors.append(str(e))
                print(f"checkpoint {p.name} cannot be used: {e}", file=sys.stderr)
                if p.exists() and not p.is_symlink():
                    os.replace(p, p.with_name(f"damaged-{p.name}"))
        raise RunFolderError(f"{self.dir}: no usable checkpoint ({'; '.join(errors)}); move the folder away "
                             "to start afresh")

    def close(self) -> None:
        if self._wandb is not None:
            self._wandb.finish()
            self._wandb = None
        if not self._lock.closed:
            self._lock.close()

    def __enter__(self) -> Run:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


_ENTRY_POINTS = {"train": "train.py", "compare": "compare.py", "cache": "the cache of base policies and RFT "
                                                                    "start checkpoints"}


def _jsonable(x: Any) -> Any:
    if isinstance(x, np.generic):
        return x.item()
    if isinstance(x, np.ndarray):
        return x.tolist()
    return str(x)


# -- reproducibility ---------------------------------------------------------------------------------------
PINNED_NUMERICS = {
    # The same float operations give different bits under AVX-512 and AVX2 kernels (ATen's vectorised ops,
    # MKL's GEMM, oneDNN): pin them to AVX2, which x86-64 servers since 2013 have. A user's setting wins.
    "ATEN_CPU_CAPABILITY": "avx2",
    "MKL_CBWR": "AVX2",
    "ONEDNN_MAX_CPU_ISA": "AVX2",
}


def pin_cpu_numerics(threads: int) -> None:
    """Make a training process's numbers depend on its config and seed, not on the machine, where CPU torch
    allows: one kernel ISA (PINNED_NUMERICS, set before torch runs its first op), a fixed number of intra-
    and inter-op threads (reductions split by thread count add up in another order) and deterministic
    algorithms. Called by the entry points, never on import."""
    for k, v in PINNED_NUMERICS.items():
        os.environ.setdefault(k, v)
    for k in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ.setdefault(k, str(threads))
    import torch

    torch.set_num_threads(threads)
    try:
        torch.set_num_interop_threads(threads)
    except RuntimeError:  # already set, or parallel work already started in this process
        pass
    # torch.use_deterministic_algorithms also imports torch._inductor to set Inductor's own flag (~1.7 s a
    # process, paid by every entry point and comparison worker); nothing here compiles, so where torch has
    # it, only the switch the public call sets for eager operations
    eager_only = getattr(torch._C, "_set_deterministic_algorithms", None)
    if eager_only is None or "torch._inductor.config" in sys.modules:
        torch.use_deterministic_algorithms(True, warn_only=True)
    else:
        eager_only(True, warn_only=True)
