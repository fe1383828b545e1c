"""Non-learning policies: the task expert (demonstrations, upper bound) and a uniform random agent."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from algos.policies.base import Policy, PolicyOutput
from algos.prompt import PolicyInput, render_response
from voyager_gym.actions import Action, parse_action


class ExpertPolicy(Policy):
    """SimDroid's task experts behind the policy interface. Needs `bind(envs)`: each sub-env's expert reads
    that env's current observation (and its own memory), so the batch must line up with the env's sub-envs."""

    name = "expert"

    def __init__(self) -> None:
        self.envs: Any = None

    def bind(self, envs: Any) -> None:
        self.envs = envs

    def act(self, batch: list[PolicyInput], greedy: bool = False) -> list[PolicyOutput]:
        if self.envs is None:
            raise RuntimeError("ExpertPolicy.act needs bind(envs) first: the expert reads each env's task")
        texts = (
            self.envs.call("expert_action") if hasattr(self.envs, "num_envs") else [self.envs.expert_action()]
        )
        if len(texts) != len(batch):
            raise ValueError(
                f"batch of {len(batch)} inputs for {len(texts)} envs; the expert acts for all envs"
            )
        out = []
        for t in texts:
            a = parse_action(t)
            out.append(PolicyOutput(render_response(a), a, 0.0))
        return out


class RandomPolicy(Policy):
    """A uniform random agent over plausible actions: taps on elements, scrolls, back, apps, typing goal words
    and stopping. Its log-prob is that of the sampled action under this mixture."""

    name = "random"

    def __init__(self, app_names: Sequence[str], seed: int = 0, p_status: float = 0.05):
        """`app_names`: what open_app may name, the env's vocabulary (`voyager_gym.env.app_names`)."""
        if isinstance(app_names, str) or not app_names:
            raise ValueError(f"app_names={app_names!r}: expected a non-empty list of app names (the env's "
                             "metadata['app_names'])")
        self.rng = np.random.default_rng(seed)
        self.apps = list(app_names)
        self.p_status = p_status

    def act(self, batch: list[PolicyInput], greedy: bool = False) -> list[PolicyOutput]:
        return [self._one(x) for x in batch]

    def _one(self, x: PolicyInput) -> PolicyOutput:
        r = self.rng
        kinds = ["click", "scroll", "back", "open_app", "input_text", "status"]
        p = np.array([0.6, 0.1, 0.1, 0.08, 0.07, self.p_status])
        p /= p.sum()
        k = int(r.choice(len(kinds), p=p))
        n = len(x.elements)
        kind = kinds[k] if (n or kinds[k] not in ("click", "input_text")) else "back"
        lp = float(np.log(p[k]))
        if kind == "click":
            a, lp = Action("click", index=int(r.integers(n))), lp - np.log(n)
        elif kind == "scroll":
            a, lp = Action("scroll", direction=str(r.choice(["up", "down"]))), lp - np.log(2)
        elif kind == "back":
            a = Action("navigate_back")
        elif kind == "open_app":
            a, lp = Action("open_app", app_name=str(r.choice(self.apps))), lp - np.log(len(self.apps))
        elif kind == "input_text":
            words = x.goal.split() or ["text"]
            a = Action("input_text", index=int(r.integers(n)), text=str(r.choice(words)), clear_text=True)
            lp -= np.log(n) + np.log(len(words))
        else:
            a = Action("status", goal_status="complete")
        return PolicyOutput(render_response(a), a, lp)
