"""Config fields that carry their own checks: a default with its allowed range or choices beside it.

    @dataclasses.dataclass
    class GRPOConfig(LoopConfig):
        SECTION: ClassVar[str] = "grpo"  # the key prefix errors name
        lr: float = setting(1e-4, gt=0)  # Adam learning rate
        eps: float = setting(1e-4, ge=0)  # added to the std

        def __post_init__(self) -> None:
            check_fields(self)  # every field's range, and every float finite

`check_fields` refuses NaN and infinity in every float a config holds (also inside lists, tuples and maps),
whether or not the field gives a range, and checks each field's `setting` range or choices. An error is one
ValueError line naming the key (the class's SECTION and the field), the value and what was expected, e.g.
`grpo.eps=nan: expected a finite value >= 0` or `seed=-1: expected an integer >= 0`. Checks that relate two
fields, or that a range cannot say, stay in the config's own `__post_init__`, after `check_fields`.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import typing
from collections.abc import Callable, Sequence
from typing import Any

CHECK = "check"  # the dataclass field metadata key of a `setting`'s check


@dataclasses.dataclass(frozen=True)
class Range:
    """What a field allows: bounds (ge/gt below, le/lt above) and/or a set of choices."""

    ge: float | None = None
    gt: float | None = None
    le: float | None = None
    lt: float | None = None
    choices: tuple[Any, ...] | None = None

    def bounds(self) -> str:
        """The bounds as text: '>= 1', '> 0', 'in [0, 1]', 'in (0, 1]' ('' when there are none)."""
        low = (f"[{_num(self.ge)}" if self.ge is not None else f"({_num(self.gt)}"
               if self.gt is not None else None)
        high = (f"{_num(self.le)}]" if self.le is not None else f"{_num(self.lt)})"
                if self.lt is not None else None)
        if low and high:
            return f"in {low}, {high}"
        if low:
            return (">= " if low[0] == "[" else "> ") + low[1:]
        if high:
            return ("<= " if high[-1] == "]" else "< ") + high[:-1]
        return ""

    def allows(self, v: float) -> bool:
        return ((self.ge is None or v >= self.ge) and (self.gt is None or v > self.gt)
                and (self.le is None or v <= self.le) and (self.lt is None or v < self.lt))


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else repr(x)


def setting(default: Any = dataclasses.MISSING, *, factory: Callable[[], Any] | None = None,
            ge: float | None = None, gt: float | None = None, le: float | None = None,
            lt: float | None = None, choices: Sequence[Any] | None = None) -> Any:
    """A dataclass field with `default` (or `factory` for a mutable one) whose value `check_fields` keeps
    within the bounds (`ge` >=, `gt` >, `le` <=, `lt` <) and/or among `choices` (each element of a list
    value, for a list field)."""
    meta = {CHECK: Range(ge, gt, le, lt, tuple(choices) if choices is not None else None)}
    if factory is not None:
        return dataclasses.field(default_factory=factory, metadata=meta)
    return dataclasses.field(default=default, metadata=meta)


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _non_finite(value: Any) -> bool:
    """Whether `value` is, or holds (in lists, tuples, sets or map values), a NaN or infinite float."""
    if isinstance(value, float):
        return not math.isfinite(value)
    if isinstance(value, list | tuple | set | frozenset):
        return any(_non_finite(v) for v in value)
    if isinstance(value, dict):
        return any(_non_finite(v) for v in value.values())
    return False


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def check_value(key: str, value: Any, rng: Range | None = None, floating: bool = False) -> None:
    """Raise a ValueError `key=value: expected ...` when `value` is not finite or outside `rng` (`floating`:
    the key holds a float, whatever number it was given)."""
    bounds = rng.bounds() if rng is not None else ""
    if _non_finite(value):
        kind = "a finite value" if isinstance(value, float) else "finite values"
        raise ValueError(f"{key}={value!r}: expected {kind}{' ' + bounds if bounds else ''}")
    if rng is None:
        return
    if rng.choices is not None:
        items = value if isinstance(value, list | tuple) else [value]
        bad = [v for v in items if v not in rng.choices]
        if bad:
            raise ValueError(f"{key}={bad[0]!r}: expected one of {', '.join(map(str, rng.choices))}")
    if bounds and _is_number(value) and not rng.allows(value):
        kind = "an integer" if isinstance(value, int) and not floating else "a finite value"
        raise ValueError(f"{key}={value!r}: expected {kind} {bounds}")


def check_fields(cfg: Any, section: str | None = None) -> None:
    """Check every non-section field of dataclass `cfg`: finite floats everywhere, and each `setting`'s range
    or choices. Keys are named `section.field` (default section: the class's SECTION, '' for none)."""
    prefix = section if section is not None else getattr(cfg, "SECTION", "")
    hints = _hints(type(cfg))
    for f in dataclasses.fields(cfg):
        if dataclasses.is_dataclass(hints.get(f.name)):
            continue  # a nested section checks itself
        key = f"{prefix}.{f.name}" if prefix else f.name
        check_value(key, getattr(cfg, f.name), f.metadata.get(CHECK), hints.get(f.name) is float)


def float_fields(cls: type) -> list[str]:
    """The float fields of config dataclass `cls` (float, or a float inside a list, tuple, map or union)."""
    def has_float(t: Any) -> bool:
        return t is float or any(has_float(a) for a in typing.get_args(t))

    hints = _hints(cls)
    return [f.name for f in dataclasses.fields(cls) if has_float(hints[f.name])]
