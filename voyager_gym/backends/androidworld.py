"""AndroidWorldBackend: the Backend contract over a real AndroidWorld emulator (the `android_world` package of
google-research/android_world).

The backend does what AndroidWorld's own runner (suite_utils / episode_runner) does, one step at a time:
- task instances come from `registry.TaskRegistry().get_registry(family)` by name; params are drawn as
  suite_utils does (`set_device_time`, `random.seed(instance_seed)`, `generate_random_params()`, then
  `params["seed"] = instance_seed`), so `voyager_gym.suites` instance seeds give AndroidWorld's instances;
- reset: tear the previous instance down, `initialize_task(env)`, `env.reset(go_home=start_on_home_screen)`,
  then the first observation after the agent's transition pause (AndroidWorld's base agent: sleep
  `transition_pause` then `get_state()`, or `get_state(wait_to_stabilize=True)` when it is None);
- execute: our `Action` becomes a `JSONAction` for `env.execute_action` (`answer` stores its text in
  `env.interaction_cache`, which information-retrieval verifiers read; `status` touches no device), then the
  post-transition state is fetched, so a device failure surfaces in the step that caused it;
- score: `task.is_successful(env)`.

Errors follow AndroidWorld's runner: a ValueError/IndexError from actuation (bad index, element without a
box, no app name) is the agent's mistake, an *invalid action*; any other exception is a device error that
ends the episode as *errored*. A failure inside `reset` (initialize_task, the first state) does not raise:
the episode starts on an empty screen and its first step ends it as errored, so one broken instance never
stops a rollout. `screen_key` hashes the element list without volatile parts (status-bar clock, toasts).

AndroidWorld seeds Python's global `random` when it draws params and initialises tasks; the backend restores
the global state afterwards so nothing else in the process sees the change.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import importlib
import logging
import os
import random
import re
import shutil
import time
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
from PIL import Image

from voyager_gym.actions import STATUS, Action, ActionError
from voyager_gym.backends.base import Backend, BackendError, unknown_task_error
from voyager_gym.observation import SYSTEMUI, BoundingBox, UIElement

log = logging.getLogger(__name__)

INSTALL_HELP = (
    "AndroidWorldBackend needs the `android_world` package (not on PyPI). Install it from its repository:\n"
    "  git clone https://github.com/google-research/android_world.git\n"
    "  cd android_world && pip install -r requirements.txt\n"
    "  pip install -e .   # or: python setup.py install\n"
    "then start an emulator (Pixel 6, API 33, AVD 'AndroidWorldAvd'):\n"
    "  emulator -avd AndroidWorldAvd -no-snapshot -grpc 8554\n"
    "See docs/androidworld.md. Without an emulator, this repository's tests use a SimDroid test double "
    "of the package (tests/aw_standin: `with tests.aw_standin.installed(): ...`)."
)

VOLATILE_RESOURCES = frozenset({f"{SYSTEMUI}:id/clock", f"{SYSTEMUI}:id/date"})
_TIME_TEXT = re.compile(r"\d{1,2}:\d{2}(\s?[AaPp][Mm])?")
_ELEMENT_FIELDS = tuple(
    f.name for f in dataclasses.fields(UIElement) if f.name not in ("bbox", "bbox_pixels")
)


@dataclasses.dataclass(frozen=True)
class AndroidWorldModules:
    """The android_world modules the backend uses (imported once, lazily)."""

    env_launcher: Any
    json_action: Any
    registry: Any
    adb_utils: Any  # holds the open_app table, `_PATTERN_TO_ACTIVITY`


def import_android_world() -> AndroidWorldModules:
    """Import android_world's launcher, action and registry modules, or raise ImportError saying how to
    install it."""
    try:
        return AndroidWorldModules(
            env_launcher=importlib.import_module("android_world.env.env_launcher"),
            json_action=importlib.import_module("android_world.env.json_action"),
            registry=importlib.import_module("android_world.registry"),
            adb_utils=importlib.import_module("android_world.env.adb_utils"),
        )
    except ImportError as e:
        missing = getattr(e, "name", None)
        if missing and missing != "android_world" and not missing.startswith("android_world."):
            raise ImportError(
                f"android_world is installed but its dependency {missing!r} is missing ({e}); run "
                "`pip install -r requirements.txt` in the android_world checkout.\n" + INSTALL_HELP
            ) from e
        raise ImportError(f"cannot import android_world ({e}).\n{INSTALL_HELP}") from e


def open_app_names(adb_utils: Any) -> tuple[str, ...]:
    """AndroidWorld's open_app vocabulary: the first name of each pattern of its app table (`adb_utils.
    _PATTERN_TO_ACTIVITY`, the regexes open_app's name is matched against: "google chrome|chrome" gives
    "google chrome"), sorted."""
    table = getattr(adb_utils, "_PATTERN_TO_ACTIVITY", None)
    if not isinstance(table, dict) or not table:
        raise ImportError(f"{adb_utils.__name__} has no _PATTERN_TO_ACTIVITY table of open_app's app names; "
                          "expected android_world's adb_utils (update the android_world checkout)")
    return tuple(sorted({str(p).split("|")[0].strip() for p in table}))


def find_adb() -> str | None:
    """adb where the Android SDK puts it (as AndroidWorld's run.py looks), else on PATH."""
    for p in ("~/Library/Android/sdk/platform-tools/adb", "~/Android/Sdk/platform-tools/adb"):
        full = os.path.expanduser(p)
        if os.path.isfile(full):
            return full
    return shutil.which("adb")


@contextlib.contextmanager
def preserved_global_random(seed: int | None = None) -> Iterator[None]:
    """Run a block with the global `random` seeded (when `seed` is given), then restore its old state."""
    state = random.getstate()
    if seed is not None:
        random.seed(seed)
    try:
        yield
    finally:
        random.setstate(state)


# -- observations --------------------------------------------------------------------------------------
def _int_box(b: Any) -> BoundingBox | None:
    if b is None:
        return None
    return BoundingBox(int(round(b.x_min)), int(round(b.x_max)), int(round(b.y_min)), int(round(b.y_max)))


def convert_element(e: Any) -> UIElement:
    """An AndroidWorld UIElement as ours: same fields, pixel box rounded to ints, empty strings None and the
    normalised `bbox` left None (our contract; it is derivable from bbox_pixels and the screen size)."""
    kw: dict[str, Any] = {}
    for name in _ELEMENT_FIELDS:
        v = getattr(e, name, None)
        kw[name] = None if v == "" else v
    return UIElement(**kw, bbox=None, bbox_pixels=_int_box(getattr(e, "bbox_pixels", None)))


def is_volatile(e: UIElement) -> bool:
    """Parts of the element list that change while the screen stays the same: the status-bar clock and
    date, and toasts (they vanish by themselves)."""
    if e.class_name == "android.widget.Toast":
        return True
    if e.package_name == SYSTEMUI:
        return e.resource_name in VOLATILE_RESOURCES or bool(e.text and _TIME_TEXT.fullmatch(e.text))
    return False


def screen_key(elements: Sequence[UIElement]) -> str:
    """Identity of the logical screen: a stable hash (blake2b, not Python's salted hash) of every
    non-volatile element's logical fields."""
    parts = []
    for e in elements:
        if is_volatile(e):
            continue
        b = e.bbox_pixels
        parts.append(
            (
                e.class_name,
                e.text,
                e.content_description,
                e.hint_text,
                e.resource_name,
                None if b is None else (b.x_min, b.x_max, b.y_min, b.y_max),
                e.is_clickable,
                e.is_editable,
                e.is_scrollable,
                e.is_checkable,
                e.is_checked,
                e.is_enabled,
                e.is_focused,
                e.is_selected,
                e.package_name,
            )
        )
    return hashlib.blake2b(repr(parts).encode(), digest_size=12).hexdigest()


def scaled_shape(screen_size: tuple[int, int], render_scale: float) -> tuple[int, int, int]:
    """(H, W, 3) of a screen of (width, height) at `render_scale`, rounded as VoyagerEnv does."""
    w, h = screen_size
    return max(1, round(h * render_scale)), max(1, round(w * render_scale)), 3


def resize_frame(pixels: np.ndarray, shape: tuple[int, int, int]) -> np.ndarray:
    """The device's RGB(A) frame as uint8 RGB of `shape` (area-averaged when it shrinks)."""
    px = np.asarray(pixels)
    if px.ndim != 3 or px.shape[2] not in (3, 4):
        raise BackendError(f"device frame has shape {px.shape}; expected (H, W, 3) or (H, W, 4)")
    px = px[..., :3]
    if px.dtype != np.uint8:
        px = np.clip(px, 0, 255).astype(np.uint8)
    if px.shape == shape:
        return np.ascontiguousarray(px)
    img = Image.fromarray(np.ascontiguousarray(px)).resize((shape[1], shape[0]), Image.Resampling.BOX)
    return np.asarray(img)


# -- the backend ---------------------------------------------------------------------------------------
NO_SNAPSHOTS = (
    "the real AndroidWorld emulator cannot snapshot an episode cheaply (an emulator snapshot saves the whole "
    "device: seconds and gigabytes per state); branch episodes on SimDroid (backend='simdroid'), whose "
    "snapshots are plain data"
)


class AndroidWorldBackend(Backend):
    """The real AndroidWorld on an emulator (or any `AsyncEnv`).

    Args:
        console_port: emulator console port (5554 for the first emulator, 5556 the second, ...).
        grpc_port: the emulator's `-grpc` port (8554 in AndroidWorld's README).
        adb_path: adb binary (default: the Android SDK's, as AndroidWorld's run.py finds it, or PATH).
        emulator_setup: AndroidWorld's one-time app installation (`--perform_emulator_setup`).
        freeze_datetime: set the device date to AndroidWorld's October 2023 (benchmark default True).
        family: the task registry family ('android_world': all 116 tasks).
        render_scale: pixels are the logical screen times this (the device frame is area-resized).
        transition_pause: seconds to wait after an action before reading the screen (AndroidWorld's base
            agent: 1.0); None waits until the element list is stable (`get_state(wait_to_stabilize=True)`).
        env: an existing android_world AsyncEnv to drive instead of connecting to `console_port`.
    """

    def __init__(
        self,
        console_port: int = 5554,
        grpc_port: int = 8554,
        adb_path: str | None = None,
        emulator_setup: bool = False,
        freeze_datetime: bool = True,
        family: str = "android_world",
        render_scale: float = 1.0,
        transition_pause: float | None = 1.0,
        env: Any = None,
    ):
        if render_scale <= 0:
            raise ValueError(f"render_scale must be > 0, got {render_scale}")
        if transition_pause is not None and transition_pause < 0:
            raise ValueError(f"transition_pause must be >= 0 or None, got {transition_pause}")
        self.aw = import_android_world()
        registry = self.aw.registry.TaskRegistry()
        try:
            self.registry: dict[str, Any] = dict(registry.get_registry(family))
        except ValueError as e:
            families = "android_world, android, information_retrieval, miniwob, miniwob_subset"
            raise ValueError(
                f"unknown AndroidWorld task family {family!r}; expected one of {families}"
            ) from e
        self.family = family
        self.render_scale = float(render_scale)
        self.transition_pause = transition_pause
        if env is None:
            controller = getattr(self.aw.env_launcher, "android_world_controller", None)
            adb = (
                adb_path
                or find_adb()
                or getattr(controller, "DEFAULT_ADB_PATH", "~/Android/Sdk/platform-tools/adb")
            )
            env = self.aw.env_launcher.load_and_setup_env(
                console_port=console_port,
                emulator_setup=emulator_setup,
                freeze_datetime=freeze_datetime,
                adb_path=os.path.expanduser(adb),
                grpc_port=grpc_port,
            )
        self.env = env
        self.console_port = console_port
        try:
            w, h = env.logical_screen_size
            self.screen_size = (int(w), int(h))
        except Exception as e:  # noqa: BLE001 - keep AndroidWorld's Pixel 6 default and say so
            log.warning("could not read the logical screen size (%s); assuming 1080x2400", e)
            self.screen_size = (1080, 2400)
        self.pixel_shape = scaled_shape(self.screen_size, self.render_scale)
        self.task: Any = None  # the current TaskEval instance
        self.error: str | None = None  # why the current episode is broken (reported by the next step)
        self._state: Any = None
        self._obs: tuple[np.ndarray | None, list[UIElement], str] | None = None
        self._needs_tear_down = False

    # -- registry --------------------------------------------------------------------------------------
    @property
    def task_names(self) -> list[str]:
        return sorted(self.registry)

    @property
    def app_names(self) -> tuple[str, ...]:
        return open_app_names(self.aw.adb_utils)

    def task_cls(self, name: str) -> Any:
        if name not in self.registry:
            raise unknown_task_error(name, list(self.registry))
        return self.registry[name]

    def task_info(self, name: str) -> dict[str, Any]:
        cls = self.task_cls(name)
        complexity = getattr(cls, "complexity", None)
        if not isinstance(complexity, int | float):  # a property: only instances know it
            complexity = cls(self.generate_params(name, 0)).complexity
        apps = getattr(cls, "app_names", ())
        return {
            "name": name,
            "app_names": tuple(apps) if isinstance(apps, list | tuple) else (),
            "complexity": float(complexity),
            "max_steps": int(10 * complexity),
        }

    def generate_params(self, name: str, instance_seed: int) -> dict[str, Any]:
        cls = self.task_cls(name)
        if hasattr(cls, "set_device_time"):
            cls.set_device_time(self.env)
        with preserved_global_random(int(instance_seed)):
            params = dict(cls.generate_random_params())
        params["seed"] = int(instance_seed)
        return params

    # -- episode ---------------------------------------------------------------------------------------
    def reset(self, name: str, params: dict[str, Any], rng: np.random.Generator) -> str:
        """Start an instance. Device failures do not raise: they make the episode errored (see the module
        doc). `rng` is unused: the device is not ours to randomise."""
        cls = self.task_cls(name)
        self._tear_down()
        self.error, self._state, self._obs = None, None, None
        try:
            self.task = cls(dict(params))
        except Exception as e:  # noqa: BLE001
            self.task = None
            self.error = f"{name}({params!r}) could not be built: {type(e).__name__}: {e}"
            return _template_goal(cls, params)
        goal = _template_goal(cls, params)
        try:
            with preserved_global_random():
                self._needs_tear_down = True
                self.task.initialize_task(self.env)
            goal = self.task.goal
            self.env.reset(go_home=bool(getattr(self.task, "start_on_home_screen", True)))
            self._state = self._post_transition_state()
        except Exception as e:  # noqa: BLE001 - AndroidWorld's runner skips the instance as errored
            self.error = f"initializing {name}: {type(e).__name__}: {e}"
            log.warning("AndroidWorld %s", self.error)
        return goal

    def _post_transition_state(self) -> Any:
        if self.transition_pause is None:
            return self.env.get_state(wait_to_stabilize=True)
        if self.transition_pause > 0:
            time.sleep(self.transition_pause)
        return self.env.get_state(wait_to_stabilize=False)

    def observe(self, pixels: bool = True) -> tuple[np.ndarray | None, list[UIElement], str]:
        if self._state is None:  # a broken episode: an empty screen until the next step ends it
            return (np.zeros(self.pixel_shape, np.uint8) if pixels else None), [], screen_key([])
        if self._obs is None or (pixels and self._obs[0] is None):
            elements = [convert_element(e) for e in self._state.ui_elements]
            frame = resize_frame(self._state.pixels, self.pixel_shape) if pixels else None
            self._obs = (frame, elements, screen_key(elements))
        frame, elements, key = self._obs
        return (frame if pixels else None), list(elements), key

    def execute(self, action: Action) -> None:
        if self.error is not None:
            raise BackendError(self.error)
        if self.task is None:
            raise RuntimeError("execute() before reset()")
        if action.action_type == STATUS:
            return  # AndroidWorld's agents stop here; env.execute_action(status) is a no-op anyway
        try:
            ja = self.aw.json_action.JSONAction(**action.to_dict())
        except ValueError as e:
            raise ActionError(f"AndroidWorld rejects {action.to_json()}: {e}") from e
        try:
            self.env.execute_action(ja)
        except (ValueError, IndexError) as e:  # actuation's complaints about the action itself
            self._refresh_after_failed_action()
            raise ActionError(f"AndroidWorld could not execute {action.to_json()}: {e}") from e
        except Exception as e:
            self.error = f"executing {action.to_json()}: {type(e).__name__}: {e}"
            raise BackendError(self.error) from e
        try:
            self._state, self._obs = self._post_transition_state(), None
        except Exception as e:
            self.error = f"reading the screen after {action.to_json()}: {type(e).__name__}: {e}"
            raise BackendError(self.error) from e

    def _refresh_after_failed_action(self) -> None:
        """An invalid action may still have touched the device (input_text clicks first): re-read it."""
        try:
            self._state, self._obs = self._post_transition_state(), None
        except Exception as e:  # noqa: BLE001 - reported by the next step
            self.error = f"reading the screen: {type(e).__name__}: {e}"

    def score(self) -> float:
        if self.error is not None:
            raise BackendError(self.error)
        if self.task is None:
            raise RuntimeError("score() before reset()")
        return float(self.task.is_successful(self.env))

    def expert_action(self) -> Action:
        """The task's scripted next action, where the task offers one (the SimDroid stand-in's TaskEvals do;
        AndroidWorld's own tasks have no expert). In a broken episode any action ends it, so: wait."""
        if self.error is not None:
            return Action("wait")
        if self.task is None:
            raise RuntimeError("expert_action() before reset()")
        hook = getattr(self.task, "expert_action", None)
        if hook is None:
            raise NotImplementedError(
                f"AndroidWorld task {type(self.task).__name__} has no expert; experts exist for SimDroid "
                "tasks (backend='simdroid') and the SimDroid stand-in of android_world"
            )
        ja = hook(self.env)
        return Action.from_dict({k: v for k, v in ja.as_dict().items() if k != "keycode"})

    def snapshot(self) -> Any:
        raise NotImplementedError(NO_SNAPSHOTS)

    def restore(self, state: Any, rng: np.random.Generator) -> np.ndarray | None:
        raise NotImplementedError(NO_SNAPSHOTS)

    def _tear_down(self) -> None:
        """AndroidWorld tears an instance down after scoring it; we do it before the next one starts."""
        if self.task is None or not self._needs_tear_down:
            return
        self._needs_tear_down = False
        try:
            self.task.tear_down(self.env)
        except Exception as e:  # noqa: BLE001 - the next initialize_task restores the apps anyway
            log.warning(
                "AndroidWorld tear_down of %s failed: %s: %s", type(self.task).__name__, type(e).__name__, e
            )

    def close(self) -> None:
        self._tear_down()
        self.env.close()


def _template_goal(cls: Any, params: dict[str, Any]) -> str:
    try:
        return str(cls.template.format(**params))
    except Exception:  # noqa: BLE001 - the goal is informative only when the task could not be built
        return ""


def make_androidworld_vec(
    console_ports: Sequence[int],
    grpc_ports: Sequence[int] | None = None,
    mode: str = "sync",
    **env_kwargs: Any,
) -> Any:
    """A vector env with one AndroidWorld env per emulator (console port i, gRPC port i), autoreset DISABLED
    as `voyager_gym.vector.make_vec` sets it. `grpc_ports` default: 8554, 8555, ... one per emulator."""
    import gymnasium as gym
    from gymnasium.vector import AutoresetMode

    import voyager_gym  # noqa: F401  (registers the env ids)

    if mode not in ("sync", "async"):
        raise ValueError(f"vectorization mode must be 'sync' or 'async', got {mode!r}")
    ports = list(console_ports)
    grpcs = list(grpc_ports) if grpc_ports is not None else [8554 + i for i in range(len(ports))]
    if not ports or len(grpcs) != len(ports):
        raise ValueError(f"need one gRPC port per console port, got {grpcs} for {ports}")

    def factory(cp: int, gp: int) -> Any:
        return lambda: gym.make("voyager_gym/AndroidWorld-v0", console_port=cp, grpc_port=gp, **env_kwargs)

    fns = [factory(cp, gp) for cp, gp in zip(ports, grpcs, strict=True)]
    if mode == "sync":
        return gym.vector.SyncVectorEnv(fns, autoreset_mode=AutoresetMode.DISABLED)
    return gym.vector.AsyncVectorEnv(fns, shared_memory=False, autoreset_mode=AutoresetMode.DISABLED)
