"""Task params checked before an episode starts: a schema derived from the task's own generator.

A task's params are what its `generate_random_params(rng)` draws (AndroidWorld's shape, JSON-safe: strings,
numbers, booleans, None, lists, and dicts such as database rows). Rather than a hand-written schema per task,
`derive` reads one off `DRAWS` seeded draws of the generator: the keys every draw has are required, those
only some have are optional, and each value's kinds (nested through lists and dicts) are the ones the draws
gave, an int being accepted where a float is. `check` holds `reset(options={"params": ...})` to it, with
an error naming the key: a missing or unknown key, a value of another kind, a string longer than the goal
space (`MAX_GOAL_LEN`). The key `seed` (the instance seed, added by the backend) is an optional integer >= 0.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Callable
from typing import Any

import numpy as np

DRAWS = 32  # generator draws a schema is read from (the same schema as 3,000 draws for all 116 tasks)
MAX_STRING = 4000  # the goal space's length (voyager_gym.env.MAX_GOAL_LEN): no param string may exceed it
KIND_NAMES = {"none": "None", "bool": "bool", "int": "int", "float": "float", "str": "str", "list": "list",
              "dict": "dict"}


class ParamsError(ValueError):
    """Params that do not fit their task's schema; the message names the key."""


@dataclasses.dataclass
class Schema:
    """The kinds a value may have; for lists the schema of their items, for dicts their keys' schemas and
    which keys every draw had."""

    kinds: set[str] = dataclasses.field(default_factory=set)
    items: Schema | None = None  # None: never seen a non-empty list (any items)
    fields: dict[str, Schema] | None = None  # None: never seen a dict
    required: set[str] = dataclasses.field(default_factory=set)


_KINDS = {type(None): "none", bool: "bool", int: "int", float: "float", str: "str", list: "list",
          tuple: "list", dict: "dict"}


def kind(v: Any) -> str:
    """The JSON kind of a value: none, bool, int, float, str, list, dict (or its type's name)."""
    k = _KINDS.get(type(v))
    if k is not None:
        return k
    if v is None:
        return "none"
    if isinstance(v, bool | np.bool_):
        return "bool"
    if isinstance(v, int | np.integer):
        return "int"
    if isinstance(v, float | np.floating):
        return "float"
    if isinstance(v, str):
        return "str"
    if isinstance(v, list | tuple):
        return "list"
    if isinstance(v, dict):
        return "dict"
    return type(v).__name__


def derive(samples: list[Any]) -> Schema:
    """The schema of `samples` (values of one place in the params)."""
    s = Schema()
    dicts: list[dict] = []
    items: list[Any] = []
    for v in samples:
        k = kind(v)
        s.kinds.add(k)
        if k == "list":
            items.extend(v)
        elif k == "dict":
            dicts.append(v)
    if items:
        s.items = derive(items)
    if dicts:
        keys = sorted({key for d in dicts for key in d})
        s.fields = {key: derive([d[key] for d in dicts if key in d]) for key in keys}
        s.required = {key for key in keys if all(key in d for d in dicts)}
    return s


def task_schema(generate: Callable[[random.Random], dict[str, Any]], draws: int = DRAWS) -> Schema:
    """The params schema of a task from `draws` seeded draws of its generator, plus the optional `seed`."""
    s = derive([generate(random.Random(i)) for i in range(draws)])
    s.fields = dict(s.fields or {})
    s.fields.setdefault("seed", Schema({"int"}))
    s.required.discard("seed")
    return s


def _where(path: str) -> str:
    return f"params{path}"


def _expected(kinds: set[str]) -> str:
    return " or ".join(sorted(KIND_NAMES.get(k, k) for k in kinds))


def fits(schema: Schema, value: Any) -> bool:
    """Whether `value` fits `schema` (what `check` checks, without building the error: resets pay for it)."""
    k = kind(value)
    if k not in schema.kinds and not (k == "int" and "float" in schema.kinds):
        return False
    if k == "str":
        return len(value) <= MAX_STRING
    if k == "list":
        return schema.items is None or all(fits(schema.items, x) for x in value)
    if k == "dict" and schema.fields is not None:
        f = schema.fields
        if not schema.required <= value.keys() or any(key not in f for key in value):
            return False
        return all(fits(f[key], v) for key, v in value.items())
    return True


def check(schema: Schema, value: Any, task: str) -> None:
    """ParamsError naming the first key of `value` that does not fit `schema` (task `task`)."""
    seed = value.get("seed", 0) if isinstance(value, dict) else 0
    if not fits(schema, value) or (kind(seed) == "int" and seed < 0):
        _explain(schema, value, task, "")
        raise ParamsError(f"params do not fit the schema of task {task}")  # (_explain raises first)


def _explain(schema: Schema, value: Any, task: str, path: str) -> None:
    k = kind(value)
    ok = k in schema.kinds or (k == "int" and "float" in schema.kinds)
    if not ok:
        raise ParamsError(f"{_where(path)}={value!r:.60}: expected {_expected(schema.kinds)} for task "
                          f"{task}, got {KIND_NAMES.get(k, k)}")
    if k == "str" and len(value) > MAX_STRING:
        raise ParamsError(f"{_where(path)}: a string of {len(value):,} characters; expected at most "
                          f"{MAX_STRING:,} (the goal space's length) for task {task}")
    if k == "int" and path == "['seed']" and value < 0:
        raise ParamsError(f"{_where(path)}={value!r}: expected an integer >= 0 (the instance seed)")
    if k == "list" and schema.items is not None:
        for i, item in enumerate(value):
            _explain(schema.items, item, task, f"{path}[{i}]")
    if k == "dict" and schema.fields is not None:
        bad = sorted(str(key) for key in value if key not in schema.fields)
        if bad:
            known = ", ".join(sorted(schema.fields))
            raise ParamsError(f"unknown key(s) {bad} in {_where(path)} for task {task}; expected some of "
                              f"{known}")
        missing = sorted(schema.required - set(value))
        if missing:
            raise ParamsError(f"{_where(path)} lacks required key(s) {missing} for task {task} (its "
                              "generator always draws them)")
        for key, v in value.items():
            _explain(schema.fields[key], v, task, f"{path}[{key!r}]")
