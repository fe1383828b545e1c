"""AndroidWorld Pass@1 of a policy on the held-out suite, over several noise seeds, with a per-task table.

python experiments/evaluate.py policy_path=runs/rft-s0/checkpoints/it_4/policy [seeds=3] [n_per_task=2]
python experiments/evaluate.py policy=expert      # the experts' ceiling
"""

from __future__ import annotations

import dataclasses
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from algos.evaluation import evaluate  # noqa: E402
from algos.policies.base import load_policy, make_policy  # noqa: E402
from experiments.common import make_envs, resolve_tasks  # noqa: E402
from experiments.config import parse  # noqa: E402


@dataclasses.dataclass
class EvalConfig:
    policy: str = "small"  # small | hf | expert | random
    policy_path: str = ""  # a saved policy folder (small / hf)
    tasks: str = "all"
    seeds: int = 3  # noise seeds: Pass@1 is reported as mean and spread over them
    n_per_task: int = 2
    num_envs: int = 16
    vector: str = "sync"
    render_scale: float = 0.0
    noise: str = "default"
    progress: bool = True
    out: str = ""  # optional JSON file for the results


def main(argv: list[str] | None = None) -> dict:
    cfg = parse(sys.argv[1:] if argv is None else argv, EvalConfig)
    tasks = resolve_tasks(cfg.tasks)
    if cfg.policy in ("small", "hf") and not cfg.policy_path:
        raise SystemExit(f"policy={cfg.policy} needs policy_path=<saved policy folder>")
    policy = load_policy(cfg.policy, cfg.policy_path) if cfg.policy_path else make_policy(cfg.policy)
    envs = make_envs(cfg)
    runs = [
        evaluate(policy, envs, tasks, cfg.n_per_task, seed=s, progress=cfg.progress) for s in range(cfg.seeds)
    ]
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
