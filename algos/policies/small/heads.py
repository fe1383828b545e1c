"""From encoded states to every field's distribution (`Heads`): the action type, the element pointer,
direction, status, app and answer form, then what depends on the chosen element (`condition_heads`): where a
tap lands, copied text (`TextHead`: a source, then a span in it), an answer's list, count, quantity or sum,
and how typed text is formatted. Log-probs, already tempered (logits / temperature).

Speed: pointer heads score `q . W(h)` as `(q W) . h + q . b`, so no key projection of every element or goal
token is ever made (nor its gradient), and every element-keyed head runs in one batched product; a head's
small layers on one input run as one product. Label spans are scored over the flat list of label tokens
(never a [B, E, S] tensor, let alone [B, E, S, d]: a note body has thousands), start log-probs normalised
per label by segment ops, ends only for the starts that are asked about."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import nn

from algos.policies.small.batching import Batch
from algos.policies.small.network import LABEL_POSITIONS, NEG, PointerNet
from algos.policies.small.targets import NEEDS_ELEMENT, TEXT_USE, TYPE_INDEX
from algos.policies.small.tokens import MAX_BREAKS
from voyager_gym import actions as A
from voyager_gym.actions import ACTION_TYPES

_NEEDS_EL_IDX = [TYPE_INDEX[t] for t in NEEDS_ELEMENT]


@dataclasses.dataclass
class Heads:
    """Log-probabilities of every field given the (chosen or target) action types, already tempered. The
    fields after `value` depend on the chosen element and are added by `condition_heads`."""

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


def type_mask_from_heads(hd: Heads) -> torch.Tensor:
    """Types that were allowed when `hd` was computed (masked types sit at about NEG)."""
    return hd.type > NEG / 2


def type_log_probs(m: PointerNet, b: Batch, h_cls: torch.Tensor, tau: float) -> torch.Tensor:
    """The action type's log-probs [B, types] at temperature `tau`, the types the observation rules out
    masked."""
    return _masked_log_softmax(m.type_head(h_cls) / tau, type_mask(b))


def field_heads(m: PointerNet, b: Batch, hidden: tuple[torch.Tensor, torch.Tensor, torch.Tensor],
                lp_type: torch.Tensor, types: torch.Tensor, tau: float) -> Heads:
    """Field distributions from encoded states at temperature `tau`; the element pointer is conditioned on
    `types` [B]. The heads that need the chosen element (tap, copied text, list selection) come from
    `condition_heads`."""
    scale = 1.0 / math.sqrt(m.d)
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
    app_mask = torch.ones(bsz, m.app_emb.num_embeddings + 1, dtype=torch.bool, device=types.device)
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


def condition_heads(m: PointerNet, b: Batch, hidden: tuple[torch.Tensor, torch.Tensor, torch.Tensor],
                    hd: Heads, types: torch.Tensor, slots: torch.Tensor, text: bool, tau: float) -> None:
    """Add the heads that depend on the chosen pointer slot [B]: where a tap lands inside the element, and
    (with `text`) the copied text and the answer list. The text's context says what it is for (typed into
    the chosen field, an answer, or an app name) and which field it goes to."""
    scale = 1.0 / math.sqrt(m.d)
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
