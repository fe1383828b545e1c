"""Run folders: metrics rows, atomic checkpoints, resume pointers."""

import json
import os
import sys
from pathlib import Path

import pytest

from algos.run import Run
from tests.algos.conftest import kill_after_checkpoint
from voyager_gym.env import app_names


class _Saveable:
    def __init__(self, payload):
        self.payload = payload

    def save(self, path):
        path.mkdir(parents=True, exist_ok=True)
        (path / "w.json").write_text(json.dumps(self.payload))


def test_metrics_and_checkpoints(tmp_path):
    run = Run(tmp_path / "r", {"a": 1}, wandb_mode="disabled")
    assert run.latest() is None
    for it in range(4):
        run.log({"iteration": it, "env_steps": 10 * it, "pass_at_1": it / 10})
        run.checkpoint(it, _Saveable({"it": it}), {"env_steps": 10 * it}, {"extra": _Saveable("x")})
    path, state = run.latest()
    assert state == {"iteration": 3, "env_steps": 30} and path.name == "it_3"
    assert json.loads((path / "policy" / "w.json").read_text()) == {"it": 3}
    assert sorted(p.name for p in (tmp_path / "r" / "checkpoints").iterdir()) == ["it_2", "it_3"]
    assert [r["iteration"] for r in run.metrics()] == [0, 1, 2, 3]
    run.truncate_metrics(lambda r: r["iteration"] <= 1)
    assert [r["iteration"] for r in run.metrics()] == [0, 1]
    assert json.loads((tmp_path / "r" / "config.json").read_text()) == {"a": 1}


def test_a_checkpoint_that_fails_midway_leaves_the_previous_one(tmp_path):
    run = Run(tmp_path / "r", {}, wandb_mode="disabled")
    run.checkpoint(0, _Saveable(0), {"env_steps": 0})

    class Broken:
        def save(self, path):
            path.mkdir(parents=True)
            (path / "half").write_text("...")
            raise OSError("disk full")

    try:
        run.checkpoint(1, Broken(), {"env_steps": 5})
    except OSError:
        pass
    path, state = run.latest()
    assert state["iteration"] == 0 and path.name == "it_0"


def test_cut_metrics_line_is_ignored(tmp_path):
    run = Run(tmp_path / "r", {}, wandb_mode="disabled")
    run.log({"iteration": 0})
    with open(run.metrics_path, "a") as f:
        f.write('{"iteration": 1, "pass_')  # a kill in the middle of a write
    assert [r["iteration"] for r in run.metrics()] == [0]


# -- the training loop end to end: worker counts and a killed run --------------------------------------------
LOOP_TASKS = ["SystemWifiTurnOn", "OpenAppTaskEval", "SystemCopyToClipboard"]


def _base_policy(path):
    """A small policy cloned from a few expert episodes (so that RFT has successes to train on), saved."""
    from algos.policies.simple import ExpertPolicy
    from algos.policies.small import SmallPolicy
    from algos.rft import success_samples
    from algos.rollout import RolloutConfig, collect
    from voyager_gym.suites import TrainGenerator
    from voyager_gym.vector import make_vec

    envs = make_vec(3, "sync", observation_mode="elements")
    groups = collect(ExpertPolicy(), envs, TrainGenerator(LOOP_TASKS, seed=9).take(12),
                     RolloutConfig(group_size=1, greedy=True, thumb_width=0))
    envs.close()
    pol = SmallPolicy(app_names(), seed=0)
    pol.fit_sft(success_samples(groups), epochs=12, seed=0)
    pol.save(path)


def run_loop(out: str, base: str, workers: int, iterations: int = 3) -> None:
    """RFT through `train_loop` on a pipelined env with `workers` worker processes (run in a subprocess by
    the kill test; resumes from `out` when it holds a checkpoint)."""
    import torch

    from algos.loop import train_loop
    from algos.policies.small import SmallPolicy
    from algos.rft import RFT, RFTConfig
    from voyager_gym.vector import make_vec

    torch.set_num_threads(1)
    envs = make_vec(4, "pipelined", lanes=2, workers=workers, observation_mode="elements")
    run = Run(out, {"workers": workers}, wandb_mode="disabled")
    algo = RFT(RFTConfig(iterations=iterations, instances_per_iter=6, group_size=4, epochs=2, demos=False))
    try:
        train_loop(algo, SmallPolicy.load(base), envs, run, LOOP_TASKS, seed=3, eval_n_per_task=2)
    finally:
        envs.close()
        run.close()


def _loop_rows(out):
    rows = [json.loads(line) for line in (Path(out) / "metrics.jsonl").read_text().splitlines()]
    return [{k: v for k, v in r.items() if k != "wall_s"} for r in rows]


@pytest.mark.slow
def test_loop_metrics_do_not_depend_on_workers_and_a_killed_run_resumes_exactly(tmp_path):
    """One reference run with one rollout worker; a run with two workers, killed (SIGKILL) after its first
    checkpoint and resumed with one: every metrics row (losses, Pass@1, per-task scores, env steps) equal."""
    root = Path(__file__).resolve().parents[2]
    base = tmp_path / "base"
    _base_policy(base)
    run_loop(str(tmp_path / "ref"), str(base), workers=1)
    ref = _loop_rows(tmp_path / "ref")
    assert [r["iteration"] for r in ref] == [0, 1, 2, 3]
    assert all(r["train/sft_samples"] > 0 for r in ref[1:])  # the updates did train the policy

    out = tmp_path / "killed"
    code = f"from tests.algos.test_run import run_loop; run_loop({str(out)!r}, {str(base)!r}, workers=2)"
    env = {**os.environ, "PYTHONPATH": str(root)}
    done = kill_after_checkpoint([sys.executable, "-c", code], out, root, env)
    assert 1 <= done < 3, f"expected a kill after the checkpoint of iteration 1 or 2, got {done}"
    run_loop(str(out), str(base), workers=1)
    assert _loop_rows(out) == ref
