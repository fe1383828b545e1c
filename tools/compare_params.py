"""Compare SimDroid's task params and goals with AndroidWorld's, seed for seed.

Reads the fixture written by `tools/export_androidworld_params.py` (default
`tests/data/androidworld_params.json`) and, for every task SimDroid registers, draws SimDroid's params for
the same instance seeds (`SimDroidBackend.generate_params(name, seed)`) and its goal, encodes them the
same JSON-safe way, and reports per task:
  keys   "=" same top-level keys; "+" SimDroid has AndroidWorld's keys plus extra ones; "x" otherwise;
  types  the JSON type shape of every shared key agrees (nested lists and dicts included);
  values every shared key's value is equal (all instances);
  goal   the goal text is equal word for word (all instances);
  init   information-retrieval tasks only: the goal after the task's initialization (AndroidWorld rewords
         dates then; SimDroid's is the goal `reset` returns) is equal ("-" for other tasks);
then a summary (how many of SimDroid's tasks agree on each). Run from the repository root:

    python tools/compare_params.py [--fixture PATH] [--task NAME ...] [--diff]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # this checkout's package, not another one installed in the environment

DEFAULT_FIXTURE = ROOT / "tests" / "data" / "androidworld_params.json"

from voyager_gym.androidworld_params import json_safe  # noqa: E402 (after the path insert: this checkout's)


def shape(v: Any) -> Any:
    """The JSON type shape of a value: 'str', 'int', ..., [shapes of the distinct items], {key: shape}."""
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, dict):
        return {k: shape(x) for k, x in sorted(v.items())}
    if isinstance(v, list):
        out: list[Any] = []
        for x in v:
            s = shape(x)
            if s not in out:
                out.append(s)
        return out
    return type(v).__name__


@dataclasses.dataclass
class Row:
    task: str
    keys: str  # "=", "+", "x"
    types: bool
    values: bool
    goal: bool
    init: bool | None
    note: str


def compare_task(name: str, instances: list[dict[str, Any]], backend: Any) -> tuple[Row, list[str]]:
    from voyager_gym import catalogue

    keys, types, values, goal = "=", True, True, True
    init: bool | None = None
    missing: set[str] = set()
    extra: set[str] = set()
    bad_types: set[str] = set()
    bad_values: set[str] = set()
    diffs: list[str] = []
    for inst in instances:
        s = inst["seed"]
        aw = inst["params"]
        sim = json_safe(backend.generate_params(name, s))
        sim_goal = catalogue.goal(name, backend.generate_params(name, s))
        missing |= set(aw) - set(sim)
        extra |= set(sim) - set(aw)
        for k in set(aw) & set(sim):
            if shape(aw[k]) != shape(sim[k]):
                bad_types.add(k)
            if aw[k] != sim[k]:
                bad_values.add(k)
                if len(diffs) < 6:
                    a, b = json.dumps(aw[k])[:150], json.dumps(sim[k])[:150]
                    diffs.append(f"  seed {s} {k}: aw={a} sim={b}")
        if sim_goal != inst["goal"]:
            goal = False
            if len(diffs) < 8:
                diffs.append(f"  seed {s} goal:\n    aw : {inst['goal']}\n    sim: {sim_goal}")
        if "init_goal" in inst:
            init = init if init is not None else True
            got = backend.reset(name, backend.generate_params(name, s), np.random.default_rng(0))
            if got != inst["init_goal"]:
                init = False
                if len(diffs) < 10:
                    diffs.append(f"  seed {s} init goal:\n    aw : {inst['init_goal']}\n    sim: {got}")
    if missing:
        keys = "x"
    elif extra:
        keys = "+"
    types = not bad_types and not missing
    values = not bad_values and not missing
    note = []
    if missing:
        note.append("missing " + ",".join(sorted(missing)))
    if extra:
        note.append("extra " + ",".join(sorted(extra)))
    if bad_types:
        note.append("types " + ",".join(sorted(bad_types)))
    if bad_values:
        note.append("values " + ",".join(sorted(bad_values)))
    return Row(name, keys, types, values, goal, init, "; ".join(note)), diffs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--fixture", type=Path, default=DEFAULT_FIXTURE)
    ap.add_argument("--task", nargs="*", help="only these tasks")
    ap.add_argument("--diff", action="store_true", help="print the first differing values per task")
    args = ap.parse_args()

    from voyager_gym import catalogue
    from voyager_gym.backends.sim import SimDroidBackend

    data = json.loads(args.fixture.read_text())
    backend = SimDroidBackend(render_scale=0.1, noise="none")
    names = sorted(args.task or catalogue.names())
    rows: list[Row] = []
    print(f"{'task':48s} keys types values goal  init note")
    for name in names:
        if name not in data:
            print(f"{name:48s} (not in AndroidWorld's fixture)")
            continue
        row, diffs = compare_task(name, data[name], backend)
        rows.append(row)
        yn = {True: "yes", False: "no", None: "-"}
        print(
            f"{name:48s} {row.keys:4s} {yn[row.types]:5s} {yn[row.values]:6s} {yn[row.goal]:5s} "
            f"{yn[row.init]:4s} {row.note}"
        )
        if args.diff:
            for d in diffs:
                print(d)
    n = len(rows)
    full = sum(r.keys == "=" and r.values and r.goal for r in rows)
    print(
        f"\nsummary over {n} SimDroid tasks ({len(data) - 1} in AndroidWorld's fixture, "
        f"{len(data[rows[0].task]) if rows else 0} instances each):\n"
        f"  same keys {sum(r.keys == '=' for r in rows)}/{n} (superset {sum(r.keys == '+' for r in rows)}), "
        f"same types {sum(r.types for r in rows)}/{n}, same values {sum(r.values for r in rows)}/{n}, "
        f"same goal text {sum(r.goal for r in rows)}/{n}; all four {full}/{n}; "
        f"initialized IR goal {sum(bool(r.init) for r in rows)}/{sum(r.init is not None for r in rows)}"
    )


if __name__ == "__main__":
    main()
