"""How an answer or a typed text is spelled from what the policy read: a copied span (of the goal or of an
element's label), typed in one of TEXT_FORMATS with the target field's text; or for answers, the selected
elements' labels joined as a list, a count, the quantity a label shows, or the sum of several. The searches
here find every way a given string is spelled (what scoring marginalises over)."""

from __future__ import annotations

import re
from collections import Counter

import numpy as np

from algos.policies.small.features import SampleFeat

# An answer is copied text, the selected elements' labels joined by ", ", how many elements are selected, a
# quantity one element shows, in the unit such questions ask for (an h:mm:ss duration in whole minutes, a
# distance in whole meters; see features.measure), or the sum of the quantities of the selected elements of
# the screen
ANSWER_OPS = ("text", "list", "count", "measure", "sum")
SUM_CANDIDATES = 64  # selections scored per sum answer (every one, unless more give the same sum)
SUM_SEARCH = 20_000  # search nodes per sum answer (a screen has a few dozen quantities at most)
# How typed text is made from the copied text c and the target field's current text x (its label): c; c
# zero-padded to two digits when one digit ("3" -> "03"); c above x; c below x; c above x after a blank line
TEXT_FORMATS = ("copy", "pad2", "above", "below", "above_blank")


def format_text(fmt: str, copied: str, field: str | None) -> str:
    """Typed text from the copied text and the field's current text (trailing newlines dropped), as
    TEXT_FORMATS says."""
    field = field.rstrip("\n") if field else field
    if fmt == "pad2":
        return "0" + copied if len(copied) == 1 and copied.isdigit() else copied
    if fmt in ("above", "below", "above_blank") and field:
        return {"above": f"{copied}\n{field}", "below": f"{field}\n{copied}",
                "above_blank": f"{copied}\n\n{field}"}[fmt]
    return copied


def unformat_text(fmt: str, text: str, field: str | None) -> str | None:
    """The copied text that `fmt` turns into `text` with this field, or None when it cannot."""
    if fmt == "pad2":
        return text[1] if re.fullmatch(r"0\d", text) else None
    field = field.rstrip("\n") if field else field
    if not field:
        return None
    if fmt == "above" and text.endswith("\n" + field):
        return text[: -len(field) - 1] or None
    if fmt == "below" and text.startswith(field + "\n"):
        return text[len(field) + 1 :] or None
    if fmt == "above_blank" and text.endswith("\n\n" + field):
        return text[: -len(field) - 2] or None
    return None


def copied_text(f: SampleFeat, copy: tuple[int, int, int]) -> str:
    """The text a (source, start, end) copy gives: a goal span (source 0), or a span of the label of element
    source - 1."""
    src, s, e = copy
    if src == 0:
        return f.goal.span_text(s, e) if len(f.goal.ids) else ""
    tokens = f.elements[src - 1].tokens
    return tokens.span_text(s, e) if tokens is not None else ""


def text_candidates(f: SampleFeat, text: str) -> list[tuple[int, int, int]]:
    """Every (source, start, end) copy that gives exactly `text`: goal spans, then spans of element labels."""
    out = [(0, s, e) for s, e in f.goal.spans_for(text)]
    for i, el in enumerate(f.elements):
        if el.tokens is not None:
            out += [(i + 1, s, e) for s, e in el.tokens.spans_for(text)]
    return out


def list_selection(f: SampleFeat, text: str) -> list[int] | None:
    """Elements (the screen's, then those read earlier) whose labels joined by ", " in that order spell the
    answer (the earliest such elements; labels may themselves hold ", "), else whose labels' comma-separated
    parts are the answer's parts in another order (AndroidWorld compares list answers part by part, in any
    order); None when the answer is no such list."""
    labels = [e.label for e in f.elements]
    failed: set[tuple[int, int]] = set()

    def match(pos: int, start: int) -> list[int] | None:
        if (pos, start) in failed:
            return None
        for i in range(start, len(labels)):
            lab = labels[i]
            if not lab or not text.startswith(lab, pos):
                continue
            end = pos + len(lab)
            if end == len(text):
                return [i]
            if text.startswith(", ", end):
                rest = match(end + 2, i + 1)
                if rest is not None:
                    return [i, *rest]
        failed.add((pos, start))
        return None

    if not text:
        return None
    return match(0, 0) or _unordered_selection(labels, text)


def _unordered_selection(labels: list[str | None], text: str, budget: int = 20_000) -> list[int] | None:
    """Elements whose labels' comma-separated parts (stripped) are, together, the answer's parts as a
    multiset, each element used once; ascending indices, or None (also when `budget` search nodes run out)."""
    want = Counter(p.strip() for p in text.split(","))
    parts = [Counter(p.strip() for p in lab.split(",")) if lab else None for lab in labels]
    left = [budget]

    def cover(need: Counter, used: frozenset[int]) -> list[int] | None:
        if not need:
            return []
        first = min(need)  # every selection must cover this part: try the elements that hold it
        for i, c in enumerate(parts):
            left[0] -= 1
            if left[0] <= 0:
                return None
            if c is None or i in used or first not in c or any(need[k] < v for k, v in c.items()):
                continue
            rest = cover(need - c, used | {i})
            if rest is not None:
                return sorted([i, *rest])
        return None

    return cover(want, frozenset())


def sum_selections(f: SampleFeat, total: int) -> list[list[int]]:
    """The selections of the non-zero quantities read (the screen's and earlier screens', element indices,
    ascending) that add up to `total`: every one, or the first SUM_CANDIDATES found within SUM_SEARCH search
    nodes. The empty selection gives 0."""
    terms = [(e.summand, i) for i, e in enumerate(f.elements) if e.summand > 0]
    terms.sort(reverse=True)
    rest = np.cumsum([v for v, _ in terms][::-1])[::-1].tolist() + [0]  # rest[k]: sum of terms[k:]
    found: list[list[int]] = []
    budget = [SUM_SEARCH]

    def walk(k: int, left: int, chosen: list[int]) -> None:
        budget[0] -= 1
        if left == 0:
            found.append(sorted(chosen))
            return
        if k == len(terms) or left > rest[k] or budget[0] <= 0 or len(found) >= SUM_CANDIDATES:
            return
        v, i = terms[k]
        if v <= left:
            walk(k + 1, left - v, chosen + [i])
        walk(k + 1, left, chosen)

    walk(0, total, [])
    return found[:SUM_CANDIDATES]
