"""FixedObsWrapper and TrainInstances: both env checkers, mask correctness, decoding round trips."""

import re
import warnings

import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from stable_baselines3.common.env_checker import check_env as sb3_check_env

from voyager_gym.env import VoyagerEnv
from voyager_gym.suites import eval_seeds
from voyager_gym.wrappers import FixedObsWrapper, TrainInstances, text_candidates, word_bucket

SIMPLE = [
    "SystemWifiTurnOn",
    "SystemBluetoothTurnOff",
    "SystemBrightnessMax",
    "SystemBrightnessMin",
    "OpenAppTaskEval",
    "CameraTakePhoto",
]
# Tasks whose screens have text fields, long lists, sliders and typed goals.
VARIED = [*SIMPLE, "SimpleSmsSend", "ContactsAddContact", "MarkorCreateNote", "ExpenseDeleteSingle"]


pytestmark = pytest.mark.filterwarnings("ignore:.*different from the unwrapped version")


def wrapped(tasks=None, **kw):
    env = VoyagerEnv(observation_mode="elements", noise="default")
    if tasks is not None:
        env = TrainInstances(env, tasks)
    return FixedObsWrapper(env, **kw)


def sample_masked(env, rng):
    """One action drawn uniformly within each dimension's mask block."""
    mask, out, off = env.action_masks(), [], 0
    for k in env.nvec:
        out.append(int(rng.choice(np.flatnonzero(mask[off : off + k]))))
        off += k
    return np.array(out)


def test_gymnasium_and_sb3_checkers_pass():
    env = wrapped(SIMPLE)
    check_env(env, skip_render_check=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        sb3_check_env(env, warn=True, skip_render_check=True)
    sb3 = [str(w.message) for w in caught if "stable_baselines3" in w.filename]
    assert sb3 == [], sb3  # no "unconventional shape" or other SB3 advice


def test_checkers_pass_with_a_screenshot():
    env = FixedObsWrapper(TrainInstances(VoyagerEnv(render_scale=0.05), SIMPLE), screen=(48, 36))
    check_env(env, skip_render_check=True)
    sb3_check_env(env, warn=True, skip_render_check=True)
    obs, _ = env.reset(seed=0)
    assert obs["screen"].shape == (48, 36, 1) and obs["screen"].dtype == np.uint8
    assert obs["screen"].std() > 0  # a real picture, not a blank buffer
    rgb = FixedObsWrapper(VoyagerEnv(render_scale=0.05), screen=(40, 40), grayscale=False)
    assert rgb.reset(seed=0, options={"task": "SystemWifiTurnOn"})[0]["screen"].shape == (40, 40, 3)


def test_screen_without_pixels_is_rejected():
    with pytest.raises(ValueError, match="observation_mode='full'"):
        FixedObsWrapper(VoyagerEnv(observation_mode="elements"), screen=(48, 36))


def test_masked_random_actions_are_never_invalid():
    env = wrapped(VARIED, max_elements=32)
    rng = np.random.default_rng(0)
    steps = 0
    for ep in range(40):
        env.reset(seed=ep)
        done = False
        while not done:
            _, _, term, trunc, info = env.step(sample_masked(env, rng))
            assert info["invalid_action"] is None, (
                info["task"],
                info["decoded_action"],
                info["invalid_action"],
            )
            done, steps = term or trunc, steps + 1
    assert steps > 150


def test_an_unmasked_element_index_is_invalid_on_the_inner_env():
    env = wrapped()
    env.reset(seed=0, options={"task": "SystemWifiTurnOn"})
    n = len(env.unwrapped.elements)
    mask = env.action_masks()
    el_block = mask[env.nvec[0] : env.nvec[0] + env.nvec[1]]
    assert el_block[:n].all() and not el_block[n:].any()
    click = np.zeros(len(env.nvec), np.int64)
    click[1] = n  # one past the last element: masked out, and the phone rejects it
    _, _, _, _, info = env.step(click)
    assert info["invalid_action"] is not None and "out of range" in info["invalid_action"]


def test_mask_layout_and_truncated_elements():
    env = wrapped(max_elements=5)
    obs, _ = env.reset(seed=0, options={"task": "SystemWifiTurnOn"})
    assert len(env.unwrapped.elements) > 5
    mask = env.action_masks()
    assert mask.dtype == bool and mask.shape == (int(env.nvec.sum()),)
    assert np.array_equal(obs["action_mask"], mask.astype(np.int8))
    blocks = np.split(mask, np.cumsum(env.nvec)[:-1])
    types = dict(zip(env.action_types, blocks[0], strict=True))
    assert not types["input_text"]  # "Turn wifi on." has nothing to type
    assert types["click"] and types["status"] and types["open_app"]
    assert blocks[1].sum() == 5  # only the observed slots can be targeted
    assert blocks[5].sum() == 1  # no text candidates: slot 0 stays on so the block is never empty
    env.reset(seed=0, options={"task": "SimpleSmsSend"})
    blocks = np.split(env.action_masks(), np.cumsum(env.nvec)[:-1])
    assert blocks[0][env.action_types.index("input_text")]
    assert blocks[5].sum() == len(env.text_options) > 1


def test_decode_examples():
    env = wrapped()
    env.reset(seed=0, options={"task": "SimpleSmsSend"})
    t = env.action_types.index
    assert env.decode([t("click"), 3, 0, 0, 0, 0]).to_dict() == {"action_type": "click", "index": 3}
    assert env.decode([t("status"), 9, 2, 1, 4, 3]).to_dict() == {
        "action_type": "status",
        "goal_status": "complete",
    }
    app = env.decode([t("open_app"), 0, 0, 0, env.app_names.index("Settings"), 0])
    assert app.to_dict() == {"action_type": "open_app", "app_name": "Settings"}
    typed = env.decode([t("input_text"), 2, 0, 0, 0, 1])
    assert typed.index == 2 and typed.text == env.text_options[1] and typed.clear_text
    b = env.unwrapped.elements[1].bbox_pixels
    end = env.decode([t("click"), 1, 0, 2, 0, 0])
    assert end.index is None and b.x_min < end.x < b.x_max and end.x > b.center[0]
    with pytest.raises(ValueError, match="entries"):
        env.decode([0, 1])


def test_decoding_round_trips():
    env = wrapped(VARIED)
    rng = np.random.default_rng(1)
    checked = 0
    for ep in range(12):
        env.reset(seed=ep)
        for _ in range(6):
            x = sample_masked(env, rng)
            act = env.decode(x)
            canon = env.encode(act)
            assert canon is not None, act
            assert env.decode(canon) == act  # same action, unused fields zeroed
            assert np.array_equal(env.encode(env.decode(canon)), canon)
            checked += 1
            _, _, term, trunc, _ = env.step(x)
            if term or trunc:
                break
    assert checked > 40


@pytest.mark.parametrize("task", SIMPLE)
def test_expert_solves_simple_tasks_through_the_multidiscrete_space(task):
    env = wrapped()
    env.reset(seed=3, options={"task": task})
    for _ in range(20):
        x = env.encode(env.unwrapped.expert_action())
        assert x is not None
        blocks = np.split(env.action_masks(), np.cumsum(env.nvec)[:-1])
        assert all(b[v] for b, v in zip(blocks, x, strict=True))  # the expert's action is masked in
        _, reward, term, trunc, info = env.step(x)
        if term or trunc:
            break
    assert term and reward == 1.0 and info["is_success"]


def test_observation_features():
    env = wrapped()
    obs, _ = env.reset(seed=0, options={"task": "OpenAppTaskEval"})
    els = obs["elements"].reshape(env.max_elements, env.n_features)
    n = len(env.unwrapped.elements)
    assert els[:n, 0].all() and not els[n:].any()  # presence, zero padding
    labels = [e.label.lower() for e in env.unwrapped.elements]
    hit = labels.index(next(lb for lb in labels if lb and lb in env.unwrapped.goal.lower()))
    assert els[hit, 6 + 8] == 1.0  # label-in-goal flag on the app the goal names
    assert els[:n, 6 + 8].sum() == 1
    words = {w.lower() for w in re.findall(r"\w+", env.unwrapped.goal)}
    assert obs["goal"].sum() == len({word_bucket(w, env.goal_buckets) for w in words}) > 5
    assert obs["last_action"][-1] == 1.0 and obs["step_frac"][0] == 0.0
    obs, *_ = env.step([env.action_types.index("navigate_back"), 0, 0, 0, 0, 0])
    assert obs["last_action"][env.action_types.index("navigate_back")] == 1.0 and obs["step_frac"][0] == 0.1


def test_text_candidates():
    assert text_candidates("Turn wifi on.", 8) == []
    c = text_candidates(
        "Send a text message using Simple SMS Messenger to +16597910719 with message: Time flies.", 8
    )
    assert "Time flies." in c and "+16597910719" in c
    assert text_candidates('Create a playlist titled "Road Trips" now', 8)[0] == "Road Trips"
    assert len(text_candidates("a: b c d e f g h i j k l m n o p 1 2 3 4 5", 3)) == 3


def test_determinism():
    a, b = wrapped(SIMPLE), wrapped(SIMPLE)
    rng_a, rng_b = np.random.default_rng(5), np.random.default_rng(5)
    oa, _ = a.reset(seed=7)
    ob, _ = b.reset(seed=7)
    for _ in range(30):
        assert all(np.array_equal(oa[k], ob[k]) for k in oa)
        oa, ra, ta, tra, _ = a.step(sample_masked(a, rng_a))
        ob, rb, tb, trb, _ = b.step(sample_masked(b, rng_b))
        assert (ra, ta, tra) == (rb, tb, trb)
        if ta or tra:
            oa, _ = a.reset()
            ob, _ = b.reset()


def test_train_instances_never_draw_eval_seeds():
    env = TrainInstances(VoyagerEnv(observation_mode="elements"), ["SystemWifiTurnOn", "OpenAppTaskEval"])
    drawn = []
    inner_reset = env.env.reset

    def spy(**kw):
        drawn.append(kw["options"])
        return inner_reset(**kw)

    env.env.reset = spy
    env.reset(seed=0)
    first = drawn[-1]["instance_seed"]
    # Declare the first draw an eval seed: the same seed must now skip it.
    env.excluded = env.excluded | {first}
    env.reset(seed=0)
    assert drawn[-1]["instance_seed"] != first and drawn[-1]["task"] == drawn[0]["task"]
    for _ in range(30):
        env.reset()
    seeds = {o["instance_seed"] for o in drawn}
    assert not seeds & eval_seeds(env.tasks, 16)
    assert {o["task"] for o in drawn} == set(env.tasks)
    env.reset(options={"task": "CameraTakePhoto", "instance_seed": 1})  # explicit options pass through
    assert drawn[-1] == {"task": "CameraTakePhoto", "instance_seed": 1}
    with pytest.raises(ValueError, match="unknown task"):
        TrainInstances(VoyagerEnv(observation_mode="elements"), ["SystemWifiTurnOnn"])
