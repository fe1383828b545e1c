"""Task suites with AndroidWorld's instance seeding, disjoint train and eval splits, and a training
generator. AndroidWorld seeds instance i of task `name` in a suite with seed `s` as
int(sha256(f"{s}_{name}_{i}")) % 2**32 and runs `generate_random_params` after seeding; its default suite
seed is 30. Our eval split uses exactly that scheme; train instances use other suite seeds and never share
an instance seed with the eval split."""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Iterator
from typing import Any

import numpy as np

from voyager_gym.backends.base import Backend

EVAL_SUITE_SEED = 30
FROM_ENV = "env"  # pass as `backend` to leave params to each env's own backend (drawn at reset from the seed)
ANDROIDWORLD = "androidworld"  # pass as `backend` to draw params with android_world's own generators


def instance_seed(suite_seed: int, name: str, i: int) -> int:
    """AndroidWorld's instance seed."""
    return int(hashlib.sha256(f"{suite_seed}_{name}_{i}".encode()).hexdigest(), 16) % 2**32


@dataclasses.dataclass(frozen=True)
class TaskInstance:
    """One task instance: what `env.reset(options=inst.options())` needs."""

    name: str
    index: int
    seed: int
    params: dict[str, Any] | None  # None: the env's backend draws them from `seed` at reset (AndroidWorld)

    def options(self) -> dict[str, Any]:
        if self.params is None:
            return {"task": self.name, "instance_seed": self.seed}
        return {"task": self.name, "params": dict(self.params)}


class _FromEnv:
    """Stands in for a backend when params are left to the envs (the real AndroidWorld draws them on the
    device, so a suite built away from the emulator records only names and seeds)."""

    def generate_params(self, name: str, seed: int) -> None:
        return None


def _backend(backend: Backend | str | None) -> Any:
    if backend == FROM_ENV:
        return _FromEnv()
    if backend == ANDROIDWORLD:
        from voyager_gym.androidworld_params import AndroidWorldGenerators

        return AndroidWorldGenerators()
    if backend is not None:
        return backend
    from voyager_gym.backends.sim import SimDroidBackend

    return SimDroidBackend(render_scale=0.1, noise="none")


def eval_suite(
    tasks: list[str] | None = None,
    n_per_task: int = 1,
    suite_seed: int = EVAL_SUITE_SEED,
    backend: Backend | str | None = None,
) -> list[TaskInstance]:
    """The held-out instances: AndroidWorld's suite (seed 30, `n_per_task` combinations per task).
    `backend=FROM_ENV` leaves params to the envs (then `tasks` must be given)."""
    b = _backend(backend)
    if not tasks and isinstance(b, _FromEnv):
        raise ValueError("eval_suite(backend=FROM_ENV) needs the task names")
    names = tasks or b.task_names
    return [
        TaskInstance(n, i, s, b.generate_params(n, s))
        for n in names
        for i in range(n_per_task)
        for s in [instance_seed(suite_seed, n, i)]
    ]


TASK_SPLITS = ("instances", "tasks")  # held-out instances of the training tasks | held-out tasks
SPLIT_STREAM = 0x73706C  # second entropy word of the task split's permutation ([seed, SPLIT_STREAM])


def split_tasks(tasks: list[str], heldout_fraction: float, seed: int = 0) -> tuple[list[str], list[str]]:
    """(training tasks, held-out tasks): round(heldout_fraction * n) of `tasks` (at least one, and at least
    one left to train on), drawn by `seed` alone whatever the order `tasks` come in; each part keeps that
    order. Held-out tasks are templates a policy trained on the first part never saw (no instance, no
    demonstration)."""
    names = list(dict.fromkeys(tasks))
    if len(names) < 2:
        raise ValueError(f"a task split needs two or more tasks, got {names}")
    if not 0.0 < heldout_fraction < 1.0:
        raise ValueError(f"heldout_fraction={heldout_fraction!r}: expected a value in (0, 1)")
    n = min(len(names) - 1, max(1, round(heldout_fraction * len(names))))
    order = np.random.default_rng([seed, SPLIT_STREAM]).permutation(sorted(names))
    held = set(order[:n].tolist())
    return [t for t in names if t not in held], [t for t in names if t in held]


def eval_seeds(tasks: list[str], n_per_task: int, suite_seed: int = EVAL_SUITE_SEED) -> set[int]:
    return {instance_seed(suite_seed, n, i) for n in tasks for i in range(n_per_task)}


class TrainGenerator:
    """Yields training instances forever (or `limit` of them), cycling tasks in a seeded order, never
    producing an instance seed that belongs to the eval split (`exclude_n` eval instances per task)."""

    def __init__(
        self,
        tasks: list[str] | None = None,
        seed: int = 0,
        backend: Backend | str | None = None,
        exclude_n: int = 16,
        eval_suite_seed: int = EVAL_SUITE_SEED,
    ):
        self.backend = _backend(backend)
        if not tasks and isinstance(self.backend, _FromEnv):
            raise ValueError("TrainGenerator(backend=FROM_ENV) needs the task names")
        self.tasks = list(tasks or self.backend.task_names)
        self.seed = seed
        self.excluded = eval_seeds(self.tasks, exclude_n, eval_suite_seed)
        self.eval_suite_seed = eval_suite_seed

    def instances(self, limit: int | None = None) -> Iterator[TaskInstance]:
        rng = np.random.default_rng(self.seed)
        made, epoch = 0, 0
        while limit is None or made < limit:
            order = rng.permutation(len(self.tasks))
            for k in order:
                name = self.tasks[int(k)]
                suite = 10_000 + self.seed * 1_000 + epoch  # never the eval suite seed
                if suite == self.eval_suite_seed:
                    continue
                s = instance_seed(suite, name, epoch)
                if s in self.excluded:
                    continue
                yield TaskInstance(name, epoch, s, self.backend.generate_params(name, s))
                made += 1
                if limit is not None and made >= limit:
                    return
            epoch += 1

    def take(self, n: int) -> list[TaskInstance]:
        return list(self.instances(limit=n))
