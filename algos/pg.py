"""Pieces GRPO and PPO share: the clipped losses as pure functions of tensors, GAE over turns, minibatches,
the optimizer step, and a frozen reference copy of a policy.

Unit of the loss: one *step* (one response). Its log-prob is the policy's log-prob of the whole response: for
the small policy the sum over the structured action's parts, for the HF policy the sum over its tokens (plus
end-of-turn). Importance ratios, clipping and KL are taken per step on these sums, and losses are the mean
over the steps of a minibatch (a "step-mean", the multi-turn analogue of DAPO's token-mean: every step weighs
the same, whatever its trajectory's length or its response's token count).
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import torch

from algos.buffer import Trajectory
from algos.optim import MasterWeightAdamW, has_half
from algos.policies.base import Policy, clip_used_grads
from algos.policies.registry import load_policy
from algos.prompt import PolicyInput


# -- returns and advantages -------------------------------------------------------------------------------
def step_rewards(traj: Trajectory, invalid_penalty: float = 0.0) -> list[float]:
    """Per-step rewards of a trajectory: the env's reward (the verifier score at the terminal step when the
    agent said status, 0 otherwise), minus `invalid_penalty` on each invalid step."""
    return [s.reward - (invalid_penalty if not s.valid else 0.0) for s in traj.steps]


def trajectory_return(traj: Trajectory, invalid_penalty: float = 0.0) -> float:
    """The trajectory's score minus `invalid_penalty` per invalid step (GRPO's outcome reward)."""
    return float(traj.score) - invalid_penalty * sum(not s.valid for s in traj.steps)


def discounted_returns(rewards: list[float] | np.ndarray, gamma: float) -> np.ndarray:
    """R_t = r_t + gamma * R_{t+1} over one trajectory (0 after its last step: the episode ended)."""
    out = np.zeros(len(rewards))
    running = 0.0
    for t in reversed(range(len(rewards))):
        running = rewards[t] + gamma * running
        out[t] = running
    return out


def gae(rewards: list[float] | np.ndarray, values: list[float] | np.ndarray, gamma: float,
        lam: float) -> tuple[np.ndarray, np.ndarray]:
    """Generalised advantage estimation over the turns of one finished trajectory.

    The value after the last step is 0: the episode ended, either by the agent's status (terminal) or by
    the step budget, which AndroidWorld scores as a terminal 0, so there is nothing to bootstrap from.
    Returns (advantages, returns = advantages + values), float64 arrays of the trajectory's length."""
    r = np.asarray(rewards, dtype=np.float64)
    v = np.asarray(values, dtype=np.float64)
    if r.shape != v.shape or r.ndim != 1:
        raise ValueError(f"rewards {r.shape} and values {v.shape} must be 1-D of the same length")
    adv = np.zeros_like(r)
    last = 0.0
    for t in reversed(range(len(r))):
        next_v = v[t + 1] if t + 1 < len(r) else 0.0
        delta = r[t] + gamma * next_v - v[t]
        last = delta + gamma * lam * last
        adv[t] = last
    return adv, adv + v


# -- losses (pure functions of tensors, one entry per step) --------------------------------------------------
def clipped_policy_loss(logp: torch.Tensor, old_logp: torch.Tensor, adv: torch.Tensor, clip_low: float,
                        clip_high: float) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """PPO's clipped surrogate per step: -min(r A, clip(r, 1 - clip_low, 1 + clip_high) A), r = exp(logp -
    old_logp). Returns (loss [N], ratio [N], clipped [N] bool: steps whose gradient the clip removed)."""
    ratio = torch.exp(logp - old_logp)
    clipped_ratio = torch.clamp(ratio, 1.0 - clip_low, 1.0 + clip_high)
    loss = -torch.minimum(ratio * adv, clipped_ratio * adv)
    clipped = ((adv > 0) & (ratio > 1.0 + clip_high)) | ((adv < 0) & (ratio < 1.0 - clip_low))
    return loss, ratio, clipped


def k3_kl(logp: torch.Tensor, ref_logp: torch.Tensor) -> torch.Tensor:
    """The k3 estimator of KL(policy || reference) per sample drawn from the policy (as in the GRPO paper):
    exp(ref - logp) - (ref - logp) - 1, always >= 0 and unbiased."""
    d = ref_logp - logp
    return torch.exp(d) - d - 1.0


def approx_kl(logp: torch.Tensor, old_logp: torch.Tensor) -> torch.Tensor:
    """KL(old || new) estimated on the behaviour samples, (r - 1) - log r (the k3 form; a diagnostic)."""
    log_r = logp - old_logp
    return (torch.exp(log_r) - 1.0) - log_r


def clipped_value_loss(values: torch.Tensor, old_values: torch.Tensor, returns: torch.Tensor,
                       clip: float) -> torch.Tensor:
    """0.5 * max((V - R)^2, (V_clipped - R)^2) per step with V_clipped = V_old + clip(V - V_old, +-clip);
    `clip` <= 0 turns clipping off (plain 0.5 (V - R)^2)."""
    unclipped = (values - returns) ** 2
    if clip <= 0:
        return 0.5 * unclipped
    v_clipped = old_values + torch.clamp(values - old_values, -clip, clip)
    return 0.5 * torch.maximum(unclipped, (v_clipped - returns) ** 2)


# -- batches and optimisation -------------------------------------------------------------------------------
def minibatches(n: int, size: int, rng: np.random.Generator) -> Iterator[np.ndarray]:
    """A random partition of range(n) into minibatches of `size` (the last may be smaller)."""
    if size < 1:
        raise ValueError(f"minibatch size must be >= 1, got {size}")
    order = rng.permutation(n)
    for i in range(0, n, size):
        yield order[i : i + size]


def adam(policy: Policy, lr: float) -> torch.optim.Optimizer:
    """A fresh Adam over the policy's trainable parameters. Each iteration's update starts a new one (as RFT
    does): checkpoints hold weights only, so a resumed run continues exactly like an uninterrupted one. Where
    some are bf16/fp16 (an HF policy's half-precision weights trained without LoRA), Adam with float32
    master weights and moments (algos.optim.MasterWeightAdamW): small updates accumulate, not round away."""
    params = [p for p in policy.trainable_parameters() if p.requires_grad]
    if not params:
        raise ValueError(f"{type(policy).__name__} has no parameters that require gradients")
    if has_half(params):
        return MasterWeightAdamW(params, lr=lr)
    return torch.optim.Adam(params, lr=lr)


def optimizer_step(opt: torch.optim.Optimizer, loss: torch.Tensor, max_grad_norm: float) -> float:
    """Backward, clip the global gradient norm (when `max_grad_norm` > 0), step. Returns the norm before
    clipping (0 when the loss has no gradient, e.g. every response in the minibatch was floored)."""
    opt.zero_grad(set_to_none=True)
    if not loss.requires_grad:
        return 0.0
    loss.backward()
    norm = clip_used_grads((p for g in opt.param_groups for p in g["params"]),
                           max_grad_norm if max_grad_norm > 0 else float("inf"))
    opt.step()
    return float(norm)


@torch.no_grad()
def score_in_chunks(policy: Policy, inputs: list[PolicyInput], responses: list[str], values: bool = False,
                    chunk: int = 256) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Log-probs (and values) of many steps without gradients, `chunk` at a time (bounded memory)."""
    lps, vs = [], []
    for i in range(0, len(inputs), chunk):
        ev = policy.evaluate_actions(inputs[i : i + chunk], responses[i : i + chunk], values=values)
        lps.append(ev.logprob.detach().float().cpu())
        if values:
            vs.append(ev.value.detach().float().cpu())
    if not lps:
        return torch.zeros(0), torch.zeros(0) if values else None
    return torch.cat(lps), torch.cat(vs) if values else None


# -- reference policy ----------------------------------------------------------------------------------------
def frozen_copy(policy: Policy) -> Policy:
    """An independent copy of `policy` (through save/load, so it works for every trainable policy), with
    gradients off: the KL reference."""
    with tempfile.TemporaryDirectory() as tmp:
        policy.save(Path(tmp) / "ref")
        return load_frozen(Path(tmp) / "ref", policy.device)


def load_frozen(path: Path, device: Any = "cpu") -> Policy:
    """The policy saved in folder `path` (whichever kind it is) on `device`, with gradients off."""
    ref = load_policy(path, device=str(device))
    for p in ref.trainable_parameters():
        p.requires_grad_(False)
    return ref


def mean(xs: list[float]) -> float:
    return float(np.mean(xs)) if xs else float("nan")


def as_tensor(x: Any, device: Any = "cpu") -> torch.Tensor:
    return torch.as_tensor(np.asarray(x, dtype=np.float32), device=device)
