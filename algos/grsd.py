"""Group Relative Self-Distillation (UI-Voyager stage 2): learn from failed rollouts at their fork points.

Each iteration rolls the policy out G times per fresh training instance (algos/loop.py). In every group with
both outcomes, fork-point detection (algos/forks/) pairs failed steps with the step of a successful
rollout that faced the same screen but acted differently and moved somewhere else. Each fork becomes one SFT
sample: the failed step's own input (its screen, elements and history) with the successful step's full
response as the target, so the policy learns what to do at the exact step where it went wrong. These samples
are mixed with RFT data (every step of the successful trajectories, pooled over iterations as RFT pools them)
and the policy is fine-tuned with loss on the response only. The fork examples of recent iterations are kept
in each checkpoint (`forks/`) so `voyager-train forks RUN_DIR` and notebooks/fork_gallery.ipynb can draw them.

Forks can be checked by branching (`branch`, `verify`; issue 18): restore the failed trajectory's state at
the failed step (a SimDroid snapshot, reached by replaying its actions), take the teacher's action and let
the current policy finish K times; do the same after the failed action. A fork whose correction raises the
success rate is verified; the share of such forks is logged as `grsd/fork_precision_branching`, drawn on
the fork pictures, and `verify=true` trains on verified forks only. Branch steps count as env steps.

What UI-Voyager publishes about the mix: its fork tool (cores/ in ui-voyager/UI-Voyager) writes the fork
samples in the same conversation format as its trajectory SFT data and the paper mixes them with RFT data; no
ratio is published, so by default every fork sample and every pooled success step is used (`rft_ratio=0`).
"""

from __future__ import annotations

import dataclasses
import json
import math
import random
import time
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from algos.branch import Branch, play, taken
from algos.buffer import Group, Step, TrajectoryBuffer
from algos.evaluation import evaluate
from algos.fields import setting
from algos.forklevel import (
    ForkState,
    action_json,
    fork_states,
    greedy_actions,
    measure,
    reach,
    summary,
    text_action,
)
from algos.forks.examples import FORK_MODES, FORKS_DIR, ForkCheck, ForkExample, ForkExamples, find_forks
from algos.grpo import GRPO, GRPOConfig
from algos.loop import Algorithm, LoopConfig, RunContext, fork_frames
from algos.policies.base import Policy
from algos.policies.hf import preserved_rng
from algos.prompt import PolicyInput, render_response
from algos.rft import handed_demos, success_samples, successful_groups
from algos.rollout import RolloutConfig
from voyager_gym.actions import Action

RECIPES = ("replay", "paper")
GRSD_FORK_MODES = (*FORK_MODES, "oracle")  # oracle: the robust detector's fork states, labelled by the expert
TEACHERS = ("shortest", "similar", "all")
POOL_DIR = "fork_pool"  # checkpoint folder of the fork pool (`fork_pool`)

REFLECT_ARM: dict[str, Any] = {}  # the fork-level measurement's reflect arm: GRSDReflectConfig's overrides
FORK_EVAL_ARMS = ("control", "grpo", "oracle", "reflect")


@dataclasses.dataclass
class GRSDConfig(LoopConfig):
    """GRSD as the experiments run it (the replay mix): RFT's weights and data continued (its success pool
    and the demonstrations, 8,000 of them replayed an update; without them it fell below its start, 0.573
    against GRPO's 0.591; with them 0.592, and 0.593 replaying all ~20,000 an update in twice the time), and
    its first iteration measured at the fork level against its control and GRPO. The replay mix stays the
    default over the paper's recipe (recipe=paper), which fixed about as many fork states, lost held-out
    Pass@1 on the fork tasks where the mix gained, and ended lower (README "Results", 2026-12-04)."""

    SECTION: ClassVar[str] = "grsd"
    fork_mode: str = setting("robust", choices=GRSD_FORK_MODES)  # faithful: the paper's detector as
    # published; robust: our hardened variant (default: on SimDroid with screen noise 93% of its forks pair
    # truly equal screens vs 60% for faithful); oracle: robust's fork states labelled by the task's expert
    epochs: int = setting(2, ge=1)  # passes over the mixed SFT set per iteration
    lr: float = setting(5e-4, gt=0)  # fine-tuning learning rate (RFT's, which GRSD continues from)
    accumulate: bool = True  # RFT part: successes from all iterations so far, not only the last
    rft_ratio: float = setting(0.0, ge=0)  # RFT samples per fork sample (0: the whole success pool, as the
    # paper mixes)
    fork_repeat: int = setting(1, ge=1)  # each fork sample appears this many times (upweights the
    # corrections)
    max_forks_per_group: int = setting(0, ge=0)  # cap per group, most similar screens first (0: no cap)
    max_samples_per_task: int = setting(0, ge=0)  # cap each task's share of the RFT part (see RFTConfig)
    per_group: int = setting(0, ge=0)  # RFT part: keep only the shortest k successes of each group (0: all;
    # RFT's own recipe keeps 2, see RFTConfig.per_group)
    demos: bool = True  # also fine-tune on the base policy's expert demonstrations every iteration, as the
    # experiments' RFT does (handed over by whoever made the base: `RunContext.demo_samples`)
    rft_pool: bool = True  # start the success pool from the RFT start checkpoint's pool (handed over:
    # `RunContext.rft_pool`, as the experiments' recipe does), so GRSD continues RFT's data as well as its
    # weights; False: the pool starts empty and the first updates fine-tune on one iteration's successes only
    max_rft_samples: int = setting(8000, ge=0)  # > 0: each update fine-tunes on at most this many samples of
    # the RFT part (the pool and the demonstrations), drawn afresh every update (seeded): a pool continued
    # from RFT's holds ~15,000 steps, and this bounds the update's time while every sample keeps its chance of
    # being replayed (0: all of them)
    train_on_forks: bool = True  # False: the control arm, forks found and logged but not trained on (RFT
    # continued with GRSD's own pool, settings and rollouts: what the fork samples add is the difference)
    branch: bool = False  # check every fork by branching (SimDroid snapshots): K continuations of the
    # current policy after the teacher's action and K after the failed one, from the failed step's state;
    # logs grsd/fork_precision_branching (the share whose correction raises the success rate)
    verify: bool = False  # train only on forks verified by branching (branches them: implies branch)
    branch_k: int = setting(4, ge=1)  # K: continuations per side of a fork when branching
    keep_forks: int = setting(32, ge=0)  # fork examples kept in each checkpoint for pictures (most recent
    # first)
    thumb_width: int = setting(160, ge=0)  # width of the screenshots stored with the kept fork examples
    # -- the recipe (see RECIPES) and the fork set --------------------------------------------------------
    recipe: str = setting("replay", choices=RECIPES)  # replay: every iteration fine-tunes on the forks mixed
    # with the replayed RFT pool; paper: UI-Voyager's stages alternate, GRSD rounds (odd iterations)
    # fine-tune on the fork set D alone, RFT rounds (even iterations) on the success pool alone, as RFT does
    teacher: str = ""  # which successes teach (fork detection's teacher): shortest (the paper's), similar
    # (the robust mode's), all (every success of the group, each walked on its own); "": the recipe's (paper:
    # shortest, replay: the fork mode's)
    fork_epochs: int = setting(0, ge=0)  # passes over D in a paper-recipe GRSD round (0: `epochs`)
    fork_pool: bool = False  # keep forks across iterations (the newest `fork_pool_max`), each retired once
    # the policy's greedy action at its state equals its label; False: only the iteration's own forks train
    fork_pool_max: int = setting(2048, ge=1)  # forks the pool holds at most (the oldest leave first)
    greedy_weight: float = setting(1.0, gt=0)  # weight of a fork whose failed action is also the policy's
    # greedy action there (the mistakes greedy Pass@1 makes); other forks weigh 1
    # -- the fork-level measurement (algos/forklevel.py) --------------------------------------------------
    fork_eval: bool = True  # on iterations that train on forks, measure the iteration's fork states
    # (SimDroid snapshots) before and after the update and after each `fork_eval_arms` update made from the
    # same checkpoint on the same groups; its env steps are measurement, not training (not in the budget);
    # the entry points turn it off on other backends. Each arm's update costs this replay's fit again
    # (~85 states a seed in the default comparison)
    fork_eval_arms: list[str] = setting(factory=lambda: ["control", "grpo"], choices=FORK_EVAL_ARMS)
    # control: this update without the fork samples; grpo: GRPO's update (GRPOConfig's defaults); oracle:
    # this update with every fork labelled with the task expert's action at its state; reflect: GRSD-Reflect's
    # update (its defaults, overridden by `REFLECT_ARM`), whose per-turn credit is meant to find these states
    # (on request)
    fork_eval_transfer: int = setting(2, ge=0)  # held-out instances per fork task evaluated (greedy) per arm:
    # does a fix carry to other instances of the task (0: off)
    fork_eval_until: int = setting(1, ge=0)  # measure iterations 1..N only (0: every one); each measured
    # iteration costs an update per arm, so measuring every one would double a pair's time

    def __post_init__(self) -> None:
        super().__post_init__()  # every field's own range (algos.fields)
        if self.teacher not in ("", *TEACHERS):
            raise ValueError(f"grsd.teacher={self.teacher!r}: expected one of {', '.join(TEACHERS)} (or '' "
                             "for the recipe's)")


def _state(f: ForkExample) -> tuple[str, str, int]:
    """The failed state a fork branches from: (group, failed trajectory, failed step)."""
    return f.group.group_id, f.failed.traj_id, f.failed_step


def verify_forks(policy: Policy, envs: Any, forks: list[ForkExample], k: int) -> tuple[list[ForkCheck | None],
                                                                                      int]:
    """Check each fork by branching on `envs` (SimDroid): replay its failed trajectory to the failed step and
    snapshot there (once per failed state), then from that snapshot play K continuations of `policy` after
    the teacher's action and K after the failed one (each distinct action of a state once). Returns one
    ForkCheck per fork (None where the replay did not reach the failed step's screen) and the env steps
    taken."""
    states: dict[tuple[str, str, int], ForkExample] = {}
    for f in forks:
        states.setdefault(_state(f), f)
    replays = [Branch({"task": f.failed.task, "params": dict(f.failed.params)}, seed=f.failed.env_seed,
                      forced=tuple(taken(s) for s in f.failed.steps[: f.failed_step]), policy=False)
               for f in states.values()]
    reached = play(policy, envs, replays)
    snaps = {key: r.snapshot for (key, f), r in zip(states.items(), reached, strict=True)
             if r.snapshot is not None and r.snapshot.screen_key == f.failed.steps[f.failed_step].screen_key}
    first: dict[tuple[tuple[str, str, int], str], int] = {}  # (state, response) -> index of its first branch
    branches: list[Branch] = []
    for f in forks:
        if _state(f) not in snaps:
            continue
        history = tuple(f.failed.steps[f.failed_step].history)
        screens = tuple(s.elements for s in f.failed.steps[: f.failed_step])
        for step in f.steps:  # the failed action and the teacher's
            act = taken(step)
            if (_state(f), act[0]) not in first:
                first[(_state(f), act[0])] = len(branches)
                branches += [Branch(snaps[_state(f)], forced=(act,), history=history, screens=screens)] * k
    ran = play(policy, envs, branches)

    def wins(f: ForkExample, step: Step) -> int:
        i = first[(_state(f), step.response)]
        return sum(r.success for r in ran[i : i + k])

    checks = [ForkCheck(wins(f, f.steps[1]), wins(f, f.steps[0]), k) if _state(f) in snaps else None
              for f in forks]
    return checks, sum(r.steps for r in [*reached, *ran])


def mix_samples(
    fork: list[tuple[PolicyInput, str]],
    rft: list[tuple[PolicyInput, str]],
    rft_ratio: float = 0.0,
    fork_repeat: int = 1,
    seed: int = 0,
    fork_weights: list[float] | None = None,
) -> tuple[list[tuple[PolicyInput, str]], list[float] | None]:
    """The SFT set and its per-sample weights: fork samples (each `fork_repeat` times, weighing
    `fork_weights`) plus RFT samples (weighing 1), shuffled with `seed`. With `rft_ratio` > 0 at most
    round(rft_ratio * len(fork)) RFT samples, drawn without replacement. Weights are None when all are 1."""
    if fork_repeat < 1:
        raise ValueError(f"fork_repeat must be >= 1, got {fork_repeat}")
    if rft_ratio < 0:
        raise ValueError(f"rft_ratio must be >= 0 (0: all RFT samples), got {rft_ratio}")
    fw = list(fork_weights) if fork_weights else [1.0] * len(fork)
    if len(fw) != len(fork):
        raise ValueError(f"{len(fw)} fork weights for {len(fork)} fork samples; expected one each")
    rng = random.Random(seed)
    if rft_ratio > 0:
        n = min(len(rft), round(rft_ratio * len(fork)))
        rft = rng.sample(rft, n)
    out = [(s, w) for s, w in zip(fork, fw, strict=True) for _ in range(fork_repeat)]
    out += [(s, 1.0) for s in rft]
    rng.shuffle(out)
    weights = [w for _, w in out]
    return [s for s, _ in out], None if all(w == 1.0 for w in weights) else weights


class GRSD(Algorithm):
    """Fork-point self-distillation, fine-tuned with loss on the response only: mixed with the replayed RFT
    pool every iteration (`recipe=replay`) or, as UI-Voyager trains it, GRSD rounds on the fork set alone
    alternating with RFT rounds (`recipe=paper`)."""

    name = "grsd"
    needs_pixels = True  # fork detection compares screenshots
    cfg: GRSDConfig

    def __init__(self, cfg: GRSDConfig, context: RunContext | None = None):
        self.pool = TrajectoryBuffer()
        self._pool_handed = False  # whether the pool holds RFT's (`setup`) or a checkpoint's (`load_state`)
        self.examples = ForkExamples(keep=cfg.keep_forks, thumb_width=cfg.thumb_width)
        self.forks = ForkExamples(keep=cfg.fork_pool_max, thumb_width=cfg.thumb_width)  # the fork pool
        self.last_keys: list[list[str]] = []  # (screen, failed action) of the last forks: do they recur?
        super().__init__(cfg, context)

    def setup(self, context: RunContext) -> None:
        """Also start the success pool from `context.rft_pool` (with `rft_pool`)."""
        super().setup(context)
        if self.cfg.rft_pool and context.rft_pool is not None:
            self.pool = context.rft_pool
            self._pool_handed = True

    @property
    def demo_samples(self) -> list[tuple[PolicyInput, str]] | None:
        """(input, response) of the base policy's demonstrations, fine-tuned on beside the pool when cfg.demos
        (`RunContext.demo_samples`: None when none were handed over)."""
        return self.context.demo_samples

    @property
    def teacher(self) -> str:
        """The fork detector's teacher choice: the config's, else the paper recipe's shortest success, else
        the fork mode's own."""
        return self.cfg.teacher or ("shortest" if self.cfg.recipe == "paper" else "")

    def round_kind(self, iteration: int) -> str:
        """'mixed' (replay: forks and the RFT pool), 'grsd' (paper, odd iterations: forks only) or 'rft'
        (paper, even iterations: the RFT pool only)."""
        if self.cfg.recipe == "replay":
            return "mixed"
        return "grsd" if iteration % 2 == 1 else "rft"

    def rollout_config(self, envs: Any, seed: int, progress: bool,
                       policy: Policy | None = None) -> RolloutConfig:
        """Frames always (fork detection compares them), of mixed groups only unless `policy` reads them (its
        pooled successes then keep theirs): a group of one outcome has no fork. With `replay_env` set and
        envs that render nothing, the mixed groups' frames are rendered afterwards by replaying their
        episodes (only they are ever drawn)."""
        return fork_frames(self, super().rollout_config(envs, seed, progress), envs, policy, "GRSD")

    # -- the training set ------------------------------------------------------------------------------------
    def rft_samples(self, seed: int) -> list[tuple[PolicyInput, str]]:
        """The RFT part: the success pool (and the demonstrations with `demos`), at most `max_rft_samples`."""
        cfg = self.cfg
        rft = success_samples(self.pool.groups, cfg.max_samples_per_task, seed=seed)
        if cfg.demos:
            rft = rft + handed_demos(self.name, self.demo_samples)
        if 0 < cfg.max_rft_samples < len(rft):
            rft = random.Random(seed).sample(rft, cfg.max_rft_samples)
        return rft

    def fit(self, policy: Policy, kind: str, fork: list[tuple[PolicyInput, str]], fork_w: list[float],
            rft: list[tuple[PolicyInput, str]], seed: int) -> tuple[dict[str, float], int]:
        """Fine-tune `policy` for a round of `kind` on fork samples (weights `fork_w`) and RFT samples;
        returns the fit's metrics and the size of the set (a paper GRSD round ignores `rft`, an RFT round
        `fork`)."""
        cfg = self.cfg
        if kind == "grsd":
            rft = []
        elif kind == "rft":
            fork, fork_w = [], []
        samples, weights = mix_samples(fork, rft, cfg.rft_ratio, cfg.fork_repeat, seed=seed,
                                       fork_weights=fork_w)
        epochs = cfg.fork_epochs or cfg.epochs if kind == "grsd" else cfg.epochs
        if not samples:
            return {}, 0
        extra = {} if weights is None else {"weights": weights}  # a policy's fit_sft may predate weights
        return policy.fit_sft(samples, epochs=epochs, lr=cfg.lr, seed=seed, **extra), len(samples)

    def pooled(self, policy: Policy, iteration: int, forks: list[ForkExample], labels: list[str]
               ) -> tuple[list[tuple[PolicyInput, str]], list[tuple[str, str, int]], list[bool | None],
                          dict[str, float]]:
        """The fork samples to train on, each one's failed state (group, trajectory, step), and whether its
        failed action is the policy's greedy action there. Without `fork_pool`: this iteration's forks with
        their labels. With it: they join the pool, then every pooled fork whose label the policy already acts
        greedily is retired."""
        if not self.cfg.fork_pool:
            inputs = [f.failed.steps[f.failed_step].policy_input() for f in forks]
            on_greedy: list[bool | None] = [None] * len(forks)  # not asked for: the policy is not run
            if self.cfg.greedy_weight != 1.0 or self.cfg.fork_eval:
                greedy = greedy_actions(policy, inputs)
                on_greedy = [g == action_json(f.steps[0].action) for g, f in zip(greedy, forks, strict=True)]
            return list(zip(inputs, labels, strict=True)), [_state(f) for f in forks], on_greedy, {}
        extra = [{"label": lab, "failed_action": action_json(f.steps[0].action)}
                 for f, lab in zip(forks, labels, strict=True)]
        self.forks.add(iteration, forks, extra=extra)
        pairs = self.forks.pairs()
        inputs = [failed.steps[r["failed_step"]].policy_input() for r, failed, _ in pairs]
        greedy = greedy_actions(policy, inputs)
        keep = [g != text_action(r["label"]) for g, (r, _, _) in zip(greedy, pairs, strict=True)]
        kept = [(x, g, r) for x, g, (r, _, _), k in zip(inputs, greedy, pairs, keep, strict=True) if k]
        self.forks.keep_only([r for _, _, r in kept])
        return ([(x, r["label"]) for x, _, r in kept],
                [(r["group_id"], r["failed_traj"], r["failed_step"]) for _, _, r in kept],
                [g == r["failed_action"] for _, g, r in kept],
                {"grsd/pool_size": len(kept), "grsd/pool_retired": len(keep) - len(kept)})

    # -- the update ------------------------------------------------------------------------------------------
    def update(self, policy: Policy, groups: list[Group], iteration: int, seed: int) -> dict[str, float]:
        cfg = self.cfg
        branching = cfg.branch or cfg.verify
        if (branching or cfg.fork_eval or cfg.fork_mode == "oracle") and self.envs is None:
            raise ValueError("grsd.branch / verify / fork_eval / fork_mode=oracle replay episodes on the "
                             "loop's envs; none are bound (train_loop binds them: `GRSD.bind`)")
        if cfg.rft_pool and not self._pool_handed:
            raise ValueError("grsd.rft_pool=true: no success pool was handed to GRSD (pass "
                             "RunContext(rft_pool=...) to the algorithm, the RFT start checkpoint's "
                             "successes.parquet, as experiments/recipe.py does; or set grsd.rft_pool=false)")
        if not cfg.accumulate:
            self.pool = TrajectoryBuffer()
        self.pool.extend(successful_groups(groups, cfg.per_group, keep_pixels=policy.uses_pixels))
        kind = self.round_kind(iteration)
        t0 = time.perf_counter()
        mode = "robust" if cfg.fork_mode == "oracle" else cfg.fork_mode
        forks = find_forks(groups, mode, cfg.max_forks_per_group, teacher=self.teacher)
        fork_s = time.perf_counter() - t0
        checks: list[ForkCheck | None] = [None] * len(forks)
        update_steps, t0 = 0, time.perf_counter()
        if branching:
            checks, update_steps = verify_forks(policy, self.envs, forks, cfg.branch_k)
        branch_s = time.perf_counter() - t0
        train = forks
        if cfg.verify:
            train = [f for f, c in zip(forks, checks, strict=True) if c is not None and c.verified]
        if not cfg.train_on_forks:
            train = []
        states = fork_states(train)
        measuring = (cfg.fork_eval and kind != "rft" and bool(states)
                     and (cfg.fork_eval_until == 0 or iteration <= cfg.fork_eval_until))
        metrics: dict[str, Any] = {}
        if cfg.fork_mode == "oracle" or measuring:
            with preserved_rng():
                steps = reach(policy, self.envs, states)
            if cfg.fork_mode == "oracle":  # the labels need the states: training's own steps
                update_steps += steps
            else:
                metrics["forklevel/env_steps"] = steps
        by_key = {s.key: s for s in states}
        teacher_labels = [f.steps[1].response for f in train]
        expert_labels = [expert_response(by_key[_state(f)]) for f in train]
        labels = expert_labels if cfg.fork_mode == "oracle" else teacher_labels
        if cfg.fork_mode == "oracle":  # states the replay did not reach have no expert label: not trained on
            keep = [lab is not None for lab in labels]
            train = [f for f, k in zip(train, keep, strict=True) if k]
            labels = [lab for lab, k in zip(labels, keep, strict=True) if k]
        fork, fork_keys, on_greedy, pool_metrics = self.pooled(policy, iteration, train, labels)
        fork_w = [cfg.greedy_weight if g else 1.0 for g in on_greedy]
        rft = self.rft_samples(seed) if kind != "grsd" else []
        if measuring:
            with preserved_rng():
                metrics.update(self.measure_arms(policy, groups, iteration, seed, kind, states, train,
                                                 expert_labels, fork, fork_keys, fork_w, rft,
                                                 metrics.get("forklevel/env_steps", 0)))
        fit, n_samples = self.fit(policy, kind, fork, fork_w, rft, seed)
        if measuring:
            with preserved_rng():
                after, steps = measure(policy, self.envs, states)
                metrics.update(summary(self._before, after, "forklevel/grsd"))
                metrics["forklevel/env_steps"] += steps
                self._records["grsd"] = after
                if cfg.fork_eval_transfer:
                    metrics.update(self.transfer(policy, "grsd", seed))
                metrics["forklevel/records"] = records(states, self._records, self._transfer)
        metrics.update(self.recurrence(groups, forks))
        self.examples.add(iteration, forks, checks)
        checked = [c for c in checks if c is not None]
        n_fork = len(fork) * cfg.fork_repeat if kind != "rft" else 0
        return {
            "grsd/round": {"mixed": 0, "grsd": 1, "rft": 2}[kind],
            "grsd/mixed_groups": sum(g.has_both_outcomes for g in groups),
            "grsd/forks": len(forks),
            "grsd/fork_states": len(states),
            "grsd/greedy_forks": float("nan") if None in on_greedy else sum(on_greedy),
            "grsd/fork_samples": n_fork,
            "grsd/rft_samples": n_samples - n_fork,
            "train/demo_samples": len(self.demo_samples or ()) if cfg.demos else 0,
            "grsd/sim_current_mean": _mean([f.sim_current for f in forks]),
            "grsd/sim_next_mean": _mean([f.sim_next for f in forks]),
            "grsd/fork_share": n_fork / max(1, n_samples),
            "grsd/same_screen_rate": same_screen_rate(forks),
            "grsd/next_differs_rate": next_differs_rate(forks),
            "grsd/same_history_rate": same_history_rate(forks),
            "grsd/later_fork_rate": later_fork_rate(forks),
            "grsd/fork_precision_branching": _rate([c.verified for c in checked]),
            "grsd/branch_success_teacher": _mean([c.teacher_wins / c.k for c in checked]),
            "grsd/branch_success_failed": _mean([c.failed_wins / c.k for c in checked]),
            "grsd/unchecked_forks": len(forks) - len(checked) if branching else 0,
            "grsd/fork_s": fork_s,
            "grsd/branch_s": branch_s,
            "train/update_env_steps": update_steps,
            "train/sft_samples": n_samples,
            "losses/sft": fit.get("loss", float("nan")),
            **pool_metrics,
            **metrics,
        }

    # -- the fork-level measurement --------------------------------------------------------------------------
    def measure_arms(self, policy: Policy, groups: list[Group], iteration: int, seed: int, kind: str,
                     states: list[ForkState], train: list[ForkExample],
                     expert_labels: list[str | None], fork: list[tuple[PolicyInput, str]],
                     fork_keys: list[tuple[str, str, int]], fork_w: list[float],
                     rft: list[tuple[PolicyInput, str]], metrics_steps: int = 0) -> dict[str, Any]:
        """The states before the update, and after each comparison arm's update made from a copy of `policy`
        (the same checkpoint) on the same groups; GRSD's own update is measured after it runs."""
        cfg = self.cfg
        greedy = greedy_actions(policy, [s.input for s in states])
        before, steps = measure(policy, self.envs, states, acts=greedy)
        self._states, self._before, self._records, self._transfer = states, before, {"before": before}, {}
        steps += metrics_steps
        out: dict[str, Any] = {"forklevel/states": len(states),
                               "forklevel/reached": sum(s.snapshot is not None for s in states),
                               "forklevel/greedy_failed": _rate([s.failed == a for s, a in
                                                                 zip(states, greedy, strict=True)]),
                               "forklevel/teacher_is_expert": _rate([s.expert in s.teachers for s in states
                                                                     if s.expert]),
                               **summary(before, before, "forklevel/before")}
        if cfg.fork_eval_transfer:
            out.update(self.transfer(policy, "before", seed))
        for arm in cfg.fork_eval_arms:
            copy = policy.copy()
            if arm == "control":
                self.fit(copy, kind, [], [], rft, seed)
            elif arm == "oracle":  # the same fork set, count and weights, each labelled by the expert where
                # its state was reached this iteration (a pooled fork of an earlier iteration, or an unreached
                # state, keeps its label)
                expert = {_state(f): lab for f, lab in zip(train, expert_labels, strict=True)
                          if lab is not None}
                swap = [(x, expert.get(k, r)) for (x, r), k in zip(fork, fork_keys, strict=True)]
                self.fit(copy, kind, swap, fork_w, rft, seed)
            elif arm == "reflect":
                from algos.grsd_reflect import GRSDReflect, GRSDReflectConfig

                GRSDReflect(GRSDReflectConfig(**REFLECT_ARM)).update(copy, groups, iteration, seed)
            else:
                GRPO(GRPOConfig()).update(copy, groups, iteration, seed)
            after, n = measure(copy, self.envs, states)
            steps += n
            self._records[arm] = after
            out.update(summary(before, after, f"forklevel/{arm}"))
            if cfg.fork_eval_transfer:
                out.update(self.transfer(copy, arm, seed))
        out["forklevel/env_steps"] = steps
        return out

    def transfer(self, policy: Policy, arm: str, seed: int) -> dict[str, float]:
        """Greedy Pass@1 of `policy` on `fork_eval_transfer` held-out instances of each task with a fork state
        this iteration (the evaluation suite's instances): whether a fix carries to the task's other
        instances."""
        tasks = sorted({s.task for s in self._states})
        ev = evaluate(policy, self.envs, tasks, self.cfg.fork_eval_transfer, seed=seed)
        self._transfer[arm] = {t: float(ev["per_task"][t]) for t in tasks}
        return {f"forklevel/{arm}/transfer": float(np.mean(list(self._transfer[arm].values())))}

    def recurrence(self, groups: list[Group], forks: list[ForkExample]) -> dict[str, float]:
        """How many of the last fork iteration's (screen, failed action) pairs were met again in this
        iteration's rollouts (any step of any trajectory), and this iteration's pairs for the next one."""
        seen = {(s.screen_key, action_json(s.action))
                for g in groups for t in g.trajectories for s in t.steps}
        last = [tuple(k) for k in self.last_keys]
        out = {"forklevel/recur_rate": _rate([k in seen for k in last])}
        if forks:
            self.last_keys = sorted([list(k) for k in {(f.steps[0].screen_key, action_json(f.steps[0].action))
                                                       for f in forks}])
        return out

    def state(self) -> dict[str, Any]:
        out: dict[str, Any] = {"successes.parquet": self.pool, FORKS_DIR: self.examples,
                               "fork_keys.json": _JSON(self.last_keys)}
        if self.cfg.fork_pool:
            out[POOL_DIR] = self.forks
        return out

    def load_state(self, path: Path) -> None:
        self.pool = TrajectoryBuffer.load(path / "successes.parquet")
        self._pool_handed = True
        self.examples = ForkExamples.load(path / FORKS_DIR, keep=self.cfg.keep_forks,
                                          thumb_width=self.cfg.thumb_width)
        keys = path / "fork_keys.json"
        self.last_keys = json.loads(keys.read_text()) if keys.is_file() else []
        self.forks = ForkExamples(keep=self.cfg.fork_pool_max, thumb_width=self.cfg.thumb_width)
        if self.cfg.fork_pool and (path / POOL_DIR / "forks.json").is_file():
            self.forks = ForkExamples.load(path / POOL_DIR, keep=self.cfg.fork_pool_max,
                                           thumb_width=self.cfg.thumb_width)


class _JSON:
    """A JSON-able value saved as a checkpoint file (`Algorithm.state` entries have `.save(path)`)."""

    def __init__(self, value: Any):
        self.value = value

    def save(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.value))


def expert_response(state: ForkState) -> str | None:
    """The expert's action at a reached fork state as a response (None where the replay did not reach it)."""
    if not state.expert:
        return None
    return render_response(Action.from_dict(json.loads(state.expert)))


def records(states: list[ForkState], outcomes: dict[str, list[tuple[bool, bool, bool | None]]],
            transfer: dict[str, dict[str, float]]) -> dict[str, Any]:
    """The iteration's per-state outcomes, compact for metrics.jsonl: the states' tasks, whether each one's
    failed action was the greedy one before, whether its teacher agreed with the expert, and per arm each
    state's (teacher, expert, success) as [0/1, 0/1, 0/1/null]; the transfer scores per arm and task."""
    def enc(o: tuple[bool, bool, bool | None]) -> list[int | None]:
        return [int(o[0]), int(o[1]), None if o[2] is None else int(o[2])]

    return {"task": [s.task for s in states],
            "teacher_is_expert": [None if not s.expert else int(s.expert in s.teachers) for s in states],
            "arms": {arm: [enc(o) for o in outs] for arm, outs in outcomes.items()},
            "transfer": transfer}


def next_differs_rate(forks: list[ForkExample]) -> float:
    """Share of forks whose teacher action led to another screen than the failed action (SimDroid's
    `screen_key` of the step after each, where both trajectories go on): the second half of a fork's
    definition, checked against ground truth. NaN when no fork has keys on both next screens."""
    hits = []
    for f in forks:
        i, j = f.failed_step + 1, f.teacher_step + 1
        if i < len(f.failed.steps) and j < len(f.teacher.steps):
            a, b = f.failed.steps[i].screen_key, f.teacher.steps[j].screen_key
            if a and b:
                hits.append(a != b)
    return _rate(hits)


def same_history_rate(forks: list[ForkExample]) -> float:
    """Share of forks whose failed step had the same history (previous actions) as its teacher step: the
    failed trajectory left the teacher's path right there, so its fork sample repeats the teacher's own step
    (an RFT sample) up to screen noise, and what it adds is weight on that decision. The other forks bring a
    context RFT never trains on (a screen reached by another route). NaN without forks."""
    return _rate([failed.history == teacher.history for failed, teacher in (f.steps for f in forks)])


def later_fork_rate(forks: list[ForkExample]) -> float:
    """Share of forks that come after an earlier fork of the same failed trajectory: corrections made once
    that trajectory had already left the teacher's path (its state may differ in ways the screen does not
    show, such as an answer already given). NaN without forks."""
    keys = [(f.group.group_id, f.failed.traj_id) for f in forks]
    first: dict[tuple[str, str], int] = {}
    for k, f in zip(keys, forks, strict=True):
        first[k] = min(first.get(k, f.failed_step), f.failed_step)
    return _rate([f.failed_step > first[k] for k, f in zip(keys, forks, strict=True)])


def _rate(hits: list[bool]) -> float:
    """Share of True in `hits`; NaN when there are none."""
    return float(np.mean(hits)) if hits else float("nan")


def _mean(xs: list[float]) -> float:
    xs = [x for x in xs if not math.isnan(x)]
    return float(np.mean(xs)) if xs else float("nan")


def same_screen_rate(forks: list[ForkExample]) -> float:
    """Share of forks whose two steps were on the same logical screen (SimDroid's ground-truth `screen_key`):
    the precision of the screenshot matching. NaN when no fork has keys on both sides."""
    return _rate([failed.screen_key == teacher.screen_key for failed, teacher in (f.steps for f in forks)
                  if failed.screen_key and teacher.screen_key])
