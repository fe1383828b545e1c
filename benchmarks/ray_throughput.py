"""Rollout throughput: RayVectorEnv against gymnasium's AsyncVectorEnv with the same number of workers.

Both run `algos.rollout.collect` (continuous batching, masked resets) over the same task instances with the
same policy and seeds, elements-only and with pixels; the script checks that the trajectories are identical
and prints env steps per second (policy and rollout bookkeeping included) and the Ray / Async ratio.

    python benchmarks/ray_throughput.py [--workers 2] [--policy expert|random] [--scales 0,0.25,0.5]
                                        [--instances 12] [--group-size 4] [--address auto]
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repo root, so the package imports whole
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")

TASKS = [
    "SystemWifiTurnOn",
    "SystemBluetoothTurnOff",
    "TurnOffWifiAndTurnOnBluetooth",
    "OpenAppTaskEval",
    "ContactsAddContact",
    "MarkorCreateNote",
]


def env_kwargs(scale: float) -> dict[str, Any]:
    if scale <= 0:
        return {"observation_mode": "elements", "noise": "default"}
    return {"observation_mode": "full", "render_scale": scale, "noise": "default"}


def make_policy(name: str, envs: Any) -> Any:
    """The expert, or a random policy over the envs' open_app vocabulary."""
    from algos.policies.registry import make_policy as make
    from voyager_gym.env import app_names

    return make(name, app_names=app_names(envs), **({} if name == "expert" else {"seed": 0}))


def signature(groups: list) -> list:
    return [
        (t.traj_id, None if math.isnan(t.score) else t.score, [(s.response, s.screen_key) for s in t.steps])
        for g in groups
        for t in g.trajectories
    ]


def run(kind: str, workers: int, scale: float, policy: str, insts: list, group_size: int) -> dict[str, Any]:
    """Build the vector env, warm it up on one instance, then time one `collect` over all instances."""
    from algos.rollout import RolloutConfig, collect
    from voyager_gym.vector import make_vec

    t0 = time.perf_counter()
    envs = make_vec(workers, "async" if kind == "async" else "ray", **env_kwargs(scale))
    startup = time.perf_counter() - t0
    try:
        collect(make_policy(policy, envs), envs, insts[:1], RolloutConfig(group_size=workers, seed=99))
        t0 = time.perf_counter()
        groups = collect(make_policy(policy, envs), envs, insts, RolloutConfig(group_size=group_size, seed=0))
        wall = time.perf_counter() - t0
    finally:
        envs.close()
    steps = sum(len(t.steps) for g in groups for t in g.trajectories)
    return {
        "startup_s": startup,
        "wall_s": wall,
        "steps": steps,
        "steps_per_s": steps / wall,
        "sig": signature(groups),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--policy", choices=["expert", "random"], default="expert")
    ap.add_argument("--scales", default="0,0.25,0.5", help="render scales; 0 = elements only (no pixels)")
    ap.add_argument("--instances", type=int, default=12)
    ap.add_argument("--group-size", type=int, default=4)
    ap.add_argument("--address", default=None, help="Ray cluster address (default: start a local one)")
    args = ap.parse_args()

    import ray

    from voyager_gym.suites import TrainGenerator

    t0 = time.perf_counter()
    if args.address:
        ray.init(address=args.address, logging_level="warning")
    else:
        ray.init(num_cpus=os.cpu_count(), include_dashboard=False, logging_level="warning")
    ray_init_s = time.perf_counter() - t0
    insts = TrainGenerator(TASKS, seed=0).take(args.instances)
    print(
        f"{args.instances} instances x G={args.group_size}, policy={args.policy}, workers={args.workers}, "
        f"cpu count {os.cpu_count()}, ray {ray.__version__} (ray.init {ray_init_s:.1f} s)"
    )
    print(
        f"{'observation':<18}{'backend':<8}{'startup s':>10}{'steps':>7}{'wall s':>8}{'env steps/s':>13}"
        f"{'identical':>11}"
    )
    ratios = []
    for scale in [float(s) for s in args.scales.split(",")]:
        label = "elements only" if scale <= 0 else f"pixels x{scale:g}"
        res = {k: run(k, args.workers, scale, args.policy, insts, args.group_size) for k in ("async", "ray")}
        same = res["async"]["sig"] == res["ray"]["sig"]
        for k, r in res.items():
            print(
                f"{label:<18}{k:<8}{r['startup_s']:>10.2f}{r['steps']:>7}{r['wall_s']:>8.2f}"
                f"{r['steps_per_s']:>13.0f}{'yes' if same else 'NO':>11}"
            )
        ratios.append((label, res["ray"]["steps_per_s"] / res["async"]["steps_per_s"]))
    print("ratio Ray / Async env steps/s: " + ", ".join(f"{lab} {r:.2f}x" for lab, r in ratios))
    ray.shutdown()


if __name__ == "__main__":
    main()
