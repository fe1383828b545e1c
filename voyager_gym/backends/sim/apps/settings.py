"""Settings (com.android.settings), laid out like Android 13 on a Pixel: network, devices, display."""

from __future__ import annotations

from voyager_gym.backends.sim import widgets as w
from voyager_gym.backends.sim.device import DeviceState
from voyager_gym.backends.sim.ui import PAD, ROW2_H, ROW_H, UI, App, Screen, register_app
from voyager_gym.backends.sim.widgets import SCREEN_W, Node

PKG = "com.android.settings"

MAIN_ROWS = (
    ("Network & internet", "Mobile, Wi‑Fi, hotspot", "NetworkScreen", "wifi"),
    ("Connected devices", "Bluetooth, pairing", "ConnectedScreen", "bluetooth"),
    ("Apps", "Recent apps, default apps", None, "apps"),
    ("Notifications", "Notification history, conversations", None, "notifications"),
    ("Battery", "100%", None, "battery"),
    ("Storage", "34% used - 21.19 GB free", None, "storage"),
    ("Sound & vibration", "Volume, haptics, Do Not Disturb", None, "sound"),
    ("Display", "Dark theme, font size, brightness", "DisplayScreen", "display"),
    ("Wallpaper & style", "Colors, themed icons, app grid", None, "wallpaper"),
    ("Accessibility", "Display, interaction, audio", None, "accessibility"),
    ("Security & privacy", "App security, device lock, permissions", None, "security"),
    ("Location", "On - 3 apps have access to location", None, "location"),
    ("Safety & emergency", "Emergency SOS, medical info, alerts", None, "safety"),
    ("Passwords & accounts", "Saved passwords, autofill, synced accounts", None, "accounts"),
    ("System", "Languages, gestures, time, backup", None, "system"),
    ("About emulated device", "sdk_gphone64_x86_64", None, "about"),
)


class SettingsScreen(Screen):
    title = "Settings"

    def build(self, ui: UI) -> list[Node]:
        y = ui.top
        header = Node(w.FRAME, bounds=(0, y, SCREEN_W, y + 300), a11y=False)
        header.add(
            ui.text(
                "Settings", (PAD, y + 40, SCREEN_W - PAD, y + 150), size=72, rid=f"{PKG}:id/toolbar_title"
            )
        )
        header.add(
            Node(
                w.TEXT,
                text="Search settings",
                bounds=(PAD, y + 180, SCREEN_W - PAD, y + 290),
                bg=(232, 240, 254),
                radius=55,
                fg=(95, 99, 104),
                pad=60,
                icon="search",
                icon_fg=(95, 99, 104),
                clickable=True,
                on_click=lambda: None,
                rid=f"{PKG}:id/search_action_bar",
            )
        )
        screens = {
            "NetworkScreen": NetworkScreen,
            "ConnectedScreen": ConnectedScreen,
            "DisplayScreen": DisplayScreen,
        }

        def opener(name):
            if name is None:
                return lambda: None
            return lambda: ui.push(screens[name]())

        rows = [(t, s, opener(target), icon) for t, s, target, icon in MAIN_ROWS]
        lst = ui.list(
            "main",
            [
                (ROW2_H, (lambda b, r=r: ui.item(r[0], b, on_click=r[2], subtitle=r[1], icon=r[3])))
                for r in rows
            ],
            y0=y + 320,
        )
        return [header, lst]


class NetworkScreen(Screen):
    def build(self, ui: UI) -> list[Node]:
        s = ui.dev.settings
        wifi = "AndroidWifi" if s["wifi_on"] else "Off"
        dev = ui.dev

        def toggle_airplane() -> None:
            dev.settings["airplane_mode_on"] = 1 - dev.settings["airplane_mode_on"]

        rows = [
            (
                ROW2_H,
                lambda b: ui.item(
                    "Internet", b, on_click=lambda: ui.push(InternetScreen()), subtitle=wifi, icon="wifi"
                ),
            ),
            (
                ROW2_H,
                lambda b: ui.item("Calls & SMS", b, on_click=lambda: None, subtitle="T-Mobile", icon="phone"),
            ),
            (ROW2_H, lambda b: ui.item("SIMs", b, on_click=lambda: None, subtitle="T-Mobile", icon="sim")),
            (
                ROW_H,
                lambda b: ui.toggle_row("Airplane mode", bool(s["airplane_mode_on"]), b, toggle_airplane),
            ),
            (
                ROW2_H,
                lambda b: ui.item(
                    "Hotspot & tethering", b, on_click=lambda: None, subtitle="Off", icon="hotspot"
                ),
            ),
            (ROW2_H, lambda b: ui.item("Data Saver", b, on_click=lambda: None, subtitle="Off", icon="data")),
            (ROW_H, lambda b: ui.item("VPN", b, on_click=lambda: None, icon="vpn")),
            (
                ROW2_H,
                lambda b: ui.item("Private DNS", b, on_click=lambda: None, subtitle="Automatic", icon="dns"),
            ),
        ]
        return [ui.app_bar("Network & internet"), ui.list("list", rows)]


class InternetScreen(Screen):
    def build(self, ui: UI) -> list[Node]:
        dev = ui.dev

        def toggle() -> None:
            dev.settings["wifi_on"] = 0 if dev.settings["wifi_on"] else 1

        on = bool(dev.settings["wifi_on"])
        rows = [(ROW_H, lambda b: ui.toggle_row("Wi‑Fi", on, b, toggle))]
        if on:
            rows.append(
                (
                    ROW2_H,
                    lambda b: ui.item(
                        "AndroidWifi", b, on_click=lambda: None, subtitle="Connected", icon="wifi"
                    ),
                )
            )
            rows.append((ROW_H, lambda b: ui.item("Add network", b, on_click=lambda: None, icon="add")))
        else:
            rows.append(
                (ROW2_H, lambda b: ui.item("Wi‑Fi is off", b, subtitle="Turn on Wi‑Fi to see networks"))
            )
        rows.append(
            (
                ROW2_H,
                lambda b: ui.item(
                    "Network preferences",
                    b,
                    on_click=lambda: None,
                    subtitle="Wi‑Fi turns back on automatically",
                ),
            )
        )
        return [ui.app_bar("Internet"), ui.list("list", rows)]


class ConnectedScreen(Screen):
    def build(self, ui: UI) -> list[Node]:
        rows = [
            (ROW_H, lambda b: ui.item("Pair new device", b, on_click=lambda: None, icon="add")),
            (
                ROW2_H,
                lambda b: ui.item(
                    "Connection preferences",
                    b,
                    on_click=lambda: ui.push(ConnPrefsScreen()),
                    subtitle="Bluetooth, Android Auto, NFC",
                    icon="devices",
                ),
            ),
        ]
        return [ui.app_bar("Connected devices"), ui.list("list", rows)]


class ConnPrefsScreen(Screen):
    def build(self, ui: UI) -> list[Node]:
        on = bool(ui.dev.settings["bluetooth_on"])
        rows = [
            (
                ROW2_H,
                lambda b: ui.item(
                    "Bluetooth",
                    b,
                    on_click=lambda: ui.push(BluetoothScreen()),
                    subtitle="On" if on else "Off",
                    icon="bluetooth",
                ),
            ),
            (ROW2_H, lambda b: ui.item("NFC", b, on_click=lambda: None, subtitle="Unavailable", icon="nfc")),
            (
                ROW2_H,
                lambda b: ui.item(
                    "Android Auto",
                    b,
                    on_click=lambda: None,
                    subtitle="Use apps on your car display",
                    icon="car",
                ),
            ),
            (ROW_H, lambda b: ui.item("Printing", b, on_click=lambda: None, icon="print")),
        ]
        return [ui.app_bar("Connection preferences"), ui.list("list", rows)]


class BluetoothScreen(Screen):
    def build(self, ui: UI) -> list[Node]:
        dev = ui.dev

        def toggle() -> None:
            dev.settings["bluetooth_on"] = 0 if dev.settings["bluetooth_on"] else 1

        on = bool(dev.settings["bluetooth_on"])
        rows = [(ROW_H, lambda b: ui.toggle_row("Use Bluetooth", on, b, toggle))]
        if on:
            rows.append((ROW_H, lambda b: ui.item("Pair new device", b, on_click=lambda: None, icon="add")))
        rows.append((ROW2_H, lambda b: ui.item("Device name", b, subtitle="sdk_gphone64_x86_64")))
        return [ui.app_bar("Bluetooth"), ui.list("list", rows)]


class DisplayScreen(Screen):
    def build(self, ui: UI) -> list[Node]:
        dev = ui.dev
        pct = round(dev.settings["screen_brightness"] / 255 * 100)

        def toggle_dark() -> None:
            dev.settings["dark_mode"] = 1 - dev.settings["dark_mode"]

        rows = [
            (
                ROW2_H,
                lambda b: ui.item(
                    "Brightness level",
                    b,
                    on_click=lambda: ui.push(BrightnessScreen()),
                    subtitle=f"{pct}%",
                    icon="brightness",
                ),
            ),
            (
                ROW2_H,
                lambda b: ui.toggle_row(
                    "Adaptive brightness",
                    False,
                    b,
                    lambda: None,
                    subtitle="Optimize brightness for available light",
                ),
            ),
            (
                ROW2_H,
                lambda b: ui.toggle_row(
                    "Dark theme",
                    bool(dev.settings["dark_mode"]),
                    b,
                    toggle_dark,
                    subtitle="Will never turn on automatically",
                ),
            ),
            (
                ROW2_H,
                lambda b: ui.item("Screen timeout", b, on_click=lambda: None, subtitle="After 30 minutes"),
            ),
            (ROW2_H, lambda b: ui.item("Font size", b, on_click=lambda: None, subtitle="Default")),
        ]
        return [ui.app_bar("Display"), ui.list("list", rows)]


class BrightnessScreen(Screen):
    """A brightness slider: tapping the bar sets the level by position (left end 1, right end 255)."""

    def build(self, ui: UI) -> list[Node]:
        dev = ui.dev
        level = dev.settings["screen_brightness"]
        y = ui.below_bar() + 120
        x0, x1 = PAD + 40, SCREEN_W - PAD - 40

        def on_click() -> None:
            cx = ui.phone.last_tap[0]
            thumb = 70  # like a real slider, the thumb's radius at either end maps to the extreme value
            frac = min(1.0, max(0.0, (cx - x0 - thumb) / (x1 - x0 - 2 * thumb)))
            dev.settings["screen_brightness"] = max(1, round(frac * 255))

        track = Node(w.VIEW, bounds=(x0, y, x1, y + 140), bg=(232, 234, 237), radius=70, a11y=False)
        fill_w = int((x1 - x0) * level / 255)
        fill = Node(
            w.VIEW, bounds=(x0, y, x0 + max(140, fill_w), y + 140), bg=(168, 199, 250), radius=70, a11y=False
        )
        bar = Node(
            w.SEEKBAR,
            desc="Brightness level",
            text=f"{round(level / 255 * 100)}%",
            bounds=(x0, y, x1, y + 140),
            clickable=True,
            on_click=on_click,
            fg=(32, 33, 36),
            align="center",
            rid=f"{PKG}:id/brightness_seekbar",
        )
        return [
            ui.app_bar("Brightness level"),
            track,
            fill,
            bar,
            ui.text(
                "Tap the bar to set the brightness; the left end is the minimum, the right end the maximum.",
                (PAD, y + 200, SCREEN_W - PAD, y + 400),
                size=36,
                fg=(95, 99, 104),
                lines=3,
            ),
        ]


@register_app
class Settings(App):
    package = PKG
    name = "Settings"
    aliases = r"settings|system settings"
    color = (26, 115, 232)

    def main(self, dev: DeviceState) -> Screen:
        return SettingsScreen()
