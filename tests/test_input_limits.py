"""Limits on hostile or careless input (issue 12): capped action text, capped input_text, and constructor,
reset-option and config values checked with errors that name the key, the value and what is allowed."""

import json

import pytest

from voyager_gym import actions
from voyager_gym.actions import MAX_ACTION_CHARS, MAX_TEXT_CHARS, ActionError, parse_action
from voyager_gym.env import VoyagerEnv


@pytest.fixture(scope="module")
def env():
    e = VoyagerEnv(observation_mode="elements", tasks=["SystemWifiTurnOn"])
    yield e
    e.close()


def test_long_action_text_is_rejected_before_any_parsing(monkeypatch):
    def never(*_):
        raise AssertionError("parsed")

    monkeypatch.setattr(actions.ast, "literal_eval", never)
    monkeypatch.setattr(actions.json, "loads", never)
    huge = "{'action_type': 'wait', 'x': [" + "1, " * 1_000_000 + "]}"  # 3 MB of Python literal
    with pytest.raises(ActionError, match=f"expected at most {MAX_ACTION_CHARS:,}"):
        parse_action(huge)


def test_action_text_at_the_cap_still_parses():
    pad = "Reason: " + "x" * (MAX_ACTION_CHARS - 100) + "\nAction: "
    text = pad + json.dumps({"action_type": "wait"})
    assert len(text) <= MAX_ACTION_CHARS and parse_action(text).action_type == "wait"


def test_long_input_text_is_an_invalid_action(env):
    env.reset(seed=0)
    _, _, _, _, info = env.step({"action_type": "input_text", "text": "a" * (MAX_TEXT_CHARS + 1)})
    assert "expected at most 8,192" in info["invalid_action"]
    _, _, _, _, info = env.step({"action_type": "input_text", "text": "a" * 100})
    assert info["invalid_action"] is None or "8,192" not in info["invalid_action"]


@pytest.mark.parametrize("max_steps", [0, -3, 2.5, "5", True])
def test_max_steps_must_be_a_positive_integer(max_steps):
    with pytest.raises(ValueError, match=f"max_steps={max_steps!r}: expected None .* integer >= 1"):
        VoyagerEnv(observation_mode="elements", max_steps=max_steps)


@pytest.mark.parametrize(("noise", "match"), [
    ({"clock": "no"}, r"noise\['clock'\]='no': expected true or false"),
    ({"toasts": 2}, r"noise\['toasts'\]=2: expected a probability in \[0, 1\]"),
    ({"transitions": "often"}, r"noise\['transitions'\]='often': expected a probability"),
])
def test_noise_values_are_checked(noise, match):
    with pytest.raises(ValueError, match=match):
        VoyagerEnv(observation_mode="elements", noise=noise)


def test_constructor_values_name_what_is_allowed():
    with pytest.raises(ValueError, match="tasks='SystemWifiTurnOn': expected a list of task names"):
        VoyagerEnv(observation_mode="elements", tasks="SystemWifiTurnOn")
    with pytest.raises(ValueError, match=r"render_scale=0: expected a number in \[0.05, 2.0\]"):
        VoyagerEnv(observation_mode="elements", render_scale=0)


def test_a_misspelled_key_inside_instances_is_an_error(env):
    table = {7: {"task": "SystemWifiTurnOn", "parms": {"x": 1}}}
    with pytest.raises(ValueError, match=r"unknown key\(s\) \['parms'\] in options\['instances'\]\[7\]"):
        env.reset(seed=7, options={"instances": table})


@pytest.mark.parametrize(("options", "match"), [
    ("SystemWifiTurnOn", "options='SystemWifiTurnOn': expected a dict"),
    ({"instances": 5}, r"options\['instances'\]=5: expected a map from reset seed"),
    ({"instances": {3: "Wifi"}}, r"options\['instances'\]\[3\]='Wifi': expected a dict"),
    ({"task": 5}, r"options\['task'\]=5: expected a task name"),
    ({"task": "SystemWifiTurnOn", "params": [1]}, r"options\['params'\]=\[1\]: expected a dict"),
    ({"instance_seed": "x"}, r"options\['instance_seed'\]='x': expected an integer"),
    ({"instance_seed": -1}, r"options\['instance_seed'\]=-1: expected an integer"),
])
def test_reset_option_types_are_value_errors_that_name_the_key(env, options, match):
    with pytest.raises(ValueError, match=match):
        env.reset(seed=3, options=options)


@pytest.mark.parametrize(("prog", "arg", "match"), [
    ("train", "base.demos_per_task=-1", "base.demos_per_task=-1: expected an integer >= 1"),
    ("compare", "budget=0", "budget=0: expected an integer >= 1"),
    ("compare", "seeds=0", "seeds=0: expected an integer >= 1"),
    ("train", "rft.group_size=0", "rft.group_size=0: expected an integer >= 1"),
    ("train", "grpo.lr=-1", r"grpo.lr=-1.0: expected a finite value > 0"),
    ("compare", "ppo.gamma=2", r"ppo.gamma=2.0: expected a finite value in \[0, 1\]"),
    ("compare", "grsd.rft_ratio=-1", r"grsd.rft_ratio=-1.0: expected a finite value >= 0"),
    ("compare", "rft.per_group=-1", r"rft.per_group=-1: expected an integer >= 0"),
    ("train", "base.lr=0", r"base.lr=0.0: expected a finite value > 0"),
])
def test_config_values_that_mean_nothing_are_refused(prog, arg, match):
    from experiments.config import SCHEMAS, parse

    with pytest.raises(SystemExit, match=match):
        parse([arg], SCHEMAS[prog], prog)


def test_documented_values_outside_the_common_ranges_are_accepted():
    from experiments.config import SCHEMAS, parse

    # RFT samples per fork sample may exceed one; per_group=0 keeps every success of a group
    cfg = parse(["grsd.rft_ratio=4", "rft.per_group=0"], SCHEMAS["compare"], "compare")
    assert cfg.grsd.rft_ratio == 4.0 and cfg.rft.per_group == 0
