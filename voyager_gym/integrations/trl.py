"""SimDroid (or the real AndroidWorld) as a TRL `GRPOTrainer(environment_factory=...)` environment.

TRL creates one environment per rollout, calls `reset(**row)` with the dataset row and appends the text it
returns to the prompt, offers the environment's public methods to the model as tools (their names, type
hints and docstrings become the tool schema), runs the tool calls the model writes and appends each result as
a tool message, and finally scores the rollout with `get_reward()`. Here the tools are AndroidWorld's actions
(click(index), input_text(index, text, clear_text), scroll(direction, index), open_app(app_name), ...), each
one env step returning the next screen as text: the numbered accessibility elements in AndroidWorld's prompt
format (`observation.format_elements`), plus the screenshot when `images=True`. `reset()` starts the task
instance the row names (`suite_dataset` builds the rows from a train or eval suite) and `get_reward()` is the
verifier's score, paid as the env pays it: only after `status`.

    from trl import GRPOConfig, GRPOTrainer
    from voyager_gym.integrations.trl import VoyagerToolEnv, suite_dataset

    data = suite_dataset("train", tasks=["OpenAppTaskEval", "SystemWifiTurnOn"], n=64)
    trainer = GRPOTrainer(model, args=GRPOConfig(...), train_dataset=data,
                          environment_factory=VoyagerToolEnv.factory(seed=0, noise="none"))
"""

from __future__ import annotations

import itertools
import json
import math
import types
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Literal

import numpy as np

from voyager_gym.env import VoyagerEnv
from voyager_gym.observation import UIElement, format_elements
from voyager_gym.suites import TaskInstance, TrainGenerator, eval_suite

SYSTEM_PROMPT = (
    "You are an agent that operates an Android phone to complete the user's goal. Each turn you see the "
    "screen's UI elements, numbered; act by calling exactly one tool (click, input_text, scroll, open_app, "
    "navigate_back, ...), which returns the next screen. Call answer(text) when the goal asks a question, "
    "and end with status('complete') when the goal is done, or status('infeasible') when it cannot be done."
)
ROW_COLUMNS = ("task", "instance_seed", "params")  # what `reset` reads from a dataset row
# The tools, in TRL's order (it lists an environment's public methods alphabetically): AndroidWorld's actions
TOOL_NAMES = ("answer", "click", "double_tap", "input_text", "keyboard_enter", "long_press", "navigate_back",
              "navigate_home", "open_app", "scroll", "status", "swipe", "wait")


def observation_text(elements: Sequence[UIElement], step: int, max_steps: int,
                     goal: str | None = None) -> str:
    """One screen as the model reads it: the goal (first turn only), the step count and the numbered
    elements, the format of `algos.prompt.render_prompt` without the action history (the chat holds it)."""
    lines = [f"Goal: {goal}"] if goal is not None else []
    screen = format_elements(list(elements)) or "(none)"
    lines += [f"Step {step + 1} of {max_steps}.", "Screen elements:", screen]
    return "\n".join(lines)


def result_text(elements: Sequence[UIElement], step: int, max_steps: int, *, invalid: str | None = None,
                status: str | None = None, truncated: bool = False, error: str | None = None) -> str:
    """What an action's tool returns: the next screen (`step` actions taken), or that the episode is over
    (`status` ended it, out of steps, or the phone failed with `error`), after the reason when it was invalid.
    `TrajectoryBuffer.to_conversations` writes recorded episodes with the same texts."""
    if error is not None:
        text = f"The phone failed ({error}); the episode is over."
    elif status is not None:
        text = f"Episode over: status {status!r}."
    elif truncated:
        text = f"Out of steps ({step} of {max_steps}); the episode is over."
    else:
        text = observation_text(elements, step, max_steps)
    return f"Invalid action: {invalid}\n{text}" if invalid else text


def tool_schemas(env_class: type[VoyagerToolEnv] | None = None) -> list[dict[str, Any]]:
    """The JSON schemas of the tools of `env_class` (default `VoyagerToolEnv`; see `with_tools`), as TRL
    renders them into the prompt: the `tools` column of `TrajectoryBuffer.to_conversations(form="tools")`,
    so SFT data sees the tools GRPO offers."""
    from transformers.utils import get_json_schema

    cls = env_class or VoyagerToolEnv
    # bound (to the class: only the signature is read), so `self` is not a parameter, as for TRL's instances
    return [get_json_schema(types.MethodType(getattr(cls, name), cls)) for name in cls.tool_names()]


def _tool(action_type: str, summary: str, index: bool = False) -> Callable[..., Any]:
    """A tool method for an action whose only argument is an element index, or that has none, with the
    name, type hints and Google-style docstring TRL turns into its schema."""
    if index:
        def tool(self, index: int) -> str | list[dict[str, Any]]:
            return self._act(action_type, index=index)
        args = "\n\nArgs:\n    index: The element's number in the screen's element list."
    else:
        def tool(self) -> str | list[dict[str, Any]]:
            return self._act(action_type)
        args = ""
    tool.__name__ = action_type
    tool.__qualname__ = f"VoyagerToolEnv.{action_type}"
    tool.__doc__ = f"{summary}{args}\n\nReturns:\n    The next screen."
    return tool


class VoyagerToolEnv:
    """One phone for one TRL rollout: AndroidWorld's actions as tools, the verifier's score as reward.

    Args:
        backend: 'simdroid' (default) or 'androidworld' (then `backend_kwargs` name its emulator).
        images: also return the screenshot with each observation (for models that take images).
        render_scale: screenshot scale when `images` (1080x2400 times this).
        noise: SimDroid's screen noise ('default', 'none', 'heavy' or a dict).
        seed: seed of the env's first reset; later episodes continue its RNG (same seed, same episodes).
        max_steps: override AndroidWorld's int(10 * complexity) step budget.
    """

    def __init__(self, backend: str = "simdroid", images: bool = False, render_scale: float = 0.25,
                 noise: Any = "default", seed: int | None = 0, max_steps: int | None = None,
                 **backend_kwargs: Any):
        if backend not in ("simdroid", "sim", "androidworld"):
            raise ValueError(f"backend={backend!r}: expected 'simdroid' or 'androidworld'")
        if not isinstance(images, bool):
            raise ValueError(f"images={images!r}: expected True or False")
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
            raise ValueError(f"seed={seed!r}: expected None or an integer >= 0")
        kwargs = dict(backend_kwargs)
        if backend != "androidworld":
            kwargs["noise"] = noise
        self._env = VoyagerEnv(backend=backend, render_scale=render_scale, max_steps=max_steps,
                               observation_mode="full" if images else "elements", **kwargs)
        self.images = images
        self._seed = seed
        self._started = False  # an episode has been reset
        self._done = False
        self._info: dict[str, Any] = {}
        self.transcript: list[dict[str, Any]] = []  # this episode's tool calls: name, arguments, result

    @classmethod
    def factory(cls, seed: int = 0, backend_kwargs: Sequence[dict[str, Any]] | None = None,
                **kwargs: Any) -> Callable[[], VoyagerToolEnv]:
        """TRL's `environment_factory`: the k-th env it asks for gets seed `seed + k` and, when given,
        `backend_kwargs[k]` (one dict per emulator, e.g. its ports: TRL may not ask for more envs than that).
        TRL creates its envs in a fixed order, so a run is reproducible from `seed`."""
        if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
            raise ValueError(f"seed={seed!r}: expected an integer >= 0")
        per_env = None if backend_kwargs is None else [dict(b) for b in backend_kwargs]
        counter = itertools.count()

        def make() -> VoyagerToolEnv:
            k = next(counter)
            extra: dict[str, Any] = {}
            if per_env is not None:
                if k >= len(per_env):
                    raise ValueError(f"TRL asked for environment #{k + 1} but backend_kwargs has "
                                     f"{len(per_env)} entries (one per emulator); expected at least one per "
                                     "concurrent rollout")
                extra = per_env[k]
            return cls(seed=seed + k, **{**kwargs, **extra})

        return make

    @classmethod
    def with_tools(cls, names: Iterable[str]) -> type[VoyagerToolEnv]:
        """A subclass that offers only the tools `names` (TRL offers an env's public methods; the others are
        hidden): a shorter tool list in every prompt, for small models and simple tasks."""
        names = list(names)
        unknown = [n for n in names if n not in TOOL_NAMES]
        if unknown or not names:
            raise ValueError(f"tools {unknown or names!r}: expected a non-empty list of "
                             f"{', '.join(TOOL_NAMES)}")
        hidden = {n: None for n in TOOL_NAMES if n not in names}  # not functions: TRL does not list them
        return type(cls.__name__, (cls,), {**hidden, "__module__": cls.__module__,
                                           "__doc__": f"{cls.__name__} with the tools {', '.join(names)}."})

    @classmethod
    def tool_names(cls) -> list[str]:
        """The tools this class offers, in TRL's (alphabetical) order."""
        return [n for n in TOOL_NAMES if callable(getattr(cls, n, None))]

    # -- TRL's protocol: reset and get_reward are not tools -------------------------------------------------
    def reset(self, task: str | None = None, instance_seed: int | None = None,
              params: str | dict | None = None, **row: Any) -> str | list[dict[str, Any]]:
        """Start the task instance a dataset row names (its `task`, and `params` as JSON or a dict, or an
        `instance_seed` whose params the backend draws); other columns (the prompt) are ignored. Returns the
        first observation (goal and screen), which TRL appends to the prompt."""
        if not isinstance(task, str):
            raise ValueError(f"dataset row has task={task!r} (columns: {sorted(row)}); expected a task name: "
                             f"rows with {', '.join(ROW_COLUMNS)} as `suite_dataset` builds them")
        options: dict[str, Any] = {"task": task}
        if isinstance(params, str) and params:
            params = json.loads(params)
        if isinstance(params, dict):
            options["params"] = params
        elif instance_seed is not None:
            options["instance_seed"] = int(instance_seed)
        elif params not in (None, ""):
            raise ValueError(f"dataset row has params={params!r:.80}; expected a JSON object, a dict or None")
        seed = None if self._started else self._seed
        obs, self._info = self._env.reset(seed=seed, options=options)
        self._started, self._done = True, False
        self.transcript = []
        text = observation_text(obs["ui_elements"], 0, self._info["max_steps"], obs["goal"])
        return self._render(obs, text)

    def get_reward(self) -> float:
        """The verifier's score (0..1) when the episode ended with `status`; 0 when it did not (out of steps,
        or the model stopped calling tools), as AndroidWorld pays; NaN when the phone failed (errored)."""
        if not self._started:
            raise RuntimeError("get_reward() before reset(): there is no episode")
        if self._info.get("errored"):
            return math.nan
        return float(self._info["score"]) if self._done else 0.0

    @property
    def env(self) -> VoyagerEnv:
        """The underlying Gymnasium env (close it when done with an AndroidWorld emulator)."""
        return self._env

    @property
    def done(self) -> bool:
        """The episode has ended (status, out of steps, or a phone failure): tools now raise."""
        return self._done

    @property
    def info(self) -> dict[str, Any]:
        """The env's info of the last reset or step (task, goal, score, success, invalid_action, ...)."""
        return dict(self._info)

    # -- the tools: AndroidWorld's actions, each one env step ----------------------------------------------
    click = _tool("click", "Tap the centre of a UI element.", index=True)
    double_tap = _tool("double_tap", "Double-tap a UI element.", index=True)
    long_press = _tool("long_press", "Press and hold a UI element.", index=True)

    def input_text(self, index: int, text: str, clear_text: bool = False) -> str | list[dict[str, Any]]:
        """Type text into a field: tap it, optionally clear it, type, then press Enter.

        Args:
            index: The text field's number in the screen's element list.
            text: The text to type.
            clear_text: Delete the field's current text first.

        Returns:
            The next screen.
        """
        return self._act("input_text", index=index, text=text, clear_text=clear_text)

    def scroll(self, direction: Literal["up", "down", "left", "right"],
               index: int | None = None) -> str | list[dict[str, Any]]:
        """Scroll content to reveal what lies in a direction (the finger moves the opposite way).

        Args:
            direction: Where the content to reveal is.
            index: The scrollable element's number; none scrolls the whole screen.

        Returns:
            The next screen.
        """
        return self._act("scroll", direction=direction, index=index)

    def swipe(self, direction: Literal["up", "down", "left", "right"],
              index: int | None = None) -> str | list[dict[str, Any]]:
        """Swipe a finger across the screen in a direction (the inverse of scroll).

        Args:
            direction: The direction the finger moves.
            index: The element to swipe on; none swipes the whole screen.

        Returns:
            The next screen.
        """
        return self._act("swipe", direction=direction, index=index)

    def open_app(self, app_name: str) -> str | list[dict[str, Any]]:
        """Open an app by name (such as Settings, Markor, Contacts, Simple Calendar Pro).

        Args:
            app_name: The app's name.

        Returns:
            The next screen.
        """
        return self._act("open_app", app_name=app_name)

    keyboard_enter = _tool("keyboard_enter", "Press the keyboard's Enter key.")
    navigate_back = _tool("navigate_back", "Press the system Back button.")
    navigate_home = _tool("navigate_home", "Press the system Home button.")
    wait = _tool("wait", "Wait for the screen to update.")

    def answer(self, text: str) -> str | list[dict[str, Any]]:
        """Give the answer to a question the goal asks (then end with status).

        Args:
            text: The answer.

        Returns:
            The next screen.
        """
        return self._act("answer", text=text)

    def status(self, goal_status: Literal["complete", "infeasible"]) -> str | list[dict[str, Any]]:
        """End the episode: the goal is done ('complete') or cannot be done ('infeasible').

        Args:
            goal_status: 'complete' or 'infeasible'.

        Returns:
            A note that the episode is over.
        """
        return self._act("status", goal_status=goal_status)

    # -- internals ------------------------------------------------------------------------------------------
    def _act(self, action_type: str, **fields: Any) -> str | list[dict[str, Any]]:
        """One env step. Fields the env rejects (an index out of range, an unknown app) make an invalid
        action, which uses the step as in AndroidWorld; the observation then starts with the reason."""
        if not self._started:
            raise RuntimeError(f"{action_type}() before reset(): there is no episode")
        if self._done:
            raise RuntimeError(f"{action_type}(): the episode is over; no more actions")
        action = {"action_type": action_type, **{k: v for k, v in fields.items() if v is not None}}
        obs, _, terminated, truncated, self._info = self._env.step(action)
        self._done = terminated or truncated
        info = self._info
        text = result_text(obs["ui_elements"], info["step"], info["max_steps"],
                           invalid=info["invalid_action"],
                           status=fields.get("goal_status") if terminated else None, truncated=truncated,
                           error=info.get("error", "") if info["errored"] else None)
        self.transcript.append({"tool": action_type, "arguments": dict(fields), "result": text,
                                "invalid": info["invalid_action"], "done": self._done,
                                "score": info["score"] if terminated else None})
        return text if self._done else self._render(obs, text)

    def _render(self, obs: dict[str, Any], text: str) -> str | list[dict[str, Any]]:
        """`text`, or with `images` TRL's multimodal content: the screenshot then the text."""
        if not self.images:
            return text
        from PIL import Image

        return [{"type": "image", "image": Image.fromarray(np.asarray(obs["pixels"]))},
                {"type": "text", "text": text}]


def suite_dataset(instances: Iterable[TaskInstance] | Literal["train", "eval"], *,
                  tasks: list[str] | None = None, n: int = 16, seed: int = 0, system: str = SYSTEM_PROMPT,
                  repeat: int = 1) -> Any:
    """The `datasets.Dataset` of prompts GRPOTrainer consumes: one row per task instance, columns `prompt`
    (a system message and an empty user message, which `VoyagerToolEnv.reset` fills with the goal and first
    screen), `task`, `instance_seed`, `params` (JSON; None where the env draws them, as on AndroidWorld) and
    `index`. `instances` is a list of `TaskInstance`s, or "train" (`TrainGenerator(tasks, seed).take(n)`) or
    "eval" (`eval_suite(tasks, n_per_task=n)`, AndroidWorld's held-out instances). `repeat` lists each row
    that many times in a row (more episodes per instance)."""
    import datasets

    if isinstance(repeat, bool) or not isinstance(repeat, int) or repeat < 1:
        raise ValueError(f"repeat={repeat!r}: expected an integer >= 1")
    if isinstance(instances, str):
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ValueError(f"n={n!r}: expected an integer >= 1")
        if instances == "train":
            instances = TrainGenerator(tasks, seed=seed).take(n)
        elif instances == "eval":
            instances = eval_suite(tasks, n_per_task=n)
        else:
            raise ValueError(f"instances={instances!r}: expected 'train', 'eval' or a list of TaskInstance")
    insts = list(instances)
    for inst in insts:
        if not isinstance(inst, TaskInstance):
            raise ValueError(f"instances holds {inst!r:.80}; expected TaskInstance records "
                             "(voyager_gym.suites)")
    if not insts:
        raise ValueError("no task instances; expected at least one")
    rows = [inst for inst in insts for _ in range(repeat)]
    prompt = [{"role": "system", "content": system}, {"role": "user", "content": ""}]
    return datasets.Dataset.from_dict({
        "prompt": [prompt] * len(rows),
        "task": [r.name for r in rows],
        "instance_seed": [r.seed for r in rows],
        "params": [None if r.params is None else json.dumps(r.params, ensure_ascii=False) for r in rows],
        "index": [r.index for r in rows],
    })
