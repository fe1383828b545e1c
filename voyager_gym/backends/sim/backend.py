"""SimDroidBackend: the Backend contract over the SimDroid phone, its renderer, noise and task registry."""

from __future__ import annotations

import dataclasses
import functools
import pickle
import random
from collections.abc import Callable
from typing import Any

import numpy as np

from voyager_gym.actions import Action
from voyager_gym.backends.base import Backend, ExpertOffPath, unknown_task_error
from voyager_gym.backends.sim.device import DeviceState
from voyager_gym.backends.sim.noise import NoiseConfig, NoiseDraw, apply_noise, blend, draw_noise, noise_shows
from voyager_gym.backends.sim.phone import Phone, launcher_app_names
from voyager_gym.backends.sim.render import Renderer
from voyager_gym.backends.sim.tasks import TASKS, SimTask
from voyager_gym.backends.sim.tasks.base import View
from voyager_gym.backends.sim.widgets import Node
from voyager_gym.observation import UIElement
from voyager_gym.params import Schema, check, task_schema


def wrap_rendering(wrap: Callable[[Callable[..., Any]], Callable[..., Any]]) -> None:
    """Replace the three functions that draw SimDroid's screenshots in this process (the renderer's
    `Renderer.render`, the screen noise's `apply_noise` and a transition's `blend`) by `wrap(fn)`, for every
    backend of the process, for good: benchmarks charge the time spent in them to a phase
    (benchmarks/loop_throughput.py)."""
    global apply_noise, blend
    apply_noise, blend = wrap(apply_noise), wrap(blend)
    Renderer.render = wrap(Renderer.render)


@dataclasses.dataclass(frozen=True, eq=False)
class Shown:
    """How the last screenshot was drawn, so that a restore rebuilds the same pixels without a draw from the
    RNG: the clean frame and tree of the screen, its noise, and the previous screen's frame and tree when the
    shot caught a transition. Frames are the renderer's read-only arrays, shared, never copied; pickling
    drops them and keeps the previous tree without its handlers (the receiver re-renders from the trees)."""

    noise: NoiseDraw
    w_prev: float
    clean: np.ndarray | None
    root: Node | None
    blend_frame: np.ndarray | None = None
    blend_root: Node | None = None

    @property
    def blended(self) -> bool:
        return self.blend_root is not None

    def __getstate__(self) -> dict[str, Any]:
        blend_root = None if self.blend_root is None else _visual_copy(self.blend_root)
        return {**self.__dict__, "clean": None, "root": None, "blend_frame": None, "blend_root": blend_root}


def _visual_copy(n: Node) -> Node:
    """`n`'s tree without its handlers (closures over live screens): all a renderer reads, picklable."""
    return dataclasses.replace(n, on_click=None, on_long_click=None, on_scroll=None, field=None,
                               children=[_visual_copy(c) for c in n.children])


@dataclasses.dataclass(frozen=True)
class SimState:
    """SimDroid between two steps. `data` pickles the device (app data, screens and back stacks, clock),
    the task object, the expert's memory and the last tap together, so references between them survive and
    a restore never shares mutable state with the snapshot; `noise` is the config it ran under."""

    data: bytes
    noise: NoiseConfig
    prev_key: str | None
    shown: Shown | None  # None: the last observation had no pixels


@functools.cache
def _schema(cls: type[SimTask]) -> Schema:
    """A task's params schema, read once per process off its generator."""
    return task_schema(cls.generate_random_params)


class SimDroidBackend(Backend):
    """An in-process SimDroid phone. `render_scale` scales the 1080x2400 screen; `noise` is a NoiseConfig
    or its name ('default', 'none', 'heavy'); `frame_cache` is how many rendered frames are kept."""

    def __init__(self, render_scale: float = 1.0, noise: Any = "default", frame_cache: int = 16):
        self.noise = NoiseConfig.parse(noise)
        self.phone = Phone(clock_in_status_bar=self.noise.clock)
        self.renderer = Renderer(render_scale, frame_cache=frame_cache)
        self.task: SimTask | None = None
        self.mem: dict[str, Any] = {}
        self._rng = np.random.default_rng(0)
        self._prev_frame: np.ndarray | None = None
        self._prev_root: Node | None = None
        self._prev_key: str | None = None
        self._shown: Shown | None = None
        self._pristine: DeviceState | None = None
        self._scratch: np.ndarray | None = None

    # -- registry --------------------------------------------------------------------------------------
    @property
    def task_names(self) -> list[str]:
        return sorted(TASKS)

    @property
    def app_names(self) -> tuple[str, ...]:
        return tuple(launcher_app_names())

    def task_cls(self, name: str) -> type[SimTask]:
        if name not in TASKS:
            raise unknown_task_error(name, list(TASKS))
        return TASKS[name]

    def task_info(self, name: str) -> dict[str, Any]:
        cls = self.task_cls(name)
        return {
            "name": name,
            "app_names": cls.app_names,
            "complexity": cls.complexity,
            "max_steps": int(10 * cls.complexity),
        }

    def generate_params(self, name: str, instance_seed: int) -> dict[str, Any]:
        cls = self.task_cls(name)
        params = cls.generate_random_params(random.Random(instance_seed))
        params["seed"] = int(instance_seed)
        return params

    def check_params(self, name: str, params: dict[str, Any]) -> None:
        """Params against the schema read off the task's generator (voyager_gym.params): keys, kinds, string
        lengths; a ParamsError (ValueError) names the key."""
        check(_schema(self.task_cls(name)), params, name)

    # -- episode ---------------------------------------------------------------------------------------
    def reset(self, name: str, params: dict[str, Any], rng: np.random.Generator) -> str:
        cls = self.task_cls(name)
        self._rng = rng
        if self._pristine is None:  # a factory-fresh phone, built once and copied for every episode
            self.phone.reset()
            self._pristine = self.phone.dev.snapshot()
        self.phone.reset(self._pristine.snapshot())
        self.task = cls(params)
        self.task.initialize(self.phone.dev)
        self.phone.go_home()
        self.phone.invalidate()
        self.mem = {}
        self._prev_frame = self._prev_root = self._shown = None
        self._prev_key = None
        return self.task.goal

    def observe(self, pixels: bool = True) -> tuple[np.ndarray | None, list[UIElement], str]:
        root = self.phone.root()
        key = self.phone.screen_key()
        nd: NoiseDraw = draw_noise(self.noise, self._rng)
        w_prev = float(self._rng.uniform(0.25, 0.75))
        transition = self._rng.random() < self.noise.transitions and self._prev_key not in (None, key)
        frame = None
        if pixels:
            clean = self.renderer.render(root)
            shown = Shown(nd, w_prev, clean, root)
            if transition and self._prev_frame is not None:
                shown = dataclasses.replace(shown, blend_frame=self._prev_frame, blend_root=self._prev_root)
            frame = self._draw(shown, fresh=self.renderer.fresh)
            self._prev_frame, self._prev_root, self._shown = clean, root, shown
        self._prev_key = key
        return frame, self.phone.elements(), key

    def _draw(self, shown: Shown, fresh: bool = False) -> np.ndarray:
        """The screenshot `shown` describes: its noise over the clean frame, blended with the previous
        screen's when it caught a transition. Screenshots are read-only and never share memory with an
        earlier one: a frame the renderer has just drawn (`fresh`) is returned as is (it stays in its cache,
        read-only); a cached one is copied, and noise or a blend is drawn into a copy, in buffers from the
        renderer's pool."""
        clean = frame = shown.clean
        shows = noise_shows(shown.noise, shown.root)
        if shows or (not fresh and not shown.blended):
            frame = self.renderer.new_frame()
            np.copyto(frame, clean)
            if shows:
                apply_noise(frame, shown.noise, self.renderer, shown.root)
        if shown.blended:
            if self._scratch is None or self._scratch.shape != clean.shape:
                self._scratch = np.empty_like(clean)
            out = self.renderer.new_frame() if frame is clean else frame
            frame = blend(shown.blend_frame, frame, shown.w_prev, self._scratch, out=out)
        if frame is not clean:
            frame.setflags(write=False)
        return frame

    def execute(self, action: Action) -> None:
        try:
            self.phone.execute(action)
        finally:
            self.phone.dev.advance()

    def score(self) -> float:
        if self.task is None:
            raise RuntimeError("score() before reset()")
        return float(self.task.is_successful(self.phone.dev))

    def expert_action(self) -> Action:
        if self.task is None:
            raise RuntimeError("expert_action() before reset()")
        view = View(self.phone.elements(), self.task.goal)
        try:
            return self.task.expert(view, self.mem)
        except LookupError as e:  # IndexError and KeyError included: what an expert off its path meets
            raise ExpertOffPath(f"the expert of {self.task.name} has no action from this screen (off its "
                                f"path: {type(e).__name__}: {e})") from e

    # -- snapshots -------------------------------------------------------------------------------------
    def snapshot(self) -> SimState:
        """The whole phone between two steps (see SimState); cheap: one pickle of plain data."""
        data = pickle.dumps((self.phone.dev, self.task, self.mem, self.phone.last_tap), protocol=5)
        return SimState(data, self.noise, self._prev_key, self._shown)

    def restore(self, state: SimState, rng: np.random.Generator) -> np.ndarray | None:
        """Put the phone back at `state`, drawing from `rng` from now on; return the screenshot observed
        then (None if it had no pixels). The next observation blends from the restored screen, as it would
        have."""
        if not isinstance(state, SimState):
            raise ValueError(f"state={type(state).__name__}: expected a SimDroidBackend.snapshot()")
        if state.noise != self.noise:
            raise ValueError(f"the snapshot was taken with noise={state.noise}; this backend has "
                             f"noise={self.noise}")
        dev, self.task, self.mem, last_tap = pickle.loads(state.data)
        self.phone.reset(dev)
        self.phone.last_tap = last_tap
        self._rng = rng
        self._prev_key = state.prev_key
        shown = state.shown
        if shown is None:
            self._prev_frame = self._prev_root = self._shown = None
            return None
        if shown.clean is None:  # unpickled: re-render the trees (the restored device composes the screen)
            root = self.phone.root()
            shown = dataclasses.replace(shown, clean=self.renderer.render(root), root=root)
            if shown.blended:
                shown = dataclasses.replace(shown, blend_frame=self.renderer.render(shown.blend_root))
        self._prev_frame, self._prev_root, self._shown = shown.clean, shown.root, shown
        return self._draw(shown)
