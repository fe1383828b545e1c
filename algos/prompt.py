"""The text every policy sees and writes: a prompt built from goal, action history and the element list, and a
response `Reason: ... Action: {json}`. One module so that datasets, the HF policy and logs agree."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np

from voyager_gym.actions import Action, format_response
from voyager_gym.observation import UIElement, format_elements

HISTORY_LEN = 8  # previous actions shown in a prompt
SYSTEM = (
    "You are an agent that operates an Android phone to complete the user's goal. Each turn you see the "
    "goal, your previous actions and the screen's UI elements, numbered. Answer with one line 'Reason: ...' "
    "and one line 'Action: {json}' using an AndroidWorld JSON action (click, long_press, input_text, scroll, "
    "navigate_back, navigate_home, open_app, keyboard_enter, wait, answer, status)."
)


@dataclasses.dataclass
class PolicyInput:
    """What a policy conditions on at one step."""

    goal: str
    elements: Sequence[UIElement]
    history: list[str] = dataclasses.field(default_factory=list)  # previous actions as JSON text
    pixels: np.ndarray | None = None
    step: int = 0
    max_steps: int = 10

    @classmethod
    def from_obs(
        cls, obs: dict[str, Any], history: list[str], step: int = 0, max_steps: int = 10
    ) -> PolicyInput:
        return cls(
            goal=obs["goal"],
            elements=tuple(obs["ui_elements"]),
            history=list(history),
            pixels=obs.get("pixels"),
            step=step,
            max_steps=max_steps,
        )


def render_prompt(x: PolicyInput) -> str:
    """The user-turn text of a step (the system text is `SYSTEM`)."""
    hist = x.history[-HISTORY_LEN:]
    first = len(x.history) - len(hist) + 1
    lines = [f"Goal: {x.goal}", f"Step {x.step + 1} of {x.max_steps}.", "Previous actions:"]
    lines += [f"{first + i}. {h}" for i, h in enumerate(hist)] or ["(none)"]
    lines += ["Screen elements:", format_elements(list(x.elements)) or "(none)"]
    return "\n".join(lines)


def render_response(action: Action | dict, reason: str = "") -> str:
    return format_response(reason or describe_action(action), action)


def describe_action(action: Action | dict) -> str:
    """A short, template reason for an action (used when a demonstrator gives none)."""
    a = action if isinstance(action, Action) else Action.from_dict(action)
    t = a.action_type
    if t == "input_text":
        return f"Type '{a.text}' into the field."
    if t == "open_app":
        return f"Open {a.app_name}."
    if t == "status":
        return "The task is done." if a.goal_status == "complete" else "The task cannot be done."
    if t == "answer":
        return f"The answer is {a.text}."
    if t in ("scroll", "swipe"):
        return f"Look further {a.direction}."
    if a.index is not None:
        return f"{t.replace('_', ' ').capitalize()} element {a.index}."
    return f"{t.replace('_', ' ').capitalize()}."
