"""Sample features padded into one batch of tensors (`collate`), and how a batch is grouped: length-sorted
groups padded to their own longest sample (`size_chunks`), shuffled length-bucketed minibatches for
`fit_sft` (`length_bucketed`)."""

from __future__ import annotations

import dataclasses

import numpy as np
import torch

from algos.policies.small.features import N_DENSE, N_EL_PROGRESS, N_GOAL_PROGRESS, SampleFeat
from algos.policies.small.tokens import EMPTY

SFT_BATCH = 64  # fit_sft minibatch size
CHUNK = 32  # log_probs / values run a batch in length-sorted groups of at least this size
ACT_CHUNK = 64  # and act in groups of at least this many (no gradients: its padding costs less than a call)


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
    lab_b, lab_e, n_lab = (np.concatenate(a) if a else EMPTY for a in (lab_b, lab_e, lab_n))
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


def size_chunks(feats: list[SampleFeat], size: int = CHUNK) -> list[np.ndarray]:
    """Split a batch into groups (>= `size` each) of similar sequence length: each group is padded only to
    its own longest sample (~1.2x faster at batch 64 on real screens; outputs do not depend on grouping)."""
    n = len(feats)
    if n < 2 * size:
        return [np.arange(n)]
    order = np.argsort([len(f.goal.ids) + len(f.elements) for f in feats], kind="stable")
    return np.array_split(order, n // size)


def length_bucketed(rng: np.random.Generator, sizes: np.ndarray, bs: int,
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
