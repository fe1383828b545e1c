"""The text every policy sees and writes: a prompt built from goal, action history and the element list, and a
response `Reason: ... Action: {json}`. One module so that datasets, the HF policy and logs agree."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np

from voyager_gym.actions import Action, format_response, try_parse_action
from voyager_gym.observation import UIElement, format_elements

HISTORY_LEN = 8  # previous actions shown in a prompt
SEEN_MAX = 64  # elements of earlier screens an input carries (`seen_elements`)
TARGETING = frozenset({"click", "double_tap", "long_press", "input_text"})  # actions an `acted` label names
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
    seen: tuple[UIElement, ...] = ()  # labelled elements of the episode's earlier screens (`seen_elements`)
    # per history entry, the label of the element it acted on (`acted_label`): which of a goal's items are
    # done
    acted: tuple[str | None, ...] = ()
    # privileged guidance for this turn (text a self-teacher conditions on, algos/grsd_reflect.py); "" for
    # every acting policy, and then the prompt is exactly what it was without the field
    guidance: str = ""

    @classmethod
    def from_obs(
        cls, obs: dict[str, Any], history: list[str], step: int = 0, max_steps: int = 10,
        seen: tuple[UIElement, ...] = (), acted: tuple[str | None, ...] = (),
    ) -> PolicyInput:
        return cls(
            goal=obs["goal"],
            elements=tuple(obs["ui_elements"]),
            history=list(history),
            pixels=obs.get("pixels"),
            step=step,
            max_steps=max_steps,
            seen=seen,
            acted=acted,
        )


def acted_label(elements: Sequence[UIElement], entry: str) -> str | None:
    """The label (text, else content description) of the element that a history entry (an action's JSON,
    or a response) acted on, on `elements`, the screen it was taken on; None when it names no element of it
    or one without a label. A list's rows added one by one ("in order: A, B, C") differ only by these."""
    a, _ = try_parse_action(entry)
    i = a.index if a is not None and a.action_type in TARGETING else None
    if i is None or not 0 <= i < len(elements):
        return None
    e = elements[i]
    return (e.text or e.content_description) if isinstance(e, UIElement) else None


class SeenElements:
    """What an agent has read on an episode's earlier screens, kept incrementally (`add` each screen it acted
    on, with the history entry of its action; `view` for the next one): see `seen_elements`. `acted` holds
    the label each added action acted on (`acted_label`), in order."""

    def __init__(self, limit: int = SEEN_MAX):
        self.limit = limit
        self.n = 0
        self.by_label: dict[str, tuple[int, int, UIElement]] = {}  # label -> (first seen, last seen, latest)
        self.acted: tuple[str | None, ...] = ()

    def add(self, elements: Sequence[UIElement], entry: str | None = None) -> None:
        if entry is not None:
            self.acted = (*self.acted, acted_label(elements, entry))
        for e in elements:
            label = e.text or e.content_description
            if label:
                old = self.by_label.get(label)
                self.by_label[label] = (self.n if old is None else old[0], self.n, e)
                self.n += 1

    def view(self, current: Sequence[UIElement]) -> tuple[UIElement, ...]:
        if not self.by_label:
            return ()
        now = {e.text or e.content_description for e in current}
        rows = [v for k, v in self.by_label.items() if k not in now]
        if len(rows) > self.limit:
            rows = sorted(rows, key=lambda v: -v[1])[: self.limit]
        return tuple(e for _, _, e in sorted(rows, key=lambda v: v[0]))


def seen_elements(screens: Sequence[Sequence[UIElement]], current: Sequence[UIElement],
                  limit: int = SEEN_MAX) -> tuple[UIElement, ...]:
    """What an agent has read on the episode's earlier `screens` (oldest first) and no longer sees: the
    elements with a label (text, else content description) that no element of the `current` screen shows,
    one per label (its latest sighting), the `limit` most recently seen, in the order first seen (a list
    scrolled through comes out top to bottom). A pure function of the observations, so a rollout, a reloaded
    buffer and the coverage tool agree."""
    s = SeenElements(limit)
    for els in screens:
        s.add(els)
    return s.view(current)


def render_prompt(x: PolicyInput) -> str:
    """The user-turn text of a step (the system text is `SYSTEM`)."""
    hist = x.history[-HISTORY_LEN:]
    first = len(x.history) - len(hist) + 1
    lines = [f"Goal: {x.goal}"]
    if x.guidance:  # before the history and the screen, which max_prompt_tokens truncation cuts first
        lines.append(f"Guidance: {x.guidance}")
    lines += [f"Step {x.step + 1} of {x.max_steps}.", "Previous actions:"]
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
