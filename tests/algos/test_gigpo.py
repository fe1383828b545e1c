"""GiGPO: two-level advantages against hand-computed numbers on hand-made groups (exact screen keys and robust
screenshot matching giving the same anchors), GRPO exactly where rollouts share no screen, an update that
learns from a group GRPO cannot learn from, config errors, and training end to end."""

from __future__ import annotations

import math

import numpy as np
import pytest

from algos.buffer import Group
from algos.gigpo import GiGPO, GiGPOConfig, anchor_classes, discounted_returns, gigpo_advantages
from algos.grpo import GRPO, GRPOConfig
from algos.loop import RunContext
from algos.policies.small import SmallPolicy
from algos.prompt import render_response
from tests.algos.test_forks import screen
from tests.algos.test_grpo import BAD, GOOD, dummy, make_group, make_traj
from voyager_gym.actions import Action
from voyager_gym.env import app_names

TASKS = "SystemWifiTurnOn,OpenAppTaskEval"
STATE_SEED = {"A": 11, "B": 12, "C": 13, "D": 14, "E": 15, "F": 16}  # synthetic screens of hand-made states


def keyed_traj(gid: str, k: int, keys: str, score: float, pixels: bool = False, **kw):
    """A trajectory visiting the screens named by `keys` (one letter a step), scored at its last step. With
    `pixels`, each step carries a synthetic screenshot of its state, its status bar (clock) redrawn per step
    so that no two screenshots are byte-equal; else only the screen key."""
    t = make_traj(gid, k, [(dummy(), "r")] * len(keys), score, **kw)
    for n, (s, key) in enumerate(zip(t.steps, keys, strict=True)):
        s.screen_key = key
        if pixels:
            img = screen(STATE_SEED[key])
            img[4:20, 200:250] = (37 * (k * 10 + n)) % 200  # the clock: inside the masked status bar
            s.frame = img
    return t


def paper_group(pixels: bool = False, keys: bool = True) -> Group:
    """tau0: A B C (success), tau1: A B B C (success, a loop on B), tau2: A D (failure)."""
    trajs = [keyed_traj("g", 0, "ABC", 1.0, pixels), keyed_traj("g", 1, "ABBC", 1.0, pixels),
             keyed_traj("g", 2, "AD", 0.0, pixels)]
    if not keys:
        for t in trajs:
            for s in t.steps:
                s.screen_key = ""
    return make_group("g", trajs)


def by_step(rows) -> dict[tuple[str, int], tuple[float, float]]:
    return {(s.traj_id, s.t): (a_e, a_s) for s, a_e, a_s in rows}


def flat(d: dict[tuple[str, int], tuple[float, float]]) -> dict[tuple[str, int, str], float]:
    """{(trajectory, step, 'E' | 'S'): A^E | A^S}: a flat mapping pytest.approx compares."""
    return {(*k, level): v for k, pair in d.items() for level, v in zip("ES", pair, strict=True)}


# -- returns and advantages, by hand ------------------------------------------------------------------------
def test_discounted_returns():
    assert discounted_returns([0, 0, 1], 0.5).tolist() == [0.25, 0.5, 1.0]
    assert discounted_returns([1, 0, 2], 1.0).tolist() == [3.0, 2.0, 2.0]
    assert discounted_returns([], 0.95).tolist() == []


# hand-computed with gamma = 0.5, mean-norm (F_norm = 1): returns tau0 [.25 .5 1], tau1 [.125 .25 .5 1],
# tau2 [0 0]; episode rewards [1 1 0] (mean 2/3); anchor classes A {.25 .125 0} (mean .125),
# B {.5 .25 .5} (mean 5/12), C {1 1}, D {0}
MEAN_NORM = {("g-r0", 0): (1 / 3, 0.125), ("g-r0", 1): (1 / 3, 1 / 12), ("g-r0", 2): (1 / 3, 0.0),
             ("g-r1", 0): (1 / 3, 0.0), ("g-r1", 1): (1 / 3, -1 / 6), ("g-r1", 2): (1 / 3, 1 / 12),
             ("g-r1", 3): (1 / 3, 0.0), ("g-r2", 0): (-2 / 3, -0.125), ("g-r2", 1): (-2 / 3, 0.0)}


def test_exact_anchors_give_the_hand_computed_advantages():
    cfg = GiGPOConfig(gamma=0.5, anchor="exact", eps=0.0)
    rows, found = gigpo_advantages([paper_group()], cfg)
    assert flat(by_step(rows)) == pytest.approx(flat(MEAN_NORM))
    assert (found.groups, found.shared, found.across, found.shared_steps) == (1, 3, 3, 8)  # A, B, C
    # std-norm: A^E = +-(R - 2/3) / sqrt(2/9); class A {.25 .125 0}: +-1/sqrt(2/3); B {.5 .25 .5}: 1/sqrt(2)
    # and -sqrt(2)
    rows, _ = gigpo_advantages([paper_group()], GiGPOConfig(gamma=0.5, anchor="exact", eps=0.0,
                                                             scale_std=True))
    got = by_step(rows)
    e, a, b = 1 / 3 / math.sqrt(2 / 9), 1 / math.sqrt(2 / 3), 1 / math.sqrt(2)
    assert got[("g-r0", 0)] == pytest.approx((e, a)) and got[("g-r2", 0)] == pytest.approx((-2 * e, -a))
    assert got[("g-r1", 0)] == pytest.approx((e, 0.0)) and got[("g-r2", 1)] == pytest.approx((-2 * e, 0.0))
    assert got[("g-r1", 1)] == pytest.approx((e, -2 * b)) and got[("g-r1", 2)] == pytest.approx((e, b))
    # the combined advantage the loss trains on: A^E + w A^S
    steps, m = GiGPO(GiGPOConfig(gamma=0.5, anchor="exact", eps=0.0, step_weight=2.0)).advantages(
        [paper_group()])
    assert {(s.traj_id, s.t): a for s, a in steps} == pytest.approx(
        {k: e_ + 2.0 * s_ for k, (e_, s_) in MEAN_NORM.items()})
    assert m["train/pg_steps"] == 9 and m["train/nonzero_adv_steps"] == 8  # tau1 step 1: 1/3 + 2 (-1/6) = 0
    assert m["gigpo/anchor_groups"] == 3 and m["gigpo/steps_in_anchor_groups"] == 8
    assert m["gigpo/steps_in_anchor_groups_frac"] == pytest.approx(8 / 9)
    assert m["gigpo/step_signal_steps"] == 5 and m["gigpo/anchor_same_key_rate"] == 1.0


def test_robust_anchors_find_the_same_states_in_screenshots():
    """The same group with screenshots whose clocks all differ and no screen keys: the robust screen
    comparison groups the steps as the ground-truth keys do, so the advantages are the hand-computed ones."""
    group = paper_group(pixels=True, keys=False)
    assert all(not np.array_equal(a.frame, b.frame) for t in group.trajectories
               for a, b in zip(t.steps, t.steps[1:], strict=False))
    trajs = group.trajectories
    assert anchor_classes(trajs, "robust") == anchor_classes(paper_group().trajectories, "exact") == [
        [0, 1, 2], [0, 1, 1, 2], [0, 3]]
    rows, found = gigpo_advantages([group], GiGPOConfig(gamma=0.5, anchor="robust", eps=0.0))
    assert flat(by_step(rows)) == pytest.approx(flat(MEAN_NORM))
    assert (found.shared, found.shared_steps) == (3, 8) and found.key_pairs == []  # no keys to check against
    # with keys, the robust matches are checked against them: all agree
    _, found = gigpo_advantages([paper_group(pixels=True)], GiGPOConfig(gamma=0.5, anchor="robust"))
    assert found.key_pairs == [True] * 5
    # the fork detector's oracle mode (screen keys) is the exact matching
    from algos.forks import ForkConfig, screen_classes

    assert screen_classes(paper_group().trajectories, ForkConfig(oracle=True)) == [[0, 1, 2], [0, 1, 1, 2],
                                                                                   [0, 3]]


@pytest.mark.parametrize("scale_std", [False, True])
@pytest.mark.parametrize("anchor", ["exact", "robust"])
def test_rollouts_that_share_no_screen_get_grpos_advantages(anchor, scale_std):
    trajs = [keyed_traj("n", 0, "AB", 1.0, pixels=True), keyed_traj("n", 1, "CDE", 0.0, pixels=True),
             keyed_traj("n", 2, "F", 0.5, pixels=True)]
    group = make_group("n", trajs)
    steps, m = GiGPO(GiGPOConfig(anchor=anchor, scale_std=scale_std)).advantages([group])
    want, _ = GRPO(GRPOConfig(scale_std=scale_std)).advantages([group])
    assert [(s.traj_id, s.t) for s, _ in steps] == [(s.traj_id, s.t) for s, _ in want]
    assert [a for _, a in steps] == pytest.approx([a for _, a in want])
    assert m["gigpo/anchor_groups"] == 0 and m["gigpo/step_signal_steps"] == 0


def test_a_group_of_successes_prefers_the_shorter_path_where_grpo_sees_nothing():
    g = make_group("s", [keyed_traj("s", 0, "AC", 1.0), keyed_traj("s", 1, "ABC", 1.0)])
    rows, _ = gigpo_advantages([g], GiGPOConfig(anchor="exact", eps=0.0))  # gamma 0.95
    got = by_step(rows)
    d = (0.95 - 0.95**2) / 2  # class A: returns .95 (C next) and .9025 (a detour through B)
    want = {("s-r0", 0): (0.0, d), ("s-r0", 1): (0.0, 0.0), ("s-r1", 0): (0.0, -d), ("s-r1", 1): (0.0, 0.0),
            ("s-r1", 2): (0.0, 0.0)}
    assert flat(got) == pytest.approx(flat(want))
    assert GRPO(GRPOConfig()).advantages([g])[0] == []
    # step_weight 0: the episode level alone, Dr. GRPO (GRPO without the std), here no signal at all
    assert GiGPO(GiGPOConfig(anchor="exact", step_weight=0.0)).advantages([g])[0] == []
    steps, _ = GiGPO(GiGPOConfig(anchor="exact", step_weight=0.0)).advantages([paper_group()])
    want, _ = GRPO(GRPOConfig(scale_std=False)).advantages([paper_group()])
    assert [(s.traj_id, s.t, a) for s, a in steps] == [(s.traj_id, s.t, a) for s, a in want]


def test_flat_and_errored_groups():
    """All-failure groups give nothing and match no anchors (so screenshots are not needed there); errored
    rollouts take no part; a step without a screen key is an error in exact mode, naming it."""
    flat = make_group("f", [keyed_traj("f", k, "AB", 0.0) for k in range(3)])
    for s in flat.trajectories[0].steps:
        s.screen_key = ""  # never read: the returns do not vary
    rows, found = gigpo_advantages([flat], GiGPOConfig(anchor="exact"))
    assert rows == [] and found.groups == 0
    err = make_group("e", [keyed_traj("e", 0, "AB", 1.0), keyed_traj("e", 1, "AC", 0.0),
                           keyed_traj("e", 2, "AB", 1.0, errored=True)])
    rows, _ = gigpo_advantages([err], GiGPOConfig(anchor="exact", eps=0.0))
    assert {s.traj_id for s, _, _ in rows} == {"e-r0", "e-r1"}
    assert by_step(rows)[("e-r0", 0)] == pytest.approx((0.5, 0.475))  # class A: .95 and 0 (errored: out)
    err.trajectories[1].steps[1].screen_key = ""
    with pytest.raises(ValueError, match=r"step t=1 of trajectory 'e-r1' has none .*gigpo.anchor=robust"):
        gigpo_advantages([err], GiGPOConfig(anchor="exact"))


# -- the update ---------------------------------------------------------------------------------------------
def test_update_learns_the_faster_action_from_a_group_of_successes(wifi_screens):
    """Both rollouts succeed (GRPO: no signal). One opens Settings at once, the other first goes home and then
    opens it: on the shared home screen GiGPO raises the direct action and lowers the detour."""
    home, settings = wifi_screens
    pol = SmallPolicy(app_names(), seed=0)
    done = render_response(Action("status", goal_status="complete"))

    def traj(k: int, pairs, keys: str):
        t = make_traj("u", k, pairs, 1.0)
        for s, key in zip(t.steps, keys, strict=True):
            s.screen_key = key
            s.logprob = float(pol.log_probs([s.policy_input()], [s.response]).detach()[0])
        return t

    g = make_group("u", [traj(0, [(home, GOOD), (settings, done)], "HS"),
                         traj(1, [(home, BAD), (home, GOOD), (settings, done)], "HHS")])
    assert GRPO(GRPOConfig()).update(pol, [g], 1, 0)["train/pg_steps"] == 0
    before = pol.log_probs([home, home], [GOOD, BAD]).detach()
    m = GiGPO(GiGPOConfig(anchor="exact", lr=1e-3, epochs=3, minibatch_size=8)).update(pol, [g], 1, 0)
    after = pol.log_probs([home, home], [GOOD, BAD]).detach()
    assert m["train/pg_steps"] == 5 and m["gigpo/step_signal_steps"] == 3
    assert after[0] > before[0] and after[1] < before[1] - 0.05


# -- configuration ------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("override", "message"), [
    ("gigpo.anchor=fuzzy", "gigpo.anchor='fuzzy': expected one of robust, exact"),
    ("gigpo.gamma=1.5", "gigpo.gamma=1.5: expected a finite value in [0, 1]"),
    ("gigpo.step_weight=-1", "gigpo.step_weight=-1.0: expected a finite value >= 0"),
])
def test_config_errors_name_the_bad_value(override, message):
    from experiments.config import TrainConfig, parse

    with pytest.raises(SystemExit, match=message.replace("[", r"\[").replace("]", r"\]")):
        parse(["algo=gigpo", override], TrainConfig)
    cfg = parse(["algo=gigpo", "gigpo.anchor=exact", "gigpo.step_weight=0.5"], TrainConfig)
    assert cfg.gigpo.anchor == "exact" and cfg.gigpo.step_weight == 0.5 and cfg.gigpo.gamma == 0.95


def test_robust_anchors_need_screenshots():
    from voyager_gym.vector import make_vec

    envs = make_vec(2, "sync", observation_mode="elements")
    try:
        algo = GiGPO(GiGPOConfig())
        assert algo.needs_pixels and not GiGPO(GiGPOConfig(anchor="exact")).needs_pixels
        with pytest.raises(ValueError, match="gigpo.anchor=robust compares screenshots"):
            algo.rollout_config(envs, 0, False, SmallPolicy(app_names(), seed=0))
        replay = {"observation_mode": "full", "render_scale": 0.1, "noise": "default"}
        algo.setup(RunContext(replay_env=replay))
        cfg = algo.rollout_config(envs, 0, False, SmallPolicy(app_names(), seed=0))
        assert cfg.keep_frames and cfg.frames_of == "scored" and cfg.replay_frames == algo.replay_env
    finally:
        envs.close()


# -- end to end ---------------------------------------------------------------------------------------------
@pytest.mark.slow
def test_gigpo_trains_end_to_end_and_resumes_exactly(tmp_path):
    """Robust anchors on screenshots rendered by replay (the small policy reads none), on SimDroid; GRPO's
    end-to-end recipe (tasks, budget)."""
    from tests.algos.test_grpo import _train, check_split_run_repeats

    cache = tmp_path / "cache"
    full = _train(tmp_path / "full", cache, ["gigpo.iterations=2"], "gigpo")
    assert [r["iteration"] for r in full] == [0, 1, 2]
    assert all(0.0 <= r["pass_at_1"] <= 1.0 for r in full)
    for r in full[1:]:
        assert r["algo"] == "gigpo" and r["env_steps"] > 0 and "gigpo/step_adv_std" in r
    assert sum(r["train/pg_steps"] for r in full[1:]) > 0
    assert sum(r["gigpo/anchor_groups"] for r in full[1:]) > 0  # rollouts of an instance share screens
    agree = [r["gigpo/anchor_same_key_rate"] for r in full[1:]
             if not math.isnan(r["gigpo/anchor_same_key_rate"])]
    assert agree and min(agree) >= 0.9  # the robust matches are (almost always) truly the same screen
    keys = ("pass_at_1", "env_steps", "losses/policy", "train/pg_steps", "gigpo/anchor_groups")
    check_split_run_repeats(full, tmp_path, cache, "gigpo", keys)
