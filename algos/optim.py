"""Adam(W) with float32 master weights, for models whose weights are bf16/fp16.

Adam on bf16 parameters loses every update smaller than half the spacing of bf16 numbers around the weight
(8 significant bits: ~0.4% of the weight), which is most updates at fine-tuning learning rates (1e-5 on a
weight of 0.02 is 0.05%): the weights do not move. The standard fix (mixed-precision training's master
weights) keeps a float32 copy of each half-precision parameter and float32 moments; each step updates the
copy in float32 and writes it back rounded to the parameter's dtype, so small steps accumulate in the copy
and show in the model once they add up. The forward and backward passes still run in the model's dtype.
Memory per half-precision parameter: 2 bytes of weights + 2 of gradient + 12 of optimizer state (copy and
two moments), as for float32 weights with Adam; float32 parameters are updated in place (no copy).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import torch

HALF = (torch.bfloat16, torch.float16)


class MasterWeightAdamW(torch.optim.Optimizer):
    """AdamW (decoupled weight decay, bias-corrected moments) whose state is float32 whatever the parameters'
    dtype: half-precision parameters get a float32 master copy that each step updates and writes back. On
    float32 parameters it takes torch.optim.AdamW's steps."""

    def __init__(self, params: Iterable[Any], lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0.0):
        if not lr >= 0:
            raise ValueError(f"lr={lr!r}: expected a learning rate >= 0")
        if not all(0 <= b < 1 for b in betas):
            raise ValueError(f"betas={betas!r}: expected two values in [0, 1)")
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay))

    @torch.no_grad()
    def step(self, closure: Any = None) -> Any:
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            b1, b2 = group["betas"]
            lr, eps, wd = group["lr"], group["eps"], group["weight_decay"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if not state:
                    state["step"] = 0
                    master = p.detach().float().clone() if p.dtype in HALF else None
                    if master is not None:
                        state["master"] = master
                    state["exp_avg"] = torch.zeros_like(p, dtype=torch.float32)
                    state["exp_avg_sq"] = torch.zeros_like(p, dtype=torch.float32)
                state["step"] += 1
                w = state.get("master", p)  # the float32 weights this step updates
                g = p.grad.float()
                if wd:
                    w.mul_(1 - lr * wd)
                state["exp_avg"].lerp_(g, 1 - b1)
                state["exp_avg_sq"].mul_(b2).addcmul_(g, g, value=1 - b2)
                bias1 = 1 - b1 ** state["step"]
                bias2 = 1 - b2 ** state["step"]
                denom = (state["exp_avg_sq"].sqrt() / math.sqrt(bias2)).add_(eps)
                w.addcdiv_(state["exp_avg"], denom, value=-lr / bias1)
                if w is not p:
                    p.copy_(w)
        return loss


def has_half(params: Iterable[torch.Tensor]) -> bool:
    """Whether any of `params` is bf16 or fp16."""
    return any(p.dtype in HALF for p in params)
