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


# -- issue 45: links out of a folder, another command's folder, checksums with holes ------------------------
def _outside(tmp_path, name="victim.txt", text="keep me\n"):
    f = tmp_path / name
    f.write_text(text)
    return f


def test_a_lock_file_that_is_a_link_is_refused_and_its_target_kept(tmp_path):
    """Before: the linked file was overwritten with the pid."""
    victim = _outside(tmp_path)
    (tmp_path / "r").mkdir()
    (tmp_path / "r" / ".lock").symlink_to(victim)
    with pytest.raises(RunFolderError, match=r"\.lock is a symbolic link"):
        _run(tmp_path / "r")
    assert victim.read_text() == "keep me\n"


def test_a_metrics_file_that_is_a_link_is_refused_and_its_target_kept(tmp_path):
    """Before: a resume truncated the linked file and logging appended rows to it."""
    victim = _outside(tmp_path, text='{"iteration": 0}\n{"iteration": 5}\n')
    run = _run(tmp_path / "r")
    (tmp_path / "r" / "metrics.jsonl").symlink_to(victim)
    for act in (lambda: run.log({"iteration": 1}), lambda: run.truncate_metrics(lambda r: r["iteration"] < 1),
                run.metrics):
        with pytest.raises(RunFolderError, match=r"metrics\.jsonl is a symbolic link"):
            act()
    assert victim.read_text() == '{"iteration": 0}\n{"iteration": 5}\n'
    run.close()
    with pytest.raises(RunFolderError, match="symbolic link"):  # refused on open as well
        _run(tmp_path / "r")


def test_a_checkpoints_folder_that_is_a_link_is_refused_and_its_target_kept(tmp_path):
    """Before: the outside folder's it_* entries were deleted by the keep-the-last-two cleanup."""
    outside = tmp_path / "elsewhere"
    for k in range(3):
        (outside / f"it_{k}").mkdir(parents=True)
        (outside / f"it_{k}" / "data").write_text("x")
    run = _run(tmp_path / "r")
    (tmp_path / "r" / "checkpoints").symlink_to(outside, target_is_directory=True)
    with pytest.raises(RunFolderError, match="checkpoints is a symbolic link"):
        run.checkpoint(5, _Saveable(0), {"env_steps": 0})
    (tmp_path / "r" / "checkpoint.json").write_text(json.dumps({"iteration": 2, "path": "it_2"}))
    with pytest.raises(RunFolderError, match="checkpoints is a symbolic link"):
        run.latest()
    assert sorted(p.name for p in outside.iterdir()) == ["it_0", "it_1", "it_2"]
    run.close()


def test_a_link_inside_a_checkpoint_is_refused(tmp_path, capsys):
    run = _run(tmp_path / "r")
    run.checkpoint(0, _Saveable(0), {"env_steps": 0})
    run.checkpoint(1, _Saveable(1), {"env_steps": 1})
    w = tmp_path / "r" / "checkpoints" / "it_1" / "policy" / "w.json"
    w.unlink()
    w.symlink_to(_outside(tmp_path, text="1"))
    path, _ = run.latest()
    assert path.name == "it_0" and "w.json is a symbolic link" in capsys.readouterr().err
    run.close()


def test_a_checkpoint_without_its_manifest_is_refused(tmp_path, capsys):
    """Before: accepted as an old-format checkpoint, so damaged weights were used silently. No checkpoint
    written since checksums came in lacks one, and none before them can be verified."""
    run = _run(tmp_path / "r")
    run.checkpoint(0, _Saveable(0), {"env_steps": 0})
    run.checkpoint(1, _Saveable(1), {"env_steps": 1})
    ck = tmp_path / "r" / "checkpoints" / "it_1"
    (ck / "manifest.json").unlink()
    (ck / "policy" / "w.json").write_text("7")  # damaged, and nothing left to say so
    path, state = run.latest()
    assert path.name == "it_0" and state["iteration"] == 0
    assert "it_1/manifest.json is missing" in capsys.readouterr().err
    run.close()
    from experiments.common import saved_policy_dir

    (tmp_path / "r" / "checkpoints" / "it_0" / "manifest.json").unlink()
    (tmp_path / "r" / "checkpoint.json").write_text(json.dumps({"iteration": 0, "path": "it_0"}))
    with pytest.raises(SystemExit, match="manifest.json is missing"):
        saved_policy_dir(tmp_path / "r")


def test_a_row_whose_iteration_is_null_is_reported_as_damaged(tmp_path, capsys):
    """Before: resuming compared None with an int (TypeError)."""
    run = _run(tmp_path / "r")
    run.log({"iteration": 0})
    run.log({"iteration": None, "pass_at_1": 0.5})
    run.log({"iteration": 1})
    run.log({"iteration": 2})
    run.truncate_metrics(lambda r: r.get("iteration", -1) <= 1)
    assert [r["iteration"] for r in run.metrics()] == [0, 1]
    err = capsys.readouterr().err
    assert "line 2 is not a metrics row (its iteration or env_steps is not a count; kept in place)" in err
    run.close()


def _made_by(folder):
    return json.loads((folder / "made_by").read_text())["command"]


def test_compare_refuses_a_training_run_folder_and_leaves_it_resumable(tmp_path):
    """Before: compare replaced its config.json and metrics.jsonl, and the run could not resume."""
    from experiments import compare

    run = Run(tmp_path / "r", {"algo": "rft", "seed": 0}, wandb_mode="disabled", made_by="train")
    run.log({"iteration": 0, "pass_at_1": 0.5})
    run.checkpoint(0, _Saveable(0), {"env_steps": 0})
    run.close()
    before = {p.name: p.read_bytes() for p in (tmp_path / "r").iterdir() if p.is_file()}
    with pytest.raises(SystemExit, match=r"made by experiments/train.py .*compare.py writes only into"):
        compare.main([f"out_dir={tmp_path / 'r'}", "preset=smoke", "algo=grpo", "seeds=1"])
    assert {p.name: p.read_bytes() for p in (tmp_path / "r").iterdir() if p.is_file()} == before
    Run(tmp_path / "r", {"algo": "rft", "seed": 0}, wandb_mode="disabled", made_by="train").close()


def test_train_refuses_a_comparison_and_its_pairs_and_the_cache(tmp_path):
    from experiments import train

    cmp_dir = tmp_path / "cmp"
    (cmp_dir / "runs").mkdir(parents=True)
    (cmp_dir / "config.json").write_text(json.dumps({"algo": ["grpo"], "seeds": 1}))
    pair = cmp_dir / "runs" / "grpo-s0"
    Run(pair, {"algo": "grpo", "seed": 0}, wandb_mode="disabled").close()  # as written before made_by
    cache = tmp_path / "cache"
    (cache / "base-small-0123").mkdir(parents=True)
    for folder, maker in ((cmp_dir, "compare"), (pair, "compare"), (cache, "the cache")):
        with pytest.raises(SystemExit, match=f"train: out_dir=.* was made by .*{maker}"):
            train.main([f"out_dir={folder}", "preset=smoke", f"cache_dir={tmp_path / 'c2'}"])
    assert not (cmp_dir / "made_by").exists() and not (pair / "checkpoints").exists()


def test_entry_points_refuse_a_run_folder_as_cache_dir(tmp_path):
    from experiments import pretrain

    Run(tmp_path / "r", {"algo": "rft", "seed": 0}, wandb_mode="disabled", made_by="train").close()
    with pytest.raises(SystemExit, match=r"cache_dir: cache_dir=.* was made by experiments/train.py"):
        pretrain.main(["preset=smoke", f"cache_dir={tmp_path / 'r'}", "progress=false"])
    assert sorted(p.name for p in (tmp_path / "r").iterdir()) == [".lock", "config.json", "made_by"]


def test_folders_from_before_the_record_are_recognised_by_their_contents(tmp_path):
    from algos.folders import infer_made_by

    Run(tmp_path / "train", {"algo": "rft", "seed": 0}, wandb_mode="disabled").close()
    assert infer_made_by(tmp_path / "train") == "train"
    (tmp_path / "cmp" / "runs").mkdir(parents=True)
    Run(tmp_path / "cmp" / "runs" / "ppo-s1", {"algo": "ppo"}, wandb_mode="disabled").close()
    assert infer_made_by(tmp_path / "cmp") == infer_made_by(tmp_path / "cmp" / "runs" / "ppo-s1") == "compare"
    Run(tmp_path / "c" / "rft-small-1", {"rft": {}, "base": {}}, wandb_mode="disabled").close()
    (tmp_path / "c" / "base-small-2" / "policy").mkdir(parents=True)
    (tmp_path / "c" / "base-small-2" / "done").write_text("{}")
    for f in ("c", "c/rft-small-1", "c/base-small-2"):
        assert infer_made_by(tmp_path / f) == "cache", f
    assert infer_made_by(tmp_path / "new") is None
    Run(tmp_path / "train", {"algo": "rft", "seed": 0}, wandb_mode="disabled", made_by="train").close()
    assert _made_by(tmp_path / "train") == "train"  # recorded the first time its own command opens it


def _tiny_policy():
    from algos.policies.registry import make_policy
    from voyager_gym.env import app_names

    return make_policy("small", app_names=app_names(), seed=0, d_model=32, heads=2)


def _cached_base(tmp_path, old: bool):
    """A cache_dir with the base policy of the smoke recipe: as written today, or before checksums."""
    from experiments.common import base_path, resolve_tasks, task_split
    from experiments.config import PretrainConfig, parse

    cfg = parse(["preset=smoke", f"cache_dir={tmp_path / 'cache'}", "policy.d_model=32"], PretrainConfig,
                "pretrain")
    path = base_path(cfg, task_split(cfg, resolve_tasks(cfg.tasks))[0])
    _tiny_policy().save(path / "policy")
    if old:
        (path / "done").write_text(json.dumps({"samples": 3}))
    else:
        from algos.run import write_manifest

        (path / "done").write_text(json.dumps({"samples": 3, "checksums": "manifest.json"}))
        write_manifest(path)
    return cfg, path


def test_a_damaged_base_cache_is_named_with_how_to_rebuild_it(tmp_path):
    """Before: the cached base had no checksum, and a corrupted one was trained on silently."""
    from experiments.common import load_base

    cfg, path = _cached_base(tmp_path, old=False)
    load_base(cfg, path)
    weights = next((path / "policy").glob("*.safetensors"))
    data = bytearray(weights.read_bytes())
    data[-5] ^= 0xFF
    weights.write_bytes(bytes(data))
    with pytest.raises(SystemExit, match=rf"{path.name}/policy/.* is damaged.*delete {path} to rebuild it"):
        load_base(cfg, path)
    (path / "manifest.json").unlink()  # a checksummed cache that lost its manifest is not adopted
    with pytest.raises(SystemExit, match="manifest.json is missing.*delete .* to rebuild it"):
        load_base(cfg, path)


def test_a_base_cache_from_before_checksums_is_adopted_once(tmp_path, capsys):
    from experiments.common import load_base

    cfg, path = _cached_base(tmp_path, old=True)
    load_base(cfg, path)
    assert "was cached before caches carried checksums" in capsys.readouterr().out
    assert (path / "manifest.json").exists()
    load_base(cfg, path)
    assert "before caches carried checksums" not in capsys.readouterr().out  # once
    (path / "policy" / "config.json").write_text("{}")
    with pytest.raises(SystemExit, match="config.json is damaged"):
        load_base(cfg, path)


def test_a_base_cache_entry_that_is_a_link_is_refused(tmp_path):
    from experiments.common import cache_entry

    cfg, path = _cached_base(tmp_path, old=False)
    elsewhere = tmp_path / "elsewhere"
    path.rename(elsewhere)
    path.symlink_to(elsewhere, target_is_directory=True)
    with pytest.raises(SystemExit, match="is a symbolic link"):
        cache_entry(cfg, path)


def test_a_second_opener_of_a_busy_folder_can_wait_for_it(tmp_path, capsys):
    """What two comparisons sharing a cache_dir do while the RFT start is built (before: the second crashed
    with advice about out_dir): the second waits for the first and then finds the start cached."""
    import threading
    import time

    first = _run(tmp_path / "r")
    threading.Timer(0.5, first.close).start()
    t0 = time.monotonic()
    second = Run(tmp_path / "r", first.config, wandb_mode="disabled", wait=True, busy="built by another")
    assert time.monotonic() - t0 >= 0.4 and "waiting: built by another" in capsys.readouterr().err
    second.close()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the parent-death signal is Linux's")
def test_pair_workers_die_with_the_comparison_and_write_nothing_after(tmp_path):
    """Before: workers outlived a SIGKILLed comparison by 1.7-2.7 s (a 1 s poll after a slow start), and one
    wrote a metrics row after its parent had died. Now the kernel kills them with it."""
    import time

    rows = tmp_path / "rows"
    script = tmp_path / "parent.py"
    script.write_text(textwrap.dedent(f"""
        import concurrent.futures as cf, multiprocessing as mp, os, sys, time
        sys.path.insert(0, {str(ROOT)!r})
        from experiments.compare import exit_with_parent

        def work(path):
            while True:  # a pair logging rows
                with open(path, "a") as f:
                    f.write(f"{{time.time()}}\\n")
                time.sleep(0.005)

        if __name__ == "__main__":
            ex = cf.ProcessPoolExecutor(1, mp_context=mp.get_context("spawn"), initializer=exit_with_parent,
                                        initargs=(0.1, os.getpid()))
            ex.submit(work, {str(rows)!r})
            time.sleep(600)
    """))
    parent = subprocess.Popen([sys.executable, str(script)])
    try:
        deadline = time.monotonic() + 120
        while (not rows.exists() or rows.read_text().count("\n") < 5) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert rows.exists(), "the worker never started"
        parent.kill()
        parent.wait()
        died = time.time()
        time.sleep(1.0)
        last = float(rows.read_text().split()[-1])
        assert last < died + 0.05, f"a row was written {last - died:.3f} s after the comparison died"
    finally:
        parent.kill()


@pytest.mark.slow
def test_two_comparisons_sharing_a_cache_dir_build_the_start_once(tmp_path):
    """Before: the second crashed (its .lock is held) with advice about out_dir. Now it waits for the first
    and reads the same cached start."""
    code = textwrap.dedent("""
        import sys
        from algos.run import pin_cpu_numerics
        from experiments.compare import parse_compare, prepare_start

        cfg = parse_compare(["preset=smoke", "algo=grpo", "seeds=1", "progress=false",
                             f"cache_dir={sys.argv[1]}"])
        pin_cpu_numerics(1)
        print("START", prepare_start(cfg)["pass_at_1"])
    """)
    cmd = [sys.executable, "-c", code, str(tmp_path / "cache")]
    procs = [subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(2)]
    outs = [p.communicate(timeout=900) for p in procs]
    for p, (out, err) in zip(procs, outs, strict=True):
        assert p.returncode == 0 and "START" in out, err[-2000:]
        assert "out_dir" not in err
    assert len({out.split("START")[1] for out, _ in outs}) == 1
    assert sum("waiting: the RFT start checkpoint" in err for _, err in outs) == 1
    assert sum("training the RFT start checkpoint" in out for out, _ in outs) == 1
