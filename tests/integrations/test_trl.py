"""VoyagerToolEnv and suite_dataset: TRL's environment protocol over SimDroid, without a trainer (the
example's test, tests/test_examples.py, trains)."""

from __future__ import annotations

import inspect
import json
import math

import numpy as np
import pytest

from voyager_gym.actions import ACTION_TYPES, DIRECTIONS, parse_action
from voyager_gym.integrations.trl import (
    SYSTEM_PROMPT,
    TOOL_NAMES,
    VoyagerToolEnv,
    observation_text,
    suite_dataset,
    tool_schemas,
)
from voyager_gym.suites import TrainGenerator, eval_suite

TASKS = ["OpenAppTaskEval", "SystemWifiTurnOn"]


def trl_tools(env: VoyagerToolEnv) -> list[str]:
    """The methods GRPOTrainer offers as tools: public functions of the class but reset and get_reward."""
    return [n for n, _ in inspect.getmembers(type(env), predicate=inspect.isfunction)
            if n not in ("reset", "get_reward") and not n.startswith("_")]


def call_expert(env: VoyagerToolEnv) -> str:
    """Make the tool call for the SimDroid expert's next action, as TRL would dispatch the model's call."""
    a = parse_action(env.env.expert_action()).to_dict()
    return getattr(env, a.pop("action_type"))(**a)


def test_tools_are_androidworlds_actions_typed_and_documented():
    env = VoyagerToolEnv(noise="none")
    assert trl_tools(env) == list(TOOL_NAMES)
    assert set(TOOL_NAMES) == set(ACTION_TYPES)
    schemas = {s["function"]["name"]: s["function"] for s in tool_schemas()}
    assert schemas["click"]["parameters"]["properties"]["index"]["type"] == "integer"
    assert schemas["click"]["parameters"]["required"] == ["index"]
    it = schemas["input_text"]["parameters"]
    assert list(it["properties"]) == ["index", "text", "clear_text"] and it["required"] == ["index", "text"]
    assert it["properties"]["clear_text"]["type"] == "boolean"
    assert schemas["scroll"]["parameters"]["properties"]["direction"]["enum"] == list(DIRECTIONS)
    assert schemas["scroll"]["parameters"]["required"] == ["direction"]
    assert schemas["status"]["parameters"]["properties"]["goal_status"]["enum"] == ["complete", "infeasible"]
    for f in schemas.values():
        assert f["description"]
        assert all(p["description"] for p in f["parameters"]["properties"].values())


@pytest.mark.parametrize("task", TASKS)
def test_expert_episode_through_the_tools_earns_the_verifiers_reward(task):
    row = suite_dataset("train", tasks=[task], n=1, seed=3)[0]
    env = VoyagerToolEnv(noise="none")
    first = env.reset(**row)
    head = f"Goal: {env.info['goal']}\nStep 1 of {env.info['max_steps']}.\nScreen elements:\n0: "
    assert first.startswith(head)
    assert env.info["params"] == json.loads(row["params"])
    assert env.get_reward() == 0.0  # nothing paid before status
    while not env.done:
        text = call_expert(env)
    assert text == "Episode over: status 'complete'."
    assert env.transcript[-1] == {"tool": "status", "arguments": {"goal_status": "complete"}, "result": text,
                                  "invalid": None, "done": True, "score": 1.0}
    assert env.get_reward() == 1.0 == env.info["score"]
    assert all(c["result"].startswith(f"Step {i + 2} of ") for i, c in enumerate(env.transcript[:-1]))
    with pytest.raises(RuntimeError, match="episode is over"):
        env.click(0)
    env.reset(**row)  # a new episode: fresh transcript, nothing paid yet
    assert env.transcript == [] and env.get_reward() == 0.0 and not env.done


def test_bad_actions_are_invalid_steps_and_the_budget_truncates_with_zero():
    env = VoyagerToolEnv(noise="none", max_steps=3)
    env.reset(task="SystemWifiTurnOn", instance_seed=5)
    n = len(env.env.elements)
    text = env.click(n)
    assert text.startswith(f"Invalid action: index {n} is out of range") and "\nStep 2 of 3." in text
    assert env.transcript[-1]["invalid"] and env.info["step"] == 1 and not env.done  # the step is used
    assert env.scroll("sideways").startswith("Invalid action: scroll needs 'direction'")
    assert env.wait() == "Out of steps (3 of 3); the episode is over."
    assert env.done and env.get_reward() == 0.0


def test_status_pays_the_verdict_not_a_claim():
    env = VoyagerToolEnv(noise="none")
    env.reset(task="SystemWifiTurnOn", instance_seed=5)
    env.status("complete")  # wifi still off: the verifier says no
    assert env.done and env.get_reward() == 0.0 and env.info["score"] == 0.0


def test_images_come_with_the_text_when_asked():
    env = VoyagerToolEnv(noise="none", images=True, render_scale=0.1)
    first = env.reset(task="OpenAppTaskEval", instance_seed=5)
    assert [p["type"] for p in first] == ["image", "text"] and first[1]["text"].startswith("Goal: ")
    assert first[0]["image"].size == (108, 240)
    nxt = env.open_app("Settings")
    assert np.asarray(nxt[0]["image"]).shape == (240, 108, 3) and nxt[1]["text"].startswith("Step 2 of ")


def test_same_seed_same_episodes_and_factory_seeds_each_env():
    def run(env: VoyagerToolEnv) -> list:
        out = []
        for row in suite_dataset("train", tasks=TASKS, n=2, seed=1):
            first = env.reset(**row)
            out += [np.asarray(first[0]["image"]).tobytes(), call_expert(env)[1]["text"],
                    env.info["screen_key"]]
        return out

    make = VoyagerToolEnv.factory(seed=7, images=True, render_scale=0.1, noise="heavy")
    a, b = make(), make()
    assert run(a) == run(VoyagerToolEnv(seed=7, images=True, render_scale=0.1, noise="heavy"))
    assert run(b) == run(VoyagerToolEnv(seed=8, images=True, render_scale=0.1, noise="heavy"))
    assert run(VoyagerToolEnv(seed=7, images=True, render_scale=0.1, noise="heavy")) != run(
        VoyagerToolEnv(seed=8, images=True, render_scale=0.1, noise="heavy"))


def test_factory_hands_out_one_backend_kwargs_entry_per_env():
    make = VoyagerToolEnv.factory(seed=0, backend_kwargs=[{"noise": "none"}], render_scale=0.1)
    quiet, default = VoyagerToolEnv(noise="none").env.backend.noise, VoyagerToolEnv().env.backend.noise
    assert make().env.backend.noise == quiet != default
    with pytest.raises(ValueError, match=r"environment #2 but backend_kwargs has 1 entries"):
        make()


def test_suite_dataset_rows_are_the_suites_instances():
    train = suite_dataset("train", tasks=TASKS, n=3, seed=2, repeat=2)
    insts = TrainGenerator(TASKS, seed=2).take(3)
    assert train.column_names == ["prompt", "task", "instance_seed", "params", "index"]
    assert train["task"] == [i.name for i in insts for _ in range(2)]
    assert train["instance_seed"] == [i.seed for i in insts for _ in range(2)]
    assert [json.loads(p) for p in train["params"]] == [i.params for i in insts for _ in range(2)]
    prompt = [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": ""}]
    assert train[0]["prompt"] == prompt
    ev = suite_dataset("eval", tasks=TASKS, n=2)
    assert ev["instance_seed"] == [i.seed for i in eval_suite(TASKS, n_per_task=2)]
    own = suite_dataset(eval_suite(TASKS, n_per_task=1, backend="env"))  # params left to the env
    assert own["params"] == [None, None]
    env = VoyagerToolEnv(noise="none")
    env.reset(**own[1])
    assert env.info["params"] == VoyagerToolEnv(noise="none").env.backend.generate_params(
        own[1]["task"], own[1]["instance_seed"])


def test_bad_input_names_the_value():
    with pytest.raises(ValueError, match="instances='test': expected 'train', 'eval'"):
        suite_dataset("test")
    with pytest.raises(ValueError, match="repeat=0"):
        suite_dataset("train", tasks=TASKS, repeat=0)
    with pytest.raises(ValueError, match="no task instances"):
        suite_dataset([])
    with pytest.raises(ValueError, match="backend='emulator'"):
        VoyagerToolEnv(backend="emulator")
    env = VoyagerToolEnv(noise="none")
    with pytest.raises(RuntimeError, match=r"click\(\) before reset"):
        env.click(0)
    with pytest.raises(ValueError, match=r"task=None \(columns: \['prompt'\]\)"):
        env.reset(prompt=[])
    with pytest.raises(KeyError, match="did you mean .SystemWifiTurnOn."):
        env.reset(task="SystemWifiTurnOnn", instance_seed=1)


def test_observation_text_is_the_prompts_screen_format():
    from algos.prompt import PolicyInput, render_prompt

    env = VoyagerToolEnv(noise="none")
    env.reset(task="SystemWifiTurnOn", instance_seed=5)
    els = env.env.elements
    prompt = render_prompt(PolicyInput(goal="g", elements=els, step=0, max_steps=10))
    screen = observation_text(els, 0, 10, "g")
    assert prompt.split("Screen elements:")[1] == screen.split("Screen elements:")[1]
    assert not math.isnan(env.get_reward())


def test_with_tools_offers_a_subset_to_trl():
    cls = VoyagerToolEnv.with_tools(["status", "open_app", "click"])
    env = cls.factory(seed=0, noise="none")()
    assert type(env).__name__ == "VoyagerToolEnv" and isinstance(env, VoyagerToolEnv)
    assert trl_tools(env) == cls.tool_names() == ["click", "open_app", "status"]
    assert [s["function"]["name"] for s in tool_schemas(cls)] == ["click", "open_app", "status"]
    env.reset(task="OpenAppTaskEval", instance_seed=5)
    env.open_app(env.info["params"]["app_name"])
    env.status("complete")
    assert env.get_reward() == 1.0
    with pytest.raises(ValueError, match=r"tools \['tap'\]: expected a non-empty list of answer, click"):
        VoyagerToolEnv.with_tools(["click", "tap"])
