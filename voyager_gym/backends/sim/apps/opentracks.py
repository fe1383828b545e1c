"""OpenTracks (de.dennisguse.opentracks): the recorded-tracks list (newest first) and a track's statistics.

Data: `dev.table("tracks")` rows with OpenTracks' `tracks` columns (_id, name, description, category,
activity_type, starttime, stoptime, totaltime, movingtime in ms, totaldistance in m, avgspeed in m/s,
elevationgain, elevationloss in m). Distances are shown in miles and elevations in feet (an en-US phone).
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from voyager_gym.backends.sim import widgets as w
from voyager_gym.backends.sim.device import DeviceState
from voyager_gym.backends.sim.ui import GREY, LIGHT, PAD, UI, App, Screen, register_app
from voyager_gym.backends.sim.widgets import Node

PKG = "de.dennisguse.opentracks"
TRACKS = "tracks"
COLOR = (35, 92, 160)
MILE = 1609.34
TRACK_ROW_H = 250
FOOTER_H = 240


def rid(name: str) -> str:
    return f"{PKG}:id/{name}"


def fmt_distance(meters: float) -> str:
    return f"{meters / MILE:.2f} mi"


def fmt_time(ms: int) -> str:
    s = int(ms // 1000)
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"


def fmt_start(ms: int) -> str:
    return dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC).strftime("%b %-d, %Y %H:%M")


def parse_start(text: str) -> dt.datetime:
    return dt.datetime.strptime(text, "%b %d, %Y %H:%M").replace(tzinfo=dt.UTC)


def sorted_tracks(dev: DeviceState) -> list[dict[str, Any]]:
    return sorted(dev.table(TRACKS), key=lambda t: (-t["starttime"], t["_id"]))


def track_row(ui: UI, t: dict[str, Any], b: w.Bounds) -> Node:
    """A track list item: activity icon, name, start, category, distance and total time."""
    x0, y0, x1, y1 = b
    row = Node(
        w.VIEW_GROUP, bounds=b, clickable=True, border=LIGHT, on_click=lambda: ui.push(TrackScreen(t["_id"]))
    )
    row.add(
        Node(
            w.IMAGE,
            bounds=(x0 + 36, y0 + 60, x0 + 156, y0 + 180),
            icon=f"app:{(t['category'] or '?')[0].upper()}",
            icon_fg=COLOR,
            desc=t["category"] or None,
            a11y=False,
        )
    )
    tx = x0 + 190
    row.add(
        Node(
            w.TEXT,
            text=t["name"],
            bounds=(tx, y0 + 20, x1 - PAD, y0 + 90),
            size=44,
            bold=True,
            rid=rid("trackListItemName"),
        )
    )
    row.add(
        Node(
            w.TEXT,
            text=fmt_start(t["starttime"]),
            bounds=(tx, y0 + 95, x1 - 330, y0 + 155),
            size=34,
            fg=GREY,
            rid=rid("trackListItemDateTime"),
        )
    )
    row.add(
        Node(
            w.TEXT,
            text=t["category"],
            bounds=(x1 - 320, y0 + 95, x1 - PAD, y0 + 155),
            size=34,
            fg=COLOR,
            align="right",
            rid=rid("trackListItemCategory"),
        )
    )
    row.add(
        Node(
            w.TEXT,
            text=fmt_distance(t["totaldistance"]),
            bounds=(tx, y0 + 160, tx + 330, y0 + 225),
            size=38,
            rid=rid("trackListItemDistance"),
        )
    )
    row.add(
        Node(
            w.TEXT,
            text=fmt_time(t["totaltime"]),
            bounds=(tx + 360, y0 + 160, x1 - PAD, y0 + 225),
            size=38,
            rid=rid("trackListItemTotalTime"),
        )
    )
    return row


class TrackListScreen(Screen):
    def build(self, ui: UI) -> list[Node]:
        out = [
            ui.app_bar(
                "OpenTracks",
                back=False,
                actions=[("Search", "search", lambda: None), ("More options", "more", lambda: None)],
            )
        ]
        tracks = sorted_tracks(ui.dev)
        rows = [(TRACK_ROW_H, (lambda b, t=t: track_row(ui, t, b))) for t in tracks]
        if rows:
            rows.append((FOOTER_H, lambda b: Node(w.VIEW, bounds=b, a11y=False)))
        out.append(ui.list("tracks", rows, empty="Start recording your first track!"))
        out.append(ui.fab("Record", lambda: ui.toast("Waiting for GPS signal…"), icon="record"))
        return out


class TrackScreen(Screen):
    """Track details: the statistics OpenTracks shows for a recorded track."""

    def __init__(self, track_id: int):
        super().__init__()
        self.track_id = track_id

    def build(self, ui: UI) -> list[Node]:
        t = next((r for r in ui.dev.table(TRACKS) if r["_id"] == self.track_id), None)
        if t is None:
            return [ui.app_bar("Track")]
        hours = max(t["totaltime"], 1) / 3_600_000
        stats = [
            ("Distance", fmt_distance(t["totaldistance"])),
            ("Total time", fmt_time(t["totaltime"])),
            ("Moving time", fmt_time(t["movingtime"])),
            ("Average speed", f"{t['totaldistance'] / MILE / hours:.2f} mi/h"),
            ("Elevation gain", f"{round(t['elevationgain'] * 3.28084)} ft"),
            ("Elevation loss", f"{round(t['elevationloss'] * 3.28084)} ft"),
            ("Activity type", t["category"]),
            ("Started", fmt_start(t["starttime"])),
            ("Description", t["description"] or "-"),
        ]

        def stat(label: str, value: str, b: w.Bounds) -> Node:
            box = Node(w.VIEW_GROUP, bounds=b, border=LIGHT)
            box.add(
                Node(
                    w.TEXT,
                    text=label,
                    bounds=(b[0] + PAD, b[1] + 20, b[2] - PAD, b[1] + 80),
                    size=34,
                    fg=GREY,
                    rid=rid("stats_label"),
                )
            )
            box.add(
                Node(
                    w.TEXT,
                    text=value,
                    bounds=(b[0] + PAD, b[1] + 85, b[2] - PAD, b[3] - 15),
                    size=46,
                    lines=2,
                    rid=rid("stats_value"),
                )
            )
            return box

        rows = [
            (200 if len(v) < 40 else 270, (lambda b, lv=lv: stat(lv[0], lv[1], b)))
            for lv in stats
            for v in [lv[1]]
        ]
        return [
            ui.app_bar(
                t["name"],
                actions=[
                    ("Edit", "edit", lambda: None),
                    ("Delete", "delete", lambda: ui.push(ConfirmDelete(t["_id"]))),
                ],
            ),
            ui.list("stats", rows),
        ]


class ConfirmDelete(Screen):
    modal = True

    def __init__(self, track_id: int):
        super().__init__()
        self.track_id = track_id

    def build(self, ui: UI) -> list[Node]:
        panel, _ = ui.dialog_box("Delete track?", 380, "The track will be permanently deleted.")

        def ok() -> None:
            tbl = ui.dev.table(TRACKS)
            tbl[:] = [r for r in tbl if r["_id"] != self.track_id]
            ui.pop_to_root()

        ui.dialog_buttons(panel, [("Cancel", ui.pop), ("OK", ok)])
        return [panel]


@register_app
class OpenTracks(App):
    package = PKG
    name = "OpenTracks"
    aliases = r"open tracks sports tracker|activity tracker|open tracks|opentracks"
    color = COLOR

    def main(self, dev: DeviceState) -> Screen:
        return TrackListScreen()
