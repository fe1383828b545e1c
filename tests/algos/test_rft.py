"""RFT end to end through experiments/train.py: metrics, checkpoints, resuming after a kill, the HF policy."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.algos.conftest import kill_after_checkpoint

ROOT = Path(__file__).resolve().parents[2]
SMALL = [
    "algo=rft",
    "tasks=SystemWifiTurnOn,OpenAppTaskEval,SystemCopyToClipboard",
    "rft.instances_per_iter=6",
    "rft.group_size=4",
    "rft.epochs=2",
    "eval_n_per_task=2",
    "env.num_envs=4",
    "base.demos_per_task=2",
    "base.epochs=6",
    "wandb=disabled",
    "progress=false",
]


def _train(out: Path, extra: list[str], cache: Path) -> None:
    from experiments.train import main

    main([*SMALL, f"out_dir={out}", f"cache_dir={cache}", *extra])


def _rows(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]


def test_rft_writes_metrics_and_checkpoints(tmp_path):
    _train(tmp_path / "run", ["rft.iterations=2"], tmp_path / "cache")
    rows = _rows(tmp_path / "run")
    assert [r["iteration"] for r in rows] == [0, 1, 2]
    assert all(0.0 <= r["pass_at_1"] <= 1.0 for r in rows)
    assert rows[0]["env_steps"] == 0 and rows[2]["env_steps"] > rows[1]["env_steps"] > 0
    assert rows[1]["train/sft_samples"] > 0 and "losses/sft" in rows[1]
    ptr = json.loads((tmp_path / "run" / "checkpoint.json").read_text())
    assert ptr["iteration"] == 2 and (tmp_path / "run" / "checkpoints" / "it_2" / "policy").exists()
    assert (tmp_path / "cache").exists()  # the base policy is cached for the next run


def test_rft_with_demos_fine_tunes_on_the_base_demonstrations_too(tmp_path):
    """rft.demos: every iteration's SFT set is RFT's successes plus the base's demonstrations (the same expert
    episodes the base was cloned from: 2 a task here), so it is never empty, even before any success."""
    _train(tmp_path / "run", ["rft.iterations=2", "rft.demos=true"], tmp_path / "cache")
    rows = _rows(tmp_path / "run")
    demo = rows[1]["train/demo_samples"]
    assert demo >= 2 * 3 * 2  # 2 episodes x 3 tasks, 2+ steps each
    assert rows[2]["train/demo_samples"] == demo
    sft = [r["train/sft_samples"] for r in rows[1:]]
    assert sft[0] >= demo and sft[1] >= sft[0]
    plain = tmp_path / "plain"
    _train(plain, ["rft.iterations=1", "rft.demos=false"], tmp_path / "cache")
    assert _rows(plain)[1]["train/demo_samples"] == 0


def test_rft_demos_without_demonstrations_is_an_error_naming_the_setting():
    from algos.loop import RunContext
    from algos.policies.small import SmallPolicy
    from algos.rft import RFT, RFTConfig
    from voyager_gym.env import app_names

    algo = RFT(RFTConfig())  # demos=true: the experiments' RFT, the default
    with pytest.raises(ValueError, match="rft.demos=true: no demonstrations"):
        algo.update(SmallPolicy(app_names(), seed=0), [], 0, seed=0)
    algo.setup(RunContext(demo_samples=[]))  # handed over, but the base was cloned from none (real
    # emulators): nothing to add
    assert algo.update(SmallPolicy(app_names(), seed=0), [], 0, seed=0)["train/sft_samples"] == 0


def test_existing_run_is_not_overwritten_without_resume(tmp_path):
    _train(tmp_path / "run", ["rft.iterations=1"], tmp_path / "cache")
    with pytest.raises(SystemExit, match="resume=true"):
        _train(tmp_path / "run", ["rft.iterations=1", "resume=false"], tmp_path / "cache")


@pytest.mark.slow
def test_killed_training_resumes_from_last_checkpoint(tmp_path):
    cache = tmp_path / "cache"
    args = [*SMALL, "rft.iterations=3", f"cache_dir={cache}"]
    ref = tmp_path / "ref"
    _train(ref, ["rft.iterations=3"], cache)  # uninterrupted reference (also warms the base cache)

    out = tmp_path / "killed"
    cmd = [sys.executable, str(ROOT / "experiments" / "train.py"), *args, f"out_dir={out}"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = kill_after_checkpoint(cmd, out, ROOT, env)
    assert done < 3, "the run finished before it could be killed"
    subprocess.run(cmd, cwd=ROOT, env=env, check=True, capture_output=True)
    rows = _rows(out)
    assert [r["iteration"] for r in rows] == [0, 1, 2, 3]
    ref_rows = _rows(ref)
    assert [r["pass_at_1"] for r in rows] == [r["pass_at_1"] for r in ref_rows]
    assert [r["env_steps"] for r in rows] == [r["env_steps"] for r in ref_rows]


@pytest.mark.slow
def test_hf_policy_runs_an_rft_round_with_a_tiny_vlm(tmp_path):
    _train(
        tmp_path / "hf",
        [
            "policy=hf",
            "policy.hf_model=tiny-vlm",
            "env.screen_scale=0.05",
            "tasks=SystemWifiTurnOn",
            "rft.iterations=1",
            "rft.instances_per_iter=2",
            "eval_n_per_task=1",
            "env.num_envs=2",
        ],
        tmp_path / "cache",
    )
    rows = _rows(tmp_path / "hf")
    assert [r["iteration"] for r in rows] == [0, 1]
    assert (tmp_path / "hf" / "checkpoints" / "it_1" / "policy").exists()


def test_pretrain_trains_once_and_is_deterministic(tmp_path, capsys):
    from experiments.pretrain import main

    args = [a for a in SMALL if not a.startswith(("algo=", "rft.", "wandb="))]  # pretrain writes no run
    args.append(f"cache_dir={tmp_path / 'c'}")
    first = main(args)
    cached = [p for p in (tmp_path / "c").iterdir() if p.is_dir()]  # beside it: made_by and a build lock
    assert len(cached) == 1 and (cached[0] / "done").exists()
    again = main(args)  # loaded from the cache: same weights, same evaluation
    fresh = main([*args[:-1], f"cache_dir={tmp_path / 'd'}"])  # retrained from scratch with the same seed
    assert first["pass_at_1"] == again["pass_at_1"] == fresh["pass_at_1"]
    assert first["per_task"] == fresh["per_task"] and 0.0 <= first["pass_at_1"] <= 1.0
    weights = [next(p for p in d.iterdir() if p.is_dir()) / "policy" / "model.safetensors"
               for d in (tmp_path / "c", tmp_path / "d")]
    assert weights[0].read_bytes() == weights[1].read_bytes()
    assert "Pass@1" in capsys.readouterr().out
