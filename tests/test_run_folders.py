"""Run folders that guard themselves (issue 12): identity, lock, append-only metrics, damaged rows,
checksummed checkpoints that stay inside their folder, report and compare that never clobber a folder."""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from algos.buffer import TrajectoryBuffer
from algos.run import Run, RunFolderError, checkpoint_dir
from tests.algos.test_run import _Saveable

ROOT = Path(__file__).resolve().parents[1]


def _run(path, config=None):
    return Run(path, {"algo": "rft", "seed": 0, "rft": {"lr": 1e-3, "iterations": 2}} if config is None
               else config, wandb_mode="disabled")


# -- identity ----------------------------------------------------------------------------------------------
def test_resuming_with_another_identity_is_refused_naming_the_keys(tmp_path):
    _run(tmp_path / "r").close()
    stored = (tmp_path / "r" / "config.json").read_text()
    with pytest.raises(RunFolderError) as e:
        _run(tmp_path / "r", {"algo": "grpo", "seed": 1, "rft": {"lr": 1e-3, "iterations": 2}})
    msg = str(e.value)
    assert "algo: 'rft' -> 'grpo'" in msg and "seed: 0 -> 1" in msg and "out_dir" in msg
    assert "rft.lr" not in msg
    assert (tmp_path / "r" / "config.json").read_text() == stored  # never overwritten


def test_resume_neutral_keys_may_change(tmp_path):
    for progress, wandb, iterations in ((True, "online", 2), (False, "disabled", 5)):
        config = {"algo": "rft", "progress": progress, "wandb": wandb, "rft": {"iterations": iterations}}
        _run(tmp_path / "r", config).close()


def test_a_run_stored_before_a_key_was_added_resumes_as_itself(tmp_path):
    """A config key added later (ADDED_KEYS) is read, in a config stored without it, as the value those runs
    had: resuming them is no change; the same key at another value still is."""
    from experiments.compare import pair_config, pair_status, parse_compare

    out = tmp_path / "cmp"
    cfg = parse_compare([f"out_dir={out}", "preset=smoke", "algo=grpo", "seeds=1"])
    old = pair_config(cfg, "grpo", 0)
    del old["policy"]["layers"], old["policy"]["d_model"]  # as written before those keys existed
    pair = out / "runs" / "grpo-s0"
    Run(pair, old, wandb_mode="disabled").close()
    (pair / "done").write_text(json.dumps({"budget": cfg.budget}))
    assert pair_status(cfg, "grpo", 0, out) == "done"
    Run(pair, pair_config(cfg, "grpo", 0), wandb_mode="disabled").close()  # resumes: the same identity
    one = parse_compare([f"out_dir={out}", "preset=smoke", "algo=grpo", "seeds=1", "policy.layers=1"])
    assert pair_status(one, "grpo", 0, out) == "rerun"
    with pytest.raises(RunFolderError, match="policy.layers: 2 -> 1"):
        Run(pair, pair_config(one, "grpo", 0), wandb_mode="disabled")
    narrow = parse_compare([f"out_dir={out}", "preset=smoke", "algo=grpo", "seeds=1", "policy.d_model=64"])
    with pytest.raises(RunFolderError, match="policy.d_model: 96 -> 64"):
        Run(pair, pair_config(narrow, "grpo", 0), wandb_mode="disabled")


# -- lock --------------------------------------------------------------------------------------------------
def test_a_second_process_on_the_same_folder_fails_fast(tmp_path):
    run = _run(tmp_path / "r")
    code = textwrap.dedent(f"""
        from algos.run import Run, RunFolderError
        try:
            Run({str(tmp_path / "r")!r}, {{"algo": "rft", "seed": 0, "rft": {{"lr": 1e-3, "iterations": 2}}}},
                wandb_mode="disabled")
        except RunFolderError as e:
            print("REFUSED", e)
    """)
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert "REFUSED" in out.stdout and "in use by another process" in out.stdout, out.stderr
    run.close()
    _run(tmp_path / "r").close()  # released on close


# -- metrics -----------------------------------------------------------------------------------------------
def test_damaged_rows_are_reported_not_silently_dropped(tmp_path, capsys):
    run = _run(tmp_path / "r")
    run.log({"iteration": 0})
    with open(run.metrics_path, "a") as f:
        f.write("\n")  # an empty row
    run.log({"iteration": 1})
    with open(run.metrics_path, "a") as f:
        f.write('{"iteration": 2, "pass_')  # a kill in the middle of a write
    assert [r["iteration"] for r in run.metrics()] == [0, 1]
    err = capsys.readouterr().err
    assert "line 2 is not a metrics row (empty" in err and "line 4 is not a metrics row (cut" in err
    run.log({"iteration": 3})  # the cut row is ended first: the new row stays whole
    assert [r["iteration"] for r in run.metrics()] == [0, 1, 3]
    run.close()


def test_resume_truncates_past_rows_and_never_rewrites_earlier_ones(tmp_path, capsys):
    run = _run(tmp_path / "r")
    run.log({"iteration": 0})
    with open(run.metrics_path, "a") as f:
        f.write("\n")
    for it in (1, 2, 3):
        run.log({"iteration": it})
    with open(run.metrics_path, "a") as f:
        f.write('{"iteration": 4, "pa')
    before = run.metrics_path.read_bytes()
    run.truncate_metrics(lambda r: r["iteration"] <= 1)
    after = run.metrics_path.read_bytes()
    assert before.startswith(after) and after.count(b"\n") == 3  # row 0, the empty line, row 1
    err = capsys.readouterr().err
    assert "kept in place" in err and "dropped with the rows past the checkpoint" in err
    assert [r["iteration"] for r in run.metrics()] == [0, 1]
    run.close()


@pytest.mark.slow
def test_train_with_an_empty_metrics_row_resumes_without_crashing(tmp_path):
    """Today: IndexError in train.py's summary. Now: the row is reported and the run resumes."""
    args = ["-m", "experiments.train", "preset=smoke", f"out_dir={tmp_path / 'r'}", "progress=false",
            f"cache_dir={tmp_path / 'cache'}", "wandb=disabled"]
    first = subprocess.run([sys.executable, *args], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert first.returncode == 0, first.stderr
    (tmp_path / "r" / "metrics.jsonl").write_text("\n")
    again = subprocess.run([sys.executable, *args], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr
    assert "not a metrics row (empty" in again.stderr and "IndexError" not in again.stderr
    other = subprocess.run([sys.executable, *args, "seed=3"], cwd=ROOT, capture_output=True, text=True,
                           timeout=300)
    assert other.returncode != 0 and "seed: 0 -> 3" in other.stderr


# -- checkpoints -------------------------------------------------------------------------------------------
def test_a_damaged_checkpoint_is_named_and_the_previous_one_used(tmp_path, capsys):
    run = _run(tmp_path / "r")
    for it in range(3):
        run.checkpoint(it, _Saveable({"it": it}), {"env_steps": it})
    (tmp_path / "r" / "checkpoints" / "it_2" / "policy" / "w.json").write_text('{"it": 7}')
    path, state = run.latest()
    assert path.name == "it_1" and state["iteration"] == 1
    assert "it_2/policy/w.json is damaged" in capsys.readouterr().err
    assert (tmp_path / "r" / "checkpoints" / "damaged-it_2").is_dir()  # kept for inspection
    run.close()


def test_a_parquet_buffer_with_flipped_bytes_is_caught_by_the_manifest(tmp_path, capsys):
    run = _run(tmp_path / "r")
    run.checkpoint(0, _Saveable(0), {"env_steps": 0}, {"buffer.parquet": TrajectoryBuffer()})
    run.checkpoint(1, _Saveable(1), {"env_steps": 1}, {"buffer.parquet": TrajectoryBuffer()})
    f = tmp_path / "r" / "checkpoints" / "it_1" / "buffer.parquet"
    data = bytearray(f.read_bytes())
    for i in range(len(data) // 2, len(data) // 2 + 8):
        data[i] ^= 0xFF
    f.write_bytes(bytes(data))
    path, _ = run.latest()
    assert path.name == "it_0" and "buffer.parquet is damaged" in capsys.readouterr().err
    run.close()


def test_checkpoint_paths_never_leave_the_run_folder(tmp_path):
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "state.json").write_text('{"iteration": 9}')
    run = _run(tmp_path / "r")
    run.checkpoint(0, _Saveable(0), {"env_steps": 0})
    for bad in ("../../elsewhere", str(outside), "it_0/../../../elsewhere", "it_x"):
        (tmp_path / "r" / "checkpoint.json").write_text(json.dumps({"iteration": 9, "path": bad}))
        with pytest.raises(RunFolderError, match="not a checkpoint of this run"):
            run.latest()
        with pytest.raises(RunFolderError):
            checkpoint_dir(tmp_path / "r")
    (tmp_path / "r" / "checkpoints" / "it_5").symlink_to(outside)
    (tmp_path / "r" / "checkpoint.json").write_text(json.dumps({"iteration": 5, "path": "it_5"}))
    with pytest.raises(RunFolderError, match="not a checkpoint of this run"):
        run.latest()
    run.close()


def test_policy_path_of_a_run_folder_follows_no_outside_pointer(tmp_path):
    from experiments.common import saved_policy_dir

    run = _run(tmp_path / "r")
    run.checkpoint(0, _Saveable(0), {"env_steps": 0})
    run.close()
    assert saved_policy_dir(tmp_path / "r") == (tmp_path / "r" / "checkpoints" / "it_0").resolve() / "policy"
    (tmp_path / "r" / "checkpoint.json").write_text(json.dumps({"iteration": 0, "path": "../../x"}))
    with pytest.raises(SystemExit, match="not a checkpoint of this run"):
        saved_policy_dir(tmp_path / "r")


# -- report and compare ------------------------------------------------------------------------------------
def test_report_never_rewrites_a_training_run_folder(tmp_path):
    from experiments import report

    run = _run(tmp_path / "r")
    run.log({"iteration": 0, "pass_at_1": 0.5})
    run.checkpoint(0, _Saveable(0), {"env_steps": 0})
    run.close()
    before = (tmp_path / "r" / "metrics.jsonl").read_bytes()
    (tmp_path / "r" / "runs").mkdir()  # even when it looks like a comparison
    with pytest.raises(SystemExit, match="never rewritten"):
        report.main([str(tmp_path / "r")])
    assert (tmp_path / "r" / "metrics.jsonl").read_bytes() == before


def test_compare_checks_every_argument_before_touching_its_folder(tmp_path):
    from experiments import compare

    out = tmp_path / "cmp"
    for bad in (["tasks=[SystemWifiTurnOnn]"], ["budget=0"], ["seeds=0"], ["algo=grsd,nope"]):
        with pytest.raises(SystemExit):
            compare.main([f"out_dir={out}", "preset=smoke", *bad])
        assert not out.exists(), bad


def test_compare_reruns_a_pair_whose_config_changed(tmp_path):
    """A finished pair counts as done only for the config and budget it finished with."""
    from experiments.compare import pair_config, pair_status, parse_compare

    out = tmp_path / "cmp"
    cfg = parse_compare([f"out_dir={out}", "preset=smoke", "algo=grpo", "seeds=1"])
    pair = out / "runs" / "grpo-s0"
    Run(pair, pair_config(cfg, "grpo", 0), wandb_mode="disabled").close()
    (pair / "done").write_text(json.dumps({"budget": cfg.budget}))
    assert pair_status(cfg, "grpo", 0, out) == "done"
    bigger = parse_compare([f"out_dir={out}", "preset=smoke", "algo=grpo", "seeds=1", "budget=480"])
    assert pair_status(bigger, "grpo", 0, out) == "resume"  # continues from its checkpoint
    smaller = parse_compare([f"out_dir={out}", "preset=smoke", "algo=grpo", "seeds=1", "budget=120"])
    assert pair_status(smaller, "grpo", 0, out) == "rerun"
    other = parse_compare([f"out_dir={out}", "preset=smoke", "algo=grpo", "seeds=1", "grpo.lr=0.5"])
    assert pair_status(other, "grpo", 0, out) == "rerun"
    elsewhere = parse_compare([f"out_dir={out}", "preset=smoke", "algo=grpo", "seeds=1", "ppo.lr=0.5"])
    assert pair_status(elsewhere, "grpo", 0, out) == "done"  # another algorithm's section: not this pair's


def _alive(pid: int) -> bool:
    """The process exists and is not a zombie (an orphan's zombie may wait long for init to reap it)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads process states from /proc")
def test_pair_workers_exit_when_the_comparison_is_killed(tmp_path):
    """A comparison killed by a signal its workers do not get (SIGKILL to the parent alone) leaves no worker
    training on in its folder: each exits within about a second of its parent's death."""
    import time

    script = tmp_path / "parent.py"
    script.write_text(textwrap.dedent(f"""
        import concurrent.futures as cf, multiprocessing as mp, os, sys, time
        sys.path.insert(0, {str(ROOT)!r})
        from experiments.compare import exit_with_parent

        def work(path):
            open(path + ".tmp", "w").write(str(os.getpid()))
            os.replace(path + ".tmp", path)
            time.sleep(120)

        if __name__ == "__main__":
            ex = cf.ProcessPoolExecutor(1, mp_context=mp.get_context("spawn"), initializer=exit_with_parent)
            ex.submit(work, {str(tmp_path / "pid")!r})
            time.sleep(120)
    """))
    parent = subprocess.Popen([sys.executable, str(script)])
    worker = None
    try:
        deadline = time.monotonic() + 60
        while not (tmp_path / "pid").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        worker = int((tmp_path / "pid").read_text())
        assert _alive(worker)
        parent.kill()
        parent.wait()
        deadline = time.monotonic() + 10
        while _alive(worker) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _alive(worker), "the pair worker outlived its comparison"
    finally:
        parent.kill()
        if worker is not None and _alive(worker):
            os.kill(worker, 9)
