"""Group rollouts through vector envs: G trajectories per instance, continuous batching, errored episodes."""

import math

import numpy as np
import pytest

from algos.buffer import Trajectory
from algos.evaluation import pass_at_1
from algos.policies.simple import ExpertPolicy, RandomPolicy
from algos.rollout import RolloutConfig, collect
from voyager_gym.suites import TrainGenerator
from voyager_gym.vector import make_vec

TASKS = ["SystemWifiTurnOn", "OpenAppTaskEval", "TurnOffWifiAndTurnOnBluetooth"]


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_expert_groups_are_complete_and_successful(mode):
    envs = make_vec(4, mode, render_scale=0.1, noise="default")
    try:
        insts = TrainGenerator(TASKS, seed=1).take(3)
        groups = collect(ExpertPolicy(), envs, insts, RolloutConfig(group_size=3, thumb_width=32))
    finally:
        envs.close()
    assert [g.task for g in groups] == [i.name for i in insts]
    for g, inst in zip(groups, insts, strict=True):
        assert len(g.trajectories) == 3 and all(t.success and t.score == 1.0 for t in g.trajectories)
        assert all(t.params == inst.params for t in g.trajectories)
        for t in g.trajectories:
            assert [s.t for s in t.steps] == list(range(len(t.steps)))
            assert (
                t.steps[-1].done
                and t.steps[-1].reward == 1.0
                and t.steps[-1].action["action_type"] == "status"
            )
            assert all(s.thumbnail is not None and s.thumbnail.shape[1] == 32 for s in t.steps)
            assert all(s.valid and s.goal == t.goal for s in t.steps)
            assert t.steps[0].history == [] and len(t.steps[-1].history) == len(t.steps) - 1
    # noise seeds differ across a group, the task instance does not
    seeds = {t.env_seed for g in groups for t in g.trajectories}
    assert len(seeds) == 9


def test_random_policy_rollouts_record_failures_and_invalid_steps():
    envs = make_vec(5, "sync", observation_mode="elements")
    insts = TrainGenerator(TASKS, seed=2).take(4)
    groups = collect(RandomPolicy(seed=0), envs, insts, RolloutConfig(group_size=2))
    envs.close()
    trajs = [t for g in groups for t in g.trajectories]
    assert len(trajs) == 8
    assert any(not t.success for t in trajs)
    for t in trajs:
        assert len(t.steps) <= t.steps[0].step_max
        assert t.steps[-1].done


def test_errored_episode_is_flagged_and_the_rest_continue():
    envs = make_vec(2, "sync", observation_mode="elements")
    # break one sub-env's device after its second step: its episode must come back errored
    inner = envs.envs[0].unwrapped
    calls = {"n": 0}
    orig = inner.backend.execute

    def flaky(action):
        calls["n"] += 1
        if calls["n"] == 2:
            raise RuntimeError("adb: device offline")
        return orig(action)

    inner.backend.execute = flaky
    insts = TrainGenerator(["TurnOffWifiAndTurnOnBluetooth"], seed=3).take(2)
    groups = collect(ExpertPolicy(), envs, insts, RolloutConfig(group_size=2))
    envs.close()
    trajs = [t for g in groups for t in g.trajectories]
    assert len(trajs) == 4
    errored = [t for t in trajs if t.errored]
    assert len(errored) == 1 and math.isnan(errored[0].score) and not errored[0].success
    assert all(t.success for t in trajs if not t.errored)
    assert pass_at_1(trajs)["errored"] == 1


def _traj(task, score, errored=False):
    return Trajectory(
        traj_id=f"{task}-{score}-{errored}-{np.random.rand()}",
        group_id="g",
        task=task,
        instance_seed=0,
        params={},
        goal="",
        steps=[],
        score=float("nan") if errored else score,
        success=score >= 1.0 and not errored,
        errored=errored,
        env_seed=0,
    )


def test_pass_at_1_is_mean_per_template_then_over_templates():
    trajs = [
        _traj("A", 1.0),
        _traj("A", 0.0),
        _traj("A", 1.0),
        _traj("A", 0.0),  # A: 0.5
        _traj("B", 1.0),  # B: 1.0
        _traj("C", 0.5),
        _traj("C", 0.0, errored=True),  # C: 0.5 (errored excluded)
        _traj("D", 0.0, errored=True),
    ]  # D: only errored -> left out
    r = pass_at_1(trajs)
    assert r["per_task"] == {"A": 0.5, "B": 1.0, "C": 0.5}
    assert r["pass_at_1"] == pytest.approx(2.0 / 3.0)
    assert r["errored"] == 2 and r["tasks_all_errored"] == ["D"]
