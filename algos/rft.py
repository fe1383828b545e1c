"""Rejection Fine-Tuning (UI-Voyager stage 1): roll out, keep what the verifier approves, fine-tune, repeat.

Each round draws fresh training instances (never eval seeds), rolls the current policy out G times on each
(sampling), keeps every step of every fully successful trajectory, adds them to the pool of successes from
earlier rounds, and fine-tunes the policy on the pool with loss on the response only. Pass@1 on the held-out
suite is measured before the first round and after each one. The paper took its model from 37% to 73% this
way before GRSD.
"""

from __future__ import annotations

import dataclasses
import random
import time
from typing import Any

from algos.buffer import Group, TrajectoryBuffer
from algos.evaluation import evaluate
from algos.policies.base import Policy
from algos.prompt import PolicyInput
from algos.rollout import RolloutConfig, collect, has_pixels
from algos.run import Run, seed_everything
from voyager_gym.suites import TrainGenerator


@dataclasses.dataclass
class RFTConfig:
    rounds: int = 6  # rollout + fine-tune rounds
    instances_per_round: int = 154  # training task instances per round (2 per task for 77 tasks)
    group_size: int = 8  # rollouts per instance
    epochs: int = 2  # passes over the success pool per round
    lr: float = 5e-4  # fine-tuning learning rate (1e-3 forgot more: Pass@1 peaked early, then fell)
    accumulate: bool = True  # fine-tune on successes from all rounds so far, not only the last
    max_samples_per_task: int = 0  # cap each task's share of the SFT set (0: no cap); keeps easy tasks from
    # drowning the rare successes on hard ones, and bounds the time a round's fine-tuning takes


def success_samples(
    groups: list[Group], max_per_task: int = 0, seed: int = 0
) -> list[tuple[PolicyInput, str]]:
    """(input, response) for every step of every successful trajectory; with `max_per_task`, whole successful
    trajectories per task, newest rounds first, up to that many steps. Shuffled with `seed`."""
    by_task: dict[str, list] = {}
    for g in reversed(groups):  # newest first
        for t in g.trajectories:
            if t.success:
                by_task.setdefault(t.task, []).append(t)
    out: list[tuple[PolicyInput, str]] = []
    for task in sorted(by_task):
        trajs = by_task[task]
        if max_per_task:
            kept, n = [], 0
            for t in trajs:
                if n + len(t.steps) > max_per_task and kept:
                    break
                kept.append(t)
                n += len(t.steps)
            trajs = kept
        out += [(s.policy_input(), s.response) for t in trajs for s in t.steps]
    random.Random(seed).shuffle(out)
    return out


def train(
    policy: Policy,
    envs: Any,
    run: Run,
    cfg: RFTConfig,
    tasks: list[str],
    seed: int,
    eval_n_per_task: int,
    progress: bool = False,
) -> dict[str, Any]:
    """Run (or resume) RFT in `run`'s folder. Returns the last evaluation."""
    gen = TrainGenerator(tasks, seed=seed)
    pool = TrajectoryBuffer()
    start_round, env_steps, wall0 = 0, 0, 0.0
    last = run.latest()
    if last is not None:
        path, state = last
        policy = type(policy).load(path / "policy")
        pool = TrajectoryBuffer.load(path / "successes.parquet")
        start_round, env_steps, wall0 = state["iteration"] + 1, state["env_steps"], state["wall_s"]
        run.truncate_metrics(lambda r: r.get("iteration", -1) <= state["iteration"])
        print(f"resuming RFT from {path.name}: round {start_round}, {len(pool.trajectories())} successes")
    t0 = time.perf_counter() - wall0
    if start_round == 0:
        seed_everything(seed)
        ev = evaluate(policy, envs, tasks, eval_n_per_task, seed=seed, progress=progress)
        run.log(
            {
                "algo": "rft",
                "seed": seed,
                "iteration": 0,
                "env_steps": 0,
                "pass_at_1": ev["pass_at_1"],
                "per_task": ev["per_task"],
                "eval_episodes": ev["episodes"],
                "wall_s": time.perf_counter() - t0,
            }
        )
        run.checkpoint(
            0, policy, {"env_steps": 0, "wall_s": time.perf_counter() - t0}, {"successes.parquet": pool}
        )
        start_round = 1
    ev: dict[str, Any] = {}
    for r in range(start_round, cfg.rounds + 1):
        seed_everything(seed * 1000 + r)  # per-round seeding: a resumed run repeats the same round exactly
        policy.reseed(seed * 1000 + r)
        instances = gen.take(cfg.instances_per_round * r)[cfg.instances_per_round * (r - 1) :]
        groups = collect(
            policy,
            envs,
            instances,
            RolloutConfig(
                group_size=cfg.group_size,
                thumb_width=0,
                keep_frames=has_pixels(envs),
                seed=seed * 1000 + r,
                progress=progress,
            ),
        )
        trajs = [t for g in groups for t in g.trajectories]
        env_steps += sum(len(t.steps) for t in trajs)
        wins = [g for g in groups if any(t.success for t in g.trajectories)]
        round_pool = TrajectoryBuffer()
        for g in wins:
            round_pool.add(dataclasses.replace(g, trajectories=[t for t in g.trajectories if t.success]))
        if not cfg.accumulate:
            pool = TrajectoryBuffer()
        pool.extend(round_pool.groups)
        samples = success_samples(pool.groups, cfg.max_samples_per_task, seed=seed * 1000 + r)
        fit = policy.fit_sft(samples, epochs=cfg.epochs, lr=cfg.lr, seed=seed * 1000 + r) if samples else {}
        ev = evaluate(policy, envs, tasks, eval_n_per_task, seed=seed, progress=progress)
        ok = [t for t in trajs if not t.errored]
        run.log(
            {
                "algo": "rft",
                "seed": seed,
                "iteration": r,
                "env_steps": env_steps,
                "pass_at_1": ev["pass_at_1"],
                "per_task": ev["per_task"],
                "eval_episodes": ev["episodes"],
                "train/success_rate": sum(t.success for t in ok) / max(1, len(ok)),
                "train/errored": len(trajs) - len(ok),
                "train/sft_samples": len(samples),
                "losses/sft": fit.get("loss", float("nan")),
                "wall_s": time.perf_counter() - t0,
            }
        )
        run.checkpoint(
            r,
            policy,
            {"env_steps": env_steps, "wall_s": time.perf_counter() - t0},
            {"successes.parquet": pool},
        )
    return ev
