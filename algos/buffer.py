"""The trajectory buffer all algorithms read: groups (a task instance x G rollouts) of trajectories of steps.

Plain typed dataclasses, saved as one Parquet file (one row per step, trajectory and group columns repeated)
with atomic writes, and exported as a Hugging Face `datasets.Dataset` in TRL's prompt/completion form for SFT
(`to_sft_dataset`: one row per step) or in its conversational multi-turn form (`to_conversations`: one row per
trajectory, with ids, rewards and GRSD's fork annotations as columns), so others can reuse RFT and GRSD data.
Algorithms only read the buffer; they never write back into it.
"""

from __future__ import annotations

import dataclasses
import io
import itertools
import json
import math
import os
import tempfile
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from PIL import Image

from algos.prompt import PolicyInput, SeenElements, render_prompt
from voyager_gym.actions import Action
from voyager_gym.observation import BoundingBox, UIElement

FORMAT_VERSION = "1"
ROWS_PER_ROW_GROUP = 512  # steps per Parquet row group (bounds writer memory; thumbnails are small)
_PNG_MAGIC = b"\x89PNG"


def _same(a: Any, b: Any) -> bool:
    """Equality that treats NaN as equal to NaN and compares arrays by dtype, shape and values."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return (isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and a.dtype == b.dtype
                and a.shape == b.shape and bool(np.array_equal(a, b)))
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return a == b


def _fields_equal(a: Any, b: Any) -> bool:
    """Every field equal, except those marked compare=False (derived ones, such as `Step.seen`)."""
    return type(a) is type(b) and all(
        _same(getattr(a, f.name), getattr(b, f.name)) for f in dataclasses.fields(a) if f.compare)


_ELEMENT_FIELDS = tuple(f.name for f in dataclasses.fields(UIElement))
_BOX_FIELDS = tuple(f.name for f in dataclasses.fields(BoundingBox))


def element_dict(e: UIElement) -> dict[str, Any]:
    """`UIElement.to_dict()`'s result without `dataclasses.asdict`'s recursive copying (~10x faster)."""
    d = {k: getattr(e, k) for k in _ELEMENT_FIELDS}
    for k in ("bbox", "bbox_pixels"):
        b = d[k]
        if b is not None:
            d[k] = {f: getattr(b, f) for f in _BOX_FIELDS}
    return d


class _Prompt:
    """`Step.prompt`: the prompt text (`algos.prompt.render_prompt`). A rollout stores None and the text is
    rendered from the step's own input on first read: most policies never read it, and rendering it for every
    step cost more than the policy's forward pass."""

    def __get__(self, obj: Any, owner: Any = None) -> str:
        if obj is None:
            raise AttributeError("prompt")  # no class-level default: the field stays required
        p = obj.__dict__.get("_prompt")
        if p is None:
            p = obj.__dict__["_prompt"] = render_prompt(obj.policy_input())
        return p

    def __set__(self, obj: Any, value: str | None) -> None:
        obj.__dict__["_prompt"] = value


class _Elements:
    """`Step.ui_elements`: kept as the `UIElement`s the policy saw (shared with the observation, not copied);
    read as `UIElement.to_dict()` dicts (converted on first read), written as either."""

    def __get__(self, obj: Any, owner: Any = None) -> Any:
        if obj is None:
            return ()  # the field's default: no elements
        d = obj.__dict__.get("_ui_dicts")
        if d is None:
            d = obj.__dict__["_ui_dicts"] = [element_dict(e) for e in obj.elements]
        return d

    def __set__(self, obj: Any, value: Any) -> None:
        obj.__dict__["_elements"] = tuple(e if isinstance(e, UIElement) else UIElement.from_dict(e)
                                         for e in value)
        obj.__dict__.pop("_ui_dicts", None)


@dataclasses.dataclass(eq=False)
class Step:
    """One policy step: what the policy saw (prompt, elements, screenshot), what it wrote, what happened."""

    group_id: str
    traj_id: str
    t: int
    goal: str
    history: list[str]  # previous actions as JSON text
    prompt: str | None = _Prompt()  # type: ignore[assignment]  # None: rendered from the step on first read
    response: str
    action: dict[str, Any] | None  # the parsed action dict, None if the response was invalid
    valid: bool
    invalid_reason: str | None = None
    ui_elements: list[dict[str, Any]] = _Elements()  # type: ignore[assignment]  # UIElement.to_dict() form
    # (pass UIElements or dicts; `elements` gives the UIElements)
    screen_key: str = ""
    thumbnail: np.ndarray | None = None  # small uint8 (H, W, 3) screenshot
    frame: np.ndarray | None = None  # full frame, where kept
    reward: float = 0.0
    done: bool = False
    logprob: float = 0.0  # behaviour log-prob of the response
    value: float | None = None
    step_max: int = 10
    # what the episode's earlier screens showed (`algos.prompt.seen_elements`): derived from the trajectory's
    # steps, so not stored (a loaded buffer recomputes it) and not compared
    seen: tuple[UIElement, ...] = dataclasses.field(default=(), compare=False)
    acted: tuple[str | None, ...] = dataclasses.field(default=(), compare=False)  # PolicyInput.acted, too

    __eq__ = _fields_equal
    __hash__ = None  # type: ignore[assignment]

    @property
    def elements(self) -> tuple[UIElement, ...]:
        """The screen's elements as the policy saw them."""
        return self.__dict__["_elements"]

    def policy_input(self) -> PolicyInput:
        """Rebuild what the policy conditioned on, so algorithms can re-score or re-train on this step (the
        same element objects: a policy's per-element feature caches hit)."""
        pixels = self.frame if self.frame is not None else self.thumbnail
        return PolicyInput(goal=self.goal, elements=self.elements, history=list(self.history), pixels=pixels,
                           step=self.t, max_steps=self.step_max, seen=self.seen, acted=self.acted)


@dataclasses.dataclass(eq=False)
class Trajectory:
    """One episode of a task instance. `score` is NaN when the episode errored (excluded from statistics)."""

    traj_id: str
    group_id: str
    task: str
    instance_seed: int
    params: dict[str, Any]  # JSON-able task parameters
    goal: str
    steps: list[Step] = dataclasses.field(default_factory=list)
    score: float = 0.0
    success: bool = False
    errored: bool = False
    env_seed: int = 0

    __eq__ = _fields_equal
    __hash__ = None  # type: ignore[assignment]

    @property
    def length(self) -> int:
        return len(self.steps)

    @property
    def total_reward(self) -> float:
        return float(sum(s.reward for s in self.steps))


@dataclasses.dataclass
class Group:
    """G rollouts of one task instance: the unit GRPO advantages and GRSD fork points are computed over."""

    group_id: str
    task: str
    instance_seed: int
    params: dict[str, Any]
    trajectories: list[Trajectory] = dataclasses.field(default_factory=list)

    @property
    def successes(self) -> list[Trajectory]:
        return [tr for tr in self.trajectories if tr.success and not tr.errored]

    @property
    def failures(self) -> list[Trajectory]:
        """Non-errored trajectories that did not succeed (errored ones are neither success nor failure)."""
        return [tr for tr in self.trajectories if not tr.success and not tr.errored]

    @property
    def has_both_outcomes(self) -> bool:
        return bool(self.successes) and bool(self.failures)


def _check_group(g: Group) -> None:
    """Reject groups whose trajectories or steps name another group, trajectory, task or goal."""
    ids = [tr.traj_id for tr in g.trajectories]
    if len(set(ids)) != len(ids):
        raise ValueError(f"group {g.group_id!r} has repeated trajectory ids {ids}; expected unique ids")
    for tr in g.trajectories:
        for name in ("group_id", "task", "instance_seed", "params"):
            if getattr(tr, name) != getattr(g, name):
                raise ValueError(f"trajectory {tr.traj_id!r} has {name}={getattr(tr, name)!r}; "
                                 f"expected its group's {getattr(g, name)!r}")
        for s in tr.steps:
            for name, want in (("group_id", g.group_id), ("traj_id", tr.traj_id), ("goal", tr.goal)):
                if getattr(s, name) != want:
                    raise ValueError(f"step t={s.t} of trajectory {tr.traj_id!r} has {name}="
                                     f"{getattr(s, name)!r}; expected {want!r}")


# -- array <-> bytes: lossless PNG for uint8 images, .npy bytes for anything else ----------------------------
def _encode_array(a: np.ndarray | None) -> bytes | None:
    if a is None:
        return None
    if a.dtype == np.uint8 and (a.ndim == 2 or (a.ndim == 3 and a.shape[2] in (3, 4))) and a.size:
        buf = io.BytesIO()
        Image.fromarray(np.ascontiguousarray(a)).save(buf, format="PNG", compress_level=1)
        return buf.getvalue()
    buf = io.BytesIO()
    np.save(buf, a, allow_pickle=False)
    return buf.getvalue()


def _decode_array(b: bytes | None) -> np.ndarray | None:
    if b is None:
        return None
    if b[:4] == _PNG_MAGIC:
        with Image.open(io.BytesIO(b)) as im:
            return np.asarray(im).copy()
    return np.load(io.BytesIO(b), allow_pickle=False)


_SCHEMA = pa.schema([
    ("kind", pa.string()),  # "step", "empty_trajectory" (a trajectory with no steps) or "empty_group"
    ("group_id", pa.string()), ("task", pa.string()), ("instance_seed", pa.int64()), ("params", pa.string()),
    ("traj_id", pa.string()), ("goal", pa.string()), ("score", pa.float64()), ("success", pa.bool_()),
    ("errored", pa.bool_()), ("env_seed", pa.int64()),
    ("t", pa.int64()), ("history", pa.list_(pa.string())), ("prompt", pa.string()), ("response", pa.string()),
    ("action", pa.string()), ("valid", pa.bool_()), ("invalid_reason", pa.string()),
    ("ui_elements", pa.string()), ("screen_key", pa.string()), ("thumbnail", pa.binary()),
    ("frame", pa.binary()), ("reward", pa.float64()), ("done", pa.bool_()), ("logprob", pa.float64()),
    ("value", pa.float64()), ("step_max", pa.int64()),
], metadata={"voyager_gym.buffer_format": FORMAT_VERSION})
_GROUP_COLS = ("group_id", "task", "instance_seed")
_TRAJ_COLS = ("traj_id", "goal", "score", "success", "errored", "env_seed")
_STEP_COLS = ("t", "history", "prompt", "response", "valid", "invalid_reason", "screen_key", "reward", "done",
              "logprob", "value", "step_max")


def _dumps(x: Any) -> str:
    return json.dumps(x, ensure_ascii=False)


def _rows(groups: Iterable[Group]) -> Iterator[dict[str, Any]]:
    """One row per step; trajectories without steps and groups without trajectories get a placeholder row."""
    for g in groups:
        grow = {c: getattr(g, c) for c in _GROUP_COLS} | {"params": _dumps(g.params)}
        if not g.trajectories:
            yield {"kind": "empty_group", **grow}
        for tr in g.trajectories:
            trow = grow | {c: getattr(tr, c) for c in _TRAJ_COLS}
            if not tr.steps:
                yield {"kind": "empty_trajectory", **trow}
            for s in tr.steps:
                yield {"kind": "step", **trow, **{c: getattr(s, c) for c in _STEP_COLS},
                       "action": None if s.action is None else _dumps(s.action),
                       "ui_elements": _dumps(s.ui_elements), "thumbnail": _encode_array(s.thumbnail),
                       "frame": _encode_array(s.frame)}


class TrajectoryBuffer:
    """An ordered collection of groups, with queries, statistics, Parquet persistence and an SFT export."""

    def __init__(self, groups: Iterable[Group] = ()):
        self._groups: list[Group] = []
        self._ids: set[str] = set()
        self.extend(groups)

    def add(self, group: Group) -> None:
        """Append a group; its ids must be new (group ids in the buffer, trajectory ids in the group)."""
        _check_group(group)
        if group.group_id in self._ids:
            raise ValueError(f"group_id {group.group_id!r} is already in the buffer; expected a new id")
        self._ids.add(group.group_id)
        self._groups.append(group)

    def extend(self, groups: Iterable[Group]) -> None:
        for g in groups:
            self.add(g)

    @property
    def groups(self) -> list[Group]:
        return list(self._groups)

    def __len__(self) -> int:
        return len(self._groups)

    def __iter__(self) -> Iterator[Group]:
        return iter(self._groups)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TrajectoryBuffer) and self._groups == other._groups

    __hash__ = None  # type: ignore[assignment]

    def trajectories(self, include_errored: bool = False) -> list[Trajectory]:
        return [tr for g in self._groups for tr in g.trajectories if include_errored or not tr.errored]

    def steps(self, include_errored: bool = False, valid_only: bool = False) -> list[Step]:
        return [s for tr in self.trajectories(include_errored) for s in tr.steps if s.valid or not valid_only]

    def filter(self, fn: Callable[[Trajectory], bool]) -> TrajectoryBuffer:
        """A new buffer with the trajectories `fn` keeps (same objects); groups left empty are dropped."""
        kept = (dataclasses.replace(g, trajectories=[tr for tr in g.trajectories if fn(tr)])
                for g in self._groups)
        return TrajectoryBuffer(g for g in kept if g.trajectories)

    def prefixed(self, prefix: str) -> TrajectoryBuffer:
        """A new buffer whose group ids (in groups, trajectories and steps) start with `prefix`: groups of
        another run's buffer, whose rollout seeds may repeat this run's ids, can then join this run's."""
        def one(g: Group) -> Group:
            gid = prefix + g.group_id
            trajs = [dataclasses.replace(tr, group_id=gid,
                                         steps=[dataclasses.replace(s, group_id=gid) for s in tr.steps])
                     for tr in g.trajectories]
            return dataclasses.replace(g, group_id=gid, trajectories=trajs)

        return TrajectoryBuffer(one(g) for g in self._groups)

    def stats(self) -> dict[str, Any]:
        """Counts and rates; errored episodes are counted but excluded from success and score means."""
        ok = self.trajectories()
        by_task: dict[str, list[Trajectory]] = {}
        for tr in ok:
            by_task.setdefault(tr.task, []).append(tr)
        steps = self.steps()
        return {
            "groups": len(self._groups),
            "episodes": len(ok),
            "errored": sum(tr.errored for g in self._groups for tr in g.trajectories),
            "steps": len(steps),
            "invalid_rate": float(np.mean([not s.valid for s in steps])) if steps else 0.0,
            "success_rate": float(np.mean([tr.success for tr in ok])) if ok else 0.0,
            "mean_score": float(np.mean([tr.score for tr in ok])) if ok else 0.0,
            "mean_length": float(np.mean([tr.length for tr in ok])) if ok else 0.0,
            "mixed_groups": sum(g.has_both_outcomes for g in self._groups),
            "success_rate_by_task": {k: float(np.mean([tr.success for tr in v]))
                                     for k, v in sorted(by_task.items())},
            "episodes_by_task": {k: len(v) for k, v in sorted(by_task.items())},
        }

    # -- persistence ----------------------------------------------------------------------------------------
    def save(self, path: str | Path) -> None:
        """Write Parquet atomically: a temp file in the same folder, fsync, then os.replace over `path`."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as f:
                with pq.ParquetWriter(f, _SCHEMA, compression="zstd") as writer:
                    rows = _rows(self._groups)
                    while chunk := list(itertools.islice(rows, ROWS_PER_ROW_GROUP)):
                        writer.write_batch(pa.RecordBatch.from_pylist(chunk, _SCHEMA))
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        try:  # make the rename itself durable (POSIX); not possible on every platform
            dir_fd = os.open(path.parent, os.O_RDONLY)
            try:
                os.fsync(dir_fd)
            finally:
                os.close(dir_fd)
        except OSError:
            pass

    @classmethod
    def load(cls, path: str | Path) -> TrajectoryBuffer:
        """Read a buffer written by `save`, restoring every field exactly."""
        table = pq.read_table(path)
        version = (table.schema.metadata or {}).get(b"voyager_gym.buffer_format", b"").decode()
        if version != FORMAT_VERSION:
            raise ValueError(f"{path}: buffer format {version!r}; expected {FORMAT_VERSION!r} "
                             "(a file written by TrajectoryBuffer.save)")
        cols = {name: table.column(name).to_pylist() for name in table.column_names}
        groups: dict[str, Group] = {}
        trajs: dict[tuple[str, str], Trajectory] = {}
        for i, kind in enumerate(cols["kind"]):
            r = {name: col[i] for name, col in cols.items()}
            g = groups.get(r["group_id"])
            if g is None:
                g = Group(r["group_id"], r["task"], r["instance_seed"], json.loads(r["params"]))
                groups[g.group_id] = g
            if kind == "empty_group":
                continue
            key = (r["group_id"], r["traj_id"])
            tr = trajs.get(key)
            if tr is None:
                tr = Trajectory(group_id=g.group_id, task=g.task, instance_seed=g.instance_seed,
                                params=json.loads(r["params"]), **{c: r[c] for c in _TRAJ_COLS})
                trajs[key] = tr
                g.trajectories.append(tr)
            if kind == "step":
                tr.steps.append(Step(group_id=g.group_id, traj_id=tr.traj_id, goal=tr.goal,
                                     **{c: r[c] for c in _STEP_COLS},
                                     action=None if r["action"] is None else json.loads(r["action"]),
                                     ui_elements=json.loads(r["ui_elements"]),
                                     thumbnail=_decode_array(r["thumbnail"]),
                                     frame=_decode_array(r["frame"])))
        for tr in trajs.values():  # what each step's earlier screens showed, as the rollout kept it
            seen = SeenElements()
            for st in tr.steps:
                st.seen, st.acted = seen.view(st.elements), seen.acted
                seen.add(st.elements, Action.from_dict(st.action).to_json() if st.action is not None else "")
        return cls(groups.values())

    # -- export --------------------------------------------------------------------------------------------
    def to_sft_dataset(self, trajectories: Iterable[Trajectory] | None = None,
                       with_images: bool = False) -> Any:
        """A `datasets.Dataset` in TRL's prompt/completion form (loss on the completion): one row per step of
        `trajectories` (default: every non-errored trajectory), columns prompt, completion, task, and
        `images` (a list with the step's frame or thumbnail, empty if it has none) when `with_images`."""
        import datasets

        trs = self.trajectories() if trajectories is None else list(trajectories)
        steps = [(tr, s) for tr in trs for s in tr.steps]
        data: dict[str, list[Any]] = {"prompt": [s.prompt for _, s in steps],
                                      "completion": [s.response for _, s in steps],
                                      "task": [tr.task for tr, _ in steps]}
        features = {k: datasets.Value("string") for k in data}
        if with_images:
            pix = [s.frame if s.frame is not None else s.thumbnail for _, s in steps]
            for p in pix:
                if p is not None and (p.dtype != np.uint8 or p.ndim != 3 or p.shape[2] != 3):
                    raise ValueError(f"images must be uint8 (H, W, 3) screenshots; got {p.dtype} {p.shape}")
            data["images"] = [[] if p is None else [{"bytes": _encode_array(p), "path": None}] for p in pix]
            features["images"] = datasets.List(datasets.Image())
        return datasets.Dataset.from_dict(data, features=datasets.Features(features))

    def to_conversations(self, trajectories: Iterable[Trajectory] | None = None, form: str = "text",
                         with_images: bool = False, forks: Iterable[Any] = (), system: str | None = None,
                         tool_env: type | None = None) -> Any:
        """A `datasets.Dataset` in TRL's conversational form (SFTTrainer reads its `messages`; loss on the
        assistant turns with `assistant_only_loss`): one row per trajectory (default: every non-errored one).

        Turns: a system message, then the goal and first screen (the user), then per step the policy's turn
        and what came back, in `voyager_gym.integrations.trl`'s texts (the next screen, "Invalid action:
        ...", the end of the episode). `form="text"`: the assistant writes the step's response (`Reason: ...
        Action: {json}`) and the next screen is a user turn. `form="tools"`: the assistant calls the action as
        a tool (`tool_calls`, arguments as JSON text) and the next screen is a tool message, as in a GRPO
        rollout with `VoyagerToolEnv` (a response that did not parse stays text, and the screen after it a
        user turn), with a `tools` column (the JSON schemas of `tool_env`'s tools, default all of
        `VoyagerToolEnv`'s) so the prompt lists the same tools. `with_images`: each screen's frame or
        thumbnail, where kept, goes in the `images` column with an image part in its turn.

        Columns: messages, group_id, trajectory_id, task, instance_seed, goal, reward (the trajectory's
        score), success, num_steps, and forks: GRSD's fork points (`algos.forks.examples.find_forks` results)
        that involve the trajectory, each {role ("failed" or "teacher"), step, other_trajectory_id,
        other_step, correction (the teacher step's response), sim_current, sim_next}, empty where none."""
        import datasets

        from voyager_gym.integrations.trl import observation_text, result_text, tool_schemas

        if form not in ("text", "tools"):
            raise ValueError(f"form={form!r}: expected 'text' (responses as text) or 'tools' (tool calls)")
        trs = self.trajectories() if trajectories is None else list(trajectories)
        if system is None:
            if form == "text":
                from algos.prompt import SYSTEM as system
            else:
                from voyager_gym.integrations.trl import SYSTEM_PROMPT as system
        notes = _fork_notes(forks)
        schemas = _dumps(tool_schemas(tool_env)) if form == "tools" else None
        rows: list[dict[str, Any]] = []
        for tr in trs:
            images: list[Any] = []

            def turn(role: str, text: str, step: Step | None, images: list[Any] = images,
                     **extra: Any) -> dict[str, Any]:
                """A message; with images, content parts and the step's screenshot (where kept) first."""
                if not with_images:
                    return {"role": role, "content": text, **extra}
                pix = None if step is None else (step.frame if step.frame is not None else step.thumbnail)
                parts = [{"type": "text", "text": text}]
                if pix is not None:
                    if pix.dtype != np.uint8 or pix.ndim != 3 or pix.shape[2] != 3:
                        raise ValueError(f"images must be uint8 (H, W, 3) screenshots; got {pix.dtype} "
                                         f"{pix.shape}")
                    images.append({"bytes": _encode_array(pix), "path": None})
                    parts.insert(0, {"type": "image", "text": None})
                return {"role": role, "content": parts, **extra}

            msgs = [turn("system", system, None)]
            if tr.steps:
                s0 = tr.steps[0]
                msgs.append(turn("user", observation_text(s0.elements, 0, s0.step_max, tr.goal), s0))
            for i, s in enumerate(tr.steps):
                nxt = tr.steps[i + 1] if i + 1 < len(tr.steps) else None
                status = s.action.get("goal_status") if s.done and s.action and s.valid else None
                out = result_text(() if nxt is None else nxt.elements, s.t + 1, s.step_max,
                                  invalid=s.invalid_reason, status=status,
                                  truncated=nxt is None and status is None)
                if form == "tools" and s.action is not None:
                    name = s.action["action_type"]
                    args = {k: v for k, v in s.action.items() if k != "action_type"}
                    call = {"type": "function", "function": {"name": name, "arguments": _dumps(args)}}
                    msgs.append(turn("assistant", "", None, tool_calls=[call]))
                    msgs.append(turn("tool", out, nxt, name=name))
                else:
                    msgs.append(turn("assistant", s.response, None))
                    if form == "tools" or nxt is not None:
                        msgs.append(turn("user", out, nxt))
            row = {"messages": msgs, "group_id": tr.group_id, "trajectory_id": tr.traj_id, "task": tr.task,
                   "instance_seed": tr.instance_seed, "goal": tr.goal, "reward": float(tr.score),
                   "success": tr.success, "num_steps": tr.length,
                   "forks": notes.get((tr.group_id, tr.traj_id), [])}
            if with_images:
                row["images"] = images
            if form == "tools":
                row["tools"] = schemas
            rows.append(row)
        return datasets.Dataset.from_list(rows, features=_conversation_features(form, with_images))


def _fork_notes(forks: Iterable[Any]) -> dict[tuple[str, str], list[dict[str, Any]]]:
    """Per (group id, trajectory id), the forks (`algos.forks.examples.ForkExample`s) it is the failed or
    teacher side of, as `to_conversations`' `forks` column entries."""
    notes: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for f in forks:
        correction = f.teacher.steps[f.teacher_step].response
        common = {"correction": correction, "sim_current": float(f.sim_current),
                  "sim_next": float(f.sim_next)}
        sides = (("failed", f.failed, f.failed_step, f.teacher, f.teacher_step),
                 ("teacher", f.teacher, f.teacher_step, f.failed, f.failed_step))
        for role, me, my_step, other, other_step in sides:
            notes.setdefault((me.group_id, me.traj_id), []).append(
                {"role": role, "step": int(my_step), "other_trajectory_id": other.traj_id,
                 "other_step": int(other_step), **common})
    return notes


def _conversation_features(form: str, with_images: bool) -> Any:
    """The Arrow schema of `to_conversations`' rows (explicit, so empty lists and None fields type the same
    in every dataset)."""
    import datasets

    text = datasets.Value("string")
    content: Any = text
    if with_images:
        content = datasets.List({"type": text, "text": text})
    message: dict[str, Any] = {"role": text, "content": content}
    if form == "tools":
        message["tool_calls"] = datasets.List({"type": text, "function": {"name": text, "arguments": text}})
        message["name"] = text
    fork = {"role": text, "step": datasets.Value("int64"), "other_trajectory_id": text,
            "other_step": datasets.Value("int64"), "correction": text,
            "sim_current": datasets.Value("float64"),
            "sim_next": datasets.Value("float64")}
    features: dict[str, Any] = {
        "messages": datasets.List(message), "group_id": text, "trajectory_id": text, "task": text,
        "instance_seed": datasets.Value("int64"), "goal": text, "reward": datasets.Value("float64"),
        "success": datasets.Value("bool"), "num_steps": datasets.Value("int64"), "forks": datasets.List(fork)}
    if with_images:
        features["images"] = datasets.List(datasets.Image())
    if form == "tools":
        features["tools"] = text
    return datasets.Features(features)
