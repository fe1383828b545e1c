"""HFPolicy on tiny offline models (Qwen2 causal LM, LLaVA-style VLM) with real SimDroid observations."""

from __future__ import annotations

import dataclasses
import math

import pytest
import torch

from algos.policies.hf import HFPolicy
from algos.policies.tiny import (
    build_tiny_causal_lm,
    build_tiny_vlm,
    expert_samples,
    save_tiny,
)
from voyager_gym.actions import parse_action, try_parse_action

pytestmark = pytest.mark.slow  # tiny transformers models


@pytest.fixture(scope="module", autouse=True)
def one_torch_thread():
    """One intra-op thread: on a shared 2-core box two OpenMP threads can spin-wait 10-30x slower."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


@pytest.fixture(scope="module")
def samples():
    """33 (input, expert response) pairs from expert episodes of 5 tasks (elements only)."""
    return expert_samples()


def lm_policy(tokenizer, model_seed: int = 0, **kwargs) -> HFPolicy:
    return HFPolicy(build_tiny_causal_lm(tokenizer, seed=model_seed), tokenizer, **kwargs)


def n_response_tokens(policy: HFPolicy, responses: list[str]) -> int:
    tok = policy.tokenizer
    return sum(len(tok(r + policy.eot, add_special_tokens=False)["input_ids"]) for r in responses)


def test_act_gives_one_output_per_input_and_never_raises(samples, tokenizer):
    policy = lm_policy(tokenizer, max_new_tokens=16)
    batch = [x for x, _ in samples[:6]]
    rng = torch.get_rng_state()
    for greedy in (False, True):
        outs = policy.act(batch, greedy=greedy)
        assert len(outs) == len(batch)
        for o in outs:
            assert isinstance(o.text, str) and math.isfinite(o.logprob) and o.logprob < 0
            assert o.action is None  # random weights print garbage: an invalid action, not an exception
            assert try_parse_action(o.text)[0] is None
            assert o.value is None
    assert policy.act([]) == []
    assert torch.equal(torch.get_rng_state(), rng)  # sampling uses its own seeded stream
    first = [o.text for o in lm_policy(tokenizer, max_new_tokens=16).act(batch)]
    assert first == [o.text for o in lm_policy(tokenizer, max_new_tokens=16).act(batch)]  # seeded sampling


def test_log_probs_are_differentiable_and_match_act(samples, tokenizer):
    policy = lm_policy(tokenizer, max_new_tokens=16)
    batch = [x for x, _ in samples[:6]]
    outs = policy.act(batch)
    lp = policy.log_probs(batch, [o.text for o in outs])
    assert lp.shape == (len(batch),) and lp.requires_grad
    assert torch.allclose(lp.detach(), torch.tensor([o.logprob for o in outs]), atol=1e-3)
    expert = [r for _, r in samples[:6]]
    lp_expert = policy.log_probs(batch, expert)
    lp_expert.sum().backward()
    grad = policy.model.get_input_embeddings().weight.grad
    assert grad is not None and grad.abs().sum() > 0
    one_by_one = torch.stack([policy.log_probs([x], [r])[0] for x, r in zip(batch, expert, strict=True)])
    assert torch.allclose(one_by_one.detach(), lp_expert.detach(), atol=1e-3)  # padding does not leak in
    with pytest.raises(ValueError, match="responses"):
        policy.log_probs(batch, expert[:2])


def test_fit_sft_trains_on_the_scored_tokens_and_lowers_the_loss(samples, tokenizer):
    policy = lm_policy(tokenizer, sft_batch_size=20)
    data = samples[:20]
    batch, responses = [x for x, _ in data], [r for _, r in data]
    with torch.no_grad():
        before = policy.log_probs(batch, responses)
    rng = torch.get_rng_state()
    metrics = policy.fit_sft(data, epochs=3, lr=3e-3, seed=0)
    assert torch.equal(torch.get_rng_state(), rng)  # the Trainer's reseeding does not leak out
    # one batch holds all 20 samples: TRL's first loss is the mean NLL of exactly the tokens log_probs scores
    nll = -before.sum().item() / n_response_tokens(policy, responses)
    assert metrics["loss_first"] == pytest.approx(nll, rel=1e-3)
    assert metrics["samples"] == 20 and metrics["steps"] == 3
    assert metrics["loss"] < metrics["loss_first"]
    with torch.no_grad():
        after = policy.log_probs(batch, responses)
    assert after.sum() > before.sum()


def test_fit_sft_memorises_and_greedy_act_reproduces(samples, tokenizer):
    distinct: dict[str, object] = {}
    for x, r in samples:
        distinct.setdefault(r, x)
    data = [(x, r) for r, x in list(distinct.items())[:5]]
    policy = lm_policy(tokenizer, max_new_tokens=40, max_prompt_tokens=200, sft_batch_size=5)
    metrics = policy.fit_sft(data, epochs=60, lr=1e-2, seed=0)
    assert metrics["loss"] < 0.2 * metrics["loss_first"]
    outs = policy.act([x for x, _ in data], greedy=True)
    hits = [o for o, (_, r) in zip(outs, data, strict=True) if o.text == r]
    assert len(hits) >= 2, [o.text for o in outs]  # 4/5 here; two distinct hits: it reads the prompt
    for o in hits:
        assert o.action == parse_action(o.text)


def test_save_load_round_trip_gives_identical_log_probs(samples, tokenizer, tmp_path):
    policy = lm_policy(tokenizer, model_seed=1, seed=3, max_new_tokens=20, temperature=0.7)
    batch, responses = [x for x, _ in samples[:4]], [r for _, r in samples[:4]]
    policy.save(tmp_path / "p")
    assert (tmp_path / "p" / "model.safetensors").exists()
    loaded = HFPolicy.load(tmp_path / "p")
    assert (loaded.max_new_tokens, loaded.temperature, loaded.seed) == (20, 0.7, 3)
    with torch.no_grad():
        assert torch.equal(policy.log_probs(batch, responses), loaded.log_probs(batch, responses))
    assert policy.prompt_text(batch[0]) == loaded.prompt_text(batch[0])


@pytest.mark.parametrize("kind", ["lm", "vlm"])
def test_save_tiny_loads_like_a_checkpoint(kind, tmp_path):
    policy = HFPolicy.from_pretrained(save_tiny(tmp_path / kind, kind=kind))
    assert policy.use_images == (kind == "vlm")
    expected = "LlavaForConditionalGeneration" if kind == "vlm" else "Qwen2ForCausalLM"
    assert type(policy.model).__name__ == expected


def test_vlm_reads_pixels_acts_and_fits(pixel_samples, tokenizer):
    model, processor = build_tiny_vlm(tokenizer, seed=0)
    policy = HFPolicy(model, processor, max_new_tokens=12)
    assert policy.use_images
    batch, responses = [x for x, _ in pixel_samples[:4]], [r for _, r in pixel_samples[:4]]
    outs = policy.act(batch)
    assert len(outs) == 4 and all(o.action is None for o in outs)
    lp = policy.log_probs(batch, [o.text for o in outs])
    assert torch.allclose(lp.detach(), torch.tensor([o.logprob for o in outs]), atol=1e-3)
    inverted = dataclasses.replace(batch[0], pixels=255 - batch[0].pixels)
    with torch.no_grad():
        a, b = policy.log_probs([batch[0], inverted], [responses[0]] * 2)
    assert abs(a - b) > 1e-4  # the screenshot reaches the model
    vision = [p.detach().clone() for p in model.model.vision_tower.parameters()]
    metrics = policy.fit_sft(pixel_samples[:4], epochs=1, lr=1e-3)
    assert math.isfinite(metrics["loss"]) and metrics["steps"] == 1
    after = list(model.model.vision_tower.parameters())  # TRL fed the images: the vision tower learned
    assert any(not torch.equal(p0, p) for p0, p in zip(vision, after, strict=True))
    with pytest.raises(ValueError, match="pixels is None"):
        policy.act([dataclasses.replace(batch[0], pixels=None)])


def test_long_prompts_are_cut_to_max_prompt_tokens(samples, tokenizer):
    policy = lm_policy(tokenizer, max_prompt_tokens=250)
    x = max((x for x, _ in samples), key=lambda x: len(x.elements))
    text = policy.prompt_text(x)
    assert len(tokenizer(text)["input_ids"]) <= 250
    assert "...(truncated)" in text and f"Goal: {x.goal}" in text and text.endswith("<|im_start|>assistant\n")


def test_bad_arguments_are_named(tokenizer):
    model = build_tiny_causal_lm(tokenizer)
    with pytest.raises(ValueError, match="not a vision-language model"):
        HFPolicy(model, tokenizer, images=True)
    with pytest.raises(ValueError, match="processor=None"):
        HFPolicy(model)
    with pytest.raises(ValueError, match="temperature"):
        HFPolicy(model, tokenizer, temperature=0)
