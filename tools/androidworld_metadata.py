"""Write the package data file of AndroidWorld's per-task difficulty, tags and optimal steps
(`voyager_gym/androidworld_metadata.json`).

AndroidWorld lists, in `android_world/task_metadata.json`, each task's `difficulty` ("easy", "medium" or
"hard"), its `tags` and its `optimal_steps` (a string there). This script reads that file, from the installed
android_world package or from `--metadata PATH`, keeps only those three facts per task (not the
`task_template` text) and writes them as JSON package data, which `voyager_gym/catalogue.py` loads into each
`TaskInfo`. It refuses a file whose tasks are not exactly the catalogue's 116. Nothing in the package or the
tests imports android_world for this.

Usage:
    python tools/androidworld_metadata.py [--metadata path/to/task_metadata.json] [--commit SHA] \
        [--out voyager_gym/androidworld_metadata.json]

e.g. from a checkout of AndroidWorld: `--metadata $AW/android_world/task_metadata.json --commit $(git -C $AW
rev-parse --short HEAD)`. The file: {"source": ..., "android_world_commit": ..., "about": ..., "tasks": {task
name: {"difficulty": str, "tags": [str, ...], "optimal_steps": int}}}, tasks sorted by name, tags in
AndroidWorld's order (an empty tag, AndroidWorld's `[""]` for a task without tags, left out), indented,
newline-terminated.
"""

from __future__ import annotations

import argparse
import importlib.resources
import json
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # this checkout's package, not another one installed

from voyager_gym import catalogue  # noqa: E402

DEFAULT_OUT = ROOT / "voyager_gym" / "androidworld_metadata.json"
SOURCE = "android_world/task_metadata.json"
ABOUT = (
    "AndroidWorld's per-task difficulty, tags and optimal_steps (facts read from its task_metadata.json by "
    "tools/androidworld_metadata.py; regenerate rather than edit). Loaded by voyager_gym/catalogue.py."
)


def read_installed() -> Any:
    """android_world's own task_metadata.json, from the installed package (SystemExit if it is not)."""
    try:
        text = importlib.resources.files("android_world").joinpath("task_metadata.json").read_text("utf-8")
    except (ModuleNotFoundError, FileNotFoundError) as e:
        raise SystemExit(f"android_world's task_metadata.json not found ({e}): pass --metadata PATH") from e
    return json.loads(text)


def facts(entries: Iterable[Mapping[str, Any]], names: Iterable[str]) -> dict[str, dict[str, Any]]:
    """{task: {"difficulty", "tags", "optimal_steps"}} from AndroidWorld's list of task entries, sorted by
    name; ValueError naming the task if an entry is malformed, repeated, not one of `names`, or if one of
    `names` has no entry."""
    ours = set(names)
    out: dict[str, dict[str, Any]] = {}
    for e in entries:
        name = e.get("task_name")
        if name not in ours:
            raise ValueError(f"task {name!r} of the metadata is not in voyager_gym's catalogue")
        if name in out:
            raise ValueError(f"task {name!r} appears twice in the metadata")
        difficulty, tags, steps = e.get("difficulty"), e.get("tags"), e.get("optimal_steps")
        if difficulty not in catalogue.DIFFICULTIES:
            raise ValueError(f"task {name!r}: difficulty {difficulty!r} is not one of "
                             f"{catalogue.DIFFICULTIES}")
        if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
            raise ValueError(f"task {name!r}: tags {tags!r} are not a list of strings")
        if isinstance(steps, bool) or not isinstance(steps, int | str) or not str(steps).strip().isdigit() \
                or int(steps) < 1:
            raise ValueError(f"task {name!r}: optimal_steps {steps!r} is not a positive whole number")
        out[name] = {"difficulty": difficulty, "tags": [t for t in tags if t], "optimal_steps": int(steps)}
    if missing := sorted(ours - set(out)):
        raise ValueError(f"task {missing[0]!r} of voyager_gym's catalogue is missing from the metadata"
                         + (f" (and {len(missing) - 1} more: {', '.join(missing[1:])})" if len(missing) > 1
                            else ""))
    return dict(sorted(out.items()))


def document(tasks: Mapping[str, Mapping[str, Any]], commit: str | None) -> str:
    """The file's text for `facts`' output, recording where it came from."""
    doc = {"source": SOURCE, "android_world_commit": commit or "unknown", "about": ABOUT, "tasks": tasks}
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--metadata", type=Path,
                    help=f"AndroidWorld's {SOURCE} (default: the installed android_world's)")
    ap.add_argument("--commit", help="android_world's commit the file is from (recorded in the output)")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = ap.parse_args(argv)
    entries = json.loads(args.metadata.read_text("utf-8")) if args.metadata else read_installed()
    if not isinstance(entries, list):
        print(f"{args.metadata or SOURCE}: not a list of task entries", file=sys.stderr)
        return 2
    try:
        tasks = facts(entries, catalogue.names())
    except ValueError as e:
        print(f"{args.metadata or SOURCE}: {e}", file=sys.stderr)
        return 2
    args.out.write_text(document(tasks, args.commit), encoding="utf-8")
    print(f"wrote {args.out}: {len(tasks)} tasks")
    return 0


if __name__ == "__main__":
    sys.exit(main())
