"""Task params drawn by android_world's own generators, in the JSON form SimDroid's `reset` takes.

With the `android_world` package importable, `AndroidWorldGenerators().generate_params(name, seed)` does what
AndroidWorld's suite does for one instance (set the task class's device time, seed Python's `random` with the
instance seed, call `generate_random_params()`, store the seed under "seed") and returns the params made
JSON-safe: rows (dataclasses) as dicts of their fields, dates and times as ISO-8601 strings, enums by name,
tuples as lists. Passed as a suite's `backend` (`voyager_gym.suites.eval_suite(..., backend="androidworld")`),
it makes SimDroid's eval suite AndroidWorld's own, instance for instance, whatever SimDroid's generators do
(checked against android_world d9c569f: equal to the committed fixture for 114 of its 116 tasks; the other
two are not a function of the seed: MarkorCreateFolder reads the wall clock, MarkorTranscribeReceipt's
receipt comes from another random generator);
without android_world, SimDroid's generators draw the same params for 115 of its 116 tasks
(`tests/data/androidworld_params.json`, MarkorCreateFolder reading AndroidWorld's wall clock the exception).

This module imports only the standard library (android_world lazily), so `tools/export_androidworld_params.py`
can load it in an environment that has android_world but not this project's dependencies.
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
import hashlib
import random
from typing import Any


def json_safe(v: Any) -> Any:
    """A params value in JSON form (see the module docstring); an unknown kind of value is an error naming it,
    so a new kind is noticed rather than silently turned into a string."""
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    if isinstance(v, enum.Enum):
        return v.name
    if isinstance(v, (datetime.datetime, datetime.date, datetime.time)):
        return v.isoformat()
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        return {f.name: json_safe(getattr(v, f.name)) for f in dataclasses.fields(v)}
    if isinstance(v, dict):
        return {str(k): json_safe(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [json_safe(x) for x in v]
    mod = type(v).__module__
    if mod == "numpy" and hasattr(v, "item"):
        return v.item()
    if mod.startswith("PIL.") and hasattr(v, "tobytes"):
        digest = hashlib.sha256(v.tobytes()).hexdigest()
        return {"__image__": {"mode": v.mode, "size": list(v.size), "sha256": digest}}
    raise TypeError(f"no JSON encoding for {type(v).__module__}.{type(v).__name__}: {v!r:.80}")


class AndroidWorldGenerators:
    """A suite backend whose params come from android_world's task classes (its `android_world` family)."""

    def __init__(self) -> None:
        try:
            from android_world import registry
        except ImportError as e:
            raise ImportError(
                "params from AndroidWorld's own generators need the android_world package "
                "(google-research/android_world) importable; without it, SimDroid's generators draw the same "
                "params for 115 of its 116 tasks"
            ) from e
        reg = registry.TaskRegistry()
        self.classes: dict[str, Any] = dict(reg.get_registry(reg.ANDROID_WORLD_FAMILY))

    @property
    def task_names(self) -> list[str]:
        return sorted(self.classes)

    def generate_params(self, name: str, seed: int) -> dict[str, Any]:
        """AndroidWorld's params for instance seed `seed` of task `name`, JSON-safe."""
        return json_safe(self.draw(name, seed))

    def draw(self, name: str, seed: int) -> dict[str, Any]:
        """AndroidWorld's params for instance seed `seed` of task `name` as its generator returns them (rows
        as its dataclasses). Python's global `random` is seeded for the draw, as AndroidWorld's suite does,
        and restored afterwards."""
        cls = self.classes.get(name)
        if cls is None:
            raise KeyError(f"task {name!r} is not in android_world's registry ({len(self.classes)} tasks)")
        state = random.getstate()
        try:
            cls.set_device_time(None)
            random.seed(seed)
            params = cls.generate_random_params()
        finally:
            random.setstate(state)
        params["seed"] = seed
        return params
