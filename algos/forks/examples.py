"""GRSD's fork examples: a fork of a group as a training sample (the failed step's input with the teacher
step's response), the forks of a batch of groups, and the most recent ones kept in each checkpoint
(`forks/`: groups.parquet and forks.json) for pictures (algos/forks/figure.py, `voyager-train forks`)."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from algos.buffer import Group, Step, Trajectory, TrajectoryBuffer
from algos.forks.config import ForkConfig
from algos.forks.walk import group_forks
from algos.prompt import PolicyInput

FORK_MODES = ("faithful", "robust")
FORKS_DIR = "forks"  # checkpoint folder of the kept fork examples


@dataclasses.dataclass(frozen=True)
class ForkExample:
    """One fork of a group: the failed and the teacher (successful) trajectory and the fork's step indices."""

    group: Group
    failed: Trajectory
    teacher: Trajectory
    failed_step: int
    teacher_step: int
    sim_current: float
    sim_next: float  # NaN when either step is the last of its trajectory

    @property
    def steps(self) -> tuple[Step, Step]:
        """The fork's failed step and its teacher step."""
        return self.failed.steps[self.failed_step], self.teacher.steps[self.teacher_step]

    @property
    def sample(self) -> tuple[PolicyInput, str]:
        """The SFT sample: the failed step's input (own history and screen), the teacher step's response."""
        failed, teacher = self.steps
        return failed.policy_input(), teacher.response


def fork_config(mode: str, teacher: str = "") -> ForkConfig:
    """The fork detector settings for `mode` (faithful | robust), with another teacher choice when `teacher`
    is given (shortest | similar | all; see `ForkConfig.teacher`)."""
    if mode == "faithful":
        cfg = ForkConfig.faithful()
    elif mode == "robust":
        cfg = ForkConfig.robust()
    else:
        raise ValueError(f"unknown fork_mode {mode!r}; expected one of {', '.join(FORK_MODES)}")
    return dataclasses.replace(cfg, teacher=teacher) if teacher else cfg


def find_forks(groups: list[Group], mode: str = "robust", max_per_group: int = 0,
               teacher: str = "") -> list[ForkExample]:
    """Fork examples of every group with both outcomes, in group order, failed-step order within a pair.
    With `max_per_group`, a group keeps its forks with the most similar screens (ties: earliest). `teacher`
    overrides the mode's teacher choice (`fork_config`)."""
    cfg = fork_config(mode, teacher)
    out: list[ForkExample] = []
    for g in groups:
        if not g.has_both_outcomes:
            continue
        found = [ForkExample(g, failed, teacher, f.failed_step, f.teacher_step, float(f.sim_current),
                             float(f.sim_next))
                 for failed, teacher, f in group_forks(g, cfg)]
        if max_per_group and len(found) > max_per_group:
            keep = sorted(range(len(found)), key=lambda i: (-found[i].sim_current, i))[:max_per_group]
            found = [found[i] for i in sorted(keep)]
        out += found
    return out


@dataclasses.dataclass(frozen=True)
class ForkCheck:
    """A fork checked by branching: successes of `k` continuations after the teacher's action and of `k`
    after the failed action, all from the failed step's state."""

    teacher_wins: int
    failed_wins: int
    k: int

    @property
    def verified(self) -> bool:
        """The correction raises the success rate."""
        return self.teacher_wins > self.failed_wins



def _small(step: Step, width: int) -> Step:
    """The step with its screenshot reduced to a `width`-wide thumbnail and no full frame (small on disk)."""
    px = step.frame if step.frame is not None else step.thumbnail
    if px is not None and px.shape[1] > width:
        h = max(1, round(px.shape[0] * width / px.shape[1]))
        px = np.asarray(Image.fromarray(px).resize((width, h), Image.Resampling.BOX))
    return dataclasses.replace(step, frame=None, thumbnail=px)


class ForkExamples:
    """The most recent `keep` forks with their failed and teacher trajectories (thumbnails only), saved as a
    folder: `groups.parquet` (a TrajectoryBuffer) and `forks.json` (one record per fork, newest first)."""

    def __init__(self, keep: int = 32, thumb_width: int = 160):
        self.keep = keep
        self.thumb_width = thumb_width
        self.records: list[dict[str, Any]] = []
        self.trajectories: dict[tuple[str, str], Trajectory] = {}
        self.groups: dict[str, Group] = {}

    def __len__(self) -> int:
        return len(self.records)

    def add(self, iteration: int, forks: list[ForkExample],
            checks: list[ForkCheck | None] | None = None, extra: list[dict[str, Any]] | None = None) -> None:
        """Put this iteration's forks first (with their branching checks, if any, and `extra` fields per
        fork), then drop all but the newest `keep`."""
        new = []
        extra = extra or [{}] * len(forks)
        for f, c, more in zip(forks, checks or [None] * len(forks), extra, strict=True):
            for tr in (f.failed, f.teacher):
                key = (f.group.group_id, tr.traj_id)
                if key not in self.trajectories:
                    self.trajectories[key] = dataclasses.replace(
                        tr, steps=[_small(s, self.thumb_width) for s in tr.steps])
            self.groups.setdefault(f.group.group_id, dataclasses.replace(f.group, trajectories=[]))
            new.append({"iteration": iteration, "group_id": f.group.group_id, "task": f.group.task,
                        "failed_traj": f.failed.traj_id, "teacher_traj": f.teacher.traj_id,
                        "failed_step": f.failed_step, "teacher_step": f.teacher_step,
                        "sim_current": f.sim_current, "sim_next": f.sim_next,
                        "branch_k": c and c.k, "teacher_wins": c and c.teacher_wins,
                        "failed_wins": c and c.failed_wins, **more})
        self.keep_only((new + self.records)[: self.keep])

    def keep_only(self, records: list[dict[str, Any]]) -> None:
        """Keep just `records` (some of this object's, in the order given) and the trajectories they use."""
        self.records = list(records)
        used = {(r["group_id"], t) for r in self.records for t in (r["failed_traj"], r["teacher_traj"])}
        self.trajectories = {k: v for k, v in self.trajectories.items() if k in used}
        self.groups = {g: v for g, v in self.groups.items() if any(k[0] == g for k in used)}

    def pairs(self) -> list[tuple[dict[str, Any], Trajectory, Trajectory]]:
        """(record, failed trajectory, teacher trajectory) per kept fork, newest first."""
        return [(r, self.trajectories[(r["group_id"], r["failed_traj"])],
                 self.trajectories[(r["group_id"], r["teacher_traj"])]) for r in self.records]

    def buffer(self) -> TrajectoryBuffer:
        out = []
        for gid, g in self.groups.items():
            trs = [tr for (k, _), tr in self.trajectories.items() if k == gid]
            out.append(dataclasses.replace(g, trajectories=trs))
        return TrajectoryBuffer(out)

    def save(self, path: str | Path) -> None:
        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        self.buffer().save(path / "groups.parquet")
        records = [{k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in r.items()}
                   for r in self.records]
        (path / "forks.json").write_text(json.dumps({"forks": records}, indent=1))

    @classmethod
    def load(cls, path: str | Path, keep: int = 32, thumb_width: int = 160) -> ForkExamples:
        path = Path(path)
        if not (path / "forks.json").is_file() or not (path / "groups.parquet").is_file():
            raise FileNotFoundError(f"{path} holds no fork examples; expected forks.json and groups.parquet "
                                    "(written by a GRSD checkpoint)")
        ex = cls(keep=keep, thumb_width=thumb_width)
        ex.records = [{k: (float("nan") if k.startswith("sim_") and v is None else v) for k, v in r.items()}
                      for r in json.loads((path / "forks.json").read_text())["forks"]]
        for g in TrajectoryBuffer.load(path / "groups.parquet"):
            ex.groups[g.group_id] = dataclasses.replace(g, trajectories=[])
            for tr in g.trajectories:
                ex.trajectories[(g.group_id, tr.traj_id)] = tr
        return ex


def load_run_forks(run_dir: str | Path) -> tuple[Path, ForkExamples]:
    """The fork examples in a run folder's latest checkpoint, with that checkpoint's path. Raises a
    FileNotFoundError that says what is missing when the run has none."""
    run_dir = Path(run_dir)
    ptr = run_dir / "checkpoint.json"
    if not ptr.is_file():
        raise FileNotFoundError(f"{run_dir} is not a training run folder with checkpoints (no "
                                "checkpoint.json); expected the out_dir of `experiments/train.py algo=grsd`")
    from algos.run import checkpoint_dir  # checkpoint.json may only point inside the run's checkpoints/

    ckpt = checkpoint_dir(run_dir)
    if not (ckpt / FORKS_DIR).is_dir():
        raise FileNotFoundError(f"{ckpt} has no {FORKS_DIR}/ folder: the run holds no fork data (was it "
                                "trained with algo=grsd?)")
    ex = ForkExamples.load(ckpt / FORKS_DIR)
    if not len(ex):
        raise FileNotFoundError(f"{ckpt / FORKS_DIR} holds no forks yet: none of the run's GRSD "
                                "iterations so far found a fork (or the run has only its iteration-0 one)")
    return ckpt, ex
