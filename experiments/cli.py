"""The `voyager-train` command: the experiment entry points (`voyager-train train|pretrain|evaluate|compare|
report key=value ...`, the scripts of experiments/ as one installed command) and the GRSD fork gallery
(`voyager-train forks RUN_DIR`). It needs the training extra; the env's own command is `voyager-gym`."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

# The experiment entry points take key=value overrides (see `voyager-train COMMAND --help`), not flags.
EXPERIMENTS = {
    "train": "train one algorithm (rft, grsd, grpo, ppo, gigpo, vine) from the base policy or the RFT "
             "checkpoint",
    "pretrain": "train (or load) the cached base policy by behaviour cloning and evaluate it",
    "evaluate": "Pass@1 of a saved policy (or the expert) on the held-out suite",
    "compare": "the paper's comparison: several algorithms from one RFT checkpoint, same budget",
    "report": "redraw a comparison folder's curves, table and report",
}
TRAIN_EXTRA = {"torch", "omegaconf", "transformers", "trl", "datasets", "pyarrow", "safetensors", "skimage",
               "scipy", "wandb", "matplotlib", "stable_baselines3", "sb3_contrib", "cv2"}


def needs_extra(command: str, e: ModuleNotFoundError) -> int:
    """A clear message for a command whose imports are in the training extra, not the base install."""
    top = (e.name or "").split(".")[0]
    if top not in TRAIN_EXTRA:
        raise e
    print(f"error: `voyager-train {command}` needs the training extra (module {top!r} is missing): "
          f"pip install 'voyager-gym[train]' (with torch==2.13.0 on the project machines)", file=sys.stderr)
    return 2


def run_experiment(command: str, argv: list[str]) -> int:
    """Run experiments/<command>.py's `main` on key=value `argv`."""
    import importlib

    try:
        module = importlib.import_module(f"experiments.{command}")
    except ModuleNotFoundError as e:
        return needs_extra(command, e)
    module.main(argv)
    return 0


def cmd_forks(args: argparse.Namespace) -> int:
    """Draw the newest GRSD forks of a run folder (a failed step and the successful step it learns from)."""
    try:
        from algos.forks.figure import draw_run_forks
    except ModuleNotFoundError as e:
        return needs_extra("forks", e)
    try:
        out = draw_run_forks(args.run_dir, args.out, n=args.n)
    except (FileNotFoundError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(f"wrote {out} ({args.n} fork(s) from {args.run_dir})")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv and argv[0] in EXPERIMENTS:
        return run_experiment(argv[0], argv[1:])
    p = argparse.ArgumentParser(
        prog="voyager-train", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="experiment commands (key=value overrides; `voyager-train COMMAND --help` lists every key):\n"
        + "\n".join(f"  {k:<10} {v}" for k, v in EXPERIMENTS.items()),
    )
    sub = p.add_subparsers(dest="cmd", required=True, metavar="{" + ",".join([*EXPERIMENTS, "forks"]) + "}")
    fk = sub.add_parser("forks", help="draw GRSD fork points (success vs failed rollout) from a run folder")
    fk.add_argument("run_dir", help="a GRSD run's out_dir (reads its latest checkpoint's forks/)")
    fk.add_argument("--out", default="forks.png")
    fk.add_argument("--n", type=int, default=1, help="how many forks (newest first)")
    fk.set_defaults(fn=cmd_forks)
    args = p.parse_args(argv)
    return args.fn(args)


if __name__ == "__main__":
    sys.exit(main())
