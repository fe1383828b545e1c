"""Write SimDroid's module of AndroidWorld's information-retrieval task parameters (`ir_vocab.py`).

Runs only where android_world is importable; nothing in the package or the tests imports this script.
AndroidWorld's 25 information-retrieval tasks draw their params as one `random.choice` per task parameter, in
the order its task definitions list them, from each parameter's possible values. This script reads those
names and values (facts: the vocabularies) for all of them (or `--tasks`) and writes them
as a Python module, so that SimDroid draws the same params for the same seed without android_world.

Usage:
    PYTHONPATH=/path/to/android_world_checkout python tools/export_androidworld_ir_vocab.py \
        --out voyager_gym/backends/sim/tasks/ir_vocab.py
then `ruff format` the output.
"""

from __future__ import annotations

import argparse
import json
import warnings
from pathlib import Path

HEADER = '''"""AndroidWorld's information-retrieval task parameters: for each task, its parameter names in
drawing order and each one's possible values, in AndroidWorld's order (facts read from its task definitions
by `tools/export_androidworld_ir_vocab.py`; regenerate rather than edit). `draw(name, rng)` draws a task's
params as AndroidWorld does: one `rng.choice` per parameter, in order.
"""

# ruff: noqa: E501 (generated data: long values stay on one line)

from __future__ import annotations

import random

'''

FOOTER = '''

def draw(name: str, rng: random.Random) -> dict[str, str]:
    """`name`'s params for a generator seeded like AndroidWorld's instance (same values for the same seed)."""
    return {param: rng.choice(values) for param, values in IR_PARAMS[name]}
'''


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--tasks", nargs="*", help="task names (default: all 25)")
    args = ap.parse_args()
    warnings.filterwarnings("ignore")
    from android_world import registry

    reg = registry.TaskRegistry()
    ir = reg.get_registry(reg.INFORMATION_RETRIEVAL_FAMILY)
    names = args.tasks or sorted(ir)
    lines = ["IR_PARAMS: dict[str, tuple[tuple[str, tuple[str, ...]], ...]] = {"]
    for name in names:
        template = ir[name].task_template.fget(None)
        lines.append(f"    {json.dumps(name)}: (")
        for p in template.task_params:
            values = ", ".join(json.dumps(v, ensure_ascii=False) for v in p.possible_values)
            lines.append(f"        ({json.dumps(p.name)}, ({values},)),")
        lines.append("    ),")
    lines.append("}")
    args.out.write_text(HEADER + "\n".join(lines) + "\n" + FOOTER)
    print(f"wrote {args.out}: {len(names)} tasks")


if __name__ == "__main__":
    main()
