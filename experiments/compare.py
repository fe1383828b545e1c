"""The paper's comparison under one harness: every algorithm from the same RFT checkpoint, the same budget.

    python experiments/compare.py algo=grsd,grpo,ppo [seeds=2] [budget=ENV_STEPS] [preset=default|smoke]
                                  [tasks=...] [policy=small|hf] [out_dir=PATH] [workers=2] [any train key]

1. The RFT checkpoint (the base policy, then RFT) is trained once and cached; every run starts from it.
2. Each (algorithm, seed) pair trains with the same budget of environment steps through the same loop
   (algos/loop.py): the same training instances, Pass@1 on the same held-out instances after every
   `eval_every` iterations. Pairs run in `workers` processes; a pair that finished is never rerun, a pair that
   was killed resumes from its last checkpoint.
3. The run folder gets metrics.jsonl (every pair's rows), curves.png (Pass@1 against env steps, mean and 95%
   t-interval across seeds), table.md, report.html (self-contained) and one wandb run per pair, grouped by the
   comparison (offline unless wandb=online).
"""

from __future__ import annotations

import concurrent.futures as cf
import dataclasses
import json
import multiprocessing as mp
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from omegaconf import OmegaConf  # noqa: E402

from experiments.config import TrainConfig, as_dict, parse  # noqa: E402

SB3 = "sb3-ppo"
PRESETS: dict[str, list[str]] = {
    # all 77 tasks, 2 seeds, ~20 minutes on 2 cores with the small policy (the RFT checkpoint, ~9 of them,
    # is cached for later runs); one instance per task per iteration, so each run gets ~4 updates
    "default": [
        "grsd.instances_per_iter=77",
        "grpo.instances_per_iter=77",
        "ppo.instances_per_iter=77",
    ],
    # a handful of short tasks, tiny budgets: the whole pipeline in under 2 minutes (tests, first contact)
    "smoke": [
        "tasks=SystemWifiTurnOn,SystemBluetoothTurnOff,OpenAppTaskEval,SystemBrightnessMaxVerify",
        "seeds=2",
        "budget=240",
        "num_envs=8",
        "eval_n_per_task=2",
        "base.demos_per_task=2",
        "base.epochs=4",
        "rft.iterations=1",
        "rft.instances_per_iter=4",
        "rft.group_size=4",
        "grsd.instances_per_iter=4",
        "grsd.group_size=4",
        "grpo.instances_per_iter=4",
        "grpo.group_size=4",
        "ppo.instances_per_iter=4",
        "ppo.group_size=4",
        "sb3_budget=256",
    ],
}


@dataclasses.dataclass
class CompareConfig(TrainConfig):
    algo: str = "grsd,grpo,ppo"  # comma-separated: rft, grsd, grpo, ppo, sb3-ppo
    preset: str = "default"  # default | smoke
    seeds: int = 2  # seeds per algorithm (0..seeds-1)
    budget: int = 16_000  # environment steps per algorithm and seed
    eval_every: int = 1  # evaluate every this many iterations (each algorithm's own iteration size)
    workers: int = 2  # algorithm-seed pairs trained in parallel processes
    sb3_budget: int = 20_000  # sb3-ppo's env steps (it trains on the simple tasks only, see algos/sb3_ppo.py)
    name: str = ""  # comparison name (wandb group); default: the run folder's name


def parse_compare(argv: list[str]) -> CompareConfig:
    """Preset values first, then the user's overrides (which win)."""
    preset = next((a.split("=", 1)[1] for a in argv if a.startswith("preset=")), "default")
    if preset not in PRESETS:
        raise SystemExit(f"unknown preset {preset!r}; expected one of {', '.join(PRESETS)}")
    return parse([*PRESETS[preset], *argv], CompareConfig)


def algorithms(cfg: CompareConfig) -> list[str]:
    from experiments.common import ALGORITHMS

    names = [a.strip() for a in cfg.algo.split(",") if a.strip()]
    bad = [a for a in names if a not in ALGORITHMS and a != SB3]
    if not names or bad:
        raise SystemExit(
            f"algo={cfg.algo!r}: expected a comma-separated list of {', '.join([*ALGORITHMS, SB3])}"
        )
    return names


# ------------------------------------------------------------------------------------------------------------
# One (algorithm, seed) pair, in its own process
# ------------------------------------------------------------------------------------------------------------
def run_pair(cfg_dict: dict[str, Any], algo: str, seed: int, out: str) -> str:
    """Train `algo` with `seed` from the cached RFT checkpoint for the budget (resumable); its folder."""
    cfg = OmegaConf.to_object(OmegaConf.merge(OmegaConf.structured(CompareConfig), cfg_dict))
    import torch

    from algos.loop import train_loop
    from algos.run import Run
    from experiments.common import load_or_train_rft, make_algorithm, make_envs, resolve_tasks, suite_backend

    torch.set_num_threads(cfg.torch_threads)
    pair = Path(out) / "runs" / f"{algo}-s{seed}"
    if (pair / "done").exists():
        return str(pair)
    tasks = resolve_tasks(cfg.tasks, cfg.env.backend)
    if algo == SB3:  # trains from scratch through the fixed-size wrapper, on the simple tasks by default
        from algos import sb3_ppo

        sb3_ppo.train(cfg.sb3_budget, seed=seed, tasks=None if cfg.tasks in ("all", "") else tasks,
                      eval_n_per_task=cfg.eval_n_per_task, out_dir=pair, wandb_mode=cfg.wandb)
    else:
        run = Run(pair, {**cfg_dict, "algo": algo, "seed": seed}, wandb_mode=cfg.wandb,
                  group=cfg.name or Path(out).name, name=f"{algo}-s{seed}")
        try:
            a = make_algorithm(cfg, algo)
            a.cfg.eval_every = cfg.eval_every
            envs = make_envs(cfg, pixels=getattr(a, "needs_pixels", False))
            try:
                policy, _ = load_or_train_rft(cfg, tasks, envs)
                train_loop(a, policy, envs, run, tasks, seed, cfg.eval_n_per_task, progress=False,
                           max_env_steps=cfg.budget, suite_backend=suite_backend(cfg))
            finally:
                envs.close()
        finally:
            run.close()
    (pair / "done").write_text(json.dumps({"finished": time.time()}))
    return str(pair)


def prepare_start(cfg: CompareConfig) -> dict[str, Any]:
    """Train (or load) the shared RFT checkpoint once, before the pairs start; returns its metrics rows."""
    from experiments.common import load_or_train_rft, make_envs, resolve_tasks

    tasks = resolve_tasks(cfg.tasks, cfg.env.backend)
    envs = make_envs(cfg)
    try:
        _, row = load_or_train_rft(cfg, tasks, envs)
    finally:
        envs.close()
    return row


# ------------------------------------------------------------------------------------------------------------
# Main
# ------------------------------------------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> Path:
    cfg = parse_compare(sys.argv[1:] if argv is None else argv)
    names = algorithms(cfg)
    out = Path(cfg.out_dir or f"runs/compare-{'-'.join(names)}")
    out.mkdir(parents=True, exist_ok=True)
    cfg_dict = as_dict(cfg)
    (out / "config.json").write_text(json.dumps(cfg_dict, indent=2, sort_keys=True, default=str))
    import torch

    torch.set_num_threads(cfg.torch_threads)
    t0 = time.perf_counter()
    start = prepare_start(cfg) if any(a != SB3 for a in names) else None
    pairs = [(a, s) for a in names for s in range(cfg.seeds)]
    todo = [(a, s) for a, s in pairs if not (out / "runs" / f"{a}-s{s}" / "done").exists()]
    print(f"compare: {len(pairs)} algorithm-seed pairs ({len(pairs) - len(todo)} already done), "
          f"budget {cfg.budget} env steps each, {cfg.workers} workers; folder {out}")
    if cfg.workers <= 1 or len(todo) <= 1:
        for a, s in todo:
            run_pair(cfg_dict, a, s, str(out))
            print(f"  done {a} seed {s} ({time.perf_counter() - t0:.0f} s)")
    else:
        with cf.ProcessPoolExecutor(max_workers=cfg.workers, mp_context=mp.get_context("spawn")) as ex:
            futs = {ex.submit(run_pair, cfg_dict, a, s, str(out)): (a, s) for a, s in todo}
            for f in cf.as_completed(futs):
                a, s = futs[f]
                f.result()  # a failing pair stops the comparison with its own traceback
                print(f"  done {a} seed {s} ({time.perf_counter() - t0:.0f} s)")
    from experiments.report import write_outputs

    write_outputs(out, names, cfg.seeds, start)
    print(f"compare: finished in {time.perf_counter() - t0:.0f} s; see {out}/table.md and {out}/report.html")
    return out


if __name__ == "__main__":
    main()
