"""RayVectorEnv: the group rollouts of the local vector envs, actor deaths as errored episodes, placement."""

import math
import os
import time

import numpy as np
import pytest

ray = pytest.importorskip("ray")

from algos.policies.simple import ExpertPolicy, RandomPolicy  # noqa: E402
from algos.rollout import RolloutConfig, collect  # noqa: E402
from voyager_gym.env import app_names  # noqa: E402
from voyager_gym.suites import TrainGenerator  # noqa: E402
from voyager_gym.vector import RayVectorEnv, group_reset, make_vec  # noqa: E402

pytestmark = pytest.mark.slow  # a local Ray cluster

TASKS = ["SystemWifiTurnOn", "OpenAppTaskEval", "TurnOffWifiAndTurnOnBluetooth"]
EMULATORS = 4  # a custom resource of the test cluster, as real workers advertise {"emulator": 1} each


@pytest.fixture(scope="module", autouse=True)
def ray_cluster():
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    ray.init(num_cpus=2, include_dashboard=False, resources={"emulator": EMULATORS}, logging_level="warning")
    yield
    ray.shutdown()


@pytest.fixture(scope="module")
def envs():
    e = RayVectorEnv(4, observation_mode="elements", noise="default")
    yield e
    e.close()


def signature(groups):
    """Everything a trajectory recorded, NaN-safe, for equality across vector-env backends."""
    out = []
    for g in groups:
        for t in g.trajectories:
            steps = [
                (s.prompt, s.response, s.valid, s.screen_key, s.reward, s.done, s.logprob)
                + (None if s.thumbnail is None else s.thumbnail.tobytes(),)
                + (None if s.frame is None else s.frame.tobytes(),)
                for s in t.steps
            ]
            score = None if math.isnan(t.score) else t.score
            out.append((t.traj_id, t.env_seed, t.goal, t.errored, t.success, score, steps))
    return out


def signature_steps(steps):
    return [(s.prompt, s.response, s.screen_key, s.reward, s.done) for s in steps]


def signature_one(t):
    return (t.traj_id, t.env_seed, t.score, signature_steps(t.steps))


def reference(policy_fn, insts, n, cfg, **env_kwargs):
    local = make_vec(n, "sync", **env_kwargs)
    try:
        return collect(policy_fn(), local, insts, cfg)
    finally:
        local.close()


@pytest.mark.parametrize("policy", ["expert", "random"])
def test_group_rollouts_equal_the_sync_vector_env(envs, policy):
    # 6 jobs on 4 actors: continuous batching with masked resets, as in training
    make = ExpertPolicy if policy == "expert" else (lambda: RandomPolicy(app_names(), seed=5))
    insts = TrainGenerator(TASKS, seed=1).take(3)
    cfg = RolloutConfig(group_size=2, seed=3)
    got = collect(make(), envs, insts, cfg)
    want = reference(make, insts, 4, cfg, observation_mode="elements", noise="default")
    assert sum(len(g.trajectories) for g in got) == 6
    assert signature(got) == signature(want)
    if policy == "expert":
        assert all(t.success for g in got for t in g.trajectories)
    else:
        assert any(not t.success for g in got for t in g.trajectories)


def test_pixel_rollouts_equal_the_sync_vector_env():
    kwargs = {"render_scale": 0.1, "noise": "heavy"}
    insts = TrainGenerator(TASKS[:2], seed=2).take(2)
    cfg = RolloutConfig(group_size=2, thumb_width=32, keep_frames=True, seed=1)
    envs = RayVectorEnv(2, **kwargs)
    try:
        assert envs.single_observation_space["pixels"].shape == (240, 108, 3)
        got = collect(ExpertPolicy(), envs, insts, cfg)
    finally:
        envs.close()
    want = reference(ExpertPolicy, insts, 2, cfg, **kwargs)
    assert all(s.frame is not None for g in got for t in g.trajectories for s in t.steps)
    assert signature(got) == signature(want)


def kill_and_wait(actor):
    """`ray.kill` is asynchronous: return once the actor really is gone."""
    ray.kill(actor)
    deadline = time.time() + 20
    while time.time() < deadline:
        try:
            ray.get(actor.where.remote(), timeout=5)
        except ray.exceptions.RayActorError:
            return
        time.sleep(0.05)
    raise AssertionError("the killed actor still answers")


class KillingExpert(ExpertPolicy):
    """The expert, killing sub-env `victim`'s actor at its `at`-th batch: before asking the envs for expert
    actions ('call': the death surfaces in `envs.call`) or after ('step': it surfaces in `envs.step`)."""

    def __init__(self, victim: int, at: int, where: str):
        super().__init__()
        self.victim, self.at, self.where, self.calls = victim, at, where, 0

    def kill(self):
        kill_and_wait(self.envs.actors[self.victim])

    def act(self, batch, greedy=False):
        self.calls += 1
        if self.calls == self.at and self.where == "call":
            self.kill()
        out = super().act(batch, greedy)
        if self.calls == self.at and self.where == "step":
            self.kill()
        return out


@pytest.mark.parametrize("where", ["step", "call"])
def test_killed_actor_ends_only_its_episode_as_errored(envs, where):
    insts = TrainGenerator(["TurnOffWifiAndTurnOnBluetooth", "SystemBluetoothTurnOff"], seed=3).take(2)
    cfg = RolloutConfig(group_size=2, seed=7)  # 4 jobs on 4 actors: job j runs on sub-env j
    ref_groups = reference(ExpertPolicy, insts, 4, cfg, observation_mode="elements")
    want = {t.traj_id: t for g in ref_groups for t in g.trajectories}
    envs_restarts = len(envs.restarts)
    victim, at = 2, 3
    with pytest.warns(RuntimeWarning, match=f"replacing the actor of sub-env {victim}"):
        got = collect(KillingExpert(victim, at, where), envs, insts, cfg)
    trajs = [t for g in got for t in g.trajectories]
    assert len(trajs) == 4
    errored = [t for t in trajs if t.errored]
    assert [t.traj_id for t in errored] == ["s7-g1-r0"]  # job 2 = instance 1, rollout 0
    bad = errored[0]
    assert math.isnan(bad.score) and not bad.success and len(bad.steps) == at
    assert bad.steps[-1].done and bad.steps[-1].reward == 0.0
    ref = want[bad.traj_id]  # the episode was still running, and matched the reference until the kill
    assert len(ref.steps) > at
    assert signature_steps(bad.steps[: at - 1]) == signature_steps(ref.steps[: at - 1])
    others = [t for t in trajs if not t.errored]
    assert all(t.success for t in others)
    assert [signature_one(t) for t in others] == [signature_one(want[t.traj_id]) for t in others]
    assert envs.restarts[envs_restarts:] and all(i == victim for i, _ in envs.restarts[envs_restarts:])
    assert "ray.kill" in envs.restarts[-1][1]
    # the fresh actor serves the next rollout like any other
    again = [t for g in collect(ExpertPolicy(), envs, insts, cfg) for t in g.trajectories]
    assert [signature_one(t) for t in again] == [signature_one(want[t.traj_id]) for t in again]


def test_hung_actor_is_replaced_after_the_step_timeout(envs):
    opts = {"task": "SystemWifiTurnOn", "instance_seed": 0}
    envs.reset(seed=0, options=opts)
    ray.get(envs.actors[1].set_attr.remote("step", lambda action: time.sleep(120)))  # a frozen emulator
    envs.step_timeout_s = 3.0
    try:
        t0 = time.time()
        with pytest.warns(RuntimeWarning, match="sub-env 1: actor of sub-env 1 did not answer within 3.0 s"):
            _, r, term, trunc, infos = envs.step(['{"action_type": "wait"}'] * 4)
        assert time.time() - t0 < 60
    finally:
        envs.step_timeout_s = None
    assert list(term) == [False, True, False, False] and r[1] == 0.0 and not trunc.any()
    assert list(infos["errored"]) == [False, True, False, False] and math.isnan(infos["score"][1])
    assert list(infos["_error"]) == [False, True, False, False] and "did not answer" in infos["error"][1]
    assert infos["task"][1] == "SystemWifiTurnOn"
    envs.reset(seed=1, options=opts)  # the fresh actor steps normally
    _, _, term, _, infos = envs.step(['{"action_type": "wait"}'] * 4)
    assert not term.any() and list(infos["step"]) == [1, 1, 1, 1]


def test_masked_resets_match_the_sync_vector_env(envs):
    inst = TrainGenerator(["TurnOffWifiAndTurnOnBluetooth"], seed=4).take(1)[0]
    local = make_vec(4, "sync", observation_mode="elements", noise="default")
    acts = [
        ['{"action_type": "open_app", "app_name": "settings"}'] * 4,
        ['{"action_type": "status", "goal_status": "complete"}'] + ['{"action_type": "wait"}'] * 3,
        ['{"action_type": "wait"}'] * 4,
    ]
    mask = np.array([True, False, False, False])
    try:
        results = []
        for e in (envs, local):
            obs, infos = group_reset(e, inst, seed=11)
            seq = [(obs, infos)]
            for a in acts[:2]:
                seq.append(e.step(a))
            seq.append(group_reset(e, inst, seed=20, mask=mask))
            seq.append(e.step(acts[2]))
            results.append(seq)
    finally:
        local.close()
    ray_seq, sync_seq = results
    for r, s in zip(ray_seq, sync_seq, strict=True):
        assert len(r) == len(s)
        for x, y in zip(r, s, strict=True):
            assert_same(x, y)
    assert list(ray_seq[2][2]) == [True, False, False, False]  # terminated
    _, infos = ray_seq[3]
    assert list(infos["_step"]) == [True, False, False, False] and infos["step"][0] == 0
    assert list(ray_seq[4][4]["step"]) == [1, 3, 3, 3]
    # the contract's errors, named
    with pytest.raises(TypeError, match="dtype bool"):
        envs.reset(seed=0, options={"reset_mask": np.ones(4, dtype=int)})
    envs.step(['{"action_type": "status", "goal_status": "complete"}'] * 4)
    with pytest.raises(RuntimeError, match=r"sub-envs \[0, 1, 2, 3\] have no running episode"):
        envs.step(['{"action_type": "wait"}'] * 4)
    table = {5: {"task": "SystemWifiTurnOn", "instance_seed": 1}}
    with pytest.raises(KeyError, match="reset seed 6"):
        envs.reset(seed=[5, 6, 5, 5], options={"instances": table})
    table[6] = {"task": "OpenAppTaskEval", "instance_seed": 2}
    _, infos = envs.reset(seed=[5, 6, 5, 5], options={"instances": table})
    assert list(infos["task"]) == ["SystemWifiTurnOn", "OpenAppTaskEval"] + ["SystemWifiTurnOn"] * 2
    # an actor found dead by a reset is replaced and the reset retried: nothing to report as errored
    kill_and_wait(envs.actors[3])
    with pytest.warns(RuntimeWarning, match="replacing the actor of sub-env 3"):
        _, infos = envs.reset(
            seed=[5, 6, 5, 5], options={"instances": table, "reset_mask": mask[::-1].copy()}
        )
    assert list(infos["_task"]) == [False, False, False, True] and not infos["errored"].any()
    assert infos["task"][3] == "SystemWifiTurnOn" and envs.restarts[-1][0] == 3


def test_snapshots_restore_across_actors_as_in_the_sync_vector_env(envs):
    """Snapshots taken in one actor restore in another (pickled on the way): the batch equals the sync env's
    doing the same."""
    from voyager_gym import vector

    inst = TrainGenerator(["SystemWifiTurnOn"], seed=3).take(1)[0]
    local = make_vec(4, "sync", observation_mode="elements", noise="default")
    acts = ['{"action_type": "open_app", "app_name": "settings"}'] * 4
    try:
        results = []
        for e in (envs, local):
            group_reset(e, inst, seed=7)
            e.step(acts)
            s0, s2 = vector.snapshot(e, [0, 2])
            e.step(['{"action_type": "wait"}'] * 4)
            seq = [vector.restore(e, {1: s0, 3: s2}), e.step(['{"action_type": "wait"}'] * 4)]
            results.append((s0.steps, seq))
    finally:
        local.close()
    (ray_steps, ray_seq), (sync_steps, sync_seq) = results
    assert ray_steps == sync_steps == 1
    for r, s in zip(ray_seq, sync_seq, strict=True):
        for x, y in zip(r, s, strict=True):
            assert_same(x, y)
    assert list(ray_seq[0][1]["_step"]) == [False, True, False, True]
    assert list(ray_seq[1][4]["step"]) == [3, 2, 3, 2]


def assert_same(x, y):
    """Equal batched values: dicts key by key (with the same keys), arrays exactly, tuples element-wise."""
    if isinstance(x, dict):
        assert set(x) == set(y)
        for k in x:
            assert_same(x[k], y[k])
    elif isinstance(x, np.ndarray):
        assert x.dtype == y.dtype and x.shape == y.shape
        if x.dtype.kind == "f":
            assert np.array_equal(x, y, equal_nan=True)
        else:
            assert all(a == b for a, b in zip(x.tolist(), y.tolist(), strict=True))
    else:
        assert x == y


def test_placement_group_one_emulator_per_actor_and_close():
    envs = make_vec(
        2, "ray", resources={"emulator": 1}, placement_strategy="SPREAD", observation_mode="elements"
    )
    assert isinstance(envs, RayVectorEnv)
    try:
        assert ray.available_resources().get("emulator", 0) == EMULATORS - 2
        assert len({w["pid"] for w in envs.where()}) == 2
        _, infos = envs.reset(seed=0, options={"task": "SystemWifiTurnOn", "instance_seed": 0})
        assert list(infos["step"]) == [0, 0]
    finally:
        actors = list(envs.actors)
        envs.close()
        envs.close()  # idempotent
    for a in actors:
        with pytest.raises(ray.exceptions.RayActorError):
            ray.get(a.where.remote(), timeout=10)
    deadline = time.time() + 10
    while ray.available_resources().get("emulator", 0) != EMULATORS and time.time() < deadline:
        time.sleep(0.1)
    assert ray.available_resources().get("emulator", 0) == EMULATORS


def test_requests_the_cluster_cannot_place_fail_fast():
    with pytest.raises(RuntimeError, match="could not reserve 2 bundles"):
        RayVectorEnv(2, resources={"emulator": 3}, placement_strategy="PACK", start_timeout_s=1)
    with pytest.raises(ValueError, match="placement_strategy must be one of"):
        RayVectorEnv(2, placement_strategy="RANDOM")
    with pytest.raises(ValueError, match="not both"):
        RayVectorEnv(2, placement_strategy="PACK", scheduling_strategy="SPREAD", resources={"emulator": 1})


def test_entry_point_config_builds_ray_actors():
    """`env.workers=N` (with `env.actor_resources`) is what train.py / compare.py turn into a RayVectorEnv."""
    from experiments.common import make_envs
    from experiments.config import parse

    cfg = parse(["env.workers=2", "env.actor_resources=emulator=1", "tasks=SystemWifiTurnOn"])
    envs = make_envs(cfg)
    try:
        assert isinstance(envs, RayVectorEnv) and envs.num_envs == 2
        inst = TrainGenerator(["SystemWifiTurnOn"], seed=3).take(1)
        groups = collect(ExpertPolicy(), envs, inst, RolloutConfig(group_size=2, greedy=True))
        assert [t.success for t in groups[0].trajectories] == [True, True]
    finally:
        envs.close()
