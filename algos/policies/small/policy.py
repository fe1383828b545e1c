"""SmallPolicy: the featurizer, the network and its heads behind the `Policy` interface: act (sample or argmax
every field, build the action and its response), log_probs / evaluate_actions (score responses), values, and
fit_sft (behaviour cloning), save and load.

Training: because heads share products, a head no response of a minibatch uses gets a gradient of exactly
zero; updates leave such parameters where they are (`drop_unused_grads`, with the gradient clipping in
`clip_used_grads`) rather than moving them on Adam's stale momentum."""

from __future__ import annotations

import json
import math
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from algos.policies.base import (
    ActionEval,
    Policy,
    PolicyOutput,
    check_lr_schedule,
    check_weights,
    clip_used_grads,
)
from algos.policies.small.batching import ACT_CHUNK, SFT_BATCH, collate, length_bucketed, size_chunks
from algos.policies.small.features import Featurizer, GoalFeat, SampleFeat
from algos.policies.small.heads import Heads, condition_heads, field_heads, type_log_probs
from algos.policies.small.network import LATER_PARAMETERS, MEMORY_MODES, NEG, PointerNet
from algos.policies.small.scoring import path_entropy, score
from algos.policies.small.targets import (
    NEEDS_ELEMENT,
    OPTIONAL_ELEMENT,
    TEXT_USE,
    TYPE_INDEX,
    Targets,
    answer_forms,
    build_action,
    fill_target,
    take,
)
from algos.policies.small.tokens import TOKEN_RE, compact
from algos.prompt import PolicyInput, render_response
from algos.timing import PHASES
from voyager_gym import actions as A
from voyager_gym.actions import ACTION_TYPES, Action, ActionError, try_parse_action


class SmallPolicy(Policy):
    """Element-pooled pointer policy (2.0M parameters at the defaults, 1.6M of them the hashed word table);
    see the package's docstring (algos/policies/small/__init__.py)."""

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

    # -- parsing responses into targets ---------------------------------------------------------------------
    def _targets(self, feats: list[SampleFeat], responses: Sequence[str | Action]) -> Targets:
        tg = Targets.empty(len(feats))
        for b, (f, r) in enumerate(zip(feats, responses, strict=True)):
            a, _ = try_parse_action(r)
            if a is None:
                tg.parsed[b] = False
                continue
            fill_target(tg, b, f, a, self._app_index, len(self.app_names))
        return tg

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
            elif t == A.ANSWER and not any(answer_forms(tg, b)):
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
                op = answer_forms(tg, b).index(True)
            app = tg.app[b] if tg.app[b] is not None else 0
            decoded = build_action(self.app_names, f, t, tg.element[b] or 0, tg.direction[b] or 0,
                                   tg.status[b] or 0, app if app <= n_apps else 0, tg.tap[b] or 0, copy, op,
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
        for idx in size_chunks(feats, ACT_CHUNK):
            for i, o in zip(idx, self._act_feats([feats[i] for i in idx], greedy), strict=True):
                outs[i] = o
        return outs

    def _act_feats(self, feats: list[SampleFeat], greedy: bool) -> list[PolicyOutput]:
        b = collate(feats, self.history, self.device)
        hidden = self.model.encode(b)
        lp_type = type_log_probs(self.model, b, hidden[0], self.temperature)
        types = self._pick(lp_type, greedy)  # the type comes first: the element pointer is conditioned on it
        hd = field_heads(self.model, b, hidden, lp_type, types, self.temperature)
        el_t = self._pick(hd.element, greedy)
        uses_el = torch.zeros_like(types, dtype=torch.bool)
        for t in NEEDS_ELEMENT + OPTIONAL_ELEMENT:
            uses_el |= types == TYPE_INDEX[t]
        el_t = torch.where(uses_el, el_t, 0)  # other types condition on "no element", as scoring does
        text = any(ACTION_TYPES[t] in TEXT_USE for t in types.tolist())
        condition_heads(self.model, b, hidden, hd, types, el_t, text, self.temperature)
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
                a = build_action(self.app_names, f, ACTION_TYPES[t], el[i], picks["direction"][i],
                                 picks["status"][i], picks["app"][i], picks["tap"][i], copy[i],
                                 picks["op"][i], sel[i], fmt[i], counted[i], qty[i], added[i])
            except ActionError as e:
                # the heads spelled an action no env takes (typed text over MAX_TEXT_CHARS, e.g. a copy above
                # a long note): it is sent as an invalid action, scored as `log_probs` scores its text
                tg.parsed[i] = False
                outs.append(f"(invalid action: {e})")
                continue
            fill_target(tg, i, f, a, self._app_index, len(self.app_names))
            outs.append(a)
        slots = torch.tensor([e or 0 for e in tg.element], dtype=torch.long, device=self.device)
        if not torch.equal(slots, el_t):  # a tap point inside a smaller element is scored as a tap on it
            condition_heads(self.model, b, hidden, hd, types, slots, text, self.temperature)
        logp = score(hd, tg).tolist()
        values = hd.value.tolist()
        return [PolicyOutput(text=a, action=None, logprob=lp, value=v) if isinstance(a, str) else
                PolicyOutput(text=render_response(a), action=a, logprob=lp, value=v)
                for a, lp, v in zip(outs, logp, values, strict=True)]

    def _pick(self, lp: torch.Tensor, greedy: bool) -> torch.Tensor:
        if greedy:
            return lp.argmax(-1)
        # by the inverse of each row's cumulative distribution (one uniform a row; 2-4x faster than
        # torch.multinomial at these widths): the first index whose cumulative sum exceeds it, so a zero-
        # probability index is never drawn; a uniform rounded up to the total takes the row's argmax
        c = lp.exp().cumsum(-1)
        idx = (c <= torch.rand(len(lp), 1, generator=self.generator, device=lp.device) * c[:, -1:]).sum(-1)
        return torch.where(idx < lp.shape[-1], idx, lp.argmax(-1))

    def log_probs(self, batch: list[PolicyInput], responses: list[str]) -> torch.Tensor:
        """Differentiable log-probs [B] of the responses; see scoring.py for the floor rule."""
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
        and with `entropy` the entropy of each response's own path (see `scoring.path_entropy`)."""
        if len(batch) != len(responses):
            raise ValueError(f"got {len(batch)} inputs but {len(responses)} responses; expected one each")
        if not batch:
            empty = torch.zeros(0, device=self.device)
            return ActionEval(empty, empty, empty if entropy else None)
        feats = self.featurize(batch)
        tg = self._targets(feats, responses)
        parts = []
        for idx in size_chunks(feats):
            sub = take(tg, idx)
            hd = self._target_heads([feats[i] for i in idx], sub)
            parts.append((idx, (score(hd, sub), hd.value,
                                path_entropy(hd, sub) if entropy else hd.value)))
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
        return score(hd, tg), hd.value

    def _target_heads(self, feats: list[SampleFeat], tg: Targets) -> Heads:
        """Field distributions with the pointer (and what depends on it) conditioned on the targets."""
        b = collate(feats, self.history, self.device)
        types = torch.tensor(tg.type, dtype=torch.long, device=self.device)
        hidden = self.model.encode(b)
        lp_type = type_log_probs(self.model, b, hidden[0], self.temperature)
        hd = field_heads(self.model, b, hidden, lp_type, types, self.temperature)
        slots = torch.tensor([e or 0 for e in tg.element], dtype=torch.long, device=self.device)
        text = any(ACTION_TYPES[t] in TEXT_USE for t in tg.type)
        condition_heads(self.model, b, hidden, hd, types, slots, text, self.temperature)
        return hd

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
        for idx in size_chunks(feats):
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
            for idx in length_bucketed(rng, sizes, SFT_BATCH):
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
        lp, _ = self._log_probs_feats([feats[i] for i in idx], [], targets=take(targets, idx))
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


def _rows_of(mask: torch.Tensor) -> list[list[int]]:
    """The True columns of each row of `mask` [B, E], ascending (one nonzero call for the whole batch)."""
    out: list[list[int]] = [[] for _ in range(mask.shape[0])]
    for r, c in torch.nonzero(mask).tolist():
        out[r].append(c)
    return out
