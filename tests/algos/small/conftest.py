"""Fixtures of the small policy's tests: expert demonstrations, real screens and edge cases, one thread."""

from __future__ import annotations

import pytest
import torch

from algos.prompt import PolicyInput, render_response
from voyager_gym.actions import parse_action

BC_TASKS = ["SystemBluetoothTurnOn", "MarkorCreateNote", "ContactsAddContact",
            "SimpleCalendarLocationOfEvent"]  # clicks, typed goal spans, app launches, an answer, status
MORE_TASKS = ["OpenAppTaskEval", "ExpenseAddMultiple", "FilesMoveFile", "RecipeDeleteSingleRecipe",
              "SimpleSmsReply", "TasksHighPriorityTasks"]  # screens for the robustness checks


def collect(tasks: list[str], seeds: int) -> list[tuple[PolicyInput, str]]:
    """(input, expert response) pairs from expert episodes (elements only, no noise)."""
    from voyager_gym.env import VoyagerEnv

    env = VoyagerEnv(observation_mode="elements", noise="none")
    out = []
    for name in tasks:
        for seed in range(seeds):
            obs, info = env.reset(seed=seed, options={"task": name})
            history: list[str] = []
            while True:
                a = env.unwrapped.expert_action()
                out.append((PolicyInput.from_obs(obs, history, len(history), info["max_steps"]),
                            render_response(parse_action(a))))
                obs, _, term, trunc, info = env.step(a)
                history.append(a)
                if term or trunc:
                    break
    return out


@pytest.fixture(autouse=True)
def one_thread():
    """One intra-op thread: small ops with 2 OpenMP threads slow down many-fold when another process holds a
    core (shared CI machines); restored after each test."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


@pytest.fixture(scope="package")
def demos() -> list[tuple[PolicyInput, str]]:
    return collect(BC_TASKS, 8)


@pytest.fixture(scope="package")
def screens(demos) -> list[PolicyInput]:
    """Real inputs from 10 tasks plus edge cases: no elements, empty goal, too many elements, long goal."""
    xs = [x for x, _ in demos[::2]] + [x for x, _ in collect(MORE_TASKS, 1)]
    el = xs[3].elements[0]
    xs.append(PolicyInput(goal=xs[0].goal, elements=[], history=["garbage", '{"action_type": "wait"}']))
    xs.append(PolicyInput(goal="", elements=list(xs[5].elements)))
    xs.append(PolicyInput(goal="", elements=[]))
    xs.append(PolicyInput(goal="word " * 300, elements=[el] * 120, history=['{"action_type": "scroll"}'] * 9))
    return xs
