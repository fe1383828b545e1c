"""AndroidWorld's Pass@1: the mean score over a template's instances, then the mean over templates.

Errored episodes (device failures) are excluded, as AndroidWorld's runner does; a template whose episodes all
errored is left out of the mean and reported.
"""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Any

from algos.buffer import Trajectory
from algos.policies.base import Policy
from algos.rollout import RolloutConfig, collect
from algos.timing import collector_paused
from voyager_gym.suites import eval_suite


def pass_at_1(trajectories: list[Trajectory]) -> dict[str, Any]:
    """{"pass_at_1", "per_task": {task: mean score}, "episodes", "errored", "tasks_all_errored"}."""
    by_task: dict[str, list[float]] = defaultdict(list)
    errored = 0
    tasks = set()
    for t in trajectories:
        tasks.add(t.task)
        if t.errored or math.isnan(t.score):
            errored += 1
            continue
        by_task[t.task].append(float(t.score))
    per_task = {k: sum(v) / len(v) for k, v in sorted(by_task.items())}
    overall = sum(per_task.values()) / len(per_task) if per_task else float("nan")
    return {
        "pass_at_1": overall,
        "per_task": per_task,
        "episodes": len(trajectories),
        "errored": errored,
        "tasks_all_errored": sorted(tasks - set(per_task)),
    }


def evaluate(
    policy: Policy,
    envs: Any,
    tasks: list[str],
    n_per_task: int = 2,
    seed: int = 0,
    greedy: bool = True,
    progress: bool = False,
    backend: Any = None,
) -> dict[str, Any]:
    """Pass@1 of `policy` on the held-out suite (AndroidWorld seeding, suite seed 30): `n_per_task` instances
    per task, one greedy rollout each. `seed` only changes screen noise. `backend` draws the params (default
    SimDroid's; `voyager_gym.suites.FROM_ENV` leaves them to the envs, as the real AndroidWorld needs)."""
    instances = eval_suite(tasks, n_per_task=n_per_task, backend=backend)
    with collector_paused():
        groups = collect(
            policy,
            envs,
            instances,
            RolloutConfig(group_size=1, greedy=greedy, thumb_width=0, seed=10_000 + seed, progress=progress),
        )
    trajs = [t for g in groups for t in g.trajectories]
    out = pass_at_1(trajs)
    out["env_steps"] = sum(len(t.steps) for t in trajs)
    return out
