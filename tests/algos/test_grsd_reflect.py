"""Group-Reflective SD (algo=grsd-reflect): the modulation keeps the verifier's sign and zeros and is GRPO to
the bit at strength 0; the teacher is the behaviour policy without guidance and takes no gradient; guidance
that names a failed turn's action as the mistake moves weight onto that turn, and shuffled labels remove it;
the credit AUC; an LM policy end to end; the config section `grsd_reflect`."""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest
import torch

from algos.buffer import Group
from algos.grpo import GRPO, GRPOConfig, grpo_advantages
from algos.grsd_reflect import (
    GRSDReflect,
    GRSDReflectConfig,
    credit_auc,
    guided_teacher_logprobs,
    standardised_gaps,
    structured_guidance,
    structured_reflections,
    tilted_teacher_logprobs,
    true_fork_steps,
    turn_weights,
)
from algos.loop import RunContext
from algos.policies.small import SmallPolicy
from algos.registry import algorithm_spec, make_algorithm
from algos.rollout import RolloutConfig, collect
from experiments import config as C
from tests.algos.test_grsd import detour_groups
from tests.algos.test_grsd_grpo import rescored, weights
from voyager_gym.env import app_names
from voyager_gym.suites import TrainGenerator
from voyager_gym.vector import make_vec

GRPO_KW = {"lr": 1e-3, "epochs": 2, "minibatch_size": 8}
TASKS = ["SystemWifiTurnOn", "SystemBluetoothTurnOff"]


@pytest.fixture(autouse=True)
def one_torch_thread():
    torch.set_num_threads(1)


@pytest.fixture(scope="module")
def groups() -> list[Group]:
    """Per task: two expert successes and two failures that go home at step 2 and then say complete."""
    return detour_groups(TASKS, detours={2: 2, 3: 2})


@pytest.fixture(scope="module")
def policy_groups(groups) -> tuple[SmallPolicy, list[Group]]:
    pol = SmallPolicy(app_names(), seed=0)
    return pol, rescored(groups, pol)


def exact(**kw) -> GRSDReflectConfig:
    return GRSDReflectConfig(**GRPO_KW, screens="exact", **kw)


def failed_weights(algo: GRSDReflect, policy: SmallPolicy, gs: list[Group]) -> dict[str, np.ndarray]:
    """traj_id -> the per-turn weights A_t / A of each failed rollout, as the update would train on."""
    with algo.snapshot(policy):
        steps, _ = algo.advantages(gs)
    adv, _ = grpo_advantages(gs)
    out: dict[str, list[float]] = {}
    for s, a in steps:
        if adv[s.traj_id] < 0:
            out.setdefault(s.traj_id, []).append(a / adv[s.traj_id])
    return {k: np.array(v) for k, v in out.items()}


# -- the modulation -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("modulation,strength", [("exp", 1.0), ("exp", 5.0), ("tanh", 0.9)])
def test_weights_keep_the_sign_and_the_zeros(modulation, strength):
    rng = np.random.default_rng(0)
    cfg = GRSDReflectConfig(modulation=modulation, strength=strength)
    adv = [1.3, -0.7, 0.0, -2.0]
    gaps = [rng.normal(0, 3, size=n) for n in (5, 1, 4, 7)]
    for a, z in zip(adv, standardised_gaps(adv, gaps, cfg.gap_scale_min), strict=True):
        w = turn_weights(z, cfg)
        assert (w > 0).all() and len(w) == len(z)
        at = a * w
        assert (np.sign(at) == np.sign(a)).all()  # 0 stays 0, a sign never flips
        assert np.isclose(w.mean(), 1.0)  # renormalised over the trajectory
    z = standardised_gaps([-1.0], [np.array([0.0, -2.0, 0.0])], 0.5)[0]
    assert z[1] > 0 > z[0]  # a failed turn the teacher disfavours: more blame
    assert not turn_weights(z, cfg)[1] == pytest.approx(1.0)


@pytest.mark.parametrize("modulation", ["exp", "tanh"])
def test_strength_zero_gives_weights_of_exactly_one(modulation):
    z = np.random.default_rng(1).normal(0, 10, size=9)
    w = turn_weights(z, GRSDReflectConfig(modulation=modulation, strength=0.0))
    assert w.tolist() == [1.0] * 9


def test_neutral_strength_is_grpo_to_the_bit(policy_groups):
    pol0, gs = policy_groups
    ref = copy.deepcopy(pol0)
    start = weights(ref)
    m_grpo = GRPO(GRPOConfig(**GRPO_KW)).update(ref, gs, iteration=1, seed=3)
    pol = copy.deepcopy(pol0)
    m = GRSDReflect(exact(strength=0.0)).update(pol, gs, iteration=1, seed=3)
    assert not all(torch.equal(a, b) for a, b in zip(start, weights(ref), strict=True))  # GRPO moved
    assert all(torch.equal(a, b) for a, b in zip(weights(ref), weights(pol), strict=True))
    for k, v in m_grpo.items():
        assert m[k] == v or (math.isnan(v) and math.isnan(m[k])), k
    assert m["grsd_reflect/guided_groups"] == 2 and m["grsd_reflect/teacher_steps"] > 0  # guided, not used
    assert m["grsd_reflect/credit_auc"] == 0.5  # equal weights: GRPO's 0.5 by construction


# -- the teacher --------------------------------------------------------------------------------------------
def test_teacher_without_guidance_is_the_behaviour_policy():
    """Real small-policy rollouts: the teacher's log-probs with no guidance are those recorded at act time."""
    pol = SmallPolicy(app_names(), seed=0)
    envs = make_vec(4, "sync", observation_mode="elements")
    try:
        gs = collect(pol, envs, TrainGenerator(TASKS, seed=0).take(2), RolloutConfig(group_size=4, seed=0))
    finally:
        envs.close()
    trajs = [t for g in gs for t in g.trajectories]
    refls = structured_reflections(trajs, "exact")
    lp = tilted_teacher_logprobs(pol, trajs, refls, {}, tilt=2.0)
    behaviour = [np.array([s.logprob for s in t.steps]) for t in trajs]
    assert sum(len(x) for x in lp) > 8
    for a, b in zip(lp, behaviour, strict=True):
        np.testing.assert_allclose(a, b, atol=1e-4)
    # and guidance moves it: favouring every action taken raises each turn's log-prob (by up to tilt)
    guide: dict = {}
    for r in refls:
        for c, k in zip(r.classes, r.keys, strict=True):
            guide.setdefault(c, {})[k] = 1.0
    tilted = np.concatenate(tilted_teacher_logprobs(pol, trajs, refls, guide, tilt=2.0))
    flat = np.concatenate(behaviour)
    assert (tilted >= flat - 1e-4).all() and (tilted <= flat + 2.0 + 1e-4).all()
    assert (tilted > flat + 0.1).any()


def test_the_snapshot_takes_no_gradient(policy_groups):
    """Every teacher pass runs without autograd on the iteration's start weights, before the first step."""
    pol0, gs = policy_groups
    pol = copy.deepcopy(pol0)
    start = weights(pol)
    calls: list[tuple[bool, bool]] = []
    inner = pol.evaluate_actions

    def spy(*args, **kwargs):
        calls.append((torch.is_grad_enabled(),
                      all(torch.equal(a, b) for a, b in zip(start, weights(pol), strict=True))))
        return inner(*args, **kwargs)

    pol.evaluate_actions = spy
    m = GRSDReflect(exact()).update(pol, gs, iteration=1, seed=0)
    no_grad = [same for grad, same in calls if not grad]
    assert no_grad and all(no_grad)  # the teacher's passes: no autograd, start weights
    assert any(grad for grad, _ in calls)  # the training passes
    assert not all(torch.equal(a, b) for a, b in zip(start, weights(pol), strict=True))
    # the update's teacher gaps are those of an untouched copy of the start weights
    algo = GRSDReflect(exact())
    with algo.snapshot(copy.deepcopy(pol0)):
        again = algo.advantages(gs)[1]
    assert again["grsd_reflect/gap_abs"] == pytest.approx(m["grsd_reflect/gap_abs"], rel=1e-6)


# -- guidance moves credit onto the mistake ----------------------------------------------------------------
def test_guidance_naming_the_mistake_moves_weight_onto_that_turn(policy_groups):
    pol, gs = policy_groups
    for g in gs:
        assert [len(f) for f in true_fork_steps(g).values()] == [1, 1]  # step 2, SimDroid's ground truth
        (c2,) = {r.classes[2] for r in structured_reflections(g.failures, "exact")}
        guide = structured_guidance(structured_reflections(g.trajectories, "exact"))
        assert min(guide[c2].values()) == -1.0  # going home there: the failures' move, never a success's
    w = failed_weights(GRSDReflect(exact()), pol, gs)
    assert len(w) == 4
    for x in w.values():
        assert x[2] > 1.0 and x[2] > x[0] and x[2] > x[1], x
    algo = GRSDReflect(exact())
    with algo.snapshot(pol):
        _, metrics = algo.advantages(gs)
    assert metrics["grsd_reflect/credit_auc"] > 0.6 and metrics["grsd_reflect/credit_rollouts"] == 4


def test_shuffled_labels_remove_the_effect(policy_groups):
    """Each label given to one expert and one detour: the contrast is empty, every weight is GRPO's."""
    pol, gs = policy_groups
    shuffled = copy.deepcopy(gs)
    for g in shuffled:
        for t, label in zip(g.trajectories, (True, False, True, False), strict=True):
            t.success = label  # the verifier's scores (hence A) unchanged
        assert structured_guidance(structured_reflections(g.trajectories, "exact")) == {}
    w = failed_weights(GRSDReflect(exact()), pol, shuffled)
    assert w and all(x.tolist() == [1.0] * len(x) for x in w.values())


def test_credit_auc_pools_pairs_within_rollouts():
    rows = [(np.array([1.0, 3.0, 1.0]), {1}), (np.array([2.0, 1.0]), {1}), (np.array([1.0, 1.0]), set())]
    auc, lo, hi, n = credit_auc(rows, seed=0)
    assert n == 2 and auc == pytest.approx(2 / 3) and lo <= auc <= hi
    assert credit_auc([(np.ones(4), {0, 2})])[0] == 0.5
    assert math.isnan(credit_auc([])[0])


# -- LM policies: text reflections, guidance and teacher --------------------------------------------------
@pytest.mark.slow
def test_text_reflection_end_to_end_with_a_tiny_lm(groups):
    from algos.policies.hf import HFPolicy
    from algos.policies.tiny import build_tiny_causal_lm, build_tiny_tokenizer

    tok = build_tiny_tokenizer()
    model = build_tiny_causal_lm(tok, seed=0)
    # a random tiny model writes only newlines greedily: forbid whitespace-only tokens so it writes words
    model.generation_config.suppress_tokens = [i for i in range(len(tok)) if not tok.decode([i]).strip()]
    pol = HFPolicy(model, tok, max_new_tokens=8)
    gs = rescored(groups[:1], pol)
    trajs = gs[0].trajectories
    empty = guided_teacher_logprobs(pol, trajs, "")
    for a, t in zip(empty, trajs, strict=True):
        np.testing.assert_allclose(a, [s.logprob for s in t.steps], atol=1e-4)
    written: list[str] = []
    inner = pol.generate_text

    def spy(prompts, system="", max_new_tokens=None):
        out = inner(prompts, system, max_new_tokens)
        written.extend(out)
        return out

    pol.generate_text = spy
    cfg = GRSDReflectConfig(**GRPO_KW, reflection_tokens=6, guidance_tokens=6)
    algo = make_algorithm("grsd-reflect", cfg)
    assert algo.reflector(pol) == "text"
    start = weights(pol)
    m = algo.update(pol, gs, iteration=1, seed=0)
    assert len(written) == 4 + 1 and all(w.strip() for w in written)  # 4 reflections, 1 guidance
    assert m["grsd_reflect/guided_groups"] == 1 and m["grsd_reflect/teacher_steps"] == 18
    assert m["grsd_reflect/gap_abs"] > 0 and m["grsd_reflect/weight_std"] > 0
    assert not all(torch.equal(a, b) for a, b in zip(start, weights(pol), strict=True))


# -- registration, config and frames ------------------------------------------------------------------------
def test_registered_with_its_config_section():
    spec = algorithm_spec("grsd-reflect")
    assert spec.cls is GRSDReflect and spec.config is GRSDReflectConfig and spec.section == "grsd_reflect"
    cfg = C.parse(["algo=grsd-reflect", "grsd_reflect.modulation=tanh", "grsd_reflect.strength=0.5"],
                  C.TrainConfig)
    assert cfg.grsd_reflect.modulation == "tanh" and "grsd" not in C.run_config(cfg)
    comp = C.parse(["algo=grsd-reflect,grpo"], C.CompareConfig, "compare")
    assert comp.grsd_reflect.instances_per_iter == 77 and comp.grsd_reflect.eval_every == 2  # as grpo's
    smoke = C.parse(["algo=grsd-reflect", "preset=smoke"], C.CompareConfig, "compare")
    assert smoke.grsd_reflect.iterations == 1 and smoke.grsd_reflect.group_size == 4


@pytest.mark.parametrize("override,message", [
    ("grsd_reflect.modulation=linear", "grsd_reflect.modulation='linear': expected one of exp, tanh"),
    ("grsd_reflect.strength=-1", "grsd_reflect.strength=-1.0: expected a finite value >= 0"),
    ("grsd_reflect.reflect=words", "grsd_reflect.reflect='words': expected one of auto, structured, text"),
    ("grsd_reflect.max_weight=0.5", "grsd_reflect.max_weight=0.5: expected a finite value >= 1"),
    ("grsd_reflect.guidance_prompt='{goal}'", "grsd_reflect.guidance_prompt has fields"),
])
def test_bad_values_are_named(override, message):
    with pytest.raises(SystemExit, match=message.replace("(", r"\(").replace("[", r"\[")):
        C.parse(["algo=grsd-reflect", override], C.TrainConfig)
    with pytest.raises(ValueError, match=r"strength=1.0: expected a value in \[0, 1\) with modulation=tanh"):
        GRSDReflectConfig(modulation="tanh", strength=1.0)


def test_structured_reflection_with_robust_screens_keeps_frames_of_mixed_groups():
    envs = make_vec(1, "sync", observation_mode="elements")
    try:
        algo = GRSDReflect(GRSDReflectConfig())
        assert algo.needs_pixels
        with pytest.raises(ValueError, match="grsd-reflect compares screenshots"):
            algo.rollout_config(envs, 0, False, SmallPolicy(app_names(), seed=0))
        algo.setup(RunContext(replay_env={"observation_mode": "full", "render_scale": 0.25}))
        cfg = algo.rollout_config(envs, 0, False, SmallPolicy(app_names(), seed=0))
        assert cfg.keep_frames and cfg.frames_of == "mixed"
        assert not GRSDReflect(exact()).needs_pixels
        assert not GRSDReflect(exact()).rollout_config(envs, 0, False).keep_frames
        with pytest.raises(ValueError, match="reflect='text' needs a policy that writes text"):
            GRSDReflect(GRSDReflectConfig(reflect="text")).reflector(SmallPolicy(app_names(), seed=0))
    finally:
        envs.close()
