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


SHARED = {"base", "vocab", "ir_vocab", "common"}  # what any task-family module may import


def task_imports(path: pathlib.Path) -> set[str]:
    """The modules of this package that `path` imports (`from ...tasks import x`, `...tasks.x`)."""
    pkg = tasks.__name__
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module == pkg:
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith(pkg + "."):
            out.add(node.module[len(pkg) + 1:].split(".")[0])
        elif isinstance(node, ast.Import):
            out |= {a.name[len(pkg) + 1:].split(".")[0] for a in node.names if a.name.startswith(pkg + ".")}
    return out


def test_no_task_family_imports_another():
    """Families share code only through base, vocab, ir_vocab and common (AndroidWorld's utils)."""
    modules = sorted(p for p in TASKS_DIR.glob("*.py") if p.stem != "__init__")
    assert len(modules) >= 23
    for path in modules:
        bad = task_imports(path) - (SHARED - {path.stem})
        assert not bad, f"{path.name} imports {sorted(bad)}"


def test_the_import_check_sees_every_form_of_import(tmp_path):
    path = tmp_path / "family.py"
    path.write_text("from voyager_gym.backends.sim.tasks import sms, vocab\n"
                    "import voyager_gym.backends.sim.tasks.vlc as v\n"
                    "from voyager_gym.backends.sim.tasks.markor import clear_storage\n")
    assert task_imports(path) == {"sms", "vocab", "vlc", "markor"}
