"""Fixed-size observations and a MultiDiscrete action space over VoyagerEnv, for off-the-shelf RL libraries.

VoyagerEnv speaks AndroidWorld: text goals, a variable-length list of UI elements, JSON actions. Libraries
such as Stable-Baselines3 need fixed shapes. `FixedObsWrapper` gives them:

* observations, a flat `Dict` of 1-D vectors (SB3's `MultiInputPolicy` reads it as is): `elements`
  (max_elements x F row by row: presence, normalised box, flags, goal overlap, hashed words; F is
  `n_features`), `goal` (a hashed bag of words), `last_action` (one-hot type of the previous action),
  `step_frac`, `action_mask`, and optionally `screen` (a downscaled grayscale or RGB screenshot, uint8 HxWxC);
* actions, `MultiDiscrete([type, element, direction, point, app, text])`: each action type reads only the
  fields it needs (click: element + point; scroll: element + direction; input_text: element + text candidate
  copied from the goal; open_app: app; answer: element, whose label is the answer; status: none);
* `action_masks()`, the flat boolean mask of length sum(nvec) that sb3-contrib's MaskablePPO reads: one
  block per dimension, concatenated. A masked-in action is never an invalid action on the inner env.

`TrainInstances` makes plain `reset()` calls draw training task instances that never share a seed with the
held-out evaluation suite.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from PIL import Image

from voyager_gym import actions as A
from voyager_gym.actions import Action
from voyager_gym.observation import UIElement
from voyager_gym.suites import eval_seeds

SCREEN_W, SCREEN_H = 1080, 2400  # AndroidWorld's logical screen (element boxes are in these pixels)
DEFAULT_ACTION_TYPES = (
    A.CLICK,
    A.LONG_PRESS,
    A.SCROLL,
    A.INPUT_TEXT,
    A.KEYBOARD_ENTER,
    A.NAVIGATE_BACK,
    A.NAVIGATE_HOME,
    A.OPEN_APP,
    A.STATUS,
    A.ANSWER,
)
SUPPORTED_TYPES = (*DEFAULT_ACTION_TYPES, A.WAIT, A.DOUBLE_TAP)
ELEMENT_TYPES = (A.CLICK, A.DOUBLE_TAP, A.LONG_PRESS, A.INPUT_TEXT, A.ANSWER)  # need a visible element
POINT_TYPES = (A.CLICK, A.DOUBLE_TAP, A.LONG_PRESS)
# Where a tap lands on the chosen element: its centre (an index action, as AndroidWorld agents print), or near
# its start / end along x (a coordinate action), which is how sliders such as brightness are set.
POINTS = ("center", "start", "end")
POINT_INSET = 0.05  # start / end points sit this fraction of the element's width inside its box
FLAGS = (
    "is_clickable",
    "is_long_clickable",
    "is_editable",
    "is_scrollable",
    "is_checkable",
    "is_checked",
    "is_selected",
    "is_focused",
)
N_DENSE = 1 + 4 + len(FLAGS) + 2  # presence, box, flags, goal overlap, label-in-goal
WORD_RE = re.compile(r"\w+")
_QUOTED = re.compile(r"\"([^\"]+)\"|'([^']+)'")
_TOKENISH = re.compile(r"\+?\d[\d\-]{5,}\d|[\w\-]+\.[A-Za-z0-9]{2,4}\b|\b\w*\d\w*\b")
_CAPITALISED = re.compile(r"\b[A-Z][\w\-]*(?: [A-Z][\w\-]*)*")
_NUMBER = re.compile(r"\d+")


def word_bucket(word: str, n: int) -> int:
    """Stable hash bucket of a lower-cased word (crc32: identical across processes and machines)."""
    return zlib.crc32(word.lower().encode("utf-8")) % n


def _starts_sentence(text: str, pos: int) -> bool:
    before = text[:pos].rstrip()
    return not before or before.endswith((".", "!", "?"))


def text_candidates(goal: str, n: int) -> list[str]:
    """Up to `n` strings an agent may type, copied from the goal, in this order: quoted spans, the text after
    the last colon (whole, and up to its first sentence end), phone numbers, file names and words with digits,
    runs of capitalised words (whole, then word by word), then numbers. A heuristic: it covers the typing of
    the simple tasks and many forms, not every AndroidWorld task."""
    out: list[str] = []

    def add(s: str) -> None:
        s = s.strip()
        if s and s not in out:
            out.append(s)

    for m in _QUOTED.finditer(goal):
        add(m.group(1) or m.group(2))
    if ":" in goal:
        tail = goal.rsplit(":", 1)[1].strip()
        add(tail)
        first = re.match(r"(.+?[.!?])(\s|$)", tail)
        if first:
            add(first.group(1))
    for m in _TOKENISH.finditer(goal):
        add(m.group(0).rstrip("."))
    # Capitalised runs that do not start a sentence.
    runs = [m.group(0) for m in _CAPITALISED.finditer(goal) if not _starts_sentence(goal, m.start())]
    for r in runs:
        add(r)
    for r in runs:
        for w in r.split():
            add(w)
    for m in _NUMBER.finditer(goal):
        add(m.group(0))
    return out[:n]


class FixedObsWrapper(gym.Wrapper):
    """VoyagerEnv with fixed-size Dict observations, a MultiDiscrete action space and `action_masks()`.

    Args:
        env: a VoyagerEnv (or a wrapper of one) whose observations hold `ui_elements` and `goal`.
        max_elements: element slots; elements past this many are not observed and cannot be targeted.
        text_buckets: hash buckets for an element's words (text, description, hint, resource id).
        goal_buckets: hash buckets for the goal's bag of words.
        max_text: goal-copied text candidates for input_text.
        screen: (height, width) of a downscaled screenshot, or None for no screenshot (the inner env must
            then render pixels: observation_mode='full'). SB3's CNN needs at least 36x36.
        grayscale: one channel instead of three for the screenshot.
        app_names: open_app's choices (default: the inner env's `metadata["app_names"]`, its backend's).
        action_types: the action types the first dimension chooses among (a subset of SUPPORTED_TYPES).
    """

    def __init__(
        self,
        env: gym.Env,
        max_elements: int = 64,
        text_buckets: int = 32,
        goal_buckets: int = 64,
        max_text: int = 16,
        screen: tuple[int, int] | None = None,
        grayscale: bool = True,
        app_names: Sequence[str] | None = None,
        action_types: Sequence[str] = DEFAULT_ACTION_TYPES,
    ):
        super().__init__(env)
        for name, v in (
            ("max_elements", max_elements),
            ("text_buckets", text_buckets),
            ("goal_buckets", goal_buckets),
            ("max_text", max_text),
        ):
            if not isinstance(v, int) or v < 1:
                raise ValueError(f"{name} must be a positive integer, got {v!r}")
        bad = [t for t in action_types if t not in SUPPORTED_TYPES]
        if bad or not action_types:
            raise ValueError(
                f"unsupported action types {bad or '(none given)'}; expected some of {SUPPORTED_TYPES}"
            )
        if screen is not None:
            if "pixels" not in env.observation_space.spaces:
                raise ValueError(
                    f"screen={screen} needs pixels, but the inner env's observations are "
                    f"{sorted(env.observation_space.spaces)}; use observation_mode='full'"
                )
            if len(screen) != 2 or min(screen) < 1:
                raise ValueError(f"screen must be (height, width) with positive sizes, got {screen!r}")
        if app_names is None:
            from voyager_gym.env import app_names as env_app_names

            app_names = env_app_names(env)
        self.app_names = list(app_names)
        if not self.app_names:
            raise ValueError("app_names is empty; open_app needs at least one app to choose from")
        self.max_elements, self.text_buckets, self.goal_buckets = max_elements, text_buckets, goal_buckets
        self.max_text, self.screen, self.grayscale = max_text, screen, grayscale
        self.action_types = tuple(action_types)
        self.nvec = np.array(
            [
                len(self.action_types),
                max_elements,
                len(A.DIRECTIONS),
                len(POINTS),
                len(self.app_names),
                max_text,
            ],
            np.int64,
        )
        self.action_space = spaces.MultiDiscrete(self.nvec)
        self.n_features = N_DENSE + text_buckets
        obs: dict[str, spaces.Space] = {
            "elements": spaces.Box(0.0, 1.0, (max_elements * self.n_features,), np.float32),
            "goal": spaces.Box(0.0, 1.0, (goal_buckets,), np.float32),
            "last_action": spaces.Box(0.0, 1.0, (len(self.action_types) + 1,), np.float32),
            "step_frac": spaces.Box(0.0, 1.0, (1,), np.float32),
            "action_mask": spaces.MultiBinary(int(self.nvec.sum())),
        }
        if screen is not None:
            obs["screen"] = spaces.Box(0, 255, (*screen, 1 if grayscale else 3), np.uint8)
        self.observation_space = spaces.Dict(obs)
        self._elements: list[UIElement] = []
        self._goal = ""
        self._goal_words: frozenset[str] = frozenset()
        self._texts: list[str] = []
        self._last_type: int | None = None
        self._el_cache: dict[UIElement, np.ndarray] = {}

    # -- gymnasium API ---------------------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        raw, info = self.env.reset(seed=seed, options=options)
        self._last_type = None
        return self._observe(raw, info), info

    def step(self, action: Any):
        act = self.decode(action)
        raw, reward, terminated, truncated, info = self.env.step(act)
        self._last_type = self.action_types.index(act.action_type)
        info["decoded_action"] = act.to_dict()
        info["is_success"] = info["success"]  # the key SB3 reads for its success-rate statistics
        return self._observe(raw, info), reward, terminated, truncated, info

    def action_masks(self) -> np.ndarray:
        """Flat bool mask, length sum(nvec): [types | elements | directions | points | apps | texts]."""
        n_el = min(len(self._elements), self.max_elements)
        n_txt = len(self._texts)
        types = np.ones(len(self.action_types), bool)
        for i, t in enumerate(self.action_types):
            if (t in ELEMENT_TYPES and n_el == 0) or (t == A.INPUT_TEXT and n_txt == 0):
                types[i] = False
        els = np.zeros(self.max_elements, bool)
        els[: max(1, n_el)] = True  # with no elements, slot 0 stays on (every type that reads it is masked)
        txt = np.zeros(self.max_text, bool)
        txt[: max(1, n_txt)] = True
        return np.concatenate(
            [
                types,
                els,
                np.ones(len(A.DIRECTIONS), bool),
                np.ones(len(POINTS), bool),
                np.ones(len(self.app_names), bool),
                txt,
            ]
        )

    # -- actions ---------------------------------------------------------------------------------------
    @property
    def text_options(self) -> list[str]:
        """The current goal's input_text candidates (the text dimension indexes this list)."""
        return list(self._texts)

    def decode(self, action: Any) -> Action:
        """MultiDiscrete vector -> AndroidWorld Action. Fields a type does not use are ignored. An element
        index past the visible ones still decodes (to an index action the inner env rejects as invalid)."""
        a = np.asarray(action).reshape(-1)
        if a.shape != (len(self.nvec),):
            raise ValueError(
                f"action must have {len(self.nvec)} entries {self.nvec.tolist()}, got shape "
                f"{np.asarray(action).shape}"
            )
        k, el, d, p, app, tx = (int(v) for v in a)
        if not 0 <= k < len(self.action_types):
            raise ValueError(f"action type {k} out of range 0..{len(self.action_types) - 1}")
        t = self.action_types[k]
        if t in POINT_TYPES:
            pt = self._point(el, POINTS[p % len(POINTS)])
            return Action(t, x=pt[0], y=pt[1]) if pt is not None else Action(t, index=el)
        if t == A.SCROLL:
            e = self._elements[el] if el < len(self._elements) else None
            idx = el if e is not None and e.is_scrollable else None
            return Action(t, index=idx, direction=A.DIRECTIONS[d % len(A.DIRECTIONS)])
        if t == A.INPUT_TEXT:
            text = self._texts[tx] if tx < len(self._texts) else ""
            return Action(t, index=el, text=text, clear_text=True)
        if t == A.OPEN_APP:
            return Action(t, app_name=self.app_names[app % len(self.app_names)])
        if t == A.ANSWER:
            e = self._elements[el] if el < len(self._elements) else None
            return Action(t, text=(e.label if e is not None else ""))
        if t == A.STATUS:
            return Action(t, goal_status="complete")
        return Action(t)

    def encode(self, action: Action | dict | str) -> np.ndarray | None:
        """AndroidWorld action -> the canonical MultiDiscrete vector (unused fields 0), or None when the
        space cannot express it. A coordinate tap maps to the element under it and the nearest point."""
        act = A.parse_action(action)
        t = act.action_type
        if t not in self.action_types or (t == A.STATUS and act.goal_status != "complete"):
            return None
        out = np.zeros(len(self.nvec), np.int64)
        out[0] = self.action_types.index(t)
        n_el = min(len(self._elements), self.max_elements)
        if t in POINT_TYPES:
            if act.index is not None:
                if act.index >= n_el:
                    return None
                out[1] = act.index
            else:
                hit = self._element_at(act.x, act.y, n_el)
                if hit is None:
                    return None
                out[1] = hit
                centre = self._elements[hit].bbox_pixels.center
                xs = [(self._point(hit, p) or centre)[0] for p in POINTS]
                out[3] = int(np.argmin([abs(x - act.x) for x in xs]))
        elif t == A.SCROLL:
            if act.index is not None:
                if act.index >= n_el:
                    return None
                out[1] = act.index
            out[2] = A.DIRECTIONS.index(act.direction)
        elif t == A.INPUT_TEXT:
            if (
                act.text not in self._texts
                or (act.index is not None and act.index >= n_el)
                or act.index is None
            ):
                return None
            out[1], out[5] = act.index, self._texts.index(act.text)
        elif t == A.OPEN_APP:
            names = [n.lower() for n in self.app_names]
            name = (act.app_name or "").strip().lower()
            phone = getattr(getattr(self.env.unwrapped, "backend", None), "phone", None)
            if name not in names and phone is not None:  # SimDroid resolves aliases such as "dialer"
                app = phone.find_app(name)
                name = app.name.lower() if app is not None else name
            if name not in names:
                return None
            out[4] = names.index(name)
        elif t == A.ANSWER:
            labels = [e.label for e in self._elements[:n_el]]
            if act.text not in labels:
                return None
            out[1] = labels.index(act.text)
        return out

    def _point(self, el: int, where: str) -> tuple[int, int] | None:
        """Screen point for a tap at `where` on element `el`; None means 'tap by index' (the centre)."""
        if where == "center" or el >= len(self._elements):
            return None
        b = self._elements[el].bbox_pixels
        if b is None:
            return None
        inset = round(POINT_INSET * b.width)
        x = b.x_min + inset if where == "start" else b.x_max - inset
        y = (b.y_min + b.y_max) // 2
        return min(max(x, 0), SCREEN_W - 1), min(max(y, 0), SCREEN_H - 1)

    def _element_at(self, x: int | None, y: int | None, n_el: int) -> int | None:
        """Index of the smallest visible element whose box holds (x, y)."""
        best, area = None, None
        for i, e in enumerate(self._elements[:n_el]):
            b = e.bbox_pixels
            if (
                b is not None
                and x is not None
                and y is not None
                and b.x_min <= x < b.x_max
                and b.y_min <= y < b.y_max
            ):
                if area is None or b.width * b.height < area:
                    best, area = i, b.width * b.height
        return best

    # -- observations ----------------------------------------------------------------------------------
    def _observe(self, raw: dict[str, Any], info: dict[str, Any]) -> dict[str, np.ndarray]:
        self._elements = list(raw["ui_elements"])
        if raw["goal"] != self._goal:
            self._goal = raw["goal"]
            self._goal_words = frozenset(w.lower() for w in WORD_RE.findall(self._goal))
            self._texts = text_candidates(self._goal, self.max_text)
            self._el_cache.clear()  # goal-overlap features depend on the goal
        goal = np.zeros(self.goal_buckets, np.float32)
        for w in self._goal_words:
            goal[word_bucket(w, self.goal_buckets)] = 1.0
        els = np.zeros((self.max_elements, self.n_features), np.float32)
        for i, e in enumerate(self._elements[: self.max_elements]):
            els[i] = self._element_features(e)
        last = np.zeros(len(self.action_types) + 1, np.float32)
        last[len(self.action_types) if self._last_type is None else self._last_type] = 1.0
        max_steps = max(1, int(info.get("max_steps") or 1))
        step = np.array([min(1.0, int(info.get("step") or 0) / max_steps)], np.float32)
        obs = {
            "elements": els.reshape(-1),
            "goal": goal,
            "last_action": last,
            "step_frac": step,
            "action_mask": self.action_masks().astype(np.int8),
        }
        if self.screen is not None:
            obs["screen"] = self._screen(raw["pixels"])
        return obs

    def _element_features(self, e: UIElement) -> np.ndarray:
        f = self._el_cache.get(e)
        if f is not None:
            return f
        f = np.zeros(self.n_features, np.float32)
        f[0] = 1.0
        b = e.bbox_pixels
        if b is not None:
            f[1:5] = np.clip(
                [b.x_min / SCREEN_W, b.x_max / SCREEN_W, b.y_min / SCREEN_H, b.y_max / SCREEN_H], 0, 1
            )
        f[5 : 5 + len(FLAGS)] = [bool(getattr(e, name)) for name in FLAGS]
        rid = (e.resource_id or e.resource_name or "").rsplit("/", 1)[-1]
        words = [
            w.lower()
            for t in (e.text, e.content_description, e.hint_text, rid)
            if t
            for w in WORD_RE.findall(t)
        ]
        if words:
            f[5 + len(FLAGS)] = sum(w in self._goal_words for w in words) / len(words)
        label = e.label.lower()
        f[6 + len(FLAGS)] = float(bool(label) and label in self._goal.lower())
        for w in words:
            f[N_DENSE + word_bucket(w, self.text_buckets)] = 1.0
        if len(self._el_cache) > 10_000:
            self._el_cache.clear()
        self._el_cache[e] = f
        return f

    def _screen(self, pixels: np.ndarray) -> np.ndarray:
        img = Image.fromarray(pixels)
        if self.grayscale:
            img = img.convert("L")
        h, w = self.screen
        out = np.asarray(img.resize((w, h), Image.Resampling.BOX), dtype=np.uint8)
        return out[..., None] if self.grayscale else out


class TrainInstances(gym.Wrapper):
    """Makes `reset()` without options start a training instance: a task from `tasks` and an instance seed
    that is not among the first `exclude_n` eval-suite instances of that task (drawn from this wrapper's RNG,
    seeded by `reset(seed=...)`). Resets with options pass through unchanged."""

    def __init__(self, env: gym.Env, tasks: Sequence[str], exclude_n: int = 16):
        super().__init__(env)
        if not tasks:
            raise ValueError("tasks is empty; expected at least one task name")
        known = set(env.unwrapped.task_names)
        unknown = [t for t in tasks if t not in known]
        if unknown:
            raise ValueError(f"unknown task(s) {unknown}; see `voyager-gym tasks` for the names")
        self.tasks = list(tasks)
        self.excluded = eval_seeds(self.tasks, exclude_n)
        self._rng: np.random.Generator | None = None

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        if options:
            return self.env.reset(seed=seed, options=options)
        if seed is not None:
            self._rng = np.random.default_rng(seed)
        elif self._rng is None:  # never seeded: derive from the inner env's RNG, as gymnasium does
            self._rng = np.random.default_rng(int(self.env.unwrapped.np_random.integers(2**63)))
        task = self.tasks[int(self._rng.integers(len(self.tasks)))]
        inst = int(self._rng.integers(2**32))
        while inst in self.excluded:
            inst = int(self._rng.integers(2**32))
        return self.env.reset(seed=seed, options={"task": task, "instance_seed": inst})
