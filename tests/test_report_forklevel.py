"""table.md's fork-level table, on hand-made metrics rows whose rates are known."""

from __future__ import annotations

from experiments.report import forklevel_md


def _row(seed: int, arms: dict[str, list[list[int | None]]], transfer: dict[str, dict[str, float]]) -> dict:
    n = len(arms["before"])
    return {"algo": "grsd", "seed": seed, "iteration": 1, "forklevel/greedy_failed": 0.5,
            "forklevel/teacher_is_expert": 0.25, "forklevel/recur_rate": 0.1,
            "forklevel/records": {"task": ["A"] * n, "teacher_is_expert": [1] * n, "arms": arms,
                                  "transfer": transfer}}


def test_forklevel_table_rates_and_paired_differences():
    # 4 states: 3 mismatched before; GRSD fixes 2 of them (breaks none), the control none, the oracle 3
    before = [[0, 0, 0], [0, 0, 0], [0, 0, 1], [1, 1, 1]]
    grsd = [[1, 0, 1], [1, 1, 1], [0, 0, 1], [1, 1, None]]
    control = [[0, 0, 0], [0, 0, 0], [0, 0, 1], [0, 0, 1]]
    oracle = [[1, 1, 1], [1, 1, 1], [1, 1, 1], [1, 1, 1]]
    transfer = {"before": {"A": 0.5}, "grsd": {"A": 1.0}, "control": {"A": 0.5}, "oracle": {"A": 1.0}}
    rows = [_row(0, {"before": before, "grsd": grsd, "control": control, "oracle": oracle}, transfer),
            {"algo": "grpo", "seed": 0, "iteration": 1, "pass_at_1": 0.5}]
    md = "\n".join(forklevel_md(rows))
    assert "4 fork states over 1 measured iterations of 1 seeds; 3 with a greedy action other" in md
    assert "the greedy one at 50% of the states; the teacher's action was the expert's at 25%" in md
    assert "| before | 0.250 | - | - | 0.250 | 0.500 | 0.500 |" in md
    assert "| grsd | 0.750 | 0.667 | 0.000 | 0.500 | 1.000 | 1.000 |" in md  # success over 3 known states
    assert "| control | 0.000 | 0.000 | 1.000 | 0.000 | 0.500 | 0.500 |" in md
    assert "| oracle | 1.000 | 1.000 | 0.000 | 1.000 | 1.000 | 1.000 |" in md
    assert "| control | +0.667 [" in md and "| oracle | -0.333 [" in md
    assert "grpo" not in md.split("GRSD minus")[0].split("| arm |")[1]  # an arm no record has is left out


def test_no_forklevel_records_no_table():
    assert forklevel_md([{"algo": "grsd", "seed": 0, "iteration": 1, "pass_at_1": 0.5}]) == []


def test_heldout_table_reads_each_seeds_first_and_last_evaluation():
    from experiments.report import heldout_md

    rows = [{"algo": "grpo", "seed": s, "iteration": i, "heldout_pass_at_1": v}
            for s, vals in ((0, (0.2, 0.4)), (1, (0.3, 0.5))) for i, v in enumerate(vals)]
    md = "\n".join(heldout_md(rows, ["grpo", "ppo"]))
    assert "| grpo | 0.250 | 0.450 | 0.400, 0.500 |" in md and "| ppo |" not in md
    assert heldout_md([{"algo": "grpo", "seed": 0, "iteration": 0, "pass_at_1": 0.5}], ["grpo"]) == []


def test_heldout_table_gives_intervals_and_improvement_from_the_per_task_results():
    """With each seed's `heldout_per_task`, the held-out table gives the mean's stratified bootstrap interval
    over the held-out tasks and P(row > column); an algorithm that always scores higher has P 1."""
    import numpy as np

    from experiments import stats
    from experiments.report import heldout_md

    tasks = ["A", "B", "C"]
    hi = {t: 1.0 for t in tasks}
    lo = {"A": 0.0, "B": 0.5, "C": 0.0}
    rows = [{"algo": a, "seed": s, "iteration": 1, "heldout_pass_at_1": float(np.mean(list(t.values()))),
             "heldout_per_task": t} for a, t in (("grsd", hi), ("grpo", lo)) for s in range(2)]
    md = "\n".join(heldout_md(rows, ["grsd", "grpo"]))
    mats, _ = stats.score_matrices({"grsd": [hi, hi], "grpo": [lo, lo]})
    mean = stats.aggregates(mats)["grpo"]["mean"]
    assert f"| grpo | 0.167 | {mean} | 0.167, 0.167 |" in md and str(mean).startswith("0.167 [")
    assert "| grsd | - | 1.000 [1.000, 1.000] |" in md and "| grpo | 0.000 [0.000, 0.000] | - |" in md
    assert "interval over the 3 held-out tasks" in md
