"""The `voyager-gym` command: list tasks, render a task's screen, play the expert, run a demo. It needs only
the env's own dependencies; training, evaluation and fork pictures are `voyager-train`
(experiments/cli.py)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np


def _backend(scale: float, noise: str):
    from voyager_gym.backends.sim import SimDroidBackend

    return SimDroidBackend(render_scale=scale, noise=noise)


def cmd_tasks(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.table import Table

    from voyager_gym import catalogue

    tasks = catalogue.tasks()
    table = Table(title=f"SimDroid tasks ({len(tasks)})")
    for col in ("task", "apps", "complexity", "max steps", "difficulty"):
        table.add_column(col)
    for t in tasks:
        table.add_row(t.name, ", ".join(t.app_names), f"{t.complexity:g}", str(t.max_steps), t.difficulty)
    Console().print(table)
    return 0


def _advance(b, name: str, seed: int, steps: int, actions: list[str]) -> None:
    from voyager_gym.actions import parse_action

    b.reset(name, b.generate_params(name, seed), np.random.default_rng(seed))
    for _ in range(steps):
        b.observe(pixels=False)
        a = b.expert_action()
        if a.action_type == "status":
            break
        b.execute(a)
    for text in actions:
        b.observe(pixels=False)
        b.execute(parse_action(text))


def cmd_render(args: argparse.Namespace) -> int:
    from PIL import Image

    b = _backend(args.scale, args.noise)
    _advance(b, args.task, args.seed, args.steps, args.action or [])
    px, elements, key = b.observe(pixels=True)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(px).save(out)
    print(f"{args.task} (seed {args.seed}): {b.task.goal}")
    print(f"wrote {out} ({px.shape[1]}x{px.shape[0]}), {len(elements)} ui elements, screen {key}")
    return 0


def cmd_play(args: argparse.Namespace) -> int:
    from PIL import Image

    from voyager_gym.backends.sim import run_expert

    b = _backend(args.scale, args.noise)
    run = run_expert(b, args.task, instance_seed=args.seed, pixels=True, env_seed=args.seed)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    imgs = [Image.fromarray(f) for f in run.frames]
    for i, img in enumerate(imgs):
        img.save(out / f"step_{i:02d}.png")
    small = [im.resize((im.width // 2, im.height // 2)) if im.width > 400 else im for im in imgs]
    small[0].save(out / "episode.gif", save_all=True, append_images=small[1:], duration=700, loop=0)
    with open(out / "actions.jsonl", "w") as f:
        for a in run.actions:
            f.write(a.to_json() + "\n")
    print(f"{args.task} (seed {args.seed}): {run.goal}")
    for i, a in enumerate(run.actions):
        print(f"  {i:2d} {a.to_json()}")
    print(
        f"score {run.score} in {run.steps}/{run.max_steps} steps; "
        f"wrote {len(imgs)} PNGs and episode.gif to {out}"
    )
    return 0 if run.score == 1.0 else 1


DEMO_TASKS = (
    "TurnOffWifiAndTurnOnBluetooth",
    "SystemCopyToClipboard",
    "MarkorCreateNote",
    "ExpenseDeleteSingle",
    "SimpleCalendarAddOneEvent",
    "ContactsAddContact",
    "BrowserMaze",
)


def cmd_demo(args: argparse.Namespace) -> int:
    from voyager_gym import catalogue

    names = [t for t in (args.tasks.split(",") if args.tasks else DEMO_TASKS) if t in catalogue.by_name()]
    rc = 0
    for name in names:
        ns = argparse.Namespace(
            task=name, seed=args.seed, out=str(Path(args.out) / name), scale=args.scale, noise=args.noise
        )
        rc |= cmd_play(ns)
    summary = {"tasks": names, "out": str(args.out)}
    print(json.dumps(summary))
    return rc


# The training commands live with the training code, in `voyager-train` (experiments/cli.py): this command
# installs and runs without the training stack, so it never imports it.
MOVED = ("train", "pretrain", "evaluate", "compare", "report", "forks")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv and argv[0] in MOVED:
        print(f"error: `voyager-gym {argv[0]}` is now `voyager-train {argv[0]}` (the training commands, "
              "installed with the training extra)", file=sys.stderr)
        return 2
    p = argparse.ArgumentParser(
        prog="voyager-gym", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="training, evaluation and fork pictures: `voyager-train --help` (the training extra)",
    )
    sub = p.add_subparsers(dest="cmd", required=True)
    sub.add_parser("tasks", help="table of tasks, apps, complexity and difficulty").set_defaults(fn=cmd_tasks)

    def common(sp: argparse.ArgumentParser) -> None:
        sp.add_argument("--seed", type=int, default=0, help="instance seed (and noise seed)")
        sp.add_argument("--scale", type=float, default=1.0, help="render scale of the 1080x2400 screen")
        sp.add_argument("--noise", default="default", choices=["default", "none", "heavy"])

    r = sub.add_parser("render", help="render a task's screen to a PNG")
    r.add_argument("task")
    r.add_argument("--out", default="screen.png")
    r.add_argument("--steps", type=int, default=0, help="let the expert act this many steps first")
    r.add_argument("--action", action="append", help="then apply this JSON action (repeatable)")
    common(r)
    r.set_defaults(fn=cmd_render)
    pl = sub.add_parser("play", help="expert rollout: a PNG per step, a GIF and the actions")
    pl.add_argument("task")
    pl.add_argument("--out", default="play")
    common(pl)
    pl.set_defaults(fn=cmd_play)
    d = sub.add_parser("demo", help="play the expert on a few tasks, writing screenshots")
    d.add_argument("--out", default="demo")
    d.add_argument("--tasks", default=None, help="comma-separated task names")
    common(d)
    d.set_defaults(fn=cmd_demo)
    args = p.parse_args(argv)
    try:
        return args.fn(args)
    except KeyError as e:  # unknown task names carry a did-you-mean message
        print(f"error: {e.args[0] if e.args else e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
