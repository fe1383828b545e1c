"""Stand-in of android_world.task_evals (test double, SimDroid underneath)."""
