"""Screenshot frames: read-only and shared, never aliased across a screen change, never rewritten while
anyone holds them (the frame pool), blended exactly, and built without touching the host process."""

import subprocess
import sys
import zlib
from pathlib import Path

import numpy as np
import pytest

from voyager_gym.actions import Action
from voyager_gym.backends.sim import SimDroidBackend
from voyager_gym.backends.sim.noise import blend
from voyager_gym.backends.sim.render import FramePool
from voyager_gym.env import VoyagerEnv

TASK = "SystemCopyToClipboard"


def _crc(a: np.ndarray) -> int:
    return zlib.crc32(np.ascontiguousarray(a).tobytes())


def test_pool_never_hands_out_a_buffer_someone_holds():
    pool = FramePool((4, 3, 3), spare=1)
    a = pool.take()
    b = pool.take()
    assert a is not b and not np.shares_memory(a, b)
    view = b[1:3]
    del b
    c = pool.take()  # `a` is held, and `b` through its view
    assert c is not a and not np.shares_memory(c, view)
    del view
    d = pool.take()  # the view is gone: its buffer is free again
    assert any(d is x for x in pool._bufs) and pool.stats["reused"] == 1
    assert d.flags.writeable


def test_pool_keeps_few_spares_and_tracks_at_most_limit():
    pool = FramePool((2, 2, 3), spare=1, limit=3)
    held = [pool.take() for _ in range(5)]  # past the limit: plain arrays, not tracked
    assert len(pool._bufs) == 3 and pool.stats["allocated"] == 5
    del held
    x = pool.take()  # three free: one is taken, one stays spare, the third is let go
    assert len(pool._bufs) == 2 and pool.spare_bytes() == x.nbytes
    with pytest.raises(ValueError, match="spare=-1"):
        FramePool((2, 2, 3), spare=-1)


def test_renderer_frames_are_read_only_and_a_new_screen_gets_new_memory():
    b = SimDroidBackend(render_scale=0.25, noise="none")
    b.reset(TASK, b.generate_params(TASK, 1), np.random.default_rng(1))
    first = b.renderer.render(b.phone.root())
    with pytest.raises(ValueError, match="read-only"):
        first[0, 0] = 0
    kept = _crc(first)
    for a in (Action("open_app", app_name="Settings"), Action("scroll", direction="down"),
              Action("navigate_home"), Action("open_app", app_name="Clipper")):
        b.execute(a)
        frame = b.renderer.render(b.phone.root())
        assert not np.shares_memory(frame, first) or frame is first
    assert _crc(first) == kept


@pytest.mark.parametrize("noise", ["none", "default", "heavy"])
def test_env_observations_are_read_only_and_keep_their_pixels(noise):
    """An observation may be the frame the renderer just drew and keeps cached (no copy): writing one raises,
    no two observations share memory (gymnasium's contract: users keep what they are given), and one held
    for a whole episode still has the pixels it was returned with."""
    env = VoyagerEnv(render_scale=0.25, noise=noise)
    obs, _ = env.reset(seed=3, options={"task": TASK, "instance_seed": 3})
    held = [(obs["pixels"], _crc(obs["pixels"]), env.unwrapped._screen_key)]
    while True:
        obs, _, term, trunc, info = env.step(env.expert_action())
        px = obs["pixels"]
        with pytest.raises(ValueError, match="read-only"):
            px[0, 0, 0] = 1
        assert not any(np.shares_memory(px, old) for old, _, _ in held)
        held.append((px, _crc(px), info["screen_key"]))
        if term or trunc:
            break
    assert len(held) > 3
    assert [_crc(px) for px, _, _ in held] == [c for _, c, _ in held]


def test_blend_runs_on_words_and_bytes_alike():
    rng = np.random.default_rng(0)
    for shape in ((24, 10, 3), (5, 7, 3)):  # 720 bytes: uint64 words; 105 bytes: byte by byte
        prev = rng.integers(0, 256, shape, dtype=np.uint8)
        cur = rng.integers(0, 256, shape, dtype=np.uint8)
        for w in (0.25, 0.5, 0.75):
            q = round(w * 4)
            want = ((cur >> 2) * (4 - q) + (prev >> 2) * q).astype(np.uint8)
            out = np.empty_like(cur)
            assert np.array_equal(blend(prev, cur, w, out=out), want)
            c2 = cur.copy()
            assert np.array_equal(blend(prev, c2, w), want) and np.array_equal(c2, want)


_SPY = """
import ctypes
loaded = []
class Spy:
    def __init__(self, name, *a, **k):
        loaded.append(name)
    def LoadLibrary(self, name):
        loaded.append(name)
ctypes.CDLL = Spy
ctypes.cdll = Spy(None)
loaded.clear()
from voyager_gym.env import VoyagerEnv
env = VoyagerEnv(render_scale=1.0)
env.reset(seed=0, options={"task": "SystemCopyToClipboard"})
env.step(env.expert_action())
print(loaded)
"""


def test_building_an_env_and_rendering_leaves_the_process_alone():
    """No C library is loaded to retune the process (glibc's malloc settings were changed before). A fresh
    interpreter, so that nothing done once per process earlier in the test session hides the call."""
    out = subprocess.run([sys.executable, "-c", _SPY], capture_output=True, text=True, check=True,
                         cwd=Path(__file__).resolve().parents[2])
    assert out.stdout.strip() == "[]", out.stdout
