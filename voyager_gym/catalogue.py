"""The task catalogue: AndroidWorld's 116 tasks as facts, without building an env or a backend.

Every task is a frozen `TaskInfo` (its AndroidWorld name, app names and complexity, the step budget that
follows, whether it is one of AndroidWorld's information-retrieval questions, whether every instance starts
solved), read once from SimDroid's task registry, which carries AndroidWorld's values under AndroidWorld's
names. Its `difficulty`, `tags` and `optimal_steps` are AndroidWorld's (android_world/task_metadata.json),
read once from the package data file `androidworld_metadata.json` next to this module, which
tools/androidworld_metadata.py writes from that file (regenerate rather than edit:
`python tools/androidworld_metadata.py --metadata .../android_world/task_metadata.json --commit SHA`).
Code outside the env layer asks this module, never the simulator's registry:

    from voyager_gym import catalogue

    catalogue.task("MarkorCreateNote").complexity      # 1.6 (KeyError naming the closest name if unknown)
    [t.name for t in catalogue.tasks(app="markor")]    # the tasks that involve an app
    catalogue.tasks(difficulty="hard")                 # AndroidWorld's hard tasks
    catalogue.names()                                  # every name, sorted
    catalogue.goal("SimpleSmsSend", params)            # an instance's goal text (before its setup)
"""

from __future__ import annotations

import dataclasses
import functools
import importlib.resources
import json
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
    difficulty: str  # AndroidWorld's task_metadata.json `difficulty`: "easy", "medium" or "hard"
    tags: tuple[str, ...]  # its `tags` (e.g. "data_entry", "multi_app"); empty for the 7 tasks it tags ""
    optimal_steps: int  # its `optimal_steps`: its count of the steps an optimal solution takes

    @property
    def max_steps(self) -> int:
        """AndroidWorld's step budget, `int(10 * complexity)` (VoyagerEnv's default `max_steps`)."""
        return int(10 * self.complexity)


DIFFICULTIES = ("easy", "medium", "hard")  # AndroidWorld's task difficulties, easiest first
METADATA_FILE = "androidworld_metadata.json"  # package data: AndroidWorld's difficulty, tags, optimal_steps


def _metadata() -> dict[str, dict[str, Any]]:
    """{task: {"difficulty", "tags", "optimal_steps"}} from the package data file."""
    text = importlib.resources.files("voyager_gym").joinpath(METADATA_FILE).read_text(encoding="utf-8")
    return json.loads(text)["tasks"]


@functools.cache
def by_name() -> Mapping[str, TaskInfo]:
    """Every task, by name (a read-only mapping, sorted by name; built once, on the first call)."""
    from voyager_gym.backends.sim.tasks import TASKS
    from voyager_gym.backends.sim.tasks.common import Question

    meta = _metadata()
    if set(meta) != set(TASKS):
        raise RuntimeError(f"{METADATA_FILE} lists other tasks than SimDroid's registry: regenerate it with "
                           "tools/androidworld_metadata.py")
    return types.MappingProxyType({
        name: TaskInfo(
            name=name,
            app_names=tuple(cls.app_names),
            complexity=float(cls.complexity),
            information_retrieval=issubclass(cls, Question),
            starts_solved=bool(cls.starts_solved),
            difficulty=meta[name]["difficulty"],
            tags=tuple(meta[name]["tags"]),
            optimal_steps=int(meta[name]["optimal_steps"]),
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


def tasks(*, app: str | None = None, information_retrieval: bool | None = None,
          difficulty: str | None = None) -> tuple[TaskInfo, ...]:
    """The tasks, sorted by name: all of them, or those that involve `app` (one of AndroidWorld's app names,
    any case), and/or are (or are not) information-retrieval questions, and/or have AndroidWorld's
    `difficulty` (one of DIFFICULTIES, any case; ValueError otherwise)."""
    out = tuple(by_name().values())
    if app is not None:
        out = tuple(t for t in out if app.lower() in t.app_names)
    if difficulty is not None:
        if difficulty.lower() not in DIFFICULTIES:
            raise ValueError(f"unknown difficulty {difficulty!r}: one of {', '.join(DIFFICULTIES)}")
        out = tuple(t for t in out if t.difficulty == difficulty.lower())
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


__all__ = ["DIFFICULTIES", "TaskInfo", "by_name", "goal", "names", "task", "tasks"]
