"""VinePPO: advantages from hand-made values, Monte Carlo values read from restored snapshots (a detour whose
value the policy's continuations make known), the branch env steps counted against the budget, config
errors, and training end to end on SimDroid with the small policy."""

from __future__ import annotations

import dataclasses
import json
import math

import pytest
import torch

from algos.branch import Branch, BranchResult, play, taken
from algos.buffer import Group
from algos.loop import train_loop
from algos.policies.simple import ExpertPolicy
from algos.policies.small import SmallPolicy
from algos.rollout import RolloutConfig, collect
from algos.run import Run
from algos.vine import (
    Vine,
    VineConfig,
    estimate_values,
    estimated_states,
    group_start_values,
    mc_value,
    vine_advantages,
)
from tests.algos.test_grpo import GOOD, contrast_group
from tests.algos.test_grsd import DetourExpert, GivesUpExpert
from voyager_gym.env import app_names
from voyager_gym.suites import TrainGenerator
from voyager_gym.vector import make_vec

TASK = "SystemWifiTurnOn"


@pytest.fixture(autouse=True)
def one_torch_thread():
    torch.set_num_threads(1)


@pytest.fixture(scope="module")
def envs():
    envs = make_vec(2, "sync", observation_mode="elements", noise="none")
    yield envs
    envs.close()


@pytest.fixture(scope="module")
def detour(envs) -> Group:
    """One group of SystemWifiTurnOn: rollout 0 is the expert (success), rollout 1 goes home at step 2 and
    then declares the task complete (failure)."""
    inst = TrainGenerator([TASK], seed=0).take(1)
    (g,) = collect(DetourExpert({1: 2}), envs, inst, RolloutConfig(group_size=2, thumb_width=0, seed=5))
    return g


# -- advantages from known values ----------------------------------------------------------------------------
def test_advantages_are_differences_of_the_values():
    # reward at the last step only; V(s_0..s_3) = 0.5, 1, 0, 0 and V(s_4) = 0: the mistake is step 1
    adv, v = vine_advantages([0, 0, 0, 0], [0.5, 1.0, 0.0, 0.0], gamma=1.0)
    assert adv.tolist() == [0.5, -1.0, 0.0, 0.0] and v.tolist() == [0.5, 1.0, 0.0, 0.0]
    # a success: the last step earns 1 - V(s_3)
    adv, _ = vine_advantages([0, 0, 1], [0.25, 0.5, 0.5], gamma=1.0)
    assert adv.tolist() == [0.25, 0.0, 0.5]
    # discounted: A_t = r_t + 0.5 V(s_{t+1}) - V(s_t)
    adv, _ = vine_advantages([0, 0, 1], [0.2, 0.4, 0.8], gamma=0.5)
    assert adv == pytest.approx([0.0, 0.0, 0.2])


def test_unestimated_states_take_the_trajectorys_own_return():
    # V(s_2), V(s_3) missing: filled backwards with the return of this success (1), so steps 2, 3 get 0 and
    # step 1 is credited against its own outcome
    adv, v = vine_advantages([0, 0, 0, 1], [0.5, 0.25, None, None], gamma=1.0)
    assert v.tolist() == [0.5, 0.25, 1.0, 1.0] and adv.tolist() == [-0.25, 0.75, 0.0, 0.0]
    adv, v = vine_advantages([0, 0, 1], [None, 0.5, None], gamma=0.9)
    assert v == pytest.approx([0.45, 0.5, 1.0]) and adv == pytest.approx([0.0, 0.4, 0.0])
    with pytest.raises(ValueError, match="2 values for 3 rewards"):
        vine_advantages([0, 0, 1], [0.5, 0.5], gamma=1.0)


def test_mc_value_estimated_states_and_the_group_baseline(detour):
    done = [BranchResult(1.0, True, False, 3), BranchResult(0.0, False, False, 1),
            BranchResult(float("nan"), False, True, 2)]
    assert mc_value(done, 1.0) == 0.5  # the errored one is left out
    assert mc_value(done, 0.5) == pytest.approx(0.5 * 0.25)  # the success took 3 steps
    assert mc_value(done[2:], 1.0) is None
    assert estimated_states(5, 0, False) == [1, 2, 3, 4] and estimated_states(5, 2, False) == [1, 2]
    assert estimated_states(5, 2, True) == [0, 1] and estimated_states(1, 0, False) == []
    ok, bad = detour.trajectories
    assert ok.success and not bad.success
    # each start value is the other rollout's return (leave-one-out)
    assert group_start_values([detour], 1.0) == {ok.traj_id: 0.0, bad.traj_id: 1.0}


# -- values from snapshots -----------------------------------------------------------------------------------
def test_values_are_the_continuations_from_the_restored_states(detour, envs):
    """The failed rollout's states: s_0..s_2 on the expert's path, s_3 at home after the detour. An agent that
    gives up once it has left the app succeeds from the path's states and fails from home: V = 1, 1, 1, 0,
    and the detour (step 2) is the step with advantage -1. The expert recovers from home: V(s_3) = 1, and
    the blame moves to declaring the task complete there (step 3)."""
    ok, bad = detour.trajectories
    assert len(bad.steps) == 4 and "navigate_home" in bad.steps[2].response
    cfg = VineConfig(k=2, max_states=0, group_baseline=False)
    values, m = estimate_values(GivesUpExpert(), envs, [bad], cfg)
    assert values[bad.traj_id] == [1.0, 1.0, 1.0, 0.0]
    adv, _ = vine_advantages([s.reward for s in bad.steps], values[bad.traj_id], 1.0)
    assert adv.tolist() == [0.0, 0.0, -1.0, 0.0]
    assert m["vine/states"] == 4 and m["vine/mc_rollouts"] == 8 and m["vine/unreached_states"] == 0
    # env steps: the replay forces the 3 actions up to s_3; from s_t on the path the agent plays the
    # expert's remaining len(ok) - t steps, from home it gives up in 1
    e = len(ok.steps)
    assert m["vine/replay_env_steps"] == 3
    assert m["vine/branch_env_steps"] == 3 + 2 * ((e - 0) + (e - 1) + (e - 2) + 1)
    values, _ = estimate_values(ExpertPolicy(), envs, [bad], cfg)
    assert values[bad.traj_id] == [1.0, 1.0, 1.0, 1.0]
    adv, _ = vine_advantages([s.reward for s in bad.steps], values[bad.traj_id], 1.0)
    assert adv.tolist() == [0.0, 0.0, 0.0, -1.0]
    # capped at the first state after the start: one replayed step, the rest unestimated
    values, m = estimate_values(GivesUpExpert(), envs, [bad], VineConfig(k=2, max_states=1))
    assert values[bad.traj_id] == [None, 1.0, None, None] and m["vine/replay_env_steps"] == 1


def test_an_env_step_budget_caps_the_branching(detour, envs):
    """With a budget, states are estimated while their predicted cost (K x the trajectory's own steps from
    them) fits what the replay and the earlier rounds left; the rest stay unestimated and are counted."""
    ok, bad = detour.trajectories
    cfg = VineConfig(k=2, max_states=0, group_baseline=False)
    full, m_full = estimate_values(GivesUpExpert(), envs, [bad], cfg)
    same, m = estimate_values(GivesUpExpert(), envs, [bad], cfg, budget=m_full["vine/branch_env_steps"])
    assert same == full and m["vine/budget_skipped_states"] == 0
    # the replay (3 steps) and s_0 (predicted 2 x 4 = 8) fit in 11; s_0's branches then spend 2 x len(ok)
    # steps, more than the 0 left, so s_1..s_3 are skipped
    values, m = estimate_values(GivesUpExpert(), envs, [bad], cfg, budget=11)
    assert values[bad.traj_id] == [1.0, None, None, None]
    assert m["vine/states"] == 1 and m["vine/budget_skipped_states"] == 3 and m["vine/mc_rollouts"] == 2
    assert m["vine/branch_env_steps"] == 3 + 2 * len(ok.steps)
    values, m = estimate_values(GivesUpExpert(), envs, [bad], cfg, budget=3)  # the replay only
    assert values[bad.traj_id] == [None] * 4 and m["vine/branch_env_steps"] == 3
    assert m["vine/budget_skipped_states"] == 4 and m["vine/unreached_states"] == 0
    values, m = estimate_values(GivesUpExpert(), envs, [bad], cfg, budget=2)  # not even the replay
    assert values[bad.traj_id] == [None] * 4 and m["vine/branch_env_steps"] == 0
    assert m["vine/budget_skipped_states"] == 4


def test_one_replay_snapshots_every_state_on_the_way(detour, envs):
    _, bad = detour.trajectories
    start = {"task": bad.task, "params": dict(bad.params)}
    replay = Branch(start, seed=bad.env_seed, forced=tuple(taken(s) for s in bad.steps[:3]), policy=False,
                    snap_at=(0, 2, 3))
    (r,) = play(ExpertPolicy(), envs, [replay])
    assert r.steps == 3 and [s.steps for s in r.snapshots] == [0, 2, 3] and r.snapshot is r.snapshots[-1]
    assert [s.screen_key for s in r.snapshots] == [bad.steps[t].screen_key for t in (0, 2, 3)]
    with pytest.raises(ValueError, match="increasing step counts"):
        Branch(start, snap_at=(2, 1))
    with pytest.raises(ValueError, match="goes past the 3 forced actions"):
        Branch(start, forced=replay.forced, policy=False, snap_at=(4,))


def test_a_replay_that_leaves_the_trajectory_estimates_nothing_past_it(detour, envs):
    _, bad = detour.trajectories
    lost = dataclasses.replace(bad, steps=[dataclasses.replace(s) for s in bad.steps])
    lost.steps[2].screen_key = "somewhere else"  # as if the replay had reached another screen there
    values, m = estimate_values(GivesUpExpert(), envs, [lost], VineConfig(k=1, max_states=0))
    assert values[lost.traj_id] == [None, 1.0, None, None]
    assert m["vine/states"] == 1 and m["vine/unreached_states"] == 2


# -- the update -------------------------------------------------------------------------------------------
def test_update_counts_branch_steps_and_moves_the_policy(wifi_screens, envs, detour):
    vine = Vine(VineConfig(k=2, lr=1e-3, epochs=4, minibatch_size=4))
    with pytest.raises(ValueError, match="none are bound"):
        vine.update(SmallPolicy(app_names(), seed=0), [detour], 1, 0)
    vine.bind(envs)
    m = vine.update(SmallPolicy(app_names(), seed=0), [detour], 1, 0)
    ok, bad = detour.trajectories
    assert m["train/update_env_steps"] == m["vine/branch_env_steps"] > 0
    assert m["vine/mc_rollouts"] == 2 * m["vine/states"]
    assert m["train/pg_steps"] == len(ok.steps) + len(bad.steps)
    assert math.isfinite(m["losses/policy"]) and m["vine/adv_std"] > 0
    # a hand-made group on one screen: two successes with GOOD, two failures with BAD, one step each; the
    # start values are the other rollouts' mean, so GOOD gets +2/3 and BAD -2/3 (no branch: no later state)
    pol = SmallPolicy(app_names(), seed=0)
    x = wifi_screens[0]
    group = contrast_group(pol, x)
    before = pol.log_probs([x], [GOOD]).detach()
    m = vine.update(pol, [group], 1, 0)
    assert m["vine/states"] == 0 and m["train/update_env_steps"] == 0
    assert m["vine/value_mean"] == pytest.approx(0.5) and m["charts/adv_abs"] == pytest.approx(2 / 3)
    assert pol.log_probs([x], [GOOD]).detach()[0] > before[0] + 0.1
    # whitened advantages (norm_adv, as ppo's): the same direction
    pol = SmallPolicy(app_names(), seed=0)
    whitened = Vine(VineConfig(k=2, lr=1e-3, epochs=4, minibatch_size=4, norm_adv=True))
    whitened.bind(envs)
    whitened.update(pol, [contrast_group(pol, x)], 1, 0)
    assert pol.log_probs([x], [GOOD]).detach()[0] > before[0] + 0.1


def test_the_loop_counts_branch_steps_against_the_budget(tmp_path):
    envs = make_vec(4, "sync", observation_mode="elements", noise="none")
    try:
        algo = Vine(VineConfig(iterations=2, instances_per_iter=2, group_size=2, k=2, max_states=2))
        with Run(tmp_path / "run", {"algo": "vine"}, wandb_mode="disabled") as run:
            train_loop(algo, SmallPolicy(app_names(), seed=0), envs, run, [TASK, "SystemBluetoothTurnOff"],
                       seed=0, eval_n_per_task=1)
            rows = run.metrics()
    finally:
        envs.close()
    assert [r["iteration"] for r in rows] == [0, 1, 2]
    for prev, r in zip(rows, rows[1:], strict=False):
        assert r["train/update_env_steps"] == r["vine/branch_env_steps"] > 0
        assert r["vine/mc_rollouts"] == 2 * r["vine/states"] > 0
        # the iteration's env steps: its rollouts' (every step of its 4 rollouts is a policy-gradient step:
        # none errored) and its branches'
        assert r["env_steps"] - prev["env_steps"] == r["train/pg_steps"] + r["train/update_env_steps"]


def test_the_loop_leaves_the_update_only_the_budget_left(tmp_path):
    """A budget its first rollouts already spend: the update branches nothing (no overshoot) and stops."""
    envs = make_vec(4, "sync", observation_mode="elements", noise="none")
    try:
        algo = Vine(VineConfig(instances_per_iter=2, group_size=2, k=2, max_states=2))
        with Run(tmp_path / "run", {"algo": "vine"}, wandb_mode="disabled") as run:
            train_loop(algo, SmallPolicy(app_names(), seed=0), envs, run, [TASK, "SystemBluetoothTurnOff"],
                       seed=0, eval_n_per_task=1, max_env_steps=1)
            rows = run.metrics()
    finally:
        envs.close()
    assert [r["iteration"] for r in rows] == [0, 1] and algo.env_steps_left == 0
    r = rows[1]
    assert r["train/update_env_steps"] == 0 and r["vine/states"] == 0 and r["vine/budget_skipped_states"] > 0
    assert r["env_steps"] == r["train/pg_steps"] > 0


# -- config and end to end ---------------------------------------------------------------------------------
@pytest.mark.parametrize("arg,expected", [
    ("vine.k=0", "vine.k=0: expected an integer >= 1"),
    ("vine.max_states=-2", "vine.max_states=-2: expected an integer >= 0"),
    ("vine.gamma=1.5", r"vine.gamma=1.5: expected a finite value in \[0, 1\]"),
    ("vine.clip_low=-0.1", "vine.clip_low=-0.1: expected a finite value >= 0"),
    ("vine.epochs=0", "vine.epochs=0: expected an integer >= 1"),
    ("vine.lr=0", "vine.lr=0.0: expected a finite value > 0"),
])
def test_config_errors_name_the_bad_value(arg, expected):
    from experiments.config import TrainConfig, parse

    with pytest.raises(SystemExit, match=expected):
        parse([arg], TrainConfig)


@pytest.mark.slow
def test_vine_trains_end_to_end(tmp_path):
    from experiments.train import main

    out = tmp_path / "run"
    main(["algo=vine", f"tasks={TASK},OpenAppTaskEval", "rft.iterations=1", "rft.instances_per_iter=4",
          "rft.group_size=4", "vine.iterations=2", "vine.instances_per_iter=4", "vine.group_size=4",
          "vine.max_states=2", "eval_n_per_task=2", "env.num_envs=4", "base.demos_per_task=2",
          "base.epochs=6", "wandb=disabled", "progress=false", f"out_dir={out}",
          f"cache_dir={tmp_path / 'cache'}"])
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [r["iteration"] for r in rows] == [0, 1, 2]
    for prev, r in zip(rows, rows[1:], strict=False):
        assert r["algo"] == "vine" and r["train/pg_steps"] > 0 and math.isfinite(r["charts/approx_kl"])
        assert r["train/update_env_steps"] == r["vine/branch_env_steps"] > 0
        assert r["env_steps"] - prev["env_steps"] == r["train/pg_steps"] + r["train/update_env_steps"]
        assert 0.0 <= r["vine/value_mean"] <= 1.0 and 0.0 <= r["pass_at_1"] <= 1.0
    assert (out / "checkpoints" / "it_2" / "policy").exists()
