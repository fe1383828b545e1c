"""Vector envs for group rollouts: G copies of one task instance stepped together.

`make_vec(num_envs, mode)` builds gymnasium's Sync/AsyncVectorEnv with the settings text observations need
(no shared memory; no per-step deep copy of element-only observations) and autoreset DISABLED, the mode that
fits group rollouts: each sub-env stops at its own episode end and the rollout resets the whole group (or a
masked part) itself with `group_reset`. mode='pipelined' builds a `PipelinedVectorEnv`: fixed lanes of
sub-envs stepped in worker processes while the rollout acts on another lane (what `algos.rollout` runs
fastest with).

`snapshot(envs, ids)` and `restore(envs, {i: snapshot})` branch episodes on every kind of vector env: a
restore is a masked reset whose options carry the snapshots, so the sub-env's wrappers and the vector env's
bookkeeping (autoreset flags, Ray's replay of a dead actor's last reset) see the restored episode as running.

A worker process that dies (killed, out of memory) under an async or pipelined vector env is a
`VectorWorkerDied` naming its sub-envs, its pid and how it ended, instead of a bare BrokenPipeError; `close()`
then closes the rest without raising again.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode
from gymnasium.vector.async_vector_env import AsyncState
from gymnasium.vector.utils import batch_space, concatenate, create_empty_array

from voyager_gym.env import Snapshot
from voyager_gym.suites import TaskInstance

ENV_ID = "voyager_gym/SimDroid-v0"
PIPE_ERRORS = (BrokenPipeError, EOFError, ConnectionResetError)  # what a dead worker's pipe raises


class VectorWorkerDied(RuntimeError):
    """A worker process of an async or pipelined vector env died; the message names its sub-envs."""


def _how_it_ended(proc: Any) -> str:
    proc.join(timeout=1.0)  # a process whose pipe broke has ended, or is about to: reap it
    code = proc.exitcode
    if code is None:
        return f"its worker process {proc.pid} stopped answering"
    if code < 0:
        return f"its worker process {proc.pid} was killed by signal {-code}"
    return f"its worker process {proc.pid} exited with code {code}"


def _died(what: str, ids: list[int], proc: Any) -> VectorWorkerDied:
    subs = f"sub-env {ids[0]}" if len(ids) == 1 else f"sub-envs {ids}"
    return VectorWorkerDied(f"{subs} of this {what} died ({_how_it_ended(proc)}); the vector env cannot go "
                            "on without it: close() it and make a new one")


class _AsyncVectorEnv(gym.vector.AsyncVectorEnv):
    """gymnasium's AsyncVectorEnv whose dead worker is a VectorWorkerDied naming its sub-env, and whose
    close() after that closes the others quietly (make_vec gives async envs this class)."""

    def _dead_worker(self) -> VectorWorkerDied:
        deadline = time.monotonic() + 1.0
        while True:
            dead = [i for i, p in enumerate(self.processes) if not p.is_alive()]
            if dead or time.monotonic() > deadline:
                break
            time.sleep(0.02)
        self._state = AsyncState.DEFAULT
        if not dead:
            return VectorWorkerDied("a worker process of this AsyncVectorEnv closed its pipe; close() the "
                                    "vector env and make a new one")
        return _died("AsyncVectorEnv", dead, self.processes[dead[0]])

    def close_extras(self, timeout: float | None = None, terminate: bool = False) -> None:
        if any(not p.is_alive() for p in self.processes):  # a dead worker answers nothing: stop the others
            terminate, self._state = True, AsyncState.DEFAULT
        try:
            super().close_extras(timeout=timeout, terminate=terminate)
        except PIPE_ERRORS:
            for p in self.processes:
                if p.is_alive():
                    p.terminate()
                p.join(timeout=5)


def _guarded(name: str) -> Any:
    """AsyncVectorEnv's method `name`, with a dead worker's broken pipe raised as VectorWorkerDied."""

    def method(self: _AsyncVectorEnv, *args: Any, **kwargs: Any) -> Any:
        try:
            return getattr(gym.vector.AsyncVectorEnv, name)(self, *args, **kwargs)
        except PIPE_ERRORS:
            raise self._dead_worker() from None

    method.__name__ = name
    return method


for _name in ("reset_async", "reset_wait", "step_async", "step_wait", "call_async", "call_wait", "set_attr"):
    setattr(_AsyncVectorEnv, _name, _guarded(_name))


def make_vec(
    num_envs: int, mode: str = "sync", env_id: str = ENV_ID, **env_kwargs: Any
) -> gym.vector.VectorEnv:
    """`gymnasium.make_vec` with shared_memory off (async) and autoreset DISABLED. mode='ray' builds a
    `RayVectorEnv` (one Ray actor per sub-env); its Ray options (address, resources, ...) go in env_kwargs.
    mode='pipelined' builds a `PipelinedVectorEnv` (`lanes` and `workers` go in env_kwargs): rollouts act on
    one lane while worker processes step the others."""
    if mode == "ray":
        from voyager_gym.ray_vector import RayVectorEnv

        return RayVectorEnv(num_envs, env_id, **env_kwargs)
    if mode == "pipelined":
        return PipelinedVectorEnv(num_envs, env_id=env_id, **env_kwargs)
    if mode not in ("sync", "async"):
        raise ValueError(f"vectorization mode must be 'sync', 'async', 'pipelined' or 'ray', got {mode!r}")
    vector_kwargs: dict[str, Any] = {"autoreset_mode": AutoresetMode.DISABLED}
    if mode == "async":
        vector_kwargs["shared_memory"] = False
    if env_kwargs.get("observation_mode") == "elements":
        # observations are fresh tuples of frozen elements each step: gymnasium's deepcopy of them (its
        # default) cost more than the env's own step; pixel buffers are reused, so those keep the copy
        vector_kwargs["copy"] = False
    import voyager_gym  # noqa: F401  (registers the env ids)

    envs = gym.make_vec(
        env_id, num_envs=num_envs, vectorization_mode=mode, vector_kwargs=vector_kwargs, **env_kwargs
    )
    if type(envs) is gym.vector.AsyncVectorEnv:
        envs.__class__ = _AsyncVectorEnv  # the same object, with dead workers named (it adds no state)
    return envs


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


def snapshot(envs: gym.vector.VectorEnv, ids: Sequence[int] | None = None) -> list[Snapshot]:
    """Snapshots of sub-envs `ids` (default: all), in that order. Sync and pipelined vector envs ask those
    sub-envs only; async and Ray ones ask every sub-env (their `call` has no subset), so all must have been
    reset. Snapshots from other processes arrive pickled: restoring them re-renders their screens once."""
    ids = list(range(envs.num_envs)) if ids is None else [int(i) for i in ids]
    _check_ids(envs, ids)
    if isinstance(envs, PipelinedVectorEnv):
        return envs.call_subset(ids, "snapshot")
    if isinstance(envs, gym.vector.SyncVectorEnv):
        return [envs.envs[i].get_wrapper_attr("snapshot")() for i in ids]
    snaps = envs.call("snapshot")
    return [snaps[i] for i in ids]


def restore(envs: gym.vector.VectorEnv, snapshots: dict[int, Snapshot]):
    """Put each sub-env `i` back at `snapshots[i]`; the others keep their episodes. Returns the vector env's
    `reset` outputs: the batched observations (a restored sub-env's as they were at its snapshot, the others'
    unchanged) and infos for the restored sub-envs.

    Works on Sync, Async, pipelined and Ray vector envs alike: a masked `reset` whose options carry the
    snapshots (one snapshot for all travels once; different ones go in `options["instances"]`, keyed by
    reset seed). Autoreset: the masked reset clears a restored sub-env's pending autoreset, so its next
    step continues the restored episode; a snapshot of an ended episode (`snapshot.done`) restores an ended
    sub-env, which must be reset or restored again before it steps (with autoreset DISABLED, make_vec's
    mode, stepping it raises)."""
    ids = sorted(int(i) for i in snapshots)
    if not ids:
        raise ValueError("snapshots is empty; expected {sub-env index: Snapshot}")
    _check_ids(envs, ids)
    for i in ids:
        if not isinstance(snapshots[i], Snapshot):
            raise ValueError(f"snapshots[{i}]={type(snapshots[i]).__name__}: expected a Snapshot")
    mask = np.zeros(envs.num_envs, dtype=bool)
    mask[ids] = True
    if len({id(s) for s in snapshots.values()}) == 1:
        options: dict[str, Any] = {"snapshot": snapshots[ids[0]]}
    else:
        options = {"instances": {i: {"snapshot": snapshots[i]} for i in ids}}
    return envs.reset(seed=list(range(envs.num_envs)), options={**options, "reset_mask": mask})


def _check_ids(envs: gym.vector.VectorEnv, ids: list[int]) -> None:
    bad = [i for i in ids if not 0 <= i < envs.num_envs]
    if bad:
        raise ValueError(f"sub-env ids {bad} out of range; expected 0..{envs.num_envs - 1}")


def __getattr__(name: str) -> Any:
    """`RayVectorEnv` is imported on first use, so importing this module never imports ray."""
    if name == "RayVectorEnv":
        from voyager_gym.ray_vector import RayVectorEnv

        return RayVectorEnv
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# ------------------------------------------------------------------------------------------------------------
# Pipelined vector env: fixed lanes of sub-envs stepped in worker processes while the caller acts on another
# ------------------------------------------------------------------------------------------------------------
StepResult = tuple[Any, float, bool, bool, dict[str, Any]]
LaneResult = tuple[dict[int, tuple[Any, dict[str, Any]]], dict[int, StepResult]]


INTERN_LIMIT = 200_000  # distinct UI elements an interning table holds before it starts over


class _Interner:
    """Sender side of element interning: each distinct `UIElement` is numbered once and travels once; an
    observation then carries element numbers. Elements are frozen, so equal ones are interchangeable, and
    the receiver gets the same objects for a repeated screen: unpickling and per-element feature caches
    cost nothing for them."""

    def __init__(self, limit: int = INTERN_LIMIT):
        self.ids: dict[Any, int] = {}
        self.new: list[Any] = []
        self.flush = False
        self.limit = limit

    def start(self) -> None:
        """Begin a message (the table starts over between messages when full)."""
        if len(self.ids) >= self.limit:
            self.ids, self.new, self.flush = {}, [], True

    def encode(self, obs: Any) -> Any:
        if not isinstance(obs, dict) or "ui_elements" not in obs:
            return obs
        ids, out = self.ids, []
        for e in obs["ui_elements"]:
            k = ids.get(e)
            if k is None:
                k = ids[e] = len(ids)
                self.new.append(e)
            out.append(k)
        return {**obs, "ui_elements": tuple(out)}

    def take(self) -> tuple[bool, list[Any]]:
        """(start over, elements numbered since the last message), then forget them."""
        msg = (self.flush, self.new)
        self.flush, self.new = False, []
        return msg


class _Uninterner:
    """Receiver side of `_Interner`: element numbers back to (shared) `UIElement` objects."""

    def __init__(self) -> None:
        self.table: list[Any] = []

    def apply(self, msg: tuple[bool, list[Any]]) -> None:
        flush, new = msg
        if flush:
            self.table = []
        self.table += new

    def decode(self, obs: Any) -> Any:
        if not isinstance(obs, dict) or "ui_elements" not in obs:
            return obs
        t = self.table
        return {**obs, "ui_elements": tuple([t[k] for k in obs["ui_elements"]])}


def _run_lane(envs: dict[int, gym.Env], interner: _Interner,
              resets: dict[int, tuple[int | None, dict[str, Any] | None]], actions: dict[int, Any]) -> Any:
    """Reset the sub-envs in `resets` and step those in `actions` (global indices): (interned elements,
    per-env results with element numbers)."""
    interner.start()
    reset_out = {}
    for i, (seed, opts) in resets.items():
        obs, info = envs[i].reset(seed=seed, options=opts)
        reset_out[i] = (interner.encode(obs), info)
    step_out = {}
    for i, a in actions.items():
        obs, *rest = envs[i].step(a)
        step_out[i] = (interner.encode(obs), *rest)
    return interner.take(), (reset_out, step_out)


def _worker(conn: Any, env_id: str, env_kwargs: dict[str, Any], indices: list[int]) -> None:
    """A worker process: owns the sub-envs `indices` and answers ("run" | "call" | "close", ...) messages."""
    import voyager_gym  # noqa: F401  (registers the env ids)

    envs = {i: gym.make(env_id, **env_kwargs) for i in indices}
    interner = _Interner()
    try:
        while True:
            try:
                cmd, args = conn.recv()
            except EOFError:  # the parent died (killed): nothing left to answer
                return
            try:
                if cmd == "run":
                    out: Any = _run_lane(envs, interner, *args)
                elif cmd == "call":
                    ids, name, a, kw = args
                    out = {i: envs[i].get_wrapper_attr(name)(*a, **kw) for i in ids}
                elif cmd == "get_attr":
                    ids, name = args
                    out = {i: envs[i].get_wrapper_attr(name) for i in ids}
                elif cmd == "close":
                    conn.send((True, None))
                    return
                else:
                    raise ValueError(f"unknown worker command {cmd!r}; expected run, call, get_attr or close")
                conn.send((True, out))
            except PIPE_ERRORS:  # the parent closed its end (it is gone, or closing): nobody to answer
                return
            except Exception as e:  # noqa: BLE001 - sent back and re-raised in the caller
                try:
                    conn.send((False, e))
                except PIPE_ERRORS:
                    return
    finally:
        for env in envs.values():
            env.close()
        conn.close()


class PipelinedVectorEnv(gym.vector.VectorEnv):
    """Sub-envs split into `lanes` fixed, contiguous blocks; `workers` processes host them (lane k in worker
    k % workers; 0 workers: all in this process, stepped on demand). `send(lane, resets, actions)` starts a
    lane's resets and steps and returns at once; `recv(lane)` waits for its results. A caller that acts on
    one lane while the others step keeps both cores busy, and since what happens depends only on the lanes
    (never on the worker count or on timing), any worker count gives the same results.

    The usual `reset` / `step` (all sub-envs, gymnasium's batched outputs, autoreset DISABLED, `reset_mask`
    in options) work too. Workers start by `start_method` (forkserver: never a fork of a process whose other
    threads, torch's or wandb's, may hold locks)."""

    def __init__(self, num_envs: int, lanes: int = 2, workers: int = 1, env_id: str = ENV_ID,
                 start_method: str = "forkserver", **env_kwargs: Any):
        if num_envs < 1 or not 1 <= lanes <= num_envs:
            raise ValueError(f"need num_envs >= 1 and 1 <= lanes <= num_envs; got num_envs={num_envs}, "
                             f"lanes={lanes}")
        if workers < 0:
            raise ValueError(f"workers must be >= 0 (0: in this process), got {workers}")
        import multiprocessing as mp

        import voyager_gym  # noqa: F401  (registers the env ids)

        self.num_envs = num_envs
        self.lanes = [lane.tolist() for lane in np.array_split(np.arange(num_envs), lanes)]
        self.workers = min(workers, lanes)
        probe = gym.make(env_id, **env_kwargs)
        self.single_observation_space = probe.observation_space
        self.single_action_space = probe.action_space
        self.metadata = dict(probe.metadata, autoreset_mode=AutoresetMode.DISABLED)
        self.render_mode = probe.render_mode
        self.observation_space = batch_space(self.single_observation_space, num_envs)
        self.action_space = batch_space(self.single_action_space, num_envs)
        self._local: dict[int, gym.Env] = {}
        self._conns: list[Any] = []
        self._procs: list[Any] = []
        self._pending: dict[int, Any] = {}  # lane -> its answer (None while still on the pipe)
        self._queue: list[list[int]] = [[] for _ in range(max(1, workers))]  # lanes in flight per worker
        self._interners = [_Interner()]  # in-process lanes only
        self._uninterners = [_Uninterner() for _ in range(max(1, self.workers))]  # one per worker
        if self.workers == 0:
            self._local = {0: probe} | {i: gym.make(env_id, **env_kwargs) for i in range(1, num_envs)}
        else:
            probe.close()
            ctx = mp.get_context(start_method)
            for w in range(self.workers):
                ids = [i for k, lane in enumerate(self.lanes) if k % self.workers == w for i in lane]
                parent, child = ctx.Pipe()
                p = ctx.Process(target=_worker, args=(child, env_id, env_kwargs, ids), daemon=True,
                                name=f"voyager-gym-lanes-{w}")
                p.start()
                child.close()
                self._conns.append(parent)
                self._procs.append(p)
        self._obs: list[Any] = [None] * num_envs

    # -- lane protocol ---------------------------------------------------------------------------------
    def lane_of(self, i: int) -> int:
        return next(k for k, lane in enumerate(self.lanes) if i in lane)

    def _check_lane(self, lane: int, ids: Any) -> None:
        if not 0 <= lane < len(self.lanes):
            raise ValueError(f"lane {lane} out of range; expected 0..{len(self.lanes) - 1}")
        bad = [i for i in ids if i not in self.lanes[lane]]
        if bad:
            raise ValueError(f"sub-envs {bad} are not in lane {lane} (its sub-envs: {self.lanes[lane]})")
        if lane in self._pending:
            raise RuntimeError(f"lane {lane} already has a request in flight; recv({lane}) it first")

    def send(self, lane: int, resets: dict[int, tuple[int | None, dict[str, Any] | None]],
             actions: dict[int, Any]) -> None:
        """Start resetting `resets` ({sub-env: (seed, options)}), then stepping `actions` ({sub-env:
        action}), in `lane`; returns at once when workers host the lane."""
        self._check_lane(lane, [*resets, *actions])
        if self.workers == 0:
            self._pending[lane] = _run_lane(self._local, self._interners[0], resets, actions)
        else:
            w = lane % self.workers
            self._send(w, ("run", (resets, actions)))
            self._pending[lane] = None  # its answer, once read off the pipe
            self._queue[w].append(lane)

    def recv(self, lane: int) -> LaneResult:
        """The results of `lane`'s request: ({sub-env: (obs, info)} of resets, {sub-env: (obs, reward,
        terminated, truncated, info)} of steps)."""
        if lane not in self._pending:
            raise RuntimeError(f"lane {lane} has no request in flight; send() one first")
        w = lane % self.workers if self.workers else 0
        if self.workers and self._pending[lane] is None:
            self._read_until(w, lane)
        elements, (resets, steps) = self._pending.pop(lane)
        un = self._uninterners[w]
        un.apply(elements)
        resets = {i: (un.decode(obs), info) for i, (obs, info) in resets.items()}
        steps = {i: (un.decode(obs), *rest) for i, (obs, *rest) in steps.items()}
        for i, (obs, *_rest) in {**resets, **steps}.items():
            self._obs[i] = obs
        return resets, steps

    def _read_until(self, w: int, lane: int | None = None) -> None:
        """Read worker w's answers in the order its requests went out, up to `lane`'s (all when None)."""
        while self._queue[w]:
            k = self._queue[w].pop(0)
            self._pending[k] = self._answer(w)
            if k == lane:
                return

    def _worker_died(self, w: int) -> VectorWorkerDied:
        ids = [i for k, lane in enumerate(self.lanes) if k % self.workers == w for i in lane]
        self._queue[w] = []
        return _died("PipelinedVectorEnv", ids, self._procs[w])

    def _send(self, w: int, msg: Any) -> None:
        try:
            self._conns[w].send(msg)
        except PIPE_ERRORS:
            raise self._worker_died(w) from None

    def _answer(self, w: int) -> Any:
        try:
            ok, out = self._conns[w].recv()
        except PIPE_ERRORS:
            raise self._worker_died(w) from None
        if not ok:
            raise out
        return out

    def _by_worker(self, ids: list[int], cmd: str, *args: Any) -> dict[int, Any]:
        """Send `cmd` for sub-envs `ids` to the workers that host them (or run it here); merged answers."""
        if self.workers == 0:
            if cmd == "call":
                name, a, kw = args
                return {i: self._local[i].get_wrapper_attr(name)(*a, **kw) for i in ids}
            return {i: self._local[i].get_wrapper_attr(args[0]) for i in ids}
        owner = {i: self.lane_of(i) % self.workers for i in ids}
        used = sorted(set(owner.values()))
        for w in used:
            self._read_until(w)  # lanes in flight answer first; their results wait for recv()
            self._send(w, (cmd, ([i for i in ids if owner[i] == w], *args)))
        out: dict[int, Any] = {}
        for w in used:
            out.update(self._answer(w))
        return out

    def call_subset(self, ids: list[int], name: str, *args: Any, **kwargs: Any) -> list[Any]:
        """`call` on sub-envs `ids` only, results in that order."""
        out = self._by_worker(list(ids), "call", name, args, kwargs)
        return [out[i] for i in ids]

    # -- gymnasium VectorEnv API -------------------------------------------------------------------------
    def reset(self, *, seed: int | list[int | None] | None = None, options: dict[str, Any] | None = None):
        if seed is None or isinstance(seed, int):
            seed = [None if seed is None else seed + i for i in range(self.num_envs)]
        if len(seed) != self.num_envs:
            raise ValueError(f"got {len(seed)} seeds; expected num_envs={self.num_envs}")
        options = dict(options or {})
        mask = np.asarray(options.pop("reset_mask", np.ones(self.num_envs, bool)), dtype=bool)
        if mask.shape != (self.num_envs,):
            raise ValueError(f"options['reset_mask'] must have shape ({self.num_envs},), got {mask.shape}")
        infos: dict[str, Any] = {}
        for k, lane in enumerate(self.lanes):
            self.send(k, {i: (seed[i], options) for i in lane if mask[i]}, {})
        for k in range(len(self.lanes)):
            for i, (_, info) in sorted(self.recv(k)[0].items()):
                infos = self._add_info(infos, info, i)
        return self._batched_obs(), infos

    def step(self, actions: Any):
        rewards = np.zeros(self.num_envs)
        terms = np.zeros(self.num_envs, bool)
        truncs = np.zeros(self.num_envs, bool)
        infos: dict[str, Any] = {}
        for k, lane in enumerate(self.lanes):
            self.send(k, {}, {i: actions[i] for i in lane})
        for k in range(len(self.lanes)):
            for i, (_, r, te, tr, info) in sorted(self.recv(k)[1].items()):
                rewards[i], terms[i], truncs[i] = r, te, tr
                infos = self._add_info(infos, info, i)
        return self._batched_obs(), rewards, terms, truncs, infos

    def _batched_obs(self) -> Any:
        if any(o is None for o in self._obs):
            raise RuntimeError("some sub-envs were never reset; call reset() first")
        return concatenate(self.single_observation_space, self._obs,
                           create_empty_array(self.single_observation_space, self.num_envs))

    def call(self, name: str, *args: Any, **kwargs: Any) -> tuple[Any, ...]:
        return tuple(self.call_subset(list(range(self.num_envs)), name, *args, **kwargs))

    def snapshot(self, ids: Sequence[int] | None = None) -> list[Snapshot]:
        """Snapshots of sub-envs `ids` (default: all); see the module's `snapshot`."""
        return snapshot(self, ids)  # the module function

    def restore(self, snapshots: dict[int, Snapshot]):
        """Restore sub-env i to snapshots[i]: (batched observations, infos); see the module's `restore`."""
        return restore(self, snapshots)  # the module function

    def get_attr(self, name: str) -> tuple[Any, ...]:
        out = self._by_worker(list(range(self.num_envs)), "get_attr", name)
        return tuple(out[i] for i in range(self.num_envs))

    def close_extras(self, **kwargs: Any) -> None:
        for env in self._local.values():
            env.close()
        self._local = {}
        for w, conn in enumerate(self._conns):
            try:  # answers still on the pipe first (a lane in flight), then the close
                while self._queue[w]:
                    self._queue[w].pop(0)
                    conn.recv()
                conn.send(("close", None))
                conn.recv()
            except (OSError, *PIPE_ERRORS):  # a dead worker: nothing to close
                pass
            conn.close()
        self._pending = {}
        for p in self._procs:
            p.join(timeout=5)
            if p.is_alive():
                p.terminate()
        self._conns, self._procs = [], []
