"""Run folders: metrics rows, atomic checkpoints, resume pointers."""

import json

from algos.run import Run


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
