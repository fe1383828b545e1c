"""Fixtures shared by the algorithm tests."""

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
