"""The held-out-task split (`split=tasks`): disjoint, covering, seeded, independent of the tasks' order."""

from __future__ import annotations

import pytest

from experiments import config as C
from experiments.common import task_split
from voyager_gym.env import task_names
from voyager_gym.suites import split_tasks


def test_split_is_disjoint_covering_and_seeded():
    tasks = task_names()
    train, held = split_tasks(tasks, 0.25, seed=0)
    assert not set(train) & set(held) and sorted(train + held) == sorted(tasks)
    assert len(held) == round(0.25 * len(tasks))
    assert train == [t for t in tasks if t in train]  # the given order kept
    assert split_tasks(list(reversed(tasks)), 0.25, seed=0)[1] == list(reversed(held))  # order-free draw
    assert split_tasks(tasks, 0.25, seed=0) == (train, held)
    assert split_tasks(tasks, 0.25, seed=1)[1] != held


def test_split_keeps_one_task_on_each_side():
    assert [len(p) for p in split_tasks(["A", "B", "C"], 0.01)] == [2, 1]
    assert [len(p) for p in split_tasks(["A", "B", "C"], 0.99)] == [1, 2]
    with pytest.raises(ValueError, match=r"needs two or more tasks, got \['A'\]"):
        split_tasks(["A", "A"], 0.5)
    with pytest.raises(ValueError, match="heldout_fraction=1.0: expected a value in"):
        split_tasks(["A", "B"], 1.0)


def test_config_split():
    cfg = C.parse(["split=tasks", "heldout_fraction=0.5", "split_seed=3", C.SMOKE_TASKS], C.TrainConfig)
    train, held = task_split(cfg, list(cfg.tasks))
    assert len(train) == len(held) == 2 and (train, held) == split_tasks(cfg.tasks, 0.5, 3)
    plain = C.parse([C.SMOKE_TASKS], C.TrainConfig)
    assert task_split(plain, list(plain.tasks)) == (list(plain.tasks), [])
    with pytest.raises(SystemExit, match="split='apps': expected one of instances, tasks"):
        C.parse(["split=apps"], C.TrainConfig)
    with pytest.raises(SystemExit, match="heldout_fraction=0.0: expected a finite value in"):
        C.parse(["heldout_fraction=0"], C.TrainConfig)
    with pytest.raises(SystemExit, match="split=tasks: a task split needs two or more tasks"):
        task_split(C.parse(["split=tasks", "tasks=[OpenAppTaskEval]"], C.TrainConfig), ["OpenAppTaskEval"])


def test_runs_from_before_the_split_resume_as_themselves(tmp_path):
    import json

    from algos.run import Run
    from experiments.compare import pair_config, pair_status, parse_compare

    out = tmp_path / "cmp"
    cfg = parse_compare([f"out_dir={out}", "preset=smoke", "algo=grpo", "seeds=1"])
    old = pair_config(cfg, "grpo", 0)
    for key in ("split", "heldout_fraction", "split_seed"):
        del old[key]  # as written before those keys existed
    pair = out / "runs" / "grpo-s0"
    Run(pair, old, wandb_mode="disabled").close()
    (pair / "done").write_text(json.dumps({"budget": cfg.budget}))
    assert pair_status(cfg, "grpo", 0, out) == "done"
    held = parse_compare([f"out_dir={out}", "preset=smoke", "algo=grpo", "seeds=1", "split=tasks"])
    assert pair_status(held, "grpo", 0, out) == "rerun"
