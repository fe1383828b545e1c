"""SmallPolicy: shapes, determinism, robustness on real screens, act/log_probs consistency, exact goal-span
copy, behaviour cloning on expert demos, and save/load."""

from __future__ import annotations

import json
import math

import pytest
import torch

from algos.policies.small import ANSWER_OPS, FLOOR_LOGPROB, SmallPolicy
from algos.prompt import PolicyInput, render_response
from voyager_gym.actions import ACTION_TYPES, Action, parse_action
from voyager_gym.env import app_names
from voyager_gym.observation import BoundingBox, UIElement

BC_TASKS = ["SystemBluetoothTurnOn", "MarkorCreateNote", "ContactsAddContact",
            "SimpleCalendarLocationOfEvent"]  # clicks, typed goal spans, app launches, an answer, status
MORE_TASKS = ["OpenAppTaskEval", "ExpenseAddMultiple", "FilesMoveFile", "RecipeDeleteSingleRecipe",
              "SimpleSmsReply", "TasksHighPriorityTasks"]  # screens for the robustness checks
SYLLABLES = ["ka", "lo", "mi", "ve", "tor", "zu", "pa", "ne", "ri", "sol", "dex", "qua"]  # made-up names


def collect(tasks: list[str], seeds: int) -> list[tuple[PolicyInput, str]]:
    """(input, expert response) pairs from expert episodes (elements only, no noise)."""
    from voyager_gym.env import VoyagerEnv

    env = VoyagerEnv(observation_mode="elements", noise="none")
    out = []
    for name in tasks:
        for seed in range(seeds):
            obs, info = env.reset(seed=seed, options={"task": name})
            history: list[str] = []
            while True:
                a = env.unwrapped.expert_action()
                out.append((PolicyInput.from_obs(obs, history, len(history), info["max_steps"]),
                            render_response(parse_action(a))))
                obs, _, term, trunc, info = env.step(a)
                history.append(a)
                if term or trunc:
                    break
    return out


@pytest.fixture(autouse=True)
def one_thread():
    """One intra-op thread: small ops with 2 OpenMP threads slow down many-fold when another process holds a
    core (shared CI machines); restored after each test."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


@pytest.fixture(scope="module")
def demos() -> list[tuple[PolicyInput, str]]:
    return collect(BC_TASKS, 8)


@pytest.fixture(scope="module")
def screens(demos) -> list[PolicyInput]:
    """Real inputs from 10 tasks plus edge cases: no elements, empty goal, too many elements, long goal."""
    xs = [x for x, _ in demos[::2]] + [x for x, _ in collect(MORE_TASKS, 1)]
    el = xs[3].elements[0]
    xs.append(PolicyInput(goal=xs[0].goal, elements=[], history=["garbage", '{"action_type": "wait"}']))
    xs.append(PolicyInput(goal="", elements=list(xs[5].elements)))
    xs.append(PolicyInput(goal="", elements=[]))
    xs.append(PolicyInput(goal="word " * 300, elements=[el] * 120, history=['{"action_type": "scroll"}'] * 9))
    return xs


def key(a: Action) -> str:
    """An action's identity for matching: every field but clear_text (the policy always clears)."""
    d = a.to_dict()
    d.pop("clear_text", None)
    return json.dumps(d, sort_keys=True)


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


def _copied_parts(text: str, field: str | None) -> list[str]:
    """What typed text may have been copied from: itself, a zero-padded digit's digit, or the text around the
    field's current text (a line above or below it)."""
    parts = [text]
    field = field.rstrip("\n") if field else field
    if len(text) == 2 and text[0] == "0" and text[1].isdigit():
        parts.append(text[1])
    if field:
        for sep in ("\n", "\n\n"):
            if text.endswith(sep + field):
                parts.append(text[: -len(field) - len(sep)])
        if text.startswith(field + "\n"):
            parts.append(text[len(field) + 1 :])
    return parts


def _joined_labels(text: str, labels: list[str]) -> bool:
    """`text` is labels in screen order joined by ", " (labels may contain ", " themselves)."""
    return any(text == lab
               or (text.startswith(lab + ", ") and _joined_labels(text[len(lab) + 2:], labels[i + 1:]))
               for i, lab in enumerate(labels))


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
                parts = _copied_parts(a.text, field.text or field.content_description)
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


def test_text_span_reproduces_exact_goal_substrings():
    goal = "Add an expense of 482.65 named Rent, then move 7E4Z_dusty_meadow.txt to Archive (DONE!)."
    els = [UIElement(text="Amount", class_name="android.widget.EditText", is_editable=True,
                     bbox_pixels=BoundingBox(0, 1080, 300, 420))]
    x = PolicyInput(goal=goal, elements=els)
    pol = SmallPolicy(app_names(), seed=0)
    g = pol.featurizer.goal(goal)
    for text in ("482.65", "7E4Z_dusty_meadow.txt", "Rent", "Archive (DONE!)", goal[:-1]):
        spans = g.spans_for(text)
        assert spans, text
        assert all(g.span_text(s, e) == text for s, e in spans)
        lp = pol.log_probs([x], [render_response(Action("input_text", index=0, text=text, clear_text=True))])
        assert lp.item() > FLOOR_LOGPROB, text
    assert g.spans_for("dusty") and g.spans_for("usty") == []  # words split at "_"; never mid-word
    assert g.spans_for("482.6") == [] and g.spans_for("rent") == []  # partial token; case matters
    # sampled texts are always exact substrings (of the goal or a label), case and punctuation preserved
    outs = pol.act([x] * 256)
    typed = {o.action.text for o in outs if o.action.action_type == "input_text"}
    assert typed and all(any(p in goal or p in "Amount" for p in _copied_parts(t, "Amount")) for t in typed)


def test_repeated_strings_are_marginalised_over_every_span_and_element():
    """White-box: the text / answer component is the log of the summed probability of every goal span /
    element that gives the string."""
    from algos.policies.small import _take

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
        sub = _take(tg, [0, 1])
        sub.texts, sub.select = [texts, texts], [None, select]
        return pol._log_probs_feats(feats * 2, [], sub)[0].detach()

    singles = torch.stack([only([c], None) for c in cands])
    as_list = only([], [0])[1]
    assert torch.allclose(both[0], torch.logsumexp(singles[:, 0], 0), atol=1e-5)
    assert torch.allclose(both[1], torch.logsumexp(torch.cat([singles[:, 1], as_list[None]]), 0), atol=1e-5)
    assert (both[:, None] > singles.T + 1e-3).all()
    assert torch.allclose(pol.log_probs([x, x], [typed, answer]).detach(), both, atol=1e-5)


def test_answers_copy_spans_of_labels_and_list_labels():
    """Answers read off the screen: a span of a label ("20" in "Attendance: 20 people"), a goal word
    ("True"), or several labels joined by ", " in screen order; each round-trips exactly."""
    els = [UIElement(text="Attendance: 20 people"), UIElement(text="Board meeting"),
           UIElement(text="Oct 15, 2023"), UIElement(text="Game night")]
    x = PolicyInput(goal="Is it a todo? Respond with 'True' or 'False'.", elements=els)
    pol = SmallPolicy(app_names(), seed=0)
    texts = ["20", "True", "Board meeting, Game night", "Board meeting, Oct 15, 2023, Game night",
             "people", "Attendance: 20 people"]
    acts = [Action("answer", text=t) for t in texts]
    out = pol.round_trip([x] * len(acts), acts)
    assert [d.text if d else why for d, why in out] == texts
    lp = pol.log_probs([x] * len(acts), [render_response(a) for a in acts])
    assert (lp > FLOOR_LOGPROB).all()
    # another order: the same parts (AndroidWorld compares list answers part by part, in any order), decoded
    # in screen order; a part no label holds, or one label used twice, is no list
    other, bad, twice = pol.round_trip([x] * 3, [Action("answer", text=t) for t in (
        "Game night, Board meeting", "Game night, Lunch", "Game night, Game night")])
    assert other[0].text == "Board meeting, Game night"
    assert bad[0] is None and twice[0] is None


def test_taps_inside_an_element_round_trip_to_grid_points():
    """A slider's far end is a tap at its right edge, not its centre; the centre stays an index click."""
    slider = UIElement(content_description="Brightness", is_clickable=True,
                       bbox_pixels=BoundingBox(90, 991, 400, 508))
    x = PolicyInput(goal="Turn brightness to the max value.", elements=[slider])
    pol = SmallPolicy(app_names(), seed=0)
    taps = [Action("click", x=990, y=454), Action("click", index=0)]
    (right, _), (centre, _) = pol.round_trip([x, x], taps)
    assert (right.x, right.index) == (990, None) and abs(right.y - 454) <= 20
    assert centre == Action("click", index=0)
    lp = pol.log_probs([x, x], [render_response(right), render_response(centre)])
    assert (lp > FLOOR_LOGPROB).all() and lp[0] != lp[1]


def test_coordinate_click_maps_to_smallest_containing_element():
    big = UIElement(text="Row", is_clickable=True, bbox_pixels=BoundingBox(0, 1080, 0, 600))
    small = UIElement(text="Delete", is_clickable=True, bbox_pixels=BoundingBox(800, 1000, 100, 200))
    x = PolicyInput(goal="Delete the row.", elements=[big, small])
    pol = SmallPolicy(app_names(), seed=0)
    lp = pol.log_probs([x] * 3, ['{"action_type": "click", "x": 900, "y": 150}',
                                 '{"action_type": "click", "index": 1}',
                                 '{"action_type": "click", "x": 5000, "y": 5000}']).detach()
    tg = pol._targets(pol.featurize([x] * 3), ['{"action_type": "click", "x": 900, "y": 150}',
                                               '{"action_type": "click", "index": 1}',
                                               '{"action_type": "click", "x": 5000, "y": 5000}'])
    assert tg.element == [2, 2, None]  # the pointer picks "Delete" either way
    assert tg.tap[1] == 0 and tg.tap[0] > 0  # an index taps the centre; a point is a grid point inside it
    assert lp[2] < FLOOR_LOGPROB + 1e-3 < lp[0]  # outside every element: the pointer component is floored


def test_behaviour_cloning_reaches_90_percent_greedy_match(demos):
    pol = SmallPolicy(app_names(), seed=0)
    metrics = pol.fit_sft(demos, epochs=12, lr=2e-3, seed=0)
    assert set(metrics) >= {"loss", "samples", "samples_per_s"} and metrics["samples"] == len(demos)
    outs = pol.act([x for x, _ in demos], greedy=True)
    match = sum(key(o.action) == key(parse_action(r)) for o, (_, r) in zip(outs, demos, strict=True))
    assert match / len(demos) >= 0.9, f"greedy match {match}/{len(demos)}"
    # the demos include typed text, answers and app launches: all must be learnable exactly
    kinds = {parse_action(r).action_type for _, r in demos}
    assert {"input_text", "answer", "open_app", "status", "click"} <= kinds


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


def test_counts_durations_and_padded_numbers_round_trip():
    """Computed answers: how many elements are counted, the minutes of an h:mm:ss duration, the meters of a
    distance; typed numbers zero-padded ("3h" types "03")."""
    els = [UIElement(text="Oct 7, 2023 12:00"), UIElement(text="2:00:00"), UIElement(text="3.73 mi"),
           UIElement(text="Hour", is_editable=True, bbox_pixels=BoundingBox(0, 1080, 300, 420))]
    x = PolicyInput(goal="How long was it? An event at 3h.", elements=els)
    pol = SmallPolicy(app_names(), seed=0)
    acts = [Action("answer", text="120"), Action("answer", text="6003"), Action("answer", text="3"),
            Action("input_text", index=3, text="03", clear_text=True)]
    out = pol.round_trip([x] * 4, acts)
    assert [d for d, _ in out] == acts
    assert (pol.log_probs([x] * 4, [render_response(a) for a in acts]) > FLOOR_LOGPROB).all()


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
    got = pol._count_lp(hd, tg).exp().detach()
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
    assert float(pol._sum_lp(hd, tg)[0].detach().exp()) == pytest.approx(brute, rel=1e-5)
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


def test_typed_text_around_the_fields_text_round_trips():
    """Editing a note: a copied line typed above or below the field's current text (a blank line between,
    for a header), which the field shows with a trailing newline."""
    note = UIElement(text="Ask Priya about the soup.\n", is_editable=True,
                     bbox_pixels=BoundingBox(0, 1080, 300, 900))
    x = PolicyInput(goal='Add "Buy milk", and a header "TODO" with a blank line.', elements=[note])
    pol = SmallPolicy(app_names(), seed=0)
    texts = ["Buy milk\nAsk Priya about the soup.", "Ask Priya about the soup.\nBuy milk",
             "TODO\n\nAsk Priya about the soup."]
    acts = [Action("input_text", index=0, text=t, clear_text=True) for t in texts]
    assert [d for d, _ in pol.round_trip([x] * 3, acts)] == acts
    assert (pol.log_probs([x] * 3, [render_response(a) for a in acts]) > FLOOR_LOGPROB).all()


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


def test_token_shapes_mark_what_touches_each_token():
    from algos.policies.small import N_KIND, N_SHAPES, N_SIDE, token_shape

    goal = 'Rename "talk_edited.m4a" to Ibrahim. Call 959-236-2033\nnow'
    g = SmallPolicy(app_names(), seed=0).featurizer.goal(goal)
    shape = {goal[s:e]: int(k) for s, e, k in zip(g.starts, g.ends, g.shapes, strict=True)}
    side_before = {w: k // (N_KIND * N_SIDE) for w, k in shape.items()}
    kind = {w: k // N_SIDE % N_KIND for w, k in shape.items()}
    side_after = {w: k % N_SIDE for w, k in shape.items()}
    # sides: 0 text edge, 1 space, 2 newline, 3 quote, 4 another symbol, 5 a letter or digit (glued)
    assert side_before["Rename"] == 0 and side_before["talk"] == 3 and side_before["edited"] == 4
    assert side_after["a"] == 3 and side_after["Ibrahim"] == 4 and side_after["2033"] == 2
    assert side_before["to"] == 1 and side_after["4"] == 5  # a space; glued to a letter
    # kinds: 0 lower, 1 Capitalised, 2 ALL CAPS, 3 mixed, 4 digits, 5 a quote, 6 another symbol
    assert kind["Rename"] == 1 and kind["talk"] == 0 and kind["959"] == 4
    assert kind['"'] == 5 and kind["-"] == 6
    assert kind["Ibrahim"] == 1 and token_shape("ABC x", 0, 3) // N_SIDE % N_KIND == 2
    assert all(0 <= int(k) < N_SHAPES for k in g.shapes)


def test_copied_span_edges_transfer_to_words_never_seen():
    """Quoted names of 1-4 random words inside goals of random words: after cloning, the policy types exactly
    the quoted name for goals whose words it never saw (the edges come from shapes and local context, not from
    the hashed words)."""
    import random

    rng = random.Random(0)

    def word() -> str:
        return "".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 3)))

    field = UIElement(text="", hint_text="Name", class_name="android.widget.EditText", is_editable=True,
                      bbox_pixels=BoundingBox(0, 1080, 300, 420))

    def example() -> tuple[PolicyInput, str]:
        name = " ".join(word().capitalize() for _ in range(rng.randint(1, 4)))
        before = " ".join(word() for _ in range(rng.randint(1, 5)))
        after = " ".join(word() for _ in range(rng.randint(1, 5)))
        x = PolicyInput(goal=f'{before.capitalize()} "{name}" {after}.', elements=[field])
        return x, render_response(Action("input_text", index=0, text=name, clear_text=True))

    train, held_out = [example() for _ in range(300)], [example() for _ in range(60)]
    pol = SmallPolicy(app_names(), seed=0)
    pol.fit_sft(train, epochs=6, lr=2e-3, seed=0)
    outs = pol.act([x for x, _ in held_out], greedy=True)
    exact = sum(o.action.text == parse_action(r).text for o, (_, r) in zip(outs, held_out, strict=True))
    assert exact / len(held_out) >= 0.9, f"{exact}/{len(held_out)} held-out names typed exactly"


def test_whole_token_goal_match_and_same_label_features():
    """dense[18]: the element's label is a run of whole goal tokens ("24" in "2023-10-24", not "2" or "20");
    dense[19]: another element of the same screen shows the same label (duplicate rows, colour swatches)."""
    pol = SmallPolicy(app_names(), seed=0)
    labels = ["2", "20", "24", "Oct 24", "Dress", "Dress", "Rent", "10"]
    els = [UIElement(text=t, class_name="android.widget.TextView") for t in labels]
    (f,) = pol.featurize([PolicyInput(goal="Create an event on 2023-10-24 named Rent", elements=els)])
    assert f.dense[:, 18].tolist() == [0, 0, 1, 0, 0, 0, 1, 1]
    assert f.dense[:, 19].tolist() == [0, 0, 0, 0, 1, 1, 0, 0]


# -- memory: what earlier screens showed ---------------------------------------------------------------------
def test_seen_elements_keep_labels_no_longer_on_screen_most_recent_first_seen_order():
    from algos.prompt import SeenElements, seen_elements

    e = lambda text, **kw: UIElement(text=text, **kw)  # noqa: E731
    s1 = (e("Inbox"), e("Alice"), e("123 Main St"), e(None, content_description="Back"), e(None))
    s2 = (e("Inbox"), e("Bob"), e("Alice"))
    now = (e("Inbox"), e("To"))
    out = seen_elements([s1, s2], now)
    # labelled, not on the current screen, one per label (its latest sighting), in the order first seen
    assert [x.text or x.content_description for x in out] == ["Alice", "123 Main St", "Back", "Bob"]
    assert out[0] is s2[2]
    # the limit keeps the most recently seen (Alice and Bob were seen last), still in first-seen order
    assert [x.text for x in seen_elements([s1, s2], now, limit=2)] == ["Alice", "Bob"]
    assert seen_elements([], now) == () and seen_elements([s1], s1) == ()
    inc = SeenElements()
    for screen in (s1, s2):
        inc.add(screen)
    assert inc.view(now) == out


def test_acted_labels_name_the_element_each_earlier_action_targeted_on_its_screen():
    from algos.prompt import SeenElements, acted_label

    screen = (UIElement(text="Songs"), UIElement(text=None, content_description="Golden Days"),
              UIElement(None))
    click = lambda i: Action("click", index=i).to_json()  # noqa: E731
    assert [acted_label(screen, click(i)) for i in range(4)] == ["Songs", "Golden Days", None, None]
    assert acted_label(screen, Action("long_press", index=1).to_json()) == "Golden Days"
    response = "Reason: add it.\nAction: " + Action("long_press", index=0).to_json()
    assert acted_label(screen, response) == "Songs"
    assert acted_label(screen, Action("scroll", index=0, direction="down").to_json()) is None
    assert acted_label(screen, "(invalid action)") is None
    inc = SeenElements()
    inc.add(screen, click(1))
    inc.add(screen, Action("navigate_back").to_json())
    inc.add(screen)  # a screen without its action (nothing acted is recorded)
    assert inc.acted == ("Golden Days", None)


def test_goal_cursor_moves_past_each_item_acted_on_in_the_goals_order():
    """Typed texts and acted-on labels each take their first goal run at or after the cursor: the element
    progress features flag the next listed item on the screen, whatever the screen's order."""
    from algos.policies.small import Featurizer

    goal = 'Create a playlist titled "Mix" with, in order: Golden Days, Dreamer Awake, Hidden Paths'
    els = tuple(UIElement(text=t) for t in ("Hidden Paths", "Golden Days", "Dreamer Awake", "Save"))
    fz = Featurizer(4096, 128, 50, 4)

    def features(history: list[str], acted: tuple[str | None, ...]):
        f = fz.sample(PolicyInput(goal, els, history, acted=acted))
        at = f.goal_progress[:, 2].nonzero()[0]  # the token at the cursor (none at the goal's end)
        done = " ".join(f.goal.span_text(i, i) for i in f.goal_progress[:, 0].nonzero()[0])
        return (f.goal.text[f.goal.starts[at[0]] :] if len(at) else ""), f.el_progress, done

    rest, el, done = features([], ())
    assert rest == goal and el[:, 2].tolist() == [0, 1, 0, 0] and done == ""  # the first item is next
    lp = Action("long_press", index=1).to_json()
    rest, el, done = features([lp], ("Golden Days",))
    assert rest.startswith(", Dreamer Awake") and el[:, 2].tolist() == [0, 0, 1, 0] and done == "Golden Days"
    assert el[:, 0].tolist() == [0, 1, 0, 0] and el[:, 4].tolist() == [0, 1, 0, 0]  # acted; now behind
    typed = Action("input_text", index=3, text="Mix").to_json()  # out of order: done, the cursor stays
    rest2, el2, done = features([lp, typed], ("Golden Days", None))
    assert rest2 == rest and (el2 == el).all() and done == "Mix Golden Days"
    rest, el, done = features([lp, lp, lp], ("Golden Days", "Dreamer Awake", "Hidden Paths"))
    assert rest == "" and not el[:, 1:4].any() and el[:, 0].tolist() == [1, 1, 1, 0]


def _memory_input(seen_texts):
    els = (UIElement(text="To", is_editable=True, bbox_pixels=BoundingBox(0, 1080, 200, 300)),
           UIElement(text="Send", is_clickable=True, bbox_pixels=BoundingBox(0, 540, 400, 500)))
    seen = tuple(UIElement(text=t, bbox_pixels=BoundingBox(0, 1080, 600, 700)) for t in seen_texts)
    return PolicyInput("Text the address Jack sent me to Sophie.", els, [], step=3, max_steps=10, seen=seen)


@pytest.mark.parametrize("mode", ["encoder", "heads"])
def test_memory_elements_are_copy_sources_never_targets(mode):
    from algos.policies.coverage import round_trip, same_action

    x = _memory_input(["Jack Ferreira", "940 Willow Way, Wilmington, DE"])
    typed = Action("input_text", index=0, text="940 Willow Way, Wilmington, DE", clear_text=True)
    without = SmallPolicy(app_names(), seed=0)
    with_memory = SmallPolicy(app_names(), seed=0, memory=8, memory_mode=mode)
    assert round_trip(without, [x], [typed])[0][0] is None  # the current screen does not show it
    decoded, why = round_trip(with_memory, [x], [typed])[0]
    assert why == "" and same_action(decoded, typed)
    # the seen elements are not on the screen: index 2 (the first seen one) is no target, and counts read the
    # screen only; lists (and sums) gather what was read on earlier screens too (a list scrolled through)
    listed = "Jack Ferreira, 940 Willow Way, Wilmington, DE"
    for a in (Action("click", index=2), Action("answer", text="3")):
        assert round_trip(with_memory, [x], [a])[0][0] is None, a
    assert round_trip(without, [x], [Action("answer", text=listed)])[0][0] is None
    assert same_action(round_trip(with_memory, [x], [Action("answer", text=listed)])[0][0],
                       Action("answer", text=listed))
    outs = with_memory.act([x] * 64)
    for o in outs:
        a = o.action
        if a.index is not None:
            assert a.index < 2, a
    # sampled log-probs are the scored ones with memory too
    lp = with_memory.log_probs([x] * 8, [o.text for o in outs[:8]]).detach()
    assert torch.allclose(lp, torch.tensor([o.logprob for o in outs[:8]]), atol=1e-4)


def test_memory_zero_ignores_what_earlier_screens_showed():
    pol = SmallPolicy(app_names(), seed=0)
    x, bare = _memory_input(["Jack Ferreira", "940 Willow Way"]), _memory_input([])
    r = [render_response(Action("click", index=1))]
    assert torch.equal(pol.log_probs([x], r), pol.log_probs([bare], r))
    assert pol.featurize([x])[0].n_cur == len(pol.featurize([x])[0].elements) == 2
    mem = SmallPolicy(app_names(), seed=0, memory=8)
    f = mem.featurize([x])[0]
    assert (f.n_cur, len(f.elements)) == (2, 4)


def test_memory_read_by_heads_only_leaves_the_screens_encoding_alone():
    """memory_mode=heads: the encoder reads the screen only, so whatever earlier screens showed, an action on
    the screen scores the same; only what can come from memory (a typed copy of a seen label) changes. The
    encoder mode reads them in its sequence, so there they move every action's score."""
    from algos.policies.coverage import round_trip

    x, bare = _memory_input(["Jack Ferreira", "940 Willow Way"]), _memory_input([])
    click = [render_response(Action("click", index=1))]
    heads = SmallPolicy(app_names(), seed=0, memory=8, memory_mode="heads")
    enc = SmallPolicy(app_names(), seed=0, memory=8)
    assert torch.allclose(heads.log_probs([x], click), heads.log_probs([bare], click), atol=1e-5)
    assert not torch.allclose(enc.log_probs([x], click), enc.log_probs([bare], click), atol=1e-3)
    typed = Action("input_text", index=0, text="940 Willow Way", clear_text=True)
    assert round_trip(heads, [x], [typed])[0][1] == ""  # representable only from memory
    assert round_trip(heads, [bare], [typed])[0][0] is None
    r = [render_response(typed)]
    assert not torch.allclose(heads.log_probs([x], r), heads.log_probs([bare], r), atol=1e-3)
    # a batch mixing samples with and without memory encodes each as it would alone
    both = heads.log_probs([x, bare, x], click * 3)
    assert torch.allclose(both, heads.log_probs([x], click).repeat(3), atol=1e-5)
    with pytest.raises(ValueError, match="memory_mode='seen': expected one of encoder, heads"):
        SmallPolicy(app_names(), seed=0, memory=8, memory_mode="seen")


def _address_example(rng, k: int) -> tuple[PolicyInput, str]:
    """The typing step of "text the address X sent me to Y": the address is in a message seen on an earlier
    screen, among other seen messages; new names, numbers and streets every time."""

    def word() -> str:
        return "".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 3))).capitalize()

    sender, to = word() + " " + word(), word()
    address = f"{rng.randint(10, 9999)} {word()} {rng.choice(['St', 'Way', 'Ave', 'Road'])}, {word()}"
    chatter = [f"See you at {rng.randint(1, 12)} pm", f"Did you call {word()}?", f"{word()} says hi"]
    seen = [UIElement(text=t, bbox_pixels=BoundingBox(0, 1080, 600 + 100 * i, 690 + 100 * i))
            for i, t in enumerate([sender, *rng.sample(chatter, k), address, *chatter[:1]])]
    els = (UIElement(text="", hint_text="Type a message", class_name="android.widget.EditText",
                     is_editable=True, bbox_pixels=BoundingBox(0, 900, 2200, 2300)),
           UIElement(text=to, bbox_pixels=BoundingBox(0, 1080, 200, 300)),
           UIElement(text="Send", is_clickable=True, bbox_pixels=BoundingBox(900, 1080, 2200, 2300)))
    x = PolicyInput(f"Text the address {sender} sent me to {to}.", els, [], step=5, max_steps=20,
                    seen=tuple(seen))
    return x, render_response(Action("input_text", index=0, text=address, clear_text=True))


@pytest.mark.parametrize("mode", ["encoder", "heads"])
def test_a_clone_types_an_address_read_on_an_earlier_screen(mode):
    """Either memory mode learns, from 60 demonstrations, to copy a message seen earlier into the field on
    held-out instances (new names and addresses; 23 of 30 in both modes when written, the misses a span's
    edge), which a policy without memory cannot type at all."""
    import random

    from algos.policies.coverage import round_trip, same_action

    rng = random.Random(0)
    train = [_address_example(rng, k) for _ in range(20) for k in range(3)]
    held_out = [_address_example(rng, k) for _ in range(10) for k in range(3)]
    pol = SmallPolicy(app_names(), seed=0, memory=16, memory_mode=mode)
    pol.fit_sft(train, epochs=30, lr=2e-3, seed=0)
    outs = pol.act([x for x, _ in held_out], greedy=True)
    hits = sum(bool(same_action(o.action, parse_action(r))) for o, (_, r) in zip(outs, held_out, strict=True))
    assert hits >= 20, hits
    x, r = held_out[0]
    assert round_trip(SmallPolicy(app_names(), seed=0), [x], [parse_action(r)])[0][0] is None


def _next_entry_example(rng, k: int) -> tuple[PolicyInput, str]:
    """The Name step of entry k of a 3-entry form task shaped like ExpenseAddMultiple (the goal's rows as
    text blocks; per entry: Add, type its name and amount, a category chip, Save, OK), after a varying way
    to the form: the names are new words, and the last 4 actions never show an earlier entry's words."""

    def words(n: int) -> str:
        return " ".join("".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 3))).capitalize()
                        for _ in range(n))

    rows = [(words(rng.randint(1, 3)), f"{rng.randint(1, 500)}.{rng.randint(10, 99)}") for _ in range(3)]
    goal = "Add the following expenses into the pro expense:\n" + "\n".join(
        f"Expense: {n}\n amount_dollars: ${a}\n category_name: Food\n" for n, a in rows)
    history = [Action("open_app", app_name="Pro Expense").to_json()]
    history += [Action("click", index=rng.randint(0, 5)).to_json() for _ in range(rng.randint(0, 4))]
    for n, a in rows[:k]:
        history += [Action("click", index=0).to_json(), Action("input_text", index=1, text=n).to_json(),
                    Action("input_text", index=2, text=a).to_json(), Action("click", index=3).to_json(),
                    Action("click", index=4).to_json(), Action("click", index=1).to_json()]
    history.append(Action("click", index=0).to_json())
    els = [UIElement(text="Expense Entry"),
           *(UIElement(text="", hint_text=h, class_name="android.widget.EditText", is_editable=True,
                       bbox_pixels=BoundingBox(0, 1080, 300 + 150 * i, 420 + 150 * i))
             for i, h in enumerate(("Name", "Amount"))),
           UIElement(text="Food", is_clickable=True), UIElement(text="Save", is_clickable=True)]
    x = PolicyInput(goal=goal, elements=els, history=history, step=len(history), max_steps=30)
    return x, render_response(Action("input_text", index=1, text=rows[k][0], clear_text=True))


def test_tokens_count_the_field_breaks_before_them_and_their_table_column():
    """A span s..e crosses breaks[e] - breaks[s] line breaks, "|" separators or double quotes; a token's
    column counts the separators before it on its line (a row's second value is column 1)."""
    from algos.policies.small import Featurizer

    t = Featurizer(4096, 128, 50, 4).tokens("title|servings\nMiso Soup|2 servings. Serve hot\n x: y", 64)
    words = [t.span_text(i, i) for i in range(len(t.ids))]
    assert words == ["title", "|", "servings", "Miso", "Soup", "|", "2", "servings", ".", "Serve", "hot", "x",
                     ":", "y"]
    assert t.breaks.tolist() == [0, 1, 1, 2, 2, 3, 3, 3, 3, 3, 3, 4, 4, 4]
    assert t.columns.tolist() == [0, 0, 1, 0, 0, 0, 1, 1, 1, 1, 1, 0, 0, 0]  # a separator ends its column
    span = lambda a, b: t.breaks[words.index(b, words.index(a))] - t.breaks[words.index(a)]  # noqa: E731
    assert span("Miso", "Soup") == 0 and span("Miso", "servings") == 1 and span("2", "hot") == 0
    q = Featurizer(4096, 128, 50, 4).tokens('titled "Mix Tape" with', 64)  # a quoted title ends at its quote
    assert q.breaks.tolist() == [0, 1, 1, 1, 2, 2]  # titled " Mix Tape " with


def test_a_span_end_reads_the_field_breaks_it_crosses_in_the_goal_and_in_labels():
    """The end_breaks bias reaches both copy sources: made to forbid crossing a break, a span that runs past a
    line break (the goal) or a "|" (a note's row) loses its probability, one that stops before gains."""
    pol = SmallPolicy(app_names(), seed=0, memory=8)
    field = UIElement(text="", hint_text="Title", class_name="android.widget.EditText", is_editable=True,
                      bbox_pixels=BoundingBox(0, 1080, 300, 420))
    note = UIElement(text="title|servings\nTofu Bowl|2 servings", bbox_pixels=BoundingBox(0, 1080, 600, 900))
    x = PolicyInput("Recipe: Miso Soup\n servings: 4 servings", (field,), [], seen=(note,))
    typed = [render_response(Action("input_text", index=0, text=t, clear_text=True))
             for t in ("Miso Soup", "Miso Soup\n servings", "Tofu Bowl", "Tofu Bowl|2")]
    before = pol.log_probs([x] * 4, typed)
    with torch.no_grad():
        pol.model.end_breaks.bias.copy_(torch.tensor([0.0, -50.0, -50.0, -50.0]))
    after = pol.log_probs([x] * 4, typed)
    assert after[0] > before[0] and after[2] > before[2]
    assert after[1] < before[1] - 40 and after[3] < before[3] - 40


def _held_out_hits(example, n_train: int, epochs: int, same) -> tuple[int, int]:
    """Clone a policy on `example(rng, k)` for k = 0, 1, 2, `n_train` times each; (how many of 60 held-out
    examples its greedy action gets right by `same(action, expert's)`, 60)."""
    import random

    rng = random.Random(0)
    train = [example(rng, k) for _ in range(n_train) for k in range(3)]
    held_out = [example(rng, k) for _ in range(20) for k in range(3)]
    pol = SmallPolicy(app_names(), seed=0)
    pol.fit_sft(train, epochs=epochs, lr=2e-3, seed=0)
    outs = pol.act([x for x, _ in held_out], greedy=True)
    return sum(bool(same(o.action, parse_action(r))) for o, (_, r) in zip(outs, held_out, strict=True)), 60


def test_multi_entry_task_types_the_next_entry_not_one_already_entered():
    """Issue 14: a multi-entry goal's Name steps differ only by which entries are done, which the last 4
    actions do not show. The texts typed earlier in the episode flag their goal tokens and move the goal's
    cursor past them, so after cloning the policy types the first entry not yet entered on held-out goals (60
    of 60; 43 with every episode-progress feature zeroed)."""
    exact, n = _held_out_hits(_next_entry_example, 300, 6, lambda a, b: a.text == b.text)
    assert exact / n >= 0.9, f"{exact}/{n} held-out next entries typed exactly"


def _next_item_example(rng, k: int) -> tuple[PolicyInput, str]:
    """The step that adds item k of a playlist goal shaped like VlcCreatePlaylist ("... in order: A, B, C"):
    a list of 6 files in a random order, each earlier item long-pressed by index and added by a menu click,
    after a varying way to the list. Which items are done is visible only in the labels acted on."""
    from algos.prompt import SeenElements

    names = list({"_".join("".join(rng.choice(SYLLABLES) for _ in range(2)) for _ in range(2))
                  for _ in range(6)})
    wanted = rng.sample(names, 3)
    goal = f"Create a playlist titled \"Mix {rng.randint(1, 99)}\" in VLC, in order: " + ", ".join(
        f"{n}.mp4" for n in wanted)
    files = [UIElement(text="VLC Videos"), *(UIElement(text=n, is_clickable=True, is_long_clickable=True)
                                             for n in rng.sample(names, len(names)))]
    menu = [UIElement(text="Add to playlist", is_clickable=True), UIElement(text="Delete", is_clickable=True)]
    seen, history = SeenElements(), []

    def act(els: list[UIElement], a: Action) -> None:
        history.append(a.to_json())
        seen.add(els, history[-1])

    act([], Action("open_app", app_name="VLC"))
    for _ in range(rng.randint(0, 3)):
        act(files, Action("scroll", direction=rng.choice(["up", "down"])))
    for n in wanted[:k]:
        act(files, Action("long_press", index=next(i for i, e in enumerate(files) if e.text == n)))
        act(menu, Action("click", index=0))
    x = PolicyInput(goal=goal, elements=files, history=history, step=len(history), max_steps=30,
                    seen=seen.view(files), acted=seen.acted)
    target = next(i for i, e in enumerate(files) if e.text == wanted[k])
    return x, render_response(Action("long_press", index=target))


def test_multi_item_task_picks_the_next_item_not_one_already_added():
    """Issue 14: a playlist goal's add steps differ only by which files were added, which the history (action
    types and indices) does not show. The labels acted on earlier move the goal's cursor past the items
    added, and flag the screen's next listed item, so after cloning the policy long-presses the first item
    not yet added on held-out goals (59 of 60; 21 with the element progress features zeroed)."""
    exact, n = _held_out_hits(_next_item_example, 150, 8, lambda a, b: a == b)
    assert exact / n >= 0.9, f"{exact}/{n} held-out next items picked"


def test_goal_gap_spans_the_goal_tokens_between_the_cursor_and_each_named_element():
    """el_gap[i] = (cursor, start of element i's goal run past it): the goal tokens the policy averages to see
    whether another item still to do lies before it; zero for elements the goal does not name past the
    cursor."""
    from algos.policies.small import Featurizer

    goal = "Add in order: Golden Days, Dreamer Awake, Hidden Paths"
    els = tuple(UIElement(text=t) for t in ("Hidden Paths", "Golden Days", "Save"))
    fz = Featurizer(4096, 128, 50, 4)
    f = fz.sample(PolicyInput(goal, els, [Action("long_press", index=1).to_json()], acted=("Golden Days",)))
    lo, hi = f.el_gap[0]
    assert f.goal.text[f.goal.starts[lo] : f.goal.starts[hi]] == ", Dreamer Awake, "  # one more item first
    assert f.el_gap[1:].tolist() == [[0, 0], [0, 0]]  # done (behind the cursor), or not named at all
    f = fz.sample(PolicyInput(goal, els, []))
    assert f.goal.text[f.goal.starts[f.el_gap[1, 0]] : f.goal.starts[f.el_gap[1, 1]]] == "Add in order: "


def _next_or_scroll_example(rng, k: int) -> tuple[PolicyInput, str]:
    """Item k of a playlist goal ("... in order: A, B, C", a preamble of varying length, names of 1-3 words)
    on a screen that shows 3 of 6 files: long-press it when it is shown, else scroll on, also when a later
    item of the goal is shown (which the element progress features flag as the earliest item named past the
    cursor, at a distance from it that varies with the preamble and the names)."""
    from algos.prompt import SeenElements

    filler = ["please", "make", "a", "new", "list", "for", "my", "evening", "clips", "now", "and", "then"]
    names: list[str] = []
    while len(names) < 6:
        n = " ".join("".join(rng.choice(SYLLABLES) for _ in range(2)) for _ in range(rng.randint(1, 3)))
        names += [n] if n not in names else []
    order = rng.sample(names, 3)
    goal = (" ".join(rng.choice(filler) for _ in range(rng.randint(0, 12))) + f" Create a playlist titled "
            f"\"Mix {rng.randint(1, 99)}\", in order: " + ", ".join(order))
    shown_next = rng.random() < 0.5
    keep = [order[k]] * shown_next + ([rng.choice(order[k + 1 :])] if k < 2 else [])
    shown = keep + rng.sample([n for n in names if n not in order], 3 - len(keep))
    rng.shuffle(shown)
    els = [UIElement(text="VLC Videos"), *(UIElement(text=n, is_clickable=True, is_long_clickable=True)
                                           for n in shown)]
    seen, history = SeenElements(), []

    def act(screen: list[UIElement], a: Action) -> None:
        history.append(a.to_json())
        seen.add(screen, history[-1])

    act([], Action("open_app", app_name="VLC"))
    for n in order[:k]:
        act([UIElement(text=n, is_long_clickable=True)], Action("long_press", index=0))
        act([UIElement(text="Add to playlist", is_clickable=True)], Action("click", index=0))
    x = PolicyInput(goal=goal, elements=tuple(els), history=history, step=len(history), max_steps=30,
                    seen=seen.view(els), acted=seen.acted)
    if shown_next:
        return x, render_response(Action("long_press", index=[e.text for e in els].index(order[k])))
    return x, render_response(Action("scroll", direction="down"))


def test_multi_item_task_scrolls_when_the_next_item_is_not_shown_even_if_a_later_one_is():
    """Issue 14: the commonest first mistake of the 116-task clone is a scroll decision. The mean goal state
    between the cursor and where an element is named (el_gap) tells the next item from a later one, so after
    cloning the policy long-presses the next item when it is shown and scrolls on when only a later one is,
    on held-out goals (56 of 60; 32 when the batch leaves el_gap out, 2026-12-02)."""
    exact, n = _held_out_hits(_next_or_scroll_example, 150, 8, lambda a, b: a == b)
    assert exact / n >= 0.85, f"{exact}/{n} held-out long-press-or-scroll decisions right"


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
