"""Tasks app (org.tasks) information-retrieval questions: tasks due on a date, high-priority tasks and
incomplete tasks due by a date. As in AndroidWorld, the target tasks are seeded among 20 random tasks drawn so
that none of them also fits the question; `answer` is checked against their titles.
"""

from __future__ import annotations

import datetime as dt
import random
from typing import Any

from voyager_gym.actions import Action
from voyager_gym.backends.sim.apps.tasks_app import PKG, make_task, tasks
from voyager_gym.backends.sim.device import START_TIME, DeviceState
from voyager_gym.backends.sim.tasks import ir_vocab, vocab
from voyager_gym.backends.sim.tasks.base import (
    View,
    answer_once,
    back,
    click,
    done,
    open_app,
    register_task,
    scroll,
)
from voyager_gym.backends.sim.tasks.common import (
    SeededQuestion,
    parse_time,
)

TODAY = START_TIME.date()
UTC = dt.UTC

# AndroidWorld's random noise tasks: a title and (half the time) its note.
NOISE = {
    "Grocery Shopping": "Don't forget milk, eggs, and bread. Also need to pick up snacks for the kids.",
    "Finish Project Proposal": "Deadline is Friday. Need to finalize budget and timeline sections.",
    "Schedule Dentist Appointment": "Teeth cleaning overdue. Call Dr. Smith's office.",
    "Water Plants": "Check moisture level before watering. Fertilize succulents.",
    "Meal Prep for the Week": (
        "Make a grocery list based on planned meals. Cook chicken and chop veggies on Sunday."
    ),
    "Research Vacation Destinations": "Looking for beach destinations with family-friendly activities.",
    "Read 'The Martian'": "Started last week. Aim to finish by next weekend.",
    "Call Grandma": "Catch up on family news. Ask for her famous cookie recipe.",
    "Change Air Filter": "Last changed 3 months ago. Buy a new filter at the hardware store.",
    "Brainstorm Blog Post Ideas": "Need 5 new topics for the next month's content calendar.",
    "Renew Driver's License": "Expires next month. Check DMV website for requirements.",
    "Organize Closet": "Donate old clothes and shoes. Put winter clothes in storage.",
    "Submit Expense Report": "Deadline is Wednesday. Attach receipts for all purchases.",
    "Attend Team Meeting": "Agenda includes project updates and brainstorming new initiatives.",
    "Learn to Play Guitar": "Practice chords for 30 minutes every day. Find online tutorials.",
    "Reply to Emails": (
        "Inbox is overflowing. Prioritize urgent messages and unsubscribe from unwanted lists."
    ),
    "Clean Out Fridge": "Check expiration dates and discard old food. Wipe down shelves.",
    "Create Budget for Next Month": "Track income and expenses. Set savings goals.",
    "Back Up Computer Files": "Use external hard drive or cloud storage. Schedule regular backups.",
    "Take Dog to the Vet": "Annual checkup and vaccinations due.",
}


def ms(moment: dt.datetime) -> int:
    return int(moment.timestamp()) * 1000


def at(d: dt.date, time_s: str | None = None) -> dt.datetime:
    t = parse_time(time_s) if time_s else dt.time(0, 0)
    return dt.datetime(d.year, d.month, d.day, t.hour, t.minute, tzinfo=UTC)


def random_moment(rng: random.Random, days: int, center: dt.datetime) -> dt.datetime:
    """AndroidWorld's generate_random_datetime: a random minute in a `days`-long window around `center`."""
    return center - dt.timedelta(days=days / 2) + dt.timedelta(minutes=rng.randrange(days * 24 * 60))


def random_task(rng: random.Random) -> dict[str, Any]:
    """A noise task spec: due within a week of today, started ~6 days before, completed half the time."""
    title = rng.choice(list(NOISE))
    notes = NOISE[title] if rng.choice([True, False]) else None
    importance = rng.choice([0, 1, 2, 3])
    due = random_moment(rng, 14, START_TIME)
    hide = random_moment(rng, 5, due - dt.timedelta(days=6))
    completed = (
        random_moment(rng, 14, START_TIME - dt.timedelta(days=14)) if rng.choice([True, False]) else None
    )
    return {
        "title": title,
        "notes": notes,
        "importance": importance,
        "due": ms(due),
        "hide": ms(hide),
        "completed": ms(completed) if completed else 0,
    }


def due_date_of(spec: dict[str, Any]) -> dt.date:
    return dt.datetime.fromtimestamp(spec["due"] / 1000, tz=UTC).date()


def parse_day_text(text: str) -> dt.date | None:
    """The list's day labels back to dates: 'Today', 'Tomorrow', 'Yesterday', 'Mon, Oct 16'."""
    rel = {"Today": 0, "Tomorrow": 1, "Yesterday": -1}
    if text in rel:
        return TODAY + dt.timedelta(days=rel[text])
    try:
        return dt.datetime.strptime(f"{text} {TODAY.year}", "%a, %b %d %Y").date()
    except ValueError:
        return None


class _TasksIR(SeededQuestion):
    """A Tasks question: targets plus 20 noise tasks that do not fit it; the answer is the targets' titles."""

    app_names = ("tasks",)
    n_noise = 20

    def noise_row(self, rng: random.Random) -> dict[str, Any]:
        return random_task(rng)

    def insert_rows(self, dev: DeviceState, rows: list[dict[str, Any]]) -> None:
        tasks(dev).extend(
            make_task(dev, s["title"], s["importance"], s["due"], s["hide"], s["completed"], s["notes"])
            for s in rows
        )

    def initialize(self, dev: DeviceState) -> None:
        if "date" in self.params:
            self.day = vocab.ir_date(self.params["date"])  # before the goal's wording replaces it
        super().initialize(dev)

    sort = "Due date"  # how the expert sorts the list before reading it

    def expert(self, view: View, mem: dict[str, Any]) -> Action:
        if mem.get("answered"):
            return done()
        act = self.ensure_list(view, self.sort, mem)
        return act if act is not None else self.read(view, mem)

    def read(self, view: View, mem: dict[str, Any]) -> Action:
        """The expert's next step once the list is shown, sorted by `sort`."""
        raise NotImplementedError

    def ensure_list(self, view: View, sort: str, mem: dict[str, Any]) -> Action | None:
        """Open the app's task list sorted by `sort`; None once there."""
        if view.app != PKG:
            return open_app("Tasks")
        if view.has(text="Sort") and view.has(text=sort):
            mem["sorted"] = sort
            return click(view.find(text=sort))
        if view.title != "My Tasks":
            return back()
        headers = [view.el(i).text for i in view.find_all(rid=f"{PKG}:id/header")]
        by_priority = any(h.endswith(" priority") for h in headers)
        if headers and by_priority != (sort == "Priority"):
            return click(view.find(desc="Sort"))
        return None

    def collect_due(self, view: View, mem: dict[str, Any], keep) -> list[str] | Action:
        """Walk the due-date-sorted list, keeping titles whose row's due day passes `keep(day)`; stops at the
        end of the list or at the first day after the ones wanted."""
        st = mem.setdefault("collect", {"rows": [], "sigs": [], "past": False})
        els = view.elements
        for i, e in enumerate(els):
            if (
                e.resource_name == f"{PKG}:id/title"
                and i + 1 < len(els)
                and els[i + 1].resource_name == f"{PKG}:id/due_date"
            ):
                day = parse_day_text(els[i + 1].text or "")
                if day is None:
                    continue
                if keep(day) and (e.text, day) not in st["rows"]:
                    st["rows"].append((e.text, day))
                if day > self.last_day():
                    st["past"] = True
        lst = view.find(rid=f"{PKG}:id/tasks")
        sig = tuple(view.texts())
        if not st["past"] and lst is not None and view.el(lst).is_scrollable and sig not in st["sigs"]:
            st["sigs"].append(sig)
            return scroll("down", lst)
        return [t for t, _ in st["rows"]]

    def last_day(self) -> dt.date:
        return self.day

    def read_section(self, view: View, mem: dict[str, Any], section: str) -> Action:
        """Walk the list down, keeping the titles of rows due on the date under the header `section` (rows
        scrolled under the top keep the last header seen above them); answer at the list's end or once the
        next section shows."""
        st = mem.setdefault("walk", {"section": None, "rows": [], "sigs": [], "past": False})
        els = view.elements
        for i, e in enumerate(els):
            if e.resource_name == f"{PKG}:id/header":
                st["past"] = st["past"] or (st["section"] == section != e.text)
                st["section"] = e.text
            elif (
                st["section"] == section
                and e.resource_name == f"{PKG}:id/title"
                and i + 1 < len(els)
                and els[i + 1].resource_name == f"{PKG}:id/due_date"
                and parse_day_text(els[i + 1].text or "") == self.day
                and e.text not in st["rows"]
            ):
                st["rows"].append(e.text)
        lst = view.find(rid=f"{PKG}:id/tasks")
        sig = tuple(view.texts())
        if not st["past"] and lst is not None and view.el(lst).is_scrollable and sig not in st["sigs"]:
            st["sigs"].append(sig)
            return scroll("down", lst)
        return answer_once(mem, ", ".join(st["rows"]))


class _DueQuestion(_TasksIR):
    """A question on due dates: three targets due on `date`, answered from the due-date-sorted list."""

    hide_times: tuple[str, ...] | None = None  # fixed hide-until times; None: drawn per task

    def setup_params(self, rng: random.Random) -> None:
        """Three tasks due on the date, hidden until 10, 9 and 11 October: per task its title, importance,
        (hide-until time,) and notes drawn without replacement, in AndroidWorld's field order."""
        pool = vocab.WithoutReplacement(dict(ir_vocab.IR_PARAMS[self.name]), self.params)
        self.rows = []
        for k, hide_day in enumerate((10, 9, 11)):
            title, importance = pool.draw(rng, "title"), pool.draw(rng, "importance")
            hide = self.hide_times[k] if self.hide_times else pool.draw(rng, "time")
            self.rows.append((title, int(importance), pool.draw(rng, "notes"), hide_day, hide))

    def targets(self) -> list[dict[str, Any]]:
        d = self.last_day()
        return [
            {
                "title": t,
                "importance": imp,
                "notes": n,
                "due": ms(at(d)),
                "hide": ms(at(dt.date(2023, 10, hd), ht)),
                "completed": 0,
            }
            for t, imp, n, hd, ht in self.rows
        ]

    def keeps(self, day: dt.date) -> bool:
        """Whether a task due on `day` belongs in the answer."""
        raise NotImplementedError

    def read(self, view: View, mem: dict[str, Any]) -> Action:
        got = self.collect_due(view, mem, self.keeps)
        return answer_once(mem, ", ".join(got)) if isinstance(got, list) else got


@register_task
class TasksDueOnDate(_DueQuestion):
    template = (
        "What tasks do I have due {date} in Tasks app? Answer with the titles only. If there are multiples "
        "titles, format your answer in a comma separated list."
    )

    hide_times = ("8:00", "10:00", "9:00")


    def excluded(self, spec: dict[str, Any]) -> bool:
        return due_date_of(spec) == self.last_day()

    def keeps(self, day: dt.date) -> bool:
        return day == self.last_day()


@register_task
class TasksIncompleteTasksOnDate(_DueQuestion):
    template = (
        "What incomplete tasks do I have still have to do by {date} in Tasks app? Answer with the titles "
        "only. If there are multiples titles, format your answer in a comma separated list."
    )


    def excluded(self, spec: dict[str, Any]) -> bool:
        return due_date_of(spec) <= self.last_day() and not spec["completed"]

    def keeps(self, day: dt.date) -> bool:
        return day <= self.last_day()


@register_task
class TasksHighPriorityTasks(_TasksIR):
    template = (
        "What are my high priority tasks in Tasks app? Answer with the titles only. If there are multiples "
        "titles, format your answer in a comma separated list."
    )


    def setup_params(self, rng: random.Random) -> None:
        self.due = vocab.ir_date(self.params["due_date"])  # before the goal's wording replaces them
        self.hide = vocab.ir_date(self.params["hide_until_date"])

    def targets(self) -> list[dict[str, Any]]:
        p = self.params
        return [
            {
                "title": p["task_title"],
                "importance": 0,
                "notes": p["notes"],
                "due": ms(at(self.due, p["time"])),
                "hide": ms(at(self.hide, p["time"])),
                "completed": 0,
            }
        ]

    def excluded(self, spec: dict[str, Any]) -> bool:
        return spec["importance"] == 0

    sort = "Priority"

    def read(self, view: View, mem: dict[str, Any]) -> Action:
        titles, section = [], None
        for e in view.elements:
            if e.resource_name == f"{PKG}:id/header":
                section = e.text
            elif e.resource_name == f"{PKG}:id/title" and section == "High priority":
                titles.append(e.text)
        if (
            not titles
            and view.find(text="High priority") is None
            and view.find(rid=f"{PKG}:id/header") is None
        ):
            return scroll("up", view.find(rid=f"{PKG}:id/tasks"))
        return answer_once(mem, ", ".join(titles))


@register_task
class TasksCompletedTasksForDate(_TasksIR):
    template = (
        "Which tasks have I completed for {date} in Tasks app? Answer with the titles only. If there are "
        "multiples titles, format your answer in a comma separated list."
    )


    def setup_params(self, rng: random.Random) -> None:
        """Three tasks due on the date, completed on `completed_date`, hidden until 10, 9 and 11 October:
        per task its title, hide-until time, completion time and notes drawn without replacement, in order."""
        self.done_day = vocab.ir_date(self.params["completed_date"])  # before the goal's wording replaces it
        pool = vocab.WithoutReplacement(dict(ir_vocab.IR_PARAMS[self.name]), self.params)
        self.rows = []
        for hide_day in (10, 9, 11):
            title, hide, done_at = pool.draw(rng, "title"), pool.draw(rng, "time"), pool.draw(rng, "time")
            self.rows.append((title, pool.draw(rng, "notes"), hide_day, hide, done_at))

    def targets(self) -> list[dict[str, Any]]:
        return [
            {
                "title": t,
                "importance": 2,  # AndroidWorld's default when its definition sets none
                "notes": n,
                "due": ms(at(self.day)),
                "hide": ms(at(dt.date(2023, 10, hd), ht)),
                "completed": ms(at(self.done_day, ct)),
            }
            for t, n, hd, ht, ct in self.rows
        ]

    def excluded(self, spec: dict[str, Any]) -> bool:
        return due_date_of(spec) == self.day

    def expert(self, view: View, mem: dict[str, Any]) -> Action:
        """Show completed tasks (overflow menu), then read the list down to its Completed section."""
        if not mem.get("shown") and view.app == PKG:
            if view.has(text="Show completed"):
                mem["shown"] = True
                return click(view.find(text="Show completed"))
            if view.has(text="Hide completed"):
                mem["shown"] = True
                return back()
            if view.title == "My Tasks":
                return click(view.find(desc="More options"))
        return super().expert(view, mem)

    def read(self, view: View, mem: dict[str, Any]) -> Action:
        return self.read_section(view, mem, "Completed")  # keeping the rows due on the date


NEXT_WEEK = (dt.date(2023, 10, 16), dt.date(2023, 10, 22))  # Monday to Sunday after the device's week


@register_task
class TasksDueNextWeek(_TasksIR):
    template = (
        "How many tasks do I have due next week in Tasks app? Assume the week starts from Monday. Express "
        "your answer as a single integer."
    )


    def setup_params(self, rng: random.Random) -> None:
        """Six tasks due next week with fixed hide-until moments: per task its title, due date and notes
        drawn without replacement, in that order."""
        pool = vocab.WithoutReplacement(dict(ir_vocab.IR_PARAMS[self.name]), self.params)
        hides = [(10, "8:00"), (9, "10:00")] + [(11, "9:00")] * 4
        self.rows = []
        for hide_day, hide in hides:
            title, due = pool.draw(rng, "title"), vocab.ir_date(pool.draw(rng, "due_date"))
            self.rows.append((title, due, pool.draw(rng, "notes"), hide_day, hide))

    def targets(self) -> list[dict[str, Any]]:
        return [
            {
                "title": t,
                "importance": 2,  # AndroidWorld's default when its definition sets none
                "notes": n,
                "due": ms(at(d)),
                "hide": ms(at(dt.date(2023, 10, hd), ht)),
                "completed": 0,
            }
            for t, d, n, hd, ht in self.rows
        ]

    def excluded(self, spec: dict[str, Any]) -> bool:
        return NEXT_WEEK[0] <= due_date_of(spec) <= NEXT_WEEK[1]

    match = "number"

    def expected(self) -> str:
        return str(len(self.rows))  # AndroidWorld's COUNT of the seeded tasks, a NUMBER_MATCH


    def last_day(self) -> dt.date:
        return NEXT_WEEK[1]

    def read(self, view: View, mem: dict[str, Any]) -> Action:
        got = self.collect_due(view, mem, lambda d: NEXT_WEEK[0] <= d <= NEXT_WEEK[1])
        return answer_once(mem, str(len(got))) if isinstance(got, list) else got


@register_task
class TasksHighPriorityTasksDueOnDate(_TasksIR):
    template = (
        "Which tasks with high priority are due {date} in the Tasks app? Answer with the title only. If "
        "there are multiples titles, format your answer in a comma separated list."
    )


    def targets(self) -> list[dict[str, Any]]:
        return [
            {
                "title": self.params["title"],
                "importance": 0,
                "notes": None,
                "due": ms(at(self.day, self.params["time"])),
                "hide": 0,
                "completed": 0,
            }
        ]

    def excluded(self, spec: dict[str, Any]) -> bool:
        return due_date_of(spec) == self.day and spec["importance"] == 0

    sort = "Priority"

    def read(self, view: View, mem: dict[str, Any]) -> Action:
        return self.read_section(view, mem, "High priority")  # keeping the rows due on the date
