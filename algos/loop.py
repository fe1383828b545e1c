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
from typing import Any, ClassVar

from algos.buffer import Group, TrajectoryBuffer
from algos.evaluation import evaluate
from algos.fields import check_fields, setting
from algos.policies.base import Policy
from algos.policies.registry import load_policy
from algos.prompt import PolicyInput
from algos.rollout import RolloutConfig, collect, has_pixels
from algos.run import Run, checkpoint_dir, seed_everything
from algos.timing import PHASES, collector_paused
from voyager_gym.suites import TrainGenerator


@dataclasses.dataclass
class LoopConfig:
    """What every algorithm's config shares. Subclasses add their own fields, each with its default (the one
    the experiments run: the entry points' defaults are these, and their presets the only overlay) and its
    allowed range beside it (`algos.fields.setting`); `__post_init__` checks them (`check_fields`: every float
    finite, every range kept) and names the key as `SECTION.field`."""

    SECTION: ClassVar[str] = "loop"  # the config section errors name (a subclass: its algorithm's)
    iterations: int = setting(6, ge=1)  # rollout + update iterations (ignored when the loop is given an
    # env-step budget)
    instances_per_iter: int = setting(154, ge=1)  # fresh training task instances per iteration (the suite's
    # tasks in turn)
    group_size: int = setting(8, ge=1)  # G: rollouts per instance
    eval_every: int = setting(1, ge=1)  # evaluate Pass@1 every this many iterations (and after the last)

    def __post_init__(self) -> None:
        check_fields(self)


@dataclasses.dataclass
class RunContext:
    """What an algorithm's run hands it besides its config, in one object (`Algorithm.setup`): built by the
    experiments' recipe (experiments/recipe.py) for train.py, compare.py alike, or by a library caller."""

    replay_env: dict[str, Any] | None = None  # kwargs of a SimDroid env that renders kept frames by replaying
    # episodes, so that the rollout envs need no screenshots (see RolloutConfig.replay_frames); None: the
    # envs render their own (or the algorithm needs none)
    demo_samples: list[tuple[PolicyInput, str]] | None = None  # (input, response) of the expert
    # demonstrations the base policy was cloned from, for `<algo>.demos` (RFT, GRSD); None: none handed over
    # (an error when the config asks for them), []: the base was cloned from none (real emulators)
    rft_pool: TrajectoryBuffer | None = None  # the success pool to start from, for `grsd.rft_pool` (the RFT
    # start checkpoint's); None: none handed over (an error when the config asks for it)


class NonFiniteError(RuntimeError):
    """A training step left a non-finite loss or non-finite weights: the run stops, keeping its last good
    checkpoint."""


class Algorithm(abc.ABC):
    """One training algorithm: an update from groups of rollouts, plus state it carries across iterations."""

    name: str = "algo"
    needs_pixels: bool = False  # whether rollouts must carry screenshots (GRSD compares screens)

    def __init__(self, cfg: LoopConfig, context: RunContext | None = None):
        self.cfg = cfg
        self.context = RunContext()
        self.envs: Any = None  # the loop's vector env (`bind`), for updates that branch episodes
        # env steps the budget leaves to this iteration's update (`bind`, before each update; None: no
        # budget): an update that branches episodes stays within it
        self.env_steps_left: int | None = None
        if context is not None:
            self.setup(context)

    def setup(self, context: RunContext) -> None:
        """Take what the run hands over (`RunContext`): once, before training starts (a resumed run's
        checkpoint is loaded over it). Subclasses take their parts of it (RFT and GRSD the demonstrations,
        GRSD the RFT pool) and call this."""
        self.context = context

    @property
    def replay_env(self) -> dict[str, Any] | None:
        """kwargs of the SimDroid env that renders kept frames by replay (`RunContext.replay_env`)."""
        return self.context.replay_env

    def bind(self, envs: Any, env_steps_left: int | None = None) -> None:
        """What the loop hands over before each update: its vector env (for updates that branch episodes) and
        the env steps the budget leaves to the update (None: no budget)."""
        self.envs = envs
        self.env_steps_left = env_steps_left

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
                            "make it with render_scale > 0 (observation_mode='full'), or hand the algorithm "
                            "a RunContext(replay_env=...) to render them by replay (SimDroid)")


def non_finite_weights(policy: Policy) -> int:
    """How many of the policy's trainable tensors hold a NaN or an infinity (0 for a policy with none, such
    as a scripted one)."""
    import torch

    try:
        params = policy.trainable_parameters()
    except NotImplementedError:
        return 0
    with torch.no_grad():
        return sum(not bool(torch.isfinite(p).all()) for p in params)


def check_finite(algo: Algorithm, policy: Policy, iteration: int, metrics: dict[str, Any], run: Run) -> None:
    """Stop the run (NonFiniteError) when iteration `iteration`'s update left an infinite loss (a `losses/`
    metric: NaN there may mean "no such term this update", and a NaN loss that trained leaves NaN weights)
    or non-finite weights; the iteration is neither logged nor checkpointed, so the last good checkpoint is
    the run's latest."""
    import math

    bad_loss = [k for k, v in metrics.items() if k.startswith("losses/") and isinstance(v, float)
                and math.isinf(v)]
    bad_weights = non_finite_weights(policy)
    if not bad_loss and not bad_weights:
        return
    what = (f"an infinite loss ({bad_loss[0]}={metrics[bad_loss[0]]})" if bad_loss
            else f"non-finite weights (NaN or infinity in {bad_weights} of its tensors)")
    last = checkpoint_dir(run.dir)
    kept = (f"keeps its last good checkpoint, {last.name}, in {run.dir}" if last
            else "has no checkpoint to keep")
    raise NonFiniteError(f"{algo.name}: iteration {iteration}'s update gave {what}; the run stops and {kept} "
                         f"(see the {type(algo.cfg).SECTION}.* settings: learning rate, coefficients)")


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
        algo.bind(envs, max(0, max_env_steps - env_steps) if max_env_steps > 0 else None)
        with PHASES("update"):
            metrics.update(algo.update(policy, groups, r, it_seed))
        check_finite(algo, policy, r, metrics, run)  # before its row and checkpoint: the last good one stays
        env_steps += int(metrics.get("train/update_env_steps", 0))
        ev = log(r, metrics, with_eval=r % cfg.eval_every == 0 or done(r))
        checkpoint(r)
        return ev

    algo.bind(envs)
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
