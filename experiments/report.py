"""Outputs of a comparison folder: merged metrics.jsonl, curves.png, profiles.png, table.md and a
self-contained report. The statistics are experiments/stats.py's (Agarwal et al. 2021, as in rliable).

Also usable on its own to redraw a comparison folder:

    python experiments/report.py RUN_DIR        # or: voyager-train report RUN_DIR
"""

from __future__ import annotations

import base64
import html
import json
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from experiments import stats

GAIN = 0.05  # "steps to reach the RFT level + 5 points"
HARD = 10  # hardest tasks shown


def load_rows(out: Path) -> list[dict[str, Any]]:
    """Every pair's metrics rows (runs/<algo>-s<seed>/metrics.jsonl), in folder order; damaged lines (cut by a
    kill, empty) are reported on stderr and left out."""
    from algos.folders import inside, refuse_link
    from algos.run import read_metrics

    files = sorted(inside(out, "runs").glob("*/metrics.jsonl"))
    for f in files:  # a pair's folder that is a link would read rows from outside the comparison
        refuse_link(f.parent, out)
    return [r for f in files for r in read_metrics(f)]


def curves(rows: list[dict[str, Any]], algos: list[str]) -> dict[str, dict[int, list[tuple[int, float]]]]:
    """algo -> seed -> [(env_steps, pass_at_1)] over evaluation rows."""
    out: dict[str, dict[int, list[tuple[int, float]]]] = {a: {} for a in algos}
    for r in rows:
        if r.get("algo") in out and r.get("pass_at_1") is not None:
            out[r["algo"]].setdefault(int(r["seed"]), []).append((int(r["env_steps"]), float(r["pass_at_1"])))
    for per_seed in out.values():
        for pts in per_seed.values():
            pts.sort()
    return out


def aligned(
    per_seed: dict[int, list[tuple[int, float]]],
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Evaluations aligned by their index (every run evaluates at the same iterations), up to the shortest
    seed's number of evaluations: mean env steps, mean Pass@1 across seeds and its 95% bootstrap percentile
    interval (low, high; seeds resampled with replacement at each evaluation, no interval where a Pass@1 is
    missing)."""
    n = min(len(pts) for pts in per_seed.values())
    xs = np.array([[pts[k][0] for k in range(n)] for pts in per_seed.values()], float)
    ys = np.array([[pts[k][1] for k in range(n)] for pts in per_seed.values()], float)
    mean = ys.mean(0)
    low, high = mean.copy(), mean.copy()
    ok = np.isfinite(ys).all(0)
    if ok.any():  # evaluations as the columns of one [seeds, evaluations] matrix, each resampled on its own
        _, low[ok], high[ok] = stats.Bootstrap(reps=stats.PROFILE_REPS).interval(
            lambda s: s.mean(axis=-2), ys[:, ok]
        )
    return xs.mean(0), mean, low, high


def _axes() -> tuple[Any, Any]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt.subplots(figsize=(7, 4.2), dpi=120)


def _save(fig: Any, ax: Any, title: str, path: Path) -> None:
    import matplotlib.pyplot as plt

    ax.set_ylim(0, 1)
    ax.set_title(title, fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def plot_curves(cv: dict[str, dict[int, list[tuple[int, float]]]], start: float | None, path: Path) -> None:
    fig, ax = _axes()
    for algo, per_seed in cv.items():
        if not per_seed:
            continue
        x, mean, low, high = aligned(per_seed)
        (line,) = ax.plot(x, mean, label=f"{algo} ({len(per_seed)} seeds)", marker="o", ms=3)
        ax.fill_between(x, low, high, alpha=0.15, color=line.get_color())
    if start is not None:
        ax.axhline(start, color="grey", ls="--", lw=1, label="RFT checkpoint")
    ax.set_xlabel("environment steps (mean over seeds at each evaluation)")
    ax.set_ylabel("Pass@1 (held-out)")
    _save(fig, ax, "Pass@1 against environment steps: mean and 95% bootstrap interval across seeds", path)


def plot_profiles(profiles: dict[str, stats.Profile], path: Path) -> None:
    """Performance profiles (the fraction of seed x task final scores above each success rate) with their
    95% stratified bootstrap bands."""
    fig, ax = _axes()
    for algo, p in profiles.items():
        (line,) = ax.plot(p.taus, p.point, drawstyle="steps-post", label=algo)
        ax.fill_between(p.taus, p.low, p.high, step="post", alpha=0.15, color=line.get_color())
    ax.set_xlabel("success rate tau")
    ax.set_ylabel("fraction of seed x task scores above tau")
    _save(fig, ax, "Performance profiles of the final per-task success: 95% stratified bootstrap bands", path)


def summary(
    rows: list[dict[str, Any]],
    algos: list[str],
    start: float | None,
    cv: dict[str, dict[int, list[tuple[int, float]]]] | None = None,
) -> dict[str, Any]:
    """Per algorithm: final Pass@1 per seed, steps to RFT + 5 points, the per-task results of each seed's
    last evaluation (`per_seed_tasks`, seed order) and their mean over seeds (`per_task`); `cv`: the curves
    when the caller has them already."""
    cv = cv if cv is not None else curves(rows, algos)
    out: dict[str, Any] = {}
    for algo in algos:
        finals, reach, per_task = [], [], []
        for seed, pts in sorted(cv[algo].items()):
            finals.append(pts[-1][1])
            target = (start if start is not None else pts[0][1]) + GAIN
            reach.append(next((x for x, y in pts if y >= target - 1e-9), None))
            last = [r for r in rows if r.get("algo") == algo and r.get("seed") == seed and "per_task" in r]
            if last:
                per_task.append(last[-1]["per_task"])
        out[algo] = {
            "final": finals,
            "reach": reach,
            "steps": [pts[-1][0] for pts in cv[algo].values()],
            "per_task": {
                t: float(np.mean([p[t] for p in per_task if t in p]))
                for t in sorted({t for p in per_task for t in p})
            },
            "per_seed_tasks": per_task,
        }
    return out


@dataclass
class Statistics:
    """experiments/stats.py's estimators on the compared algorithms' final per-task success: the score
    matrices ([seeds, tasks] per algorithm, columns `tasks`), the aggregates with 95% stratified bootstrap
    intervals, P(X > Y) for every ordered pair, the performance profiles, the minimum detectable difference at
    this comparison's seeds and at more (`detectable`, fewest seeds first) and what was left out (`notes`)."""

    tasks: list[str] = field(default_factory=list)
    matrices: dict[str, np.ndarray] = field(default_factory=dict)
    aggregates: dict[str, dict[str, stats.Estimate]] = field(default_factory=dict)
    improvement: dict[tuple[str, str], stats.Estimate] = field(default_factory=dict)
    profiles: dict[str, stats.Profile] = field(default_factory=dict)
    detectable: list[stats.Detectable] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


MORE_SEEDS = (5, 10, 20)  # the minimum detectable difference is also given at these seed counts


def statistics(summ: dict[str, Any], episodes_per_task: int | None) -> Statistics:
    """The statistics of `summary`'s per-task results of each seed's last evaluation. The algorithms
    compared are those evaluated on the largest task set (sb3-ppo, on its simple tasks only, is left out of a
    comparison with the others); a task some run has no result for is left out for all. `episodes_per_task`:
    the evaluation's episodes per task (eval_n_per_task), for the minimum detectable difference."""
    st = Statistics()
    finals = {a: s["per_seed_tasks"] for a, s in summ.items() if s["per_seed_tasks"]}
    st.notes += [f"{a}: no per-task results, left out" for a in summ if a not in finals]
    if not finals:
        return st
    covered = {a: set().union(*runs) for a, runs in finals.items()}
    widest = max(covered.values(), key=len)
    st.notes += [
        f"{a}: evaluated on {len(covered[a])} tasks, not the others' {len(widest)}: left out of these "
        "statistics"
        for a in finals
        if covered[a] != widest
    ]
    st.matrices, st.tasks = stats.score_matrices({a: r for a, r in finals.items() if covered[a] == widest})
    if missing := sorted(widest - set(st.tasks)):
        st.notes.append(f"{len(missing)} tasks without a result in every run left out: {', '.join(missing)}")
    st.aggregates = stats.aggregates(st.matrices)
    st.improvement = stats.improvements(st.matrices)
    st.profiles = stats.profiles(st.matrices)
    if not episodes_per_task:
        st.notes.append("no minimum detectable difference: the evaluation's episodes per task are unknown")
        return st
    try:
        now = stats.minimum_detectable_difference(st.matrices, episodes_per_task)
    except ValueError as e:
        st.notes.append(f"no minimum detectable difference: {e}")
        return st
    st.detectable = [now] + [
        stats.minimum_detectable_difference(st.matrices, episodes_per_task, seeds=n)
        for n in MORE_SEEDS
        if n > now.seeds
    ]
    return st


def md_head(*cells: str) -> list[str]:
    """A markdown table's header row and separator row for these column names."""
    return ["| " + " | ".join(cells) + " |", "|" + " --- |" * len(cells)]


def improvement_md(names: list[str], improvement: dict[tuple[str, str], Any]) -> list[str]:
    """The P(row > column) table of `stats.improvements`' estimates over `names`."""
    return [*md_head("P(row > column)", *names),
            *(f"| {x} | " + " | ".join("-" if x == y else str(improvement[x, y]) for y in names) + " |"
              for x in names)]


def statistics_md(st: Statistics) -> list[str]:
    """table.md's lines on the statistics below the main table: how the intervals were made, the probability
    of improvement matrix, the minimum detectable difference, what was left out."""
    if not st.matrices:
        return ["", *st.notes] if st.notes else []
    runs = ", ".join(sorted({str(m.shape[0]) for m in st.matrices.values()}))
    lines = [
        "",
        f"Final Pass@1 statistics over {runs} seeds x {len(st.tasks)} tasks (each seed's last evaluation, "
        "per task; Agarwal et al. 2021, as in rliable). Intervals: 95% stratified bootstrap percentile "
        f"intervals, seeds resampled with replacement within each task ({stats.REPS:,} resamples, numpy "
        f"seed {stats.SEED}). IQM: the mean of the middle half of all seed x task scores.",
        "",
        "| algorithm | median [95% CI] | optimality gap [95% CI] |",
        "| --- | --- | --- |",
        *(f"| {a} | {agg['median']} | {agg['optimality gap']} |" for a, agg in st.aggregates.items()),
    ]
    names = list(st.matrices)
    if len(names) > 1:
        lines += [
            "",
            "Probability of improvement P(row > column): per task, the chance that a seed of the row "
            "algorithm scores higher than a seed of the column algorithm (ties count half: the Mann-Whitney "
            "U over m x n), averaged over tasks; 0.5 is no difference. 95% stratified bootstrap intervals.",
            "",
            *improvement_md(names, st.improvement),
        ]
    if st.detectable:
        now, more = st.detectable[0], st.detectable[1:]
        lines += [
            "",
            f"Minimum detectable difference: with {now.seeds} seeds per algorithm and "
            f"{now.episodes_per_task} evaluation episodes per task, a true difference in mean Pass@1 of "
            f"**{now.difference:.3f}** is "
            f"detected with power {now.power:.1f} by a two-sided test at alpha {now.alpha:.2f} (normal "
            f"approximation; per seed: between-seed sd {np.sqrt(now.seed_var):.3f}, evaluation sd "
            f"{np.sqrt(now.eval_var):.3f})"
            + ("; with " + ", ".join(f"{d.seeds} seeds: {d.difference:.3f}" for d in more) if more else "")
            + ".",
        ]
    return lines + (["", *st.notes] if st.notes else [])


def hardest(
    start_per_task: dict[str, float] | None, summ: dict[str, Any], n: int = HARD
) -> tuple[list[str], int]:
    """The n tasks hardest at the start (lowest RFT-checkpoint success; ties: lowest mean over algorithms),
    among tasks some run solved at least once; also how many tasks no run ever solved (left out)."""
    base = start_per_task or {}
    tasks = sorted({t for s in summ.values() for t in s["per_task"]} | set(base))

    def best(t: str) -> float:
        return max([base.get(t, 0.0), *[s["per_task"].get(t, 0.0) for s in summ.values()]])

    solved = [t for t in tasks if best(t) > 0]

    def key(t: str) -> tuple[float, float, str]:
        after = np.mean([s["per_task"].get(t, 0.0) for s in summ.values()]) if summ else 0.0
        return (base.get(t, 0.0), float(after), t)

    return sorted(solved, key=key)[:n], len(tasks) - len(solved)


# What each algorithm learned from: per-iteration training metrics (metrics.jsonl), (key, label, percent)
DIAGNOSTICS = (
    ("train/success_rate", "rollout success", True),
    ("train/mixed_groups_frac", "groups with both outcomes", True),
    ("train/nonzero_adv_steps", "steps with a non-zero advantage", False),
    ("train/nonzero_adv_frac", "... share of the iteration's steps", True),
    ("grsd/forks", "forks found", False),
    ("grsd/fork_share", "fork samples' share of the fine-tuning set", True),
    ("grsd/same_screen_rate", "forks on truly the same screen (SimDroid screen_key)", True),
    ("grsd/next_differs_rate", "forks whose teacher action led to another screen", True),
    ("grsd/same_history_rate", "forks with the teacher's own history (the sample repeats an RFT step)", True),
    ("grsd/later_fork_rate", "forks after an earlier fork of the same failed rollout", True),
    ("grsd/fork_precision_branching", "forks whose correction raised the success rate (branching)", True),
    ("gigpo/anchor_groups", "anchor states shared by two or more steps", False),
    ("gigpo/steps_in_anchor_groups_frac", "steps in a shared anchor state", True),
    ("gigpo/step_signal_steps", "steps with a non-zero step-level advantage", False),
    ("gigpo/anchor_same_key_rate", "anchor matches on truly the same screen (SimDroid screen_key)", True),
    ("train/sft_samples", "fine-tuning samples", False),
    ("train/update_env_steps", "env steps of the update's own branches (counted in the budget)", False),
    ("vine/states", "states valued by Monte Carlo continuations", False),
    ("vine/value_mean", "their mean Monte Carlo value", True),
    ("grsd_reflect/credit_auc", "credit localisation: AUC of turn weights at true fork steps (GRPO 50%)",
     True),
    ("grsd/greedy_forks", "forks whose failed action was the greedy one", False),
)
# horizon groups by AndroidWorld complexity (its step budget is int(10 * complexity)): (name, upper bound)
HORIZONS = (("short (complexity <= 1.2, <= 12 steps)", 1.2), ("medium (1.4-2.4, 14-24 steps)", 2.4),
            ("long (>= 2.8, >= 28 steps)", float("inf")))


Diagnostics = dict[str, dict[str, tuple[float, float, float]]]  # algorithm -> key -> (mean, first, last)


def _logged(row: dict[str, Any], key: str) -> bool:
    return isinstance(row.get(key), int | float) and not np.isnan(row[key])


def diagnostics(rows: list[dict[str, Any]], algos: list[str]) -> Diagnostics:
    """Per algorithm, per DIAGNOSTICS key it logged: (mean over its training iterations and seeds, mean of
    each seed's first iteration, mean of each seed's last), NaNs (e.g. no fork in an iteration) left out."""
    out: Diagnostics = {}
    for algo in algos:
        runs: dict[int, list[dict[str, Any]]] = {}
        for r in sorted(rows, key=lambda r: r.get("iteration", 0)):
            if r.get("algo") == algo and r.get("iteration", 0) > 0:
                runs.setdefault(r.get("seed", 0), []).append(r)
        got: dict[str, tuple[float, float, float]] = {}
        for key, _, _ in DIAGNOSTICS:
            per_run = [[float(r[key]) for r in rs if _logged(r, key)] for rs in runs.values()]
            per_run = [v for v in per_run if v]
            if per_run:
                got[key] = (float(np.mean([x for v in per_run for x in v])),
                            float(np.mean([v[0] for v in per_run])), float(np.mean([v[-1] for v in per_run])))
        if got:
            out[algo] = got
    return out


def diagnostics_md(diag: Diagnostics) -> list[str]:
    """table.md's table of what each algorithm learned from (rows: DIAGNOSTICS present in some run)."""
    names = list(diag)
    keys = [(k, label, pct) for k, label, pct in DIAGNOSTICS if any(k in d for d in diag.values())]
    if not keys:
        return []

    def cell(v: tuple[float, float, float] | None, pct: bool) -> str:
        if v is None:
            return "-"
        f = (lambda x: f"{100 * x:.0f}%") if pct else (lambda x: f"{x:,.0f}")  # noqa: E731
        return f"{f(v[0])} ({f(v[1])} -> {f(v[2])})"

    return [
        "",
        "What each algorithm learned from, per training iteration (metrics.jsonl): the mean over iterations "
        "and seeds (first iteration -> last, mean over seeds). GRPO learns only from groups with both "
        "outcomes; GRSD's forks come only from them; GiGPO's step-level advantages also come from groups "
        "whose rollouts all succeed, through the screens they share; fork and anchor precision are checked "
        "against SimDroid's ground-truth screen identity.",
        "",
        *md_head("per iteration", *names),
        *(f"| {label} | " + " | ".join(cell(diag[a].get(k), pct) for a in names) + " |"
          for k, label, pct in keys),
    ]


def complexity_of(tasks: Sequence[str]) -> dict[str, float]:
    """AndroidWorld complexity of each task the task catalogue knows."""
    from voyager_gym import catalogue

    known = catalogue.by_name()
    return {t: known[t].complexity for t in tasks if t in known}


def groups_md(st: Statistics, start_row: dict[str, Any] | None, title: str, column: str,
              groups: Sequence[tuple[str, Callable[[str], bool]]], unknown: str) -> list[str]:
    """A table.md split of the final per-task success into groups of tasks (name, membership test; a group
    with none of the tasks is left out): per group the number of tasks, the RFT start's mean and each
    algorithm's mean over the group's tasks with its 95% stratified bootstrap interval. `unknown`: a note on
    the tasks that fall in no group, if any."""
    if not st.matrices:
        return []
    start = (start_row or {}).get("per_task", {})
    lines = ["", title, "", *md_head(column, "tasks", "RFT checkpoint", *st.matrices)]
    grouped: set[int] = set()
    for name, member in groups:
        cols = [i for i, t in enumerate(st.tasks) if member(t)]
        grouped.update(cols)
        if not cols:
            continue
        s0 = [start[st.tasks[i]] for i in cols if st.tasks[i] in start]
        means = [stats.Estimate(*map(float, stats.Bootstrap().interval(stats.METRICS["mean"], m[:, cols])))
                 for m in st.matrices.values()]
        lines.append(f"| {name} | {len(cols)} | {f'{np.mean(s0):.3f}' if s0 else '-'} | "
                     + " | ".join(map(str, means)) + " |")
    if left := len(st.tasks) - len(grouped):
        lines.append(f"\n{left} tasks of {unknown} left out of this split")
    return lines


def horizon_md(st: Statistics, start_row: dict[str, Any] | None) -> list[str]:
    """table.md's split of the final per-task success by horizon (HORIZONS; `groups_md`)."""
    comp = complexity_of(st.tasks)
    bounds = [-float("inf"), *(high for _, high in HORIZONS)]
    groups = [(name, lambda t, low=low, high=high: t in comp and low < comp[t] <= high)
              for (name, high), low in zip(HORIZONS, bounds[:-1], strict=True)]
    return groups_md(
        st, start_row,
        "Final Pass@1 by horizon (AndroidWorld complexity; its step budget is 10 x complexity): the mean "
        "over the group's tasks with its 95% stratified bootstrap interval; the paper's claim is about long "
        "tasks.",
        "horizon", groups, "unknown complexity")


def difficulty_md(st: Statistics, start_row: dict[str, Any] | None) -> list[str]:
    """table.md's split of the final per-task success by AndroidWorld's difficulty (the task catalogue's,
    from its task_metadata.json; `groups_md`)."""
    from voyager_gym import catalogue

    known = catalogue.by_name()
    groups = [(d, lambda t, d=d: t in known and known[t].difficulty == d) for d in catalogue.DIFFICULTIES]
    return groups_md(
        st, start_row,
        "Final Pass@1 by AndroidWorld difficulty (its task_metadata.json: easy, medium, hard): the mean over "
        "the group's tasks with its 95% stratified bootstrap interval.",
        "difficulty", groups, "unknown difficulty")


def heldout_md(rows: list[dict[str, Any]], algos: list[str]) -> list[str]:
    """table.md's held-out-task table (`split=tasks`): per algorithm, each seed's last `heldout_pass_at_1` (on
    tasks never trained on) beside its first, the mean over seeds; where every seed's last evaluation logged
    `heldout_per_task`, also the mean with its 95% stratified bootstrap interval over those tasks and the
    probability of improvement between algorithms (as for the main table); nothing without a split."""
    lines = []
    per_task: dict[str, list[dict[str, float]]] = {}
    for algo in algos:
        runs: dict[int, list[dict[str, Any]]] = {}
        for r in sorted(rows, key=lambda r: r.get("iteration", 0)):
            if r.get("algo") == algo and _logged(r, "heldout_pass_at_1"):
                runs.setdefault(r.get("seed", 0), []).append(r)
        if not runs:
            continue
        first = [float(v[0]["heldout_pass_at_1"]) for v in runs.values()]
        last = [float(v[-1]["heldout_pass_at_1"]) for v in runs.values()]
        tables = [v[-1].get("heldout_per_task") for v in runs.values()]
        if all(isinstance(t, dict) and t for t in tables):
            per_task[algo] = [{k: float(x) for k, x in t.items()} for t in tables]
        lines.append((algo, f"{np.mean(first):.3f}", f"{np.mean(last):.3f}",
                      ", ".join(f"{x:.3f}" for x in last)))
    if not lines:
        return []
    agg, improvement, names, tasks = {}, {}, [], []
    if per_task and set(per_task) == {a for a, *_ in lines}:
        matrices, tasks = stats.score_matrices(per_task)
        agg = {a: e["mean"] for a, e in stats.aggregates(matrices).items()}
        names = list(matrices)
        improvement = stats.improvements(matrices) if len(names) > 1 else {}
    out = ["", "Held-out tasks (`split=tasks`: templates never trained on): Pass@1 at the start and at the "
           "last evaluation, mean over seeds"
           + (f"; the interval is the 95% stratified bootstrap interval over the {len(tasks)} held-out tasks"
              if agg else ""), "",
           *md_head("algorithm", "start", "final" + (": mean [95% CI]" if agg else ""), "per seed")]
    out += [f"| {a} | {start} | {agg[a] if agg else final} | {seeds} |" for a, start, final, seeds in lines]
    if improvement:
        out += ["", "Held-out tasks: probability of improvement P(row > column) (as above, over the held-out "
                "tasks)", "", *improvement_md(names, improvement)]
    return out


# the fork-level measurement's arms, after "before"
FORK_ARMS = ("grsd", "control", "grpo", "oracle", "reflect")


def forklevel_md(rows: list[dict[str, Any]]) -> list[str]:
    """table.md's fork-level table (algos/forklevel.py; GRSD's `fork_eval`): over every fork state of every
    measured iteration and seed, per arm, the share of states whose greedy action matches the teacher's, the
    share of mismatched states the update fixed and of matched ones it broke, the share matching the expert,
    greedy-rollout success from the states and Pass@1 on held-out instances of their tasks; then GRSD minus
    each other arm, paired state by state (task by task for transfer), with a 95% bootstrap interval."""
    from algos.forklevel import paired_bootstrap

    recs = [r for r in rows if isinstance(r.get("forklevel/records"), dict)]
    if not recs:
        return []
    lines = []
    for algo in sorted({r.get("algo", "") for r in recs}):
        mine = [r for r in recs if r.get("algo") == algo]
        out: dict[str, np.ndarray] = {}  # arm -> [states, 3] (teacher, expert, success; NaN where unknown)
        arms = ["before", *(a for a in FORK_ARMS if all(a in r["forklevel/records"]["arms"] for r in mine))]
        for arm in arms:
            outcomes = [o for r in mine for o in r["forklevel/records"]["arms"][arm]]
            out[arm] = np.array([[np.nan if v is None else v for v in o] for o in outcomes], dtype=np.float64)
        transfer: dict[str, list[float]] = {a: [] for a in arms}
        for r in mine:
            tr = r["forklevel/records"].get("transfer") or {}
            tasks = sorted(set.intersection(*(set(tr.get(a, {})) for a in arms))) if tr else []
            for a in arms:
                transfer[a] += [tr[a][t] for t in tasks]
        before = out["before"]
        n = len(before)
        wrong = before[:, 0] == 0
        seeds = sorted({r.get("seed", 0) for r in mine})
        greedy = [r["forklevel/greedy_failed"] for r in mine if _logged(r, "forklevel/greedy_failed")]
        agree = [r["forklevel/teacher_is_expert"] for r in mine if _logged(r, "forklevel/teacher_is_expert")]
        recur = [r["forklevel/recur_rate"] for r in rows if r.get("algo") == algo
                 and _logged(r, "forklevel/recur_rate")]

        def rate(x: np.ndarray) -> str:
            x = x[~np.isnan(x)]
            return f"{x.mean():.3f}" if len(x) else "-"

        lines += [
            "",
            f"Fork-level measurement ({algo}: {n} fork states over {len(mine)} measured iterations of "
            f"{len(seeds)} seeds; {int(wrong.sum())} with a greedy action other than the teacher's before "
            f"the update). Each arm is updated from the same checkpoint on the same groups: grsd (this run's "
            "update), control (the same update without the fork samples), grpo (GRPO's update), oracle (the "
            "fork samples labelled with the task expert's action at the same states), reflect "
            "(GRSD-Reflect's update, where measured). The failed action was "
            f"the greedy one at {_pct(greedy)} of the states; the teacher's action was the expert's at "
            f"{_pct(agree)}; a (screen, failed action) pair of one measured iteration came back in the next "
            f"iteration's rollouts {_pct(recur)} of the time.",
            "",
            *md_head("arm", "greedy = teacher", "fixed (of mismatched)", "broken (of matched)",
                     "greedy = expert", "greedy rollout succeeds", "held-out Pass@1 of the fork tasks"),
        ]
        for arm in arms:
            o = out[arm]
            fixed = o[wrong, 0] if arm != "before" else np.array([np.nan])
            broken = 1 - o[~wrong, 0] if arm != "before" else np.array([np.nan])
            lines.append(f"| {arm} | {rate(o[:, 0])} | {rate(fixed)} | {rate(broken)} | {rate(o[:, 1])} | "
                         f"{rate(o[:, 2])} | {rate(np.array(transfer[arm], dtype=np.float64))} |")
        if "grsd" in out and len(arms) > 2:
            lines += ["", "GRSD minus each arm, paired (mean [95% bootstrap interval over states; over tasks "
                      "for held-out Pass@1]):", "",
                      *md_head("GRSD minus", "fixed (of mismatched)", "greedy rollout succeeds",
                               "held-out Pass@1 of the fork tasks")]
            g = out["grsd"]
            for arm in arms:
                if arm == "grsd":
                    continue
                o = out[arm]
                cells = [paired_bootstrap(g[wrong, 0], o[wrong, 0]), paired_bootstrap(g[:, 2], o[:, 2]),
                         paired_bootstrap(np.array(transfer["grsd"]), np.array(transfer[arm]))]
                lines.append(f"| {arm} | " + " | ".join(
                    "-" if np.isnan(m) else f"{m:+.3f} [{lo:+.3f}, {hi:+.3f}]" for m, lo, hi in cells) + " |")
    return lines


def _pct(xs: list[float]) -> str:
    return f"{100 * float(np.mean(xs)):.0f}%" if xs else "-"


def table_md(summ: dict[str, Any], start_row: dict[str, Any] | None, st: Statistics | None = None,
             diag: Diagnostics | None = None, rows: list[dict[str, Any]] | None = None) -> str:
    """table.md: the RFT start, per algorithm the final Pass@1 (mean and IQM with 95% stratified bootstrap
    intervals, per seed), env steps and steps to RFT + 5 points, then `statistics_md`'s lines (`st`: the
    statistics, computed here without an MDD when not given) and the ten hardest tasks' table."""
    st = st if st is not None else statistics(summ, None)
    start = start_row["pass_at_1"] if start_row else None
    lines = []
    if start is not None:
        lines.append(f"RFT checkpoint (start of every run): Pass@1 **{start:.3f}**\n")
    lines += [
        "| algorithm | final Pass@1: mean [95% CI] | IQM [95% CI] | per seed | env steps | "
        f"steps to RFT + {GAIN * 100:.0f} points |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for algo, s in summ.items():
        seeds = ", ".join(f"{v:.3f}" for v in s["final"])
        reach = ", ".join("not reached" if r is None else f"{r:,}" for r in s["reach"])
        steps = ", ".join(f"{v:,}" for v in s["steps"])
        label = f"{algo} (simple tasks only, from scratch)" if algo == "sb3-ppo" else algo
        if algo in st.aggregates:
            mean, iqm = st.aggregates[algo]["mean"], st.aggregates[algo]["IQM"]
        else:  # left out of the statistics (see the notes): the plain mean of its seeds, no interval
            mean, iqm = (f"{np.mean(s['final']):.3f} (own tasks)" if s["final"] else "-"), "-"
        lines.append(f"| {label} | {mean} | {iqm} | {seeds} | {steps} | {reach} |")
    lines += statistics_md(st)
    lines += horizon_md(st, start_row)
    lines += difficulty_md(st, start_row)
    lines += diagnostics_md(diag or {})
    lines += heldout_md(rows or [], list(summ))
    lines += forklevel_md(rows or [])
    hard, never = hardest(start_row.get("per_task") if start_row else None, summ)
    if hard:
        lines += [
            "",
            "Ten hardest tasks (lowest success at the RFT checkpoint, among tasks some run "
            f"solved; {never} tasks no run solved are left out): final success per algorithm, "
            "mean over seeds",
            "",
        ]
        lines += md_head("task", "RFT checkpoint", *summ)
        for t in hard:
            st = (start_row or {}).get("per_task", {}).get(t)
            cells = [f"{s['per_task'].get(t, float('nan')):.2f}" for s in summ.values()]
            lines.append(f"| {t} | {'' if st is None else f'{st:.2f}'} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _md_to_html(md: str) -> str:
    """The tables and paragraphs of table.md as HTML (its only constructs)."""
    out: list[str] = []
    rows: list[list[str]] = []

    def flush() -> None:
        if rows:
            head, body = rows[0], rows[2:]
            out.append("<table><tr>" + "".join(f"<th>{html.escape(c)}</th>" for c in head) + "</tr>")
            out.extend("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in r) + "</tr>" for r in body)
            out.append("</table>")
            rows.clear()

    for line in md.splitlines():
        if line.startswith("|"):
            rows.append([c.strip() for c in line.strip("|").split("|")])
            continue
        flush()
        if line.strip():
            text = html.escape(line).replace("**", "")
            out.append(f"<p>{text}</p>")
    flush()
    return "\n".join(out)


def _img(path: Path) -> str:
    data = base64.b64encode(path.read_bytes()).decode()
    return f'<img src="data:image/png;base64,{data}" style="max-width:100%">'


def fork_pictures(out: Path, n: int = 3) -> list[Path]:
    """Fork-point pictures from the first GRSD run of the comparison (none when no GRSD run kept forks)."""
    runs = sorted((out / "runs").glob("grsd-s*"))
    if not runs:
        return []
    from algos.forks.figure import draw_run_forks

    try:
        return [draw_run_forks(runs[0], out / "forks.png", n=n)]
    except (ValueError, FileNotFoundError, SystemExit) as e:  # no fork in this run: the report says so
        print(f"report: no fork pictures ({e})")
        return []


def algorithms_of(cfg: dict[str, Any]) -> list[str]:
    """The compared algorithms of a comparison's config.json (a list; a comma string in older folders)."""
    algo = cfg.get("algo", [])
    return [a.strip() for a in (algo.split(",") if isinstance(algo, str) else algo) if a.strip()]


def _show(x: Any) -> str:
    """A config value for the report's header: a section by its name, a list comma-separated."""
    if isinstance(x, dict):
        return str(x.get("name", ""))
    return ", ".join(map(str, x)) if isinstance(x, list) else str(x)


def report_html(out: Path, md: str, pictures: list[Path]) -> str:
    cfg = json.loads((out / "config.json").read_text()) if (out / "config.json").exists() else {}
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'><title>voyager-gym comparison</title>",
        "<style>body{font-family:sans-serif;max-width:960px;margin:2em auto}table{border-collapse:collapse}"
        "td,th{border:1px solid #ccc;padding:3px 8px;text-align:left}</style></head><body>",
        f"<h1>Comparison: {html.escape(out.name)}</h1>",
        f"<p>algorithms: {html.escape(_show(cfg.get('algo', '')))}; seeds: {cfg.get('seeds', '')}; budget: "
        f"{cfg.get('budget', '')} env steps; tasks: {html.escape(_show(cfg.get('tasks', '')))}; policy: "
        f"{html.escape(_show(cfg.get('policy', '')))}</p>",
        "<h2>Learning curves</h2>",
        _img(out / "curves.png") if (out / "curves.png").exists() else "<p>(no curves)</p>",
        "<h2>Results</h2>",
        _md_to_html(md),
        "<h2>Performance profiles</h2>",
        _img(out / "profiles.png") if (out / "profiles.png").exists() else "<p>(no profiles)</p>",
    ]
    if pictures:
        parts.append("<h2>Fork points (GRSD)</h2>")
        parts += [_img(p) for p in pictures]
    parts.append("</body></html>")
    return "\n".join(parts)


OUTPUTS = ("metrics.jsonl", "start.json", "curves.png", "profiles.png", "table.md", "report.html")


def write_outputs(
    out: Path, algos: list[str], seeds: int, start_row: dict[str, Any] | None
) -> dict[str, Any]:
    from algos.folders import inside
    from algos.run import atomic_write_text

    for name in OUTPUTS:  # each output replaces a file of the folder, never one a link leads to
        inside(out, name)
    rows = load_rows(out)
    atomic_write_text(out / "metrics.jsonl", "".join(json.dumps(r) + "\n" for r in rows))
    if start_row is not None:
        atomic_write_text(out / "start.json", json.dumps(start_row))
    start = start_row["pass_at_1"] if start_row else None
    cv = curves(rows, algos)
    plot_curves(cv, start, out / "curves.png")
    summ = summary(rows, algos, start, cv)
    cfg = json.loads((out / "config.json").read_text()) if (out / "config.json").exists() else {}
    st = statistics(summ, cfg.get("eval_n_per_task"))
    (out / "profiles.png").unlink(missing_ok=True)  # none from an earlier report when there is none now
    if st.profiles:
        plot_profiles(st.profiles, out / "profiles.png")
    md = table_md(summ, start_row, st, diagnostics(rows, algos), rows)
    atomic_write_text(out / "table.md", md)
    atomic_write_text(out / "report.html", report_html(out, md, fork_pictures(out)))
    return summ


def main(argv: Sequence[str] | None = None) -> None:
    from experiments.config import ReportConfig, parse

    rc = parse(sys.argv[1:] if argv is None else argv, ReportConfig, "report")
    out = Path(rc.run_dir)
    from algos.folders import infer_made_by

    compare_folder = (out / "config.json").exists() and (out / "runs").is_dir()
    if not compare_folder or (out / "checkpoint.json").exists() or infer_made_by(out) != "compare":
        raise SystemExit(
            f"run_dir={str(out)!r}: expected a comparison folder (with config.json and runs/); "
            "a training run's folder is never rewritten"
        )
    from algos.run import RunFolderError, lock_folder

    try:
        lock = lock_folder(out)  # not while a comparison is writing it
    except RunFolderError as e:
        raise SystemExit(f"report: {e}") from None
    try:
        cfg = json.loads((out / "config.json").read_text())
        start = json.loads((out / "start.json").read_text()) if (out / "start.json").exists() else None
        write_outputs(out, algorithms_of(cfg), cfg.get("seeds", 1), start)
    except RunFolderError as e:
        raise SystemExit(f"report: {e}") from None
    finally:
        lock.close()
    print((out / "table.md").read_text())


if __name__ == "__main__":
    main()
