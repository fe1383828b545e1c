"""GRSD on top of GRPO: lambda=0 is GRPO to the bit, the fork term raises the teacher response at the failed
input beyond what GRPO alone does, the fork loss trains alone when GRPO has no step, frames of mixed groups,
and the config section `grsd_grpo` (algo=grsd-grpo)."""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest
import torch

from algos.buffer import Group
from algos.forks.examples import find_forks
from algos.grpo import GRPO, GRPOConfig
from algos.grsd_grpo import GRSDGRPO, GRSDGRPOConfig, cycled_batches
from algos.loop import RunContext
from algos.policies.small import SmallPolicy
from algos.registry import algorithm_names, algorithm_spec, config_section, make_algorithm
from experiments import config as C
from experiments.common import make_algorithm as make_from_config
from tests.algos.test_grsd import detour_groups
from voyager_gym.env import app_names
from voyager_gym.vector import make_vec


@pytest.fixture(autouse=True)
def one_torch_thread():
    torch.set_num_threads(1)


@pytest.fixture(scope="module")
def groups() -> list[Group]:
    """Three groups (one per task) of the expert's success and a rollout that goes home at step 2: one fork
    each, at (failed step 2, teacher step 2)."""
    return detour_groups()


def rescored(groups: list[Group], policy: SmallPolicy) -> list[Group]:
    """A copy of `groups` whose behaviour log-probs are `policy`'s (what its act would have recorded)."""
    out = copy.deepcopy(groups)
    steps = [s for g in out for t in g.trajectories for s in t.steps]
    lp = policy.log_probs([s.policy_input() for s in steps], [s.response for s in steps]).detach()
    for s, x in zip(steps, lp.tolist(), strict=True):
        s.logprob = x
    return out


def weights(policy: SmallPolicy) -> list[torch.Tensor]:
    return [p.detach().clone() for p in policy.trainable_parameters()]


def fork_logprobs(policy: SmallPolicy, groups: list[Group]) -> torch.Tensor:
    samples = [f.sample for f in find_forks(groups, "robust")]
    return policy.log_probs([x for x, _ in samples], [r for _, r in samples]).detach()


GRPO_KW = {"lr": 1e-3, "epochs": 2, "minibatch_size": 8}


def test_fork_coef_zero_is_grpo_to_the_bit(groups):
    ref = SmallPolicy(app_names(), seed=0)
    gs = rescored(groups, ref)
    start = weights(ref)
    m_grpo = GRPO(GRPOConfig(**GRPO_KW)).update(ref, gs, iteration=1, seed=3)
    pol = SmallPolicy(app_names(), seed=0)
    m = GRSDGRPO(GRSDGRPOConfig(**GRPO_KW, fork_coef=0.0)).update(pol, gs, iteration=1, seed=3)
    assert not all(torch.equal(a, b) for a, b in zip(start, weights(ref), strict=True))  # GRPO moved
    assert all(torch.equal(a, b) for a, b in zip(weights(ref), weights(pol), strict=True))
    for k, v in m_grpo.items():  # GRPO's own metrics are GRPO's
        assert m[k] == v or (math.isnan(v) and math.isnan(m[k])), k
    assert m["grsd/forks"] == 3 and m["grsd/mixed_groups"] == 3  # found and logged, not trained on
    assert m["train/fork_samples"] == 0 and m["train/fork_steps"] == 0 and math.isnan(m["losses/fork"])


def test_the_fork_term_raises_the_teacher_response_at_the_failed_input(groups):
    base = SmallPolicy(app_names(), seed=0)
    gs = rescored(groups, base)
    before = fork_logprobs(base, gs)
    arms = {}
    for coef in (0.0, 1.0):
        pol = SmallPolicy(app_names(), seed=0)
        m = GRSDGRPO(GRSDGRPOConfig(**GRPO_KW, fork_coef=coef, fork_minibatch=2)).update(pol, gs, 1, seed=0)
        arms[coef] = (fork_logprobs(pol, gs), m)
    after, m = arms[1.0]
    assert (after > before + 0.5).all(), (before, after)
    assert (after > arms[0.0][0] + 0.2).all(), (arms[0.0][0], after)  # beyond what GRPO alone does there
    n_steps = GRPO_KW["epochs"] * math.ceil(m["train/pg_steps"] / GRPO_KW["minibatch_size"])
    assert m["grsd/forks"] == 3 and m["train/fork_samples"] == 3 and m["train/fork_steps"] == n_steps
    assert m["losses/fork"] > 0 and m["train/pg_steps"] > 0
    assert m["losses/total"] != arms[0.0][1]["losses/total"]  # the fork term is in the loss


def test_without_grpo_steps_the_fork_loss_trains_alone(groups):
    """Invalid steps can tie a success with a failure (R = 1 - 1 and 0): no signal, no GRPO step, but the
    group still has both outcomes and its fork."""
    pol = SmallPolicy(app_names(), seed=0)
    gs = rescored(groups, pol)
    for g in gs:
        g.successes[0].steps[0].valid = False
    cfg = GRSDGRPOConfig(**GRPO_KW, invalid_penalty=1.0, fork_minibatch=2)
    before = fork_logprobs(pol, gs)
    m = GRSDGRPO(cfg).update(pol, gs, iteration=1, seed=0)
    assert m["train/pg_steps"] == 0 and m["grsd/forks"] == 3
    assert m["train/fork_steps"] == cfg.epochs * 2  # epochs passes over 3 samples, 2 at a time
    assert m["losses/fork"] > 0 and (fork_logprobs(pol, gs) > before + 0.1).all()
    # GRPO itself leaves the policy as it was on these groups
    still = SmallPolicy(app_names(), seed=0)
    w0 = weights(still)
    GRPO(GRPOConfig(**GRPO_KW, invalid_penalty=1.0)).update(still, gs, iteration=1, seed=0)
    assert all(torch.equal(a, b) for a, b in zip(w0, weights(still), strict=True))


def test_cycled_batches_see_every_sample_equally_often():
    it = cycled_batches(5, 2, np.random.default_rng(0))
    drawn = np.concatenate([next(it) for _ in range(9)])  # three shuffles of 5: [2, 2, 1] each
    assert np.bincount(drawn, minlength=5).tolist() == [3] * 5
    again = cycled_batches(5, 2, np.random.default_rng(0))
    assert np.array_equal(np.concatenate([next(again) for _ in range(9)]), drawn)  # seeded
    with pytest.raises(ValueError, match="n=0"):
        next(cycled_batches(0, 2, np.random.default_rng(0)))


def test_frames_of_mixed_groups_as_grsd_keeps_them():
    envs = make_vec(1, "sync", observation_mode="elements")
    try:
        algo = GRSDGRPO(GRSDGRPOConfig())
        assert algo.needs_pixels
        with pytest.raises(ValueError, match="grsd-grpo compares screenshots.*render_scale"):
            algo.rollout_config(envs, 0, False)
        algo.setup(RunContext(replay_env={"observation_mode": "full", "render_scale": 0.25}))
        pol = SmallPolicy(app_names(), seed=0)
        cfg = algo.rollout_config(envs, 0, False, pol)
        assert cfg.keep_frames and cfg.frames_of == "mixed" and cfg.replay_frames == algo.replay_env
        assert algo.rollout_config(envs, 0, False).frames_of == "all"  # no policy named: keep them all
    finally:
        envs.close()


# -- registration and config --------------------------------------------------------------------------------
def test_registered_with_its_config_section():
    assert "grsd-grpo" in algorithm_names()
    spec = algorithm_spec("grsd-grpo")
    assert spec.cls is GRSDGRPO and spec.config is GRSDGRPOConfig and spec.section == "grsd_grpo"
    assert config_section("grsd-grpo") == "grsd_grpo" and config_section("grpo") == "grpo"
    assert isinstance(make_algorithm("grsd-grpo"), GRSDGRPO)


def test_config_section_parses_and_builds_the_algorithm():
    cfg = C.parse(["algo=grsd-grpo", "grsd_grpo.fork_coef=0.5", "grsd_grpo.fork_mode=faithful"],
                  C.TrainConfig)
    algo = make_from_config(cfg)
    assert isinstance(algo, GRSDGRPO) and algo.cfg.fork_coef == 0.5 and algo.cfg.fork_mode == "faithful"
    assert C.run_config(cfg)["grsd_grpo"]["fork_coef"] == 0.5 and "grsd" not in C.run_config(cfg)
    comp = C.parse(["algo=grsd-grpo,grpo", "grsd_grpo.fork_coef=0.5"], C.CompareConfig, "compare")
    assert comp.algo == ["grsd-grpo", "grpo"] and comp.grsd_grpo.instances_per_iter == 77  # as grsd and grpo
    assert comp.grsd_grpo.eval_every == 2 and comp.grsd_grpo.fork_coef == 0.5
    smoke = C.parse(["preset=smoke"], C.TrainConfig)
    assert smoke.grsd_grpo.iterations == 1 and smoke.grsd_grpo.group_size == 4


@pytest.mark.parametrize(("override", "message"), [
    ("grsd_grpo.fork_mode=exact", "grsd_grpo.fork_mode='exact': expected one of faithful, robust"),
    ("grsd_grpo.fork_coef=-1", "grsd_grpo.fork_coef=-1.0: expected"),
    ("grsd_grpo.fork_minibatch=0", "grsd_grpo.fork_minibatch=0: expected"),
])
def test_bad_values_are_errors_naming_them(override, message):
    with pytest.raises(SystemExit, match=message.replace("(", r"\(")):
        C.parse([override], C.TrainConfig)
    with pytest.raises(ValueError, match="fork_mode='oracle'"):
        GRSDGRPOConfig(fork_mode="oracle")
