"""Stand-in of android_world/env/env_launcher.py: `load_and_setup_env` with AndroidWorld's signature.
"Connecting" builds a SimDroid phone; `emulator_setup` (the one-time app install) and `freeze_datetime`
are recorded on the controller, since SimDroid's apps are always installed and its clock starts at
AndroidWorld's frozen date (2023-10-15 15:34 UTC)."""

from __future__ import annotations

from android_world.env import android_world_controller, interface
from tests.aw_standin import EmulatorError, default_faults


def _get_env(console_port: int, adb_path: str, grpc_port: int) -> interface.AsyncEnv:
    controller = android_world_controller.get_controller(console_port, adb_path, grpc_port)
    return interface.AsyncAndroidEnv(controller)


def setup_env(env: interface.AsyncEnv, emulator_setup: bool = False, freeze_datetime: bool = True) -> None:
    if emulator_setup:
        env.controller.apps_set_up = True
    if freeze_datetime:
        env.controller.datetime_frozen = True


def load_and_setup_env(
    console_port: int = 5554,
    emulator_setup: bool = False,
    freeze_datetime: bool = True,
    adb_path: str = android_world_controller.DEFAULT_ADB_PATH,
    grpc_port: int = 8554,
) -> interface.AsyncEnv:
    if default_faults().load:
        raise EmulatorError(
            f"injected failure: no emulator answers on console port {console_port} (grpc {grpc_port})"
        )
    env = _get_env(console_port, adb_path, grpc_port)
    setup_env(env, emulator_setup, freeze_datetime)
    return env
