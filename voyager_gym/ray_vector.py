"""RayVectorEnv: a Gymnasium vector env whose sub-envs are Ray actors, one backend (one emulator) each.

It keeps the contract of `voyager_gym.vector.make_vec` (autoreset DISABLED, the same batched obs/info layout,
`options["instances"]`, `options["reset_mask"]`, `group_reset`), so a rollout moves from one machine to a
cluster unchanged. Every reset/step/call goes to all actors at once and is gathered with one wait.

Fault tolerance: an actor that dies (or hangs past `step_timeout_s`) is replaced by a fresh one, reset on the
same task instance and seed. The step that found it dead returns, for that sub-env only, the new actor's
reset observation with terminated=True, reward 0 and `info["errored"]=True` (score NaN, `info["error"]` says
why), exactly like a backend error inside VoyagerEnv, so the rollout flags that episode and carries on.
"""

from __future__ import annotations

import warnings
from copy import deepcopy
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space, concatenate, create_empty_array

ENV_ID = "voyager_gym/SimDroid-v0"
PG_STRATEGIES = ("PACK", "SPREAD", "STRICT_PACK", "STRICT_SPREAD")


def _ray() -> Any:
    try:
        import ray
    except ImportError as e:  # pragma: no cover - exercised only without ray
        raise ImportError("RayVectorEnv needs ray: pip install 'ray>=2.9'") from e
    return ray


class EnvWorker:
    """The body of one actor: a single env made with `gym.make(env_id, **env_kwargs)` (as make_vec does)."""

    def __init__(self, env_id: str, env_kwargs: dict[str, Any]):
        import voyager_gym  # noqa: F401  (registers the env ids in this worker process)

        self.env = gym.make(env_id, **env_kwargs)

    def spaces(self) -> tuple[gym.Space, gym.Space, dict[str, Any], str | None]:
        return (
            self.env.observation_space,
            self.env.action_space,
            dict(self.env.metadata),
            self.env.render_mode,
        )

    def reset(self, seed: int | None, options: dict[str, Any] | None) -> tuple[Any, dict[str, Any]]:
        return self.env.reset(seed=seed, options=options)

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        return self.env.step(action)

    def call(self, name: str, args: tuple, kwargs: dict[str, Any]) -> Any:
        attr = self.env.get_wrapper_attr(name)
        return attr(*args, **kwargs) if callable(attr) else attr

    def set_attr(self, name: str, value: Any) -> None:
        self.env.set_wrapper_attr(name, value)

    def render(self) -> Any:
        return self.env.render()

    def where(self) -> dict[str, Any]:
        """Node id and pid of this actor (placement checks)."""
        import os

        return {"node_id": _ray().get_runtime_context().get_node_id(), "pid": os.getpid()}

    def close(self) -> None:
        self.env.close()


class RayVectorEnv(VectorEnv):
    """`num_envs` copies of `env_id` as Ray actors, autoreset DISABLED.

    Args:
        num_envs: number of sub-envs (actors).
        env_id: registered env id; `env_kwargs` go to `gym.make` in each actor.
        address: Ray cluster to join ("auto", "HOST:6379", "ray://..."); None lets `ray.init` look for one
            (RAY_ADDRESS, a local `ray start`) or start a local one. Ignored if Ray is already initialised.
        init_kwargs: more `ray.init` arguments (num_cpus, include_dashboard, ...).
        num_cpus, num_gpus: per-actor reservations (None: Ray's actor default, 0 CPUs held while running).
        resources: per-actor custom resources, e.g. {"emulator": 1} for one emulator per actor.
        placement_strategy: PACK / SPREAD / STRICT_PACK / STRICT_SPREAD: reserve one bundle per actor in a
            placement group first (all or nothing), then pin actor i to bundle i.
        scheduling_strategy: passed to the actors instead ("SPREAD", a NodeAffinitySchedulingStrategy, ...).
        actor_options: more `.options()` for the actors (runtime_env, memory, ...).
        step_timeout_s: a step/call slower than this counts as a dead actor (None: wait forever).
        start_timeout_s: how long actors (and the placement group) may take to come up.
        copy: return copies of the batched observations (as SyncVectorEnv does).
    """

    def __init__(
        self,
        num_envs: int,
        env_id: str = ENV_ID,
        *,
        address: str | None = None,
        init_kwargs: dict[str, Any] | None = None,
        num_cpus: float | None = None,
        num_gpus: float | None = None,
        resources: dict[str, float] | None = None,
        placement_strategy: str | None = None,
        scheduling_strategy: Any = None,
        actor_options: dict[str, Any] | None = None,
        step_timeout_s: float | None = None,
        start_timeout_s: float = 300.0,
        copy: bool = True,
        **env_kwargs: Any,
    ):
        super().__init__()
        if num_envs < 1:
            raise ValueError(f"num_envs must be >= 1, got {num_envs}")
        if placement_strategy is not None and placement_strategy not in PG_STRATEGIES:
            raise ValueError(
                f"placement_strategy must be one of {PG_STRATEGIES} or None, got {placement_strategy!r}"
            )
        if placement_strategy is not None and scheduling_strategy is not None:
            raise ValueError("give either placement_strategy or scheduling_strategy, not both")
        ray = _ray()
        if not ray.is_initialized():
            ray.init(address=address, **(init_kwargs or {}))
        self.num_envs = num_envs
        self.env_id = env_id
        self.env_kwargs = dict(env_kwargs)
        self.copy = copy
        self.step_timeout_s = step_timeout_s
        self.start_timeout_s = start_timeout_s
        self.restarts: list[tuple[int, str]] = []  # (sub-env, reason) for every replaced actor
        self._closed_actors = False
        self._pg = None
        self._remote_cls = ray.remote(EnvWorker)

        base: dict[str, Any] = {"max_restarts": 0, **(actor_options or {})}
        if num_gpus is not None:
            base["num_gpus"] = num_gpus
        if resources:
            base["resources"] = dict(resources)
        if placement_strategy is not None:
            bundle = {"CPU": float(num_cpus)} if num_cpus else {}
            bundle.update(resources or {})
            if num_gpus:
                bundle["GPU"] = float(num_gpus)
            if not bundle:
                raise ValueError("a placement group needs per-actor resources: pass num_cpus or resources")
            base["num_cpus"] = num_cpus or 0  # the actor must fit inside its bundle
            self._pg = self._reserve(ray, [bundle] * num_envs, placement_strategy)
        else:
            if num_cpus is not None:
                base["num_cpus"] = num_cpus
            if scheduling_strategy is not None:
                base["scheduling_strategy"] = scheduling_strategy
        self._base_options = base

        self.actors: list[Any] = [self._spawn(i) for i in range(num_envs)]
        try:
            specs = self._get_all([a.spaces.remote() for a in self.actors], self.start_timeout_s, "start")
        except Exception:
            self._kill_all()
            raise
        obs_space, act_space, metadata, render_mode = specs[0]
        for i, (o, a, _, _) in enumerate(specs):
            if o != obs_space or a != act_space:
                raise RuntimeError(f"sub-env {i} has different spaces ({o}, {a}) from sub-env 0's")
        self.single_observation_space = obs_space
        self.single_action_space = act_space
        self.observation_space = batch_space(obs_space, num_envs)
        self.action_space = batch_space(act_space, num_envs)
        self.metadata = {**metadata, "autoreset_mode": AutoresetMode.DISABLED}
        self.render_mode = render_mode

        self._env_obs: list[Any] = [None] * num_envs
        self._observations = create_empty_array(obs_space, n=num_envs, fn=np.zeros)
        self._last_reset: list[tuple[int | None, dict[str, Any] | None] | None] = [None] * num_envs
        self._needs_reset = np.ones(num_envs, dtype=bool)  # no episode running: step() must not be called
        self._steps = np.zeros(num_envs, dtype=np.int64)
        self._pending: list[tuple[str, Any, dict[str, Any]] | None] = [None] * num_envs  # died mid-episode

    # -- actors ----------------------------------------------------------------------------------------
    def _reserve(self, ray: Any, bundles: list[dict[str, float]], strategy: str) -> Any:
        from ray.util.placement_group import placement_group, remove_placement_group

        pg = placement_group(bundles, strategy=strategy)
        ready, _ = ray.wait([pg.ready()], timeout=self.start_timeout_s)
        if not ready:
            remove_placement_group(pg)
            raise RuntimeError(
                f"could not reserve {len(bundles)} bundles of {bundles[0]} ({strategy}) within "
                f"{self.start_timeout_s} s; the cluster has {ray.cluster_resources()}"
            )
        return pg

    def _spawn(self, i: int) -> Any:
        opts = dict(self._base_options)
        if self._pg is not None:
            from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

            opts["scheduling_strategy"] = PlacementGroupSchedulingStrategy(
                self._pg, placement_group_bundle_index=i
            )
        return self._remote_cls.options(**opts).remote(self.env_id, self.env_kwargs)

    def _get_all(self, refs: list[Any], timeout: float | None, what: str) -> list[Any]:
        ray = _ray()
        ready, _ = ray.wait(refs, num_returns=len(refs), timeout=timeout)
        if len(ready) < len(refs):
            raise TimeoutError(
                f"{len(refs) - len(ready)} of {len(refs)} actors did not {what} within {timeout} s; "
                f"cluster resources {ray.cluster_resources()}, free {ray.available_resources()}"
            )
        return ray.get(refs)

    def _gather(self, refs: dict[int, Any], timeout: float | None) -> dict[int, tuple[bool, Any]]:
        """Wait for every ref at once; per sub-env (True, value) or (False, reason) when its actor died or
        hung. Exceptions raised inside the env itself propagate, as in SyncVectorEnv."""
        ray = _ray()
        if not refs:
            return {}
        ids = list(refs)
        ready, _ = ray.wait([refs[i] for i in ids], num_returns=len(ids), timeout=timeout)
        ready_set = set(ready)
        out: dict[int, tuple[bool, Any]] = {}
        for i in ids:
            if refs[i] not in ready_set:
                out[i] = (False, f"actor of sub-env {i} did not answer within {timeout} s")
                continue
            try:
                out[i] = (True, ray.get(refs[i]))
            except ray.exceptions.RayActorError as e:
                out[i] = (False, _death_reason(i, e))
            except ray.exceptions.RayTaskError as e:
                raise e.as_instanceof_cause() from None
        return out

    def _replace(self, i: int, reason: str) -> tuple[Any, dict[str, Any]] | None:
        """Kill actor i, start a fresh one and reset it on sub-env i's last task instance (if any)."""
        ray = _ray()
        self.restarts.append((i, reason))
        warnings.warn(
            f"RayVectorEnv: replacing the actor of sub-env {i}: {reason}", RuntimeWarning, stacklevel=3
        )
        last_error = reason
        for _ in range(3):
            try:
                ray.kill(self.actors[i], no_restart=True)
            except Exception:  # noqa: BLE001 - it may be gone already
                pass
            self.actors[i] = self._spawn(i)
            if self._last_reset[i] is None:
                return None
            seed, options = self._last_reset[i]
            res = self._gather({i: self.actors[i].reset.remote(seed, options)}, self.start_timeout_s)[i]
            if res[0]:
                return res[1]
            last_error = res[1]
        raise RuntimeError(f"sub-env {i}: three fresh actors in a row failed to reset ({last_error})")

    def _on_death(self, i: int, reason: str) -> None:
        """Record that sub-env i's actor died; if an episode was running, the next step reports it errored."""
        fresh = self._replace(i, reason)
        if fresh is not None and not self._needs_reset[i]:
            self._pending[i] = (reason, fresh[0], fresh[1])

    # -- gymnasium API ---------------------------------------------------------------------------------
    def reset(self, *, seed: int | list[int | None] | None = None, options: dict[str, Any] | None = None):
        """Reset all sub-envs, or those in `options["reset_mask"]` (the others keep their observation)."""
        if seed is None:
            seeds: list[int | None] = [None] * self.num_envs
        elif isinstance(seed, int):
            seeds = [seed + i for i in range(self.num_envs)]
        else:
            seeds = list(seed)
        if len(seeds) != self.num_envs:
            raise ValueError(f"got {len(seeds)} seeds for num_envs={self.num_envs}; pass one per sub-env")
        options = dict(options) if options is not None else None
        mask = np.ones(self.num_envs, dtype=bool)
        if options is not None and "reset_mask" in options:
            mask = options.pop("reset_mask")
            if not isinstance(mask, np.ndarray):
                raise TypeError(f"options['reset_mask'] must be a numpy array, got {type(mask)}")
            if mask.shape != (self.num_envs,):
                raise ValueError(
                    f"options['reset_mask'] must have shape ({self.num_envs},), got {mask.shape}"
                )
            if mask.dtype != np.bool_:
                raise TypeError(f"options['reset_mask'] must have dtype bool, got {mask.dtype}")
            if not mask.any():
                raise ValueError(f"options['reset_mask'] must select at least one sub-env, got {mask}")
        todo = [int(i) for i in np.nonzero(mask)[0]]
        results: dict[int, Any] = {}
        for _ in range(3):  # a dead actor is replaced and asked again: a reset loses no episode
            refs = {i: self.actors[i].reset.remote(seeds[i], options) for i in todo}
            failed = []
            for i, (ok, value) in self._gather(refs, self.step_timeout_s).items():
                if ok:
                    results[i] = value
                else:
                    self._last_reset[i] = None  # the fresh actor is reset below with the new seed
                    self._replace(i, value)
                    failed.append(i)
            todo = failed
            if not todo:
                break
        if todo:
            raise RuntimeError(f"sub-envs {todo} could not be reset: their actors keep dying")
        infos: dict[str, Any] = {}
        for i in sorted(results):
            self._env_obs[i], info = results[i]
            infos = self._add_info(infos, info, i)
            self._last_reset[i] = (seeds[i], options)
            self._needs_reset[i] = False
            self._steps[i] = 0
            self._pending[i] = None
        self._observations = concatenate(self.single_observation_space, self._env_obs, self._observations)
        return (deepcopy(self._observations) if self.copy else self._observations), infos

    def step(self, actions: Any):
        """Step every sub-env in parallel. A sub-env whose actor died reports an errored, terminated step."""
        actions = list(actions)
        if len(actions) != self.num_envs:
            raise ValueError(f"got {len(actions)} actions for num_envs={self.num_envs}")
        ended = np.nonzero(self._needs_reset)[0]
        if len(ended):
            raise RuntimeError(
                f"sub-envs {ended.tolist()} have no running episode (autoreset is disabled): reset them "
                "first with options={'reset_mask': mask}"
            )
        refs = {
            i: self.actors[i].step.remote(actions[i])
            for i in range(self.num_envs)
            if self._pending[i] is None
        }
        gathered = self._gather(refs, self.step_timeout_s)
        rewards = np.zeros(self.num_envs, dtype=np.float64)
        terms = np.zeros(self.num_envs, dtype=np.bool_)
        truncs = np.zeros(self.num_envs, dtype=np.bool_)
        infos: dict[str, Any] = {}
        for i in range(self.num_envs):
            self._steps[i] += 1
            if i in gathered and not gathered[i][0]:
                self._on_death(i, gathered[i][1])
            if self._pending[i] is not None:
                reason, obs, reset_info = self._pending[i]
                self._pending[i] = None
                info = {
                    **reset_info,
                    "score": float("nan"),
                    "success": False,
                    "invalid_action": None,
                    "errored": True,
                    "step": int(self._steps[i]),
                    "error": reason,
                }  # no "action" key: it never ran (and a None among dicts breaks gymnasium's info merge)
                self._env_obs[i], rewards[i], terms[i], truncs[i] = obs, 0.0, True, False
            else:
                self._env_obs[i], rewards[i], terms[i], truncs[i], info = gathered[i][1]
            infos = self._add_info(infos, info, i)
        self._needs_reset |= terms | truncs
        self._observations = concatenate(self.single_observation_space, self._env_obs, self._observations)
        obs = deepcopy(self._observations) if self.copy else self._observations
        return obs, rewards, terms, truncs, infos

    def call(self, name: str, *args: Any, **kwargs: Any) -> tuple[Any, ...]:
        """Call a method (or read an attribute) of every sub-env, in parallel. A dead actor is replaced first
        (its episode then ends errored at the next step) and the call goes to the fresh one."""
        refs = {i: a.call.remote(name, args, kwargs) for i, a in enumerate(self.actors)}
        out = self._gather(refs, self.step_timeout_s)
        for i, (ok, reason) in list(out.items()):
            if not ok:
                self._on_death(i, reason)
                out[i] = self._gather(
                    {i: self.actors[i].call.remote(name, args, kwargs)}, self.step_timeout_s
                )[i]
                if not out[i][0]:
                    raise RuntimeError(f"sub-env {i}: the fresh actor died too ({out[i][1]})")
        return tuple(out[i][1] for i in range(self.num_envs))

    def get_attr(self, name: str) -> tuple[Any, ...]:
        return self.call(name)

    def set_attr(self, name: str, values: list[Any] | tuple[Any, ...] | Any) -> None:
        if not isinstance(values, (list, tuple)):
            values = [values] * self.num_envs
        if len(values) != self.num_envs:
            raise ValueError(f"got {len(values)} values for num_envs={self.num_envs}")
        refs = [a.set_attr.remote(name, v) for a, v in zip(self.actors, values, strict=True)]
        _ray().get(refs, timeout=self.step_timeout_s)

    def render(self) -> tuple[Any, ...]:
        return tuple(_ray().get([a.render.remote() for a in self.actors], timeout=self.step_timeout_s))

    def where(self) -> list[dict[str, Any]]:
        """Node id and pid of every sub-env's actor."""
        return list(_ray().get([a.where.remote() for a in self.actors], timeout=self.step_timeout_s))

    def close_extras(self, **kwargs: Any) -> None:
        """Close the envs (briefly), then kill the actors and free their placement group."""
        self._kill_all()

    def _kill_all(self) -> None:
        if self._closed_actors:
            return
        self._closed_actors = True
        try:
            ray = _ray()
        except ImportError:  # pragma: no cover
            return
        if not ray.is_initialized():
            return
        actors = getattr(self, "actors", [])
        if actors:
            ray.wait([a.close.remote() for a in actors], num_returns=len(actors), timeout=5.0)
        for a in actors:
            try:
                ray.kill(a, no_restart=True)
            except Exception:  # noqa: BLE001 - already dead
                pass
        if self._pg is not None:
            from ray.util.placement_group import remove_placement_group

            remove_placement_group(self._pg)
            self._pg = None


def _death_reason(i: int, e: Exception) -> str:
    """One line: the exception type and Ray's last explanatory line ('killed by ray.kill', 'OOM', ...)."""
    lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
    tail = lines[-1] if lines else ""
    return f"actor of sub-env {i} died ({type(e).__name__}): {tail}"
