"""The examples run and do what they say: examples/trl_grpo.py trains with TRL's GRPOTrainer on SimDroid."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]


def load_example(name: str):
    spec = importlib.util.spec_from_file_location(f"examples_{name}", ROOT / "examples" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_the_example_tokenizer_renders_and_parses_tool_calls():
    """The chat template the example gives the tiny tokenizer renders the env's tools, and TRL's parser reads
    a tool call written in it back into the call the env then executes."""
    from trl.chat_template_utils import add_response_schema, parse_response, supports_tool_calling

    from voyager_gym.integrations.trl import VoyagerToolEnv

    ex = load_example("trl_grpo")
    cls = VoyagerToolEnv.with_tools(["open_app", "click", "status"])
    demos = ex.expert_buffer(["OpenAppTaskEval"], 1, 0).to_conversations(form="tools", tool_env=cls)
    tok = add_response_schema(ex.build_tokenizer(demos))
    assert supports_tool_calling(tok)
    env = cls(noise="none")
    first = env.reset(task="OpenAppTaskEval", instance_seed=5)
    tools = [getattr(env, n) for n in cls.tool_names()]
    prompt = tok.apply_chat_template([{"role": "user", "content": first}], tools=tools, tokenize=True,
                                     add_generation_prompt=True, return_dict=True)["input_ids"]
    assert '"name": "open_app"' in tok.decode(prompt) and '"name": "double_tap"' not in tok.decode(prompt)
    app = env.info["params"]["app_name"]
    call_json = json.dumps({"name": "open_app", "arguments": {"app_name": app}})
    text = f"<tool_call>\n{call_json}\n</tool_call><|im_end|>"
    parsed = parse_response(tok, tok(text, add_special_tokens=False)["input_ids"], prefix=prompt, tools=tools)
    call = parsed["tool_calls"][0]["function"]
    assert call == {"name": "open_app", "arguments": {"app_name": app}}
    getattr(env, call["name"])(**call["arguments"])
    assert env.transcript[0]["arguments"] == {"app_name": app} and env.info["step"] == 1


@pytest.mark.slow
def test_trl_grpo_example_calls_tools_pays_the_verifier_and_trains():
    from voyager_gym.integrations.trl import VoyagerToolEnv

    torch.set_num_threads(1)
    ex = load_example("trl_grpo")
    out = ex.main(["--steps", "2"])
    trainer, envs, summary = out["trainer"], out["envs"], out["summary"]
    calls = [c for e in envs for c in e.transcript]
    assert calls, "the model made no tool call the env received"
    assert {c["tool"] for c in calls} <= {"open_app", "click", "status"}
    assert max(summary["tool_call_frequency"]) > 0  # TRL counted the calls it parsed and ran
    for e in envs:  # each episode's reward is the verifier's: replaying its calls gives the same score
        replay = VoyagerToolEnv(noise="none")
        replay.reset(task=e.info["task"], params=e.info["params"])
        for c in e.transcript:
            getattr(replay, c["tool"])(**c["arguments"])
        assert replay.get_reward() == e.get_reward()
        assert e.get_reward() == (e.info["score"] if e.done and e.transcript[-1]["tool"] == "status" else 0.0)
    last = [h for h in trainer.state.log_history if "reward" in h][-1]  # the last batch: these envs' episodes
    verifier = np.mean([e.get_reward() for e in envs])
    assert last["rewards/VoyagerToolEnv/mean"] == pytest.approx(verifier)
    assert last["rewards/tool_format/mean"] == pytest.approx(np.mean(ex.tool_format(envs)))
    assert last["reward"] == pytest.approx(verifier + np.mean(ex.tool_format(envs)))  # GRPO optimised it
    changed, total = map(int, summary["params_changed_by_grpo"].split("/"))
    assert changed > 0, json.dumps(summary)
