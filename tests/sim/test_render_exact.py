"""The fast renderer (frame and tile caches, pre-composited sprites, skipped fills, damage repaint) draws
exactly the pixels of the plain reference path, on every screen every expert visits."""

import numpy as np
import pytest

from voyager_gym.backends.sim import SimDroidBackend
from voyager_gym.backends.sim.render import Renderer
from voyager_gym.backends.sim.tasks import TASKS

pytestmark = pytest.mark.slow  # every expert-visited screen rendered twice


@pytest.mark.parametrize("scale", [0.25, 0.5])
def test_fast_renderer_matches_reference_on_every_task(scale):
    b = SimDroidBackend(render_scale=scale, noise="none")
    ref = Renderer(scale, fast=False)
    checked = 0
    for name in sorted(TASKS):
        for seed in (0, 1):
            b.reset(name, b.generate_params(name, seed), np.random.default_rng(seed))
            for _ in range(b.task_info(name)["max_steps"]):
                root = b.phone.root()
                fast = b.renderer.render(root)
                slow = ref.render(root)
                assert np.array_equal(fast, slow), f"{name} seed {seed}: fast render differs from reference"
                checked += 1
                a = b.expert_action()
                if a.action_type == "status":
                    break
                b.execute(a)
    assert checked > 500
    assert b.renderer.stats["partial"] > 0 and b.renderer.stats["hits"] > 0


def test_every_node_has_integer_bounds():
    """The renderer slices pixels with node bounds at scale 1.0: every app must lay out in whole pixels."""
    b = SimDroidBackend(render_scale=0.1, noise="none")
    for name in sorted(TASKS):
        b.reset(name, b.generate_params(name, 0), np.random.default_rng(0))
        for _ in range(b.task_info(name)["max_steps"]):
            for n in b.phone.root().walk():
                assert all(type(v) is int for v in n.bounds), f"{name}: {n.cls} bounds {n.bounds}"
            a = b.expert_action()
            if a.action_type == "status":
                break
            b.execute(a)
