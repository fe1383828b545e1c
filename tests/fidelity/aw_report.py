"""Per-task fidelity measurements against android_world, and the table docs/fidelity.md shows.

`measure_task` compares one SimDroid task with AndroidWorld's task of the same name:
- params: AndroidWorld's generator and SimDroid's, seeded alike, give equal params (JSON form);
- goal: the goal an agent reads is equal (for information-retrieval tasks, after AndroidWorld's setup rewords
  its dates);
- start state: AndroidWorld's `initialize_task` runs on SimDroid's start state without complaint, and what its
  setup would have written (files, texts, contacts, clipboard, settings, database rows; `aw_start`) is what
  SimDroid's start state holds;
- verdicts: AndroidWorld's `is_successful` and SimDroid's agree at the start, after each expert step and on
  the near misses (`aw_verdicts`).
`DELIBERATE` lists the differences SimDroid keeps on purpose, with the reason; anything else measured is a
failure of tests/fidelity/test_androidworld_verdicts.py and of tools/androidworld_fidelity.py.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import random
from typing import Any

from tests.fidelity.aw_verdicts import aw_classes, aw_params, run_instance

IR_FAMILIES = ("SimpleCalendar", "Sports", "Tasks", "Notes")
_IR_NOISE = (
    "the relevant rows are AndroidWorld's; the noise rows around them are SimDroid's own draws "
    "(AndroidWorld's counts and exclusion rules)"
)
_BROWSER = (
    "Download/task.html holds the page's kind and seed, from which Chrome draws the page; AndroidWorld's "
    "holds the page's HTML"
)

# Measured differences kept on purpose: task -> {what: reason}. `what` is "params", "goal", or "start: <part>"
# (a part of `aw_start.compare_start`). Information-retrieval tasks' "start: <table> noise rows" (the rows
# differ, AndroidWorld's relevant rows all among SimDroid's) are kept for every such task.
DELIBERATE: dict[str, dict[str, str]] = {
    "MarkorCreateFolder": {
        "params": "AndroidWorld names the folder after the host's wall clock when it draws the params, which "
        "no seed reproduces; SimDroid draws the time from the seed",
        "goal": "the goal names the folder (same template)",
    },
    "MarkorTranscribeReceipt": {
        "params": "AndroidWorld's `img` param (the receipt image, which its setup removes from the params) "
        "is not kept; SimDroid draws the receipt again from the seed (every other param equal)",
    },
    "RetroPlaylistDuration": {
        "start: file texts": "the songs' artists and lengths: AndroidWorld's setup of this task does not "
        "seed `random` (it skips the base class's initialize_task), so its draws depend on whatever drew "
        "before; "
        "SimDroid draws its own from the instance seed (AW's rules: 47.5 minutes split, 3-5 minute noise)",
    },
    **{f"Browser{k}": {"start: file texts": _BROWSER} for k in ("Draw", "Maze", "Multiply")},
}

_SAME_NAME = "a new name equal to the old (AW's draw, never seen) leaves an instance no state passes"

# Differences no column measures (the apps, not the rules), in words, by task.
NOTES: dict[str, str] = {
    "CameraTakePhoto": "the camera's mode is drawn; AW leaves it as the emulator had it",
    "CameraTakeVideo": "the camera's mode is drawn; AW leaves it as the emulator had it",
    "ClockStopWatchPausedVerify": "AW's rule reads the screen's elements: SimDroid's, converted",
    "ClockStopWatchRunning": "AW's rule reads the screen's elements: SimDroid's, converted",
    "ClockTimerEntry": "AW's rule reads the screen's elements: SimDroid's, converted",
    "ContactsNewContactDraft": "AW's rule reads the screen's elements: SimDroid's, converted",
    "BrowserDraw": "AW's rule reads the screen's elements: SimDroid's, converted",
    "BrowserMaze": "AW's rule reads the screen's elements: SimDroid's, converted",
    "BrowserMultiply": "AW's rule reads the screen's elements: SimDroid's, converted",
    "MarkorDeleteNewestNote": "note times are modification times; AW's `ls -au` prints access times",
    "MarkorAddNoteHeader": _SAME_NAME,
    "MarkorChangeNoteContent": _SAME_NAME,
    "SimpleSmsSendReceivedAddress": "a second contact named like the first is redrawn (AW's instance is "
    "ambiguous; about 1 in 1,000)",
    "MarkorTranscribeVideo": "the clips are frames of text, drawn as pixels only; AW's are MP4s",
    "MarkorTranscribeReceipt": "the receipt is a picture file of its text lines",
    "SaveCopyOfReceiptTaskEval": "the receipt is a picture file of its text lines",
    "ExpenseAddMultipleFromGallery": "the images are picture files of their text lines",
    "RecipeAddMultipleRecipesFromImage": "the image is a picture file of its text lines",
    "RetroCreatePlaylist": "the playing queue starts empty (AW leaves it as Retro had it)",
    "RetroPlayingQueue": "the playing queue starts empty (AW leaves it as Retro had it)",
    "RetroPlaylistDuration": "exact song lengths (AW's MP3s may be a frame, ~26 ms, off)",
    "RetroSavePlaylist": "the playing queue starts empty; the save picker is drawn as a Retro screen",
    "VlcCreateTwoPlaylists": "about 1% of instances name both playlists alike (AW's draw): 0.5 at most",
    "OsmAndFavorite": "a drawn map of Liechtenstein; favourites in the default group only",
    "OsmAndMarker": "a drawn map of Liechtenstein",
    "OsmAndTrack": "a drawn map of Liechtenstein; routes saved as straight segments",
    "SimpleCalendarAddRepeatingEvent": "series repeat forever; the event list shows a series once",
}


def is_ir(name: str) -> bool:
    from android_world.task_evals.information_retrieval import information_retrieval

    return issubclass(aw_classes()[name], information_retrieval.InformationRetrieval)


def deliberate(name: str, what: str) -> str | None:
    """The reason a measured difference `what` of task `name` is kept, or None when it is not expected."""
    d = DELIBERATE.get(name, {})
    if what in d:
        return d[what]
    if what.startswith("start: ") and what.endswith(" noise rows") and is_ir(name):
        return _IR_NOISE
    return None


def aw_goal(name: str, seed: int) -> str:
    """The goal an agent reads on AndroidWorld for instance `seed`: for an information-retrieval task, after
    setup fills the task definition and rewords dates (the part of `initialize_task` that needs no device)."""
    params = aw_params(name, seed)
    task = aw_classes()[name](params)
    if is_ir(name):
        from android_world.task_evals.information_retrieval import information_retrieval, proto_utils

        state = random.getstate()
        try:
            random.seed(params["seed"])
            proto_utils.initialize_proto(task.task, task.params)
            information_retrieval._maybe_replace_date(task.params)  # noqa: SLF001 (its setup's rewording)
        finally:
            random.setstate(state)
    return task.goal


@dataclasses.dataclass
class TaskMeasure:
    task: str
    param_seeds: int = 0
    params_same: int = 0
    goal_same: int = 0
    verdict_seeds: int = 0
    init_ok: int = 0
    start_same: int = 0  # instances whose every compared part agrees
    start_parts: dict[str, int] = dataclasses.field(default_factory=dict)  # part -> instances that differ
    start_examples: dict[str, str] = dataclasses.field(default_factory=dict)
    checks: int = 0
    agree: int = 0
    near: int = 0
    near_flips: int = 0  # near misses whose verdict differs from the full run's
    examples: list[str] = dataclasses.field(default_factory=list)  # disagreements and setup errors

    def differences(self) -> dict[str, str]:
        """Every measured difference: what -> a description."""
        out: dict[str, str] = {}
        if self.params_same < self.param_seeds:
            out["params"] = f"{self.param_seeds - self.params_same} of {self.param_seeds} seeds differ"
        if self.goal_same < self.param_seeds:
            out["goal"] = f"{self.param_seeds - self.goal_same} of {self.param_seeds} seeds differ"
        if self.init_ok < self.verdict_seeds:
            out["setup"] = f"AW's initialize_task failed on {self.verdict_seeds - self.init_ok} instances"
        for part, n in self.start_parts.items():
            out[f"start: {part}"] = f"{n} of {self.verdict_seeds} instances: {self.start_examples[part]}"
        if self.agree < self.checks:
            out["verdicts"] = f"{self.checks - self.agree} of {self.checks} disagree: {self.examples[:3]}"
        return out

    def unexplained(self) -> dict[str, str]:
        return {k: v for k, v in self.differences().items() if deliberate(self.task, k) is None}


def measure_task(
    backend: Any, name: str, verdict_seeds: range, param_seeds: range, near: bool = True
) -> TaskMeasure:
    """All four columns for task `name` (see the module docstring)."""
    import numpy as np

    from voyager_gym import catalogue
    from voyager_gym.androidworld_params import json_safe

    m = TaskMeasure(name)
    ir = is_ir(name)
    for s in param_seeds:
        m.param_seeds += 1
        sim = backend.generate_params(name, s)
        m.params_same += json_safe(aw_params(name, s)) == json_safe(sim)
        sim_goal = backend.reset(name, sim, np.random.default_rng(0)) if ir else catalogue.goal(name, sim)
        m.goal_same += aw_goal(name, s) == sim_goal
    for s in verdict_seeds:
        r = run_instance(backend, name, s, near=near)
        m.verdict_seeds += 1
        m.init_ok += not r.init_error
        if r.init_error:
            m.examples.append(f"seed {s}: setup: {r.init_error.strip().splitlines()[-1][:120]}")
        diff = dict(r.start.differences) if r.start else {}
        if r.relevant is not None and r.start is not None:  # IR: the relevant rows must all be there
            for table, (found, aw_n, sim_n) in r.start.rows.items():
                if f"{table} rows" in diff and found >= r.relevant and aw_n == sim_n:
                    text = diff.pop(f"{table} rows")
                    diff[f"{table} noise rows"] = f"{text}: AW's {r.relevant} relevant rows all there"
        m.start_same += not diff
        for part, text in diff.items():
            m.start_parts[part] = m.start_parts.get(part, 0) + 1
            m.start_examples.setdefault(part, text)
        full = next((c for c in r.checks if c.label.endswith("(full run)")), r.checks[0])
        for c in r.checks:
            m.checks += 1
            m.agree += c.agrees
            if c.label.startswith("near miss"):
                m.near += 1
                m.near_flips += c.sim != full.sim
            if not c.agrees and len(m.examples) < 6:
                m.examples.append(f"seed {s} {c.label}: SimDroid {c.sim}, AW {c.aw} {c.error[:80]}")
    return m


# -- the table ----------------------------------------------------------------------------------------------
def _count(n: int, of: int) -> str:
    return f"{n:,}/{of:,}"


def _start_cell(m: TaskMeasure) -> str:
    if not m.verdict_seeds:
        return "-"
    parts = ", ".join(f"{p} differ {n}/{m.verdict_seeds}" for p, n in sorted(m.start_parts.items()))
    setup = "" if m.init_ok == m.verdict_seeds else f"; AW's setup failed {m.verdict_seeds - m.init_ok}x"
    return f"same {_count(m.start_same, m.verdict_seeds)}" + (f" ({parts})" if parts else "") + setup


def _notes_cell(m: TaskMeasure) -> str:
    words = []
    for what in m.differences():
        reason = deliberate(m.task, what)
        words.append(f"{what}: {reason}" if reason else f"{what}: NOT EXPLAINED")
    if m.task in NOTES:
        words.append(NOTES[m.task])
    return "; ".join(words) or "-"


def _column(measures: list[TaskMeasure], what: str) -> str:
    """'k of n tasks' for params or goal, naming the tasks that differ and saying whether on purpose."""
    differ = [m.task for m in measures if what in m.differences()]
    text = f"{len(measures) - len(differ)} of {len(measures)} tasks"
    if differ:
        why = "on purpose" if all(deliberate(t, what) for t in differ) else "NOT ALL EXPLAINED"
        text += f" ({', '.join(differ)} differ {why}, see their rows)"
    return text


def render(measures: list[TaskMeasure], meta: dict[str, Any]) -> str:
    """The generated part of docs/fidelity.md: provenance, totals, the per-task table and the differences."""
    tot = lambda attr: sum(getattr(m, attr) for m in measures)  # noqa: E731
    unexplained = {m.task: m.unexplained() for m in measures if m.unexplained()}
    lines = [
        f"Generated {meta['date']} at commit {meta['commit']} by `{meta['command']}`, against android_world "
        f"{meta['aw_commit']}: params and goals over instance seeds 0-{meta['param_seeds'] - 1}, "
        "start states "
        f"and verdicts over instance seeds 0-{meta['verdict_seeds'] - 1} (each instance: AW's params, the "
        "untouched start, every step of SimDroid's expert, and near misses of its final state).",
        "",
        f"- Params equal for every seed: {_column(measures, 'params')}; the goal the agent reads: "
        f"{_column(measures, 'goal')}.",
        "- AW's `initialize_task` ran on SimDroid's start state: "
        f"{_count(tot('init_ok'), tot('verdict_seeds'))} "
        f"instances; start state as AW's setup leaves it (the parts compared): "
        f"{_count(tot('start_same'), tot('verdict_seeds'))} instances, the rest differing only where the "
        "table "
        "says why.",
        f"- Verdicts agree: {_count(tot('agree'), tot('checks'))} (of them {tot('near'):,} on near misses, "
        f"{tot('near_flips'):,} of which change SimDroid's verdict from the full run's).",
        "- Unexplained differences: "
        + ("none." if not unexplained else "; ".join(f"{t}: {', '.join(d)}" for t, d in unexplained.items())),
        "",
        "| Task | Params equal | Goal equal | Start state | Verdicts agree | Differences and notes |",
        "|---|---|---|---|---|---|",
    ]
    for m in measures:
        lines.append(
            f"| {m.task} | {_count(m.params_same, m.param_seeds)} | {_count(m.goal_same, m.param_seeds)} | "
            f"{_start_cell(m)} | {_count(m.agree, m.checks)} | {_notes_cell(m)} |"
        )
    return "\n".join(lines) + "\n"


def today() -> str:
    return dt.date.today().isoformat()
