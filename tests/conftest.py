import pytest

from voyager_gym.backends.sim import SimDroidBackend

try:  # xdist runs two workers on two cores: one torch thread each avoids oversubscription stalls
    import torch

    torch.set_num_threads(1)
except ImportError:  # the env tests need no torch
    pass


@pytest.fixture
def backend():
    """A SimDroid backend without noise (pixels are not rendered unless a test asks)."""
    return SimDroidBackend(render_scale=0.25, noise="none")
