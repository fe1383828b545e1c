"""Helpers shared by SimDroid's app tests."""

import numpy as np

from voyager_gym.backends.sim.tasks.base import View


def reset(backend, name, seed=7):
    """Start task `name` with the params its generator draws for `seed`; return the params."""
    params = backend.generate_params(name, seed)
    backend.reset(name, params, np.random.default_rng(0))
    return params


def view(backend) -> View:
    return View(backend.phone.elements())


def run_expert_until_done(backend) -> None:
    """Step the expert but stop before its final `status` action."""
    for _ in range(30):
        a = backend.expert_action()
        if a.action_type == "status":
            return
        backend.execute(a)
    raise AssertionError("expert did not finish")
