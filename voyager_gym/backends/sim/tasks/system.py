"""System tasks: Bluetooth, Wi-Fi and brightness (and their Verify variants), opening apps, composites,
and the clipboard. Verifiers read device settings, the foreground app or the clipboard, as AndroidWorld
does."""

from __future__ import annotations

import random
from typing import Any

from voyager_gym.actions import Action
from voyager_gym.backends.sim.device import DeviceState
from voyager_gym.backends.sim.tasks.base import (
    SimTask,
    View,
    aw_fuzzy_match,
    back,
    click,
    done,
    open_app,
    register_task,
    scroll_to_find,
    type_into,
)

SETTINGS = "com.android.settings"
APP_PACKAGES = {
    "camera": "com.android.camera2",
    "clock": "com.google.android.deskclock",
    "contacts": "com.google.android.contacts",
    "settings": SETTINGS,
    "dialer": "com.google.android.dialer",
}

# What SystemCopyToClipboard asks to copy: AndroidWorld's list, in its order (an address, a company, an
# email, a shop, a phone note, an order number, a reservation, a code, a membership, an invoice, a tracking
# number and a transaction id, three times over).
CLIPBOARD_TEXTS = (
    "1234 Elm St, Springfield, IL",
    "Acme Corp, Suite 200",
    "john.doe@example.com",
    "Jane's Flower Shop",
    "Call me at 555-1234",
    "Order No: A123456",
    "Reservation under: Jane",
    "Discount code: SAVE20",
    "Membership ID: XYZ789",
    "Invoice #98765",
    "Tracking #: 1Z204E2A",
    "Transaction ID: abc123",
    "9876 Pine Ave, Riverside, CA",
    "Global Tech, Floor 3",
    "jane.smith@example.com",
    "Mike's Grocery Store",
    "Text me at 555-6789",
    "Order No: B654321",
    "Reservation under: Mike",
    "Promo code: DEAL30",
    "Membership ID: ABC123",
    "Invoice #54321",
    "Tracking #: 3H488Y2B",
    "Transaction ID: def456",
    "2554 Oak Street, Boston, MA",
    "Innovate Inc, Room 10",
    "alex.jordan@example.net",
    "Sara's Bakery",
    "Reach out at 555-9101",
    "Order No: C987654",
    "Reservation under: Sara",
    "Coupon code: OFF50",
    "Membership ID: LMN456",
    "Invoice #32198",
    "Tracking #: 5K672F4C",
    "Transaction ID: ghi789",
)

# What AndroidWorld puts on the clipboard before SystemCopyToClipboard starts.
CLIPBOARD_RESET = "~~~RESET~~~"

# Paths through Settings: the row titles to tap from the main screen to the screen holding the control.
WIFI_PATH = ("Network & internet", "Internet")
BT_PATH = ("Connected devices", "Connection preferences", "Bluetooth")
BRIGHTNESS_PATH = ("Display", "Brightness level")


def navigate_settings(view: View, mem: dict[str, Any], path: tuple[str, ...]) -> Action | None:
    """Walk Settings to the last screen of `path`; None once there."""
    if view.app != SETTINGS:
        return open_app("Settings")
    title = view.title
    if title == path[-1]:
        return None
    screens = ("Settings",) + path[:-1]
    if title in screens:
        nxt = path[screens.index(title)]
        found = scroll_to_find(view, mem, f"find:{nxt}", text=nxt)
        return click(found) if isinstance(found, int) else found
    return back()


def toggle_expert(
    view: View, mem: dict[str, Any], path: tuple[str, ...], label: str, want: bool
) -> Action | None:
    """Set the switch in the row `label` at the end of `path` to `want`; None once it shows `want`."""
    act = navigate_settings(view, mem, path)
    if act is not None:
        return act
    row = view.find(text=label)
    sw = view.find(cls="Switch")
    if row is None or sw is None:
        return back()
    if bool(view.el(sw).is_checked) == want:
        return None
    return click(row)


class _Toggle(SimTask):
    """Turn a setting on or off (Verify variants start in the target state)."""

    app_names = ("settings",)
    key = ""
    want = True
    path: tuple[str, ...] = ()
    label = ""

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return {"on_or_off": "on" if cls.want else "off"}

    def initialize(self, dev: DeviceState) -> None:
        on = self.want if self.starts_solved else not self.want
        dev.settings[self.key] = 1 if on else 0

    def is_successful(self, dev: DeviceState) -> float:
        v = dev.settings[self.key]
        on = v in (1, 2) if self.key == "wifi_on" else v == 1
        return 1.0 if on == self.want else 0.0

    def expert(self, view: View, mem: dict[str, Any]) -> Action:
        return toggle_expert(view, mem, self.path, self.label, self.want) or done()


class _BluetoothToggle(_Toggle):
    key = "bluetooth_on"
    path = BT_PATH
    label = "Use Bluetooth"
    template = "Turn bluetooth {on_or_off}."


class _WifiToggle(_Toggle):
    key = "wifi_on"
    path = WIFI_PATH
    label = "Wi‑Fi"
    template = "Turn wifi {on_or_off}."


@register_task
class SystemBluetoothTurnOn(_BluetoothToggle):
    """Bluetooth starts off; turn it on."""

    want = True


@register_task
class SystemBluetoothTurnOff(_BluetoothToggle):
    """Bluetooth starts on; turn it off."""

    want = False


@register_task
class SystemWifiTurnOn(_WifiToggle):
    """Wi-Fi starts off; turn it on."""

    want = True


@register_task
class SystemWifiTurnOff(_WifiToggle):
    """Wi-Fi starts on; turn it off."""

    want = False


@register_task
class SystemBluetoothTurnOnVerify(SystemBluetoothTurnOn):
    """Bluetooth is already on: the task starts solved."""

    starts_solved = True


@register_task
class SystemBluetoothTurnOffVerify(SystemBluetoothTurnOff):
    """Bluetooth is already off: the task starts solved."""

    starts_solved = True


@register_task
class SystemWifiTurnOnVerify(SystemWifiTurnOn):
    """Wi-Fi is already on: the task starts solved."""

    starts_solved = True


@register_task
class SystemWifiTurnOffVerify(SystemWifiTurnOff):
    """Wi-Fi is already off: the task starts solved."""

    starts_solved = True


class _Brightness(SimTask):
    """Turn the brightness to an extreme (Verify variants start there)."""

    app_names = ("settings",)
    complexity = 1.0
    template = "Turn brightness to the {max_or_min} value."
    target = 255

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return {"max_or_min": "max" if cls.target == 255 else "min"}

    def initialize(self, dev: DeviceState) -> None:
        # AndroidWorld: the Verify variants start at the target, the others at the opposite extreme.
        other = 1 if self.target == 255 else 255
        dev.settings["screen_brightness"] = self.target if self.starts_solved else other

    def is_successful(self, dev: DeviceState) -> float:
        return 1.0 if dev.settings["screen_brightness"] == self.target else 0.0

    def expert(self, view: View, mem: dict[str, Any]) -> Action:
        act = navigate_settings(view, mem, BRIGHTNESS_PATH)
        if act is not None:
            return act
        bar = view.find(desc="Brightness level", cls="SeekBar")
        if bar is None:
            return back()
        want = "100%" if self.target == 255 else "0%"
        if view.el(bar).text == want:
            return done()
        bb = view.el(bar).bbox_pixels
        x = bb.x_max - 2 if self.target == 255 else bb.x_min + 1
        return Action("click", x=x, y=(bb.y_min + bb.y_max) // 2)


@register_task
class SystemBrightnessMax(_Brightness):
    """Brightness starts at its minimum; turn it to the maximum."""

    target = 255


@register_task
class SystemBrightnessMin(_Brightness):
    """Brightness starts at its maximum; turn it to the minimum."""

    target = 1


@register_task
class SystemBrightnessMaxVerify(SystemBrightnessMax):
    """Brightness is already at its maximum: the task starts solved."""

    starts_solved = True


@register_task
class SystemBrightnessMinVerify(SystemBrightnessMin):
    """Brightness is already at its minimum: the task starts solved."""

    starts_solved = True


@register_task
class OpenAppTaskEval(SimTask):
    app_names = ("camera", "clock", "contacts", "settings", "dialer")
    complexity = 1.0
    template = (
        "Open the {app_name} app. Clear any pop-ups that may appear by granting all permissions that are "
        "required."
    )

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return {"app_name": rng.choice(list(APP_PACKAGES))}  # AndroidWorld's order

    def is_successful(self, dev: DeviceState) -> float:
        return 1.0 if dev.foreground == APP_PACKAGES[self.params["app_name"]] else 0.0

    def expert(self, view: View, mem: dict[str, Any]) -> Action:
        if view.app == APP_PACKAGES[self.params["app_name"]]:
            return done()
        return open_app(self.params["app_name"])


@register_task
class TurnOnWifiAndOpenApp(SimTask):
    app_names = ("settings",)
    complexity = 2.0
    template = "Turn on Wifi, then open the {app_name} app"

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return OpenAppTaskEval.generate_random_params(rng)  # any of the five, Settings included

    def initialize(self, dev: DeviceState) -> None:
        dev.settings["wifi_on"] = 0

    def is_successful(self, dev: DeviceState) -> float:
        wifi = 0.5 if dev.settings["wifi_on"] in (1, 2) else 0.0
        app = 0.5 if dev.foreground == APP_PACKAGES[self.params["app_name"]] else 0.0
        return wifi + app

    def expert(self, view: View, mem: dict[str, Any]) -> Action:
        if not mem.get("wifi"):
            act = toggle_expert(view, mem, WIFI_PATH, "Wi‑Fi", True)
            if act is not None:
                return act
            mem["wifi"] = True
        if view.app == APP_PACKAGES[self.params["app_name"]]:
            return done()
        return open_app(self.params["app_name"])


@register_task
class TurnOffWifiAndTurnOnBluetooth(SimTask):
    app_names = ("settings",)
    complexity = 2.0
    template = "Turn off WiFi, then enable bluetooth"

    def initialize(self, dev: DeviceState) -> None:
        dev.settings["wifi_on"] = 1
        dev.settings["bluetooth_on"] = 0

    def is_successful(self, dev: DeviceState) -> float:
        return (0.5 if dev.settings["wifi_on"] == 0 else 0.0) + (
            0.5 if dev.settings["bluetooth_on"] == 1 else 0.0
        )

    def expert(self, view: View, mem: dict[str, Any]) -> Action:
        if not mem.get("wifi"):
            act = toggle_expert(view, mem, WIFI_PATH, "Wi‑Fi", False)
            if act is not None:
                return act
            mem["wifi"] = True
        return toggle_expert(view, mem, BT_PATH, "Use Bluetooth", True) or done()


@register_task
class SystemCopyToClipboard(SimTask):
    app_names = ("clipper",)
    complexity = 1.0
    template = "Copy the following text to the clipboard: {clipboard_content}"

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return {"clipboard_content": rng.choice(CLIPBOARD_TEXTS)}

    def initialize(self, dev: DeviceState) -> None:
        dev.clipboard = CLIPBOARD_RESET  # AndroidWorld sets the clipboard to its reset marker first

    def is_successful(self, dev: DeviceState) -> float:
        # AndroidWorld's fuzzy match: SequenceMatcher ratio >= 0.9, case ignored, nothing stripped.
        return 1.0 if aw_fuzzy_match(self.params["clipboard_content"], dev.clipboard) else 0.0

    def expert(self, view: View, mem: dict[str, Any]) -> Action:
        if view.app != "ca.zgrs.clipper":
            return open_app("Clipper")
        cur = view.find(rid="ca.zgrs.clipper:id/current")
        if cur is not None and view.el(cur).text == self.params["clipboard_content"]:
            return done()
        field = view.find(editable=True)
        if field is not None and view.el(field).text != self.params["clipboard_content"]:
            return type_into(field, self.params["clipboard_content"])
        btn = view.find(text="Copy to clipboard")
        return click(btn) if btn is not None else back()
