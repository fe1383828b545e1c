"""One recipe and one home for defaults (issue 44): every run is assembled by experiments/recipe.py, an
algorithm takes what its run hands it in one RunContext (no module outside algos/ sets its attributes), each
algorithm's config class holds the defaults the experiments run (the CLI adds only its presets), and every
config field checks its own range (issue 45): NaN and infinity are refused everywhere."""

from __future__ import annotations

import ast
import dataclasses
import inspect
import json
import math
import typing
from pathlib import Path

import pytest

from algos import registry
from algos.fields import float_fields
from algos.loop import Algorithm, LoopConfig
from experiments import config as C

ROOT = Path(__file__).resolve().parents[1]
SOURCES = ("experiments", "benchmarks", "examples", "tools", "voyager_gym", "tests")


# -- one recipe: nothing outside algos/ sets an algorithm's attributes ------------------------------------
def _algorithm_attributes() -> set[str]:
    """Every attribute an algorithm object has: those its classes (and their bases up to Algorithm) assign
    on `self`, and their properties."""
    names: set[str] = set()
    specs = map(registry.algorithm_spec, registry.algorithm_names())
    classes = {k for spec in specs for k in spec.cls.__mro__ if k.__module__.startswith("algos.")}
    for cls in classes:
        tree = ast.parse(inspect.getsource(cls))
        for node in ast.walk(tree):
            targets = (node.targets if isinstance(node, ast.Assign)
                       else [node.target] if isinstance(node, ast.AnnAssign | ast.AugAssign) else [])
            for t in targets:
                for el in (t.elts if isinstance(t, ast.Tuple) else [t]):
                    if (isinstance(el, ast.Attribute) and isinstance(el.value, ast.Name)
                            and el.value.id == "self"):
                        names.add(el.attr)
        names |= {n for n, v in vars(cls).items() if isinstance(v, property)}
    return names


def _assignments(tree: ast.AST, names: set[str]) -> list[tuple[int, str]]:
    """(line, `x.attr`) of every assignment to `x.attr` with attr in `names` and x not `self`, and every
    setattr(x, "attr", ...) (monkeypatch.setattr too)."""
    hits = []
    for node in ast.walk(tree):
        targets = (node.targets if isinstance(node, ast.Assign)
                   else [node.target] if isinstance(node, ast.AnnAssign | ast.AugAssign) else [])
        for t in targets:
            for el in (t.elts if isinstance(t, ast.Tuple) else [t]):
                if (isinstance(el, ast.Attribute) and el.attr in names
                        and not (isinstance(el.value, ast.Name) and el.value.id in ("self", "cls"))):
                    hits.append((node.lineno, f"{ast.unparse(el.value)}.{el.attr}"))
        func = getattr(node, "func", None)
        if (isinstance(node, ast.Call) and getattr(func, "attr", getattr(func, "id", "")) == "setattr"
                and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant)
                and node.args[1].value in names and not isinstance(node.args[0], ast.Constant)):
            hits.append((node.lineno, f"setattr({ast.unparse(node.args[0])}, {node.args[1].value!r})"))
    return hits


def test_no_module_outside_algos_sets_an_algorithm_attribute():
    """The entry points, the recipe, benchmarks, examples and tests hand an algorithm what it needs through
    `RunContext` (`Algorithm.setup`) and the loop's `bind`, never by assigning its attributes (the five the
    entry points used to set: replay_env, demo_samples, pool, envs, env_steps_left, and every other)."""
    names = _algorithm_attributes()
    assert {"replay_env", "demo_samples", "pool", "envs", "env_steps_left", "context", "cfg"} <= names
    found = []
    files = [p for d in SOURCES for p in sorted((ROOT / d).rglob("*.py"))]
    for path in files:
        for line, what in _assignments(ast.parse(path.read_text()), names):
            found.append(f"{path.relative_to(ROOT)}:{line}: {what}")
    for nb in sorted((ROOT / "notebooks").glob("*.ipynb")):
        for cell in json.loads(nb.read_text())["cells"]:
            if cell["cell_type"] == "code":
                src = "".join(cell["source"])
                try:
                    code = "\n".join(ln for ln in src.splitlines() if not ln.startswith(("%", "!")))
                    tree = ast.parse(code)
                except SyntaxError:
                    continue
                found += [f"{nb.relative_to(ROOT)}: {what}" for _, what in _assignments(tree, names)]
    assert not found, "set through RunContext / Algorithm.setup / bind instead:\n" + "\n".join(found)


def test_the_scan_catches_an_assignment():
    names = {"pool", "demo_samples"}
    src = "algo.pool = x\nself.pool = y\na.b.demo_samples = []\nsetattr(algo, 'pool', 1)\nalgo.other = 2\n"
    assert [w for _, w in _assignments(ast.parse(src), names)] == [
        "algo.pool", "a.b.demo_samples", "setattr(algo, 'pool')"]


def test_train_and_compare_build_their_runs_with_the_one_recipe():
    """train.py and compare.py's pairs (sb3-ppo's included) call experiments.recipe.train_run and nothing of
    the assembly it does (no envs, demonstrations, pools or loops of their own)."""
    for script in ("train", "compare"):
        src = (ROOT / "experiments" / f"{script}.py").read_text()
        assert "train_run(" in src, script
        for name in ("train_loop(", "hand_demos", "hand_rft_pool", "make_algorithm_envs", "demonstrations(",
                     "sb3_ppo.train(", ".setup("):
            assert name not in src, f"experiments/{script}.py assembles a run itself: {name}"


# -- defaults in one place ---------------------------------------------------------------------------------
@pytest.mark.parametrize("prog", ["train", "compare"])
def test_every_algorithm_config_holds_the_cli_defaults(prog):
    """With no preset, the CLI's section of each algorithm is its config class's defaults, key by key: the
    class holds the real defaults and the CLI adds none (GRSDConfig() says rft_pool=True as every run
    does)."""
    cfg = C.parse(["preset="], C.SCHEMAS[prog], prog)
    for name in registry.algorithm_names():
        spec = registry.algorithm_spec(name)
        cli, own = dataclasses.asdict(getattr(cfg, spec.section)), dataclasses.asdict(spec.config())
        assert list(cli) == list(own)
        for key in own:
            assert cli[key] == own[key], (spec.section, key, cli[key], own[key])
    grsd = registry.algorithm_spec("grsd").config()
    assert grsd.rft_pool and grsd.demos and grsd.max_rft_samples == 8000 and grsd.fork_eval
    assert registry.algorithm_spec("rft").config().demos


def test_presets_are_the_only_overlay():
    """The compare default preset changes exactly the keys it names (and `--help` prints them)."""
    plain = C.run_config(C.parse(["preset="], C.CompareConfig, "compare"), "ppo")
    preset = C.run_config(C.parse([], C.CompareConfig, "compare"), "ppo")
    from algos.run import flatten

    a, b = flatten(plain), flatten(preset)
    changed = {k for k in a if a[k] != b[k] and k != "preset"}
    named = {o.split("=")[0] for o in C.PRESETS["compare"]["default"]}
    assert changed == {k for k in named if k.startswith("ppo.")}
    text = C.help_text("compare", C.CompareConfig)
    assert "default (applied unless preset= says otherwise)" in text and "ppo.epochs=4" in text


def test_stored_run_configs_keep_their_keys_and_values():
    """The config.json every run folder stored before the defaults moved into the algorithm classes (commit
    876c3e8: train's run of each algorithm, compare's pairs with the default and the smoke preset) is this
    code's config, key for key and value for value: resuming those folders is no change of identity."""
    from algos.run import flatten, identity, identity_diff
    from experiments.compare import pair_config

    stored = json.loads((ROOT / "tests" / "data" / "run_configs_876c3e8.json").read_text())
    now = {"train": {a: C.run_config(C.parse([f"algo={a}"]), a) for a in stored["train"]},
           "compare": {a: pair_config(C.parse([], C.CompareConfig), a, 1) for a in stored["compare"]},
           "compare_smoke": {a: pair_config(C.parse(["preset=smoke"], C.CompareConfig), a, 0)
                             for a in stored["compare_smoke"]}}
    for prog, runs in stored.items():
        for a, old in runs.items():
            new = {k: v for k, v in identity(now[prog][a]).items() if k in identity(old)}
            assert not identity_diff(old, new), (prog, a, identity_diff(old, new))
            assert set(flatten(old)) <= set(flatten(now[prog][a])), (prog, a)  # no key renamed or dropped


def test_keys_added_since_are_resumable():
    """A key a run folder of 876c3e8 lacks reads there as ADDED_KEYS says (the value that does what those
    runs did): resuming them is no change of identity unless the run asks for something else."""
    from algos.run import identity_diff

    stored = json.loads((ROOT / "tests" / "data" / "run_configs_876c3e8.json").read_text())
    for a, old in stored["train"].items():
        diff = identity_diff(old, C.run_config(C.parse([f"algo={a}"]), a))
        assert not diff, f"train algo={a}: add these keys to algos.run.ADDED_KEYS: {diff}"


# -- every field checks its range; NaN and infinity nowhere ----------------------------------------------
def _float_keys(schema: type) -> list[str]:
    """Every dotted float key of `schema` (sections included)."""
    out = [f for f in float_fields(schema) if not dataclasses.is_dataclass(typing.get_type_hints(schema)[f])]
    for f in dataclasses.fields(schema):
        t = typing.get_type_hints(schema)[f.name]
        if dataclasses.is_dataclass(t):
            out += [f"{f.name}.{k}" for k in float_fields(t)]
    return out


# every float key of every entry point, each once (with the first entry point that has it)
FLOAT_KEYS = sorted({k: prog for prog in ("evaluate", "pretrain", "compare", "train")
                     for k in _float_keys(C.SCHEMAS[prog])}.items())
FLOAT_KEYS = [(prog, k) for k, prog in FLOAT_KEYS]


def test_the_float_keys_are_found():
    keys = {k for _, k in FLOAT_KEYS}
    assert {"grpo.eps", "grpo.lr", "grpo.beta", "ppo.warmup_lr", "env.transition_pause", "heldout_fraction",
            "base.lr", "grsd.greedy_weight", "env.actor_resources"} <= keys
    assert len(FLOAT_KEYS) >= 60


@pytest.mark.parametrize("bad", ["nan", "inf"])
@pytest.mark.parametrize("prog,key", FLOAT_KEYS)
def test_every_float_key_refuses_nan_and_infinity(prog, key, bad):
    value = f"x={bad}" if key == "env.actor_resources" else bad
    with pytest.raises(SystemExit) as e:
        C.parse([f"{key}={value}"], C.SCHEMAS[prog], prog)
    msg = str(e.value)
    assert f"{key}=" in msg and "expected finite value" in msg.replace("a finite", "finite"), msg
    assert "\n" not in msg


@pytest.mark.parametrize("name", [*registry.algorithm_names(), "sb3-ppo"])
def test_every_algorithm_config_refuses_nan_and_infinity_directly(name):
    """Library users get the same checks: the config classes (sb3-ppo's too) check themselves."""
    if name == "sb3-ppo":
        from algos.sb3_ppo import SB3PPOConfig

        section, config = "sb3_ppo", SB3PPOConfig
    else:
        section, config = registry.algorithm_spec(name).section, registry.algorithm_spec(name).config
    keys = float_fields(config)
    assert "lr" in keys  # the finder sees the float fields
    for key in keys:
        for bad in (math.nan, math.inf):
            with pytest.raises(ValueError, match=f"^{section}.{key}={bad!r}: expected a finite value"):
                config(**{key: bad})


@pytest.mark.parametrize("argv,prog,expected", [
    (["ppo.warmup_lr=-1"], "train", "ppo.warmup_lr=-1.0: expected a finite value > 0"),
    (["ppo.critic_warmup=-1"], "train", "ppo.critic_warmup=-1: expected an integer >= 0"),
    (["grsd.branch_k=-1"], "train", "grsd.branch_k=-1: expected an integer >= 1"),
    (["seed=-1"], "train", "seed=-1: expected an integer >= 0"),
    (["seed=-1"], "compare", "seed=-1: expected an integer >= 0"),
    (["base.seed=-2"], "pretrain", "base.seed=-2: expected an integer >= 0"),
    (["split_seed=-1"], "train", "split_seed=-1: expected an integer >= 0"),
    (["sb3_budget=0"], "compare", "sb3_budget=0: expected an integer >= 1"),
    (["sb3_budget=-5"], "compare", "sb3_budget=-5: expected an integer >= 1"),
    (["budget=-1"], "train", "budget=-1: expected an integer >= 0"),
    (["grpo.invalid_penalty=-0.5"], "train", "grpo.invalid_penalty=-0.5: expected a finite value >= 0"),
    (["grsd.fork_eval_arms=[control,oracles]"], "train",
     "grsd.fork_eval_arms='oracles': expected one of control, grpo, oracle, reflect"),
    (["grsd.recipe=mix"], "train", "grsd.recipe='mix': expected one of replay, paper"),
    (["grsd.teacher=best"], "train",
     "grsd.teacher='best': expected one of shortest, similar, all (or '' for the recipe's)"),
    (["vine.k=0"], "compare", "vine.k=0: expected an integer >= 1"),
    (["env.transition_pause=-1"], "evaluate", "env.transition_pause=-1.0: expected a finite value >= 0"),
])
def test_ranges_beside_their_fields_are_one_line_errors(argv, prog, expected):
    args = [*argv, "policy=expert"] if prog == "evaluate" else argv
    with pytest.raises(SystemExit) as e:
        C.parse(args, C.SCHEMAS[prog], prog)
    assert str(e.value) == f"{prog}: {expected}"


# -- a training step that goes non-finite stops the run ------------------------------------------------------
class Breaks(Algorithm):
    """An algorithm whose update at iteration `at` leaves NaN in the weights (`what="weights"`) or reports an
    infinite loss (`what="loss"`), and trains nothing otherwise."""

    name = "breaks"

    def __init__(self, at: int, what: str):
        super().__init__(LoopConfig(iterations=4, instances_per_iter=1, group_size=2))
        self.at, self.what = at, what

    def update(self, policy, groups, iteration, seed):
        if iteration == self.at and self.what == "weights":
            import torch

            with torch.no_grad():
                policy.trainable_parameters()[0].view(-1)[0] = float("nan")
        if iteration == self.at and self.what == "loss":
            return {"losses/total": math.inf}
        return {"losses/total": 0.5, "losses/sft": math.nan}  # NaN: no such term this update, not an error


@pytest.mark.parametrize("what", ["weights", "loss"])
def test_a_step_that_goes_non_finite_stops_the_run_and_keeps_the_last_good_checkpoint(tmp_path, what):
    from algos.loop import NonFiniteError, train_loop
    from algos.policies.small import SmallPolicy
    from algos.run import Run, checkpoint_dir
    from voyager_gym.env import app_names
    from voyager_gym.vector import make_vec

    envs = make_vec(2, "sync", observation_mode="elements", noise="none")
    try:
        with Run(tmp_path / "run", {"algo": "breaks"}, wandb_mode="disabled") as run:
            with pytest.raises(NonFiniteError) as e:
                train_loop(Breaks(2, what), SmallPolicy(app_names(), seed=0), envs, run,
                           ["SystemWifiTurnOn"], seed=0, eval_n_per_task=1)
            rows = run.metrics()
    finally:
        envs.close()
    msg = str(e.value)
    assert msg.startswith("breaks: iteration 2's update gave ") and "\n" not in msg
    assert ("non-finite weights" if what == "weights" else "an infinite loss (losses/total=inf)") in msg
    assert "keeps its last good checkpoint, it_1" in msg
    assert checkpoint_dir(tmp_path / "run").name == "it_1"  # iteration 2 was neither checkpointed ...
    assert [r["iteration"] for r in rows] == [0, 1]  # ... nor logged
    from algos.policies.registry import load_policy

    kept = load_policy(checkpoint_dir(tmp_path / "run") / "policy")
    import torch

    assert all(bool(torch.isfinite(p).all()) for p in kept.trainable_parameters())


def test_train_py_names_a_non_finite_run_in_one_line(tmp_path, monkeypatch):
    """train.py (and compare.py) turn the error into a one-line exit naming the algorithm and iteration."""
    from algos.loop import NonFiniteError
    from experiments import train

    def breaks(*_a, **_k):
        raise NonFiniteError("grpo: iteration 3's update gave non-finite weights (NaN or infinity in 2 of "
                             "its tensors); the run stops and keeps its last good checkpoint, it_2, in x")

    monkeypatch.setattr("experiments.recipe.train_run", breaks)
    with pytest.raises(SystemExit, match=r"^train: grpo: iteration 3's update gave non-finite weights"):
        train.main(["algo=grpo", f"out_dir={tmp_path / 'r'}", "wandb=disabled"])
