"""Group Relative Self-Distillation (UI-Voyager stage 2): learn from failed rollouts at their fork points.

Each iteration rolls the policy out G times per fresh training instance (algos/loop.py). In every group with
both outcomes, fork-point detection (algos/forks/) pairs failed steps with the step of a successful
rollout that faced the same screen but acted differently and moved somewhere else. Each fork becomes one SFT
sample: the failed step's own input (its screen, elements and history) with the successful step's full
response as the target, so the policy learns what to do at the exact step where it went wrong. These samples
are mixed with RFT data (every step of the successful trajectories, pooled over iterations as RFT pools them)
and the policy is fine-tuned with loss on the response only. The fork examples of recent iterations are kept
in each checkpoint (`forks/`) so `voyager-train forks RUN_DIR` and notebooks/fork_gallery.ipynb can draw them.

Forks can be checked by branching (`branch`, `verify`; issue 18): restore the failed trajectory's state at
the failed step (a SimDroid snapshot, reached by replaying its actions), take the teacher's action and let
the current policy finish K times; do the same after the failed action. A fork whose correction raises the
success rate is verified; the share of such forks is logged as `grsd/fork_precision_branching`, drawn on
the fork pictures, and `verify=true` trains on verified forks only. Branch steps count as env steps.

What UI-Voyager publishes about the mix: its fork tool (cores/ in ui-voyager/UI-Voyager) writes the fork
samples in the same conversation format as its trajectory SFT data and the paper mixes them with RFT data; no
ratio is published, so by default every fork sample and every pooled success step is used (`rft_ratio=0`).
"""

from __future__ import annotations

import dataclasses
import math
import random
import time
from pathlib import Path
from typing import Any

import numpy as np

from algos.branch import Branch, play, taken
from algos.buffer import Group, Step, TrajectoryBuffer
from algos.forks.examples import FORK_MODES, FORKS_DIR, ForkCheck, ForkExample, ForkExamples, find_forks
from algos.loop import Algorithm, LoopConfig
from algos.policies.base import Policy
from algos.prompt import PolicyInput
from algos.rft import handed_demos, success_samples, successful_groups
from algos.rollout import RolloutConfig


@dataclasses.dataclass
class GRSDConfig(LoopConfig):
    fork_mode: str = "robust"  # faithful: the paper's detector as published; robust: our hardened variant
    # (default: on SimDroid with screen noise 93% of its forks pair truly equal screens vs 60% for faithful)
    epochs: int = 2  # passes over the mixed SFT set per iteration
    lr: float = 5e-4  # fine-tuning learning rate (RFT's, which GRSD continues from)
    accumulate: bool = True  # RFT part: successes from all iterations so far, not only the last
    rft_ratio: float = 0.0  # RFT samples per fork sample (0: the whole success pool, as the paper mixes)
    fork_repeat: int = 1  # each fork sample appears this many times (upweights the corrections)
    max_forks_per_group: int = 0  # cap per group, most similar screens first (0: no cap)
    max_samples_per_task: int = 0  # cap each task's share of the RFT part (see RFTConfig)
    per_group: int = 0  # RFT part: keep only the shortest k successes of each group (0: all; RFT's own
    # recipe keeps 2, see RFTConfig.per_group)
    demos: bool = False  # also fine-tune on the base policy's expert demonstrations every iteration, as the
    # experiments' RFT does (whoever made the base hands them over: `GRSD.demo_samples`)
    rft_pool: bool = False  # start the success pool from the RFT start checkpoint's pool (the entry points
    # load it: `GRSD.pool`), so GRSD continues RFT's data as well as its weights; False: the pool starts empty
    # and the first updates fine-tune on one iteration's successes only
    max_rft_samples: int = 0  # > 0: each update fine-tunes on at most this many samples of the RFT part (the
    # pool and the demonstrations), drawn afresh every update (seeded): a pool continued from RFT's holds
    # ~15,000 steps, and this bounds the update's time while every sample keeps its chance of being replayed
    train_on_forks: bool = True  # False: the control arm, forks found and logged but not trained on (RFT
    # continued with GRSD's own pool, settings and rollouts: what the fork samples add is the difference)
    branch: bool = False  # check every fork by branching (SimDroid snapshots): K continuations of the
    # current policy after the teacher's action and K after the failed one, from the failed step's state;
    # logs grsd/fork_precision_branching (the share whose correction raises the success rate)
    verify: bool = False  # train only on forks verified by branching (branches them: implies branch)
    branch_k: int = 4  # K: continuations per side of a fork when branching
    keep_forks: int = 32  # fork examples kept in each checkpoint for pictures (most recent first)
    thumb_width: int = 160  # width of the screenshots stored with the kept fork examples


def _state(f: ForkExample) -> tuple[str, str, int]:
    """The failed state a fork branches from: (group, failed trajectory, failed step)."""
    return f.group.group_id, f.failed.traj_id, f.failed_step


def verify_forks(policy: Policy, envs: Any, forks: list[ForkExample], k: int) -> tuple[list[ForkCheck | None],
                                                                                      int]:
    """Check each fork by branching on `envs` (SimDroid): replay its failed trajectory to the failed step and
    snapshot there (once per failed state), then from that snapshot play K continuations of `policy` after
    the teacher's action and K after the failed one (each distinct action of a state once). Returns one
    ForkCheck per fork (None where the replay did not reach the failed step's screen) and the env steps
    taken."""
    states: dict[tuple[str, str, int], ForkExample] = {}
    for f in forks:
        states.setdefault(_state(f), f)
    replays = [Branch({"task": f.failed.task, "params": dict(f.failed.params)}, seed=f.failed.env_seed,
                      forced=tuple(taken(s) for s in f.failed.steps[: f.failed_step]), policy=False)
               for f in states.values()]
    reached = play(policy, envs, replays)
    snaps = {key: r.snapshot for (key, f), r in zip(states.items(), reached, strict=True)
             if r.snapshot is not None and r.snapshot.screen_key == f.failed.steps[f.failed_step].screen_key}
    first: dict[tuple[tuple[str, str, int], str], int] = {}  # (state, response) -> index of its first branch
    branches: list[Branch] = []
    for f in forks:
        if _state(f) not in snaps:
            continue
        history = tuple(f.failed.steps[f.failed_step].history)
        screens = tuple(s.elements for s in f.failed.steps[: f.failed_step])
        for step in f.steps:  # the failed action and the teacher's
            act = taken(step)
            if (_state(f), act[0]) not in first:
                first[(_state(f), act[0])] = len(branches)
                branches += [Branch(snaps[_state(f)], forced=(act,), history=history, screens=screens)] * k
    ran = play(policy, envs, branches)

    def wins(f: ForkExample, step: Step) -> int:
        i = first[(_state(f), step.response)]
        return sum(r.success for r in ran[i : i + k])

    checks = [ForkCheck(wins(f, f.steps[1]), wins(f, f.steps[0]), k) if _state(f) in snaps else None
              for f in forks]
    return checks, sum(r.steps for r in [*reached, *ran])


def mix_samples(
    fork: list[tuple[PolicyInput, str]],
    rft: list[tuple[PolicyInput, str]],
    rft_ratio: float = 0.0,
    fork_repeat: int = 1,
    seed: int = 0,
) -> list[tuple[PolicyInput, str]]:
    """The SFT set: fork samples (each `fork_repeat` times) plus RFT samples, shuffled with `seed`. With
    `rft_ratio` > 0 at most round(rft_ratio * len(fork)) RFT samples, drawn without replacement."""
    if fork_repeat < 1:
        raise ValueError(f"fork_repeat must be >= 1, got {fork_repeat}")
    if rft_ratio < 0:
        raise ValueError(f"rft_ratio must be >= 0 (0: all RFT samples), got {rft_ratio}")
    rng = random.Random(seed)
    if rft_ratio > 0:
        n = min(len(rft), round(rft_ratio * len(fork)))
        rft = rng.sample(rft, n)
    out = [s for s in fork for _ in range(fork_repeat)] + list(rft)
    rng.shuffle(out)
    return out


class GRSD(Algorithm):
    """Fork-point self-distillation mixed with RFT data, fine-tuned with loss on the response only."""

    name = "grsd"
    needs_pixels = True  # fork detection compares screenshots
    cfg: GRSDConfig

    def __init__(self, cfg: GRSDConfig):
        if cfg.fork_mode not in FORK_MODES:
            raise ValueError(f"unknown fork_mode {cfg.fork_mode!r}; expected one of {', '.join(FORK_MODES)}")
        if cfg.branch_k < 1:
            raise ValueError(f"grsd.branch_k={cfg.branch_k!r}: expected an integer >= 1")
        super().__init__(cfg)
        self.pool = TrajectoryBuffer()
        self.examples = ForkExamples(keep=cfg.keep_forks, thumb_width=cfg.thumb_width)
        # (input, response) of the base policy's demonstrations, fine-tuned on beside the pool when cfg.demos
        # (None: not handed over yet; [] when the base was cloned from none)
        self.demo_samples: list[tuple[PolicyInput, str]] | None = None

    def rollout_config(self, envs: Any, seed: int, progress: bool,
                       policy: Policy | None = None) -> RolloutConfig:
        """Frames always (fork detection compares them), of mixed groups only unless `policy` reads them (its
        pooled successes then keep theirs): a group of one outcome has no fork. With `replay_env` set and
        envs that render nothing, the mixed groups' frames are rendered afterwards by replaying their
        episodes (only they are ever drawn)."""
        mixed = policy is not None and not policy.uses_pixels
        return self.with_frames(super().rollout_config(envs, seed, progress), envs,
                                "mixed" if mixed else "all",
                                "GRSD compares screenshots, but the env gives elements-only observations; "
                                "make it with render_scale > 0 (observation_mode='full'), or set the "
                                "algorithm's replay_env to render them by replay (SimDroid)")

    def update(self, policy: Policy, groups: list[Group], iteration: int, seed: int) -> dict[str, float]:
        cfg = self.cfg
        branching = cfg.branch or cfg.verify
        if branching and self.envs is None:
            raise ValueError("grsd.branch / grsd.verify branch episodes on the loop's envs; none are bound "
                             "(train_loop sets algo.envs)")
        if not cfg.accumulate:
            self.pool = TrajectoryBuffer()
        self.pool.extend(successful_groups(groups, cfg.per_group, keep_pixels=policy.uses_pixels))
        t0 = time.perf_counter()
        forks = find_forks(groups, cfg.fork_mode, cfg.max_forks_per_group)
        fork_s = time.perf_counter() - t0
        checks: list[ForkCheck | None] = [None] * len(forks)
        branch_steps, t0 = 0, time.perf_counter()
        if branching:
            checks, branch_steps = verify_forks(policy, self.envs, forks, cfg.branch_k)
        branch_s = time.perf_counter() - t0
        train = forks
        if cfg.verify:
            train = [f for f, c in zip(forks, checks, strict=True) if c is not None and c.verified]
        fork = [f.sample for f in train] if cfg.train_on_forks else []
        rft = success_samples(self.pool.groups, cfg.max_samples_per_task, seed=seed)
        if cfg.demos:
            rft = rft + handed_demos(self.name, self.demo_samples)
        if 0 < cfg.max_rft_samples < len(rft):
            rft = random.Random(seed).sample(rft, cfg.max_rft_samples)
        samples = mix_samples(fork, rft, cfg.rft_ratio, cfg.fork_repeat, seed=seed)
        fit = policy.fit_sft(samples, epochs=cfg.epochs, lr=cfg.lr, seed=seed) if samples else {}
        self.examples.add(iteration, forks, checks)
        checked = [c for c in checks if c is not None]
        return {
            "grsd/mixed_groups": sum(g.has_both_outcomes for g in groups),
            "grsd/forks": len(forks),
            "grsd/fork_samples": len(fork) * cfg.fork_repeat,
            "grsd/rft_samples": len(samples) - len(fork) * cfg.fork_repeat,
            "train/demo_samples": len(self.demo_samples or ()) if cfg.demos else 0,
            "grsd/sim_current_mean": _mean([f.sim_current for f in forks]),
            "grsd/sim_next_mean": _mean([f.sim_next for f in forks]),
            "grsd/fork_share": len(fork) * cfg.fork_repeat / max(1, len(samples)),
            "grsd/same_screen_rate": same_screen_rate(forks),
            "grsd/next_differs_rate": next_differs_rate(forks),
            "grsd/same_history_rate": same_history_rate(forks),
            "grsd/later_fork_rate": later_fork_rate(forks),
            "grsd/fork_precision_branching": _rate([c.verified for c in checked]),
            "grsd/branch_success_teacher": _mean([c.teacher_wins / c.k for c in checked]),
            "grsd/branch_success_failed": _mean([c.failed_wins / c.k for c in checked]),
            "grsd/unchecked_forks": len(forks) - len(checked) if branching else 0,
            "grsd/fork_s": fork_s,
            "grsd/branch_s": branch_s,
            "train/update_env_steps": branch_steps,
            "train/sft_samples": len(samples),
            "losses/sft": fit.get("loss", float("nan")),
        }

    def state(self) -> dict[str, Any]:
        return {"successes.parquet": self.pool, FORKS_DIR: self.examples}

    def load_state(self, path: Path) -> None:
        self.pool = TrajectoryBuffer.load(path / "successes.parquet")
        self.examples = ForkExamples.load(path / FORKS_DIR, keep=self.cfg.keep_forks,
                                          thumb_width=self.cfg.thumb_width)


def next_differs_rate(forks: list[ForkExample]) -> float:
    """Share of forks whose teacher action led to another screen than the failed action (SimDroid's
    `screen_key` of the step after each, where both trajectories go on): the second half of a fork's
    definition, checked against ground truth. NaN when no fork has keys on both next screens."""
    hits = []
    for f in forks:
        i, j = f.failed_step + 1, f.teacher_step + 1
        if i < len(f.failed.steps) and j < len(f.teacher.steps):
            a, b = f.failed.steps[i].screen_key, f.teacher.steps[j].screen_key
            if a and b:
                hits.append(a != b)
    return _rate(hits)


def same_history_rate(forks: list[ForkExample]) -> float:
    """Share of forks whose failed step had the same history (previous actions) as its teacher step: the
    failed trajectory left the teacher's path right there, so its fork sample repeats the teacher's own step
    (an RFT sample) up to screen noise, and what it adds is weight on that decision. The other forks bring a
    context RFT never trains on (a screen reached by another route). NaN without forks."""
    return _rate([failed.history == teacher.history for failed, teacher in (f.steps for f in forks)])


def later_fork_rate(forks: list[ForkExample]) -> float:
    """Share of forks that come after an earlier fork of the same failed trajectory: corrections made once
    that trajectory had already left the teacher's path (its state may differ in ways the screen does not
    show, such as an answer already given). NaN without forks."""
    keys = [(f.group.group_id, f.failed.traj_id) for f in forks]
    first: dict[tuple[str, str], int] = {}
    for k, f in zip(keys, forks, strict=True):
        first[k] = min(first.get(k, f.failed_step), f.failed_step)
    return _rate([f.failed_step > first[k] for k, f in zip(keys, forks, strict=True)])


def _rate(hits: list[bool]) -> float:
    """Share of True in `hits`; NaN when there are none."""
    return float(np.mean(hits)) if hits else float("nan")


def _mean(xs: list[float]) -> float:
    xs = [x for x in xs if not math.isnan(x)]
    return float(np.mean(xs)) if xs else float("nan")


def same_screen_rate(forks: list[ForkExample]) -> float:
    """Share of forks whose two steps were on the same logical screen (SimDroid's ground-truth `screen_key`):
    the precision of the screenshot matching. NaN when no fork has keys on both sides."""
    return _rate([failed.screen_key == teacher.screen_key for failed, teacher in (f.steps for f in forks)
                  if failed.screen_key and teacher.screen_key])
