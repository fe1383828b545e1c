"""Simple Draw Pro (com.simplemobiletools.draw.pro): a canvas, and saving it as an image file.

A swipe on the canvas draws a stroke along the finger's path (from the canvas's centre), a tap a dot. The
toolbar has Undo, Save and a More options menu (Clear, Share). Save opens "Save as" (the commons dialog):
the folder (tap it to pick another with the folder picker; it starts as Internal/Simple Draw), the file name
(image_<date and time>) and the format (.png, .svg, .jpg); OK writes <folder>/<name>.<format>.
"""

from __future__ import annotations

import posixpath
from typing import Any

from voyager_gym.backends.sim import widgets as w
from voyager_gym.backends.sim.apps.simple_commons import FolderPicker, humanize, popup_menu
from voyager_gym.backends.sim.device import SDCARD, DeviceState
from voyager_gym.backends.sim.ui import ACCENT, GREY, INK, UI, WHITE, App, Screen, register_app
from voyager_gym.backends.sim.widgets import SCREEN_W, Node

PKG = "com.simplemobiletools.draw.pro"
COLOR = (255, 87, 34)
DEFAULT_FOLDER = f"{SDCARD}/Simple Draw"
EXTENSIONS = ("png", "svg", "jpg")
STROKE = 18
RADIO = "android.widget.RadioButton"


def state(dev: DeviceState) -> dict[str, Any]:
    d = dev.data(PKG)
    d.setdefault("strokes", [])  # [x0, y0, x1, y1] in canvas coordinates; a dot has x0 == x1, y0 == y1
    d.setdefault("folder", "")  # the last folder saved to ("" until the first save)
    d.setdefault("extension", "png")
    return d


class CanvasScreen(Screen):
    def build(self, ui: UI) -> list[Node]:
        st = state(ui.dev)
        strokes = st["strokes"]

        def undo() -> None:
            if strokes:
                strokes.pop()

        def menu() -> None:
            ui.push(CanvasMenu())

        bar = ui.app_bar(
            "Simple Draw",
            back=False,
            actions=[
                ("Undo", "undo", undo),
                ("Save", "check", lambda: ui.push(SaveDialog(ui.dev))),
                ("More options", "more", menu),
            ],
        )
        y0, y1 = ui.below_bar(), ui.bottom - 200
        canvas = Node(w.VIEW, bounds=(0, y0, SCREEN_W, y1), bg=WHITE, rid=f"{PKG}:id/my_canvas")
        cx, cy = SCREEN_W // 2, (y0 + y1) // 2
        reach = {"up": (0, -1), "down": (0, 1), "left": (-1, 0), "right": (1, 0)}

        def swipe(direction: str) -> None:  # the finger moves against the scroll direction
            dx, dy = reach[direction]
            strokes.append([cx, cy, cx - dx * (SCREEN_W // 3), cy - dy * ((y1 - y0) // 3)])

        def dot() -> None:
            x, y = ui.phone.last_tap
            strokes.append([x, y, x, y])

        canvas.on_scroll, canvas.on_click = swipe, dot
        out = [bar, canvas]  # strokes are drawn over the canvas, which stays a leaf (listed by its id)
        for x0, sy0, x1, sy1 in strokes:
            lx, ly = min(x0, x1) - STROKE // 2, min(sy0, sy1) - STROKE // 2
            hx, hy = max(x0, x1) + STROKE // 2, max(sy0, sy1) + STROKE // 2
            out.append(Node(w.VIEW, bounds=(lx, ly, hx, hy), bg=INK, radius=STROKE // 2, a11y=False))
        tools = Node(w.LINEAR, bounds=(0, y1, SCREEN_W, ui.bottom), bg=(241, 243, 244), a11y=False)
        for i, (desc, icon) in enumerate(
            (("Change color", "record"), ("Eraser", "delete"), ("Change brush size", "edit"))
        ):
            x = 80 + i * 200
            tools.add(
                Node(
                    w.IMAGE_BUTTON,
                    desc=desc,
                    bounds=(x, y1 + 40, x + 120, y1 + 160),
                    icon=icon,
                    icon_fg=GREY,
                    clickable=True,
                    on_click=lambda d=desc: ui.toast(f"{d}: not available"),
                    rid=f"{PKG}:id/{icon}_tool",
                )
            )
        return out + [tools]


class CanvasMenu(Screen):
    modal = True

    def build(self, ui: UI) -> list[Node]:
        st = state(ui.dev)

        def clear() -> None:
            st["strokes"].clear()
            ui.pop()

        def share() -> None:
            ui.pop()
            ui.toast("Sharing is not available")

        return [popup_menu(ui, [("Clear", clear), ("Share", share)], f"{PKG}:id/overflow_menu")]


class SaveDialog(Screen):
    """ "Save as": folder (opens the folder picker), file name, format; OK saves."""

    modal = True

    def __init__(self, dev: DeviceState):
        super().__init__()
        st = state(dev)
        self.folder = st["folder"] or DEFAULT_FOLDER
        self.extension = st["extension"]
        self.fields["filename"] = dev.now.strftime("image_%Y_%m_%d_%H_%M_%S")

    def folder_picked(self, ui: UI, path: str) -> None:
        self.folder = path

    def submit(self, ui: UI, key: str) -> None:
        ui.unfocus()

    def ok(self, ui: UI) -> None:
        name = self.field("filename").strip()
        if not name:
            ui.toast("Filename cannot be empty")
            return
        if any(c in name for c in '/\\:*?"<>|'):
            ui.toast("Filename contains invalid characters")
            return
        path = f"{self.folder}/{name}.{self.extension}"
        if ui.dev.exists(path):
            ui.unfocus()
            ui.push(OverwriteDialog(self, path))
            return
        self.save(ui, path)

    def save(self, ui: UI, path: str) -> None:
        dev = ui.dev
        st = state(dev)
        dev.write_file(path, f"{self.extension.upper()} {SCREEN_W}x1600 strokes={len(st['strokes'])}")
        st["folder"], st["extension"] = self.folder, self.extension
        ui.unfocus()
        ui.pop()
        ui.toast("File saved successfully")

    def build(self, ui: UI) -> list[Node]:
        panel, y = ui.dialog_box("Save as", 1160)
        x0, x1 = panel.bounds[0] + 60, panel.bounds[2] - 60
        panel.add(
            ui.text("Path", (x0, y, x1, y + 60), size=34, fg=GREY, rid=f"{PKG}:id/save_image_path_label")
        )
        panel.add(
            ui.text(
                humanize(self.folder),
                (x0 + 40, y + 60, x1, y + 160),
                size=42,
                clickable=True,
                on_click=lambda: ui.push(FolderPicker(self, self.folder)),
                rid=f"{PKG}:id/save_image_path",
            )
        )
        y += 190
        panel.add(
            ui.text("Filename", (x0, y, x1, y + 60), size=34, fg=GREY, rid=f"{PKG}:id/save_image_label")
        )
        panel.add(ui.field("filename", (x0, y + 60, x1, y + 200)))
        y += 230
        for ext in EXTENSIONS:
            on = ext == self.extension

            def pick(e: str = ext) -> None:
                self.extension = e

            panel.add(
                Node(
                    RADIO,
                    text=f".{ext}",
                    bounds=(x0, y, x1, y + 130),
                    checkable=True,
                    checked=on,
                    clickable=True,
                    on_click=pick,
                    icon="check_on" if on else "check_off",
                    icon_fg=ACCENT if on else GREY,
                    size=42,
                    rid=f"{PKG}:id/save_image_radio_{ext}",
                )
            )
            y += 130
        ui.dialog_buttons(panel, [("Cancel", ui.pop), ("OK", lambda: self.ok(ui))])
        return [panel]


class OverwriteDialog(Screen):
    """The commons confirmation before saving over an existing file."""

    modal = True

    def __init__(self, owner: SaveDialog, path: str):
        super().__init__()
        self.owner = owner
        self.path = path

    def build(self, ui: UI) -> list[Node]:
        msg = f'File "{posixpath.basename(self.path)}" already exists. Overwrite?'
        panel, _ = ui.dialog_box(None, 420, message=msg)

        def yes() -> None:
            ui.pop()
            self.owner.save(ui, self.path)

        ui.dialog_buttons(panel, [("No", ui.pop), ("Yes", yes)])
        return [panel]


@register_app
class SimpleDraw(App):
    package = PKG
    name = "Simple Draw Pro"
    aliases = r"simple draw pro"
    color = COLOR

    def main(self, dev: DeviceState) -> Screen:
        return CanvasScreen()

    def setup(self, dev: DeviceState) -> None:
        state(dev)
