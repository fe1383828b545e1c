"""Every task behaves as recorded in tests/data/sim_task_fingerprints.json: same goal, params, expert
actions, start state, observations, per-step verdicts and end state for instance seeds 0..4. Refactors of
the task modules must leave these identical; a deliberate change of behaviour re-records them with
`python -m tests.sim.fingerprint --write`."""

import json

import pytest

from tests.sim.fingerprint import RECORD, SEEDS, compact, fingerprint
from voyager_gym.backends.sim.tasks import TASKS

pytestmark = pytest.mark.slow  # every task's expert on five seeds

RECORDED = json.loads(RECORD.read_text())


def test_record_covers_every_task():
    assert sorted(RECORDED) == sorted(f"{n}/{s}" for n in TASKS for s in SEEDS)
    assert all(fp["score"] == 1.0 for fp in RECORDED.values())


@pytest.mark.parametrize("name", sorted(TASKS))
def test_task_behaves_as_recorded(backend, name):
    for seed in SEEDS:
        got, want = compact(fingerprint(backend, name, seed)), RECORDED[f"{name}/{seed}"]
        assert got == want, f"{name} seed {seed}: {[k for k in got if got[k] != want.get(k)]} changed"
