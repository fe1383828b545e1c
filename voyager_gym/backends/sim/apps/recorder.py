"""Audio Recorder (com.dimowner.audiorecorder): record / pause / stop, a rename dialog after stopping, and a
records list with rename and delete.

Recordings are .m4a files in the app's records folder (AndroidWorld's AUDIORECORDER_DATA). As in the real app,
a new recording is saved as "Record-N.m4a" when it stops; the name dialog renames it, always appending the
.m4a extension to the name typed.
"""

from __future__ import annotations

import datetime as dt
import posixpath
from typing import Any

from voyager_gym.backends.sim import widgets as w
from voyager_gym.backends.sim.device import SDCARD, DeviceState
from voyager_gym.backends.sim.ui import PAD, ROW2_H, UI, WHITE, App, Screen, register_app
from voyager_gym.backends.sim.widgets import SCREEN_W, Node

PKG = "com.dimowner.audiorecorder"
RECORDS_DIR = f"{SDCARD}/Android/data/{PKG}/files/Music/records"
EXT = ".m4a"
BG = (33, 40, 48)
PANEL = (46, 56, 66)
RED = (229, 57, 53)
MUTED = (176, 190, 197)


def state(dev: DeviceState) -> dict[str, Any]:
    d = dev.data(PKG)
    d.setdefault("counter", 1)  # the N of the next "Record-N"
    d.setdefault("recording", None)  # {"since_ms", "accum_ms", "paused"}
    d.setdefault("last", None)  # path of the last saved recording
    return d


def duration_of(content: str) -> int:
    for part in content.split(";"):
        if part.startswith("duration_ms="):
            return int(part.split("=", 1)[1])
    return 0


def fmt_duration(ms: int) -> str:
    s = ms // 1000
    return f"{s // 60:02d}:{s % 60:02d}"


def recordings(dev: DeviceState) -> list[str]:
    """Paths of the recordings, newest first."""
    _, files = dev.listdir(RECORDS_DIR)
    paths = [f"{RECORDS_DIR}/{f}" for f in files]
    return sorted(paths, key=lambda p: (dev.files[p].mtime_ms, p), reverse=True)


def elapsed(dev: DeviceState) -> int:
    r = state(dev)["recording"]
    if r is None:
        return 0
    return r["accum_ms"] + (0 if r["paused"] else dev.time_ms - r["since_ms"])


def stop_recording(dev: DeviceState) -> str:
    """Save the recording in progress as Record-N.m4a; returns its path."""
    st = state(dev)
    ms = elapsed(dev)
    st["recording"] = None
    while True:
        path = f"{RECORDS_DIR}/Record-{st['counter']}{EXT}"
        st["counter"] += 1
        if not dev.exists(path):
            break
    dev.write_file(path, f"M4A AAC 44100Hz;duration_ms={ms}" if ms > 0 else "")
    st["last"] = path
    return path


def rename_recording(ui: UI, path: str, name: str) -> bool:
    """Rename `path` to `name` + .m4a (the app always appends the extension); False with a toast on error."""
    name = name.strip()
    dev = ui.dev
    if not name or "/" in name:
        ui.toast("Incorrect name")
        return False
    target = f"{RECORDS_DIR}/{name}{EXT}"
    if target == path:
        return True
    if dev.exists(target):
        ui.toast("File with this name already exists")
        return False
    entry = dev.files.pop(path)
    dev.files[target] = entry
    if state(dev)["last"] == path:
        state(dev)["last"] = target
    return True


class RecorderScreen(Screen):
    def build(self, ui: UI) -> list[Node]:
        dev = ui.dev
        st = state(dev)
        rec = st["recording"]
        top, bottom = ui.top, ui.bottom
        out: list[Node] = [Node(w.FRAME, bounds=(0, top, SCREEN_W, bottom), bg=BG, a11y=False)]
        out.append(
            Node(
                w.IMAGE_BUTTON,
                desc="Records",
                bounds=(PAD, top + 24, PAD + 120, top + 144),
                clickable=True,
                on_click=lambda: ui.push(RecordsScreen()),
                icon="menu",
                icon_fg=WHITE,
                rid=f"{PKG}:id/btn_records_list",
            )
        )
        out.append(
            Node(
                w.IMAGE_BUTTON,
                desc="Settings",
                bounds=(SCREEN_W - PAD - 120, top + 24, SCREEN_W - PAD, top + 144),
                clickable=True,
                on_click=lambda: ui.toast("Settings"),
                icon="settings",
                icon_fg=WHITE,
                rid=f"{PKG}:id/btn_settings",
            )
        )
        last = st["last"] if st["last"] and dev.exists(st["last"]) else None
        if rec is not None:
            title, sub = "Recording…" if not rec["paused"] else "Recording paused", fmt_duration(elapsed(dev))
        elif last:
            title = posixpath.basename(last)
            sub = fmt_duration(duration_of(dev.read_file(last) or ""))
        else:
            title, sub = "Audio Recorder", "00:00"
        out.append(
            ui.text(
                title,
                (PAD, top + 260, SCREEN_W - PAD, top + 360),
                size=48,
                fg=WHITE,
                align="center",
                rid=f"{PKG}:id/txt_name",
            )
        )
        out.append(
            ui.text(
                sub,
                (PAD, top + 380, SCREEN_W - PAD, top + 560),
                size=120,
                fg=WHITE,
                align="center",
                rid=f"{PKG}:id/txt_progress",
            )
        )
        wave = Node(
            w.VIEW,
            bounds=(0, top + 640, SCREEN_W, top + 1100),
            bg=PANEL,
            a11y=False,
            rid=f"{PKG}:id/recording_view",
        )
        if rec is not None:
            n = min(40, elapsed(dev) // 500)
            for i in range(n):
                h = 40 + (i * 37) % 160
                x = SCREEN_W - 30 - (n - i) * 26
                wave.add(Node(w.VIEW, bounds=(x, top + 870 - h, x + 14, top + 870 + h), bg=RED, a11y=False))
        out.append(wave)

        cy = bottom - 280

        def record() -> None:
            r = state(dev)["recording"]
            if r is None:
                state(dev)["recording"] = {"since_ms": dev.time_ms, "accum_ms": 0, "paused": False}
            elif r["paused"]:
                r.update(since_ms=dev.time_ms, paused=False)
            else:
                r.update(accum_ms=elapsed(dev), paused=True)

        def stop() -> None:
            path = stop_recording(dev)
            ui.push(NameDialog(path))

        def discard() -> None:
            state(dev)["recording"] = None
            ui.toast("Recording deleted")

        rec_desc = (
            "Start recording" if rec is None else ("Resume recording" if rec["paused"] else "Pause recording")
        )
        out.append(
            Node(
                w.IMAGE_BUTTON,
                desc=rec_desc,
                bounds=(SCREEN_W // 2 - 140, cy - 140, SCREEN_W // 2 + 140, cy + 140),
                clickable=True,
                on_click=record,
                bg=RED,
                radius=140,
                icon="pause" if rec is not None and not rec["paused"] else "record",
                icon_fg=WHITE,
                rid=f"{PKG}:id/btn_record",
            )
        )
        if rec is not None:
            out.append(
                Node(
                    w.IMAGE_BUTTON,
                    desc="Stop recording",
                    bounds=(SCREEN_W - 330, cy - 90, SCREEN_W - 150, cy + 90),
                    clickable=True,
                    on_click=stop,
                    bg=PANEL,
                    radius=90,
                    icon="stop",
                    icon_fg=WHITE,
                    rid=f"{PKG}:id/btn_record_stop",
                )
            )
            out.append(
                Node(
                    w.IMAGE_BUTTON,
                    desc="Delete recording",
                    bounds=(150, cy - 90, 330, cy + 90),
                    clickable=True,
                    on_click=discard,
                    bg=PANEL,
                    radius=90,
                    icon="delete",
                    icon_fg=WHITE,
                    rid=f"{PKG}:id/btn_record_delete",
                )
            )
        return out

    def back(self, ui: UI) -> bool:
        if state(ui.dev)["recording"] is not None:  # recording continues in the background service
            ui.home()
            return True
        return False


class NameDialog(Screen):
    """ "Record name" dialog shown after stopping: Save renames the file, Cancel keeps the default name."""

    modal = True

    def __init__(self, path: str):
        super().__init__()
        self.path = path
        self.fields["name"] = posixpath.basename(path)[: -len(EXT)]

    def build(self, ui: UI) -> list[Node]:
        panel, y = ui.dialog_box("Record name", 560)
        panel.add(ui.field("name", (132, y + 10, SCREEN_W - 250, y + 150), hint="Name"))
        panel.add(ui.text(EXT, (SCREEN_W - 240, y + 10, SCREEN_W - 110, y + 150), size=40, fg=(95, 99, 104)))
        ui.dialog_buttons(panel, [("Cancel", ui.pop), ("Save", lambda: self.save(ui))])
        return [panel]

    def save(self, ui: UI) -> None:
        if not ui.dev.exists(self.path) or rename_recording(ui, self.path, self.field("name")):
            ui.pop()

    def submit(self, ui: UI, key: str) -> None:
        self.save(ui)


class RecordsScreen(Screen):
    def build(self, ui: UI) -> list[Node]:
        dev = ui.dev
        paths = recordings(dev)

        def row(p: str, b: w.Bounds) -> Node:
            e = dev.files[p]
            when = dt.datetime.fromtimestamp(e.mtime_ms / 1000, tz=dt.UTC)
            sub = f"{fmt_duration(duration_of(e.content))} · {when:%b %-d, %H:%M}"
            return ui.item(
                posixpath.basename(p),
                b,
                on_click=lambda: ui.push(RecordOptions(p)),
                subtitle=sub,
                icon="play",
                on_long_click=lambda: ui.push(RecordOptions(p)),
            )

        return [
            ui.app_bar("Records", color=PANEL),
            ui.list("records", [(ROW2_H, lambda b, p=p: row(p, b)) for p in paths], empty="No records"),
        ]


class RecordOptions(Screen):
    modal = True

    def __init__(self, path: str):
        super().__init__()
        self.path = path

    def build(self, ui: UI) -> list[Node]:
        panel, y = ui.dialog_box(posixpath.basename(self.path), 560)
        for i, (label, target) in enumerate(
            (
                ("Rename", lambda: ui.replace(RenameDialog(self.path))),
                ("Delete", lambda: ui.replace(DeleteDialog(self.path))),
            )
        ):
            panel.add(
                Node(
                    w.TEXT,
                    text=label,
                    bounds=(72, y + i * 140, SCREEN_W - 72, y + (i + 1) * 140),
                    clickable=True,
                    on_click=target,
                    size=44,
                    pad=60,
                    rid=f"{PKG}:id/menu_{label.lower()}",
                )
            )
        ui.dialog_buttons(panel, [("Cancel", ui.pop)])
        return [panel]


class RenameDialog(NameDialog):
    def build(self, ui: UI) -> list[Node]:
        nodes = super().build(ui)
        for n in nodes[0].walk():
            if n.text == "Record name":
                n.text = "Rename"
        return nodes


class DeleteDialog(Screen):
    modal = True

    def __init__(self, path: str):
        super().__init__()
        self.path = path

    def build(self, ui: UI) -> list[Node]:
        panel, _ = ui.dialog_box(
            "Delete record?", 440, message=f'"{posixpath.basename(self.path)}" will be deleted'
        )

        def delete() -> None:
            ui.dev.remove(self.path)
            ui.pop()

        ui.dialog_buttons(panel, [("Cancel", ui.pop), ("Delete", delete)])
        return [panel]


@register_app
class AudioRecorder(App):
    package = PKG
    name = "Audio Recorder"
    aliases = r"audio recorder"
    color = (229, 57, 53)

    def main(self, dev: DeviceState) -> Screen:
        return RecorderScreen()

    def setup(self, dev: DeviceState) -> None:
        dev.mkdir(RECORDS_DIR)
        state(dev)
