"""Snapshots: restoring a mid-episode state and replaying the same actions gives the same observations,
rewards and infos (every task, default noise on), in the same env, another env and through pickle; vector
envs restore chosen sub-envs; mismatched settings and the real emulator are clear errors."""

import math
import pickle

import gymnasium as gym
import numpy as np
import pytest

import voyager_gym  # noqa: F401  (registers the env ids)
from voyager_gym import vector
from voyager_gym.actions import Action
from voyager_gym.backends.sim.phone import launcher_app_names
from voyager_gym.env import Snapshot, VoyagerEnv
from voyager_gym.vector import PipelinedVectorEnv, make_vec

TASKS = VoyagerEnv(observation_mode="elements").task_names
FULL_SCALE = ["SystemWifiTurnOn", "ExpenseAddSingle", "MarkorCreateNote", "SimpleCalendarNextEvent"]
APPS = launcher_app_names()
TASK = "ContactsAddContact"


def ask_expert(env: VoyagerEnv) -> str:
    """The expert's next action (asking moves its memory on), or why it has none (off its path it may)."""
    try:
        return env.expert_action()
    except LookupError as e:
        return f"no expert action: {e}"


def mixed_action(env: VoyagerEnv, rng: np.random.Generator, expert: str) -> str:
    """`expert` (from ask_expert) half the time, else a random valid action on the current screen."""
    if rng.random() < 0.5 and not expert.startswith("no expert"):
        return expert
    n = len(env.elements)
    kind = rng.choice(["click", "long_press", "scroll", "back", "open_app", "input_text"])
    if kind in ("click", "long_press", "input_text") and n == 0:
        kind = "back"
    if kind == "click":
        return Action("click", index=int(rng.integers(n))).to_json()
    if kind == "long_press":
        return Action("long_press", index=int(rng.integers(n))).to_json()
    if kind == "scroll":
        return Action("scroll", direction=str(rng.choice(["up", "down", "left", "right"]))).to_json()
    if kind == "open_app":
        return Action("open_app", app_name=str(rng.choice(APPS))).to_json()
    if kind == "input_text":
        return Action("input_text", index=int(rng.integers(n)), text="Hello 42").to_json()
    return Action("navigate_back").to_json()


def assert_same_obs(a: dict, b: dict) -> None:
    assert a.keys() == b.keys()
    if "pixels" in a:
        assert a["pixels"].shape == b["pixels"].shape and np.array_equal(a["pixels"], b["pixels"])
    assert a["ui_elements"] == b["ui_elements"] and a["goal"] == b["goal"]


def assert_same_info(a: dict, b: dict) -> None:
    nan = math.isnan(a["score"]) and math.isnan(b["score"])
    assert {**a, "score": 0.0 if nan else a["score"]} == {**b, "score": 0.0 if nan else b["score"]}


def run_and_branch(env: VoyagerEnv, task: str, seed: int, prefix: int, n: int = 4):
    """Play `prefix` mixed actions, snapshot, play up to `n` more recording everything: (snapshot, the
    observation and info at the snapshot, the actions, their step outputs, the expert's suggestion before
    each of them)."""
    rng = np.random.default_rng(seed)
    obs, info = env.reset(seed=seed, options={"task": task})
    for _ in range(prefix):
        obs, _, term, trunc, info = env.step(mixed_action(env, rng, ask_expert(env)))
        if term or trunc:
            obs, info = env.reset(seed=seed + 1, options={"task": task})
            break
    snap = env.snapshot()
    actions, outs, experts = [], [], []
    for _ in range(n):
        experts.append(ask_expert(env))
        actions.append(mixed_action(env, rng, experts[-1]))
        outs.append(env.step(actions[-1]))
        if outs[-1][2] or outs[-1][3]:
            break
    return snap, (obs, info), actions, outs, experts


def assert_replays(env: VoyagerEnv, snap: Snapshot, at, actions, outs, experts) -> None:
    obs, info = env.restore(snap)
    assert_same_obs(obs, at[0])
    assert_same_info(info, at[1])
    for a, (o, r, te, tr, inf), ex in zip(actions, outs, experts, strict=True):
        assert ask_expert(env) == ex  # the expert's memory came back too
        o2, r2, te2, tr2, inf2 = env.step(a)
        assert_same_obs(o2, o)
        assert (r2, te2, tr2) == (r, te, tr)
        assert_same_info(inf2, inf)


@pytest.fixture(scope="module")
def small_envs():
    return VoyagerEnv(render_scale=0.1), VoyagerEnv(render_scale=0.1)


@pytest.mark.parametrize("task", TASKS)
def test_restore_replays_every_task(task, small_envs):
    env, other = small_envs
    k = TASKS.index(task)
    snap, at, actions, outs, experts = run_and_branch(env, task, seed=k, prefix=k % 4)
    assert_replays(env, snap, at, actions, outs, experts)  # the same env, after it went on
    assert_replays(other, snap, at, actions, outs, experts)  # another env, in this process
    assert_replays(other, pickle.loads(pickle.dumps(snap)), at, actions, outs, experts)  # another process
    assert_replays(env, snap, at, actions, outs, experts)  # a snapshot restores any number of times


@pytest.mark.parametrize("task", FULL_SCALE)
def test_restore_replays_at_full_scale_in_a_fresh_env(task):
    env = VoyagerEnv(render_scale=1.0)
    snap, at, actions, outs, experts = run_and_branch(env, task, seed=5, prefix=2)
    fresh = gym.make("voyager_gym/SimDroid-v0", render_scale=1.0)  # never reset: wrappers see reset()
    obs, info = fresh.reset(options={"snapshot": pickle.loads(pickle.dumps(snap))})
    assert_same_obs(obs, at[0])
    assert_same_info(info, at[1])
    for a, (o, r, te, tr, inf) in zip(actions, outs, strict=True):
        o2, r2, te2, tr2, inf2 = fresh.step(a)
        assert_same_obs(o2, o)
        assert (r2, te2, tr2) == (r, te, tr)
        assert_same_info(inf2, inf)


def test_a_shot_caught_mid_transition_restores_through_pickle():
    """Every screen change is blended with the previous screen: a restore in another process re-renders both
    screens from the snapshot, without the frames."""
    env, other = VoyagerEnv(render_scale=0.2, noise={"transitions": 1.0}), VoyagerEnv(
        render_scale=0.2, noise={"transitions": 1.0})
    env.reset(seed=0, options={"task": TASK})
    obs, *_ = env.step(Action("open_app", app_name="Contacts").to_json())
    snap = env.snapshot()
    assert snap.backend.shown.blended
    after = env.step(env.expert_action())
    wire = pickle.loads(pickle.dumps(snap))
    assert wire.backend.shown.clean is None and wire.backend.shown.blend_root.on_click is None
    obs2, _ = other.restore(wire)
    assert_same_obs(obs2, obs)
    assert_same_obs(other.step(after[4]["action"])[0], after[0])


def test_elements_mode_snapshots_carry_no_pixels():
    env = VoyagerEnv(observation_mode="elements")
    snap, at, actions, outs, experts = run_and_branch(env, TASK, seed=1, prefix=2)
    assert snap.backend.shown is None and len(pickle.dumps(snap)) < 200_000
    assert_replays(VoyagerEnv(observation_mode="elements"), snap, at, actions, outs, experts)


def test_a_finished_episode_restores_finished():
    env = VoyagerEnv(render_scale=0.1)
    env.reset(seed=0, options={"task": TASK})
    *_, term, _, info = env.step(Action("status", goal_status="complete").to_json())
    snap = env.snapshot()
    assert term and snap.done
    env.reset(seed=1, options={"task": "SystemWifiTurnOn"})
    _, info2 = env.restore(snap)
    assert info2 == info
    with pytest.raises(RuntimeError, match="finished episode"):
        env.step(Action("wait").to_json())


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"render_scale": 0.2}, r"render_scale=0.1; this env has render_scale=0.2"),
        ({"render_scale": 0.1, "observation_mode": "elements"},
         r"observation_mode='full'; this env has observation_mode='elements'"),
        ({"render_scale": 0.1, "noise": "heavy"}, r"noise=NoiseConfig\(.*transitions=0.1\).*this backend has "
                                                  r"noise=NoiseConfig\(.*transitions=0.35\)"),
    ],
)
def test_mismatched_settings_name_both_values(kwargs, match):
    env = VoyagerEnv(render_scale=0.1)
    env.reset(seed=0, options={"task": TASK})
    with pytest.raises(ValueError, match=match):
        VoyagerEnv(**kwargs).restore(env.snapshot())


def test_snapshot_misuse_is_a_clear_error():
    env = VoyagerEnv(render_scale=0.1)
    with pytest.raises(RuntimeError, match="before reset"):
        env.snapshot()
    with pytest.raises(ValueError, match="expected a VoyagerEnv.snapshot"):
        env.restore({"task": TASK})
    with pytest.raises(ValueError, match="expected a Snapshot"):
        env.reset(options={"snapshot": "not one"})
    env.reset(seed=0, options={"task": TASK})
    with pytest.raises(ValueError, match="replaces the episode"):
        env.reset(options={"snapshot": env.snapshot(), "task": TASK})


def test_restoring_a_snapshot_of_another_task_replaces_the_episode():
    env, other = VoyagerEnv(render_scale=0.1), VoyagerEnv(render_scale=0.1)
    snap, at, actions, outs, experts = run_and_branch(other, "SystemWifiTurnOn", seed=2, prefix=1)
    env.reset(seed=0, options={"task": TASK})
    env.step(Action("open_app", app_name="Contacts").to_json())
    assert_replays(env, snap, at, actions, outs, experts)
    assert env.task_name == "SystemWifiTurnOn" and env.snapshot().steps == at[1]["step"] + len(actions)


@pytest.mark.parametrize("mode", ["sync", "async", "pipelined"])
def test_vector_envs_restore_chosen_sub_envs(mode):
    kw = {"lanes": 2, "workers": 1} if mode == "pipelined" else {}
    envs = make_vec(3, mode, render_scale=0.1, **kw)
    try:
        envs.reset(seed=0, options={"task": TASK})
        envs.step([Action("open_app", app_name="Contacts").to_json()] * 3)
        snaps = vector.snapshot(envs, [0, 2])
        assert [s.steps for s in snaps] == [1, 1] and all(isinstance(s, Snapshot) for s in snaps)
        click = Action("click", index=0).to_json()
        obs1, _, _, _, infos1 = envs.step([click] * 3)
        # sub-env 1 gets sub-env 0's snapshot: a restored sub-env runs that episode whatever it ran before
        obs, infos = vector.restore(envs, {1: snaps[0], 2: snaps[1]})
        assert list(infos["_step"]) == [False, True, True] and list(infos["step"][1:]) == [1, 1]
        assert np.array_equal(obs["pixels"][0], obs1["pixels"][0])  # sub-env 0 untouched
        obs2, _, _, _, infos2 = envs.step([Action("wait").to_json(), click, click])
        assert np.array_equal(obs2["pixels"][1], obs1["pixels"][0])
        assert np.array_equal(obs2["pixels"][2], obs1["pixels"][2])
        assert list(infos2["step"]) == [3, 2, 2] and infos2["screen_key"][1] == infos1["screen_key"][0]
        if isinstance(envs, PipelinedVectorEnv):  # the methods, one snapshot for several sub-envs
            obs3, infos3 = envs.restore({0: envs.snapshot([1])[0], 2: snaps[0]})
            assert list(infos3["step"][[0, 2]]) == [2, 1]
    finally:
        envs.close()

