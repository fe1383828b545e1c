"""TRL's GRPOTrainer on SimDroid: the phone as an `environment_factory`, AndroidWorld's actions as tools.

    python examples/trl_grpo.py [--tasks OpenAppTaskEval,SystemWifiTurnOn] [--steps 4] [--sft-steps 150]
                                [--demos 16] [--hidden 64] [--layers 1] [--tools open_app,click,status]
                                [--threads N] [--out DIR] [--device cpu|cuda]

Everything is built offline in a few minutes on 2 CPU cores: a tiny Qwen2 causal LM and a byte-level BPE
tokenizer trained on SimDroid text (`algos/policies/tiny.py`), given TRL's copy of Qwen3-Instruct-2507's chat
template, which renders tools and whose tool calls (`<tool_call>{"name": ..., "arguments": ...}</tool_call>`)
TRL parses. A random tiny model writes no parseable tool call, so it is first warm-started with TRL's
SFTTrainer on the SimDroid expert's episodes, exported from the trajectory buffer in the same tool-calling
form (`TrajectoryBuffer.to_conversations(form="tools")`). Then GRPOTrainer rolls it out on training
instances of the tasks (`suite_dataset`): one `VoyagerToolEnv` per rollout, every tool call one env step,
the verifier's score as the reward. It prints the rewards, what the envs received and one rollout's
transcript.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")  # environment_factory is marked experimental

import torch  # noqa: E402

from voyager_gym.integrations.trl import VoyagerToolEnv, suite_dataset  # noqa: E402

TASKS = ("OpenAppTaskEval", "SystemWifiTurnOn")
TOOL_TAGS = ("<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>")


def expert_buffer(tasks: list[str], n: int, seed: int) -> Any:
    """The SimDroid expert on `n` training instances of `tasks` (one rollout each), as a TrajectoryBuffer."""
    from algos.buffer import TrajectoryBuffer
    from algos.policies.simple import ExpertPolicy
    from algos.rollout import RolloutConfig, collect
    from voyager_gym.suites import TrainGenerator
    from voyager_gym.vector import make_vec

    envs = make_vec(1, "sync", observation_mode="elements", noise="none")
    try:
        instances = TrainGenerator(tasks, seed=seed + 1).take(n)  # not the GRPO run's instances
        groups = collect(ExpertPolicy(), envs, instances, RolloutConfig(group_size=1, seed=seed))
    finally:
        envs.close()
    return TrajectoryBuffer(groups)


def build_tokenizer(conversations: Any) -> Any:
    """The tiny BPE tokenizer trained on SimDroid text and the rendered tool conversations (so tool calls
    and schemas are a few tokens), with TRL's copy of Qwen3-Instruct-2507's chat template (it renders tools,
    and TRL knows its tool-call format). Offline: the template ships inside the trl package."""
    from trl.chat_template_utils import qwen3_instruct_2507_chat_template

    from algos.policies.tiny import build_tiny_tokenizer, default_corpus

    probe = build_tiny_tokenizer(corpus=["a"], vocab_size=300)
    probe.chat_template = qwen3_instruct_2507_chat_template
    rendered = [probe.apply_chat_template(r["messages"], tools=json.loads(r["tools"]), tokenize=False)
                for r in conversations]
    tok = build_tiny_tokenizer(corpus=default_corpus() + rendered, vocab_size=4096)
    tok.chat_template = qwen3_instruct_2507_chat_template
    tok.add_tokens(list(TOOL_TAGS))  # one token each, as in Qwen's own vocabulary
    return tok


def warm_start(model: Any, tok: Any, data: Any, steps: int, out: Path, device: str) -> float:
    """SFT on the expert's tool-calling conversations (loss on the assistant turns); returns the last loss."""
    from trl import SFTConfig, SFTTrainer

    args = SFTConfig(output_dir=str(out / "sft"), max_steps=steps, per_device_train_batch_size=2,
                     learning_rate=1e-2, lr_scheduler_type="constant", logging_steps=max(1, steps // 4),
                     gradient_checkpointing=False,
                     save_strategy="no", report_to="none", assistant_only_loss=True, max_length=None,
                     use_cpu=device == "cpu", seed=0, disable_tqdm=True, dataloader_num_workers=0)
    trainer = SFTTrainer(model=model, args=args, train_dataset=data.select_columns(["messages", "tools"]),
                         processing_class=tok)
    trainer.train()
    losses = [h["loss"] for h in trainer.state.log_history if "loss" in h]
    return float(losses[-1]) if losses else float("nan")


def tool_format(environments: list[VoyagerToolEnv], **_: Any) -> list[float]:
    """A small format reward beside the verifier's: 0.1 per tool call that TRL parsed and the env received
    (right tool name and argument names; the phone may still reject the values), at most 0.3. The tiny model
    fails the tasks at first, and a group whose rollouts all score 0 gives GRPO nothing to learn from."""
    return [0.1 * min(3, len(e.transcript)) for e in environments]


def train_grpo(model: Any, tok: Any, env_class: type[VoyagerToolEnv], tasks: list[str], steps: int, seed: int,
               out: Path,
               device: str) -> tuple[Any, list[VoyagerToolEnv]]:
    """GRPO with one VoyagerToolEnv per rollout (4 rollouts of each instance), rewarded by the verifier
    (`get_reward`) plus `tool_format`; returns the trainer and the envs TRL created, whose transcripts
    hold the last rollouts."""
    from trl import GRPOConfig, GRPOTrainer

    made: list[VoyagerToolEnv] = []
    factory = env_class.factory(seed=seed, noise="none")

    def environment_factory() -> VoyagerToolEnv:
        env = factory()
        made.append(env)
        return env

    data = suite_dataset("train", tasks=tasks, n=steps * 2, seed=seed)
    args = GRPOConfig(output_dir=str(out / "grpo"), max_steps=steps, per_device_train_batch_size=8,
                      num_generations=4, max_completion_length=1024, max_tool_calling_iterations=10,
                      learning_rate=1e-3, lr_scheduler_type="constant", beta=0.0, temperature=0.7,
                      logging_steps=1, save_strategy="no", report_to="none", use_cpu=device == "cpu",
                      gradient_checkpointing=False, seed=seed, disable_tqdm=True, dataloader_num_workers=0,
                      shuffle_dataset=False)
    trainer = GRPOTrainer(model=model, reward_funcs=[tool_format], args=args, train_dataset=data,
                          processing_class=tok, environment_factory=environment_factory)
    trainer.train()
    return trainer, made


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tasks", default=",".join(TASKS), help="comma-separated task names")
    p.add_argument("--steps", type=int, default=4, help="GRPO steps (8 rollouts each)")
    p.add_argument("--sft-steps", type=int, default=150, help="warm-start SFT steps on expert episodes")
    p.add_argument("--demos", type=int, default=16, help="expert episodes for the warm start")
    # 64 x 1 rather than 96 x 2: after the same 150 SFT steps it calls tools in every episode and completes
    # tasks (verifier reward 0.875 and 0.5 in the two GRPO steps of `--steps 2`), in ~65 s rather than ~105 s
    # on one torch thread; 96 x 2 made 4 calls in 8 episodes and completed none
    p.add_argument("--hidden", type=int, default=64, help="hidden size of the model built from a config")
    p.add_argument("--layers", type=int, default=1, help="layers of the model built from a config")
    p.add_argument("--tools", default="open_app,click,status",
                   help="the tools offered (comma-separated; empty: all 13 AndroidWorld actions)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    p.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: torch's default)")
    p.add_argument("--out", default=None, help="folder for trainer outputs (default: a temporary one)")
    a = p.parse_args(argv)
    tasks = [t for t in a.tasks.split(",") if t]
    if a.threads:
        torch.set_num_threads(a.threads)
    from transformers import set_seed

    from algos.policies.tiny import build_tiny_causal_lm

    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(a.out or tmp)
        set_seed(a.seed)
        env_class = VoyagerToolEnv.with_tools(a.tools.split(",")) if a.tools else VoyagerToolEnv
        demos = expert_buffer(tasks, a.demos, a.seed).to_conversations(form="tools", tool_env=env_class)
        tok = build_tokenizer(demos)
        model = build_tiny_causal_lm(tok, seed=a.seed, hidden_size=a.hidden, layers=a.layers)
        model.set_attn_implementation("sdpa")  # ~8x faster than eager attention on long CPU sequences
        sft_loss = warm_start(model, tok, demos, a.sft_steps, out, a.device) if a.sft_steps else float("nan")
        start = {k: v.detach().cpu().clone() for k, v in model.named_parameters()}  # GRPO's starting point
        t_sft = time.perf_counter()
        trainer, envs = train_grpo(model, tok, env_class, tasks, a.steps, a.seed, out, a.device)
        t_grpo = time.perf_counter() - t_sft
    after = {k: v.detach().cpu() for k, v in trainer.model.named_parameters()}
    changed = sum(not torch.equal(start[k], v) for k, v in after.items())
    logs = [h for h in trainer.state.log_history if "reward" in h]
    episodes = [e for e in envs if e.transcript]
    summary = {
        "sft_loss": sft_loss,
        "grpo_rewards": [h["reward"] for h in logs],
        "verifier_rewards": [h["rewards/VoyagerToolEnv/mean"] for h in logs],
        "tool_call_frequency": [h.get("tools/call_frequency", 0.0) for h in logs],
        "envs": len(envs),
        "episodes_with_tool_calls": len(episodes),
        "tool_calls_last_batch": sum(len(e.transcript) for e in envs),
        "ended_with_status": sum(e.done and e.transcript[-1]["tool"] == "status" for e in episodes),
        "last_batch_rewards": [e.get_reward() for e in envs],
        # GRPO learns only from a group whose rollouts scored differently (the others' advantages are 0)
        "steps_with_mixed_groups": sum(h.get("frac_reward_zero_std", 1.0) < 1.0 - 1e-6 for h in logs),
        "params_changed_by_grpo": f"{changed}/{len(after)}",
        "seconds": round(time.perf_counter() - t0, 1),
        "grpo_seconds": round(t_grpo, 1),
    }
    print(json.dumps(summary, indent=1))
    shown = max(episodes, key=lambda e: (e.done, len(e.transcript)), default=None)
    if shown is not None:
        print(f"\nOne rollout ({shown.info['task']}; goal: {shown.info['goal']}):")
        for call in shown.transcript:
            print(f"  -> {call['tool']}({json.dumps(call['arguments'])})")
            print("     " + call["result"][:300].replace("\n", "\n     "))
        print(f"  reward (verifier): {shown.get_reward()}")
    return {"summary": summary, "trainer": trainer, "envs": envs}


if __name__ == "__main__":
    main(sys.argv[1:])
