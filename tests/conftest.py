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


# The modules whose end-to-end tests take minutes (README commands, the TRL example, the smoke comparison).
# xdist hands each worker runs of consecutive tests and the rest as workers free up, so these go first: a
# long test that starts last leaves the other worker idle until it ends (~2-3 minutes of a ~15-minute run).
FIRST = ("tests/test_readme.py", "tests/test_examples.py", "tests/test_compare.py")


def pytest_collection_modifyitems(items):
    """Run FIRST's modules before the others, each module's tests together and in their own order (module
    fixtures are built once per worker that runs the module)."""
    rank = {path: i for i, path in enumerate(FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::")[0], len(FIRST)))
