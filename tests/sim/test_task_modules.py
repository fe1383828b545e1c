"""The layout of SimDroid's task modules: every task is an explicit class named as its task, in the
registry of AndroidWorld's 116."""

import ast
import fnmatch
import importlib.util
import inspect
import pathlib
import tomllib

import pytest

from voyager_gym.backends.sim import tasks
from voyager_gym.backends.sim.tasks import TASKS, SimTask, ir_vocab
from voyager_gym.backends.sim.tasks.common import Question

TASKS_DIR = pathlib.Path(tasks.__file__).parent
ROOT = pathlib.Path(__file__).resolve().parents[2]


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


def test_ir_vocab_is_the_exporters_data_file():
    """AndroidWorld's information-retrieval vocabularies are data (tasks/ir_vocab.json), in the exact form
    tools/export_androidworld_ir_vocab.py writes, for exactly the question tasks, loaded as `draw` reads
    them (parameters in drawing order, values as tuples)."""
    tool = ROOT / "tools" / "export_androidworld_ir_vocab.py"
    spec = importlib.util.spec_from_file_location("export_androidworld_ir_vocab", tool)
    exporter = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(exporter)
    data_file = TASKS_DIR / ir_vocab.DATA_FILE
    assert data_file.read_text(encoding="utf-8") == exporter.document(ir_vocab.IR_PARAMS)
    assert set(ir_vocab.IR_PARAMS) == {n for n, c in TASKS.items() if issubclass(c, Question)}
    assert len(ir_vocab.IR_PARAMS) == 25
    params = ir_vocab.IR_PARAMS["NotesIsTodo"]
    assert [p for p, _ in params] == ["title", "is_todo", "body", "folder"]
    assert params[1] == ("is_todo", ("True", "False"))


def test_the_packages_data_files_are_package_data():
    """Every file of the package that is not Python source matches a package-data pattern of its package in
    pyproject.toml, so that a non-editable install (a wheel) ships it."""
    package_data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    data = [f for f in sorted((ROOT / "voyager_gym").rglob("*"))
            if f.is_file() and f.suffix not in (".py", ".pyc") and "__pycache__" not in f.parts]
    assert TASKS_DIR / ir_vocab.DATA_FILE in data
    for f in data:
        package = ".".join(f.parent.relative_to(ROOT).parts)
        patterns = package_data.get(package, [])
        assert any(fnmatch.fnmatch(f.name, p) for p in patterns), f"{f} is not in package-data[{package!r}]"
