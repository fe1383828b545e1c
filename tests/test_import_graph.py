"""The module boundaries, read from the source with `ast`: every import at any depth counts (module level,
inside functions, `importlib.import_module("literal")` and f-string prefixes such as
`import_module(f"experiments.{name}")`), since a lazy import still ties the modules together, and so does one
under `if TYPE_CHECKING:`: two modules that import each other only for a type annotation are still a circle
(that is how voyager_gym.backends.sim's phone and ui imported each other unseen, when the cycle check left
those imports out). The benchmarks, tools and examples are not packages, but their imports are checked
against the same boundaries."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("voyager_gym", "algos", "experiments")
SCRIPT_DIRS = ("benchmarks", "tools", "examples")  # Python files run as scripts: checked, never imported


def module_files() -> dict[str, Path]:
    """Dotted module name -> file, for every module of PACKAGES (a package is its `__init__`)."""
    out: dict[str, Path] = {}
    for pkg in PACKAGES:
        for f in sorted((ROOT / pkg).rglob("*.py")):
            parts = list(f.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            out[".".join(parts)] = f
    return out


MODULES = module_files()


def script_files() -> dict[str, Path]:
    """`dir.name` -> file, for every Python file under SCRIPT_DIRS."""
    return {".".join(f.relative_to(ROOT).with_suffix("").parts): f
            for d in SCRIPT_DIRS for f in sorted((ROOT / d).rglob("*.py"))}


SCRIPTS = script_files()


def _dynamic_target(call: ast.Call) -> str | None:
    """The module an `importlib.import_module(...)` / `__import__(...)` call names: a string literal, or the
    constant dotted prefix of an f-string (`f"experiments.{x}"` -> `experiments`)."""
    fn = call.func
    name = fn.attr if isinstance(fn, ast.Attribute) else fn.id if isinstance(fn, ast.Name) else ""
    if name not in ("import_module", "__import__") or not call.args:
        return None
    arg = call.args[0]
    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
        return arg.value
    if isinstance(arg, ast.JoinedStr) and arg.values and isinstance(arg.values[0], ast.Constant):
        prefix = str(arg.values[0].value).rsplit(".", 1)[0]
        return prefix if "." in str(arg.values[0].value) and prefix else None
    return None


def imported_names(module: str, path: Path) -> list[tuple[str, int]]:
    """(dotted name, line) of everything `module` imports, anywhere in its file: `from a.b import c` gives
    `a.b.c` (a module or a name in `a.b`); relative imports are resolved against `module`."""
    tree = ast.parse(path.read_text(), str(path))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    out: list[tuple[str, int]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(a.name, node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, *([base] if base else [])])
            out += [(f"{base}.{a.name}" if a.name != "*" else base, node.lineno) for a in node.names]
        elif isinstance(node, ast.Call):
            target = _dynamic_target(node)
            if target:
                out.append((target, node.lineno))
    return out


def resolve(name: str) -> str | None:
    """The module of ours that importing `name` runs last: the longest prefix of it that is one of MODULES
    (`a.b.c` where c is a function of module `a.b` is `a.b`); None for third-party names."""
    parts = name.split(".")
    for i in range(len(parts), 0, -1):
        candidate = ".".join(parts[:i])
        if candidate in MODULES:
            return candidate
    return None


def import_graph(files: dict[str, Path]) -> dict[str, dict[str, int]]:
    """Module (or script) -> {module of ours it imports -> first line}, self-imports left out."""
    graph: dict[str, dict[str, int]] = {}
    for module, path in files.items():
        edges: dict[str, int] = {}
        for name, line in imported_names(module, path):
            target = resolve(name)
            if target is not None and target != module:
                edges.setdefault(target, line)
        graph[module] = edges
    return graph


GRAPH = import_graph(MODULES)
SCRIPT_GRAPH = import_graph(SCRIPTS)


def cycles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, {})))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    m = stack.pop()
                    on_stack.discard(m)
                    comp.append(m)
                    if m == node:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def under(m: str, prefix: str) -> bool:
    return m == prefix or m.startswith(prefix + ".")


def violations(allowed: str, forbidden: tuple[str, ...]) -> list[str]:
    """`module:line -> target` for each import from a module under `allowed` of a module under `forbidden`."""
    return [f"{m}:{line} -> {t}" for m, edges in sorted(GRAPH.items()) if under(m, allowed)
            for t, line in sorted(edges.items()) if any(under(t, f) for f in forbidden)]


# SimDroid's public face is its package, `voyager_gym.backends.sim` (what its __init__ exports:
# SimDroidBackend, NoiseConfig, run_expert, ...); every module beneath it is an internal. Only the simulator
# itself and the env layer import those: `voyager_gym.env` (the backend factory `make_backend` and the
# backend-name lookups `task_names` / `app_names`) and `voyager_gym.catalogue` (the task facts, read from
# the simulator's task registry). The env ids' registration (`voyager_gym/__init__.py`) names its entry
# point as a string and imports no backend, so it is not in the layer. Tests are not checked: the
# simulator's tests, and the AndroidWorld stand-in built on its phone (tests/aw_standin), test internals.
SIM = "voyager_gym.backends.sim"
ENV_LAYER = ("voyager_gym.env", "voyager_gym.catalogue")


def sim_internal_imports(graph: dict[str, dict[str, int]]) -> list[str]:
    """`module:line -> target` for each import of a SimDroid internal by a module outside the simulator and
    the env layer."""
    return [f"{m}:{line} -> {t}" for m, edges in sorted(graph.items())
            if not under(m, SIM) and m not in ENV_LAYER
            for t, line in sorted(edges.items()) if t.startswith(SIM + ".")]


def test_the_graph_sees_every_kind_of_import(tmp_path: Path) -> None:
    """The parser itself: module-level, function-level, relative and importlib imports all count."""
    f = tmp_path / "m.py"
    f.write_text(
        "import os\nfrom algos.rft import RFT\n"
        "def g():\n    from voyager_gym.backends.sim import phone\n"
        "    import importlib\n    importlib.import_module(f'experiments.{x}')\n"
        "    importlib.import_module('algos.grsd')\n"
        "    from .sibling import thing\n"
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from algos.loop import Algorithm\n"
    )
    names = sorted(n for n, _ in imported_names("algos.policies.m", f))
    assert names == ["algos.grsd", "algos.loop.Algorithm", "algos.policies.sibling.thing", "algos.rft.RFT",
                     "experiments", "importlib", "os", "typing.TYPE_CHECKING",
                     "voyager_gym.backends.sim.phone"]
    assert resolve("algos.rft.RFT") == "algos.rft" and resolve("numpy.random") is None
    assert cycles({"a": {"b": 1}, "b": {"c": 1}, "c": {"a": 1}, "d": {"a": 1}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b": 1}, "b": {}}) == []


def test_sim_internals_are_told_from_the_sims_public_face(tmp_path: Path) -> None:
    """The boundary check itself: a submodule of the simulator, imported from anywhere outside it and the
    env layer, at any depth, is reported; its package's exports are not."""
    f = tmp_path / "bench.py"
    f.write_text("from voyager_gym.backends.sim import SimDroidBackend, NoiseConfig\n"
                 "from voyager_gym import catalogue\n"
                 "def main():\n    from voyager_gym.backends.sim.tasks import TASKS\n"
                 "    from voyager_gym.backends.sim import render\n")
    graph = import_graph({"benchmarks.bench": f, "voyager_gym.env": f, "voyager_gym.backends.sim.x": f})
    assert sim_internal_imports(graph) == ["benchmarks.bench:5 -> voyager_gym.backends.sim.render",
                                           "benchmarks.bench:4 -> voyager_gym.backends.sim.tasks"]


def test_modules_are_found() -> None:
    expected = {"voyager_gym.cli", "algos.policies.base", "experiments.config", "voyager_gym.backends.sim.ui"}
    assert expected <= set(MODULES)
    assert {"benchmarks.memory", "tools.compare_params", "examples.trl_grpo"} <= set(SCRIPTS)
    assert "voyager_gym.env" in GRAPH["voyager_gym.vector"]  # a module-level import
    assert "voyager_gym.backends.sim" in GRAPH["voyager_gym.cli"]  # one inside a function
    assert "voyager_gym.catalogue" in SCRIPT_GRAPH["benchmarks.memory"]  # a script's
    assert "voyager_gym.backends.sim.ui" in GRAPH["voyager_gym.backends.sim.phone"]
    assert "voyager_gym.backends.sim.phone" not in GRAPH["voyager_gym.backends.sim.ui"]  # no type-only one


def test_only_the_simulator_and_the_env_layer_import_sim_internals() -> None:
    """Everything else (the rest of voyager_gym, algos, experiments, benchmarks, tools, examples) reads
    tasks from `voyager_gym.catalogue` and runs the simulator through the env or the exports of the
    `voyager_gym.backends.sim` package."""
    found = sim_internal_imports({**GRAPH, **SCRIPT_GRAPH})
    assert found == [], "SimDroid internals imported outside the simulator and the env layer:\n" + "\n".join(
        found)


def test_policies_do_not_import_backends() -> None:
    """A policy's vocabulary comes from the env it is built for, never from one backend's internals."""
    assert violations("algos.policies", ("voyager_gym.backends",)) == []


def test_the_env_does_not_import_training_code() -> None:
    """`voyager_gym` installs and runs without the training stack: it never imports algos or experiments."""
    assert violations("voyager_gym", ("algos", "experiments")) == []


@pytest.mark.parametrize("package", PACKAGES)
def test_no_import_cycles(package: str) -> None:
    """No cycle between modules: lazy function-level imports and `if TYPE_CHECKING:` ones included (one is
    reported per package it touches)."""
    found = [c for c in cycles(GRAPH) if any(under(m, package) for m in c)]
    assert found == [], "import cycles: " + "; ".join(" <-> ".join(c) for c in found)
