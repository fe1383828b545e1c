"""The policy's action space as the fields its heads pick, both ways: an action parsed into those fields (its
`Targets`: what training scores), and the action a set of picks spells (`build_action`: what acting sends).

An AndroidWorld action is a type; an element (a pointer slot) and, for taps, where in it (its centre, an
index action, or a point of a TAP_GRID over its box); a direction; a goal status; an app (the launcher's, or
a name copied from the goal); copied text with its TEXT_FORMATS form; and for answers, one of ANSWER_OPS."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from algos.policies.small.answers import (
    ANSWER_OPS,
    TEXT_FORMATS,
    copied_text,
    format_text,
    list_selection,
    sum_selections,
    text_candidates,
    unformat_text,
)
from algos.policies.small.features import ElementFeat, SampleFeat
from voyager_gym import actions as A
from voyager_gym.actions import ACTION_TYPES, DIRECTIONS, GOAL_STATUSES, Action

TYPE_INDEX = {t: i for i, t in enumerate(ACTION_TYPES)}
NEEDS_ELEMENT = (A.CLICK, A.DOUBLE_TAP, A.LONG_PRESS, A.INPUT_TEXT)  # pointer target required
OPTIONAL_ELEMENT = (A.SCROLL, A.SWIPE)  # pointer target or the "no element" slot
TAP_TYPES = (A.CLICK, A.DOUBLE_TAP, A.LONG_PRESS)  # element actions that may land off the element's centre
TAP_GRID = (9, 3)  # a tap inside an element: columns x rows of the grid of points (besides its centre)
TEXT_USE = {A.INPUT_TEXT: 0, A.ANSWER: 1, A.OPEN_APP: 2}  # what a copied text is for (an embedding each)


@dataclasses.dataclass
class Targets:
    """Structured form of one response per sample; a None component (or []) is not representable (floor)."""

    parsed: list[bool]
    type: list[int]
    element: list[int | None]  # pointer slot (0 = no element, i + 1 = element i); None = not representable
    direction: list[int | None]
    status: list[int | None]
    app: list[int | None]  # A = the name is copied from the goal (then `texts` holds its goal spans)
    tap: list[int | None]  # tap slot for click / double_tap / long_press
    texts: list[list[tuple[int, int, int]] | None]  # (source, start, end) giving the text; None: no text part
    select: list[list[int] | None]  # answer as a list: element indices in screen order; None: not a list
    count: list[int | None]  # answer as a count of elements
    measure: list[list[int] | None]  # answer as a quantity: the elements whose quantity it is
    sums: list[list[list[int]] | None]  # answer as a sum: the selections of the screen's quantities giving it
    formatted: list[list[list[tuple[int, int, int]]] | None]  # typed text: per TEXT_FORMATS entry after
    # the first, the copies that give it in that format

    @classmethod
    def empty(cls, n: int) -> Targets:
        return cls([True] * n, [0] * n, *([[None] * n for _ in range(11)]))


def take(tg: Targets, idx: Sequence[int]) -> Targets:
    """The targets of samples `idx`, in that order."""
    return Targets(*[[getattr(tg, f.name)[i] for i in idx] for f in dataclasses.fields(Targets)])


def fill_target(tg: Targets, b: int, f: SampleFeat, a: Action, app_index: dict[str, int],
                n_apps: int) -> None:
    """Write action `a`'s fields as sample b's targets; `app_index` maps the launcher's lower-cased app names
    to their classes (`n_apps` of them; class n_apps is a name copied from the goal)."""
    t = a.action_type
    tg.type[b] = TYPE_INDEX[t]
    if t in NEEDS_ELEMENT or t in OPTIONAL_ELEMENT:
        if a.index is not None:
            tg.element[b] = a.index + 1 if a.index < f.n_cur else None
            tg.tap[b] = 0
        elif a.x is not None:
            hit = _element_at(f.elements[: f.n_cur], a.x, a.y)
            tg.element[b] = hit + 1 if hit is not None else None
            tg.tap[b] = _tap_cell(f.elements[hit].box, a.x, a.y) if hit is not None else None
        else:
            tg.element[b] = 0 if t in OPTIONAL_ELEMENT else None
    if t in OPTIONAL_ELEMENT:
        tg.direction[b] = DIRECTIONS.index(a.direction)
    if t == A.STATUS:
        tg.status[b] = GOAL_STATUSES.index(a.goal_status)
    if t == A.OPEN_APP:
        name = (a.app_name or "").strip()
        tg.app[b] = app_index.get(name.lower())
        if tg.app[b] is None:  # an alias the goal names ("the dialer app"): copied from the goal
            spans = f.goal.spans_for(name)
            tg.app[b] = n_apps if spans else None
            tg.texts[b] = [(0, s, e) for s, e in spans]
    text = a.text or ""
    if t == A.INPUT_TEXT:
        tg.texts[b] = text_candidates(f, text)
        field = f.elements[a.index].label if a.index is not None and a.index < f.n_cur else None
        tg.formatted[b] = [text_candidates(f, c) if c else [] for c in
                           (unformat_text(k, text, field) for k in TEXT_FORMATS[1:])]
    if t == A.ANSWER:
        tg.texts[b] = text_candidates(f, text)
        tg.select[b] = list_selection(f, text)
        n = int(text) if text.isdigit() and str(int(text)) == text else None
        tg.count[b] = n if n is not None and n <= f.n_cur else None
        tg.measure[b] = [i for i, e in enumerate(f.elements) if e.quantity == text]
        tg.sums[b] = sum_selections(f, int(text)) if text.isdigit() and str(int(text)) == text else None


def answer_forms(tg: Targets, b: int) -> list[bool]:
    """Which answer forms (ANSWER_OPS order) spell sample b's answer."""
    return [bool(tg.texts[b]), tg.select[b] is not None, tg.count[b] is not None, bool(tg.measure[b]),
            bool(tg.sums[b])]


def build_action(app_names: Sequence[str], f: SampleFeat, t: str, el: int, direction: int, status: int,
                 app: int, tap: int, copy: tuple[int, int, int], op: int, sel: list[int], fmt: int = 0,
                 counted: int = 0, qty: int = 0, added: Sequence[int] = ()) -> Action:
    """The action the heads' choices spell (`app` indexes `app_names`, or past them a name copied from the
    goal): `copy` is (source, start, end) of copied text (typed in TEXT_FORMATS[fmt] with the field's text),
    `sel` the listed elements of an answer given as a list, `counted` the number of counted elements, `qty`
    the element whose quantity an answer reads, `added` the elements whose quantities a sum adds."""
    if t in NEEDS_ELEMENT:
        idx = el - 1
        if t == A.INPUT_TEXT:
            text = format_text(TEXT_FORMATS[fmt], copied_text(f, copy), f.elements[idx].label)
            return Action(t, index=idx, text=text, clear_text=True)
        box = f.elements[idx].box
        if tap and box is not None:  # a point inside the element rather than its centre
            x, y = _tap_point(box, tap)
            return Action(t, x=x, y=y)
        return Action(t, index=idx)
    if t in OPTIONAL_ELEMENT:
        return Action(t, index=el - 1 if el > 0 else None, direction=DIRECTIONS[direction])
    if t == A.STATUS:
        return Action(t, goal_status=GOAL_STATUSES[status])
    if t == A.OPEN_APP:
        name = app_names[app] if app < len(app_names) else copied_text(f, (0, *copy[1:]))
        return Action(t, app_name=name)
    if t == A.ANSWER:
        kind = ANSWER_OPS[op]
        if kind == "list" and sel:
            return Action(t, text=", ".join(f.elements[i].label or "" for i in sel))
        if kind == "count":
            return Action(t, text=str(counted))
        if kind == "measure" and qty < len(f.elements) and f.elements[qty].quantity is not None:
            return Action(t, text=f.elements[qty].quantity)
        if kind == "sum":
            return Action(t, text=str(sum(f.elements[i].summand for i in added)))
        return Action(t, text=copied_text(f, copy))
    return Action(t)


def _element_at(elements: list[ElementFeat], x: int, y: int) -> int | None:
    """The smallest kept element whose box contains (x, y) (how a coordinate click maps to the pointer)."""
    best, best_area = None, None
    for i, e in enumerate(elements):
        if e.box is None:
            continue
        x0, x1, y0, y1 = e.box
        if x0 <= x <= x1 and y0 <= y <= y1:
            area = (x1 - x0) * (y1 - y0)
            if best_area is None or area < best_area:
                best, best_area = i, area
    return best


def _tap_cell(box: tuple[int, int, int, int] | None, x: int, y: int) -> int:
    """The tap slot nearest to (x, y) inside `box`: 1 + row * columns + column of the TAP_GRID points."""
    if box is None:
        return 0
    cols, rows = TAP_GRID
    x0, x1, y0, y1 = box
    fx = (x - x0) / max(1, x1 - x0)
    fy = (y - y0) / max(1, y1 - y0)
    col = min(cols - 1, max(0, round(fx * (cols - 1))))
    row = min(rows - 1, max(0, int(fy * rows)))
    return 1 + row * cols + col


def _tap_point(box: tuple[int, int, int, int], cell: int) -> tuple[int, int]:
    """The screen point of tap slot `cell` (>= 1) inside `box`: columns from edge to edge, rows centred."""
    cols, rows = TAP_GRID
    row, col = divmod(cell - 1, cols)
    x0, x1, y0, y1 = box
    x = x0 + round(col / (cols - 1) * max(0, x1 - x0 - 1))
    y = y0 + round((row + 0.5) / rows * (y1 - y0))
    return int(x), int(y)
