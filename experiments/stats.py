"""Statistics of a comparison that a reviewer can check: the estimators of Agarwal et al., "Deep Reinforcement
Learning at the Edge of the Statistical Precipice" (NeurIPS 2021, the `rliable` library), on numpy and scipy.

The data of every estimator is a score matrix per algorithm: shape [runs, tasks], runs being the seeds and
each entry one seed's success rate on one task (its Pass@1 on that task's held-out instances), in [0, 1].
Every algorithm of a comparison is scored on the same tasks, in the same column order; run counts may differ.

- aggregates: `mean`, `median` (of the per-task means over runs), `iqm` (the interquartile mean: the 25%
  trimmed mean of all run x task scores) and `optimality_gap` (how far scores stay below 1, a success rate's
  ceiling);
- `probability_of_improvement` P(X > Y): per task, the Mann-Whitney U statistic of X's runs against Y's over
  m * n (the chance that a run of X beats a run of Y, ties counting half), averaged over tasks;
- `performance_profile`: the fraction of run x task scores above each threshold tau in [0, 1];
- intervals (`aggregates`, `improvements`, `profiles`, `Bootstrap`): 95% stratified bootstrap percentile
  intervals, seeds resampled with replacement within each task, reproducible for a seed;
- `minimum_detectable_difference`: the smallest true difference in mean Pass@1 that a comparison with a
  given number of seeds and evaluation episodes detects;
- `per_task_means`: the per-task tables.

Bad input (an empty matrix, a score outside [0, 1], algorithms scored on different numbers of tasks) is a
ValueError that names the value and what was expected. No torch here: numpy and scipy only.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import Any

import numpy as np
from scipy import stats as sps

CEILING = 1.0  # the optimality gap's threshold: a success rate cannot exceed 1
CONFIDENCE = 0.95
REPS = 10_000  # bootstrap resamples of an aggregate or a probability of improvement (rliable: 50,000)
PROFILE_REPS = 2_000  # of a performance profile (rliable's default too)
SEED = 0  # every estimate draws its resamples from np.random.default_rng(SEED)
TAUS = np.linspace(0.0, 1.0, 101)
_CHUNK = 1 << 20  # resampled scores held at once (a bound on memory, not a parameter of the estimate)


@dataclass(frozen=True)
class Estimate:
    """A point estimate and its confidence interval [low, high]."""

    point: float
    low: float
    high: float

    def __str__(self) -> str:
        return f"{self.point:.3f} [{self.low:.3f}, {self.high:.3f}]"


@dataclass(frozen=True)
class Profile:
    """A performance profile: at each threshold in `taus`, the fraction of run x task scores above it, with
    its pointwise confidence band [low, high]."""

    taus: np.ndarray
    point: np.ndarray
    low: np.ndarray
    high: np.ndarray


@dataclass(frozen=True)
class Detectable:
    """The minimum detectable difference in mean Pass@1 for a design of `seeds` runs per algorithm and
    `episodes_per_task` evaluation episodes per task, and the variances it rests on (of one run's Pass@1)."""

    difference: float
    seeds: int
    episodes_per_task: int
    seed_var: float  # between-seed (training) variance, the evaluation's binomial share taken out
    eval_var: float  # binomial variance of the evaluation episodes, at `episodes_per_task`
    alpha: float
    power: float


# -- input ---------------------------------------------------------------------------------------------------
def check_scores(scores: Any, name: str = "scores") -> np.ndarray:
    """`scores` as a float [runs, tasks] matrix, or a ValueError that names what is wrong with it."""
    try:
        a = np.asarray(scores, dtype=float)
    except (TypeError, ValueError) as e:
        raise ValueError(f"{name}: expected a [runs, tasks] matrix of success rates ({e})") from None
    if a.ndim != 2 or a.size == 0:
        raise ValueError(
            f"{name}: expected a [runs, tasks] matrix with at least one run and one task, got shape {a.shape}"
        )
    bad = np.argwhere(~((a >= 0.0) & (a <= 1.0)))  # NaN is outside too
    if len(bad):
        r, t = bad[0]
        raise ValueError(
            f"{name}: {float(a[r, t])!r} at run {r}, task {t}: expected a success rate in [0, 1]"
        )
    return a


def check_matrices(matrices: Mapping[str, Any]) -> dict[str, np.ndarray]:
    """Every algorithm's matrix checked, and all of them on the same number of tasks."""
    if not matrices:
        raise ValueError("expected the score matrices of at least one algorithm, got none")
    out = {algo: check_scores(m, f"scores of {algo}") for algo, m in matrices.items()}
    first, tasks = next((algo, m.shape[1]) for algo, m in out.items())
    for algo, m in out.items():
        if m.shape[1] != tasks:
            raise ValueError(
                f"scores of {algo}: {m.shape[1]} tasks, expected {tasks} (as scores of {first}): every "
                "algorithm is scored on the same tasks, in the same order"
            )
    return out


def score_matrices(
    finals: Mapping[str, Sequence[Mapping[str, float]]],
) -> tuple[dict[str, np.ndarray], list[str]]:
    """The score matrices from each algorithm's per-run {task: success} results (a run's row is its dict), on
    the tasks every run of every algorithm has (sorted): a task some run lacks (all its episodes errored) is
    left out for all. Returns the matrices and the tasks (their columns)."""
    for algo, runs in finals.items():
        if not runs:
            raise ValueError(f"{algo}: no run with per-task results; expected at least one")
    runs = [r for per_algo in finals.values() for r in per_algo]
    if not runs:
        raise ValueError("expected the per-task results of at least one algorithm, got none")
    tasks = sorted(set.intersection(*(set(r) for r in runs)))
    if not tasks:
        raise ValueError("no task has results in every run: expected at least one task common to all runs")
    return check_matrices({a: [[r[t] for t in tasks] for r in rs] for a, rs in finals.items()}), tasks


def per_task_means(matrices: Mapping[str, Any], tasks: Sequence[str]) -> dict[str, dict[str, float]]:
    """Per algorithm, per task: the mean success over runs."""
    ms = check_matrices(matrices)
    n = next(iter(ms.values())).shape[1]
    if len(tasks) != n:
        raise ValueError(f"tasks: {len(tasks)} names, expected {n} (one per column of the score matrices)")
    return {algo: dict(zip(tasks, m.mean(axis=0).tolist(), strict=True)) for algo, m in ms.items()}


# -- point estimates (vectorised: [..., runs, tasks] -> [...]) -----------------------------------------------
def _mean(s: np.ndarray) -> np.ndarray:
    return s.mean(axis=(-2, -1))


def _median(s: np.ndarray) -> np.ndarray:
    return np.median(s.mean(axis=-2), axis=-1)


def _iqm(s: np.ndarray) -> np.ndarray:
    return sps.trim_mean(s.reshape(*s.shape[:-2], -1), 0.25, axis=-1)


def _gap(s: np.ndarray, threshold: float = CEILING) -> np.ndarray:
    return threshold - np.minimum(s, threshold).mean(axis=(-2, -1))


def _improvement(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """[..., m, tasks] and [..., n, tasks] -> [...]: the mean over tasks of U / (m * n), which is the mean of
    win (1), tie (1/2) and loss (0) over all m * n * tasks pairs of runs, since every task has m * n pairs."""
    d = x[..., :, None, :] - y[..., None, :, :]
    return ((d > 0) + 0.5 * (d == 0)).mean(axis=(-3, -2, -1))


def _profile(s: np.ndarray, taus: np.ndarray) -> np.ndarray:
    flat = s.reshape(*s.shape[:-2], -1)
    return np.stack([(flat > tau).mean(axis=-1) for tau in taus], axis=-1)


METRICS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "mean": _mean,
    "median": _median,
    "IQM": _iqm,
    "optimality gap": _gap,
}


def mean(scores: Any) -> float:
    """The mean of all run x task scores (the mean of the runs' Pass@1)."""
    return float(_mean(check_scores(scores)))


def median(scores: Any) -> float:
    """The median over tasks of each task's mean over runs (rliable's aggregate median)."""
    return float(_median(check_scores(scores)))


def iqm(scores: Any) -> float:
    """The interquartile mean: the mean of the middle half of all run x task scores, flattened
    (`scipy.stats.trim_mean(scores, 0.25)`: a quarter of the scores cut at each end)."""
    return float(_iqm(check_scores(scores)))


def optimality_gap(scores: Any, threshold: float = CEILING) -> float:
    """threshold - mean(min(score, threshold)) over all run x task scores: how far the scores stay below the
    threshold (1 for success rates: 1 - mean), scores above it not making up for those below."""
    return float(_gap(check_scores(scores), threshold))


def probability_of_improvement(x: Any, y: Any) -> float:
    """P(X > Y): per task, U / (m * n) with U the Mann-Whitney statistic of X's m runs against Y's n runs
    (pairs where X scores higher count 1, ties 1/2), averaged over tasks. P(Y > X) = 1 - P(X > Y)."""
    ms = check_matrices({"X": x, "Y": y})
    return float(_improvement(ms["X"], ms["Y"]))


def performance_profile(scores: Any, taus: Any = TAUS) -> np.ndarray:
    """At each threshold tau, the fraction of run x task scores strictly above tau (rliable's score
    distribution)."""
    return _profile(check_scores(scores), np.asarray(taus, dtype=float))


# -- stratified bootstrap ------------------------------------------------------------------------------------
def resample(scores: np.ndarray, reps: int, rng: np.random.Generator) -> np.ndarray:
    """`reps` stratified resamples of a [runs, tasks] matrix, shape [reps, runs, tasks]: within each task,
    `runs` run indices drawn with replacement, independently of the other tasks and resamples (rliable's
    StratifiedBootstrap; the tasks themselves are kept, not resampled)."""
    n, t = scores.shape
    return scores[rng.integers(0, n, size=(reps, n, t)), np.arange(t)]


@dataclass(frozen=True)
class Bootstrap:
    """Stratified bootstrap percentile intervals: `reps` times, each score matrix is resampled within each
    task (`resample`; several matrices independently of each other) and the statistic recomputed; the interval
    is the (1 - confidence) / 2 and (1 + confidence) / 2 quantiles of those values. The resamples come from
    np.random.default_rng(seed), drawn afresh for each estimate: a report is reproducible, and one estimate
    does not depend on which others are computed.

    A direct vectorised implementation: scipy.stats.bootstrap resamples each of several samples independently,
    so the stratification could be written with one sample per task column, but it refuses a sample of a
    single observation (a comparison with one seed) and would take every task as a separate argument."""

    reps: int = REPS
    confidence: float = CONFIDENCE
    seed: int = SEED

    def __post_init__(self) -> None:
        if not isinstance(self.reps, int | np.integer) or isinstance(self.reps, bool) or self.reps < 1:
            raise ValueError(
                f"reps={self.reps!r}: expected a whole number of bootstrap resamples, at least 1"
            )
        if not 0.0 < self.confidence < 1.0:
            raise ValueError(f"confidence={self.confidence!r}: expected a coverage strictly between 0 and 1")

    def interval(
        self, statistic: Callable[..., Any], *scores: Any
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(point, low, high) of `statistic` on `scores` (one or more [runs, tasks] matrices), each of the
        statistic's shape. `statistic` is vectorised: it maps arrays [..., runs, tasks] to [...] or
        [..., k]."""
        ms = [check_scores(s, f"scores[{i}]") for i, s in enumerate(scores)]
        if not ms:
            raise ValueError("expected at least one score matrix to bootstrap, got none")
        rng = np.random.default_rng(self.seed)
        point = np.asarray(statistic(*ms), dtype=float)
        step = max(1, _CHUNK // max(m.size for m in ms))
        draws = [
            np.asarray(statistic(*(resample(m, min(step, self.reps - k), rng) for m in ms)), dtype=float)
            for k in range(0, self.reps, step)
        ]
        tail = (1.0 - self.confidence) / 2 * 100
        low, high = np.percentile(np.concatenate(draws), [tail, 100 - tail], axis=0)
        return point, low, high


def aggregates(matrices: Mapping[str, Any], boot: Bootstrap = Bootstrap()) -> dict[str, dict[str, Estimate]]:
    """Per algorithm, every aggregate of `METRICS` (mean, median, IQM, optimality gap) with its stratified
    bootstrap interval (all four from the same resamples)."""
    names = list(METRICS)

    def all_metrics(s: np.ndarray) -> np.ndarray:
        return np.stack([METRICS[k](s) for k in names], axis=-1)

    out = {}
    for algo, m in check_matrices(matrices).items():
        point, low, high = boot.interval(all_metrics, m)
        out[algo] = {k: Estimate(float(point[i]), float(low[i]), float(high[i])) for i, k in enumerate(names)}
    return out


def improvements(
    matrices: Mapping[str, Any], boot: Bootstrap = Bootstrap()
) -> dict[tuple[str, str], Estimate]:
    """P(X > Y) with its stratified bootstrap interval (X's and Y's runs resampled independently within each
    task, rliable's StratifiedIndependentBootstrap) for every ordered pair (X, Y) of different algorithms.
    Ties count half to each side, so P(Y > X) = 1 - P(X > Y) resample by resample: each unordered pair is
    bootstrapped once and its mirror is 1 minus it, interval included."""
    ms = check_matrices(matrices)
    out = {}
    for x, y in combinations(ms, 2):
        point, low, high = boot.interval(_improvement, ms[x], ms[y])
        out[x, y] = Estimate(float(point), float(low), float(high))
        out[y, x] = Estimate(1.0 - float(point), 1.0 - float(high), 1.0 - float(low))
    return out


def profiles(
    matrices: Mapping[str, Any], taus: Any = TAUS, boot: Bootstrap = Bootstrap(reps=PROFILE_REPS)
) -> dict[str, Profile]:
    """Per algorithm, its performance profile over `taus` with a pointwise stratified bootstrap band."""
    t = np.asarray(taus, dtype=float)
    if t.ndim != 1 or t.size == 0:
        raise ValueError(f"taus: expected a non-empty 1-D grid of thresholds, got shape {t.shape}")
    return {
        algo: Profile(t, *boot.interval(lambda s: _profile(s, t), m))
        for algo, m in check_matrices(matrices).items()
    }


# -- power ---------------------------------------------------------------------------------------------------
def _positive_int(name: str, value: Any) -> int:
    if not isinstance(value, int | np.integer) or isinstance(value, bool) or value < 1:
        raise ValueError(f"{name}={value!r}: expected a whole number, at least 1")
    return int(value)


def minimum_detectable_difference(
    matrices: Mapping[str, Any],
    episodes_per_task: int,
    seeds: int | None = None,
    episodes: int | None = None,
    alpha: float = 0.05,
    power: float = 0.8,
) -> Detectable:
    """The smallest true difference in mean Pass@1 between two algorithms that a two-sided test at level
    `alpha` detects with probability `power`, for `seeds` runs per algorithm (default: the fewest any
    algorithm has here) evaluated on `episodes` episodes per task (default: `episodes_per_task`, what these
    matrices were measured with). A normal approximation:

        MDD = (z_{1 - alpha/2} + z_{power}) * sqrt(2 * V),   V = (s2_seed + s2_eval(episodes)) / seeds

    V is the variance of one algorithm's mean Pass@1 over its seeds. A run's Pass@1 (the mean of its T task
    scores) varies by training (s2_seed) and by the evaluation's finite episodes, binomial per task:
    s2_eval(k) = sum_t p_t (1 - p_t) / (k T^2), with p_t an algorithm's mean success on task t over its runs
    (averaged over algorithms). The observed between-seed variance (the sample variance of the runs' Pass@1
    within each algorithm, pooled over algorithms) holds both, so s2_seed = max(0, observed - s2_eval at
    `episodes_per_task`). The between-seed variance is itself estimated from few seeds, and z (not t)
    quantiles are used: with few seeds the true MDD is larger than this."""
    ms = check_matrices(matrices)
    k_obs = _positive_int("episodes_per_task", episodes_per_task)
    runs = min(m.shape[0] for m in ms.values())
    n = _positive_int("seeds", runs if seeds is None else seeds)
    k = _positive_int("episodes", k_obs if episodes is None else episodes)
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha={alpha!r}: expected a test level strictly between 0 and 1")
    if not 0.0 < power < 1.0:
        raise ValueError(f"power={power!r}: expected a probability strictly between 0 and 1")
    dof = sum(m.shape[0] - 1 for m in ms.values())
    if dof < 1:
        raise ValueError(
            "every algorithm has 1 run: expected at least 2 runs of some algorithm to estimate the "
            "between-seed variance"
        )
    observed = sum(((m.mean(axis=1) - m.mean()) ** 2).sum() for m in ms.values()) / dof
    n_tasks = next(iter(ms.values())).shape[1]
    binomial = np.mean([(p * (1 - p)).sum() for p in (m.mean(axis=0) for m in ms.values())]) / n_tasks**2
    seed_var = max(0.0, float(observed - binomial / k_obs))
    eval_var = float(binomial / k)
    z = sps.norm.ppf(1 - alpha / 2) + sps.norm.ppf(power)
    diff = float(z * np.sqrt(2 * (seed_var + eval_var) / n))
    return Detectable(diff, n, k, seed_var, eval_var, alpha, power)
