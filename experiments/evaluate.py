"""AndroidWorld Pass@1 of a policy on the held-out suite, over several noise seeds, with a per-task table.

    python experiments/evaluate.py policy.path=runs/rft-s0 [seeds=3] [eval_n_per_task=4]   # a run's latest
    python experiments/evaluate.py policy=expert                                            # the ceiling
    voyager-train evaluate --help   # every key, its type, default and meaning
"""

from __future__ import annotations

import json
import statistics
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from experiments.config import EvalConfig, parse


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    cfg = parse(sys.argv[1:] if argv is None else argv, EvalConfig, "evaluate")
    from algos.evaluation import evaluate
    from algos.policies.registry import make_policy
    from algos.run import pin_cpu_numerics
    from experiments.common import load_saved_policy, make_envs, resolve_tasks, suite_backend, task_split
    from voyager_gym.env import app_names

    tasks = resolve_tasks(cfg.tasks, cfg.env.backend)
    if cfg.split == "tasks":  # the tasks a run with the same split never trained on
        tasks = task_split(cfg, tasks)[1]
    pin_cpu_numerics(cfg.torch_threads)  # the kernels training used: the same greedy actions, the same Pass@1
    envs = make_envs(cfg)
    try:
        policy = (load_saved_policy(cfg) if cfg.policy.path
                  else make_policy(cfg.policy.name, app_names=app_names(envs)))
        runs = [
            evaluate(policy, envs, tasks, cfg.eval_n_per_task, seed=s, progress=cfg.progress,
                     backend=suite_backend(cfg))
            for s in range(cfg.seeds)
        ]
    finally:
        envs.close()
    scores = [r["pass_at_1"] for r in runs]
    per_task = {t: statistics.mean(r["per_task"].get(t, float("nan")) for r in runs) for t in tasks}
    result = {
        "pass_at_1_mean": statistics.mean(scores),
        "pass_at_1_std": statistics.pstdev(scores),
        "pass_at_1_by_seed": scores,
        "per_task": per_task,
        "episodes": sum(r["episodes"] for r in runs),
        "errored": sum(r["errored"] for r in runs),
    }
    width = max(len(t) for t in tasks)
    for t in tasks:
        print(f"{t:<{width}}  {per_task[t]:.2f}")
    print(
        f"Pass@1 {result['pass_at_1_mean']:.3f} ± {result['pass_at_1_std']:.3f} over {cfg.seeds} seeds "
        f"({result['episodes']} episodes, {result['errored']} errored)"
    )
    if cfg.out:
        Path(cfg.out).write_text(json.dumps(result, indent=2))
    return result


if __name__ == "__main__":
    main()
