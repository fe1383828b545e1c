"""Screens as fork detection sees them: UI-Voyager's gray thumbnail (crop, cv2 INTER_AREA resize, gray) and
16x16 mean hash, SSIM between thumbnails, and the robust mode's masks and local check (a changed digit that
SSIM's mean hides; blinking carets, toasts and notification cards excused).

Each distinct screen (by the bytes of the part that is compared) is processed once; a thumbnail and its
SSIM window sums are made when a comparison first needs them (UI-Voyager makes its thumbnails on a screen's
first pass of the hash prefilter)."""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from typing import Any

import cv2
import numpy as np

from algos.forks.config import ForkConfig, Region, region_slice
from algos.forks.ssim import SSIM, Stats

try:  # a fast fingerprint of a screenshot (xxhash comes with `datasets`); blake2b otherwise
    import xxhash

    def _digest(a: np.ndarray) -> bytes:
        return xxhash.xxh3_128_digest(np.ascontiguousarray(a))
except ImportError:  # pragma: no cover - depends on the environment

    def _digest(a: np.ndarray) -> bytes:
        return hashlib.blake2b(np.ascontiguousarray(a), digest_size=16).digest()


def gray(img: np.ndarray) -> np.ndarray:
    """cv2.cvtColor to gray of an RGB (H, W, 3) image (UI-Voyager reads BGR files and converts BGR2GRAY:
    the same weights on the same colours); a gray (H, W) image as it is."""
    return img if img.ndim == 2 else cv2.cvtColor(img, cv2.COLOR_RGB2GRAY)


def resize_area(img: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    """cv2.resize with INTER_AREA to size = (width, height), as UI-Voyager makes thumbnails and hash grids."""
    return cv2.resize(img, size, interpolation=cv2.INTER_AREA)


class Screens:
    """The distinct screens of a set of steps, by frame id: thumbnail, mean-hash bits and SSIM window sums,
    each computed once. Frames are deduplicated by the bytes of the rows that are compared (rows a crop or a
    full-width mask removes do not count)."""

    def __init__(self, cfg: ForkConfig, width: int):
        self.cfg = cfg
        self.width = width  # thumbnail width (robust: the narrowest screen's, if below thumb_size[0])
        self.ssim = SSIM(cfg)
        self._ids: dict[bytes, int] = {}
        self._crops: list[np.ndarray] = []  # the cropped screens
        self._thumbs: list[np.ndarray | None] = []  # their gray thumbnails, once made
        self._stats: dict[int, Stats] = {}
        self.small: list[np.ndarray] = []  # the hash_size x hash_size gray grids the hashes threshold
        self.bits: list[np.ndarray] = []  # bool mean hashes
        self._masks: dict[tuple, np.ndarray] = {}
        self._kept: dict[tuple[int, bool], np.ndarray] = {}

    def add_many(self, screens: Sequence[Any], whos: Sequence[str]) -> list[int]:
        """Frame ids of screens (RGB uint8 (H, W, 3), RGBA or gray (H, W)); `whos` name them in errors."""
        cfg = self.cfg
        hs = (cfg.hash_size, cfg.hash_size)
        ids = []
        for screen, who in zip(screens, whos, strict=True):
            a = np.asarray(screen)
            if a.dtype != np.uint8 or a.ndim not in (2, 3) or (a.ndim == 3 and a.shape[2] not in (3, 4)):
                raise ValueError(f"{who}: screen must be a uint8 (H, W, 3) RGB image, got {a.dtype} "
                                 f"{a.shape}")
            if a.ndim == 3 and a.shape[2] == 4:
                a = np.ascontiguousarray(a[:, :, :3])
            r0, r1 = self._kept_rows(a.shape[0])
            key = _digest(a[r0:r1]) + np.array(a.shape, np.int64).tobytes()
            fid = self._ids.get(key)
            if fid is None:
                fid = self._ids[key] = len(self._crops)
                self._crops.append(a[int(a.shape[0] * cfg.crop_top):])
                self._thumbs.append(None)
                if cfg.keep_aspect:  # robust: the hash grid of the thumbnail with the masks zeroed
                    g = self.thumbnail(fid)
                    small = resize_area(np.where(self.static_mask(g.shape), 0, g).astype(np.uint8), hs)
                else:  # UI-Voyager: the gray hash grid of the cropped screen
                    small = gray(resize_area(self._crops[fid], hs))
                self.small.append(small)
                self.bits.append((small >= small.mean()).ravel())
            ids.append(fid)
        return ids

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

    def thumb_size(self, shape: tuple[int, ...]) -> tuple[int, int]:
        """(width, height) of the thumbnail of a cropped screen of this shape."""
        cfg = self.cfg
        if not cfg.keep_aspect:
            return cfg.thumb_size
        w = min(self.width, shape[1])
        return w, max(cfg.win_size, int(round(w * shape[0] / shape[1])))

    def thumbnail(self, fid: int) -> np.ndarray:
        """A frame's gray uint8 thumbnail, made on first use."""
        g = self._thumbs[fid]
        if g is None:
            crop = self._crops[fid]
            g = self._thumbs[fid] = gray(resize_area(crop, self.thumb_size(crop.shape)))
        return g

    def hash_similarity(self, fa: int, fb: int) -> float:
        """Share of equal mean-hash bits."""
        return float(np.mean(self.bits[fa] == self.bits[fb]))

    def same_thumbnail(self, fa: int, fb: int) -> bool:
        return fa == fb or np.array_equal(self.thumbnail(fa), self.thumbnail(fb))

    def score(self, fa: int, fb: int, regions: tuple[Region, ...] = (), floor: float | None = None) -> float:
        """SSIM of two frames' thumbnails outside the masks and `regions` (see SSIM.score for `floor`)."""
        return self.ssim.score(self._stats_of(fa), self._stats_of(fb), regions, floor)

    def _stats_of(self, fid: int) -> Stats:
        st = self._stats.get(fid)
        if st is None:
            st = self._stats[fid] = Stats(self.thumbnail(fid), self.cfg.win_size)
        return st

    # -- robust mode: masks and the local check --------------------------------------------------------------
    def static_mask(self, shape: tuple[int, int], overlays: bool = False) -> np.ndarray:
        """Pixels (of a thumbnail or hash grid) inside the always-ignored regions, and with `overlays` inside
        the overlay regions too."""
        m = self._masks.get((shape, overlays))
        if m is None:
            m = np.zeros(shape, bool)
            for r in self.cfg.masks + (self.cfg.overlay_regions if overlays else ()):
                m[region_slice(r, *shape)] = True
            self._masks[(shape, overlays)] = m
        return m

    def kept(self, fid: int, overlays: bool) -> np.ndarray:
        """A thumbnail's pixels outside the static masks (and the overlay regions), float32."""
        v = self._kept.get((fid, overlays))
        if v is None:
            g = self.thumbnail(fid)
            v = self._kept[(fid, overlays)] = g[~self.static_mask(g.shape, overlays)].astype(np.float32)
        return v

    def local(self, ga: np.ndarray, gb: np.ndarray) -> tuple:
        """Robust local check of two thumbnails: ('same',) when no pixel outside the masks differs by more
        than `local_diff` (carets excused), ('overlay', regions, card_like) when all that differs lies inside
        overlay regions, ('different', n_pixels) otherwise."""
        cfg = self.cfg
        if ga.shape != gb.shape:
            return ("different", -1)
        h, w = ga.shape
        d = cv2.absdiff(ga, gb) > (cfg.local_diff or 16)
        d &= ~self.static_mask(ga.shape)
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
            box = drop_carets(box, h)
            n = int(box.sum())
            if n == 0:
                return ("same",)
        if cfg.overlay_regions:
            ys, xs = np.nonzero(box)
            ys, xs = ys + y0, xs + x0
            inside = []
            for r in cfg.overlay_regions:
                rs, cs = region_slice(r, h, w)
                inside.append((ys >= rs.start) & (ys < rs.stop) & (xs >= cs.start) & (xs < cs.stop))
            hit = [k for k, m in enumerate(inside) if m.any()]
            if hit and np.logical_or.reduce([inside[k] for k in hit]).all():
                parts = tuple(cfg.overlay_regions[k] for k in hit)
                full = np.zeros_like(d)
                full[y0:y0 + box.shape[0], x0:x0 + box.shape[1]] = box
                return ("overlay", parts, all(card_like(full[region_slice(r, h, w)]) for r in parts))
        return ("different", n)


def drop_carets(d: np.ndarray, height: int) -> np.ndarray:
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


def card_like(d: np.ndarray) -> bool:
    """Whether the differing pixels of a region look like an opaque card pasted over it (a toast, a heads-up
    notification): their bounding box covers at least a fifth of the region and is at least 30% filled."""
    ys, xs = np.nonzero(d)
    if ys.size == 0:
        return True
    box = (ys.max() - ys.min() + 1) * (xs.max() - xs.min() + 1)
    return box >= 0.2 * d.size and ys.size >= 0.3 * box
