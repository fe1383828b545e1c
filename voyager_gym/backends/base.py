"""The backend contract VoyagerEnv runs on: SimDroid and the real AndroidWorld both implement it."""

from __future__ import annotations

import abc
import difflib
from typing import Any

import numpy as np

from voyager_gym.actions import Action
from voyager_gym.observation import UIElement


def unknown_task_error(name: str, known: list[str]) -> KeyError:
    """The error for a task name no backend registry has, suggesting the closest known name."""
    close = difflib.get_close_matches(name, known, n=1)
    hint = f"; did you mean {close[0]!r}?" if close else f"; known tasks: {', '.join(sorted(known)[:8])}, ..."
    return KeyError(f"unknown task {name!r}{hint}")


class BackendError(RuntimeError):
    """The device failed (emulator crash, lost a11y tree...): the episode ends as errored."""


class ExpertOffPath(LookupError):
    """The task's expert has no action from the current state: it follows its own path from the reset, and
    a state other actions led to may be off it (the element it needs is gone, its list scrolled past the
    end)."""


class Backend(abc.ABC):
    """A phone that runs task instances. VoyagerEnv never knows which backend it has."""

    screen_size: tuple[int, int] = (1080, 2400)  # logical (width, height)

    @property
    @abc.abstractmethod
    def task_names(self) -> list[str]:
        """Every task this backend can run."""

    @property
    @abc.abstractmethod
    def app_names(self) -> tuple[str, ...]:
        """The apps `open_app` can name on this phone, sorted: the action vocabulary policies are built with
        (VoyagerEnv publishes it as `metadata["app_names"]`)."""

    @abc.abstractmethod
    def task_info(self, name: str) -> dict[str, Any]:
        """Static facts about a task: name, app_names, complexity, max_steps."""

    @abc.abstractmethod
    def generate_params(self, name: str, instance_seed: int) -> dict[str, Any]:
        """AndroidWorld's seeded `generate_random_params`; the result carries `seed`."""

    def check_params(self, name: str, params: dict[str, Any]) -> None:  # noqa: B027 - optional hook
        """Raise ValueError naming the key when `params` cannot be task `name`'s (voyager_gym.params); a
        backend without a schema (the real AndroidWorld, whose tasks check their own) accepts them."""

    @abc.abstractmethod
    def reset(self, name: str, params: dict[str, Any], rng: np.random.Generator) -> str:
        """Set the phone up for a task instance (home screen, app data); return the goal text.
        `rng` is the env's generator: the only randomness a backend may draw from."""

    @abc.abstractmethod
    def observe(self, pixels: bool = True) -> tuple[np.ndarray | None, list[UIElement], str]:
        """(pixels or None, ui elements, screen key) for the current screen."""

    @abc.abstractmethod
    def execute(self, action: Action) -> None:
        """Carry out an action. ActionError: it cannot be (invalid); any other exception: device error."""

    @abc.abstractmethod
    def score(self) -> float:
        """The verifier's score for the current instance, 0..1."""

    def expert_action(self) -> Action:
        """The task expert's next action from the current state; ExpertOffPath when it has none there."""
        raise NotImplementedError(f"{type(self).__name__} has no expert")

    def snapshot(self) -> Any:
        """The phone's whole state between two steps, picklable (what `VoyagerEnv.snapshot` keeps)."""
        raise NotImplementedError(f"{type(self).__name__} cannot snapshot its state")

    def restore(self, state: Any, rng: np.random.Generator) -> np.ndarray | None:
        """Put the phone back at a `snapshot()`, drawing from `rng` from now on; return its screenshot."""
        raise NotImplementedError(f"{type(self).__name__} cannot restore a snapshot")

    def close(self) -> None:  # noqa: B027 - optional hook, most backends hold nothing to release
        """Release the device."""
