"""SimDroidBackend: the Backend contract over the SimDroid phone, its renderer, noise and task registry."""

from __future__ import annotations

import difflib
import random
from typing import Any

import numpy as np

from voyager_gym.actions import Action
from voyager_gym.backends.base import Backend
from voyager_gym.backends.sim.device import DeviceState
from voyager_gym.backends.sim.noise import NoiseConfig, NoiseDraw, apply_noise, blend, draw_noise, noise_shows
from voyager_gym.backends.sim.phone import Phone
from voyager_gym.backends.sim.render import Renderer
from voyager_gym.backends.sim.tasks import TASKS, SimTask
from voyager_gym.backends.sim.tasks.base import View
from voyager_gym.observation import UIElement


def unknown_task_error(name: str, known: list[str]) -> KeyError:
    close = difflib.get_close_matches(name, known, n=1)
    hint = f"; did you mean {close[0]!r}?" if close else f"; known tasks: {', '.join(sorted(known)[:8])}, ..."
    return KeyError(f"unknown task {name!r}{hint}")


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
        self._prev_key: str | None = None
        self._pristine: DeviceState | None = None
        self._scratch: np.ndarray | None = None

    # -- registry --------------------------------------------------------------------------------------
    @property
    def task_names(self) -> list[str]:
        return sorted(TASKS)

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
        self._prev_frame = None
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
            # Screenshots are read-only and never share memory with an earlier one. A frame the renderer has
            # just drawn is returned as is (it stays in its cache, read-only); a cached one is copied, and
            # noise or a transition blend is drawn into a copy, in buffers from the renderer's pool.
            clean = frame = self.renderer.render(root)
            blending = transition and self._prev_frame is not None
            shows = noise_shows(nd, root)
            if shows or (not self.renderer.fresh and not blending):
                frame = self.renderer.new_frame()
                np.copyto(frame, clean)
                if shows:
                    apply_noise(frame, nd, self.renderer, root)
            if blending:
                if self._scratch is None or self._scratch.shape != clean.shape:
                    self._scratch = np.empty_like(clean)
                out = self.renderer.new_frame() if frame is clean else frame
                frame = blend(self._prev_frame, frame, w_prev, self._scratch, out=out)
            if frame is not clean:
                frame.setflags(write=False)
            self._prev_frame = clean
        self._prev_key = key
        return frame, self.phone.elements(), key

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
        return self.task.expert(view, self.mem)

    # -- snapshots -------------------------------------------------------------------------------------
    def snapshot(self) -> DeviceState:
        return self.phone.dev.snapshot()

    def restore(self, state: DeviceState) -> None:
        self.phone.reset(state.snapshot())
