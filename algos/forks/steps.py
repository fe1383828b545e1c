"""SAME between steps: every step of the trajectories being compared is registered once (its frame, action
key and accessibility fingerprint), then pairs of steps are compared as the config says: faithful is
UI-Voyager's obs_similarity (hash prefilter, identical thumbnails, SSIM >= threshold); robust adds the local
check with its excuses, tree-confirmed overlays and mid-transition screenshots settled to the screen they
become."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np

from algos.forks.config import ForkConfig, Region
from algos.forks.keys import action_key, region_trees_equal, tree, tree_similarity
from algos.forks.screens import Screens


def field(step: Any, name: str, default: Any = None) -> Any:
    """A step field from a dict or an object (Step, a dataclass, a namespace)."""
    if isinstance(step, dict):
        return step.get(name, default)
    return getattr(step, name, default)


class Steps:
    """The steps of some trajectories (each a sequence of steps with `screen`, `action` and optionally
    `ui_elements` and `screen_key`), indexed by step id; `trajs[i]` lists trajectory i's step ids."""

    def __init__(self, trajectories: Sequence[Sequence[Any]], names: Sequence[str], cfg: ForkConfig):
        self.cfg = cfg
        self.trajs: list[list[int]] = []
        self.frame: list[int] = []  # frame id of each step's screen
        self.key: list[Any] = []  # action key
        self.tree: list[Counter | None] = []  # accessibility fingerprint (None: off or no elements)
        self.screen_key: list[str] = []
        width = cfg.thumb_size[0]
        if cfg.keep_aspect and not cfg.oracle:
            width = min([width] + [np.asarray(field(st, "screen")).shape[1] for traj in trajectories
                                   for st in traj if field(st, "screen") is not None])
        self.screens = Screens(cfg, width)
        self._scores: dict[tuple[int, int], tuple[float, bool]] = {}  # frame pair -> (score, exact)
        self._locals: dict[tuple[int, int], tuple] = {}
        self._robust: dict[tuple[int, int], float | None] = {}
        self._blends: dict[tuple[int, int, int], tuple[float, tuple] | None] = {}
        if cfg.oracle:
            frames = [-1] * sum(len(traj) for traj in trajectories)
        else:
            shots, whos = [], []
            for traj, name in zip(trajectories, names, strict=True):
                for t, st in enumerate(traj):
                    shots.append(field(st, "screen"))
                    whos.append(f"trajectory {name!r} step {t}")
                    if shots[-1] is None:
                        raise ValueError(f"{whos[-1]} has no screen; expected an RGB uint8 array")
            frames = self.screens.add_many(shots, whos)
        for traj in trajectories:
            ids = []
            for st in traj:
                ids.append(len(self.frame))
                self.frame.append(frames[len(self.frame)])
                elements = field(st, "ui_elements") or []
                self.key.append(action_key(field(st, "action"), elements, cfg))
                self.tree.append(tree(elements) if elements and cfg.a11y != "off" else None)
                self.screen_key.append(str(field(st, "screen_key", "") or ""))
            self.trajs.append(ids)
        self.settled = self._settle()

    # -- frames ---------------------------------------------------------------------------------------------
    def frame_score(self, fa: int, fb: int, exact: bool = True) -> float:
        """UI-Voyager's obs_similarity: the hash similarity if below the prefilter threshold, 1.0 for
        identical thumbnails, else SSIM (robust: over the windows the masks leave). With exact=False a value
        below the SAME threshold may be an upper bound (enough to decide SAME; cheaper)."""
        key = (fa, fb) if fa <= fb else (fb, fa)
        hit = self._scores.get(key)
        if hit is not None and (hit[1] or not exact):
            return hit[0]
        scr, cfg = self.screens, self.cfg
        h = scr.hash_similarity(fa, fb)
        if h < cfg.hash_threshold:
            hit = (h, True)
        elif scr.same_thumbnail(fa, fb):
            hit = (1.0, True)
        else:
            v = scr.score(fa, fb, floor=None if exact else cfg.same_at)
            hit = (v, exact or v >= cfg.same_at)
        self._scores[key] = hit
        return hit[0]

    def _masked(self, fa: int, fb: int, regions: tuple[Region, ...]) -> float:
        return 1.0 if self.screens.same_thumbnail(fa, fb) else self.screens.score(fa, fb, regions)

    def _frame_local(self, fa: int, fb: int) -> tuple:
        """The robust local check of two frames (`Screens.local`), after the cheap answers."""
        key = (fa, fb) if fa <= fb else (fb, fa)
        hit = self._locals.get(key)
        if hit is None:
            scr = self.screens
            if scr.same_thumbnail(fa, fb):
                hit = ("same",)
            elif scr.hash_similarity(fa, fb) < self.cfg.hash_threshold:
                hit = ("different", -1)
            else:
                hit = scr.local(scr.thumbnail(fa), scr.thumbnail(fb))
            self._locals[key] = hit
        return hit

    # -- steps ----------------------------------------------------------------------------------------------
    def _region_trees_equal(self, s: int, t: int, region: Region) -> bool:
        return region_trees_equal(self.tree[s], self.tree[t], region, self.cfg.screen_size)

    def _excusable(self, s: int, t: int, verdict: tuple) -> bool:
        """An overlay verdict holds if the accessibility trees show nothing changed in its regions, or
        (no trees) the difference looks like a card pasted over the screen."""
        if self.cfg.a11y != "off" and self.tree[s] is not None and self.tree[t] is not None:
            return all(self._region_trees_equal(s, t, r) for r in verdict[1])
        return verdict[2]

    def robust_same(self, s: int, t: int) -> float | None:
        """Robust SAME for two steps: the score when they show the same screen, else None."""
        key = (s, t) if s <= t else (t, s)
        if key in self._robust:
            return self._robust[key]
        fa, fb = self.settled[s], self.settled[t]
        out = None
        v = self._frame_local(fa, fb)
        if v[0] == "same":
            out = self._masked(fa, fb, ())
        elif v[0] == "overlay" and self._excusable(s, t, v):
            out = self._masked(fa, fb, v[1])
        if out is not None and out < self.cfg.same_at:
            out = None
        self._robust[key] = out
        return out

    def _settle(self) -> list[int]:
        """Robust deblend: each step's settled frame. A screenshot caught mid-transition is q * previous
        screen + (1 - q) * the screen it becomes; the previous screen is this trajectory's previous step
        (itself settled), and the screen it becomes is looked for among the group's frames (with element
        trees: the frames of steps with the same tree). Of the frames that explain it, the one with the
        largest q stands in for the blend."""
        settled = list(self.frame)
        if not self.cfg.deblend or self.cfg.oracle:
            return settled
        scr = self.screens
        use = Counter(self.frame)
        ranked = sorted(use, key=lambda f: -use[f])
        trees = self.cfg.a11y != "off"
        by_tree: dict[frozenset, list[int]] = {}
        if trees:
            for sid, t in enumerate(self.tree):
                if t is not None:
                    by_tree.setdefault(frozenset(t.items()), []).append(self.frame[sid])
        keep = ~scr.static_mask(scr.small[0].shape, True)
        small = np.stack([g[keep].astype(np.float32) for g in scr.small])
        for traj in self.trajs:
            for k in range(1, len(traj)):
                sid = traj[k]
                a, p = self.frame[sid], settled[traj[k - 1]]
                if a == p:
                    continue
                if trees and self.tree[sid] is not None:
                    same_tree = by_tree[frozenset(self.tree[sid].items())]
                    cands = sorted(set(same_tree) - {a, p}, key=lambda f: -use[f])
                else:
                    cands = [f for f in ranked if f not in (a, p)]
                if not cands:
                    continue
                fit = np.arange(len(cands))
                if len(cands) > 8:  # many candidates (no trees): a least-squares a - c = q (p - c) on the
                    # hash grids, for all at once, keeps the plausible ones (the grids are coarse: loosely)
                    c = small[cands]
                    d, e = small[a] - c, small[p] - c
                    ee, dd = (e * e).sum(1), (d * d).sum(1)
                    q = (d * e).sum(1) / np.maximum(ee, 1e-9)
                    resid = 1.0 - q * q * ee / np.maximum(dd, 1e-9)
                    plausible = (q >= 0.05) & (q <= 1.0) & (resid <= 0.8)
                    fit = np.flatnonzero((dd > 0) & (plausible | (ee < 16.0 * c.shape[1])))  # or too faint
                # Of the frames that explain it, the one furthest from p (largest q): a frame that is itself
                # a blend of p and the true screen explains it too, with a smaller q.
                best = None
                for j in fit:
                    cand = cands[int(j)]
                    blend = self._blend(a, p, cand)
                    if blend is None:
                        continue
                    q, w = blend
                    if w[0] == "same" or (w[0] == "overlay" and (trees or w[2])):
                        rank = (-round(q, 2), w[0] != "same", -use[cand])
                        if best is None or rank < best[0]:
                            best = (rank, cand)
                if best is not None:
                    settled[sid] = best[1]
        return settled

    def _blend(self, a: int, p: int, b: int) -> tuple[float, tuple] | None:
        """q and the local check of frame a against its fitted blend of p and b (`_unblend`), once per
        triple (sibling rollouts repeat transitions)."""
        key = (a, p, b)
        if key not in self._blends:
            fit = self._unblend(a, p, b)
            scr = self.screens
            self._blends[key] = None if fit is None else (fit[1], scr.local(scr.thumbnail(a), fit[0]))
        return self._blends[key]

    def _unblend(self, a: int, p: int, b: int) -> tuple[np.ndarray, float] | None:
        """If thumbnail a looks like q * p + (1 - q) * b (a screenshot taken while p gave way to b), that
        blend (uint8) and q; else None. Over the pixels where p and b differ, the ratios (a - b) / (p - b)
        must mostly agree (carets and other noise need not); q is fitted by least squares on those that
        agree. Tried on the whole screen, then without the overlay regions (where p may show a toast or
        notification the blend never had)."""
        scr, cfg = self.screens, self.cfg
        ta, tp, tb = scr.thumbnail(a), scr.thumbnail(p), scr.thumbnail(b)
        if not tp.shape == tb.shape == ta.shape:
            return None
        for overlays in (False, True) if cfg.overlay_regions else (False,):
            ga, gp, gb = scr.kept(a, overlays), scr.kept(p, overlays), scr.kept(b, overlays)
            e = gp - gb
            moved = np.abs(e) > 24
            if moved.sum() < 4:
                continue
            d, e = ga[moved] - gb[moved], e[moved]
            r = d / e
            q = float(np.median(r))
            agree = np.abs(r - q) < 0.15
            if np.mean(agree) < cfg.blend_agreement:
                continue
            q = float(d[agree] @ e[agree]) / float(e[agree] @ e[agree])
            if 0.1 <= q <= 0.9:
                blend = q * tp.astype(np.float32) + (1 - q) * tb
                return np.rint(blend).clip(0, 255).astype(np.uint8), q
        return None

    # -- SAME between two trajectories -----------------------------------------------------------------------
    def matrices(self, fi: int, ti: int) -> tuple[np.ndarray, np.ndarray]:
        """SAME and score matrices (trajectory fi x trajectory ti). Robust scores are filled where SAME
        holds (nan elsewhere; `pair_score` computes any)."""
        cfg = self.cfg
        F, T = self.trajs[fi], self.trajs[ti]
        if cfg.oracle:
            ka = np.array([self.screen_key[s] for s in F], dtype=object)
            kb = np.array([self.screen_key[t] for t in T], dtype=object)
            same = (ka[:, None] == kb[None, :]) & (ka[:, None] != "")
            return same, same.astype(np.float64)
        if cfg.local_diff > 0:
            score = np.full((len(F), len(T)), np.nan)
            for i, s in enumerate(F):
                for j, t in enumerate(T):
                    sc = self.robust_same(s, t)
                    if sc is not None:
                        score[i, j] = sc
            same = ~np.isnan(score)
        else:
            score = np.array([[self.frame_score(self.settled[s], self.settled[t], exact=False) for t in T]
                              for s in F]).reshape(len(F), len(T))
            same = score >= cfg.same_at
            if cfg.overlay_regions and cfg.a11y != "off":  # SSIM-only robust variant: tree-confirmed overlays
                for i, j in zip(*np.nonzero(~same), strict=True):
                    s, t = F[i], T[j]
                    if self.tree[s] is None or self.tree[t] is None:
                        continue
                    for r in cfg.overlay_regions:
                        if self._region_trees_equal(s, t, r):
                            sc = self._masked(self.settled[s], self.settled[t], (r,))
                            if sc >= cfg.same_at:
                                same[i, j], score[i, j] = True, sc
                                break
        if cfg.a11y in ("and", "or"):
            sim = np.array([[tree_similarity(self.tree[s], self.tree[t]) for t in T] for s in F])
            sim = sim.reshape(len(F), len(T))
            agree, known = sim >= cfg.a11y_threshold, ~np.isnan(sim)
            same = (same & (agree | ~known)) if cfg.a11y == "and" else (same | agree)
            score = np.where(same & np.isnan(score), sim, score)
        return same, score

    def pair_score(self, s: int, t: int) -> float:
        """The exact similarity of two steps' screens (settled frames, masks as configured)."""
        if self.cfg.oracle:
            return float(self.screen_key[s] != "" and self.screen_key[s] == self.screen_key[t])
        return self.frame_score(self.settled[s], self.settled[t])

    def lazy(self) -> bool:
        """Whether SAME is the plain thresholded score of two frames, so the walk can ask pair by pair."""
        cfg = self.cfg
        return (not cfg.oracle and cfg.local_diff == 0 and cfg.a11y in ("off", "confirm")
                and not cfg.overlay_regions)

    def same_action(self, s: int, t: int) -> bool:
        """Whether two steps took the same action (an invalid action equals nothing)."""
        return self.key[s] is not None and self.key[s] == self.key[t]
