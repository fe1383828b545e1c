"""The home screen (Pixel launcher): a grid of every installed app's icon."""

from __future__ import annotations

from voyager_gym.backends.sim import widgets as w
from voyager_gym.backends.sim.device import LAUNCHER, DeviceState
from voyager_gym.backends.sim.ui import APPS, UI, WHITE, App, Screen, register_app
from voyager_gym.backends.sim.widgets import SCREEN_W, Node

COLS = 4
CELL_H = 300


class HomeScreen(Screen):
    def build(self, ui: UI) -> list[Node]:
        apps = sorted((a for a in APPS.values() if a.on_launcher), key=lambda a: a.name.lower())
        cell_w = SCREEN_W // COLS
        bg = Node(w.FRAME, bounds=(0, ui.top, SCREEN_W, ui.bottom), bg=(38, 50, 56), a11y=False, tile=True)
        date = ui.dev.now.strftime("%A, %b %-d")
        bg.add(
            ui.text(
                date,
                (72, ui.top + 60, SCREEN_W - 72, ui.top + 160),
                size=52,
                fg=WHITE,
                rid=f"{LAUNCHER}:id/date",
            )
        )
        grid_top = ui.top + 260
        for i, app in enumerate(apps):
            r, c = divmod(i, COLS)
            x0, y0 = c * cell_w, grid_top + r * CELL_H
            icon = Node(
                w.TEXT,
                text=app.name,
                desc=app.name,
                bounds=(x0 + 10, y0, x0 + cell_w - 10, y0 + CELL_H - 20),
                clickable=True,
                on_click=(lambda p=app.package: ui.open_app(p)),
                a11y=True,
                icon=f"app:{app.name[0].upper()}",
                icon_fg=app.color,
                fg=WHITE,
                size=32,
                align="center",
                rid=f"{LAUNCHER}:id/icon",
            )
            bg.add(icon)
        return [bg]


@register_app
class Launcher(App):
    package = LAUNCHER
    name = "Launcher"
    aliases = ""
    on_launcher = False

    def main(self, dev: DeviceState) -> Screen:
        return HomeScreen()
