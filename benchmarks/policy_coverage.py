"""How many tasks' solutions a policy can express: every expert action encoded as the policy's training
target and decoded back (`algos/policies/coverage.py`), on `--seeds` training instances per task.

Per task: the share of expert steps that are representable, instances whose every step decodes to the
expert's own action (exact), and instances the expert still completes when it acts only through decoded
actions (solved). A task is covered when all its instances are solved. Representability depends on the
action space, not on the weights, so an untrained policy is used. Target (issue "Headroom"): >= 95% of tasks.

    python benchmarks/policy_coverage.py [--policy small] [--seeds 20] [--tasks A,B] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import time
from collections import Counter


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--policy", default="small", help="policy name (algos.policies.registry.make_policy)")
    p.add_argument("--seeds", type=int, default=20, help="training instances per task")
    p.add_argument("--tasks", default="", help="comma-separated task names (default: every task)")
    p.add_argument("--json", default="", help="write the per-task figures to this file")
    p.add_argument("--memory", type=int, default=0,
                   help="policy small: elements of earlier screens it reads (SmallPolicy(memory=...))")
    args = p.parse_args(argv)

    from algos.policies.coverage import task_coverage
    from algos.policies.registry import make_policy
    from voyager_gym import catalogue
    from voyager_gym.env import app_names

    policy = make_policy(args.policy, app_names=app_names("simdroid"),
                         **({"memory": args.memory} if args.memory else {}))
    tasks = [t for t in args.tasks.split(",") if t] or list(catalogue.names())
    t0 = time.perf_counter()
    rows = [task_coverage(policy, t, seeds=args.seeds) for t in tasks]
    width = max(len(t) for t in tasks)
    print(f"{'task':<{width}}  steps ok  exact  solved  expert  why not (steps)")
    reasons: Counter = Counter()
    for r in rows:
        reasons.update(r.reasons)
        why = "; ".join(f"{k}: {v}" for k, v in r.reasons.most_common())
        share = r.representable_steps / max(1, r.steps)
        print(f"{r.task:<{width}}  {share:7.0%}  {r.exact:>2}/{r.instances:<2} "
              f"{r.solved:>3}/{r.instances:<2} {r.expert_solved:>3}/{r.instances:<2}  {why}")
    covered = [r.task for r in rows if r.covered]
    steps = sum(r.steps for r in rows)
    ok = sum(r.representable_steps for r in rows)
    print(f"\ncovered (every instance the expert solves, solved through the policy's actions): "
          f"{len(covered)}/{len(rows)} tasks "
          f"({len(covered) / len(rows):.0%}); exact on every instance: "
          f"{sum(r.exact == r.instances for r in rows)}/{len(rows)}; representable steps {ok}/{steps} "
          f"({ok / max(1, steps):.1%}); {time.perf_counter() - t0:.0f} s")
    print("steps not representable, by reason: " + ", ".join(f"{k} {v}" for k, v in reasons.most_common()))
    print("tasks not covered: " + (", ".join(r.task for r in rows if not r.covered) or "none"))
    result = {"policy": args.policy, "memory": args.memory, "seeds": args.seeds, "covered": len(covered),
              "tasks": len(rows),
              "per_task": {r.task: {"instances": r.instances, "exact": r.exact, "solved": r.solved,
                                    "expert_solved": r.expert_solved, "steps": r.steps,
                                    "representable_steps": r.representable_steps, "reasons": dict(r.reasons)}
                           for r in rows}}
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=2)
    return result


if __name__ == "__main__":
    main()
