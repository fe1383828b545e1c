"""SimDroid's renderer: phone-like frames, caches that never change pixels, the keyboard, noise, the CLI."""

import numpy as np
from PIL import Image

from voyager_gym.actions import Action
from voyager_gym.backends.sim import SimDroidBackend
from voyager_gym.backends.sim.render import Renderer
from voyager_gym.backends.sim.widgets import SCREEN_H, SCREEN_W, Node
from voyager_gym.cli import main


def _frame(b):
    px, _, _ = b.observe(pixels=True)
    return px


def _start(b, task="SystemCopyToClipboard", seed=1):
    b.reset(task, b.generate_params(task, seed), np.random.default_rng(seed))


def test_frame_has_status_bar_app_content_and_nav_bar():
    b = SimDroidBackend(render_scale=0.5, noise="none")
    _start(b)
    b.execute(Action("open_app", app_name="Settings"))
    px = _frame(b)
    assert px.shape == (1200, 540, 3)
    status, nav = px[:48], px[-66:]
    assert (np.abs(status.astype(int) - (241, 243, 244)).sum(-1) < 10).mean() > 0.8  # light status bar
    assert (np.abs(nav.astype(int) - (241, 243, 244)).sum(-1) < 10).mean() > 0.8
    content = px[60:-70]
    assert (content.sum(-1) < 300).mean() > 0.005  # dark text pixels are drawn
    assert len(np.unique(content.reshape(-1, 3), axis=0)) > 20  # antialiased text, icons, dividers


def test_keyboard_opens_over_the_bottom_when_a_field_is_focused():
    b = SimDroidBackend(render_scale=0.5, noise="none")
    _start(b)
    b.execute(Action("open_app", app_name="Clipper"))
    before = _frame(b).copy()
    field = next(i for i, e in enumerate(b.phone.elements()) if e.is_editable)
    b.execute(Action("click", index=field))
    after = _frame(b)
    kb = after[1200 - 66 - 390 : 1200 - 66]
    assert (np.abs(kb.astype(int) - (232, 234, 237)).sum(-1) < 8).mean() > 0.3  # keyboard background
    assert (np.abs(kb.astype(int) - (255, 255, 255)).sum(-1) < 8).mean() > 0.2  # white keys
    assert not np.array_equal(before[1200 - 66 - 390 : 1200 - 66], kb)
    b.execute(Action("navigate_back"))  # back closes the keyboard first
    assert b.phone.top_screen.focus is None


def test_caches_never_change_pixels():
    b = SimDroidBackend(render_scale=0.5, noise="none")
    _start(b)
    screens = []
    for a in (
        Action("open_app", app_name="Settings"),
        Action("scroll", direction="down"),
        Action("scroll", direction="up"),
        Action("navigate_home"),
    ):
        b.execute(a)
        screens.append(b.phone.root())
        _frame(b)
    fresh = Renderer(0.5, frame_cache=0, tile_cache_mb=0)
    for root in screens:
        assert np.array_equal(b.renderer.render(root), fresh.render(root))


def _list_screen(rows: list[str], bg=(255, 255, 255)) -> Node:
    root = Node(bounds=(0, 0, SCREEN_W, SCREEN_H), bg=bg)
    for k, text in enumerate(rows):
        box = (0, 200 * k, SCREEN_W, 200 * k + 200)
        root.add(Node(text=text, bounds=box, pad=24, border=(200, 200, 200)))
    return root


def test_a_screen_like_an_earlier_one_is_repainted_over_it_with_the_pixels_of_a_full_render():
    """A list, a different screen, then the list with one row changed: the row is repainted over the
    cached list frame (not a full render, not over the last frame), and the pixels are the reference's."""
    rows = [f"Item number {k}" for k in range(10)]
    edited = _list_screen(rows[:3] + ["Item three, renamed"] + rows[4:])
    ref = Renderer(1.0, fast=False)
    r = Renderer(1.0)
    r.render(_list_screen(rows))
    r.render(_list_screen([f"Other {k}" for k in range(12)], bg=(240, 240, 240)))
    assert r.stats["partial"] == 0
    frame = r.render(edited)
    assert r.stats["partial"] == 1
    assert np.array_equal(frame, ref.render(edited))


def test_overlapping_nodes_drawn_in_another_order_are_not_left_as_they_were():
    """Two overlapping boxes swap drawing order while a label elsewhere changes: the label's box is not
    all that differs, so no repaint of that box alone is taken; the pixels are the reference's."""
    def screen(label: str, swap: bool) -> Node:
        red = Node(bounds=(0, 300, 600, 900), bg=(220, 40, 40))
        blue = Node(bounds=(300, 600, 900, 1200), bg=(40, 40, 220))
        root = Node(bounds=(0, 0, SCREEN_W, SCREEN_H), bg=(255, 255, 255))
        boxes = (blue, red) if swap else (red, blue)
        return root.add(*boxes, Node(text=label, bounds=(0, 2000, 800, 2100)))

    r = Renderer(1.0)
    r.render(screen("one", swap=False))
    frame = r.render(screen("two", swap=True))
    assert np.array_equal(frame, Renderer(1.0, fast=False).render(screen("two", swap=True)))


def test_render_scale_changes_size_not_content():
    for scale, shape in ((1.0, (2400, 1080, 3)), (0.25, (600, 270, 3))):
        b = SimDroidBackend(render_scale=scale, noise="none")
        _start(b)
        assert _frame(b).shape == shape


def test_mid_transition_frames_blend_old_and_new():
    b = SimDroidBackend(
        render_scale=0.25,
        noise={"clock": False, "caret": False, "notifications": 0.0, "toasts": 0.0, "transitions": 1.0},
    )
    clean = SimDroidBackend(render_scale=0.25, noise="none")
    for x in (b, clean):
        _start(x)
    home_b, home_c = _frame(b), _frame(clean)
    assert np.array_equal(home_b, home_c)  # the first frame has nothing to blend with
    for x in (b, clean):
        x.execute(Action("open_app", app_name="Settings"))
    blended, target = _frame(b).astype(int), _frame(clean).astype(int)
    assert not np.array_equal(blended, target)
    err_mix = np.abs(blended - target).mean()
    assert err_mix < np.abs(home_c.astype(int) - target).mean()  # between the two screens


def test_cli_render_and_play(tmp_path, capsys):
    out = tmp_path / "s.png"
    assert (
        main(
            [
                "render",
                "SystemCopyToClipboard",
                "--seed",
                "2",
                "--steps",
                "1",
                "--action",
                '{"action_type": "click", "index": 3}',
                "--out",
                str(out),
                "--scale",
                "0.5",
            ]
        )
        == 0
    )
    img = Image.open(out)
    assert img.size == (540, 1200)
    assert (
        main(["play", "SystemWifiTurnOn", "--seed", "3", "--out", str(tmp_path / "play"), "--scale", "0.25"])
        == 0
    )
    pngs = sorted((tmp_path / "play").glob("step_*.png"))
    assert len(pngs) >= 3 and (tmp_path / "play" / "episode.gif").exists()
    assert "score 1.0" in capsys.readouterr().out
    assert main(["render", "SystemBlutoothTurnOff", "--out", str(out)]) == 2
    assert "did you mean 'SystemBluetoothTurnOff'" in capsys.readouterr().err


def test_each_noise_source_alone_changes_pixels_only():
    off = {"clock": False, "caret": False, "notifications": 0.0, "toasts": 0.0, "transitions": 0.0}
    base = SimDroidBackend(render_scale=0.25, noise=off)
    _start(base)
    base.execute(Action("open_app", app_name="Clipper"))
    field = next(i for i, e in enumerate(base.phone.elements()) if e.is_editable)
    base.execute(Action("click", index=field))
    ref, ref_els, ref_key = base.observe(pixels=True)
    for source, value in (("caret", True), ("notifications", 1.0), ("toasts", 1.0)):
        b = SimDroidBackend(render_scale=0.25, noise={**off, source: value})
        _start(b)
        b.execute(Action("open_app", app_name="Clipper"))
        b.execute(Action("click", index=field))
        differs = False
        for _ in range(6):  # the caret blinks: on in about half the frames
            px, els, key = b.observe(pixels=True)
            assert key == ref_key and els == ref_els
            differs |= not np.array_equal(px, ref)
        assert differs, f"noise source {source} never showed"


def test_status_bar_clock_ticks_only_with_clock_noise():
    texts = {}
    for clock in (True, False):
        b = SimDroidBackend(
            render_scale=0.25,
            noise={"clock": clock, "caret": False, "notifications": 0.0, "toasts": 0.0, "transitions": 0.0},
        )
        _start(b)
        for _ in range(15):
            b.execute(Action("wait"))
        texts[clock] = next(e.text for e in b.phone.elements() if e.resource_name.endswith(":id/clock"))
    assert texts[False] == "15:34" and texts[True] == "15:35"
