"""Fork-point quality: precision and recall of GRSD fork detection against SimDroid's ground truth.

SimDroid knows when two screenshots show the same logical screen (`Step.screen_key`, a hash of the widget
tree without noise). Ground truth = the same fork algorithm with that oracle as SAME
(`ForkConfig(oracle=True)`, the mode's other settings unchanged) on the same trajectories.

Groups: several tasks x 8 rollouts (2 expert; 6 expert with seeded random detours: taps by index or x/y,
back, home, scrolls, typing, other apps; some give up early), recorded once without pixels and replayed
under each noise setting, so every row sees the same trajectories and only the pixels change. A detected
fork matches strictly on (failed trajectory, failed step, teacher step) (another teacher trajectory counts
when its step has the same screen_key and action) and relaxed on (failed trajectory, failed step). Also
robust-mode ablations (each fix switched off in turn) with all noise on.

    python benchmarks/forkpoint_quality.py [--tasks A,B] [--instances 2] [--scale 0.25] [--no-ablations]
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from typing import Any

import numpy as np

from algos.buffer import Group, Step, Trajectory
from algos.forks import ForkConfig, action_key, group_forks
from voyager_gym.actions import Action, parse_action
from voyager_gym.backends.sim import NoiseConfig

TASKS = ["SimpleCalendarAddOneEvent", "VlcCreatePlaylist", "ExpenseAddSingle", "MarkorCreateNote",
         "ContactsAddContact", "SimpleSmsSend", "FilesMoveFile", "SystemBluetoothTurnOn"]
HEAVY = NoiseConfig.heavy()
NOISE_ROWS: dict[str, NoiseConfig] = {  # each source alone (probabilities at 'heavy' rates), then all
    "none": NoiseConfig.none(),
    "clock": dataclasses.replace(NoiseConfig.none(), clock=True),
    "caret": dataclasses.replace(NoiseConfig.none(), caret=True),
    "notifications": dataclasses.replace(NoiseConfig.none(), notifications=HEAVY.notifications),
    "toasts": dataclasses.replace(NoiseConfig.none(), toasts=HEAVY.toasts),
    "transitions": dataclasses.replace(NoiseConfig.none(), transitions=HEAVY.transitions),
    "all (default)": NoiseConfig.default(),
    "all (heavy)": HEAVY,
}
WORDS = ["hello", "x", "2024", "meeting", "test note"]


# ------------------------------------------------- rollouts -------------------------------------------------
@dataclasses.dataclass
class Rollout:
    """How one rollout of a group behaves: the expert, with a chance of a random detour per step."""

    seed: int
    detour: float = 0.0  # probability of a random action instead of the expert's
    give_up: int | None = None  # step at which it declares success early (a failure unless done)
    xy: float = 0.0  # probability that an expert tap is expressed by the element's x/y instead of its index


def _detour(rng: np.random.Generator, elements: list, apps: list[str]) -> Action:
    kinds = ["tap_index", "tap_xy", "back", "scroll", "home", "type", "app"]
    k = kinds[int(rng.choice(len(kinds), p=[0.25, 0.2, 0.25, 0.1, 0.05, 0.1, 0.05]))]
    n = len(elements)
    if k in ("tap_index", "tap_xy", "type") and n == 0:
        k = "back"
    if k == "tap_index":
        return Action("click", index=int(rng.integers(n)))
    if k == "tap_xy":
        b = elements[int(rng.integers(n))].bbox_pixels
        return Action("click", x=int(rng.integers(b.x_min, max(b.x_min + 1, b.x_max))),
                      y=int(rng.integers(b.y_min, max(b.y_min + 1, b.y_max))))
    if k == "back":
        return Action("navigate_back")
    if k == "home":
        return Action("navigate_home")
    if k == "scroll":
        return Action("scroll", direction=str(rng.choice(["up", "down"])))
    if k == "type":
        editable = [i for i, e in enumerate(elements) if e.is_editable] or [int(rng.integers(n))]
        return Action("input_text", index=int(rng.choice(editable)), text=str(rng.choice(WORDS)),
                      clear_text=True)
    return Action("open_app", app_name=str(rng.choice(apps)))


def record(task: str, params: dict[str, Any], spec: Rollout, max_steps: int) -> list[Action]:
    """The actions of one rollout, played without pixels (fast); replaying them reproduces the episode."""
    from voyager_gym.env import VoyagerEnv, app_names

    env = VoyagerEnv(observation_mode="elements", noise="none", max_steps=max_steps)
    obs, _ = env.reset(seed=spec.seed, options={"task": task, "params": params})
    rng = np.random.default_rng(spec.seed + 1)
    apps = list(app_names(env))
    actions: list[Action] = []
    while True:
        els = list(obs["ui_elements"])
        if spec.give_up is not None and len(actions) == spec.give_up:
            a = Action("status", goal_status="complete")
        elif rng.random() < spec.detour:
            a = _detour(rng, els, apps)
        else:
            try:
                a = parse_action(env.unwrapped.expert_action())
            except LookupError:  # a detour left the expert lost: it backs out and tries again
                a = Action("navigate_back")
            if a.action_type == "click" and a.index is not None and rng.random() < spec.xy:
                x, y = els[a.index].bbox_pixels.center
                a = Action("click", x=x, y=y)
        actions.append(a)
        obs, _, term, trunc, _ = env.step(a.to_json())
        if term or trunc:
            return actions


def replay(task: str, params: dict[str, Any], spec: Rollout, actions: list[Action], noise: Any, scale: float,
           max_steps: int, group_id: str, r: int) -> Trajectory:
    """Replay recorded actions with pixels under `noise`: a Trajectory whose steps keep full frames."""
    from voyager_gym.env import VoyagerEnv

    env = VoyagerEnv(render_scale=scale, noise=noise, max_steps=max_steps)
    obs, info = env.reset(seed=spec.seed, options={"task": task, "params": params})
    tr = Trajectory(f"{group_id}-r{r}", group_id, task, 0, params, obs["goal"], env_seed=spec.seed)
    for t, a in enumerate(actions):
        tr.steps.append(Step(group_id, tr.traj_id, t, obs["goal"], [], "", a.to_json(), a.to_dict(), True,
                             ui_elements=[e.to_dict() for e in obs["ui_elements"]],
                             screen_key=info["screen_key"], frame=obs["pixels"]))
        obs, _, term, trunc, info = env.step(a.to_json())
        if term or trunc:
            tr.score = float(info["score"]) if term else 0.0
            tr.success = tr.score >= 1.0
            break
    return tr


def rollout_specs(seed: int, g: int = 8, max_steps: int = 30, detour: tuple[float, float] = (0.15, 0.45),
                  give_up: float = 0.3) -> list[Rollout]:
    """2 expert rollouts, then expert-with-detours ones (a detour rate drawn from `detour`; a share
    `give_up` declares success early), all seeded from `seed`."""
    rng = np.random.default_rng(seed)
    specs = []
    for k in range(g):
        if k < 2:
            specs.append(Rollout(seed=seed * 100 + k))
            continue
        stop = int(rng.integers(2, max_steps)) if rng.random() < give_up else None
        specs.append(Rollout(seed=seed * 100 + k, detour=float(rng.uniform(*detour)), give_up=stop, xy=0.3))
    return specs


def make_group(task: str, instance: int = 0, g: int = 8, noise: Any = "default", scale: float = 0.25,
               max_steps: int = 30, seed: int = 0, **spec_kw: Any) -> Group:
    """One Group of `g` rollouts of a task instance, frames kept (used by the speed benchmark too)."""
    plan = plan_group(task, instance, g, max_steps, seed, **spec_kw)
    return render_group(plan, noise, scale)


def plan_group(task: str, instance: int, g: int, max_steps: int, seed: int, **spec_kw: Any) -> dict[str, Any]:
    from voyager_gym.backends.sim import SimDroidBackend

    params = SimDroidBackend(noise="none").generate_params(task, 1000 + instance)
    specs = rollout_specs(seed * 7919 + instance, g, max_steps, **spec_kw)
    return {"task": task, "params": params, "specs": specs, "max_steps": max_steps,
            "actions": [record(task, params, s, max_steps) for s in specs],
            "gid": f"{task}-{instance}-{seed}"}


def render_group(plan: dict[str, Any], noise: Any, scale: float) -> Group:
    grp = Group(plan["gid"], plan["task"], 0, plan["params"])
    for r, (spec, acts) in enumerate(zip(plan["specs"], plan["actions"], strict=True)):
        grp.trajectories.append(replay(plan["task"], plan["params"], spec, acts, noise, scale,
                                       plan["max_steps"], plan["gid"], r))
    return grp


def thumbnails_only(grp: Group, width: int) -> None:
    """Replace every step's frame by a `width`-wide thumbnail, the way algos.rollout keeps screenshots."""
    from PIL import Image

    for tr in grp.trajectories:
        for s in tr.steps:
            h, w = s.frame.shape[:2]
            size = (width, max(1, round(h * width / w)))
            s.thumbnail = np.asarray(Image.fromarray(s.frame).resize(size, Image.Resampling.BOX))
            s.frame = None


# ------------------------------------------------- scoring --------------------------------------------------
def _fork_ids(results: list, cfg: ForkConfig) -> dict[tuple[str, int], tuple]:
    """(failed trajectory, failed step) -> (teacher trajectory, teacher step, teacher screen_key, action)."""
    out = {}
    for failed, teacher, f in results:
        st = teacher.steps[f.teacher_step]
        out[(failed.traj_id, f.failed_step)] = (teacher.traj_id, f.teacher_step, st.screen_key,
                                                action_key(st.action, st.ui_elements, cfg))
    return out


def _match(det: dict, truth: dict) -> tuple[int, int]:
    """(strict matches, relaxed matches) of detected forks against the truth."""
    strict = relaxed = 0
    for k, v in det.items():
        t = truth.get(k)
        if t is None:
            continue
        relaxed += 1
        strict += v[:2] == t[:2] or v[2:] == t[2:]
    return strict, relaxed


@dataclasses.dataclass
class Tally:
    detected: int = 0
    truth: int = 0
    strict: int = 0
    relaxed: int = 0
    seconds: float = 0.0

    def add(self, det: dict, truth: dict, seconds: float) -> None:
        s, r = _match(det, truth)
        self.detected += len(det)
        self.truth += len(truth)
        self.strict += s
        self.relaxed += r
        self.seconds += seconds

    def cells(self) -> list[str]:
        def ratio(a: int, b: int) -> str:
            return f"{a / b:.3f}" if b else "  -  "
        return [ratio(self.strict, self.detected), ratio(self.strict, self.truth),
                ratio(self.relaxed, self.detected), ratio(self.relaxed, self.truth), f"{self.detected:4d}"]


def ablations() -> dict[str, ForkConfig]:
    """Robust mode with each fix switched off in turn (the last rows of the table)."""
    r = ForkConfig.robust()
    f = ForkConfig.faithful()
    return {
        "robust": r,
        "- aspect (480x270 squash)": dataclasses.replace(r, keep_aspect=False, thumb_size=f.thumb_size),
        "- masks (crop 25/878)": dataclasses.replace(r, masks=(), crop_top=f.crop_top),
        "- overlay excuses": dataclasses.replace(r, overlay_regions=()),
        "- local check (SSIM only)": dataclasses.replace(r, local_diff=0),
        "- caret excuse": dataclasses.replace(r, caret=False),
        "- deblend": dataclasses.replace(r, deblend=False),
        "- target actions (exact)": dataclasses.replace(r, action_match="exact"),
        "- similar teacher (shortest)": dataclasses.replace(r, teacher="shortest"),
        "- a11y confirm (off)": dataclasses.replace(r, a11y="off"),
        "+ a11y and": dataclasses.replace(r, a11y="and", a11y_threshold=1.0),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tasks", default=",".join(TASKS))
    ap.add_argument("--instances", type=int, default=1, help="task instances (groups) per task")
    ap.add_argument("--scale", type=float, default=0.25, help="render scale of the screenshots")
    ap.add_argument("--thumb", type=int, default=0, help="keep only thumbnails this wide (as algos.rollout "
                    "stores them: PIL box filter) instead of the frames")
    ap.add_argument("--rows", default=",".join(NOISE_ROWS), help="noise rows to run")
    ap.add_argument("--no-ablations", action="store_true")
    ap.add_argument("--robust", default="", help="robust-mode ForkConfig overrides, e.g. teacher='shortest'")
    args = ap.parse_args()
    tasks = [t for t in args.tasks.split(",") if t]
    rows = [r for r in args.rows.split(",") if r]
    bad = [r for r in rows if r not in NOISE_ROWS]
    if bad:
        raise SystemExit(f"unknown noise rows {bad}; expected some of {list(NOISE_ROWS)}")
    t0 = time.perf_counter()
    plans = [plan_group(t, i, 8, 30, 0) for t in tasks for i in range(args.instances)]
    robust = eval(f"dataclasses.replace(ForkConfig.robust(), {args.robust})")  # noqa: S307 - a CLI for humans
    modes = {"faithful": ForkConfig.faithful(), "robust": robust}
    extra = ablations() if not args.no_ablations else {}
    truths: dict[tuple[str, str], dict] = {}
    table: dict[tuple[str, str], Tally] = {}
    n_fail = n_succ = 0
    for plan in plans:
        for row in rows:
            grp = render_group(plan, NOISE_ROWS[row], args.scale)
            if args.thumb:
                thumbnails_only(grp, args.thumb)
            if row == rows[0]:
                n_succ += len(grp.successes)
                n_fail += len(grp.failures)
            cfgs = dict(modes)
            if row == "all (default)":
                cfgs |= {f"abl:{k}": v for k, v in extra.items()}
            for name, cfg in cfgs.items():
                tkey = (plan["gid"], repr(dataclasses.replace(cfg, oracle=True)))
                if tkey not in truths:
                    truths[tkey] = _fork_ids(group_forks(grp, dataclasses.replace(cfg, oracle=True)), cfg)
                s = time.perf_counter()
                det = _fork_ids(group_forks(grp, cfg), cfg)
                table.setdefault((name, row), Tally()).add(det, truths[tkey], time.perf_counter() - s)
    shots = f"{args.thumb}-wide thumbnails" if args.thumb else "frames"
    print(f"fork-point quality: {len(plans)} groups ({', '.join(tasks)}), {n_succ} successes and {n_fail} "
          f"failures, render scale {args.scale} ({shots}); truth = oracle SAME (screen_key)")
    head = f"{'noise':16s} {'mode':9s} {'P strict':>8s} {'R strict':>8s} {'P relax':>8s} {'R relax':>8s} " \
           f"{'forks':>5s} {'truth':>5s} {'s/group':>7s}"
    print(head)
    print("-" * len(head))
    for row in rows:
        for name in modes:
            t = table[(name, row)]
            c = t.cells()
            print(f"{row:16s} {name:9s} {c[0]:>8s} {c[1]:>8s} {c[2]:>8s} {c[3]:>8s} {c[4]:>5s} {t.truth:5d} "
                  f"{t.seconds / len(plans):7.2f}")
    if extra and "all (default)" in rows:
        print("\nrobust ablations, all noise on (default rates):")
        head2 = (f"{'variant':30s} {'P strict':>8s} {'R strict':>8s} {'P relax':>8s} {'R relax':>8s} "
                 f"{'forks':>5s} {'truth':>5s} {'s/group':>7s}")
        print(head2)
        print("-" * len(head2))
        for name in extra:
            t = table[(f"abl:{name}", "all (default)")]
            c = t.cells()
            print(f"{name:30s} {c[0]:>8s} {c[1]:>8s} {c[2]:>8s} {c[3]:>8s} {c[4]:>5s} {t.truth:5d} "
                  f"{t.seconds / len(plans):7.2f}")
    summary = []
    for row in ("all (default)", "all (heavy)"):
        if row in rows:
            r = table[("robust", row)]
            summary.append(f"'{row}' precision {r.strict / max(1, r.detected):.3f} recall "
                           f"{r.strict / max(1, r.truth):.3f}")
    print(f"\nsummary: robust mode, all noise on: {'; '.join(summary) or '(rows not run)'} (strict); "
          f"total {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
