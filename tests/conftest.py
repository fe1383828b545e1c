import pytest

from voyager_gym.backends.sim import SimDroidBackend


@pytest.fixture
def backend():
    """A SimDroid backend without noise (pixels are not rendered unless a test asks)."""
    return SimDroidBackend(render_scale=0.25, noise="none")
