"""SimDroid tasks: one small class per AndroidWorld task name (AndroidWorld's `TaskEval` shape).

A task has AndroidWorld's class name, app names and complexity; `generate_random_params(rng)` draws its
parameters from a seeded `random.Random`; `goal` fills the template; `initialize(dev)` installs the app data
the task needs (noise rows included); `is_successful(dev)` reads device state (never pixels) and returns 0..1;
`expert(view, mem)` solves the task from the current observation only (the element list and its own memory),
so that it proves the task solvable and produces demonstrations from any state it finds.
"""

from __future__ import annotations

import datetime as dt
import difflib
import random
import re
from collections.abc import Callable, Iterable
from typing import Any, ClassVar, TypeVar

from voyager_gym.actions import Action
from voyager_gym.backends.sim.device import DeviceState
from voyager_gym.observation import SYSTEMUI, UIElement

TASKS: dict[str, type[SimTask]] = {}
T = TypeVar("T")


def register_task(cls: type[SimTask]) -> type[SimTask]:
    if cls.name in TASKS:
        raise ValueError(f"task {cls.name!r} registered twice")
    TASKS[cls.name] = cls
    return cls


class SimTask:
    """Base class. Subclasses set the class attributes and implement the four methods; `name` is the class
    name."""

    name: ClassVar[str] = ""
    app_names: ClassVar[tuple[str, ...]] = ()
    complexity: ClassVar[float] = 1.0
    template: ClassVar[str] = ""
    # Tasks that start in their goal state (AndroidWorld's "Verify" variants).
    starts_solved: ClassVar[bool] = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """A task's name is its class name (AndroidWorld's), so that grep finds where a task is defined."""
        super().__init_subclass__(**kwargs)
        given = cls.__dict__.get("name", cls.__name__)
        if given != cls.__name__:
            raise ValueError(f"task class {cls.__name__} sets name={given!r}; expected its class name")
        cls.name = cls.__name__

    def __init__(self, params: dict[str, Any]):
        self.params = dict(params)

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return {}

    @property
    def goal(self) -> str:
        return self.template.format(**self.params)

    @property
    def max_steps(self) -> int:
        return int(10 * self.complexity)

    def rng(self, salt: str = "") -> random.Random:
        """A generator seeded from the instance seed, for noise data in `initialize`."""
        return random.Random(f"{self.params.get('seed', 0)}:{self.name}:{salt}")

    def setup_rng(self) -> random.Random:
        """The generator of AndroidWorld's own draws during setup: its initialize_task seeds Python's `random`
        with the instance seed, so a setup that draws from this in AndroidWorld's order puts the same noise
        files and texts on the device."""
        return random.Random(self.params.get("seed", 0))

    def solved_at_start(self) -> bool:
        """Whether this instance starts in its goal state: Verify tasks, and instances AndroidWorld draws with
        nothing to do (RecipeDeleteMultipleRecipesWithConstraint with an ingredient no recipe uses)."""
        return self.starts_solved

    def initialize(self, dev: DeviceState) -> None:
        """Put the device in the task's start state. The phone is on the home screen afterwards."""

    def is_successful(self, dev: DeviceState) -> float:
        raise NotImplementedError

    def expert(self, view: View, mem: dict[str, Any]) -> Action:
        raise NotImplementedError


# -- helpers for setup ---------------------------------------------------------------------------------
def draw_noise(
    rng: random.Random, n: int, make: Callable[[random.Random], T], keep: Callable[[T], bool]
) -> list[T]:
    """`n` items drawn with `make(rng)`, skipping those `keep` rejects (AndroidWorld's noise rejection)."""
    out: list[T] = []
    while len(out) < n:
        x = make(rng)
        if keep(x):
            out.append(x)
    return out


# -- helpers for verifiers -----------------------------------------------------------------------------
def digits(s: str) -> str:
    return re.sub(r"\D", "", s or "")


def rows_equal(a: dict, b: dict, keys: Iterable[str]) -> bool:
    return all(a.get(k) == b.get(k) for k in keys)


def removal_ok(before: list[dict], after: list[dict], ids: list[int], key: str) -> bool:
    """The rows with `ids` are gone; every other row is unchanged; nothing new appeared."""
    for r in before:
        if (r[key] in ids) == (r in after):
            return False
    return all(r in before for r in after)


def addition_ok(
    before: list[dict],
    after: list[dict],
    refs: list[dict],
    compare: tuple[str, ...],
    free_form: tuple[str, ...],
) -> bool:
    """Every reference row matches some row (free-form fields fuzzily, by `aw_fuzzy_match`: nothing stripped,
    as AndroidWorld's row check), the count grew by exactly len(refs), and every earlier row is still there
    unchanged."""

    def matches(ref: dict, row: dict) -> bool:
        for f in compare:
            if f in free_form:
                if not aw_fuzzy_match(ref.get(f), row.get(f)):
                    return False
            elif ref.get(f) != row.get(f):
                return False
        return True

    if not all(any(matches(ref, row) for row in after) for ref in refs):
        return False
    if len(after) != len(before) + len(refs):
        return False
    return all(r in after for r in before)


def dedupe_ok(before: list[dict], after: list[dict], key: str) -> bool:
    """Exactly one of the last two rows of `before` (the duplicated pair) is gone; all else unchanged."""
    a, b = (r[key] for r in before[-2:])
    return removal_ok(before, after, [a], key) or removal_ok(before, after, [b], key)


def aw_fuzzy_match(a: str | None, b: str | None) -> bool:
    """AndroidWorld's fuzzy_match, which every text rule of its tasks uses (clipboard, SMS bodies, IR
    strings, the free-form fields of database rows, playlist names, Markor's files): SequenceMatcher ratio
    >= 0.9 after lower-casing both, nothing stripped (a rule that strips does so before calling it)."""
    if a is None or b is None:
        return False
    return difflib.SequenceMatcher(None, str(a).lower(), str(b).lower()).ratio() >= 0.9


def sms_number(s: str) -> str:
    """A number as AndroidWorld's SMS checks compare it: only '-' and ' ' removed ('+' and all else kept)."""
    return (s or "").replace("-", "").replace(" ", "")


def check_answer(
    answer: str, expected: list[str] | str, match: str = "string", tolerance: float | None = None
) -> bool:
    """AndroidWorld's information-retrieval check. The answer is always split on commas and each part
    stripped (empty parts kept); parts are cast by the match type ("string", "number", or "datetime" for
    its DATE_MATCH with TIME_MATCH: '%B %d %Y %H:%M'; a part that does not cast fails the check); the counts
    must be equal and every part must match some expected value (several parts may match the same one).
    Strings match fuzzily (`aw_fuzzy_match`); numbers exactly, or with |part - expected| < tolerance when
    the task has one; date-times exactly."""
    exp = [expected] if isinstance(expected, str) else list(expected)
    got: list[Any] = [p.strip() for p in (answer or "").split(",")]
    if match == "datetime":
        try:
            got = [dt.datetime.strptime(g, "%B %d %Y %H:%M") for g in got]
            exp = [dt.datetime.strptime(e, "%B %d %Y %H:%M") for e in exp]
        except ValueError:
            return False

        def same(x: Any, y: Any) -> bool:
            return x == y
    elif match == "number":
        try:
            got = [float(g) for g in got]
            exp = [float(e) for e in exp]
        except ValueError:
            return False
        if tolerance is not None:
            tol = tolerance

            def same(x: Any, y: Any) -> bool:
                return abs(x - y) < tol
        else:

            def same(x: Any, y: Any) -> bool:
                return x == y
    elif match == "string":
        same = aw_fuzzy_match
    else:
        raise ValueError(f"unsupported match type {match!r}")
    if len(got) != len(exp):
        return False
    return all(any(same(g, e) for e in exp) for g in got)


def answer_score(
    dev: DeviceState, expected: list[str] | str, match: str = "string", tolerance: float | None = None
) -> float:
    """1.0 when an answer was given and `check_answer` accepts it, else 0.0 (AndroidWorld's IR verdict)."""
    if not dev.interaction_cache:
        return 0.0
    return 1.0 if check_answer(dev.interaction_cache, expected, match, tolerance) else 0.0


# -- the expert's view of an observation ---------------------------------------------------------------
class View:
    """An observation as the expert reads it: the element list plus goal, with lookups returning indices."""

    def __init__(self, elements: Iterable[UIElement], goal: str = ""):
        self.elements = list(elements)
        self.goal = goal

    def __len__(self) -> int:
        return len(self.elements)

    @property
    def app(self) -> str | None:
        """Package of the app in front (ignoring system UI and the keyboard)."""
        for e in self.elements:
            if e.package_name and e.package_name not in (SYSTEMUI, "com.google.android.inputmethod.latin"):
                return e.package_name
        return None

    @property
    def title(self) -> str | None:
        i = self.find(rid_suffix=":id/toolbar_title")
        return self.elements[i].text if i is not None else None

    def find_all(
        self,
        text: str | None = None,
        desc: str | None = None,
        contains: str | None = None,
        cls: str | None = None,
        rid: str | None = None,
        rid_suffix: str | None = None,
        editable: bool | None = None,
        clickable: bool | None = None,
        hint: str | None = None,
        regex: str | None = None,
    ) -> list[int]:
        out = []
        for i, e in enumerate(self.elements):
            if text is not None and e.text != text:
                continue
            if desc is not None and e.content_description != desc:
                continue
            if hint is not None and e.hint_text != hint:
                continue
            if (
                contains is not None
                and contains.lower() not in (e.text or "").lower()
                and contains.lower() not in (e.content_description or "").lower()
            ):
                continue
            if regex is not None and not re.search(regex, e.text or ""):
                continue
            if cls is not None and not (e.class_name or "").endswith(cls):
                continue
            if rid is not None and e.resource_name != rid:
                continue
            if rid_suffix is not None and not (e.resource_name or "").endswith(rid_suffix):
                continue
            if editable is not None and bool(e.is_editable) != editable:
                continue
            if clickable is not None and bool(e.is_clickable) != clickable:
                continue
            out.append(i)
        return out

    def find(self, **kw: Any) -> int | None:
        r = self.find_all(**kw)
        return r[0] if r else None

    def has(self, **kw: Any) -> bool:
        return self.find(**kw) is not None

    def el(self, i: int) -> UIElement:
        return self.elements[i]

    def texts(self) -> list[str]:
        return [e.text for e in self.elements if e.text]

    def scrollable(self) -> int | None:
        return (
            self.find(cls="RecyclerView")
            if self.find_all(cls="RecyclerView")
            else next((i for i, e in enumerate(self.elements) if e.is_scrollable), None)
        )


# -- action shorthands for experts -----------------------------------------------------------------------
def click(i: int) -> Action:
    return Action("click", index=i)


def long_press(i: int) -> Action:
    return Action("long_press", index=i)


def type_into(i: int, text: str, clear: bool = True) -> Action:
    return Action("input_text", index=i, text=text, clear_text=clear)


def scroll(direction: str, i: int | None = None) -> Action:
    return Action("scroll", direction=direction, index=i)


def back() -> Action:
    return Action("navigate_back")


def home() -> Action:
    return Action("navigate_home")


def open_app(name: str) -> Action:
    return Action("open_app", app_name=name)


def done() -> Action:
    return Action("status", goal_status="complete")


def answer(text: str) -> Action:
    return Action("answer", text=text)


def answer_once(mem: dict[str, Any], text: str) -> Action:
    """The `answer` action the first time (noted in `mem["answered"]`), `done` after that."""
    if mem.get("answered"):
        return done()
    mem["answered"] = True
    return answer(text)


def wait() -> Action:
    return Action("wait")


def scroll_to_find(
    view: View, mem: dict[str, Any], key: str, direction: str = "down", **find: Any
) -> Action | int:
    """Return the index of a matching element, or a scroll action that searches for it. Searches down
    first, then up, remembering in `mem[key]` the screens it has seen, so it never loops forever."""
    i = view.find(**find)
    if i is not None:
        mem.pop(key, None)
        return i
    lst = view.scrollable()
    state = mem.setdefault(key, {"dir": direction, "seen": [], "flips": 0})
    sig = tuple(view.texts())
    if sig in state["seen"][-1:]:  # the last scroll did not move: reverse
        state["dir"] = "up" if state["dir"] == "down" else "down"
        state["flips"] += 1
    state["seen"].append(sig)
    if state["flips"] > 2:
        raise LookupError(f"expert could not find element {find} on this screen")
    return scroll(state["dir"], lst)
