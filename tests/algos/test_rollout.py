"""Group rollouts through vector envs: G trajectories per instance, continuous batching, errored episodes."""

import dataclasses
import json
import math

import numpy as np
import pytest

from algos.buffer import Trajectory, TrajectoryBuffer
from algos.evaluation import pass_at_1
from algos.policies.simple import ExpertPolicy, RandomPolicy
from algos.rollout import RolloutConfig, collect
from voyager_gym.env import app_names
from voyager_gym.suites import FROM_ENV, TrainGenerator
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
    groups = collect(RandomPolicy(app_names(), seed=0), envs, insts, RolloutConfig(group_size=2))
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


# -- PipelinedVectorEnv: lanes stepped in worker processes --------------------------------------------------
def _small_rollouts(workers: int, pixels: bool = False) -> list:
    from algos.policies.small import SmallPolicy

    kw = {"render_scale": 0.05} if pixels else {"observation_mode": "elements"}
    envs = make_vec(6, "pipelined", lanes=2, workers=workers, **kw)
    policy = SmallPolicy(app_names(), seed=0)
    policy.reseed(5)
    try:
        cfg = RolloutConfig(group_size=3, thumb_width=16 if pixels else 0, keep_frames=pixels, seed=5)
        return collect(policy, envs, TrainGenerator(TASKS, seed=2).take(4), cfg)
    finally:
        envs.close()


def test_pipelined_rollouts_do_not_depend_on_the_worker_count():
    """Same lanes and seeds: in-process, one worker hosting both lanes, or a worker per lane give the same
    trajectories (actions, log-probs, elements, prompts, env seeds), frames and thumbnails included."""
    ref = _small_rollouts(0, pixels=True)
    assert sum(len(t.steps) for g in ref for t in g.trajectories) > 12
    assert all(s.frame is not None and s.frame.shape[0] == 120 for g in ref for t in g.trajectories
               for s in t.steps)
    for workers in (1, 2):
        got = _small_rollouts(workers, pixels=True)
        assert [g.trajectories for g in got] == [g.trajectories for g in ref]


def test_pipelined_elements_only_rollouts_match_across_workers_and_finish_every_job():
    ref, got = _small_rollouts(0), _small_rollouts(2)
    assert [g.trajectories for g in got] == [g.trajectories for g in ref]
    assert [len(g.trajectories) for g in got] == [3, 3, 3, 3]
    ids = [t.traj_id for g in got for t in g.trajectories]
    assert len(set(ids)) == len(ids)
    assert len({t.env_seed for g in got for t in g.trajectories}) == len(ids)  # screen noise differs


def test_expert_acts_through_pipelined_lanes():
    """The expert reads each sub-env's task: bound to the live sub-envs of the lane it acts on."""
    envs = make_vec(4, "pipelined", lanes=2, workers=1, observation_mode="elements")
    try:
        insts = TrainGenerator(TASKS, seed=1).take(3)
        groups = collect(ExpertPolicy(), envs, insts, RolloutConfig(group_size=3, thumb_width=0))
    finally:
        envs.close()
    assert all(len(g.trajectories) == 3 and all(t.success for t in g.trajectories) for g in groups)


def test_pipelined_env_answers_the_gymnasium_api():
    envs = make_vec(3, "pipelined", lanes=2, workers=1, observation_mode="elements")
    try:
        obs, infos = envs.reset(seed=7, options={"task": "SystemWifiTurnOn", "instance_seed": 3})
        assert len(obs["goal"]) == 3 and len(set(obs["goal"])) == 1 and list(infos["step"]) == [0, 0, 0]
        acts = [json.dumps({"action_type": "navigate_home"})] * 3
        obs, rewards, terms, truncs, infos = envs.step(acts)
        assert list(infos["step"]) == [1, 1, 1] and not terms.any() and rewards.shape == (3,)
        assert envs.call("expert_action")[0].startswith("{")
        with pytest.raises(ValueError, match="not in lane"):
            envs.send(0, {}, {2: acts[0]})
    finally:
        envs.close()


def test_rollout_steps_render_prompts_lazily_and_round_trip_through_parquet(tmp_path):
    """Rollouts store no prompt text and keep UIElements; both read back as before (text, dicts) and the
    Parquet buffer and SFT export still hold them."""
    from algos.buffer import TrajectoryBuffer
    from algos.prompt import render_prompt
    from voyager_gym.observation import UIElement

    groups = _small_rollouts(1)
    s = next(s for g in groups for t in g.trajectories for s in t.steps if s.t > 0)
    assert s.__dict__["_prompt"] is None and all(isinstance(e, UIElement) for e in s.elements)
    assert s.prompt == render_prompt(s.policy_input()) and s.prompt.startswith("Goal: ")
    assert s.ui_elements == [e.to_dict() for e in s.elements]
    buf = TrajectoryBuffer(groups)
    buf.save(tmp_path / "b.parquet")
    back = TrajectoryBuffer.load(tmp_path / "b.parquet")
    assert back == buf
    steps = [s for t in back.trajectories() for s in t.steps]
    assert [x.policy_input().elements for x in steps] == [x.elements for x in buf.steps()]
    # what earlier screens showed: as the rollout saw it, recomputed by a loaded buffer
    assert [x.policy_input().seen for x in steps] == [x.seen for x in buf.steps()]
    assert any(x.seen for x in steps) and not any(x.seen for x in steps if x.t == 0)
    # the labels acted on, one per earlier action: as the rollout kept them, recomputed too
    assert [x.policy_input().acted for x in steps] == [x.acted for x in buf.steps()]
    assert all(len(x.acted) == x.t for x in steps) and any(any(x.acted) for x in steps)
    ds = buf.to_sft_dataset()
    assert ds["prompt"] == [render_prompt(x.policy_input()) for x in buf.steps()]


class _SometimesQuits(ExpertPolicy):
    """The expert, except that at an episode's first step it gives up half the time (its own seeded coin):
    groups of both outcomes and of one."""

    def __init__(self) -> None:
        super().__init__()
        self.rng = np.random.default_rng(0)

    def act(self, batch, greedy=False):
        from algos.policies.base import PolicyOutput
        from voyager_gym.actions import Action

        quit_ = Action("status", goal_status="infeasible")
        return [PolicyOutput(quit_.to_json(), quit_) if x.step == 0 and self.rng.random() < 0.5 else o
                for x, o in zip(batch, super().act(batch), strict=True)]


@pytest.mark.parametrize(("mode", "frames_of"),
                         [("sync", "mixed"), ("pipelined", "mixed"), ("sync", "scored")])
def test_frames_of_mixed_or_scored_groups_only(mode, frames_of):
    kw = {"lanes": 2, "workers": 1} if mode == "pipelined" else {}
    envs = make_vec(4, mode, render_scale=0.05, **kw)
    try:
        cfg = RolloutConfig(group_size=3, thumb_width=0, keep_frames=True, frames_of=frames_of, seed=1)
        groups = collect(_SometimesQuits(), envs, TrainGenerator(TASKS, seed=4).take(6), cfg)
    finally:
        envs.close()
    mixed = [g.has_both_outcomes for g in groups]
    scored = [any(t.score > 0 for t in g.trajectories) for g in groups]
    assert any(mixed) and not all(mixed) and mixed != scored  # an all-success group: scored, not mixed
    for g, m in zip(groups, mixed if frames_of == "mixed" else scored, strict=True):
        frames = [s.frame for t in g.trajectories for s in t.steps]
        assert all(f is not None and f.shape == (120, 54, 3) for f in frames) if m else \
            all(f is None for f in frames)


@pytest.mark.parametrize("mode", ["sync", "pipelined"])
def test_frames_rendered_by_replay_equal_the_live_screenshots(mode):
    """Rollouts on envs that render nothing, with the mixed groups' frames rendered afterwards by replaying
    their episodes, give the same trajectories and bit-identical frames (screen noise and transition blends
    included) as rollouts on rendering envs."""
    kw = {"lanes": 2, "workers": 1} if mode == "pipelined" else {}
    inst = TrainGenerator(TASKS, seed=4).take(6)
    cfg = RolloutConfig(group_size=3, thumb_width=32, keep_frames=True, frames_of="mixed", seed=1)
    out = []
    for replay in (None, {"observation_mode": "full", "render_scale": 0.05, "noise": "heavy"}):
        envs = make_vec(4, mode, **({"render_scale": 0.05, "noise": "heavy"} if replay is None else
                                    {"observation_mode": "elements", "noise": "heavy"}), **kw)
        try:
            out.append(collect(_SometimesQuits(), envs, inst, dataclasses.replace(cfg, replay_frames=replay)))
        finally:
            envs.close()
    live, replayed = out
    assert any(g.has_both_outcomes for g in live) and not all(g.has_both_outcomes for g in live)
    for a, b in zip(live, replayed, strict=True):
        assert [t.success for t in a.trajectories] == [t.success for t in b.trajectories]
        for ta, tb in zip(a.trajectories, b.trajectories, strict=True):
            assert [s.response for s in ta.steps] == [s.response for s in tb.steps]
            for sa, sb in zip(ta.steps, tb.steps, strict=True):
                assert (sa.frame is None) == (sb.frame is None) == (not a.has_both_outcomes)
                if sa.frame is not None:
                    assert np.array_equal(sa.frame, sb.frame)
                    assert np.array_equal(sa.thumbnail, sb.thumbnail)


def test_groups_of_instances_that_leave_params_to_the_env_carry_the_envs_params():
    """AndroidWorld-style instances (params drawn by each env's backend) give groups whose params are the
    ones their rollouts ran with, so successful groups go into a buffer (RFT's pool) without a mismatch."""
    envs = make_vec(2, "sync", observation_mode="elements")
    try:
        inst = TrainGenerator(["OpenAppTaskEval"], seed=0, backend=FROM_ENV).take(2)
        assert all(not i.params for i in inst)
        groups = collect(ExpertPolicy(), envs, inst, RolloutConfig(group_size=2, greedy=True))
    finally:
        envs.close()
    for g in groups:
        assert g.params and all(t.params == g.params for t in g.trajectories)
    assert len(TrajectoryBuffer(groups).groups) == 2
