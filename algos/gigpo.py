"""GiGPO (Feng et al., arXiv 2505.10978; verl-agent): GRPO's episode advantages plus step advantages within
the anchor states that a group's rollouts share.

Each iteration rolls the policy out G times per training instance (algos/loop.py), as GRPO does. Per group,
with errored trajectories left out as GRPO leaves them out:

- episode advantage A^E(tau_i): GRPO's, from R_i = score_i - invalid_penalty * (its invalid steps);
- anchor states: the group's steps fall into classes of steps that faced the same screen, whichever rollout
  and whichever turn (a rollout that loops meets its own earlier screens). `anchor="robust"` decides "same
  screen" with the comparison GRSD's robust fork detector makes (algos/forks/: bars masked, carets,
  toasts and mid-transition blends excused, accessibility trees confirming), so the same code runs on real
  screenshots; `anchor="exact"` uses SimDroid's ground-truth `screen_key` (the paper's exact matching of
  text observations; an ablation here);
- step return R_t = sum_{k >= t} gamma^(k - t) r_k along the step's own trajectory (r_k: the env's reward,
  the score at the step that said status, minus invalid_penalty on an invalid step);
- step advantage A^S: R_t normalised within its anchor class (a class of one step, or of equal returns: 0);
- A = A^E + step_weight * A^S, given to the step's response.

Both levels divide by their group's population std (`scale_std=True`, verl-agent's mean_std_norm) or not
(False, its mean_norm: the mode its example scripts run, and the default here). A group whose rollouts share
no screen gets A^S = 0 everywhere: GRPO's advantages exactly. Unlike GRPO, a group whose rollouts all succeed
still teaches: from a shared screen, the path that finishes sooner has the larger discounted return.

The loss is GRPO's (algos/grpo.py: the clipped surrogate per step with the behaviour log-probs, the optional
k3 KL to the starting policy, the step-mean): GiGPO changes the advantages only, so a comparison with GRPO
under the same loop and budget measures exactly what the step level adds.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from algos.buffer import Group, Step, Trajectory
from algos.fields import setting
from algos.grpo import GRPO, GRPOConfig, group_advantages, signal_metrics
from algos.loop import RunContext
from algos.pg import discounted_returns, step_rewards, trajectory_return
from algos.policies.base import Policy
from algos.rollout import RolloutConfig

ANCHORS = ("robust", "exact")


@dataclasses.dataclass
class GiGPOConfig(GRPOConfig):
    SECTION: ClassVar[str] = "gigpo"
    scale_std: bool = False  # F_norm of both levels: divide by the group's std (True: verl-agent's
    # mean_std_norm) or not (False: its mean_norm, which its example scripts run)
    gamma: float = setting(0.95, ge=0, le=1)  # discount of the step returns (the paper's and verl-agent's)
    step_weight: float = setting(1.0, ge=0)  # w in A = A^E + w * A^S (the paper's 1)
    anchor: str = setting("robust", choices=ANCHORS)  # how steps are matched to shared anchor states: robust
    # (GRSD's robust screen comparison of screenshots; works on real screens) | exact (SimDroid's
    # ground-truth screen_key)


# -- anchor states ------------------------------------------------------------------------------------------
def anchor_classes(trajs: Sequence[Trajectory], anchor: str) -> list[list[int]]:
    """A class id per step of each trajectory (ids shared across the trajectories): the steps of one class
    faced the same anchor state."""
    if anchor == "exact":
        ids: dict[str, int] = {}
        for t in trajs:
            for s in t.steps:
                if not s.screen_key:
                    raise ValueError(f"gigpo.anchor='exact' matches Step.screen_key, but step t={s.t} of "
                                     f"trajectory {t.traj_id!r} has none (only SimDroid records it); use "
                                     "gigpo.anchor=robust")
        return [[ids.setdefault(s.screen_key, len(ids)) for s in t.steps] for t in trajs]
    if anchor == "robust":
        from algos.forks import ForkConfig, screen_classes

        return screen_classes(trajs, ForkConfig.robust())
    raise ValueError(f"gigpo.anchor={anchor!r}: expected one of {', '.join(ANCHORS)}")


# -- returns and advantages ---------------------------------------------------------------------------------
def step_level_advantages(returns: Sequence[np.ndarray], classes: Sequence[Sequence[int]],
                          scale_std: bool = False, eps: float = 1e-4) -> list[np.ndarray]:
    """A^S per step of each trajectory: its return normalised within its anchor class (group_advantages: 0
    for a class of one step or of equal returns)."""
    members: dict[int, list[tuple[int, int]]] = {}
    for i, ids in enumerate(classes):
        if len(ids) != len(returns[i]):
            raise ValueError(f"trajectory {i}: {len(ids)} anchor classes for {len(returns[i])} steps; "
                             "expected one class per step")
        for t, c in enumerate(ids):
            members.setdefault(c, []).append((i, t))
    out = [np.zeros(len(r)) for r in returns]
    for where in members.values():
        adv = group_advantages([returns[i][t] for i, t in where], scale_std, eps)
        for (i, t), a in zip(where, adv, strict=True):
            out[i][t] = a
    return out


@dataclasses.dataclass
class Anchors:
    """What anchor matching found in an iteration's groups (the `gigpo/` metrics)."""

    groups: int = 0  # groups whose step returns vary, so their anchors were matched
    shared: int = 0  # anchor classes of two or more steps
    across: int = 0  # ... of which span two or more rollouts
    shared_steps: int = 0  # steps in a class of two or more
    key_pairs: list[bool] = dataclasses.field(default_factory=list)  # per step joining a class: whether its
    # SimDroid screen_key equals that of the class's first step (robust matching checked against ground truth)
    seconds: float = 0.0

    def add(self, trajs: Sequence[Trajectory], classes: Sequence[Sequence[int]]) -> None:
        self.groups += 1
        where: dict[int, list[tuple[int, int]]] = {}
        for i, ids in enumerate(classes):
            for t, c in enumerate(ids):
                where.setdefault(c, []).append((i, t))
        for members in where.values():
            if len(members) < 2:
                continue
            self.shared += 1
            self.shared_steps += len(members)
            self.across += len({i for i, _ in members}) > 1
            first = trajs[members[0][0]].steps[members[0][1]].screen_key
            keys = [trajs[i].steps[t].screen_key for i, t in members[1:]]
            self.key_pairs += [k == first for k in keys if k and first]


def gigpo_advantages(groups: list[Group],
                     cfg: GiGPOConfig) -> tuple[list[tuple[Step, float, float]], Anchors]:
    """(step, A^E, A^S) for every step of the non-errored trajectories of groups with signal (some step's
    A^E + step_weight * A^S is not 0), in buffer order, and what anchor matching found. Anchors are only
    matched in groups whose step returns vary (elsewhere every A^S is 0 whatever the anchors)."""
    out: list[tuple[Step, float, float]] = []
    found = Anchors()
    for g in groups:
        trajs = [t for t in g.trajectories if not t.errored and not math.isnan(t.score)]
        episode = group_advantages([trajectory_return(t, cfg.invalid_penalty) for t in trajs], cfg.scale_std,
                                   cfg.eps)
        returns = [discounted_returns(step_rewards(t, cfg.invalid_penalty), cfg.gamma) for t in trajs]
        flat = np.concatenate(returns) if returns else np.zeros(0)
        if flat.size and np.ptp(flat) > 1e-12:
            t0 = time.perf_counter()
            classes = anchor_classes(trajs, cfg.anchor)
            found.seconds += time.perf_counter() - t0
            found.add(trajs, classes)
            step_adv = step_level_advantages(returns, classes, cfg.scale_std, cfg.eps)
        else:
            step_adv = [np.zeros(len(r)) for r in returns]
        rows = [(s, a_e, float(a_s)) for t, a_e, adv in zip(trajs, episode, step_adv, strict=True)
                for s, a_s in zip(t.steps, adv, strict=True)]
        if any(a_e + cfg.step_weight * a_s != 0.0 for _, a_e, a_s in rows):
            out += rows
    return out, found


class GiGPO(GRPO):
    """GRPO's loss on GiGPO's two-level advantages (see the module docstring)."""

    name = "gigpo"
    cfg: GiGPOConfig

    def __init__(self, cfg: GiGPOConfig, context: RunContext | None = None):
        super().__init__(cfg, context)
        self.needs_pixels = cfg.anchor == "robust"  # robust anchors compare screenshots

    def rollout_config(self, envs: Any, seed: int, progress: bool,
                       policy: Policy | None = None) -> RolloutConfig:
        """Robust anchors: frames kept, of the groups where some rollout scored (elsewhere every step return
        is 0, so no anchor is matched) unless the policy reads them or invalid steps are penalised. With
        `replay_env` set and envs that render nothing, those frames are rendered afterwards by replay."""
        cfg = super().rollout_config(envs, seed, progress, policy)
        if not self.needs_pixels:
            return cfg
        scored = policy is not None and not policy.uses_pixels and self.cfg.invalid_penalty == 0
        return self.with_frames(cfg, envs, "scored" if scored else "all",
                                "gigpo.anchor=robust compares screenshots, but the env gives elements-only "
                                "observations; make it with render_scale > 0 (observation_mode='full'), set "
                                "the algorithm's replay_env (SimDroid), or use gigpo.anchor=exact")

    def advantages(self, groups: list[Group]) -> tuple[list[tuple[Step, float]], dict[str, float]]:
        cfg = self.cfg
        rows, found = gigpo_advantages(groups, cfg)
        steps = [(s, a_e + cfg.step_weight * a_s) for s, a_e, a_s in rows]
        with_signal = len({s.group_id for s, _ in steps})
        step_adv = np.array([a_s for _, _, a_s in rows])
        n_steps = sum(len(t.steps) for g in groups for t in g.trajectories if not t.errored)
        return steps, {
            **signal_metrics(groups, steps, with_signal),
            "gigpo/anchored_groups": found.groups,
            "gigpo/anchor_groups": found.shared,
            "gigpo/anchor_groups_across_rollouts": found.across,
            "gigpo/steps_in_anchor_groups": found.shared_steps,
            "gigpo/steps_in_anchor_groups_frac": found.shared_steps / max(1, n_steps),
            "gigpo/step_signal_steps": int(np.count_nonzero(step_adv)),
            "gigpo/step_adv_std": float(step_adv.std()) if step_adv.size else math.nan,
            "gigpo/episode_adv_std": float(np.std([a for _, a, _ in rows])) if rows else math.nan,
            "gigpo/anchor_same_key_rate": float(np.mean(found.key_pairs)) if found.key_pairs else math.nan,
            "gigpo/anchor_s": found.seconds,
        }
