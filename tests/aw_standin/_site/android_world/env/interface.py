"""Stand-in of android_world/env/interface.py: `State`, the `AsyncEnv` interface and `AsyncAndroidEnv`, with
AndroidWorld's method names and signatures. Actuation goes to the SimDroid phone instead of adb: an index
resolves against the screen at execution time (a bad index is a ValueError, as in AndroidWorld's
actuation), `answer` stores its text in `interaction_cache` and `status` does nothing."""

from __future__ import annotations

import abc
import dataclasses
from typing import Any

import numpy as np

from android_world.env import json_action, representation_utils
from android_world.env.android_world_controller import AndroidWorldController
from voyager_gym.actions import Action


@dataclasses.dataclass(frozen=True)
class State:
    """pixels: RGB screen; forest: the raw UI tree; ui_elements: the filtered accessibility elements."""

    pixels: np.ndarray
    forest: Any
    ui_elements: list[representation_utils.UIElement]
    auxiliaries: dict[str, Any] | None = None


class AsyncEnv(abc.ABC):
    """A real-time Android device (the subset of AndroidWorld's interface the backend and tasks use)."""

    @property
    @abc.abstractmethod
    def controller(self) -> AndroidWorldController: ...

    @abc.abstractmethod
    def reset(self, go_home: bool = False) -> State: ...

    @abc.abstractmethod
    def get_state(self, wait_to_stabilize: bool = False) -> State: ...

    @abc.abstractmethod
    def execute_action(self, action: json_action.JSONAction) -> None: ...

    @property
    @abc.abstractmethod
    def logical_screen_size(self) -> tuple[int, int]: ...

    @property
    @abc.abstractmethod
    def device_screen_size(self) -> tuple[int, int]: ...

    @abc.abstractmethod
    def close(self) -> None: ...

    def display_message(self, message: str, header: str = "") -> None:  # noqa: B027 - optional, as there
        """Shows a message on the screen (AndroidWorld broadcasts an overlay intent; a no-op here)."""

    @abc.abstractmethod
    def ask_question(self, question: str, timeout_seconds: float = -1.0) -> str | None: ...


class AsyncAndroidEnv(AsyncEnv):
    """The device behind AndroidWorld's benchmark, here a SimDroid phone held by the controller."""

    interaction_cache = ""

    def __init__(self, controller: AndroidWorldController):
        self._controller = controller
        self.interaction_cache = ""  # where `answer` text goes; information-retrieval tasks read it

    @property
    def controller(self) -> AndroidWorldController:
        return self._controller

    def reset(self, go_home: bool = False) -> State:
        if go_home:
            self._controller.phone.go_home()
            self._controller.phone.invalidate()
        self.interaction_cache = ""
        return self._state()

    def _state(self) -> State:
        c = self._controller
        return State(
            pixels=c.screenshot(), forest=c.get_a11y_forest(), ui_elements=c.get_ui_elements(), auxiliaries={}
        )

    def get_state(self, wait_to_stabilize: bool = False) -> State:
        """The current screen. SimDroid screens settle at once, so `wait_to_stabilize` changes nothing."""
        self._controller.check("get_state")
        return self._state()

    def execute_action(self, action: json_action.JSONAction) -> None:
        self._controller.check("execute_action")
        if action.action_type == json_action.ANSWER:
            self.interaction_cache = action.text
            if action.text:
                self.display_message(action.text, header="Agent answered:")
            return
        if action.action_type == json_action.STATUS:
            return
        if action.action_type == json_action.UNKNOWN:
            return
        fields = {k: v for k, v in action.as_dict().items() if k != "keycode"}
        phone = self._controller.phone
        try:
            phone.execute(Action.from_dict(fields))  # voyager ActionError is a ValueError, as AndroidWorld's
        finally:
            phone.dev.advance()

    def ask_question(self, question: str, timeout_seconds: float = -1.0) -> str | None:
        raise NotImplementedError("ask_question is not implemented.")

    @property
    def foreground_activity_name(self) -> str:
        return self._controller.phone.foreground

    @property
    def device_screen_size(self) -> tuple[int, int]:
        return self._controller.device_screen_size

    @property
    def logical_screen_size(self) -> tuple[int, int]:
        return self._controller.logical_screen_size

    @property
    def orientation(self) -> int:
        return 0

    @property
    def physical_frame_boundary(self) -> tuple[int, int, int, int]:
        w, h = self._controller.device_screen_size
        return 0, 0, w, h

    def hide_automation_ui(self) -> None:
        """Hides pointer-location overlays (nothing to hide on SimDroid)."""

    def close(self) -> None:
        self._controller.close()
