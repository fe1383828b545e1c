"""Write SimDroid's data file of AndroidWorld's information-retrieval task parameters (`ir_vocab.json`).

Runs only where android_world is importable; nothing in the package or the tests imports this script.
AndroidWorld's 25 information-retrieval tasks draw their params as one `random.choice` per task parameter, in
the order its task definitions list them, from each parameter's possible values. This script reads those
names and values (facts: the vocabularies) for all of them (or `--tasks`) and writes them as JSON package
data, which `voyager_gym/backends/sim/tasks/ir_vocab.py` loads, so that SimDroid draws the same params for the
same seed without android_world.

Usage:
    PYTHONPATH=/path/to/android_world_checkout python tools/export_androidworld_ir_vocab.py \
        [--out voyager_gym/backends/sim/tasks/ir_vocab.json]

The file: {"about": ..., "tasks": {task name: [{"name": parameter, "possible_values": [...]}, ...]}}, tasks
sorted by name, parameters in drawing order, values in AndroidWorld's order, indented one value a line (so
that a change reads as a diff), UTF-8 (`ensure_ascii=False`), newline-terminated.
"""

from __future__ import annotations

import argparse
import json
import warnings
from collections.abc import Iterable, Mapping
from pathlib import Path

DEFAULT_OUT = Path(__file__).resolve().parent.parent / "voyager_gym/backends/sim/tasks/ir_vocab.json"
ABOUT = (
    "AndroidWorld's information-retrieval task parameters: for each task, its parameters in drawing order "
    "and each one's possible values, in AndroidWorld's order (facts read from its task definitions by "
    "tools/export_androidworld_ir_vocab.py; regenerate rather than edit). Loaded by ir_vocab.py next to it."
)


def document(params: Mapping[str, Iterable[tuple[str, Iterable[str]]]]) -> str:
    """The file's text for {task: [(parameter, possible values), ...]} (parameters in drawing order)."""
    tasks = {
        name: [{"name": p, "possible_values": list(values)} for p, values in params[name]]
        for name in sorted(params)
    }
    return json.dumps({"about": ABOUT, "tasks": tasks}, indent=2, ensure_ascii=False) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--tasks", nargs="*", help="task names (default: all 25)")
    args = ap.parse_args()
    warnings.filterwarnings("ignore")
    from android_world import registry

    reg = registry.TaskRegistry()
    ir = reg.get_registry(reg.INFORMATION_RETRIEVAL_FAMILY)
    names = args.tasks or sorted(ir)
    params = {}
    for name in names:
        template = ir[name].task_template.fget(None)
        params[name] = [(p.name, p.possible_values) for p in template.task_params]
    args.out.write_text(document(params), encoding="utf-8")
    print(f"wrote {args.out}: {len(names)} tasks")


if __name__ == "__main__":
    main()
