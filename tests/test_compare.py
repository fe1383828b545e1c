"""experiments/compare.py end to end on the smoke preset: every output, honest statistics, resume without
rerunning finished pairs, and the learning-curves notebook on the folder it writes."""

import json
import os
from pathlib import Path

import pytest

from experiments.compare import main as compare

pytestmark = pytest.mark.slow  # end-to-end comparison runs

ALGOS = ["grsd", "grpo", "ppo"]


@pytest.fixture(scope="module")
def smoke(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("cmp")
    out = root / "cmp"
    compare(["algo=grsd,grpo,ppo", "preset=smoke", f"out_dir={out}", f"cache_dir={root / 'cache'}",
             "wandb=offline"])
    return out


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_smoke_comparison_writes_every_output(smoke):
    rows = _rows(smoke / "metrics.jsonl")
    assert {(r["algo"], r["seed"]) for r in rows} == {(a, s) for a in ALGOS for s in (0, 1)}
    for a in ALGOS:
        for s in (0, 1):
            mine = [r for r in rows if r["algo"] == a and r["seed"] == s]
            assert mine[0]["iteration"] == 0 and mine[0]["env_steps"] == 0
            assert mine[-1]["env_steps"] >= 240  # the smoke budget, reached by every pair
            assert all(0.0 <= r["pass_at_1"] <= 1.0 for r in mine if "pass_at_1" in r)
            assert all("wall_s" in r for r in mine)
    start = json.loads((smoke / "start.json").read_text())
    for a in ALGOS:  # every pair starts from the same RFT checkpoint and evaluates the same instances
        firsts = [r for r in rows if r["algo"] == a and r["iteration"] == 0]
        assert {tuple(sorted(r["per_task"])) for r in firsts} == {tuple(sorted(start["per_task"]))}
    table = (smoke / "table.md").read_text()
    assert all(f"| {a} |" in table for a in ALGOS) and "Ten hardest tasks" in table
    assert (smoke / "curves.png").read_bytes()[:4] == b"\x89PNG"
    html = (smoke / "report.html").read_text()
    assert "data:image/png;base64," in html and "<table>" in html
    assert any((smoke / "runs" / "grpo-s0" / "wandb").glob("offline-run-*"))  # one wandb run per pair


def test_table_numbers_are_the_measured_ones(smoke):
    from experiments.report import interval

    rows = _rows(smoke / "metrics.jsonl")
    table = (smoke / "table.md").read_text()
    for a in ALGOS:
        finals = []
        for s in (0, 1):
            evals = [r for r in rows if r["algo"] == a and r["seed"] == s and "pass_at_1" in r]
            finals.append(evals[-1]["pass_at_1"])
        mean, half = interval(finals)
        assert f"| {a} | {mean:.3f} ± {half:.3f} |" in table


def test_resume_skips_finished_pairs(smoke, tmp_path):
    import shutil

    out = tmp_path / "copy"
    shutil.copytree(smoke, out)
    finished = out / "runs" / "grpo-s0" / "metrics.jsonl"
    before = finished.read_text()
    touched = (out / "runs" / "grpo-s0" / "config.json").stat().st_mtime_ns  # rewritten by any rerun
    shutil.rmtree(out / "runs" / "ppo-s1")  # as if the comparison was killed before this pair
    cache = next(p for p in smoke.parent.iterdir() if p.name == "cache")
    compare(["algo=grsd,grpo,ppo", "preset=smoke", f"out_dir={out}", f"cache_dir={cache}",
             "wandb=disabled"])
    assert finished.read_text() == before  # not rerun
    assert (out / "runs" / "grpo-s0" / "config.json").stat().st_mtime_ns == touched
    again = _rows(out / "runs" / "ppo-s1" / "metrics.jsonl")
    old = [r for r in _rows(smoke / "metrics.jsonl") if r["algo"] == "ppo" and r["seed"] == 1]
    evals = lambda rows: [r["pass_at_1"] for r in rows if "pass_at_1" in r]  # noqa: E731
    assert evals(again) == evals(old)  # the rerun pair repeats exactly what it measured before


def test_interval_is_the_95_percent_t_interval():
    from experiments.report import interval

    mean, half = interval([0.4, 0.5])
    # t(0.975, 1 dof) = 12.7062 times s / sqrt(n) = 0.05
    assert mean == pytest.approx(0.45) and half == pytest.approx(12.7062 * 0.05, rel=1e-4)
    assert interval([0.3]) == (0.3, 0.0)


def test_bad_algorithm_name_is_a_clear_error(tmp_path):
    with pytest.raises(SystemExit, match="grsd, grpo, ppo"):
        compare(["algo=grsd,dqn", f"out_dir={tmp_path}"])


def test_learning_curves_notebook_runs_on_the_smoke_folder(smoke, monkeypatch):
    from tests.test_notebooks import execute, outputs_text

    path = Path(__file__).resolve().parents[1] / "notebooks" / "learning_curves.ipynb"
    nb = execute(path, {"VOYAGER_COMPARE_DIR": str(smoke)}, monkeypatch)
    text = outputs_text(nb)
    assert "metrics rows" in text and "| grsd |" in text and "SystemWifiTurnOn" in text
    assert os.path.exists(smoke / "curves-notebook.png")
