"""HFPolicy through LoRA adapters (peft, the `lora` extra) on the tiny Qwen-VL models (Qwen3-VL and
Qwen2.5-VL, built offline) with SimDroid screenshots: adapters on the language model only, act = log_probs,
fit_sft / GRPO / PPO updates that leave every base weight bit-identical, save/load and copy, float32 adapters
on a bf16 base; and the errors for missing peft and bad settings."""

from __future__ import annotations

import importlib.util
import sys

import pytest
import torch

from algos.policies.hf import HFPolicy
from algos.policies.tiny import (
    build_tiny_causal_lm,
    build_tiny_qwen2_5_vl,
    build_tiny_qwen3_vl,
    build_tiny_vlm,
)
from tests.algos.test_hf_qwen_vl import one_torch_thread, scored_group  # noqa: F401 (an autouse fixture)

pytestmark = pytest.mark.slow  # tiny transformers models

needs_peft = pytest.mark.skipif(importlib.util.find_spec("peft") is None,
                                reason="peft is not installed (pip install -e '.[lora]')")
BUILDERS = {"qwen3-vl": build_tiny_qwen3_vl, "qwen2.5-vl": build_tiny_qwen2_5_vl}
VISION = ("visual", "vision_tower")  # the vision towers' module names (Qwen-VL, LLaVA)


def policy_of(kind: str, tokenizer, **kwargs) -> HFPolicy:
    model, processor = BUILDERS[kind](tokenizer, seed=0)
    return HFPolicy(model, processor, **{"max_new_tokens": 8, "sft_batch_size": 4, **kwargs})


def split(policy: HFPolicy) -> tuple[dict[str, torch.Tensor], dict[str, torch.Tensor]]:
    """(base weights, adapter weights) of a LoRA policy, detached copies by name."""
    named = {n: p.detach().clone() for n, p in policy.base_model().named_parameters()}
    return ({n: p for n, p in named.items() if "lora_" not in n},
            {n: p for n, p in named.items() if "lora_" in n})


def same_base(policy: HFPolicy, before: dict[str, torch.Tensor]) -> bool:
    now, _ = split(policy)
    return now.keys() == before.keys() and all(torch.equal(now[n], before[n]) for n in before)


@needs_peft
@pytest.mark.parametrize("kind", list(BUILDERS))
def test_lora_adapts_the_language_model_and_fit_sft_trains_only_adapters(kind, tokenizer, pixel_samples):
    data = pixel_samples[:4]
    xs, rs = [x for x, _ in data], [r for _, r in data]
    with torch.no_grad():
        plain = policy_of(kind, tokenizer).log_probs(xs, rs)
    policy = policy_of(kind, tokenizer, lora_r=4, lora_alpha=8)
    base, adapters = split(policy)
    names = {n.split(".lora_")[0] for n in adapters}
    # every attention and MLP projection of each of the 2 text layers, nothing in the vision tower
    # (Qwen2.5-VL's tower has gate/up/down_proj too)
    assert len(names) == 2 * 7 and not any(v in n for n in names for v in VISION)
    assert all(p.dtype == torch.float32 for p in adapters.values())
    assert {id(p) for p in policy.trainable_parameters()} == {
        id(p) for n, p in policy.model.named_parameters() if "lora_" in n} | {
        id(p) for p in policy.value_head.parameters()}
    with torch.no_grad():
        assert torch.equal(policy.log_probs(xs, rs), plain)  # B = 0: the adapters start as the identity
    outs = policy.act(xs)
    lp = policy.log_probs(xs, [o.text for o in outs])
    reported = torch.tensor([o.logprob for o in outs])
    assert lp.requires_grad and torch.allclose(lp.detach(), reported, atol=1e-4)
    m = policy.fit_sft(data, epochs=2, lr=1e-2)
    assert m["steps"] == 2 and m["loss"] < m["loss_first"]
    assert same_base(policy, base)  # bit-identical base weights, vision tower included
    _, trained = split(policy)
    assert any(not torch.equal(trained[n], adapters[n]) for n in adapters)
    with torch.no_grad():
        assert (policy.log_probs(xs, rs) > plain).all()


@needs_peft
@pytest.mark.parametrize("kind", list(BUILDERS))
def test_lora_save_load_and_copy_restore_identical_outputs(kind, tokenizer, pixel_samples, tmp_path):
    xs, rs = [x for x, _ in pixel_samples[:3]], [r for _, r in pixel_samples[:3]]
    policy = policy_of(kind, tokenizer, lora_r=4, lora_dropout=0.1, lora_targets=["q_proj", "v_proj"], seed=5)
    with torch.no_grad():
        plain = policy.log_probs(xs, rs)
    policy.fit_sft(pixel_samples[:4], epochs=1, lr=1e-2)
    with torch.no_grad():
        policy.value_head.bias.fill_(0.25)
        trained = policy.log_probs(xs, rs)
    policy.save(tmp_path / "p")
    assert (tmp_path / "p" / "adapter" / "adapter_model.safetensors").exists()
    for other in (HFPolicy.load(tmp_path / "p"), policy.copy()):
        assert other.lora_r == 4 and other.lora_targets == ["q_proj", "v_proj"] and other.seed == 5
        with torch.no_grad():
            assert torch.equal(other.log_probs(xs, rs), trained)
            assert torch.equal(other.values(xs), policy.values(xs))
        assert len(other.trainable_parameters()) == len(policy.trainable_parameters())
    # the folder's base weights are the untrained model's, loadable without peft
    bare = HFPolicy.from_pretrained(tmp_path / "p")
    assert bare.lora_r == 0 and type(bare.model).__name__ == type(policy.base_model()).__name__
    with torch.no_grad():
        assert torch.equal(bare.log_probs(xs, rs), plain)
    with pytest.raises(ValueError, match="lora_r=8 would not fit them"):
        HFPolicy.load(tmp_path / "p", lora_r=8)


@needs_peft
@pytest.mark.parametrize("kind", list(BUILDERS))
def test_grpo_and_ppo_update_through_lora(kind, tokenizer, pixel_samples):
    from algos.grpo import GRPO, GRPOConfig
    from algos.ppo import PPO, PPOConfig
    from tests.algos.test_grpo import BAD, GOOD

    policy = policy_of(kind, tokenizer, lora_r=4)
    x = pixel_samples[0][0]
    group = lambda: scored_group(policy, x)  # noqa: E731
    base, _ = split(policy)
    with torch.no_grad():
        before = policy.log_probs([x, x], [GOOD, BAD])
    m = GRPO(GRPOConfig(lr=1e-2, epochs=2, minibatch_size=4)).update(policy, [group()], 1, 0)
    with torch.no_grad():
        after = policy.log_probs([x, x], [GOOD, BAD])
    assert m["train/pg_steps"] == 4 and after[0] > before[0] and after[1] < before[1]
    assert same_base(policy, base)
    head = [p.detach().clone() for p in policy.value_head.parameters()]
    m = PPO(PPOConfig(lr=1e-2, epochs=1, minibatch_size=4)).update(policy, [group()], 1, 0)
    assert m["train/pg_steps"] >= 1 and m["losses/value"] > 0
    assert any(not torch.equal(a, b) for a, b in zip(head, policy.value_head.parameters(), strict=True))
    assert same_base(policy, base)


@needs_peft
def test_bf16_base_trains_float32_adapters(tokenizer, pixel_samples):
    """A bf16 base stays bf16 and frozen; the adapters (and their Adam states) are float32, so updates far
    below bf16's resolution still move them: Adam's second step moves each A entry (~0.1, where bf16's
    spacing is ~5e-4; A's first gradient is 0 as B starts at 0) by ~1e-6."""
    model, processor = build_tiny_qwen3_vl(tokenizer, seed=0, dtype=torch.bfloat16)
    policy = HFPolicy(model, processor, max_new_tokens=8, sft_batch_size=4, lora_r=4)
    base, adapters = split(policy)
    assert {p.dtype for p in base.values()} == {torch.bfloat16}
    assert {p.dtype for p in adapters.values()} == {torch.float32}
    assert policy.settings()["dtype"] == "bfloat16"
    policy.fit_sft(pixel_samples[:4], epochs=2, lr=1e-6)
    _, trained = split(policy)
    moved = [n for n in adapters if not torch.equal(trained[n], adapters[n])]
    assert any("lora_A" in n for n in moved) and all(trained[n].dtype == torch.float32 for n in moved)
    step = max((trained[n] - adapters[n]).abs().max().item() for n in moved if "lora_A" in n)
    assert step < 1e-5  # a move bf16 could not have held
    assert same_base(policy, base)


@needs_peft
def test_lora_leaves_a_llava_vision_tower_alone(tokenizer):
    """LLaVA's CLIP tower names its attention q_proj/k_proj/v_proj too: only the language model's get
    adapters."""
    model, processor = build_tiny_vlm(tokenizer)
    policy = HFPolicy(model, processor, lora_r=2)
    names = {n.split(".lora_")[0] for n, _ in policy.model.named_parameters() if "lora_" in n}
    assert len(names) == 2 * 7 and all("language_model" in n for n in names)


def test_lora_without_peft_names_the_extra(tokenizer, monkeypatch):
    model, processor = build_tiny_causal_lm(tokenizer), tokenizer
    monkeypatch.setitem(sys.modules, "peft", None)  # import peft -> ImportError, as when not installed
    with pytest.raises(ImportError, match=r"lora_r > 0 needs peft, which is not installed: pip install -e "
                                          r"'\.\[lora\]'"):
        HFPolicy(model, processor, lora_r=4)
    HFPolicy(model, processor)  # no LoRA: peft is not needed


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"lora_r": -1}, r"lora_r=-1: expected an integer >= 0"),
    ({"lora_r": 4, "lora_alpha": 0}, r"lora_alpha=0: expected a number > 0"),
    ({"lora_r": 4, "lora_dropout": 1.0}, r"lora_dropout=1.0: expected a value in \[0, 1\)"),
    ({"lora_r": 4, "lora_targets": []}, r"lora_targets=\[\]: expected a list of module names"),
    ({"lora_r": 4, "lora_targets": ["qkv"]}, r"lora_targets=\['qkv'\]: no linear layer of Qwen2Model has one "
                                             r"of these names; expected some of: down_proj, gate_proj"),
])
def test_bad_lora_settings_are_named(tokenizer, kwargs, message):
    if kwargs.get("lora_targets") == ["qkv"] and importlib.util.find_spec("peft") is None:
        pytest.skip("peft is not installed (pip install -e '.[lora]')")
    model, processor = build_tiny_causal_lm(tokenizer), tokenizer
    with pytest.raises(ValueError, match=message):
        HFPolicy(model, processor, **kwargs)
