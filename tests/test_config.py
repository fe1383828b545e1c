"""The composed configuration: one meaning per key, real lists and maps, errors that name the key, `--help` on
every entry point generated from the config classes, and the installed `voyager-train` commands."""

from __future__ import annotations

import dataclasses
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from experiments import cli
from experiments import config as C
from voyager_gym import cli as env_cli

ROOT = Path(__file__).resolve().parents[1]


def _exit_message(argv: list[str], schema: type = C.TrainConfig) -> str:
    with pytest.raises(SystemExit) as e:
        C.parse(argv, schema)
    return str(e.value)


def test_entry_points_share_their_parts():
    """The same part is the same class everywhere: a key cannot drift between entry points."""
    for name in ("train", "pretrain", "compare", "evaluate"):
        schema = C.SCHEMAS[name]
        fields = {f.name: f for f in dataclasses.fields(schema)}
        assert issubclass(schema, C.CommonPart) and issubclass(schema, C.SuitePart)
        assert fields["env"].default_factory is C.EnvConfig
        assert fields["policy"].default_factory is C.PolicyConfig
    assert issubclass(C.CompareConfig, C.AlgosPart) and issubclass(C.TrainConfig, C.AlgosPart)
    assert "eval_every" not in {f.name for f in dataclasses.fields(C.CompareConfig)}  # per algorithm only
    assert not {"render_scale", "pixel_scale"} & set(C._fields(C.TrainConfig))  # one notion: env.screenshots


@pytest.mark.parametrize("tasks", ["tasks=[MarkorCreateNote,SimpleSmsSend]",
                                   "tasks=MarkorCreateNote,SimpleSmsSend"])
def test_lists_take_both_forms(tasks):
    assert C.parse([tasks]).tasks == ["MarkorCreateNote", "SimpleSmsSend"]


def test_maps_lists_of_ints_and_section_names():
    cfg = C.parse(["env.actor_resources=emulator=1,gpu=0.5", "env.console_ports=5554,5556", "policy=hf"])
    assert cfg.env.actor_resources == {"emulator": 1.0, "gpu": 0.5}
    assert cfg.env.console_ports == [5554, 5556]
    assert cfg.policy.name == "hf"
    assert C.parse(["env.actor_resources={emulator: 2}"]).env.actor_resources == {"emulator": 2.0}


def test_compare_takes_the_algorithms_as_the_card_says():
    cfg = C.parse(["algo=grsd,grpo,ppo"], C.CompareConfig)
    assert cfg.algo == ["grsd", "grpo", "ppo"]
    assert cfg.grsd.instances_per_iter == 77  # the default preset
    smoke = C.parse(["algo=grsd,grpo,ppo", "preset=smoke", "budget=300"], C.CompareConfig)
    assert smoke.budget == 300 and smoke.seeds == 2 and smoke.env.num_envs == 8  # the user's override wins


@pytest.mark.parametrize(
    "argv,schema,expected",
    [
        (["env.num_env=3"], C.TrainConfig, "unknown key 'env.num_env' for train; did you mean"),
        (["seed=abc"], C.TrainConfig, "seed='abc': expected int"),
        (["env.noise=no"], C.TrainConfig, "env.noise='no': expected one of default, none, heavy"),
        (["algo=grsd,grpo"], C.TrainConfig,
         "algo='grsd,grpo': expected one of rft, grsd, grpo, ppo, gigpo, vine"),
        (["algo=grsd,dpo"], C.CompareConfig,
         "algo='dpo': expected one of rft, grsd, grpo, ppo, gigpo, vine, grsd-grpo, grsd-reflect, sb3-ppo"),
        (["preset=huge"], C.CompareConfig, "preset='huge': expected one of default, paper, smoke"),
        (["base.demos_per_task=-1"], C.TrainConfig, "base.demos_per_task=-1: expected an integer >= 1"),
        (["budget=0"], C.CompareConfig, "budget=0: expected an integer >= 1"),
        (["env.screen_scale=2"], C.TrainConfig, "env.screen_scale=2.0: expected a finite value in (0, 1]"),
        (["policy.memory=65"], C.TrainConfig, "policy.memory=65: expected 0 to 64"),
        (["policy.layers=0"], C.TrainConfig, "policy.layers=0: expected an integer >= 1"),
        (["policy.d_model=30"], C.TrainConfig, "policy.d_model=30: expected a positive multiple of 4"),
        (["base.lr_schedule=cosine"], C.PretrainConfig,
         "base.lr_schedule='cosine': expected one of constant, linear"),
        (["policy=small"], C.EvalConfig, "policy=small needs policy.path="),
        (["policy=expert"], C.TrainConfig, "policy.name='expert': expected one of small, hf"),
        (["train"], C.TrainConfig, "arguments must be key=value overrides, got ['train']"),
    ],
)
def test_bad_values_name_the_key_the_value_and_what_is_allowed(argv, schema, expected):
    assert expected in _exit_message(argv, schema)


def test_unknown_task_suggests_the_closest():
    from experiments.common import resolve_tasks

    with pytest.raises(SystemExit, match="did you mean 'SystemBluetoothTurnOff'"):
        resolve_tasks(["SystemBlutoothTurnOff"])
    assert resolve_tasks(["all"]) == sorted(resolve_tasks(["all"])) and len(resolve_tasks(["all"])) >= 77


@pytest.mark.parametrize("prog", list(C.SCHEMAS))
def test_help_lists_every_key_with_type_default_and_meaning(prog, capsys):
    schema = C.SCHEMAS[prog]
    with pytest.raises(SystemExit) as e:
        C.parse(["--help"], schema, prog)
    assert e.value.code == 0
    out = capsys.readouterr().out
    rows = {ln.split()[0]: ln for ln in out.splitlines() if ln.startswith("  ") and len(ln.split()) > 2}
    for key, t in C._fields(schema).items():
        assert key in rows, f"{prog} --help misses {key}"
        assert C._type_name(t) in rows[key]
        assert C._doc_of(schema, key), f"{key} has no comment to show as its meaning"
    for name, overrides in C.PRESETS[prog].items():
        assert (f"  {name}: " in out or f"  {name} (applied unless preset= says otherwise): " in out) and all(
            o in out for o in overrides)


def test_field_docs_read_trailing_and_continued_comments():
    docs = C.field_docs(C.EnvConfig)
    assert docs["num_envs"] == "sub-envs of the local vector env (SimDroid)"
    assert docs["screenshots"].startswith("which runs render screenshots") and "GRSD then cannot run" in docs[
        "screenshots"]
    assert "scale" not in docs  # a method is not a field
    from algos.rft import RFTConfig

    assert C.field_docs(RFTConfig)["group_size"].startswith("G: rollouts per instance")  # inherited field


def test_cli_lists_and_dispatches_the_experiment_commands(capsys):
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    out = capsys.readouterr().out
    assert all(name in out for name in ("train", "pretrain", "evaluate", "compare", "report"))
    with pytest.raises(SystemExit) as e:
        cli.main(["compare", "--help"])
    assert e.value.code == 0 and "sb3_budget" in capsys.readouterr().out


def test_the_env_command_points_to_the_training_command(capsys):
    """`voyager-gym` has no training commands (it never imports the training code): it names their home."""
    for name in ("train", "compare", "forks"):
        assert env_cli.main([name, "algo=rft"]) == 2
        assert f"`voyager-train {name}`" in capsys.readouterr().err


def test_every_registered_algorithm_has_its_config_section():
    """AlgosPart holds one section per registered algorithm, of that algorithm's config class."""
    import typing

    from algos.registry import algorithm_names, algorithm_spec, make_algorithm

    sections = typing.get_type_hints(C.AlgosPart)
    assert C.ALGORITHMS == tuple(algorithm_names())
    assert sections == {algorithm_spec(a).section: algorithm_spec(a).config for a in C.ALGORITHMS}
    assert C.SECTIONS == tuple(algorithm_spec(a).section for a in C.ALGORITHMS)
    cfg = C.parse(["grpo.lr=3e-4"], C.TrainConfig)
    assert make_algorithm("grpo", cfg.grpo).cfg.lr == 3e-4
    with pytest.raises(ValueError, match="unknown algo 'grpoo'; expected one of rft, grsd"):
        make_algorithm("grpoo")
    with pytest.raises(TypeError, match="'ppo' takes a PPOConfig, got RFTConfig"):
        make_algorithm("ppo", cfg.rft)


def test_missing_training_extra_names_the_extra(monkeypatch, capsys):
    import importlib

    def missing(name: str):
        raise ModuleNotFoundError("No module named 'pyarrow'", name="pyarrow")

    monkeypatch.setattr(importlib, "import_module", missing)
    assert cli.main(["train", "algo=rft"]) == 2
    err = capsys.readouterr().err
    assert "pip install 'voyager-gym[train]'" in err and "'pyarrow'" in err


def test_forks_without_the_training_extra_names_the_extra(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # as if the training extra were not installed
    for name in ("algos.forks.figure", "algos.forks.examples", "algos.forks", "algos.buffer"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    assert cli.main(["forks", "runs/none"]) == 2
    assert "voyager-gym[train]" in capsys.readouterr().err


def test_scripts_are_thin_and_run_as_files():
    for script in sorted((ROOT / "experiments").glob("*.py")):
        assert "sys.path.insert" not in script.read_text(), script
    r = subprocess.run([sys.executable, str(ROOT / "experiments" / "evaluate.py"), "--help"],
                       capture_output=True, text=True, cwd=ROOT.parent, timeout=120)
    assert r.returncode == 0 and "policy.path" in r.stdout


def test_report_refuses_a_folder_that_is_not_a_comparison(tmp_path):
    from experiments.report import main as report

    run = tmp_path / "train-run"
    run.mkdir()
    (run / "config.json").write_text(json.dumps({"algo": "rft"}))
    (run / "metrics.jsonl").write_text('{"iteration": 0}\n')
    with pytest.raises(SystemExit, match="expected a comparison folder"):
        report([str(run)])
    assert (run / "metrics.jsonl").read_text() == '{"iteration": 0}\n'  # untouched


def test_pipelined_vector_env_from_the_config():
    """`env.vector=pipelined` with `env.lanes` / `env.lane_workers` builds the pipelined vector env."""
    from experiments.common import make_envs
    from voyager_gym.vector import PipelinedVectorEnv

    cfg = C.parse(["env.vector=pipelined", "env.num_envs=4", "env.lanes=2", "env.lane_workers=0",
                   "tasks=[SystemWifiTurnOn]"])
    envs = make_envs(cfg)
    try:
        assert isinstance(envs, PipelinedVectorEnv) and envs.num_envs == 4
    finally:
        envs.close()
    assert "env.lane_workers=-1: expected an integer >= 0" in _exit_message(["env.lane_workers=-1"])
    real = _exit_message(["env.vector=pipelined", "env.backend=androidworld"])
    assert "expected env.backend=simdroid" in real


def test_policy_memory_reaches_the_policy_and_keys_its_own_cache():
    from experiments.common import base_key, new_policy
    from voyager_gym.env import VoyagerEnv, app_names

    plain, mem = C.parse([], C.TrainConfig), C.parse(["policy.memory=8"], C.TrainConfig)
    env = VoyagerEnv(observation_mode="elements")
    assert new_policy(plain, env).config["memory"] == 0 and new_policy(mem, env).config["memory"] == 8
    assert new_policy(plain, env).app_names == list(app_names(env))  # the env's open_app vocabulary
    assert base_key(plain, ["SystemWifiTurnOn"]) != base_key(mem, ["SystemWifiTurnOn"])


def test_policy_layers_reach_the_policy_and_key_its_own_cache():
    from experiments.common import base_key, new_policy
    from voyager_gym.env import VoyagerEnv

    two, one = C.parse([], C.TrainConfig), C.parse(["policy.layers=1"], C.TrainConfig)
    env = VoyagerEnv(observation_mode="elements")
    assert len(new_policy(one, env).model.blocks) == 1 and len(new_policy(two, env).model.blocks) == 2
    assert new_policy(one, env).config["layers"] == 1  # saved with the weights: a checkpoint reloads as built
    assert base_key(one, ["SystemWifiTurnOn"]) != base_key(two, ["SystemWifiTurnOn"])


def test_policy_width_reaches_the_policy_and_keys_its_own_cache():
    from experiments.common import base_key, new_policy
    from voyager_gym.env import VoyagerEnv

    wide, narrow = C.parse([], C.TrainConfig), C.parse(["policy.d_model=64"], C.TrainConfig)
    env = VoyagerEnv(observation_mode="elements")
    assert new_policy(narrow, env).config["d_model"] == 64 and new_policy(wide, env).config["d_model"] == 96
    assert new_policy(narrow, env).model.blocks[0].qkv.in_features == 64  # the network built, not the record
    assert base_key(narrow, ["SystemWifiTurnOn"]) != base_key(wide, ["SystemWifiTurnOn"])


@pytest.mark.parametrize("arg", ["tasks=[SystemWifiTurnOn,", "env.actor_resources={a: 1",
                                 "env.actor_resources=a=[1"])
def test_a_malformed_value_is_one_line_naming_its_key(arg):
    """Before: YAML's parser traceback (issue 45)."""
    key = arg.split("=", 1)[0]
    with pytest.raises(SystemExit, match=rf"^{re.escape(key)}=.*cannot be read") as e:
        C.parse([arg], C.CompareConfig, "compare")
    assert "\n" not in str(e.value)
