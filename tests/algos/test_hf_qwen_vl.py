"""HFPolicy on the tiny Qwen3-VL (the paper's model class, built offline) and Qwen2.5-VL with SimDroid
screenshots: prompts with Qwen-VL's vision tokens, act / log_probs / values, fit_sft, GRPO, PPO and GRSD
updates, save/load; and fit_sft's per-sample weights (tiny causal LM)."""

from __future__ import annotations

import dataclasses
import json
import math
import sys
from pathlib import Path

import pytest
import torch

from algos.policies.hf import HFPolicy
from algos.policies.tiny import (
    IMAGE_PAD,
    VISION_END,
    VISION_START,
    build_tiny_causal_lm,
    build_tiny_qwen2_5_vl,
    build_tiny_qwen3_vl,
    expert_samples,
    save_tiny,
)

pytestmark = pytest.mark.slow  # tiny transformers models

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module", autouse=True)
def one_torch_thread():
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


BUILDERS = {"qwen3-vl": build_tiny_qwen3_vl, "qwen2.5-vl": build_tiny_qwen2_5_vl}  # save_tiny's kinds
CLASSES = {"qwen3-vl": "Qwen3VLForConditionalGeneration", "qwen2.5-vl": "Qwen2_5_VLForConditionalGeneration"}
each_qwen_vl = pytest.mark.parametrize("kind", list(BUILDERS))


def qwen_policy(tokenizer, kind: str = "qwen3-vl", **kwargs) -> HFPolicy:
    model, processor = BUILDERS[kind](tokenizer, seed=0)
    return HFPolicy(model, processor, **{"max_new_tokens": 12, **kwargs})


@each_qwen_vl
def test_prompts_carry_one_screenshot_as_qwen_vl_vision_tokens(kind, tokenizer, pixel_samples):
    policy = qwen_policy(tokenizer, kind)
    x = pixel_samples[1][0]
    text = policy.prompt_text(x)
    assert text.count(VISION_START + IMAGE_PAD + VISION_END) == 1 and x.history[0] in text  # history as text
    enc = policy.encode_prompts([x, pixel_samples[0][0]])
    grid = enc["image_grid_thw"].tolist()
    assert grid == [[1, 10, 4]] * 2  # 54x120 -> 32x80 pixels (max 64*64), 8-pixel patches
    pad_id = policy.tokenizer.convert_tokens_to_ids(IMAGE_PAD)
    assert ((enc["input_ids"] == pad_id).sum(1) == 10).all()  # 40 patches merged 2x2 -> 10 image tokens
    assert enc["pixel_values"].shape[0] == 2 * 40
    big = qwen_policy(tokenizer, kind, min_pixels=64 * 64, max_pixels=128 * 128)
    assert big.encode_prompts([x])["image_grid_thw"].tolist() == [[1, 16, 6]]  # 128x48: within the budget
    cropped = qwen_policy(tokenizer, kind, crop_status_bar=True)
    assert cropped.image(x).size == (54, 115) and policy.image(x).size == (54, 120)  # 5 of 120 rows
    with pytest.raises(ValueError, match="min_pixels=5000, max_pixels=4096"):
        qwen_policy(tokenizer, kind, min_pixels=5000)
    model, processor = BUILDERS[kind](tokenizer)
    with pytest.raises(ValueError, match="Qwen-VL image processor"):
        HFPolicy(model, processor.tokenizer, max_pixels=4096)


@each_qwen_vl
def test_act_log_probs_values_and_padding(kind, tokenizer, pixel_samples):
    policy = qwen_policy(tokenizer, kind)
    batch = [x for x, _ in pixel_samples[:4]]
    outs = policy.act(batch)
    assert len(outs) == 4 and all(o.action is None and math.isfinite(o.logprob) for o in outs)
    lp = policy.log_probs(batch, [o.text for o in outs])
    assert lp.requires_grad
    assert torch.allclose(lp.detach(), torch.tensor([o.logprob for o in outs]), atol=1e-3)
    responses = [r for _, r in pixel_samples[:4]]
    with torch.no_grad():
        together = policy.log_probs(batch, responses)
        alone = torch.stack([policy.log_probs([x], [r])[0] for x, r in zip(batch, responses, strict=True)])
        assert torch.allclose(together, alone, atol=1e-3)  # left padding keeps multimodal RoPE positions
        inverted = dataclasses.replace(batch[0], pixels=255 - batch[0].pixels)
        a, b = policy.log_probs([batch[0], inverted], [responses[0]] * 2)
        assert abs(a - b) > 1e-4  # the screenshot reaches the model
        ev = policy.evaluate_actions(batch, responses, values=True, entropy=True)
    assert torch.allclose(ev.logprob, together, atol=1e-4)
    assert torch.equal(ev.value, torch.zeros(4)) and (ev.entropy > 0).all()  # fresh head: V = 0
    assert policy.values(batch).shape == (4,)


@each_qwen_vl
def test_fit_sft_scores_the_completion_and_trains_the_vision_tower(kind, tokenizer, pixel_samples):
    policy = qwen_policy(tokenizer, kind, sft_batch_size=4)
    data = pixel_samples[:4]
    xs, rs = [x for x, _ in data], [r for _, r in data]
    with torch.no_grad():
        before = policy.log_probs(xs, rs)
    vision = [p.detach().clone() for p in policy.model.model.visual.parameters()]
    m = policy.fit_sft(data, epochs=1, lr=1e-3)
    n_tokens = sum(len(policy.tokenizer(r + policy.eot, add_special_tokens=False)["input_ids"]) for r in rs)
    assert m["loss_first"] == pytest.approx(-before.sum().item() / n_tokens, rel=1e-3)  # completion only
    assert any(not torch.equal(a, b) for a, b in zip(vision, policy.model.model.visual.parameters(),
                                                       strict=True))


def scored_group(policy: HFPolicy, x) -> object:
    """A group of 4 one-step rollouts on screen `x`: GOOD scores 1, BAD 0, each with the policy's log-prob."""
    from tests.algos.test_grpo import BAD, GOOD, make_group, make_traj

    trajs = []
    for k, (resp, score) in enumerate([(GOOD, 1.0), (BAD, 0.0), (GOOD, 1.0), (BAD, 0.0)]):
        t = make_traj("w", k, [(x, resp)], score)
        t.steps[0].frame = x.pixels
        t.steps[0].logprob = float(policy.log_probs([x], [resp]).detach()[0])
        trajs.append(t)
    return make_group("w", trajs)


@each_qwen_vl
def test_grpo_ppo_and_grsd_updates(kind, tokenizer, pixel_samples):
    from algos.grpo import GRPO, GRPOConfig
    from algos.grsd import GRSD
    from algos.ppo import PPO, PPOConfig
    from tests.algos.standalone import grsd_alone
    from tests.algos.test_grpo import BAD, GOOD
    from tests.algos.test_grsd import detour_groups

    policy = qwen_policy(tokenizer, kind, sft_batch_size=4)
    x = pixel_samples[0][0]
    group = lambda: scored_group(policy, x)  # noqa: E731
    with torch.no_grad():
        before = policy.log_probs([x, x], [GOOD, BAD])
    m = GRPO(GRPOConfig(lr=1e-3, epochs=2, minibatch_size=4)).update(policy, [group()], 1, 0)
    with torch.no_grad():
        after = policy.log_probs([x, x], [GOOD, BAD])
    assert m["train/pg_steps"] == 4 and after[0] > before[0] and after[1] < before[1]
    m = PPO(PPOConfig(lr=1e-3, epochs=1, minibatch_size=4)).update(policy, [group()], 1, 0)
    assert m["train/pg_steps"] >= 1 and m["losses/value"] > 0
    groups = detour_groups(["SystemWifiTurnOn"], scale=0.05)
    weights = [p.detach().clone() for p in policy.model.parameters()]
    m = GRSD(grsd_alone(epochs=1, lr=1e-3)).update(policy, groups, iteration=1, seed=0)
    assert m["grsd/forks"] == 1 and math.isfinite(m["losses/sft"])  # the fork sample's screenshot trained
    assert any(not torch.equal(a, b) for a, b in zip(weights, policy.model.parameters(), strict=True))


@each_qwen_vl
def test_save_load_round_trip_keeps_weights_settings_and_pixel_budget(kind, tokenizer, pixel_samples,
                                                                      tmp_path):
    policy = qwen_policy(tokenizer, kind, max_pixels=48 * 48, crop_status_bar=True, seed=3)
    xs, rs = [x for x, _ in pixel_samples[:2]], [r for _, r in pixel_samples[:2]]
    policy.save(tmp_path / "p")
    loaded = HFPolicy.load(tmp_path / "p")
    assert type(loaded.model).__name__ == CLASSES[kind] and loaded.use_images
    assert loaded.crop_status_bar and loaded.seed == 3
    assert loaded.processor.image_processor.size["longest_edge"] == 48 * 48
    with torch.no_grad():
        assert torch.equal(policy.log_probs(xs, rs), loaded.log_probs(xs, rs))
    assert loaded.prompt_text(xs[0]) == policy.prompt_text(xs[0])
    bare = HFPolicy.from_pretrained(save_tiny(tmp_path / "tiny", kind=kind))
    assert bare.use_images and bare.processor.image_token == IMAGE_PAD


# -- fit_sft weights (text model: fast, and the loss code is the same for VLM batches) --------------------
@pytest.fixture(scope="module")
def text_samples():
    return expert_samples()[:4]


def trained(tokenizer, data, weights=None, batch=8):
    """One SGD step on `data` in one batch (SGD: the step is the gradient itself; Adam's first step is about
    sign(g), which float noise flips where g is ~0)."""
    policy = HFPolicy(build_tiny_causal_lm(tokenizer, seed=0), tokenizer, sft_batch_size=batch,
                      sft_args={"optim": "sgd"})
    m = policy.fit_sft(data, epochs=1, lr=0.1, seed=0, weights=weights)
    return m, [p.detach().clone() for p in policy.model.parameters()]


def test_an_integer_weight_is_that_many_copies_in_one_batch(tokenizer, text_samples):
    ks = [1, 2, 3, 1]
    repeated = [s for s, k in zip(text_samples, ks, strict=True) for _ in range(k)]
    m_rep, w_rep = trained(tokenizer, repeated)  # TRL's own loss on 7 samples, one batch
    m_w, w_w = trained(tokenizer, text_samples, weights=[float(k) for k in ks])
    assert m_w["loss_first"] == pytest.approx(m_rep["loss_first"], rel=1e-5)
    assert all(torch.allclose(a, b, atol=1e-6) for a, b in zip(w_rep, w_w, strict=True))
    m_1, w_1 = trained(tokenizer, text_samples, weights=[1.0] * 4)  # weight 1 everywhere: TRL's loss
    m_none, w_none = trained(tokenizer, text_samples)
    assert m_1["loss_first"] == pytest.approx(m_none["loss_first"], rel=1e-5)
    assert all(torch.allclose(a, b, atol=1e-6) for a, b in zip(w_1, w_none, strict=True))
    _, w_drop = trained(tokenizer, text_samples, weights=[1.0, 2.0, 3.0, 0.0])  # weight 0: left out
    three = [s for s, k in zip(text_samples[:3], ks[:3], strict=True) for _ in range(k)]
    _, w_three = trained(tokenizer, three)
    assert all(torch.allclose(a, b, atol=1e-6) for a, b in zip(w_drop, w_three, strict=True))


@pytest.mark.parametrize(("weights", "message"), [
    ([1.0, -1.0, 1.0, 1.0], r"weights\[1\]=-1.0: expected a finite number >= 0"),
    ([1.0, float("nan"), 1.0, 1.0], r"weights\[1\]=nan"),
    ([1.0, 1.0], "got 2 weights for 4 samples"),
    ([0.0] * 4, "all 0"),
])
def test_bad_weights_are_named(tokenizer, text_samples, weights, message):
    policy = HFPolicy(build_tiny_causal_lm(tokenizer, seed=0), tokenizer)
    with pytest.raises(ValueError, match=message):
        policy.fit_sft(text_samples, weights=weights)


def test_hf_throughput_benchmark_prints_its_figures_on_cpu(capsys):
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        from hf_throughput import main
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    fig = main(["--batch-sizes", "1,2", "--one-at-a-time", "1", "--max-new-tokens", "8", "--sft-samples", "4",
                "--sft-batch", "4"])
    out = capsys.readouterr().out
    assert json.loads(out.strip().splitlines()[-1]) == fig
    assert fig["image_tokens"] == 10 and fig["image_grid_thw"] == [1, 10, 4]
    for key in ("act_one_at_a_time_per_s", "sft_samples_per_s", "sft_peak_gib"):
        assert fig[key] > 0, (key, fig)
    for b in (1, 2):
        row = fig[f"act_b{b}"]
        assert row["actions_per_s"] > 0 and row["act_vs_one_at_a_time"] > 0 and row["act_vs_generate"] > 0
    assert "sft_error" not in fig and "act batch 2:" in out and "x one at a time" in out
