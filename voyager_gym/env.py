"""VoyagerEnv: an AndroidWorld phone (SimDroid or the real emulator) as a Gymnasium env with verifier
rewards. Episode rules are AndroidWorld's: the step budget is `int(10 * complexity)`; the reward is the
verifier's score (0..1, composites pay 0.5 a part) and is paid only when the agent ends with a `status`
action; running out of steps scores 0 (truncated); a backend error ends the episode as errored
(`info["errored"]`, score NaN) so that statistics can exclude it. Malformed action text is an *invalid
action*: the step is used, nothing happens, `info["invalid_action"]` says why.

`snapshot()` captures an episode between two steps and `restore(snapshot)` (or `reset(options={"snapshot":
s})`) puts any env built with the same settings back there: the same actions then give the same
observations, rewards and infos, so an episode can branch (SimDroid only)."""

from __future__ import annotations

import copy
import dataclasses
import string
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from voyager_gym.actions import MAX_ACTION_CHARS, Action, ActionError, try_parse_action
from voyager_gym.backends.base import Backend, ExpertOffPath
from voyager_gym.observation import UIElement, UIElementSpace

# Goals, UI text and policy output are free text: printable ASCII plus Latin, Greek, Cyrillic, punctuation,
# currency and arrows (Gymnasium's Text space defaults to letters and digits only).
TEXT_CHARSET = frozenset(string.printable) | frozenset(chr(c) for c in range(0xA0, 0x2400))
MAX_GOAL_LEN = 4000
MAX_ACTION_LEN = MAX_ACTION_CHARS


class _Text(spaces.Text):
    """Gymnasium's Text space whose copies share its character tables (never changed after construction)
    and copy the rest (its RNG): vector envs deep-copy every env's spaces, and with TEXT_CHARSET's ~9,000
    characters a full copy takes ~12 ms; 8 envs' make_vec spent ~160 ms of its ~260 ms in them."""

    def __deepcopy__(self, memo: dict) -> _Text:
        new = object.__new__(type(self))
        memo[id(self)] = new
        for k, v in vars(self).items():
            setattr(new, k, v if k.startswith("_char") else copy.deepcopy(v, memo))
        return new


# built once (sorting and indexing the charset takes a few ms); each env gets its own copy
_GOAL_SPACE = _Text(MAX_GOAL_LEN, min_length=0, charset=TEXT_CHARSET)
_ACTION_SPACE = _Text(MAX_ACTION_LEN, min_length=0, charset=TEXT_CHARSET)

RESET_OPTIONS = ("task", "params", "instance_seed", "instances", "snapshot")
INSTANCE_OPTIONS = ("task", "params", "instance_seed", "snapshot")


def make_backend(backend: str | Backend, **kwargs: Any) -> Backend:
    if isinstance(backend, Backend):
        return backend
    if backend in ("sim", "simdroid"):
        from voyager_gym.backends.sim import SimDroidBackend

        return SimDroidBackend(**kwargs)
    if backend == "androidworld":
        from voyager_gym.backends.androidworld import AndroidWorldBackend

        return AndroidWorldBackend(**kwargs)
    raise ValueError(f"unknown backend {backend!r}; expected 'simdroid' or 'androidworld'")


def task_names() -> list[str]:
    """Every task name, sorted: the task catalogue's (`voyager_gym.catalogue`), AndroidWorld's 116 tasks
    (an env on another backend checks names against its own registry when it is built or reset)."""
    from voyager_gym import catalogue

    return list(catalogue.names())


def app_names(env: Any = "simdroid") -> tuple[str, ...]:
    """The apps open_app can name on `env`: a VoyagerEnv, a wrapper of one or a vector env of them (its
    `metadata["app_names"]`), or a backend's name (its vocabulary without building an env: SimDroid's
    launcher apps; AndroidWorld's open_app table, which needs the android_world package)."""
    if env in ("sim", "simdroid"):
        from voyager_gym.backends.sim.phone import launcher_app_names

        return tuple(launcher_app_names())
    if env == "androidworld":
        from voyager_gym.backends.androidworld import import_android_world, open_app_names

        return open_app_names(import_android_world().adb_utils)
    if isinstance(env, str):
        raise ValueError(f"unknown backend {env!r}; expected 'simdroid', 'androidworld' or an env")
    names = getattr(env, "metadata", {}).get("app_names")
    if not names:
        raise ValueError(f"{type(env).__name__} has no metadata['app_names']; expected a VoyagerEnv or a "
                         "vector env of them (their backend's open_app vocabulary)")
    return tuple(names)


@dataclasses.dataclass(frozen=True, eq=False)
class Snapshot:
    """A VoyagerEnv between two steps: the episode's bookkeeping, the observation and info returned last,
    the env RNG's state and the backend's state (SimDroid: device, app screens and back stacks, clock, task,
    noise state). Picklable, so it restores in another process (about 10 KB pickled mid-episode, 70 KB at
    most over the 116 tasks; benchmarks/snapshot.py). In-process it holds the renderer's read-only frames of
    the screen (shared, not copied), so restoring it there re-renders nothing; pickling drops them."""

    settings: dict[str, Any]  # the env settings a restoring env must share
    task: str
    params: dict[str, Any]
    goal: str
    steps: int  # steps taken in the episode
    max_steps: int
    done: bool  # the episode had ended: a restored env must be reset (or restored) before it steps
    info: dict[str, Any]  # the info returned with the observation
    elements: tuple[UIElement, ...]
    screen_key: str
    rng: dict[str, Any]  # the env generator's bit_generator.state
    backend: Any


class VoyagerEnv(gym.Env):
    """Gymnasium env over a phone backend.

    Args:
        backend: 'simdroid' (default) or a Backend instance.
        tasks: task names `reset()` may choose from when `options` names none (default: all).
        render_scale: pixels are (2400*s, 1080*s, 3): read-only arrays (SimDroid hands out the frame it just
            drew, which its renderer also caches); no two observations share memory.
        noise: SimDroid screen noise: 'default', 'none', 'heavy', a dict or a NoiseConfig.
        observation_mode: 'full' (pixels, ui_elements, goal) or 'elements' (no pixels: much faster).
        render_mode: None or 'rgb_array'.
        max_steps: override AndroidWorld's int(10 * complexity) budget.

    `metadata["app_names"]` is the backend's open_app vocabulary (SimDroid's launcher apps, or the app table
    of AndroidWorld's open_app): what a policy that names apps is built with (`app_names(env)`).
    """

    metadata = {"render_modes": ["rgb_array"], "render_fps": 2}

    def __init__(
        self,
        backend: str | Backend = "simdroid",
        tasks: list[str] | None = None,
        render_scale: float = 1.0,
        noise: Any = "default",
        observation_mode: str = "full",
        render_mode: str | None = None,
        max_steps: int | None = None,
        **backend_kwargs: Any,
    ):
        integral = isinstance(max_steps, int | np.integer) and not isinstance(max_steps, bool)
        if max_steps is not None and (not integral or max_steps < 1):
            raise ValueError(f"max_steps={max_steps!r}: expected None (AndroidWorld's budget) or an "
                             "integer >= 1")
        if isinstance(render_scale, bool) or not isinstance(render_scale, int | float) or not (
            0.05 <= render_scale <= 2.0
        ):
            raise ValueError(f"render_scale={render_scale!r}: expected a number in [0.05, 2.0]")
        if tasks is not None and (isinstance(tasks, str) or not all(isinstance(t, str) for t in tasks)):
            raise ValueError(f"tasks={tasks!r}: expected a list of task names (or None for all)")
        if observation_mode not in ("full", "elements"):
            raise ValueError(f"observation_mode must be 'full' or 'elements', got {observation_mode!r}")
        if render_mode not in (None, "rgb_array"):
            raise ValueError(f"render_mode must be None or 'rgb_array', got {render_mode!r}")
        if isinstance(backend, str) and backend in ("sim", "simdroid"):
            backend_kwargs = {"render_scale": render_scale, "noise": noise, **backend_kwargs}
        elif backend == "androidworld":  # real screens bring their own noise
            backend_kwargs = {"render_scale": render_scale, **backend_kwargs}
        self.backend = make_backend(backend, **backend_kwargs)
        # the action vocabulary of this phone: the apps open_app can name (policies are built with it)
        self.metadata = {**type(self).metadata, "app_names": tuple(self.backend.app_names)}
        self.render_mode = render_mode
        self.render_scale = render_scale
        self.observation_mode = observation_mode
        self.max_steps_override = max_steps
        known = self.backend.task_names
        self.tasks = list(tasks) if tasks else list(known)
        for t in self.tasks:
            if t not in known:
                self.backend.task_info(t)  # raises the did-you-mean error
        w, h = self.backend.screen_size
        self.pixel_shape = (max(1, round(h * render_scale)), max(1, round(w * render_scale)), 3)
        obs: dict[str, spaces.Space] = {}
        if observation_mode == "full":
            obs["pixels"] = spaces.Box(0, 255, self.pixel_shape, dtype=np.uint8)
        obs["ui_elements"] = spaces.Sequence(UIElementSpace())
        obs["goal"] = copy.deepcopy(_GOAL_SPACE)
        self.observation_space = spaces.Dict(obs)
        self.action_space = copy.deepcopy(_ACTION_SPACE)
        self.task_name: str | None = None
        self.params: dict[str, Any] | None = None
        self.goal = ""
        self._steps = 0
        self._max_steps = 0
        self._done = True
        self._last_pixels: np.ndarray | None = None
        self._screen_key = ""
        self._elements: list[UIElement] = []
        self._last_info: dict[str, Any] = {}

    # -- gymnasium API ---------------------------------------------------------------------------------
    @property
    def task_names(self) -> list[str]:
        return list(self.backend.task_names)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        """Options: `task` (name), and either `params` (a full params dict, e.g. from a suite) or
        `instance_seed` (params drawn by the task's seeded generator); or `instances`, a map from reset seed
        to such options (for batched resets of different instances). Without options a task and an instance
        are drawn from the env's RNG. G envs given the same task and params run the same instance.
        `snapshot` (alone) restores a `Snapshot` instead (`restore`), the way wrappers and vector envs can."""
        super().reset(seed=seed)
        options = _check_options(options, seed)
        if "snapshot" in options:
            return self.restore(options["snapshot"])
        name = options.get("task")
        if name is None:
            name = self.tasks[int(self.np_random.integers(len(self.tasks)))]
        info_static = self.backend.task_info(name)
        self._done = True  # until the new episode has started (a refused reset starts none)
        params = options.get("params")
        if params is None:
            inst = options.get("instance_seed")
            if inst is None:
                inst = int(self.np_random.integers(2**32))
            params = self.backend.generate_params(name, int(inst))
        else:  # given params: the task's schema (keys, kinds, string lengths; voyager_gym.params)
            self.backend.check_params(name, params)
        goal = self.backend.reset(name, dict(params), self.np_random)
        if not self.observation_space["goal"].contains(goal):
            raise ValueError(_goal_error(name, goal, params))
        self.task_name, self.params, self.goal = name, dict(params), goal
        self._steps = 0
        self._max_steps = self.max_steps_override or info_static["max_steps"]
        self._done = False
        obs = self._observe()
        self._last_info = self._info(score=0.0, success=False, invalid=None, errored=False)
        return obs, dict(self._last_info)

    def step(self, action: str | Action | dict):
        if self._done:
            raise RuntimeError("step() called on a finished episode; call reset() first")
        self._steps += 1
        act, invalid = try_parse_action(action)
        errored = False
        reward, score, terminated = 0.0, 0.0, False
        if act is not None:
            try:
                self.backend.execute(act)
            except ActionError as e:
                invalid = str(e)
            except Exception as e:  # noqa: BLE001 - a device failure ends the episode as errored
                errored, invalid = True, None
                self._error = f"{type(e).__name__}: {e}"
        else:
            try:
                self.backend.execute(Action("wait"))  # an invalid action still uses a step of device time
            except Exception as e:  # noqa: BLE001
                errored = True
                self._error = f"{type(e).__name__}: {e}"
        if errored:
            terminated, score = True, float("nan")
        elif act is not None and invalid is None and act.action_type == "status":
            terminated = True
            try:
                score = float(self.backend.score())
            except Exception as e:  # noqa: BLE001
                errored, score = True, float("nan")
                self._error = f"{type(e).__name__}: {e}"
            reward = 0.0 if errored else score
        truncated = not terminated and self._steps >= self._max_steps
        self._done = terminated or truncated
        obs = self._observe() if not errored else self._last_obs()
        info = self._info(
            score=score,
            success=bool(score >= 1.0) if not errored else False,
            invalid=invalid,
            errored=errored,
        )
        # JSON text ("" for an invalid action): one type for every sub-env, so vector envs can batch it
        info["action"] = act.to_json() if act is not None else ""
        self._last_info = dict(info)
        return obs, float(reward), terminated, truncated, info

    def render(self) -> np.ndarray | None:
        if self.render_mode != "rgb_array":
            return None
        if self._last_pixels is None:
            px, _, _ = self.backend.observe(pixels=True)
            self._last_pixels = px
        return self._last_pixels

    def close(self) -> None:
        self.backend.close()

    # -- extras ----------------------------------------------------------------------------------------
    def expert_action(self, off_path: str | None = None) -> str:
        """The task expert's next action as JSON text (SimDroid), computed from the current observation.
        Raises `ExpertOffPath` (a LookupError) when the expert has no action from this state: it follows its
        own path from the reset, and a state other actions led to may be off it (see docs/env.md). With
        `off_path` given, such a state returns it instead (e.g. `""`, for a vector env's `call` over many
        states, where one raise would lose the others' answers)."""
        try:
            return self.backend.expert_action().to_json()
        except ExpertOffPath:
            if off_path is None:
                raise
            return off_path

    @property
    def elements(self) -> list[UIElement]:
        return list(self._elements)

    def snapshot(self) -> Snapshot:
        """This episode as it is now (after the last reset, step or restore); see `Snapshot`. The real
        AndroidWorld backend raises NotImplementedError: only SimDroid snapshots cheaply."""
        if self.task_name is None:
            raise RuntimeError("snapshot() before reset(): there is no episode to snapshot")
        return Snapshot(
            settings=self._settings(),
            task=self.task_name,
            params=dict(self.params or {}),
            goal=self.goal,
            steps=self._steps,
            max_steps=self._max_steps,
            done=self._done,
            info={**self._last_info, "params": dict(self._last_info["params"])},
            elements=tuple(self._elements),
            screen_key=self._screen_key,
            rng=self.np_random.bit_generator.state,
            backend=self.backend.snapshot(),
        )

    def restore(self, snapshot: Snapshot) -> tuple[dict[str, Any], dict[str, Any]]:
        """Replace the episode with `snapshot`'s, taken on this env or another one with the same settings (in
        any process); return the observation and info it had then. From there `step(a)` gives exactly what
        it gave after the snapshot. Through wrappers (gym.make) restore with `reset(options={"snapshot": s})`,
        which also tells them an episode is running."""
        if not isinstance(snapshot, Snapshot):
            raise ValueError(f"snapshot={type(snapshot).__name__}: expected a VoyagerEnv.snapshot()")
        mine = self._settings()
        for k, v in snapshot.settings.items():
            if mine.get(k) != v:
                raise ValueError(f"the snapshot was taken with {k}={v!r}; this env has {k}={mine.get(k)!r}")
        self.np_random.bit_generator.state = snapshot.rng
        self._last_pixels = self.backend.restore(snapshot.backend, self.np_random)
        self.task_name, self.params, self.goal = snapshot.task, dict(snapshot.params), snapshot.goal
        self._steps, self._max_steps, self._done = snapshot.steps, snapshot.max_steps, snapshot.done
        self._elements, self._screen_key = list(snapshot.elements), snapshot.screen_key
        self._last_info = snapshot.info
        self._error = snapshot.info.get("error", "")
        return self._last_obs(), {**snapshot.info, "params": dict(snapshot.info["params"])}

    # -- internals -------------------------------------------------------------------------------------
    def _settings(self) -> dict[str, Any]:
        """What a snapshot's restoring env must share (the backend checks its own, e.g. SimDroid's noise)."""
        return {
            "backend": type(self.backend).__name__,
            "render_scale": self.render_scale,
            "observation_mode": self.observation_mode,
            "render_mode": self.render_mode,
        }

    def _observe(self) -> dict[str, Any]:
        want_px = self.observation_mode == "full" or self.render_mode == "rgb_array"
        px, elements, key = self.backend.observe(pixels=want_px)
        self._last_pixels = px
        self._elements = elements
        self._screen_key = key
        return self._last_obs()

    def _last_obs(self) -> dict[str, Any]:
        obs: dict[str, Any] = {}
        if self.observation_mode == "full":
            obs["pixels"] = (
                self._last_pixels if self._last_pixels is not None else np.zeros(self.pixel_shape, np.uint8)
            )
        obs["ui_elements"] = tuple(self._elements)
        obs["goal"] = self.goal
        return obs

    def _info(self, score: float, success: bool, invalid: str | None, errored: bool) -> dict[str, Any]:
        info = {
            "task": self.task_name,
            "goal": self.goal,
            "params": dict(self.params or {}),
            "score": score,
            "success": success,
            "invalid_action": invalid,
            "errored": errored,
            "screen_key": self._screen_key,
            "step": self._steps,
            "max_steps": self._max_steps,
        }
        if errored:
            info["error"] = getattr(self, "_error", "")
        return info


def _goal_error(task: str, goal: str, params: dict[str, Any]) -> str:
    """Why `goal` (task `task` with `params`) is outside the goal space, naming the param to blame."""
    strings = {k: v for k, v in params.items() if isinstance(v, str)}
    if len(goal) > MAX_GOAL_LEN:
        longest = max(strings, key=lambda k: len(strings[k]), default=None)
        blame = f": shorten params[{longest!r}] ({len(strings[longest]):,} characters)" if longest else ""
        return (f"the goal of task {task} with these params is {len(goal):,} characters; the goal space "
                f"holds at most {MAX_GOAL_LEN:,}{blame}")
    bad = next((c for c in goal if c not in TEXT_CHARSET), "")
    blame = next((f" (from params[{k!r}])" for k, v in strings.items() if bad and bad in v), "")
    return (f"the goal of task {task} with these params holds {bad!r} (U+{ord(bad or ' '):04X}){blame}, "
            "outside the goal space's characters (voyager_gym.env.TEXT_CHARSET)")


def _check_options(options: Any, seed: int | None) -> dict[str, Any]:
    """reset()'s options as one instance's {task, params, instance_seed}; a wrong key, type or value is a
    ValueError that names it and says what is allowed (never a bare TypeError, never silently ignored)."""
    if options is None:
        return {}
    if not isinstance(options, dict):
        raise ValueError(f"options={options!r:.80}: expected a dict with some of {', '.join(RESET_OPTIONS)}")
    options = dict(options)
    unknown = set(options) - set(RESET_OPTIONS)
    if unknown:
        raise ValueError(f"unknown reset option(s) {sorted(unknown)}; expected some of "
                         f"{', '.join(RESET_OPTIONS)}")
    if "instances" in options:
        # A vector env passes one options dict to every sub-env; `instances` maps each sub-env's reset
        # seed to its own {"task", "params"}, so one batched reset can start different task instances.
        table = options.pop("instances")
        if not isinstance(table, dict):
            raise ValueError(f"options['instances']={table!r:.80}: expected a map from reset seed to options")
        if seed not in table:
            raise KeyError(f"reset seed {seed} has no entry in options['instances'] (keys: {sorted(table)})")
        entry = table[seed]
        if not isinstance(entry, dict):
            raise ValueError(f"options['instances'][{seed}]={entry!r:.80}: expected a dict with some of "
                             f"{', '.join(INSTANCE_OPTIONS)}")
        bad = set(entry) - set(INSTANCE_OPTIONS)
        if bad:
            raise ValueError(f"unknown key(s) {sorted(bad)} in options['instances'][{seed}]; expected some "
                             f"of {', '.join(INSTANCE_OPTIONS)}")
        options.update(entry)
    if "snapshot" in options:
        others = sorted(set(options) - {"snapshot"})
        if others:
            raise ValueError(f"reset option 'snapshot' replaces the episode; got it with {others} as well")
        if not isinstance(options["snapshot"], Snapshot):
            raise ValueError(f"options['snapshot']={options['snapshot']!r:.80}: expected a Snapshot")
    task, params, inst = options.get("task"), options.get("params"), options.get("instance_seed")
    if task is not None and not isinstance(task, str):
        raise ValueError(f"options['task']={task!r}: expected a task name (str)")
    if params is not None and not isinstance(params, dict):
        raise ValueError(f"options['params']={params!r:.80}: expected a dict of the task's params")
    if inst is not None and (isinstance(inst, bool) or not isinstance(inst, int | np.integer) or inst < 0):
        raise ValueError(f"options['instance_seed']={inst!r}: expected an integer >= 0")
    return options
