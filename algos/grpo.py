"""Multi-turn GRPO: group-relative outcome advantages, clipped importance ratios, an optional KL to the start.

Each iteration rolls the policy out G times per training instance (algos/loop.py). Per group, trajectory i
gets the outcome reward R_i = score_i - invalid_penalty * (its invalid steps); errored trajectories are left
out of the statistics and the loss. Its advantage A_i = (R_i - mean_group) / (std_group + eps) (population
std; `scale_std=False` keeps R_i - mean_group, Dr. GRPO's choice) is given to every step's response of
trajectory i. A group whose rewards are all equal (all successes, all failures) has no signal and adds no
steps to the loss.

The loss per step (algos/pg.py: one response is the unit, its log-prob the sum over its parts or tokens) is
the clipped surrogate with the behaviour log-prob recorded at act time, plus beta * k3 KL to a frozen copy
of the starting policy when beta > 0; the mean over the steps of a minibatch, `epochs` passes per iteration,
global grad-norm clipping.
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import torch

from algos.buffer import Group, Step
from algos.fields import setting
from algos.loop import Algorithm, LoopConfig, RunContext
from algos.pg import (
    adam,
    approx_kl,
    as_tensor,
    clipped_policy_loss,
    frozen_copy,
    k3_kl,
    load_frozen,
    mean,
    minibatches,
    optimizer_step,
    score_in_chunks,
    trajectory_return,
)
from algos.policies.base import Policy

REFERENCE = "reference"  # checkpoint entry of the frozen KL reference (only when beta > 0)


@dataclasses.dataclass
class GRPOConfig(LoopConfig):
    SECTION: ClassVar[str] = "grpo"
    lr: float = setting(1e-4, gt=0)  # Adam learning rate (a fresh optimizer each iteration)
    epochs: int = setting(2, ge=1)  # passes over the iteration's steps
    minibatch_size: int = setting(256, ge=1)  # steps per gradient step
    clip_low: float = setting(0.2, ge=0)  # ratio clipped below at 1 - clip_low
    clip_high: float = setting(0.2, ge=0)  # ... and above at 1 + clip_high (DAPO's clip-higher uses 0.28)
    scale_std: bool = True  # divide by the group's reward std (False: Dr. GRPO's unscaled advantages)
    eps: float = setting(1e-4, ge=0)  # added to the std
    invalid_penalty: float = setting(0.0, ge=0)  # subtracted from R_i per invalid step (unparseable or
    # rejected action)
    beta: float = setting(0.0, ge=0)  # weight of the k3 KL to the starting policy (0: no reference copy is
    # kept)
    max_grad_norm: float = setting(1.0, ge=0)  # global grad-norm clip (0: off)


def group_advantages(rewards: list[float], scale_std: bool = True, eps: float = 1e-4) -> list[float]:
    """A_i = (R_i - mean) / (std + eps) (population std) or R_i - mean; all zeros when the rewards do not
    vary (fewer than two trajectories, or all equal)."""
    r = np.asarray(rewards, dtype=np.float64)
    if len(r) < 2 or np.ptp(r) <= 1e-12:
        return [0.0] * len(r)
    a = r - r.mean()
    if scale_std:
        a = a / (r.std() + eps)
    return a.tolist()


def grpo_advantages(groups: list[Group], scale_std: bool = True, eps: float = 1e-4,
                    invalid_penalty: float = 0.0) -> tuple[dict[str, float], int]:
    """{traj_id: advantage} for the non-errored trajectories of groups with signal (rewards that vary), and
    the number of such groups. Errored trajectories take no part in the group's statistics."""
    adv: dict[str, float] = {}
    with_signal = 0
    for g in groups:
        trajs = [t for t in g.trajectories if not t.errored and not math.isnan(t.score)]
        rewards = [trajectory_return(t, invalid_penalty) for t in trajs]
        a = group_advantages(rewards, scale_std, eps)
        if any(x != 0.0 for x in a):
            with_signal += 1
            adv.update({t.traj_id: x for t, x in zip(trajs, a, strict=True)})
    return adv, with_signal


def step_advantages(groups: list[Group], adv_of: dict[str, float]) -> list[tuple[Step, float]]:
    """(step, its trajectory's advantage) for every step of the trajectories in `adv_of`, in buffer order."""
    return [(s, adv_of[t.traj_id]) for g in groups for t in g.trajectories if t.traj_id in adv_of
            for s in t.steps]


def signal_metrics(groups: list[Group], steps: list[tuple[Step, float]],
                   with_signal: int) -> dict[str, float]:
    """How much of an iteration the loss learns from: groups with signal, steps trained on, and the steps
    whose advantage (hence gradient) is not zero, also as a share of all non-errored steps."""
    n_steps = sum(len(t.steps) for g in groups for t in g.trajectories if not t.errored)
    nonzero = sum(a != 0.0 for _, a in steps)
    return {"train/signal_groups_frac": with_signal / max(1, len(groups)),
            "train/pg_steps": len(steps),
            "train/nonzero_adv_steps": nonzero,  # steps whose gradient is not zero
            "train/nonzero_adv_frac": nonzero / max(1, n_steps)}


class GRPO(Algorithm):
    """Group-relative policy optimisation over whole multi-turn trajectories (see the module docstring)."""

    name = "grpo"
    cfg: GRPOConfig

    def __init__(self, cfg: GRPOConfig, context: RunContext | None = None):
        super().__init__(cfg, context)
        self.reference: Policy | None = None
        self._reference_path: Path | None = None  # set on resume; loaded at the next update, on its device

    def advantages(self, groups: list[Group]) -> tuple[list[tuple[Step, float]], dict[str, float]]:
        """The (step, advantage) pairs the loss trains on, in buffer order, and metrics about them."""
        cfg = self.cfg
        adv_of, with_signal = grpo_advantages(groups, cfg.scale_std, cfg.eps, cfg.invalid_penalty)
        steps = step_advantages(groups, adv_of)
        return steps, signal_metrics(groups, steps, with_signal)

    def update(self, policy: Policy, groups: list[Group], iteration: int, seed: int) -> dict[str, float]:
        cfg = self.cfg
        steps, metrics = self.advantages(groups)
        if cfg.beta > 0 and self.reference is None:
            if self._reference_path is not None:  # resumed: the reference saved with the checkpoint
                self.reference = load_frozen(self._reference_path, policy.device)
            else:
                self.reference = frozen_copy(policy)  # the policy before its first GRPO update
        if not steps:
            return metrics
        device = policy.device
        inputs = [s.policy_input() for s, _ in steps]
        responses = [s.response for s, _ in steps]
        old_lp = as_tensor([s.logprob for s, _ in steps], device)
        adv = as_tensor([a for _, a in steps], device)
        ref_lp = score_in_chunks(self.reference, inputs, responses)[0].to(device) if cfg.beta > 0 else None

        opt = adam(policy, cfg.lr)
        rng = np.random.default_rng(seed)
        keys = ("loss", "pg", "kl", "clip", "approx_kl", "ratio", "gn")
        log: dict[str, list[float]] = {k: [] for k in keys}
        extra_log: dict[str, list[float]] = {}  # metrics of the subclass's extra term, per gradient step
        for _ in range(cfg.epochs):
            for idx in minibatches(len(steps), cfg.minibatch_size, rng):
                lp = policy.evaluate_actions([inputs[i] for i in idx], [responses[i] for i in idx]).logprob
                it = torch.as_tensor(idx, device=device)
                pg, ratio, clipped = clipped_policy_loss(lp, old_lp[it], adv[it], cfg.clip_low, cfg.clip_high)
                loss = pg.mean()
                if ref_lp is not None:
                    kl = k3_kl(lp, ref_lp[it]).mean()
                    loss = loss + cfg.beta * kl
                    log["kl"].append(kl.item())
                extra, extra_metrics = self.extra_loss(policy)
                if extra is not None:
                    loss = loss + extra
                for k, v in extra_metrics.items():
                    extra_log.setdefault(k, []).append(v)
                log["gn"].append(optimizer_step(opt, loss, cfg.max_grad_norm))
                log["loss"].append(loss.item())
                log["pg"].append(pg.mean().item())
                log["clip"].append(clipped.float().mean().item())
                log["approx_kl"].append(approx_kl(lp.detach(), old_lp[it]).mean().item())
                log["ratio"].append(ratio.detach().mean().item())
        metrics.update({
            "losses/total": mean(log["loss"]),
            "losses/policy": mean(log["pg"]),
            "losses/kl_ref": mean(log["kl"]),
            "charts/clip_frac": mean(log["clip"]),
            "charts/approx_kl": mean(log["approx_kl"]),
            "charts/ratio_mean": mean(log["ratio"]),
            "charts/grad_norm": mean(log["gn"]),
            "charts/adv_abs": float(adv.abs().mean()),
            **{k: mean(v) for k, v in extra_log.items()},
        })
        return metrics

    def extra_loss(self, policy: Policy) -> tuple[torch.Tensor | None, dict[str, float]]:
        """A differentiable term a subclass adds to every minibatch's loss, and metrics of it (averaged over
        the update's gradient steps); GRPO adds none. Called once per gradient step, after GRPO's own terms
        are computed."""
        return None, {}

    def state(self) -> dict[str, Any]:
        return {REFERENCE: self.reference} if self.reference is not None else {}

    def load_state(self, path: Path) -> None:
        self.reference = None
        self._reference_path = path / REFERENCE if (path / REFERENCE).exists() else None
