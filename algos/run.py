"""A training run's folder: metrics.jsonl, wandb (offline by default), checkpoints, and resuming.

Layout of `out_dir`:
    config.json          the resolved config
    metrics.jsonl        one JSON row per evaluation / iteration (append-only, fsynced)
    checkpoints/it_K/    the policy and algorithm state after iteration K
    checkpoint.json      which checkpoint is the latest (replaced atomically, last of all)
    wandb/               wandb's offline run files
"""

from __future__ import annotations

import json
import os
import random
import shutil
import tempfile
from pathlib import Path
from typing import Any

import numpy as np


def seed_everything(seed: int) -> None:
    """Seed Python, numpy and torch: training draws from these; envs draw only from their own RNG."""
    random.seed(seed)
    np.random.seed(seed % 2**32)
    try:
        import torch

        torch.manual_seed(seed)
    except ImportError:  # pragma: no cover - torch is part of the train extra
        pass


def atomic_write_text(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    with os.fdopen(fd, "w") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


class Run:
    """Owns `out_dir`. `log(row)` appends to metrics.jsonl and wandb; `checkpoint(...)` saves the state of
    iteration K so that a killed run resumes from the last completed iteration."""

    def __init__(
        self,
        out_dir: str | Path,
        config: dict[str, Any],
        wandb_mode: str = "offline",
        project: str = "voyager-gym",
        group: str | None = None,
        name: str | None = None,
    ):
        self.dir = Path(out_dir)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.config = config
        atomic_write_text(self.dir / "config.json", json.dumps(config, indent=2, sort_keys=True, default=str))
        self.metrics_path = self.dir / "metrics.jsonl"
        self._wandb = None
        if wandb_mode != "disabled":
            self._wandb = self._start_wandb(wandb_mode, project, group, name)

    def _start_wandb(self, mode: str, project: str, group: str | None, name: str | None):
        try:
            import wandb
        except ImportError:
            return None
        os.environ.setdefault("WANDB_SILENT", "true")
        id_file = self.dir / "wandb_id"
        run_id = id_file.read_text().strip() if id_file.exists() else None
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
        with open(self.metrics_path, "a") as f:
            f.write(json.dumps(row, default=_jsonable) + "\n")
            f.flush()
            os.fsync(f.fileno())
        if self._wandb is not None:
            self._wandb.log(
                {k: v for k, v in row.items() if isinstance(v, int | float) and not isinstance(v, bool)}
            )

    def metrics(self) -> list[dict[str, Any]]:
        if not self.metrics_path.exists():
            return []
        rows = []
        for line in self.metrics_path.read_text().splitlines():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError:  # a line cut by a kill: dropped
                continue
        return rows

    def truncate_metrics(self, keep: Any) -> None:
        """Keep only rows for which keep(row) is true (on resume: drop rows past the last checkpoint)."""
        rows = [r for r in self.metrics() if keep(r)]
        atomic_write_text(self.metrics_path, "".join(json.dumps(r, default=_jsonable) + "\n" for r in rows))

    # -- checkpoints -----------------------------------------------------------------------------------
    def checkpoint(
        self, iteration: int, policy: Any, state: dict[str, Any], extra: dict[str, Any] | None = None
    ) -> Path:
        """Save policy + JSON state (+ extra objects with a `.save(path)`) for `iteration`, then point
        checkpoint.json at it. A kill at any moment leaves the previous checkpoint usable."""
        final = self.dir / "checkpoints" / f"it_{iteration}"
        tmp = self.dir / "checkpoints" / f".it_{iteration}.tmp"
        if tmp.exists():
            shutil.rmtree(tmp)
        tmp.mkdir(parents=True)
        policy.save(tmp / "policy")
        for name, obj in (extra or {}).items():
            obj.save(tmp / name)
        atomic_write_text(
            tmp / "state.json", json.dumps({"iteration": iteration, **state}, default=_jsonable)
        )
        if final.exists():
            shutil.rmtree(final)
        os.replace(tmp, final)
        atomic_write_text(
            self.dir / "checkpoint.json", json.dumps({"iteration": iteration, "path": final.name})
        )
        for old in (self.dir / "checkpoints").glob("it_*"):  # keep the last two
            if old.name not in (final.name, f"it_{iteration - 1}"):
                shutil.rmtree(old, ignore_errors=True)
        return final

    def latest(self) -> tuple[Path, dict[str, Any]] | None:
        ptr = self.dir / "checkpoint.json"
        if not ptr.exists():
            return None
        info = json.loads(ptr.read_text())
        path = self.dir / "checkpoints" / info["path"]
        state = json.loads((path / "state.json").read_text())
        return path, state

    def close(self) -> None:
        if self._wandb is not None:
            self._wandb.finish()
            self._wandb = None


def _jsonable(x: Any) -> Any:
    if isinstance(x, np.generic):
        return x.item()
    if isinstance(x, np.ndarray):
        return x.tolist()
    return str(x)
