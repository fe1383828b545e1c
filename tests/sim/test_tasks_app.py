"""Tasks app (org.tasks): verifier near-misses for its questions and the list, sort and completion UI."""

import datetime as dt

import numpy as np
import pytest

from voyager_gym.actions import Action
from voyager_gym.backends.sim.apps.tasks_app import PKG, tasks

NAMES = [
    "TasksCompletedTasksForDate",
    "TasksDueOnDate",
    "TasksHighPriorityTasks",
    "TasksHighPriorityTasksDueOnDate",
    "TasksIncompleteTasksOnDate",
]


def start(backend, name, seed=5):
    params = backend.generate_params(name, seed)
    backend.reset(name, params, np.random.default_rng(0))
    return backend.task, backend.phone.dev


@pytest.mark.parametrize("name", NAMES)
def test_answer_near_misses(backend, name):
    task, dev = start(backend, name)
    titles = [t["title"] for t in task.targets()]
    assert len(tasks(dev)) == 20 + len(titles)
    dev.interaction_cache = ", ".join(reversed(titles))  # order does not matter
    assert task.is_successful(dev) == 1.0
    dev.interaction_cache = ", ".join(titles + ["Water Plants"])  # one too many
    assert task.is_successful(dev) == 0.0
    dev.interaction_cache = ", ".join(titles[:-1]) or "Water Plants"  # one missing / wrong
    assert task.is_successful(dev) == 0.0
    dev.interaction_cache = ""
    assert task.is_successful(dev) == 0.0


def test_noise_never_fits_the_question(backend):
    for seed in range(10):
        task, dev = start(backend, "TasksHighPriorityTasks", seed)
        assert [t["title"] for t in tasks(dev) if t["importance"] == 0] == [task.params["task_title"]]
        task, dev = start(backend, "TasksIncompleteTasksOnDate", seed)
        limit = task.last_day()
        fits = sorted(
            t["title"]
            for t in tasks(dev)
            if not t["completed"]
            and np.datetime64(t["dueDate"], "ms").astype("datetime64[D]").item() <= limit
        )
        assert fits == sorted(t["title"] for t in task.targets())  # the three drawn at setup


def _due(t):
    return np.datetime64(t["dueDate"], "ms").astype("datetime64[D]").item()


def test_completed_for_date_noise_and_targets(backend):
    """The tasks due on the date are the three targets, all completed (on `completed_date`); no noise task is
    due that day, completed or not."""
    for seed in range(10):
        task, dev = start(backend, "TasksCompletedTasksForDate", seed)
        due = [t for t in tasks(dev) if _due(t) == task.day]
        assert sorted(t["title"] for t in due) == sorted(t["title"] for t in task.targets())
        done = {np.datetime64(t["completed"], "ms").astype("datetime64[D]").item() for t in due}
        assert done == {task.done_day}


def test_high_priority_due_on_date_noise(backend):
    for seed in range(10):
        task, dev = start(backend, "TasksHighPriorityTasksDueOnDate", seed)
        fits = [t["title"] for t in tasks(dev) if t["importance"] == 0 and _due(t) == task.day]
        assert fits == [task.params["title"]]
        assert len(tasks(dev)) == 21


def test_due_next_week_count(backend):
    """Six tasks are due Monday 16 to Sunday 22 October, none of them noise; the answer is their count,
    matched as a number."""
    for seed in range(5):
        task, dev = start(backend, "TasksDueNextWeek", seed)
        week = [t for t in tasks(dev) if dt.date(2023, 10, 16) <= _due(t) <= dt.date(2023, 10, 22)]
        assert len(week) == 6 and len(tasks(dev)) == 26
        assert {t["title"] for t in week} == {t["title"] for t in task.targets()}
    for text, want in [("6", 1.0), ("6.0", 1.0), ("5", 0.0), ("7", 0.0), ("six", 0.0), ("", 0.0)]:
        dev.interaction_cache = text
        assert task.is_successful(dev) == want, text


def _click(backend, **find):
    node = backend.phone.find(**find)
    assert node is not None, find
    backend.execute(Action("click", x=node.center[0], y=node.center[1]))


def test_sort_by_priority_and_complete_a_task(backend):
    task, dev = start(backend, "TasksHighPriorityTasks")
    backend.execute(Action("open_app", app_name="tasks app"))
    assert dev.foreground == PKG
    assert backend.phone.find(text="High priority") is None
    _click(backend, desc="Sort")
    _click(backend, text="Priority")
    headers = [n.text for n in backend.phone.element_nodes() if n.rid == f"{PKG}:id/header"]
    assert headers[0] == "High priority"
    title = task.params["task_title"]
    row = backend.phone.find(text=title)
    box = next(
        n
        for n in backend.phone.element_nodes()
        if n.rid == f"{PKG}:id/completeBox" and n.bounds[1] <= row.center[1] <= n.bounds[3]
    )
    backend.execute(Action("click", x=box.center[0], y=box.center[1]))
    assert next(t for t in tasks(dev) if t["title"] == title)["completed"] > 0
    assert backend.phone.find(text=title) is None  # completed tasks are hidden by default
    _click(backend, desc="More options")
    _click(backend, text="Show completed")
    seen = False
    for _ in range(8):  # the Completed section is at the end of the list
        seen = seen or backend.phone.find(text="Completed") is not None
        backend.execute(Action("scroll", direction="down"))
    assert seen


def test_open_task_shows_priority_and_notes(backend):
    task, dev = start(backend, "TasksHighPriorityTasks")
    backend.execute(Action("open_app", app_name="Tasks"))
    _click(backend, desc="Search")
    q = next(n for n in backend.phone.element_nodes() if n.editable)
    backend.execute(Action("input_text", x=q.center[0], y=q.center[1], text=task.params["task_title"]))
    hit = next(n for n in backend.phone.element_nodes() if n.rid == f"{PKG}:id/title")
    assert hit.text == task.params["task_title"]
    backend.execute(Action("click", x=hit.center[0], y=hit.center[1]))
    high = backend.phone.find(desc="High priority")
    assert high is not None and high.checked
    assert backend.phone.find(text=task.params["notes"]) is not None
