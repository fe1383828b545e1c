"""The policy interface every algorithm uses.

A policy maps a batch of `PolicyInput`s to responses (`Reason: ... Action: {json}` text, the parsed action,
the behaviour log-prob of the response, and a value estimate where it has a value head). Trainable policies
also score given responses (`log_probs`, differentiable), fine-tune on (input, response) pairs (`fit_sft`),
and save/load their weights with safetensors.
"""

from __future__ import annotations

import abc
import dataclasses
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
import torch

from algos.prompt import PolicyInput
from voyager_gym.actions import Action

LR_SCHEDULES = ("constant", "linear")  # fit_sft: a fixed learning rate, or linear decay to 0 over the call


def drop_unused_grads(params: Iterable[torch.nn.Parameter]) -> None:
    """Before an optimizer step: forget the gradient of every parameter whose gradient is exactly zero. Such a
    parameter did not touch this minibatch's loss (a head no response in it used, e.g. the count head in a
    batch without count answers), and Adam would otherwise move it on its stale momentum; left at None, it
    stays where it is, whether or not the network computed that head (one fused product serves several)."""
    _drop_zero(params)


def _drop_zero(params: Iterable[torch.nn.Parameter]) -> list[tuple[torch.nn.Parameter, torch.Tensor]]:
    """`drop_unused_grads`; returns the kept parameters with their gradients' 2-norms."""
    ps = [p for p in params if p.grad is not None]
    if not ps:
        return []
    norms = torch._foreach_norm([p.grad for p in ps])
    kept = []
    for p, n, z in zip(ps, norms, (torch.stack(norms) == 0).tolist(), strict=True):
        if z:
            p.grad = None
        else:
            kept.append((p, n))
    return kept


def clip_used_grads(params: Iterable[torch.nn.Parameter], max_norm: float) -> torch.Tensor:
    """`drop_unused_grads`, then `torch.nn.utils.clip_grad_norm_` over the gradients left, from one pass of
    per-parameter norms instead of two: the same arithmetic as those two calls (per-parameter norms, the
    2-norm of their stack, gradients times min(1, max_norm / (total + 1e-6))) on parameters of one device and
    dtype; otherwise it makes the two calls. Returns the total norm before clipping (0 with no gradient)."""
    ps = [p for p in params if p.grad is not None]
    if len({(p.grad.device, p.grad.dtype) for p in ps}) > 1:
        drop_unused_grads(ps)
        return torch.nn.utils.clip_grad_norm_([p for p in ps if p.grad is not None], max_norm)
    kept = _drop_zero(ps)
    if not kept:
        return torch.tensor(0.0)
    total = torch.linalg.vector_norm(torch.stack([n for _, n in kept]), 2.0)
    torch._foreach_mul_([p.grad for p, _ in kept], torch.clamp(float(max_norm) / (total + 1e-6), max=1.0))
    return total


def check_lr_schedule(name: str | None) -> str | None:
    """`name` if it is one of LR_SCHEDULES (None: the policy's default), else a ValueError naming it."""
    if name is not None and name not in LR_SCHEDULES:
        raise ValueError(f"lr_schedule={name!r}: expected one of {', '.join(LR_SCHEDULES)}")
    return name


def check_weights(weights: Any, n: int) -> np.ndarray | None:
    """`fit_sft`'s per-sample weights as a float64 array of length `n` (None stays None: every sample weighs
    1); a ValueError naming the value when the count differs or a weight is negative, NaN or infinite."""
    if weights is None:
        return None
    w = np.asarray(weights, dtype=np.float64)
    if w.ndim != 1 or len(w) != n:
        raise ValueError(f"weights of shape {w.shape}: expected one weight per sample ({n})")
    bad = np.flatnonzero(~np.isfinite(w) | (w < 0))
    if len(bad):
        raise ValueError(f"weights[{int(bad[0])}]={w[bad[0]]!r}: expected a finite weight >= 0")
    return w


@dataclasses.dataclass
class PolicyOutput:
    text: str
    action: Action | None
    logprob: float = 0.0
    value: float | None = None


@dataclasses.dataclass
class ActionEval:
    """What policy-gradient updates read from one forward pass over (input, response) pairs, each a torch
    tensor of shape [B]: log-probs (differentiable), and values / entropies where they were asked for."""

    logprob: Any
    value: Any | None = None
    entropy: Any | None = None


class Policy(abc.ABC):
    """Base class. `trainable` policies implement log_probs / fit_sft / save / load."""

    name: str = "policy"
    trainable: bool = False
    has_value: bool = False
    device: Any = "cpu"  # where the policy's tensors live (a torch.device for torch policies): algorithms put
    # their batches and frozen copies there; policies without weights act on the CPU

    @property
    def uses_pixels(self) -> bool:
        """Whether the policy reads screenshots (training data for it must keep them). What an algorithm
        needs on its own (GRSD compares screens) is `Algorithm.needs_pixels` (algos/loop.py)."""
        return False

    def reseed(self, seed: int) -> None:  # noqa: B027 - optional hook
        """Restart the policy's own sampling RNG (called each iteration, so resumed runs repeat exactly)."""

    def bind(self, envs: Any) -> None:  # noqa: B027 - optional hook
        """Called by rollouts with the (vector) env before acting; only the expert needs it."""

    @abc.abstractmethod
    def act(self, batch: list[PolicyInput], greedy: bool = False) -> list[PolicyOutput]:
        """One response per input. `greedy` picks the most likely response (evaluation)."""

    def log_probs(self, batch: list[PolicyInput], responses: list[str]) -> Any:
        """Log-probabilities (a differentiable torch tensor of shape [B]) of `responses` given `batch`."""
        raise NotImplementedError(f"{type(self).__name__} cannot score responses")

    def values(self, batch: list[PolicyInput]) -> Any:
        """Value estimates (torch tensor [B]) for policies with a value head."""
        raise NotImplementedError(f"{type(self).__name__} has no value head")

    def value_features(self, batch: list[PolicyInput]) -> Any:
        """The inputs of the value head's trainable part [B, F], without gradients: what a critic warm-up
        (PPO's `critic_warmup`) fits the head on while the rest of the policy stays as it is."""
        raise NotImplementedError(f"{type(self).__name__} has no value head")

    def value_head_parameters(self) -> list[Any]:
        """The value head's own parameters (a subset of `trainable_parameters`)."""
        raise NotImplementedError(f"{type(self).__name__} has no value head")

    def value_from_features(self, feats: Any) -> Any:
        """The value head applied to `value_features` output: values [B] (differentiable in the head)."""
        raise NotImplementedError(f"{type(self).__name__} has no value head")

    def evaluate_actions(self, batch: list[PolicyInput], responses: list[str], values: bool = False,
                         entropy: bool = False) -> ActionEval:
        """Log-probs of `responses` (differentiable), plus value estimates and entropies when asked for.
        Policies override this to get all three from one forward pass; this default calls `log_probs` and
        `values` and has no entropy."""
        if entropy:
            raise NotImplementedError(f"{type(self).__name__} cannot compute action entropies")
        return ActionEval(self.log_probs(batch, responses), self.values(batch) if values else None)

    def trainable_parameters(self) -> list[Any]:
        """The torch parameters a policy-gradient optimizer updates (the policy and its value head)."""
        raise NotImplementedError(f"{type(self).__name__} has no trainable parameters")

    def fit_sft(
        self, samples: list[tuple[PolicyInput, str]], epochs: int = 1, lr: float | None = None, seed: int = 0,
        lr_schedule: str | None = None, weights: list[float] | None = None,
    ) -> dict[str, float]:
        """Supervised fine-tuning on (input, response) pairs, loss on the response only. `lr_schedule` is one
        of LR_SCHEDULES, or None for the policy's own default. `weights` (one per sample, finite, >= 0;
        `check_weights`) scale each sample's loss: a weight of k counts as the sample repeated k times.
        Returns metrics."""
        raise NotImplementedError(f"{type(self).__name__} is not trainable")

    def copy(self) -> Policy:
        """An independent copy that acts and trains like this policy (through its own save and load, so any
        trainable policy; policies without `save` override it)."""
        import tempfile

        with tempfile.TemporaryDirectory() as tmp:
            self.save(Path(tmp) / "copy")
            return type(self).load(Path(tmp) / "copy")

    def save(self, path: str | Path) -> None:
        raise NotImplementedError(f"{type(self).__name__} has no weights to save")

    @classmethod
    def load(cls, path: str | Path, **kwargs: Any) -> Policy:
        raise NotImplementedError(f"{cls.__name__} has no weights to load")

