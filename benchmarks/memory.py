"""Renderer memory over a long run, and the cost of a 100 KB text step (issue 12).

    python benchmarks/memory.py [--steps 20000] [--scale 1.0] [--every 2000]

1. RSS over `--steps` mixed expert steps at `--scale` (full screens by default): every SimDroid task in turn,
   a fresh instance per episode, the task expert's actions, pixels rendered each step, default noise. RSS is
   printed every `--every` steps; "flat" compares the peak after the warm-up (the first quarter of the steps)
   with the RSS at the end of the warm-up (flat: within 10%). The renderer's own cache sizes are printed too.
2. The time of one step whose action is 100 KB of input_text (rejected by the action cap, never parsed), and
   of one step whose screen shows a field already holding 100 KB of text (cut before it is rasterised).
"""

from __future__ import annotations

import argparse
import json
import time

from voyager_gym import catalogue
from voyager_gym.actions import MAX_TEXT_CHARS
from voyager_gym.env import VoyagerEnv


def rss_mb() -> float:
    """Resident set size of this process (Linux /proc)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS in /proc/self/status (Linux only)")


def cache_mb(env: VoyagerEnv) -> str:
    return json.dumps({k: round(v / 2**20, 1) for k, v in env.backend.renderer.cache_bytes().items()})


def expert_steps(env: VoyagerEnv, steps: int, every: int) -> list[tuple[int, float]]:
    """(steps done, RSS MB) every `every` steps of expert episodes over all tasks in turn."""
    names = catalogue.names()
    points: list[tuple[int, float]] = []
    done, episode = 0, 0
    while done < steps:
        name = names[episode % len(names)]
        env.reset(seed=episode, options={"task": name, "instance_seed": episode})
        episode += 1
        over = False
        while not over and done < steps:
            _, _, term, trunc, _ = env.step(env.expert_action())
            over = term or trunc
            done += 1
            if done % every == 0:
                points.append((done, rss_mb()))
                print(f"  {done:>6} steps  RSS {points[-1][1]:7.1f} MB, caches {cache_mb(env)}", flush=True)
    return points


def long_text_steps(scale: float) -> tuple[float, float, float]:
    """Seconds for a step showing a field of 100 characters, a step whose action is 100 KB of input_text,
    and a step showing a field that holds 100 KB."""
    env = VoyagerEnv(render_scale=scale, noise="none")
    env.reset(seed=0, options={"task": "SystemCopyToClipboard", "instance_seed": 1})
    env.step({"action_type": "open_app", "app_name": "Clipper"})
    field = next(i for i, e in enumerate(env.elements) if e.is_editable)
    env.step({"action_type": "click", "index": field})
    phone = env.backend.phone
    assert phone.type_text("x" * 100)
    t = time.perf_counter()
    env.step({"action_type": "wait"})  # for scale: the first frame of the field holding 100 characters
    ordinary = time.perf_counter() - t
    t = time.perf_counter()
    _, _, _, _, info = env.step({"action_type": "input_text", "text": "x" * 100_000})
    rejected = time.perf_counter() - t
    assert info["invalid_action"] and str(MAX_TEXT_CHARS // 1024) in info["invalid_action"].replace(",", "")
    while len(phone.top_screen.field(phone.top_screen.focus)) < 100_000:
        assert phone.type_text("lorem ipsum " * (MAX_TEXT_CHARS // 12)), "the field lost its focus"
    t = time.perf_counter()
    env.step({"action_type": "wait"})  # the first frame of this screen: rendered, not a cache hit
    shown = time.perf_counter() - t
    env.close()
    return ordinary, rejected, shown


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=20_000)
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--every", type=int, default=2_000)
    args = ap.parse_args()
    ordinary, rejected, shown = long_text_steps(args.scale)
    print(f"a step showing a 100-character field: {ordinary * 1000:.1f} ms; 100 KB input_text step: "
          f"{rejected * 1000:.1f} ms (rejected by the {MAX_TEXT_CHARS:,}-character cap); a step showing a "
          f"100 KB field: {shown * 1000:.1f} ms (scale {args.scale})")
    env = VoyagerEnv(render_scale=args.scale, noise="default")
    print(f"RSS over {args.steps:,} mixed expert steps at scale {args.scale} (start {rss_mb():.1f} MB):")
    t0 = time.perf_counter()
    points = expert_steps(env, args.steps, args.every)
    env.close()
    warm = ([points[0]] + [p for p in points if p[0] <= args.steps // 4])[-1][1]  # RSS when warm-up ends
    after = [mb for n, mb in points if n > args.steps // 4]
    peak = max(after) if after else warm
    growth = (peak - warm) / warm
    print(f"after warm-up ({args.steps // 4:,} steps): {warm:.1f} MB; peak after: {peak:.1f} MB "
          f"({growth:+.1%}); final {points[-1][1]:.1f} MB; {'flat' if growth <= 0.10 else 'NOT flat'} "
          f"(within 10%); {args.steps / (time.perf_counter() - t0):.0f} steps/s")
    print(f"renderer caches at the end (MB): {cache_mb(env)}")


if __name__ == "__main__":
    main()
