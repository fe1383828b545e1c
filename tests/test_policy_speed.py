"""benchmarks/policy_speed.py runs end to end on a small sample and prints its figures with the machine's."""

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_policy_speed_prints_rates_ratios_and_the_machine_speed():
    args = ["--tasks", "OpenAppTaskEval,SystemWifiTurnOn", "--seeds", "1", "--reps", "1", "--epochs", "1",
            "--loop-samples", "4", "--batch", "8", "--threads", "1", "--layers", "1"]
    out = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "policy_speed.py"), *args],
                         capture_output=True, text=True, cwd=ROOT, timeout=300, check=True).stdout
    fig = json.loads(out.strip().splitlines()[-1])
    for key in ("act_per_s", "act_ref_per_s", "sft_per_s", "sft_ref_per_s", "machine_gflops",
                "machine_py_miters"):
        assert fig[key] > 0, (key, fig)
    assert "machine now: linear" in out and "target >= 2,000" in out
    assert fig["layers"] == 1 and "encoder layers 1," in out  # the network it timed (policy.layers)


def test_policy_speed_times_processes_at_once_beside_the_one_process_figure():
    args = ["--tasks", "OpenAppTaskEval", "--seeds", "1", "--reps", "2", "--epochs", "1",
            "--loop-samples", "2", "--batch", "8", "--threads", "2", "--layers", "1", "--procs", "2"]
    out = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "policy_speed.py"), *args],
                         capture_output=True, text=True, cwd=ROOT, timeout=300, check=True).stdout
    fig = json.loads(out.strip().splitlines()[-1])
    assert fig["procs"] == 2 and fig["procs_act_per_s"] > 0 and fig["procs_sft_per_s"] > 0, fig
    assert "2 processes x 1 torch thread(s) at once" in out
    bad = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "policy_speed.py"), "--procs", "0"],
                         capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert bad.returncode == 2 and "--procs must be >= 1, got 0" in bad.stderr
