"""GRSD fork points (UI-Voyager stage 2): where a failed rollout faced a screen that a successful one also
faced, acted differently, and went somewhere else. Each fork becomes an SFT sample (the failed step's prompt
with the teacher step's response); algos/grsd.py builds those.

One walk (`walk`: the rule list of DESIGN.md "GRSD fork-point detection") over SAME decisions between a
failed trajectory and a teacher; two ways of deciding SAME:

- faithful (`ForkConfig.faithful()`): UI-Voyager's published detector (cores/fork_utils.py and
  fork_algorithm.py in ui-voyager/UI-Voyager), re-implemented: crop the top 25/878, cv2 INTER_AREA resize to
  480x270 (squashing portrait screens), cv2 BGR2GRAY; a 16x16 mean hash below 0.80 similarity means
  different (the score is then the hash similarity); identical thumbnails score 1.0; else skimage's SSIM (7x7
  uniform window, K1=0.01, K2=0.03, data_range 255); SAME iff score >= 0.95 - 1e-4; exact action-dict
  equality (an invalid action equals nothing); base = the shortest success. `resize_area` and `rgb_to_gray`
  reproduce OpenCV bit for bit (checked against opencv-python 4.14 and 5.0 on noise, gradients and 576
  SimDroid thumbnails and hash grids from full, half and quarter-scale screens and 96-wide thumbnails), so no
  cv2 is needed. SSIM agrees with skimage to ~1e-8 (integer window sums, float32 only in the last ratio).
- robust (`ForkConfig.robust()`): fixes for its known weaknesses, each a switchable field, each measured in
  benchmarks/forkpoint_quality.py: aspect-preserving thumbnails; status/navigation bars masked (regions are
  fractions of the screen, so they fit AndroidWorld's 1080x2400 and any render scale); a local check (any
  pixel differing by > local_diff outside the masks makes screens different: SSIM's mean hides a changed
  digit) with excuses for blinking carets and for toasts / heads-up notifications (the element trees agree
  over that region, or without trees the difference looks like a pasted card); screenshots caught
  mid-transition (a blend with the previous screen) settled to the screen they become; actions compared by
  target element; accessibility trees ('confirm' by default, 'and'/'or' optional); and the teacher chosen
  among all successes by shared screens.

Speed (benchmarks/forkpoint_speed.py): frames are deduplicated by their bytes (the compared part). A thumbnail
row of an area downscale depends only on the source rows under it, so rows are keyed by a fingerprint of
those rows (and their place) and each distinct row is computed once, in batches (`_Screens._plan`): the
unchanged bulk of consecutive steps and sibling rollouts is copied, not recomputed; hash grids likewise.
In faithful-style modes a thumbnail row is only computed when a comparison first reads it (like
UI-Voyager's thumbnails, made on a screen's first pass of the hash prefilter, but per row). The walk asks
for comparisons lazily. SSIM is summed a window row at a time: a window row whose pixels are
equal in both thumbnails scores exactly 1 and is skipped, and the sum of (1 - SSIM) of every other window
row is kept under the pair of row ids, so a pair of near-duplicates of screens already compared reuses most
of it; new window rows get their per-thumbnail terms (window sums, computed once per window row) and only
the cross term per pair, over the columns where the pixels differ, in bands of rows, stopping once an upper
bound proves the pair below the threshold.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import itertools
import json
import math
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

try:  # a fast frame fingerprint (xxhash comes with `datasets`); blake2b otherwise
    import xxhash

    def _digest(a: np.ndarray) -> bytes:
        return xxhash.xxh3_128_digest(np.ascontiguousarray(a))

    def _band_keys(buf: memoryview, spans: Sequence[tuple[int, int]]) -> list[int]:
        """128-bit fingerprints of byte spans of buf, each seeded by its position in `spans`."""
        h = xxhash.xxh3_128_intdigest
        return [h(buf[a:b], d) for d, (a, b) in enumerate(spans)]
except ImportError:  # pragma: no cover - depends on the environment

    def _digest(a: np.ndarray) -> bytes:
        return hashlib.blake2b(np.ascontiguousarray(a), digest_size=16).digest()

    def _band_keys(buf: memoryview, spans: Sequence[tuple[int, int]]) -> list[int]:
        return [int.from_bytes(hashlib.blake2b(buf[a:b], digest_size=16, salt=d.to_bytes(16, "little"))
                               .digest(), "little") for d, (a, b) in enumerate(spans)]


# ===================================== cv2-exact image operations ==========================================
@functools.lru_cache(maxsize=64)
def _area_table(ssize: int, dsize: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """OpenCV's INTER_AREA table for one axis (computeResizeAreaTab): for each destination pixel, the source
    pixels it covers with float32 weights = covered fraction / cell width. Returned padded to K columns
    (index 0, weight 0) with the per-row count."""
    scale = 1.0 / (dsize / ssize)  # cv2 derives scale from the inverse, which matters on exact boundaries
    rows: list[list[tuple[int, float]]] = []
    for d in range(dsize):
        f1 = d * scale
        f2 = f1 + scale
        cell = min(scale, ssize - f1)
        s1, s2 = math.ceil(f1), math.floor(f2)
        s2 = min(s2, ssize - 1)
        s1 = min(s1, s2)
        row = []
        if s1 - f1 > 1e-3:
            row.append((s1 - 1, (s1 - f1) / cell))
        row += [(s, 1.0 / cell) for s in range(s1, s2)]
        if f2 - s2 > 1e-3:
            row.append((s2, min(min(f2 - s2, 1.0), cell) / cell))
        rows.append(row)
    k = max(len(r) for r in rows)
    idx = np.zeros((dsize, k), np.intp)
    w = np.zeros((dsize, k), np.float32)
    for d, row in enumerate(rows):
        for j, (s, a) in enumerate(row):
            idx[d, j], w[d, j] = s, a
    return idx, w, np.array([len(r) for r in rows])


def _area_exact(x: np.ndarray | Sequence[np.ndarray], ys: np.ndarray, xs: np.ndarray, tab_y, tab_x,
                img: np.ndarray | None = None) -> np.ndarray:
    """cv2's generic area resize at output pixels (ys, xs), all channels: float32 sums in OpenCV's order (each
    source row reduced horizontally, then the rows accumulated; cumsum adds strictly in sequence), so
    rounding ties break exactly as OpenCV breaks them. Zero-weight padding adds +0 and changes nothing.
    With `img`, x is a list of images and pixel i belongs to x[img[i]]."""
    yi, yw, yn = tab_y
    xi, xw, xn = tab_x
    if yi.shape[1] * xi.shape[1] > 64:  # large cells (hash grids): a slice per pixel beats a fancy gather
        out = np.empty((len(ys), (x if img is None else x[0]).shape[2]), np.float32)
        for p, (y, c) in enumerate(zip(ys.tolist(), xs.tolist(), strict=True)):
            src = x if img is None else x[img[p]]
            r0, c0 = int(yi[y, 0]), int(xi[c, 0])
            block = src[r0:r0 + yn[y], c0:c0 + xn[c]].astype(np.float32) * xw[c, :xn[c]][None, :, None]
            hor = np.cumsum(block, axis=1, dtype=np.float32)[:, -1]
            out[p] = np.cumsum(hor * yw[y, :yn[y]][:, None], axis=0, dtype=np.float32)[-1]
        return out
    rows = yi[ys]  # (P, Ky)
    cols = xi[xs]  # (P, Kx)
    if img is None:
        px = x[rows[:, :, None], cols[:, None, :]]  # (P, Ky, Kx, C)
    else:  # pixels grouped by image: one gather per image
        order = np.argsort(img, kind="stable")
        px = np.empty(rows.shape + cols.shape[1:] + x[0].shape[2:], np.uint8)
        bounds = np.flatnonzero(np.diff(img[order])) + 1
        for part in np.split(order, bounds):
            px[part] = x[img[part[0]]][rows[part][:, :, None], cols[part][:, None, :]]
    prod = px.astype(np.float32)
    prod *= xw[xs][:, None, :, None]
    hor = np.cumsum(prod, axis=2, dtype=np.float32)[:, :, -1]  # (P, Ky, C)
    return np.cumsum(hor * yw[ys][:, :, None], axis=1, dtype=np.float32)[:, -1]  # (P, C)


@functools.lru_cache(maxsize=64)
def _area_plan(ssize: int, dsize: int) -> tuple[np.ndarray, ...]:
    """The area table split for speed: per destination pixel, its whole source pixels (a run: start, count,
    weight) and its two partial ones (index, weight; weight 0 when absent)."""
    idx, w, n = _area_table(ssize, dsize)
    start, count = np.zeros(dsize, np.intp), np.zeros(dsize, np.intp)
    w_mid, first, w_first, last, w_last = (np.zeros(dsize, np.float32), np.zeros(dsize, np.intp),
                                           np.zeros(dsize, np.float32), np.zeros(dsize, np.intp),
                                           np.zeros(dsize, np.float32))
    scale = 1.0 / (dsize / ssize)
    for d in range(dsize):
        row = list(zip(idx[d, :n[d]].tolist(), w[d, :n[d]].tolist(), strict=True))
        f1 = d * scale
        if row and row[0][0] < f1:  # the first source pixel starts before the cell: partial
            first[d], w_first[d] = row.pop(0)
        if row and row[-1][0] + 1 > f1 + scale + 1e-9:  # the last ends after it: partial
            last[d], w_last[d] = row.pop()
        if row:
            start[d], count[d], w_mid[d] = row[0][0], len(row), row[0][1]
    return start, count, w_mid, first, w_first, last, w_last


def _area_rows(x: np.ndarray, ssize: int, dsize: int, sel: np.ndarray | None = None) -> np.ndarray:
    """Area-average the rows of x (ssize, N) down to dsize rows, in float32: integer sums of the whole source
    rows, then the two partial ones (any order: `_area_down_many` settles rounding ties). `sel`: compute
    just these output rows, in this order."""
    start, count, w_mid, first, w_first, last, w_last = _area_plan(ssize, dsize)
    if sel is not None:
        start, count, w_mid, first, w_first, last, w_last = (
            v[sel] for v in (start, count, w_mid, first, w_first, last, w_last))
    k = int(count.max()) if count.size else 0
    if x.dtype != np.uint8:
        acc_t = np.float32
    else:
        acc_t = np.uint16 if k * 255 < 65536 else np.uint32
    if dsize <= 64 or k > 16:  # few long runs of rows: sum each run
        mid = np.stack([x[a:a + n].sum(axis=0, dtype=acc_t) for a, n in zip(start, count, strict=True)])
    else:  # many short runs: add the j-th row of every run at once
        mid = np.zeros((len(count), x.shape[1]), acc_t)
        for i in range(k):
            has = count > i
            if has.all():
                mid += x[start + i]
            else:
                mid[has] += x[start[has] + i]
    out = mid.astype(np.float32)
    out *= w_mid[:, None]
    out += x[first] * w_first[:, None]
    out += x[last] * w_last[:, None]
    return out


def _area_down_many(xs: Sequence[np.ndarray], width: int, height: int, sels: Sequence[np.ndarray],
                    gray: bool = False, v: Sequence[np.ndarray] | None = None) -> list[np.ndarray]:
    """Output rows sels[i] of cv2 INTER_AREA downscales of images xs[i] (all (H, W, C) uint8 of one shape, at
    least one axis a non-integer ratio), as uint8 (len(sels[i]), width, C) arrays, or with `gray` their
    `rgb_to_gray` (len(sels[i]), width) (C = 1: the one channel). A fast pass in float32 (vertical, then
    horizontal as rows of the transposed image: a different order from cv2's), then the pixels whose value
    lies near a rounding tie are recomputed in cv2's own order: off the ties both orders round the same way.
    Rows of several images share the horizontal pass. `v`: their vertical passes (`_area_rows`), if done."""
    h, w, c = xs[0].shape
    if v is None:
        v = [_area_rows(x.reshape(h, w * c), h, height, sel=s) for x, s in zip(xs, sels, strict=True)]
    vv = v[0] if len(v) == 1 else np.concatenate(v)
    n = vv.shape[0]
    vt = np.ascontiguousarray(vv.reshape(n, w, c).transpose(1, 2, 0)).reshape(w, c * n)
    period = _area_period(w, width)
    if period is None:
        out = _area_rows(vt, w, width)  # (x, channel * row)
    else:  # the table repeats every p source / q output columns: a few slices per output phase
        p, q, offs_w = period
        vp = vt.reshape(w // p, p, c * n)
        out = np.empty((width // q, q, c * n), np.float32)
        for j, taps in enumerate(offs_w):
            o = out[:, j]
            np.multiply(vp[:, taps[0][0]], taps[0][1], out=o)
            for src, wt in taps[1:]:
                o += vp[:, src] * wt
        out = out.reshape(width, c * n)
    r = np.rint(out)
    out -= r
    np.abs(out, out=out)  # |frac - 1/2| < 2e-3  <=>  |value - rint(value)| > 1/2 - 2e-3
    flat = np.flatnonzero(out > 0.5 - 2e-3)
    r = r.reshape(width, c, n)
    offs = np.cumsum([0] + [len(s) for s in sels])
    if flat.size:
        px, rest = np.divmod(flat, c * n)
        pc, py = np.divmod(rest, n)
        img = np.searchsorted(offs, py, side="right") - 1
        rows = np.concatenate(sels)[py]
        exact = _area_exact(xs, rows, px, _area_table(h, height), _area_table(w, width), img=img)
        r[px, pc, py] = np.rint(exact[np.arange(len(pc)), pc])
    np.clip(r, 0, 255, out=r)
    if gray and c == 3:  # rgb_to_gray on the rounded values, in exact float32 (see there)
        g = r[:, 0] * _GRAY_W[0]
        g += r[:, 1] * _GRAY_W[1]
        g += r[:, 2] * _GRAY_W[2]
        g += 16384
        g *= np.float32(1 / 32768)
        res = np.floor(g, out=g).astype(np.uint8).T  # (row, x)
    elif gray:  # one channel: already gray
        res = r[:, 0].astype(np.uint8).T
    else:
        res = r.astype(np.uint8).transpose(2, 0, 1)  # (row, x, channel)
    return [np.ascontiguousarray(res[offs[i]:offs[i + 1]]) for i in range(len(xs))]


def _resize_area_down(x: np.ndarray, width: int, height: int, rows: np.ndarray | None = None) -> np.ndarray:
    """Downscale (both axes >= 1) with cv2 INTER_AREA semantics; x is (H, W, C) uint8. `rows`: compute only
    these output rows (an output row depends only on the source rows of its band, `area_bands`)."""
    h, w, c = x.shape
    sy, sx = h / height, w / width
    if sy == int(sy) and sx == int(sx):  # cv2's integer-ratio path: block means
        fy, fx = int(sy), int(sx)
        xb = x.reshape(height, fy, w, c)
        if rows is not None:
            xb = xb[rows]
        acc = np.uint16 if fy * fx * 255 < 65536 else np.uint32
        r = xb[:, 0].astype(acc)
        for i in range(1, fy):
            r += xb[:, i]
        s = r[:, 0::fx].astype(np.int32)
        for j in range(1, fx):
            s += r[:, j::fx]
        if fy == 2 and fx == 2:  # its SIMD 2x2 kernel rounds halves up
            return ((s + 2) >> 2).astype(np.uint8)
        return np.rint(s.astype(np.float32) * np.float32(1.0 / (fy * fx))).clip(0, 255).astype(np.uint8)
    sel = np.arange(height) if rows is None else np.asarray(rows, np.intp)
    return _area_down_many([x], width, height, [sel])[0]


@functools.lru_cache(maxsize=64)
def _area_period(ssize: int, dsize: int) -> tuple[int, int, tuple] | None:
    """When the INTER_AREA table from ssize to dsize repeats every p source / q output pixels (q small: 540
    -> 480 is 9/8, 1080 -> 480 is 9/4), (p, q, per output phase the (source offset, weight) taps); else None.
    The weights are the first period's (float32 rounding differs between periods by ~1e-7: the fast pass's
    rounding ties are settled exactly anyway)."""
    g = math.gcd(ssize, dsize)
    p, q = ssize // g, dsize // g
    idx, w, n = _area_table(ssize, dsize)
    if q > 16 or int(n[:q].sum()) > 48:
        return None
    taps = tuple(tuple((int(idx[j, t]), np.float32(w[j, t])) for t in range(n[j])) for j in range(q))
    for d in range(dsize):
        m, j = divmod(d, q)
        if n[d] != n[j] or any(int(idx[d, t]) != idx[j, t] + m * p or abs(w[d, t] - w[j, t]) > 1e-5
                               for t in range(n[d])):
            return None
    if any(src >= p for phase in taps for src, _ in phase):  # a tap reaching into the next period
        return None
    return p, q, taps


@functools.lru_cache(maxsize=64)
def _cover(ssize: int, fine: int, coarse: int) -> tuple[tuple[int, int], ...]:
    """For each output row of a downscale to `coarse` rows, the range [a, b) of output rows of a downscale
    to `fine` rows whose source bands together contain its source band."""
    fb = area_bands(ssize, fine)
    out = []
    for lo, hi in area_bands(ssize, coarse):
        a = next(d for d, (_, h) in enumerate(fb) if h > lo)
        b = max(d for d, (lo2, _) in enumerate(fb) if lo2 < hi) + 1
        out.append((a, b))
    return tuple(out)


def _coarse_keys(fine_keys: Sequence[int], ssize: int, fine: int, coarse: int) -> list[tuple]:
    """Keys of a coarse downscale's rows from the band keys of a fine one of the same image (`_cover`)."""
    return [(d, tuple(fine_keys[a:b])) for d, (a, b) in enumerate(_cover(ssize, fine, coarse))]


@functools.lru_cache(maxsize=64)
def _byte_spans(row_bytes: int, ssize: int, dsize: int) -> tuple[tuple[int, int], ...]:
    """`area_bands` in bytes of a C-contiguous image with rows of row_bytes."""
    return tuple((lo * row_bytes, hi * row_bytes) for lo, hi in area_bands(ssize, dsize))


@functools.lru_cache(maxsize=64)
def area_bands(ssize: int, dsize: int) -> tuple[tuple[int, int], ...]:
    """For each output row of an INTER_AREA downscale from ssize to dsize rows, the source rows [lo, hi) it
    reads: equal bands at the same output row give equal output rows."""
    idx, _, n = _area_table(ssize, dsize)
    return tuple((int(idx[d, 0]), int(idx[d, n[d] - 1]) + 1) for d in range(dsize))


@functools.lru_cache(maxsize=64)
def _linear_coeffs(ssize: int, dsize: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """cv2's INTER_AREA coefficients when upscaling (its 'area mode' of the bilinear resizer), fixed point
    with 11 fractional bits: source index pairs and weights."""
    inv = dsize / ssize
    scale = 1.0 / inv
    d = np.arange(dsize)
    s = np.floor(d * scale).astype(np.intp)
    f = ((d + 1) - (s + 1) * inv).astype(np.float32)
    f = np.where(f <= 0, np.float32(0), f - np.floor(f)).astype(np.float32)
    over = s >= ssize - 1
    f[over], s[over] = 0, ssize - 1
    w0 = np.rint((np.float32(1) - f) * np.float32(2048)).astype(np.int32)
    w1 = np.rint(f * np.float32(2048)).astype(np.int32)
    return s, np.minimum(s + 1, ssize - 1), w0, w1


def _resize_area_up(x: np.ndarray, width: int, height: int) -> np.ndarray:
    """cv2 INTER_AREA when some axis grows: bilinear with area-mode weights, in OpenCV's fixed point."""
    h, w, c = x.shape
    x0, x1, a0, a1 = _linear_coeffs(w, width)
    y0, y1, b0, b1 = _linear_coeffs(h, height)
    rows, inv = np.unique(np.concatenate([y0, y1]), return_inverse=True)
    xr = x[rows].reshape(len(rows), w * c)
    ch = np.arange(c)
    c0, c1 = (x0[:, None] * c + ch).ravel(), (x1[:, None] * c + ch).ravel()
    hor = np.take(xr, c0, axis=1).astype(np.int32) * np.repeat(a0, c)
    hor += np.take(xr, c1, axis=1).astype(np.int32) * np.repeat(a1, c)
    hor >>= 4
    r0, r1 = hor[inv[:height]], hor[inv[height:]]
    out = ((b0[:, None] * r0) >> 16) + ((b1[:, None] * r1) >> 16) + 2
    out >>= 2
    return out.clip(0, 255).astype(np.uint8).reshape(height, width, c)


def resize_area(img: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    """`cv2.resize(img, size, interpolation=cv2.INTER_AREA)` for uint8 (H, W) or (H, W, C); size = (width,
    height) as in cv2. Downscaling averages areas (float32 weights, ties rounded as OpenCV does); growing an
    axis uses OpenCV's fixed-point bilinear 'area mode'."""
    if img.dtype != np.uint8 or img.ndim not in (2, 3):
        raise ValueError(f"resize_area needs a uint8 (H, W) or (H, W, C) image, got {img.dtype} {img.shape}")
    width, height = int(size[0]), int(size[1])
    if width < 1 or height < 1:
        raise ValueError(f"resize_area size must be positive (width, height), got {size}")
    x = img if img.ndim == 3 else img[:, :, None]
    h, w = x.shape[:2]
    if (h, w) == (height, width):
        out = x.copy()
    elif h >= height and w >= width:
        out = _resize_area_down(x, width, height)
    else:
        out = _resize_area_up(x, width, height)
    return out if img.ndim == 3 else out[:, :, 0]


_GRAY_W = np.array([9798, 19235, 3735], np.float32)


def rgb_to_gray(img: np.ndarray) -> np.ndarray:
    """cv2.cvtColor(bgr, COLOR_BGR2GRAY) for an RGB uint8 image: 0.299 R + 0.587 G + 0.114 B in OpenCV's
    15-bit fixed point (weights 9798, 19235, 3735), rounded. Computed in float32, which is exact here: every
    product and sum is an integer below 2^24, and the final division is by a power of two."""
    if img.ndim == 2:
        return img
    g = img.astype(np.float32) @ _GRAY_W
    g += 16384
    g *= np.float32(1 / 32768)
    return np.floor(g, out=g).astype(np.uint8)


def _gray(img: np.ndarray) -> np.ndarray:
    """rgb_to_gray of an (H, W, C) image whose C may be 1 (a gray screen), or an already gray (H, W) one."""
    if img.ndim == 3 and img.shape[2] == 1:
        return img[:, :, 0]
    return rgb_to_gray(img)


# ============================================== configuration ==============================================
STATUS_BAR = (0.0, 0.0, 1.0, 0.045)  # AndroidWorld's 1080x2400 status bar is ~96-110 px; SimDroid's is 96
NAV_BAR = (0.0, 0.945, 1.0, 1.0)  # 3-button navigation bar (132 px of 2400)
HEADS_UP = (0.0, 0.04, 1.0, 0.145)  # where heads-up notifications drop in, below the status bar
TOAST = (0.1, 0.78, 0.9, 0.885)  # where system toasts sit, above the navigation bar
SYSTEMUI = "com.android.systemui"


@dataclasses.dataclass
class ForkConfig:
    """Every knob of fork detection. `faithful()` is UI-Voyager's detector as published; `robust()` turns on
    our fixes. Regions are (x0, y0, x1, y1) fractions of the screen, so they fit any resolution."""

    threshold: float = 0.95  # theta: SAME(a, b) iff score >= threshold - tolerance
    tolerance: float = 1e-4
    # screen -> gray thumbnail
    crop_top: float = 25 / 878  # fraction of the height cut off the top first (UI-Voyager's status-bar crop)
    thumb_size: tuple[int, int] = (480, 270)  # (width, height), cv2's order (UI-Voyager squashes portrait)
    keep_aspect: bool = False  # thumbnail height from the screen's aspect ratio (width thumb_size[0])
    # prefilter
    hash_size: int = 16  # mean-hash grid
    hash_threshold: float = 0.80  # hash similarity below this: different, without SSIM
    # SSIM (skimage's defaults)
    win_size: int = 7
    k1: float = 0.01
    k2: float = 0.03
    data_range: float = 255.0
    # robust: screen regions
    masks: tuple[tuple[float, float, float, float], ...] = ()  # always ignored (status bar, navigation bar)
    overlay_regions: tuple[tuple[float, float, float, float], ...] = ()  # ignored in a pair when all that
    # differs lies inside them and is no UI: the element trees agree there, or (no trees) it looks like a card
    local_diff: int = 0  # > 0: SAME also needs no thumbnail pixel outside the masks to differ by more than
    # this many gray levels (SSIM's mean hides a changed digit or a toggled switch), after the excuses below
    caret: bool = False  # excuse a difference shaped like a blinking text caret (needs local_diff)
    deblend: bool = False  # a screenshot caught mid-transition (a blend of its trajectory's previous screen
    # and this one) counts as the screen it is becoming
    blend_agreement: float = 0.6  # share of the changed pixels whose blend weight must match the median
    # robust: actions, accessibility tree, teacher
    action_match: str = "exact"  # exact: dict equality (invalid never equal); target: same type and target
    # element (text/description/resource id/class, not coordinates), same arguments
    a11y: str = "off"  # ui_elements fingerprints: off; confirm (pixels decide, but differences excused as
    # overlays or blends need the trees to agree); and (pixels and trees must agree); or (either suffices)
    a11y_threshold: float = 0.9  # multiset Jaccard similarity of two element lists that counts as agreeing
    teacher: str = "shortest"  # shortest: the shortest success (first on ties); similar: per failed rollout,
    # the success showing most of its screens (then the shorter), if it beats the shortest by teacher_margin
    teacher_margin: int = 2  # failed steps a success must cover beyond the shortest's to teach instead
    oracle: bool = False  # SAME iff Step.screen_key is equal (SimDroid's ground truth; for benchmarks)
    screen_size: tuple[int, int] = (1080, 2400)  # logical (width, height) of element boxes and x/y actions

    def __post_init__(self) -> None:
        for name, allowed in (("action_match", ("exact", "target")), ("teacher", ("shortest", "similar")),
                              ("a11y", ("off", "confirm", "and", "or"))):
            if getattr(self, name) not in allowed:
                raise ValueError(f"ForkConfig.{name}={getattr(self, name)!r}; expected one of {allowed}")
        if not 0.0 < self.threshold <= 1.0:
            raise ValueError(f"ForkConfig.threshold={self.threshold}; expected a value in (0, 1]")
        if self.win_size < 3 or self.win_size % 2 == 0:
            raise ValueError(f"ForkConfig.win_size={self.win_size}; expected an odd size >= 3")
        if not 0.0 <= self.crop_top < 1.0:
            raise ValueError(f"ForkConfig.crop_top={self.crop_top}; expected a fraction in [0, 1)")
        for r in self.masks + self.overlay_regions:
            if len(r) != 4 or not (0 <= r[0] < r[2] <= 1 and 0 <= r[1] < r[3] <= 1):
                raise ValueError(f"screen region {r}; expected (x0, y0, x1, y1) fractions with x0<x1, y0<y1")

    @classmethod
    def faithful(cls) -> ForkConfig:
        """UI-Voyager's published detector."""
        return cls()

    @classmethod
    def robust(cls) -> ForkConfig:
        """Our hardened detector (each fix switchable; see benchmarks/forkpoint_quality.py)."""
        return cls(crop_top=0.0, thumb_size=(180, 400), keep_aspect=True, masks=(STATUS_BAR, NAV_BAR),
                   overlay_regions=(HEADS_UP, TOAST), local_diff=16, caret=True, deblend=True,
                   action_match="target", a11y="confirm", teacher="similar")


@dataclasses.dataclass(frozen=True)
class Fork:
    """One fork: the failed step and the teacher step that faced the same screen and acted differently."""

    failed_step: int  # index in the failed trajectory
    teacher_step: int  # index in the teacher (successful) trajectory
    sim_current: float  # similarity of the two current screens
    sim_next: float  # similarity of the two next screens (nan when a step is terminal)


# ================================================ the walk ==================================================
def walk(nf: int, nt: int, same: Callable[[int, int], bool], score: Callable[[int, int], float],
         same_action: Callable[[int, int], bool]) -> list[tuple[int, int]]:
    """UI-Voyager's backward state matching between a failed trajectory (nf steps) and a teacher (nt steps):
    `same(i, j)` whether failed step i and teacher step j show the same screen, `score(i, j)` their
    similarity (the teacher is the highest-scoring candidate, earliest on ties), `same_action(i, j)` whether
    their actions are equal. The next screen of step i is step i+1's, so next-screen comparisons are
    `same(i + 1, j + 1)`. Walking the failed steps with a lower bound `lo` on teacher steps (starts 0):

    1. transition advance: if i is not last and some J >= lo (not last) has same(i, J) and same(i+1, J+1),
       set lo = max(lo, J + 1) for the first such J and skip step i;
    2. candidates: j >= lo with same(i, j), a different action, and (when neither is last) not
       same(i+1, j+1);
    3. the best candidate teaches step i; lo = that j. Each failed step gets at most one teacher.

    Returns (failed_step, teacher_step) pairs. Comparisons are asked for lazily, in UI-Voyager's order."""
    forks: list[tuple[int, int]] = []
    lo = 0
    for i in range(nf):
        last_f = i == nf - 1
        adv = None if last_f else next((j for j in range(lo, nt - 1) if same(i, j) and same(i + 1, j + 1)),
                                       None)
        if adv is not None:
            lo = max(lo, adv + 1)
            continue
        best = None
        for j in range(lo, nt):
            if not same(i, j) or same_action(i, j):
                continue
            if not last_f and j < nt - 1 and same(i + 1, j + 1):
                continue
            s = score(i, j)
            if best is None or s > best[0]:  # strictly greater: the earliest of equal scores stays
                best = (s, j)
        if best is not None:
            forks.append((i, best[1]))
            lo = best[1]
    return forks


def find_forks(same: np.ndarray, score: np.ndarray, same_action: np.ndarray) -> list[tuple[int, int]]:
    """`walk` on precomputed (failed x teacher) matrices."""
    if score.shape != same.shape or same_action.shape != same.shape:
        raise ValueError(f"matrices of shapes {same.shape}, {score.shape}, {same_action.shape}; "
                         "expected equal shapes")
    return walk(*same.shape, lambda i, j: bool(same[i, j]), lambda i, j: float(score[i, j]),
                lambda i, j: bool(same_action[i, j]))


# =========================================== screens -> features ============================================
def _get(step: Any, name: str, default: Any = None) -> Any:
    """A step field from a dict or an object (Step, a dataclass, a namespace)."""
    if isinstance(step, dict):
        return step.get(name, default)
    return getattr(step, name, default)


def _region_slice(region: tuple[float, float, float, float], h: int, w: int) -> tuple[slice, slice]:
    """Pixel rows and columns of an (x0, y0, x1, y1) fraction region, rounded outwards."""
    x0, y0, x1, y1 = region
    return (slice(int(math.floor(y0 * h)), int(math.ceil(y1 * h))),
            slice(int(math.floor(x0 * w)), int(math.ceil(x1 * w))))


_CHUNK = 128  # thumbnail rows computed together: enough to amortise numpy's per-call cost, few enough that
# the float temporaries stay in the CPU cache (and in malloc's reused memory: fresh pages are slow to touch)


class _Rows:
    """The thumbnail rows one crop needs at one size: pool slots of every row, and the rows to compute."""

    def __init__(self, crop: np.ndarray, size: tuple[int, int]):
        self.x = crop if crop.ndim == 3 else crop[:, :, None]
        self.size = size
        self.pool: _RowPool | None = None  # None: compute the thumbnail whole (no downscale)
        self.slots: list[int] = []
        self.need: list[int] = []  # output rows to compute
        self.dest: list[int] = []  # their pool slots
        self.v: np.ndarray | None = None  # their vertical pass (float path), until flushed
        self.whole: np.ndarray | None = None  # the thumbnail, when computed whole


class _Thumbnails(Sequence):
    """`_Screens.gray`: the frames' gray thumbnails, assembled (and their rows computed) on first access."""

    def __init__(self, screens: _Screens):
        self._screens = screens

    def __len__(self) -> int:
        return len(self._screens._gray)

    def __getitem__(self, fid: Any) -> Any:
        if isinstance(fid, slice):
            return [self[i] for i in range(len(self))[fid]]
        return self._screens.thumbnail(fid)


class _RowPool:
    """Gray thumbnail rows of one width in one growing array, found by key. Lazily planned rows keep their
    source (`src`: the job and output row) until `_Screens._ensure` computes them."""

    def __init__(self, width: int):
        self.index: dict[Any, int] = {}
        self.data = np.empty((256, width), np.uint8)
        self.n = 0
        self.src: dict[int, tuple[_Rows, int]] = {}  # slot -> (job, output row) of rows not computed yet

    def reserve(self, key: Any) -> int:
        """A slot for the row of `key` (filled later by `put`)."""
        slot = self.index[key] = self.n
        self.n += 1
        return slot

    def put(self, slots: list[int], rows: np.ndarray) -> None:
        if self.n > len(self.data):
            grown = np.empty((max(self.n, 2 * len(self.data)), self.data.shape[1]), np.uint8)
            grown[:len(self.data)] = self.data
            self.data = grown
        self.data[slots] = rows

    def take(self, slots: list[int]) -> np.ndarray:
        return self.data[slots]


class _Screens:
    """The distinct screens of a set of steps: gray thumbnail, mean-hash bits and SSIM window sums, each
    computed once. Frames are deduplicated by the bytes of the part of the screen that is compared (rows a
    crop or full-width mask removes do not count), identical thumbnails share a thumbnail id, and thumbnail
    rows are shared between frames through row pools (`_plan`)."""

    def __init__(self, cfg: ForkConfig, width: int):
        self.cfg = cfg
        self.width = width  # thumbnail width (robust: the narrowest screen's, if below thumb_size[0])
        self._by_digest: dict[bytes, int] = {}
        self._by_thumb: dict[bytes, int] = {}
        self._gray: list[np.ndarray | None] = []  # uint8 thumbnails (None: not assembled yet)
        self.gray = _Thumbnails(self)  # the same, assembled on access
        self.shape: list[tuple[int, int]] = []  # thumbnail shapes
        # faithful-style comparisons read a pair's thumbnails only where their rows differ: thumbnail rows are
        # then computed when first read
        self.lazy = (cfg.local_diff == 0 and not cfg.deblend and not cfg.overlay_regions
                     and not cfg.keep_aspect)
        self.bits: list[np.ndarray] = []  # bool mean hashes
        self.small: list[np.ndarray] = []  # the hash_size x hash_size gray grids the hashes threshold
        self.thumb: list[int] = []  # id of the first identical thumbnail
        self.rows: list[tuple[_RowPool, np.ndarray] | None] = []  # a thumbnail's pool and its rows' slots
        self._windows: dict[int, np.ndarray] = {}
        self._window_ids: dict[int, dict[bytes, int]] = {}  # per row pool: window rows' slots -> id
        self._window_stats: dict[int, _WindowStats] = {}  # per row pool
        self._stats: dict[int, _FrameStats] = {}
        self._masks: dict[tuple[int, int], np.ndarray] = {}  # thumbnail shape -> pixels the masks ignore
        self._keep: dict[tuple, np.ndarray] = {}
        self._kept: dict[tuple[int, bool], np.ndarray] = {}
        self._rows: dict[tuple, _RowPool] = {}  # (crop shape, size) -> computed thumbnail rows by band key
        self._pending: dict[tuple, list[_Rows]] = {}  # (crop shape, size) -> rows awaiting `_flush`

    def _kept_rows(self, h: int) -> tuple[int, int]:
        """Screen rows that can change a comparison: below the crop, between full-width top/bottom masks."""
        r0, r1 = int(h * self.cfg.crop_top), h
        for x0, y0, x1, y1 in self.cfg.masks:
            if x0 <= 0 and x1 >= 1:
                if y0 <= 0:
                    r0 = max(r0, int(math.ceil(y1 * h)))
                if y1 >= 1:
                    r1 = min(r1, int(math.floor(y0 * h)))
        return r0, max(r0, r1)

    def add(self, screen: Any, who: str) -> int:
        """The frame id of a screen (RGB uint8 (H, W, 3) or gray (H, W)); `who` names it in errors."""
        return self.add_many([screen], [who])[0]

    def add_many(self, screens: Sequence[Any], whos: Sequence[str]) -> list[int]:
        """Frame ids of screens; thumbnails and hash grids are computed for the new distinct frames."""
        cfg = self.cfg
        hs = (cfg.hash_size, cfg.hash_size)
        ids: list[int] = []
        thumbs: list[_Rows] = []
        hashes: list[_Rows] = []
        for screen, who in zip(screens, whos, strict=True):
            a = np.asarray(screen)
            if a.dtype != np.uint8 or a.ndim not in (2, 3) or (a.ndim == 3 and a.shape[2] not in (3, 4)):
                raise ValueError(f"{who}: screen must be a uint8 (H, W, 3) RGB image, got {a.dtype} "
                                 f"{a.shape}")
            if a.ndim == 3 and a.shape[2] == 4:
                a = a[:, :, :3]
            h = a.shape[0]
            r0, r1 = self._kept_rows(h)
            key = _digest(a[r0:r1]) + np.array(a.shape, np.int64).tobytes()
            fid = self._by_digest.get(key)
            if fid is None:  # a new frame, still in the cache: plan its rows and run their vertical pass now
                fid = self._by_digest[key] = len(self._gray) + len(thumbs)
                crop = np.ascontiguousarray(a[int(h * cfg.crop_top):])
                size = self._thumb_size(crop.shape)
                rk = self._row_keys(crop, size)
                thumbs.append(self._plan(crop, size, rk, lazy=self.lazy))
                if not cfg.keep_aspect:  # UI-Voyager: the gray hash grid of the cropped screen
                    ck = None if rk is None else _coarse_keys(rk, crop.shape[0], size[1], hs[1])
                    hashes.append(self._plan(crop, hs, ck))
            ids.append(fid)
        if self.lazy:  # pooled thumbnails stay unassembled until read (`thumbnail`, `pixels`)
            whole = iter(self._finish([j for j in thumbs if j.pool is None]))
            grays = [next(whole) if j.pool is None else None for j in thumbs]
        else:
            grays = self._finish(thumbs)
        if cfg.keep_aspect:  # the hash grid of the thumbnail with the masks zeroed
            smalls = [resize_area(np.where(self.static_mask(g.shape), 0, g).astype(np.uint8), hs)
                      for g in grays]
        else:
            smalls = self._finish(hashes)
        for g, small, job in zip(grays, smalls, thumbs, strict=True):
            fid = len(self._gray)
            slots = None if job.pool is None else np.array(job.slots, np.int64)
            self.rows.append(None if job.pool is None else (job.pool, slots))
            self._gray.append(g)
            self.shape.append((job.size[1], job.size[0]))
            self.small.append(small)
            self.bits.append((small >= small.mean()).ravel())
            if g is None:  # same rows, same thumbnail (equal thumbnails from different rows score 1 by SSIM)
                tkey = b"r" + np.array([id(job.pool)], np.int64).tobytes() + slots.tobytes()
            else:
                tkey = _digest(g) + np.array(g.shape, np.int64).tobytes()
            self.thumb.append(self._by_thumb.setdefault(tkey, fid))
        return ids

    def _thumb_size(self, shape: tuple[int, ...]) -> tuple[int, int]:
        """(width, height) of the thumbnail of a cropped screen of this shape."""
        cfg = self.cfg
        if not cfg.keep_aspect:
            return cfg.thumb_size
        w = min(self.width, shape[1])
        return w, max(cfg.win_size, int(round(w * shape[0] / shape[1])))

    @staticmethod
    def _row_keys(crop: np.ndarray, size: tuple[int, int]) -> list[int] | None:
        """Fingerprints of the source bands of the thumbnail's rows (`area_bands`), None unless the thumbnail
        shrinks both axes."""
        h, w = crop.shape[:2]
        if h < size[1] or w < size[0] or (h, w) == (size[1], size[0]):
            return None
        return _band_keys(memoryview(crop).cast("B"), _byte_spans(crop.strides[0], h, size[1]))

    def _plan(self, crop: np.ndarray, size: tuple[int, int], keys: Sequence[Any] | None,
              lazy: bool = False) -> _Rows:
        """UI-Voyager's phi, `rgb_to_gray(resize_area(crop, size))`, with each distinct output row computed
        once. An INTER_AREA output row depends only on the source rows of its band (`area_bands`), so a row
        whose band was seen before at the same place (the unchanged bulk of consecutive steps and of sibling
        rollouts) is copied. keys: per output row, a key determined by its source band (None: compute the
        crop whole). New rows get slots in the row pool and are computed now, while the screen is in the CPU
        cache, except the horizontal pass of the float path, which rows of one shape share (`_flush`, in
        chunks of `_CHUNK` rows); `_finish` assembles the thumbnails. `lazy` (float path): the new rows are
        only planned, and computed when first read (`_ensure`)."""
        job = _Rows(crop, size)
        x = job.x
        h, w, c = x.shape
        if keys is None:
            job.whole = _gray(resize_area(x, size))
            return job
        pool = self._rows.get((crop.shape, size))
        if pool is None:
            pool = self._rows[(crop.shape, size)] = _RowPool(size[0])
        job.pool = pool
        job.slots = idx = list(map(pool.index.get, keys))
        if None not in idx:
            return job
        job.need = [d for d, v in enumerate(idx) if v is None]
        job.dest = [pool.reserve(keys[d]) for d in job.need]
        for d, slot in zip(job.need, job.dest, strict=True):
            idx[d] = slot
        need = np.array(job.need, np.intp)
        if h % size[1] == 0 and w % size[0] == 0:  # cv2's integer-ratio path
            pool.put(job.dest, _gray(_resize_area_down(x, size[0], size[1], need)))
            return job
        if lazy:
            pool.src.update((slot, (job, d)) for d, slot in zip(job.need, job.dest, strict=True))
            return job
        x2 = x.reshape(h, w * c)  # the vertical pass, in pieces whose temporaries stay in the CPU cache
        job.v = np.concatenate([_area_rows(x2, h, size[1], sel=need[i:i + _CHUNK])
                                for i in range(0, len(need), _CHUNK)]) if len(need) > _CHUNK else \
            _area_rows(x2, h, size[1], sel=need)
        batch = self._pending.setdefault((x.shape, size), [])
        batch.append(job)
        if sum(len(j.need) for j in batch) >= _CHUNK:
            self._flush((x.shape, size))
        return job

    def _flush(self, key: tuple) -> None:
        """Finish the pending float-path rows of one (crop shape, size): horizontal pass, ties, gray."""
        batch = self._pending.pop(key, [])
        self._compute([(job, job.need[i:i + _CHUNK], job.dest[i:i + _CHUNK], job.v[i:i + _CHUNK])
                       for job in batch for i in range(0, len(job.need), _CHUNK)], *key[1])
        for job in batch:
            job.v = None

    @staticmethod
    def _compute(pieces: list[tuple[_Rows, list[int], list[int], np.ndarray | None]], width: int,
                 height: int) -> None:
        """Compute thumbnail rows into their pools, about `_CHUNK` rows per call; a piece is (job, output
        rows, their pool slots, their vertical pass or None)."""
        part: list[tuple] = []
        for k, piece in enumerate(pieces):
            part.append(piece)
            if k == len(pieces) - 1 or sum(len(p[1]) for p in part) + len(pieces[k + 1][1]) > _CHUNK:
                rows = _area_down_many([p[0].x for p in part], width, height,
                                       [np.array(p[1], np.intp) for p in part], gray=True,
                                       v=None if piece[3] is None else [p[3] for p in part])
                for p, r in zip(part, rows, strict=True):
                    p[0].pool.put(p[2], r)
                part = []

    def _finish(self, jobs: list[_Rows]) -> list[np.ndarray]:
        """The gray thumbnails of planned jobs."""
        for key in list(self._pending):
            self._flush(key)
        return [job.whole if job.pool is None else job.pool.take(job.slots) for job in jobs]

    def _ensure(self, pool: _RowPool, slots: np.ndarray) -> None:
        """Compute the lazily planned rows among `slots`, all together."""
        if not pool.src:
            return
        todo = [sl for sl in dict.fromkeys(slots.tolist()) if sl in pool.src]
        if not todo:
            return
        by_job: dict[int, tuple[_Rows, list[int], list[int]]] = {}
        for sl in todo:
            job, d = pool.src.pop(sl)
            entry = by_job.setdefault(id(job), (job, [], []))
            entry[1].append(d)
            entry[2].append(sl)
        self._compute([(job, ds[i:i + _CHUNK], sls[i:i + _CHUNK], None) for job, ds, sls in by_job.values()
                       for i in range(0, len(ds), _CHUNK)], *next(iter(by_job.values()))[0].size)

    def thumbnail(self, fid: int) -> np.ndarray:
        """A frame's gray thumbnail (its rows computed now if they were only planned)."""
        g = self._gray[fid]
        if g is None:
            pool, slots = self.rows[fid]
            self._ensure(pool, slots)
            g = self._gray[fid] = pool.take(slots)
        return g

    def pixels(self, fid: int, r0: int, r1: int) -> np.ndarray:
        """Rows r0:r1 of a frame's gray thumbnail."""
        g = self._gray[fid]
        if g is not None:
            return g[r0:r1]
        pool, slots = self.rows[fid]
        self._ensure(pool, slots[r0:r1])
        return pool.data[slots[r0:r1]]

    def keep_index(self, shape: tuple[int, int], overlays: bool = False) -> np.ndarray:
        """Flat indices of the pixels (of a thumbnail or hash grid) outside the static masks, and with
        `overlays` outside the overlay regions too."""
        k = self._keep.get((shape, overlays))
        if k is None:
            m = self.static_mask(shape).copy()
            for r in self.cfg.overlay_regions if overlays else ():
                m[_region_slice(r, *shape)] = True
            k = self._keep[(shape, overlays)] = np.flatnonzero(~m)
        return k

    def keep_mask(self, shape: tuple[int, int]) -> np.ndarray:
        """Thumbnail pixels outside the static masks."""
        m = self._keep.get((shape, "mask"))
        if m is None:
            m = self._keep[(shape, "mask")] = ~self.static_mask(shape)
        return m

    def kept(self, fid: int, overlays: bool) -> np.ndarray:
        """A thumbnail's pixels outside the static masks (and the overlay regions), float32, cached."""
        key = (fid, overlays)
        v = self._kept.get(key)
        if v is None:
            g = self.gray[fid]
            v = self._kept[key] = g.ravel()[self.keep_index(g.shape, overlays)].astype(np.float32)
        return v

    def static_mask(self, shape: tuple[int, int]) -> np.ndarray:
        """Thumbnail pixels inside the always-ignored regions."""
        m = self._masks.get(shape)
        if m is None:
            m = np.zeros(shape, bool)
            for r in self.cfg.masks:
                m[_region_slice(r, *shape)] = True
            self._masks[shape] = m
        return m

    def stats(self, fid: int) -> _FrameStats:
        """A thumbnail's per-frame SSIM terms (computed a band at a time, when first needed)."""
        st = self._stats.get(fid)
        if st is None:
            st = self._stats[fid] = self.stats_of(self.gray[fid])
        return st

    def stats_of(self, gray: np.ndarray) -> _FrameStats:
        return _FrameStats(gray, self.cfg.win_size)

    def windows(self, fid: int) -> np.ndarray | None:
        """Per SSIM window row of a pooled thumbnail, an id of its win_size thumbnail rows (by pool slot):
        equal ids, equal pixels. None for a thumbnail computed whole."""
        w = self._windows.get(fid)
        if w is None and self.rows[fid] is not None:
            pool, slots = self.rows[fid]
            k = self.cfg.win_size
            ids = self._window_ids.setdefault(id(pool), {})
            b = slots.tobytes()
            w = self._windows[fid] = np.array(
                [ids.setdefault(b[8 * r:8 * (r + k)], len(ids)) for r in range(len(slots) - k + 1)], np.int64)
        return w

    def window_stats(self, fid: int) -> _WindowStats:
        """The S and Q rows of the SSIM window rows of the thumbnails of this pooled one's pool."""
        pool = self.rows[fid][0]
        ws = self._window_stats.get(id(pool))
        if ws is None:
            ws = self._window_stats[id(pool)] = _WindowStats(self.shape[fid], self.cfg.win_size)
        return ws


class _WindowStats:
    """S and Q (see `_FrameStats`) of SSIM window rows by window id (`_Screens.windows`): a window row
    shared by several thumbnails is computed once, when a pair first needs it."""

    def __init__(self, shape: tuple[int, int], k: int):
        self.k = k
        s_type, self.wide = _term_types(k)
        ww = shape[1] - k + 1
        self.s = np.empty((256, ww), s_type)
        self.q = np.empty((256, ww), self.wide)
        self.have = np.zeros(256, bool)

    def rows(self, pix: np.ndarray, wids: np.ndarray, r0: int, r1: int) -> tuple[np.ndarray, np.ndarray]:
        """S and Q of window rows r0:r1 of a thumbnail whose window ids are `wids` and whose pixel rows
        r0:r1 + k - 1 are `pix`."""
        ids = wids[r0:r1]
        top = int(ids.max()) + 1
        if top > len(self.have):
            cap = max(top, 2 * len(self.have))
            for name in ("s", "q", "have"):
                old = getattr(self, name)
                new = np.zeros((cap,) + old.shape[1:], old.dtype)
                new[:len(old)] = old
                setattr(self, name, new)
        miss = np.flatnonzero(~self.have[ids])
        if miss.size:
            k = self.k
            for run in _runs(miss):
                g = pix[int(run[0]):int(run[-1]) + k]
                self.s[ids[run]], self.q[ids[run]] = _window_terms(g, k, self.s.dtype, self.wide)
                self.have[ids[run]] = True
        return self.s[ids], self.q[ids]


class _FrameStats:
    """(pixels, window sums S, Q = n*sum(x^2) - S^2) of a uint8 thumbnail: every per-frame SSIM term, as
    exact integers, so a pair needs only its cross term. Computed `BAND` window rows at a time when a pair
    first needs them (a pair stops early once its SSIM is proven below the threshold), and kept small (fresh
    memory is slow to touch): S in uint16 while it fits, Q in int32 (int64 for windows over 7x7)."""

    BAND = 48

    def __init__(self, gray: np.ndarray, k: int):
        self.gray, self.k = gray, k
        hw, ww = gray.shape[0] - k + 1, gray.shape[1] - k + 1
        s_type, self.wide = _term_types(k)
        self.s = np.empty((hw, ww), s_type)
        self.q = np.empty((hw, ww), self.wide)
        self.done = np.zeros(-(-hw // self.BAND), bool)

    def ensure(self, r0: int, r1: int) -> None:
        """Compute window rows r0:r1 (and the rest of their bands) unless done."""
        b0, b1 = r0 // self.BAND, -(-r1 // self.BAND)
        todo = np.flatnonzero(~self.done[b0:b1]) + b0
        if not todo.size:
            return
        for run in _runs(todo):  # consecutive bands at once
            lo, hi = run[0] * self.BAND, min(len(self.s), (run[-1] + 1) * self.BAND)
            self.s[lo:hi], self.q[lo:hi] = _window_terms(self.gray[lo:hi + self.k - 1], self.k, self.s.dtype,
                                                         self.wide)
            self.done[run] = True


def _runs(a: np.ndarray) -> list[np.ndarray]:
    """Sorted integers a split into runs of consecutive values."""
    return np.split(a, np.flatnonzero(np.diff(a) > 1) + 1)


def _term_types(k: int) -> tuple[Any, Any]:
    """Integer types of the window sums S (uint16 while k^2 * 255 fits) and of Q and the products (int32 up to
    7x7 windows: S^2 <= (k^2 * 255)^2 must fit; int64 beyond)."""
    wide = np.int32 if k <= 7 else np.int64
    return (np.uint16 if k * k * 255 < 2**16 else wide), wide


def _window_terms(g: np.ndarray, k: int, s_type: Any, wide: Any) -> tuple[np.ndarray, np.ndarray]:
    """S and Q = k^2 * sum(x^2) - S^2 of the k x k windows of uint8 pixel rows g, as exact integers."""
    s = _box(g, k, s_type)
    q = _box(np.multiply(g, g, dtype=np.uint16), k, wide)
    q *= k * k
    s2 = s.astype(wide)
    s2 *= s2
    q -= s2
    return s, q


def _run_sums(x: np.ndarray, k: int, axis: int) -> np.ndarray:
    """Sums of every k consecutive entries along `axis` (-1 or -2), in x's dtype: sums of 1, 2, 4, ... entries
    added by the bits of k (numpy's cumsum is slow, and integer sums stay exact in narrow types)."""
    def part(a: np.ndarray, lo: int, hi: int) -> np.ndarray:
        return a[..., lo:hi] if axis == -1 else a[..., lo:hi, :]
    n = x.shape[axis]
    n_out = n - k + 1
    out, off, p, size, bits = None, 0, x, 1, k
    while bits:
        if bits & 1:
            term = part(p, off, off + n_out)
            out = term.copy() if out is None else np.add(out, term, out=out)
            off += size
        bits >>= 1
        if bits:
            m = p.shape[axis]
            p = part(p, 0, m - size) + part(p, size, m)
            size *= 2
    return out


def _box(x: np.ndarray, k: int, dtype: Any) -> np.ndarray:
    """Sums over every k x k window lying inside the last two axes, computed in `dtype` (which the caller
    picks wide enough for the sums to stay exact)."""
    return _run_sums(_run_sums(x.astype(dtype, copy=False), k, -1), k, -2)


class _SSIM:
    """skimage.metrics.structural_similarity (uniform window, sample covariance, mean over the windows that
    lie inside the image) from integer window sums: with S = window sum, n = win_size^2,
        SSIM_w = (2 Sx Sy + C1 n^2)(2 (n Sxy - Sx Sy) + C2 n (n-1))
                 / ((Sx^2 + Sy^2 + C1 n^2)(Qx + Qy + C2 n (n-1)))
    where Q = n sum(x^2) - S^2. Windows where the two thumbnails are equal score exactly 1, so only the
    bounding box of the differing pixels is evaluated."""

    def __init__(self, screens: _Screens):
        cfg = screens.cfg
        self.screens = screens
        self.k = cfg.win_size
        n = self.k * self.k
        self.n = n
        self.c1 = np.float32((cfg.k1 * cfg.data_range) ** 2 * n * n)
        self.c2 = np.float32((cfg.k2 * cfg.data_range) ** 2 * n * (n - 1))
        self._valid_cache: dict[tuple, tuple[np.ndarray | None, int]] = {}
        self._rows_memo: dict[tuple, dict[tuple, float]] = {}  # regions -> window-row key -> sum(1 - SSIM)

    def _valid(self, shape: tuple[int, int], regions: tuple) -> tuple[np.ndarray | None, int]:
        """Windows touching no ignored pixel (static masks plus `regions`), and how many there are."""
        key = (shape, regions)
        hit = self._valid_cache.get(key)
        if hit is None:
            ignore = self.screens.static_mask(shape).copy()
            for r in regions:
                ignore[_region_slice(r, *shape)] = True
            k = self.k
            total = (shape[0] - k + 1) * (shape[1] - k + 1)
            if ignore.any():
                valid = _box(ignore, k, np.int32) == 0
                hit = (valid, int(valid.sum()))
            else:
                hit = (None, total)
            self._valid_cache[key] = hit
        return hit

    def score(self, fa: int, fb: int, regions: tuple = (), floor: float | None = None) -> float:
        """Mean SSIM of two thumbnails over the windows touching no ignored pixel; -1.0 when the thumbnails
        differ in shape (as UI-Voyager). `floor`: see score_stats. Thumbnails built from shared rows
        (`_Screens.windows`) are scored a window row at a time, and each window row's sum of (1 - SSIM)
        is kept: another pair showing the same two window rows at the same place (a near-duplicate of
        either screen) reuses it."""
        scr = self.screens
        wa, wb = scr.windows(fa), scr.windows(fb)
        if wa is None or wb is None or scr.rows[fa][0] is not scr.rows[fb][0]:  # not rows of one pool
            return self.score_stats(scr.stats(fa), scr.stats(fb), regions, floor)
        valid, total = self._valid(scr.shape[fa], regions)
        if total == 0:
            return 1.0
        rows = np.flatnonzero(wa != wb)  # other window rows show equal pixels: SSIM exactly 1
        memo = self._rows_memo.setdefault(regions, {})
        ia, ib = wa[rows], wb[rows]  # window ids are position-specific: a pair of them names the window row
        keys = (np.minimum(ia, ib) << 32) | np.maximum(ia, ib)
        got = np.fromiter(map(memo.get, keys.tolist(), itertools.repeat(np.nan)), np.float64, len(rows))
        miss = np.isnan(got)
        deficit = float(got[~miss].sum())  # sum of (1 - SSIM_w) so far
        if floor is not None and 1.0 - deficit / total < floor:
            return 1.0 - deficit / total
        todo = np.flatnonzero(miss)  # indices into rows
        if not todo.size:
            return float(1.0 - deficit / total)
        k = self.k
        ww = scr.shape[fa][1] - k + 1
        ws = scr.window_stats(fa)
        pool = scr.rows[fa][0]
        if pool.src:  # the thumbnail rows under every window row to score, computed together
            under = np.unique(rows[todo][:, None] + np.arange(k))
            scr._ensure(pool, np.concatenate([scr.rows[fa][1][under], scr.rows[fb][1][under]]))
        band = len(todo) if floor is None else _FrameStats.BAND
        runs = np.split(todo, np.flatnonzero(np.diff(rows[todo]) > 1) + 1)
        for run in runs:
            for i in range(0, len(run), band):
                part = run[i:i + band]
                r0, r1 = int(rows[part[0]]), int(rows[part[-1]]) + 1
                pa, pb = scr.pixels(fa, r0, r1 + k - 1), scr.pixels(fb, r0, r1 + k - 1)
                cols = np.flatnonzero((pa != pb).any(axis=0))
                if not cols.size:  # equal pixels after all (different rows, same content)
                    memo.update(zip(keys[part].tolist(), itertools.repeat(0.0)))
                    continue
                c0, c1 = max(0, int(cols[0]) - k + 1), min(ww, int(cols[-1]) + 1)
                sa, qa = ws.rows(pa, wa, r0, r1)
                sb, qb = ws.rows(pb, wb, r0, r1)
                m = self._map(pa, pb, sa, sb, qa, qb, c0, c1)
                if valid is None:
                    row_def = (c1 - c0) - m.sum(axis=1, dtype=np.float64)
                else:
                    v = valid[r0:r1, c0:c1]
                    row_def = v.sum(axis=1) - np.where(v, m, 0).sum(axis=1, dtype=np.float64)
                memo.update(zip(keys[part].tolist(), row_def.tolist(), strict=True))
                deficit += float(row_def.sum())
                if floor is not None and 1.0 - deficit / total < floor:
                    return float(1.0 - deficit / total)
        return float(1.0 - deficit / total)

    def score_stats(self, st_a: _FrameStats, st_b: _FrameStats, regions: tuple = (),
                    floor: float | None = None) -> float:
        """Mean SSIM from two thumbnails' statistics. With `floor`, the windows are summed a band of rows at a
        time and an upper bound (every window not yet summed counted as 1) is returned as soon as it falls
        below `floor`: exact when the result is >= floor, else some value < floor."""
        xa, xb = st_a.gray, st_b.gray
        if xa.shape != xb.shape:
            return -1.0
        k = self.k
        hw, ww = st_a.s.shape
        valid, total = self._valid(xa.shape, regions)
        if total == 0:
            return 1.0
        diff = xa != xb
        rows, cols = np.flatnonzero(diff.any(axis=1)), np.flatnonzero(diff.any(axis=0))
        if rows.size == 0:
            return 1.0
        # only windows containing a differing pixel can score below 1: a box of the window grid
        w0, w1 = max(0, rows[0] - k + 1), min(hw, rows[-1] + 1)
        c0, c1 = max(0, cols[0] - k + 1), min(ww, cols[-1] + 1)
        band = _FrameStats.BAND
        cuts = [w0, w1] if floor is None else [w0] + list(range((w0 // band + 1) * band, w1, band)) + [w1]
        deficit = 0.0  # sum of (1 - SSIM_w) over the windows summed so far
        for r0, r1 in itertools.pairwise(cuts):
            st_a.ensure(r0, r1)
            st_b.ensure(r0, r1)
            m = self._map(xa[r0:r1 + k - 1], xb[r0:r1 + k - 1], st_a.s[r0:r1], st_b.s[r0:r1], st_a.q[r0:r1],
                          st_b.q[r0:r1], c0, c1)
            if valid is None:
                deficit += m.size - m.sum(dtype=np.float64)
            else:
                v = valid[r0:r1, c0:c1]
                deficit += int(v.sum()) - m[v].sum(dtype=np.float64)
            if floor is not None and 1.0 - deficit / total < floor:
                break
        return float(1.0 - deficit / total)

    def _map(self, xa, xb, sa, sb, qa, qb, c0: int, c1: int) -> np.ndarray:
        """SSIM of the windows in columns c0:c1 of some window rows (float32): sa, sb, qa, qb hold those
        rows' S and Q, xa and xb the pixel rows under them. The integer parts are exact (int32 for 7x7
        windows of 8-bit pixels, int64 for larger ones); the rest float32."""
        k = self.k
        wide = qa.dtype
        sxy = _box(np.multiply(xa[:, c0:c1 + k - 1], xb[:, c0:c1 + k - 1], dtype=np.uint16), k, wide)
        a, b = sa[:, c0:c1].astype(wide), sb[:, c0:c1]
        t = a * b
        sxy *= self.n
        sxy -= t  # n Sxy - Sx Sy
        a -= b
        a *= a
        a += 2 * t  # Sx^2 + Sy^2
        m = t.astype(np.float32)
        m *= 2
        m += self.c1
        v = sxy.astype(np.float32)
        v *= 2
        v += self.c2
        m *= v
        d = a.astype(np.float32)
        d += self.c1
        v = (qa[:, c0:c1] + qb[:, c0:c1]).astype(np.float32)
        v += self.c2
        d *= v
        m /= d
        return m


# ===================================== actions and accessibility trees ======================================
def _eget(e: Any, name: str) -> Any:
    return e.get(name) if isinstance(e, dict) else getattr(e, name, None)


def _bbox(e: Any) -> tuple[float, float, float, float] | None:
    """(x_min, y_min, x_max, y_max) of an element's pixel box, dict or BoundingBox."""
    b = _eget(e, "bbox_pixels")
    if b is None:
        return None
    if isinstance(b, dict):
        return b["x_min"], b["y_min"], b["x_max"], b["y_max"]
    return b.x_min, b.y_min, b.x_max, b.y_max


def _identity(e: Any) -> tuple:
    """What names an element independently of where it is drawn: class, text, description, hint, id."""
    return (_eget(e, "class_name"), _eget(e, "text"), _eget(e, "content_description"), _eget(e, "hint_text"),
            _eget(e, "resource_id") or _eget(e, "resource_name"))


def _fingerprint(e: Any) -> tuple:
    """An element's identity, state flags and box: one entry of a screen's accessibility fingerprint."""
    return _identity(e) + (_eget(e, "is_checked"), _eget(e, "is_selected"), _eget(e, "is_enabled"),
                           _eget(e, "is_focused"), _bbox(e))


def _tree(elements: Sequence[Any]) -> Counter:
    """A screen's accessibility fingerprint: the multiset of its elements, system UI (clock, bars) aside."""
    return Counter(_fingerprint(e) for e in elements if _eget(e, "package_name") != SYSTEMUI)


_OPPOSITE = {"up": "down", "down": "up", "left": "right", "right": "left"}


def _target(action: dict, elements: Sequence[Any], screen_size: tuple[int, int]) -> tuple | None:
    """The element an action points at, as (identity, ordinal among equal identities), whether it names it
    by index or by x/y (the smallest element containing the point); coarse coordinates if none does."""
    idx, x, y = action.get("index"), action.get("x"), action.get("y")
    pos = None
    if idx is not None:
        if isinstance(idx, int) and 0 <= idx < len(elements):
            pos = idx
        else:
            return ("index", idx)
    elif x is not None and y is not None:
        best = None
        for i, e in enumerate(elements):
            b = _bbox(e)
            if b is not None and b[0] <= x < b[2] and b[1] <= y < b[3]:
                area = (b[2] - b[0]) * (b[3] - b[1])
                if best is None or area < best[0]:
                    best = (area, i)
        if best is None:  # nothing there: compare coordinates on a 2% grid
            return ("xy", round(50 * x / screen_size[0]), round(50 * y / screen_size[1]))
        pos = best[1]
    else:
        return None
    ident = _identity(elements[pos])
    return ident, sum(_identity(e) == ident for e in elements[:pos])


def action_key(action: dict | None, elements: Sequence[Any] = (), cfg: ForkConfig | None = None) -> Any:
    """A hashable key with equal keys for equal actions; None for an invalid action (never equal to any).
    exact: the dict itself (UI-Voyager's `==`). target: the action type (a swipe as the scroll it makes), the
    element it acts on (see `_target`) and its arguments, so a click by index and one by x/y on the same
    element are the same action."""
    cfg = cfg or ForkConfig()
    if action is None:
        return None
    if cfg.action_match == "exact":
        return json.dumps(action, sort_keys=True, default=str)
    kind = action.get("action_type")
    direction = action.get("direction")
    if kind == "swipe":
        kind, direction = "scroll", _OPPOSITE.get(direction, direction)
    key: tuple = (kind,)
    if kind in ("click", "double_tap", "long_press", "input_text", "scroll"):
        key += (_target(action, elements, cfg.screen_size),)
    if kind == "input_text":
        key += (action.get("text"), bool(action.get("clear_text")))
    elif kind == "scroll":
        key += (direction,)
    elif kind == "open_app":
        key += (str(action.get("app_name", "")).strip().lower(),)
    elif kind == "status":
        key += (action.get("goal_status"),)
    elif kind == "answer":
        key += (str(action.get("text", "")).strip(),)
    return key


# ============================================= comparing steps ==============================================
class _Steps:
    """Every step of the trajectories being compared, registered once (frame and predecessor-frame ids,
    action keys, accessibility fingerprints), then SAME and score matrices between any two trajectories."""

    def __init__(self, trajectories: Sequence[Sequence[Any]], names: Sequence[str], cfg: ForkConfig):
        self.cfg = cfg
        self.trajs: list[list[int]] = []
        self.frame: list[int] = []
        self.prev: list[int] = []  # predecessor frame in the same trajectory, -1 for the first step
        self.key: list[Any] = []
        self.tree: list[Counter | None] = []
        self.screen_key: list[str] = []
        width = cfg.thumb_size[0]
        if cfg.keep_aspect and not cfg.oracle:
            width = min([width] + [np.asarray(_get(st, "screen")).shape[1] for traj in trajectories
                                   for st in traj if _get(st, "screen") is not None])
        self.screens = _Screens(cfg, width)
        self.ssim = _SSIM(self.screens)
        self._scores: dict[tuple[int, int], float] = {}
        self._diffs: dict[tuple[int, int], tuple] = {}
        self._robust: dict[tuple[int, int], float | None] = {}
        if cfg.oracle:
            frames = [-1] * sum(len(traj) for traj in trajectories)
        else:
            shots, whos = [], []
            for traj, name in zip(trajectories, names, strict=True):
                for t, st in enumerate(traj):
                    shots.append(_get(st, "screen"))
                    whos.append(f"trajectory {name!r} step {t}")
                    if shots[-1] is None:
                        raise ValueError(f"{whos[-1]} has no screen; expected an RGB uint8 array")
            frames = self.screens.add_many(shots, whos)
        for traj, _name in zip(trajectories, names, strict=True):
            ids = []
            for t, st in enumerate(traj):
                sid = len(self.frame)
                self.frame.append(frames[sid])
                self.prev.append(self.frame[sid - 1] if t > 0 else -1)
                elements = _get(st, "ui_elements") or []
                self.key.append(action_key(_get(st, "action"), elements, cfg))
                self.tree.append(_tree(elements) if elements and cfg.a11y != "off" else None)
                self.screen_key.append(str(_get(st, "screen_key", "") or ""))
                ids.append(sid)
            self.trajs.append(ids)
        self.settled = self._settle()

    # -- frames ---------------------------------------------------------------------------------------------
    def frame_score(self, fa: int, fb: int, exact: bool = True) -> float:
        """UI-Voyager's obs_similarity: the hash similarity if below the prefilter threshold, 1.0 for
        identical thumbnails, else SSIM (robust: over the windows the masks leave). With exact=False a value
        below the SAME threshold may be an upper bound (enough to decide SAME; cheaper)."""
        key = (fa, fb) if fa <= fb else (fb, fa)
        hit = self._scores.get(key)
        if hit is not None and (hit[1] or not exact):
            return hit[0]
        scr, cfg = self.screens, self.cfg
        h = float(np.mean(scr.bits[fa] == scr.bits[fb]))
        thr = cfg.threshold - cfg.tolerance
        if h < cfg.hash_threshold:
            hit = (h, True)
        elif scr.thumb[fa] == scr.thumb[fb]:
            hit = (1.0, True)
        else:
            v = self.ssim.score(fa, fb, floor=None if exact else thr)
            hit = (v, exact or v >= thr)
        self._scores[key] = hit
        return hit[0]

    def _local(self, ga: np.ndarray, gb: np.ndarray) -> tuple:
        """Robust local check of two thumbnails: ('same',) when no pixel outside the masks differs by more
        than `local_diff` (carets excused), ('overlay', regions, card_like) when all that differs lies inside
        overlay regions, ('different', n_pixels) otherwise."""
        cfg = self.cfg
        if ga.shape != gb.shape:
            return ("different", -1)
        h, w = ga.shape
        d = np.abs(ga.astype(np.int16) - gb) > (cfg.local_diff or 16)
        d &= self.screens.keep_mask(ga.shape)
        rows = np.flatnonzero(d.any(axis=1))
        if rows.size == 0:
            return ("same",)
        cols = np.flatnonzero(d.any(axis=0))
        y0, x0 = int(rows[0]), int(cols[0])
        box = d[y0:rows[-1] + 1, x0:cols[-1] + 1]  # everything that differs, and the rest of its bounding box
        n = int(box.sum())
        if n > 0.25 * h * w:  # a different screen: no excuse covers a quarter of it
            return ("different", n)
        if cfg.caret:
            box = _drop_carets(box, h)
            n = int(box.sum())
            if n == 0:
                return ("same",)
        if cfg.overlay_regions:
            ys, xs = np.nonzero(box)
            ys, xs = ys + y0, xs + x0
            inside = []
            for r in cfg.overlay_regions:
                rs, cs = _region_slice(r, h, w)
                inside.append((ys >= rs.start) & (ys < rs.stop) & (xs >= cs.start) & (xs < cs.stop))
            hit = [k for k, m in enumerate(inside) if m.any()]
            if hit and np.logical_or.reduce([inside[k] for k in hit]).all():
                parts = tuple(cfg.overlay_regions[k] for k in hit)
                full = np.zeros_like(d)
                full[y0:y0 + box.shape[0], x0:x0 + box.shape[1]] = box
                return ("overlay", parts, all(_card_like(full[_region_slice(r, h, w)]) for r in parts))
        return ("different", n)

    def _frame_local(self, fa: int, fb: int) -> tuple:
        key = (fa, fb) if fa <= fb else (fb, fa)
        hit = self._diffs.get(key)
        if hit is None:
            scr = self.screens
            if scr.thumb[fa] == scr.thumb[fb]:
                hit = ("same",)
            elif float(np.mean(scr.bits[fa] == scr.bits[fb])) < self.cfg.hash_threshold:
                hit = ("different", -1)
            else:
                hit = self._local(scr.gray[fa], scr.gray[fb])
            self._diffs[key] = hit
        return hit

    # -- steps ----------------------------------------------------------------------------------------------
    def tree_similarity(self, s: int, t: int) -> float:
        """Multiset Jaccard similarity of two steps' element fingerprints; nan when either has none."""
        a, b = self.tree[s], self.tree[t]
        if a is None or b is None:
            return float("nan")
        if a == b:
            return 1.0
        inter = sum((a & b).values())
        return inter / (sum(a.values()) + sum(b.values()) - inter)

    def _region_trees_equal(self, s: int, t: int, region: tuple[float, float, float, float]) -> bool:
        """Whether two steps list the same elements over a screen region (so what differs there is no UI)."""
        w, h = self.cfg.screen_size
        x0, y0, x1, y1 = region[0] * w, region[1] * h, region[2] * w, region[3] * h

        def part(tree: Counter) -> Counter:
            return Counter({f: c for f, c in tree.items() if f[-1] is not None and f[-1][0] < x1
                            and f[-1][2] > x0 and f[-1][1] < y1 and f[-1][3] > y0})
        return part(self.tree[s]) == part(self.tree[t])

    def _excusable(self, s: int, t: int, verdict: tuple) -> bool:
        """An overlay verdict holds if the accessibility trees show nothing changed in its regions, or
        (no trees) the difference looks like a card pasted over the screen."""
        if self.cfg.a11y != "off" and self.tree[s] is not None and self.tree[t] is not None:
            return all(self._region_trees_equal(s, t, r) for r in verdict[1])
        return verdict[2]

    def robust_same(self, s: int, t: int) -> float | None:
        """Robust SAME for two steps: the score when they show the same screen, else None."""
        key = (s, t) if s <= t else (t, s)
        if key in self._robust:
            return self._robust[key]
        cfg = self.cfg
        thr = cfg.threshold - cfg.tolerance
        fa, fb = self.settled[s], self.settled[t]
        out = None
        v = self._frame_local(fa, fb)
        if v[0] == "same":
            out = self._masked(fa, fb, ())
        elif v[0] == "overlay" and self._excusable(s, t, v):
            out = self._masked(fa, fb, v[1])
        if out is not None and out < thr:
            out = None
        self._robust[key] = out
        return out

    def _settle(self) -> list[int]:
        """Robust deblend: each step's settled frame. A screenshot caught mid-transition is q * previous
        screen + (1 - q) * the screen it becomes; the previous screen is this trajectory's previous step
        (itself settled), and the screen it becomes is looked for among the group's frames (with element
        trees: the frames of steps with the same tree). Of the frames that explain it, the one with the
        largest q stands in for the blend."""
        settled = list(self.frame)
        if not self.cfg.deblend or self.cfg.oracle:
            return settled
        scr = self.screens
        use = Counter(self.frame)
        ranked = sorted(use, key=lambda f: -use[f])
        trees = self.cfg.a11y != "off"
        by_tree: dict[frozenset, list[int]] = {}
        if trees:
            for sid, tree in enumerate(self.tree):
                if tree is not None:
                    by_tree.setdefault(frozenset(tree.items()), []).append(self.frame[sid])
        grid = scr.small[0].shape
        small = np.stack([g.astype(np.float32).ravel()[scr.keep_index(grid, True)] for g in scr.small])
        for traj in self.trajs:
            for k in range(1, len(traj)):
                sid = traj[k]
                a, p = self.frame[sid], settled[traj[k - 1]]
                if a == p:
                    continue
                if trees and self.tree[sid] is not None:
                    same_tree = by_tree[frozenset(self.tree[sid].items())]
                    cands = sorted(set(same_tree) - {a, p}, key=lambda f: -use[f])
                else:
                    cands = [f for f in ranked if f not in (a, p)]
                if not cands:
                    continue
                fit = np.arange(len(cands))
                if len(cands) > 8:  # many candidates (no trees): a least-squares a - c = q (p - c) on the
                    # hash grids, for all at once, keeps the plausible ones (the grids are coarse: loosely)
                    c = small[cands]
                    d, e = small[a] - c, small[p] - c
                    ee, dd = (e * e).sum(1), (d * d).sum(1)
                    q = (d * e).sum(1) / np.maximum(ee, 1e-9)
                    resid = 1.0 - q * q * ee / np.maximum(dd, 1e-9)
                    plausible = (q >= 0.05) & (q <= 1.0) & (resid <= 0.8)
                    fit = np.flatnonzero((dd > 0) & (plausible | (ee < 16.0 * c.shape[1])))  # or too faint
                # Of the frames that explain it, the one furthest from p (largest q): a frame that is itself
                # a blend of p and the true screen explains it too, with a smaller q.
                best = None
                for j in fit:
                    cand = cands[int(j)]
                    fit_j = self._unblend(a, p, cand)
                    if fit_j is None:
                        continue
                    w = self._local(scr.gray[a], fit_j[0])
                    if w[0] == "same" or (w[0] == "overlay" and (trees or w[2])):
                        rank = (-round(fit_j[1], 2), w[0] != "same", -use[cand])
                        if best is None or rank < best[0]:
                            best = (rank, cand)
                if best is not None:
                    settled[sid] = best[1]
        return settled

    def _masked(self, fa: int, fb: int, regions: tuple) -> float:
        return 1.0 if self.screens.thumb[fa] == self.screens.thumb[fb] else self.ssim.score(fa, fb, regions)

    def _unblend(self, a: int, p: int, b: int) -> tuple[np.ndarray, float] | None:
        """If thumbnail a looks like q * p + (1 - q) * b (a screenshot taken while p gave way to b), that
        blend (uint8) and q; else None. Over the pixels where p and b differ, the ratios (a - b) / (p - b)
        must mostly agree (carets and other noise need not); q is fitted by least squares on those that
        agree. Tried on the whole screen, then without the overlay regions (where p may show a toast or
        notification the blend never had)."""
        scr, cfg = self.screens, self.cfg
        shape = scr.gray[a].shape
        if not scr.gray[p].shape == scr.gray[b].shape == shape:
            return None
        for overlays in (False, True) if cfg.overlay_regions else (False,):
            ga, gp, gb = scr.kept(a, overlays), scr.kept(p, overlays), scr.kept(b, overlays)
            e = gp - gb
            moved = np.abs(e) > 24
            if moved.sum() < 4:
                continue
            d, e = ga[moved] - gb[moved], e[moved]
            r = d / e
            q = float(np.median(r))
            agree = np.abs(r - q) < 0.15
            if np.mean(agree) < cfg.blend_agreement:
                continue
            q = float(d[agree] @ e[agree]) / float(e[agree] @ e[agree])
            if 0.1 <= q <= 0.9:
                blend = q * scr.gray[p].astype(np.float32) + (1 - q) * scr.gray[b]
                return np.rint(blend).clip(0, 255).astype(np.uint8), q
        return None

    def matrices(self, fi: int, ti: int) -> tuple[np.ndarray, np.ndarray]:
        """SAME and score matrices (failed trajectory fi x teacher trajectory ti). Robust scores are filled
        where SAME holds (nan elsewhere; `pair_score` computes any)."""
        cfg = self.cfg
        F, T = self.trajs[fi], self.trajs[ti]
        if cfg.oracle:
            ka = np.array([self.screen_key[s] for s in F], dtype=object)
            kb = np.array([self.screen_key[t] for t in T], dtype=object)
            same = (ka[:, None] == kb[None, :]) & (ka[:, None] != "")
            return same, same.astype(np.float64)
        if cfg.local_diff > 0:
            score = np.full((len(F), len(T)), np.nan)
            for i, s in enumerate(F):
                for j, t in enumerate(T):
                    sc = self.robust_same(s, t)
                    if sc is not None:
                        score[i, j] = sc
            same = ~np.isnan(score)
        else:
            score = np.array([[self.frame_score(self.settled[s], self.settled[t], exact=False) for t in T]
                              for s in F])
            score = score.reshape(len(F), len(T))
            same = score >= cfg.threshold - cfg.tolerance
            if cfg.overlay_regions and cfg.a11y != "off":  # SSIM-only robust variant: tree-confirmed overlays
                for i, j in zip(*np.nonzero(~same), strict=True):
                    s, t = F[i], T[j]
                    if self.tree[s] is None or self.tree[t] is None:
                        continue
                    for r in cfg.overlay_regions:
                        if self._region_trees_equal(s, t, r):
                            sc = self._masked(self.settled[s], self.settled[t], (r,))
                            if sc >= cfg.threshold - cfg.tolerance:
                                same[i, j], score[i, j] = True, sc
                                break
        if cfg.a11y in ("and", "or"):
            tree = np.array([[self.tree_similarity(s, t) for t in T] for s in F]).reshape(len(F), len(T))
            agree, known = tree >= cfg.a11y_threshold, ~np.isnan(tree)
            same = (same & (agree | ~known)) if cfg.a11y == "and" else (same | agree)
            score = np.where(same & np.isnan(score), tree, score)
        return same, score

    def pair_score(self, s: int, t: int) -> float:
        """The exact similarity of two steps' screens (settled frames, masks as configured)."""
        if self.cfg.oracle:
            return float(self.screen_key[s] != "" and self.screen_key[s] == self.screen_key[t])
        return self.frame_score(self.settled[s], self.settled[t])

    def _lazy(self) -> bool:
        """Whether SAME is the plain thresholded score of two frames, so the walk can ask pair by pair."""
        cfg = self.cfg
        return (not cfg.oracle and cfg.local_diff == 0 and cfg.a11y in ("off", "confirm")
                and not cfg.overlay_regions)

    def forks(self, fi: int, ti: int, same_score: tuple[np.ndarray, np.ndarray] | None = None) -> list[Fork]:
        """The forks of failed trajectory fi against teacher ti."""
        F, T = self.trajs[fi], self.trajs[ti]
        nf, nt = len(F), len(T)
        if same_score is None and self._lazy():  # only the comparisons the walk asks for, bounded when below
            thr = self.cfg.threshold - self.cfg.tolerance

            def score(i: int, j: int) -> float:
                return self.frame_score(self.settled[F[i]], self.settled[T[j]], exact=False)

            def same(i: int, j: int) -> bool:
                return score(i, j) >= thr
        else:
            same_m, score_m = same_score or self.matrices(fi, ti)

            def same(i: int, j: int) -> bool:
                return bool(same_m[i, j])

            def score(i: int, j: int) -> float:
                return float(score_m[i, j])

        keys = self.key
        pairs = walk(nf, nt, same, score, lambda i, j: keys[F[i]] is not None and keys[F[i]] == keys[T[j]])
        out = []
        for i, j in pairs:
            nxt = float("nan") if i == nf - 1 or j == nt - 1 else self.pair_score(F[i + 1], T[j + 1])
            out.append(Fork(i, j, score(i, j), nxt))
        return out


def _drop_carets(d: np.ndarray, height: int) -> np.ndarray:
    """Remove differences shaped like a text caret (a connected run at most 2 pixels wide and at most 4% of
    the screen `height` tall): a caret blinks, so two screenshots of one screen differ by exactly that."""
    from scipy import ndimage

    lab, _ = ndimage.label(d, structure=np.ones((3, 3), bool))
    out = d.copy()
    tall = max(3, int(0.04 * height))
    for k, (sy, sx) in enumerate(ndimage.find_objects(lab), start=1):
        if sx.stop - sx.start <= 2 and sy.stop - sy.start <= tall:
            out[sy, sx] &= lab[sy, sx] != k
    return out


def _card_like(d: np.ndarray) -> bool:
    """Whether the differing pixels of a region look like an opaque card pasted over it (a toast, a heads-up
    notification): their bounding box covers at least a fifth of the region and is at least 30% filled."""
    ys, xs = np.nonzero(d)
    if ys.size == 0:
        return True
    box = (ys.max() - ys.min() + 1) * (xs.max() - xs.min() + 1)
    return box >= 0.2 * d.size and ys.size >= 0.3 * box


# ================================================ public API ================================================
def detect_forks(success: Sequence[Any], failed: Sequence[Any],
                 config: ForkConfig | None = None) -> list[Fork]:
    """Fork points of one failed trajectory against one successful one (default: the faithful detector). A
    step is a dict or object with `screen` (RGB uint8 (H, W, 3)), `action` (dict; None if invalid) and
    optionally `ui_elements` (UIElement dicts or objects) and `screen_key`."""
    cfg = config or ForkConfig.faithful()
    if not success or not failed:
        return []
    steps = _Steps([success, failed], ["success", "failed"], cfg)
    return steps.forks(1, 0)


def _step_view(step: Any, traj_id: str, oracle: bool) -> dict[str, Any]:
    px = _get(step, "frame")
    if px is None:
        px = _get(step, "thumbnail")
    if px is None and not oracle:
        raise ValueError(f"trajectory {traj_id!r} step t={_get(step, 't')} has neither a frame nor a "
                         "thumbnail; fork detection compares screenshots (collect with thumb_width > 0)")
    return {"screen": px, "action": _get(step, "action"), "ui_elements": _get(step, "ui_elements") or [],
            "screen_key": _get(step, "screen_key", "")}


def group_forks(group: Any, config: ForkConfig | None = None) -> list[tuple[Any, Any, Fork]]:
    """(failed trajectory, teacher trajectory, fork) for every fork of every failed (non-errored) trajectory
    of an algos.buffer.Group. teacher='shortest' (faithful): the shortest success (first on ties), the only
    one compared; 'similar' (robust): for each failed trajectory, the success showing the most of its
    screens if it beats the shortest by `teacher_margin` steps (ties: the shorter). Screens: Step.frame,
    else Step.thumbnail."""
    cfg = config or ForkConfig.faithful()
    fail = group.failures
    succ = [tr for tr in group.successes if tr.steps]
    if not succ or not fail:
        return []
    succ.sort(key=lambda tr: len(tr.steps))  # stable: the first of equally short successes comes first
    if cfg.teacher == "shortest":
        succ = succ[:1]
    trajs = succ + fail
    views = [[_step_view(s, tr.traj_id, cfg.oracle) for s in tr.steps] for tr in trajs]
    steps = _Steps(views, [tr.traj_id for tr in trajs], cfg)
    out: list[tuple[Any, Any, Fork]] = []
    for k, tr in enumerate(fail):
        fi = len(succ) + k
        if not tr.steps:
            continue
        ti, mats = 0, None
        if cfg.teacher == "similar":
            mats = steps.matrices(fi, 0)
            best = int(mats[0].any(axis=1).sum()) + cfg.teacher_margin - 1
            for j in range(1, len(succ)):
                mats_j = steps.matrices(fi, j)
                cover = int(mats_j[0].any(axis=1).sum())
                if cover > best:
                    ti, mats, best = j, mats_j, cover
        out += [(tr, succ[ti], f) for f in steps.forks(fi, ti, mats)]
    return out


def screen_classes(trajectories: Sequence[Any], config: ForkConfig | None = None) -> list[list[int]]:
    """Which steps of some algos.buffer.Trajectory objects show the same screen, as fork detection decides
    SAME (default: the faithful detector): a class id per step, per trajectory. Classes form greedily in
    order, trajectory by trajectory and step by step: a step joins the first class whose first step it is SAME
    with, else opens a new one (SAME is not transitive, so each class is anchored on its first screen, as
    verl-agent's similarity grouping does). GiGPO's anchor states (algos/gigpo.py). Screens: Step.frame, else
    Step.thumbnail; with `oracle`, Step.screen_key alone."""
    cfg = config or ForkConfig.faithful()
    trajs = list(trajectories)
    if not any(tr.steps for tr in trajs):
        return [[] for _ in trajs]
    views = [[_step_view(s, tr.traj_id, cfg.oracle) for s in tr.steps] for tr in trajs]
    steps = _Steps(views, [tr.traj_id for tr in trajs], cfg)
    same: dict[tuple[int, int], np.ndarray] = {}  # (trajectory, earlier trajectory) -> SAME matrix
    firsts: list[tuple[int, int]] = []  # (trajectory, step) of each class's first step

    def same_as_first(i: int, s: int, j: int, t: int) -> bool:
        if (i, j) not in same:
            same[i, j] = steps.matrices(i, j)[0]
        return bool(same[i, j][s, t])

    out: list[list[int]] = []
    for i, tr in enumerate(trajs):
        ids = []
        for s in range(len(tr.steps)):
            c = next((c for c, (j, t) in enumerate(firsts) if same_as_first(i, s, j, t)), None)
            if c is None:
                c = len(firsts)
                firsts.append((i, s))
            ids.append(c)
        out.append(ids)
    return out
