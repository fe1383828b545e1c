"""skimage's SSIM (`structural_similarity`: uniform 7x7 window, sample covariance, mean over the windows
inside the image), batched: each thumbnail's window sums are computed once, a pair adds only its cross
term, over the windows that hold a differing pixel (the others score exactly 1), and stops early once the
result is proven below the SAME threshold. Window sums are exact integers (cv2.boxFilter); only the last
ratio is float32, so scores agree with skimage to ~1e-8."""

from __future__ import annotations

import itertools

import cv2
import numpy as np

from algos.forks.config import ForkConfig, Region, region_slice


def window_sums(x: np.ndarray, k: int) -> np.ndarray:
    """Exact int32 sums over every k x k window lying inside the uint8 or uint16 image x."""
    out = cv2.boxFilter(x, cv2.CV_32S, (k, k), normalize=False, anchor=(0, 0), borderType=cv2.BORDER_CONSTANT)
    return out[: x.shape[0] - k + 1, : x.shape[1] - k + 1]


class Stats:
    """A uint8 thumbnail's per-window SSIM terms: S = window sum, Q = n sum(x^2) - S^2 (n = k^2)."""

    def __init__(self, gray: np.ndarray, k: int):
        self.gray = gray
        self.s = window_sums(gray, k)
        self.q = window_sums(np.multiply(gray, gray, dtype=np.uint16), k)
        self.q *= k * k
        self.q -= self.s * self.s


class SSIM:
    """Mean SSIM of two thumbnails' `Stats` over the windows touching no ignored pixel (the masks and the
    regions asked for): with S and Q as in `Stats` and n = k^2,
        SSIM_w = (2 Sx Sy + C1 n^2)(2 (n Sxy - Sx Sy) + C2 n (n-1))
                 / ((Sx^2 + Sy^2 + C1 n^2)(Qx + Qy + C2 n (n-1)))."""

    BAND = 48  # window rows summed between early-exit checks

    def __init__(self, cfg: ForkConfig):
        self.cfg = cfg
        self.k = k = cfg.win_size
        self.n = n = k * k
        self.c1 = np.float32((cfg.k1 * cfg.data_range) ** 2 * n * n)
        self.c2 = np.float32((cfg.k2 * cfg.data_range) ** 2 * n * (n - 1))
        self._valid: dict[tuple, tuple[np.ndarray | None, int]] = {}

    def valid(self, shape: tuple[int, int],
              regions: tuple[Region, ...] = ()) -> tuple[np.ndarray | None, int]:
        """Windows touching no ignored pixel (None: all of them) and how many there are."""
        hit = self._valid.get((shape, regions))
        if hit is None:
            ignore = np.zeros(shape, np.uint8)
            for r in self.cfg.masks + regions:
                ignore[region_slice(r, *shape)] = 1
            k = self.k
            if ignore.any():
                ok = window_sums(ignore, k) == 0
                hit = (ok, int(ok.sum()))
            else:
                hit = (None, (shape[0] - k + 1) * (shape[1] - k + 1))
            self._valid[(shape, regions)] = hit
        return hit

    def score(self, a: Stats, b: Stats, regions: tuple[Region, ...] = (),
              floor: float | None = None) -> float:
        """The mean SSIM; -1.0 for thumbnails of different shapes (as UI-Voyager). With `floor`, window rows
        are summed a band at a time and an upper bound (windows not yet summed counted as 1) is returned as
        soon as it falls below `floor`: exact when the result is >= floor, else some value < floor."""
        xa, xb = a.gray, b.gray
        if xa.shape != xb.shape:
            return -1.0
        k = self.k
        hw, ww = a.s.shape
        valid, total = self.valid(xa.shape, regions)
        if total == 0:
            return 1.0
        diff = xa != xb
        rows, cols = np.flatnonzero(diff.any(axis=1)), np.flatnonzero(diff.any(axis=0))
        if rows.size == 0:
            return 1.0
        w0, w1 = max(0, rows[0] - k + 1), min(hw, rows[-1] + 1)  # the windows holding a differing pixel
        c0, c1 = max(0, cols[0] - k + 1), min(ww, cols[-1] + 1)
        band = self.BAND
        cuts = [w0, w1] if floor is None else [w0, *range((w0 // band + 1) * band, w1, band), w1]
        deficit = 0.0  # sum of (1 - SSIM_w) over the windows summed so far
        for r0, r1 in itertools.pairwise(cuts):
            m = self._map(xa[r0:r1 + k - 1, c0:c1 + k - 1], xb[r0:r1 + k - 1, c0:c1 + k - 1],
                          a.s[r0:r1, c0:c1], b.s[r0:r1, c0:c1], a.q[r0:r1, c0:c1], b.q[r0:r1, c0:c1])
            if valid is None:
                deficit += m.size - m.sum(dtype=np.float64)
            else:
                v = valid[r0:r1, c0:c1]
                deficit += int(v.sum()) - m[v].sum(dtype=np.float64)
            if floor is not None and 1.0 - deficit / total < floor:
                break
        return float(1.0 - deficit / total)

    def _map(self, xa, xb, sa, sb, qa, qb) -> np.ndarray:
        """SSIM of a block of windows (float32): xa, xb the pixels under them, sa, sb, qa, qb their terms."""
        sxy = window_sums(np.multiply(xa, xb, dtype=np.uint16), self.k)
        t = sa * sb
        sxy *= self.n
        sxy -= t  # n Sxy - Sx Sy
        a = sa - sb
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
        v = (qa + qb).astype(np.float32)
        v += self.c2
        d *= v
        m /= d
        return m
