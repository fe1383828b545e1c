"""Behaviour cloning learns: the expert's demonstrations, copied names never seen, and multi-entry and
multi-item goals (issue 14) on held-out instances."""

from __future__ import annotations

import json

from algos.policies.small import SmallPolicy
from algos.prompt import PolicyInput, render_response
from tests.algos.small.helpers import SYLLABLES
from voyager_gym.actions import Action, parse_action
from voyager_gym.env import app_names
from voyager_gym.observation import BoundingBox, UIElement


def key(a: Action) -> str:
    """An action's identity for matching: every field but clear_text (the policy always clears)."""
    d = a.to_dict()
    d.pop("clear_text", None)
    return json.dumps(d, sort_keys=True)


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
