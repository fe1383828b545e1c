"""sb3-contrib MaskablePPO through FixedObsWrapper: eval rows, masked rollouts, checkpoints, exact resume."""

import json
import math
from pathlib import Path

import pytest
from stable_baselines3.common.callbacks import BaseCallback

from algos import sb3_ppo
from algos.sb3_ppo import SB3PPOConfig, train

pytestmark = pytest.mark.slow  # SB3 training runs

TASKS = ["OpenAppTaskEval", "SystemWifiTurnOn"]
# Two rollouts of 2 envs x 32 steps per chunk; tiny networks keep each chunk well under a second.
CFG = SB3PPOConfig(n_envs=2, n_steps=32, batch_size=32, n_epochs=2, net_arch=(32,), eval_every=128)


def test_short_learn_logs_eval_rows_and_checkpoints(tmp_path):
    seen = []
    rows = train(256, seed=0, tasks=TASKS, eval_n_per_task=2, log=seen.append, out_dir=tmp_path, cfg=CFG)
    assert rows == seen
    assert [r["iteration"] for r in rows] == [0, 1, 2]
    assert [r["env_steps"] for r in rows] == [0, 128, 256]
    for r in rows:
        assert r["algo"] == "sb3-ppo" and r["seed"] == 0
        assert 0.0 <= r["pass_at_1"] <= 1.0 and set(r["per_task"]) == set(TASKS)
        assert r["eval_episodes"] == 4 and r["wall_s"] > 0
    for key in ("losses/policy", "losses/value", "losses/entropy", "losses/approx_kl"):
        assert math.isfinite(rows[-1][key])
    assert rows[-1]["losses/entropy"] < 0  # SB3 logs minus the entropy of a non-degenerate policy
    logged = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [r["iteration"] for r in logged] == [0, 1, 2]
    saved = sorted(p.name for p in (tmp_path / "checkpoints" / "it_2" / "policy").iterdir())
    assert saved == ["model.json", "optimizer.json", "optimizer.safetensors", "policy.safetensors"]
    assert json.loads((tmp_path / "checkpoint.json").read_text())["iteration"] == 2


def test_training_rollouts_never_take_an_invalid_action(tmp_path, monkeypatch):
    """Spy on every training step's info: with masking, the inner env never sees an invalid action."""
    infos = []

    class Spy(BaseCallback):
        def _on_step(self) -> bool:
            infos.extend(self.locals["infos"])
            return True

    learn = sb3_ppo.MaskablePPO.learn
    monkeypatch.setattr(
        sb3_ppo.MaskablePPO, "learn", lambda self, *a, **kw: learn(self, *a, callback=Spy(), **kw)
    )
    train(128, seed=1, tasks=TASKS, eval_n_per_task=1, out_dir=tmp_path, cfg=CFG)
    assert len(infos) == 128
    assert all(i["invalid_action"] is None for i in infos)
    assert {i["task"] for i in infos} <= set(TASKS)


def test_resume_continues_the_step_count_and_matches_an_unbroken_run(tmp_path):
    """Also the determinism test: two runs with one seed (one of them killed and resumed) log equal rows."""
    unbroken = train(384, seed=2, tasks=TASKS, eval_n_per_task=1, out_dir=tmp_path / "a", cfg=CFG)
    first = train(128, seed=2, tasks=TASKS, eval_n_per_task=1, out_dir=tmp_path / "b", cfg=CFG)
    assert [r["env_steps"] for r in first] == [0, 128]
    resumed = train(384, seed=2, tasks=TASKS, eval_n_per_task=1, out_dir=tmp_path / "b", cfg=CFG)
    assert [(r["iteration"], r["env_steps"]) for r in resumed] == [(2, 256), (3, 384)]
    keys = (
        "pass_at_1",
        "per_task",
        "losses/policy",
        "losses/value",
        "losses/entropy",
        "eval_env_steps",
        "charts/train_episode_length",
    )
    for a, b in zip(unbroken[2:], resumed, strict=True):
        assert {k: a[k] for k in keys} == {k: b[k] for k in keys}
    logged = [json.loads(line) for line in (tmp_path / "b" / "metrics.jsonl").read_text().splitlines()]
    assert [r["iteration"] for r in logged] == [0, 1, 2, 3]
    assert train(384, seed=2, tasks=TASKS, eval_n_per_task=1, out_dir=tmp_path / "b", cfg=CFG) == []


def test_bad_arguments_name_the_value(tmp_path):
    with pytest.raises(ValueError, match="^sb3_ppo.vec_env='ray': expected one of dummy, subproc$"):
        train(64, tasks=TASKS, out_dir=tmp_path / "a", cfg=SB3PPOConfig(vec_env="ray"))
    for bad, expected in ((dict(lr=float("nan")), "sb3_ppo.lr=nan: expected a finite value > 0"),
                          (dict(n_steps=0), "sb3_ppo.n_steps=0: expected an integer >= 1"),
                          (dict(gamma=1.5), r"sb3_ppo.gamma=1.5: expected a finite value in \[0, 1\]")):
        with pytest.raises(ValueError, match=f"^{expected}$"):
            SB3PPOConfig(**bad)
    with pytest.raises((KeyError, ValueError), match="unknown task"):
        train(64, tasks=["SystemWifiTurnOnn"], out_dir=tmp_path / "b", cfg=CFG)
    with pytest.raises(ValueError, match="env_steps must be"):
        train(-1, tasks=TASKS, out_dir=tmp_path / "c", cfg=CFG)


def test_resume_never_unpickles_anything_from_the_run_folder(tmp_path):
    """A planted pickle (SB3's policy.zip layout, and a stray data.pkl) next to a checkpoint is never loaded,
    even with the manifest rewritten to list it: resuming reads safetensors and JSON only."""
    import pickle
    import zipfile

    from algos.run import write_manifest

    train(128, seed=0, tasks=TASKS, eval_n_per_task=1, out_dir=tmp_path, cfg=CFG)
    marker = tmp_path / "PWNED"

    class Payload:
        def __reduce__(self):
            return (Path.touch, (marker,))

    ckpt = tmp_path / "checkpoints" / "it_1"
    with zipfile.ZipFile(ckpt / "policy.zip", "w") as z:
        z.writestr("data", pickle.dumps(Payload()))
        z.writestr("policy.optimizer.pth", pickle.dumps(Payload()))
    (ckpt / "policy" / "data.pkl").write_bytes(pickle.dumps(Payload()))
    write_manifest(ckpt)
    rows = train(256, seed=0, tasks=TASKS, eval_n_per_task=1, out_dir=tmp_path, cfg=CFG)
    assert [r["env_steps"] for r in rows] == [256]
    assert not marker.exists()


def test_an_old_pickled_checkpoint_is_refused_not_loaded(tmp_path, capsys):
    import pickle

    from algos.run import write_manifest

    train(128, seed=0, tasks=TASKS, eval_n_per_task=1, out_dir=tmp_path, cfg=CFG)
    marker = tmp_path / "PWNED"

    class Payload:
        def __reduce__(self):
            return (Path.touch, (marker,))

    ckpt = tmp_path / "checkpoints" / "it_1"
    for f in (ckpt / "policy").iterdir():
        f.unlink()
    (ckpt / "policy").rmdir()
    (ckpt / "policy.zip").write_bytes(pickle.dumps(Payload()))
    (ckpt / "manifest.json").unlink()  # as written before manifests existed: refused unchecked, never opened
    rows = train(128, seed=0, tasks=TASKS, eval_n_per_task=1, out_dir=tmp_path, cfg=CFG)
    assert "manifest.json is missing" in capsys.readouterr().err and not marker.exists()
    assert [r["iteration"] for r in rows] == [1]  # trained again from it_0
    ckpt = tmp_path / "checkpoints" / "it_1"  # the same old layout, now with a manifest over it
    for f in (ckpt / "policy").iterdir():
        f.unlink()
    (ckpt / "policy").rmdir()
    (ckpt / "policy.zip").write_bytes(pickle.dumps(Payload()))
    write_manifest(ckpt)
    with pytest.raises(ValueError, match="never loaded"):
        train(256, seed=0, tasks=TASKS, eval_n_per_task=1, out_dir=tmp_path, cfg=CFG)
    assert not marker.exists()


def test_non_finite_weights_stop_the_run_and_keep_the_last_checkpoint(tmp_path, monkeypatch):
    """A chunk of SB3's training that leaves NaN weights stops the run before it is logged or checkpointed."""
    import torch
    from sb3_contrib import MaskablePPO

    from algos.loop import NonFiniteError

    train(128, seed=0, tasks=TASKS, eval_n_per_task=1, out_dir=tmp_path, cfg=CFG)
    learn = MaskablePPO.learn

    def poisoned(self, *args, **kwargs):
        out = learn(self, *args, **kwargs)
        with torch.no_grad():
            next(self.policy.parameters()).fill_(float("nan"))
        return out

    monkeypatch.setattr(MaskablePPO, "learn", poisoned)
    with pytest.raises(NonFiniteError, match=r"sb3-ppo: iteration 2's training left non-finite .*it_1"):
        train(256, seed=0, tasks=TASKS, eval_n_per_task=1, out_dir=tmp_path, cfg=CFG)
    assert sorted(p.name for p in (tmp_path / "checkpoints").iterdir()) == ["it_0", "it_1"]


def test_the_folder_records_its_maker_and_refuses_another_commands(tmp_path):
    """A comparison's sb3-ppo pair records `made_by` like every other pair (before: it had none), and a folder
    another command made is refused before anything in it is touched."""
    from algos.folders import RunFolderError
    from algos.run import Run

    train(0, seed=0, tasks=TASKS, eval_n_per_task=1, out_dir=tmp_path / "pair", cfg=CFG, made_by="compare")
    assert json.loads((tmp_path / "pair" / "made_by").read_text())["command"] == "compare"
    Run(tmp_path / "mine", {"algo": "rft", "seed": 0}, wandb_mode="disabled", made_by="train").close()
    before = sorted(p.name for p in (tmp_path / "mine").iterdir())
    with pytest.raises(RunFolderError, match=r"was made by experiments/train.py"):
        train(0, seed=0, tasks=TASKS, eval_n_per_task=1, out_dir=tmp_path / "mine", cfg=CFG,
              made_by="compare")
    assert sorted(p.name for p in (tmp_path / "mine").iterdir()) == before
