"""SmallPolicy: an element-pooled pointer model that trains in minutes on 2 CPU cores.

Instead of reading a token-level prompt, the policy reads structure: the goal as hashed word tokens (with
their character offsets), the last few actions, and every UI element as one vector (an EmbeddingBag over its
words plus flags and its box). `[CLS] + goal + history + elements` go through a small transformer; heads pick
each field of an AndroidWorld action: its type, an element (pointer), a direction, typed text as a copied goal
span, an app from the launcher's list, a goal status, an answer (pointer to an element whose label is the
answer), and a value from CLS. The response is the usual `Reason: ... Action: {json}` text, so the buffer, the
env and the other policies never know the difference.

Scoring (`log_probs`) parses a response back into those fields. A response's log-prob is the sum of its
components' log-probs; the text and answer components marginalise over every goal span / element giving the
same string, so `log_probs(act(x).text) == act(x).logprob`. Components the model cannot represent (typed
text that is not a goal substring, an answer that is no element's label, an unknown app, an index beyond the
kept elements, an action type the screen rules out such as a click with no elements, or an unparseable
response as a whole) add the constant `FLOOR_LOGPROB` with no gradient. Sampling and scoring both use
`temperature` (logits / temperature), so PPO/GRPO ratios stay consistent.

Speed (2 cores, benchmarks/policy_speed.py): features are cached per goal / element / history string, a batch
runs in length-sorted groups padded to their own longest sample, and the feed-forward width is d_model.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
import time
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from algos.policies.base import ActionEval, Policy, PolicyOutput
from algos.prompt import PolicyInput, render_response
from algos.timing import PHASES
from voyager_gym import actions as A
from voyager_gym.actions import ACTION_TYPES, DIRECTIONS, GOAL_STATUSES, Action, try_parse_action
from voyager_gym.observation import UIElement

TOKEN_RE = re.compile(r"\w+|[^\w\s]")
NON_ALNUM_RE = re.compile(r"[^0-9a-z]+")


def compact(text: str) -> str:
    """Lower-cased letters and digits only: "Wi‑Fi" and "wifi" agree, as do "OpenTracks" and "open tracks"."""
    return NON_ALNUM_RE.sub("", text.lower())
FLOOR_LOGPROB = -20.0  # log-prob of a response component the model cannot represent (constant, no gradient)
SCREEN_W, SCREEN_H = 1080.0, 2400.0
MAX_ELEMENT_WORDS = 32  # words pooled per element (long note bodies are cut)
NEG = -1e9  # finite "minus infinity" for masked logits: no NaN even when a whole row is masked
TYPE_INDEX = {t: i for i, t in enumerate(ACTION_TYPES)}
NEEDS_ELEMENT = (A.CLICK, A.DOUBLE_TAP, A.LONG_PRESS, A.INPUT_TEXT)  # pointer target required
OPTIONAL_ELEMENT = (A.SCROLL, A.SWIPE)  # pointer target or the "no element" slot
_NEEDS_EL_IDX = [TYPE_INDEX[t] for t in NEEDS_ELEMENT]
HIST_UNPARSED = len(ACTION_TYPES) + 1  # history type id of an action text that did not parse (0 = padding)
_EMPTY = np.zeros(0, np.int64)
N_DENSE = 18  # element dense features, see Featurizer._element
SFT_BATCH = 64  # fit_sft minibatch size
CHUNK = 32  # act / log_probs / values run a batch in length-sorted groups of at least this size
FF_MULT = 1  # feed-forward width / d_model: 1 rather than the usual 4 (~35% faster; cloning learns as fast)


def launcher_app_names() -> list[str]:
    """The app head's classes: SimDroid's launcher apps, sorted (stored in the saved config)."""
    from voyager_gym.backends.sim.phone import launcher_app_names as names

    return names()


def bucket(word: str, n: int) -> int:
    """Stable hash bucket of a lower-cased word (crc32: identical across processes and machines)."""
    return zlib.crc32(word.encode("utf-8")) % n


# ------------------------------------------------------------------------------------------------------------
# Features: deterministic, no fitted vocabulary; cached per goal, element and history string.
# ------------------------------------------------------------------------------------------------------------
@dataclasses.dataclass
class GoalFeat:
    """A goal's hashed tokens (first `max_goal_tokens`) and their character offsets in the original text."""

    text: str
    ids: np.ndarray  # int64 [T]
    starts: list[int]  # char offset where token i starts
    ends: list[int]  # char offset where token i ends
    id_set: frozenset[int]
    lower: str
    compact: str  # compact(text): for matching labels written differently ("Wi‑Fi" vs "wifi")
    long_words: frozenset[str]  # compact words of 3+ characters

    def span_text(self, s: int, e: int) -> str:
        """The exact goal substring covered by tokens s..e (case and punctuation preserved)."""
        return self.text[self.starts[s] : self.ends[e]]

    def spans_for(self, text: str) -> list[tuple[int, int]]:
        """Every token span (s, e) whose character range reproduces `text` exactly."""
        if not text:
            return []
        start_at = {c: i for i, c in enumerate(self.starts)}
        end_at = {c: i for i, c in enumerate(self.ends)}
        out, p = [], self.text.find(text)
        while p >= 0:
            s, e = start_at.get(p), end_at.get(p + len(text))
            if s is not None and e is not None and e >= s:
                out.append((s, e))
            p = self.text.find(text, p + 1)
        return out


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


@dataclasses.dataclass
class SampleFeat:
    """Everything the network reads from one `PolicyInput`, as numpy arrays ready to pad."""

    goal: GoalFeat
    elements: list[ElementFeat]  # first max_elements
    dense: np.ndarray  # float32 [E, N_DENSE]
    has_label: np.ndarray  # bool [E]
    el_flat: np.ndarray  # all elements' word buckets, concatenated
    el_lens: np.ndarray  # words per element
    hist_types: list[int]  # most recent last, at most `history`
    hist_flat: np.ndarray
    hist_lens: list[int]
    step_frac: float
    app_match: np.ndarray | None = None  # float32 [A]: how much of each launcher app's name the goal names


class Featurizer:
    """Turns `PolicyInput`s into padded tensors. Caches are bounded and cleared when full."""

    def __init__(self, vocab_buckets: int, max_goal_tokens: int, max_elements: int, history: int,
                 cache_size: int = 100_000):
        self.vocab, self.max_goal, self.max_el = vocab_buckets, max_goal_tokens, max_elements
        self.history = history
        self.cache_size = cache_size
        self._words: dict[str, np.ndarray] = {}
        self._goals: dict[str, GoalFeat] = {}
        self._elements: dict[UIElement, ElementFeat] = {}
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
        ms = list(TOKEN_RE.finditer(text))[: self.max_goal]
        ids = np.array([bucket(m.group().lower(), self.vocab) for m in ms], np.int64)
        words = {compact(w) for w in TOKEN_RE.findall(text)}
        return GoalFeat(text, ids, [m.start() for m in ms], [m.end() for m in ms], frozenset(ids.tolist()),
                        text.lower(), compact(text), frozenset(w for w in words if len(w) >= 3))

    def element(self, el: UIElement) -> ElementFeat:
        """Cached by identity first (the same observation objects are scored again in training epochs), then
        by value (a UIElement is a frozen dataclass; hashing its fields costs a few microseconds)."""
        hit = self._by_id.get(id(el))
        if hit is not None and hit[0] is el:
            return hit[1]
        f = self._cached(self._elements, el, self._element)
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
        # dense[14:18], filled per sample: share of the element's words in the goal; label occurs in the goal;
        # the same compared letters-and-digits only; a 3+ letter goal word occurs in the label
        label = el.text or el.content_description or None
        return ElementFeat(ids, frozenset(ids.tolist()), dense, label, (label or "").lower(),
                           compact(label or ""), box)

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
        """Features of one input; elements past `max_elements` are dropped (the pointer cannot reach them)."""
        g = self.goal(x.goal or "")
        els = [self.element(e if isinstance(e, UIElement) else UIElement.from_dict(e))
               for e in list(x.elements)[: self.max_el]]
        dense = np.array([e.dense for e in els], np.float32).reshape(len(els), N_DENSE)
        if els:
            dense[:, 14] = [len(e.id_set & g.id_set) / len(e.id_set) if e.id_set else 0.0 for e in els]
            dense[:, 15] = [bool(e.label_lower) and e.label_lower in g.lower for e in els]
            dense[:, 16] = [len(e.label_compact) >= 3 and e.label_compact in g.compact for e in els]
            dense[:, 17] = [bool(e.label_compact) and any(w in e.label_compact for w in g.long_words)
                            for e in els]
        hist = [self.history_item(h) for h in (x.history[-self.history :] if self.history else [])]
        return SampleFeat(
            goal=g, elements=els, dense=dense, has_label=np.array([e.label is not None for e in els], bool),
            el_flat=np.concatenate([e.ids for e in els]) if els else _EMPTY,
            el_lens=np.array([len(e.ids) for e in els], np.int64),
            hist_types=[t for t, _ in hist],
            hist_flat=np.concatenate([w for _, w in hist]) if hist else _EMPTY,
            hist_lens=[len(w) for _, w in hist], step_frac=x.step / max(1, x.max_steps))


@dataclasses.dataclass
class Batch:
    """Padded tensors for one forward pass (masks are True where a position is real).

    Every word bag (one per goal token, history action and element, then one per whole goal, in that order;
    padded positions empty) goes through a single EmbeddingBag call: one dense embedding gradient per step."""

    feats: list[SampleFeat]
    words: torch.Tensor  # flat word buckets of all bags
    offsets: torch.Tensor  # [B*T + B*H + B*E + B]
    goal_mask: torch.Tensor  # [B, T]
    hist_types: torch.Tensor  # [B, H] (0 = no action)
    el_dense: torch.Tensor  # [B, E, N_DENSE]
    el_mask: torch.Tensor  # [B, E]
    step: torch.Tensor  # [B, 1]
    n_goal: torch.Tensor  # [B]
    n_el: torch.Tensor  # [B]
    has_label: torch.Tensor  # [B, E] element can be an answer
    app_match: torch.Tensor | None = None  # [B, A] the goal names launcher app a (0..1)


def collate(feats: list[SampleFeat], history: int, device: torch.device | str) -> Batch:
    """Pad a list of sample features to the batch's longest goal / element list."""
    bsz = len(feats)
    t_max = max(1, max(len(f.goal.ids) for f in feats))
    e_max = max(1, max(len(f.elements) for f in feats))
    h = max(1, history)
    n_goal = np.array([len(f.goal.ids) for f in feats], np.int64)
    n_el = np.array([len(f.elements) for f in feats], np.int64)
    goal_lens = (np.arange(t_max)[None] < n_goal[:, None]).astype(np.int64)
    hist_lens = np.zeros((bsz, h), np.int64)
    el_lens = np.zeros((bsz, e_max), np.int64)
    dense = np.zeros((bsz, e_max, N_DENSE), np.float32)
    has_label = np.zeros((bsz, e_max), bool)
    hist_types = np.zeros((bsz, h), np.int64)
    for b, f in enumerate(feats):
        k = n_el[b]
        if k:
            dense[b, :k] = f.dense
            has_label[b, :k] = f.has_label
            el_lens[b, :k] = f.el_lens
        if f.hist_types:  # right-aligned: the last slot is the newest action
            hist_types[b, h - len(f.hist_types) :] = f.hist_types
            hist_lens[b, h - len(f.hist_types) :] = f.hist_lens
    goal_words = [f.goal.ids for f in feats]
    hist_words, el_words = [f.hist_flat for f in feats], [f.el_flat for f in feats]
    words = np.concatenate(goal_words + hist_words + el_words + goal_words)
    lens = np.concatenate([goal_lens.ravel(), hist_lens.ravel(), el_lens.ravel(), n_goal])
    offsets = np.zeros_like(lens)
    np.cumsum(lens[:-1], out=offsets[1:])
    t = lambda a: torch.from_numpy(a).to(device)  # noqa: E731
    n_goal_t, n_el_t = t(n_goal), t(n_el)
    return Batch(
        feats=feats,
        words=t(words),
        offsets=t(offsets),
        goal_mask=torch.arange(t_max, device=device)[None] < n_goal_t[:, None],
        hist_types=t(hist_types),
        el_dense=t(dense),
        el_mask=torch.arange(e_max, device=device)[None] < n_el_t[:, None],
        step=torch.tensor([[f.step_frac] for f in feats], dtype=torch.float32, device=device),
        n_goal=n_goal_t,
        n_el=n_el_t,
        has_label=t(has_label),
        app_match=(t(np.stack([f.app_match for f in feats]).astype(np.float32))
                   if all(f.app_match is not None for f in feats) else None),
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

    def forward(self, x: torch.Tensor, attend: torch.Tensor) -> torch.Tensor:
        """`attend` [B, 1, 1, L]: 0 for keys to read, NEG for padding."""
        bsz, n, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(bsz, n, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        # plain attention: on CPU at these sizes it is faster than scaled_dot_product_attention's flash kernel
        scores = (q @ k.transpose(-1, -2)) * (q.shape[-1] ** -0.5) + attend
        a = scores.softmax(-1) @ v
        x = x + self.out(a.transpose(1, 2).reshape(bsz, n, d))
        return x + self.ff2(F.gelu(self.ff1(self.ln2(x))))


class PointerNet(nn.Module):
    """Encoder over [CLS] + goal + history + elements with per-field heads (all logits, no sampling here)."""

    def __init__(self, d_model: int, layers: int, heads: int, max_elements: int, max_goal_tokens: int,
                 history: int, vocab_buckets: int, app_words: list[np.ndarray]):
        super().__init__()
        d = d_model
        self.d = d
        self.words = nn.EmbeddingBag(vocab_buckets, d, mode="mean")  # shared: goal tokens, elements, history
        nn.init.normal_(self.words.weight, std=1.0)
        self.goal_pos = nn.Embedding(max_goal_tokens, d)
        self.el_pos = nn.Embedding(max_elements, d)
        self.hist_pos = nn.Embedding(max(1, history), d)
        self.segment = nn.Embedding(4, d)  # cls, goal, history, element
        self.el_dense = nn.Linear(N_DENSE, d)
        self.hist_type = nn.Embedding(len(ACTION_TYPES) + 2, d)
        self.step = nn.Linear(1, d)
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
        self.ans_q, self.ans_k = nn.Linear(d, d), nn.Linear(d, d)
        self.start_q, self.start_k = nn.Linear(d, d), nn.Linear(d, d)
        self.end_q, self.end_k, self.end_from_start = nn.Linear(d, d), nn.Linear(d, d), nn.Linear(d, d)
        self.span_from_element = nn.Linear(d, d)
        for emb in (self.goal_pos, self.el_pos, self.hist_pos, self.segment, self.hist_type, self.el_type,
                    self.app_emb):
            nn.init.normal_(emb.weight, std=0.1)  # small next to word vectors, so words dominate at first

    def app_logits(self, h_cls: torch.Tensor, match: torch.Tensor | None) -> torch.Tensor:
        """Unscaled pointer scores over apps, plus a learned weight on "the goal names this app" (a copy
        feature that transfers to apps never seen in training)."""
        keys = self.words(self.app_words, self.app_offsets) + self.app_emb.weight
        logits = (self.app_q(h_cls) @ keys.T) / math.sqrt(self.d)
        return logits if match is None else logits + self.app_match_w * match

    def encode(self, b: Batch) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Hidden states of CLS [B, d], goal tokens [B, T, d] and elements [B, E, d]."""
        bsz, t_len = b.goal_mask.shape
        e_len, h_len = b.el_mask.shape[1], b.hist_types.shape[1]
        seg = self.segment.weight
        pooled = self.words(b.words, b.offsets)
        goal, hist, el, goal_mean = pooled.split([bsz * t_len, bsz * h_len, bsz * e_len, bsz])
        cls = (seg[0] + self.step(b.step) + goal_mean)[:, None]  # CLS starts as the goal's mean word vector
        goal = goal.view(bsz, t_len, -1) + self.goal_pos.weight[:t_len] + seg[1]
        hist = (hist.view(bsz, h_len, -1) + self.hist_type(b.hist_types) + self.hist_pos.weight[:h_len]
                + seg[2])
        el = el.view(bsz, e_len, -1) + self.el_dense(b.el_dense) + self.el_pos.weight[:e_len] + seg[3]
        x = torch.cat([cls, goal, hist, el], 1)
        keys = torch.cat([torch.ones(bsz, 1, dtype=torch.bool, device=x.device), b.goal_mask,
                          b.hist_types > 0, b.el_mask], 1)  # keys each query may read
        attend = torch.zeros(keys.shape, device=x.device).masked_fill(~keys, NEG)[:, None, None, :]
        for blk in self.blocks:
            x = blk(x, attend)
        hs = self.norm(x)
        return hs[:, 0], hs[:, 1 : 1 + t_len], hs[:, 1 + t_len + h_len :]


def _masked_log_softmax(logits: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    return torch.log_softmax(logits.masked_fill(~mask, NEG), -1)


@dataclasses.dataclass
class Heads:
    """Log-probabilities of every field given the (chosen or target) action types, already tempered."""

    type: torch.Tensor  # [B, 13]
    element: torch.Tensor  # [B, 1 + E]: slot 0 = no element
    direction: torch.Tensor  # [B, 4]
    status: torch.Tensor  # [B, 2]
    app: torch.Tensor  # [B, A]
    span: torch.Tensor | None  # [B, T, T]: log p(start) + log p(end | start)
    answer: torch.Tensor  # [B, E]
    value: torch.Tensor  # [B]


@dataclasses.dataclass
class Targets:
    """Structured form of one response per sample; a None component (or []) is not representable (floor)."""

    parsed: list[bool]
    type: list[int]
    element: list[int | None]  # pointer slot (0 = no element, i + 1 = element i); None = not representable
    direction: list[int | None]
    status: list[int | None]
    app: list[int | None]
    spans: list[list[tuple[int, int]] | None]  # None: no text component; [] = text not representable
    answers: list[list[int] | None]  # same, element indices whose label is the answer

    @classmethod
    def empty(cls, n: int) -> Targets:
        return cls([True] * n, [0] * n, [None] * n, [None] * n, [None] * n, [None] * n,
                    [None] * n, [None] * n)


def type_mask(b: Batch) -> torch.Tensor:
    """Action types the observation allows: element types need elements, input_text a goal, answer a label."""
    bsz = b.n_el.shape[0]
    m = torch.ones(bsz, len(ACTION_TYPES), dtype=torch.bool, device=b.n_el.device)
    no_el = b.n_el == 0
    m[:, _NEEDS_EL_IDX] &= ~no_el[:, None]
    m[:, TYPE_INDEX[A.INPUT_TEXT]] &= b.n_goal > 0
    m[:, TYPE_INDEX[A.ANSWER]] &= b.has_label.any(1)
    return m


# ------------------------------------------------------------------------------------------------------------
# The policy
# ------------------------------------------------------------------------------------------------------------
class SmallPolicy(Policy):
    """Element-pooled pointer policy (1.8M parameters at the defaults, 1.6M of them the hashed word table);
    see the module docstring."""

    name = "small"
    trainable = True
    has_value = True

    def __init__(self, d_model: int = 96, layers: int = 2, heads: int = 4, max_elements: int = 48,
                 max_goal_tokens: int = 40, history: int = 4, vocab_buckets: int = 2**14, seed: int = 0,
                 device: str = "cpu", temperature: float = 1.0, app_names: Sequence[str] | None = None):
        if temperature <= 0:
            raise ValueError(f"temperature must be > 0, got {temperature}; use act(greedy=True) for argmax")
        if d_model % heads:
            raise ValueError(f"d_model ({d_model}) must be divisible by heads ({heads})")
        self.config = dict(d_model=d_model, layers=layers, heads=heads, max_elements=max_elements,
                           max_goal_tokens=max_goal_tokens, history=history, vocab_buckets=vocab_buckets,
                           seed=seed, temperature=temperature,
                           app_names=list(app_names) if app_names is not None else launcher_app_names())
        self.app_names: list[str] = self.config["app_names"]
        self._app_index = {a.lower(): i for i, a in enumerate(self.app_names)}
        self._app_keys = [(compact(a), {compact(w) for w in TOKEN_RE.findall(a)} - {""})
                          for a in self.app_names]
        self._app_match_cache: dict[str, np.ndarray] = {}
        self.device = torch.device(device)
        self.temperature = temperature
        self.history = history
        self.featurizer = Featurizer(vocab_buckets, max_goal_tokens, max_elements, history)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            self.model = PointerNet(d_model, layers, heads, max_elements, max_goal_tokens, history,
                                    vocab_buckets, [self.featurizer.words(a) for a in self.app_names])
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
        span (which needs the chosen element) is added by `_span`."""
        m, tau, scale = self.model, self.temperature, 1.0 / math.sqrt(self.model.d)
        h_cls, h_goal, h_el = hidden
        bsz = h_cls.shape[0]
        # element pointer with a "no element" slot 0, allowed for every type that does not need an element
        q = m.el_q(h_cls) + m.el_type(types)
        keys = torch.cat([m.no_element.expand(bsz, 1, -1), m.el_k(h_el)], 1)
        el_logits = torch.einsum("bd,bed->be", q, keys) * scale / tau
        needs = torch.zeros(bsz, dtype=torch.bool, device=types.device)
        for i in _NEEDS_EL_IDX:
            needs |= types == i
        el_mask = torch.cat([~needs[:, None], b.el_mask], 1)
        lp_el = _masked_log_softmax(el_logits, el_mask)
        ans_logits = torch.einsum("bd,bed->be", m.ans_q(h_cls), m.ans_k(h_el)) * scale / tau
        ans_mask = b.has_label.clone()
        ans_mask[:, 0] |= ~ans_mask.any(1)  # keep rows finite when no element has a label (answer is masked)
        lp_ans = _masked_log_softmax(ans_logits, ans_mask)
        return Heads(
            type=lp_type,
            element=lp_el,
            direction=torch.log_softmax(m.dir_head(h_cls) / tau, -1),
            status=torch.log_softmax(m.status_head(h_cls) / tau, -1),
            app=torch.log_softmax(m.app_logits(h_cls, b.app_match) / tau, -1),
            span=None,
            answer=lp_ans,
            value=m.value_head(h_cls).squeeze(-1),
        )

    def _span(self, b: Batch, hidden: tuple[torch.Tensor, torch.Tensor, torch.Tensor],
              slots: torch.Tensor) -> torch.Tensor:
        """log p(start) + log p(end | start) [B, T, T] of the copied goal span, conditioned on the chosen
        pointer slot [B] (the field being typed into says which part of the goal to copy)."""
        m, tau, scale = self.model, self.temperature, 1.0 / math.sqrt(self.model.d)
        h_cls, h_goal, h_el = hidden
        bsz, t_len = b.goal_mask.shape
        slot_states = torch.cat([torch.zeros_like(h_el[:, :1]), h_el], 1)  # slot 0 = no element
        h_sel = slot_states[torch.arange(bsz, device=slots.device), slots]
        ctx = h_cls + m.span_from_element(h_sel)
        st_logits = torch.einsum("bd,btd->bt", m.start_q(ctx), m.start_k(h_goal)) * scale / tau
        gm = b.goal_mask.clone()
        gm[:, 0] |= ~gm.any(1)  # keep rows finite for goal-less samples (input_text is masked there)
        lp_start = _masked_log_softmax(st_logits, gm)
        qe = m.end_q(ctx)[:, None] + m.end_from_start(h_goal)  # [B, T(start), d]
        end_logits = torch.einsum("bsd,bed->bse", qe, m.end_k(h_goal)) * scale / tau
        ar = torch.arange(t_len, device=h_goal.device)
        end_mask = (ar[None, :] >= ar[:, None])[None] & gm[:, None, :]  # end >= start, end real
        end_mask = end_mask | (~end_mask.any(-1, keepdim=True) & (ar == 0)[None, None])
        return lp_start[:, :, None] + _masked_log_softmax(end_logits, end_mask)

    def _score(self, hd: Heads, tg: Targets) -> torch.Tensor:
        """Sum of component log-probs per sample [B]; unrepresentable components add FLOOR_LOGPROB."""
        dev = hd.type.device
        bsz = len(tg.type)
        ar = torch.arange(bsz, device=dev)
        lt = lambda v: torch.tensor(v, dtype=torch.long, device=dev)  # noqa: E731
        lb = lambda v: torch.tensor(v, dtype=torch.bool, device=dev)  # noqa: E731
        floor = torch.full((bsz,), FLOOR_LOGPROB, device=dev)
        zero = torch.zeros(bsz, device=dev)

        def part(lp: torch.Tensor, idx: list[int | None], used: list[bool]) -> torch.Tensor:
            val = lp[ar, lt([i if i is not None else 0 for i in idx])]
            ok = lb([i is not None for i in idx])
            return torch.where(lb(used), torch.where(ok, val, floor), zero)

        tmask = torch.gather(type_mask_from_heads(hd), 1, lt(tg.type)[:, None])[:, 0]
        total = torch.where(tmask, hd.type[ar, lt(tg.type)], floor)
        used_el = [ACTION_TYPES[t] in NEEDS_ELEMENT + OPTIONAL_ELEMENT for t in tg.type]
        total = total + part(hd.element, tg.element, used_el)
        used_dir = [ACTION_TYPES[t] in OPTIONAL_ELEMENT for t in tg.type]
        total = total + part(hd.direction, tg.direction, used_dir)
        total = total + part(hd.status, tg.status, [ACTION_TYPES[t] == A.STATUS for t in tg.type])
        total = total + part(hd.app, tg.app, [ACTION_TYPES[t] == A.OPEN_APP for t in tg.type])
        total = total + self._marginal(hd.span, tg.spans, floor, zero)
        total = total + self._marginal(hd.answer, tg.answers, floor, zero)
        return torch.where(lb(tg.parsed), total, floor)

    @staticmethod
    def _marginal(lp: torch.Tensor | None, cands: list[Any], floor: torch.Tensor,
                  zero: torch.Tensor) -> torch.Tensor:
        """log sum over candidate positions (spans or elements) giving the same string; floor when none."""
        rows, idx = [], []
        for b, c in enumerate(cands):
            for pos in c or ():
                rows.append(b)
                idx.append(pos if isinstance(pos, tuple) else (pos,))
        used = torch.tensor([c is not None for c in cands], dtype=torch.bool, device=floor.device)
        ok = torch.tensor([bool(c) for c in cands], dtype=torch.bool, device=floor.device)
        if not rows or lp is None:
            return torch.where(used, floor, zero)
        r = torch.tensor(rows, device=floor.device)
        vals = lp[(r, *[torch.tensor(k, device=floor.device) for k in zip(*idx, strict=True)])]
        m = torch.full_like(floor, NEG).scatter_reduce(0, r, vals.detach(), "amax")
        s = torch.zeros_like(floor).index_add(0, r, torch.exp(vals - m[r]))
        lse = torch.log(s.clamp_min(1e-30)) + m
        return torch.where(used, torch.where(ok, lse, floor), zero)

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
                tg.element[b] = a.index + 1 if a.index < len(f.elements) else None
            elif a.x is not None:
                hit = _element_at(f.elements, a.x, a.y)
                tg.element[b] = hit + 1 if hit is not None else None
            else:
                tg.element[b] = 0 if t in OPTIONAL_ELEMENT else None
        if t in OPTIONAL_ELEMENT:
            tg.direction[b] = DIRECTIONS.index(a.direction)
        if t == A.STATUS:
            tg.status[b] = GOAL_STATUSES.index(a.goal_status)
        if t == A.OPEN_APP:
            tg.app[b] = self._app_index.get((a.app_name or "").strip().lower())
        if t == A.INPUT_TEXT:
            tg.spans[b] = f.goal.spans_for(a.text or "")
        if t == A.ANSWER:
            tg.answers[b] = [i for i, e in enumerate(f.elements) if e.label is not None and e.label == a.text]

    # -- Policy API -----------------------------------------------------------------------------------------
    @torch.no_grad()
    def act(self, batch: list[PolicyInput], greedy: bool = False) -> list[PolicyOutput]:
        """Sample (or argmax) every field, build the action and its response; logprob = sum of components."""
        if not batch:
            return []
        feats = self.featurize(batch)
        outs: list[PolicyOutput] = [None] * len(batch)  # type: ignore[list-item]
        for idx in _size_chunks(feats):
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
        el = el_t.tolist()
        dirs = self._pick(hd.direction, greedy).tolist()
        stat = self._pick(hd.status, greedy).tolist()
        app = self._pick(hd.app, greedy).tolist()
        ans = self._pick(hd.answer, greedy).tolist()
        span = [(0, 0)] * len(feats)
        if bool((types == TYPE_INDEX[A.INPUT_TEXT]).any()):
            hd.span = self._span(b, hidden, el_t)
            t_len = hd.span.shape[1]
            flat = self._pick(hd.span.flatten(1), greedy).tolist()
            span = [(k // t_len, k % t_len) for k in flat]
        outs, tg = [], Targets.empty(len(feats))
        for i, (f, t) in enumerate(zip(feats, types.tolist(), strict=True)):
            a = self._build_action(f, ACTION_TYPES[t], el[i], dirs[i], stat[i], app[i], span[i], ans[i])
            self._fill_target(tg, i, f, a)
            outs.append(a)
        logp = self._score(hd, tg).tolist()
        values = hd.value.tolist()
        return [PolicyOutput(text=render_response(a), action=a, logprob=lp, value=v)
                for a, lp, v in zip(outs, logp, values, strict=True)]

    def _type_log_probs(self, b: Batch, h_cls: torch.Tensor) -> torch.Tensor:
        return _masked_log_softmax(self.model.type_head(h_cls) / self.temperature, type_mask(b))

    def _pick(self, lp: torch.Tensor, greedy: bool) -> torch.Tensor:
        if greedy:
            return lp.argmax(-1)
        return torch.multinomial(lp.exp(), 1, generator=self.generator)[:, 0]

    def _build_action(self, f: SampleFeat, t: str, el: int, direction: int, status: int, app: int,
                      span: tuple[int, int], ans: int) -> Action:
        if t in NEEDS_ELEMENT:
            idx = el - 1
            if t == A.INPUT_TEXT:
                return Action(t, index=idx, text=f.goal.span_text(*span), clear_text=True)
            return Action(t, index=idx)
        if t in OPTIONAL_ELEMENT:
            return Action(t, index=el - 1 if el > 0 else None, direction=DIRECTIONS[direction])
        if t == A.STATUS:
            return Action(t, goal_status=GOAL_STATUSES[status])
        if t == A.OPEN_APP:
            return Action(t, app_name=self.app_names[app])
        if t == A.ANSWER:
            return Action(t, text=f.elements[ans].label)
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
        """Field distributions with the pointer (and span) conditioned on the targets' type (and element)."""
        b = collate(feats, self.history, self.device)
        types = torch.tensor(tg.type, dtype=torch.long, device=self.device)
        hidden = self.model.encode(b)
        hd = self._heads(b, hidden, self._type_log_probs(b, hidden[0]), types)
        if any(sp is not None for sp in tg.spans):
            slots = torch.tensor([e or 0 for e in tg.element], dtype=torch.long, device=self.device)
            hd.span = self._span(b, hidden, slots)
        return hd

    @staticmethod
    def _path_entropy(hd: Heads, tg: Targets) -> torch.Tensor:
        """H(type) + H(field | type) for each field the response's own type uses (element, then span given
        the element, direction, status, app, answer): the chain rule along the taken path, whose mean over
        on-policy samples is the entropy of the sampled field choices (spans or elements that give the same
        text count as different choices). Exact for the type head; one forward pass, no enumeration."""
        dev = hd.type.device
        ent = lambda lp: -(lp.exp() * lp).sum(-1)  # noqa: E731  (masked entries have p = 0 exactly)
        used = lambda kinds: torch.tensor([ACTION_TYPES[t] in kinds for t in tg.type], device=dev)  # noqa: E731
        zero = torch.zeros(len(tg.type), device=dev)
        total = ent(hd.type)
        total = total + torch.where(used(NEEDS_ELEMENT + OPTIONAL_ELEMENT), ent(hd.element), zero)
        total = total + torch.where(used(OPTIONAL_ELEMENT), ent(hd.direction), zero)
        total = total + torch.where(used((A.STATUS,)), ent(hd.status), zero)
        total = total + torch.where(used((A.OPEN_APP,)), ent(hd.app), zero)
        total = total + torch.where(used((A.ANSWER,)), ent(hd.answer), zero)
        if hd.span is not None:
            total = total + torch.where(used((A.INPUT_TEXT,)), ent(hd.span.flatten(1)), zero)
        return total

    def trainable_parameters(self) -> list[nn.Parameter]:
        """Every weight, value head included (it reads the shared CLS state)."""
        return list(self.model.parameters())

    def values(self, batch: list[PolicyInput]) -> torch.Tensor:
        """Value estimates [B] from the CLS state (differentiable)."""
        if not batch:
            return torch.zeros(0, device=self.device)
        feats = self.featurize(batch)
        parts, order = [], []
        for idx in _size_chunks(feats):
            h_cls, _, _ = self.model.encode(collate([feats[i] for i in idx], self.history, self.device))
            parts.append(self.model.value_head(h_cls).squeeze(-1))
            order.append(idx)
        inv = torch.from_numpy(np.argsort(np.concatenate(order))).to(self.device)
        return torch.cat(parts)[inv]

    def fit_sft(self, samples: list[tuple[PolicyInput, str]], epochs: int = 1, lr: float | None = None,
                seed: int = 0) -> dict[str, float]:
        """Behaviour cloning: Adam on -mean log_probs, minibatches of 64 (length-bucketed); features are
        computed once. Returns the last epoch's mean loss, the sample count and samples/s (featurising
        included)."""
        if not samples:
            raise ValueError("fit_sft got no samples; expected a list of (PolicyInput, response) pairs")
        t0 = time.perf_counter()
        feats = self.featurize([x for x, _ in samples])
        targets = self._targets(feats, [r for _, r in samples])
        opt = self._optimizer(1e-3 if lr is None else lr)
        rng = np.random.default_rng(seed)
        n, loss_sum = len(samples), 0.0
        sizes = np.array([len(f.goal.ids) + len(f.elements) for f in feats])
        for _ in range(epochs):
            loss_sum = 0.0
            for idx in _length_bucketed(rng, sizes, SFT_BATCH):
                lp, _ = self._log_probs_feats([feats[i] for i in idx], [], targets=_take(targets, idx))
                loss = -lp.mean()
                if loss.requires_grad:  # False only when every response in the minibatch was floored
                    opt.zero_grad(set_to_none=True)
                    loss.backward()
                    nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
                    opt.step()
                loss_sum += loss.item() * len(idx)
        dt = time.perf_counter() - t0
        return {"loss": loss_sum / n, "samples": float(n), "samples_per_s": n * epochs / dt}

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
        pol = cls(**{**cfg, **kwargs})
        pol.model.load_state_dict(load_file(str(p / "model.safetensors"), device=str(pol.device)))
        return pol


def type_mask_from_heads(hd: Heads) -> torch.Tensor:
    """Types that were allowed when `hd` was computed (masked types sit at about NEG)."""
    return hd.type > NEG / 2


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
