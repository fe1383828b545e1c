"""Stand-in of android_world/env/android_world_controller.py. The real controller wraps an AndroidEnv
connection to an emulator; this one holds a SimDroid phone (the "device") and the injected `Faults`.
`get_controller(console_port, adb_path, grpc_port)` keeps the real signature; the controller's internals
(`phone`, `screenshot`, `restore_snapshot`, `check`) are the stand-in's own."""

from __future__ import annotations

import collections
import os

import numpy as np

from android_world.env import representation_utils
from tests.aw_standin import EmulatorError, Faults, default_faults
from voyager_gym.backends.sim.device import DeviceState
from voyager_gym.backends.sim.phone import Phone
from voyager_gym.backends.sim.render import Renderer
from voyager_gym.backends.sim.widgets import SCREEN_H, SCREEN_W, Node
from voyager_gym.observation import UIElement

DEFAULT_ADB_PATH = "~/Android/Sdk/platform-tools/adb"
OBSERVATION_KEY_FOREST = "forest"
OBSERVATION_KEY_UI_ELEMENTS = "ui_elements"


def to_aw_element(e: UIElement) -> representation_utils.UIElement:
    """A SimDroid element as AndroidWorld's UIElement (normalised bbox None, as AndroidWorld leaves it)."""
    b = e.bbox_pixels
    box = None if b is None else representation_utils.BoundingBox(b.x_min, b.x_max, b.y_min, b.y_max)
    fields = {k: v for k, v in e.to_dict().items() if k not in ("bbox", "bbox_pixels")}
    return representation_utils.UIElement(**fields, bbox=None, bbox_pixels=box)


class AndroidWorldController:
    """The stand-in device: a SimDroid phone with a live status-bar clock, a full-resolution renderer and
    a factory snapshot that `restore_snapshot` returns the apps to (AndroidWorld restores app snapshots)."""

    def __init__(self, console_port: int, adb_path: str, grpc_port: int, faults: Faults | None = None):
        self.console_port = console_port
        self.adb_path = adb_path
        self.grpc_port = grpc_port
        self.phone = Phone(clock_in_status_bar=True)
        self.renderer = Renderer(1.0, frame_cache=8)
        self._factory: DeviceState = self.phone.dev.snapshot()
        self.closed = False
        self.apps_set_up = False
        self.datetime_frozen = False
        self.faults = faults if faults is not None else default_faults()

    # -- failure injection (stand-in only) -------------------------------------------------------------
    @property
    def faults(self) -> Faults:
        return self._faults

    @faults.setter
    def faults(self, faults: Faults) -> None:
        self._faults = faults
        self.calls: collections.Counter[str] = collections.Counter()

    def check(self, op: str) -> None:
        """Count a device operation and raise EmulatorError if the faults say this call fails."""
        if self.closed:
            raise EmulatorError(f"{op}: the controller for emulator-{self.console_port} is closed")
        self.calls[op] += 1
        if self._faults.trips(op, self.calls[op]):
            raise EmulatorError(
                f"injected emulator failure in {op} (call {self.calls[op]}) on emulator-{self.console_port}"
            )

    # -- what AndroidWorld's controller offers ---------------------------------------------------------
    @property
    def device_screen_size(self) -> tuple[int, int]:
        return SCREEN_W, SCREEN_H

    @property
    def logical_screen_size(self) -> tuple[int, int]:
        return SCREEN_W, SCREEN_H

    def get_a11y_forest(self) -> Node:
        """The SimDroid widget tree (the real one returns an AndroidAccessibilityForest proto)."""
        return self.phone.root()

    def get_ui_elements(self) -> list[representation_utils.UIElement]:
        return [to_aw_element(e) for e in self.phone.elements()]

    def close(self) -> None:
        self.closed = True

    # -- stand-in device operations --------------------------------------------------------------------
    def screenshot(self) -> np.ndarray:
        """A fresh RGB frame of the full 1080x2400 screen (a copy: the renderer caches its frames)."""
        return self.renderer.render(self.phone.root()).copy()

    def restore_snapshot(self) -> None:
        """Return every app's data to the factory state (AndroidWorld: app_snapshot.restore_snapshot)."""
        self.phone.reset(self._factory.snapshot())


def get_controller(
    console_port: int = 5554,
    adb_path: str = DEFAULT_ADB_PATH,
    grpc_port: int = 8554,
) -> AndroidWorldController:
    """Stands for connecting to the emulator on `console_port`: builds a new SimDroid phone."""
    return AndroidWorldController(console_port, os.path.expanduser(adb_path), grpc_port)
