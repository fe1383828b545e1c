"""Fork-point speed: our faithful detector against UI-Voyager's published code path, on realistic groups.

Groups: 8 rollouts of a SimDroid task (2 expert; 6 expert with 30-50% seeded random detours, which mostly
wander until the 30-step budget ends) with default screen noise, screenshots rendered at each of `--scales`
of 1080x2400 (default 0.5 and 1.0: 540x1200 and AndroidWorld's 1080x2400). The reference is UI-Voyager's
code as published (cores/fork_utils.py obs_similarity, cores/fork_algorithm.py _backward_state_match and
analyze_single_task) on the same frames, in memory: per screenshot, crop the top 25/878, cv2.resize
INTER_AREA to 16x16 and cv2.cvtColor to gray for the mean hash (on its first comparison), the same to 480x270
for the thumbnail (on its first pass of the hash prefilter; both cached per screenshot, as their
process-level caches are), `skimage.metrics.structural_similarity` afresh at every call inside the literal
transition-advance / candidate loops, and each match pair's similarities recomputed afterwards as
analyze_single_task does. Both must produce the same forks (steps, and similarities to 1e-6). Timings are
process CPU seconds, the fastest of --repeat alternating runs (the machine may be shared), split into
thumbnails + hashes ("phi": the same OpenCV calls on both sides, each screenshot read at least once) and the
rest ("match"); the summary line per size gives the ratios, then the bound the resizes alone set: a
detector that makes the same OpenCV resizes (one hash grid per distinct screenshot, one thumbnail per
screenshot a comparison reads) cannot beat the reference by more than its time over theirs.

    python benchmarks/forkpoint_speed.py [--groups 3] [--scales 0.5,1.0] [--tasks A,B] [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import cv2
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from forkpoint_quality import make_group  # noqa: E402

from algos.forks import ForkConfig, group_forks, screens  # noqa: E402
from algos.forks.screens import Screens  # noqa: E402

TASKS = ["SimpleCalendarAddOneEvent", "VlcCreatePlaylist", "ExpenseAddSingle"]


class Reference:
    """UI-Voyager's obs_similarity and backward state matching as published (cores/fork_utils.py,
    cores/fork_algorithm.py), per call: the mean hash of a screenshot computed the first time it is compared,
    its gray thumbnail the first time it passes the hash prefilter (both cached per screenshot file, as their
    process-level caches do), and SSIM afresh at every call."""

    def __init__(self, cfg: ForkConfig):
        from skimage.metrics import structural_similarity

        self.ssim = structural_similarity
        self.cfg = cfg
        self.thumbs: dict[int, np.ndarray] = {}
        self.hashes: dict[int, np.ndarray] = {}
        self.ssim_calls = 0
        self.phi = 0.0  # CPU seconds spent filling the two caches

    def _crop(self, screen: np.ndarray) -> np.ndarray:
        return screen[int(screen.shape[0] * self.cfg.crop_top):]

    def _hash(self, key: int, screen: np.ndarray) -> np.ndarray:
        if key not in self.hashes:
            c = time.process_time()
            small = cv2.resize(self._crop(screen), (self.cfg.hash_size, self.cfg.hash_size),
                               interpolation=cv2.INTER_AREA)
            small = cv2.cvtColor(small, cv2.COLOR_RGB2GRAY)  # RGB frames (their BGR files: BGR2GRAY)
            self.hashes[key] = (small >= small.mean()).astype(np.uint8).flatten()
            self.phi += time.process_time() - c
        return self.hashes[key]

    def _thumb(self, key: int, screen: np.ndarray) -> np.ndarray:
        if key not in self.thumbs:
            c = time.process_time()
            thumb = cv2.resize(self._crop(screen), self.cfg.thumb_size, interpolation=cv2.INTER_AREA)
            self.thumbs[key] = cv2.cvtColor(thumb, cv2.COLOR_RGB2GRAY).astype(np.float64)
            self.phi += time.process_time() - c
        return self.thumbs[key]

    def sim(self, a: tuple, b: tuple) -> float:
        """obs_similarity of two steps (key, screen, action)."""
        ha, hb = self._hash(a[0], a[1]), self._hash(b[0], b[1])
        h = float(np.sum(ha == hb)) / ha.size
        if h < self.cfg.hash_threshold:
            return h
        ta, tb = self._thumb(a[0], a[1]), self._thumb(b[0], b[1])
        if np.array_equal(ta, tb):
            return 1.0
        self.ssim_calls += 1
        return float(self.ssim(ta, tb, data_range=self.cfg.data_range))

    def match(self, base: list, failed: list) -> list[tuple[int, int]]:
        """_backward_state_match: the rule list of DESIGN.md, as loops; steps are (key, screen, action)."""
        thr = self.cfg.threshold - self.cfg.tolerance
        nb, nf = len(base), len(failed)
        out, lo = [], 0
        for i in range(nf):
            last_f = i == nf - 1
            advanced = False
            if not last_f:
                for j in range(lo, nb - 1):
                    if self.sim(base[j], failed[i]) >= thr and self.sim(base[j + 1], failed[i + 1]) >= thr:
                        lo = max(lo, j + 1)
                        advanced = True
                        break
            if advanced:
                continue
            cands = []
            for j in range(lo, nb):
                s = self.sim(base[j], failed[i])
                if s < thr:
                    continue
                fa, ba = failed[i][2], base[j][2]
                if fa is not None and ba is not None and fa == ba:
                    continue
                if j != nb - 1 and not last_f and self.sim(base[j + 1], failed[i + 1]) >= thr:
                    continue
                cands.append((j, s))
            if cands:
                j, _ = max(cands, key=lambda c: (c[1], -c[0]))
                out.append((i, j))
                lo = j
        return out


def reference_group(grp, cfg: ForkConfig) -> tuple[list, int, float, int]:
    """analyze_single_task: forks of every failed trajectory against the shortest success, each match pair's
    sim_current and sim_next recomputed by obs_similarity as published; also the number of SSIM calls, the
    CPU seconds spent on thumbnails and hashes, and the number of OpenCV resizes made."""
    ref = Reference(cfg)
    succ, fail = grp.successes, grp.failures
    if not succ or not fail:
        return [], 0, 0.0, 0
    base = min(succ, key=lambda t: len(t.steps))
    key: dict = {}

    def steps(tr):
        return [(key.setdefault((tr.traj_id, s.t), len(key)), s.frame, s.action) for s in tr.steps]
    b, fs = steps(base), [steps(tr) for tr in fail]
    out = []
    for tr, f in zip(fail, fs, strict=True):
        for i, j in ref.match(b, f):
            s_cur = ref.sim(b[j], f[i])
            s_next = ref.sim(b[j + 1], f[i + 1]) if j + 1 < len(b) and i + 1 < len(f) else float("nan")
            out.append((tr.traj_id, i, j, s_cur, s_next))
    return out, ref.ssim_calls, ref.phi, len(ref.hashes) + len(ref.thumbs)


def ours_group(grp, cfg: ForkConfig) -> tuple[list, float, int]:
    """group_forks, the CPU seconds it spent on thumbnails and hashes (inside `Screens.add_many`:
    deduplication, hash grids; `Screens.thumbnail`: thumbnails made when a comparison first needs them) and
    the number of OpenCV resizes it made."""
    spent, resizes = [0.0], [0]
    originals = {name: getattr(Screens, name) for name in ("add_many", "thumbnail")}
    resize = screens.resize_area

    def counted(img, size):
        resizes[0] += 1
        return resize(img, size)

    def timing(fn):
        def run(self, *args):
            c = time.process_time()
            try:
                return fn(self, *args)
            finally:
                spent[0] += time.process_time() - c
        return run
    for name, fn in originals.items():
        setattr(Screens, name, timing(fn))
    screens.resize_area = counted
    try:
        return group_forks(grp, cfg), spent[0], resizes[0]
    finally:
        screens.resize_area = resize
        for name, fn in originals.items():
            setattr(Screens, name, fn)


def resize_cost(grp, cfg: ForkConfig, n: int = 15) -> float:
    """CPU seconds of one thumbnail plus one hash-grid resize of a cropped screenshot of this group (OpenCV
    INTER_AREA, the call both detectors make), half of it: the mean cost of one resize; fastest of n."""
    frame = grp.trajectories[0].steps[0].frame
    crop = frame[int(frame.shape[0] * cfg.crop_top):]
    best = float("inf")
    for _ in range(n):
        c = time.process_time()
        cv2.resize(crop, cfg.thumb_size, interpolation=cv2.INTER_AREA)
        cv2.resize(crop, (cfg.hash_size, cfg.hash_size), interpolation=cv2.INTER_AREA)
        best = min(best, time.process_time() - c)
    return best / 2


def timed(fn, *args):
    c, w = time.process_time(), time.perf_counter()
    res = fn(*args)
    return res, time.process_time() - c, time.perf_counter() - w


def same_forks(ours: list, ref: list) -> bool:
    """Whether both found the same forks (failed trajectory and steps) with the same similarities."""
    if sorted((f.traj_id, k.failed_step, k.teacher_step) for f, _, k in ours) != sorted(r[:3] for r in ref):
        return False
    sims = {(f.traj_id, k.failed_step): (k.sim_current, k.sim_next) for f, _, k in ours}
    for r in ref:
        s_cur, s_next = sims[(r[0], r[1])]
        if abs(s_cur - r[3]) >= 1e-6 or np.isnan(s_next) != np.isnan(r[4]) or (
                not np.isnan(s_next) and abs(s_next - r[4]) >= 1e-6):
            return False
    return True


def run_size(scale: float, tasks: list[str], n_groups: int, repeat: int, cfg: ForkConfig) -> bool:
    """Time both detectors on n_groups groups rendered at `scale`; print a row per group and a summary.
    Returns whether all decisions were identical."""
    tot = dict.fromkeys(("ours", "ours_wall", "ours_phi", "ref", "ref_phi", "floor", "n_ours", "n_ref"), 0.0)
    ratios, identical, n_steps = [], True, 0
    size = f"{round(1080 * scale)}x{round(2400 * scale)}"
    print(f"\nforkpoint speed, faithful mode, screenshots {size}, noise 'default'; CPU ms per group "
          "(phi = thumbnails + hashes, match = the rest)")
    print(f"{'group':30s} {'steps':>5s} {'forks':>5s} {'ours':>6s} {'phi':>5s} {'match':>5s} {'ref':>6s} "
          f"{'phi':>5s} {'match':>6s} {'SSIMs':>5s} {'total':>6s} {'match':>6s}")
    for k in range(n_groups):
        task = tasks[k % len(tasks)]
        grp = make_group(task, instance=k // len(tasks), noise="default", scale=scale, detour=(0.3, 0.5),
                         give_up=0.0)  # weak-policy failures: they wander until the 30-step budget ends
        steps = sum(len(t.steps) for t in grp.trajectories)
        runs_o, runs_r = [], []
        for _ in range(repeat):  # alternating, so a slow spell of a shared machine hits both
            runs_o.append(timed(ours_group, grp, cfg))
            runs_r.append(timed(reference_group, grp, cfg))
        (ours, ophi, n_ours), oc, ow = min(runs_o, key=lambda r: r[1])
        (ref, calls, rphi, n_ref), rc, _ = min(runs_r, key=lambda r: r[1])
        tot["floor"] += n_ours * resize_cost(grp, cfg)
        tot["n_ours"] += n_ours
        tot["n_ref"] += n_ref
        same = same_forks(ours, ref)
        identical &= same
        for name, v in (("ours", oc), ("ours_wall", ow), ("ours_phi", ophi), ("ref", rc), ("ref_phi", rphi)):
            tot[name] += v
        n_steps += steps
        om, rm = oc - ophi, rc - rphi
        ratios.append(rc / oc)
        print(f"{grp.group_id:30s} {steps:5d} {len(ours):5d} {oc * 1e3:6.0f} {ophi * 1e3:5.0f} "
              f"{om * 1e3:5.0f} {rc * 1e3:6.0f} {rphi * 1e3:5.0f} {rm * 1e3:6.0f} {calls:5d} {rc / oc:5.1f}x "
              f"{rm / max(om, 1e-9):5.1f}x{'' if same else '  DIFFERENT FORKS'}")
    g = n_groups
    om, rm = (tot["ours"] - tot["ours_phi"]) / g, (tot["ref"] - tot["ref_phi"]) / g
    print(f"summary {size}: faithful detection {tot['ours'] / g * 1e3:.0f} ms/group (wall "
          f"{tot['ours_wall'] / g * 1e3:.0f}; {n_steps / g:.0f} steps) vs UI-Voyager's code path "
          f"{tot['ref'] / g * 1e3:.0f} ms/group: {tot['ref'] / tot['ours']:.1f}x overall, "
          f"{rm / max(om, 1e-9):.1f}x on matching ({om * 1e3:.0f} vs {rm * 1e3:.0f} ms; thumbnails "
          f"{tot['ours_phi'] / g * 1e3:.0f} vs {tot['ref_phi'] / g * 1e3:.0f} ms); per group "
          f"{min(ratios):.1f}x to {max(ratios):.1f}x; decisions identical: {'yes' if identical else 'NO'}")
    print(f"  resizes a group: ours {tot['n_ours'] / g:.0f} (each distinct screenshot's hash grid, the "
          f"thumbnails its comparisons read), the reference {tot['n_ref'] / g:.0f}; OpenCV INTER_AREA alone "
          f"costs ours {tot['floor'] / g * 1e3:.0f} ms a group, so a detector that makes these "
          f"resizes is at most {tot['ref'] / max(tot['floor'], 1e-9):.1f}x faster than the reference")
    return identical


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--groups", type=int, default=3)
    ap.add_argument("--scales", default="0.5,1.0", help="render scales of 1080x2400, comma-separated")
    ap.add_argument("--tasks", default=",".join(TASKS))
    ap.add_argument("--repeat", type=int, default=3, help="runs of each detector per group (fastest counts)")
    ap.add_argument("--cv-threads", type=int, default=1,
                    help="OpenCV threads, both detectors (default 1: CPU time per core; 0: OpenCV default)")
    args = ap.parse_args()
    tasks = [t for t in args.tasks.split(",") if t]
    scales = [float(x) for x in args.scales.split(",") if x]
    if not tasks or not scales or args.groups < 1 or args.repeat < 1:
        raise SystemExit(f"need tasks, scales, --groups >= 1 and --repeat >= 1; got --tasks {args.tasks!r} "
                         f"--scales {args.scales!r} --groups {args.groups} --repeat {args.repeat}")
    if args.cv_threads < 0:
        raise SystemExit(f"--cv-threads {args.cv_threads}: expected 0 (OpenCV default) or a count >= 1")
    if args.cv_threads > 0:  # OpenCV's pool spends CPU time waking threads for ~ms-long resizes
        cv2.setNumThreads(args.cv_threads)
    print(f"OpenCV {cv2.__version__}, {cv2.getNumThreads()} thread(s) for both detectors")
    ok = [run_size(s, tasks, args.groups, args.repeat, ForkConfig.faithful()) for s in scales]
    if not all(ok):
        raise SystemExit("different forks from the reference: a bug in one of them")


if __name__ == "__main__":
    main()
