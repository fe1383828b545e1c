"""PPO over turns: a value head, GAE across the steps of each trajectory, clipped policy and value losses.

Each iteration rolls the policy out G times per training instance (algos/loop.py; PPO ignores the grouping).
Every non-errored trajectory is one episode whose reward is paid at its last step (the verifier score when
the agent said status, 0 when the step budget ran out, which AndroidWorld scores as a terminal 0), minus an
optional penalty on each invalid step. GAE(gamma, lambda) over the turns gives each step's advantage and
return, with the value after the last step 0. The old log-probs are the behaviour log-probs recorded at act
time; the old values those recorded at act time too (or computed once before the update when the policy did
not record them).

Loss per step (algos/pg.py: one response is the unit, its log-prob the sum over its parts or tokens):
clipped surrogate + vf_coef * clipped value loss - ent_coef * entropy, the mean over the steps of a
minibatch, `epochs` passes per iteration, global grad-norm clipping. The entropy is each policy's entropy
along the response's own path (small policy: type head + the heads its type uses; HF policy: the sum of its
tokens' full-vocabulary entropies), computed only when ent_coef > 0.

Critic warm-up (`critic_warmup`, as verl's option of that name): the first iterations fit only the value head,
on the policy's frozen features, to each step's return-to-go; the policy does not change. Starting from an
RFT checkpoint, the value head is new (it says 0 everywhere): without a warm-up, the first updates' advantages
are the raw returns, normalised over the iteration, so every step of a failed episode of a task the policy
rarely solves is pushed down as hard as a real mistake, and the policy moves far (approx. KL 0.14-0.22 an
iteration in the default comparison) while the value head's explained variance climbs only from 0 to 0.4
over five iterations. One warm-up iteration gives it ~0.8 at once, and the next updates move the policy
~4x less (KL ~0.04).
"""

from __future__ import annotations

import dataclasses
import math
from typing import ClassVar

import numpy as np
import torch

from algos.buffer import Group, Step
from algos.fields import setting
from algos.loop import Algorithm, LoopConfig
from algos.pg import (
    adam,
    approx_kl,
    as_tensor,
    clipped_policy_loss,
    clipped_value_loss,
    gae,
    mean,
    minibatches,
    optimizer_step,
    score_in_chunks,
    step_rewards,
)
from algos.policies.base import Policy


@dataclasses.dataclass
class PPOConfig(LoopConfig):
    SECTION: ClassVar[str] = "ppo"
    lr: float = setting(1e-4, gt=0)  # Adam learning rate (a fresh optimizer each iteration)
    epochs: int = setting(2, ge=1)  # passes over the iteration's steps
    minibatch_size: int = setting(256, ge=1)  # steps per gradient step
    gamma: float = setting(1.0, ge=0, le=1)  # discount per turn (1: the score counts the same however late it
    # comes)
    lam: float = setting(0.95, ge=0, le=1)  # GAE lambda
    clip_low: float = setting(0.2, ge=0)  # policy ratio clipped below at 1 - clip_low
    clip_high: float = setting(0.2, ge=0)  # ... and above at 1 + clip_high
    norm_adv: bool = True  # normalise advantages over the iteration's steps (mean 0, std 1)
    vf_coef: float = setting(0.5, ge=0)  # weight of the value loss
    vf_clip: float = setting(0.2, ge=0)  # value clipping around the old value (0: off)
    ent_coef: float = setting(0.0, ge=0)  # entropy bonus weight (0: entropies are not computed)
    invalid_penalty: float = setting(0.0, ge=0)  # subtracted from the reward of each invalid step
    max_grad_norm: float = setting(1.0, ge=0)  # global grad-norm clip (0: off)
    critic_warmup: int = setting(0, ge=0)  # how many first iterations fit only the value head (the policy
    # does not change)
    warmup_epochs: int = setting(30, ge=1)  # passes of a warm-up iteration over its steps (cheap: the trunk
    # is frozen)
    warmup_lr: float = setting(1e-3, gt=0)  # Adam learning rate of the warm-up


ADV_ZERO = 1e-6  # |GAE advantage| at or below this counts as no signal (the diagnostics' non-zero steps)


def ppo_targets(groups: list[Group], values: dict[int, float], gamma: float, lam: float,
                invalid_penalty: float = 0.0) -> tuple[list[Step], np.ndarray, np.ndarray]:
    """The steps of every non-errored trajectory, in order, with their GAE advantages and returns.
    `values[id(step)]` is each step's old value estimate."""
    steps: list[Step] = []
    advs, rets = [], []
    for g in groups:
        for t in g.trajectories:
            if t.errored or math.isnan(t.score) or not t.steps:
                continue
            a, r = gae(step_rewards(t, invalid_penalty), [values[id(s)] for s in t.steps], gamma, lam)
            steps += t.steps
            advs.append(a)
            rets.append(r)
    cat = lambda xs: np.concatenate(xs) if xs else np.zeros(0)  # noqa: E731
    return steps, cat(advs), cat(rets)


def warm_up_critic(policy: Policy, groups: list[Group], inputs_of: dict[int, object], cfg: PPOConfig,
                   seed: int) -> dict[str, float]:
    """A critic warm-up iteration (verl's `critic_warmup`): the value head alone regresses each step's
    discounted return-to-go on the policy's frozen features (`value_features`), `warmup_epochs` passes; the
    policy's weights do not move. Fitting returns-to-go rather than GAE targets: the untrained head's values
    are no baseline to bootstrap from."""
    zero = {id(s): 0.0 for g in groups for t in g.trajectories for s in t.steps}
    steps, _, ret_np = ppo_targets(groups, zero, cfg.gamma, 1.0, cfg.invalid_penalty)
    feats = policy.value_features([inputs_of[id(s)] for s in steps])
    ret = as_tensor(ret_np, feats.device)
    params = policy.value_head_parameters()
    opt = torch.optim.Adam(params, lr=cfg.warmup_lr)
    rng = np.random.default_rng(seed)
    with torch.no_grad():
        before = float(((policy.value_from_features(feats) - ret) ** 2).mean())
    for _ in range(cfg.warmup_epochs):
        for idx in minibatches(len(steps), cfg.minibatch_size, rng):
            it = torch.as_tensor(idx, device=feats.device)
            loss = ((policy.value_from_features(feats[it]) - ret[it]) ** 2).mean()
            optimizer_step(opt, loss, cfg.max_grad_norm)
    with torch.no_grad():
        v = policy.value_from_features(feats).cpu().numpy()
    r = ret_np
    explained = float(1.0 - np.var(r - v) / np.var(r)) if np.var(r) > 0 else math.nan
    return {"train/pg_steps": 0, "train/critic_warmup_steps": len(steps), "losses/value_before": before,
            "losses/value": float(np.mean((v - r) ** 2)), "charts/explained_variance": explained}


class PPO(Algorithm):
    """Proximal policy optimisation with a value head over multi-turn episodes (see the module docstring)."""

    name = "ppo"
    cfg: PPOConfig

    def update(self, policy: Policy, groups: list[Group], iteration: int, seed: int) -> dict[str, float]:
        cfg = self.cfg
        if not policy.has_value:
            raise ValueError(f"PPO needs a policy with a value head; {type(policy).__name__} has none")
        device = policy.device
        all_steps = [s for g in groups for t in g.trajectories if not t.errored for s in t.steps]
        if not all_steps:
            return {"train/pg_steps": 0}
        inputs_of = {id(s): s.policy_input() for s in all_steps}
        if iteration <= cfg.critic_warmup:  # iterations count from 1; old values are not needed
            return warm_up_critic(policy, groups, inputs_of, cfg, seed)
        if all(s.value is not None for s in all_steps):  # recorded at act time, under the same weights
            values = {id(s): float(s.value) for s in all_steps}
        else:
            _, v = score_in_chunks(policy, [inputs_of[id(s)] for s in all_steps],
                                   [s.response for s in all_steps], values=True)
            values = {id(s): x for s, x in zip(all_steps, v.tolist(), strict=True)}
        steps, adv_np, ret_np = ppo_targets(groups, values, cfg.gamma, cfg.lam, cfg.invalid_penalty)
        inputs = [inputs_of[id(s)] for s in steps]
        responses = [s.response for s in steps]
        old_lp = as_tensor([s.logprob for s in steps], device)
        old_v = as_tensor([values[id(s)] for s in steps], device)
        ret = as_tensor(ret_np, device)
        adv = as_tensor(adv_np, device)
        nonzero = int((adv.abs() > ADV_ZERO).sum())  # before normalisation (which shifts every step)
        metrics = {"train/pg_steps": len(steps), "charts/adv_abs": float(adv.abs().mean()),
                   "train/nonzero_adv_steps": nonzero,
                   "train/nonzero_adv_frac": nonzero / max(1, len(steps)),
                   "charts/return_mean": float(ret.mean()), "charts/value_mean": float(old_v.mean())}
        if cfg.norm_adv and len(steps) > 1:
            adv = (adv - adv.mean()) / (adv.std() + 1e-8)

        opt = adam(policy, cfg.lr)
        rng = np.random.default_rng(seed)
        keys = ("loss", "pg", "vf", "ent", "clip", "approx_kl", "gn")
        log: dict[str, list[float]] = {k: [] for k in keys}
        for _ in range(cfg.epochs):
            for idx in minibatches(len(steps), cfg.minibatch_size, rng):
                ev = policy.evaluate_actions([inputs[i] for i in idx], [responses[i] for i in idx],
                                             values=True, entropy=cfg.ent_coef > 0)
                it = torch.as_tensor(idx, device=device)
                pg, _, clipped = clipped_policy_loss(ev.logprob, old_lp[it], adv[it], cfg.clip_low,
                                                     cfg.clip_high)
                vf = clipped_value_loss(ev.value, old_v[it], ret[it], cfg.vf_clip)
                loss = pg.mean() + cfg.vf_coef * vf.mean()
                if ev.entropy is not None:
                    loss = loss - cfg.ent_coef * ev.entropy.mean()
                    log["ent"].append(ev.entropy.mean().item())
                log["gn"].append(optimizer_step(opt, loss, cfg.max_grad_norm))
                log["loss"].append(loss.item())
                log["pg"].append(pg.mean().item())
                log["vf"].append(vf.mean().item())
                log["clip"].append(clipped.float().mean().item())
                log["approx_kl"].append(approx_kl(ev.logprob.detach(), old_lp[it]).mean().item())
        v_np, r_np = old_v.cpu().numpy(), ret_np
        explained = 1.0 - np.var(r_np - v_np) / np.var(r_np) if np.var(r_np) > 0 else float("nan")
        metrics.update({
            "losses/total": mean(log["loss"]),
            "losses/policy": mean(log["pg"]),
            "losses/value": mean(log["vf"]),
            "losses/entropy": mean(log["ent"]),
            "charts/clip_frac": mean(log["clip"]),
            "charts/approx_kl": mean(log["approx_kl"]),
            "charts/grad_norm": mean(log["gn"]),
            "charts/explained_variance": float(explained),
        })
        return metrics
