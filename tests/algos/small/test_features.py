"""Features: whole-token goal matches, duplicate labels, and the goal's cursor over what the episode did."""

from __future__ import annotations

from algos.policies.small import SmallPolicy
from algos.prompt import PolicyInput
from voyager_gym.actions import Action
from voyager_gym.env import app_names
from voyager_gym.observation import UIElement


def test_whole_token_goal_match_and_same_label_features():
    """dense[18]: the element's label is a run of whole goal tokens ("24" in "2023-10-24", not "2" or "20");
    dense[19]: another element of the same screen shows the same label (duplicate rows, colour swatches)."""
    pol = SmallPolicy(app_names(), seed=0)
    labels = ["2", "20", "24", "Oct 24", "Dress", "Dress", "Rent", "10"]
    els = [UIElement(text=t, class_name="android.widget.TextView") for t in labels]
    (f,) = pol.featurize([PolicyInput(goal="Create an event on 2023-10-24 named Rent", elements=els)])
    assert f.dense[:, 18].tolist() == [0, 0, 1, 0, 0, 0, 1, 1]
    assert f.dense[:, 19].tolist() == [0, 0, 0, 0, 1, 1, 0, 0]


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
