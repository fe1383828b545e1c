"""VoyagerEnv: the Gymnasium contract, AndroidWorld's episode rules, determinism and vector groups."""

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import voyager_gym  # noqa: F401
from voyager_gym.backends.base import BackendError
from voyager_gym.env import VoyagerEnv
from voyager_gym.suites import TrainGenerator, eval_suite, instance_seed
from voyager_gym.vector import group_reset, make_vec

TASK = "TurnOffWifiAndTurnOnBluetooth"


def test_check_env_passes():
    env = gym.make("voyager_gym/SimDroid-v0", render_scale=0.2, render_mode="rgb_array")
    check_env(env.unwrapped)


def test_observation_and_info_contract():
    env = VoyagerEnv(render_scale=0.25)
    obs, info = env.reset(seed=0, options={"task": TASK})
    assert set(obs) == {"pixels", "ui_elements", "goal"}
    assert obs["pixels"].shape == (600, 270, 3) and obs["pixels"].dtype == np.uint8
    assert obs["goal"] == "Turn off WiFi, then enable bluetooth"
    assert all(e.bbox_pixels is not None for e in obs["ui_elements"])
    assert obs in env.observation_space
    for key in ("task", "goal", "score", "success", "invalid_action", "errored", "screen_key"):
        assert key in info
    assert TASK in env.unwrapped.task_names


def test_expert_episode_pays_reward_only_on_status():
    env = VoyagerEnv(render_scale=0.1, noise="none")
    env.reset(seed=0, options={"task": TASK})
    rewards = []
    while True:
        _, r, term, trunc, info = env.step(env.expert_action())
        rewards.append(r)
        if term or trunc:
            break
    assert term and not trunc and info["success"] and info["score"] == 1.0
    assert rewards[-1] == 1.0 and all(r == 0.0 for r in rewards[:-1])


def test_half_done_composite_pays_half():
    env = VoyagerEnv(render_scale=0.1, noise="none")
    env.reset(seed=0, options={"task": TASK})
    env.backend.phone.dev.settings["wifi_on"] = 0  # one of two parts
    _, r, term, _, info = env.step('{"action_type": "status", "goal_status": "complete"}')
    assert term and r == 0.5 and info["score"] == 0.5 and not info["success"]


def test_running_out_of_steps_truncates_with_zero():
    env = VoyagerEnv(render_scale=0.1, noise="none")
    _, info = env.reset(seed=0, options={"task": "SystemWifiTurnOn"})
    assert info["max_steps"] == 10
    env.backend.phone.dev.settings["wifi_on"] = 1  # solved, but the agent never says so
    for _ in range(10):
        _, r, term, trunc, _ = env.step('{"action_type": "wait"}')
        assert r == 0.0 and not term
    assert trunc
    with pytest.raises(RuntimeError, match="finished episode"):
        env.step('{"action_type": "wait"}')


@pytest.mark.parametrize(
    "bad",
    [
        "",
        "nonsense",
        '{"action_type": "click", "index": 999}',
        "{'a':",
        None,
        42,
        '{"action_type": "open_app", "app_name": "Snapchat"}',
    ],
)
def test_malformed_actions_are_invalid_not_exceptions(bad):
    env = VoyagerEnv(render_scale=0.1, noise="none")
    env.reset(seed=0, options={"task": TASK})
    _, r, term, trunc, info = env.step(bad)
    assert info["invalid_action"] and not term and r == 0.0 and info["step"] == 1


def test_backend_error_ends_episode_as_errored():
    env = VoyagerEnv(render_scale=0.1, noise="none")
    env.reset(seed=0, options={"task": TASK})

    def boom(action):
        raise BackendError("emulator died")

    env.backend.execute = boom
    _, r, term, _, info = env.step('{"action_type": "wait"}')
    assert (
        term and info["errored"] and np.isnan(info["score"]) and r == 0.0 and "emulator died" in info["error"]
    )


def test_same_seed_same_actions_same_pixels_and_elements():
    actions = [
        '{"action_type": "open_app", "app_name": "settings"}',
        '{"action_type": "click", "index": 3}',
        '{"action_type": "scroll", "direction": "down"}',
        '{"action_type": "navigate_back"}',
    ]
    runs = []
    for _ in range(2):
        env = VoyagerEnv(render_scale=0.25, noise="heavy")
        obs, _ = env.reset(seed=7, options={"task": TASK})
        frames, elements = [obs["pixels"]], [obs["ui_elements"]]
        for a in actions:
            obs, *_ = env.step(a)
            frames.append(obs["pixels"])
            elements.append(obs["ui_elements"])
        runs.append((frames, elements))
    for f1, f2 in zip(runs[0][0], runs[1][0], strict=True):
        assert np.array_equal(f1, f2)
    assert runs[0][1] == runs[1][1]


def test_noise_changes_pixels_but_not_screen_key():
    keys, frames = {}, {}
    for noise in ("none", "heavy"):
        env = VoyagerEnv(render_scale=0.25, noise=noise)
        env.reset(seed=3, options={"task": TASK})
        seq_keys, seq_frames = [], []
        for a in ['{"action_type": "open_app", "app_name": "settings"}'] + ['{"action_type": "wait"}'] * 15:
            obs, _, _, _, info = env.step(a)
            seq_keys.append(info["screen_key"])
            seq_frames.append(obs["pixels"])
        keys[noise], frames[noise] = seq_keys, seq_frames
    assert keys["none"] == keys["heavy"]
    assert any(not np.array_equal(a, b) for a, b in zip(frames["none"], frames["heavy"], strict=True))
    assert len(set(keys["none"][1:])) == 1  # waiting on one screen keeps its identity


def test_unknown_task_names_suggest_the_closest():
    env = VoyagerEnv(render_scale=0.1)
    with pytest.raises(KeyError, match="did you mean 'SystemBluetoothTurnOff'"):
        env.reset(options={"task": "SystemBlutoothTurnOff"})
    with pytest.raises(ValueError, match="unknown reset option"):
        env.reset(options={"tsk": TASK})


def test_the_action_vocabulary_is_env_metadata():
    """`metadata["app_names"]`: the backend's open_app vocabulary, on the env, its wrappers and vector envs;
    every name opens an app."""
    from voyager_gym.backends.sim.phone import launcher_app_names
    from voyager_gym.env import app_names

    env = gym.make("voyager_gym/SimDroid-v0", observation_mode="elements")
    names = app_names(env)
    assert names == env.metadata["app_names"] == tuple(launcher_app_names()) == app_names("simdroid")
    assert "app_names" not in VoyagerEnv.metadata  # per env (its backend's), not on the class
    for name in names:
        env.reset(seed=0, options={"task": TASK})
        _, _, _, _, info = env.step({"action_type": "open_app", "app_name": name})
        assert not info["invalid_action"], (name, info["invalid_action"])
    envs = make_vec(2, "sync", observation_mode="elements")
    try:
        assert app_names(envs) == names
    finally:
        envs.close()
    with pytest.raises(ValueError, match="unknown backend 'simdroit'"):
        app_names("simdroit")
    with pytest.raises(ValueError, match="has no metadata\\['app_names'\\]"):
        app_names(object())


def test_elements_only_mode_has_no_pixels():
    env = VoyagerEnv(observation_mode="elements")
    obs, _ = env.reset(seed=0, options={"task": TASK})
    assert "pixels" not in obs and obs in env.observation_space


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_vector_group_runs_one_instance(mode):
    inst = eval_suite([TASK], backend=VoyagerEnv(render_scale=0.1).backend)[0]
    envs = make_vec(3, mode, render_scale=0.1, noise="default")
    try:
        obs, infos = group_reset(envs, inst, seed=11)
        assert len(set(infos["screen_key"])) == 1 and list(infos["params"]["seed"]) == [inst.seed] * 3
        act = ['{"action_type": "open_app", "app_name": "settings"}'] * 3
        obs, r, term, trunc, infos = envs.step(act)
        assert len(set(infos["screen_key"])) == 1 and not term.any()
        obs, r, term, trunc, infos = envs.step(
            [
                '{"action_type": "status", "goal_status": "complete"}',
                '{"action_type": "wait"}',
                '{"action_type": "wait"}',
            ]
        )
        assert list(term) == [True, False, False]
        # autoreset is disabled: the rollout resets the finished env itself with a mask
        obs, infos = group_reset(envs, inst, seed=20, mask=np.array([True, False, False]))
        assert infos["step"][0] == 0 and list(infos["_step"]) == [True, False, False]
        _, _, term, _, infos = envs.step(['{"action_type": "wait"}'] * 3)
        assert list(infos["step"]) == [1, 3, 3]
        # one batch mixing a valid and an invalid action: info fields keep one type across sub-envs
        _, _, _, _, infos = envs.step(['{"action_type": "wait"}', "not an action", '{"action_type": "wait"}'])
        assert list(infos["action"]) == ['{"action_type": "wait"}', "", '{"action_type": "wait"}']
        assert infos["invalid_action"][1] and not infos["invalid_action"][0]
    finally:
        envs.close()


def test_suites_follow_androidworld_seeding_and_splits_are_disjoint():
    import hashlib

    s = instance_seed(30, "ContactsAddContact", 0)
    assert s == int(hashlib.sha256(b"30_ContactsAddContact_0").hexdigest(), 16) % 2**32
    backend = VoyagerEnv(render_scale=0.1).backend
    tasks = ["SystemCopyToClipboard", "OpenAppTaskEval"]
    ev = eval_suite(tasks, n_per_task=5, backend=backend)
    train = TrainGenerator(tasks, seed=0, backend=backend, exclude_n=5).take(200)
    assert not {i.seed for i in ev} & {i.seed for i in train}
    assert len({i.seed for i in train}) == 200
    assert eval_suite(tasks, 5, backend=backend) == ev  # reproducible
    assert len({tuple(sorted(i.params.items())) for i in train if i.name == "SystemCopyToClipboard"}) > 50


def test_vector_reset_can_start_different_instances_per_env():
    from voyager_gym.vector import make_vec

    envs = make_vec(3, "sync", observation_mode="elements")
    table = {
        5: {"task": "SystemWifiTurnOn", "instance_seed": 1},
        6: {"task": "SystemWifiTurnOn", "instance_seed": 1},
        7: {"task": "OpenAppTaskEval", "instance_seed": 2},
    }
    _, infos = envs.reset(seed=[5, 6, 7], options={"instances": table})
    assert list(infos["task"]) == ["SystemWifiTurnOn", "SystemWifiTurnOn", "OpenAppTaskEval"]
    with pytest.raises(KeyError, match="reset seed 9"):
        envs.reset(seed=[9, 6, 7], options={"instances": table})
    envs.close()


def test_steps_leave_no_cyclic_garbage():
    """Every step's dropped UI tree is freed by reference counting alone: the training loop pauses Python's
    cyclic collector during an iteration, so a cycle through a tree (a self-calling closure over it) would
    keep every step's tree until the iteration ends (~600 MB an iteration)."""
    import gc

    from voyager_gym.env import task_names

    env = VoyagerEnv(observation_mode="elements", noise="none")
    was = gc.isenabled()
    leaks = {}
    try:
        for task in task_names():
            env.reset(seed=0, options={"task": task})
            gc.collect(0)
            gc.disable()  # no automatic collection: the episode's objects all stay in the youngest generation
            while True:
                *_, term, trunc, _ = env.step(env.unwrapped.expert_action())
                if term or trunc:
                    break
            n = gc.collect(0)
            gc.enable()
            if n:
                leaks[task] = n
    finally:
        if was:
            gc.enable()
        else:
            gc.disable()
    assert not leaks, f"objects left to the cyclic collector by expert episodes: {leaks}"


def test_text_space_copies_are_equal_and_draw_from_their_own_rng():
    """Each env's goal and action spaces are copies of one prototype (vector envs copy them again): a copy
    equals a space built from scratch, samples what the original samples from the same state, and seeding
    one never moves another's RNG."""
    import copy

    from gymnasium import spaces

    from voyager_gym.env import MAX_ACTION_LEN, TEXT_CHARSET

    a, b = VoyagerEnv(observation_mode="elements"), VoyagerEnv(observation_mode="elements")
    assert a.action_space == spaces.Text(MAX_ACTION_LEN, min_length=0, charset=TEXT_CHARSET)
    assert a.observation_space["goal"].contains("Résumé: 5 €") and not a.action_space.contains("\U0001F600")
    a.action_space.seed(3)
    b.action_space.seed(3)
    c = copy.deepcopy(a.action_space)
    assert c == a.action_space
    drawn = c.sample()  # from the state it copied
    c.seed(4)
    c.sample()  # the copy's draws and seeding leave the original where it was
    assert a.action_space.sample() == drawn == b.action_space.sample()
    vec = make_vec(num_envs=3, observation_mode="elements")
    vec.action_space.seed(0)
    assert len(set(vec.action_space.sample())) == 3


# -- reset params against the task's schema, the expert off its path (issue 45) ------------------------------
def _params(env, task="MarkorCreateNote"):
    _, info = env.reset(seed=0, options={"task": task, "instance_seed": 1})
    return dict(info["params"])


@pytest.mark.parametrize("change, message", [
    ({"file_name": 12345}, r"params\['file_name'\]=12345: expected str for task MarkorCreateNote, got int"),
    ({"text": "x" * 1_000_000}, r"params\['text'\]: a string of 1,000,000 characters; expected at most"),
    ({"file_name": None}, r"params\['file_name'\]=None: expected str"),
    ({"fil_name": "notes.md"}, r"unknown key\(s\) \['fil_name'\] in params for task MarkorCreateNote"),
    ({"seed": -1}, r"params\['seed'\]=-1: expected an integer >= 0"),
    ({"file_name": "a" * 3000, "text": "b" * 3000}, r"goal of task MarkorCreateNote .* is 6,0\d\d chara"),
    ({"file_name": "note\U0001F600.md"}, r"holds '\U0001F600' .*from params\['file_name'\]"),
])
def test_reset_params_are_checked_against_the_tasks_schema(change, message):
    """Before: a 1,000,000-character goal (outside observation_space) was accepted, a wrong type failed later
    inside the expert (TypeError), unknown keys were ignored."""
    env = VoyagerEnv(observation_mode="elements", noise="none")
    good = _params(env)
    with pytest.raises(ValueError, match=message):
        env.reset(seed=0, options={"task": "MarkorCreateNote", "params": {**good, **change}})
    with pytest.raises(RuntimeError, match="finished episode"):  # the refused reset started nothing
        env.step('{"action_type": "wait"}')
    obs, _ = env.reset(seed=0, options={"task": "MarkorCreateNote", "params": good})
    assert obs in env.observation_space


def test_reset_params_missing_a_key_name_it():
    """Before: a bare KeyError from deep inside the task."""
    env = VoyagerEnv(observation_mode="elements", noise="none")
    good = _params(env)
    del good["text"]
    with pytest.raises(ValueError, match=r"params lacks required key\(s\) \['text'\] for task MarkorCreate"):
        env.reset(seed=0, options={"task": "MarkorCreateNote", "params": good})


def test_nested_params_are_checked_too():
    env = VoyagerEnv(observation_mode="elements", noise="none")
    good = _params(env, "ExpenseDeleteSingle")
    rows = [dict(r) for r in good["row_objects"]]
    rows[0]["amount"] = "12.50"
    with pytest.raises(ValueError, match=r"params\['row_objects'\]\[0\]\['amount'\]='12.50': expected int"):
        env.reset(seed=0, options={"task": "ExpenseDeleteSingle", "params": {**good, "row_objects": rows}})


def test_every_generated_and_androidworld_params_fit_their_schemas():
    """The schemas are read off the generators (32 draws): the suites' own instances and AndroidWorld's
    params (the committed fixture) must all fit, or training would stop on them."""
    import json
    from pathlib import Path

    from voyager_gym.backends.sim import SimDroidBackend

    b = SimDroidBackend(render_scale=0.1, noise="none")
    for inst in eval_suite(None, 2) + TrainGenerator(b.task_names, seed=7).take(232):
        b.check_params(inst.name, inst.params)
    fixture = json.loads((Path(__file__).parent / "data" / "androidworld_params.json").read_text())
    for name, rows in fixture.items():
        for row in rows if not name.startswith("_") else []:
            b.check_params(name, row["params"])


def test_expert_action_off_its_path_raises_expert_off_path():
    """The env contract (docs/env.md): the expert follows its own path from the reset; from a state other
    actions led to it may have no action, and says so with ExpertOffPath (a LookupError) naming the task.
    Before: a bare LookupError from inside the task."""
    from voyager_gym.backends.base import ExpertOffPath

    env = VoyagerEnv(observation_mode="elements", noise="none")
    env.reset(seed=0, options={"task": "RecipeDeleteDuplicateRecipes3", "instance_seed": 0})
    for _ in range(2):
        env.step(env.expert_action())
    for _ in range(8):
        env.step('{"action_type": "scroll", "direction": "down"}')
    with pytest.raises(ExpertOffPath, match="the expert of RecipeDeleteDuplicateRecipes3 has no action"):
        for _ in range(6):
            env.step(env.expert_action())
    assert issubclass(ExpertOffPath, LookupError)


def test_expert_action_off_path_returns_the_given_value_instead_of_raising():
    """`expert_action(off_path="")` answers "" where the expert has no action (a vector env's `call` over many
    states must not lose the others' answers to one raise); on the expert's own path it is the same action."""
    env = VoyagerEnv(observation_mode="elements", noise="none")
    env.reset(seed=0, options={"task": "RecipeDeleteDuplicateRecipes3", "instance_seed": 0})
    on_path = env.expert_action()
    assert env.expert_action(off_path="") == on_path != ""
    env.step(on_path)
    for _ in range(8):
        env.step('{"action_type": "scroll", "direction": "down"}')
    answers = []
    for _ in range(6):
        text = env.expert_action(off_path="")
        answers.append(text)
        if text == "":
            break
        env.step(text)
    assert answers[-1] == "", answers
