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
from typing import Any

from experiments.config import TrainConfig, parse, run_config


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    cfg = parse(sys.argv[1:] if argv is None else argv, TrainConfig, "train")
    from algos.folders import entry_point_folder
    from algos.loop import NonFiniteError
    from algos.run import RunFolderError, pin_cpu_numerics, read_metrics
    from experiments.recipe import train_run

    out = entry_point_folder(cfg.out_dir or f"runs/{cfg.algo}-s{cfg.seed}", "train", "train")
    if (out / "checkpoint.json").exists() and not cfg.resume:
        raise SystemExit(
            f"{out} already holds a run; pass resume=true to continue it or choose another out_dir"
        )
    pin_cpu_numerics(cfg.torch_threads)
    t0 = time.perf_counter()
    try:  # the recipe every run shares (experiments/recipe.py): envs, start, demos, RFT pool, the loop
        last = train_run(cfg, cfg.algo, cfg.seed, out, config=run_config(cfg), budget=cfg.budget,
                         group=cfg.algo, name=f"{cfg.algo}-s{cfg.seed}", made_by="train")
    except (RunFolderError, NonFiniteError) as e:
        raise SystemExit(f"train: {e}") from None
    evals = [r for r in read_metrics(out / "metrics.jsonl") if r.get("pass_at_1") is not None]
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
