"""Helpers shared by SimDroid's app tests."""

import numpy as np

from voyager_gym.backends.sim.device import SDCARD
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


def score_with_entry(backend, name, seed, path, folder=False):
    """Start task `name` for `seed`, add a file (or a folder) at `path` under the sdcard ({name} and {stem}
    stand for the task's file name and that name without its extension); return the verdict."""
    params = reset(backend, name, seed)
    dev = backend.phone.dev
    file_name = params["file_name"]
    target = f"{SDCARD}/" + path.format(name=file_name, stem=file_name.rsplit(".", 1)[0])
    if folder:
        dev.mkdir(target)
    else:
        dev.write_file(target, "image")
    return backend.score()
