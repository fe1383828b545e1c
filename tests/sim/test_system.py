"""System tasks: verifiers on near misses, and the Settings UI doing what the verifier reads."""

import numpy as np
import pytest

from voyager_gym.actions import Action
from voyager_gym.backends.sim.tasks import TASKS


def start(backend, name, seed=0, **params):
    p = backend.generate_params(name, seed)
    p.update(params)
    backend.reset(name, p, np.random.default_rng(seed))
    return backend.phone.dev


def test_wifi_counts_1_or_2_as_on(backend):
    dev = start(backend, "SystemWifiTurnOn")
    assert backend.score() == 0.0
    dev.settings["wifi_on"] = 2
    assert backend.score() == 1.0


@pytest.mark.parametrize(
    "name,key,miss",
    [
        ("SystemBluetoothTurnOn", "bluetooth_on", 0),
        ("SystemBluetoothTurnOff", "bluetooth_on", 1),
        ("SystemWifiTurnOff", "wifi_on", 2),
        ("SystemBrightnessMax", "screen_brightness", 254),
        ("SystemBrightnessMin", "screen_brightness", 2),
        ("SystemBrightnessMaxVerify", "screen_brightness", 250),
        ("SystemBrightnessMinVerify", "screen_brightness", 5),
        ("SystemBluetoothTurnOnVerify", "bluetooth_on", 0),
        ("SystemBluetoothTurnOffVerify", "bluetooth_on", 1),
        ("SystemWifiTurnOnVerify", "wifi_on", 0),
        ("SystemWifiTurnOffVerify", "wifi_on", 1),
    ],
)
def test_toggle_near_misses_fail(backend, name, key, miss):
    dev = start(backend, name)
    dev.settings[key] = miss
    assert backend.score() == 0.0


def test_composites_pay_half_per_part(backend):
    dev = start(backend, "TurnOffWifiAndTurnOnBluetooth")
    dev.settings["bluetooth_on"] = 1
    assert backend.score() == 0.5
    dev = start(backend, "TurnOnWifiAndOpenApp", app_name="clock")
    dev.settings["wifi_on"] = 1
    dev.foreground = "com.google.android.dialer"  # the wrong app
    assert backend.score() == 0.5
    dev.foreground = "com.google.android.deskclock"
    assert backend.score() == 1.0


def test_open_app_wrong_app_fails(backend):
    start(backend, "OpenAppTaskEval", app_name="contacts")
    backend.execute(Action("open_app", app_name="phone"))
    assert backend.score() == 0.0
    backend.execute(Action("open_app", app_name="Contacts"))
    assert backend.score() == 1.0


def test_clipboard_must_match(backend):
    dev = start(backend, "SystemCopyToClipboard", clipboard_content="budget review")
    dev.clipboard = "budget reviews"
    assert backend.score() == 1.0  # AndroidWorld's fuzzy match: ratio 26/27 >= 0.9
    dev.clipboard = "budget"
    assert backend.score() == 0.0


def test_switch_in_settings_flips_the_setting(backend):
    dev = start(backend, "SystemBluetoothTurnOn")
    for a in (Action("open_app", app_name="settings"),):
        backend.execute(a)
    for title in ("Connected devices", "Connection preferences", "Bluetooth", "Use Bluetooth"):
        i = next(i for i, e in enumerate(backend.phone.elements()) if e.text == title)
        backend.execute(Action("click", index=i))
    assert dev.settings["bluetooth_on"] == 1
    sw = next(e for e in backend.phone.elements() if e.class_name.endswith("Switch"))
    assert sw.is_checked and sw.is_checkable


def test_brightness_slider_maps_position(backend):
    dev = start(backend, "SystemBrightnessMax")
    backend.execute(Action("open_app", app_name="settings"))
    for title in ("Display", "Brightness level"):
        i = next(i for i, e in enumerate(backend.phone.elements()) if e.text == title)
        backend.execute(Action("click", index=i))
    bar = next(e for e in backend.phone.elements() if e.class_name.endswith("SeekBar"))
    b = bar.bbox_pixels
    backend.execute(Action("click", x=(b.x_min + b.x_max) // 2, y=(b.y_min + b.y_max) // 2))
    assert 120 <= dev.settings["screen_brightness"] <= 135
    assert backend.score() == 0.0


def test_verify_variants_start_solved():
    verify = [n for n in TASKS if n.endswith("Verify") and n.startswith("System")]
    assert len(verify) == 6 and all(TASKS[n].starts_solved for n in verify)


def test_back_at_app_root_goes_home_and_resets_the_app(backend):
    start(backend, "SystemWifiTurnOn")
    backend.execute(Action("open_app", app_name="settings"))
    i = next(i for i, e in enumerate(backend.phone.elements()) if e.text == "Display")
    backend.execute(Action("click", index=i))
    backend.execute(Action("navigate_home"))
    backend.execute(Action("open_app", app_name="settings"))  # resumes where it was
    assert any(e.text == "Brightness level" for e in backend.phone.elements())
    backend.execute(Action("navigate_back"))
    backend.execute(Action("navigate_back"))
    assert backend.phone.dev.foreground == "com.google.android.apps.nexuslauncher"
    backend.execute(Action("open_app", app_name="settings"))  # a fresh start after back from the root
    assert any(e.text == "Network & internet" for e in backend.phone.elements())


def test_scroll_and_swipe_are_inverse(backend):
    start(backend, "SystemWifiTurnOn")
    backend.execute(Action("open_app", app_name="settings"))
    first = [e.text for e in backend.phone.elements() if e.text][:3]
    backend.execute(Action("scroll", direction="down"))
    scrolled = [e.text for e in backend.phone.elements() if e.text][:3]
    assert scrolled != first
    backend.execute(Action("swipe", direction="down"))  # finger down = content up = back to the top
    assert [e.text for e in backend.phone.elements() if e.text][:3] == first
