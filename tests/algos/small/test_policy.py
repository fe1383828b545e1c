"""SmallPolicy: shapes, determinism, sampling, robustness on real screens, fit_sft's schedule and updates,
and save/load."""

from __future__ import annotations

import json
import math

import pytest
import torch

from algos.policies.small import SmallPolicy
from algos.prompt import PolicyInput, render_response
from tests.algos.small.helpers import copied_parts
from voyager_gym.actions import Action, parse_action
from voyager_gym.env import app_names
from voyager_gym.observation import BoundingBox, UIElement


def test_shapes_and_determinism(screens):
    xs = screens[:40]
    p1, p2 = SmallPolicy(app_names(), seed=3), SmallPolicy(app_names(), seed=3)
    o1, o2 = p1.act(xs), p2.act(xs)
    assert [o.text for o in o1] == [o.text for o in o2]
    assert [o.logprob for o in o1] == [o.logprob for o in o2]
    responses = [o.text for o in o1]
    lp, v = p1.log_probs(xs, responses), p1.values(xs)
    assert lp.shape == (40,) and v.shape == (40,) and lp.requires_grad and v.requires_grad
    assert torch.equal(lp, p2.log_probs(xs, responses))
    other = SmallPolicy(app_names(), seed=4).log_probs(xs, responses)
    assert not torch.allclose(lp, other), "a different seed must give a different model"


def test_sampling_draws_each_field_value_at_its_probability_and_never_an_impossible_one():
    pol = SmallPolicy(app_names(), seed=0)
    p = torch.tensor([[0.0, 0.5, 0.0, 0.2, 0.3, 0.0], [0.0, 0.0, 0.0, 0.0, 0.0, 1.0],
                      [0.9, 0.0, 0.1, 0.0, 0.0, 0.0]])
    lp = torch.log(p).clamp(min=-1e9)  # masked entries as the heads give them: finite and hugely negative
    draws = torch.stack([pol._pick(lp, greedy=False) for _ in range(4000)])  # [4000, 3]
    for row in range(3):
        freq = torch.bincount(draws[:, row], minlength=6).double() / len(draws)
        assert not freq[p[row] == 0].any(), f"row {row} drew a zero-probability value"
        assert torch.allclose(freq, p[row].double(), atol=0.03), (row, freq)
    assert pol._pick(lp, greedy=True).tolist() == [1, 5, 0]
    for edge in (torch.zeros, torch.ones):  # a uniform at either end of [0, 1] still skips impossible values
        real_rand = torch.rand
        torch.rand = lambda *shape, **kw: edge(*shape)  # noqa: B023
        try:
            drawn = pol._pick(lp, greedy=False)
        finally:
            torch.rand = real_rand
        assert (p[torch.arange(3), drawn] > 0).all(), (edge.__name__, drawn)
    pol.reseed(7)
    a = pol._pick(lp, greedy=False)
    pol.reseed(7)
    assert torch.equal(a, pol._pick(lp, greedy=False)), "the same seed draws the same values"


def _joined_labels(text: str, labels: list[str]) -> bool:
    """`text` is labels in screen order joined by ", " (labels may contain ", " themselves)."""
    return any(text == lab
               or (text.startswith(lab + ", ") and _joined_labels(text[len(lab) + 2:], labels[i + 1:]))
               for i, lab in enumerate(labels))


def test_act_never_raises_and_outputs_valid_actions(screens):
    pol = SmallPolicy(app_names(), seed=0)
    for greedy in (False, True):
        outs = pol.act(screens, greedy=greedy)
        assert len(outs) == len(screens)
        for x, o in zip(screens, outs, strict=True):
            assert parse_action(o.text) == o.action
            assert math.isfinite(o.logprob) and o.logprob <= 0 and o.value is not None
            a = o.action
            n_kept = min(len(x.elements), pol.config["max_elements"])
            if a.index is not None:
                assert 0 <= a.index < n_kept
            labels = [e.text or e.content_description for e in x.elements[:n_kept]]
            labels = [lab for lab in labels if lab]
            if a.action_type in ("click", "long_press", "double_tap", "input_text"):
                assert n_kept > 0, f"{a} on a screen without elements"
            if a.x is not None:  # a tap inside a kept element, off its centre
                assert any(b.x_min <= a.x <= b.x_max and b.y_min <= a.y <= b.y_max
                           for b in (e.bbox_pixels for e in x.elements[:n_kept]) if b is not None)
            if a.action_type == "input_text":  # copied from the goal or a label (maybe with the field's text)
                assert a.clear_text is True and a.text
                field = x.elements[a.index]
                parts = copied_parts(a.text, field.text or field.content_description)
                assert any(p in x.goal or any(p in lab for lab in labels) for p in parts), a.text
            if a.action_type == "answer":  # copied text, a list of labels, a count, or a duration's minutes
                copied = a.text in x.goal or any(a.text in lab for lab in labels)
                counted = a.text.isdigit() and int(a.text) <= n_kept
                assert copied or counted or _joined_labels(a.text, labels), a.text
    # a screen without elements can only get actions that need none (an answer copies from the goal)
    empty = PolicyInput(goal="Turn on wifi.", elements=[])
    for o in pol.act([empty] * 64):
        assert o.action.index is None and o.action.action_type not in ("click", "input_text")
        assert o.action.action_type != "answer" or o.action.text in empty.goal


def test_text_over_the_env_limit_is_an_invalid_action_not_a_crash():
    """Text typed above or below a field already near MAX_TEXT_CHARS would exceed it: act sends such a
    sample as an invalid action (the env refuses it) and reports the log-prob `log_probs` gives its text."""
    from voyager_gym.actions import MAX_TEXT_CHARS, try_parse_action

    note = UIElement(text="word " * ((MAX_TEXT_CHARS - 8) // 5), is_editable=True,
                     bbox_pixels=BoundingBox(0, 1080, 300, 900))
    x = PolicyInput(goal='Add "Buy milk" to the note.', elements=[note])
    pol = SmallPolicy(app_names(), seed=0)
    outs = pol.act([x] * 300)
    bad = [o for o in outs if o.action is None]
    assert bad and all(o.text.startswith("(invalid action: input_text text is") for o in bad)
    assert all(try_parse_action(o.text)[0] is None for o in bad)
    lp = pol.log_probs([x] * len(bad), [o.text for o in bad])
    assert torch.allclose(lp, torch.tensor([o.logprob for o in bad]))


@pytest.mark.parametrize("schedule,last", [("constant", 1e-3), ("linear", 0.0), (None, 1e-3)])
def test_fit_sft_learning_rate_schedule(demos, schedule, last):
    """constant keeps the learning rate; linear decays it to 0 over the call's steps (as TRL's SFTTrainer);
    None is the policy's default (constant); a bad name is refused, naming it."""
    pol = SmallPolicy(app_names(), seed=0)
    rates: list[float] = []
    from torch.optim.optimizer import register_optimizer_step_pre_hook

    hook = register_optimizer_step_pre_hook(lambda opt, *_: rates.append(opt.param_groups[0]["lr"]))
    try:
        pol.fit_sft(demos[:200], epochs=2, lr=1e-3, lr_schedule=schedule)
    finally:
        hook.remove()
    assert rates[0] == pytest.approx(1e-3)
    assert len(rates) >= 7 and rates[-1] == pytest.approx(last, abs=2e-4)
    if schedule == "linear":
        assert all(a > b for a, b in zip(rates, rates[1:], strict=False))
    with pytest.raises(ValueError, match="lr_schedule='cosine': expected one of constant, linear"):
        pol.fit_sft(demos[:8], lr_schedule="cosine")


def test_save_load_round_trip(tmp_path, screens):
    pol = SmallPolicy(app_names(), seed=2, d_model=64, heads=2, max_goal_tokens=32)
    pol.fit_sft([(screens[0], '{"action_type": "navigate_back"}')], epochs=2)
    pol.save(tmp_path / "ckpt")
    assert {p.name for p in (tmp_path / "ckpt").iterdir()} == {"model.safetensors", "config.json"}
    cfg = json.loads((tmp_path / "ckpt" / "config.json").read_text())
    assert cfg["app_names"] == pol.app_names and cfg["d_model"] == 64
    loaded = SmallPolicy.load(tmp_path / "ckpt")
    xs = screens[:30]
    responses = [o.text for o in pol.act(xs)]
    assert torch.equal(pol.log_probs(xs, responses), loaded.log_probs(xs, responses))
    assert torch.equal(pol.values(xs), loaded.values(xs))
    assert [o.text for o in pol.act(xs, greedy=True)] == [o.text for o in loaded.act(xs, greedy=True)]
    with pytest.raises(FileNotFoundError, match="not a SmallPolicy checkpoint"):
        SmallPolicy.load(tmp_path / "missing")


def test_checkpoints_saved_before_the_episode_progress_weights_still_load(tmp_path, screens):
    """A checkpoint without LATER_PARAMETERS (saved before the policy read what the episode has done) loads
    with them at their zero start and acts exactly as it did; any other missing or unknown weight is an
    error."""
    from safetensors.torch import load_file, save_file

    from algos.policies.small import LATER_PARAMETERS

    pol = SmallPolicy(app_names(), seed=2, d_model=64, heads=2)
    pol.fit_sft([(screens[0], '{"action_type": "navigate_back"}')], epochs=2)
    with torch.no_grad():  # as an older policy: its progress weights do not exist, so act as zero
        for name in LATER_PARAMETERS:
            pol.model.get_parameter(name).zero_()
    pol.save(tmp_path / "old")
    state = load_file(str(tmp_path / "old" / "model.safetensors"))
    old = {k: v for k, v in state.items() if k not in LATER_PARAMETERS}
    assert len(old) == len(state) - len(LATER_PARAMETERS)
    save_file(old, str(tmp_path / "old" / "model.safetensors"))
    loaded = SmallPolicy.load(tmp_path / "old")
    xs = screens[:30]
    responses = [o.text for o in pol.act(xs)]
    assert torch.equal(pol.log_probs(xs, responses), loaded.log_probs(xs, responses))
    weights = str(tmp_path / "old" / "model.safetensors")
    save_file({k: v for k, v in old.items() if k != "type_head.bias"}, weights)
    with pytest.raises(ValueError, match="older SmallPolicy without type_head.bias"):
        SmallPolicy.load(tmp_path / "old")
    save_file({**state, "extra.weight": torch.zeros(2)}, weights)
    with pytest.raises(ValueError, match="weights this SmallPolicy does not have: extra.weight"):
        SmallPolicy.load(tmp_path / "old")


def test_an_update_leaves_the_heads_its_responses_do_not_use_where_they_are():
    """Heads share fused products, so a head no response of the minibatch uses still gets a gradient, of
    exactly zero; the update must not move it on the momentum of an earlier minibatch (as if it were out of
    the graph). A count answer first (the answer heads move), then typed text only: the list, count,
    quantity and sum heads stay where they are, the copy source moves."""
    from algos.pg import adam, optimizer_step

    pol = SmallPolicy(app_names(), seed=0)
    els = [UIElement(text=t) for t in ("a.txt", "b.txt", "c.txt")]
    els.append(UIElement(class_name="android.widget.EditText", is_editable=True, hint_text="Name"))
    x = PolicyInput(goal="How many files? Then name it Plan B", elements=els)
    opt = adam(pol, 1e-2)
    optimizer_step(opt, -pol.log_probs([x], [render_response(Action("answer", text="2"))]).mean(), 1.0)
    m = pol.model
    heads = (m.cnt_q, m.cnt_k, m.sel_q, m.sel_k, m.qty_q, m.qty_k, m.sum_q, m.sum_k, m.src_q)
    before = [lin.weight.detach().clone() for lin in heads]
    typed = render_response(Action("input_text", index=3, text="Plan B", clear_text=True))
    optimizer_step(opt, -pol.log_probs([x], [typed]).mean(), 1.0)
    moved = [not torch.equal(b, lin.weight) for b, lin in zip(before, heads, strict=True)]
    assert moved == [False] * 8 + [True]


@pytest.mark.parametrize("max_norm", [0.5, float("inf")])
def test_clipping_used_gradients_equals_dropping_then_clip_grad_norm(max_norm):
    """`clip_used_grads` (one pass of norms) gives bit for bit what `drop_unused_grads` followed by torch's
    `clip_grad_norm_` gives: the same dropped gradients, the same total norm, the same clipped gradients."""
    from algos.policies.base import clip_used_grads, drop_unused_grads

    gen = torch.Generator().manual_seed(0)
    shapes = [(7, 3), (5,), (40, 96), (3, 3), (1,)]
    runs = []
    for fused in (True, False):
        ps = [torch.nn.Parameter(torch.zeros(s)) for s in shapes]
        gen.manual_seed(0)
        for i, p in enumerate(ps):
            p.grad = torch.zeros(p.shape) if i in (1, 3) else torch.randn(p.shape, generator=gen)
        if fused:
            norm = clip_used_grads(ps, max_norm)
        else:
            drop_unused_grads(ps)
            norm = torch.nn.utils.clip_grad_norm_([p for p in ps if p.grad is not None], max_norm)
        runs.append((norm, [None if p.grad is None else p.grad.clone() for p in ps]))
    (n1, g1), (n2, g2) = runs
    assert torch.equal(n1, n2) and float(n1) > 0
    assert [g is None for g in g1] == [False, True, False, True, False]
    assert all(a is None and b is None or torch.equal(a, b) for a, b in zip(g1, g2, strict=True))
    if max_norm < float("inf"):
        clipped = torch.cat([g.flatten() for g in g1 if g is not None])
        assert float(torch.linalg.vector_norm(clipped)) <= 0.5001
