"""A TEST DOUBLE of the `android_world` package, driven by SimDroid: no emulator, no adb, no Android.

It exists so that `AndroidWorldBackend` (voyager_gym/backends/androidworld.py) can be tested end to end on
machines without an emulator. It is part of the tests, not of the library: `from tests import aw_standin` with
the repository root on `sys.path` (as under pytest). `_site/android_world/` holds a small package laid out
with AndroidWorld's real module paths and names (`env/env_launcher.py` load_and_setup_env, `env/interface.py`
State / AsyncEnv / AsyncAndroidEnv, `env/json_action.py` JSONAction, `env/representation_utils.py` UIElement /
BoundingBox, `registry.py` TaskRegistry, `task_evals/task_eval.py` TaskEval) with the same signatures and the
behaviour the backend relies on; underneath, the "emulator" is a SimDroid phone and the tasks are SimDroid's
tasks wrapped as TaskEvals. Nothing here talks to a device, and results obtained with it say nothing about the
real AndroidWorld apps.

The stand-in is importable as `android_world` only inside `installed()`, which puts `_site` first on
`sys.path` and refuses to do so when a real `android_world` is importable (unless `allow_shadowing=True`,
which warns). On exit the stand-in's modules leave `sys.modules` and whatever was there before returns.

Failures are injected with `Faults` (per controller, i.e. per env): the n-th call of a device operation raises
`EmulatorError`, as a crashed emulator or a lost adb connection would.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib.util
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path

SITE_DIR = Path(__file__).resolve().parent / "_site"
MODULE = "android_world"


class EmulatorError(RuntimeError):
    """An injected device failure (what a dead emulator, adb or gRPC error looks like to the backend)."""


@dataclasses.dataclass
class Faults:
    """Failures to inject into one stand-in device. Each field is the 1-based call number (counted per
    device since the faults were set) at which that operation raises `EmulatorError`; None: never.
    `persistent`: every later call fails too (the emulator is gone), not only the n-th."""

    load: bool = False  # load_and_setup_env cannot reach the emulator
    execute_action: int | None = None  # AsyncEnv.execute_action (every action type but status)
    get_state: int | None = None  # AsyncEnv.get_state
    initialize_task: int | None = None  # TaskEval.initialize_task
    is_successful: int | None = None  # TaskEval.is_successful
    tear_down: int | None = None  # TaskEval.tear_down
    persistent: bool = False

    def trips(self, op: str, call: int) -> bool:
        at = getattr(self, op)
        if at is None:
            return False
        return call >= at if self.persistent else call == at


_default_faults: list[Faults] = [Faults()]


def default_faults() -> Faults:
    """The faults a newly created stand-in device starts with (set by `installed(faults=...)`)."""
    return dataclasses.replace(_default_faults[-1])


def _spec_origin(name: str) -> str | None:
    """Where `import name` would load from, without importing it (None: not importable)."""
    mod = sys.modules.get(name)
    if mod is not None:
        return getattr(mod, "__file__", None) or repr(mod)
    if name in sys.modules:  # sys.modules[name] is None: imports of it are blocked
        return None
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    return spec.origin or ", ".join(spec.submodule_search_locations or []) or name


def _is_standin(origin: str) -> bool:
    return origin.startswith(str(SITE_DIR))


def _pop_modules() -> dict[str, object]:
    names = [k for k in sys.modules if k == MODULE or k.startswith(MODULE + ".")]
    return {k: sys.modules.pop(k) for k in names}


@contextlib.contextmanager
def installed(faults: Faults | None = None, allow_shadowing: bool = False) -> Iterator[Path]:
    """Make the stand-in importable as `android_world` for the duration of the block.

    Raises RuntimeError if a real `android_world` is importable (it is never shadowed silently); with
    `allow_shadowing=True` the stand-in takes precedence inside the block and a warning says so. `faults`
    are the failures each device created inside the block starts with. Yields the stand-in's sys.path root.
    """
    origin = _spec_origin(MODULE)
    if origin is not None and not _is_standin(origin):
        msg = (
            f"a real android_world is importable from {origin}; the SimDroid stand-in will not shadow it. "
            "Use the real package, or pass allow_shadowing=True to test against the stand-in anyway."
        )
        if not allow_shadowing:
            raise RuntimeError(msg)
        warnings.warn(msg.replace("will not shadow it", "shadows it inside this block"), stacklevel=3)
    saved = _pop_modules()
    site = str(SITE_DIR)
    sys.path.insert(0, site)
    _default_faults.append(faults or Faults())
    importlib.invalidate_caches()
    try:
        yield SITE_DIR
    finally:
        _default_faults.pop()
        while site in sys.path:
            sys.path.remove(site)
        _pop_modules()
        sys.modules.update(saved)  # type: ignore[arg-type]
        importlib.invalidate_caches()


__all__ = ["SITE_DIR", "EmulatorError", "Faults", "default_faults", "installed"]
