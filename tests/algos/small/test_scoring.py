"""Scoring: log_probs of sampled responses equal their reported logprob, the floor, and marginalisation over
every span, element and selection that spells the same answer."""

from __future__ import annotations

import math

import pytest
import torch

from algos.policies.small import ANSWER_OPS, FLOOR_LOGPROB, SmallPolicy
from algos.policies.small.scoring import count_lp, sum_lp
from algos.prompt import PolicyInput, render_response
from voyager_gym.actions import ACTION_TYPES, Action
from voyager_gym.env import app_names
from voyager_gym.observation import UIElement


@pytest.mark.parametrize("temperature", [1.0, 0.7])
def test_log_probs_of_own_samples_equal_reported_logprob(screens, temperature):
    pol = SmallPolicy(app_names(), seed=1, temperature=temperature)
    seen: set[str] = set()
    for _ in range(4):  # an untrained policy samples every action type; repeat to cover them all
        outs = pol.act(screens)
        lp = pol.log_probs(screens, [o.text for o in outs])
        reported = torch.tensor([o.logprob for o in outs])
        assert torch.allclose(lp.detach(), reported, atol=1e-4), (lp.detach() - reported).abs().max()
        seen |= {o.action.action_type for o in outs}
    assert {"click", "input_text", "scroll", "answer", "open_app", "status"} <= seen
    # greedy outputs are scored the same way
    outs = pol.act(screens, greedy=True)
    lp = pol.log_probs(screens, [o.text for o in outs]).detach()
    assert torch.allclose(lp, torch.tensor([o.logprob for o in outs]), atol=1e-4)


def test_unrepresentable_components_get_the_floor_without_gradient(screens):
    pol = SmallPolicy(app_names(), seed=0)
    x = screens[1]
    field = next(i for i, e in enumerate(x.elements) if e.is_editable or e.is_clickable)
    typed = [x.goal.split()[0], "NOT IN THE GOAL 123", "also not in it"]
    responses = [render_response(Action("input_text", index=field, text=t, clear_text=True)) for t in typed]
    lp = pol.log_probs([x] * 4, responses + ["this is not an action"])
    assert lp[3].item() == FLOOR_LOGPROB  # unparseable: the floor alone
    assert lp[1].item() == lp[2].item()  # any text outside the goal: the same constant text component
    assert lp[1].item() < FLOOR_LOGPROB < lp[0].item()  # type + element + floor vs. type + element + span
    # the floored text sends no gradient into the span heads; the type and pointer heads still learn
    lp[1].backward(retain_graph=True)
    m = pol.model
    assert m.start_q.weight.grad is None or not m.start_q.weight.grad.any()
    assert m.type_head.weight.grad.abs().sum() > 0 and m.el_k.weight.grad.abs().sum() > 0
    pol.model.zero_grad()
    lp.sum().backward()
    grads = [p.grad for p in pol.model.parameters() if p.grad is not None]
    assert grads and all(torch.isfinite(g).all() for g in grads)


def test_repeated_strings_are_marginalised_over_every_span_and_element():
    """White-box: the text / answer component is the log of the summed probability of every goal span /
    element that gives the string."""
    from algos.policies.small.targets import take

    goal = "Send 42 to Bob, then 42 to Ann."
    els = [UIElement(text="42", is_clickable=True), UIElement(text="Bob"), UIElement(text="42")]
    x = PolicyInput(goal=goal, elements=els)
    pol = SmallPolicy(app_names(), seed=0)
    feats = pol.featurize([x])
    spans = feats[0].goal.spans_for("42")
    assert len(spans) == 2
    typed = render_response(Action("input_text", index=1, text="42", clear_text=True))
    answer = render_response(Action("answer", text="42"))
    tg = pol._targets(feats * 2, [typed, answer])
    cands = [(0, *sp) for sp in spans] + [(1, 0, 0), (3, 0, 0)]  # two goal spans, two labels "42"
    assert tg.texts[0] == cands and tg.texts[1] == cands and tg.select[1] == [0]  # or a list of one label
    both = pol._log_probs_feats(feats * 2, [], tg)[0].detach()

    def only(texts: list, select: list | None) -> torch.Tensor:
        sub = take(tg, [0, 1])
        sub.texts, sub.select = [texts, texts], [None, select]
        return pol._log_probs_feats(feats * 2, [], sub)[0].detach()

    singles = torch.stack([only([c], None) for c in cands])
    as_list = only([], [0])[1]
    assert torch.allclose(both[0], torch.logsumexp(singles[:, 0], 0), atol=1e-5)
    assert torch.allclose(both[1], torch.logsumexp(torch.cat([singles[:, 1], as_list[None]]), 0), atol=1e-5)
    assert (both[:, None] > singles.T + 1e-3).all()
    assert torch.allclose(pol.log_probs([x, x], [typed, answer]).detach(), both, atol=1e-5)


@pytest.mark.parametrize("n", [3, 7])
def test_count_log_prob_is_the_poisson_binomial_over_every_selection(n):
    """White-box: P(count = k) sums the Bernoulli probabilities of every selection of k elements, for every k
    (7 elements: three rounds of pairwise convolution, one with an odd element out)."""
    import itertools

    els = [UIElement(text=t) for t in "abcdefg"[:n]]
    x = PolicyInput(goal="How many?", elements=els)
    pol = SmallPolicy(app_names(), seed=3)
    feats = pol.featurize([x] * (n + 1))
    tg = pol._targets(feats, [render_response(Action("answer", text=str(k))) for k in range(n + 1)])
    hd = pol._target_heads(feats, tg)
    p = torch.sigmoid(hd.count[0]).detach()
    assert 0.05 < float(p.min()) and float(p.max()) < 0.95  # no near-certain element hides a mistake
    got = count_lp(hd, tg).exp().detach()
    for k in range(n + 1):
        brute = sum(math.prod(float(p[i]) if i in sel else 1 - float(p[i]) for i in range(n))
                    for sel in itertools.combinations(range(n), k))
        assert float(got[k]) == pytest.approx(brute, rel=1e-5)


def test_sum_answers_round_trip_and_score_every_selection_that_adds_up():
    """A sum answer (the meters of two of a list's distances) decodes to itself; its log-prob sums the
    Bernoulli probabilities of every selection of the screen's non-zero quantities giving that total
    (here two: 1207 + 499 and 1706), and samples are scored as they were drawn."""
    import itertools

    els = [UIElement(text=t) for t in ("0.31 mi", "0.75 mi", "1706 m", "0:50:00", "0.00 mi", "cycling")]
    x = PolicyInput(goal="What was the total distance covered for cycling activities?", elements=els)
    pol = SmallPolicy(app_names(), seed=2)
    act = Action("answer", text="1706")
    assert pol.round_trip([x], [act])[0] == (act, "")
    feats = pol.featurize([x])
    tg = pol._targets(feats, [render_response(act)])
    assert sorted(tg.sums[0]) == [[0, 1], [2]]  # 499 + 1207 and 1706; never the zero distance
    hd = pol._target_heads(feats, tg)
    p = torch.sigmoid(hd.sum[0]).detach()
    terms = [0, 1, 2, 3]  # the screen's non-zero quantities (0:50:00 is 50 minutes)
    assert (hd.sum[0, [4, 5]] < -1e8).all()  # zero and label-only elements cannot be added
    brute = sum(math.prod(float(p[i]) if i in sel else 1 - float(p[i]) for i in terms)
                for sel in ([0, 1], [2]))
    assert float(sum_lp(hd, tg)[0].detach().exp()) == pytest.approx(brute, rel=1e-5)
    assert not any(sum((499, 1207, 1706, 50)[i] for i in sel) == 1706 and list(sel) not in ([0, 1], [2])
                   for k in range(5) for sel in itertools.combinations(terms, k))
    # sampled sums are scored as drawn: the untrained policy made to answer by summing (what it adds stays
    # random)
    with torch.no_grad():
        pol.model.type_head.bias[ACTION_TYPES.index("answer")] += 20.0
        pol.model.op_head.bias[ANSWER_OPS.index("sum")] += 20.0
    texts = set()
    for _ in range(6):
        outs = pol.act([x] * 32)
        lp = pol.log_probs([x] * 32, [o.text for o in outs]).detach()
        assert torch.allclose(lp, torch.tensor([o.logprob for o in outs]), atol=1e-4)
        texts |= {o.action.text for o in outs if o.action.action_type == "answer"}
    sums = {str(sum((499, 1207, 1706, 50)[i] for i in sel)) for k in (2, 3, 4)
            for sel in itertools.combinations(range(4), k)}
    assert sums & texts, texts
