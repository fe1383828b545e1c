"""Stand-in of android_world/registry.py: `TaskRegistry().get_registry(family)` maps AndroidWorld task names
to TaskEval classes; here every SimDroid task, wrapped. Information-retrieval tasks (answered with the
`answer` action) form their own family, and `android_world` is the union, as in AndroidWorld."""

from __future__ import annotations

from typing import Any, Final

from android_world.task_evals import simdroid
from voyager_gym.backends.sim.tasks import TASKS

# AndroidWorld's information-retrieval task names (its tasks.textproto); the stand-in files those SimDroid
# covers under INFORMATION_RETRIEVAL_FAMILY.
_IR_NAMES = frozenset(
    """NotesIsTodo NotesMeetingAttendeeCount NotesRecipeIngredientCount NotesTodoItemCount
    SimpleCalendarAnyEventsOnDate SimpleCalendarEventOnDateAtTime SimpleCalendarEventsInNextWeek
    SimpleCalendarEventsInTimeRange SimpleCalendarEventsOnDate SimpleCalendarFirstEventAfterStartTime
    SimpleCalendarLocationOfEvent SimpleCalendarNextEvent SimpleCalendarNextMeetingWithPerson
    SportsTrackerActivitiesCountForWeek SportsTrackerActivitiesOnDate SportsTrackerActivityDuration
    SportsTrackerLongestDistanceActivity SportsTrackerTotalDistanceForCategoryOverInterval
    SportsTrackerTotalDurationForCategoryThisWeek TasksCompletedTasksForDate TasksDueNextWeek TasksDueOnDate
    TasksHighPriorityTasks TasksHighPriorityTasksDueOnDate TasksIncompleteTasksOnDate""".split()
)


def get_families() -> list[str]:
    return [
        TaskRegistry.ANDROID_WORLD_FAMILY,
        TaskRegistry.ANDROID_FAMILY,
        TaskRegistry.INFORMATION_RETRIEVAL_FAMILY,
    ]


class TaskRegistry:
    ANDROID_WORLD_FAMILY: Final[str] = "android_world"
    ANDROID_FAMILY: Final[str] = "android"
    INFORMATION_RETRIEVAL_FAMILY: Final[str] = "information_retrieval"

    ANDROID_TASK_REGISTRY: dict[str, Any] = {}
    INFORMATION_RETRIEVAL_TASK_REGISTRY: dict[str, Any] = {
        n: simdroid.wrap(c) for n, c in sorted(TASKS.items()) if n in _IR_NAMES
    }

    def __init__(self) -> None:
        for name, cls in sorted(TASKS.items()):
            if name not in _IR_NAMES and name not in self.ANDROID_TASK_REGISTRY:
                self.register_task(self.ANDROID_TASK_REGISTRY, simdroid.wrap(cls))

    def register_task(self, task_registry: dict[Any, Any], task_class: type) -> None:
        task_registry[task_class.__name__] = task_class

    def get_registry(self, family: str) -> Any:
        if family == self.ANDROID_WORLD_FAMILY:
            return {**self.ANDROID_TASK_REGISTRY, **self.INFORMATION_RETRIEVAL_TASK_REGISTRY}
        if family == self.ANDROID_FAMILY:
            return self.ANDROID_TASK_REGISTRY
        if family == self.INFORMATION_RETRIEVAL_FAMILY:
            return self.INFORMATION_RETRIEVAL_TASK_REGISTRY
        raise ValueError(f"Unsupported family: {family}")
