"""PPO: GAE over turns and the clipped value loss against hand-computed numbers, exact path entropies, the HF
value head, updates that move policy and value the right way, and training end to end."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import pytest
import torch

from algos.pg import clipped_value_loss, gae
from algos.policies.small import SmallPolicy
from algos.ppo import PPO, PPOConfig, ppo_targets
from algos.prompt import PolicyInput, render_response
from tests.algos.test_grpo import BAD, GOOD, contrast_group, dummy, make_group, make_traj
from voyager_gym.actions import DIRECTIONS, GOAL_STATUSES, Action
from voyager_gym.env import app_names

TASKS = "SystemWifiTurnOn,OpenAppTaskEval"


# -- GAE and targets --------------------------------------------------------------------------------------
def test_gae_matches_hand_computed_values():
    adv, ret = gae([0.0, 0.0, 1.0], [0.5, 0.6, 0.7], gamma=0.9, lam=0.8)
    # deltas: 0.9*0.6-0.5 = 0.04, 0.9*0.7-0.6 = 0.03, 1-0.7 = 0.3 (nothing after the last step)
    a2 = 0.3
    a1 = 0.03 + 0.72 * a2
    a0 = 0.04 + 0.72 * a1
    assert adv.tolist() == pytest.approx([a0, a1, a2])
    assert ret.tolist() == pytest.approx([a0 + 0.5, a1 + 0.6, 1.0])
    adv, ret = gae([0.0, 0.0, 1.0], [0.5, 0.6, 0.7], gamma=1.0, lam=1.0)  # Monte Carlo: R - V
    assert adv.tolist() == pytest.approx([0.5, 0.4, 0.3]) and ret.tolist() == pytest.approx([1.0, 1.0, 1.0])
    adv, _ = gae([0.0, 0.0, 1.0], [0.5, 0.6, 0.7], gamma=0.9, lam=0.0)  # one-step TD errors
    assert adv.tolist() == pytest.approx([0.04, 0.03, 0.3])
    # step budget exhausted: terminal with reward 0, no bootstrap from the last value
    adv, ret = gae([0.0, 0.0], [0.2, 0.3], gamma=1.0, lam=1.0)
    assert adv.tolist() == pytest.approx([-0.2, -0.3]) and ret.tolist() == pytest.approx([0.0, 0.0])
    with pytest.raises(ValueError, match="same length"):
        gae([0.0, 1.0], [0.1], 1.0, 1.0)


def test_ppo_targets_skip_errored_and_charge_invalid_steps():
    pairs = [(dummy(), "r")] * 3
    ok = make_traj("g", 0, pairs, 1.0, invalid=(1,))
    trunc = make_traj("g", 1, pairs[:2], 0.0, status=False)  # ran out of steps
    err = make_traj("g", 2, pairs, 0.0, errored=True)
    g = make_group("g", [ok, trunc, err])
    values = {id(s): v for t, vs in ((ok, [0.1, 0.2, 0.3]), (trunc, [0.4, 0.5]), (err, [9.0] * 3))
              for s, v in zip(t.steps, vs, strict=True)}
    steps, adv, ret = ppo_targets([g], values, gamma=1.0, lam=1.0, invalid_penalty=0.1)
    assert [s.traj_id for s in steps] == ["g-r0"] * 3 + ["g-r1"] * 2
    # ok: rewards [0, -0.1, 1] -> returns [0.9, 0.9, 1.0]; trunc: rewards 0 -> returns 0
    assert ret.tolist() == pytest.approx([0.9, 0.9, 1.0, 0.0, 0.0])
    assert adv.tolist() == pytest.approx([0.8, 0.7, 0.7, -0.4, -0.5])


def test_clipped_value_loss_on_hand_set_values():
    v = torch.tensor([1.0, 0.6, 0.9], requires_grad=True)
    old = torch.tensor([0.5, 0.5, 0.5])
    ret = torch.tensor([0.8, 1.0, 1.0])
    loss = clipped_value_loss(v, old, ret, clip=0.2)
    # 0.5 max((v-R)^2, (old + clip(v-old) - R)^2)
    assert loss.tolist() == pytest.approx([0.5 * 0.04, 0.5 * 0.16, 0.5 * 0.09])
    loss.sum().backward()
    assert v.grad.tolist() == pytest.approx([0.2, -0.4, 0.0])  # the clipped branch has no gradient
    assert clipped_value_loss(v, old, ret, clip=0.0).tolist() == pytest.approx([0.02, 0.08, 0.005])


# -- entropy ----------------------------------------------------------------------------------------------
def test_small_policy_path_entropy_averages_to_the_exact_entropy():
    """On a screen without elements the whole action distribution can be enumerated (answers and app names
    are then goal spans): the probabilities sum to 1, and the mean of each action's path entropy under them
    is the exact entropy."""
    pol = SmallPolicy(app_names(), seed=0)
    x = PolicyInput(goal="Turn wifi on.", elements=[], history=['{"action_type": "wait"}'])
    acts = [Action(t, direction=d) for t in ("scroll", "swipe") for d in DIRECTIONS]
    acts += [Action(t) for t in ("navigate_home", "navigate_back", "keyboard_enter", "wait")]
    acts += [Action("open_app", app_name=a) for a in pol.app_names]
    acts += [Action("status", goal_status=s) for s in GOAL_STATUSES]
    g = pol.featurizer.goal(x.goal)  # answers and app names copied from the goal: every span
    spans = sorted({g.span_text(s, e) for s in range(len(g.ids)) for e in range(s, len(g.ids))})
    acts += [Action("answer", text=t) for t in spans]
    acts += [Action("open_app", app_name=t) for t in spans]
    responses = [render_response(a) for a in acts]
    ev = pol.evaluate_actions([x] * len(acts), responses, entropy=True)
    p = ev.logprob.detach().exp()
    assert float(p.sum()) == pytest.approx(1.0, abs=1e-5)
    exact = float(-(p * ev.logprob.detach()).sum())
    assert float((p * ev.entropy.detach()).sum()) == pytest.approx(exact, rel=1e-5)
    assert ev.entropy.requires_grad and (ev.entropy >= 0).all()


# -- updates on a real policy -----------------------------------------------------------------------------
def test_ppo_update_raises_the_good_response_and_fits_the_value(wifi_screens):
    pol = SmallPolicy(app_names(), seed=0)
    x = wifi_screens[0]
    group = contrast_group(pol, x)
    for t in group.trajectories:
        t.steps[0].value = float(pol.values([x]).detach()[0])  # recorded at act time
    before = pol.log_probs([x, x], [GOOD, BAD]).detach()
    v0 = float(pol.values([x]).detach()[0])
    m = PPO(PPOConfig(lr=1e-3, epochs=4, minibatch_size=4, ent_coef=0.01)).update(pol, [group], 1, 0)
    after = pol.log_probs([x, x], [GOOD, BAD]).detach()
    v1 = float(pol.values([x]).detach()[0])
    assert after[0] > before[0] + 0.1 and after[1] < before[1] - 0.1
    assert abs(v1 - 0.5) < abs(v0 - 0.5) - 0.05  # the mean return on this screen is 0.5
    assert m["train/pg_steps"] == 4 and m["charts/return_mean"] == pytest.approx(0.5)
    # the fresh value head says 0, so the two failures (return 0) carry no advantage: only the successes
    assert v0 == 0.0 and m["train/nonzero_adv_steps"] == 2 and m["train/nonzero_adv_frac"] == 0.5
    assert m["losses/value"] > 0 and m["losses/entropy"] > 0 and 0 <= m["charts/clip_frac"] <= 1


@pytest.mark.parametrize("kind", ["small", "hf"])
def test_critic_warmup_fits_only_the_value_head(wifi_screens, kind):
    if kind == "small":
        pol = SmallPolicy(app_names(), seed=0)
    else:
        from algos.policies.hf import HFPolicy
        from algos.policies.tiny import build_tiny_causal_lm, build_tiny_tokenizer

        tok = build_tiny_tokenizer()
        pol = HFPolicy(build_tiny_causal_lm(tok, seed=0), tok, max_new_tokens=8)
    xs = list(wifi_screens)
    group = contrast_group(pol, xs[0])  # two successes and two failures on one screen: return-to-go 0.5
    head = {id(p) for p in pol.value_head_parameters()}
    trunk = [p.detach().clone() for p in pol.trainable_parameters() if id(p) not in head]
    lp = pol.log_probs([xs[0], xs[0]], [GOOD, BAD]).detach()
    cfg = PPOConfig(critic_warmup=1, warmup_epochs=200, minibatch_size=4)
    m = PPO(cfg).update(pol, [group], 1, 0)
    # the policy did not move, the value head did: to the mean return on this screen
    assert all(torch.equal(a, p) for a, p in zip(trunk, [p for p in pol.trainable_parameters()
                                                          if id(p) not in head], strict=True))
    assert torch.equal(pol.log_probs([xs[0], xs[0]], [GOOD, BAD]).detach(), lp)
    assert m["train/pg_steps"] == 0 and m["train/critic_warmup_steps"] == 4
    assert m["losses/value_before"] == pytest.approx(0.5)  # a fresh head says 0 to returns of 0 and 1
    assert float(pol.values([xs[0]]).detach()[0]) == pytest.approx(0.5, abs=0.05)
    assert torch.allclose(pol.value_from_features(pol.value_features(xs)), pol.values(xs).detach(), atol=1e-5)
    # after the warm-up, the same iteration index is past it: a normal PPO update moves the policy
    PPO(dataclasses.replace(cfg, lr=1e-3)).update(pol, [group], 2, 0)
    assert not torch.equal(pol.log_probs([xs[0], xs[0]], [GOOD, BAD]).detach(), lp)


def test_hf_value_head_is_consistent_saved_and_created_fresh(wifi_screens, tmp_path):
    from algos.policies.hf import VALUE_HEAD_FILE, HFPolicy
    from algos.policies.tiny import build_tiny_causal_lm, build_tiny_tokenizer, save_tiny

    tok = build_tiny_tokenizer()
    pol = HFPolicy(build_tiny_causal_lm(tok, seed=0), tok, max_new_tokens=8)
    xs = list(wifi_screens)
    assert torch.equal(pol.values(xs).detach(), torch.zeros(2))  # a fresh head predicts 0
    x = xs[0]
    group = contrast_group(pol, x)
    before = pol.log_probs([x, x], [GOOD, BAD]).detach()
    # lr 1e-3: at 3e-3 the few whole-response steps overshoot for some tiny models (3 of 4 seeds)
    m = PPO(PPOConfig(lr=1e-3, epochs=3, minibatch_size=4)).update(pol, [group], 1, 0)
    after = pol.log_probs([x, x], [GOOD, BAD]).detach()
    assert m["charts/value_mean"] == 0.0  # computed before the update, since act records no value
    assert after[0] > before[0] and after[1] < before[1]
    v = pol.values(xs).detach()
    assert 0.05 < float(v[0]) < 1.0  # moved toward the mean return 0.5
    # the value of the last prompt token does not depend on padding or on the response that follows
    ev = pol.evaluate_actions(xs, [GOOD, BAD], values=True, entropy=True)
    assert torch.allclose(ev.value.detach(), v, atol=1e-5)
    assert torch.allclose(pol.values(xs[1:]).detach(), v[1:], atol=1e-5)
    # entropy: sum over response tokens of the full-vocabulary entropy, recomputed here without padding
    ids_p = pol.encode_prompts([x])["input_ids"]
    ids_r = pol.tokenizer(GOOD + pol.eot, add_special_tokens=False, return_tensors="pt")["input_ids"]
    with torch.no_grad():
        logits = pol.model(input_ids=torch.cat([ids_p, ids_r], 1)).logits[0, ids_p.shape[1] - 1 : -1]
    h = float(-(logits.log_softmax(-1).exp() * logits.log_softmax(-1)).sum())
    assert float(ev.entropy.detach()[0]) == pytest.approx(h, rel=1e-4)
    # saved with the weights; a checkpoint without a head gets a fresh one
    pol.save(tmp_path / "p")
    assert (tmp_path / "p" / VALUE_HEAD_FILE).exists()
    assert torch.allclose(HFPolicy.load(tmp_path / "p").values(xs).detach(), v, atol=1e-5)
    bare = HFPolicy.load(save_tiny(tmp_path / "bare"))
    assert torch.equal(bare.values(xs).detach(), torch.zeros(2))


# -- end to end -------------------------------------------------------------------------------------------
@pytest.mark.slow
def test_ppo_trains_end_to_end(tmp_path):
    from experiments.train import main

    out = tmp_path / "run"
    main(["algo=ppo", f"tasks={TASKS}", "rft.iterations=1", "rft.instances_per_iter=4", "rft.group_size=4",
          "ppo.iterations=2", "ppo.instances_per_iter=4", "ppo.group_size=4", "eval_n_per_task=2",
          "env.num_envs=4", "base.demos_per_task=2", "base.epochs=6", "wandb=disabled", "progress=false",
          f"out_dir={out}", f"cache_dir={tmp_path / 'cache'}"])
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [r["iteration"] for r in rows] == [0, 1, 2]
    for r in rows[1:]:
        assert r["algo"] == "ppo" and r["train/pg_steps"] > 0
        assert math.isfinite(r["losses/value"]) and math.isfinite(r["charts/approx_kl"])
    assert rows[1]["charts/value_mean"] == 0.0 and rows[2]["charts/value_mean"] != 0.0  # the head learned
    start = SmallPolicy.load(out / "checkpoints" / "it_1" / "policy")
    assert isinstance(start, SmallPolicy) and Path(out / "checkpoints" / "it_2" / "policy").exists()
