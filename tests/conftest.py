import os

import pytest

from algos.run import PINNED_NUMERICS
from voyager_gym.backends.sim import SimDroidBackend

# The entry points pin torch's kernels to AVX2 (algos/run.py); tests run some in-process and some in
# subprocesses and compare their numbers, so every test process uses the same kernels from the start.
for _key, _value in PINNED_NUMERICS.items():
    os.environ.setdefault(_key, _value)

try:  # xdist runs two workers on two cores: one torch thread each avoids oversubscription stalls
    import torch

    torch.set_num_threads(1)
except ImportError:  # the env tests need no torch
    pass


@pytest.fixture
def backend():
    """A SimDroid backend without noise (pixels are not rendered unless a test asks)."""
    return SimDroidBackend(render_scale=0.25, noise="none")
