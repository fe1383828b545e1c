"""Every registered task: its expert succeeds on 20 instances; stopping at once fails (unless the instance
starts solved: Verify tasks, and instances drawn with nothing to do)."""

import numpy as np
import pytest

from voyager_gym.actions import Action
from voyager_gym.backends.sim.expert import run_expert
from voyager_gym.backends.sim.tasks import TASKS

pytestmark = pytest.mark.slow  # every task's expert on many seeds

SEEDS = range(20)


@pytest.mark.parametrize("name", sorted(TASKS))
def test_expert_solves_every_seed(backend, name):
    for seed in SEEDS:
        run = run_expert(backend, name, instance_seed=1000 + seed)
        assert run.score == 1.0, (
            f"{name} seed {1000 + seed}: expert scored {run.score} in {run.steps}/"
            f"{run.max_steps} steps; goal {run.goal!r}; actions {[str(a) for a in run.actions]}"
        )


@pytest.mark.parametrize("name", sorted(TASKS))
def test_immediate_status_fails_unless_verify(backend, name):
    for seed in range(5):
        params = backend.generate_params(name, 2000 + seed)
        backend.reset(name, params, np.random.default_rng(0))
        backend.observe(pixels=False)
        backend.execute(Action("status", goal_status="complete"))
        score = backend.score()
        if backend.task.solved_at_start():
            assert score == 1.0, f"{name} seed {2000 + seed} must start solved, scored {score}"
        else:
            assert score < 1.0, f"{name} seed {2000 + seed}: doing nothing scored {score}"
