"""Train the base policy by behaviour cloning on a limited set of expert demonstrations, and evaluate it.

    python experiments/pretrain.py [policy=small] [base.demos_per_task=4] [base.epochs=8] [seed=0] ...
    voyager-train pretrain --help   # every key, its type, default and meaning

The base is what RFT (and every later algorithm) starts from, sized so that it starts where the paper's base
model did: Pass@1 between 25% and 45% on the held-out split. It is cached under `cache_dir` by the hash of
its recipe (policy, demonstrations, epochs, lr, tasks, observation settings, seed), so `train.py` reuses it;
the same recipe and seed give the same weights.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from typing import Any

from experiments.config import PretrainConfig, parse


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    cfg = parse(sys.argv[1:] if argv is None else argv, PretrainConfig, "pretrain")
    from algos.evaluation import evaluate
    from algos.run import pin_cpu_numerics, seed_everything
    from experiments.common import (
        base_path,
        load_or_train_base,
        make_envs,
        resolve_tasks,
        suite_backend,
        task_split,
    )

    tasks, _ = task_split(cfg, resolve_tasks(cfg.tasks))  # split=tasks: the base of the training tasks
    # the same kernels and threads as train.py and compare.py: a base cached by this entry point must be the
    # one they would have trained under the same recipe key
    pin_cpu_numerics(cfg.torch_threads)
    envs = make_envs(cfg)
    t0 = time.perf_counter()
    try:
        policy = load_or_train_base(cfg, tasks, envs)
        trained = time.perf_counter() - t0
        seed_everything(cfg.seed)
        ev = evaluate(policy, envs, tasks, cfg.eval_n_per_task, seed=cfg.seed, progress=cfg.progress,
                      backend=suite_backend(cfg))
    finally:
        envs.close()
    print(
        f"base policy {base_path(cfg, tasks)} ({trained:.0f} s to train or load): "
        f"Pass@1 {ev['pass_at_1']:.3f} on {ev['episodes']} held-out episodes"
    )
    return ev


if __name__ == "__main__":
    main()
