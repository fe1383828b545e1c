"""Fingerprints of every SimDroid task's behaviour: a refactor of the task modules must change none.

For each task and instance seed the fingerprint holds the goal, the params' repr, the expert's actions, a
digest of the start state (device data after `initialize`), a digest of every step (screen key, the element
list, the verifier's score after the step) and the final verdict. `python -m tests.sim.fingerprint --write`
records them in tests/data/sim_task_fingerprints.json (goal and verdicts as they are, the rest digested to
keep the file small); `--full PATH` also writes them undigested, to diff two versions of the code.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import pathlib
import sys
from typing import Any

import numpy as np

from voyager_gym.backends.sim.backend import SimDroidBackend
from voyager_gym.backends.sim.device import DeviceState
from voyager_gym.backends.sim.tasks import TASKS

RECORD = pathlib.Path(__file__).parent.parent / "data" / "sim_task_fingerprints.json"
SEEDS = range(5)


def digest(x: Any) -> str:
    return hashlib.sha256(repr(x).encode()).hexdigest()[:16]


def device_data(dev: DeviceState) -> tuple:
    """Everything a verifier reads, in a canonical order (the UI's screens are left to the step digests)."""
    files = sorted((p, f.content, f.mtime_ms) for p, f in dev.files.items())
    return (dev.time_ms, sorted(dev.settings.items()), files, sorted(dev.dirs), dev.contacts, dev.sms,
            sorted(dev.db.items()), sorted(dev.app_data.items()), dev.clipboard, dev.interaction_cache,
            dev.next_id)


def fingerprint(backend: SimDroidBackend, name: str, seed: int) -> dict[str, Any]:
    """One expert run of task `name` on instance `seed`, as plain data (steps and start state digested)."""
    params = backend.generate_params(name, seed)
    goal = backend.reset(name, params, np.random.default_rng(seed))
    start = device_data(backend.phone.dev)
    steps: list[tuple] = []
    actions: list[str] = []
    for _ in range(backend.task_info(name)["max_steps"]):
        _, elements, key = backend.observe(pixels=False)
        action = backend.expert_action()
        actions.append(str(action))
        backend.execute(action)
        steps.append((key, [e.to_dict() for e in elements], backend.score()))
        if action.action_type == "status":
            break
    return {
        "goal": goal,
        "params": repr(sorted(params.items())),
        "solved_at_start": backend.task.solved_at_start(),
        "start": digest(start),
        "actions": actions,
        "steps": digest(steps),
        "end": digest(device_data(backend.phone.dev)),
        "score": backend.score(),
    }


def compact(fp: dict[str, Any]) -> dict[str, Any]:
    """`fp` as recorded: goal and verdicts kept, params and actions digested."""
    return {k: digest(v) if k in ("params", "actions") else v for k, v in fp.items()}


def fingerprints(names: list[str] | None = None) -> dict[str, dict[str, Any]]:
    backend = SimDroidBackend(render_scale=0.25, noise="none")
    return {f"{n}/{s}": fingerprint(backend, n, s) for n in (names or sorted(TASKS)) for s in SEEDS}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write", action="store_true", help="record the fingerprints (else compare with them)")
    ap.add_argument("--full", type=pathlib.Path, help="also write the undigested fingerprints here")
    ap.add_argument("tasks", nargs="*", help="only these tasks (default: all)")
    args = ap.parse_args(argv)
    full = fingerprints(args.tasks or None)
    if args.full:
        args.full.write_text(json.dumps(full, indent=1, sort_keys=True) + "\n")
    got = {k: compact(v) for k, v in full.items()}
    if args.write:
        RECORD.write_text(json.dumps(got, indent=0, sort_keys=True) + "\n")
        print(f"wrote {len(got)} runs to {RECORD}")
        return 0
    want = json.loads(RECORD.read_text())
    bad = [k for k in got if want.get(k) != got[k]]
    for k in bad:
        print(k, "differs in", [f for f in got[k] if want.get(k, {}).get(f) != got[k][f]])
    print(f"{len(got) - len(bad)}/{len(got)} runs identical")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
