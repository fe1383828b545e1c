"""AndroidWorld's JSON action space: the `Action` record, validation, and `parse_action` for policy text.

Field names and semantics follow AndroidWorld's `JSONAction` (env/json_action.py). `parse_action` is a pure
function: text in, `Action` out, or an `ActionError` that says what was wrong. The env turns that error into
an *invalid action* (a step is used, nothing happens on the phone), never an exception.

Limits: action text longer than MAX_ACTION_CHARS (16,384 characters: a reasoning paragraph and the JSON;
AndroidWorld's own agents print a few KB at most) is rejected before any parsing, so a hostile or runaway
policy cannot make `json.loads`/`ast.literal_eval` spend seconds and gigabytes on one step; a `text` field
(input_text, answer) longer than MAX_TEXT_CHARS (8,192) is an invalid action too.
"""

from __future__ import annotations

import ast
import dataclasses
import json
import re
from typing import Any

CLICK = "click"
DOUBLE_TAP = "double_tap"
LONG_PRESS = "long_press"
SCROLL = "scroll"
SWIPE = "swipe"
INPUT_TEXT = "input_text"
KEYBOARD_ENTER = "keyboard_enter"
NAVIGATE_HOME = "navigate_home"
NAVIGATE_BACK = "navigate_back"
OPEN_APP = "open_app"
WAIT = "wait"
STATUS = "status"
ANSWER = "answer"
UNKNOWN = "unknown"

ACTION_TYPES: tuple[str, ...] = (
    CLICK,
    DOUBLE_TAP,
    LONG_PRESS,
    SCROLL,
    SWIPE,
    INPUT_TEXT,
    KEYBOARD_ENTER,
    NAVIGATE_HOME,
    NAVIGATE_BACK,
    OPEN_APP,
    WAIT,
    STATUS,
    ANSWER,
)
DIRECTIONS = ("up", "down", "left", "right")
# A swipe is the finger's motion, a scroll the content's: a swipe up scrolls down (AndroidWorld's actuation)
OPPOSITE_DIRECTION = {"up": "down", "down": "up", "left": "right", "right": "left"}
GOAL_STATUSES = ("complete", "infeasible")
MAX_ACTION_CHARS = 16_384  # longest action text parsed (a policy's whole response)
MAX_TEXT_CHARS = 8_192  # longest `text` of input_text / answer
FIELDS = ("action_type", "index", "x", "y", "text", "direction", "goal_status", "app_name", "clear_text")

# Spellings LLM agents commonly print for the same action; mapped to AndroidWorld's names.
_TYPE_ALIASES = {
    "tap": CLICK,
    "press": CLICK,
    "type": INPUT_TEXT,
    "input": INPUT_TEXT,
    "type_text": INPUT_TEXT,
    "back": NAVIGATE_BACK,
    "press_back": NAVIGATE_BACK,
    "home": NAVIGATE_HOME,
    "press_home": NAVIGATE_HOME,
    "enter": KEYBOARD_ENTER,
    "press_enter": KEYBOARD_ENTER,
    "launch_app": OPEN_APP,
    "open": OPEN_APP,
    "doubletap": DOUBLE_TAP,
    "double_click": DOUBLE_TAP,
    "longpress": LONG_PRESS,
    "long_click": LONG_PRESS,
}


class ActionError(ValueError):
    """A policy produced text or fields that are not a valid AndroidWorld action."""


@dataclasses.dataclass(frozen=True)
class Action:
    """One AndroidWorld JSON action. Use `Action.from_dict` / `parse_action` to build validated ones."""

    action_type: str
    index: int | None = None
    x: int | None = None
    y: int | None = None
    text: str | None = None
    direction: str | None = None
    goal_status: str | None = None
    app_name: str | None = None
    clear_text: bool | None = None

    def __post_init__(self) -> None:
        validate(self)

    # -- conversions ---------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """The non-empty fields, in AndroidWorld's JSON form."""
        return {f: getattr(self, f) for f in FIELDS if getattr(self, f) is not None}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Action:
        return cls(**_normalise_fields(d))

    @property
    def target(self) -> str:
        """How the action names its target: 'index', 'xy' or 'none'."""
        if self.index is not None:
            return "index"
        if self.x is not None:
            return "xy"
        return "none"

    def __str__(self) -> str:
        return self.to_json()


def validate(a: Action) -> None:
    """Raise ActionError if the fields do not make a well-formed action of its type."""
    t = a.action_type
    if t not in ACTION_TYPES:
        raise ActionError(f"unknown action_type {t!r}; expected one of {', '.join(ACTION_TYPES)}")
    if a.index is not None and (a.x is not None or a.y is not None):
        raise ActionError(f"action has both index={a.index} and x/y=({a.x}, {a.y}); give one or the other")
    if (a.x is None) != (a.y is None):
        raise ActionError(f"action gives only one coordinate (x={a.x}, y={a.y}); expected both x and y")
    if a.index is not None and (not isinstance(a.index, int) or a.index < 0):
        raise ActionError(f"index must be a non-negative integer, got {a.index!r}")
    if t in (CLICK, DOUBLE_TAP, LONG_PRESS) and a.index is None and a.x is None:
        raise ActionError(f"{t} needs an 'index' or 'x' and 'y'")
    if t == INPUT_TEXT and a.text is None:
        raise ActionError("input_text needs a 'text' field")
    if a.text is not None and len(a.text) > MAX_TEXT_CHARS:
        raise ActionError(f"{t} text is {len(a.text):,} characters; expected at most {MAX_TEXT_CHARS:,}")
    if t in (SCROLL, SWIPE) and a.direction not in DIRECTIONS:
        raise ActionError(f"{t} needs 'direction' in {DIRECTIONS}, got {a.direction!r}")
    if t == OPEN_APP and not a.app_name:
        raise ActionError("open_app needs an 'app_name'")
    if t == STATUS and a.goal_status not in GOAL_STATUSES:
        raise ActionError(f"status needs 'goal_status' in {GOAL_STATUSES}, got {a.goal_status!r}")
    if t == ANSWER and a.text is None:
        raise ActionError("answer needs a 'text' field")


def _as_int(name: str, v: Any) -> int | None:
    if v is None:
        return None
    if isinstance(v, bool):
        raise ActionError(f"{name} must be an integer, got {v!r}")
    if isinstance(v, int):
        return v
    if isinstance(v, float) and v.is_integer():
        return int(v)
    if isinstance(v, float):
        return int(round(v))
    if isinstance(v, str) and re.fullmatch(r"\s*-?\d+(\.\d+)?\s*", v):
        return int(round(float(v)))
    raise ActionError(f"{name} must be an integer, got {v!r}")


def _normalise_fields(d: Any) -> dict[str, Any]:
    if not isinstance(d, dict):
        raise ActionError(f"an action must be a JSON object, got {type(d).__name__}: {d!r:.80}")
    d = dict(d)
    t = d.pop("action_type", None) or d.pop("action", None) or d.pop("type", None)
    if not isinstance(t, str):
        raise ActionError(f"action has no 'action_type' string (keys: {sorted(d)})")
    t = t.strip().lower()
    t = _TYPE_ALIASES.get(t, t)
    # Coordinates printed as a pair ("coordinate": [x, y]) are accepted as x and y.
    for key in ("coordinate", "coordinates", "point"):
        if key in d and d.get("x") is None:
            pt = d.pop(key)
            if not (isinstance(pt, list | tuple) and len(pt) == 2):
                raise ActionError(f"{key} must be a pair [x, y], got {pt!r}")
            d["x"], d["y"] = pt
    unknown = set(d) - set(FIELDS) - {"keycode", "reason", "thought"}
    if unknown:
        raise ActionError(f"unknown action field(s) {sorted(unknown)}; expected some of {FIELDS}")
    out: dict[str, Any] = {"action_type": t}
    out["index"] = _as_int("index", d.get("index"))
    out["x"] = _as_int("x", d.get("x"))
    out["y"] = _as_int("y", d.get("y"))
    for key in ("text", "direction", "goal_status", "app_name"):
        v = d.get(key)
        if v is not None and not isinstance(v, str):
            if key == "text" and isinstance(v, int | float):
                v = str(v)
            else:
                raise ActionError(f"{key} must be a string, got {v!r}")
        out[key] = v
    if out["direction"] is not None:
        out["direction"] = out["direction"].strip().lower()
    if out["goal_status"] is not None:
        gs = out["goal_status"].strip().lower()
        out["goal_status"] = {
            "task_complete": "complete",
            "completed": "complete",
            "success": "complete",
            "task_impossible": "infeasible",
            "impossible": "infeasible",
        }.get(gs, gs)
    ct = d.get("clear_text")
    if ct is not None and not isinstance(ct, bool):
        if ct in (0, 1, "true", "false", "True", "False"):
            ct = ct in (1, "true", "True")
        else:
            raise ActionError(f"clear_text must be true or false, got {ct!r}")
    out["clear_text"] = ct
    return out


_FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.S)
_ACTION_LABEL = re.compile(r"action\s*:", re.I)


def _balanced_objects(s: str) -> list[str]:
    """Top-level {...} substrings of s, respecting JSON strings."""
    out, depth, start, in_str, esc, quote = [], 0, -1, False, False, ""
    for i, ch in enumerate(s):
        if in_str:
            if esc:
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == quote:
                in_str = False
            continue
        if ch in "\"'" and depth > 0:
            in_str, quote = True, ch
        elif ch == "{":
            if depth == 0:
                start = i
            depth += 1
        elif ch == "}" and depth > 0:
            depth -= 1
            if depth == 0:
                out.append(s[start : i + 1])
    return out


def _load_object(blob: str) -> Any:
    try:
        return json.loads(blob)
    except json.JSONDecodeError:
        pass
    try:  # Python-literal dicts ({'action_type': 'click'}) are common in LLM output.
        return ast.literal_eval(blob)
    except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError) as e:
        raise ActionError(f"action text is not valid JSON: {blob[:120]!r}") from e


def parse_action(text: str | dict | Action) -> Action:
    """Parse what a policy printed into an `Action`.

    Accepts bare JSON, ```json fenced``` blocks, `Reason: ... Action: {json}` (the last object after the
    last `Action:` label wins), Python-literal dicts, dicts and Actions. Raises `ActionError` otherwise.
    """
    if isinstance(text, Action):
        return text
    if isinstance(text, dict):
        return Action.from_dict(text)
    if not isinstance(text, str):
        raise ActionError(f"expected action text (str), dict or Action, got {type(text).__name__}")
    if len(text) > MAX_ACTION_CHARS:
        raise ActionError(f"action text is {len(text):,} characters; expected at most {MAX_ACTION_CHARS:,} "
                          "(not parsed)")
    s = text.strip()
    if not s:
        raise ActionError('empty action text; expected a JSON action such as {"action_type": "wait"}')
    labels = list(_ACTION_LABEL.finditer(s))
    region = s[labels[-1].end() :] if labels else s
    fences = _FENCE.findall(region)
    if fences:
        region = fences[-1]
    objs = _balanced_objects(region)
    if not objs and labels:  # label present but the object came before it, e.g. a fenced block
        objs = _balanced_objects(s)
    if not objs:
        raise ActionError(f"no JSON object found in action text {s[:120]!r}")
    obj = _load_object(objs[0] if labels else objs[-1])
    try:
        return Action.from_dict(obj)
    except TypeError as e:  # pragma: no cover - from_dict normalises keys, kept as a guard
        raise ActionError(str(e)) from e


def try_parse_action(text: Any) -> tuple[Action | None, str | None]:
    """`parse_action` that returns (action, None) or (None, reason) and never raises."""
    try:
        return parse_action(text), None
    except ActionError as e:
        return None, str(e)
    except Exception as e:  # noqa: BLE001 - a policy's output must never crash the env
        return None, f"could not parse action: {type(e).__name__}: {e}"


def format_response(reason: str, action: Action | dict) -> str:
    """The response format policies write: `Reason: ... Action: {json}`."""
    a = action if isinstance(action, Action) else Action.from_dict(action)
    return f"Reason: {reason}\nAction: {a.to_json()}"
