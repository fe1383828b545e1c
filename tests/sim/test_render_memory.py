"""Bounded renderer memory (issue 12): caches bounded by bytes, long text cut before it is rasterised (with
the pixels a whole-line render gives), and a field holding 100 KB of text costs about what a full one does."""

import numpy as np
import pytest

from voyager_gym.actions import MAX_TEXT_CHARS, Action
from voyager_gym.backends.sim import SimDroidBackend, render
from voyager_gym.backends.sim.render import ByteLRU, Renderer


def _typing_backend(scale: float) -> SimDroidBackend:
    b = SimDroidBackend(render_scale=scale, noise="none")
    b.reset("SystemCopyToClipboard", b.generate_params("SystemCopyToClipboard", 1), np.random.default_rng(1))
    b.execute(Action("open_app", app_name="Clipper"))
    field = next(i for i, e in enumerate(b.phone.elements()) if e.is_editable)
    b.execute(Action("click", index=field))
    return b


def test_byte_lru_evicts_least_recently_used_past_its_budget():
    c = ByteLRU(3000)
    for k in range(5):
        c.put(k, np.zeros(1000, np.uint8))
        c.get(0)  # keeps 0 fresh
    assert c.nbytes <= 3000 and len(c) == 3
    assert c.get(0) is not None and c.get(1) is None and c.get(4) is not None
    big = np.zeros(5000, np.uint8)
    assert c.put("big", big) is big and c.get("big") is None  # larger than the budget: not kept


def test_glyph_cache_stays_within_its_byte_budget():
    """20 different 4,000-character texts added 830 MB before; the glyph cache now stays in its budget."""
    r = Renderer(1.0, glyph_cache_mb=8)
    rng = np.random.default_rng(0)
    for _ in range(20):
        text = "".join(rng.choice(list("abcdefgh ijk"), 4000))
        for lines in (1, 3):
            r.text_mask(text, 42, False, width=1000, lines=lines)
        for color in ((0, 0, 0), (200, 0, 0)):
            m = r.text_mask(text[:300], 42, False, width=1000)
            frame = np.full((r.H, r.W, 3), 255, np.uint8)
            r.blit(frame, 0, 0, m, color, (0, 0, r.W, r.H))
            r.blit(frame, 0, 0, m, color, (0, 0, r.W, r.H), under=(255, 255, 255))
    assert 0 < r.cache_bytes()["glyphs"] <= 8 * 2**20


def test_long_text_is_cut_before_it_is_rasterised():
    r = Renderer(1.0)
    for lines in (1, 3):
        m = r.text_mask("x" * 100_000, 42, False, width=1000, lines=lines)
        assert m.shape[1] < 8000  # at most 128 glyphs or twice the box: not 2 million pixels wide
        word = r.text_mask(" ".join(["y" * 50_000] * 2), 42, False, width=1000, lines=lines)
        assert word.shape[1] < 8000


@pytest.mark.parametrize("scale", [0.25, 1.0])
def test_cut_text_draws_the_pixels_of_the_whole_line(scale, monkeypatch):
    """A field of 3,000 characters: the cut mask gives exactly the frame the uncut one does."""
    b = _typing_backend(scale)
    assert b.phone.type_text("The quick brown fox jumps over the lazy dog. " * 66)
    cut = Renderer(scale).render(b.phone.root()).copy()
    monkeypatch.setattr(render, "_visible", lambda text, *a, **k: text)
    whole = Renderer(scale).render(b.phone.root())
    assert np.array_equal(cut, whole)


def test_a_field_with_100kb_of_typed_text_renders_like_a_full_one():
    """13 inputs at the input_text cap: 100 KB in one field (13.8 s and 4 GB for one step before)."""
    b = _typing_backend(1.0)
    for _ in range(13):
        assert b.phone.type_text("lorem ipsum " * (MAX_TEXT_CHARS // 12))
        b.observe(pixels=True)
    assert len(b.phone.top_screen.field(b.phone.top_screen.focus)) > 100_000 - 13 * 12
    sizes = b.renderer.cache_bytes()
    assert sizes["glyphs"] < 16 * 2**20  # the whole field's masks: a few MB, not gigabytes


def test_sprites_never_push_rasterised_masks_out():
    """Masks (FreeType's work) and the sprites made from them have separate budgets: blitting one mask in
    many colours, far past the sprite budget, leaves the mask cached; both stay within the total budget."""
    r = Renderer(1.0, glyph_cache_mb=2)
    m = r.text_mask("Keep this mask", 42, False)
    frame = np.full((r.H, r.W, 3), 255, np.uint8)
    for k in range(400):
        r.blit(frame, 0, 0, m, (k % 256, k // 256, 7), (0, 0, r.W, r.H), under=(255, 255, 255))
        r.blit(frame, 0, 0, m, (k % 256, k // 256, 9), (0, 0, r.W, r.H))
    assert r.text_mask("Keep this mask", 42, False) is m
    assert 0 < r.cache_bytes()["glyphs"] <= 2 * 2**20
