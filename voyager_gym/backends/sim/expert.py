"""Run a task's expert on SimDroid: demonstrations, solvability checks and throughput benchmarks."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from voyager_gym.actions import Action
from voyager_gym.backends.sim.backend import SimDroidBackend


@dataclasses.dataclass
class ExpertRun:
    task: str
    goal: str
    score: float
    steps: int
    max_steps: int
    actions: list[Action]
    frames: list[np.ndarray]


def run_expert(
    backend: SimDroidBackend,
    name: str,
    instance_seed: int = 0,
    pixels: bool = False,
    env_seed: int = 0,
    params: dict[str, Any] | None = None,
) -> ExpertRun:
    """Roll the expert out on one task instance with AndroidWorld's episode rules: the score counts only if
    the expert ends with `status` within `int(10 * complexity)` steps."""
    params = params if params is not None else backend.generate_params(name, instance_seed)
    goal = backend.reset(name, params, np.random.default_rng(env_seed))
    max_steps = backend.task_info(name)["max_steps"]
    actions: list[Action] = []
    frames: list[np.ndarray] = []
    score = 0.0
    for _ in range(max_steps):
        frame, _, _ = backend.observe(pixels=pixels)
        if frame is not None:
            frames.append(frame)
        a = backend.expert_action()
        actions.append(a)
        backend.execute(a)
        if a.action_type == "status":
            score = backend.score()
            break
    if pixels:
        frame, _, _ = backend.observe(pixels=True)
        frames.append(frame)
    return ExpertRun(name, goal, score, len(actions), max_steps, actions, frames)
