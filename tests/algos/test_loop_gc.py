"""The loop pauses Python's cyclic garbage collector inside each iteration and collects once at its end."""

from __future__ import annotations

import gc
import weakref

import pytest

from algos.loop import Algorithm, LoopConfig, train_loop
from algos.policies.small import SmallPolicy
from algos.run import Run
from algos.timing import collector_paused
from voyager_gym.env import app_names
from voyager_gym.vector import make_vec


class _Node:
    def __init__(self) -> None:
        self.me = self  # a reference cycle: only the cyclic collector frees it


@pytest.fixture
def collector_on():
    was = gc.isenabled()
    gc.enable()
    yield
    if not was:
        gc.disable()


def test_collector_paused_frees_cycles_at_the_end_and_restores_the_collector(collector_on):
    with collector_paused():
        assert not gc.isenabled()
        refs = [weakref.ref(_Node()) for _ in range(5000)]  # enough allocations for several collections
        assert all(r() is not None for r in refs)  # automatic collection is off: the cycles live on
    assert gc.isenabled()
    assert all(r() is None for r in refs)  # the block's end collected them


def test_collector_paused_nested_or_already_off_leaves_it_as_found(collector_on):
    with collector_paused():
        with collector_paused():
            ref = weakref.ref(_Node())
        assert not gc.isenabled() and ref() is not None  # the inner block neither resumed nor collected
    assert gc.isenabled() and ref() is None
    gc.disable()
    with collector_paused():
        pass
    assert not gc.isenabled()


def test_collector_paused_resumes_after_an_exception(collector_on):
    with pytest.raises(RuntimeError, match="boom"):
        with collector_paused():
            raise RuntimeError("boom")
    assert gc.isenabled()


class _Recorder(Algorithm):
    name = "recorder"

    def __init__(self, cfg: LoopConfig):
        super().__init__(cfg)
        self.collector_on_in_update: list[bool] = []

    def update(self, policy, groups, iteration, seed):
        self.collector_on_in_update.append(gc.isenabled())
        return {}


def test_train_loop_runs_iterations_with_the_collector_paused(tmp_path, collector_on):
    envs = make_vec(2, "sync", observation_mode="elements", noise="none")
    try:
        algo = _Recorder(LoopConfig(iterations=2, instances_per_iter=1, group_size=2))
        with Run(tmp_path / "run", {"algo": "recorder"}, wandb_mode="disabled") as run:
            train_loop(algo, SmallPolicy(app_names(), seed=0), envs, run, ["SystemWifiTurnOn"], seed=0,
                       eval_n_per_task=1)
            rows = run.metrics()
    finally:
        envs.close()
    assert [r["iteration"] for r in rows] == [0, 1, 2]
    assert algo.collector_on_in_update == [False, False] and gc.isenabled()
