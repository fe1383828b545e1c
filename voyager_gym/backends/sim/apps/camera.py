"""Camera (com.android.camera2): a viewfinder with a shutter, Photo/Video modes and a filmstrip preview.

A photo is written at once to Pictures/ (AndroidWorld's PHOTOS_DATA, /sdcard/Pictures); in Video mode the
shutter starts recording and the stop button writes the clip to Movies/ (VIDEOS_DATA). File names follow the
AOSP camera's IMG_/VID_ + timestamp pattern, from device time.
"""

from __future__ import annotations

import posixpath
from typing import Any

from voyager_gym.backends.sim import widgets as w
from voyager_gym.backends.sim.device import SDCARD, DeviceState
from voyager_gym.backends.sim.ui import DANGER, PAD, UI, WHITE, App, Screen, register_app
from voyager_gym.backends.sim.widgets import SCREEN_W, Node

PKG = "com.android.camera2"
PHOTOS_DIR = f"{SDCARD}/Pictures"
VIDEOS_DIR = f"{SDCARD}/Movies"
DARK = (20, 20, 20)
VIEWFINDER = (58, 66, 60)


def state(dev: DeviceState) -> dict[str, Any]:
    d = dev.data(PKG)
    d.setdefault("mode", "photo")  # photo | video
    d.setdefault("recording_since", None)  # device ms when video recording started
    d.setdefault("last", None)  # path of the last capture (filmstrip)
    d.setdefault("front", False)
    return d


def _unique(dev: DeviceState, folder: str, stem: str, ext: str) -> str:
    path, n = f"{folder}/{stem}{ext}", 1
    while dev.exists(path):
        path, n = f"{folder}/{stem}_{n}{ext}", n + 1
    return path


def take_photo(dev: DeviceState) -> str:
    path = _unique(dev, PHOTOS_DIR, dev.now.strftime("IMG_%Y%m%d_%H%M%S"), ".jpg")
    dev.write_file(path, f"JPEG 4032x3024 camera={'front' if state(dev)['front'] else 'back'}")
    state(dev)["last"] = path
    return path


def stop_video(dev: DeviceState) -> str:
    st = state(dev)
    since = st["recording_since"]
    st["recording_since"] = None
    start = dev.now.fromtimestamp(since / 1000, tz=dev.now.tzinfo)
    path = _unique(dev, VIDEOS_DIR, start.strftime("VID_%Y%m%d_%H%M%S"), ".mp4")
    dev.write_file(path, f"MP4 1920x1080 duration_ms={dev.time_ms - since}")
    st["last"] = path
    return path


class CameraScreen(Screen):
    def build(self, ui: UI) -> list[Node]:
        dev = ui.dev
        st = state(dev)
        top, bottom = ui.top, ui.bottom
        rec = st["recording_since"] is not None
        out: list[Node] = [Node(w.FRAME, bounds=(0, top, SCREEN_W, bottom), bg=DARK, a11y=False)]
        vf_bottom = bottom - 560
        out.append(
            Node(
                w.VIEW,
                bounds=(0, top + 140, SCREEN_W, vf_bottom),
                bg=VIEWFINDER,
                a11y=False,
                rid=f"{PKG}:id/preview_content",
            )
        )
        out.append(
            Node(
                w.VIEW,
                bounds=(SCREEN_W // 2 - 260, top + 700, SCREEN_W // 2 + 260, top + 1000),
                bg=(92, 104, 95),
                radius=150,
                a11y=False,
            )
        )
        if rec:
            secs = (dev.time_ms - st["recording_since"]) // 1000
            out.append(
                Node(
                    w.TEXT,
                    text=f"{secs // 60:02d}:{secs % 60:02d}",
                    bounds=(SCREEN_W // 2 - 160, top + 30, SCREEN_W // 2 + 160, top + 110),
                    bg=DANGER,
                    radius=40,
                    fg=WHITE,
                    size=44,
                    align="center",
                    rid=f"{PKG}:id/recording_time",
                )
            )
        else:
            out.append(
                Node(
                    w.IMAGE_BUTTON,
                    desc="Options",
                    bounds=(SCREEN_W - 160, top + 20, SCREEN_W - 40, top + 120),
                    clickable=True,
                    on_click=lambda: None,
                    icon="more",
                    icon_fg=WHITE,
                    rid=f"{PKG}:id/toggle_button",
                )
            )

        def set_mode(m: str) -> None:
            if st["recording_since"] is None:
                st["mode"] = m

        if not rec:
            for label, m, x0 in (
                ("Photo", "photo", SCREEN_W // 2 - 260),
                ("Video", "video", SCREEN_W // 2 + 20),
            ):
                sel = st["mode"] == m
                out.append(
                    Node(
                        w.TEXT,
                        text=label,
                        desc=f"Switch to {label} Mode" if not sel else None,
                        bounds=(x0, vf_bottom + 30, x0 + 240, vf_bottom + 120),
                        clickable=True,
                        selected=sel,
                        on_click=lambda m=m: set_mode(m),
                        bg=(60, 64, 67) if sel else None,
                        radius=45,
                        fg=WHITE if sel else (189, 193, 198),
                        size=40,
                        align="center",
                        rid=f"{PKG}:id/mode_{m}",
                    )
                )
        cy = bottom - 250
        if st["mode"] == "photo":

            def shoot() -> None:
                take_photo(dev)

            out.append(
                Node(
                    w.IMAGE_BUTTON,
                    desc="Shutter",
                    bounds=(SCREEN_W // 2 - 130, cy - 130, SCREEN_W // 2 + 130, cy + 130),
                    clickable=True,
                    on_click=shoot,
                    bg=WHITE,
                    radius=130,
                    border=(189, 193, 198),
                    rid=f"{PKG}:id/shutter_button",
                )
            )
        else:

            def toggle_rec() -> None:
                if st["recording_since"] is None:
                    st["recording_since"] = dev.time_ms
                else:
                    stop_video(dev)

            out.append(
                Node(
                    w.IMAGE_BUTTON,
                    desc="Stop recording" if rec else "Start recording",
                    bounds=(SCREEN_W // 2 - 130, cy - 130, SCREEN_W // 2 + 130, cy + 130),
                    clickable=True,
                    on_click=toggle_rec,
                    bg=WHITE,
                    radius=130,
                    icon="stop" if rec else "record",
                    icon_fg=DANGER,
                    rid=f"{PKG}:id/shutter_button",
                )
            )
        if not rec:
            last = st["last"] if st["last"] and dev.exists(st["last"]) else None
            out.append(
                Node(
                    w.IMAGE_BUTTON,
                    desc="Filmstrip",
                    bounds=(PAD + 30, cy - 90, PAD + 210, cy + 90),
                    clickable=True,
                    on_click=(lambda: ui.push(FilmstripScreen())) if last else None,
                    bg=(120, 130, 122) if last else (60, 64, 67),
                    radius=90,
                    rid=f"{PKG}:id/rounded_thumbnail_view",
                )
            )

            def flip() -> None:
                st["front"] = not st["front"]

            out.append(
                Node(
                    w.IMAGE_BUTTON,
                    desc="Switch to back camera" if st["front"] else "Switch to front camera",
                    bounds=(SCREEN_W - PAD - 210, cy - 90, SCREEN_W - PAD - 30, cy + 90),
                    clickable=True,
                    on_click=flip,
                    icon="flip",
                    icon_fg=WHITE,
                    bg=(60, 64, 67),
                    radius=90,
                    rid=f"{PKG}:id/camera_switch_button",
                )
            )
        return out

    def back(self, ui: UI) -> bool:
        st = state(ui.dev)
        if st["recording_since"] is not None:  # leaving the camera stops and saves the recording
            stop_video(ui.dev)
        return False


class FilmstripScreen(Screen):
    """The last capture, full screen, with Delete (confirmed) as in the AOSP camera's filmstrip."""

    def build(self, ui: UI) -> list[Node]:
        st = state(ui.dev)
        path = st["last"]
        if not path or not ui.dev.exists(path):
            return [
                ui.app_bar("Camera", color=DARK),
                ui.text("No photos or videos", (PAD, 600, SCREEN_W - PAD, 700), fg=WHITE, align="center"),
            ]
        name = posixpath.basename(path)
        y = ui.below_bar()
        return [
            Node(w.FRAME, bounds=(0, ui.top, SCREEN_W, ui.bottom), bg=(0, 0, 0), a11y=False),
            ui.app_bar(name, color=DARK, actions=[("Delete", "delete", lambda: ui.push(DeleteDialog(path)))]),
            Node(
                w.IMAGE,
                desc=name,
                bounds=(0, y + 200, SCREEN_W, y + 1200),
                bg=VIEWFINDER,
                rid=f"{PKG}:id/filmstrip_view",
            ),
        ]


class DeleteDialog(Screen):
    modal = True

    def __init__(self, path: str):
        super().__init__()
        self.path = path

    def build(self, ui: UI) -> list[Node]:
        panel, _ = ui.dialog_box("Delete?", 420, message=f"{posixpath.basename(self.path)} will be deleted.")

        def delete() -> None:
            ui.dev.remove(self.path)
            state(ui.dev)["last"] = None
            ui.pop_to_root()

        ui.dialog_buttons(panel, [("Cancel", ui.pop), ("Delete", delete)])
        return [panel]


@register_app
class Camera(App):
    package = PKG
    name = "Camera"
    aliases = r"camera"
    color = (60, 64, 67)

    def main(self, dev: DeviceState) -> Screen:
        return CameraScreen()

    def setup(self, dev: DeviceState) -> None:
        dev.mkdir(PHOTOS_DIR)
        dev.mkdir(VIDEOS_DIR)
        state(dev)
