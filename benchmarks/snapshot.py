"""Snapshot + restore cost over every task, against one env step measured in the same run.

For each task the expert plays an episode to find its length, then replays it to the middle: a typical
mid-episode state. There the benchmark times `env.snapshot()` and `env.restore(snapshot)` (in-process: what
a sync or pipelined sub-env pays), the pickled size, and the cross-process path (pickle, unpickle, restore:
the receiver re-renders the screen). The reference is the mean `env.step` of the same episodes (and, with
pixels, one copy of the frame: what any pixel observation costs at least). Targets:
snapshot + restore <= 1 ms and <= 200 KB pickled.

    python benchmarks/snapshot.py [--tasks A,B] [--repeats 20] [--configs train,full,elements]
"""

from __future__ import annotations

import argparse
import pickle
import time
import timeit

import numpy as np

CONFIGS = {  # name -> VoyagerEnv settings
    "train": {"render_scale": 0.25},  # what training runs (experiments/config.py: env.screen_scale)
    "full": {"render_scale": 1.0},
    "elements": {"observation_mode": "elements"},
}
TARGET_MS, TARGET_KB = 1.0, 200.0


def _timed(fn, repeats: int) -> float:
    """Median seconds of `fn()` over `repeats` calls."""
    return float(np.median(timeit.repeat(fn, number=1, repeat=repeats)))


def measure(settings: dict, tasks: list[str], repeats: int) -> dict[str, np.ndarray]:
    """Per task: step, snapshot, restore and cross-process restore seconds, and pickled bytes."""
    from voyager_gym.env import VoyagerEnv

    env = VoyagerEnv(**settings)
    rows = []
    for k, name in enumerate(tasks):
        env.reset(seed=k, options={"task": name})
        length, done = 0, False
        while not done:
            _, _, term, trunc, _ = env.step(env.expert_action())
            length, done = length + 1, term or trunc
        env.reset(seed=k, options={"task": name})
        step_time = 0.0
        for _ in range(max(1, length // 2)):
            a = env.expert_action()
            t0 = time.perf_counter()
            env.step(a)
            step_time += time.perf_counter() - t0
        step = step_time / max(1, length // 2)
        px = env._last_pixels
        t_copy = _timed(px.copy, repeats) if px is not None else 0.0
        snap = env.snapshot()
        t_snap = _timed(env.snapshot, repeats)
        t_restore = _timed(lambda s=snap: env.restore(s), repeats)
        wire = pickle.dumps(snap, protocol=5)
        t_wire = _timed(lambda w=wire: env.restore(pickle.loads(w)), max(1, repeats // 4))
        t_dumps = _timed(lambda s=snap: pickle.dumps(s, protocol=5), repeats)
        rows.append((step, t_snap, t_restore, t_dumps + t_wire, len(wire), t_copy))
    a = np.array(rows)
    return {"step": a[:, 0], "snapshot": a[:, 1], "restore": a[:, 2], "wire": a[:, 3], "bytes": a[:, 4],
            "copy": a[:, 5]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", default=None, help="comma-separated task names (default: all)")
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--configs", default=",".join(CONFIGS), help=f"some of {', '.join(CONFIGS)}")
    args = ap.parse_args()
    from voyager_gym import catalogue

    tasks = args.tasks.split(",") if args.tasks else list(catalogue.names())
    configs = args.configs.split(",")
    bad = [c for c in configs if c not in CONFIGS]
    if bad:
        raise SystemExit(f"unknown config(s) {bad}; expected some of {', '.join(CONFIGS)}")
    print(f"{len(tasks)} tasks, mid-episode states, medians of {args.repeats} calls per task; "
          "ms = milliseconds, ratio = (snapshot + restore) / one env step")
    for name in configs:
        r = measure(CONFIGS[name], tasks, args.repeats)
        both = (r["snapshot"] + r["restore"]) * 1e3
        kb = r["bytes"] / 1e3
        ratio = both / (r["step"] * 1e3)
        ok = np.percentile(both, 95) <= TARGET_MS and kb.max() <= TARGET_KB
        print(f"[{name}] {CONFIGS[name]}")
        print(f"  env step          median {np.median(r['step']) * 1e3:7.3f} ms")
        print(f"  snapshot          median {np.median(r['snapshot']) * 1e3:7.3f} ms   "
              f"max {r['snapshot'].max() * 1e3:7.3f} ms")
        print(f"  restore           median {np.median(r['restore']) * 1e3:7.3f} ms   "
              f"max {r['restore'].max() * 1e3:7.3f} ms")
        print(f"  snapshot+restore  median {np.median(both):7.3f} ms   "
              f"p95 {np.percentile(both, 95):7.3f} ms   max {both.max():7.3f} ms")
        print(f"  ratio to a step   median {np.median(ratio):7.3f}      max {ratio.max():7.3f}")
        if r["copy"].any():
            print(f"  a frame copy      median {np.median(r['copy']) * 1e3:7.3f} ms   (the floor of any "
                  "pixel observation: restore hands back a fresh frame, as step does)")
        print(f"  pickled size      median {np.median(kb):7.1f} KB   max {kb.max():7.1f} KB")
        print(f"  cross-process (dumps + loads + restore, re-renders)  median "
              f"{np.median(r['wire']) * 1e3:7.3f} ms   max {r['wire'].max() * 1e3:7.3f} ms")
        print(f"  target (p95 <= {TARGET_MS} ms, max <= {TARGET_KB:.0f} KB): {'met' if ok else 'MISSED'}")


if __name__ == "__main__":
    main()
