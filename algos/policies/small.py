"""SmallPolicy: an element-pooled pointer model that trains in minutes on 2 CPU cores.

Instead of reading a token-level prompt, the policy reads structure: the goal as hashed word tokens (with
their character offsets and shapes: case, kind, and what touches each side, so a copied span finds the edges
of `"talk_edited.m4a"`), the last few actions, and every UI element as one vector (an EmbeddingBag over its
words plus flags and its box). The goal's tokens, each with a 5-wide convolution over its neighbours, are
encoded on their own (one transformer layer), then `[CLS] + history + elements` go through a small transformer
whose every layer also attends to the goal's tokens (a memory that does not depend on the screen: encoded once
per distinct goal of a batch, and kept while acting until the weights change, so an episode's steps and a
group's rollouts share it); heads pick each field of an AndroidWorld action: its type; an element (pointer)
and, for taps, where in it (its centre, an index action, or a point of a grid over its box: the far end of a
slider); a direction; a goal status; an app from the env's open_app vocabulary (`app_names`) or a name copied
from the goal ("the dialer app"); copied text for input_text and answers: a source (the goal, or an element's
label) and a token span in it, so typed text and answers can be read off the screen ("20" in "Attendance: 20
people"); and for answers that are lists, a Bernoulli per element whose labels are joined by ", " in element
order (an answer listing them in another order is the same answer: AndroidWorld compares list parts in any
order); computed answers count elements, read the quantity one element shows (minutes of a duration, meters of
a distance) or add those of a Bernoulli selection. A label is copyable over its first MAX_LABEL_TOKENS tokens
(a long note's every row). A value comes from CLS. The response is the usual `Reason: ... Action: {json}`
text, so the buffer, the env and the other policies never know the difference. `round_trip` encodes any action
as these targets and decodes it back (benchmarks/policy_coverage.py). With `memory=K` the policy also reads
the last K elements of the episode's earlier screens (`PolicyInput.seen`) after the screen's own, with their
own positions: a typed text, a span or a quantity may come from them, and so may a list's items and a sum's
terms (a list scrolled through); taps, typing targets and counts stay on the current screen. By default
(`memory_mode="encoder"`) they join the encoder's sequence; with `memory_mode="heads"` the encoder reads the
screen only, and the seen elements' states are their input vectors through a residual feed-forward layer,
read by the copy, list, quantity and sum heads alone (cheaper: the encoder's sequence does not grow; and what
earlier screens showed cannot change how an action on this screen is scored, except a copy from them).
(Reading them only as keys and values, like the goal, was cheaper but cloned worse: 0.731 against 0.786 on 20
demonstrations per task.)
Beyond the last `history` actions, the policy reads what the episode has done so far (a multi-entry goal's
steps differ only by which entries are entered, a playlist's by which files were added):
the texts typed and the labels of the elements acted on (`PolicyInput.acted`), in order, move a cursor over
the goal's tokens (`Featurizer.progress`); goal tokens done or past it key differently for the copy pointer,
each element knows whether its label was acted on and whether it is the goal's next listed item on the
screen, label tokens among the words typed earlier are flagged, and CLS reads how many actions of each type
were taken. A copied span's end reads how many line breaks, "|" separators or double quotes it crosses, and
goal and label tokens their column in a "|"-separated table (a row's fields end at separators, not at the
next line; a quoted title at its closing quote).

Scoring (`log_probs`) parses a response back into those fields. A response's log-prob is the sum of its
components' log-probs; text and answers marginalise over every source, span and answer form giving the same
string, so `log_probs(act(x).text) == act(x).logprob`. Components the model cannot represent (text in
neither the goal nor a label, an answer that is neither, an unknown app the goal does not name, an index
beyond the kept elements, an action type the screen rules out such as a click with no elements, or an
unparseable response as a whole) add the constant `FLOOR_LOGPROB` with no gradient. Sampling and scoring
both use `temperature` (logits / temperature), so PPO/GRPO ratios stay consistent.

Speed (2 cores, benchmarks/policy_speed.py): features are cached per goal / element / history string, and
per goal and screen every per-element array (a group's rollouts revisit the same screens), so collating has no
per-element loop; the goal is read as memory rather than as part of the sequence (queries are only CLS,
history and elements: ~2.2x faster encoding at rollout batch sizes); a batch runs in length-sorted groups
padded to their own longest sample, and inside the encoder's layers every per-position product runs on the
real positions only (packed rows; padding exists only inside attention, masked); the feed-forward width is
d_model; attention is two matmuls and a softmax (faster than SDPA's CPU kernel at these sizes, forward and
backward); fields are sampled by inverse CDF (one uniform a row). Pointer heads score `q . W(h)` as
`(q W) . h + q . b`, so no key projection of every element or goal token is ever made (nor its gradient), and
every element-keyed head runs in one batched product; a head's small layers on one input run as one product.
Label spans are scored over the flat list of label tokens (never a [B, E, S] tensor, let alone [B, E, S, d]: a
note body has thousands), start log-probs normalised per label by segment ops, ends only for the starts that
are asked about. Training: one
EmbeddingBag call per forward pass for every word (so one dense embedding gradient); gathers with gradients
are index_selects (an index_add backward rather than a serial accumulating index_put), or, for the goal
memory, a product with a one-hot matrix (a matrix-product backward). Because heads share products, a head no
response of a minibatch uses gets a gradient of exactly zero; updates leave such parameters where they are
(`drop_unused_grads`, with the gradient clipping in `clip_used_grads`) rather than moving them on Adam's stale
momentum.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import math
import operator
import re
import time
import zlib
from bisect import bisect_left
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from torch.optim.optimizer import register_optimizer_step_post_hook

from algos.policies.base import (
    ActionEval,
    Policy,
    PolicyOutput,
    check_lr_schedule,
    check_weights,
    clip_used_grads,
)
from algos.prompt import PolicyInput, render_response
from algos.timing import PHASES
from voyager_gym import actions as A
from voyager_gym.actions import ACTION_TYPES, DIRECTIONS, GOAL_STATUSES, Action, ActionError, try_parse_action
from voyager_gym.observation import UIElement

TOKEN_RE = re.compile(r"\d+|[^\W\d_]+|[^\s\w]|_")  # digit runs, letter runs, single symbols ("13h" is 13, h)
NON_ALNUM_RE = re.compile(r"[^0-9a-z]+")


def compact(text: str) -> str:
    """Lower-cased letters and digits only: "Wi‑Fi" and "wifi" agree, as do "OpenTracks" and "open tracks"."""
    return NON_ALNUM_RE.sub("", text.lower())
FLOOR_LOGPROB = -20.0  # log-prob of a response component the model cannot represent (constant, no gradient)
SCREEN_W, SCREEN_H = 1080.0, 2400.0
MAX_ELEMENT_WORDS = 32  # words pooled per element (long note bodies are cut)
MAX_LABEL_TOKENS = 4096  # tokens of an element's label that typed text and answers can copy a span from
LABEL_POSITIONS = 64  # label token positions with their own embedding (later tokens share the last one)
TAP_GRID = (9, 3)  # a tap inside an element: columns x rows of the grid of points (besides its centre)
NEG = -1e9  # finite "minus infinity" for masked logits: no NaN even when a whole row is masked
TYPE_INDEX = {t: i for i, t in enumerate(ACTION_TYPES)}
NEEDS_ELEMENT = (A.CLICK, A.DOUBLE_TAP, A.LONG_PRESS, A.INPUT_TEXT)  # pointer target required
OPTIONAL_ELEMENT = (A.SCROLL, A.SWIPE)  # pointer target or the "no element" slot
_NEEDS_EL_IDX = [TYPE_INDEX[t] for t in NEEDS_ELEMENT]
HIST_UNPARSED = len(ACTION_TYPES) + 1  # history type id of an action text that did not parse (0 = padding)
_TYPED = ACTION_TYPES.index(A.INPUT_TEXT) + 1  # history type id of input_text
_EMPTY = np.zeros(0, np.int64)
# An answer is copied text, the selected elements' labels joined by ", ", how many elements are selected, a
# quantity one element shows, in the unit such questions ask for (an h:mm:ss duration in whole minutes, a
# distance in whole meters), or the sum of the quantities of the selected elements of the screen
ANSWER_OPS = ("text", "list", "count", "measure", "sum")
SUM_CANDIDATES = 64  # selections scored per sum answer (every one, unless more give the same sum)
SUM_SEARCH = 20_000  # search nodes per sum answer (a screen has a few dozen quantities at most)
DURATION_RE = re.compile(r"(\d+):([0-5]\d):([0-5]\d)")
DISTANCE_RE = re.compile(r"(\d+(?:\.\d+)?) ?(mi|km|m)")
METERS = {"mi": 1609.344, "km": 1000.0, "m": 1.0}
WHEN_RE = re.compile(r"([A-Z][a-z]{2}, [A-Z][a-z]{2} \d{1,2} \d{4}), (\d{1,2}:\d{2})(?: - \d{1,2}:\d{2})?")


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
# How typed text is made from the copied text c and the target field's current text x (its label): c; c
# zero-padded to two digits when one digit ("3" -> "03"); c above x; c below x; c above x after a blank line
TEXT_FORMATS = ("copy", "pad2", "above", "below", "above_blank")
TAP_TYPES = (A.CLICK, A.DOUBLE_TAP, A.LONG_PRESS)  # element actions that may land off the element's centre
TEXT_USE = {A.INPUT_TEXT: 0, A.ANSWER: 1, A.OPEN_APP: 2}  # what a copied text is for (an embedding each)
N_DENSE = 20  # element dense features, see Featurizer._element
SFT_BATCH = 64  # fit_sft minibatch size
CHUNK = 32  # log_probs / values run a batch in length-sorted groups of at least this size
ACT_CHUNK = 64  # and act in groups of at least this many (no gradients: its padding costs less than a call)
FF_MULT = 1  # feed-forward width / d_model: 1 rather than the usual 4 (~35% faster; cloning learns as fast)
GOAL_CACHE_SIZE = 4096  # encoded goals kept while acting (until the weights change)
OVERLAP_CACHE_SIZE = 4096  # goal-element overlap rows kept per goal
# A copied span's boundaries: each goal / label token's shape (its own case and kind, and what touches it on
# either side), since hashed lower-cased words cannot tell `"talk_edited.m4a"` from `edited.m4a` or a quoted
# name from the sentence after it.
QUOTES = "\"'`\u201c\u201d\u2018\u2019"
N_SIDE, N_KIND = 6, 7  # side: text edge, space, newline, quote, other symbol, letter or digit (glued)
N_SHAPES = N_SIDE * N_KIND * N_SIDE
GOAL_CONTEXT = 5  # width of the goal tokens' local-context convolution (2 neighbours each side)
# A span's end also reads how many field breaks (a line break, a "|" separator, a double quote) lie inside it,
# 0.. MAX_BREAKS (more count as MAX_BREAKS): dot-product keys cannot say "the first break after the start",
# so a title's end, and its row's description's end, both before a line break, looked alike.
MAX_BREAKS = 3
FIELD_SEPARATORS = frozenset("|\t")
BREAKS = FIELD_SEPARATORS | {"\n", '"', "\u201c", "\u201d"}  # double quotes too: a quoted title ends at one
# A token's column in a separated table ("title|description|servings" rows): the field separators before it on
# its line, up to N_COLUMNS - 1 (0 in plain text). Word vectors, shapes and positions alone do not tell a
# row's second value from its third.
N_COLUMNS = 8
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
# Checkpoints saved before these weights load with them at their zero start (and act exactly as they did)
LATER_PARAMETERS = frozenset(f"{m}.{w}" for m in ("done_counts", "copy_order", "goal_progress", "el_progress",
                                                       "end_breaks", "el_goal_gap")
                             for w in ("weight", "bias")) | {"typed", "tok_column.weight"}
MEMORY_MODES = ("encoder", "heads")  # how SmallPolicy(memory=K) reads earlier screens' elements
_OPTIMIZER_STEPS = [0]  # optimizer steps taken in this process (any optimizer), see PointerNet.goal_memory


def _count_optimizer_step(*_: Any) -> None:
    _OPTIMIZER_STEPS[0] += 1


register_optimizer_step_post_hook(_count_optimizer_step)


def _side(c: str) -> int:
    if not c:
        return 0
    if c == "\n":
        return 2
    if c.isspace():
        return 1
    if c in QUOTES:
        return 3
    return 5 if c.isalnum() else 4


def _kind(tok: str) -> int:
    """lower-case word, Capitalised, ALL CAPS, mixed case, digits, a quote, another symbol."""
    if tok.isdigit():
        return 4
    if not tok[0].isalpha():
        return 5 if tok in QUOTES else 6
    if tok.islower():
        return 0
    if tok[0].isupper() and tok[1:].islower():
        return 1
    return 2 if tok.isupper() else 3


def token_shape(text: str, start: int, end: int) -> int:
    """Shape id of the token text[start:end]: (side before, kind, side after), in [0, N_SHAPES)."""
    before = _side(text[start - 1]) if start else 0
    after = _side(text[end]) if end < len(text) else 0
    return (before * N_KIND + _kind(text[start:end])) * N_SIDE + after


_BREAK_CODES = np.array([ord(c) for c in BREAKS], np.uint32)
_SEPARATOR_CODES = np.array([ord(c) for c in FIELD_SEPARATORS], np.uint32)
_BREAK_RE = re.compile("[" + re.escape("".join(sorted(BREAKS))) + "]")


def _breaks_and_columns(text: str, starts: list[int], ends: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """`Tokens.breaks` and `Tokens.columns` of the tokens at these character offsets: a break follows token i
    when a line break, a field separator or a double quote comes before the next token's end; a column counts
    the separators between its line's start and the token."""
    n = len(starts)
    if not _BREAK_RE.search(text):  # plain text (most labels): no breaks, every token in column 0
        return np.zeros(n, np.int64), np.zeros(n, np.int64)
    code = np.frombuffer(text.encode("utf-32-le"), np.uint32)  # one code point each: str offsets index it
    brk = np.concatenate([[0], np.cumsum(np.isin(code, _BREAK_CODES))])
    e = np.array(ends, np.int64)
    breaks = np.concatenate([[0], np.cumsum(brk[e[1:]] - brk[e[:-1]] > 0)])[:n]
    sep = np.concatenate([[0], np.cumsum(np.isin(code, _SEPARATOR_CODES))])
    nl = np.flatnonzero(code == ord("\n"))
    s = np.array(starts, np.int64)
    line_start = np.concatenate([[0], nl + 1])[np.searchsorted(nl, s)]
    return breaks.astype(np.int64), np.minimum(sep[s] - sep[line_start], N_COLUMNS - 1).astype(np.int64)


def _run_starts(hay: np.ndarray, needle: np.ndarray) -> list[int]:
    """Every index where `needle` occurs as a contiguous run of `hay` (token ids), ascending."""
    n = len(needle)
    if not n or n > len(hay):
        return []
    hits = np.flatnonzero(hay[: len(hay) - n + 1] == needle[0])
    return [int(i) for i in hits if np.array_equal(hay[i : i + n], needle)]


def bucket(word: str, n: int) -> int:
    """Stable hash bucket of a lower-cased word (crc32: identical across processes and machines)."""
    return zlib.crc32(word.encode("utf-8")) % n


# ------------------------------------------------------------------------------------------------------------
# Features: deterministic, no fitted vocabulary; cached per goal, element and history string.
# ------------------------------------------------------------------------------------------------------------
@dataclasses.dataclass
class Tokens:
    """A text's first tokens (hashed) with their character offsets, so a copied span gives exact text."""

    text: str
    ids: np.ndarray  # int64 [S]
    starts: list[int]
    ends: list[int]
    shapes: np.ndarray  # int64 [S]: `token_shape` of each token
    breaks: np.ndarray = dataclasses.field(default_factory=lambda: _EMPTY)  # int64 [S]: field breaks before
    # each token (a span s..e holds breaks[e] - breaks[s] of them, see MAX_BREAKS)
    columns: np.ndarray = dataclasses.field(default_factory=lambda: _EMPTY)  # int64 [S]: see N_COLUMNS

    def span_text(self, s: int, e: int) -> str:
        return self.text[self.starts[s] : self.ends[e]]

    def spans_for(self, text: str) -> list[tuple[int, int]]:
        """Every token span (s, e) whose character range reproduces `text` exactly."""
        p = self.text.find(text) if text else -1
        if p < 0:  # most labels a candidate search visits hold no match: no offset tables for them
            return []
        start_at = {c: i for i, c in enumerate(self.starts)}
        end_at = {c: i for i, c in enumerate(self.ends)}
        out = []
        while p >= 0:
            s, e = start_at.get(p), end_at.get(p + len(text))
            if s is not None and e is not None and e >= s:
                out.append((s, e))
            p = self.text.find(text, p + 1)
        return out


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
            return _EMPTY
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
        ids = np.concatenate(parts)[:MAX_ELEMENT_WORDS] if parts else _EMPTY
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
        ms = list(TOKEN_RE.finditer(text))[:limit]
        starts, ends = [m.start() for m in ms], [m.end() for m in ms]
        return Tokens(text, np.array([bucket(m.group().lower(), self.vocab) for m in ms], np.int64), starts,
                      ends, np.array([token_shape(text, m.start(), m.end()) for m in ms], np.int64),
                      *_breaks_and_columns(text, starts, ends))

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
        row[18] = e.tokens is not None and bool(_run_starts(g.ids, e.tokens.ids))
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
            el_flat=np.concatenate([e.ids for e in els]) if els else _EMPTY,
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
            hit = g.runs[key] = (_run_starts(g.ids, words), len(words))
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
            return HIST_UNPARSED, _EMPTY
        words = [self.words(t) for t in (a.text, a.app_name, a.direction, a.goal_status) if t]
        return TYPE_INDEX[a.action_type] + 1, (np.concatenate(words) if words else _EMPTY)

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
        typed = np.unique(np.concatenate(typed_words)) if typed_words else _EMPTY
        done = np.bincount([t for t, _ in items], minlength=N_DONE).astype(np.float32) / DONE_SCALE
        goal_progress, el_progress, cursor, el_gap = self.progress(g, x, screen, items)
        done[-1] = cursor / max(1, len(g.ids))
        return SampleFeat(
            goal=g, elements=els, screen=screen, hist_types=[t for t, _ in hist],
            hist_flat=np.concatenate([w for _, w in hist]) if hist else _EMPTY,
            hist_lens=[len(w) for _, w in hist], step_frac=x.step / max(1, x.max_steps), n_cur=n_cur,
            typed=typed, goal_progress=goal_progress, el_progress=el_progress, done=done, el_gap=el_gap)


@dataclasses.dataclass
class Batch:
    """Padded tensors for one forward pass (masks are True where a position is real).

    Every word bag (one per token of each distinct goal, history action and element, then one per sample's
    whole goal, in that order; padded positions empty), together with the launcher apps' names and every label
    token (a bag of one), goes through a single EmbeddingBag call: one dense embedding gradient per pass."""

    feats: list[SampleFeat]
    words: torch.Tensor  # flat word buckets of all bags
    offsets: torch.Tensor  # [U*T + B*H + B*E + B]
    goal_texts: list[str]  # the batch's U distinct goals (each is encoded once)
    goal_of: torch.Tensor  # [B] which distinct goal each sample has
    goal_mask_u: torch.Tensor  # [U, T] where the distinct goals' tokens are
    goal_shape_u: torch.Tensor  # [U, T] their tokens' shapes (0 at padding)
    goal_mask: torch.Tensor  # [B, T]
    hist_types: torch.Tensor  # [B, H] (0 = no action)
    el_dense: torch.Tensor  # [B, E, N_DENSE]
    el_mask: torch.Tensor  # [B, E]
    step: torch.Tensor  # [B, 1]
    n_goal: torch.Tensor  # [B]
    n_el: torch.Tensor  # [B]
    has_label: torch.Tensor  # [B, E] element has a label (text to copy or list)
    lab_ids: torch.Tensor  # [N] word buckets of every element's label tokens, flat
    lab_at: torch.Tensor  # [N, 3] (sample, element, position) of each flat label token
    lab_shape: torch.Tensor  # [N] each flat label token's shape
    lab_breaks: torch.Tensor  # [N] each flat label token's `Tokens.breaks`
    lab_columns: torch.Tensor  # [N] and its `Tokens.columns`
    goal_columns_u: torch.Tensor  # [U, T] the distinct goals' tokens' columns
    goal_breaks: torch.Tensor  # [B, T] each goal token's `Tokens.breaks`
    lab_len: torch.Tensor  # [B, E] how many label tokens each element has (0: none)
    lab_off: torch.Tensor  # [B, E] where each element's label tokens start in the flat arrays
    has_quantity: torch.Tensor  # [B, E] the element's label is a quantity (see `measure`)
    summand: torch.Tensor  # [B, E] an element read (on the screen or earlier) whose quantity is not zero
    cur_mask: torch.Tensor  # [B, E] the element is on the screen (not one seen earlier)
    n_cur: torch.Tensor  # [B]
    goal_progress: torch.Tensor  # [B, T, N_GOAL_PROGRESS] see Featurizer.progress
    el_progress: torch.Tensor  # [B, E, N_EL_PROGRESS] see Featurizer.progress
    lab_typed: torch.Tensor  # [N] the flat label token was typed earlier in the episode
    done: torch.Tensor  # [B, N_DONE] actions of each type taken so far / DONE_SCALE, and the cursor's place
    el_gap: torch.Tensor  # [B, E, 2] see SampleFeat.el_gap
    app_match: torch.Tensor | None = None  # [B, A] the goal names launcher app a (0..1)
    # filled by PointerNet.encode from the same EmbeddingBag call as every other bag (one dense gradient):
    app_words: torch.Tensor | None = None  # [A, d] mean word vector of each launcher app's name
    lab_words: torch.Tensor | None = None  # [N, d] word vector of each flat label token


def collate(feats: list[SampleFeat], history: int, device: torch.device | str) -> Batch:
    """Pad a list of sample features to the batch's longest goal / element list."""
    bsz = len(feats)
    t_max = max(1, max(len(f.goal.ids) for f in feats))
    e_max = max(1, max(len(f.elements) for f in feats))
    h = max(1, history)
    n_goal = np.array([len(f.goal.ids) for f in feats], np.int64)
    n_el = np.array([len(f.elements) for f in feats], np.int64)
    n_cur = np.array([f.n_cur for f in feats], np.int64)
    first: dict[str, int] = {}
    goal_of = np.array([first.setdefault(f.goal.text, len(first)) for f in feats], np.int64)
    uniq = [feats[i].goal for i in np.unique(goal_of, return_index=True)[1]]
    n_goal_u = np.array([len(g.ids) for g in uniq], np.int64)
    goal_lens = (np.arange(t_max)[None] < n_goal_u[:, None]).astype(np.int64)
    goal_shape = np.zeros((len(uniq), t_max), np.int64)
    goal_columns = np.zeros((len(uniq), t_max), np.int64)
    for u, g in enumerate(uniq):
        goal_shape[u, : len(g.shapes)] = g.shapes
        goal_columns[u, : len(g.columns)] = g.columns
    hist_lens = np.zeros((bsz, h), np.int64)
    el_lens = np.zeros((bsz, e_max), np.int64)
    dense = np.zeros((bsz, e_max, N_DENSE), np.float32)
    has_label = np.zeros((bsz, e_max), bool)
    has_quantity = np.zeros((bsz, e_max), bool)
    summand = np.zeros((bsz, e_max), bool)
    hist_types = np.zeros((bsz, h), np.int64)
    labs, lab_b, lab_e, lab_n = [], [], [], []  # label tokens of every element that has them, flat
    typed = []  # (sample << 32) + word bucket of the words each sample typed earlier
    goal_breaks = np.zeros((bsz, t_max), np.int64)
    goal_progress = np.zeros((bsz, t_max, N_GOAL_PROGRESS), np.float32)
    el_progress = np.zeros((bsz, e_max, N_EL_PROGRESS), np.float32)
    el_gap = np.zeros((bsz, e_max, 2), np.int64)
    for b, f in enumerate(feats):
        goal_breaks[b, : len(f.goal.breaks)] = f.goal.breaks
        goal_progress[b, : len(f.goal_progress)] = f.goal_progress
        el_progress[b, : len(f.el_progress)] = f.el_progress
        el_gap[b, : len(f.el_gap)] = f.el_gap
        k, sc = n_el[b], f.screen
        if k:
            dense[b, :k] = sc.dense
            has_label[b, :k] = sc.has_label
            el_lens[b, :k] = sc.el_lens
            has_quantity[b, :k] = sc.has_quantity
            summand[b, :k] = sc.summand
            if len(sc.lab_el):
                labs.append(sc.lab)
                lab_b.append(np.full(len(sc.lab_el), b, np.int64))
                lab_e.append(sc.lab_el)
                lab_n.append(sc.lab_len)
                if len(f.typed):
                    typed.append(f.typed + (b << 32))
        if f.hist_types:  # right-aligned: the last slot is the newest action
            hist_types[b, h - len(f.hist_types) :] = f.hist_types
            hist_lens[b, h - len(f.hist_types) :] = f.hist_lens
    lab = np.concatenate(labs, 1) if labs else np.zeros((4, 0), np.int64)
    lab_b, lab_e, n_lab = (np.concatenate(a) if a else _EMPTY for a in (lab_b, lab_e, lab_n))
    lab_lens = np.zeros((bsz, e_max), np.int64)
    lab_lens[lab_b, lab_e] = n_lab
    lab_off = np.zeros((bsz, e_max), np.int64)
    lab_off[lab_b, lab_e] = np.cumsum(n_lab) - n_lab
    lab_row = np.repeat(lab_b, n_lab)
    lab_at = np.stack([lab_row, np.repeat(lab_e, n_lab),
                       np.arange(n_lab.sum()) - np.repeat(np.cumsum(n_lab) - n_lab, n_lab)], 1)
    lab_typed = (np.isin(lab[0] + (lab_row << 32), np.concatenate(typed)) if typed
                 else np.zeros(lab.shape[1], bool))  # each label token: its sample typed that word earlier
    goal_words = [f.goal.ids for f in feats]
    hist_words, el_words = [f.hist_flat for f in feats], [f.screen.el_flat for f in feats]
    words = np.concatenate([g.ids for g in uniq] + hist_words + el_words + goal_words)
    lens = np.concatenate([goal_lens.ravel(), hist_lens.ravel(), el_lens.ravel(), n_goal])
    offsets = np.zeros_like(lens)
    np.cumsum(lens[:-1], out=offsets[1:])
    t = lambda a: torch.from_numpy(a).to(device)  # noqa: E731
    n_goal_t, n_el_t = t(n_goal), t(n_el)
    return Batch(
        feats=feats,
        words=t(words),
        offsets=t(offsets),
        goal_texts=[g.text for g in uniq],
        goal_of=t(goal_of),
        goal_mask_u=t(goal_lens.astype(bool)),
        goal_shape_u=t(goal_shape),
        goal_mask=torch.arange(t_max, device=device)[None] < n_goal_t[:, None],
        hist_types=t(hist_types),
        el_dense=t(dense),
        el_mask=torch.arange(e_max, device=device)[None] < n_el_t[:, None],
        step=torch.tensor([[f.step_frac] for f in feats], dtype=torch.float32, device=device),
        n_goal=n_goal_t,
        n_el=n_el_t,
        has_label=t(has_label),
        lab_ids=t(lab[0]),
        lab_at=t(lab_at),
        lab_shape=t(lab[1]),
        lab_breaks=t(lab[2]),
        lab_columns=t(lab[3]),
        goal_columns_u=t(goal_columns),
        goal_breaks=t(goal_breaks),
        has_quantity=t(has_quantity),
        summand=t(summand),
        cur_mask=torch.arange(e_max, device=device)[None] < t(n_cur)[:, None],
        n_cur=t(n_cur),
        lab_len=t(lab_lens),
        lab_off=t(lab_off),
        app_match=(t(np.stack([f.app_match for f in feats]).astype(np.float32))
                   if all(f.app_match is not None for f in feats) else None),
        goal_progress=t(goal_progress),
        el_progress=t(el_progress),
        lab_typed=t(lab_typed),
        done=t(np.stack([f.done for f in feats])),
        el_gap=t(el_gap),
    )


# ------------------------------------------------------------------------------------------------------------
# The network
# ------------------------------------------------------------------------------------------------------------
class Block(nn.Module):
    """Pre-norm transformer layer with an additive key mask (about 2x faster on CPU than
    nn.TransformerEncoderLayer given a padding mask, which then leaves its fast path)."""

    def __init__(self, d: int, heads: int, ff: int):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.out = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.ff1, self.ff2 = nn.Linear(d, ff), nn.Linear(ff, d)

    def memory(self, m: torch.Tensor) -> torch.Tensor:
        """Keys and values [N, T, 2d] of memory states `m` [N, T, d] (positions every query of `forward` reads
        besides the sequence itself), with this layer's own projections; `heads_of` splits them."""
        d = m.shape[-1]
        return F.linear(self.ln1(m), self.qkv.weight[d:], self.qkv.bias[d:])

    def heads_of(self, kv: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Keys and values [N, heads, T, d / heads] from `memory`'s [N, T, 2d] (views, no copy)."""
        n, t, d2 = kv.shape
        k, v = kv.view(n, t, 2, self.heads, d2 // (2 * self.heads)).permute(2, 0, 3, 1, 4)
        return k, v

    def forward(self, x: torch.Tensor, attend: torch.Tensor,
                memory: tuple[torch.Tensor, torch.Tensor] | None = None) -> torch.Tensor:
        """`attend` [B, 1, 1, L]: 0 for keys to read, NEG for padding; with `memory` (keys and values from
        `memory()`), L counts its positions first."""
        x = x + self.out(self._attend(self.qkv(self.ln1(x)), attend, memory))
        return self._feed_forward(x)

    def packed(self, x: torch.Tensor, rows: torch.Tensor, shape: tuple[int, int], attend: torch.Tensor,
               memory: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        """`forward` on the real positions only: `x` [N, d] holds them, `rows` [N] their places in the padded
        [B, L] = `shape` sequence. Only attention sees the padded layout (padding's queries, keys and values
        are zero, its keys masked by `attend`); every per-position layer runs on the N real rows."""
        (bsz, n), d = shape, x.shape[-1]
        qkv = self.qkv(self.ln1(x))
        qkv = qkv.new_zeros(bsz * n, 3 * d).index_copy_(0, rows, qkv).view(bsz, n, 3 * d)
        x = x + self.out(self._attend(qkv, attend, memory).view(bsz * n, d).index_select(0, rows))
        return self._feed_forward(x)

    def _attend(self, qkv: torch.Tensor, attend: torch.Tensor,
                memory: tuple[torch.Tensor, torch.Tensor] | None) -> torch.Tensor:
        """Attention output [B, n, d] from the sequence's projections `qkv` [B, n, 3d], by two matmuls and a
        softmax rather than SDPA's CPU kernel: at these sizes (a few dozen queries of width 24, 2 threads)
        they are ~1.3x faster forward and ~1.5x forward and backward."""
        bsz, n, d3 = qkv.shape
        # split, not unbind: its backward writes the three gradients straight into qkv's layout (one copy)
        q, k, v = (t.view(bsz, n, self.heads, -1).transpose(1, 2) for t in qkv.split(d3 // 3, -1))
        if memory is not None:
            k, v = torch.cat([memory[0], k], 2), torch.cat([memory[1], v], 2)
        s = torch.matmul(q, k.transpose(-1, -2))
        a = torch.matmul(torch.softmax(s.mul_(q.shape[-1] ** -0.5).add_(attend), -1), v)
        return a.transpose(1, 2).reshape(bsz, n, d3 // 3)

    def _feed_forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.ff2(F.gelu(self.ff1(self.ln2(x))))


class PointerNet(nn.Module):
    """Goal encoder, then an encoder over [CLS] + history + elements reading the goal as memory, with
    per-field heads (all logits, no sampling here)."""

    def __init__(self, d_model: int, layers: int, heads: int, max_elements: int, max_goal_tokens: int,
                 history: int, vocab_buckets: int, app_words: list[np.ndarray], goal_layers: int = 1,
                 memory: int = 0, memory_mode: str = "encoder"):
        super().__init__()
        d = d_model
        self.d = d
        self.words = nn.EmbeddingBag(vocab_buckets, d, mode="mean")  # shared: goal tokens, elements, history
        nn.init.normal_(self.words.weight, std=1.0)
        self.goal_pos = nn.Embedding(max_goal_tokens, d)
        self.tok_shape = nn.Embedding(N_SHAPES, d)  # goal and label tokens: case, kind, what touches them
        # each goal token also reads its neighbours' words and shapes (a span's edges are local: `name: X`)
        self.goal_context = nn.Conv1d(d, d, GOAL_CONTEXT, padding=GOAL_CONTEXT // 2)
        nn.init.zeros_(self.goal_context.weight)
        nn.init.zeros_(self.goal_context.bias)
        self.el_pos = nn.Embedding(max_elements, d)
        self.hist_pos = nn.Embedding(max(1, history), d)
        self.segment = nn.Embedding(4, d)  # cls, goal, history, element
        self.el_dense = nn.Linear(N_DENSE, d)
        self.hist_type = nn.Embedding(len(ACTION_TYPES) + 2, d)
        self.step = nn.Linear(1, d)
        self.goal_blocks = nn.ModuleList(Block(d, heads, FF_MULT * d) for _ in range(goal_layers))
        self._goal_cache: dict[str, torch.Tensor] = {}  # goal text -> its memory [T, d + layers * 2d]
        self._cache_version: tuple[int, int] = (-1, -1)
        self._params: list[nn.Parameter] | None = None
        self.goal_norm = nn.LayerNorm(d)
        self.blocks = nn.ModuleList(Block(d, heads, FF_MULT * d) for _ in range(layers))
        self.norm = nn.LayerNorm(d)
        self.type_head = nn.Linear(d, len(ACTION_TYPES))
        self.dir_head = nn.Linear(d, len(DIRECTIONS))
        self.status_head = nn.Linear(d, len(GOAL_STATUSES))
        # app head: a pointer over app names, each keyed by its name's words (shared with the goal's words, so
        # "Open Markor" points at Markor from the first step) plus a learned per-app vector
        self.app_q = nn.Linear(d, d)
        self.app_emb = nn.Embedding(len(app_words), d)
        lens = np.array([len(w) for w in app_words], np.int64)
        self.register_buffer("app_words", torch.from_numpy(np.concatenate(app_words)), persistent=False)
        self.register_buffer("app_offsets", torch.from_numpy(np.cumsum(lens) - lens), persistent=False)
        self.app_match_w = nn.Parameter(torch.tensor(3.0))
        self.value_head = nn.Sequential(nn.Linear(d, d), nn.Tanh(), nn.Linear(d, 1))
        nn.init.zeros_(self.value_head[2].weight)
        nn.init.zeros_(self.value_head[2].bias)
        self.el_q, self.el_k = nn.Linear(d, d), nn.Linear(d, d)
        self.el_type = nn.Embedding(len(ACTION_TYPES), d)  # the pointer query depends on the chosen type
        self.no_element = nn.Parameter(torch.zeros(d))  # key of the "no element" slot (scroll/swipe)
        self.app_from_goal = nn.Linear(d, 1)  # the app's name is copied from the goal (an alias it names)
        # copied text (typed, answered, an app name): a source (the goal or an element's label), then a span
        self.text_use = nn.Embedding(3, d)  # what the text is for: input_text, answer, open_app
        self.span_from_element = nn.Linear(d, d)
        self.src_q, self.src_k = nn.Linear(d, d), nn.Linear(d, d)
        self.goal_source = nn.Parameter(torch.zeros(d))  # key of the "copy from the goal" source
        self.start_q, self.start_k = nn.Linear(d, d), nn.Linear(d, d)
        self.end_q, self.end_k, self.end_from_start = nn.Linear(d, d), nn.Linear(d, d), nn.Linear(d, d)
        self.tok_pos = nn.Embedding(LABEL_POSITIONS, d)
        self.tok_edge = nn.Embedding(4, d)  # a label token is inner, its first, its last, or the only one
        self.label_from_element = nn.Linear(d, d)
        self.lstart_q, self.lstart_k = nn.Linear(d, d), nn.Linear(d, d)
        self.lend_q, self.lend_k = nn.Linear(d, d), nn.Linear(d, d)
        # answers: copied text, or a list of selected elements' labels (one Bernoulli per element)
        self.op_head = nn.Linear(d, len(ANSWER_OPS))
        self.sel_q, self.sel_k = nn.Linear(d, d), nn.Linear(d, d)
        self.cnt_q, self.cnt_k = nn.Linear(d, d), nn.Linear(d, d)  # counted elements (a Bernoulli each)
        self.qty_q, self.qty_k = nn.Linear(d, d), nn.Linear(d, d)  # the quantity an answer reads
        self.sum_q, self.sum_k = nn.Linear(d, d), nn.Linear(d, d)  # the quantities a sum adds
        self.fmt_head = nn.Linear(d, len(TEXT_FORMATS))  # how typed text is made from the copy
        # where inside the chosen element a tap lands: its centre (an index action) or a grid point
        self.tap_from_element = nn.Linear(d, d)
        self.tap_head = nn.Linear(d, 1 + TAP_GRID[0] * TAP_GRID[1])
        for emb in (self.goal_pos, self.el_pos, self.hist_pos, self.segment, self.hist_type, self.el_type,
                    self.app_emb, self.text_use, self.tok_pos, self.tok_edge, self.tok_shape):
            nn.init.normal_(emb.weight, std=0.1)  # small next to word vectors, so words dominate at first
        self.memory = memory
        if memory:  # elements of earlier screens: their own positions (last seen = last) instead of el_pos
            self.seen_pos = nn.Embedding(memory, d)
            nn.init.normal_(self.seen_pos.weight, std=0.1)
        # what the episode has done (LATER_PARAMETERS: zero at first, made last so the others draw as before)
        self.typed = nn.Parameter(torch.zeros(d))  # added to copy keys of label tokens typed earlier
        self.done_counts = nn.Linear(N_DONE, d)  # CLS reads how many actions of each type were taken
        self.goal_progress = nn.Linear(N_GOAL_PROGRESS, d)  # added to the copy keys of goal tokens
        self.el_progress = nn.Linear(N_EL_PROGRESS, d)  # added to the elements' inputs
        # per copy, how much a span's start prefers each goal-token progress flag and earlier tokens (a
        # multi-entry goal is entered in order): one weight per flag, and one times its relative position
        self.copy_order = nn.Linear(d, N_GOAL_PROGRESS + 1)
        self.end_breaks = nn.Linear(d, 1 + MAX_BREAKS)  # a span end's bias by the field breaks it crosses
        self.tok_column = nn.Embedding(N_COLUMNS, d)  # goal and label tokens: their column in a table
        nn.init.zeros_(self.tok_column.weight)
        for lin in (self.done_counts, self.goal_progress, self.el_progress, self.copy_order, self.end_breaks):
            nn.init.zeros_(lin.weight)
            nn.init.zeros_(lin.bias)
        self.memory_mode = memory_mode
        if memory and memory_mode == "heads":  # earlier screens' elements bypass the encoder: their states
            # are their input vectors through a residual feed-forward layer (made last: others draw as before)
            self.seen_ff = nn.Sequential(nn.Linear(d, FF_MULT * d), nn.GELU(), nn.Linear(FF_MULT * d, d))
            self.seen_norm = nn.LayerNorm(d)
        # what lies in the goal between the cursor and where an element's label is named: the mean state of
        # those goal tokens, added to the element's input (another item still to do, or only a separator)
        self.el_goal_gap = nn.Linear(d, d)
        nn.init.zeros_(self.el_goal_gap.weight)
        nn.init.zeros_(self.el_goal_gap.bias)

    def app_logits(self, h_cls: torch.Tensor, match: torch.Tensor | None,
                   words: torch.Tensor) -> torch.Tensor:
        """Unscaled pointer scores over apps (`words` [A, d]: their names' mean word vectors), plus a learned
        weight on "the goal names this app" (a copy feature that transfers to apps never seen in training)."""
        keys = words + self.app_emb.weight
        logits = (self.app_q(h_cls) @ keys.T) / math.sqrt(self.d)
        if match is not None:
            logits = logits + self.app_match_w * match
        return torch.cat([logits, self.app_from_goal(h_cls)], 1)  # last slot: copy the name from the goal

    def encode(self, b: Batch) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Hidden states of CLS [B, d], goal tokens [B, T, d] and elements [B, E, d].

        The goal is encoded on its own (`goal_layers` blocks over its tokens) and read as memory: in every
        layer, CLS, history and elements attend to the goal's tokens and to each other, while the goal's
        states do not depend on the screen. So each distinct goal of a batch is encoded once, and without
        gradients (acting) its states, keys and values are kept until the weights change."""
        bsz, t_len = b.goal_mask.shape
        n_goals = len(b.goal_texts)
        e_len, h_len = b.el_mask.shape[1], b.hist_types.shape[1]
        seg = self.segment.weight
        n_w, n_app, n_lab = len(b.words), len(self.app_offsets), len(b.lab_ids)
        lab_offsets = torch.arange(n_lab, device=b.words.device) + n_w + len(self.app_words)  # one token each
        pooled = self.words(torch.cat([b.words, self.app_words, b.lab_ids]),
                            torch.cat([b.offsets, self.app_offsets + n_w, lab_offsets]))
        goal, hist, el, goal_mean, b.app_words, b.lab_words = pooled.split(
            [n_goals * t_len, bsz * h_len, bsz * e_len, bsz, n_app, n_lab])
        mem = self.goal_memory(b, goal.view(n_goals, t_len, -1))  # [U, T, d + layers * 2d]
        # CLS starts as the goal's mean word vector
        cls = (seg[0] + self.step(b.step) + goal_mean + self.done_counts(b.done))[:, None]
        hist = (hist.view(bsz, h_len, -1) + self.hist_type(b.hist_types) + self.hist_pos.weight[:h_len]
                + seg[2])
        if self.memory:  # positions: the screen's elements 0.., then the seen ones after el_pos's table
            idx = torch.arange(e_len, device=b.n_cur.device)[None]
            pos = torch.where(idx < b.n_cur[:, None], idx, len(self.el_pos.weight) + idx - b.n_cur[:, None])
            table = torch.cat([self.el_pos.weight, self.seen_pos.weight])
            el_pos = table.index_select(0, pos.clamp(max=len(table) - 1).flatten()).view(bsz, e_len, -1)
        else:
            el_pos = self.el_pos.weight[:e_len]
        el = (el.view(bsz, e_len, -1) + self.el_dense(b.el_dense) + el_pos + seg[3]
              + self.el_progress(b.el_progress))
        d = self.d
        goals, mem = mem, _pick_rows(mem, b.goal_of)  # each sample's goal: [B, T, d + layers * 2d]
        h_goal, *layer_kv = mem.split([d] + [2 * d] * len(self.blocks), -1)  # one gradient copy, not one each
        if t_len:  # each element's mean goal state over its gap, by cumulative sums (cs[:, k]: k tokens)
            if torch.is_grad_enabled():
                cs = F.pad(h_goal.cumsum(1), (0, 0, 1, 0))
                ends = cs.gather(1, b.el_gap.flatten(1)[..., None].expand(-1, -1, d))
            else:  # the same sums, once per distinct goal rather than once per sample
                cs = F.pad(goals[..., :d].cumsum(1), (0, 0, 1, 0)).flatten(0, 1)  # [U * (T + 1), d]
                at = b.goal_of[:, None] * (t_len + 1) + b.el_gap.flatten(1)
                ends = cs.index_select(0, at.flatten()).view(bsz, -1, d)
            lo, hi = ends.view(bsz, e_len, 2, -1).unbind(2)
            width = (b.el_gap[..., 1] - b.el_gap[..., 0]).clamp(min=1)[..., None]
            el = el + self.el_goal_gap((hi - lo) / width)
        heads_only = self.memory and self.memory_mode == "heads"
        if heads_only:  # only the screen's elements are encoded (sample i's are el[i, :n_cur])
            c = int(b.n_cur.max()) if bsz else 0
            seen, el, el_mask = el, el[:, :c], b.cur_mask[:, :c]
        else:
            el_mask = b.el_mask
        x = torch.cat([cls, hist, el], 1)
        keys = torch.cat([b.goal_mask, torch.ones(bsz, 1, dtype=torch.bool, device=x.device),
                          b.hist_types > 0, el_mask], 1)  # keys each query may read: goal memory first
        attend = torch.zeros(keys.shape, device=x.device).masked_fill(~keys, NEG)[:, None, None, :]
        n = x.shape[1]
        rows = keys[:, t_len:].flatten().nonzero()[:, 0]  # the real positions: CLS, actions taken, elements
        x = x.flatten(0, 1).index_select(0, rows)
        for i, blk in enumerate(self.blocks):
            x = blk.packed(x, rows, (bsz, n), attend, blk.heads_of(layer_kv[i]))
        x = self.norm(x)
        hs = x.new_zeros(bsz * n, d).index_copy_(0, rows, x).view(bsz, n, d)  # padding's states are zero
        h_el = hs[:, 1 + h_len :]
        if heads_only:  # the seen elements' states, in the places after each sample's screen elements
            h_el = torch.where(b.cur_mask[..., None], F.pad(h_el, (0, 0, 0, e_len - h_el.shape[1])),
                               self.seen_norm(seen + self.seen_ff(seen)))
        return hs[:, 0], h_goal, h_el

    def goal_memory(self, b: Batch, words: torch.Tensor) -> torch.Tensor:
        """Memory [U, T, d + layers * 2d] of the batch's distinct goals from their pooled token vectors
        `words` [U, T, d]: each token's state, then per main layer the keys and values it offers
        (`Block.memory`). With gradients all goals are encoded together; without, each goal missing from the
        cache is encoded alone at its own length (so what is cached never depends on which batch first asked
        for it)."""
        n_goals, t_len, d = words.shape
        x = words + self.tok_shape(b.goal_shape_u) + self.tok_column(b.goal_columns_u)
        if torch.is_grad_enabled():
            return self._encode_goals(x, b.goal_mask_u)
        if self._params is None:
            self._params = list(self.parameters())
        # in-place edits of a weight bump its version counter (load_state_dict, foreach optimisers), but fused
        # optimisers do not: every optimizer step anywhere also counts (`_optimizer_steps`)
        version = (sum(p._version for p in self._params), _OPTIMIZER_STEPS[0])
        if version != self._cache_version or len(self._goal_cache) > GOAL_CACHE_SIZE:
            self._goal_cache, self._cache_version = {}, version
        lens = b.goal_mask_u.sum(1).tolist()
        for u, text in enumerate(b.goal_texts):
            if text not in self._goal_cache:
                n = lens[u]
                self._goal_cache[text] = self._encode_goals(x[u : u + 1, :n], b.goal_mask_u[u : u + 1, :n])[0]
        mem = nn.utils.rnn.pad_sequence([self._goal_cache[text] for text in b.goal_texts], batch_first=True)
        return F.pad(mem, (0, 0, 0, t_len - mem.shape[1]))  # cached rows, padded to the batch's goal length

    def _encode_goals(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """Goal memory (see `goal_memory`) from token vectors `x` [N, T, d] (words + shapes): plus their local
        context (padding reads as zeros, so a goal encoded alone or padded in a batch gets the same states),
        position, segment, then the goal blocks."""
        t_len = x.shape[1]
        if t_len:
            x = x * mask[..., None]
            x = (x + self.goal_context(x.transpose(1, 2)).transpose(1, 2) + self.goal_pos.weight[:t_len]
                 + self.segment.weight[1])
            attend = torch.zeros(mask.shape, device=x.device).masked_fill(~mask, NEG)[:, None, None, :]
            for blk in self.goal_blocks:
                x = blk(x, attend)
        h = self.goal_norm(x)
        return torch.cat([h, *(blk.memory(h) for blk in self.blocks)], -1)


def _pick_rows(x: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
    """x[idx] for x [n, ...]. With gradients it is a product with the one-hot matrix [len(idx), n] (exact:
    each output is one input times 1), whose backward is a matrix product too, several times faster on CPU
    than index_select's (a scatter-add over every element of the output)."""
    if not torch.is_grad_enabled():
        return x.index_select(0, idx)
    one_hot = F.one_hot(idx, len(x)).to(x.dtype)
    return (one_hot @ x.flatten(1)).view(len(idx), *x.shape[1:])


def _linears(x: torch.Tensor, layers: Sequence[nn.Linear]) -> tuple[torch.Tensor, ...]:
    """Several linear layers of the same input as one matrix product (their weights stacked): their outputs,
    in order. A head's small layers each cost more in call overhead than in arithmetic."""
    out = F.linear(x, torch.cat([lin.weight for lin in layers]), torch.cat([lin.bias for lin in layers]))
    return out.split([lin.out_features for lin in layers], -1)


def _bilinear(q: torch.Tensor, lin: nn.Linear, h: torch.Tensor) -> torch.Tensor:
    """Pointer scores `q . lin(h)` [B, K, N] of queries `q` [B, K, d] over states `h` [B, N, d], computed as
    `(q W) . h + q . bias`: the keys `lin(h)` [B, N, d] (and, training, their gradient) are never made, which
    saves two of a pass's largest matrix products per head (N = elements or goal tokens >> K)."""
    return torch.baddbmm((q @ lin.bias)[..., None], q @ lin.weight, h.transpose(1, 2))


def _bilinear_many(heads: list[tuple[torch.Tensor, nn.Linear]], h: torch.Tensor) -> torch.Tensor:
    """`_bilinear` for several (query [B, d], key projection) pairs over the same states `h` [B, N, d]: one
    batched product, [B, len(heads), N]."""
    w = torch.stack([q @ lin.weight for q, lin in heads], 1)
    bias = torch.stack([q @ lin.bias for q, lin in heads], 1)
    return torch.baddbmm(bias[..., None], w, h.transpose(1, 2))


def _masked_log_softmax(logits: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    return torch.log_softmax(logits.masked_fill(~mask, NEG), -1)


def _segment_log_softmax(x: torch.Tensor, seg: torch.Tensor, n_seg: int) -> torch.Tensor:
    """Log-softmax of flat values `x` [N] within each segment `seg` [N] (ids < n_seg)."""
    if not len(x):
        return x
    top = x.new_full((n_seg,), NEG).scatter_reduce(0, seg, x.detach(), "amax")[seg]
    tot = x.new_zeros(n_seg).index_add(0, seg, torch.exp(x - top))
    return x - top - torch.log(tot)[seg]


@dataclasses.dataclass
class TextHead:
    """Log-probs of a copied text: its source (slot 0 the goal, slot i + 1 element i's label), then a span in
    it, start first and end given the start (ends are computed only for the starts asked about)."""

    source: torch.Tensor  # [B, 1 + E]
    goal_start: torch.Tensor  # [B, T]
    goal_end_q: torch.Tensor  # [B, d]: the end query's context part
    end_k: nn.Linear  # end keys, applied as a bilinear form (see `_bilinear`)
    goal_states: torch.Tensor  # [B, T, d]: goal token states (the end query also reads the start's)
    goal_mask: torch.Tensor  # [B, T]
    end_from_start: nn.Module
    label_start: torch.Tensor  # [N] log p(start) of every flat label token, within its element's label
    label_end: torch.Tensor  # [N] end logits of every flat label token
    label_len: torch.Tensor  # [B, E] tokens in each element's label
    label_off: torch.Tensor  # [B, E] where each element's tokens start in the flat tensors
    scale: float  # 1 / (sqrt(d) * temperature)
    breaks: torch.Tensor  # [B, 1 + MAX_BREAKS] end logit bias by the field breaks inside the span (tempered)
    goal_breaks: torch.Tensor  # [B, T] `Tokens.breaks` of the goal's tokens
    label_breaks: torch.Tensor  # [N] those of every flat label token

    def _break_bias(self, rows: torch.Tensor, at: torch.Tensor, start_at: torch.Tensor) -> torch.Tensor:
        """End logit bias [N, S] of spans from tokens with `start_at` [N] breaks before them to tokens with
        `at` [N, S]."""
        return self.breaks[rows].gather(1, (at - start_at[:, None]).clamp(0, MAX_BREAKS))

    def goal_end(self, rows: torch.Tensor, starts: torch.Tensor) -> torch.Tensor:
        """log p(end | start) [N, T] for goal spans starting at `starts` in samples `rows`."""
        q = self.goal_end_q[rows] + self.end_from_start(self.goal_states[rows, starts])
        logits = _bilinear(q[:, None], self.end_k, self.goal_states[rows])[:, 0] * self.scale
        brk = self.goal_breaks[rows]
        logits = logits + self._break_bias(rows, brk, brk.gather(1, starts[:, None])[:, 0])
        t = torch.arange(self.goal_mask.shape[1], device=rows.device)
        ok = self.goal_mask[rows] & (t[None] >= starts[:, None])
        ok[:, 0] |= ~ok.any(1)
        return _masked_log_softmax(logits, ok)

    def _label_rows(self, flat: torch.Tensor, rows: torch.Tensor,
                    els: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Element `els`' label values of sample `rows`, padded to the longest of them: [N, S] values, token
        mask and positions. Only the labels asked about are gathered (a note body may have thousands)."""
        n, off = self.label_len[rows, els], self.label_off[rows, els]
        pos = torch.arange(max(1, int(n.max())) if len(n) else 1, device=rows.device)
        ok = pos[None] < n[:, None]
        if not len(flat):
            return flat.new_full(ok.shape, NEG), ok, pos
        vals = flat[(off[:, None] + pos[None]).clamp(max=len(flat) - 1)]
        return vals.masked_fill(~ok, NEG), ok, pos

    def label_start_lp(self, rows: torch.Tensor, els: torch.Tensor) -> torch.Tensor:
        """log p(start) [N, S] over element `els`' label tokens (a finite dummy row where it has none)."""
        lp, ok, _ = self._label_rows(self.label_start, rows, els)
        lp[:, 0] = torch.where(ok.any(1), lp[:, 0], torch.zeros_like(lp[:, 0]))
        return lp

    def label_start_at(self, rows: torch.Tensor, els: torch.Tensor, starts: torch.Tensor) -> torch.Tensor:
        """log p(start) [N] of the given starts (each inside its element's label)."""
        return self.label_start[self.label_off[rows, els] + starts]

    def label_end_lp(self, rows: torch.Tensor, els: torch.Tensor, starts: torch.Tensor) -> torch.Tensor:
        """log p(end | start) [N, S] for spans of element `els`' labels starting at `starts`."""
        en, ok, pos = self._label_rows(self.label_end, rows, els)
        if len(self.label_breaks):
            last, off = len(self.label_breaks) - 1, self.label_off[rows, els]
            at = self.label_breaks[(off[:, None] + pos[None]).clamp(max=last)]
            en = en + self._break_bias(rows, at, self.label_breaks[(off + starts).clamp(max=last)])
        ok = ok & (pos[None] >= starts[:, None])
        ok[:, 0] |= ~ok.any(1)  # no label there (another source was chosen): a finite dummy row
        return _masked_log_softmax(en, ok)


@dataclasses.dataclass
class Heads:
    """Log-probabilities of every field given the (chosen or target) action types, already tempered. The
    fields after `value` depend on the chosen element and are added by `SmallPolicy._conditioned`."""

    type: torch.Tensor  # [B, 13]
    element: torch.Tensor  # [B, 1 + E]: slot 0 = no element
    direction: torch.Tensor  # [B, 4]
    status: torch.Tensor  # [B, 2]
    app: torch.Tensor  # [B, A + 1]: the launcher's apps, then "a name copied from the goal"
    op: torch.Tensor  # [B, len(ANSWER_OPS)]
    value: torch.Tensor  # [B]
    tap: torch.Tensor | None = None  # [B, 1 + cells]: slot 0 = the element's centre (an index action)
    text: TextHead | None = None
    select: torch.Tensor | None = None  # [B, E] Bernoulli logits of "this element's label is in the list"
    count: torch.Tensor | None = None  # [B, E] Bernoulli logits of "this element is counted"
    quantity: torch.Tensor | None = None  # [B, E] log-probs of the element whose quantity is the answer
    sum: torch.Tensor | None = None  # [B, E] Bernoulli logits of "this element's quantity is added"
    fmt: torch.Tensor | None = None  # [B, len(TEXT_FORMATS)] how typed text is made from the copied text


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


def type_mask(b: Batch) -> torch.Tensor:
    """Action types the observation allows: element types need elements, input_text text to copy, answer
    text to copy or labels to list."""
    bsz = b.n_el.shape[0]
    m = torch.ones(bsz, len(ACTION_TYPES), dtype=torch.bool, device=b.n_el.device)
    no_el = b.n_cur == 0  # elements seen earlier are no targets
    m[:, _NEEDS_EL_IDX] &= ~no_el[:, None]
    has_text = (b.n_goal > 0) | b.has_label.any(1)
    m[:, TYPE_INDEX[A.INPUT_TEXT]] &= has_text
    m[:, TYPE_INDEX[A.ANSWER]] &= has_text
    return m


# ------------------------------------------------------------------------------------------------------------
# The policy
# ------------------------------------------------------------------------------------------------------------
class SmallPolicy(Policy):
    """Element-pooled pointer policy (2.0M parameters at the defaults, 1.6M of them the hashed word table);
    see the module docstring."""

    name = "small"
    trainable = True
    has_value = True

    def __init__(self, app_names: Sequence[str], d_model: int = 96, layers: int = 2, heads: int = 4,
                 max_elements: int = 48, max_goal_tokens: int = 256, history: int = 4,
                 vocab_buckets: int = 2**14, seed: int = 0, device: str = "cpu", temperature: float = 1.0,
                 goal_layers: int = 1, memory: int = 0, memory_mode: str = "encoder"):
        """`app_names`: the app head's classes, the env's open_app vocabulary (`voyager_gym.env.app_names`);
        saved in the config, so a checkpoint keeps the vocabulary it was trained with. `memory`: elements of
        the episode's earlier screens read after the screen's own (0: none); `memory_mode`: how they are read,
        `encoder` (in the encoder's sequence, beside the screen's elements) or `heads` (only by the heads
        that copy, list, read and add; cheaper: the encoder's sequence stays the screen's)."""
        if isinstance(app_names, str) or not app_names or not all(isinstance(a, str) for a in app_names):
            raise ValueError(f"app_names={app_names!r}: expected a non-empty list of app names (the env's "
                             "metadata['app_names'])")
        if temperature <= 0:
            raise ValueError(f"temperature must be > 0, got {temperature}; use act(greedy=True) for argmax")
        if memory_mode not in MEMORY_MODES:
            raise ValueError(f"memory_mode={memory_mode!r}: expected one of {', '.join(MEMORY_MODES)}")
        if d_model % heads:
            raise ValueError(f"d_model ({d_model}) must be divisible by heads ({heads})")
        self.config = dict(d_model=d_model, layers=layers, goal_layers=goal_layers, heads=heads,
                           max_elements=max_elements,
                           max_goal_tokens=max_goal_tokens, history=history, vocab_buckets=vocab_buckets,
                           seed=seed, temperature=temperature, memory=memory, memory_mode=memory_mode,
                           app_names=list(app_names))
        self.app_names: list[str] = self.config["app_names"]
        self._app_index = {a.lower(): i for i, a in enumerate(self.app_names)}
        self._app_keys = [(compact(a), {compact(w) for w in TOKEN_RE.findall(a)} - {""})
                          for a in self.app_names]
        self._app_match_cache: dict[str, np.ndarray] = {}
        self.device = torch.device(device)
        self.temperature = temperature
        self.history = history
        self.featurizer = Featurizer(vocab_buckets, max_goal_tokens, max_elements, history, memory=memory)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            self.model = PointerNet(d_model, layers, heads, max_elements, max_goal_tokens, history,
                                    vocab_buckets, [self.featurizer.words(a) for a in self.app_names],
                                    goal_layers, memory, memory_mode)
            self.model.to(self.device)
        self.model.eval()  # no dropout anywhere: train and eval forward passes are the same function
        self.generator = torch.Generator(device=self.device).manual_seed(seed)
        self._opt: torch.optim.Adam | None = None

    # -- features and heads --------------------------------------------------------------------------------
    def featurize(self, batch: Sequence[PolicyInput]) -> list[SampleFeat]:
        with PHASES("featurise"):
            feats = [self.featurizer.sample(x) for x in batch]
            for f in feats:
                f.app_match = self._app_match(f.goal)
        return feats

    def _app_match(self, g: GoalFeat) -> np.ndarray:
        """Per launcher app: the share of its name's words in the goal, or 1 when its name, letters and digits
        only, occurs in the goal ("Open the contacts app" names Contacts; "opentracks" names OpenTracks)."""
        hit = self._app_match_cache.get(g.text)
        if hit is None:
            if len(self._app_match_cache) >= 10_000:
                self._app_match_cache.clear()
            words = {compact(w) for w in TOKEN_RE.findall(g.text)}
            hit = np.array([1.0 if c and c in g.compact else len(ws & words) / max(1, len(ws))
                            for c, ws in self._app_keys], np.float32)
            self._app_match_cache[g.text] = hit
        return hit

    def _heads(self, b: Batch, hidden: tuple[torch.Tensor, torch.Tensor, torch.Tensor], lp_type: torch.Tensor,
               types: torch.Tensor) -> Heads:
        """Field distributions from encoded states; the element pointer is conditioned on `types` [B]. The
        heads that need the chosen element (tap, copied text, list selection) come from `_conditioned`."""
        m, tau, scale = self.model, self.temperature, 1.0 / math.sqrt(self.model.d)
        h_cls, h_goal, h_el = hidden
        bsz = h_cls.shape[0]
        # element pointer with a "no element" slot 0, allowed for every type that does not need an element
        el_q, dir_logits, status_logits, op_logits, value_hidden = _linears(
            h_cls, (m.el_q, m.dir_head, m.status_head, m.op_head, m.value_head[0]))
        q = el_q + m.el_type(types)
        el_logits = torch.cat([q @ m.no_element[:, None], _bilinear(q[:, None], m.el_k, h_el)[:, 0]], 1)
        el_logits = el_logits * scale / tau
        needs = torch.zeros(bsz, dtype=torch.bool, device=types.device)
        for i in _NEEDS_EL_IDX:
            needs |= types == i
        el_mask = torch.cat([~needs[:, None], b.cur_mask], 1)
        op_mask = torch.stack([torch.ones_like(b.n_goal, dtype=torch.bool), b.has_label.any(1),
                               b.cur_mask.any(1), b.has_quantity.any(1), b.summand.any(1)], 1)  # ANSWER_OPS
        app_mask = torch.ones(bsz, len(self.app_names) + 1, dtype=torch.bool, device=types.device)
        app_mask[:, -1] = b.n_goal > 0  # a name copied from the goal needs a goal
        return Heads(
            type=lp_type,
            element=_masked_log_softmax(el_logits, el_mask),
            direction=torch.log_softmax(dir_logits / tau, -1),
            status=torch.log_softmax(status_logits / tau, -1),
            app=_masked_log_softmax(m.app_logits(h_cls, b.app_match, b.app_words) / tau, app_mask),
            op=_masked_log_softmax(op_logits / tau, op_mask),
            value=m.value_head[2](m.value_head[1](value_hidden)).squeeze(-1),
        )

    def _conditioned(self, b: Batch, hidden: tuple[torch.Tensor, torch.Tensor, torch.Tensor], hd: Heads,
                     types: torch.Tensor, slots: torch.Tensor, text: bool) -> None:
        """Add the heads that depend on the chosen pointer slot [B]: where a tap lands inside the element, and
        (with `text`) the copied text and the answer list. The text's context says what it is for (typed into
        the chosen field, an answer, or an app name) and which field it goes to."""
        m, tau, scale = self.model, self.temperature, 1.0 / math.sqrt(self.model.d)
        h_cls, h_goal, h_el = hidden
        bsz = h_cls.shape[0]
        slot_states = torch.cat([torch.zeros_like(h_el[:, :1]), h_el], 1)  # slot 0 = no element
        h_sel = slot_states[torch.arange(bsz, device=slots.device), slots]
        if not text:
            hd.tap = torch.log_softmax(m.tap_head(h_cls + m.tap_from_element(h_sel)) / tau, -1)
            return
        tap_sel, span_sel = _linears(h_sel, (m.tap_from_element, m.span_from_element))
        hd.tap = torch.log_softmax(m.tap_head(h_cls + tap_sel) / tau, -1)
        use = torch.zeros_like(types)
        for t, u in TEXT_USE.items():
            use = torch.where(types == TYPE_INDEX[t], u, use)
        ctx = h_cls + span_sel + m.text_use(use)
        (src_q, sel_q, cnt_q, qty_q, sum_q, lstart_q, lend_q, start_q, end_q, order, end_breaks,
         fmt_logits) = _linears(ctx, (m.src_q, m.sel_q, m.cnt_q, m.qty_q, m.sum_q, m.lstart_q, m.lend_q,
                                      m.start_q, m.end_q, m.copy_order, m.end_breaks, m.fmt_head))
        goal_only = use == TEXT_USE[A.OPEN_APP]
        # one batched product scores every element-keyed head at once (see `_bilinear`): the copy source, the
        # answer list, the counted elements, the quantity read, the summands, and the two label-span queries'
        # element part (label tokens key on their element's state through `label_from_element`)
        lq = [lstart_q, lend_q]
        lu = [q @ k_lin.weight for q, k_lin in zip(lq, (m.lstart_k, m.lend_k), strict=True)]  # W^T q: [B, d]
        heads = [(src_q, m.src_k), (sel_q, m.sel_k), (cnt_q, m.cnt_k), (qty_q, m.qty_k), (sum_q, m.sum_k),
                 *((u, m.label_from_element) for u in lu)]
        per_el = _bilinear_many(heads, h_el) * (scale / tau)  # [B, 7, E]
        src_el, sel, cnt, qty, add, lst_el, len_el = per_el.unbind(1)
        # source: the goal, or an element with a label (app names come from the goal only)
        src_logits = torch.cat([heads[0][0] @ m.goal_source[:, None] * (scale / tau), src_el], 1)
        src_mask = torch.cat([(b.n_goal > 0)[:, None], (b.lab_len > 0) & ~goal_only[:, None]], 1)
        src_mask[:, 0] |= ~src_mask.any(1)  # rows finite where nothing can be copied (types masked there)
        # spans in the goal: contextual token states, the end conditioned on the start
        # order [B, N_GOAL_PROGRESS + 1]: weights on the progress flags, on position
        h_goal = h_goal + m.goal_progress(b.goal_progress)  # goal tokens done, or past the cursor, key apart
        st_logits = _bilinear(start_q[:, None], m.start_k, h_goal)[:, 0] * scale / tau
        rel = torch.arange(b.goal_mask.shape[1], device=ctx.device)[None] / b.n_goal.clamp(min=1)[:, None]
        st_logits = st_logits + (torch.einsum("btf,bf->bt", b.goal_progress, order[:, :-1])
                                 + order[:, -1:] * rel) / tau
        gm = b.goal_mask.clone()
        gm[:, 0] |= ~gm.any(1)
        # spans in element labels: word vectors by position plus the element's state, scored flat (no
        # [B, E, S] tensor, let alone [B, E, S, d]: a note body may have thousands of tokens):
        # q . W(v) = (W^T q) . v + q . bias, the element's part already scored above
        e_len = b.lab_len.shape[1]
        row, el, pos = b.lab_at.unbind(1) if len(b.lab_ids) else (b.lab_ids,) * 3
        at_el = row * e_len + el
        edge = (pos == 0).long() + 2 * (pos == b.lab_len[row, el] - 1).long()
        # index_select rather than indexing: its backward is an index_add, not a serial accumulating index_put
        far = pos.clamp(max=LABEL_POSITIONS - 1)
        tok = (b.lab_words + m.tok_pos.weight.index_select(0, far) + m.tok_edge.weight.index_select(0, edge)
               + m.tok_shape.weight.index_select(0, b.lab_shape)
               + m.tok_column.weight.index_select(0, b.lab_columns)
               + b.lab_typed[:, None] * m.typed)

        def label_logits(q: torch.Tensor, u: torch.Tensor, k: nn.Linear, of_el: torch.Tensor) -> torch.Tensor:
            own = (tok * u.index_select(0, row)).sum(-1) + (q @ k.bias).index_select(0, row)
            return own * scale / tau + of_el.flatten().index_select(0, at_el)

        w = order.index_select(0, row)  # the same start preferences over label tokens typed earlier
        st_lab = (label_logits(lq[0], lu[0], m.lstart_k, lst_el)
                  + (w[:, 0] * b.lab_typed + w[:, -1] * pos / b.lab_len[row, el].clamp(min=1)) / tau)
        lp_lst = _segment_log_softmax(st_lab, at_el, bsz * e_len)
        en = label_logits(lq[1], lu[1], m.lend_k, len_el)
        hd.text = TextHead(_masked_log_softmax(src_logits, src_mask), _masked_log_softmax(st_logits, gm),
                           end_q, m.end_k, h_goal, gm, m.end_from_start, lp_lst, en, b.lab_len,
                           b.lab_off, scale / tau, end_breaks / tau, b.goal_breaks, b.lab_breaks)
        hd.select = sel.masked_fill(~b.has_label, NEG)  # lists: labelled, on the screen or read earlier
        hd.count = cnt.masked_fill(~b.cur_mask, NEG)
        qty_mask = b.has_quantity.clone()
        qty_mask[:, 0] |= ~qty_mask.any(1)
        hd.quantity = _masked_log_softmax(qty, qty_mask)
        hd.sum = add.masked_fill(~b.summand, NEG)  # non-zero quantities read (screen and earlier)
        hd.fmt = torch.log_softmax(fmt_logits / tau, -1)

    def _score(self, hd: Heads, tg: Targets) -> torch.Tensor:
        """Sum of component log-probs per sample [B]; unrepresentable components add FLOOR_LOGPROB. Text
        and answers marginalise over every source, span and answer form giving the same string."""
        dev = hd.type.device
        bsz = len(tg.type)
        ar = torch.arange(bsz, device=dev)
        lt = lambda v: torch.tensor(v, dtype=torch.long, device=dev)  # noqa: E731
        lb = lambda v: torch.tensor(v, dtype=torch.bool, device=dev)  # noqa: E731
        floor = torch.full((bsz,), FLOOR_LOGPROB, device=dev)
        zero = torch.zeros(bsz, device=dev)

        def part(lp: torch.Tensor | None, idx: list[int | None], used: list[bool]) -> torch.Tensor:
            if lp is None or not any(used):
                return zero
            val = lp[ar, lt([i if i is not None else 0 for i in idx])]
            ok = lb([i is not None for i in idx])
            return torch.where(lb(used), torch.where(ok, val, floor), zero)

        kinds = [ACTION_TYPES[t] for t in tg.type]
        tmask = torch.gather(type_mask_from_heads(hd), 1, lt(tg.type)[:, None])[:, 0]
        total = torch.where(tmask, hd.type[ar, lt(tg.type)], floor)
        total = total + part(hd.element, tg.element, [k in NEEDS_ELEMENT + OPTIONAL_ELEMENT for k in kinds])
        total = total + part(hd.tap, tg.tap, [k in TAP_TYPES for k in kinds])
        total = total + part(hd.direction, tg.direction, [k in OPTIONAL_ELEMENT for k in kinds])
        total = total + part(hd.status, tg.status, [k == A.STATUS for k in kinds])
        total = total + part(hd.app, tg.app, [k == A.OPEN_APP for k in kinds])
        n_apps = hd.app.shape[1] - 1
        is_typed = [k == A.INPUT_TEXT for k in kinds]
        formatted = ([[c[k - 1] if c else None for c in tg.formatted] for k in range(1, len(TEXT_FORMATS))]
                     if any(is_typed) else [])
        text, *text_formatted = self._text_lp(hd, [tg.texts, *formatted], floor)
        none = floor.new_full((bsz,), NEG)

        def either(*paths: torch.Tensor) -> torch.Tensor:
            """log-sum of the paths that spell the same string; floor where none does."""
            out = torch.logsumexp(torch.stack(paths), 0)
            return torch.where(out > NEG / 2, out, floor)

        def path(ok: list[bool], lp: torch.Tensor) -> torch.Tensor:
            return torch.where(lb(ok), lp, none)

        app_copied = [k == A.OPEN_APP and tg.app[i] == n_apps for i, k in enumerate(kinds)]
        total = total + torch.where(lb(app_copied), text, zero)
        if any(is_typed):
            fmt = hd.fmt if hd.fmt is not None else torch.zeros(bsz, len(TEXT_FORMATS), device=dev)
            paths = [path([bool(c) for c in tg.texts], fmt[:, 0] + text)]
            for k, (cands, lp) in enumerate(zip(formatted, text_formatted, strict=True), 1):
                paths.append(path([bool(c) for c in cands], fmt[:, k] + lp))
            typed = either(*paths)
            total = total + torch.where(lb(is_typed), typed, zero)
        is_answer = lb([k == A.ANSWER for k in kinds])
        if bool(is_answer.any()):
            ans = either(path([bool(c) for c in tg.texts], hd.op[:, 0] + text),
                         path([c is not None for c in tg.select], hd.op[:, 1] + self._select_lp(hd, tg)),
                         path([c is not None for c in tg.count], hd.op[:, 2] + self._count_lp(hd, tg)),
                         path([bool(c) for c in tg.measure], hd.op[:, 3] + self._measure_lp(hd, tg)),
                         path([bool(c) for c in tg.sums], hd.op[:, 4] + self._sum_lp(hd, tg)))
            total = total + torch.where(is_answer, ans, zero)
        return torch.where(lb(tg.parsed), total, floor)

    @staticmethod
    def _count_lp(hd: Heads, tg: Targets) -> torch.Tensor:
        """log P(the number of counted elements = the answer): Poisson-binomial over the elements' Bernoullis,
        summed over every selection of that size (a dynamic programme over the elements)."""
        bsz, e_len = hd.count.shape
        rows = [b for b, c in enumerate(tg.count) if c is not None]
        out = torch.full((bsz,), NEG, device=hd.count.device)
        if not rows:
            return out
        # only the rows whose answer is a count (few in a batch): each row's programme is its own
        at = torch.tensor(rows, device=out.device)
        z = hd.count.index_select(0, at)
        n = len(rows)
        real = z > NEG / 2
        # log P(k counted) of each element alone (k = 0, 1); padding counts 0 for sure
        d = torch.stack([torch.where(real, F.logsigmoid(-z), torch.zeros_like(z)),
                         torch.where(real, F.logsigmoid(z), torch.full_like(z, NEG))], -1)  # [B, E, 2]
        while d.shape[1] > 1:  # convolve neighbours pairwise: log2(E) rounds of whole-tensor operations
            m = d.shape[2]
            if d.shape[1] % 2:  # an odd one out pairs with "none counted"
                d = torch.cat([d, F.pad(d.new_zeros(n, 1, 1), (0, m - 1), value=NEG)], 1)
            pair = d[:, 0::2, :, None] + d[:, 1::2, None, :]  # [B, P, m, m]: counts i + j
            # row i shifted right by i (pad each row to 2m, flatten, cut, reshape to [m, 2m - 1]): column k
            # then holds every i + j = k
            diag = F.pad(pair, (0, m), value=NEG).flatten(-2)[..., : m * (2 * m - 1)]
            d = torch.logsumexp(diag.view(*pair.shape[:2], m, 2 * m - 1), 2)
        dist = d[:, 0]  # [B, >= E + 1]
        k = torch.tensor([min(tg.count[b], e_len) for b in rows], device=z.device)
        return out.index_copy(0, at, dist[torch.arange(n, device=z.device), k])

    @staticmethod
    def _measure_lp(hd: Heads, tg: Targets) -> torch.Tensor:
        """log-sum of the quantity pointer over the elements whose quantity is the answer."""
        lp = hd.quantity
        mask = torch.zeros_like(lp, dtype=torch.bool)
        for b, els in enumerate(tg.measure):
            if els:
                mask[b, els] = True
        return torch.logsumexp(lp.masked_fill(~mask, NEG), 1)

    @staticmethod
    def _sum_lp(hd: Heads, tg: Targets) -> torch.Tensor:
        """log-sum over the selections whose quantities add up to the answer: one Bernoulli per quantity."""
        z = hd.sum
        rows = [(b, sel) for b, sels in enumerate(tg.sums) for sel in (sels or ())]
        if z is None or not rows:
            return torch.full((len(tg.type),), NEG, device=hd.type.device)
        y = torch.zeros(len(rows), z.shape[1], device=z.device)
        r = torch.tensor([b for b, _ in rows], device=z.device)
        for k, (_, sel) in enumerate(rows):
            y[k, sel] = 1.0
        zr = z.index_select(0, r)
        real = zr > NEG / 2
        lp = torch.where(real, y * F.logsigmoid(zr) + (1 - y) * F.logsigmoid(-zr), torch.zeros_like(zr))
        lp = lp.sum(1)
        m = torch.full((z.shape[0],), NEG, device=z.device).scatter_reduce(0, r, lp.detach(), "amax")
        tot = torch.zeros(z.shape[0], device=z.device).index_add(0, r, torch.exp(lp - m[r]))
        return torch.log(tot.clamp_min(1e-30)) + m

    @staticmethod
    def _text_lp(hd: Heads, groups: list[list[list[tuple[int, int, int]] | None]],
                 floor: torch.Tensor) -> list[torch.Tensor]:
        """Per group of candidates (one list per sample), the log sum over each sample's (source, start, end)
        candidates [B]; floor where there are none. All groups are scored in one pass."""
        bsz = len(floor)
        rows = [(gi * bsz + b, b, *c) for gi, cands in enumerate(groups) for b, cs in enumerate(cands)
                for c in (cs or ())]
        if not rows or hd.text is None:
            return [floor] * len(groups)
        th, dev = hd.text, floor.device
        seg, r, src, st, en = torch.tensor(rows, device=dev).unbind(1)
        vals = th.source[r, src]
        g = src == 0
        if bool(g.any()):
            gr, gs = r[g], st[g]
            span = th.goal_start[gr, gs] + th.goal_end(gr, gs)[torch.arange(len(gr), device=dev), en[g]]
            vals = vals.masked_scatter(g, vals[g] + span)
        lab = ~g
        if bool(lab.any()):
            lr, le, ls = r[lab], src[lab] - 1, st[lab]
            end_lp = th.label_end_lp(lr, le, ls)[torch.arange(len(lr), device=dev), en[lab]]
            vals = vals.masked_scatter(lab, vals[lab] + th.label_start_at(lr, le, ls) + end_lp)
        n_seg = len(groups) * bsz
        m = floor.new_full((n_seg,), NEG).scatter_reduce(0, seg, vals.detach(), "amax")
        tot = floor.new_zeros(n_seg).index_add(0, seg, torch.exp(vals - m[seg]))
        lse = torch.log(tot.clamp_min(1e-30)) + m
        has = torch.zeros(n_seg, dtype=torch.bool, device=dev).index_fill(0, seg, True)
        return list(torch.where(has, lse, floor.repeat(len(groups))).view(len(groups), bsz).unbind(0))

    @staticmethod
    def _select_lp(hd: Heads, tg: Targets) -> torch.Tensor:
        """log p of each answer list's selection: one Bernoulli per labelled element."""
        z = hd.select
        y = torch.zeros_like(z)
        for b, sel in enumerate(tg.select):
            if sel:
                y[b, sel] = 1.0
        labelled = z > NEG / 2
        lp = torch.where(labelled, y * F.logsigmoid(z) + (1 - y) * F.logsigmoid(-z), torch.zeros_like(z))
        return lp.sum(1)

    # -- parsing responses into targets ---------------------------------------------------------------------
    def _targets(self, feats: list[SampleFeat], responses: Sequence[str | Action]) -> Targets:
        tg = Targets.empty(len(feats))
        for b, (f, r) in enumerate(zip(feats, responses, strict=True)):
            a, _ = try_parse_action(r)
            if a is None:
                tg.parsed[b] = False
                continue
            self._fill_target(tg, b, f, a)
        return tg

    def _fill_target(self, tg: Targets, b: int, f: SampleFeat, a: Action) -> None:
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
            tg.app[b] = self._app_index.get(name.lower())
            if tg.app[b] is None:  # an alias the goal names ("the dialer app"): copied from the goal
                spans = f.goal.spans_for(name)
                tg.app[b] = len(self.app_names) if spans else None
                tg.texts[b] = [(0, s, e) for s, e in spans]
        text = a.text or ""
        if t == A.INPUT_TEXT:
            tg.texts[b] = _text_candidates(f, text)
            field = f.elements[a.index].label if a.index is not None and a.index < f.n_cur else None
            tg.formatted[b] = [_text_candidates(f, c) if c else [] for c in
                               (_unformat(k, text, field) for k in TEXT_FORMATS[1:])]
        if t == A.ANSWER:
            tg.texts[b] = _text_candidates(f, text)
            tg.select[b] = _list_selection(f, text)
            n = int(text) if text.isdigit() and str(int(text)) == text else None
            tg.count[b] = n if n is not None and n <= f.n_cur else None
            tg.measure[b] = [i for i, e in enumerate(f.elements) if e.quantity == text]
            tg.sums[b] = _sum_selections(f, int(text)) if text.isdigit() and str(int(text)) == text else None

    @staticmethod
    def _answer_forms(tg: Targets, b: int) -> list[bool]:
        """Which answer forms (ANSWER_OPS order) spell sample b's answer."""
        return [bool(tg.texts[b]), tg.select[b] is not None, tg.count[b] is not None, bool(tg.measure[b]),
                bool(tg.sums[b])]

    def round_trip(self, batch: Sequence[PolicyInput],
                   actions: Sequence[Action]) -> list[tuple[Action | None, str]]:
        """Each action encoded as this policy's training target and decoded back: the action the policy emits
        when its heads pick that target, or None and why (which field has no target in the action space)."""
        feats = self.featurize(batch)
        tg = self._targets(feats, actions)
        n_apps = len(self.app_names)
        out: list[tuple[Action | None, str]] = []
        for b, (f, a) in enumerate(zip(feats, actions, strict=True)):
            t = a.action_type
            why = ""
            if not tg.parsed[b]:
                why = "unparsed"
            elif (t in NEEDS_ELEMENT or t in OPTIONAL_ELEMENT) and tg.element[b] is None:
                if a.index is not None:
                    why = "element index beyond the kept elements"
                else:
                    why = "a point inside no element" if a.x is not None else "no element"
            elif t == A.OPEN_APP and tg.app[b] is None:
                why = "unknown app the goal does not name"
            elif t == A.INPUT_TEXT and not tg.texts[b] and not any(tg.formatted[b] or ()):
                why = "typed text is in neither the goal nor an element's label"
            elif t == A.ANSWER and not any(self._answer_forms(tg, b)):
                why = "answer is no copied text, list of labels, count, quantity or sum on the screen"
            if why:
                out.append((None, why))
                continue
            copy, fmt = (tg.texts[b] or [(0, 0, 0)])[0], 0
            if t == A.INPUT_TEXT and not tg.texts[b]:  # the first format that spells it
                fmt = 1 + next(k for k, c in enumerate(tg.formatted[b]) if c)
                copy = tg.formatted[b][fmt - 1][0]
            op = 0
            if t == A.ANSWER and not tg.texts[b]:  # the first answer form that spells it
                op = self._answer_forms(tg, b).index(True)
            app = tg.app[b] if tg.app[b] is not None else 0
            decoded = self._build_action(f, t, tg.element[b] or 0, tg.direction[b] or 0, tg.status[b] or 0,
                                         app if app <= n_apps else 0, tg.tap[b] or 0, copy, op,
                                         tg.select[b] or [], fmt, tg.count[b] or 0, (tg.measure[b] or [0])[0],
                                         (tg.sums[b] or [[]])[0])
            out.append((decoded, ""))
        return out

    # -- Policy API -----------------------------------------------------------------------------------------
    @torch.inference_mode()  # ~1.07x faster than no_grad here (no version counters or view tracking)
    def act(self, batch: list[PolicyInput], greedy: bool = False) -> list[PolicyOutput]:
        """Sample (or argmax) every field, build the action and its response; logprob = sum of components."""
        if not batch:
            return []
        feats = self.featurize(batch)
        outs: list[PolicyOutput] = [None] * len(batch)  # type: ignore[list-item]
        for idx in _size_chunks(feats, ACT_CHUNK):
            for i, o in zip(idx, self._act_feats([feats[i] for i in idx], greedy), strict=True):
                outs[i] = o
        return outs

    def _act_feats(self, feats: list[SampleFeat], greedy: bool) -> list[PolicyOutput]:
        b = collate(feats, self.history, self.device)
        hidden = self.model.encode(b)
        lp_type = self._type_log_probs(b, hidden[0])
        types = self._pick(lp_type, greedy)  # the type comes first: the element pointer is conditioned on it
        hd = self._heads(b, hidden, lp_type, types)
        el_t = self._pick(hd.element, greedy)
        uses_el = torch.zeros_like(types, dtype=torch.bool)
        for t in NEEDS_ELEMENT + OPTIONAL_ELEMENT:
            uses_el |= types == TYPE_INDEX[t]
        el_t = torch.where(uses_el, el_t, 0)  # other types condition on "no element", as scoring does
        text = any(ACTION_TYPES[t] in TEXT_USE for t in types.tolist())
        self._conditioned(b, hidden, hd, types, el_t, text)
        bsz = len(feats)
        picks = {k: self._pick(getattr(hd, k), greedy).tolist() for k in ("direction", "status", "app", "op",
                                                                          "tap")}
        copy = [(0, 0, 0)] * bsz
        sel: list[list[int]] = [[] for _ in range(bsz)]
        if text:
            assert hd.text is not None and hd.select is not None
            th, rows = hd.text, torch.arange(bsz, device=self.device)
            src = self._pick(th.source, greedy)
            els = (src - 1).clamp(min=0)
            g_start = self._pick(th.goal_start, greedy)
            g_end = self._pick(th.goal_end(rows, g_start), greedy)
            l_start = self._pick(th.label_start_lp(rows, els), greedy)
            l_end = self._pick(th.label_end_lp(rows, els, l_start), greedy)
            copy = [(k, gs, ge) if k == 0 else (k, ls, le) for k, gs, ge, ls, le in
                    zip(src.tolist(), g_start.tolist(), g_end.tolist(), l_start.tolist(), l_end.tolist(),
                        strict=True)]
            p_sel = torch.sigmoid(hd.select)
            chosen = p_sel > 0.5 if greedy else torch.bernoulli(p_sel, generator=self.generator).bool()
            sel = _rows_of(chosen & (hd.select > NEG / 2))
            p_cnt = torch.sigmoid(hd.count)
            cnt = p_cnt > 0.5 if greedy else torch.bernoulli(p_cnt, generator=self.generator).bool()
            counted = (cnt & (hd.count > NEG / 2)).sum(1).tolist()
            qty, fmt = self._pick(hd.quantity, greedy).tolist(), self._pick(hd.fmt, greedy).tolist()
            p_add = torch.sigmoid(hd.sum)
            add = p_add > 0.5 if greedy else torch.bernoulli(p_add, generator=self.generator).bool()
            added = _rows_of(add & (hd.sum > NEG / 2))
        else:
            counted, qty, fmt = [0] * bsz, [0] * bsz, [0] * bsz
            added = [[] for _ in range(bsz)]
        outs, tg = [], Targets.empty(bsz)
        el = el_t.tolist()
        for i, (f, t) in enumerate(zip(feats, types.tolist(), strict=True)):
            try:
                a = self._build_action(f, ACTION_TYPES[t], el[i], picks["direction"][i], picks["status"][i],
                                       picks["app"][i], picks["tap"][i], copy[i], picks["op"][i], sel[i],
                                       fmt[i], counted[i], qty[i], added[i])
            except ActionError as e:
                # the heads spelled an action no env takes (typed text over MAX_TEXT_CHARS, e.g. a copy above
                # a long note): it is sent as an invalid action, scored as `log_probs` scores its text
                tg.parsed[i] = False
                outs.append(f"(invalid action: {e})")
                continue
            self._fill_target(tg, i, f, a)
            outs.append(a)
        slots = torch.tensor([e or 0 for e in tg.element], dtype=torch.long, device=self.device)
        if not torch.equal(slots, el_t):  # a tap point inside a smaller element is scored as a tap on it
            self._conditioned(b, hidden, hd, types, slots, text)
        logp = self._score(hd, tg).tolist()
        values = hd.value.tolist()
        return [PolicyOutput(text=a, action=None, logprob=lp, value=v) if isinstance(a, str) else
                PolicyOutput(text=render_response(a), action=a, logprob=lp, value=v)
                for a, lp, v in zip(outs, logp, values, strict=True)]

    def _type_log_probs(self, b: Batch, h_cls: torch.Tensor) -> torch.Tensor:
        return _masked_log_softmax(self.model.type_head(h_cls) / self.temperature, type_mask(b))

    def _pick(self, lp: torch.Tensor, greedy: bool) -> torch.Tensor:
        if greedy:
            return lp.argmax(-1)
        # by the inverse of each row's cumulative distribution (one uniform a row; 2-4x faster than
        # torch.multinomial at these widths): the first index whose cumulative sum exceeds it, so a zero-
        # probability index is never drawn; a uniform rounded up to the total takes the row's argmax
        c = lp.exp().cumsum(-1)
        idx = (c <= torch.rand(len(lp), 1, generator=self.generator, device=lp.device) * c[:, -1:]).sum(-1)
        return torch.where(idx < lp.shape[-1], idx, lp.argmax(-1))

    def _build_action(self, f: SampleFeat, t: str, el: int, direction: int, status: int, app: int, tap: int,
                      copy: tuple[int, int, int], op: int, sel: list[int], fmt: int = 0, counted: int = 0,
                      qty: int = 0, added: Sequence[int] = ()) -> Action:
        """The action the heads' choices spell: `copy` is (source, start, end) of copied text (typed in
        TEXT_FORMATS[fmt] with the field's text), `sel` the listed elements of an answer given as a list,
        `counted` the number of counted elements, `qty` the element whose quantity an answer reads, `added`
        the elements whose quantities a sum adds."""
        if t in NEEDS_ELEMENT:
            idx = el - 1
            if t == A.INPUT_TEXT:
                text = _format(TEXT_FORMATS[fmt], _copied(f, copy), f.elements[idx].label)
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
            name = self.app_names[app] if app < len(self.app_names) else _copied(f, (0, *copy[1:]))
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
            return Action(t, text=_copied(f, copy))
        return Action(t)

    def log_probs(self, batch: list[PolicyInput], responses: list[str]) -> torch.Tensor:
        """Differentiable log-probs [B] of the responses; see the module docstring for the floor rule."""
        lp, _ = self.log_probs_and_values(batch, responses)
        return lp

    def log_probs_and_values(self, batch: list[PolicyInput],
                             responses: Sequence[str | Action]) -> tuple[torch.Tensor, torch.Tensor]:
        """Both from one forward pass (what PPO needs per minibatch)."""
        ev = self.evaluate_actions(batch, responses, values=True)
        return ev.logprob, ev.value

    def evaluate_actions(self, batch: list[PolicyInput], responses: Sequence[str | Action],
                         values: bool = False, entropy: bool = False) -> ActionEval:
        """Log-probs and values [B] from one forward pass (values cost nothing extra: they always come),
        and with `entropy` the entropy of each response's own path (see `_path_entropy`)."""
        if len(batch) != len(responses):
            raise ValueError(f"got {len(batch)} inputs but {len(responses)} responses; expected one each")
        if not batch:
            empty = torch.zeros(0, device=self.device)
            return ActionEval(empty, empty, empty if entropy else None)
        feats = self.featurize(batch)
        tg = self._targets(feats, responses)
        parts = []
        for idx in _size_chunks(feats):
            sub = _take(tg, idx)
            hd = self._target_heads([feats[i] for i in idx], sub)
            parts.append((idx, (self._score(hd, sub), hd.value,
                                self._path_entropy(hd, sub) if entropy else hd.value)))
        if len(parts) == 1:
            lp, v, ent = parts[0][1]
        else:
            inv = torch.from_numpy(np.argsort(np.concatenate([idx for idx, _ in parts]))).to(self.device)
            lp, v, ent = (torch.cat([p[k] for _, p in parts])[inv] for k in range(3))
        return ActionEval(lp, v, ent if entropy else None)

    def _log_probs_feats(self, feats: list[SampleFeat], responses: Sequence[str | Action],
                         targets: Targets | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        tg = targets or self._targets(feats, responses)
        hd = self._target_heads(feats, tg)
        return self._score(hd, tg), hd.value

    def _target_heads(self, feats: list[SampleFeat], tg: Targets) -> Heads:
        """Field distributions with the pointer (and what depends on it) conditioned on the targets."""
        b = collate(feats, self.history, self.device)
        types = torch.tensor(tg.type, dtype=torch.long, device=self.device)
        hidden = self.model.encode(b)
        hd = self._heads(b, hidden, self._type_log_probs(b, hidden[0]), types)
        slots = torch.tensor([e or 0 for e in tg.element], dtype=torch.long, device=self.device)
        text = any(ACTION_TYPES[t] in TEXT_USE for t in tg.type)
        self._conditioned(b, hidden, hd, types, slots, text)
        return hd

    @staticmethod
    def _path_entropy(hd: Heads, tg: Targets) -> torch.Tensor:
        """H(type) + H(field | type) for each field the response's own type uses (element, tap, direction,
        status, app, and for copied text its source and the span in the goal or in the target's first
        source): the chain rule along the taken path, whose mean over on-policy samples is the entropy of the
        sampled field choices (sources or spans that give the same text count as different choices). Exact
        for the type head; one forward pass, no enumeration."""
        dev = hd.type.device
        ent = lambda lp: -(lp.exp() * lp).sum(-1)  # noqa: E731  (masked entries have p = 0 exactly)
        used = lambda kinds: torch.tensor([ACTION_TYPES[t] in kinds for t in tg.type], device=dev)  # noqa: E731
        zero = torch.zeros(len(tg.type), device=dev)
        total = ent(hd.type)
        total = total + torch.where(used(NEEDS_ELEMENT + OPTIONAL_ELEMENT), ent(hd.element), zero)
        if hd.tap is not None:
            total = total + torch.where(used(TAP_TYPES), ent(hd.tap), zero)
        total = total + torch.where(used(OPTIONAL_ELEMENT), ent(hd.direction), zero)
        total = total + torch.where(used((A.STATUS,)), ent(hd.status), zero)
        total = total + torch.where(used((A.OPEN_APP,)), ent(hd.app), zero)
        total = total + torch.where(used((A.ANSWER,)), ent(hd.op), zero)
        if hd.fmt is not None:
            total = total + torch.where(used((A.INPUT_TEXT,)), ent(hd.fmt), zero)
        if hd.text is not None:  # source, then start and end along the target's first copy
            th = hd.text
            first = [c[0] if c else (0, 0, 0) for c in tg.texts]
            src, st = (torch.tensor([c[k] for c in first], device=dev) for k in (0, 1))
            rows = torch.arange(len(tg.type), device=dev)
            els = (src - 1).clamp(min=0)
            goal = ent(th.goal_start) + ent(th.goal_end(rows, st.clamp(max=th.goal_start.shape[1] - 1)))
            s_max = (th.label_len[rows, els] - 1).clamp(min=0)
            label = (ent(th.label_start_lp(rows, els))
                     + ent(th.label_end_lp(rows, els, torch.minimum(st, s_max))))
            has = torch.tensor([bool(c) for c in tg.texts], device=dev)
            total = total + torch.where(has, ent(th.source) + torch.where(src == 0, goal, label), zero)
        return total

    def trainable_parameters(self) -> list[nn.Parameter]:
        """Every weight, value head included (it reads the shared CLS state)."""
        return list(self.model.parameters())

    def values(self, batch: list[PolicyInput]) -> torch.Tensor:
        """Value estimates [B] from the CLS state (differentiable)."""
        return self.value_from_features(self._cls_states(batch))

    @torch.no_grad()
    def value_features(self, batch: list[PolicyInput]) -> torch.Tensor:
        """The CLS states [B, d] the value head reads (no gradients)."""
        return self._cls_states(batch)

    def _cls_states(self, batch: list[PolicyInput]) -> torch.Tensor:
        """CLS states [B, d] in the batch's order (encoded in length-sorted chunks)."""
        if not batch:
            return torch.zeros(0, self.model.d, device=self.device)
        feats = self.featurize(batch)
        parts, order = [], []
        for idx in _size_chunks(feats):
            parts.append(self.model.encode(collate([feats[i] for i in idx], self.history, self.device))[0])
            order.append(idx)
        inv = torch.from_numpy(np.argsort(np.concatenate(order))).to(self.device)
        return torch.cat(parts)[inv]

    def value_head_parameters(self) -> list[nn.Parameter]:
        return list(self.model.value_head.parameters())

    def value_from_features(self, feats: torch.Tensor) -> torch.Tensor:
        return self.model.value_head(feats).squeeze(-1)

    def fit_sft(self, samples: list[tuple[PolicyInput, str]], epochs: int = 1, lr: float | None = None,
                seed: int = 0, lr_schedule: str | None = None,
                weights: Sequence[float] | None = None) -> dict[str, float]:
        """Behaviour cloning: Adam on -mean log_probs, minibatches of 64 (length-bucketed); features are
        computed once. `lr_schedule`: "constant" (the default) or "linear" (decay to 0 over this call's
        steps, as TRL's SFTTrainer does by default). `weights` (one per sample, >= 0): a minibatch's loss is
        sum(w * -log p) / sum(w), so within a minibatch a weight of k counts as the sample repeated k times.
        Returns the last epoch's mean loss, the sample count and samples/s (featurising included)."""
        if not samples:
            raise ValueError("fit_sft got no samples; expected a list of (PolicyInput, response) pairs")
        w_all = check_weights(weights, len(samples))
        schedule = check_lr_schedule(lr_schedule) or "constant"
        t0 = time.perf_counter()
        feats = self.featurize([x for x, _ in samples])
        targets = self._targets(feats, [r for _, r in samples])
        opt = self._optimizer(1e-3 if lr is None else lr)
        rng = np.random.default_rng(seed)
        n, loss_sum = len(samples), 0.0
        sizes = np.array([len(f.goal.ids) + len(f.elements) for f in feats])
        total = epochs * math.ceil(n / SFT_BATCH)  # steps, up to the length buckets' partial batches
        sched = (torch.optim.lr_scheduler.LambdaLR(opt, lambda k: max(0.0, 1.0 - k / total))
                 if schedule == "linear" else None)
        for _ in range(epochs):
            loss_sum = 0.0
            for idx in _length_bucketed(rng, sizes, SFT_BATCH):
                loss = self.sft_loss(feats, targets, idx, w_all)
                # no gradient when every response in the minibatch was floored, or every sample weighs 0
                if loss.requires_grad and (w_all is None or float(w_all[idx].sum()) > 0):
                    opt.zero_grad(set_to_none=True)
                    loss.backward()
                    clip_used_grads(self.model.parameters(), 1.0)
                    opt.step()
                if sched is not None:
                    sched.step()
                loss_sum += loss.item() * len(idx)
        dt = time.perf_counter() - t0
        return {"loss": loss_sum / n, "samples": float(n), "samples_per_s": n * epochs / dt}

    def sft_loss(self, feats: list[SampleFeat], targets: Targets, idx: Sequence[int],
                 weights: np.ndarray | None = None) -> torch.Tensor:
        """`fit_sft`'s loss on minibatch `idx` of featurised samples: -mean log p(response), or with weights
        sum(w * -log p) / sum(w) (0 when every weight is 0)."""
        lp, _ = self._log_probs_feats([feats[i] for i in idx], [], targets=_take(targets, idx))
        if weights is None:
            return -lp.mean()
        w = torch.as_tensor(weights[list(idx)], dtype=lp.dtype, device=lp.device)
        return -(lp * w).sum() / w.sum().clamp_min(1e-12)

    def _optimizer(self, lr: float) -> torch.optim.Adam:
        """A fresh fused Adam per fit_sft call: each fine-tuning round starts clean, so a run resumed from a
        checkpoint (which holds the weights only) continues exactly as an uninterrupted one."""
        self._opt = torch.optim.Adam(self.model.parameters(), lr=lr, fused=True)
        return self._opt

    def reseed(self, seed: int) -> None:
        """Restart the sampling generator (rollouts reseed per iteration, so resumes repeat them exactly)."""
        self.generator.manual_seed(seed)

    # -- persistence ----------------------------------------------------------------------------------------
    def save(self, path: str | Path) -> None:
        """Write `model.safetensors` and `config.json` (constructor kwargs, including the app list)."""
        from safetensors.torch import save_file

        p = Path(path)
        p.mkdir(parents=True, exist_ok=True)
        state = {k: v.detach().cpu().contiguous() for k, v in self.model.state_dict().items()}
        save_file(state, str(p / "model.safetensors"))
        (p / "config.json").write_text(json.dumps({"policy": self.name, **self.config}, indent=2))

    @classmethod
    def load(cls, path: str | Path, **kwargs: Any) -> SmallPolicy:
        """Rebuild from `save`'s directory; kwargs override config entries (e.g. device, temperature)."""
        from safetensors.torch import load_file

        p = Path(path)
        if not (p / "config.json").is_file() or not (p / "model.safetensors").is_file():
            raise FileNotFoundError(f"{p} is not a SmallPolicy checkpoint; expected config.json and "
                                    "model.safetensors in it")
        cfg = json.loads((p / "config.json").read_text())
        if cfg.pop("policy", cls.name) != cls.name:
            raise ValueError(f"{p} holds a {cfg.get('policy')!r} policy, expected {cls.name!r}")
        if "app_names" not in {**cfg, **kwargs}:
            raise ValueError(f"{p}/config.json has no app_names (the app head's classes); pass the "
                             "vocabulary it was trained with: load_policy(path, app_names=[...])")
        pol = cls(**{**cfg, **kwargs})
        state = load_file(str(p / "model.safetensors"), device=str(pol.device))
        missing = sorted(set(pol.model.state_dict()) - set(state) - LATER_PARAMETERS)
        if missing:
            more = " ..." if len(missing) > 4 else ""
            raise ValueError(f"{p} was saved by an older SmallPolicy without {', '.join(missing[:4])}{more}; "
                             "retrain it (cached base policies and RFT checkpoints are rebuilt on their own)")
        unexpected = pol.model.load_state_dict(state, strict=False).unexpected_keys  # only LATER_PARAMETERS
        if unexpected:  # may be missing (checked above)
            raise ValueError(f"{p} holds weights this SmallPolicy does not have: "
                             f"{', '.join(unexpected[:4])}; expected a checkpoint saved by SmallPolicy.save")
        return pol


def type_mask_from_heads(hd: Heads) -> torch.Tensor:
    """Types that were allowed when `hd` was computed (masked types sit at about NEG)."""
    return hd.type > NEG / 2


def _rows_of(mask: torch.Tensor) -> list[list[int]]:
    """The True columns of each row of `mask` [B, E], ascending (one nonzero call for the whole batch)."""
    out: list[list[int]] = [[] for _ in range(mask.shape[0])]
    for r, c in torch.nonzero(mask).tolist():
        out[r].append(c)
    return out


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


def _format(fmt: str, copied: str, field: str | None) -> str:
    """Typed text from the copied text and the field's current text (trailing newlines dropped), as
    TEXT_FORMATS says."""
    field = field.rstrip("\n") if field else field
    if fmt == "pad2":
        return "0" + copied if len(copied) == 1 and copied.isdigit() else copied
    if fmt in ("above", "below", "above_blank") and field:
        return {"above": f"{copied}\n{field}", "below": f"{field}\n{copied}",
                "above_blank": f"{copied}\n\n{field}"}[fmt]
    return copied


def _unformat(fmt: str, text: str, field: str | None) -> str | None:
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


def _copied(f: SampleFeat, copy: tuple[int, int, int]) -> str:
    """The text a (source, start, end) copy gives: a goal span (source 0), or a span of the label of element
    source - 1."""
    src, s, e = copy
    if src == 0:
        return f.goal.span_text(s, e) if len(f.goal.ids) else ""
    tokens = f.elements[src - 1].tokens
    return tokens.span_text(s, e) if tokens is not None else ""


def _text_candidates(f: SampleFeat, text: str) -> list[tuple[int, int, int]]:
    """Every (source, start, end) copy that gives exactly `text`: goal spans, then spans of element labels."""
    out = [(0, s, e) for s, e in f.goal.spans_for(text)]
    for i, el in enumerate(f.elements):
        if el.tokens is not None:
            out += [(i + 1, s, e) for s, e in el.tokens.spans_for(text)]
    return out


def _list_selection(f: SampleFeat, text: str) -> list[int] | None:
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


def _sum_selections(f: SampleFeat, total: int) -> list[list[int]]:
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


def _size_chunks(feats: list[SampleFeat], size: int = CHUNK) -> list[np.ndarray]:
    """Split a batch into groups (>= `size` each) of similar sequence length: each group is padded only to
    its own longest sample (~1.2x faster at batch 64 on real screens; outputs do not depend on grouping)."""
    n = len(feats)
    if n < 2 * size:
        return [np.arange(n)]
    order = np.argsort([len(f.goal.ids) + len(f.elements) for f in feats], kind="stable")
    return np.array_split(order, n // size)


def _length_bucketed(rng: np.random.Generator, sizes: np.ndarray, bs: int,
                     window: int = 8) -> list[np.ndarray]:
    """Shuffled minibatches of similar sequence length (sorted inside windows of `window` batches), so that
    padding to the batch's longest sample wastes little; the batch order is shuffled again."""
    order = rng.permutation(len(sizes))
    batches: list[np.ndarray] = []
    for w in range(0, len(order), bs * window):
        chunk = order[w : w + bs * window]
        chunk = chunk[np.argsort(sizes[chunk], kind="stable")]
        batches += [chunk[i : i + bs] for i in range(0, len(chunk), bs)]
    return [batches[i] for i in rng.permutation(len(batches))]


def _take(tg: Targets, idx: Sequence[int]) -> Targets:
    return Targets(*[[getattr(tg, f.name)[i] for i in idx] for f in dataclasses.fields(Targets)])
