"""SimDroid: an offline phone that reproduces AndroidWorld's observations, actions, tasks and verifiers."""

from voyager_gym.backends.sim.backend import SimDroidBackend
from voyager_gym.backends.sim.noise import NoiseConfig

__all__ = ["NoiseConfig", "SimDroidBackend"]
