"""VinePPO (Kazemnejad et al. 2024, arXiv 2410.01679): PPO whose step values are Monte Carlo estimates from
the environment's own saved states, with no value network.

Each iteration rolls the policy out G times per training instance (algos/loop.py). For every non-errored
trajectory s_0, a_0, ..., s_{L-1}, a_{L-1} the update estimates the value of its states:

- V(s_t), 1 <= t < L: replay the trajectory's actions from its reset (one replay snapshots every state it
  needs, `algos.branch.Branch.snap_at`), then from each state's snapshot let the current policy finish K
  times; V(s_t) is the mean discounted return of those K episodes (score at their end; 0 when the step
  budget ran out, as AndroidWorld scores it). Only the first `max_states` states are estimated, as
  VinePPO's `max_step_for_value_estimation` does; a state the replay did not reach (another screen) is
  left unestimated too.
- V(s_0): by default the mean discounted return of the group's other rollouts, which are G-1 Monte Carlo
  episodes of the same instance from its start, at no cost (`group_baseline`); otherwise K branches too.
- V(s_L) = 0: the episode ended (VinePPO: the value of the terminal state is 0).

A state without an estimate takes the trajectory's own return from it, V(s_t) = r_t + gamma V(s_{t+1}) (filled
backwards, as VinePPO fills the states past its cap), so its step's advantage is 0. Each step's advantage is
A_t = r_t + gamma V(s_{t+1}) - V(s_t), the reward r_t being the score at the last step (0 elsewhere).

The update is PPO's clipped surrogate with those advantages (raw by default; normalised over the iteration
with `norm_adv`, as our PPO does), behaviour log-probs recorded at act time, `epochs` passes of minibatches,
global grad-norm clipping. Branch and replay steps are env steps: they go in `train/update_env_steps`, which
the loop counts against the budget, so a comparison at equal env steps charges VinePPO for its rollouts;
the update estimates only as many states as the budget has steps left for (`estimate_values`), so a run
ends near its budget instead of overshooting it by an iteration's branching.
"""

from __future__ import annotations

import dataclasses
import math
import time
from typing import Any, ClassVar

import numpy as np
import torch

from algos.branch import Branch, BranchResult, play, taken
from algos.buffer import Group, Trajectory
from algos.fields import setting
from algos.loop import Algorithm, LoopConfig
from algos.pg import (
    adam,
    approx_kl,
    as_tensor,
    clipped_policy_loss,
    discounted_returns,
    mean,
    minibatches,
    optimizer_step,
    step_rewards,
)
from algos.policies.base import Policy
from voyager_gym.env import Snapshot

ADV_ZERO = 1e-6  # |advantage| at or below this counts as no signal (the diagnostics' non-zero steps)


@dataclasses.dataclass
class VineConfig(LoopConfig):
    SECTION: ClassVar[str] = "vine"
    k: int = setting(2, ge=1)  # Monte Carlo rollouts of the current policy from each estimated state (VinePPO
    # used 9 on reasoning chains; 2 keeps the branch steps within a few times the rollout's on 2 CPU cores)
    max_states: int = setting(4, ge=0)  # states estimated per trajectory, its first ones after the start (0:
    # all)
    group_baseline: bool = True  # V(s_0) from the group's other rollouts (free); false: K branches from it
    gamma: float = setting(1.0, ge=0, le=1)  # discount per turn (VinePPO: 1)
    lr: float = setting(1e-4, gt=0)  # Adam learning rate (a fresh optimizer each iteration)
    epochs: int = setting(2, ge=1)  # passes over the iteration's steps
    minibatch_size: int = setting(256, ge=1)  # steps per gradient step
    clip_low: float = setting(0.2, ge=0)  # policy ratio clipped below at 1 - clip_low
    clip_high: float = setting(0.2, ge=0)  # ... and above at 1 + clip_high
    norm_adv: bool = False  # normalise advantages over the iteration's steps (mean 0, std 1), as ppo does
    # (off: most MC advantages are exactly 0, and whitening scaled the few others ~10x; on a 6- and a 12-task
    # suite its greedy Pass@1 then fell in 2 runs of 3 where the raw advantages held it)
    max_grad_norm: float = setting(1.0, ge=0)  # global grad-norm clip (0: off)


def vine_advantages(rewards: list[float], values: list[float | None],
                    gamma: float) -> tuple[np.ndarray, np.ndarray]:
    """Advantages A_t = r_t + gamma V(s_{t+1}) - V(s_t) of one trajectory, from `values` V(s_0..s_{L-1})
    (None: not estimated) with V(s_L) = 0. A missing V(s_t) is filled backwards with r_t + gamma V(s_{t+1})
    (the trajectory's own return from s_t), so its step gets advantage 0. Returns (advantages, filled V)."""
    if len(values) != len(rewards):
        raise ValueError(f"{len(values)} values for {len(rewards)} rewards; expected one per step")
    v = np.zeros(len(rewards) + 1)
    for t in reversed(range(len(rewards))):
        v[t] = rewards[t] + gamma * v[t + 1] if values[t] is None else values[t]
    adv = np.asarray(rewards, dtype=np.float64) + gamma * v[1:] - v[:-1]
    return adv, v[:-1]


def mc_value(results: list[BranchResult], gamma: float) -> float | None:
    """The mean discounted return of branch episodes (score discounted by the steps they took to earn it);
    None when all errored."""
    rets = [gamma ** (r.steps - 1) * r.score for r in results if not math.isnan(r.score)]
    return float(np.mean(rets)) if rets else None


def estimated_states(length: int, max_states: int, with_start: bool) -> list[int]:
    """The states of a trajectory of `length` steps whose value is branched for: s_1.. (and s_0 first when
    `with_start`), the first `max_states` of them (0: all)."""
    states = ([0] if with_start else []) + list(range(1, length))
    return states[:max_states] if max_states else states


def estimate_values(policy: Policy, envs: Any, trajs: list[Trajectory], cfg: VineConfig,
                    budget: int | None = None, seed: int = 0
                    ) -> tuple[dict[str, list[float | None]], dict[str, float]]:
    """V(s_t) of the `estimated_states` of each trajectory by K branches of `policy` on `envs` (SimDroid):
    one replay per trajectory snapshots its states, then K continuations from each snapshot the replay
    reached (its screen is the trajectory's), in rounds: every trajectory's first planned state, then its
    second, ... With an env-step `budget`, a round takes its states in a seeded random order while their
    predicted cost (K times the steps the trajectory itself took from the state) fits what is left, and
    later rounds only what is still left; the others stay unestimated (advantage 0). Returns {traj_id:
    [V(s_0), ..., V(s_{L-1})], None where not estimated} and counts (states, unreached, skipped for the
    budget, mc rollouts, replay and branch env steps)."""
    plan = {t.traj_id: estimated_states(len(t.steps), cfg.max_states, not cfg.group_baseline) for t in trajs}
    todo = [t for t in trajs if plan[t.traj_id]]
    planned = sum(len(plan[t.traj_id]) for t in todo)
    skipped = 0
    if budget is not None and budget < sum(plan[t.traj_id][-1] for t in todo):
        todo, skipped = [], planned  # the budget cannot even pay for the replays
    replays = [Branch({"task": t.task, "params": dict(t.params)}, seed=t.env_seed, policy=False,
                      forced=tuple(taken(s) for s in t.steps[: plan[t.traj_id][-1]]),
                      snap_at=tuple(plan[t.traj_id])) for t in todo]
    reached = play(policy, envs, replays)
    spent = replay_steps = sum(r.steps for r in reached)
    rounds: list[list[tuple[Trajectory, int, Snapshot]]] = [[] for _ in range(max(map(len, plan.values()),
                                                                                    default=0))]
    for t, r in zip(todo, reached, strict=True):
        for j, (i, snap) in enumerate(zip(plan[t.traj_id], r.snapshots, strict=False)):
            if snap.screen_key != t.steps[i].screen_key:
                break  # the replay left the trajectory: later states are not its states either
            rounds[j].append((t, i, snap))
    values: dict[str, list[float | None]] = {t.traj_id: [None] * len(t.steps) for t in trajs}
    rng = np.random.default_rng(seed)
    states = mc = 0
    for rnd in rounds:
        if budget is not None:
            rnd = [rnd[j] for j in rng.permutation(len(rnd))]
            predicted = np.cumsum([cfg.k * (len(t.steps) - i) for t, i, _ in rnd])
            fits = int(np.searchsorted(predicted, budget - spent, side="right"))  # the prefix that fits
            skipped += len(rnd) - fits
            rnd = rnd[:fits]
        branches = [Branch(snap, history=tuple(t.steps[i].history), screens=tuple(s.elements for s in
                                                                                   t.steps[:i]))
                    for t, i, snap in rnd for _ in range(cfg.k)]
        ran = play(policy, envs, branches)
        for j, (t, i, _) in enumerate(rnd):
            values[t.traj_id][i] = mc_value(ran[j * cfg.k : (j + 1) * cfg.k], cfg.gamma)
        states, mc, spent = states + len(rnd), mc + len(branches), spent + sum(r.steps for r in ran)
    return values, {"vine/states": states, "vine/unreached_states": planned - states - skipped,
                    "vine/budget_skipped_states": skipped, "vine/mc_rollouts": mc,
                    "vine/replay_env_steps": replay_steps, "vine/branch_env_steps": spent}


def group_start_values(groups: list[Group], gamma: float) -> dict[str, float | None]:
    """V(s_0) of each non-errored trajectory: the mean discounted return of its group's other non-errored
    rollouts (None when it has none)."""
    out: dict[str, float | None] = {}
    for g in groups:
        trajs = [t for t in g.trajectories if not t.errored and not math.isnan(t.score)]
        rets = [float(discounted_returns(step_rewards(t), gamma)[:1].sum()) for t in trajs]
        for i, t in enumerate(trajs):
            others = rets[:i] + rets[i + 1 :]
            out[t.traj_id] = float(np.mean(others)) if others else None
    return out


class Vine(Algorithm):
    """VinePPO: PPO with Monte Carlo step values from snapshots (see the module docstring)."""

    name = "vine"
    cfg: VineConfig

    def update(self, policy: Policy, groups: list[Group], iteration: int, seed: int) -> dict[str, float]:
        cfg = self.cfg
        if self.envs is None:
            raise ValueError("vine branches episodes on the loop's envs; none are bound (train_loop sets "
                             "algo.envs)")
        trajs = [t for g in groups for t in g.trajectories
                 if not t.errored and not math.isnan(t.score) and t.steps]
        t0 = time.perf_counter()
        values, metrics = estimate_values(policy, self.envs, trajs, cfg, self.env_steps_left, seed)
        metrics["vine/branch_s"] = time.perf_counter() - t0
        metrics["train/update_env_steps"] = metrics["vine/branch_env_steps"]
        if cfg.group_baseline:
            for tid, v0 in group_start_values(groups, cfg.gamma).items():
                if tid in values:
                    values[tid][0] = v0
        steps, advs, vals = [], [], []
        for t in trajs:
            a, v = vine_advantages(step_rewards(t), values[t.traj_id], cfg.gamma)
            steps += t.steps
            advs.append(a)
            vals.append(v)
        if not steps:
            return {**metrics, "train/pg_steps": 0}
        adv_np, v_np = np.concatenate(advs), np.concatenate(vals)
        estimated = [x for t in trajs for x in values[t.traj_id] if x is not None]
        nonzero = int((np.abs(adv_np) > ADV_ZERO).sum())
        metrics.update({"train/pg_steps": len(steps), "train/nonzero_adv_steps": nonzero,
                        "train/nonzero_adv_frac": nonzero / len(steps),
                        "charts/adv_abs": float(np.abs(adv_np).mean()),
                        "vine/value_mean": mean(estimated), "vine/value_mean_filled": float(v_np.mean()),
                        "vine/adv_mean": float(adv_np.mean()), "vine/adv_std": float(adv_np.std())})
        device = policy.device
        inputs = [s.policy_input() for s in steps]
        responses = [s.response for s in steps]
        old_lp = as_tensor([s.logprob for s in steps], device)
        adv = as_tensor(adv_np, device)
        if cfg.norm_adv and len(steps) > 1:
            adv = (adv - adv.mean()) / (adv.std() + 1e-8)

        opt = adam(policy, cfg.lr)
        rng = np.random.default_rng(seed)
        log: dict[str, list[float]] = {k: [] for k in ("pg", "clip", "approx_kl", "gn")}
        for _ in range(cfg.epochs):
            for idx in minibatches(len(steps), cfg.minibatch_size, rng):
                lp = policy.evaluate_actions([inputs[i] for i in idx], [responses[i] for i in idx]).logprob
                it = torch.as_tensor(idx, device=device)
                pg, _, clipped = clipped_policy_loss(lp, old_lp[it], adv[it], cfg.clip_low, cfg.clip_high)
                log["gn"].append(optimizer_step(opt, pg.mean(), cfg.max_grad_norm))
                log["pg"].append(pg.mean().item())
                log["clip"].append(clipped.float().mean().item())
                log["approx_kl"].append(approx_kl(lp.detach(), old_lp[it]).mean().item())
        metrics.update({"losses/policy": mean(log["pg"]), "charts/clip_frac": mean(log["clip"]),
                        "charts/approx_kl": mean(log["approx_kl"]), "charts/grad_norm": mean(log["gn"])})
        return metrics
