"""Stand-in of android_world.env (test double, SimDroid underneath)."""
