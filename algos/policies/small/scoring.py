"""The log-probability of a response under the heads: a response parsed into its fields (`Targets`) scores
the sum of its components' log-probs. Text and answers marginalise over every source, span and answer form
giving the same string, so `log_probs(act(x).text) == act(x).logprob`. Components the model cannot represent
(text in neither the goal nor a label, an answer that is neither, an unknown app the goal does not name, an
index beyond the kept elements, an action type the screen rules out such as a click with no elements, or an
unparseable response as a whole) add the constant `FLOOR_LOGPROB` with no gradient. Sampling and scoring
both use the policy's temperature (logits / temperature), so PPO/GRPO ratios stay consistent."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from algos.policies.small.answers import TEXT_FORMATS
from algos.policies.small.heads import Heads, type_mask_from_heads
from algos.policies.small.network import NEG
from algos.policies.small.targets import NEEDS_ELEMENT, OPTIONAL_ELEMENT, TAP_TYPES, Targets
from voyager_gym import actions as A
from voyager_gym.actions import ACTION_TYPES

FLOOR_LOGPROB = -20.0  # log-prob of a response component the model cannot represent (constant, no gradient)


def score(hd: Heads, tg: Targets) -> torch.Tensor:
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
    text, *text_formatted = text_lp(hd, [tg.texts, *formatted], floor)
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
                     path([c is not None for c in tg.select], hd.op[:, 1] + select_lp(hd, tg)),
                     path([c is not None for c in tg.count], hd.op[:, 2] + count_lp(hd, tg)),
                     path([bool(c) for c in tg.measure], hd.op[:, 3] + measure_lp(hd, tg)),
                     path([bool(c) for c in tg.sums], hd.op[:, 4] + sum_lp(hd, tg)))
        total = total + torch.where(is_answer, ans, zero)
    return torch.where(lb(tg.parsed), total, floor)


def count_lp(hd: Heads, tg: Targets) -> torch.Tensor:
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


def measure_lp(hd: Heads, tg: Targets) -> torch.Tensor:
    """log-sum of the quantity pointer over the elements whose quantity is the answer."""
    lp = hd.quantity
    mask = torch.zeros_like(lp, dtype=torch.bool)
    for b, els in enumerate(tg.measure):
        if els:
            mask[b, els] = True
    return torch.logsumexp(lp.masked_fill(~mask, NEG), 1)


def sum_lp(hd: Heads, tg: Targets) -> torch.Tensor:
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


def text_lp(hd: Heads, groups: list[list[list[tuple[int, int, int]] | None]],
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


def select_lp(hd: Heads, tg: Targets) -> torch.Tensor:
    """log p of each answer list's selection: one Bernoulli per labelled element."""
    z = hd.select
    y = torch.zeros_like(z)
    for b, sel in enumerate(tg.select):
        if sel:
            y[b, sel] = 1.0
    labelled = z > NEG / 2
    lp = torch.where(labelled, y * F.logsigmoid(z) + (1 - y) * F.logsigmoid(-z), torch.zeros_like(z))
    return lp.sum(1)


def path_entropy(hd: Heads, tg: Targets) -> torch.Tensor:
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
