"""GRSD fork-point detection: the walk's rules on hand-built trajectories, the faithful image pipeline against
OpenCV/skimage, and each robust-mode fix shown to matter on synthetic screens."""

from __future__ import annotations

import dataclasses
import hashlib

import cv2
import numpy as np
import pytest
from skimage.metrics import structural_similarity

from algos.buffer import Group, Step, Trajectory
from algos.forks import STATUS_BAR, TOAST, Fork, ForkConfig, action_key, detect_forks, group_forks
from algos.forks.config import region_slice
from algos.forks.screens import Screens, gray, resize_area
from algos.forks.ssim import SSIM, Stats, window_sums
from algos.forks.walk import walk_matrices

H, W = 600, 270  # synthetic screens: SimDroid's 0.25 render scale of 1080x2400
FAITHFUL, ROBUST = ForkConfig.faithful(), ForkConfig.robust()


def screen(seed: int) -> np.ndarray:
    """A distinct synthetic 'screen' per seed: a status bar, a toolbar, list rows of blocks and 'text'."""
    rng = np.random.default_rng(seed)
    img = np.full((H, W, 3), 255, np.uint8)
    img[:24] = 240  # status bar
    img[24:66] = rng.integers(40, 200, 3)  # toolbar colour
    for y in range(80, 560, 48):
        if rng.random() < 0.8:
            img[y:y + 36, 10:46] = rng.integers(0, 256, 3)  # icon
            n = int(rng.integers(4, 20))
            for k in range(n):  # 'words'
                x = 56 + 10 * k
                img[y + 8:y + 18, x:x + 7] = rng.integers(0, 120)
    img[-33:] = 235  # navigation bar
    return img


def step(seed_or_img, action: dict | None = None, ui: list | None = None, key: str = "") -> dict:
    img = screen(seed_or_img) if isinstance(seed_or_img, int) else seed_or_img
    return {"screen": img, "action": action if action is not None else {"action_type": "wait"},
            "ui_elements": ui or [], "screen_key": key}


def click(i: int) -> dict:
    return {"action_type": "click", "index": i}


def pairs(forks: list[Fork]) -> list[tuple[int, int]]:
    return [(f.failed_step, f.teacher_step) for f in forks]


def _pattern(h: int, w: int) -> np.ndarray:
    i, j, c = np.meshgrid(np.arange(h), np.arange(w), np.arange(3), indexing="ij")
    return (((i * 7 + j * 13 + c * 29) ^ (i * j)) % 256).astype(np.uint8)


# ------------------------------------------------ the walk ------------------------------------------------
def _walk(same_rows: list[str], actions_equal: set[tuple[int, int]] = frozenset(),
          scores: dict[tuple[int, int], float] | None = None) -> list[tuple[int, int]]:
    """walk_matrices on a SAME matrix drawn as strings ('1' = same screen)."""
    same = np.array([[c == "1" for c in r] for r in same_rows])
    score = np.where(same, 1.0, 0.0)
    for (i, j), v in (scores or {}).items():
        score[i, j] = v
    act = np.zeros_like(same)
    for i, j in actions_equal:
        act[i, j] = True
    return walk_matrices(same, score, act)


def test_walk_fork_where_the_failed_run_left_the_path():
    # failed: A B X ; teacher: A B C  -> steps 0 and 1 follow the teacher (transition advance), step 2 is at X
    # (no teacher screen), so the fork is at step 1: same screen B, the next screens differ (X vs C)
    assert _walk(["100", "010", "000"]) == [(1, 1)]


def test_walk_transition_advance_skips_and_raises_the_lower_bound():
    # failed: A B C D' ; teacher: A B C D -> every step advances except the last: fork (3, 3) (terminal)
    assert _walk(["1000", "0100", "0010", "0001"]) == [(3, 3)]
    # the advance takes the first J only: with A repeated in the teacher (A A B), lo becomes 1, not 2
    assert _walk(["110", "001", "000"]) == [(1, 2)]


def test_walk_identical_action_is_not_a_candidate():
    # failed step 1 and teacher step 1 share screen and action: no fork there
    assert _walk(["100", "010", "000"], actions_equal={(1, 1)}) == []


def test_walk_terminal_steps_skip_the_next_screen_check():
    # the failed trajectory ends (gives up) on teacher screen 1: a fork although there is no next screen
    assert _walk(["10", "01"]) == [(1, 1)]
    # the teacher's last step needs no next screen either
    assert _walk(["01", "00"]) == [(0, 1)]


def test_walk_same_transition_is_no_fork():
    # step 0 acts differently (no action equal anywhere) but goes A -> B like the teacher: that transition
    # is the same, so it advances instead of forking; the fork is where the next screens part (step 1)
    assert _walk(["100", "010", "000"], actions_equal=set()) == [(1, 1)]
    # with the teacher's B repeated, step 1 can go B -> B like teacher 1 -> 2: advance, then step 2 forks
    assert _walk(["1000", "0110", "0110", "0000"]) == [(2, 2)]


def test_walk_earliest_argmax_on_ties_and_highest_score_wins():
    # failed step 0 is at a screen the teacher shows at steps 1 and 3 (no transitions match)
    assert _walk(["0101", "0000"], scores={(0, 1): 0.97, (0, 3): 0.97}) == [(0, 1)]
    assert _walk(["0101", "0000"], scores={(0, 1): 0.96, (0, 3): 0.99}) == [(0, 3)]


def test_walk_lower_bound_is_monotone_and_a_teacher_may_teach_many():
    # failed: loops on the teacher's screen 2 (A B C C C ...): a fork at step 2 (teacher 2), then later steps
    # may only use teacher steps >= 2; steps 3 and 4 are also at screen 2 -> same teacher again
    rows = ["10000", "01000", "00100", "00100", "00100"]
    got = _walk(rows)
    assert got == [(2, 2), (3, 2), (4, 2)]
    assert all(b >= a for (_, a), (_, b) in zip(got, got[1:], strict=False))
    # a failed step matching only a teacher step below the bound gets nothing
    assert _walk(["00100", "10000"]) == [(0, 2)]


def test_walk_matrices_checks_shapes():
    with pytest.raises(ValueError, match="shapes"):
        walk_matrices(np.zeros((2, 2), bool), np.zeros((2, 3)), np.zeros((2, 2), bool))


# ------------------------------------------- faithful end to end -------------------------------------------
def test_detect_forks_on_synthetic_screens():
    # teacher: A B C D (actions 0..3); failed: A B' (detour) B X ; the fork is step 0 at A (click 7, and the
    # next screens B' != B), then step 2 is back on B (teacher 1) with another action, next X != C: fork
    teacher = [step(1, click(0)), step(2, click(1)), step(3, click(2)), step(4, click(3))]
    back = {"action_type": "navigate_back"}
    failed = [step(1, click(7)), step(9, back), step(2, click(5)), step(8, click(0))]
    forks = detect_forks(teacher, failed)
    assert pairs(forks) == [(0, 0), (2, 1)]
    assert forks[0].sim_current == 1.0 and forks[0].sim_next < 0.95
    # steps can be objects too, and the robust detector agrees on clean screens
    objs = [type("S", (), s)() for s in failed]
    assert pairs(detect_forks(teacher, objs)) == pairs(detect_forks(teacher, failed, ROBUST))
    # a terminal fork reports nan as next similarity
    end = detect_forks(teacher, [step(1, click(7))])
    assert pairs(end) == [(0, 0)] and np.isnan(end[0].sim_next)


def test_loop_back_to_the_same_screen():
    # failed goes A -> B -> A (back) -> B -> C' : the teacher is A B C D; the second A/B pass advances again
    teacher = [step(1, click(0)), step(2, click(1)), step(3, click(2)), step(4, click(3))]
    failed = [step(1, click(0)), step(2, {"action_type": "navigate_back"}), step(1, click(0)),
              step(2, click(9)), step(6, click(0))]
    assert pairs(detect_forks(teacher, failed)) == [(1, 1), (3, 1)]


def test_hash_prefilter_short_circuits_ssim(monkeypatch):
    calls = []
    real = SSIM.score

    def counting(self, *a, **k):
        calls.append(1)
        return real(self, *a, **k)

    monkeypatch.setattr(SSIM, "score", counting)
    # an inverted screen: its mean hash disagrees everywhere -> 'different' without any SSIM
    a = screen(1)
    forks = detect_forks([step(a, click(0))], [step(255 - a, click(1))])
    assert forks == [] and calls == []
    # a slightly changed screen passes the prefilter and is scored by SSIM
    b = a.copy()
    b[300:310, 100:140] = 0
    detect_forks([step(a, click(0))], [step(b, click(1))])
    assert len(calls) == 1


def test_faithful_score_is_hash_similarity_below_the_prefilter():
    scr = Screens(FAITHFUL, 480)
    ids = scr.add_many([screen(1), 255 - screen(1)], ["a", "b"])
    h = float(np.mean(scr.bits[ids[0]] == scr.bits[ids[1]]))
    f = detect_forks([step(1, click(0))], [step(255 - screen(1), click(1))])
    assert h < 0.8 and f == []


# ---------------------------------------------- image pipeline ---------------------------------------------
# sha256 prefixes of cv2.resize(pattern, size, interpolation=cv2.INTER_AREA), recorded with opencv-python
# 4.14.0.94 (and identical with 5.0.0.93): integer ratios (2x2 rounds halves up, 3x2 to even), fractional
# downscales, the 16x16 hash grid, growing and mixed axes (cv2's fixed-point 'area mode' bilinear).
CV2_AREA = [
    ((120, 54), (48, 27), "b3c7a56446caadd4"),
    ((233, 108), (48, 27), "95c251e3281d55d7"),
    ((233, 108), (16, 16), "2a049f5b64d76c8c"),
    ((64, 64), (32, 32), "7edf81b8a584136f"),
    ((90, 60), (30, 30), "94fbfb2077e77147"),
    ((90, 60), (20, 45), "01939932e4c63abe"),
    ((58, 27), (48, 27), "4fc1a784382d2ae1"),
    ((21, 10), (48, 27), "21d313bda3870457"),
    ((100, 60), (60, 100), "bd008e4e61c89781"),
    ((240, 108), (18, 40), "46dede11d3b196de"),
]


@pytest.mark.parametrize("src,size,digest", CV2_AREA)
def test_resize_area_matches_opencv(src, size, digest):
    out = resize_area(_pattern(*src), size)
    assert out.shape == (size[1], size[0], 3)
    assert hashlib.sha256(out.tobytes()).hexdigest()[:16] == digest


def test_resize_area_is_area_averaging():
    rng = np.random.default_rng(0)
    img = rng.integers(0, 256, (90, 60, 3), dtype=np.uint8)
    # integer ratio: block means (3x3 blocks; no exact .5 ties with 9 pixels)
    blocks = img.reshape(30, 3, 20, 3, 3).mean(axis=(1, 3))
    assert np.array_equal(resize_area(img, (20, 30)), np.rint(blocks).astype(np.uint8))
    # fractional ratio: the exact area integral (float64), away from rounding ties
    h, w, dh, dw = 90, 60, 37, 23

    def weights(s: int, d: int) -> np.ndarray:
        m = np.zeros((d, s))
        for k in range(d):
            a, b = k * s / d, (k + 1) * s / d
            for p in range(int(a), min(s, int(np.ceil(b)))):
                m[k, p] = min(b, p + 1) - max(a, p)
        return m / (s / d)
    exact = np.einsum("ys,sxc->yxc", weights(h, dh), img.astype(float))
    exact = np.einsum("xs,ysc->yxc", weights(w, dw), exact)
    away = np.abs(exact - np.floor(exact) - 0.5) > 1e-3
    assert np.array_equal(resize_area(img, (dw, dh))[away], np.rint(exact).astype(np.uint8)[away])
    # the 2x2 kernel rounds halves up, as OpenCV's SIMD path does
    two = np.array([[[1], [2]], [[2], [2]]], np.uint8).repeat(3, axis=2)
    assert resize_area(two, (1, 1))[0, 0, 0] == 2
    assert resize_area(img[:, :, 0], (20, 30)).shape == (30, 20)
    with pytest.raises(ValueError, match="uint8"):  # screens are 8-bit images, as UI-Voyager reads them
        Screens(FAITHFUL, 480).add_many([img.astype(np.float32)], ["x"])


def test_gray_matches_the_recorded_opencv_output():
    g = gray(_pattern(50, 40))
    assert hashlib.sha256(g.tobytes()).hexdigest()[:16] == "dd4c84e31c0895b0"


def test_ssim_matches_skimage():
    rng = np.random.default_rng(1)
    engine = SSIM(FAITHFUL)
    for h, w in [(270, 480), (31, 47), (64, 9)]:
        a = rng.integers(0, 256, (h, w), dtype=np.uint8)
        for b in (rng.integers(0, 256, (h, w), dtype=np.uint8),
                  np.clip(a.astype(int) + rng.integers(-25, 25, (h, w)), 0, 255).astype(np.uint8),
                  np.where(np.arange(w) < w // 3, 255 - a, a).astype(np.uint8)):
            ours = engine.score(Stats(a, 7), Stats(b, 7))
            ref = structural_similarity(a.astype(float), b.astype(float), data_range=255.0)
            assert abs(ours - ref) < 1e-6
            # the early-out returns an upper bound below the floor, the exact value above it
            bound = engine.score(Stats(a, 7), Stats(b, 7), floor=0.95)
            assert (bound >= ref - 1e-6 and bound < 0.95) if ref < 0.95 else abs(bound - ref) < 1e-6


def test_gray_screens_get_the_direct_thumbnails():
    """Gray (H, W) screens take the same path (one channel, no colour conversion)."""
    rng = np.random.default_rng(5)
    a = rng.integers(0, 256, (1200, 540), dtype=np.uint8)
    b = a.copy()
    b[500:520] = 0
    scr = Screens(FAITHFUL, 480)
    ids = scr.add_many([a, b], ["a", "b"])
    for f, fid in zip((a, b), ids, strict=True):
        crop = f[int(1200 * FAITHFUL.crop_top):]
        assert np.array_equal(scr.thumbnail(fid), resize_area(crop, FAITHFUL.thumb_size))
        assert np.array_equal(scr.small[fid], resize_area(crop, (16, 16)))
    ga, gb = (scr.thumbnail(i).astype(float) for i in ids)
    ref = structural_similarity(ga, gb, data_range=255.0)
    assert abs(scr.score(ids[0], ids[1]) - ref) < 1e-6


def test_masked_ssim_of_near_duplicates_matches_skimage():
    """Scores (exact, with a floor, repeated, on near-duplicates, with masked regions) must equal skimage's
    SSIM over the same windows."""
    base = np.kron(screen(4), np.ones((2, 2, 1), np.uint8))  # 1200x540: a downscale, so rows are pooled
    frames = [base]
    for y0, y1, v in ((300, 340, 0), (300, 340, 90), (700, 760, 30), (200, 1100, 255)):
        f = base.copy()
        f[y0:y1, 40:400] = v
        frames.append(f)
    for cfg, regions in ((FAITHFUL, ()), (dataclasses.replace(FAITHFUL, masks=(STATUS_BAR,)), (TOAST,))):
        scr = Screens(cfg, 480)
        ids = scr.add_many(frames, ["f"] * len(frames))
        ignore = scr.static_mask(scr.thumbnail(ids[0]).shape).copy()
        for r in regions:
            ignore[region_slice(r, *ignore.shape)] = True
        keep = window_sums(ignore.astype(np.uint8), 7) == 0
        for a, b in [(0, 1), (0, 2), (1, 2), (0, 1), (0, 3), (2, 3), (0, 4), (3, 4)]:
            fa, fb = ids[a], ids[b]
            _, full = structural_similarity(scr.thumbnail(fa).astype(float), scr.thumbnail(fb).astype(float),
                                            data_range=255.0, full=True)
            ref = float(full[3:-3, 3:-3][keep].mean())  # skimage's windows are those that fit, cropped 3
            assert abs(scr.score(fa, fb, regions) - ref) < 1e-6
            bound = scr.score(fb, fa, regions, floor=0.95)
            assert (bound >= ref - 1e-6 and bound < 0.95) if ref < 0.95 else abs(bound - ref) < 1e-6


def test_faithful_thumbnail_squashes_and_crops():
    scr = Screens(FAITHFUL, 480)
    (fid,) = scr.add_many([screen(1)], ["x"])
    assert scr.thumbnail(fid).shape == (270, 480) and scr.bits[fid].shape == (256,)
    robust = Screens(ROBUST, 180)
    (fid,) = robust.add_many([screen(1)], ["x"])
    assert robust.thumbnail(fid).shape == (400, 180)  # aspect kept: 600x270 -> 400x180


@pytest.mark.parametrize("cfg", [FAITHFUL, ROBUST], ids=["faithful", "robust"])
@pytest.mark.parametrize("shape", [(600, 270), (1200, 540), (2400, 1080), (601, 271)])
def test_thumbnails_and_hash_grids_are_opencv_s(cfg, shape):
    """Every frame's thumbnail and hash grid are exactly OpenCV's (INTER_AREA resize of the crop, RGB to
    gray) of its own screen, and frames are deduplicated by content."""
    h, w = shape
    rng = np.random.default_rng(h)
    base = np.kron(screen(3), np.ones((h // H + 1, w // W + 1, 1), np.uint8))[:h, :w]
    stripes = np.broadcast_to(((np.arange(h) % 7) * 37 % 256).astype(np.uint8)[:, None, None], (h, w, 3))
    frames = [base, stripes.copy()]  # stripes: equal bands at rows whose area weights differ
    for k in range(6):  # edits of a few rows, of one band boundary row, a toast-like block, a new screen
        f = frames[rng.integers(len(frames))].copy()
        y = int(rng.integers(h // 10, h - 48))  # below the faithful crop and the robust status-bar mask
        if k == 3:
            f[y] = 255 - f[y]
        elif k == 5:
            f = np.kron(screen(9), np.ones((h // H + 1, w // W + 1, 1), np.uint8))[:h, :w].copy()
        else:
            f[y:y + int(rng.integers(1, 40)), int(rng.integers(0, w // 2)):] = rng.integers(0, 256, 3)
        frames.append(f)
    scr = Screens(cfg, min(cfg.thumb_size[0], w))
    ids = scr.add_many(frames[:4], ["a"] * 4) + scr.add_many(frames[4:] + frames[:2], ["b"] * 6)
    assert ids[8:] == ids[:2] and len(set(ids)) == len(frames)  # equal screens share an id, others don't
    for f, fid in zip(frames, ids, strict=False):
        crop = f[int(h * cfg.crop_top):]
        size = scr.thumb_size(crop.shape)
        expect = cv2.cvtColor(cv2.resize(crop, size, interpolation=cv2.INTER_AREA), cv2.COLOR_RGB2GRAY)
        assert np.array_equal(scr.thumbnail(fid), expect)
        hs = (cfg.hash_size, cfg.hash_size)
        if cfg.keep_aspect:
            masked = np.where(scr.static_mask(expect.shape), 0, expect).astype(np.uint8)
            small = cv2.resize(masked, hs, interpolation=cv2.INTER_AREA)
        else:
            small = cv2.cvtColor(cv2.resize(crop, hs, interpolation=cv2.INTER_AREA), cv2.COLOR_RGB2GRAY)
        assert np.array_equal(scr.small[fid], small)


# ------------------------------------------------ robust mode -----------------------------------------------
def _same(cfg: ForkConfig, a: dict, b: dict) -> bool:
    """Whether the detector puts a fork between a one-step teacher at `a` and a one-step failure at `b`
    with different actions (a terminal step: a fork exactly when SAME(a, b))."""
    a, b = dict(a, action=click(0)), dict(b, action=click(1))
    return bool(detect_forks([a], [b], cfg))


def test_status_bar_clock_is_cropped_faithful_and_masked_robust():
    a = screen(1)
    b = a.copy()
    b[4:15, 12:40] = 0  # the clock's digits change
    assert _same(FAITHFUL, step(a), step(b)) and _same(ROBUST, step(a), step(b))
    c = a.copy()
    c[100:140, 60:200] = 0  # the same change in the content is a different screen for the robust check
    assert not _same(ROBUST, step(a), step(c))


def _ui(*texts: str) -> list[dict]:
    return [{"text": t, "class_name": "android.widget.TextView", "package_name": "app", "is_enabled": True,
             "bbox_pixels": {"x_min": 0, "x_max": 1080, "y_min": 300 + 200 * k, "y_max": 480 + 200 * k}}
            for k, t in enumerate(texts)]


def test_toast_is_excused_when_the_element_trees_agree():
    a = screen(1)
    b = a.copy()
    rows = slice(int(TOAST[1] * H) + 2, int(TOAST[3] * H) - 2)
    b[rows, 30:240] = (60, 64, 67)  # a dark toast card
    for x in range(45, 225, 9):
        b[rows.start + 20:rows.start + 34, x:x + 6] = 255  # its text
    ui = _ui("Inbox", "Settings")
    assert not _same(FAITHFUL, step(a), step(b))  # SSIM drops below 0.95
    assert _same(ROBUST, step(a, ui=ui), step(b, ui=ui))
    assert not _same(dataclasses.replace(ROBUST, overlay_regions=()), step(a, ui=ui), step(b, ui=ui))
    # the same card where the trees disagree about that region is a real difference
    other = _ui("Inbox", "Settings", "Saved")
    other[2]["bbox_pixels"] = {"x_min": 200, "x_max": 880, "y_min": 1900, "y_max": 2100}
    assert not _same(ROBUST, step(a, ui=ui), step(b, ui=other))


def test_local_check_sees_a_changed_digit_that_ssim_averages_away():
    a = screen(3)
    b = a.copy()
    b[200:212, 120:127] = 255 - b[200:212, 120:127]  # one 'glyph' changes
    assert _same(FAITHFUL, step(a), step(b))  # SSIM of the squashed thumbnail stays >= 0.95
    assert not _same(ROBUST, step(a), step(b))
    assert _same(dataclasses.replace(ROBUST, local_diff=0), step(a), step(b))


def test_caret_blink_is_excused():
    a = screen(4)
    b = a.copy()
    b[300:318, 150:152] = (26, 115, 232)  # a 2-pixel caret in a field
    assert _same(ROBUST, step(a), step(b))
    assert not _same(dataclasses.replace(ROBUST, caret=False), step(a), step(b))


def test_mid_transition_blend_settles_to_the_screen_it_becomes():
    prev, cur = screen(5), screen(6)
    blend = (0.5 * prev + 0.5 * cur).round().astype(np.uint8)
    # teacher: P -> C (clean); failed: P -> blend(P, C) -> ... the blend is the failed run's view of C
    teacher = [step(prev, click(0)), step(cur, click(1)), step(7, click(2))]
    failed = [step(prev, click(0)), step(blend, click(4)), step(8, click(0))]
    assert pairs(detect_forks(teacher, failed, ROBUST)) == [(1, 1)]
    assert pairs(detect_forks(teacher, failed, dataclasses.replace(ROBUST, deblend=False))) == []
    assert pairs(detect_forks(teacher, failed, FAITHFUL)) == []


def test_click_by_index_and_by_coordinates_on_one_element_are_the_same_action():
    ui = _ui("Inbox", "Settings")
    by_index = {"action_type": "click", "index": 1}
    by_xy = {"action_type": "click", "x": 540, "y": 600}  # inside element 1's box
    elsewhere = {"action_type": "click", "x": 540, "y": 400}  # element 0
    assert action_key(by_index, ui, FAITHFUL) != action_key(by_xy, ui, FAITHFUL)
    assert action_key(by_index, ui, ROBUST) == action_key(by_xy, ui, ROBUST)
    assert action_key(by_index, ui, ROBUST) != action_key(elsewhere, ui, ROBUST)
    assert action_key({"action_type": "swipe", "direction": "up"}, ui, ROBUST) == action_key(
        {"action_type": "scroll", "direction": "down"}, ui, ROBUST)
    assert action_key(None, ui, ROBUST) is None
    # at a terminal step the action decides: same target -> no fork (robust), a fork (faithful)
    a = step(1, by_index, ui)
    b = step(1, by_xy, ui)
    assert detect_forks([a], [b], ROBUST) == [] and pairs(detect_forks([a], [b], FAITHFUL)) == [(0, 0)]
    # invalid actions never equal anything, not even each other
    assert pairs(detect_forks([step(1, None)], [dict(step(1), action=None)], ROBUST)) == [(0, 0)]


def test_a11y_and_mode_needs_the_trees_to_agree():
    a = screen(1)
    cfg = dataclasses.replace(ROBUST, a11y="and", a11y_threshold=1.0)
    assert _same(cfg, step(a, ui=_ui("x", "y")), step(a, ui=_ui("x", "y")))
    assert not _same(cfg, step(a, ui=_ui("x", "y")), step(a, ui=_ui("x", "z")))
    assert _same(ROBUST, step(a, ui=_ui("x", "y")), step(a, ui=_ui("x", "z")))  # confirm: pixels decide


def test_oracle_mode_compares_screen_keys():
    cfg = dataclasses.replace(FAITHFUL, oracle=True)
    teacher = [step(1, click(0), key="A"), step(2, click(1), key="B")]
    failed = [step(9, click(5), key="A"), step(8, click(0), key="X")]
    assert pairs(detect_forks(teacher, failed, cfg)) == [(0, 0)]


def test_config_validation_names_the_bad_value():
    with pytest.raises(ValueError, match="teacher='best'"):
        ForkConfig(teacher="best")
    with pytest.raises(ValueError, match="region"):
        ForkConfig(masks=((0.0, 0.5, 1.0, 0.4),))
    with pytest.raises(ValueError, match="win_size=15"):  # SSIM's exact window sums are int32
        ForkConfig(win_size=15)


# ----------------------------------------------- group_forks ------------------------------------------------
def _traj(gid: str, r: int, seeds: list[int], actions: list[dict | None], success: bool,
          errored: bool = False, thumbs: bool = False) -> Trajectory:
    tr = Trajectory(f"{gid}-r{r}", gid, "Task", 0, {}, "goal", score=float(success), success=success,
                    errored=errored)
    for t, (sd, a) in enumerate(zip(seeds, actions, strict=True)):
        img = screen(sd)
        tr.steps.append(Step(gid, tr.traj_id, t, "goal", [], "", "", a, a is not None,
                             frame=None if thumbs else img, thumbnail=img if thumbs else None))
    return tr


def test_group_forks_on_a_buffer_group():
    g = Group("g", "Task", 0, {})
    g.trajectories = [
        _traj("g", 0, [1, 2, 3, 4], [click(0), click(1), click(2), click(3)], True),  # long success
        _traj("g", 1, [1, 2, 4], [click(0), click(5), click(3)], True),  # shortest success: the faithful base
        _traj("g", 2, [1, 2, 9], [click(0), click(7), None], False),  # failure
        _traj("g", 3, [1, 6], [click(8), click(0)], False, errored=True),  # errored: ignored
        _traj("g", 4, [1, 2, 3, 8], [click(0), click(1), click(6), click(0)], False, thumbs=True),
    ]
    got = {(f.traj_id, t.traj_id, k.failed_step, k.teacher_step) for f, t, k in group_forks(g)}
    assert got == {("g-r2", "g-r1", 1, 1), ("g-r4", "g-r1", 1, 1)}
    # robust picks, for r4, the success showing its screens (r0 shares 1 2 3; r1 only 1 2) by the margin
    robust = {(f.traj_id, t.traj_id, k.failed_step, k.teacher_step)
              for f, t, k in group_forks(g, dataclasses.replace(ROBUST, teacher_margin=1))}
    assert robust == {("g-r2", "g-r1", 1, 1), ("g-r4", "g-r0", 2, 2)}
    default = {(f.traj_id, t.traj_id) for f, t, _ in group_forks(g, ROBUST)}  # margin 2: r0 not enough
    assert default == {("g-r2", "g-r1"), ("g-r4", "g-r1")}
    assert group_forks(Group("h", "Task", 0, {}, [g.trajectories[0]])) == []  # no failure: no forks


def test_group_forks_needs_screenshots():
    g = Group("g", "Task", 0, {})
    g.trajectories = [_traj("g", 0, [1, 2], [click(0), click(1)], True),
                      _traj("g", 1, [1, 3], [click(2), click(1)], False)]
    g.trajectories[1].steps[1].frame = None
    with pytest.raises(ValueError, match="'g-r1'"):
        group_forks(g)


# ------------------------------------------- recorded decisions --------------------------------------------
def test_decisions_on_the_grsd_test_groups_match_the_record():
    """The forks and screen classes recorded by benchmarks/fork_decisions.py (before fork detection moved to
    OpenCV and lost its row pools) on the GRSD test groups, faithful, robust and clean or noisy screens."""
    import importlib.util
    from pathlib import Path

    bench = Path(__file__).resolve().parents[2] / "benchmarks"
    spec = importlib.util.spec_from_file_location("fork_decisions", bench / "fork_decisions.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    diffs, n_groups, n_forks = mod.check(str(bench / "data" / "fork_decisions.json"), "fixtures")
    assert diffs == [] and n_groups == 6 and n_forks == 16
