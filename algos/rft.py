"""Rejection Fine-Tuning (UI-Voyager stage 1): roll out, keep what the verifier approves, fine-tune, repeat.

Each iteration draws fresh training instances (never eval seeds), rolls the current policy out G times on each
(sampling), keeps every step of every fully successful trajectory, adds them to the pool of successes from
earlier iterations, and fine-tunes the policy on the pool (with `demos`, on in the experiments' recipe,
together with the expert demonstrations the base policy was cloned from) with loss on the response only.
Pass@1 on the held-out suite is measured before the first iteration and after each one (algos/loop.py). The
paper took its model from 37% to 73% this way before GRSD.
"""

from __future__ import annotations

import dataclasses
import random
from pathlib import Path
from typing import Any, ClassVar

from algos.buffer import Group, TrajectoryBuffer
from algos.fields import setting
from algos.loop import Algorithm, LoopConfig, RunContext
from algos.policies.base import Policy
from algos.prompt import PolicyInput


@dataclasses.dataclass
class RFTConfig(LoopConfig):
    SECTION: ClassVar[str] = "rft"
    iterations: int = setting(12, ge=1)  # rounds of rollout + fine-tuning (the paper ran 4 with a 4B model;
    # the small policy still gains ~1.5 points a round at 8: 0.529 at 8, 0.587 at 12 with the experiments'
    # recipe)
    epochs: int = setting(2, ge=1)  # passes over the success pool per iteration
    lr: float = setting(5e-4, gt=0)  # fine-tuning learning rate (1e-3 forgot more: Pass@1 peaked early, then
    # fell)
    accumulate: bool = True  # fine-tune on successes from all iterations so far, not only the last
    per_group: int = setting(2, ge=0)  # keep only the shortest k successes of each group (0: all of them):
    # fewer detours in the data and a smaller pool to fine-tune on (the same Pass@1 as keeping all, in half
    # the time)
    balance: float = setting(0.0, ge=0)  # > 0: repeat the samples of tasks with few successes, up to this
    # many times, toward the largest task's share (rare successes on hard tasks otherwise drown among easy
    # tasks' many)
    max_samples_per_task: int = setting(0, ge=0)  # cap each task's share of the SFT set (0: no cap); keeps
    # easy tasks from drowning the rare successes on hard ones, and bounds the time an iteration's
    # fine-tuning takes
    demos: bool = True  # also fine-tune on the base policy's own expert demonstrations every iteration
    # (handed over by whoever made the base: `RunContext.demo_samples`, as the experiments' recipe does), so
    # tasks RFT rarely solves are not forgotten (+17.9 against +16.0 without, 8 iterations from the same
    # base; fewer tasks end below the base). False: the paper's RFT, on its own successes only


def success_samples(
    groups: list[Group], max_per_task: int = 0, seed: int = 0, balance: float = 0.0
) -> list[tuple[PolicyInput, str]]:
    """(input, response) for every step of every successful trajectory; with `max_per_task`, whole successful
    trajectories per task, newest rounds first, up to that many steps; with `balance` > 0, each task's
    trajectories repeated round(min(balance, most / its count)) times, `most` being the largest task's count.
    Shuffled with `seed`."""
    by_task: dict[str, list] = {}
    for g in reversed(groups):  # newest first
        for t in g.trajectories:
            if t.success:
                by_task.setdefault(t.task, []).append(t)
    out: list[tuple[PolicyInput, str]] = []
    most = max((len(v) for v in by_task.values()), default=0)
    for task in sorted(by_task):
        trajs = by_task[task]
        repeat = max(1, round(min(balance, most / len(trajs)))) if balance > 0 else 1
        if max_per_task:
            kept, n = [], 0
            for t in trajs:
                if n + len(t.steps) > max_per_task and kept:
                    break
                kept.append(t)
                n += len(t.steps)
            trajs = kept
        out += [(s.policy_input(), s.response) for t in trajs for s in t.steps] * repeat
    random.Random(seed).shuffle(out)
    return out


class RFT(Algorithm):
    """Keep every fully successful trajectory (pooled over iterations), fine-tune on the pool."""

    name = "rft"
    cfg: RFTConfig

    def __init__(self, cfg: RFTConfig, context: RunContext | None = None):
        self.pool = TrajectoryBuffer()
        super().__init__(cfg, context)

    @property
    def demo_samples(self) -> list[tuple[PolicyInput, str]] | None:
        """(input, response) of the demonstrations the base was cloned from, fine-tuned on beside the pool
        when cfg.demos (`RunContext.demo_samples`: None when none were handed over)."""
        return self.context.demo_samples

    def update(self, policy: Policy, groups: list[Group], iteration: int, seed: int) -> dict[str, float]:
        if not self.cfg.accumulate:
            self.pool = TrajectoryBuffer()
        self.pool.extend(successful_groups(groups, self.cfg.per_group, keep_pixels=policy.uses_pixels))
        samples = success_samples(self.pool.groups, self.cfg.max_samples_per_task, seed=seed,
                                  balance=self.cfg.balance)
        demos = handed_demos(self.name, self.demo_samples) if self.cfg.demos else []
        if demos:
            samples = samples + demos
            random.Random(seed).shuffle(samples)
        fit = policy.fit_sft(samples, epochs=self.cfg.epochs, lr=self.cfg.lr, seed=seed) if samples else {}
        return {"train/sft_samples": len(samples), "losses/sft": fit.get("loss", float("nan")),
                "train/demo_samples": len(self.demo_samples or ()) if self.cfg.demos else 0}

    def state(self) -> dict[str, Any]:
        return {"successes.parquet": self.pool}

    def load_state(self, path: Path) -> None:
        self.pool = TrajectoryBuffer.load(path / "successes.parquet")


def handed_demos(name: str, demo_samples: list[tuple[PolicyInput, str]] | None
                 ) -> list[tuple[PolicyInput, str]]:
    """The demonstrations handed to algorithm `name` (`<name>.demos=true`); an error naming the setting when
    none were handed over (None), [] when the base was cloned from none."""
    if demo_samples is None:
        raise ValueError(f"{name}.demos=true: no demonstrations were handed to {name.upper()} (pass "
                         "RunContext(demo_samples=...) to the algorithm, the base policy's expert episodes, "
                         f"as experiments/recipe.py does; or set {name}.demos=false)")
    return demo_samples


def successful_groups(groups: list[Group], per_group: int = 0, keep_pixels: bool = True) -> list[Group]:
    """Each group cut down to its successful trajectories, the shortest `per_group` of them when > 0 (groups
    without a success are dropped). `keep_pixels=False` drops frames and thumbnails (a policy that does not
    read screenshots needs none, and a pool of full frames grows by megabytes per iteration)."""
    out = []
    for g in groups:
        wins = [t for t in g.trajectories if t.success]
        if per_group > 0:
            wins = sorted(wins, key=lambda t: len(t.steps))[:per_group]  # stable: rollout order on ties
        if not keep_pixels:
            wins = [dataclasses.replace(t, steps=[dataclasses.replace(s, frame=None, thumbnail=None)
                                                  for s in t.steps]) for t in wins]
        if wins:
            out.append(dataclasses.replace(g, trajectories=wins))
    return out

