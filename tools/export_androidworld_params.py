"""Export AndroidWorld's task parameters and goals for fixed instance seeds, as JSON test data.

Runs only where android_world (google-research/android_world) is importable; nothing in the package or the
tests imports this script. For every task in android_world's registry (the `android_world` family, 116
tasks) and instance i = 0..n-1 of a suite with seed `--suite-seed` (default 30, AndroidWorld's default),
it seeds the way android_world's suite does for one instance: the instance seed is
int(sha256(f"{suite_seed}_{name}_{i}")) % 2**32, the task's device time is set, the global `random` module
is seeded with it, `generate_random_params()` runs, and `params["seed"]` is set to the instance seed.

Output: {task: [{"index": i, "seed": s, "params": {...}, "goal": str, "complexity": float}, ...], ...} plus
a "_meta" entry (keys starting with "_" are not tasks). For the information-retrieval tasks an instance also
has "init_goal" and "init_state": AndroidWorld fills their task definition at initialization (after seeding
`random` again with the instance seed: `_without_replacement` fields are drawn, then date params are reworded,
e.g. "October 24 2023" -> "this Tuesday"), so the goal an agent sees is `init_goal`, and `init_state` is the
relevant app state it seeds (the definition's `relevant_state`, as a dict); both need no device.
Values are made JSON-safe as follows:
  - str, int, float, bool, None: unchanged; tuples become lists; dict keys become strings;
  - a dataclass (e.g. an Expense, Recipe or CalendarEvent row) becomes a dict of its fields, in field order
    (class-level constants are not fields and are left out);
  - datetime.datetime / datetime.date / datetime.time become ISO-8601 strings;
  - an enum member becomes its name; numpy scalars become Python numbers;
  - a PIL image becomes {"__image__": {"mode": ..., "size": [w, h], "sha256": hex digest of its bytes}};
  - anything else is an error (so a new kind of value is noticed, not silently stringified).

MarkorCreateFolder's params read the wall clock (a folder name from the current date and time), so its
exported values depend on when the export ran; every other task is a function of the seed.

Usage (with a python that can import android_world):
    PYTHONPATH=/path/to/android_world_checkout python tools/export_androidworld_params.py \
        --out tests/data/androidworld_params.json --n 5 [--commit SHA]
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import importlib.util
import json
import random
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any


def instance_seed(suite_seed: int, name: str, i: int) -> int:
    """AndroidWorld's per-instance seed (suite_utils.create_suite)."""
    return int(hashlib.sha256(f"{suite_seed}_{name}_{i}".encode()).hexdigest(), 16) % 2**32


def _json_safe() -> Any:
    """`voyager_gym.androidworld_params.json_safe`, loaded by file path: that module needs only the standard
    library, so this runs where android_world is installed without this project's dependencies."""
    path = Path(__file__).resolve().parents[1] / "voyager_gym" / "androidworld_params.py"
    spec = importlib.util.spec_from_file_location("_aw_params", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.json_safe


json_safe = _json_safe()


def ir_initialized(cls: Any, params: dict[str, Any]) -> dict[str, Any]:
    """The device-free part of an IR task's initialization (InformationRetrieval.initialize_task after the
    base class seeds `random` with the instance seed): the goal and relevant state it leaves."""
    from android_world.task_evals.information_retrieval import information_retrieval, proto_utils
    from google.protobuf import json_format

    p = dict(params)
    task = cls(p)
    random.seed(p["seed"])
    proto_utils.initialize_proto(task.task, task.params)
    information_retrieval._maybe_replace_date(task.params)  # noqa: SLF001 (replicating its initialization)
    state = json_format.MessageToDict(task.task.relevant_state, preserving_proto_field_name=True)
    return {"init_goal": task.goal, "init_state": state}


def export(n: int, suite_seed: int) -> dict[str, Any]:
    from android_world import registry

    reg = registry.TaskRegistry()
    tasks = reg.get_registry(reg.ANDROID_WORLD_FAMILY)
    ir_names = set(reg.get_registry(reg.INFORMATION_RETRIEVAL_FAMILY))
    out: dict[str, Any] = {}
    for name in sorted(tasks):
        cls = tasks[name]
        rows = []
        for i in range(n):
            s = instance_seed(suite_seed, name, i)
            cls.set_device_time(None)  # the suite sets the class's device time before drawing params
            random.seed(s)
            params = cls.generate_random_params()
            params["seed"] = s
            task = cls(params)
            row = {
                "index": i,
                "seed": s,
                "params": json_safe(params),
                "goal": task.goal,
                "complexity": float(task.complexity),
            }
            if name in ir_names:
                row.update(ir_initialized(cls, params))
            rows.append(row)
        out[name] = rows
    return out


def dumps(data: dict[str, Any]) -> str:
    """JSON with one line per instance (small, and diffs read per instance)."""

    def one(v: Any) -> str:
        return json.dumps(v, ensure_ascii=False, separators=(",", ":"))

    parts = []
    for k, v in data.items():
        if isinstance(v, list):
            parts.append(f"{one(k)}: [\n" + ",\n".join("  " + one(r) for r in v) + "\n]")
        else:
            parts.append(f"{one(k)}: {one(v)}")
    return "{\n" + ",\n".join(parts) + "\n}\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--n", type=int, default=10, help="instances per task (i = 0..n-1)")
    ap.add_argument("--suite-seed", type=int, default=30)
    ap.add_argument("--commit", default=None, help="android_world's commit (default: its tree's HEAD)")
    args = ap.parse_args()
    warnings.filterwarnings("ignore")
    import android_world

    src = Path(android_world.__file__).resolve().parent.parent
    commit = args.commit
    if commit is None:
        try:
            commit = subprocess.run(
                ["git", "-C", str(src), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
            ).stdout.strip()
        except (OSError, subprocess.CalledProcessError):
            commit = "unknown"
    data = export(args.n, args.suite_seed)
    n_tasks = len(data)
    data["_meta"] = {
        "source": "google-research/android_world",
        "commit": commit,
        "suite_seed": args.suite_seed,
        "instances": args.n,
        "python": sys.version.split()[0],
        "exported_utc": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d"),
        "tasks": n_tasks,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(dumps(data))
    size = args.out.stat().st_size
    print(f"wrote {args.out}: {len(data) - 1} tasks x {args.n} instances, {size / 1e6:.2f} MB")


if __name__ == "__main__":
    main()
