"""The paper's comparison under one harness: every algorithm from the same RFT checkpoint, the same budget.

    python experiments/compare.py algo=grsd,grpo,ppo[,gigpo] [seeds=3] [budget=ENV_STEPS]
                                  [preset=default|paper|smoke] [tasks=...] [policy=small|hf] [out_dir=PATH]
                                  [workers=2] [any train key]
    voyager-train compare --help    # every key, its type, default and meaning; the presets

1. The RFT checkpoint (the base policy, then RFT) is trained once and cached; every run starts from it.
2. Each (algorithm, seed) pair trains with the same budget of environment steps through the same loop
   (algos/loop.py): the same training instances, Pass@1 on the same held-out instances after every
   `<algo>.eval_every` iterations. Pairs run in `workers` processes; a pair that finished with this config
   is not rerun, a pair that was killed resumes from its last checkpoint, a finished pair given a larger
   budget continues, and a pair whose config changed otherwise (or whose budget shrank) is moved to
   `replaced/` and run again. Every argument (keys, values, tasks, algorithms) is checked before the folder
   is touched, and the folder is locked while a comparison runs in it; its workers exit within a second of
   its process, however that is killed (`exit_with_parent`).
3. The run folder gets metrics.jsonl (every pair's rows), curves.png (Pass@1 against env steps, mean and 95%
   bootstrap interval across seeds), profiles.png (performance profiles of the final per-task success),
   table.md (experiments/stats.py's statistics: mean and IQM with stratified bootstrap intervals, the
   probability of improvement, the minimum detectable difference), report.html (self-contained) and one wandb
   run per pair, grouped by the comparison (offline unless wandb=online).
"""

from __future__ import annotations

import concurrent.futures as cf
import json
import math
import multiprocessing as mp
import os
import shutil
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from omegaconf import OmegaConf

from algos.registry import config_section
from experiments.config import SB3, CompareConfig, as_dict, parse, run_config


def parse_compare(argv: Sequence[str]) -> CompareConfig:
    """The comparison's config: the preset's overrides first, then the user's (which win)."""
    return parse(argv, CompareConfig, "compare")


# ------------------------------------------------------------------------------------------------------------
# One (algorithm, seed) pair, in its own process
# ------------------------------------------------------------------------------------------------------------
def pair_config(cfg: CompareConfig, algo: str, seed: int) -> dict[str, Any]:
    """What a pair's run folder stores (its identity): its algorithm's section, its seed, the start's seed."""
    if algo == SB3:  # the keys of sb3_ppo.train's own config that the comparison sets
        from algos.sb3_ppo import DEFAULT_TASKS
        from experiments.common import resolve_tasks

        tasks = DEFAULT_TASKS if cfg.tasks == ["all"] else resolve_tasks(cfg.tasks, cfg.env.backend)
        return {"algo": SB3, "seed": seed, "tasks": list(tasks), "eval_n_per_task": cfg.eval_n_per_task}
    return {**run_config(cfg, algo, seed), "start_seed": cfg.seed}


def pair_budget(cfg: CompareConfig, algo: str) -> int:
    return cfg.sb3_budget if algo == SB3 else cfg.budget


def pair_status(cfg: CompareConfig, algo: str, seed: int, out: Path) -> str:
    """'done' (finished with this config and budget), 'resume' (nothing yet, killed, or a larger budget now)
    or 'rerun' (its config changed, or it trained past the new budget)."""
    from algos.folders import inside, read_bytes
    from algos.run import identity_diff

    pair = inside(out, "runs", f"{algo}-s{seed}")
    if not (pair / "config.json").exists():
        return "resume"
    stored = json.loads(read_bytes(inside(pair, "config.json")))
    expected = pair_config(cfg, algo, seed)
    if algo == SB3:
        stored = {k: stored.get(k) for k in expected}
    if identity_diff(stored, expected):
        return "rerun"
    done = pair / "done"
    if not done.exists():
        return "resume"
    finished = json.loads(read_bytes(inside(pair, "done"))).get("budget")
    if finished == pair_budget(cfg, algo):
        return "done"
    return "resume" if finished is not None and finished < pair_budget(cfg, algo) else "rerun"


def set_aside(pair: Path, out: Path) -> Path:
    """Move a pair folder out of runs/ into replaced/ (kept, never deleted; the report reads runs/ only)."""
    from algos.folders import inside

    k = 0
    while os.path.lexists(dest := inside(out, "replaced", f"{pair.name}.{k}")):
        k += 1
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.move(str(pair), dest)
    return dest


# ------------------------------------------------------------------------------------------------------------
# One (algorithm, seed) pair, in its own process
# ------------------------------------------------------------------------------------------------------------
def exit_with_parent(poll_s: float = 0.1, parent: int | None = None) -> None:
    """A pair worker's initializer: on Linux the kernel kills this process the moment its parent dies
    (PR_SET_PDEATHSIG), so it writes no row after; elsewhere a daemon thread ends it within `poll_s` (its
    parent pid changes when it is re-parented). `parent`: the comparison's pid, passed by it, so that a parent
    that died before this ran is noticed too. Without it, a comparison killed by a signal its workers do not
    get (`kill PID`, a scheduler's SIGTERM or SIGKILL) leaves them training on, and taking the pairs already
    queued to them, in a folder whose lock died with the parent: a new comparison there would share pairs with
    them. The killed pairs resume from their last checkpoints."""
    if sys.platform.startswith("linux"):
        import ctypes
        import signal

        try:
            ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL))  # 1: PR_SET_PDEATHSIG
        except (OSError, AttributeError):  # no prctl: the thread below does it
            pass
    parent = parent or os.getppid()
    if os.getppid() != parent:  # the parent died before the kernel was told
        os._exit(1)

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(poll_s)
        os._exit(1)

    threading.Thread(target=watch, name="exit-with-parent", daemon=True).start()


def worker_config(cfg_dict: dict[str, Any]) -> CompareConfig:
    """The comparison's config in a worker process (passed as a dict), its CPU numerics pinned as the
    comparison's are."""
    cfg: CompareConfig = OmegaConf.to_object(OmegaConf.merge(OmegaConf.structured(CompareConfig), cfg_dict))
    from algos.run import pin_cpu_numerics

    pin_cpu_numerics(cfg.torch_threads)
    return cfg


def worker_pool(workers: int) -> cf.ProcessPoolExecutor:
    """`workers` spawned processes that end with this one (`exit_with_parent`)."""
    return cf.ProcessPoolExecutor(max_workers=workers, mp_context=mp.get_context("spawn"),
                                  initializer=exit_with_parent, initargs=(0.1, os.getpid()))


def run_pair(cfg_dict: dict[str, Any], algo: str, seed: int, out: str) -> str:
    """Train `algo` with `seed` from the cached RFT checkpoint for the budget (resumable); its folder."""
    cfg = worker_config(cfg_dict)
    from algos.folders import atomic_write_text, inside
    from experiments.recipe import train_run

    pair = inside(Path(out), "runs", f"{algo}-s{seed}")
    status = pair_status(cfg, algo, seed, Path(out))
    if status == "done":
        return str(pair)
    if status == "rerun":
        print(f"  {algo} seed {seed}: config or budget changed; the old run is kept in "
              f"{set_aside(pair, Path(out))}")
    (pair / "done").unlink(missing_ok=True)
    # the recipe every run shares (experiments/recipe.py): from the cached RFT checkpoint (sb3-ppo: scratch)
    train_run(cfg, algo, seed, pair, config=pair_config(cfg, algo, seed), budget=pair_budget(cfg, algo),
              start="rft", progress=False, group=cfg.name or Path(out).name, name=f"{algo}-s{seed}",
              made_by="compare")
    done = {"finished": time.time(), "budget": pair_budget(cfg, algo)}
    atomic_write_text(inside(pair, "done"), json.dumps(done))
    return str(pair)


# Seconds per env step of one (algorithm, seed) pair with the small policy on SimDroid's 77 tasks, two pairs
# sharing this project's 2-core machine, as measured with the default settings (2026-12-01, fresh clone, the
# policy whose RFT start is at 0.619; PPO with its 4 epochs; ~24,800-step pairs: PPO 331 s, GRSD 223-228 s,
# GRPO 102-108 s): linear and quadratic terms (GRSD fine-tunes on its whole success pool, which grows with the
# run and with the policy's success rate).
# GRSD since it continues RFT's pool and replays 8,000 of its samples an update (2026-12-02, 116 tasks,
# ~27,500-step pairs: 340 s for 22,162 steps alone, ~620 s two at a time beside a third job): linear, as the
# replayed set no longer grows with the run.
# FORK_EVAL_SECONDS: each iteration GRSD measures at the fork level (2026-12-04, `grsd.fork_eval`; the
# control arm fits the replayed set a second time, then every arm's greedy rollouts and transfer evaluations):
# 293-374 s an iteration with three jobs on the 2 cores against ~90 s unmeasured, so ~100-150 s more with two.
# START_SECONDS: the base policy and the RFT checkpoint when not cached (2026-12-05, BASE_VERSION 16, 116
# tasks: the RFT's 12 rounds logged 1,677 s beside a second such build on the other core; was 370 s for the
# 77-task suite's six rounds).
FORK_EVAL_SECONDS = 150.0
PAIR_SECONDS = {"grsd": (1.8e-2, 0.0), "grpo": (3.8e-3, 0.0), "ppo": (1.28e-2, 0.0), "rft": (6.0e-3, 0.0),
                # one seed of the default with all five, scaled by that run's GRPO against the rate above
                "gigpo": (5.8e-3, 0.0), "vine": (3.0e-3, 0.0)}
PAIR_OVERHEAD_S = 10.0
START_SECONDS = 1_650.0


def pair_seconds(cfg: CompareConfig, algo: str) -> float | None:
    """One pair's expected wall time on a 2-core machine like ours, from the measured rates above: its budget
    plus half an iteration on average (the budget is checked before an iteration starts; ~7.5 env steps an
    episode). None where those rates say nothing (a subset of the tasks, another policy or backend, Ray
    actors, sb3-ppo)."""
    if (list(cfg.tasks) != ["all"] or cfg.policy.name != "small" or cfg.env.backend != "simdroid"
            or cfg.env.workers > 0 or algo not in PAIR_SECONDS):
        return None
    sec = getattr(cfg, config_section(algo))
    steps = cfg.budget + 0.5 * sec.instances_per_iter * sec.group_size * 7.5
    lin, quad = PAIR_SECONDS[algo]
    measured = 0.0
    if getattr(sec, "fork_eval", False):  # GRSD's measured iterations: all, or the first fork_eval_until
        iterations = math.ceil(steps / (sec.instances_per_iter * sec.group_size * 7.5))
        measured = iterations if sec.fork_eval_until == 0 else min(iterations, sec.fork_eval_until)
    return PAIR_OVERHEAD_S + lin * steps + quad * steps**2 + FORK_EVAL_SECONDS * measured


def longest_first(cfg: CompareConfig, todo: list[tuple[str, int]]) -> list[tuple[str, int]]:
    """The pairs in the order to submit them: longest expected first (so the last to start are short and the
    workers finish together), ties and unknown durations in their given order."""
    if any(pair_seconds(cfg, a) is None for a, _ in todo):
        return list(todo)
    return sorted(todo, key=lambda p: -pair_seconds(cfg, p[0]))  # sorted() is stable


def expected_seconds(cfg: CompareConfig, todo: list[tuple[str, int]], start_cached: bool) -> float | None:
    """The comparison's expected wall time (`pair_seconds` per pair; pairs go to the first free of `workers`
    in the order given), plus the start checkpoint when it is not cached; None where a pair's is unknown."""
    secs = [pair_seconds(cfg, a) for a, _ in todo]
    if any(x is None for x in secs):
        return None
    free = [0.0] * max(1, min(cfg.workers, len(todo)))
    for x in secs:
        k = free.index(min(free))
        free[k] += x
    return max(free) + (0.0 if start_cached else START_SECONDS)


def start_is_cached(cfg: CompareConfig) -> bool:
    from experiments.common import resolve_tasks, rft_path, task_split

    return (rft_path(cfg, task_split(cfg, resolve_tasks(cfg.tasks, cfg.env.backend))[0]) / "done").exists()


def prepare_start(cfg: CompareConfig) -> dict[str, Any]:
    """Train (or load) the shared RFT checkpoint once, before the pairs start; returns its metrics rows."""
    from experiments.common import make_envs, resolve_tasks, task_split
    from experiments.recipe import load_or_train_rft

    tasks, _ = task_split(cfg, resolve_tasks(cfg.tasks, cfg.env.backend))
    envs = make_envs(cfg)
    try:
        _, row = load_or_train_rft(cfg, tasks, envs)
    finally:
        envs.close()
    return row


def _start_from_dict(cfg_dict: dict[str, Any]) -> dict[str, Any]:
    """prepare_start in a worker process (its config passed as a dict, as run_pair's is)."""
    return prepare_start(worker_config(cfg_dict))


def start_row(cfg: CompareConfig) -> dict[str, Any]:
    """The RFT start's metrics row: prepare_start, run in a process of its own when the start must be trained
    and the pairs run in workers. Training it holds several GB (the rounds' rollouts and success pool, ~3.4 GB
    on the 116 tasks) that this process would otherwise keep, idle, beside every pair it waits on."""
    if cfg.workers <= 1 or start_is_cached(cfg):
        return prepare_start(cfg)
    with worker_pool(1) as ex:
        return ex.submit(_start_from_dict, as_dict(cfg)).result()


# ------------------------------------------------------------------------------------------------------------
# Main
# ------------------------------------------------------------------------------------------------------------
def main(argv: Sequence[str] | None = None) -> Path:
    cfg = parse_compare(sys.argv[1:] if argv is None else argv)
    names = list(cfg.algo)
    from algos.folders import entry_point_folder, record_made_by
    from algos.loop import NonFiniteError
    from algos.run import RunFolderError, lock_folder
    from experiments.common import make_algorithm, resolve_tasks, task_split

    task_split(cfg, resolve_tasks(cfg.tasks, cfg.env.backend))  # every argument is checked before the folder
    # is touched
    for a in names:
        if a != SB3:
            make_algorithm(cfg, a)
    out = entry_point_folder(cfg.out_dir or f"runs/compare-{'-'.join(names)}", "compare", "compare")
    try:
        lock = lock_folder(out)
        record_made_by(out, "compare")
    except RunFolderError as e:
        raise SystemExit(f"compare: {e}") from None
    try:
        return _compare(cfg, names, out)
    except (NonFiniteError, RunFolderError) as e:  # a pair's training went non-finite (its last good
        # checkpoint is kept), a link inside the folder, a pair of another config (also from a worker)
        raise SystemExit(f"compare: {e}") from None
    finally:
        lock.close()


def _compare(cfg: CompareConfig, names: list[str], out: Path) -> Path:
    """The comparison in its (locked) folder: the start checkpoint, the pairs, the outputs."""
    from algos.run import atomic_write_text, pin_cpu_numerics

    cfg_dict = as_dict(cfg)
    atomic_write_text(out / "config.json", json.dumps(cfg_dict, indent=2, sort_keys=True, default=str))
    pin_cpu_numerics(cfg.torch_threads)
    t0 = time.perf_counter()
    pairs = [(a, s) for a in names for s in range(cfg.seeds)]
    todo = longest_first(cfg, [(a, s) for a, s in pairs if pair_status(cfg, a, s, out) != "done"])
    need_start = any(a != SB3 for a in names)
    eta = expected_seconds(cfg, todo, start_cached=not need_start or start_is_cached(cfg))
    if eta is not None:
        print(f"compare: expected duration ~{eta / 60:.0f} min on a 2-core machine like ours (the small "
              "policy's measured rates; see experiments/compare.py: PAIR_SECONDS)")
    start = start_row(cfg) if need_start else None
    print(f"compare: {len(pairs)} algorithm-seed pairs ({len(pairs) - len(todo)} already done), "
          f"budget {cfg.budget} env steps each, {cfg.workers} workers; folder {out}")
    if cfg.workers <= 1 or len(todo) <= 1:
        for a, s in todo:
            run_pair(cfg_dict, a, s, str(out))
            print(f"  done {a} seed {s} ({time.perf_counter() - t0:.0f} s into the comparison)")
    else:
        with worker_pool(cfg.workers) as ex:
            futs = {ex.submit(run_pair, cfg_dict, a, s, str(out)): (a, s) for a, s in todo}
            for f in cf.as_completed(futs):
                a, s = futs[f]
                f.result()  # a failing pair stops the comparison with its own traceback
                print(f"  done {a} seed {s} ({time.perf_counter() - t0:.0f} s into the comparison)")
    from experiments.report import write_outputs

    write_outputs(out, names, cfg.seeds, start)
    print(f"compare: finished in {time.perf_counter() - t0:.0f} s; see {out}/table.md and {out}/report.html")
    return out


if __name__ == "__main__":
    main()
