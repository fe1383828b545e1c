"""GRSD on top of GRPO: GRPO's loss plus lambda times the fork loss, in one update.

UI-Voyager trains its fork samples (GRSD) by fine-tuning and lists combining them with online RL as future
work; this is that combination, so one harness can say whether the two add up. Each iteration rolls the policy
out G times per training instance (algos/loop.py), as GRPO does. The update:

- finds the fork points of every group with both outcomes (algos/forks/, `fork_mode` faithful | robust, as
  GRSD's): each fork gives a sample, the failed step's own input (screen, elements, history) with the teacher
  step's full response;
- runs GRPO's update (algos/grpo.py: group-normalised outcome advantages, clipped surrogate, optional k3 KL),
  and adds to every minibatch's loss `fork_coef` times the fork loss: the mean negative log-likelihood of the
  teacher responses at the failed inputs, over `fork_minibatch` fork samples. Those are taken in turn from
  seeded shuffles of the iteration's fork samples (a new shuffle each time they run out), from a random
  stream of the update's seed of their own, so GRPO's minibatches are the same as in a GRPO run on the same
  groups. Each fork sample is thus seen about (GRPO's gradient steps x fork_minibatch / forks) times an
  update, whatever the fork count.
- When no group has signal (every group's rewards equal) GRPO takes no step. Forks come from groups with a
  success and a failure, which have signal unless `invalid_penalty` ties their rewards, so this is rare; when
  it happens the fork loss trains alone: `epochs` passes over the fork samples in minibatches of
  `fork_minibatch`, `fork_coef` times the NLL at GRPO's learning rate and grad-norm clip, with no KL term
  (there are no GRPO steps to measure it on).

`fork_coef=0` is GRPO exactly (the fork term is never computed; forks are still found and logged: the control
that says what the fork term adds). Fork samples are not kept from one iteration to the next.

Logs GRPO's metrics (`losses/total` includes the fork term, `losses/policy` is GRPO's surrogate alone) and
`grsd/mixed_groups`, `grsd/forks`, `grsd/fork_s` (detection time), `train/fork_samples` (fork samples trained
on), `train/fork_steps` (gradient steps holding the fork loss) and `losses/fork` (its mean NLL before the
coefficient; NaN when none).
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Iterator
from typing import Any, ClassVar

import numpy as np
import torch

from algos.buffer import Group
from algos.fields import setting
from algos.forks.examples import FORK_MODES, find_forks
from algos.grpo import GRPO, GRPOConfig
from algos.loop import RunContext, fork_frames
from algos.pg import adam, mean, minibatches, optimizer_step
from algos.policies.base import Policy
from algos.prompt import PolicyInput
from algos.rollout import RolloutConfig

FORK_STREAM = 0x6F726B  # second entropy word of the fork samples' random stream ([seed, FORK_STREAM])


@dataclasses.dataclass
class GRSDGRPOConfig(GRPOConfig):
    SECTION: ClassVar[str] = "grsd_grpo"
    fork_coef: float = setting(1.0, ge=0)  # lambda: weight of the fork loss (mean NLL of the teacher
    # responses) beside GRPO's loss in every minibatch (0: GRPO exactly, forks still found and logged)
    fork_mode: str = setting("robust", choices=FORK_MODES)  # fork detection, as GRSD's: faithful (the paper's
    # detector as published) | robust (our hardened variant)
    fork_minibatch: int = setting(64, ge=1)  # fork samples in each gradient step's fork loss (all of them
    # when fewer)


def cycled_batches(n: int, size: int, rng: np.random.Generator) -> Iterator[np.ndarray]:
    """Minibatches of range(n) without end: one seeded shuffle after another, each cut into `size`-sized
    pieces (the last piece of a shuffle may be smaller): each sample once per shuffle."""
    if n < 1:
        raise ValueError(f"no samples to draw minibatches from (n={n})")
    while True:
        yield from minibatches(n, size, rng)


class GRSDGRPO(GRPO):
    """GRPO whose every minibatch loss also holds `fork_coef` times the fork loss (see the module doc)."""

    name = "grsd-grpo"
    needs_pixels = True  # fork detection compares screenshots
    cfg: GRSDGRPOConfig

    def __init__(self, cfg: GRSDGRPOConfig, context: RunContext | None = None):
        super().__init__(cfg, context)
        self._forks: list[tuple[PolicyInput, str]] = []  # this update's fork samples (when trained on)
        self._batches: Iterator[np.ndarray] | None = None  # their minibatches, one per gradient step
        self._fork_steps = 0  # gradient steps of this update that held the fork loss

    def rollout_config(self, envs: Any, seed: int, progress: bool,
                       policy: Policy | None = None) -> RolloutConfig:
        return fork_frames(self, super().rollout_config(envs, seed, progress), envs, policy, self.name)

    def fork_loss(self, policy: Policy) -> torch.Tensor:
        """The mean NLL of the teacher responses over the next minibatch of fork samples."""
        if self._batches is None:
            raise RuntimeError("fork_loss outside an update: no fork samples are set")
        idx = next(self._batches)
        self._fork_steps += 1
        return -policy.log_probs([self._forks[i][0] for i in idx], [self._forks[i][1] for i in idx]).mean()

    def extra_loss(self, policy: Policy) -> tuple[torch.Tensor | None, dict[str, float]]:
        if not self._forks:
            return None, {}
        nll = self.fork_loss(policy)
        return self.cfg.fork_coef * nll, {"losses/fork": nll.item()}

    def update(self, policy: Policy, groups: list[Group], iteration: int, seed: int) -> dict[str, float]:
        cfg = self.cfg
        t0 = time.perf_counter()
        forks = find_forks(groups, cfg.fork_mode)
        fork_s = time.perf_counter() - t0
        self._forks = [f.sample for f in forks] if cfg.fork_coef > 0 else []
        self._batches = None
        if self._forks:
            rng = np.random.default_rng([seed, FORK_STREAM])
            self._batches = cycled_batches(len(self._forks), cfg.fork_minibatch, rng)
        self._fork_steps = 0
        try:
            metrics = super().update(policy, groups, iteration, seed)
            if self._forks and not metrics["train/pg_steps"]:
                metrics.update(self.fork_only(policy))
            metrics.update({
                "grsd/mixed_groups": sum(g.has_both_outcomes for g in groups),
                "grsd/forks": len(forks),
                "grsd/fork_s": fork_s,
                "train/fork_samples": len(self._forks),
                "train/fork_steps": self._fork_steps,
            })
            metrics.setdefault("losses/fork", float("nan"))
        finally:
            self._forks, self._batches = [], None
        return metrics

    def fork_only(self, policy: Policy) -> dict[str, float]:
        """The update when GRPO has no step: `epochs` passes of the fork loss alone (`fork_minibatch` samples
        a step), at GRPO's learning rate and grad-norm clip."""
        cfg = self.cfg
        opt = adam(policy, cfg.lr)
        nll, gn = [], []
        for _ in range(cfg.epochs * math.ceil(len(self._forks) / cfg.fork_minibatch)):
            loss = self.fork_loss(policy)
            gn.append(optimizer_step(opt, cfg.fork_coef * loss, cfg.max_grad_norm))
            nll.append(loss.item())
        return {"losses/fork": mean(nll), "losses/total": cfg.fork_coef * mean(nll),
                "charts/grad_norm": mean(gn)}
