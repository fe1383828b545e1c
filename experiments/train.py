"""Train one algorithm on SimDroid (or any backend) from the base policy.

    python experiments/train.py algo=rft [out_dir=runs/rft-s0] [seed=0] [rft.iterations=4] [policy=hf] ...
    voyager-train train --help      # every key, its type, default and meaning

Writes out_dir/metrics.jsonl (one row per evaluation, with pass_at_1), checkpoints, and a wandb run (offline
unless wandb=online). Run the same command again after a kill to resume from the last checkpoint.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from experiments.config import TrainConfig, parse, run_config


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    cfg = parse(sys.argv[1:] if argv is None else argv, TrainConfig, "train")
    from algos.loop import train_loop
    from algos.run import Run, RunFolderError, pin_cpu_numerics
    from experiments.common import (
        hand_demos,
        hand_rft_pool,
        load_or_train_base,
        load_or_train_rft,
        load_saved_policy,
        make_algorithm,
        make_algorithm_envs,
        resolve_tasks,
        suite_backend,
        task_split,
    )

    algo = make_algorithm(cfg)
    out = Path(cfg.out_dir or f"runs/{cfg.algo}-s{cfg.seed}")
    if (out / "checkpoint.json").exists() and not cfg.resume:
        raise SystemExit(
            f"{out} already holds a run; pass resume=true to continue it or choose another out_dir"
        )
    tasks, heldout = task_split(cfg, resolve_tasks(cfg.tasks, cfg.env.backend))
    pin_cpu_numerics(cfg.torch_threads)
    try:
        run = Run(out, run_config(cfg), wandb_mode=cfg.wandb, group=cfg.algo, name=f"{cfg.algo}-s{cfg.seed}")
    except RunFolderError as e:
        raise SystemExit(f"train: {e}") from None
    envs = make_algorithm_envs(cfg, algo)
    t0 = time.perf_counter()
    try:
        if cfg.policy.path:
            if getattr(algo.cfg, "rft_pool", False):  # nothing says that policy came from the RFT start
                print(f"{cfg.algo}.rft_pool: policy.path={cfg.policy.path!r} is not the RFT start "
                      f"checkpoint, so {cfg.algo}'s success pool starts empty")
            policy = load_saved_policy(cfg)
            print(f"starting {cfg.algo} from {cfg.policy.path}")
        elif cfg.algo == "rft":
            policy = load_or_train_base(cfg, tasks, envs)
        else:  # later stages start from the RFT checkpoint, as in the paper
            policy, start = load_or_train_rft(cfg, tasks, envs)
            print(f"starting {cfg.algo} from the RFT checkpoint (Pass@1 {start['pass_at_1']:.3f})")
            hand_rft_pool(algo, cfg, tasks)  # grsd.rft_pool: RFT's successes to start from
        hand_demos(algo, cfg, tasks, envs)  # rft.demos / grsd.demos: the base's demonstrations
        _, last = train_loop(
            algo, policy, envs, run, tasks, cfg.seed, cfg.eval_n_per_task, progress=cfg.progress,
            max_env_steps=cfg.budget, suite_backend=suite_backend(cfg), heldout_tasks=heldout,
        )
    finally:
        envs.close()
        run.close()
    evals = [r for r in run.metrics() if r.get("pass_at_1") is not None]
    if not evals:  # every row was damaged (reported above): say so rather than fail on an empty list
        print(f"{cfg.algo}: {out / 'metrics.jsonl'} holds no evaluation rows; run folder {out}")
        return last
    print(
        f"{cfg.algo}: Pass@1 {evals[0]['pass_at_1']:.3f} -> {evals[-1]['pass_at_1']:.3f} over "
        f"{evals[-1]['iteration']} iterations, {evals[-1]['env_steps']} env steps, "
        f"{time.perf_counter() - t0:.0f} s; run folder {out}"
    )
    return last


if __name__ == "__main__":
    main()
