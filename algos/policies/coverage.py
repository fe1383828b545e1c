"""Which tasks' solutions a policy can express: every expert action encoded as the policy's training target
and decoded back.

A step is *representable* when every field of the expert's action has a target in the policy's action space
(an element the pointer reaches, a goal span that types the text, an element whose label is the answer, a
known app, ...); its *decoded* action is what the policy emits when its heads pick that target. A task
instance is *exact* when every step decodes to the expert's own action, and *solved* when the expert, acting
only through decoded actions (each step re-planned from the screen it reaches), still completes the task.
`benchmarks/policy_coverage.py` prints the per-task table; tests pin the figures' meaning.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from typing import Any

import numpy as np

from algos.prompt import PolicyInput, SeenElements
from voyager_gym import actions as A
from voyager_gym.actions import Action


def round_trip(policy: Any, inputs: list[PolicyInput],
               actions: list[Action]) -> list[tuple[Action | None, str]]:
    """For each (input, expert action): the decoded action (None when not representable) and, when it is
    not, why. The policy defines its own action space (`round_trip`)."""
    return policy.round_trip(inputs, actions)


def same_action(a: Action, b: Action) -> bool:
    """Equal as AndroidWorld would execute them (JSON fields; an absent clear_text is the default False,
    and a coordinate click equals an index click only if they are written the same way)."""
    da, db = a.to_dict(), b.to_dict()
    for d in (da, db):
        if d.get("action_type") == A.INPUT_TEXT:
            d.setdefault("clear_text", False)
    return da == db


@dataclasses.dataclass
class TaskCoverage:
    task: str
    instances: int = 0
    expert_solved: int = 0  # instances the expert itself completes (the reference)
    exact: int = 0  # instances whose every expert step decodes to the expert's action
    solved: int = 0  # instances the expert still completes acting through decoded actions
    steps: int = 0
    representable_steps: int = 0
    reasons: Counter = dataclasses.field(default_factory=Counter)  # why steps were not representable

    @property
    def covered(self) -> bool:
        """Every instance the expert solves is solved through the policy's action space too."""
        return self.instances > 0 and self.solved >= self.expert_solved


def task_coverage(policy: Any, task: str, seeds: int = 20, suite_seed: int = 0,
                  env: Any = None) -> TaskCoverage:
    """Encode/decode the expert's actions on `seeds` training instances of `task` (AndroidWorld instance
    seeds), first along the expert's own trajectory (exact), then re-planning through decoded actions
    (solved). Runs on the phone of `env` (default: a SimDroid VoyagerEnv without noise), whose backend must
    have an expert; steps go to the backend directly, so the expert's trajectory is replayed as it is."""
    from voyager_gym.env import VoyagerEnv
    from voyager_gym.suites import instance_seed

    cov = TaskCoverage(task)
    if env is None:  # observed without pixels: never renders
        env = VoyagerEnv(observation_mode="elements", noise="none", render_scale=0.25)
    backend = env.unwrapped.backend
    max_steps = backend.task_info(task)["max_steps"]
    for i in range(seeds):
        seed = instance_seed(suite_seed, task, i)
        params = backend.generate_params(task, seed)
        cov.instances += 1
        exact = solved = True
        for replan in (False, True):
            goal = backend.reset(task, params, np.random.default_rng(seed))
            history: list[str] = []
            seen = SeenElements()
            finished = False
            for step in range(max_steps):
                _, elements, _ = backend.observe(pixels=False)
                expert = backend.expert_action()
                x = PolicyInput(goal, tuple(elements), list(history), step=step, max_steps=max_steps,
                                seen=seen.view(elements), acted=seen.acted)
                decoded, why = round_trip(policy, [x], [expert])[0]
                if not replan:
                    cov.steps += 1
                    cov.representable_steps += decoded is not None
                    if why:
                        cov.reasons[why] += 1
                    exact &= decoded is not None and same_action(decoded, expert)
                    act = expert
                else:
                    if decoded is None:
                        break
                    act = decoded
                backend.execute(act)
                history.append(act.to_json())
                seen.add(elements, history[-1])
                if act.action_type == A.STATUS:
                    finished = backend.score() >= 1.0
                    break
            if replan:
                solved = finished
            else:
                cov.expert_solved += finished
        cov.exact += exact
        cov.solved += solved
    return cov
