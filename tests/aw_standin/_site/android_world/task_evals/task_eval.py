"""Stand-in of android_world/task_evals/task_eval.py: the `TaskEval` base with AndroidWorld's life cycle.

initialize_task(env) clears `env.interaction_cache`, restores app data, refuses a second call and seeds
Python's global `random` with `params["seed"]`; is_successful(env) requires initialisation; tear_down(env)
restores app data and clears the flag. `generate_random_params()` is a classmethod without arguments that
draws from the global `random` (the caller seeds it first, as suite_utils does)."""

from __future__ import annotations

import abc
import datetime
import random
from typing import Any

from android_world.env import interface

DEVICE_TIME = datetime.datetime(2023, 10, 15, 15, 34, 0, tzinfo=datetime.UTC)


class TaskEval(abc.ABC):
    template = ""
    device_time = DEVICE_TIME
    start_on_home_screen = True

    def __init__(self, params: dict[str, Any]):
        self.initialized = False
        self._params = params

    @property
    @abc.abstractmethod
    def complexity(self) -> float:
        """Step budget is int(10 * complexity)."""

    @property
    def name(self) -> str:
        return self.__class__.__name__

    @property
    @abc.abstractmethod
    def app_names(self) -> tuple[str, ...]: ...

    @property
    @abc.abstractmethod
    def schema(self) -> dict[str, Any]: ...

    @property
    def params(self) -> dict[str, Any]:
        return self._params

    @property
    def goal(self) -> str:
        return self.template.format(**self.params)

    @classmethod
    @abc.abstractmethod
    def generate_random_params(cls) -> dict[str, Any]: ...

    @classmethod
    def set_device_time(cls, env: interface.AsyncEnv | None) -> None:
        del env
        cls.device_time = DEVICE_TIME

    def _initialize_apps(self, env: interface.AsyncEnv) -> None:
        env.controller.restore_snapshot()

    def initialize_task(self, env: interface.AsyncEnv) -> None:
        env.interaction_cache = ""
        env.controller.check("initialize_task")
        self._initialize_apps(env)
        if self.initialized:
            raise RuntimeError(f"{self.name}.initialize_task() is already called.")
        self.initialized = True
        seed = self.params.get("seed")
        if seed is not None:
            random.seed(seed)

    def _check_is_initialized(self) -> None:
        if not self.initialized:
            raise RuntimeError(
                f"{self.name}.initialize_task() must be called before {self.name}.is_successful()."
            )

    def is_successful(self, env: interface.AsyncEnv) -> float:
        env.controller.check("is_successful")
        self._check_is_initialized()
        return 1.0

    def tear_down(self, env: interface.AsyncEnv) -> None:
        env.controller.check("tear_down")
        self._initialize_apps(env)
        env.controller.phone.go_home(reset_app=True)
        self.initialized = False
