"""TrajectoryBuffer.to_conversations: trajectories as TRL's conversational multi-turn dataset (text or tool
calls), with ids, rewards and GRSD's fork annotations, accepted by TRL's SFTTrainer."""

from __future__ import annotations

import json

import numpy as np
import pytest
from PIL import Image

from algos.buffer import TrajectoryBuffer
from algos.forks.examples import find_forks
from algos.prompt import SYSTEM
from tests.algos.test_buffer import hand_buffer
from tests.algos.test_grsd import detour_groups
from voyager_gym.integrations.trl import SYSTEM_PROMPT, VoyagerToolEnv, observation_text, tool_schemas


@pytest.fixture(scope="module")
def groups():
    """SystemWifiTurnOn: the expert (success) and a rollout that goes home at step 2 and claims success."""
    return detour_groups(["SystemWifiTurnOn"], scale=0.1)


def test_text_form_turns_ids_rewards_and_forks(groups):
    buf = TrajectoryBuffer(groups)
    ok, bad = groups[0].trajectories
    forks = find_forks(groups)
    ds = buf.to_conversations(forks=forks)
    assert ds.column_names == ["messages", "group_id", "trajectory_id", "task", "instance_seed", "goal",
                               "reward", "success", "num_steps", "forks"]
    assert ds["trajectory_id"] == [ok.traj_id, bad.traj_id] and ds["group_id"] == [ok.group_id] * 2
    assert ds["reward"] == [1.0, 0.0] and ds["success"] == [True, False]
    assert ds["num_steps"] == [ok.length, bad.length] and ds["task"] == ["SystemWifiTurnOn"] * 2
    msgs = ds[0]["messages"]
    assert msgs[0] == {"role": "system", "content": SYSTEM}
    first = observation_text(ok.steps[0].elements, 0, ok.steps[0].step_max, ok.goal)
    assert msgs[1] == {"role": "user", "content": first}
    assert [m["content"] for m in msgs if m["role"] == "assistant"] == [s.response for s in ok.steps]
    assert [m["role"] for m in msgs] == ["system"] + ["user", "assistant"] * ok.length  # ends on the policy
    assert msgs[3]["content"] == observation_text(ok.steps[1].elements, 1, ok.steps[1].step_max)
    fork = {"step": 2, "other_step": 2, "correction": ok.steps[2].response, "sim_current": pytest.approx(1.0)}
    assert ds[1]["forks"] == [{"role": "failed", "other_trajectory_id": ok.traj_id, **fork,
                               "sim_next": ds[1]["forks"][0]["sim_next"]}]
    teacher = {"role": "teacher", "other_trajectory_id": bad.traj_id, **fork, "sim_next": 0}
    assert ds[0]["forks"][0] | {"sim_next": 0} == teacher
    assert buf.to_conversations()["forks"] == [[], []]  # none given, none shown


def test_tools_form_is_a_voyager_tool_env_rollout(groups):
    """The tool form replays as VoyagerToolEnv: same first observation, same tool results, same ending."""
    ok = groups[0].trajectories[0]
    row = TrajectoryBuffer(groups).to_conversations([ok], form="tools")[0]
    assert json.loads(row["tools"]) == tool_schemas()
    msgs = row["messages"]
    assert msgs[0]["content"] == SYSTEM_PROMPT
    env = VoyagerToolEnv(noise="none")
    assert msgs[1]["role"] == "user" and msgs[1]["content"] == env.reset(task=ok.task, params=ok.params)
    calls, results = msgs[2::2], msgs[3::2]
    assert len(calls) == len(results) == ok.length
    for call, result in zip(calls, results, strict=True):
        fn = call["tool_calls"][0]["function"]
        assert call["role"] == "assistant" and call["content"] == ""
        assert result["role"] == "tool" and result["name"] == fn["name"]
        assert getattr(env, fn["name"])(**json.loads(fn["arguments"])) == result["content"]
    assert results[-1]["content"] == "Episode over: status 'complete'." and env.get_reward() == 1.0


def test_invalid_steps_images_and_errored_trajectories():
    buf = hand_buffer()
    ds = buf.to_conversations(form="tools")
    assert len(ds) == len(buf.trajectories()) and not any(np.isnan(ds["reward"]))  # errored ones left out
    lose = next(r for r in ds if r["trajectory_id"] == "g0/1")
    roles = ["system", "user", "assistant", "tool", "assistant", "user"]
    assert [m["role"] for m in lose["messages"]] == roles
    assert lose["messages"][4]["content"] == "garbage ¿?" and lose["messages"][4]["tool_calls"] is None
    assert lose["messages"][5]["content"] == ("Invalid action: no JSON object found\n"
                                              "Out of steps (2 of 10); the episode is over.")
    wins = buf.filter(lambda tr: tr.success).trajectories()
    with pytest.raises(ValueError, match="float32"):  # a non-image array is no screenshot
        buf.to_conversations(wins, with_images=True)
    wins[0].steps[2].frame = None
    row = buf.to_conversations(wins, with_images=True)[0]
    imgs = row["images"]
    assert [im.size for im in imgs] == [(12, 24), (24, 48)] and isinstance(imgs[0], Image.Image)
    assert np.array_equal(np.asarray(imgs[1]), wins[0].steps[1].frame)  # the frame before the thumbnail
    parts = [[p["type"] for p in m["content"]] for m in row["messages"]]
    assert parts[:4] == [["text"], ["image", "text"], ["text"], ["image", "text"]]  # each screen's own turn
    assert parts[5] == ["text"]  # step 2 kept no image
    with pytest.raises(ValueError, match="form='chat'"):
        buf.to_conversations(form="chat")


@pytest.mark.slow
@pytest.mark.parametrize("form", ["text", "tools"])
def test_trls_sft_trainer_accepts_it_and_masks_the_assistant_turns(groups, form, tmp_path):
    from trl import SFTConfig, SFTTrainer
    from trl.chat_template_utils import qwen3_chat_template

    from algos.policies.tiny import build_tiny_causal_lm, build_tiny_tokenizer

    tok = build_tiny_tokenizer()
    tok.chat_template = qwen3_chat_template  # renders tools (the tiny template does not)
    ds = TrajectoryBuffer(groups).to_conversations(form=form, forks=find_forks(groups))
    args = SFTConfig(output_dir=str(tmp_path), max_steps=1, per_device_train_batch_size=2, report_to="none",
                     assistant_only_loss=True, max_length=None, use_cpu=True, disable_tqdm=True,
                     gradient_checkpointing=False)
    trainer = SFTTrainer(model=build_tiny_causal_lm(tok), args=args, train_dataset=ds, processing_class=tok)
    row = trainer.train_dataset[1]
    masked = tok.decode([t for t in row["labels"] if t != -100])  # the loss's targets
    ok = groups[0].trajectories[1]
    if form == "text":
        assert all(s.response in masked for s in ok.steps)
        assert "Screen elements" not in masked  # the screens are context, not targets
    else:
        assert masked.count("<tool_call>") == ok.length and "tool_response" not in masked
    trainer.train()
    assert np.isfinite(trainer.state.log_history[-1]["train_loss"])
