"""Algorithm configs on their own, for unit tests that drive an update directly: the experiments' recipe is
the config classes' default (demonstrations, RFT's pool, the fork-level measurement), which needs a run to
hand them over (`RunContext`); these tests exercise GRSD without one, as its class defaults were before."""

from __future__ import annotations

from typing import Any

from algos.grsd import GRSDConfig

GRSD_ALONE: dict[str, Any] = {"demos": False, "rft_pool": False, "max_rft_samples": 0, "fork_eval": False,
                              "fork_eval_arms": ["control", "grpo", "oracle"], "fork_eval_until": 0}


def grsd_alone(**kw: Any) -> GRSDConfig:
    """GRSDConfig with no demonstrations, no RFT pool and no fork-level measurement, then `kw`."""
    return GRSDConfig(**{**GRSD_ALONE, **kw})
