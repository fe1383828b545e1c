"""voyager-gym: AndroidWorld as a vectorized Gymnasium env with verifier rewards (SimDroid by default)."""

from gymnasium.envs.registration import register, registry

from voyager_gym.actions import Action, ActionError, parse_action, try_parse_action
from voyager_gym.observation import BoundingBox, UIElement

__version__ = "0.1.0"

if "voyager_gym/SimDroid-v0" not in registry:
    register(
        id="voyager_gym/SimDroid-v0",
        entry_point="voyager_gym.env:VoyagerEnv",
        kwargs={"backend": "simdroid"},
        disable_env_checker=False,
    )
if "voyager_gym/AndroidWorld-v0" not in registry:
    register(  # needs the android_world package and a running emulator; see docs/androidworld.md
        id="voyager_gym/AndroidWorld-v0",
        entry_point="voyager_gym.env:VoyagerEnv",
        kwargs={"backend": "androidworld"},
        disable_env_checker=False,
    )

__all__ = ["Action", "ActionError", "BoundingBox", "UIElement", "parse_action", "try_parse_action"]
