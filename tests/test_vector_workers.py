"""A dead worker process under an async or pipelined vector env (issue 45): the error names its sub-envs and
close() closes the rest without raising again (before: a bare BrokenPipeError, and close() raised again)."""

import os
import signal
import time

import pytest

from voyager_gym.vector import VectorWorkerDied, make_vec

WAIT = '{"action_type": "wait"}'


@pytest.mark.parametrize("mode, kwargs, victim, names", [
    ("async", {}, 1, r"sub-env 1 of this AsyncVectorEnv died \(its worker process \d+ was killed by signal"),
    ("pipelined", {"lanes": 2, "workers": 2}, 1,
     r"sub-envs \[2, 3\] of this PipelinedVectorEnv died \(its worker process \d+ was killed by signal 9\)"),
])
def test_a_dead_worker_is_named_and_close_still_works(mode, kwargs, victim, names):
    envs = make_vec(4, mode, observation_mode="elements", noise="none", **kwargs)
    try:
        envs.reset(seed=0)
        procs = envs.processes if mode == "async" else envs._procs
        os.kill(procs[victim].pid, signal.SIGKILL)
        procs[victim].join(timeout=10)
        with pytest.raises(VectorWorkerDied, match=names):
            envs.step([WAIT] * 4)
    finally:
        t0 = time.monotonic()
        envs.close()  # no second error
        assert time.monotonic() - t0 < 10
    assert all(not p.is_alive() for p in procs)
