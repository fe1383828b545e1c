"""Env throughput: expert rollouts over every task through VoyagerEnv, in one process (one core).

Prints steady-state env steps per second, after one warm-up pass over the tasks with other seeds
(the time inside reset/step, rendering and noise included; the expert's own
thinking time is reported apart) at full and half render scale and elements-only, and the ratio against a
real emulator's ~3 s per step, measured as a reference figure in the same units.

    python benchmarks/env_throughput.py [--seeds 3] [--tasks A,B] [--noise default]
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

EMULATOR_S_PER_STEP = 3.0  # AndroidWorld on a real emulator: 2-5 s per agent step


def run(
    scale: float, mode: str, tasks: list[str], seeds: int, noise: str, warmup: int = 1
) -> dict[str, float]:
    """Steady-state throughput: `warmup` seeds first warm the text, tile and frame caches (not counted)."""
    from voyager_gym.env import VoyagerEnv

    env = VoyagerEnv(render_scale=scale, noise=noise, observation_mode=mode)
    for seed in range(warmup):
        for name in tasks:
            env.reset(seed=10_000 + seed, options={"task": name, "instance_seed": 10_000 + seed})
            while True:
                _, _, term, trunc, _ = env.step(env.expert_action())
                if term or trunc:
                    break
    env.backend.renderer.stats.update(hits=0, misses=0)
    env_time = expert_time = 0.0
    steps = episodes = successes = 0
    for seed in range(seeds):
        for name in tasks:
            t0 = time.perf_counter()
            env.reset(seed=seed, options={"task": name, "instance_seed": 500 + seed})
            env_time += time.perf_counter() - t0
            episodes += 1
            while True:
                t0 = time.perf_counter()
                a = env.expert_action()
                t1 = time.perf_counter()
                _, r, term, trunc, info = env.step(a)
                t2 = time.perf_counter()
                expert_time += t1 - t0
                env_time += t2 - t1
                steps += 1
                if term or trunc:
                    successes += int(info["success"])
                    break
    return {
        "steps": steps,
        "episodes": episodes,
        "success": successes / max(1, episodes),
        "env_steps_per_s": steps / env_time,
        "expert_ms": 1000 * expert_time / steps,
        "hits": env.backend.renderer.stats["hits"],
        "misses": env.backend.renderer.stats["misses"],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--tasks", default=None)
    ap.add_argument("--noise", default="default")
    args = ap.parse_args()
    from voyager_gym import catalogue

    tasks = args.tasks.split(",") if args.tasks else list(catalogue.names())
    # Reference measured in the same run: the cost of writing one full frame (a copy of a real-looking frame
    # into a reused buffer, as the renderer's pool does), the floor of any new pixel observation. Not zeros:
    # a calloc'd source reads one shared zero page and copies several times faster than any real frame.
    frames = [np.random.default_rng(k).integers(0, 256, (2400, 1080, 3), dtype=np.uint8) for k in range(4)]
    out = np.empty_like(frames[0])
    np.copyto(out, frames[0])
    t0 = time.perf_counter()
    for i in range(200):
        np.copyto(out, frames[i % 4])
    copy_ms = (time.perf_counter() - t0) / 200 * 1000
    print(
        f"{len(tasks)} tasks x {args.seeds} seeds, noise={args.noise}, "
        f"cpu count {os.cpu_count()} (1 process = 1 core)"
    )
    print(
        f"reference: full-frame copy {copy_ms:.2f} ms ({1000 / copy_ms:.0f}/s ceiling); emulator "
        f"{EMULATOR_S_PER_STEP} s/step ({1 / EMULATOR_S_PER_STEP:.2f} steps/s)"
    )
    print(
        f"{'config':<22}{'steps':>7}{'success':>9}{'env steps/s/core':>18}{'x emulator':>12}{'expert ms':>11}"
        f"{'frame hits':>12}"
    )
    for label, scale, mode in (
        ("full scale (1.0)", 1.0, "full"),
        ("half scale (0.5)", 0.5, "full"),
        ("elements only", 1.0, "elements"),
    ):
        r = run(scale, mode, tasks, args.seeds, args.noise)
        ratio = r["env_steps_per_s"] * EMULATOR_S_PER_STEP
        hit = r["hits"] / max(1, r["hits"] + r["misses"])
        print(
            f"{label:<22}{r['steps']:>7}{r['success']:>9.2f}{r['env_steps_per_s']:>18.0f}{ratio:>11.0f}x"
            f"{r['expert_ms']:>11.2f}{hit:>12.0%}"
        )


if __name__ == "__main__":
    main()
