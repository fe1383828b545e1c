"""What the network reads from a `PolicyInput`: the goal's tokens, every UI element as a bag of words with
flags and its box, the last few actions, and what the episode has done so far; as numpy arrays ready to pad.

Deterministic, no fitted vocabulary. Features are cached per goal, element and history string, and per goal
and screen every per-element array (a group's rollouts revisit the same screens), so collating has no
per-element loop."""

from __future__ import annotations

import dataclasses
import datetime as dt
import operator
import re
from bisect import bisect_left
from collections import Counter
from typing import Any

import numpy as np

from algos.policies.small.tokens import EMPTY, TOKEN_RE, Tokens, bucket, compact, find_runs, tokenize
from algos.prompt import PolicyInput
from voyager_gym import actions as A
from voyager_gym.actions import ACTION_TYPES, try_parse_action
from voyager_gym.observation import UIElement

SCREEN_W, SCREEN_H = 1080.0, 2400.0
MAX_ELEMENT_WORDS = 32  # words pooled per element (long note bodies are cut)
MAX_LABEL_TOKENS = 4096  # tokens of an element's label that typed text and answers can copy a span from
N_DENSE = 20  # element dense features, see Featurizer._element
OVERLAP_CACHE_SIZE = 4096  # goal-element overlap rows kept per goal
HIST_TYPE = {t: i + 1 for i, t in enumerate(ACTION_TYPES)}  # history type id of each action type
HIST_UNPARSED = len(ACTION_TYPES) + 1  # history type id of an action text that did not parse (0 = padding)
_TYPED = HIST_TYPE[A.INPUT_TEXT]  # history type id of input_text
# The quantity an element's label shows, as an answer reads it (see `measure`)
DURATION_RE = re.compile(r"(\d+):([0-5]\d):([0-5]\d)")
DISTANCE_RE = re.compile(r"(\d+(?:\.\d+)?) ?(mi|km|m)")
METERS = {"mi": 1609.344, "km": 1000.0, "m": 1.0}
WHEN_RE = re.compile(r"([A-Z][a-z]{2}, [A-Z][a-z]{2} \d{1,2} \d{4}), (\d{1,2}:\d{2})(?: - \d{1,2}:\d{2})?")
# What the episode has done beyond the last `history` actions, so a multi-entry task knows which entries are
# done: the texts typed and the labels of the elements acted on (`PolicyInput.acted`), in order, are matched
# to the goal's tokens, each to its first run at or after the previous match's end (the goal's "cursor": a
# goal lists its items in the order they are entered); goal tokens matched or past the cursor, and elements
# whose label is in the goal past it (the earliest of them: the next item), are flagged; label tokens among
# the words typed earlier too; CLS reads how many actions of each type were taken and how far the cursor is.
# Their weights start at zero, see LATER_PARAMETERS.
N_DONE = HIST_UNPARSED + 2  # history type ids: 0 (unused), one per action type, unparsed; the cursor's place
DONE_SCALE = 8.0
N_GOAL_PROGRESS = 3  # a goal token: matched by an earlier action, at or past the cursor, at the cursor
N_EL_PROGRESS = 5  # an element: its label was acted on; is in the goal past the cursor; is the earliest such
# on the screen; how far past; is in the goal only before the cursor


def measure(label: str | None) -> str | None:
    """The quantity a label shows, as an answer: minutes of an h:mm:ss duration, meters of a distance, or
    the start of an event's "Fri, Oct 27 2023, 15:15 - 15:45" as AndroidWorld's date-time answers are
    written ("October 27 2023 15:15")."""
    text = (label or "").strip()
    if dur := DURATION_RE.fullmatch(text):
        return str((int(dur[1]) * 3600 + int(dur[2]) * 60 + int(dur[3]) + 30) // 60)
    if dist := DISTANCE_RE.fullmatch(text):
        return str(round(float(dist[1]) * METERS[dist[2]]))
    if when := WHEN_RE.fullmatch(text):
        try:
            start = dt.datetime.strptime(f"{when[1]} {when[2]}", "%a, %b %d %Y %H:%M")
        except ValueError:
            return None
        return start.strftime("%B %d %Y %H:%M")
    return None


def sum_term(quantity: str | None) -> int:
    """A quantity as a term of a sum answer (0: none, or not a number, such as a date-time)."""
    return int(quantity) if quantity is not None and quantity.isdigit() else 0


@dataclasses.dataclass
class GoalFeat(Tokens):
    """A goal's hashed tokens (first `max_goal_tokens`) and their character offsets in the original text."""

    id_set: frozenset[int] = frozenset()
    lower: str = ""
    compact: str = ""  # compact(text): for matching labels written differently ("Wi‑Fi" vs "wifi")
    long_words: frozenset[str] = frozenset()  # compact words of 3+ characters
    runs: dict[str, tuple[list[int], int]] = dataclasses.field(default_factory=dict, repr=False)  # run_starts
    overlaps: dict[int, tuple[ElementFeat, np.ndarray]] = dataclasses.field(default_factory=dict, repr=False)
    screens: dict[tuple[int, ...], ScreenFeat] = dataclasses.field(default_factory=dict, repr=False)


@dataclasses.dataclass
class ElementFeat:
    """One UI element's cached features (independent of the goal)."""

    ids: np.ndarray  # int64 word buckets
    id_set: frozenset[int]  # unique ids, for goal overlap
    dense: np.ndarray  # float32 [N_DENSE] (the 2 goal-overlap slots are filled per sample)
    label: str | None  # the answer this element gives: text, else content description
    label_lower: str
    label_compact: str
    box: tuple[int, int, int, int] | None  # x_min, x_max, y_min, y_max in pixels
    tokens: Tokens | None = None  # the label's first MAX_LABEL_TOKENS tokens (spans to copy)
    quantity: str | None = None  # the quantity the label shows, as an answer (see `measure`)
    summand: int = 0  # the quantity as a whole number for sum answers (0 when the label shows none)
    lab: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros((4, 0), np.int64))  # int64 [4, S]:
    # the label tokens' ids, shapes, breaks and columns (S = 0 without tokens)


@dataclasses.dataclass
class ScreenFeat:
    """What a sample's features take from its goal and elements alone, ready to pad: cached per goal and
    screen (a task's group of rollouts revisits the same screens, as new objects with equal values)."""

    elements: tuple[ElementFeat, ...]
    dense: np.ndarray  # float32 [E, N_DENSE]: the elements' features with the goal-overlap slots filled
    has_label: np.ndarray  # bool [E]
    has_quantity: np.ndarray  # bool [E]: the label shows a quantity (see `measure`)
    summand: np.ndarray  # bool [E]: ... that is not zero
    el_flat: np.ndarray  # all elements' word buckets, concatenated
    el_lens: np.ndarray  # words per element
    lab_el: np.ndarray  # int64 [L]: the elements with label tokens
    lab_len: np.ndarray  # int64 [L]: their label tokens' counts
    lab: np.ndarray  # int64 [4, N]: their label tokens (`ElementFeat.lab`), concatenated
    runs: list[tuple[int, list[int]]]  # screen elements whose label is a run of the goal's tokens: (index,
    # where those runs start)
    by_label: dict[str, list[int]]  # screen elements by label


@dataclasses.dataclass
class SampleFeat:
    """Everything the network reads from one `PolicyInput`, as numpy arrays ready to pad."""

    goal: GoalFeat
    elements: list[ElementFeat]  # first max_elements
    screen: ScreenFeat  # the per-element arrays
    hist_types: list[int]  # most recent last, at most `history`
    hist_flat: np.ndarray
    hist_lens: list[int]
    step_frac: float
    n_cur: int  # elements[:n_cur] are on the screen, the rest were seen on earlier screens
    typed: np.ndarray  # word buckets typed earlier
    goal_progress: np.ndarray  # float32 [T, N_GOAL_PROGRESS] (a multi-entry goal's rows done)
    el_progress: np.ndarray  # float32 [E, N_EL_PROGRESS] (which listed item is next)
    done: np.ndarray  # float32 [N_DONE]: actions of each type taken so far this episode / DONE_SCALE (the
    # whole history), and the cursor's place (0..1)
    el_gap: np.ndarray  # int64 [E, 2]: (cursor, start of its goal run past the cursor), or 0s (see progress)
    app_match: np.ndarray | None = None  # float32 [A]: how much of each launcher app's name the goal names

    @property
    def dense(self) -> np.ndarray:
        return self.screen.dense


_ELEMENT_FIELDS = operator.attrgetter(*(f.name for f in dataclasses.fields(UIElement)
                                        if f.name != "bbox_pixels"))


class Featurizer:
    """Turns `PolicyInput`s into padded tensors. Caches are bounded and cleared when full."""

    def __init__(self, vocab_buckets: int, max_goal_tokens: int, max_elements: int, history: int,
                 cache_size: int = 100_000, memory: int = 0):
        self.vocab, self.max_goal, self.max_el = vocab_buckets, max_goal_tokens, max_elements
        self.memory = memory
        self.history = history
        self.cache_size = cache_size
        self._words: dict[str, np.ndarray] = {}
        self._goals: dict[str, GoalFeat] = {}
        self._elements: dict[tuple, ElementFeat] = {}
        self._by_id: dict[int, tuple[UIElement, ElementFeat]] = {}
        self._hist: dict[str, tuple[int, np.ndarray]] = {}

    def _cached(self, cache: dict, key: Any, make: Any) -> Any:
        v = cache.get(key)
        if v is None:
            if len(cache) >= self.cache_size:
                cache.clear()
            v = cache[key] = make(key)
        return v

    def words(self, text: str | None) -> np.ndarray:
        """Hashed lower-cased word tokens of a string."""
        if not text:
            return EMPTY
        return self._cached(self._words, text, lambda t: np.array(
            [bucket(w, self.vocab) for w in TOKEN_RE.findall(t.lower())], np.int64))

    def goal(self, text: str) -> GoalFeat:
        """Tokens of a goal, with the offsets that let a copied span reproduce the goal's exact characters."""
        return self._cached(self._goals, text, self._goal)

    def _goal(self, text: str) -> GoalFeat:
        t = self.tokens(text, self.max_goal)
        words = {compact(w) for w in re.findall(r"\w+", text)}
        return GoalFeat(text, t.ids, t.starts, t.ends, t.shapes, t.breaks, t.columns,
                        id_set=frozenset(t.ids.tolist()), lower=text.lower(), compact=compact(text),
                        long_words=frozenset(w for w in words if len(w) >= 3))

    def element(self, el: UIElement) -> ElementFeat:
        """Cached by identity first (the same observation objects are scored again in training epochs), then
        by value: the tuple of its fields, the pixel box's coordinates inlined (made, hashed and compared in
        C, several times faster than the dataclass's own hash and equality on a new object)."""
        hit = self._by_id.get(id(el))
        if hit is not None and hit[0] is el:
            return hit[1]
        b = el.bbox_pixels
        key = (_ELEMENT_FIELDS(el), *((b.x_min, b.x_max, b.y_min, b.y_max) if b is not None else ()))
        f = self._elements.get(key)
        if f is None:
            if len(self._elements) >= self.cache_size:
                self._elements.clear()
            f = self._elements[key] = self._element(el)
        if len(self._by_id) >= self.cache_size:
            self._by_id.clear()
        self._by_id[id(el)] = (el, f)  # keeps `el` alive, so its id cannot be reused while cached
        return f

    def _element(self, el: UIElement) -> ElementFeat:
        cls = el.class_name.rsplit(".", 1)[-1] if el.class_name else ""
        rid = (el.resource_id or el.resource_name or "").rsplit("/", 1)[-1]
        parts = [self.words(t) for t in (el.text, el.content_description, el.hint_text, cls, rid) if t]
        ids = np.concatenate(parts)[:MAX_ELEMENT_WORDS] if parts else EMPTY
        b = el.bbox_pixels
        box = (b.x_min, b.x_max, b.y_min, b.y_max) if b is not None else None
        dense = np.zeros(N_DENSE, np.float32)
        dense[:8] = [bool(v) for v in (el.is_clickable, el.is_editable, el.is_scrollable, el.is_checkable,
                                       el.is_checked, el.is_focused, el.is_selected, el.is_long_clickable)]
        if box is not None:
            dense[8:12] = [box[0] / SCREEN_W, box[1] / SCREEN_W, box[2] / SCREEN_H, box[3] / SCREEN_H]
        dense[12:14] = [bool(el.text), bool(el.content_description)]
        # dense[14:19], filled per goal (`_overlap`): share of the element's words in the goal; label occurs
        # in the goal; the same compared letters-and-digits only; a 3+ letter goal word occurs in the label;
        # the label's tokens are a run of the goal's tokens. dense[19], per screen: another element has its
        # label
        label = el.text or el.content_description or None
        qty = measure(label)
        tok = self.tokens(label, MAX_LABEL_TOKENS) if label else None
        lab = (np.stack([tok.ids, tok.shapes, tok.breaks, tok.columns]) if tok is not None
               else np.zeros((4, 0), np.int64))
        return ElementFeat(ids, frozenset(ids.tolist()), dense, label, (label or "").lower(),
                           compact(label or ""), box, tok, qty, sum_term(qty), lab)

    def tokens(self, text: str, limit: int) -> Tokens:
        """The first `limit` tokens of `text`, hashed into this featurizer's buckets."""
        return tokenize(text, limit, self.vocab)

    def _overlap(self, g: GoalFeat, e: ElementFeat) -> np.ndarray:
        """The element's dense features with the 5 goal-overlap slots filled (cached per goal and element):
        share of the element's words in the goal; its label occurs in the goal; the same compared letters and
        digits only; a 3+ letter goal word occurs in the label; its label's tokens are a run of the goal's
        (whole tokens: "24" is in "2023-10-24", "2" and "20" are not)."""
        hit = g.overlaps.get(id(e))
        if hit is not None and hit[0] is e:
            return hit[1]
        row = e.dense.copy()
        row[14] = len(e.id_set & g.id_set) / len(e.id_set) if e.id_set else 0.0
        row[15] = bool(e.label_lower) and e.label_lower in g.lower
        row[16] = len(e.label_compact) >= 3 and e.label_compact in g.compact
        row[17] = bool(e.label_compact) and any(w in e.label_compact for w in g.long_words)
        row[18] = e.tokens is not None and bool(find_runs(g.ids, e.tokens.ids))
        if len(g.overlaps) >= OVERLAP_CACHE_SIZE:
            g.overlaps.clear()
        g.overlaps[id(e)] = (e, row)  # keeps `e` alive, so its id cannot be reused while cached
        return row

    def screen(self, g: GoalFeat, els: list[ElementFeat], n_cur: int) -> ScreenFeat:
        """The per-element arrays of a goal and screen (`els[:n_cur]` on the screen), cached per goal by the
        elements' identities (a cached `ElementFeat` stands for its values)."""
        key = (n_cur, *map(id, els))
        hit = g.screens.get(key)
        if hit is not None and all(map(operator.is_, hit.elements, els)):
            return hit
        dense = np.array([self._overlap(g, e) for e in els], np.float32).reshape(len(els), N_DENSE)
        same = Counter(e.label_lower for e in els[:n_cur] if e.label_lower)  # another element of this screen
        dense[:n_cur, 19] = [same[e.label_lower] > 1 for e in els[:n_cur]]  # has its label (duplicate rows,
        # colour swatches)
        lab_el = [i for i, e in enumerate(els) if e.lab.shape[1]]
        sf = ScreenFeat(
            tuple(els), dense, has_label=np.array([e.label is not None for e in els], bool),
            has_quantity=np.array([e.quantity is not None for e in els], bool),
            summand=np.array([e.summand > 0 for e in els], bool),
            el_flat=np.concatenate([e.ids for e in els]) if els else EMPTY,
            el_lens=np.array([len(e.ids) for e in els], np.int64), lab_el=np.array(lab_el, np.int64),
            lab_len=np.array([els[i].lab.shape[1] for i in lab_el], np.int64),
            lab=np.concatenate([els[i].lab for i in lab_el], 1) if lab_el else np.zeros((4, 0), np.int64),
            runs=[], by_label={})
        for i, e in enumerate(els[:n_cur]):
            if e.label:
                sf.by_label.setdefault(e.label, []).append(i)
                starts, _ = self.run_starts(g, e.label, self.words(e.label))
                if starts:
                    sf.runs.append((i, starts))
        if len(g.screens) >= OVERLAP_CACHE_SIZE:
            g.screens.clear()
        g.screens[key] = sf  # holds the elements, so their ids cannot be reused while cached
        return sf

    def run_starts(self, g: GoalFeat, key: str, words: np.ndarray) -> tuple[list[int], int]:
        """(where `words` occur as a run of the goal's tokens, their count), cached per goal by `key` (a
        label, or a history entry's text)."""
        hit = g.runs.get(key)
        if hit is None:
            if len(g.runs) >= OVERLAP_CACHE_SIZE:
                g.runs.clear()
            hit = g.runs[key] = (find_runs(g.ids, words), len(words))
        return hit

    def progress(self, g: GoalFeat, x: PolicyInput, sc: ScreenFeat, items: list[tuple[int, np.ndarray]]
                 ) -> tuple[np.ndarray, np.ndarray, int, np.ndarray]:
        """Goal-token and element progress features (see N_GOAL_PROGRESS, N_EL_PROGRESS) and the cursor: each
        typed text and acted-on label of the episode, in order, takes the first run of the goal's tokens
        that it matches at or after the cursor, and the cursor moves past it (else the last run before it,
        flagged done, and the cursor stays)."""
        n_goal = len(g.ids)
        goal = np.zeros((n_goal, N_GOAL_PROGRESS), np.float32)
        cursor = 0
        off = len(x.history) - len(x.acted)  # acted[k] belongs to history[off + k] (right-aligned)
        for k, (h, (t, w)) in enumerate(zip(x.history, items, strict=True)):
            if t == _TYPED:
                starts, n = self.run_starts(g, h, w)
            else:
                label = x.acted[k - off] if k >= off else None
                if not label:
                    continue
                starts, n = self.run_starts(g, label, self.words(label))
            j = bisect_left(starts, cursor)
            if j < len(starts):
                goal[starts[j] : starts[j] + n, 0] = 1.0
                cursor = starts[j] + n
            elif starts:  # entered out of the goal's order (a playlist's title after its first file)
                goal[starts[-1] : starts[-1] + n, 0] = 1.0
        goal[cursor:, 1] = 1.0
        if cursor < n_goal:
            goal[cursor, 2] = 1.0
        el = np.zeros((len(sc.elements), N_EL_PROGRESS), np.float32)
        gap = np.zeros((len(sc.elements), 2), np.int64)
        for label in set(x.acted):
            el[sc.by_label.get(label, []), 0] = 1.0
        ahead: dict[int, int] = {}  # the next run of each element named past the cursor
        for i, starts in sc.runs:
            j = bisect_left(starts, cursor)
            if j < len(starts):
                ahead[i] = starts[j]
                gap[i] = cursor, starts[j]
                el[i, 1] = 1.0
                el[i, 3] = (starts[j] - cursor) / max(1, n_goal)
            else:
                el[i, 4] = 1.0
        if ahead:
            first = min(ahead.values())
            el[[i for i, a in ahead.items() if a == first], 2] = 1.0
        return goal, el, cursor, gap

    def history_item(self, text: str) -> tuple[int, np.ndarray]:
        """(type id, words of its text / app / direction / status) of one previous action's JSON text."""
        return self._cached(self._hist, text, self._history_item)

    def _history_item(self, text: str) -> tuple[int, np.ndarray]:
        a, _ = try_parse_action(text)
        if a is None:
            return HIST_UNPARSED, EMPTY
        words = [self.words(t) for t in (a.text, a.app_name, a.direction, a.goal_status) if t]
        return HIST_TYPE[a.action_type], (np.concatenate(words) if words else EMPTY)

    def sample(self, x: PolicyInput) -> SampleFeat:
        """Features of one input; elements past `max_elements` are dropped (the pointer cannot reach them).
        With `memory`, the last `memory` elements of earlier screens (`x.seen`) follow the screen's: sources
        to copy text and quantities from, never targets to act on."""
        g = self.goal(x.goal or "")
        els = [self.element(e if isinstance(e, UIElement) else UIElement.from_dict(e))
               for e in list(x.elements)[: self.max_el]]
        n_cur = len(els)
        if self.memory and x.seen:
            els += [self.element(e) for e in x.seen[-self.memory :]]
        screen = self.screen(g, els, n_cur)
        items = [self.history_item(h) for h in x.history]  # the whole episode so far (cached per text)
        hist = items[-self.history :] if self.history else []
        typed_words = [w for t, w in items if t == _TYPED]
        typed = np.unique(np.concatenate(typed_words)) if typed_words else EMPTY
        done = np.bincount([t for t, _ in items], minlength=N_DONE).astype(np.float32) / DONE_SCALE
        goal_progress, el_progress, cursor, el_gap = self.progress(g, x, screen, items)
        done[-1] = cursor / max(1, len(g.ids))
        return SampleFeat(
            goal=g, elements=els, screen=screen, hist_types=[t for t, _ in hist],
            hist_flat=np.concatenate([w for _, w in hist]) if hist else EMPTY,
            hist_lens=[len(w) for _, w in hist], step_frac=x.step / max(1, x.max_steps), n_cur=n_cur,
            typed=typed, goal_progress=goal_progress, el_progress=el_progress, done=done, el_gap=el_gap)
