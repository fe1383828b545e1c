"""The loop every on-policy algorithm shares: roll out G per fresh training instance, update, evaluate.

An `Algorithm` only says how to turn a list of `Group`s into a policy update (and what extra state it keeps,
such as RFT's pool of successes); `train_loop` owns the rest, identically for every algorithm, so that
comparisons differ only in the update: the same training instances in the same order, the same evaluation
suite, the same env-step accounting, checkpoints after every iteration and exact resume after a kill.
"""

from __future__ import annotations

import abc
import dataclasses
import time
from pathlib import Path
from typing import Any

from algos.buffer import Group
from algos.evaluation import evaluate
from algos.policies.base import Policy
from algos.policies.registry import load_policy
from algos.rollout import RolloutConfig, collect, has_pixels
from algos.run import Run, seed_everything
from algos.timing import PHASES, collector_paused
from voyager_gym.suites import TrainGenerator


@dataclasses.dataclass
class LoopConfig:
    """What every algorithm's config shares. Subclasses add their own fields."""

    iterations: int = 6  # rollout + update iterations (ignored when the loop is given an env-step budget)
    instances_per_iter: int = 154  # fresh training task instances per iteration (the suite's tasks in turn)
    group_size: int = 8  # G: rollouts per instance
    eval_every: int = 1  # evaluate Pass@1 every this many iterations (and after the last)


class Algorithm(abc.ABC):
    """One training algorithm: an update from groups of rollouts, plus state it carries across iterations."""

    name: str = "algo"
    needs_pixels: bool = False  # whether rollouts must carry screenshots (GRSD compares screens)

    def __init__(self, cfg: LoopConfig):
        self.cfg = cfg
        # kwargs of a SimDroid env that renders kept frames by replaying episodes, so that the rollout envs
        # need no screenshots (set by the caller; see RolloutConfig.replay_frames)
        self.replay_env: dict[str, Any] | None = None
        self.envs: Any = None  # the loop's vector env (train_loop binds it), for updates that branch episodes
        # env steps the budget leaves to this iteration's update (train_loop sets it before each update; None:
        # no budget): an update that branches episodes stays within it
        self.env_steps_left: int | None = None

    def rollout_config(self, envs: Any, seed: int, progress: bool,
                       policy: Policy | None = None) -> RolloutConfig:
        """How this iteration's rollouts are collected: frames kept where the envs have them and `policy`
        (when given) reads them."""
        return RolloutConfig(
            group_size=self.cfg.group_size,
            thumb_width=0,
            keep_frames=has_pixels(envs) and (policy is None or policy.uses_pixels),
            seed=seed,
            progress=progress,
        )

    def with_frames(self, cfg: RolloutConfig, envs: Any, frames_of: str, missing: str) -> RolloutConfig:
        """`cfg` keeping the frames of the `frames_of` groups for an algorithm that compares screenshots,
        rendered afterwards by replaying their episodes (`replay_env`) when the envs render none; `missing`:
        the error when neither can give them."""
        cfg = dataclasses.replace(cfg, keep_frames=True, frames_of=frames_of)
        if not has_pixels(envs):
            if self.replay_env is None:
                raise ValueError(missing)
            cfg.replay_frames = dict(self.replay_env)
        return cfg

    @abc.abstractmethod
    def update(self, policy: Policy, groups: list[Group], iteration: int, seed: int) -> dict[str, float]:
        """Train `policy` in place on this iteration's groups; return metrics to log (losses, counts). Env
        steps the update takes itself (branch rollouts on `self.envs`) go in `train/update_env_steps`: the
        loop counts them against the env-step budget."""

    def state(self) -> dict[str, Any]:
        """Extra objects (each with `.save(path)`) to checkpoint beside the policy, by file name."""
        return {}

    def load_state(self, path: Path) -> None:  # noqa: B027 - optional hook
        """Restore what `state()` saved, from checkpoint folder `path`."""


def fork_frames(algo: Algorithm, cfg: RolloutConfig, envs: Any, policy: Policy | None,
                who: str) -> RolloutConfig:
    """`cfg` for an algorithm that detects forks (`who` names it in the error): frames always, of the groups
    with both outcomes only unless `policy` reads pixels (its other samples then need theirs too), rendered by
    replay (`algo.replay_env`) where the envs render none. Used by GRSD and GRSD+GRPO."""
    mixed = policy is not None and not policy.uses_pixels
    return algo.with_frames(cfg, envs, "mixed" if mixed else "all",
                            f"{who} compares screenshots, but the env gives elements-only observations; "
                            "make it with render_scale > 0 (observation_mode='full'), or set the algorithm's "
                            "replay_env to render them by replay (SimDroid)")


def train_loop(
    algo: Algorithm,
    policy: Policy,
    envs: Any,
    run: Run,
    tasks: list[str],
    seed: int,
    eval_n_per_task: int,
    progress: bool = False,
    max_env_steps: int = 0,
    extra_row: dict[str, Any] | None = None,
    suite_backend: Any = None,
    heldout_tasks: list[str] | None = None,
) -> tuple[Policy, dict[str, Any]]:
    """Run (or resume) `algo` in `run`'s folder. With `max_env_steps` > 0 the loop runs until that many
    environment steps were collected (the comparison budget); otherwise `cfg.iterations` iterations.
    Returns the trained policy and the last evaluation. Iteration 0 is the starting policy's evaluation.
    `suite_backend` draws instance params (default SimDroid's; `voyager_gym.suites.FROM_ENV`: the envs').
    `heldout_tasks` (a task split): tasks never trained on, also evaluated at each evaluation
    (`heldout_pass_at_1`, `heldout_per_task`, `heldout_episodes`)."""
    cfg = algo.cfg
    gen = TrainGenerator(tasks, seed=seed, backend=suite_backend)
    extra = dict(extra_row or {})
    start, env_steps, wall0 = 0, 0, 0.0
    last = run.latest()
    if last is not None:
        path, st = last
        policy = load_policy(path / "policy")
        algo.load_state(path)
        start, env_steps, wall0 = st["iteration"] + 1, st["env_steps"], st["wall_s"]
        run.truncate_metrics(lambda r: r.get("iteration", -1) <= st["iteration"])
        print(f"resuming {algo.name} from {path.name}: iteration {start}, {env_steps} env steps")
    t0 = time.perf_counter() - wall0

    def log(iteration: int, metrics: dict[str, Any], with_eval: bool) -> dict[str, Any]:
        """One metrics row for `iteration`, with a Pass@1 evaluation when asked; returns the evaluation."""
        row: dict[str, Any] = {"algo": algo.name, "seed": seed, **extra, "iteration": iteration,
                               "env_steps": env_steps}
        ev: dict[str, Any] = {}
        if with_eval:
            with PHASES("evaluation"):
                ev = evaluate(policy, envs, tasks, eval_n_per_task, seed=seed, progress=progress,
                              backend=suite_backend)
            row.update(pass_at_1=ev["pass_at_1"], per_task=ev["per_task"], eval_episodes=ev["episodes"])
            if heldout_tasks:
                with PHASES("evaluation"):
                    held = evaluate(policy, envs, heldout_tasks, eval_n_per_task, seed=seed,
                                    progress=progress, backend=suite_backend)
                row.update(heldout_pass_at_1=held["pass_at_1"], heldout_per_task=held["per_task"],
                           heldout_episodes=held["episodes"])
        with PHASES("logging"):
            run.log({**row, **metrics, "wall_s": time.perf_counter() - t0})
        return ev

    def checkpoint(iteration: int) -> None:
        with PHASES("checkpoint"):
            run.checkpoint(iteration, policy, {"env_steps": env_steps, "wall_s": time.perf_counter() - t0},
                           algo.state())

    def done(iteration: int) -> bool:
        if max_env_steps > 0:
            return env_steps >= max_env_steps
        return iteration >= cfg.iterations

    def iteration(r: int) -> dict[str, Any]:
        """Roll out, update, log (with an evaluation when due) and checkpoint iteration `r`."""
        nonlocal env_steps
        it_seed = seed * 1000 + r  # per-iteration seeding: a resumed run repeats the same iteration exactly
        seed_everything(it_seed)
        policy.reseed(it_seed)
        n = cfg.instances_per_iter
        instances = gen.take(n * r)[n * (r - 1) :]
        with PHASES("rollout"):
            groups = collect(policy, envs, instances, algo.rollout_config(envs, it_seed, progress, policy))
        trajs = [t for g in groups for t in g.trajectories]
        env_steps += sum(len(t.steps) for t in trajs)
        ok = [t for t in trajs if not t.errored]
        metrics: dict[str, Any] = {
            "train/success_rate": sum(t.success for t in ok) / max(1, len(ok)),
            "train/errored": len(trajs) - len(ok),
            "train/invalid_rate": sum(not s.valid for t in ok for s in t.steps)
            / max(1, sum(len(t.steps) for t in ok)),
            # groups with both a success and a failure: the only ones group-relative methods learn from
            "train/mixed_groups_frac": sum(g.has_both_outcomes for g in groups) / max(1, len(groups)),
        }
        algo.env_steps_left = max(0, max_env_steps - env_steps) if max_env_steps > 0 else None
        with PHASES("update"):
            metrics.update(algo.update(policy, groups, r, it_seed))
        env_steps += int(metrics.get("train/update_env_steps", 0))
        ev = log(r, metrics, with_eval=r % cfg.eval_every == 0 or done(r))
        checkpoint(r)
        return ev

    algo.envs = envs
    ev: dict[str, Any] = {}
    if start == 0:
        seed_everything(seed)
        with collector_paused():
            ev = log(0, {}, with_eval=True)
            checkpoint(0)
        start = 1
    r = start
    while not done(r - 1):
        with collector_paused():
            ev = iteration(r) or ev
        r += 1
    return policy, ev
