"""benchmarks/policy_speed.py runs end to end on a small sample and prints its figures with the machine's."""

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = str(ROOT / "benchmarks" / "policy_speed.py")


def test_policy_speed_prints_rates_ratios_the_machine_speed_and_processes_at_once():
    args = ["--tasks", "OpenAppTaskEval,SystemWifiTurnOn", "--seeds", "1", "--reps", "2", "--epochs", "1",
            "--loop-samples", "4", "--batch", "8", "--threads", "2", "--layers", "1", "--procs", "2",
            "--d-model", "64"]
    out = subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True, cwd=ROOT,
                         timeout=300, check=True).stdout
    fig = json.loads(out.strip().splitlines()[-1])
    for key in ("act_per_s", "act_ref_per_s", "sft_per_s", "sft_ref_per_s", "machine_gflops",
                "machine_py_miters", "machine_numpy_gflops", "procs_act_per_s", "procs_sft_per_s"):
        assert fig[key] > 0, (key, fig)
    assert "machine now: linear" in out and "target >= 2,000" in out
    assert fig["layers"] == 1 and "encoder layers 1," in out  # the network it timed (policy.layers)
    assert fig["d_model"] == 64 and "width 64," in out
    assert fig["procs"] == 2 and "2 processes x 1 torch thread(s) at once" in out


def test_policy_speed_refuses_a_process_count_below_one():
    bad = subprocess.run([sys.executable, SCRIPT, "--procs", "0"], capture_output=True, text=True, cwd=ROOT,
                         timeout=120)
    assert bad.returncode == 2 and "--procs must be >= 1, got 0" in bad.stderr


def test_a_worker_that_dies_ends_the_parallel_run_with_its_exit_code(capfd):
    import argparse

    import pytest

    sys.path.insert(0, str(ROOT / "benchmarks"))  # (spawned workers import the script by this path too)
    try:
        import policy_speed

        args = argparse.Namespace(tasks="NoSuchTask", seeds=1, procs=2, threads=2, reps=1, batch=8, epochs=1,
                                  memory=0, memory_mode="encoder", layers=1)
        with pytest.raises(RuntimeError, match="a --procs worker exited with code 1"):
            policy_speed.parallel_rates(args)  # (it waited on the result queue for an hour before)
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    assert "NoSuchTask" in capfd.readouterr().err  # the workers died of the bad task, not of an import
