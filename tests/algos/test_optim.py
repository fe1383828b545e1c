"""Adam with float32 master weights (algos.optim): AdamW's steps on float32 parameters, small updates that
accumulate on bf16 ones, and the HF policy's half-precision training (fit_sft and the policy-gradient
algorithms' Adam) going through it."""

from __future__ import annotations

import pytest
import torch

from algos.optim import MasterWeightAdamW


def test_on_float32_parameters_it_takes_adamw_s_steps():
    torch.manual_seed(0)
    ours = torch.nn.Parameter(torch.randn(64))
    ref = torch.nn.Parameter(ours.detach().clone())
    opt_ours = MasterWeightAdamW([ours], lr=1e-2, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.1)
    opt_ref = torch.optim.AdamW([ref], lr=1e-2, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.1)
    for _ in range(25):
        g = torch.randn(64)
        ours.grad, ref.grad = g.clone(), g.clone()
        opt_ours.step()
        opt_ref.step()
    assert torch.allclose(ours, ref, atol=1e-7, rtol=0) and "master" not in opt_ours.state[ours]


def test_small_updates_to_bf16_weights_accumulate_in_the_master_copy():
    """100 steps of 1e-4 on a weight of 1.0 (bf16's spacing there: 2^-7 ~ 0.008): plain Adam rounds every
    step away; the master copy reaches 0.99 and the bf16 weight its nearest value."""
    plain = torch.nn.Parameter(torch.ones(4, dtype=torch.bfloat16))
    ours = torch.nn.Parameter(torch.ones(4, dtype=torch.bfloat16))
    opt_plain, opt_ours = torch.optim.Adam([plain], lr=1e-4), MasterWeightAdamW([ours], lr=1e-4)
    for _ in range(100):
        plain.grad = torch.ones(4, dtype=torch.bfloat16)
        ours.grad = torch.ones(4, dtype=torch.bfloat16)
        opt_plain.step()
        opt_ours.step()
    master = opt_ours.state[ours]["master"]
    assert torch.equal(plain, torch.ones(4, dtype=torch.bfloat16))
    assert master.dtype == torch.float32 and torch.allclose(master, torch.full((4,), 0.99), atol=1e-6)
    assert ours.dtype == torch.bfloat16 and torch.equal(ours, master.to(torch.bfloat16))


@pytest.mark.parametrize(("betas", "lr"), [((0.9, 1.0), 1e-3), ((0.9, 0.999), -1.0)])
def test_bad_settings_are_named(betas, lr):
    with pytest.raises(ValueError, match="betas=" if lr > 0 else "lr=-1.0"):
        MasterWeightAdamW([torch.nn.Parameter(torch.ones(1))], lr=lr, betas=betas)


@pytest.mark.slow
def test_hf_policy_trains_bf16_weights_through_master_weights(tokenizer, monkeypatch):
    from algos.pg import adam
    from algos.policies.hf import HFPolicy
    from algos.policies.tiny import build_tiny_causal_lm, expert_samples

    steps = []
    step = MasterWeightAdamW.step
    monkeypatch.setattr(MasterWeightAdamW, "step", lambda self, *a: steps.append(1) or step(self, *a))
    data = expert_samples()[:4]
    half = HFPolicy(build_tiny_causal_lm(tokenizer, seed=0).to(torch.bfloat16), tokenizer, sft_batch_size=4)
    before = [p.detach().clone() for p in half.model.parameters()]
    m = half.fit_sft(data, epochs=2, lr=1e-3)
    assert len(steps) == m["steps"] == 2  # fit_sft's optimizer was the master-weight one
    assert all(p.dtype == torch.bfloat16 for p in half.model.parameters())
    assert any(not torch.equal(a, b) for a, b in zip(before, half.model.parameters(), strict=True))
    assert isinstance(adam(half, 1e-3), MasterWeightAdamW)  # and GRPO / PPO / ...'s
    full = HFPolicy(build_tiny_causal_lm(tokenizer, seed=0), tokenizer, sft_batch_size=4)
    full.fit_sft(data, epochs=1, lr=1e-3)
    assert len(steps) == 2 and type(adam(full, 1e-3)) is torch.optim.Adam  # float32: the usual optimizers
