"""GRSD fork points (UI-Voyager stage 2): where a failed rollout faced a screen a successful one also faced,
acted differently, and went somewhere else. UI-Voyager's backward state matching walks the failed steps
against a teacher (a successful rollout) with a lower bound `lo` on teacher steps (starts 0); SAME(i, j) is
"failed step i and teacher step j show the same screen", and the next screen of a step is its successor's:

1. transition advance: if failed step i is not last and some teacher step J >= lo (not last) has SAME(i, J)
   and SAME(i+1, J+1), set lo = max(lo, J + 1) for the first such J and skip step i;
2. candidates: teacher steps j >= lo with SAME(i, j), a different action, and (when neither step is last)
   not SAME(i+1, j+1);
3. the candidate with the highest score (earliest on ties) teaches step i, and lo = that j.

Each failed step gets at most one teacher; a teacher step may teach many. The teacher is the shortest
success (faithful) or, per failed rollout, the success showing most of its screens (robust). How SAME is
decided: algos/forks/steps.py."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from algos.forks.config import Fork, ForkConfig
from algos.forks.steps import Steps, field


def walk(nf: int, nt: int, same: Callable[[int, int], bool], score: Callable[[int, int], float],
         same_action: Callable[[int, int], bool]) -> list[tuple[int, int]]:
    """The rules above between a failed trajectory of nf steps and a teacher of nt: (failed step, teacher
    step) pairs. Comparisons are asked for lazily, in UI-Voyager's order."""
    forks: list[tuple[int, int]] = []
    lo = 0
    for i in range(nf):
        last_f = i == nf - 1
        adv = None if last_f else next((j for j in range(lo, nt - 1) if same(i, j) and same(i + 1, j + 1)),
                                       None)
        if adv is not None:  # rule 1
            lo = max(lo, adv + 1)
            continue
        best = None
        for j in range(lo, nt):  # rule 2
            if not same(i, j) or same_action(i, j):
                continue
            if not last_f and j < nt - 1 and same(i + 1, j + 1):
                continue
            s = score(i, j)
            if best is None or s > best[0]:  # rule 3; strictly greater: the earliest of equal scores stays
                best = (s, j)
        if best is not None:
            forks.append((i, best[1]))
            lo = best[1]
    return forks


def walk_matrices(same: np.ndarray, score: np.ndarray, same_action: np.ndarray) -> list[tuple[int, int]]:
    """`walk` on precomputed (failed x teacher) matrices."""
    if score.shape != same.shape or same_action.shape != same.shape:
        raise ValueError(f"matrices of shapes {same.shape}, {score.shape}, {same_action.shape}; "
                         "expected equal shapes")
    return walk(*same.shape, lambda i, j: bool(same[i, j]), lambda i, j: float(score[i, j]),
                lambda i, j: bool(same_action[i, j]))


def pair_forks(steps: Steps, fi: int, ti: int,
               matrices: tuple[np.ndarray, np.ndarray] | None = None) -> list[Fork]:
    """The forks of trajectory fi (failed) against trajectory ti (teacher) of `steps`. Where SAME is a
    thresholded score the walk asks for comparisons one by one (a score below the threshold may then be a
    bound); else from `matrices` (computed if not given)."""
    cfg = steps.cfg
    F, T = steps.trajs[fi], steps.trajs[ti]
    if matrices is None and steps.lazy():
        def score(i: int, j: int) -> float:
            return steps.frame_score(steps.settled[F[i]], steps.settled[T[j]], exact=False)

        def same(i: int, j: int) -> bool:
            return score(i, j) >= cfg.same_at
    else:
        same_m, score_m = matrices or steps.matrices(fi, ti)

        def same(i: int, j: int) -> bool:
            return bool(same_m[i, j])

        def score(i: int, j: int) -> float:
            return float(score_m[i, j])

    pairs = walk(len(F), len(T), same, score, lambda i, j: steps.same_action(F[i], T[j]))
    out = []
    for i, j in pairs:
        nxt = float("nan") if i == len(F) - 1 or j == len(T) - 1 else steps.pair_score(F[i + 1], T[j + 1])
        out.append(Fork(i, j, score(i, j), nxt))
    return out


def detect_forks(success: Sequence[Any], failed: Sequence[Any],
                 config: ForkConfig | None = None) -> list[Fork]:
    """Fork points of one failed trajectory against one successful one (default: the faithful detector). A
    step is a dict or object with `screen` (RGB uint8 (H, W, 3)), `action` (dict; None if invalid) and
    optionally `ui_elements` (UIElement dicts or objects) and `screen_key`."""
    cfg = config or ForkConfig.faithful()
    if not success or not failed:
        return []
    return pair_forks(Steps([success, failed], ["success", "failed"], cfg), 1, 0)


def _step_view(step: Any, traj_id: str, oracle: bool) -> dict[str, Any]:
    """A buffer Step as the detector reads it: its frame, else its thumbnail, as the screen."""
    px = field(step, "frame")
    if px is None:
        px = field(step, "thumbnail")
    if px is None and not oracle:
        raise ValueError(f"trajectory {traj_id!r} step t={field(step, 't')} has neither a frame nor a "
                         "thumbnail; fork detection compares screenshots (collect with thumb_width > 0)")
    return {"screen": px, "action": field(step, "action"), "ui_elements": field(step, "ui_elements") or [],
            "screen_key": field(step, "screen_key", "")}


def _steps_of(trajs: Sequence[Any], cfg: ForkConfig) -> Steps:
    views = [[_step_view(s, tr.traj_id, cfg.oracle) for s in tr.steps] for tr in trajs]
    return Steps(views, [tr.traj_id for tr in trajs], cfg)


def group_forks(group: Any, config: ForkConfig | None = None) -> list[tuple[Any, Any, Fork]]:
    """(failed trajectory, teacher trajectory, fork) for every fork of every failed (non-errored) trajectory
    of an algos.buffer.Group. teacher='shortest' (faithful): the shortest success (first on ties), the only
    one compared; 'similar' (robust): for each failed trajectory, the success showing the most of its
    screens if it beats the shortest by `teacher_margin` steps (ties: the shorter); 'all': every success, each
    walked against the failed trajectory on its own (shortest first), so a failed step may get several
    teachers."""
    cfg = config or ForkConfig.faithful()
    fail = group.failures
    succ = [tr for tr in group.successes if tr.steps]
    if not succ or not fail:
        return []
    succ.sort(key=lambda tr: len(tr.steps))  # stable: the first of equally short successes comes first
    if cfg.teacher == "shortest":
        succ = succ[:1]
    steps = _steps_of(succ + fail, cfg)
    out: list[tuple[Any, Any, Fork]] = []
    for k, tr in enumerate(fail):
        fi = len(succ) + k
        if not tr.steps:
            continue
        if cfg.teacher == "all":
            out += [(tr, succ[ti], f) for ti in range(len(succ)) for f in pair_forks(steps, fi, ti)]
            continue
        ti, mats = 0, None
        if cfg.teacher == "similar":
            mats = steps.matrices(fi, 0)
            best = int(mats[0].any(axis=1).sum()) + cfg.teacher_margin - 1
            for j in range(1, len(succ)):
                mats_j = steps.matrices(fi, j)
                cover = int(mats_j[0].any(axis=1).sum())
                if cover > best:
                    ti, mats, best = j, mats_j, cover
        out += [(tr, succ[ti], f) for f in pair_forks(steps, fi, ti, mats)]
    return out


def screen_classes(trajectories: Sequence[Any], config: ForkConfig | None = None) -> list[list[int]]:
    """Which steps of some algos.buffer.Trajectory objects show the same screen, as fork detection decides
    SAME (default: the faithful detector): a class id per step, per trajectory. Classes form greedily in
    order, trajectory by trajectory and step by step: a step joins the first class whose first step it is SAME
    with, else opens a new one (SAME is not transitive, so each class is anchored on its first screen, as
    verl-agent's similarity grouping does). GiGPO's anchor states (algos/gigpo.py)."""
    cfg = config or ForkConfig.faithful()
    trajs = list(trajectories)
    if not any(tr.steps for tr in trajs):
        return [[] for _ in trajs]
    steps = _steps_of(trajs, cfg)
    same: dict[tuple[int, int], np.ndarray] = {}  # (trajectory, earlier trajectory) -> SAME matrix
    firsts: list[tuple[int, int]] = []  # (trajectory, step) of each class's first step

    def same_as_first(i: int, s: int, j: int, t: int) -> bool:
        if (i, j) not in same:
            same[i, j] = steps.matrices(i, j)[0]
        return bool(same[i, j][s, t])

    out: list[list[int]] = []
    for i, tr in enumerate(trajs):
        ids = []
        for s in range(len(tr.steps)):
            c = next((c for c, (j, t) in enumerate(firsts) if same_as_first(i, s, j, t)), None)
            if c is None:
                c = len(firsts)
                firsts.append((i, s))
            ids.append(c)
        out.append(ids)
    return out
