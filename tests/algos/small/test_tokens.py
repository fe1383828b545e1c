"""Tokens: shapes, field breaks and columns, and copied spans that reproduce the goal's exact characters."""

from __future__ import annotations

from algos.policies.small import FLOOR_LOGPROB, SmallPolicy
from algos.prompt import PolicyInput, render_response
from tests.algos.small.helpers import copied_parts
from voyager_gym.actions import Action
from voyager_gym.env import app_names
from voyager_gym.observation import BoundingBox, UIElement


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
    assert typed and all(any(p in goal or p in "Amount" for p in copied_parts(t, "Amount")) for t in typed)
