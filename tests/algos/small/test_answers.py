"""Answers and typed text spelled from the screen: label spans, lists, counts, quantities, formats; each
round-trips exactly."""

from __future__ import annotations

from algos.policies.small import FLOOR_LOGPROB, SmallPolicy
from algos.prompt import PolicyInput, render_response
from voyager_gym.actions import Action
from voyager_gym.env import app_names
from voyager_gym.observation import BoundingBox, UIElement


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
