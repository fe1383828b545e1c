"""The layout of SimDroid's task modules: every task is an explicit class named as its task, in the
registry of AndroidWorld's 116."""

import ast
import inspect
import pathlib

import pytest

from voyager_gym.backends.sim import tasks
from voyager_gym.backends.sim.tasks import TASKS, SimTask

TASKS_DIR = pathlib.Path(tasks.__file__).parent


def test_registry_holds_androidworlds_116_tasks_named_by_class():
    assert len(TASKS) == 116
    for name, cls in TASKS.items():
        assert name == cls.name == cls.__name__, f"{cls.__name__} is registered as {name!r}"


def test_every_task_is_a_class_statement_in_its_module():
    """No task is made by `type(...)`: grep for its name finds its `class` line."""
    for name, cls in TASKS.items():
        tree = ast.parse(pathlib.Path(inspect.getfile(cls)).read_text())
        defined = {n.name for n in ast.walk(tree) if isinstance(n, ast.ClassDef)}
        assert name in defined, f"{name} has no class statement in {cls.__module__}"


def test_a_name_other_than_the_class_name_is_refused():
    with pytest.raises(ValueError, match="sets name='Other'; expected its class name"):
        type("Mine", (SimTask,), {"name": "Other"})
    assert type("Mine", (SimTask,), {}).name == "Mine"
