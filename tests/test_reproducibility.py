"""A run's numbers depend on its config and seed, not on the machine's kernels (issue 12): the entry points
pin CPU numerics (one kernel ISA, fixed threads, deterministic algorithms) before torch computes anything."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PROBE = """
import hashlib, json, sys
import torch
if sys.argv[1] == "pin":
    from algos.run import pin_cpu_numerics
    pin_cpu_numerics(1)
torch.manual_seed(0)
x = torch.randn(64, 300)
nn = torch.nn
m = nn.Sequential(nn.Linear(300, 256), nn.LayerNorm(256), nn.GELU(), nn.Linear(256, 77))
with torch.no_grad():
    z = torch.log_softmax(m(x), -1)
print(json.dumps({"capability": torch.backends.cpu.get_cpu_capability(), "threads": torch.get_num_threads(),
                  "deterministic": torch.are_deterministic_algorithms_enabled(),
                  "warn_only": torch.is_deterministic_algorithms_warn_only_enabled(),
                  "inductor": "torch._inductor" in sys.modules,
                  "bits": hashlib.sha256(z.numpy().tobytes()).hexdigest()}))
"""


def _probe(mode: str, **env: str) -> dict:
    base = {k: v for k, v in os.environ.items()
            if k not in ("ATEN_CPU_CAPABILITY", "MKL_CBWR", "ONEDNN_MAX_CPU_ISA", "OMP_NUM_THREADS")}
    out = subprocess.run([sys.executable, "-c", PROBE, mode], cwd=ROOT, env={**base, **env},
                         capture_output=True, text=True, timeout=120, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_pinned_numerics_give_the_bits_of_an_avx2_machine_whatever_this_one_has():
    pinned = _probe("pin")
    assert pinned["capability"] == "AVX2" and pinned["threads"] == 1 and pinned["deterministic"]
    assert pinned["warn_only"]  # an op without a deterministic kernel warns rather than stopping a run
    assert not pinned["inductor"], "pinning imported torch._inductor (~1.7 s a process, and nothing compiles)"
    avx2_machine = _probe("plain", ATEN_CPU_CAPABILITY="avx2", MKL_CBWR="AVX2", ONEDNN_MAX_CPU_ISA="AVX2",
                          OMP_NUM_THREADS="1")
    assert pinned["bits"] == avx2_machine["bits"]


class _Stop(Exception):
    pass


def _stop(*_a, **_k):
    raise _Stop


@pytest.mark.parametrize("entry", ["train", "pretrain", "evaluate"])
def test_entry_points_pin_before_building_anything(entry, tmp_path, monkeypatch):
    """train.py, pretrain.py and evaluate.py call pin_cpu_numerics with torch_threads before they build
    anything. pretrain.py caches the base that train.py and compare.py reuse under the same recipe key, so it
    must train on the same kernels (it did not: the same key held 0.385 from pretrain.py and 0.422 from
    compare.py); evaluate.py replays greedy actions, so it pins too."""
    import importlib

    mod = importlib.import_module(f"experiments.{entry}")
    seen = []
    monkeypatch.setattr("algos.run.pin_cpu_numerics", lambda threads: seen.append(threads))
    monkeypatch.setattr("algos.run.Run.__init__", _stop)  # train.py: its run folder comes first
    monkeypatch.setattr("experiments.common.make_envs", _stop)
    args = {"train": ["preset=smoke", f"out_dir={tmp_path / 'r'}", "wandb=disabled"],
            "pretrain": ["tasks=OpenAppTaskEval"],
            "evaluate": ["tasks=OpenAppTaskEval", "policy=expert"]}[entry]
    with pytest.raises(_Stop):
        mod.main([*args, "torch_threads=2"])
    assert seen == [2]
