"""The network's encoding: the goal memory cache, and a sample's states independent of its batch's padding."""

from __future__ import annotations

import torch

from algos.policies.small import SmallPolicy
from voyager_gym.env import app_names


def test_goal_memory_cache_matches_uncached_encoding_and_follows_weight_updates(screens):
    """Acting reuses each goal's encoded states (no gradients) until a weight changes in place; what it
    computes equals the batched, uncached encoding used for training, whatever batch first saw the goal."""
    from algos.policies.small import collate

    xs = screens[:24]
    pol = SmallPolicy(app_names(), seed=5)
    b = collate(pol.featurize(xs), pol.history, "cpu")
    assert len(b.goal_texts) < len(xs), "the screens share goals: each distinct goal is encoded once"
    fresh = pol.model.encode(b)  # with gradients: every goal encoded together, nothing cached
    pol.act(xs[5:9])  # fills the cache from a different batch
    with torch.no_grad():
        cached = pol.model.encode(b)
    for x, y in zip(fresh, cached, strict=True):
        assert torch.allclose(x.detach(), y, atol=1e-5)
    with torch.no_grad():  # an in-place update (what optimisers and load_state_dict do) invalidates it
        pol.model.goal_norm.weight.mul_(2.0)
        after = pol.model.encode(b)
    moved = pol.model.encode(b)
    assert torch.allclose(after[1], moved[1].detach(), atol=1e-5)
    assert not torch.allclose(after[1], cached[1], atol=1e-3)


def test_goal_memory_cache_is_dropped_by_training_and_loading(screens, demos, tmp_path):
    """After fit_sft (a fused Adam, which bumps no version counter), any other optimizer's step, or loading
    weights, acting encodes goals with the new weights: the same outputs as a fresh copy of the policy."""
    xs = screens[:16]
    pol = SmallPolicy(app_names(), seed=6)

    def same_as_fresh() -> bool:
        pol.save(tmp_path / "p")
        fresh = SmallPolicy.load(tmp_path / "p")
        mine, theirs = pol.act(xs, greedy=True), fresh.act(xs, greedy=True)
        return [o.logprob for o in mine] == [o.logprob for o in theirs]

    pol.act(xs, greedy=True)  # fills the cache
    pol.fit_sft(demos[:64], epochs=1)
    assert same_as_fresh()
    opt = torch.optim.SGD(pol.trainable_parameters(), lr=0.5)
    pol.log_probs(xs[:4], [o.text for o in pol.act(xs[:4])]).sum().backward()
    opt.step()
    assert same_as_fresh()
    other = SmallPolicy(app_names(), seed=7)
    pol.model.load_state_dict(other.model.state_dict())
    assert [o.logprob for o in pol.act(xs, greedy=True)] == [o.logprob for o in other.act(xs, greedy=True)]


def test_a_samples_encoding_does_not_depend_on_the_batch_it_is_padded_in(screens):
    """The encoder runs its per-position layers on the real positions only (padding exists only inside
    attention, masked): each sample's CLS and element states, with gradients as in training, equal those of
    the sample encoded alone, and padding's states are zero."""
    from algos.policies.small import collate

    xs = screens[:24]
    pol = SmallPolicy(app_names(), seed=6)
    feats = pol.featurize(xs)
    b = collate(feats, pol.history, "cpu")
    cls, _, el = pol.model.encode(b)
    assert b.el_mask.sum() < b.el_mask.numel(), "the batch pads some samples' elements"
    for i, f in enumerate(feats):
        c1, _, e1 = pol.model.encode(collate([f], pol.history, "cpu"))
        n = len(f.elements)
        assert torch.allclose(cls[i], c1[0], atol=1e-5)
        assert torch.allclose(el[i, :n], e1[0, :n], atol=1e-5)
        assert not el[i, n:].any()
