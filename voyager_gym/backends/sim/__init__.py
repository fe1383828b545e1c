"""SimDroid: an offline phone that reproduces AndroidWorld's observations, actions, tasks and verifiers.

This package's public face is what it exports here; its modules (device, apps, tasks, phone, render, ...)
are internals that only the package itself, its tests and the env layer (voyager_gym.env, the task
catalogue voyager_gym.catalogue) import (tests/test_import_graph.py)."""

from voyager_gym.backends.sim.backend import SimDroidBackend, wrap_rendering
from voyager_gym.backends.sim.expert import ExpertRun, run_expert
from voyager_gym.backends.sim.noise import NoiseConfig

__all__ = ["ExpertRun", "NoiseConfig", "SimDroidBackend", "run_expert", "wrap_rendering"]
