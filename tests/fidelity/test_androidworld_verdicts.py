"""SimDroid against android_world's own code, task by task: params and goals from AndroidWorld's generators,
AndroidWorld's `initialize_task` on SimDroid's start state, the start state its setup would write, and its
`is_successful` on SimDroid's device state (the untouched start, every step of the expert, near misses), all
through a fake adb layer (aw_device.py). Every difference must be one that aw_report.DELIBERATE lists with
its reason.

Skipped where android_world is not importable (CI). To run it, see docs/fidelity.md:

    PYTHONPATH=/path/to/android_world python -m pytest tests/fidelity -q

FIDELITY_SEEDS (default 2) instances per task are run, FIDELITY_PARAM_SEEDS (default 50) are drawn.
"""

import os

import pytest

from tests.fidelity.aw_verdicts import androidworld_missing

_MISSING = androidworld_missing()
if _MISSING:
    pytest.skip(_MISSING, allow_module_level=True)

from tests.fidelity.aw_report import measure_task  # noqa: E402 (after the skip)
from voyager_gym.backends.sim.tasks import TASKS  # noqa: E402

SEEDS = range(int(os.environ.get("FIDELITY_SEEDS", "2")))
PARAM_SEEDS = range(int(os.environ.get("FIDELITY_PARAM_SEEDS", "50")))


@pytest.fixture(scope="module", autouse=True)
def quiet_androidworld():
    """AndroidWorld logs every failed adb request of its own checks (a missing file is a normal answer)."""
    from absl import logging as absl_logging

    level = absl_logging.get_verbosity()
    absl_logging.set_verbosity(absl_logging.FATAL)
    yield
    absl_logging.set_verbosity(level)


@pytest.mark.parametrize("name", sorted(TASKS))
def test_task_agrees_with_androidworld(backend, name):
    m = measure_task(backend, name, SEEDS, PARAM_SEEDS)
    assert m.checks > 0 and m.verdict_seeds == len(SEEDS)
    assert not m.unexplained(), f"{name}: differences not listed as deliberate: {m.unexplained()}"
