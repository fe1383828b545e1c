"""Fork decisions on fixed groups, recorded once and checked after any change to fork detection.

Groups: the quality benchmark's (every task, one instance, every noise row, render scale 0.25), the speed
benchmark's (3 groups with weak-policy failures at 540x1200 and 1080x2400) and the GRSD test fixtures (detour
groups, clean and noisy). For each group and for the faithful and robust detectors (and, on the 'all
(default)' rows, the robust ablations): every fork as (failed trajectory, teacher trajectory, failed step,
teacher step, similarity now, similarity next), and GiGPO's screen classes. `--record` writes them as JSON;
`--check` recomputes and lists every difference (scores compared to 1e-6), exiting 1 on any.

    python benchmarks/fork_decisions.py --record benchmarks/data/fork_decisions.json
    python benchmarks/fork_decisions.py --check benchmarks/data/fork_decisions.json [--only speed]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from collections.abc import Iterator
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from forkpoint_quality import NOISE_ROWS, TASKS, ablations, make_group, plan_group, render_group  # noqa: E402

from algos.forks import ForkConfig, group_forks, screen_classes  # noqa: E402

SPEED_TASKS = ["SimpleCalendarAddOneEvent", "VlcCreatePlaylist", "ExpenseAddSingle"]


def groups(only: str) -> Iterator[tuple[str, Any, bool]]:
    """(name, group, with ablations) for every recorded group whose name starts with `only`."""
    if "quality".startswith(only) or only.startswith("quality"):
        for task in TASKS:
            plan = plan_group(task, 0, 8, 30, 0)
            for row, noise in NOISE_ROWS.items():
                name = f"quality/{plan['gid']}/{row}"
                if name.startswith(only):
                    yield name, render_group(plan, noise, 0.25), row == "all (default)"
    for scale in (0.5, 1.0):
        for task in SPEED_TASKS:
            name = f"speed/{scale}/{task}"
            if name.startswith(only):
                yield name, make_group(task, instance=0, noise="default", scale=scale, detour=(0.3, 0.5),
                                       give_up=0.0), False
    if "fixtures".startswith(only) or only.startswith("fixtures"):
        from tests.algos.test_grsd import DETOUR_TASKS, detour_groups

        for noise, seed, detours in (("none", 0, {1: 2}), ("default", 3, {1: 2, 2: 3})):
            for g in detour_groups(DETOUR_TASKS, detours=detours, noise=noise, seed=seed):
                yield f"fixtures/{noise}/{g.group_id}", g, False


def decisions(grp: Any, cfg: ForkConfig) -> list[list]:
    def r(x: float) -> float | None:
        return None if math.isnan(x) else round(float(x), 8)
    return [[f.traj_id, t.traj_id, k.failed_step, k.teacher_step, r(k.sim_current), r(k.sim_next)]
            for f, t, k in group_forks(grp, cfg)]


def record_group(grp: Any, with_ablations: bool) -> dict[str, Any]:
    cfgs = {"faithful": ForkConfig.faithful(), "robust": ForkConfig.robust()}
    if with_ablations:
        cfgs |= {f"robust {k}": v for k, v in ablations().items() if k != "robust"}
    out: dict[str, Any] = {name: decisions(grp, cfg) for name, cfg in cfgs.items()}
    for name in ("faithful", "robust"):
        out[f"classes {name}"] = screen_classes(grp.trajectories, cfgs[name])
    return out


def forks_in(record: dict[str, Any]) -> int:
    """Forks in one group's record, over all its detectors."""
    return sum(len(v) for k, v in record.items() if not k.startswith("classes"))


def differences(name: str, old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    out = []
    for mode in sorted(set(old) | set(new)):
        a, b = old.get(mode), new.get(mode)
        if mode.startswith("classes"):
            if a != b:
                out.append(f"{name} [{mode}]: {a} -> {b}")
            continue
        if a is None or b is None or len(a) != len(b):
            out.append(f"{name} [{mode}]: {a} -> {b}")
            continue
        for x, y in zip(a, b, strict=True):
            same = x[:4] == y[:4] and all(
                (u is None and v is None) or (u is not None and v is not None and abs(u - v) <= 1e-6)
                for u, v in zip(x[4:], y[4:], strict=True))
            if not same:
                out.append(f"{name} [{mode}]: {x} -> {y}")
    return out


def check(path: str, only: str = "", progress: bool = False) -> tuple[list[str], int, int]:
    """Recompute the decisions of the groups under `only` and compare them with the record at `path`:
    (differences, groups, forks)."""
    t0 = time.perf_counter()
    got: dict[str, Any] = {}
    for name, grp, abl in groups(only):
        got[name] = record_group(grp, abl)
        if progress:
            print(f"{name}: {forks_in(got[name])} forks ({time.perf_counter() - t0:.0f} s)", flush=True)
    with open(path) as f:
        want = json.load(f)
    diffs = [f"{k}: not recomputed" for k in want if k.startswith(only) and k not in got]
    diffs += [d for name in got for d in differences(name, want.get(name, {}), got[name])]
    return diffs, len(got), sum(forks_in(g) for g in got.values())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    mode = ap.add_mutually_exclusive_group(required=True)
    mode.add_argument("--record", help="write the decisions to this JSON file")
    mode.add_argument("--check", help="compare the decisions with this JSON file")
    ap.add_argument("--only", default="", help="groups whose name starts with this (quality, speed, ...)")
    args = ap.parse_args()
    if args.record:
        got = {}
        for name, grp, abl in groups(args.only):
            got[name] = record_group(grp, abl)
            print(f"{name}: {forks_in(got[name])} forks", flush=True)
        with open(args.record, "w") as f:
            json.dump(got, f, indent=0, sort_keys=True)
        print(f"recorded {len(got)} groups in {args.record}")
        return
    diffs, n_groups, n_forks = check(args.check, args.only, progress=True)
    for d in diffs:
        print("DIFF", d)
    print(f"\nsummary: {n_groups} groups, {n_forks} forks; decisions identical: "
          f"{'yes' if not diffs else f'NO ({len(diffs)} differences)'}")
    if diffs:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
