"""Pictures of GRSD fork points: a successful and a failed rollout of one task instance side by side.

Each fork is drawn as two rows of screenshot thumbnails (teacher = successful rollout on top, failed rollout
below), the action under each thumbnail, the teacher step boxed in green and the failed step in red with the
screen similarities the detector measured (the layout of UI-Voyager's BrowserMaze figure), and, for forks
checked by branching, how often the current policy succeeded after the teacher's and after the failed action.
Reads the fork examples GRSD keeps in a run folder's latest checkpoint (`examples.load_run_forks`).
"""

from __future__ import annotations

import math
import textwrap
from pathlib import Path
from typing import Any

import numpy as np

from algos.buffer import Step, Trajectory

MAX_COLS = 8  # thumbnails per row; longer rollouts show a window around the fork step
TEACHER_COLOR = "#1a9850"
FAILED_COLOR = "#d73027"


def action_label(step: Step, width: int = 22) -> str:
    """A short text of a step's action (with the target element's text where it has one), wrapped."""
    a = step.action
    if a is None:
        return "(invalid action)"
    kind = a.get("action_type", "?")
    parts = [kind]
    idx = a.get("index")
    if idx is not None:
        el = step.ui_elements[idx] if 0 <= idx < len(step.ui_elements) else {}
        name = el.get("text") or el.get("content_description") or el.get("resource_name") or ""
        parts.append(f"[{idx}] {name}".strip())
    elif a.get("x") is not None:
        parts.append(f"({a['x']}, {a['y']})")
    for key in ("text", "app_name", "direction", "goal_status"):
        if a.get(key):
            parts.append(repr(a[key]) if key == "text" else str(a[key]))
    lines = textwrap.wrap(" ".join(parts), width)[:3]
    return "\n".join(lines)


def _window(n: int, at: int, cols: int) -> range:
    """`cols` consecutive indices of range(n) containing `at`, with the fork near the middle."""
    start = max(0, min(at - cols // 2 + 1, n - cols))
    return range(start, min(n, start + cols))


def _screen(step: Step) -> np.ndarray:
    px = step.thumbnail if step.thumbnail is not None else step.frame
    if px is None:
        return np.full((160, 72, 3), 235, np.uint8)  # no screenshot kept: a grey placeholder
    return px


def _sim(x: float) -> str:
    return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.3f}"


def branching_label(record: dict[str, Any]) -> str:
    """The fork's check by branching ("" if it was not checked): successes of K continuations each side."""
    k = record.get("branch_k")
    if not k:
        return ""
    t, f = record["teacher_wins"], record["failed_wins"]
    verdict = "verified" if t > f else "not verified"
    return f"branching: teacher {t}/{k} vs failed {f}/{k} ({verdict})"


def draw_fork(
    fig: Any, grid: Any, record: dict[str, Any], failed: Trajectory, teacher: Trajectory, cols: int = MAX_COLS
) -> None:
    """Draw one fork into `grid` (a 2 x cols matplotlib GridSpec slot) of `fig`."""
    rows = [("success (teacher)", teacher, record["teacher_step"], TEACHER_COLOR),
            ("failed", failed, record["failed_step"], FAILED_COLOR)]
    sub = grid.subgridspec(2, cols, hspace=0.3, wspace=0.08)
    for r, (label, traj, at, color) in enumerate(rows):
        idx = list(_window(len(traj.steps), at, cols))
        for c in range(cols):
            ax = fig.add_subplot(sub[r, c])
            ax.set_xticks([])
            ax.set_yticks([])
            if c >= len(idx):
                ax.axis("off")
                continue
            t = idx[c]
            step = traj.steps[t]
            ax.imshow(_screen(step))
            ax.set_xlabel(action_label(step), fontsize=6.5)
            title = f"step {t}"
            if t == at:
                for spine in ax.spines.values():
                    spine.set_edgecolor(color)
                    spine.set_linewidth(3.5)
                title += f"\nSSIM {_sim(record['sim_current'])}, next {_sim(record['sim_next'])}"
                ax.set_title(title, fontsize=7.5, color=color, fontweight="bold")
            else:
                for spine in ax.spines.values():
                    spine.set_edgecolor("#bbbbbb")
                ax.set_title(title, fontsize=7.5)
            if c == 0:
                ax.set_ylabel(f"{label}\n{'...' if t > 0 else ''}", fontsize=8, color=color)


def forks_figure(pairs: list[tuple[dict[str, Any], Trajectory, Trajectory]], cols: int = MAX_COLS) -> Any:
    """A matplotlib Figure with one block of two rows per fork in `pairs` ((record, failed, teacher))."""
    from matplotlib.figure import Figure  # no pyplot: works headless and leaves a notebook's backend alone

    if not pairs:
        raise ValueError("forks_figure got no forks to draw; expected at least one (record, failed, teacher)")
    thumb = _screen(pairs[0][2].steps[0])
    aspect = thumb.shape[0] / thumb.shape[1]
    w = 1.35 * cols
    cell_w = w * 0.93 / (cols + 0.08 * (cols - 1))  # one thumbnail's width on the page (inches)
    h_rows = 2 * (cell_w * aspect + 0.55)  # two rows of thumbnails with their titles and action text
    h_head = 0.8  # the heading line of each fork: task, fork steps, goal
    fig = Figure(figsize=(w, (h_rows + h_head) * len(pairs)))
    outer = fig.add_gridspec(2 * len(pairs), 1, height_ratios=[h_head, h_rows] * len(pairs), hspace=0.05)
    for i, (record, failed, teacher) in enumerate(pairs):
        head = fig.add_subplot(outer[2 * i])
        head.axis("off")
        title = (f"{record['task']} (iteration {record['iteration']}): fork at failed step "
                 f"{record['failed_step']} <-> teacher step {record['teacher_step']}")
        if branching_label(record):
            title += f"; {branching_label(record)}"
        goal = textwrap.shorten(teacher.goal, 16 * cols)
        head.text(-0.05, 0.0, f"{title}\n{goal}", fontsize=8.5, va="bottom", ha="left",
                  transform=head.transAxes)
        draw_fork(fig, outer[2 * i + 1], record, failed, teacher, cols)
    fig.subplots_adjust(left=0.06, right=0.99, bottom=0.03 / len(pairs), top=1 - 0.01 / len(pairs))
    return fig


def draw_run_forks(run_dir: str | Path, out: str | Path, n: int = 1, cols: int = MAX_COLS) -> Path:
    """Write a PNG of the `n` newest forks kept in `run_dir`'s latest checkpoint. Returns the path."""
    from algos.forks.examples import load_run_forks

    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    _, ex = load_run_forks(run_dir)
    fig = forks_figure(ex.pairs()[:n], cols)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=130)
    return out
