"""SimDroid's tasks, by AndroidWorld name. Every family module registers its tasks on import; base, common,
vocab and ir_vocab hold what the families share."""

import importlib
import pkgutil

from voyager_gym.backends.sim.tasks.base import TASKS, SimTask, register_task

for _m in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
    if _m.name != "base":
        importlib.import_module(f"{__name__}.{_m.name}")

__all__ = ["TASKS", "SimTask", "register_task"]
