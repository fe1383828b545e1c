"""The task catalogue: AndroidWorld's 116 tasks as facts, without building an env or a backend.

Every task is a frozen `TaskInfo` (its AndroidWorld name, app names and complexity, the step budget that
follows, whether it is one of AndroidWorld's information-retrieval questions, whether every instance starts
solved), read once from SimDroid's task registry, which carries AndroidWorld's values under AndroidWorld's
names. Code outside the env layer asks this module, never the simulator's registry:

    from voyager_gym import catalogue

    catalogue.task("MarkorCreateNote").complexity      # 1.6 (KeyError naming the closest name if unknown)
    [t.name for t in catalogue.tasks(app="markor")]    # the tasks that involve an app
    catalogue.names()                                  # every name, sorted
    catalogue.goal("SimpleSmsSend", params)            # an instance's goal text (before its setup)

AndroidWorld's per-task `tags`, `difficulty` and `optimal_steps` (its task_metadata.json) are not here:
nothing in this repository records them.
"""

from __future__ import annotations

import dataclasses
import functools
import types
from collections.abc import Mapping
from typing import Any

from voyager_gym.backends.base import unknown_task_error


@dataclasses.dataclass(frozen=True)
class TaskInfo:
    """One task's facts (AndroidWorld's, as SimDroid's registry carries them)."""

    name: str  # AndroidWorld's task name (its TaskEval class name)
    app_names: tuple[str, ...]  # AndroidWorld's `app_names`: the apps the task involves, lower-case
    complexity: float  # AndroidWorld's `complexity`
    information_retrieval: bool  # in AndroidWorld's information-retrieval family: answered with `answer`
    starts_solved: bool  # every instance starts in its goal state (AndroidWorld's "Verify" variants)

    @property
    def max_steps(self) -> int:
        """AndroidWorld's step budget, `int(10 * complexity)` (VoyagerEnv's default `max_steps`)."""
        return int(10 * self.complexity)


@functools.cache
def by_name() -> Mapping[str, TaskInfo]:
    """Every task, by name (a read-only mapping, sorted by name; built once, on the first call)."""
    from voyager_gym.backends.sim.tasks import TASKS
    from voyager_gym.backends.sim.tasks.common import Question

    return types.MappingProxyType({
        name: TaskInfo(
            name=name,
            app_names=tuple(cls.app_names),
            complexity=float(cls.complexity),
            information_retrieval=issubclass(cls, Question),
            starts_solved=bool(cls.starts_solved),
        )
        for name, cls in sorted(TASKS.items())
    })


def names() -> tuple[str, ...]:
    """Every task name, sorted."""
    return tuple(by_name())


def task(name: str) -> TaskInfo:
    """The task called `name`; KeyError (suggesting the closest name) if there is none."""
    table = by_name()
    if name not in table:
        raise unknown_task_error(name, list(table))
    return table[name]


def tasks(*, app: str | None = None, information_retrieval: bool | None = None) -> tuple[TaskInfo, ...]:
    """The tasks, sorted by name: all of them, or those that involve `app` (one of AndroidWorld's app names,
    any case) and/or are (or are not) information-retrieval questions."""
    out = tuple(by_name().values())
    if app is not None:
        out = tuple(t for t in out if app.lower() in t.app_names)
    if information_retrieval is not None:
        out = tuple(t for t in out if t.information_retrieval == information_retrieval)
    return out


def goal(name: str, params: Mapping[str, Any]) -> str:
    """The goal text of task `name`'s instance with `params` (e.g. a backend's `generate_params`), as the
    task words it before its setup: AndroidWorld's `TaskEval(params).goal`. (Information-retrieval tasks
    reword dates in their setup; the goal an env's `reset` returns is the final one.)"""
    from voyager_gym.backends.sim.tasks import TASKS

    task(name)  # the did-you-mean error
    return TASKS[name](dict(params)).goal


__all__ = ["TaskInfo", "by_name", "goal", "names", "task", "tasks"]
