"""Run AndroidWorld's own `is_successful` on SimDroid's device state and compare it with SimDroid's verdict.

For one task instance (a task name and an instance seed):
1. AndroidWorld's params are drawn by its own generator, seeded as its suite seeds it, and SimDroid is reset
   with them (their JSON form), so both judge the same instance.
2. AndroidWorld's task object is initialized on the fake device (`aw_device`) over SimDroid's start state:
   whatever its `initialize_task` reads back (rows before the task, files, messages) comes from SimDroid, and
   whatever it would write is recorded, not applied.
3. Both verdicts are taken at the untouched start, after every step of SimDroid's expert (partial runs, then
   the full run), and on near misses: the expert's final state changed in one small way each (see
   `near_misses`).

Needs android_world importable (and android_env, absl, immutabledict, dm_env); see docs/fidelity.md.
"""

from __future__ import annotations

import copy
import dataclasses
import random
import traceback
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from tests.fidelity.aw_device import FakeEnv, World, patched_androidworld
from tests.fidelity.aw_start import StartComparison, compare_start, replay


def androidworld_missing() -> str | None:
    """Why android_world's real task code cannot run here, or None when it can."""
    try:
        import android_world
        from android_world import registry  # noqa: F401
        from android_world.env import adb_utils  # noqa: F401
        from android_world.task_evals.common_validators import sqlite_validators  # noqa: F401
    except ImportError as e:
        return (
            f"android_world (google-research/android_world) and its requirements are not importable ({e}); "
            "see docs/fidelity.md for the command that runs this suite"
        )
    if "aw_standin" in str(getattr(android_world, "__file__", "")):
        return "the importable android_world is this project's test stand-in, not AndroidWorld"
    return None


_GENERATORS: Any = None


def _generators() -> Any:
    global _GENERATORS
    if _GENERATORS is None:
        from voyager_gym.androidworld_params import AndroidWorldGenerators

        _GENERATORS = AndroidWorldGenerators()
    return _GENERATORS


def aw_classes() -> dict[str, type]:
    return _generators().classes


def aw_params(name: str, seed: int) -> dict[str, Any]:
    """AndroidWorld's params for instance seed `seed`, drawn as its suite draws them (rows as dataclasses)."""
    return _generators().draw(name, seed)


@dataclasses.dataclass
class Check:
    """One verdict pair: where it was taken, SimDroid's score, AndroidWorld's (None when its code raised)."""

    label: str
    sim: float
    aw: float | None
    error: str = ""

    @property
    def agrees(self) -> bool:
        return self.aw is not None and abs(self.sim - self.aw) < 1e-9


@dataclasses.dataclass
class InstanceResult:
    task: str
    seed: int
    checks: list[Check]
    init_error: str = ""  # AndroidWorld's initialize_task rejected SimDroid's start state
    start: StartComparison | None = None  # AndroidWorld's start state (from its setup's writes) vs SimDroid's
    relevant: int | None = None  # information-retrieval tasks: the rows of AW's relevant state

    @property
    def disagreements(self) -> list[Check]:
        return [c for c in self.checks if not c.agrees]


_FACTORY: Any = None


def factory_device() -> Any:
    """A factory-fresh SimDroid device (what AndroidWorld's setup is replayed on)."""
    global _FACTORY
    if _FACTORY is None:
        from voyager_gym.backends.sim.phone import Phone

        phone = Phone()
        phone.reset()
        _FACTORY = phone.dev.snapshot()
    return _FACTORY


class Judge:
    """A SimDroid backend, the fake device over it and AndroidWorld's task object for one instance."""

    def __init__(self, backend: Any):
        self.backend = backend
        self.world = World(backend)
        self.env = FakeEnv(self.world)
        self.task: Any = None

    def start(self, name: str, seed: int) -> str:
        """Reset SimDroid with AndroidWorld's params and initialize AndroidWorld's task over its state; return
        the error text when AndroidWorld's initialization fails ('' when it does not)."""
        params = aw_params(name, seed)
        from voyager_gym.androidworld_params import json_safe

        self.backend.reset(name, json_safe(params), np.random.default_rng(0))
        self.world.writes.clear()
        self.world.setup_rows.clear()
        self.world.fresh()
        self.task = aw_classes()[name](copy.deepcopy(params))
        state = random.getstate()
        self.world.initializing = True
        try:
            with patched_androidworld(self.world):
                self.task.initialize_task(self.env)
        except Exception:  # noqa: BLE001 (any failure of AW's setup on SimDroid's state is reported)
            self.task.initialized = True
            return traceback.format_exc(limit=3)
        finally:
            self.world.initializing = False
            self.world.setup_rows.clear()
            self.world.fresh()
            random.setstate(state)
        return ""

    def check(self, label: str) -> Check:
        sim = float(self.backend.score())
        self.world.fresh()
        try:
            with patched_androidworld(self.world):
                aw = float(self.task.is_successful(self.env))
            return Check(label, sim, aw)
        except Exception as e:  # noqa: BLE001
            return Check(label, sim, None, f"{type(e).__name__}: {e}")


def relevant_rows(task: Any) -> int | None:
    """How many rows an information-retrieval task's relevant state puts in its app (None for other tasks)."""
    definition = getattr(task, "task", None)
    if definition is None or not hasattr(definition, "relevant_state"):
        return None
    n = 0
    for _, app in definition.relevant_state.state.ListFields():
        for _, value in app.ListFields():
            if not hasattr(value, "ListFields") and not isinstance(value, (str, bytes, int, float)):
                n += len(value)  # a repeated field: the app's rows
    return n


def run_instance(backend: Any, name: str, seed: int, near: bool = True) -> InstanceResult:
    """The untouched start, each step of the expert's run, and the near misses of its final state."""
    from voyager_gym.backends.sim.expert import run_expert  # noqa: F401 (the expert's episode rules)

    judge = Judge(backend)
    init_error = judge.start(name, seed)
    start_dev = backend.phone.dev.snapshot()
    dbs = judge.world.database_files()
    start = compare_start(replay(factory_device(), judge.world.writes, dbs), backend.phone.dev, dbs)
    res = InstanceResult(name, seed, [], init_error, start, relevant_rows(judge.task))
    res.checks.append(judge.check("start"))
    max_steps = backend.task_info(name)["max_steps"]
    for step in range(1, max_steps + 1):
        backend.observe(pixels=False)
        a = backend.expert_action()
        if a.action_type == "status":
            break
        backend.execute(a)
        res.checks.append(judge.check(f"step {step}"))
    res.checks[-1].label += " (full run)" if len(res.checks) > 1 else ""
    if near:
        final = backend.snapshot()
        for label, mutate in near_misses(backend.phone.dev, start_dev):
            backend.restore(final, np.random.default_rng(0))
            if mutate(backend.phone.dev) is False:
                continue
            backend.phone.invalidate()
            res.checks.append(judge.check(f"near miss: {label}"))
        backend.restore(final, np.random.default_rng(0))
    return res


# -- near misses --------------------------------------------------------------------------------------------
def near_misses(dev: Any, start: Any) -> Iterator[tuple[str, Callable[[Any], Any]]]:
    """Small changes to the device state `dev` (an expert's final state; `start` is the state it started
    from), each a (label, mutate(dev)) pair. They are generic (any task): the answer given, the newest rows of
    every table, the newest file, folders, contacts, settings and clipboard the run changed, the newest SMS,
    the foreground app and the clock."""
    yield from _answer_misses(dev)
    yield from _row_misses(dev)
    yield from _file_misses(dev)
    yield from _sms_misses(dev)
    yield from _change_misses(dev, start)
    yield "home screen in front", _home
    yield "6 minutes later", lambda d: d.advance(6 * 60 * 1000)


def _change_misses(dev: Any, start: Any) -> Iterator[tuple[str, Callable[[Any], Any]]]:
    """Undo or bend what the run changed besides files, rows and messages."""
    for d in sorted(dev.dirs - start.dirs):
        yield f"new folder {d.rsplit('/', 1)[-1]} removed", lambda x, d=d: x.remove(d)
        yield f"new folder {d.rsplit('/', 1)[-1]} renamed", lambda x, d=d: (x.remove(d), x.mkdir(d + "_"))
    for key, value in sorted(dev.settings.items()):
        if start.settings.get(key) != value:
            yield f"setting {key} back to {start.settings.get(key)}", _setting(key, start.settings.get(key))
    if dev.contacts and dev.contacts != start.contacts:
        yield "newest contact removed", lambda x: x.contacts.pop()
        yield "newest contact's phone one digit off", _contact_phone
        for what, v in _text_variants(dev.contacts[-1]["name"]):
            yield f"newest contact's name {what}", _contact_name(v)
    if dev.clipboard != start.clipboard and dev.clipboard:
        for what, v in _text_variants(dev.clipboard):
            yield f"clipboard {what}", _setter("clipboard", v)


def _setting(key: str, value: Any) -> Callable[[Any], None]:
    def f(d: Any) -> None:
        d.settings[key] = value

    return f


def _contact_phone(d: Any) -> None:
    p = d.contacts[-1]["phone"]
    d.contacts[-1]["phone"] = p[:-1] + ("1" if p[-1:] != "1" else "2")


def _contact_name(v: str) -> Callable[[Any], None]:
    def f(d: Any) -> None:
        c = d.contacts[-1]
        c["name"] = v
        c["first"], _, c["last"] = v.strip().partition(" ")

    return f


def _home(dev: Any) -> None:
    from voyager_gym.backends.sim.device import LAUNCHER

    dev.foreground = LAUNCHER


def _text_variants(s: str) -> list[tuple[str, str]]:
    """Ways to change a text a little: padding, case, a typo, a truncation."""
    out = [
        ("padded with spaces", f"  {s}  "),
        ("upper-cased", s.upper()),
        ("with a trailing CR LF", s + "\r\n"),
    ]
    if len(s) >= 2:
        out.append(("its last character dropped", s[:-1]))
        out.append(("one character changed", s[:-1] + ("x" if s[-1] != "x" else "y")))
    if len(s) >= 10:
        out.append(("its last fifth dropped", s[: len(s) * 4 // 5]))
    return out


def _answer_misses(dev: Any) -> Iterator[tuple[str, Callable[[Any], Any]]]:
    ans = dev.interaction_cache
    if not ans:
        return
    for what, v in _text_variants(ans):
        yield f"answer {what}", _setter("interaction_cache", v)
    yield "answer with an extra comma part", _setter("interaction_cache", ans + ", x")
    parts = [p.strip() for p in ans.split(",")]
    if len(parts) > 1:
        yield "answer missing its last part", _setter("interaction_cache", ", ".join(parts[:-1]))
        yield "answer with a part repeated", _setter("interaction_cache", ", ".join(parts[:-1] + parts[:1]))
    for i, p in enumerate(parts):
        try:
            x = float(p)
        except ValueError:
            continue
        for delta in (1, -1, 9.99, 10):
            q = list(parts)
            q[i] = f"{x + delta:.6f}".rstrip("0").rstrip(".")
            yield f"answer part {i} {delta:+g}", _setter("interaction_cache", ", ".join(q))
    yield "no answer", _setter("interaction_cache", "")


def _setter(attr: str, value: Any) -> Callable[[Any], None]:
    return lambda d: setattr(d, attr, value)


def _row_misses(dev: Any) -> Iterator[tuple[str, Callable[[Any], Any]]]:
    for table, rows in sorted(dev.db.items()):
        if not rows:
            continue
        last = rows[-1]
        for key, value in last.items():
            if isinstance(value, str) and value:
                for what, v in _text_variants(value):
                    yield f"{table}: newest row's {key} {what}", _row_set(table, key, v)
            elif isinstance(value, (int, float)) and not isinstance(value, bool):
                yield f"{table}: newest row's {key} + 1", _row_set(table, key, value + 1)
        yield f"{table}: newest row removed", lambda d, t=table: d.db[t].pop()
        yield (
            f"{table}: newest row duplicated (new id)",
            lambda d, t=table: d.db[t].append(_copy_row(d.db[t])),
        )


def _copy_row(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """A copy of the newest row under a fresh id (every integer key named like an id)."""
    row = copy.deepcopy(rows[-1])
    for k, v in row.items():
        if isinstance(v, int) and (k.lower() == "id" or k.lower().endswith(("_id", "id"))):
            row[k] = max(r.get(k, 0) for r in rows) + 1
    return row


def _row_set(table: str, key: str, value: Any) -> Callable[[Any], None]:
    def f(d: Any) -> None:
        d.db[table][-1][key] = value

    return f


def _file_misses(dev: Any) -> Iterator[tuple[str, Callable[[Any], Any]]]:
    if not dev.files:
        return
    path = max(dev.files, key=lambda p: (dev.files[p].mtime_ms, p))
    content = dev.files[path].content
    yield "newest file removed", lambda d: d.remove(path)
    yield "newest file renamed", lambda d: d.files.__setitem__(path + "_", d.files.pop(path))
    # Only text an agent types: files an app writes in a format (GPX, HTML, playlists) are not edited.
    if content and not content.lstrip().startswith("<") and len(content) < 5000:
        for what, v in _text_variants(content):
            yield f"newest file's text {what}", _file_set(path, v)


def _file_set(path: str, content: str) -> Callable[[Any], None]:
    def f(d: Any) -> None:
        d.files[path].content = content

    return f


def _sms_misses(dev: Any) -> Iterator[tuple[str, Callable[[Any], Any]]]:
    sent = [i for i, m in enumerate(dev.sms) if m["box"] == "sent"]
    if not sent:
        return
    i = max(sent, key=lambda k: (dev.sms[k]["time_ms"], k))
    m = dev.sms[i]
    for what, v in _text_variants(m["body"]):
        yield f"newest sent SMS body {what}", _sms_set(i, "body", v)
    a = m["address"]
    yield "newest sent SMS address with dashes", _sms_set(i, "address", f"{a[:-7]}-{a[-7:-4]}-{a[-4:]}")
    yield "newest sent SMS address without +1", _sms_set(i, "address", a[2:] if a.startswith("+1") else a)
    yield (
        "newest sent SMS address one digit off",
        _sms_set(i, "address", a[:-1] + ("1" if a[-1] != "1" else "2")),
    )
    yield "newest sent SMS 6 minutes older", _sms_set(i, "time_ms", m["time_ms"] - 6 * 60 * 1000)


def _sms_set(i: int, key: str, value: Any) -> Callable[[Any], None]:
    def f(d: Any) -> None:
        d.sms[i][key] = value

    return f
