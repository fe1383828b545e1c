"""Small system apps: Phone (dialer) and Clipper (clipboard service app used by AndroidWorld)."""

from __future__ import annotations

from voyager_gym.backends.sim import widgets as w
from voyager_gym.backends.sim.device import DeviceState
from voyager_gym.backends.sim.ui import GREY, PAD, UI, App, Screen, register_app
from voyager_gym.backends.sim.widgets import SCREEN_W, Node

DIALER = "com.google.android.dialer"
CLIPPER = "ca.zgrs.clipper"


class DialerScreen(Screen):
    def build(self, ui: UI) -> list[Node]:
        y = ui.below_bar()
        out = [ui.app_bar("Phone", back=False)]
        out.append(ui.field("number", (PAD, y + 40, SCREEN_W - PAD, y + 200), hint="Enter a number"))
        keys = "123456789*0#"
        kw, kh = 240, 180
        x0 = (SCREEN_W - 3 * kw) // 2
        top = y + 260
        for i, k in enumerate(keys):
            r, c = divmod(i, 3)
            b = (x0 + c * kw + 12, top + r * kh + 12, x0 + (c + 1) * kw - 12, top + (r + 1) * kh - 12)
            out.append(
                Node(
                    w.BUTTON,
                    text=k,
                    bounds=b,
                    clickable=True,
                    radius=80,
                    bg=(241, 243, 244),
                    size=60,
                    align="center",
                    rid=f"{DIALER}:id/key_{k}",
                    on_click=(lambda k=k: self.set_field("number", self.field("number") + k)),
                )
            )
        cy = top + 4 * kh + 40
        out.append(
            Node(
                w.IMAGE_BUTTON,
                desc="dial",
                bounds=(SCREEN_W // 2 - 100, cy, SCREEN_W // 2 + 100, cy + 200),
                clickable=True,
                on_click=lambda: ui.toast("Calling is not available"),
                icon="phone",
                icon_fg=(255, 255, 255),
                bg=(30, 142, 62),
                radius=100,
                rid=f"{DIALER}:id/dialpad_voice_call",
            )
        )
        return out


@register_app
class Dialer(App):
    package = DIALER
    name = "Phone"
    aliases = r"dialer|phone"
    color = (30, 142, 62)

    def main(self, dev: DeviceState) -> Screen:
        return DialerScreen()


class ClipperScreen(Screen):
    def build(self, ui: UI) -> list[Node]:
        y = ui.below_bar()
        dev = ui.dev

        def copy() -> None:
            dev.clipboard = self.field("clip")
            ui.unfocus()
            ui.toast("Copied to clipboard")

        return [
            ui.app_bar("Clipper", back=False),
            ui.text("Current clipboard", (PAD, y + 40, SCREEN_W - PAD, y + 120), size=36, fg=GREY),
            ui.text(
                dev.clipboard or "(empty)",
                (PAD, y + 120, SCREEN_W - PAD, y + 320),
                size=44,
                lines=3,
                rid=f"{CLIPPER}:id/current",
            ),
            ui.field("clip", (PAD, y + 360, SCREEN_W - PAD, y + 520), hint="Text to copy"),
            ui.button(
                "Copy to clipboard", (PAD, y + 580, SCREEN_W - PAD, y + 740), copy, rid=f"{CLIPPER}:id/copy"
            ),
        ]


@register_app
class Clipper(App):
    package = CLIPPER
    name = "Clipper"
    aliases = r"clipper"
    color = (103, 58, 183)

    def main(self, dev: DeviceState) -> Screen:
        return ClipperScreen()
