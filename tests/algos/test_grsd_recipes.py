"""GRSD as UI-Voyager trains it (recipe=paper), its fork set (teachers, pool, greedy weights, oracle labels),
per-sample weights in fit_sft, and the fork-level measurement on hand-made groups whose answers are known."""

from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pytest
import torch

from algos.buffer import Group
from algos.forklevel import action_json, fork_states, measure, paired_bootstrap, reach
from algos.forks.examples import find_forks
from algos.grsd import GRSD
from algos.policies.base import Policy, PolicyOutput
from algos.policies.simple import ExpertPolicy
from algos.prompt import render_response
from algos.rollout import RolloutConfig, collect
from tests.algos.standalone import grsd_alone
from tests.algos.test_grsd import E2E_TASKS, bc_small_policy, detour_groups
from voyager_gym.actions import Action, parse_action
from voyager_gym.suites import TrainGenerator
from voyager_gym.vector import make_vec

TASKS = ["SystemWifiTurnOn", "SystemCopyToClipboard", "ContactsAddContact"]


@pytest.fixture(autouse=True)
def one_torch_thread():
    torch.set_num_threads(1)


class Scripted(ExpertPolicy):
    """The task expert, except: sub-env i of `detours` goes home at step k and then declares the task complete
    (a failure); sub-env i of `stalls` waits once at step k and then follows the expert (a longer success)."""

    def __init__(self, detours: dict[int, int], stalls: dict[int, int]):
        super().__init__()
        self.detours, self.stalls = detours, stalls

    def act(self, batch, greedy=False):
        out = super().act(batch, greedy)
        for i, x in enumerate(batch):
            a = None
            if i in self.detours and x.step >= self.detours[i]:
                home = x.step == self.detours[i]
                a = Action("navigate_home") if home else Action("status", goal_status="complete")
            elif i in self.stalls and x.step == self.stalls[i]:
                a = Action("wait")
            if a is not None:
                out[i] = PolicyOutput(render_response(a), a, 0.0)
        return out


def scripted_groups(detours: dict[int, int], stalls: dict[int, int], tasks=TASKS) -> list[Group]:
    n = max([*detours, *stalls]) + 1
    envs = make_vec(n, "sync", observation_mode="full", render_scale=0.25, noise="none")
    try:
        out = []
        for i, inst in enumerate(TrainGenerator(tasks, seed=0).take(len(tasks))):
            cfg = RolloutConfig(group_size=n, thumb_width=0, keep_frames=True, seed=i)
            out += collect(Scripted(detours, stalls), envs, [inst], cfg)
    finally:
        envs.close()
    return out


@pytest.fixture(scope="module")
def three_way() -> list[Group]:
    """Per task: rollout 0 the expert (the shortest success), 1 waits once at step 2 (a longer success), 2
    goes home at step 2 (a failure)."""
    return scripted_groups({2: 2}, {1: 2})


@pytest.fixture(scope="module")
def groups() -> list[Group]:
    return detour_groups()


@pytest.fixture(scope="module")
def envs():
    e = make_vec(3, "sync", observation_mode="full", render_scale=0.25, noise="none")
    yield e
    e.close()


class Recording(Policy):
    """Records what each fit_sft call is given; acts greedily from a table of (goal, step) -> response."""

    trainable = True

    def __init__(self, table: dict | None = None):
        self.calls: list[tuple[list, list | None]] = []
        self.table = dict(table or {})

    def act(self, batch, greedy=False):
        out = []
        for x in batch:
            text = self.table.get((x.goal, len(x.history)), render_response(Action("wait")))
            out.append(PolicyOutput(text, parse_action(text), 0.0))
        return out

    def fit_sft(self, samples, epochs=1, lr=None, seed=0, weights=None):
        self.calls.append((list(samples), weights))
        return {"loss": 0.5}


# -- the paper's recipe ----------------------------------------------------------------------------------
def test_paper_recipe_alternates_fork_rounds_on_d_alone_with_rft_rounds(groups):
    algo = GRSD(grsd_alone(recipe="paper"))
    pol = Recording()
    m1 = algo.update(pol, groups, iteration=1, seed=0)  # a GRSD round: the fork set D and nothing else
    (samples, weights), = pol.calls
    forks = find_forks(groups, "robust", teacher="shortest")
    assert m1["grsd/round"] == 1 and m1["grsd/rft_samples"] == 0 and m1["grsd/fork_share"] == 1.0
    assert len(samples) == len(forks) == 3 and weights is None
    want = {(f.failed.goal, len(f.steps[0].history), f.steps[1].response) for f in forks}
    # each failed step's own input with its teacher step's response (the loss is on that response alone)
    assert {(x.goal, len(x.history), r) for x, r in samples} == want
    m2 = algo.update(pol, [], iteration=2, seed=0)  # an RFT round: the success pool alone
    samples2, _ = pol.calls[1]
    ok = {s.response for g in groups for t in g.successes for s in t.steps}
    assert m2["grsd/round"] == 2 and m2["grsd/fork_samples"] == 0
    assert {r for _, r in samples2} <= ok
    assert len(samples2) == sum(len(t.steps) for g in groups for t in g.successes)
    # the replay recipe mixes both every iteration, as before
    mixed = GRSD(grsd_alone())
    pol = Recording()
    m = mixed.update(pol, groups, iteration=1, seed=0)
    assert m["grsd/round"] == 0 and m["grsd/fork_samples"] == 3 and m["grsd/rft_samples"] > 0


def test_the_paper_teacher_is_the_shortest_success_and_all_pairs_uses_every_one(three_way):
    for g in three_way:
        shortest, longer, failed = g.trajectories
        assert shortest.success and longer.success and not failed.success
        assert len(longer.steps) == len(shortest.steps) + 1
        paper = GRSD(grsd_alone(recipe="paper"))
        assert paper.teacher == "shortest"
        forks = find_forks([g], "robust", teacher=paper.teacher)
        assert {f.teacher.traj_id for f in forks} == {shortest.traj_id}
        both = find_forks([g], "robust", teacher="all")
        assert {f.teacher.traj_id for f in both} == {shortest.traj_id, longer.traj_id}
        assert {f.failed_step for f in both} == {2}
        (state,) = fork_states(both)  # one failed state, taught two different actions
        assert len(state.teachers) == 2 and action_json(Action("wait")) in state.teachers


def test_a_pooled_fork_is_retired_once_the_greedy_action_is_its_label(groups):
    algo = GRSD(grsd_alone(fork_pool=True, greedy_weight=3.0, recipe="paper", teacher="similar"))
    forks = find_forks(groups, "robust")
    failed_at = {(f.failed.goal, f.failed_step): f.steps[0].response for f in forks}
    pol = Recording(failed_at)  # greedy = the failed action at every fork state: counted and weighted
    m = algo.update(pol, groups, iteration=1, seed=0)
    assert m["grsd/pool_size"] == 3 and m["grsd/pool_retired"] == 0 and m["grsd/greedy_forks"] == 3
    assert pol.calls[0][1] == [3.0] * 3  # a GRSD round: D alone
    m = algo.update(pol, [], iteration=3, seed=1)  # no new forks: the pool alone is trained on again
    assert m["grsd/pool_size"] == 3 and m["grsd/fork_samples"] == 3
    fixed = forks[0]
    pol.table[(fixed.failed.goal, fixed.failed_step)] = fixed.steps[1].response  # the policy now acts it
    m = algo.update(pol, [], iteration=5, seed=2)
    assert m["grsd/pool_size"] == 2 and m["grsd/pool_retired"] == 1 and m["grsd/greedy_forks"] == 2
    assert len(algo.forks) == 2
    pol.table.update({(f.failed.goal, f.failed_step): f.steps[1].response for f in forks})
    assert algo.update(pol, [], iteration=7, seed=3)["grsd/pool_size"] == 0


def test_pool_survives_a_checkpoint(groups, tmp_path):
    algo = GRSD(grsd_alone(fork_pool=True))
    algo.update(Recording(), groups, iteration=1, seed=0)
    for name, obj in algo.state().items():
        obj.save(tmp_path / name)
    again = GRSD(grsd_alone(fork_pool=True))
    again.load_state(tmp_path)
    assert len(again.forks) == 3 and again.last_keys == algo.last_keys and again.last_keys


def test_oracle_labels_are_the_experts_action_at_the_same_states(envs):
    g = scripted_groups({1: 2}, {0: 2})  # the only success waits at step 2: its teacher action is "wait"
    pol = Recording()
    algo = GRSD(grsd_alone(fork_mode="oracle", recipe="paper"))
    algo.bind(envs)
    m = algo.update(pol, g, iteration=1, seed=0)
    (samples, _), = pol.calls
    forks = find_forks(g, "robust", teacher="shortest")
    assert m["grsd/fork_samples"] == len(samples) == len(forks) == 3  # same states, same count
    assert m["train/update_env_steps"] == 3 * 2  # replays to the failed states count as training steps
    for x, response in samples:
        a = parse_action(response)
        assert a.action_type != "wait" and a.action_type != "navigate_home"
        f = next(f for f in forks if f.failed.goal == x.goal)
        expert = next(s for s in f.teacher.steps[3:4])  # after its wait the success follows the expert
        assert action_json(a) == action_json(expert.action)
    teacher = GRSD(grsd_alone(recipe="paper"))
    pol = Recording()
    teacher.update(pol, g, iteration=1, seed=0)
    assert all(parse_action(r).action_type == "wait" for _, r in pol.calls[0][0])


# -- per-sample weights ------------------------------------------------------------------------------------
def test_small_policy_weight_k_equals_the_sample_repeated_k_times():
    from algos.policies.small import SmallPolicy
    from voyager_gym.env import app_names

    envs = make_vec(2, "sync", observation_mode="elements", noise="none")
    try:
        demos = collect(ExpertPolicy(), envs, TrainGenerator(["SystemWifiTurnOn", "ContactsAddContact"],
                                                            seed=0).take(2),
                        RolloutConfig(group_size=1, greedy=True, thumb_width=0, seed=0))
    finally:
        envs.close()
    samples = [(s.policy_input(), s.response) for g in demos for t in g.trajectories for s in t.steps]
    assert 4 <= len(samples) <= 20  # one minibatch either way: repetition and weights see the same batch
    k = [3, 1, 2] + [1] * (len(samples) - 3)
    pol = SmallPolicy(app_names(), seed=0)
    feats = pol.featurize([x for x, _ in samples])
    targets = pol._targets(feats, [r for _, r in samples])

    def grads(idx, w=None):
        pol.model.zero_grad(set_to_none=True)
        loss = pol.sft_loss(feats, targets, idx, w)
        loss.backward()
        return loss.item(), [p.grad.clone() if p.grad is not None else None for p in pol.model.parameters()]

    everyone = list(range(len(samples)))
    lw, gw = grads(everyone, np.array(k, dtype=np.float64))
    lr_, gr = grads([i for i, n in enumerate(k) for _ in range(n)])
    lp, gp = grads(everyone)
    assert lw == pytest.approx(lr_, rel=1e-6) and lw != pytest.approx(lp, rel=1e-3)
    for a, b in zip(gw, gr, strict=True):
        assert (a is None) == (b is None) and (a is None or torch.allclose(a, b, atol=1e-7, rtol=1e-5))
    assert pol.sft_loss(feats, targets, [0, 1], np.zeros(len(samples))).item() == 0.0
    # fit_sft reports the weighted loss: weights [k] and the repetition train on the same first minibatch
    a = SmallPolicy(app_names(), seed=0).fit_sft(samples, epochs=1, seed=0, weights=[float(x) for x in k])
    repeated = [s for s, n in zip(samples, k, strict=True) for _ in range(n)]
    b = SmallPolicy(app_names(), seed=0).fit_sft(repeated, epochs=1, seed=0)
    assert a["loss"] == pytest.approx(b["loss"], rel=1e-5)
    weighted = SmallPolicy(app_names(), seed=0)
    for bad, match in (([1.0], "one weight per sample"), ([-1.0] * len(samples), "-1.0"),
                       ([math.nan] * len(samples), "nan")):
        with pytest.raises(ValueError, match=match):
            weighted.fit_sft(samples, weights=bad)


# -- the fork-level measurement ---------------------------------------------------------------------------
class Table(Recording):
    """A policy that acts from a table keyed by (goal, steps so far): the expert's path of each group's
    success, except that at step 2 it goes home (then gives up), unless fit_sft taught it that state."""

    def __init__(self, groups: list[Group], learns: bool = True):
        super().__init__()
        self.learns = learns
        for g in groups:
            (ok,) = g.successes
            self.table.update({(ok.goal, s.t): s.response for s in ok.steps})
            self.table[(ok.goal, 2)] = render_response(Action("navigate_home"))

    def act(self, batch, greedy=False):
        out = []
        for x in batch:
            if "navigate_home" in " ".join(x.history) and x.step > 2:
                text = render_response(Action("status", goal_status="complete"))
            else:
                text = self.table[(x.goal, len(x.history))]
            out.append(PolicyOutput(text, parse_action(text), 0.0))
        return out

    def fit_sft(self, samples, epochs=1, lr=None, seed=0, weights=None):
        if self.learns:
            self.table.update({(x.goal, len(x.history)): r for x, r in samples})
        return super().fit_sft(samples, epochs, lr, seed, weights)

    def copy(self):
        out = Table([], self.learns)
        out.table = dict(self.table)
        return out


@pytest.mark.parametrize("learns", [True, False])
def test_the_fork_level_measure_sees_exactly_the_fixes_an_update_makes(groups, envs, learns):
    algo = GRSD(grsd_alone(recipe="paper", fork_eval=True, fork_eval_arms=["control", "oracle"],
                           fork_eval_transfer=0))
    algo.bind(envs)
    m = algo.update(Table(groups, learns), groups, iteration=1, seed=0)
    assert m["forklevel/states"] == m["forklevel/reached"] == 3
    assert m["forklevel/greedy_failed"] == 1.0 and m["forklevel/teacher_is_expert"] == 1.0
    assert m["forklevel/before/teacher"] == 0.0 and m["forklevel/before/success"] == 0.0
    # the control trains on no fork (a paper GRSD round without D: no update), so it fixes nothing
    assert m["forklevel/control/fix"] == 0.0 and m["forklevel/control/success"] == 0.0
    fixed = 1.0 if learns else 0.0  # a policy that learns nothing from its update fixes nothing: the measure
    # must tell these apart
    for arm in ("grsd", "oracle"):
        assert m[f"forklevel/{arm}/fix"] == fixed and m[f"forklevel/{arm}/teacher"] == fixed
        assert m[f"forklevel/{arm}/success"] == fixed and m[f"forklevel/{arm}/expert"] == fixed
    rec = m["forklevel/records"]
    assert rec["task"] == [g.task for g in groups] and rec["teacher_is_expert"] == [1, 1, 1]
    assert rec["arms"]["before"] == [[0, 0, 0]] * 3 and rec["arms"]["grsd"] == [[int(fixed)] * 3] * 3
    assert m["forklevel/env_steps"] > 0 and m["train/update_env_steps"] == 0  # measurement, not training


def test_measure_reports_rollout_success_from_the_reached_states(groups, envs):
    states = fork_states(find_forks(groups))
    assert reach(ExpertPolicy(), envs, states) == 3 * 2
    assert all(s.snapshot is not None and s.expert for s in states)
    out, steps = measure(Table(groups), envs, states)
    assert out == [(False, False, False)] * 3 and steps == 3 * 2  # home, then give up
    out, _ = measure(Table(groups), envs, states, rollouts=False)
    assert out == [(False, False, None)] * 3


def test_paired_bootstrap_interval():
    a, b = np.array([1, 1, 1, 0, 1, 1.0]), np.array([0, 1, 0, 0, 0, 1.0])
    mean, lo, hi = paired_bootstrap(a, b, reps=2000, seed=0)
    assert mean == pytest.approx(0.5) and 0.0 <= lo < mean < hi <= 1.0
    assert paired_bootstrap(a, b, reps=2000, seed=0) == (mean, lo, hi)
    assert math.isnan(paired_bootstrap(np.array([np.nan]), np.array([1.0]))[0])


def test_bad_recipe_settings_are_named():
    for kw, match in (({"recipe": "mixed"}, "grsd.recipe='mixed'"),
                      ({"teacher": "best"}, "grsd.teacher='best'"),
                      ({"fork_eval_arms": ["ppo"]}, "'ppo'"), ({"greedy_weight": 0.0}, "greedy_weight=0.0"),
                      ({"fork_mode": "expert"}, "'expert'")):
        with pytest.raises(ValueError, match=match):
            GRSD(grsd_alone(**kw))


def test_small_policy_fork_eval_iteration_runs_every_arm():
    """One fork-eval update of a small policy with every arm (GRPO included, on real log-probs)."""
    envs = make_vec(4, "sync", observation_mode="full", render_scale=0.25, noise="default")
    try:
        policy = bc_small_policy(E2E_TASKS, envs)
        gs = collect(policy, envs, TrainGenerator(E2E_TASKS, seed=0).take(6),
                     RolloutConfig(group_size=4, thumb_width=0, keep_frames=True, seed=0))
        algo = GRSD(grsd_alone(recipe="paper", fork_eval=True, fork_eval_transfer=1, epochs=1))
        algo.bind(envs)
        m = algo.update(policy, gs, iteration=1, seed=0)
    finally:
        envs.close()
    assert m["grsd/forks"] >= 1, "no fork: retune the test's policy"
    for arm in ("before", "grsd", "control", "grpo", "oracle"):
        assert 0.0 <= m[f"forklevel/{arm}/teacher"] <= 1.0 and 0.0 <= m[f"forklevel/{arm}/transfer"] <= 1.0
    assert set(m["forklevel/records"]["arms"]) == {"before", "grsd", "control", "grpo", "oracle"}
    assert m["forklevel/control/teacher"] == m["forklevel/before/teacher"]  # no D, no update


def test_the_fork_level_measurement_leaves_training_unchanged():
    """The same update with and without `fork_eval` gives the same weights: the measurement draws from no
    RNG the training reads (its arms train copies) and takes no training env step."""
    envs = make_vec(4, "sync", observation_mode="full", render_scale=0.25, noise="default")
    try:
        base = bc_small_policy(E2E_TASKS, envs)
        gs = collect(base, envs, TrainGenerator(E2E_TASKS, seed=1).take(6),
                     RolloutConfig(group_size=4, thumb_width=0, keep_frames=True, seed=1))
        weights, metrics = [], []
        for on in (False, True):
            pol = base.copy()
            algo = GRSD(grsd_alone(recipe="paper", fork_eval=on, fork_eval_transfer=1, epochs=1))
            algo.bind(envs)
            torch.manual_seed(5)
            metrics.append(algo.update(pol, gs, iteration=1, seed=3))
            weights.append([p.detach().clone() for p in pol.model.parameters()])
            weights[-1].append(torch.rand(1))  # the global RNG the loop's next draw reads
    finally:
        envs.close()
    assert metrics[1]["grsd/forks"] >= 1 and "forklevel/grsd/fix" in metrics[1]
    assert "forklevel/grsd/fix" not in metrics[0]
    assert metrics[0]["losses/sft"] == metrics[1]["losses/sft"]
    assert all(torch.equal(a, b) for a, b in zip(*weights, strict=True))


def test_fork_eval_until_measures_the_first_iterations_only(groups, envs):
    algo = GRSD(grsd_alone(fork_eval=True, fork_eval_until=1, fork_eval_arms=["control"],
                           fork_eval_transfer=0))
    algo.bind(envs)
    first = algo.update(Table(groups), groups, iteration=1, seed=0)
    later = algo.update(Table(groups), [], iteration=2, seed=1)
    assert first["forklevel/states"] == 3 and "forklevel/states" not in later
    with pytest.raises(ValueError, match="fork_eval_until=-1"):
        GRSD(grsd_alone(fork_eval_until=-1))


def _off_path_snapshot():
    """A SimDroid state from which the expert, restored there, has no action: expert steps mixed with
    scrolls (a seeded walk) until one such state comes up."""
    import random

    from voyager_gym.backends.base import ExpertOffPath
    from voyager_gym.env import VoyagerEnv

    env = VoyagerEnv(observation_mode="full", render_scale=0.25, noise="none")
    probe = VoyagerEnv(observation_mode="full", render_scale=0.25, noise="none")
    rng = random.Random(0)
    try:
        for ep in range(20):
            env.reset(seed=ep, options={"task": "RecipeDeleteDuplicateRecipes3", "instance_seed": ep})
            start = env.snapshot()
            for _ in range(25):
                snap = env.snapshot()
                probe.reset(options={"snapshot": snap})
                try:
                    probe.expert_action()
                except ExpertOffPath:
                    return start, snap
                a = env.expert_action(off_path="")
                if rng.random() < 0.4 or not a:
                    a = json.dumps({"action_type": "scroll", "direction": rng.choice(["down", "up"])})
                if any(env.step(a)[2:4]):
                    break
    finally:
        env.close()
        probe.close()
    raise AssertionError("the walk found no off-path state")


def test_expert_actions_label_an_off_path_state_empty_and_keep_the_others(envs):
    """The oracle's labels (`branch.expert_actions`): a snapshot off the expert's own path gets "" (no label,
    so it is not trained on; before, ExpertOffPath ended the run) and the other snapshots of the same call
    keep the expert's actions."""
    from algos.branch import expert_actions
    from voyager_gym.env import VoyagerEnv

    start, off = _off_path_snapshot()
    env = VoyagerEnv(observation_mode="full", render_scale=0.25, noise="none")
    env.reset(options={"snapshot": start})
    first = env.expert_action()
    env.close()
    out = expert_actions(envs, [start, off, start, start])  # two chunks of the 3 sub-envs
    assert out[1] == "" and out[0] == out[2] == out[3] == first != ""


@pytest.fixture(scope="module")
def small_groups():
    """A small policy cloned from a few demos, its groups of 4 on three tasks (GRSD's rollout config, with
    the frames both GRSD and GRSD-Reflect's robust screens read), and the vector env they ran on."""
    torch.set_num_threads(1)
    envs = make_vec(4, "sync", observation_mode="full", render_scale=0.25, noise="none")
    policy = bc_small_policy(E2E_TASKS, envs)
    algo = GRSD(grsd_alone())
    algo.bind(envs)
    cfg = algo.rollout_config(envs, 0, False, policy)
    groups = collect(policy, envs, TrainGenerator(E2E_TASKS, seed=0).take(6),
                     dataclasses.replace(cfg, group_size=4))
    yield policy, groups, envs
    envs.close()


def test_the_reflect_arm_is_grsd_reflects_update_and_grpos_at_its_neutral_setting(small_groups, monkeypatch):
    """fork_eval_arms=[grpo, reflect]: the reflect arm is GRSD-Reflect's update from the same checkpoint on
    the same groups; at strength 0 (GRPO exactly) its outcomes at every fork state are the grpo arm's."""
    import algos.grsd as grsd_module

    policy, groups, envs = small_groups
    assert any(g.has_both_outcomes for g in groups), "no group had both outcomes: retune bc_small_policy"
    from algos.grsd_reflect import GRSDReflect

    monkeypatch.setattr(grsd_module, "REFLECT_ARM", {"strength": 0.0})
    calls, real = [], GRSDReflect.update

    def spy(self, pol, grps, iteration, seed):
        start = [p.detach().clone() for p in pol.model.parameters()]
        calls.append((self.cfg.strength, grps is groups, start))
        return real(self, pol, grps, iteration, seed)

    monkeypatch.setattr(GRSDReflect, "update", spy)
    algo = GRSD(grsd_alone(fork_eval=True, fork_eval_arms=["grpo", "reflect"], fork_eval_transfer=0))
    algo.bind(envs)
    start = [p.detach().clone() for p in policy.model.parameters()]
    m = algo.update(policy.copy(), groups, iteration=1, seed=0)
    assert len(calls) == 1 and calls[0][:2] == (0.0, True)  # once, on this iteration's groups
    assert all(torch.equal(a, b) for a, b in zip(calls[0][2], start, strict=True))  # from the checkpoint
    assert m["forklevel/states"] >= 1
    arms = m["forklevel/records"]["arms"]
    assert set(arms) == {"before", "grsd", "grpo", "reflect"} and arms["reflect"] == arms["grpo"]
    for key in ("teacher", "fix", "success"):
        a, b = m[f"forklevel/reflect/{key}"], m[f"forklevel/grpo/{key}"]
        assert a == b or (math.isnan(a) and math.isnan(b))
