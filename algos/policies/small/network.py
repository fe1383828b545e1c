"""The network: a goal encoder, then a small transformer over [CLS] + history + elements that reads the goal
as memory, with the layers every head reads (the heads' distributions are made in heads.py; no sampling).

The goal's tokens, each with a GOAL_CONTEXT-wide convolution over its neighbours, are encoded on their own
(`goal_layers` blocks), then `[CLS] + history + elements` go through `layers` blocks whose every layer also
attends to the goal's tokens: a memory that does not depend on the screen, encoded once per distinct goal of
a batch, and kept while acting until the weights change, so an episode's steps and a group's rollouts share
it (~2.2x faster encoding at rollout batch sizes than reading the goal as part of the sequence).

Speed (2 cores, benchmarks/policy_speed.py): inside the encoder's layers every per-position product runs on
the real positions only (packed rows; padding exists only inside attention, masked); the feed-forward width
is d_model; attention is two matmuls and a softmax (faster than SDPA's CPU kernel at these sizes, forward and
backward). One EmbeddingBag call per forward pass pools every word (so one dense embedding gradient); gathers
with gradients are index_selects (an index_add backward rather than a serial accumulating index_put), or, for
the goal memory, a product with a one-hot matrix (a matrix-product backward)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from torch.optim.optimizer import register_optimizer_step_post_hook

from algos.policies.small.answers import ANSWER_OPS, TEXT_FORMATS
from algos.policies.small.batching import Batch
from algos.policies.small.features import N_DENSE, N_DONE, N_EL_PROGRESS, N_GOAL_PROGRESS
from algos.policies.small.targets import TAP_GRID
from algos.policies.small.tokens import MAX_BREAKS, N_COLUMNS, N_SHAPES
from voyager_gym.actions import ACTION_TYPES, DIRECTIONS, GOAL_STATUSES

NEG = -1e9  # finite "minus infinity" for masked logits: no NaN even when a whole row is masked
LABEL_POSITIONS = 64  # label token positions with their own embedding (later tokens share the last one)
FF_MULT = 1  # feed-forward width / d_model: 1 rather than the usual 4 (~35% faster; cloning learns as fast)
GOAL_CACHE_SIZE = 4096  # encoded goals kept while acting (until the weights change)
GOAL_CONTEXT = 5  # width of the goal tokens' local-context convolution (2 neighbours each side)
# The weights that read what the episode has done (see features.py), which start at zero. Checkpoints saved
# before these weights load with them at their zero start (and act exactly as they did)
LATER_PARAMETERS = frozenset(f"{m}.{w}" for m in ("done_counts", "copy_order", "goal_progress", "el_progress",
                                                       "end_breaks", "el_goal_gap")
                             for w in ("weight", "bias")) | {"typed", "tok_column.weight"}
MEMORY_MODES = ("encoder", "heads")  # how SmallPolicy(memory=K) reads earlier screens' elements
_OPTIMIZER_STEPS = [0]  # optimizer steps taken in this process (any optimizer), see PointerNet.goal_memory


def _count_optimizer_step(*_: Any) -> None:
    _OPTIMIZER_STEPS[0] += 1


register_optimizer_step_post_hook(_count_optimizer_step)


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
