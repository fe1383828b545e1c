"""A contact sheet of SimDroid screens: each `TASK:STEPS` rendered by `voyager-gym render` (the task's screen
after its expert's first STEPS actions), tiled in rows with the task and step under each screen.

    python tools/contact_sheet.py OsmAndFavorite:0 OsmAndFavorite:3 RetroCreatePlaylist:2 \\
        --out docs/new_apps.png [--seed 0] [--scale 0.25] [--columns 6]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

from PIL import Image, ImageDraw

CAPTION = 36  # pixels under each screen for its caption


def parse_shot(spec: str) -> tuple[str, int]:
    """`TASK:STEPS` (or `TASK`, 0 steps) as (task, steps); a malformed spec is an error naming it."""
    task, _, steps = spec.partition(":")
    if not task or (steps and not steps.isdigit()):
        raise SystemExit(f"shot {spec!r}: expected TASK or TASK:STEPS, e.g. OsmAndFavorite:3")
    return task, int(steps or 0)


def render(task: str, steps: int, seed: int, scale: float, folder: Path) -> Image.Image:
    """The screen `voyager-gym render` writes for this task after `steps` expert actions."""
    out = folder / f"{task}-{steps}.png"
    cmd = [sys.executable, "-m", "voyager_gym.cli", "render", task, "--steps", str(steps), "--seed",
           str(seed), "--scale", str(scale), "--noise", "none", "--out", str(out)]
    subprocess.run(cmd, check=True, capture_output=True, text=True)
    return Image.open(out).convert("RGB")


def sheet(shots: list[tuple[str, int, Image.Image]], columns: int) -> Image.Image:
    """The screens in rows of `columns`, each captioned with its task and step."""
    w, h = shots[0][2].size
    rows = -(-len(shots) // columns)
    pad = 12
    out = Image.new("RGB", (columns * (w + pad) + pad, rows * (h + CAPTION + pad) + pad), (255, 255, 255))
    draw = ImageDraw.Draw(out)
    for i, (task, steps, img) in enumerate(shots):
        x = pad + (i % columns) * (w + pad)
        y = pad + (i // columns) * (h + CAPTION + pad)
        out.paste(img.resize((w, h)), (x, y))
        draw.rectangle((x - 1, y - 1, x + w, y + h), outline=(160, 160, 160))
        draw.text((x, y + h + 4), f"{task}", fill=(0, 0, 0))
        draw.text((x, y + h + 18), f"after {steps} expert steps", fill=(90, 90, 90))
    return out


def main(argv: list[str] | None = None) -> Path:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("shots", nargs="+", help="TASK:STEPS, the screen after the expert's first STEPS actions")
    p.add_argument("--out", default="contact_sheet.png")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--scale", type=float, default=0.25)
    p.add_argument("--columns", type=int, default=6)
    args = p.parse_args(argv)
    if args.columns < 1:
        raise SystemExit(f"--columns {args.columns}: expected at least 1")
    specs = [parse_shot(s) for s in args.shots]
    with tempfile.TemporaryDirectory() as tmp:
        shots = [(t, n, render(t, n, args.seed, args.scale, Path(tmp))) for t, n in specs]
        img = sheet(shots, args.columns)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    img.save(out)
    print(f"wrote {out} ({img.width}x{img.height}), {len(shots)} screens")
    return out


if __name__ == "__main__":
    main()
