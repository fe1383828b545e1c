"""Stand-in of android_world/env/adb_utils.py: only its open_app table, `_PATTERN_TO_ACTIVITY` (app-name
regex -> activity), here built from SimDroid's apps (their AndroidWorld regexes and packages), and
`get_adb_activity`, the lookup open_app makes with it."""

from __future__ import annotations

import re

from voyager_gym.backends.sim.phone import simdroid_apps

_PATTERN_TO_ACTIVITY = {app.aliases: f"{app.package}/.MainActivity" for app in simdroid_apps() if app.aliases}


def get_adb_activity(app_name: str) -> str | None:
    """The activity of the first pattern that `app_name` (lower-cased) matches, as AndroidWorld's does."""
    for pattern, activity in _PATTERN_TO_ACTIVITY.items():
        if re.match(pattern.lower(), app_name.lower()):
            return activity
    return None
