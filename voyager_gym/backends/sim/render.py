"""Draws SimDroid's widget tree to RGB pixels, fast.

Rasterising text is most of the cost of a frame, so every glyph run, icon and rounded corner is rasterised
once into an alpha mask and cached; a frame is solid fills plus alpha blits of cached masks, done with numpy.
Whole frames are cached too, keyed by the tree's visual content, so revisiting a screen costs a lookup.
Only called when pixels are asked for.

Memory is bounded: the glyph cache is `glyph_cache_mb` (default GLYPH_CACHE_MB = 96 MB per renderer) in two
LRUs by bytes: MASK_SHARE of it for rasterised masks (text, icons, corners: FreeType's work, the dear part)
and the rest for what is derived from them (premultiplied colour forms and pre-composited sprites, 3 to 12
bytes a pixel but a table lookup to rebuild), so sprites never push out the masks they come from; tiles have
their own byte budget (48 MB); frames are `frame_cache` whole frames (16: 125 MB at full scale, 8 MB at
0.25). Text longer than its box is cut to what can show before it is rasterised, so a 100 KB field costs
what a full one does. Frames live in a small pool of buffers reused once no one holds them (`FramePool`), so
no step pays for mapping fresh frame-sized memory, and nothing about the host process is changed.
"""

from __future__ import annotations

import math
import os
import sys
from collections import Counter, OrderedDict
from collections.abc import Iterable
from functools import lru_cache

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from voyager_gym.backends.sim.widgets import SCREEN_H, SCREEN_W, Bounds, Node, clip_bounds

_FONT_PATHS = (
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu/DejaVuSans.ttf",
)
_BOLD_PATHS = (
    "/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf",
    "/usr/share/fonts/dejavu/DejaVuSans-Bold.ttf",
)


@lru_cache(maxsize=256)
def font(size: int, bold: bool = False) -> ImageFont.FreeTypeFont:
    # BASIC layout: no shaping library needed, faster, and the same glyph positions on every machine
    for p in _BOLD_PATHS if bold else _FONT_PATHS:
        if os.path.exists(p):
            return ImageFont.truetype(p, size, layout_engine=ImageFont.Layout.BASIC)
    return ImageFont.load_default(size=size)


GLYPH_CACHE_MB = 96  # default byte budget of a renderer's glyph cache (masks, premultiples, sprites)
MASK_SHARE = 0.5  # the glyph cache's share for rasterised masks (one pass over every task's text: ~43 MB)
CLIP_CHARS = 128  # text up to this many characters is never cut (no extra measuring on ordinary labels)


def _nbytes(value: object) -> int:
    """Bytes held by a cached value: arrays, and tuples/lists of them (other members count as nothing)."""
    if isinstance(value, np.ndarray):
        return value.nbytes
    if isinstance(value, tuple | list):
        return sum(_nbytes(v) for v in value)
    return 0


class ByteLRU:
    """A mapping bounded by the bytes of its values: putting past `budget` evicts least recently used."""

    def __init__(self, budget: int):
        self.budget = budget
        self.nbytes = 0
        self._d: OrderedDict[object, tuple[object, int]] = OrderedDict()

    def get(self, key: object) -> object | None:
        hit = self._d.get(key)
        if hit is None:
            return None
        self._d.move_to_end(key)
        return hit[0]

    def put(self, key: object, value: object) -> object:
        """Store `value` (unless it alone exceeds the budget) and return it."""
        n = _nbytes(value)
        old = self._d.pop(key, None)
        if old is not None:
            self.nbytes -= old[1]
        if n > self.budget:
            return value
        self._d[key] = (value, n)
        self.nbytes += n
        while self.nbytes > self.budget:
            _, (_, m) = self._d.popitem(last=False)
            self.nbytes -= m
        return value

    def __len__(self) -> int:
        return len(self._d)


def _ref_counts(bufs: list[np.ndarray]) -> list[int]:
    """Each buffer's reference count as seen from here (the list, the loop variable and the call count)."""
    return [sys.getrefcount(b) for b in bufs]


_FREE_REFS = _ref_counts([np.empty(0, np.uint8)])[0]  # the count of a buffer nothing but its list refers to


class FramePool:
    """Frame-sized uint8 buffers, reused once nothing but the pool refers to them.

    A fresh 7.8 MB array is new memory whose pages fault in on first write, which costs more than drawing
    most frames; a reused buffer is mapped and warm. A buffer counts as free only when its reference count
    shows the pool alone holds it, so a frame anyone still holds (or a view of it: views hold their base) is
    never written again. At most `spare` free buffers are kept; `limit` bounds how many are tracked (past
    it, new buffers are plain arrays, freed as usual)."""

    def __init__(self, shape: tuple[int, int, int], spare: int = 2, limit: int = 64):
        if spare < 0 or limit < 1:
            raise ValueError(f"FramePool(spare={spare}, limit={limit}): expected spare >= 0 and limit >= 1")
        self.shape = shape
        self.spare = spare
        self.limit = limit
        self._bufs: list[np.ndarray] = []
        self.stats = {"reused": 0, "allocated": 0}

    def take(self) -> np.ndarray:
        """A writable buffer of `shape` (contents undefined) that nothing outside the pool refers to."""
        free = [i for i, c in enumerate(_ref_counts(self._bufs)) if c <= _FREE_REFS]
        for i in reversed(free[self.spare + 1 :]):  # the one taken now plus `spare` stay
            del self._bufs[i]
        if free:
            buf = self._bufs[free[0]]
            buf.setflags(write=True)
            self.stats["reused"] += 1
            return buf
        buf = np.empty(self.shape, np.uint8)
        self.stats["allocated"] += 1
        if len(self._bufs) < self.limit:
            self._bufs.append(buf)
        return buf

    def spare_bytes(self) -> int:
        """Bytes held by buffers nothing outside the pool refers to."""
        counts = _ref_counts(self._bufs)
        return sum(b.nbytes for b, c in zip(self._bufs, counts, strict=True) if c <= _FREE_REFS)


def _visible(text: str, f: ImageFont.FreeTypeFont, width: int, align: str = "left") -> str:
    """The part of one line of `text` that can show in `width` px at `align`: the shortest prefix (suffix,
    middle) at least a glyph wider than the box, found by doubling, so no call measures the whole text. For
    left-aligned text the pixels are exactly those of the whole line (glyphs right of the cut are clipped
    anyway); right- and centre-aligned overlong text shows its end or middle."""
    if len(text) <= CLIP_CHARS or width <= 0:
        return text
    need = width + 2 * f.size
    k = CLIP_CHARS
    while k < len(text):
        if align == "right":
            piece = text[-k:]
        elif align == "center":
            mid = len(text) // 2
            piece = text[mid - k // 2 : mid + k // 2]
        else:
            piece = text[:k]
        if f.getlength(piece) >= need:
            return piece
        k *= 2
    return text


def _div255(t: np.ndarray) -> np.ndarray:
    """floor(t / 255) for uint16 t < 65535, with shifts."""
    t = t + 1
    t += t >> 8
    t >>= 8
    return t


def _as_mask(img: Image.Image) -> np.ndarray:
    """An 'L' image as an alpha mask: (h, w, 1) uint8, read-only (masks are cached and shared)."""
    m = np.asarray(img)[..., None]
    m.setflags(write=False)
    return m


_ALPHA = np.arange(256, dtype=np.uint16)[:, None]  # every alpha value, one per row


def _ink(mask: np.ndarray) -> tuple[int, int, int, int] | None:
    """(y0, x0, y1, x1) of the mask's nonzero alpha, or None if it has none. Outside it, blending leaves a
    pixel as it was (floor((255 * p + 127) / 255) = p), so blits only touch this box."""
    m = mask[..., 0]
    rows = np.flatnonzero(m.max(axis=1))
    if not len(rows):
        return None
    cols = np.flatnonzero(m[rows[0] : rows[-1] + 1].max(axis=0))
    return int(rows[0]), int(cols[0]), int(rows[-1]) + 1, int(cols[-1]) + 1


_Shot = tuple[np.ndarray, list[tuple], frozenset]  # a rendered frame, its visual items and their set
DAMAGE_TRIES = 3  # cached frames tried as the base of a partial repaint (fewest differing items first)


def _box(changed: Iterable[tuple]) -> Bounds | None:
    """The on-screen bounding box of changed visual items, or None if it is empty or over half the screen
    (then a full render is cheaper than a copy and a repaint)."""
    bounds = [t[0] for t in changed]
    if not bounds:
        return None
    x0s, y0s, x1s, y1s = zip(*bounds, strict=True)
    x0, y0 = max(0, min(x0s)), max(0, min(y0s))
    x1, y1 = min(SCREEN_W, max(x1s)), min(SCREEN_H, max(y1s))
    if x1 <= x0 or y1 <= y0:
        return None
    if (x1 - x0) * (y1 - y0) > 0.5 * SCREEN_W * SCREEN_H:
        return None
    return (x0, y0, x1, y1)


def _same_order(a: list[tuple], b: list[tuple], shared: frozenset) -> bool:
    """Whether the items in `shared` come in the same order in `a` and `b`."""
    return [t for t in a if t in shared] == [t for t in b if t in shared]


class Renderer:
    """Renders trees at `scale` x the 1080x2400 logical screen. `frame_cache` frames are kept (LRU)."""

    def __init__(
        self,
        scale: float = 1.0,
        frame_cache: int = 16,
        tile_cache_mb: int | None = None,
        incremental: bool = True,
        fast: bool = True,
        glyph_cache_mb: int = GLYPH_CACHE_MB,
    ):
        if not (0.05 <= scale <= 2.0):
            raise ValueError(f"render scale must be in [0.05, 2.0], got {scale}")
        self.scale = scale
        self.frame_cache = frame_cache
        self.W = max(1, round(SCREEN_W * scale))
        self.H = max(1, round(SCREEN_H * scale))
        self._frames: OrderedDict[int, _Shot] = OrderedDict()
        # rasterised masks, and apart (so they cannot evict masks) the premultiples and sprites made from
        # them; those are keyed by their mask's id and keep the mask alive, so an id is never reused while
        # its entries exist
        mask_budget = int(glyph_cache_mb * 2**20 * MASK_SHARE)
        self._glyphs = ByteLRU(mask_budget)
        self._blits = ByteLRU(glyph_cache_mb * 2**20 - mask_budget)
        self._rows: dict[tuple, np.ndarray] = {}  # one row per colour of the palette: a few KB each
        self._blanks = ByteLRU(4 * self.W * self.H * 3)  # blank frames of the last few background colours
        # every frame this renderer hands out lives in a pool buffer: cached frames, the last one, and what
        # callers hold stay taken; room for those plus a few more
        self.pool = FramePool((self.H, self.W, 3), limit=frame_cache + 32)
        self._tiles: OrderedDict[int, np.ndarray] = OrderedDict()
        self._tile_bytes = 0
        self.tile_budget = 48 * 2**20 if tile_cache_mb is None else tile_cache_mb * 2**20
        self.stats = {"hits": 0, "misses": 0, "partial": 0}
        self.incremental = incremental and fast
        self.fast = fast  # False: the plain reference path (no tiles, sprites, skipped fills or damage)
        if not fast:
            self.frame_cache, self.tile_budget = 0, 0
        self._last: _Shot | None = None
        self.fresh = False  # whether the last render() drew a new frame (returned by no earlier call)

    # -- public ----------------------------------------------------------------------------------------
    def render(self, root: Node) -> np.ndarray:
        """The frame for `root` (H, W, 3) uint8, read-only: it is shared with the frame cache and with every
        caller handed the same screen (its buffer is reused only once no one refers to it).

        A frame seen recently is a cache lookup. Otherwise, if the tree differs from the last rendered one
        or a cached one in a small region (typing, a toggle, a toast, a list back from a detail screen with
        one row changed), only that region is repainted over a copy of that frame: every node crossing it is
        redrawn clipped to it, in order, over a fresh background, which gives exactly the pixels of a full
        render."""
        items = [n.visual_tuple() for n in root.nodes()]
        key = hash(tuple(items))
        shot = self._frames.get(key)
        if shot is not None:
            self._frames.move_to_end(key)
            self.stats["hits"] += 1
            self.fresh = False
            self._last = shot
            return shot[0]
        self.stats["misses"] += 1
        self.fresh = True
        bg = tuple((root.bg or (255, 255, 255))[:3])
        itemset = frozenset(items)
        found = self._damage(items, itemset) if self.incremental else None
        if found is not None:
            self.stats["partial"] += 1
            under, damage = found
            frame = self.pool.take()
            np.copyto(frame, under)
            self.fill(frame, self.rect(damage), bg)
            self._draw(frame, root, damage, bg)
        else:
            frame = self.pool.take()
            if bg[0] == bg[1] == bg[2]:  # white or a grey: a byte fill, the fastest way to paint a frame
                frame.fill(bg[0])
            else:  # copying a cached blank frame is faster than broadcasting a colour over the frame
                blank = self._blanks.get(bg)
                if blank is None:
                    blank = np.empty((self.H, self.W, 3), dtype=np.uint8)
                    self.fill(blank, (0, 0, self.W, self.H), bg)
                    self._blanks.put(bg, blank)
                np.copyto(frame, blank)
            self._draw(frame, root, (0, 0, SCREEN_W, SCREEN_H), bg)
        frame.setflags(write=False)
        self._last = (frame, items, itemset)
        if self.frame_cache > 0:
            self._frames[key] = self._last
            while len(self._frames) > self.frame_cache:
                self._frames.popitem(last=False)
        return frame

    def cache_bytes(self) -> dict[str, int]:
        """Bytes held by each cache (frames, tiles, glyphs, blank frames, colour rows, spare pool buffers)."""
        return {
            "frames": sum(f[0].nbytes for f in self._frames.values()),
            "tiles": self._tile_bytes,
            "glyphs": self._glyphs.nbytes + self._blits.nbytes,
            "blanks": self._blanks.nbytes,
            "rows": sum(r.nbytes for r in self._rows.values()),
            "pool": self.pool.spare_bytes(),
        }

    def new_frame(self) -> np.ndarray:
        """A writable (H, W, 3) uint8 buffer from the frame pool, contents undefined, for frames derived from
        a rendered one (noisy or blended screenshots). Set it read-only before handing it out."""
        return self.pool.take()

    def _damage(self, items: list[tuple], itemset: frozenset) -> tuple[np.ndarray, Bounds] | None:
        """A frame to repaint over and the bounding box of what differs from it, or None to render in full.

        Candidates are the last frame and the cached ones (one set difference of visual items each); the
        DAMAGE_TRIES whose item sets differ least from `items` are tried, and the box is taken from the
        multiset difference, since a node drawn twice is not a node drawn once. A candidate whose shared
        items are drawn in another order is passed over: overlapping nodes swapped outside the box would
        show."""
        shots = list(self._frames.values())
        if self._last is not None and (not shots or shots[-1] is not self._last):  # newest, if cached
            shots.append(self._last)
        diffs = [itemset ^ s[2] for s in shots]
        for i in sorted(range(len(shots)), key=lambda i: len(diffs[i]))[:DAMAGE_TRIES]:
            frame, prev_items, prev_set = shots[i]
            box = _box(diffs[i]) if diffs[i] else None  # an empty set difference: only order or counts differ
            if box is None:
                continue
            if len(items) != len(itemset) or len(prev_items) != len(prev_set):  # repeated items: count them
                prev, new = Counter(prev_items), Counter(items)
                box = _box(list((prev - new).elements()) + list((new - prev).elements()))
            if box is not None and _same_order(prev_items, items, itemset & prev_set):
                return frame, box
        return None

    def px(self, v: float) -> int:
        return int(round(v * self.scale)) if self.scale != 1.0 else int(v)

    def rect(self, b: Bounds) -> tuple[int, int, int, int]:
        if self.scale == 1.0:
            return b
        s = self.scale
        return int(round(b[0] * s)), int(round(b[1] * s)), int(round(b[2] * s)), int(round(b[3] * s))

    # -- drawing primitives ----------------------------------------------------------------------------
    def fill(self, frame: np.ndarray, r: tuple[int, int, int, int], color) -> None:
        x0, y0, x1, y1 = r
        x0, y0 = (x0 if x0 > 0 else 0), (y0 if y0 > 0 else 0)  # conditionals: cheaper than max/min calls
        x1, y1 = (x1 if x1 < self.W else self.W), (y1 if y1 < self.H else self.H)
        if x1 > x0 and y1 > y0:
            # Assigning a cached row is ~50x faster than broadcasting a colour tuple over the rectangle.
            frame[y0:y1, x0:x1] = self._row(tuple(color[:3]))[: x1 - x0]

    def blit(self, frame: np.ndarray, x: int, y: int, mask: np.ndarray, color, clip, under=None) -> None:
        """Alpha-blend `color` through `mask` (h, w, 1 uint8 alpha) at (x, y), clipped to `clip` px.

        When the caller knows the region is the uniform colour `under`, the pre-composited sprite is copied
        in: the same pixels, a third of the work. Otherwise the mask's cached inverse and colour premultiple
        make the blend three in-place array ops, over the mask's ink only (see `_ink`). Both are built by
        looking each alpha up in a 256-row table of its result."""
        color = tuple(color[:3])
        if under is not None:
            key = ("sprite", id(mask), color, under)
            hit = self._blits.get(key)
            if hit is None:
                hit = self._blits.put(key, self._composite(mask, color, under))
        else:
            key = ("premul", id(mask), color)
            hit = self._blits.get(key)
            if hit is None:
                hit = self._blits.put(key, self._composite(mask, color, None))
        if hit[0] is None:  # no ink: nothing to draw
            return
        (oy, ox), img = hit[0], hit[1]
        h, w = img.shape[0], img.shape[1] // 3
        x, y = x + ox, y + oy
        cx0, cy0, cx1, cy1 = clip
        x0, y0 = (x if x > cx0 else cx0), (y if y > cy0 else cy0)
        x0, y0 = (x0 if x0 > 0 else 0), (y0 if y0 > 0 else 0)
        x1, y1 = (x + w if x + w < cx1 else cx1), (y + h if y + h < cy1 else cy1)
        x1, y1 = (x1 if x1 < self.W else self.W), (y1 if y1 < self.H else self.H)
        if x1 <= x0 or y1 <= y0:
            return
        rows, cols = slice(y0 - y, y1 - y), slice((x0 - x) * 3, (x1 - x) * 3)
        # flattened to (h, w*3) so numpy's inner loops run along whole rows, not along 3 channels
        sub2 = frame[y0:y1, x0:x1].reshape(y1 - y0, (x1 - x0) * 3)
        if under is not None:
            sub2[:] = img[rows, cols]
            return
        t = sub2 * img[rows, cols]  # uint16; with the +127 below it stays under 2**16
        t += hit[2][rows, cols]
        # exact floor(t / 255) for t < 65535 with shifts (numpy's integer division is several times slower)
        t += 1
        t += t >> 8
        t >>= 8
        sub2[:] = t

    def _composite(self, mask: np.ndarray, color: tuple, under: tuple | None) -> tuple:
        """A glyph-cache entry for blitting `mask` in `color`: ((oy, ox), then the pre-composited sprite over
        `under`, or the inverse alpha and colour premultiple (uint16) when `under` is None), each (h, w*3)
        over the mask's ink box only: outside it a sprite would paint `under` over `under`. The mask is kept
        last, alive, so its id stays unique while cached."""
        c = np.asarray(color, np.uint16)
        box = _ink(mask)
        if box is None:
            return (None, mask)
        y0, x0, y1, x1 = box
        m = mask[y0:y1, x0:x1, 0]
        h, w = m.shape
        if under is not None:
            table = _div255(np.asarray(under, np.uint16) * (255 - _ALPHA) + c * _ALPHA + 127).astype(np.uint8)
            return ((y0, x0), np.take(table, m, axis=0).reshape(h, w * 3), mask)
        inv = np.take(np.repeat(255 - _ALPHA, 3, axis=1), m, axis=0).reshape(h, w * 3)
        cm = np.take(c * _ALPHA + 127, m, axis=0).reshape(h, w * 3)
        return ((y0, x0), inv, cm, mask)

    def _row(self, color: tuple) -> np.ndarray:
        row = self._rows.get(color)
        if row is None:
            row = self._rows[color] = np.tile(np.asarray(color[:3], np.uint8), (self.W, 1))
        return row

    def text_mask(self, text: str, size: int, bold: bool, width: int = 0, lines: int = 1,
                  align: str = "left") -> np.ndarray:
        """The alpha mask of `text` in `lines` rows wrapped at `width` px; text beyond what `width` can show
        is cut first (see `_visible`), so the mask is never much wider than the box."""
        cut = len(text) > CLIP_CHARS  # only then do the width and alignment change the mask of one line
        key = ("t", text, size, bold, width if lines > 1 or cut else 0, lines, align if cut else "")
        m = self._glyphs.get(key)
        if m is None:
            f = font(size, bold)
            if lines > 1:
                rows = [_visible(r, f, width) for r in self._wrap(text, f, width, lines)]
            else:
                rows = [_visible(text.replace("\n", " "), f, width, align)]
            line_h = int(size * 1.3)
            wmax = max([1] + [int(math.ceil(f.getlength(r))) + 2 for r in rows])
            img = Image.new("L", (wmax, max(1, line_h * len(rows))), 0)
            d = ImageDraw.Draw(img)
            for i, r in enumerate(rows):
                d.text((0, i * line_h + int(size * 0.1)), r, fill=255, font=f)
            m = self._glyphs.put(key, _as_mask(img))
        return m

    @staticmethod
    def _wrap(text: str, f: ImageFont.FreeTypeFont, width: int, lines: int) -> list[str]:
        """Greedy word wrap into at most `lines` rows; stops as soon as they are full. A word wider than the
        box (it gets a row of its own) is cut to what can show before it is measured with its neighbours."""
        out: list[str] = []
        for para in text.split("\n", lines):
            cur = ""
            for word in para.split(" "):
                if len(out) >= lines:
                    break
                word = _visible(word, f, width)
                cand = word if not cur else f"{cur} {word}"
                if width and f.getlength(cand) > width and cur:
                    out.append(cur)
                    cur = word
                else:
                    cur = cand
            out.append(cur)
            if len(out) >= lines:
                break
        return out[:lines]

    def corner_mask(self, r: int) -> np.ndarray:
        key = ("corner", r)
        m = self._glyphs.get(key)
        if m is None:
            ss = 4
            img = Image.new("L", (r * ss * 2, r * ss * 2), 0)
            ImageDraw.Draw(img).ellipse((0, 0, r * ss * 2 - 1, r * ss * 2 - 1), fill=255)
            img = img.resize((r * 2, r * 2), Image.Resampling.BOX)
            m = self._glyphs.put(key, _as_mask(img))
        return m

    def corner_quarters(self, r: int) -> list[np.ndarray]:
        key = ("quarters", r)
        q = self._glyphs.get(key)
        if q is None:
            cm = self.corner_mask(r)
            q = self._glyphs.put(key, [
                np.ascontiguousarray(a) for a in (cm[:r, :r], cm[:r, r:], cm[r:, :r], cm[r:, r:])
            ])
        return q

    def round_rect(self, frame, r, radius: int, color, clip, under=None) -> None:
        x0, y0, x1, y1 = r
        rad = min(radius, (x1 - x0) // 2, (y1 - y0) // 2)
        if rad <= 1:
            cr = (max(x0, clip[0]), max(y0, clip[1]), min(x1, clip[2]), min(y1, clip[3]))
            self.fill(frame, cr, color)
            return
        for rr in (
            (x0 + rad, y0, x1 - rad, y1),
            (x0, y0 + rad, x0 + rad, y1 - rad),
            (x1 - rad, y0 + rad, x1, y1 - rad),
        ):
            self.fill(
                frame,
                (max(rr[0], clip[0]), max(rr[1], clip[1]), min(rr[2], clip[2]), min(rr[3], clip[3])),
                color,
            )
        q = self.corner_quarters(rad)
        for (cx, cy), m in zip(
            ((x0, y0), (x1 - rad, y0), (x0, y1 - rad), (x1 - rad, y1 - rad)), q, strict=True
        ):
            self.blit(frame, cx, cy, m, color, clip, under)

    def icon_layers(self, name: str, w: int, h: int) -> list[tuple[np.ndarray, tuple | None]]:
        """Masks for an icon at w x h px: [(mask, colour or None for the node's icon colour)]."""
        key = ("icon", name, w, h)
        layers = self._glyphs.get(key)
        if layers is None:
            layers = self._glyphs.put(key, _draw_icon(name, w, h))
        return layers

    # -- the tree --------------------------------------------------------------------------------------
    def _draw(self, frame: np.ndarray, n: Node, clip: Bounds, under=None) -> None:
        if not self.fast:
            under = None
        b = clip_bounds(n.bounds, clip)
        if b[2] <= b[0] or b[3] <= b[1]:
            return
        if n.tile and self.fast and b == n.bounds and n.bg is not None and not n.radius:
            self._draw_tile(frame, n, clip)
            return
        self._draw_node(frame, n, clip, b, under)

    def _draw_tile(self, frame: np.ndarray, n: Node, clip: Bounds) -> None:
        x0, y0, x1, y1 = self.rect(n.bounds)
        x0, y0, x1, y1 = max(0, x0), max(0, y0), min(self.W, x1), min(self.H, y1)
        # the pixel origin's sub-pixel phase changes rounding, so it is part of the key
        key = hash(
            (
                n.tile_key(),
                x1 - x0,
                y1 - y0,
                self.rect(n.bounds)[0] - x0,
                self.rect(n.bounds)[1] - y0,
                (n.bounds[0] * self.scale) % 1,
                (n.bounds[1] * self.scale) % 1,
            )
        )
        tile = self._tiles.get(key)
        if tile is not None and tile.shape[:2] == (y1 - y0, x1 - x0):
            self._tiles.move_to_end(key)
            frame[y0:y1, x0:x1] = tile
            return
        self._draw_node(frame, n, clip, n.bounds)
        tile = frame[y0:y1, x0:x1].copy()
        self._tiles[key] = tile
        self._tile_bytes += tile.nbytes
        while self._tile_bytes > self.tile_budget and self._tiles:
            _, old = self._tiles.popitem(last=False)
            self._tile_bytes -= old.nbytes

    def _draw_node(self, frame: np.ndarray, n: Node, clip: Bounds, b: Bounds, under=None) -> None:
        """Draw one node and its children. `under` is the colour believed to lie beneath (a hint: blits
        verify it before using a pre-composited sprite)."""
        cpx = self.rect(b)
        full = self.rect(n.bounds)
        if n.dim:
            x0, y0, x1, y1 = cpx
            np.right_shift(frame[y0:y1, x0:x1], 1, out=frame[y0:y1, x0:x1])
            under = None
        if n.bg is not None:
            if tuple(n.bg[:3]) == under and not n.radius:
                pass  # already that colour: skip the fill (frequent for white rows on white screens)
            elif n.radius:
                self.round_rect(frame, full, self.px(n.radius), n.bg, cpx, under)
            else:
                self.fill(frame, cpx, n.bg)
            under = tuple(n.bg[:3])
        node_under = under  # what lies beneath this node's own pixels
        own: list[tuple[int, int, int, int]] = []  # pixel rects this node paints over its background
        tx0, ty0, tx1, ty1 = full
        label = n.shown if n.shown is not None else n.text if n.text else (n.hint if n.editable else None)
        if n.icon:
            iw, ih = tx1 - tx0, ty1 - ty0
            if label and n.align == "center" and ih > iw * 0.9:  # launcher cell: icon above label
                side = min(iw, self.px(150))
                ix, iy, isz_w, isz_h = tx0 + (iw - side) // 2, ty0 + self.px(20), side, side
                ty0 = iy + side + self.px(10)
            elif label:  # icon at the left, label after it
                side = min(ih, self.px(72))
                ix, iy, isz_w, isz_h = tx0 + self.px(24), ty0 + (ih - side) // 2, side, side
                tx0 = ix + side + self.px(24)
            else:
                side = min(iw, ih)
                side = int(side * (0.6 if not n.icon.startswith(("switch", "app:")) else 1.0))
                if n.icon.startswith("switch"):
                    isz_w, isz_h = iw, ih
                    ix, iy = tx0, ty0
                else:
                    isz_w = isz_h = max(1, side)
                    ix, iy = tx0 + (iw - side) // 2, ty0 + (ih - side) // 2
            for k, (mask, color) in enumerate(self.icon_layers(n.icon, max(1, isz_w), max(1, isz_h))):
                # only the first layer lands on `under`; later layers (a letter on a disc) overlap it
                self.blit(frame, ix, iy, mask, color or n.icon_fg or n.fg, cpx, under if k == 0 else None)
            own.append((ix, iy, ix + isz_w, iy + isz_h))
        if label:
            size = max(6, self.px(n.size))
            pad = self.px(n.pad)
            width = tx1 - tx0 - 2 * pad
            m = self.text_mask(label, size, n.bold, width, n.lines, n.align)
            mh, mw = m.shape[:2]
            if n.lines > 1:
                y = ty0 + pad
            else:
                y = ty0 + (ty1 - ty0 - mh) // 2
            if n.align == "center":
                x = tx0 + (tx1 - tx0 - mw) // 2
            elif n.align == "right":
                x = tx1 - pad - mw
            else:
                x = tx0 + pad
            color = n.fg if (n.text or not n.editable) else (128, 134, 139)
            if not n.enabled and not n.editable:
                color = (154, 160, 166)
            tclip = (max(cpx[0], tx0 + pad - 2), cpx[1], min(cpx[2], tx1 - pad + 2), cpx[3])
            self.blit(frame, x, y, m, color, tclip, under)
            own.append((x, y, x + mw, y + mh))
        if n.border is not None:  # a bottom rule, drawn after the label so no sprite covers it
            thick = max(1, self.px(4 if n.focused else 2))
            x0, y0, x1, y1 = full
            self.fill(
                frame, (max(x0, cpx[0]), max(y1 - thick, cpx[1]), min(x1, cpx[2]), min(y1, cpx[3])), n.border
            )
            own.append((x0, y1 - thick, x1, y1))
        del node_under
        inner = b if n.clip else clip
        if under is None:
            for c in n.children:
                self._draw(frame, c, inner, None)
            return
        # A child sees `under` only where neither this node's own marks nor an earlier sibling have drawn.
        # The box around all of those is checked first: most children (rows below rows) miss it entirely.
        drawn = own
        ux0 = min([d[0] for d in drawn], default=0)
        uy0 = min([d[1] for d in drawn], default=0)
        ux1 = max([d[2] for d in drawn], default=0)
        uy1 = max([d[3] for d in drawn], default=0)
        for c in n.children:
            cr = self.rect(c.bounds)
            hidden = (
                cr[0] < ux1 and ux0 < cr[2] and cr[1] < uy1 and uy0 < cr[3]
                and any(cr[0] < d[2] and d[0] < cr[2] and cr[1] < d[3] and d[1] < cr[3] for d in drawn)
            )
            self._draw(frame, c, inner, None if hidden else under)
            if c.bg is not None or c.dim or c.children or c.text or c.icon or c.border or c.hint:
                if not drawn:
                    ux0, uy0, ux1, uy1 = cr
                else:
                    ux0, uy0 = (ux0 if ux0 < cr[0] else cr[0]), (uy0 if uy0 < cr[1] else cr[1])
                    ux1, uy1 = (ux1 if ux1 > cr[2] else cr[2]), (uy1 if uy1 > cr[3] else cr[3])
                drawn.append(cr)


# -- icons ---------------------------------------------------------------------------------------------
def _draw_icon(name: str, w: int, h: int) -> list[tuple[np.ndarray, tuple | None]]:
    ss = 3
    W, H = w * ss, h * ss

    def canvas() -> tuple[Image.Image, ImageDraw.ImageDraw]:
        img = Image.new("L", (W, H), 0)
        return img, ImageDraw.Draw(img)

    def done(img: Image.Image) -> np.ndarray:
        return _as_mask(img.resize((w, h), Image.Resampling.BOX))

    lw = max(2, min(W, H) // 10)
    img, d = canvas()
    if name.startswith("switch"):
        on = name == "switch_on"
        track_img, td = canvas()
        th = H * 0.45
        td.rounded_rectangle((W * 0.1, (H - th) / 2, W * 0.9, (H + th) / 2), radius=th / 2, fill=255)
        r = H * 0.36
        cx = W * 0.9 - r if on else W * 0.1 + r
        d.ellipse((cx - r, H / 2 - r, cx + r, H / 2 + r), fill=255)
        track = (168, 199, 250) if on else (189, 193, 198)
        thumb = (26, 115, 232) if on else (241, 243, 244)
        return [(done(track_img), track), (done(img), thumb)]
    if name.startswith("app:"):
        d.ellipse((0, 0, W - 1, H - 1), fill=255)
        letter_img, ld = canvas()
        f = font(max(6, int(H * 0.5)), True)
        letter = name[4:] or "?"
        tw = f.getlength(letter)
        ld.text(((W - tw) / 2, H * 0.2), letter, fill=255, font=f)
        return [(done(img), None), (done(letter_img), (255, 255, 255))]
    if name in ("check_on", "check_off"):
        d.rounded_rectangle(
            (W * 0.15, H * 0.15, W * 0.85, H * 0.85),
            radius=W * 0.08,
            outline=255,
            width=lw,
            fill=255 if name == "check_on" else 0,
        )
        layers = [(done(img), None)]
        if name == "check_on":
            ck, cd = canvas()
            cd.line([(W * 0.3, H * 0.5), (W * 0.45, H * 0.66), (W * 0.72, H * 0.34)], fill=255, width=lw)
            layers.append((done(ck), (255, 255, 255)))
        return layers
    shapes = {
        "back": lambda: d.line(
            [
                (W * 0.8, H / 2),
                (W * 0.2, H / 2),
                (W * 0.45, H * 0.25),
                (W * 0.2, H / 2),
                (W * 0.45, H * 0.75),
            ],
            fill=255,
            width=lw,
            joint="curve",
        ),
        "nav_back": lambda: d.polygon(
            [(W * 0.3, H / 2), (W * 0.65, H * 0.25), (W * 0.65, H * 0.75)], outline=255, width=lw
        ),
        "nav_home": lambda: d.ellipse((W * 0.3, H * 0.25, W * 0.7, H * 0.75), outline=255, width=lw),
        "nav_recents": lambda: d.rectangle((W * 0.35, H * 0.3, W * 0.65, H * 0.7), outline=255, width=lw),
        "add": lambda: (
            d.line([(W / 2, H * 0.2), (W / 2, H * 0.8)], fill=255, width=lw),
            d.line([(W * 0.2, H / 2), (W * 0.8, H / 2)], fill=255, width=lw),
        ),
        "close": lambda: (
            d.line([(W * 0.25, H * 0.25), (W * 0.75, H * 0.75)], fill=255, width=lw),
            d.line([(W * 0.75, H * 0.25), (W * 0.25, H * 0.75)], fill=255, width=lw),
        ),
        "check": lambda: d.line(
            [(W * 0.2, H * 0.5), (W * 0.42, H * 0.72), (W * 0.8, H * 0.3)], fill=255, width=lw
        ),
        "search": lambda: (
            d.ellipse((W * 0.2, H * 0.2, W * 0.6, H * 0.6), outline=255, width=lw),
            d.line([(W * 0.55, H * 0.55), (W * 0.8, H * 0.8)], fill=255, width=lw),
        ),
        "more": lambda: [
            d.ellipse((W / 2 - lw, H * f - lw, W / 2 + lw, H * f + lw), fill=255) for f in (0.25, 0.5, 0.75)
        ],
        "menu": lambda: [
            d.line([(W * 0.2, H * f), (W * 0.8, H * f)], fill=255, width=lw) for f in (0.3, 0.5, 0.7)
        ],
        "delete": lambda: (
            d.rectangle((W * 0.3, H * 0.35, W * 0.7, H * 0.8), outline=255, width=lw),
            d.line([(W * 0.22, H * 0.28), (W * 0.78, H * 0.28)], fill=255, width=lw),
        ),
        "edit": lambda: d.line([(W * 0.25, H * 0.75), (W * 0.75, H * 0.25)], fill=255, width=lw * 2),
        "folder": lambda: d.polygon(
            [
                (W * 0.1, H * 0.25),
                (W * 0.4, H * 0.25),
                (W * 0.5, H * 0.35),
                (W * 0.9, H * 0.35),
                (W * 0.9, H * 0.8),
                (W * 0.1, H * 0.8),
            ],
            fill=255,
        ),
        "file": lambda: d.polygon(
            [
                (W * 0.25, H * 0.1),
                (W * 0.6, H * 0.1),
                (W * 0.75, H * 0.25),
                (W * 0.75, H * 0.9),
                (W * 0.25, H * 0.9),
            ],
            outline=255,
            width=lw,
        ),
        "battery": lambda: d.rectangle((W * 0.3, H * 0.15, W * 0.7, H * 0.9), fill=255),
        "wifi": lambda: d.pieslice((0, H * 0.1, W, H * 1.7), 225, 315, fill=255),
        "bluetooth": lambda: d.line(
            [
                (W * 0.3, H * 0.3),
                (W * 0.7, H * 0.7),
                (W * 0.5, H * 0.9),
                (W * 0.5, H * 0.1),
                (W * 0.7, H * 0.3),
                (W * 0.3, H * 0.7),
            ],
            fill=255,
            width=lw,
        ),
        "airplane": lambda: d.polygon(
            [(W / 2, H * 0.1), (W * 0.9, H * 0.6), (W / 2, H * 0.5), (W * 0.1, H * 0.6)], fill=255
        ),
        "play": lambda: d.polygon([(W * 0.3, H * 0.2), (W * 0.8, H / 2), (W * 0.3, H * 0.8)], fill=255),
        "pause": lambda: (
            d.rectangle((W * 0.28, H * 0.2, W * 0.42, H * 0.8), fill=255),
            d.rectangle((W * 0.58, H * 0.2, W * 0.72, H * 0.8), fill=255),
        ),
        "rewind": lambda: (
            d.polygon([(W * 0.5, H * 0.25), (W * 0.15, H / 2), (W * 0.5, H * 0.75)], fill=255),
            d.polygon([(W * 0.85, H * 0.25), (W * 0.5, H / 2), (W * 0.85, H * 0.75)], fill=255),
        ),
        "forward": lambda: (
            d.polygon([(W * 0.15, H * 0.25), (W * 0.5, H / 2), (W * 0.15, H * 0.75)], fill=255),
            d.polygon([(W * 0.5, H * 0.25), (W * 0.85, H / 2), (W * 0.5, H * 0.75)], fill=255),
        ),
        "stop": lambda: d.rectangle((W * 0.25, H * 0.25, W * 0.75, H * 0.75), fill=255),
        "record": lambda: d.ellipse((W * 0.2, H * 0.2, W * 0.8, H * 0.8), fill=255),
        "send": lambda: d.polygon(
            [(W * 0.15, H * 0.2), (W * 0.85, H / 2), (W * 0.15, H * 0.8), (W * 0.25, H / 2)], fill=255
        ),
        "person": lambda: (
            d.ellipse((W * 0.35, H * 0.15, W * 0.65, H * 0.45), fill=255),
            d.pieslice((W * 0.15, H * 0.5, W * 0.85, H * 1.2), 180, 360, fill=255),
        ),
        "kb_shift": lambda: d.polygon(
            [(W / 2, H * 0.25), (W * 0.75, H * 0.55), (W * 0.25, H * 0.55)], outline=255, width=lw
        ),
        "kb_del": lambda: d.polygon(
            [
                (W * 0.2, H / 2),
                (W * 0.4, H * 0.3),
                (W * 0.8, H * 0.3),
                (W * 0.8, H * 0.7),
                (W * 0.4, H * 0.7),
            ],
            outline=255,
            width=lw,
        ),
        "kb_enter": lambda: d.line(
            [
                (W * 0.75, H * 0.3),
                (W * 0.75, H * 0.6),
                (W * 0.25, H * 0.6),
                (W * 0.4, H * 0.45),
                (W * 0.25, H * 0.6),
                (W * 0.4, H * 0.75),
            ],
            fill=255,
            width=lw,
        ),
    }
    draw = shapes.get(name)
    if draw is not None:
        draw()
        return [(done(img), None)]
    # Unknown icon names: a rounded badge with the name's first letter, so apps may name any icon.
    d.rounded_rectangle((W * 0.1, H * 0.1, W * 0.9, H * 0.9), radius=W * 0.2, outline=255, width=lw)
    f = font(max(6, int(H * 0.45)), True)
    letter = name[:1].upper() or "?"
    d.text(((W - f.getlength(letter)) / 2, H * 0.22), letter, fill=255, font=f)
    return [(done(img), None)]
