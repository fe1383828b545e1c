"""AndroidWorldBackend through `gym.make("voyager_gym/AndroidWorld-v0")`, on the SimDroid stand-in of the
android_world package (no emulator here): the SimDroid contract, AndroidWorld's seeding and answer handling,
errored episodes from injected emulator failures, rollouts, and the errors for a missing or real install."""

import dataclasses
import inspect
import json
import random
import sys
import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import voyager_gym  # noqa: F401  (registers the env ids)
from algos.policies.simple import ExpertPolicy, RandomPolicy
from algos.rollout import RolloutConfig, collect
from tests import aw_standin
from tests.aw_standin import EmulatorError, Faults
from voyager_gym.backends.androidworld import (
    AndroidWorldBackend,
    make_androidworld_vec,
    screen_key,
)
from voyager_gym.env import VoyagerEnv, app_names
from voyager_gym.observation import BoundingBox, UIElement
from voyager_gym.suites import eval_suite
from voyager_gym.vector import make_vec

AW_ID = "voyager_gym/AndroidWorld-v0"
FAST = {"transition_pause": 0.0}  # the stand-in's screens settle at once
SOLVE = ["SystemWifiTurnOn", "TurnOffWifiAndTurnOnBluetooth", "ExpenseAddSingle", "SimpleCalendarNextEvent"]


def make_aw(faults: Faults | None = None, **kwargs):
    with aw_standin.installed(faults=faults):
        return gym.make(AW_ID, **{**FAST, **kwargs})


def run_expert(env, options, max_steps=60):
    """Steps the expert until the episode ends; returns (observations, rewards, infos) including reset's."""
    obs, info = env.reset(seed=0, options=options)
    observations, rewards, infos = [obs], [], [info]
    for _ in range(max_steps):
        obs, r, term, trunc, info = env.step(env.unwrapped.expert_action())
        observations.append(obs)
        rewards.append(r)
        infos.append(info)
        if term or trunc:
            break
    return observations, rewards, infos


# -- the Gymnasium contract --------------------------------------------------------------------------------
def test_same_spaces_and_info_fields_as_simdroid():
    aw, sim = make_aw(render_scale=0.25), gym.make("voyager_gym/SimDroid-v0", render_scale=0.25)
    assert isinstance(aw.unwrapped.backend, AndroidWorldBackend)
    keys = {"pixels", "ui_elements", "goal"}
    assert set(aw.observation_space.spaces) == set(sim.observation_space.spaces) == keys
    assert aw.observation_space["pixels"].shape == sim.observation_space["pixels"].shape == (600, 270, 3)
    opts = {"task": "SystemBluetoothTurnOn", "instance_seed": 7}
    o_aw, i_aw = aw.reset(seed=1, options=opts)
    o_sim, i_sim = sim.reset(seed=1, options=opts)
    assert o_aw in aw.observation_space and o_aw["pixels"].dtype == np.uint8
    assert set(i_aw) == set(i_sim) and i_aw["params"] == i_sim["params"] and i_aw["goal"] == i_sim["goal"]
    assert o_aw["pixels"].std() > 0  # a real frame, not the blank one of a broken episode
    step = '{"action_type": "open_app", "app_name": "Settings"}'
    _, _, _, _, s_aw = aw.step(step)
    _, _, _, _, s_sim = sim.step(step)
    assert set(s_aw) == set(s_sim) and s_aw["screen_key"] != i_aw["screen_key"]


def test_the_action_vocabulary_is_android_worlds_app_table():
    """On AndroidWorld the env's `app_names` are the first names of its open_app table's patterns (the
    stand-in's table holds SimDroid's apps under AndroidWorld's patterns), not SimDroid's launcher labels."""
    from types import SimpleNamespace

    from voyager_gym.backends.androidworld import open_app_names

    aw = make_aw(observation_mode="elements")
    names = app_names(aw)
    assert names == aw.metadata["app_names"] and "google chrome" in names and "Chrome" not in names
    assert names != app_names("simdroid")
    with aw_standin.installed():
        assert app_names("androidworld") == names
    for name in names:
        aw.reset(seed=0, options={"task": "SystemWifiTurnOn"})
        _, _, _, _, info = aw.step({"action_type": "open_app", "app_name": name})
        assert not info["invalid_action"] and not info["errored"], name
    patterns = {"google chrome|chrome": "c", "b|x": "b"}
    adb_utils = SimpleNamespace(__name__="adb_utils", _PATTERN_TO_ACTIVITY=patterns)
    assert open_app_names(adb_utils) == ("b", "google chrome")
    with pytest.raises(ImportError, match="no _PATTERN_TO_ACTIVITY table"):
        open_app_names(SimpleNamespace(__name__="adb_utils"))


def test_the_real_emulator_cannot_snapshot():
    env = make_aw(render_scale=0.1)
    env.reset(seed=0, options={"task": "SystemWifiTurnOn"})
    with pytest.raises(NotImplementedError, match="cannot snapshot an episode cheaply.*backend='simdroid'"):
        env.unwrapped.snapshot()
    env.close()


def test_check_env_passes_on_the_standin():
    with aw_standin.installed():  # check_env re-makes the env from its spec for the render modes
        env = gym.make(AW_ID, render_scale=0.1, render_mode="rgb_array", **FAST)
        check_env(env.unwrapped, skip_render_check=False)


def test_step_budget_is_ten_times_complexity():
    env = make_aw(observation_mode="elements")
    _, info = env.reset(seed=0, options={"task": "ExpenseAddSingle"})  # complexity 1.2
    assert info["max_steps"] == 12
    assert env.unwrapped.backend.task_info("BrowserMultiply")["max_steps"] == 22
    with pytest.raises(KeyError, match="did you mean 'SystemWifiTurnOn'"):
        env.reset(options={"task": "SystemWifiTurnOnn"})


def test_wraps_an_existing_env_and_picks_a_family():
    with aw_standin.installed():
        from android_world.env import env_launcher

        device = env_launcher.load_and_setup_env(console_port=5560, emulator_setup=True)
        backend = AndroidWorldBackend(env=device, family="information_retrieval", **FAST)
        with pytest.raises(ValueError, match="unknown AndroidWorld task family 'androidworld'"):
            AndroidWorldBackend(env=device, family="androidworld")
    assert backend.env is device and device.controller.apps_set_up
    assert "SimpleCalendarNextEvent" in backend.task_names and "SystemWifiTurnOn" not in backend.task_names
    env = VoyagerEnv(backend=backend, observation_mode="elements")
    _, rewards, _ = run_expert(env, {"task": "NotesTodoItemCount", "instance_seed": 5})
    assert rewards[-1] == 1.0


def test_params_follow_androidworld_seeding_and_leave_global_random_alone():
    env = make_aw(observation_mode="elements")
    backend = env.unwrapped.backend
    random.seed(1234)
    before = random.getstate()
    aw_suite = eval_suite(SOLVE, n_per_task=2, backend=backend)
    env.reset(seed=0, options=aw_suite[0].options())
    assert random.getstate() == before
    sim_suite = eval_suite(SOLVE, n_per_task=2)  # SimDroid draws from random.Random(instance_seed)
    assert [i.params for i in aw_suite] == [i.params for i in sim_suite]
    assert len({i.params["seed"] for i in aw_suite}) == len(aw_suite)


# -- episodes ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("task", SOLVE)
def test_expert_solves_in_lockstep_with_simdroid(task):
    aw = make_aw(observation_mode="elements")
    sim = VoyagerEnv(observation_mode="elements", noise="default")  # live clock, as on the stand-in device
    opts = {"task": task, "instance_seed": 11}
    o_aw, r_aw, i_aw = run_expert(aw, opts)
    o_sim, r_sim, _ = run_expert(sim, opts)
    assert r_aw[-1] == 1.0 and i_aw[-1]["success"] and not i_aw[-1]["errored"]
    assert r_aw == r_sim
    # The elements an agent sees through AndroidWorld's UIElement round trip equal SimDroid's, step by step
    # (all but the terminal one: `status` touches no AndroidWorld device, while SimDroid clears its toast).
    assert [o["ui_elements"] for o in o_aw[:-1]] == [o["ui_elements"] for o in o_sim[:-1]]
    assert all(e.bbox is None and isinstance(e.bbox_pixels.x_min, int) for e in o_aw[-1]["ui_elements"])


def test_answer_is_stored_in_interaction_cache_and_scored():
    env = make_aw(observation_mode="elements")
    backend = env.unwrapped.backend
    env.reset(seed=0, options={"task": "SimpleCalendarNextEvent", "instance_seed": 3})
    env.step('{"action_type": "answer", "text": "certainly not the next event"}')
    assert backend.env.interaction_cache == "certainly not the next event"
    _, r, term, _, info = env.step('{"action_type": "status", "goal_status": "complete"}')
    assert term and r == 0.0 and not info["errored"]
    env.reset(seed=0, options={"task": "SimpleCalendarNextEvent", "instance_seed": 3})
    assert backend.env.interaction_cache == ""  # initialize_task and env.reset clear it


def test_bad_index_is_an_invalid_action_not_an_error():
    env = make_aw(observation_mode="elements")
    env.reset(seed=0, options={"task": "SystemWifiTurnOn"})
    _, r, term, trunc, info = env.step('{"action_type": "click", "index": 999}')
    assert "999" in info["invalid_action"] and not info["errored"] and not (term or trunc)
    _, _, _, _, info = env.step('{"action_type": "navigate_home"}')
    assert info["invalid_action"] is None


@pytest.mark.parametrize(
    ("faults", "fails_at_step", "where"),
    [
        (Faults(execute_action=2), 2, "executing"),
        (Faults(get_state=3), 2, "reading the screen"),  # call 1: reset's first screen; 2: after step 1
        (Faults(is_successful=1), 5, "is_successful"),  # the status step of SystemWifiTurnOn
        (Faults(initialize_task=1), 1, "initializing"),
    ],
)
def test_injected_emulator_failure_ends_the_episode_errored(faults, fails_at_step, where):
    env = make_aw(faults=faults, observation_mode="elements")
    _, rewards, infos = run_expert(env, {"task": "SystemWifiTurnOn"})
    last = infos[-1]
    assert len(rewards) == fails_at_step and rewards[-1] == 0.0
    assert last["errored"] and np.isnan(last["score"]) and not last["success"]
    assert "injected" in last["error"] and (where in last["error"] or where == "is_successful")
    if where == "initializing":
        assert infos[0]["goal"] == "Turn wifi on." and len(env.unwrapped.elements) == 0
    # The failure was transient: the next episode on the same device runs and succeeds.
    _, rewards, infos = run_expert(env, {"task": "SystemWifiTurnOn"})
    assert rewards[-1] == 1.0 and not infos[-1]["errored"]


def test_emulator_that_cannot_be_reached_raises_at_make():
    with pytest.raises(EmulatorError, match="console port 5558"):
        make_aw(faults=Faults(load=True), console_port=5558)


# -- the same rollout code ---------------------------------------------------------------------------------
def test_rollout_collect_runs_expert_and_random_policies_and_flags_errors():
    with aw_standin.installed():
        envs = make_vec(2, env_id=AW_ID, observation_mode="elements", **FAST)
    backend = envs.envs[0].unwrapped.backend
    instances = eval_suite(["SystemWifiTurnOn", "ExpenseAddSingle"], backend=backend)
    groups = collect(ExpertPolicy(), envs, instances, RolloutConfig(group_size=2))
    trajs = [t for g in groups for t in g.trajectories]
    assert len(trajs) == 4 and all(t.success and not t.errored for t in trajs)
    assert all(s.screen_key and s.valid for t in trajs for s in t.steps)

    policy = RandomPolicy(app_names(envs), seed=0)  # AndroidWorld's open_app vocabulary, from the envs
    groups = collect(policy, envs, instances[:1], RolloutConfig(group_size=2, seed=1))
    assert all(len(t.steps) >= 1 and not t.errored for t in groups[0].trajectories)

    for sub in envs.envs:  # every device now fails on its second action
        sub.unwrapped.backend.env.controller.faults = Faults(execute_action=2)
    groups = collect(ExpertPolicy(), envs, instances[:1], RolloutConfig(group_size=2, seed=2))
    assert all(t.errored and np.isnan(t.score) and not t.success for t in groups[0].trajectories)


def test_vector_env_gives_each_sub_env_its_own_emulator():
    with aw_standin.installed():
        envs = make_androidworld_vec([5554, 5556], observation_mode="elements", **FAST)
    ctrls = [e.unwrapped.backend.env.controller for e in envs.envs]
    assert [(c.console_port, c.grpc_port) for c in ctrls] == [(5554, 8554), (5556, 8555)]
    with pytest.raises(ValueError, match="one gRPC port per console port"):
        make_androidworld_vec([5554, 5556], grpc_ports=[8554])


# -- install errors and the stand-in's honesty -------------------------------------------------------------
def test_missing_android_world_gives_install_instructions(monkeypatch):
    monkeypatch.setitem(sys.modules, "android_world", None)  # as if not installed, even where it is
    with pytest.raises(ImportError, match="git clone https://github.com/google-research/android_world") as e:
        gym.make(AW_ID)
    assert "docs/androidworld.md" in str(e.value) and "aw_standin" in str(e.value)


def test_standin_never_shadows_a_real_install(tmp_path, monkeypatch):
    fake = tmp_path / "android_world"
    fake.mkdir()
    (fake / "__init__.py").write_text("REAL = True\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(RuntimeError, match="real android_world is importable"):
        with aw_standin.installed():
            pass
    with pytest.warns(UserWarning, match="shadows it"):
        with aw_standin.installed(allow_shadowing=True):
            import android_world

            assert android_world.IS_VOYAGER_STANDIN
    assert str(aw_standin.SITE_DIR) not in sys.path
    import android_world

    assert android_world.REAL and not hasattr(android_world, "IS_VOYAGER_STANDIN")
    del sys.modules["android_world"]  # not monkeypatch.delitem: its undo would put the fake back


def test_standin_outside_the_block_is_not_importable():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with aw_standin.installed():
            import android_world.env.env_launcher  # noqa: F401
    assert not any(k == "android_world" or k.startswith("android_world.") for k in sys.modules)
    assert str(aw_standin.SITE_DIR) not in sys.path


def test_standin_keeps_android_worlds_signatures():
    """The names and defaults AndroidWorldBackend calls, as they are in google-research/android_world."""
    with aw_standin.installed():
        from android_world import registry
        from android_world.env import env_launcher, interface, json_action, representation_utils
        from android_world.task_evals import task_eval

        sig = inspect.signature(env_launcher.load_and_setup_env)
        assert [(p.name, p.default) for p in sig.parameters.values()] == [
            ("console_port", 5554),
            ("emulator_setup", False),
            ("freeze_datetime", True),
            ("adb_path", "~/Android/Sdk/platform-tools/adb"),
            ("grpc_port", 8554),
        ]
        assert [f.name for f in dataclasses.fields(json_action.JSONAction)] == [
            "action_type",
            "index",
            "x",
            "y",
            "text",
            "direction",
            "goal_status",
            "app_name",
            "keycode",
            "clear_text",
        ]
        with pytest.raises(ValueError, match="Either an index or a <x, y>"):
            json_action.JSONAction(action_type="click", index=1, x=2, y=3)
        ui_fields = [f.name for f in dataclasses.fields(representation_utils.UIElement)]
        assert ui_fields == [f.name for f in dataclasses.fields(UIElement)] + ["metadata"]
        assert [f.name for f in dataclasses.fields(interface.State)] == [
            "pixels",
            "forest",
            "ui_elements",
            "auxiliaries",
        ]
        get_state = inspect.signature(interface.AsyncEnv.get_state)
        assert list(get_state.parameters) == ["self", "wait_to_stabilize"]
        assert list(inspect.signature(task_eval.TaskEval.generate_random_params).parameters) == []
        reg = registry.TaskRegistry()
        family = reg.get_registry(reg.ANDROID_WORLD_FAMILY)
        assert "SystemWifiTurnOn" in family and issubclass(family["SystemWifiTurnOn"], task_eval.TaskEval)
        assert set(reg.get_registry(reg.INFORMATION_RETRIEVAL_FAMILY)) < set(family)


def test_screen_key_ignores_the_clock_but_not_the_screen():
    def el(text, rid=None, pkg="com.android.settings", checked=None):
        return UIElement(
            text=text,
            resource_name=rid,
            package_name=pkg,
            is_checked=checked,
            class_name="android.widget.TextView",
            bbox_pixels=BoundingBox(0, 10, 0, 10),
        )

    base = [el("15:34", "com.android.systemui:id/clock", "com.android.systemui"), el("Wi-Fi", checked=False)]
    later = [el("15:41", "com.android.systemui:id/clock", "com.android.systemui"), el("Wi-Fi", checked=False)]
    toast = later + [UIElement(text="Saved", class_name="android.widget.Toast")]
    toggled = [base[0], el("Wi-Fi", checked=True)]
    assert screen_key(base) == screen_key(later) == screen_key(toast)
    assert screen_key(base) != screen_key(toggled)
    assert screen_key(base) != screen_key(base[1:] + [el("Bluetooth")])


def test_training_entry_point_runs_on_the_androidworld_backend(tmp_path):
    """`env.backend=androidworld` end to end through experiments/train.py (one env per emulator port; params
    drawn by the backend from AndroidWorld's instance seeds; the loaded policy is the base: no experts)."""
    from experiments.train import main

    with aw_standin.installed():
        main([
            "algo=rft", "env.backend=androidworld", "env.console_ports=5554,5556", "env.grpc_ports=8554,8556",
            "tasks=SystemWifiTurnOn,OpenAppTaskEval", "rft.iterations=1", "rft.instances_per_iter=2",
            "rft.group_size=2", "eval_n_per_task=1", "env.transition_pause=0", f"out_dir={tmp_path / 'run'}",
            f"cache_dir={tmp_path / 'cache'}", "wandb=disabled", "progress=false",
        ])
    rows = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert [r["iteration"] for r in rows] == [0, 1]
    assert rows[1]["env_steps"] > 0 and set(rows[0]["per_task"]) == {"SystemWifiTurnOn", "OpenAppTaskEval"}
