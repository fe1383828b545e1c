"""experiments/stats.py against values computed by hand on small fixed tables, the stratified bootstrap's
properties, the minimum detectable difference, clear errors on bad input, and the report's use of them."""

import numpy as np
import pytest
from scipy.stats import mannwhitneyu

from experiments import stats

# 3 seeds x 4 tasks. By task: t0 {0, .5, 0}, t1 {.25, .25, .5}, t2 {.5, .75, 1}, t3 {1, 1, 1}.
A = [
    [0.00, 0.25, 0.50, 1.00],
    [0.50, 0.25, 0.75, 1.00],
    [0.00, 0.50, 1.00, 1.00],
]
# 2 seeds x 4 tasks. By task: t0 {0, .25}, t1 {.5, .25}, t2 {.5, 1}, t3 {.75, 1}.
B = [
    [0.00, 0.50, 0.50, 0.75],
    [0.25, 0.25, 1.00, 1.00],
]


# -- point estimates -----------------------------------------------------------------------------------------
def test_aggregates_of_a_small_table_are_the_hand_computed_ones():
    # mean: task sums .5 + 1 + 2.25 + 3 = 6.75 over 12 scores = 0.5625
    assert stats.mean(A) == pytest.approx(0.5625)
    # median of the task means 1/6, 1/3, 3/4, 1: (1/3 + 3/4) / 2 = 13/24
    assert stats.median(A) == pytest.approx(13 / 24)
    # IQM: sorted 0 0 .25 .25 .5 .5 .5 .75 1 1 1 1; 3 cut at each end leaves .25 .5 .5 .5 .75 1: 3.5 / 6
    assert stats.iqm(A) == pytest.approx(7 / 12)
    # optimality gap at 1: 1 - 0.5625; at .75 the scores capped at .75 sum to .5 + 1 + 2 + 2.25 = 5.75,
    # so .75 - 5.75 / 12 = 13/48
    assert stats.optimality_gap(A) == pytest.approx(0.4375)
    assert stats.optimality_gap(A, threshold=0.75) == pytest.approx(13 / 48)


def test_probability_of_improvement_is_the_hand_computed_one():
    # Per task, wins + ties / 2 of A's 3 seeds against B's 2, over 6 pairs:
    # t0: A 0 ties 0 loses to .25 (.5), A .5 beats both (2), A 0 (.5): 3/6
    # t1: A .25 (0 + .5), A .25 (.5), A .5 (.5 + 1): 2.5/6
    # t2: A .5 (.5 + 0), A .75 (1 + 0), A 1 (1 + .5): 3/6
    # t3: each A 1 beats .75 and ties 1 (1.5), three of them: 4.5/6
    # mean: (3 + 2.5 + 3 + 4.5) / 6 / 4 = 13/24
    assert stats.probability_of_improvement(A, B) == pytest.approx(13 / 24)
    assert stats.probability_of_improvement(B, A) == pytest.approx(11 / 24)
    a, b = np.array(A), np.array(B)  # scipy's U statistic of the first sample, over m * n
    u = [mannwhitneyu(a[:, t], b[:, t]).statistic / 6 for t in range(4)]
    assert stats.probability_of_improvement(A, B) == pytest.approx(np.mean(u))


def test_identical_algorithms_have_probability_one_half():
    assert stats.probability_of_improvement(A, A) == 0.5
    imp = stats.improvements({"x": A, "y": [row[:] for row in A]}, stats.Bootstrap(reps=500))
    for pair in (("x", "y"), ("y", "x")):
        assert imp[pair].point == 0.5 and imp[pair].low <= 0.5 <= imp[pair].high


def test_performance_profile_is_the_fraction_above_each_threshold():
    # 10 of A's 12 scores are above 0, 5 above .5 (.75 and the four 1s), none above 1
    assert stats.performance_profile(A, [0.0, 0.5, 1.0]) == pytest.approx([10 / 12, 5 / 12, 0.0])
    prof = stats.profiles({"a": A}, taus=[0.0, 0.5, 1.0], boot=stats.Bootstrap(reps=500))["a"]
    assert np.all(prof.low <= prof.point) and np.all(prof.point <= prof.high)


def test_score_matrices_keep_the_tasks_every_run_has():
    finals = {
        "x": [{"b": 0.5, "a": 1.0, "c": 0.0}, {"a": 0.5, "b": 0.25}],  # c: all errored in the 2nd run
        "y": [{"a": 0.0, "b": 1.0, "c": 1.0}],
    }
    ms, tasks = stats.score_matrices(finals)
    assert tasks == ["a", "b"]
    assert ms["x"].tolist() == [[1.0, 0.5], [0.5, 0.25]] and ms["y"].tolist() == [[0.0, 1.0]]
    assert stats.per_task_means(ms, tasks) == {"x": {"a": 0.75, "b": 0.375}, "y": {"a": 0.0, "b": 1.0}}


# -- stratified bootstrap ------------------------------------------------------------------------------------
def test_resampling_draws_runs_within_each_task():
    scores = np.array([[t / 10 + r / 100 for t in range(5)] for r in range(3)])  # run r, task t: t/10 + r/100
    draws = stats.resample(scores, 200, np.random.default_rng(0))
    assert draws.shape == (200, 3, 5)
    runs = np.round((draws - np.arange(5) / 10) * 100).astype(int)  # which run each score came from
    assert np.array_equal(draws, scores[runs, np.arange(5)])  # a task's scores stay in its column
    assert (runs.min(axis=-1) != runs.max(axis=-1)).any()  # tasks draw their runs independently


def test_bootstrap_interval_holds_the_estimate_and_shrinks_with_more_runs():
    few = stats.aggregates({"a": A})["a"]
    many = stats.aggregates({"a": np.tile(A, (10, 1))})["a"]  # the same scores, 30 runs
    for metric in ("mean", "median", "IQM", "optimality gap"):
        e, m = few[metric], many[metric]
        assert e.low <= e.point <= e.high and m.low <= m.point <= m.high, metric
        assert (m.high - m.low) < 0.6 * (e.high - e.low), metric
    assert few["mean"].point == pytest.approx(0.5625) and few["IQM"].point == pytest.approx(7 / 12)


def test_bootstrap_is_reproducible_for_a_seed():
    first = stats.aggregates({"a": A, "b": B}, stats.Bootstrap(reps=300, seed=7))
    assert (
        stats.aggregates({"b": B, "a": A}, stats.Bootstrap(reps=300, seed=7)) == first
    )  # nor depends on the others
    assert stats.aggregates({"a": A}, stats.Bootstrap(reps=300, seed=8))["a"] != first["a"]
    one = stats.aggregates({"a": [A[0]]}, stats.Bootstrap(reps=50))["a"][
        "mean"
    ]  # a single run: nothing to resample
    assert one.low == one.point == one.high == pytest.approx(0.4375)


def test_improvement_intervals_mirror():
    imp = stats.improvements({"a": A, "b": B}, stats.Bootstrap(reps=1000))
    ab, ba = imp["a", "b"], imp["b", "a"]
    assert ab.point == pytest.approx(13 / 24) and ba.point == pytest.approx(11 / 24)
    assert ab.low <= ab.point <= ab.high
    assert (ba.low, ba.high) == pytest.approx((1 - ab.high, 1 - ab.low))


# -- minimum detectable difference ---------------------------------------------------------------------------
X = [[0.5, 0.5], [0.5, 1.0]]  # runs' Pass@1 .5 and .75


def test_minimum_detectable_difference_is_the_hand_computed_one():
    d = stats.minimum_detectable_difference({"x": X, "y": X}, episodes_per_task=4)
    # observed between-seed variance: ((.125)^2 * 2) / 1 = 1/32 in each algorithm, pooled 1/32
    # binomial: task means .5 and .75, (.25 + .1875) / (4 episodes * 2^2 tasks) = 0.02734375
    # seed share: 1/32 - 0.02734375 = 1/256; V = (1/256 + 0.02734375) / 2 seeds = 1/64
    # MDD = (1.959964 + 0.841621) * sqrt(2 / 64) = 2.801585 * 0.1767767 = 0.495255
    assert (d.seeds, d.episodes_per_task) == (2, 4)
    assert d.seed_var == pytest.approx(1 / 256) and d.eval_var == pytest.approx(0.02734375)
    assert d.difference == pytest.approx(0.495255, abs=1e-6)
    # 8 seeds, 16 episodes: V = (1/256 + 0.02734375 / 4) / 8, MDD = 2.801585 * sqrt(2 V) = 0.145184
    more = stats.minimum_detectable_difference({"x": X, "y": X}, 4, seeds=8, episodes=16)
    assert more.difference == pytest.approx(0.145184, abs=1e-6)


def test_minimum_detectable_difference_shrinks_with_seeds_and_episodes():
    ms = {"a": A, "b": B}
    at = lambda **kw: stats.minimum_detectable_difference(ms, 4, **kw).difference  # noqa: E731
    assert at() > at(seeds=5) > at(seeds=10) > at(seeds=40)
    assert at() > at(episodes=8) > at(episodes=32)
    assert stats.minimum_detectable_difference(ms, 4).seeds == 2  # the fewest runs any algorithm has


# -- bad input -----------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "scores, match",
    [
        (
            np.zeros((0, 4)),
            r"scores: expected a \[runs, tasks\] matrix with at least one run and one task, "
            r"got shape \(0, 4\)",
        ),
        ([], r"got shape \(0,\)"),
        ([0.5, 0.5], r"got shape \(2,\)"),
        ([[0.5, 1.5]], r"1\.5 at run 0, task 1: expected a success rate in \[0, 1\]"),
        ([[0.5], [-0.25]], r"-0\.25 at run 1, task 0: expected a success rate in \[0, 1\]"),
        ([[float("nan")]], r"nan at run 0, task 0: expected a success rate in \[0, 1\]"),
        ([[0.5], [0.5, 0.5]], r"expected a \[runs, tasks\] matrix of success rates"),
    ],
)
def test_bad_scores_are_a_clear_error(scores, match):
    with pytest.raises(ValueError, match=match):
        stats.mean(scores)


def test_bad_input_to_the_comparisons_is_a_clear_error():
    with pytest.raises(ValueError, match=r"scores of b: 3 tasks, expected 4 \(as scores of a\)"):
        stats.aggregates({"a": A, "b": [[0.5, 0.5, 0.5]]})
    with pytest.raises(ValueError, match=r"scores of Y: 2 tasks, expected 4 \(as scores of X\)"):
        stats.probability_of_improvement(A, [[0.5, 0.5]])
    with pytest.raises(ValueError, match="scores of b: 2.0 at run 0, task 0"):
        stats.improvements({"a": A, "b": [[2.0, 0, 0, 0]]})
    with pytest.raises(ValueError, match="at least one algorithm, got none"):
        stats.aggregates({})
    with pytest.raises(ValueError, match="x: no run with per-task results; expected at least one"):
        stats.score_matrices({"x": []})
    with pytest.raises(ValueError, match="expected at least one task common to all runs"):
        stats.score_matrices({"x": [{"a": 1.0}], "y": [{"b": 1.0}]})
    with pytest.raises(ValueError, match=r"tasks: 3 names, expected 4"):
        stats.per_task_means({"a": A}, ["t0", "t1", "t2"])
    with pytest.raises(ValueError, match="reps=0: expected a whole number of bootstrap resamples"):
        stats.Bootstrap(reps=0)
    with pytest.raises(ValueError, match="confidence=1.0: expected a coverage strictly between 0 and 1"):
        stats.Bootstrap(confidence=1.0)
    with pytest.raises(ValueError, match="every algorithm has 1 run: expected at least 2 runs"):
        stats.minimum_detectable_difference({"a": [A[0]], "b": [B[0]]}, 4)
    with pytest.raises(ValueError, match="episodes_per_task=0: expected a whole number, at least 1"):
        stats.minimum_detectable_difference({"a": A}, 0)
    with pytest.raises(ValueError, match="power=1.5: expected a probability strictly between 0 and 1"):
        stats.minimum_detectable_difference({"a": A}, 4, power=1.5)


# -- the report ----------------------------------------------------------------------------------------------
def _rows() -> list[dict]:
    """Two evaluations per seed; the last ones' per-task results are A (grsd) and B (grpo) on tasks t0..t3,
    and sb3-ppo's on t0, t1 only."""
    tasks = ["t0", "t1", "t2", "t3"]
    out = []
    for algo, table in (("grsd", A), ("grpo", B), ("sb3-ppo", [[1.0, 0.0], [0.5, 0.5]])):
        for seed, final in enumerate(table):
            for it, scores in enumerate(([0.25] * len(final), final)):
                per_task = dict(zip(tasks, scores, strict=False))
                out.append(
                    {
                        "algo": algo,
                        "seed": seed,
                        "iteration": it,
                        "env_steps": 100 * it,
                        "pass_at_1": float(np.mean(scores)),
                        "per_task": per_task,
                    }
                )
    return out


def test_report_tables_show_the_bootstrap_statistics(tmp_path):
    from experiments import report

    algos = ["grsd", "grpo", "sb3-ppo"]
    summ = report.summary(_rows(), algos, 0.25)
    st = report.statistics(summ, episodes_per_task=4)
    assert st.tasks == ["t0", "t1", "t2", "t3"] and list(st.matrices) == ["grsd", "grpo"]
    assert st.matrices["grsd"].tolist() == A and st.matrices["grpo"].tolist() == B
    md = report.table_md(summ, {"pass_at_1": 0.25, "per_task": {}}, st)
    agg = stats.aggregates({"grsd": A, "grpo": B})
    for algo in ("grsd", "grpo"):
        assert f"| {algo} | {agg[algo]['mean']} | {agg[algo]['IQM']} |" in md
    assert "| grsd | 0.562 [" in md and "| grsd | - | 0.542 [" in md  # mean 9/16; P(grsd > grpo) = 13/24
    assert "| grpo | 0.458 [" in md and "sb3-ppo: evaluated on 2 tasks, not the others' 4" in md
    mdd = stats.minimum_detectable_difference({"grsd": A, "grpo": B}, 4)
    assert f"of **{mdd.difference:.3f}**" in md and "with 5 seeds: " in md
    assert "Ten hardest tasks" in md
    report.plot_profiles(st.profiles, tmp_path / "profiles.png")
    report.plot_curves(report.curves(_rows(), algos), 0.25, tmp_path / "curves.png")
    assert (tmp_path / "profiles.png").read_bytes()[:4] == b"\x89PNG"
    assert (tmp_path / "curves.png").read_bytes()[:4] == b"\x89PNG"


def test_curve_bands_are_bootstrap_intervals_of_the_seeds_mean():
    from experiments.report import aligned

    x, mean, low, high = aligned({0: [(0, 0.2), (10, 0.4)], 1: [(0, 0.4), (12, 0.6)], 2: [(0, 0.3)]})
    assert x.tolist() == [0.0] and mean == pytest.approx([0.3])  # up to the shortest seed
    assert 0.2 - 1e-9 <= low[0] < 0.3 < high[0] <= 0.4 + 1e-9  # within the seeds' range


def test_report_splits_by_horizon_and_shows_what_each_algorithm_learned_from():
    from experiments import report

    tasks = ["SimpleCalendarEventsOnDate", "SimpleCalendarLocationOfEvent", "BrowserMaze",
             "ExpenseAddMultiple"]
    rows = []
    for algo, table in (("grsd", A), ("grpo", B)):
        for seed, final in enumerate(table):
            rows.append({"algo": algo, "seed": seed, "iteration": 0, "env_steps": 0, "pass_at_1": 0.25,
                         "per_task": dict.fromkeys(tasks, 0.25)})
            for it in (1, 2):  # training metrics of iterations 1 and 2; the last one evaluates
                r = {"algo": algo, "seed": seed, "iteration": it, "env_steps": 100 * it,
                     "train/mixed_groups_frac": 0.1 * it + 0.1 * seed}
                if algo == "grsd":
                    r.update({"grsd/forks": 10 * it,
                              "grsd/next_differs_rate": float("nan") if it == 1 else 1.0})
                else:
                    r["train/nonzero_adv_steps"] = 100 + seed
                if it == 2:
                    r.update(pass_at_1=float(np.mean(final)), per_task=dict(zip(tasks, final, strict=True)))
                rows.append(r)
    summ = report.summary(rows, ["grsd", "grpo"], 0.25)
    st = report.statistics(summ, episodes_per_task=4)
    start = {"pass_at_1": 0.25, "per_task": dict(zip(tasks, [0.5, 0.0, 0.25, 0.0], strict=True))}
    md = report.table_md(summ, start, st, report.diagnostics(rows, ["grsd", "grpo"]))
    # horizons: two short tasks (complexity 1.0), one medium (2.0), one long (6): each group's columns
    short = stats.aggregates({a: np.asarray(m)[:, :2] for a, m in (("grsd", A), ("grpo", B))})
    assert f"| short (complexity <= 1.2, <= 12 steps) | 2 | 0.250 | {short['grsd']['mean']} | " in md
    long_grsd = stats.aggregates({"grsd": np.asarray(A)[:, 3:]})["grsd"]["mean"]
    assert f"| long (>= 2.8, >= 28 steps) | 1 | 0.000 | {long_grsd} | " in md
    # diagnostics: mean over seeds and iterations (first -> last); NaNs left out; "-" where not logged
    assert "| groups with both outcomes | 25% (20% -> 30%) | 20% (15% -> 25%) |" in md  # 3 and 2 seeds
    assert "| forks found | 15 (10 -> 20) | - |" in md
    assert "| steps with a non-zero advantage | - | 100 (100 -> 100) |" in md  # seeds 100, 101: 100.5 rounds
    assert "| forks whose teacher action led to another screen | 100% (100% -> 100%) | - |" in md


def test_report_splits_by_androidworld_difficulty_after_the_horizons():
    """table.md's difficulty table groups the tasks by the catalogue's AndroidWorld difficulty, with the
    same columns and intervals as the horizon table; a task the catalogue does not know is left out, and
    said so."""
    from experiments import report
    from voyager_gym import catalogue

    # easy, easy, medium, hard (android_world/task_metadata.json); one seed's last evaluation per row
    tasks = ["BrowserMaze", "SimpleCalendarLocationOfEvent", "ExpenseAddMultiple", "BrowserMultiply"]
    assert [catalogue.task(t).difficulty for t in tasks] == ["easy", "easy", "medium", "hard"]
    rows = [{"algo": algo, "seed": seed, "iteration": 1, "env_steps": 100, "pass_at_1": float(np.mean(final)),
             "per_task": dict(zip(tasks, final, strict=True))}
            for algo, table in (("grsd", A), ("grpo", B)) for seed, final in enumerate(table)]
    summ = report.summary(rows, ["grsd", "grpo"], 0.25)
    st = report.statistics(summ, episodes_per_task=4)
    start = {"pass_at_1": 0.25, "per_task": dict(zip(tasks, [0.5, 0.0, 0.25, 1.0], strict=True))}
    lines = report.difficulty_md(st, start)
    assert lines[1].startswith(
        "Final Pass@1 by AndroidWorld difficulty (its task_metadata.json: easy, medium, hard)")
    assert lines[3] == "| difficulty | tasks | RFT checkpoint | grsd | grpo |"
    for name, lo, hi, s0 in (("easy", 0, 2, "0.250"), ("medium", 2, 3, "0.250"), ("hard", 3, 4, "1.000")):
        agg = stats.aggregates({a: np.asarray(m)[:, lo:hi] for a, m in (("grsd", A), ("grpo", B))})
        assert f"| {name} | {hi - lo} | {s0} | {agg['grsd']['mean']} | {agg['grpo']['mean']} |" in lines
    md = report.table_md(summ, start, st)
    assert md.index("Final Pass@1 by horizon") < md.index("Final Pass@1 by AndroidWorld difficulty")
    assert "Final Pass@1 by AndroidWorld difficulty" in report._md_to_html(md)
    # a task the catalogue does not know falls in no group
    st.tasks = ["NotATask" if t == "BrowserMaze" else t for t in st.tasks]
    lines = report.difficulty_md(st, start)
    assert lines[-1] == "\n1 tasks of unknown difficulty left out of this split"
    assert any(line.startswith("| easy | 1 | 0.000 | ") for line in lines)
