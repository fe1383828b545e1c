"""Stand-in only (no such module in AndroidWorld): SimDroid's tasks wrapped as TaskEvals.

`wrap(sim_cls)` builds a TaskEval subclass named after the AndroidWorld task: its params come from the
SimDroid task's generator fed with the global `random` (so after `random.seed(s)` they equal SimDroid's
`generate_random_params(random.Random(s))`), initialize_task installs the SimDroid task's data, and
is_successful runs SimDroid's verifier on the phone with the env's `interaction_cache` as the answer.
`expert_action(env)` is the SimDroid expert's next action, an extra the real TaskEvals do not have."""

from __future__ import annotations

import random
from typing import Any, ClassVar

from android_world.env import interface, json_action
from android_world.task_evals import task_eval
from voyager_gym.backends.sim.tasks.base import SimTask, View


class SimDroidTaskEval(task_eval.TaskEval):
    sim_cls: ClassVar[type[SimTask]]
    complexity: ClassVar[float] = 1.0
    app_names: ClassVar[tuple[str, ...]] = ()
    schema: ClassVar[dict[str, Any]] = {"type": "object"}

    def __init__(self, params: dict[str, Any]):
        super().__init__(params)
        self.sim = self.sim_cls(params)
        self.expert_memory: dict[str, Any] = {}

    @classmethod
    def generate_random_params(cls) -> dict[str, Any]:
        return cls.sim_cls.generate_random_params(random)  # the module's functions are a seeded Random's

    @property
    def goal(self) -> str:
        return self.sim.goal

    def initialize_task(self, env: interface.AsyncEnv) -> None:
        super().initialize_task(env)
        phone = env.controller.phone
        self.sim.initialize(phone.dev)
        phone.go_home()
        phone.invalidate()
        self.expert_memory = {}

    def is_successful(self, env: interface.AsyncEnv) -> float:
        super().is_successful(env)
        dev = env.controller.phone.dev
        dev.interaction_cache = env.interaction_cache or ""
        return float(self.sim.is_successful(dev))

    def expert_action(self, env: interface.AsyncEnv) -> json_action.JSONAction:
        phone = env.controller.phone
        a = self.sim.expert(View(phone.elements(), self.goal), self.expert_memory)
        return json_action.JSONAction(**a.to_dict())


def wrap(sim_cls: type[SimTask]) -> type[SimDroidTaskEval]:
    return type(
        sim_cls.name,
        (SimDroidTaskEval,),
        {
            "sim_cls": sim_cls,
            "complexity": sim_cls.complexity,
            "app_names": tuple(sim_cls.app_names),
            "template": sim_cls.template,
            "__module__": __name__,
            "__doc__": f"SimDroid's {sim_cls.name} as a stand-in TaskEval.",
        },
    )
