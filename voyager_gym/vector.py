"""Vector envs for group rollouts: G copies of one task instance stepped together.

`make_vec(num_envs, mode)` builds gymnasium's Sync/AsyncVectorEnv with the settings text observations need
(no shared memory) and autoreset DISABLED, the mode that fits group rollouts: each sub-env stops at its own
episode end and the rollout resets the whole group (or a masked part) itself with `group_reset`.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode

from voyager_gym.suites import TaskInstance

ENV_ID = "voyager_gym/SimDroid-v0"


def make_vec(
    num_envs: int, mode: str = "sync", env_id: str = ENV_ID, **env_kwargs: Any
) -> gym.vector.VectorEnv:
    """`gymnasium.make_vec` with shared_memory off (async) and autoreset DISABLED. mode='ray' builds a
    `RayVectorEnv` (one Ray actor per sub-env); its Ray options (address, resources, ...) go in env_kwargs."""
    if mode == "ray":
        from voyager_gym.ray_vector import RayVectorEnv

        return RayVectorEnv(num_envs, env_id, **env_kwargs)
    if mode not in ("sync", "async"):
        raise ValueError(f"vectorization mode must be 'sync', 'async' or 'ray', got {mode!r}")
    vector_kwargs: dict[str, Any] = {"autoreset_mode": AutoresetMode.DISABLED}
    if mode == "async":
        vector_kwargs["shared_memory"] = False
    import voyager_gym  # noqa: F401  (registers the env ids)

    return gym.make_vec(
        env_id, num_envs=num_envs, vectorization_mode=mode, vector_kwargs=vector_kwargs, **env_kwargs
    )


def group_reset(
    envs: gym.vector.VectorEnv,
    instance: TaskInstance,
    seed: int | None = None,
    mask: np.ndarray | None = None,
):
    """Reset every sub-env (or those in `mask`) to the same task instance. Each sub-env gets its own seed
    (seed + i), so screen noise differs across the group while the task, its params and data are shared."""
    seeds = None if seed is None else [seed + i for i in range(envs.num_envs)]
    options: dict[str, Any] = instance.options()
    if mask is not None:
        options["reset_mask"] = np.asarray(mask, dtype=bool)
    return envs.reset(seed=seeds, options=options)


def __getattr__(name: str) -> Any:
    """`RayVectorEnv` is imported on first use, so importing this module never imports ray."""
    if name == "RayVectorEnv":
        from voyager_gym.ray_vector import RayVectorEnv

        return RayVectorEnv
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
