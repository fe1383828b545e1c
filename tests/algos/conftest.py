"""Fixtures shared by the algorithm tests."""

import json
import signal
import subprocess
import time
from pathlib import Path

import pytest

from algos.prompt import PolicyInput


@pytest.fixture(scope="module")
def wifi_screens() -> list[PolicyInput]:
    """Two real screens of SystemWifiTurnOn (home, then the Settings app)."""
    from voyager_gym.env import VoyagerEnv

    env = VoyagerEnv(observation_mode="elements", noise="none")
    obs, info = env.reset(seed=0, options={"task": "SystemWifiTurnOn"})
    xs = [PolicyInput.from_obs(obs, [], 0, info["max_steps"])]
    a = env.unwrapped.expert_action()
    obs, *_ = env.step(a)
    xs.append(PolicyInput.from_obs(obs, [a], 1, info["max_steps"]))
    env.close()
    return xs


@pytest.fixture(scope="module")
def tokenizer():
    """The offline tiny byte-level tokenizer (algos.policies.tiny) the tiny HF models are built on."""
    from algos.policies.tiny import build_tiny_tokenizer

    return build_tiny_tokenizer()


@pytest.fixture(scope="module")
def pixel_samples():
    """Expert steps of SystemWifiTurnOn with 54x120 screenshots, for the tiny vision-language models."""
    from algos.policies.tiny import expert_samples

    return expert_samples(tasks=("SystemWifiTurnOn",), pixels=True, render_scale=0.05)


def kill_after_checkpoint(cmd: list[str], out: Path, cwd: Path, env: dict[str, str], iteration: int = 1,
                          timeout: float = 300) -> int:
    """Start `cmd`, SIGKILL it as soon as `out`'s checkpoint reaches `iteration`; returns the checkpoint's
    iteration then (the test checks the run had not finished)."""
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + timeout
    while time.time() < deadline and proc.poll() is None:
        ptr = out / "checkpoint.json"
        if ptr.exists() and json.loads(ptr.read_text())["iteration"] >= iteration:
            break
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    return json.loads((out / "checkpoint.json").read_text())["iteration"]
