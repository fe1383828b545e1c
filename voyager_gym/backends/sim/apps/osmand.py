"""OsmAnd (net.osmand): an offline map of Liechtenstein with search, favourites, map markers and route plans.

Data lives where OsmAnd keeps it and AndroidWorld reads it: favourites as GPX waypoints in
`files/favorites/favorites.gpx`, saved tracks as GPX files (trk/trkseg/trkpt) in `files/tracks/`, and map
markers as rows of the `map_markers` table (OsmAnd's map_markers_db columns). The map view (its centre,
zoom and the point whose context menu is open) is app state in `dev.data(PKG)`.

A search result opens the point's context menu (Add to favourites, Marker, Share, Actions); the menu's
"Plan a route" builds a track point by point: the map centre (moved by searching) is added with "Add point"
and the plan is saved as a new track.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any
from xml.etree import ElementTree as ET

from voyager_gym.backends.sim import widgets as w
from voyager_gym.backends.sim.device import SDCARD, DeviceState
from voyager_gym.backends.sim.ui import GREY, INK, LIGHT, PAD, UI, WHITE, App, Screen, register_app
from voyager_gym.backends.sim.widgets import SCREEN_W, Node

PKG = "net.osmand"
FILES = f"{SDCARD}/Android/data/{PKG}/files"
FAVORITES = f"{FILES}/favorites/favorites.gpx"
TRACKS_DIR = f"{FILES}/tracks"
# Older versions kept favourites (and backups of them) in the app's private files.
LEGACY_FAVORITES = f"/data/data/{PKG}/files/favourites_bak.gpx"
BACKUP_DIR = f"/data/data/{PKG}/files/backup"
MARKERS = "map_markers"
GPX_NS = "http://www.topografix.com/GPX/1/1"
COLOR = (255, 136, 0)
LAND = (242, 239, 233)
WATER = (170, 211, 223)
ROW_H = 168
HOME = (47.155, 9.545)  # the map opens over Liechtenstein
ZOOM = 11


@dataclass(frozen=True)
class Place:
    name: str
    kind: str
    lat: float
    lon: float


# The offline map's searchable places (the settlements AndroidWorld names carry its coordinates).
PLACES = (
    Place("Balzers", "Town", 47.0688832, 9.5061564),
    Place("Bendern", "Village", 47.2122151, 9.5062101),
    Place("Malbun", "Village", 47.1026191, 9.6083057),
    Place("Nendeln", "Village", 47.1973857, 9.5430636),
    Place("Oberplanken", "Hamlet", 47.1784977, 9.5450163),
    Place("Planken", "Village", 47.1858882, 9.5452201),
    Place("Rotenboden", "Hamlet", 47.1275785, 9.5387131),
    Place("Ruggell", "Village", 47.23976, 9.5262837),
    Place("Schaan", "Town", 47.1663432, 9.5103085),
    Place("Schaanwald", "Village", 47.2165476, 9.5699984),
    Place("Schönberg", "Hamlet", 47.1303814, 9.5930117),
    Place("Triesen", "Town", 47.106997, 9.5274854),
    Place("Vaduz", "City", 47.1410, 9.5215),
    Place("Triesenberg", "Village", 47.1180, 9.5430),
    Place("Eschen", "Village", 47.2107, 9.5223),
    Place("Mauren", "Village", 47.2194, 9.5431),
    Place("Gamprin", "Village", 47.2207, 9.5093),
    Place("Schellenberg", "Village", 47.2307, 9.5466),
    Place("Steg", "Hamlet", 47.1143, 9.5710),
    Place("Gaflei", "Hamlet", 47.1430, 9.5440),
    Place("Masescha", "Hamlet", 47.1331, 9.5545),
    Place("Mäls", "Hamlet", 47.0600, 9.4960),
    Place("Schaan-Vaduz", "Railway station", 47.1650, 9.5085),
    Place("Nendeln Bahnhof", "Railway station", 47.1985, 9.5435),
    Place("Malbunbahn", "Chairlift", 47.1010, 9.6070),
    Place("Planknerstrasse", "Street", 47.1800, 9.5330),
)
SETTLEMENTS = ("City", "Town", "Village", "Hamlet")


def rid(name: str) -> str:
    return f"{PKG}:id/{name}"


def state(dev: DeviceState) -> dict[str, Any]:
    d = dev.data(PKG)
    d.setdefault("center", list(HOME))
    d.setdefault("center_name", None)
    d.setdefault("zoom", ZOOM)
    d.setdefault("selected", None)
    return d


def fmt_coords(lat: float, lon: float) -> str:
    return f"{lat:.5f}, {lon:.5f}"


# -- search --------------------------------------------------------------------------------------------
def parse_coords(query: str) -> tuple[float, float] | None:
    """A "lat, lon" query: exactly two numbers and no letters, in range."""
    if re.search(r"[^\W\d_]", query):
        return None
    nums = re.findall(r"-?\d+(?:\.\d+)?|-?\.\d+", query)
    if len(nums) != 2:
        return None
    lat, lon = float(nums[0]), float(nums[1])
    return (lat, lon) if abs(lat) <= 90 and abs(lon) <= 180 else None


def search(query: str) -> list[dict[str, Any]]:
    """Results for a query as OsmAnd lists them: every query word starts a word of the place's name, type or
    country; exact names first. A coordinate query gives that location."""
    coords = parse_coords(query)
    if coords is not None:
        return [{"name": f"{coords[0]}, {coords[1]}", "kind": "Location", "lat": coords[0], "lon": coords[1]}]
    words = re.findall(r"\w+", query.lower())
    if not words:
        return []
    out = []
    for p in PLACES:
        hay = re.findall(r"\w+", f"{p.name} {p.kind} liechtenstein".lower())
        if all(any(h.startswith(q) for h in hay) for q in words):
            out.append(p)
    out.sort(key=lambda p: (p.name.lower() != words[0], not p.name.lower().startswith(words[0]), p.name))
    return [{"name": p.name, "kind": p.kind, "lat": p.lat, "lon": p.lon} for p in out]


# -- storage ---------------------------------------------------------------------------------------------
ET.register_namespace("", GPX_NS)


def gpx_tag(tag: str) -> str:
    return f"{{{GPX_NS}}}{tag}"


def gpx_root() -> ET.Element:
    return ET.Element(gpx_tag("gpx"), {"version": "1.1", "creator": "OsmAnd"})


def gpx_text(root: ET.Element) -> str:
    return "<?xml version='1.0' encoding='UTF-8' standalone='yes' ?>\n" + ET.tostring(
        root, encoding="unicode"
    )


def parse_gpx(text: str | None) -> ET.Element | None:
    if text is None:
        return None
    try:
        return ET.fromstring(text)
    except ET.ParseError:
        return None


def favorites(dev: DeviceState) -> list[dict[str, Any]]:
    root = parse_gpx(dev.read_file(FAVORITES))
    out = []
    for wpt in [] if root is None else root.findall(gpx_tag("wpt")):
        name = wpt.find(gpx_tag("name"))
        out.append(
            {
                "name": name.text if name is not None else "",
                "lat": float(wpt.get("lat", "nan")),
                "lon": float(wpt.get("lon", "nan")),
            }
        )
    return out


def add_favorite(dev: DeviceState, name: str, lat: float, lon: float, desc: str = "") -> None:
    root = parse_gpx(dev.read_file(FAVORITES))
    root = gpx_root() if root is None else root
    wpt = ET.SubElement(root, gpx_tag("wpt"), {"lat": f"{lat:.7f}", "lon": f"{lon:.7f}"})
    ET.SubElement(wpt, gpx_tag("time")).text = dev.now.strftime("%Y-%m-%dT%H:%M:%SZ")
    ET.SubElement(wpt, gpx_tag("name")).text = name
    if desc:
        ET.SubElement(wpt, gpx_tag("desc")).text = desc
    dev.write_file(FAVORITES, gpx_text(root))


def add_marker(dev: DeviceState, name: str, lat: float, lon: float) -> None:
    """A row as OsmAnd's MapMarkersDbHelper writes it (active, added now, default group)."""
    rows = dev.table(MARKERS)
    rows.append(
        {
            "marker_id": f"{lat:.7f},{lon:.7f},{dev.new_id()}",
            "marker_lat": lat,
            "marker_lon": lon,
            "marker_description": name,
            "marker_active": 1,
            "marker_added": dev.time_ms,
            "marker_visited": 0,
            "group_name": "",
            "group_key": "",
            "marker_color": len(rows) % 5,
            "marker_next_key": "",
            "marker_disabled": 0,
            "marker_selected": 0,
            "marker_map_object_name": "",
            "title": name,
        }
    )


def tracks(dev: DeviceState) -> list[str]:
    return dev.listdir(TRACKS_DIR)[1]


def track_points(dev: DeviceState, file: str) -> list[tuple[float, float]]:
    root = parse_gpx(dev.read_file(f"{TRACKS_DIR}/{file}"))
    if root is None:
        return []
    return [
        (float(p.get("lat", "nan")), float(p.get("lon", "nan")))
        for trk in root.findall(gpx_tag("trk"))
        for seg in trk.findall(gpx_tag("trkseg"))
        for p in seg.findall(gpx_tag("trkpt"))
    ]


def save_track(dev: DeviceState, name: str, points: list[dict[str, Any]]) -> str:
    """Write a plan as a new GPX track (a free file name: "x", "x_2", ...); returns the file name."""
    stem = re.sub(r'[\\/:*?"<>|]', "_", name.strip()) or "Track"
    file, n = f"{stem}.gpx", 1
    while dev.exists(f"{TRACKS_DIR}/{file}"):
        n += 1
        file = f"{stem}_{n}.gpx"
    root = gpx_root()
    ET.SubElement(ET.SubElement(root, gpx_tag("metadata")), gpx_tag("name")).text = stem
    trk = ET.SubElement(root, gpx_tag("trk"))
    ET.SubElement(trk, gpx_tag("name")).text = stem
    seg = ET.SubElement(trk, gpx_tag("trkseg"))
    for p in points:
        ET.SubElement(seg, gpx_tag("trkpt"), {"lat": f"{p['lat']:.7f}", "lon": f"{p['lon']:.7f}"})
    dev.write_file(f"{TRACKS_DIR}/{file}", gpx_text(root))
    return file


# -- the map ---------------------------------------------------------------------------------------------
def map_canvas(ui: UI, b: w.Bounds, route: list[dict[str, Any]] = ()) -> Node:
    """The drawn map: land, the Rhine, settlement labels, favourite and marker pins, a route, the centre."""
    st = state(ui.dev)
    lat0, lon0 = st["center"]
    ppd_lat = 8000 * 2 ** (st["zoom"] - ZOOM)
    ppd_lon = ppd_lat * math.cos(math.radians(lat0))
    cx, cy = (b[0] + b[2]) // 2, (b[1] + b[3]) // 2

    def xy(lat: float, lon: float) -> tuple[int, int]:
        return int(cx + (lon - lon0) * ppd_lon), int(cy - (lat - lat0) * ppd_lat)

    def inside(x: int, y: int, m: int = 0) -> bool:
        return b[0] + m <= x < b[2] - m and b[1] + m <= y < b[3] - m

    canvas = Node(w.VIEW, bounds=b, bg=LAND, clip=True, a11y=False, rid=rid("map_view"))

    def pan(direction: str) -> None:
        """Dragging the map: a scroll shows what lies that way, half a screen further."""
        dlat = (b[3] - b[1]) / 2 / ppd_lat
        dlon = (b[2] - b[0]) / 2 / ppd_lon
        dy, dx = {"down": (-dlat, 0), "up": (dlat, 0), "left": (0, -dlon), "right": (0, dlon)}[direction]
        st["center"] = [round(lat0 + dy, 7), round(lon0 + dx, 7)]
        st["center_name"] = None

    canvas.on_scroll = pan
    half_w = max(22, int(0.0006 * ppd_lon))
    for i in range(160):  # the Rhine along the western border
        lat = 47.04 + i * 0.0015
        x, y = xy(lat, 9.485 + 0.012 * math.sin(lat * 60))
        h = int(0.001 * ppd_lat) + 4
        if inside(x, y, -200):
            canvas.add(Node(w.VIEW, bounds=(x - half_w, y - h, x + half_w, y + h), bg=WATER, a11y=False))
    for p in PLACES:
        x, y = xy(p.lat, p.lon)
        if p.kind in SETTLEMENTS and inside(x, y, 40):
            canvas.add(Node(w.VIEW, bounds=(x - 10, y - 10, x + 10, y + 10), bg=GREY, radius=10, a11y=False))
            canvas.add(
                Node(
                    w.TEXT,
                    text=p.name,
                    bounds=(x - 150, y + 12, x + 150, y + 56),
                    size=30,
                    fg=INK,
                    align="center",
                    a11y=False,
                )
            )
    pins = [(f["lat"], f["lon"], (245, 180, 0)) for f in favorites(ui.dev)]
    pins += [(m["marker_lat"], m["marker_lon"], (220, 50, 50)) for m in ui.dev.table(MARKERS)]
    pins += [(p["lat"], p["lon"], (40, 110, 220)) for p in route]
    for lat, lon, color in pins:
        x, y = xy(lat, lon)
        if inside(x, y):
            canvas.add(Node(w.VIEW, bounds=(x - 18, y - 18, x + 18, y + 18), bg=color, radius=18, a11y=False))
    canvas.add(Node(w.VIEW, bounds=(cx - 4, cy - 40, cx + 4, cy + 40), bg=INK, a11y=False))
    canvas.add(Node(w.VIEW, bounds=(cx - 40, cy - 4, cx + 40, cy + 4), bg=INK, a11y=False))
    return canvas


def round_button(desc: str, icon: str | None, b: w.Bounds, on_click, text: str | None = None) -> Node:
    return Node(
        w.IMAGE_BUTTON,
        desc=desc,
        text=text,
        bounds=b,
        clickable=True,
        on_click=on_click,
        icon=icon,
        icon_fg=INK,
        fg=INK,
        size=60,
        align="center",
        bg=WHITE,
        radius=(b[2] - b[0]) // 2,
        rid=rid(desc.lower().replace(" ", "_")),
    )


def zoom_buttons(ui: UI, y: int) -> list[Node]:
    st = state(ui.dev)

    def zoom(d: int) -> None:
        st["zoom"] = min(17, max(8, st["zoom"] + d))

    x0 = SCREEN_W - 180
    return [
        round_button("Zoom in", None, (x0, y, x0 + 144, y + 144), lambda: zoom(1), text="+"),
        round_button("Zoom out", None, (x0, y + 168, x0 + 144, y + 312), lambda: zoom(-1), text="−"),
    ]


class MapScreen(Screen):
    """The map with its controls; a selected point's context menu slides up from the bottom."""

    def build(self, ui: UI) -> list[Node]:
        st = state(ui.dev)
        top, bottom = ui.top, ui.bottom
        out = [map_canvas(ui, (0, top, SCREEN_W, bottom))]
        out.append(
            round_button("Search", "search", (36, top + 36, 180, top + 180), lambda: ui.push(SearchScreen()))
        )
        out.append(
            round_button(
                "Configure map",
                "more",
                (204, top + 36, 348, top + 180),
                lambda: ui.toast("Map style: OsmAnd (offline)"),
            )
        )
        out += zoom_buttons(ui, (top + bottom) // 2 - 160)
        sel = st["selected"]
        if sel is None:
            out.append(
                round_button(
                    "Menu", "menu", (36, bottom - 204, 204, bottom - 36), lambda: ui.push(MenuSheet())
                )
            )
            out.append(
                round_button(
                    "My location",
                    "record",
                    (SCREEN_W - 204, bottom - 204, SCREEN_W - 36, bottom - 36),
                    lambda: ui.toast("Location unavailable"),
                )
            )
            return out
        out.append(self.context_menu(ui, sel))
        return out

    def context_menu(self, ui: UI, sel: dict[str, Any]) -> Node:
        y0, y1 = ui.bottom - 560, ui.bottom
        panel = Node(
            w.FRAME, bounds=(0, y0, SCREEN_W, y1), bg=WHITE, radius=36, absorb=True, rid=rid("context_menu")
        )
        lines = [
            (sel["name"], SCREEN_W - 200, 52, INK, "context_menu_line1"),
            (f"{sel['kind']} • Liechtenstein", SCREEN_W - 200, 36, GREY, "context_menu_line2"),
            (fmt_coords(sel["lat"], sel["lon"]), SCREEN_W - PAD, 36, GREY, "context_menu_coords"),
        ]
        y = y0 + 40
        for text, x1, size, fg, name in lines:
            h = size + 28
            panel.add(ui.text(text, (PAD, y, x1, y + h), size=size, fg=fg, bold=size > 40, rid=rid(name)))
            y += h + 4

        def close() -> None:
            state(ui.dev)["selected"] = None

        panel.add(
            Node(
                w.IMAGE_BUTTON,
                desc="Close",
                bounds=(SCREEN_W - 168, y0 + 36, SCREEN_W - 48, y0 + 156),
                clickable=True,
                on_click=close,
                icon="close",
                icon_fg=GREY,
            )
        )

        def marker() -> None:
            add_marker(ui.dev, sel["name"], sel["lat"], sel["lon"])
            ui.toast(f"Marker added: {sel['name']}")

        actions = [
            ("Add", "add", lambda: ui.push(FavoriteScreen(sel))),
            ("Marker", "record", marker),
            ("Share", "send", lambda: ui.toast("Copied to clipboard")),
            ("Actions", "more", lambda: ui.push(ActionsSheet(sel))),
        ]
        bw = (SCREEN_W - 2 * PAD) // len(actions)
        for i, (label, icon, handler) in enumerate(actions):
            x = PAD + i * bw
            btn = Node(
                w.LINEAR,
                bounds=(x, y0 + 270, x + bw, y0 + 470),
                clickable=True,
                on_click=handler,
                desc=None,
                rid=rid(f"context_menu_{label.lower()}"),
            )
            btn.add(
                Node(
                    w.IMAGE,
                    bounds=(x + bw // 2 - 48, y0 + 290, x + bw // 2 + 48, y0 + 386),
                    icon=icon,
                    icon_fg=COLOR,
                    a11y=False,
                )
            )
            btn.add(ui.text(label, (x, y0 + 395, x + bw, y0 + 455), size=36, fg=COLOR, align="center"))
            panel.add(btn)
        return panel

    def back(self, ui: UI) -> bool:
        st = state(ui.dev)
        if st["selected"] is not None:
            st["selected"] = None
            return True
        return False


class SearchScreen(Screen):
    """Search by name or coordinates. `for_route`: a pick moves the plan's map centre instead of opening the
    point's context menu."""

    def __init__(self, for_route: bool = False):
        super().__init__()
        self.for_route = for_route
        self.focus = "query"

    def build(self, ui: UI) -> list[Node]:
        bar = ui.search_bar(WHITE)
        for n in bar.walk():
            if n.cls == w.IMAGE_BUTTON:
                n.icon_fg = INK
            if n.cls == w.EDIT:
                n.hint = "Search address, place, coordinates"
                n.bg = (241, 243, 244)
        query = self.field("query").strip()
        results = search(query) if query else []

        def pick(r: dict[str, Any]) -> None:
            st = state(ui.dev)
            st["center"] = [r["lat"], r["lon"]]
            st["zoom"] = max(st["zoom"], 13)
            if self.for_route:
                st["center_name"] = r["name"]
            else:
                st["selected"] = r
            ui.pop()

        rows = [
            (
                ROW_H,
                (
                    lambda b, r=r: ui.item(
                        r["name"],
                        b,
                        on_click=lambda r=r: pick(r),
                        subtitle=f"{r['kind']} • Liechtenstein",
                        icon="search",
                        rid=rid("title"),
                    )
                ),
            )
            for r in results
        ]
        empty = "Nothing found" if query else "Type a place name or coordinates (lat, lon)"
        return [bar, ui.list("results", rows, y0=ui.top + 168, empty=empty)]


class FavoriteScreen(Screen):
    """Add favourite: name (the point's name by default), description, the default group."""

    def __init__(self, place: dict[str, Any]):
        super().__init__()
        self.place = dict(place)
        self.fields["name"] = place["name"]

    def build(self, ui: UI) -> list[Node]:
        y = ui.below_bar() + 48

        def save() -> None:
            name = self.field("name").strip()
            if not name:
                ui.toast("Enter a name")
                return
            add_favorite(
                ui.dev, name, self.place["lat"], self.place["lon"], self.field("description").strip()
            )
            ui.toast("Favorite added")
            ui.pop()

        return [
            ui.app_bar("Add favorite"),
            ui.text("Name", (PAD, y, SCREEN_W - PAD, y + 60), size=34, fg=GREY),
            ui.field("name", (PAD, y + 64, SCREEN_W - PAD, y + 200), hint="Name"),
            ui.text("Description", (PAD, y + 240, SCREEN_W - PAD, y + 300), size=34, fg=GREY),
            ui.field("description", (PAD, y + 304, SCREEN_W - PAD, y + 440), hint="Description"),
            ui.item("Group", (0, y + 480, SCREEN_W, y + 480 + ROW_H), subtitle="Favorites", icon="folder"),
            ui.button(
                "Save", (SCREEN_W - 360, y + 720, SCREEN_W - PAD, y + 850), save, rid=rid("save_button")
            ),
        ]


class _Sheet(Screen):
    """A bottom sheet of menu rows over the map."""

    modal = True
    title = ""

    def rows(self, ui: UI) -> list[tuple[str, str, Any]]:
        raise NotImplementedError

    def build(self, ui: UI) -> list[Node]:
        rows = self.rows(ui)
        y0 = ui.bottom - 140 - ROW_H * len(rows)
        panel = Node(w.FRAME, bounds=(0, y0, SCREEN_W, ui.bottom), bg=WHITE, radius=36, absorb=True)
        panel.add(ui.text(self.title, (PAD, y0 + 30, SCREEN_W - PAD, y0 + 110), size=46, bold=True))
        for i, (label, icon, handler) in enumerate(rows):
            y = y0 + 130 + i * ROW_H
            panel.add(ui.item(label, (0, y, SCREEN_W, y + ROW_H), on_click=handler, icon=icon))
        return [panel]


class MenuSheet(_Sheet):
    title = "Menu"

    def rows(self, ui: UI) -> list[tuple[str, str, Any]]:
        def go(screen: Screen) -> None:
            ui.pop()
            ui.push(screen)

        return [
            ("Search", "search", lambda: go(SearchScreen())),
            ("My Places", "folder", lambda: go(MyPlacesScreen())),
            ("Map markers", "record", lambda: go(MarkersScreen())),
            ("Plan a route", "edit", lambda: go(PlanRouteScreen())),
        ]


class ActionsSheet(_Sheet):
    title = "Actions"

    def __init__(self, place: dict[str, Any]):
        super().__init__()
        self.place = dict(place)

    def rows(self, ui: UI) -> list[tuple[str, str, Any]]:
        def plan() -> None:
            st = state(ui.dev)
            st["selected"] = None
            st["center_name"] = self.place["name"]
            ui.pop()
            ui.push(PlanRouteScreen([self.place]))

        def nearby() -> None:
            ui.pop()
            ui.push(SearchScreen())

        return [("Plan a route", "edit", plan), ("Search nearby", "search", nearby)]


class MyPlacesScreen(Screen):
    """Favourites and saved tracks, in two tabs."""

    def __init__(self) -> None:
        super().__init__()
        self.tab = "Favorites"

    def build(self, ui: UI) -> list[Node]:
        out = [ui.app_bar("My Places")]
        y = ui.below_bar()
        for i, tab in enumerate(("Favorites", "Tracks")):
            x = i * SCREEN_W // 2
            out.append(
                Node(
                    w.TEXT,
                    text=tab,
                    bounds=(x, y, x + SCREEN_W // 2, y + 140),
                    clickable=True,
                    selected=tab == self.tab,
                    on_click=lambda t=tab: setattr(self, "tab", t),
                    align="center",
                    bold=True,
                    fg=COLOR if tab == self.tab else GREY,
                    border=COLOR if tab == self.tab else LIGHT,
                    size=42,
                    rid=rid("tab"),
                )
            )
        if self.tab == "Favorites":
            items = [(f["name"], fmt_coords(f["lat"], f["lon"])) for f in favorites(ui.dev)]
            empty = "No favorites yet"
        else:
            items = [
                (f.removesuffix(".gpx"), f"{len(track_points(ui.dev, f))} points") for f in tracks(ui.dev)
            ]
            empty = "No tracks yet"
        rows = [(ROW_H, (lambda b, t=t: ui.item(t[0], b, subtitle=t[1], icon="file"))) for t in items]
        out.append(ui.list("places", rows, y0=y + 140, empty=empty))
        return out


class MarkersScreen(Screen):
    def build(self, ui: UI) -> list[Node]:
        rows = [
            (
                ROW_H,
                (
                    lambda b, m=m: ui.item(
                        m["title"] or fmt_coords(m["marker_lat"], m["marker_lon"]),
                        b,
                        subtitle=fmt_coords(m["marker_lat"], m["marker_lon"]),
                        icon="record",
                    )
                ),
            )
            for m in ui.dev.table(MARKERS)
            if m["marker_active"]
        ]
        return [ui.app_bar("Map markers"), ui.list("markers", rows, empty="No markers yet")]


class PlanRouteScreen(Screen):
    """Plan a route: points are added at the map centre; the plan is saved as a GPX track."""

    def __init__(self, points: list[dict[str, Any]] | None = None):
        super().__init__()
        self.points = [dict(p) for p in points or []]

    def build(self, ui: UI) -> list[Node]:
        st = state(ui.dev)
        panel_y = ui.bottom - 820
        out = [
            map_canvas(ui, (0, ui.top, SCREEN_W, panel_y), self.points),
            ui.app_bar("Plan a route", actions=[("Search", "search", lambda: ui.push(SearchScreen(True)))]),
        ]
        out += zoom_buttons(ui, ui.below_bar() + 40)
        panel = Node(w.FRAME, bounds=(0, panel_y, SCREEN_W, ui.bottom), bg=WHITE, absorb=True)
        lat, lon = st["center"]
        center = st["center_name"] or fmt_coords(lat, lon)
        km = sum(
            111.2 * math.hypot(a["lat"] - b["lat"], (a["lon"] - b["lon"]) * math.cos(math.radians(a["lat"])))
            for a, b in zip(self.points, self.points[1:], strict=False)
        )
        panel.add(
            ui.text(
                f"{len(self.points)} points • {km:.2f} km",
                (PAD, panel_y + 24, SCREEN_W - PAD, panel_y + 90),
                size=40,
                bold=True,
                rid=rid("route_summary"),
            )
        )
        panel.add(ui.text("Map centre:", (PAD, panel_y + 96, 330, panel_y + 156), size=36, fg=GREY))
        panel.add(
            ui.text(
                center, (330, panel_y + 96, SCREEN_W - PAD, panel_y + 156), size=36, rid=rid("center_name")
            )
        )

        def point_row(i: int, p: dict[str, Any], b: w.Bounds) -> Node:
            row = Node(w.LINEAR, bounds=b, border=LIGHT)
            row.add(ui.text(f"{i + 1}.", (b[0] + PAD, b[1], b[0] + 140, b[3]), size=38, fg=GREY))
            row.add(ui.text(p["name"], (b[0] + 140, b[1], b[2] - PAD, b[3]), size=40, rid=rid("point_name")))
            return row

        rows = [(110, (lambda b, i=i, p=p: point_row(i, p, b))) for i, p in enumerate(self.points)]
        panel.add(
            ui.list(
                "points",
                rows,
                y0=panel_y + 170,
                y1=ui.bottom - 170,
                empty="Search for a place, then tap Add point",
            )
        )

        def add() -> None:
            self.points.append({"name": center, "lat": lat, "lon": lon})

        def undo() -> None:
            self.points.pop()

        by = ui.bottom - 150
        panel.add(
            ui.button(
                "Undo",
                (PAD, by, 330, by + 120),
                undo,
                style="text",
                rid=rid("undo"),
                enabled=bool(self.points),
            )
        )
        panel.add(ui.button("Add point", (350, by, 700, by + 120), add, rid=rid("add_point")))
        panel.add(
            ui.button(
                "Save",
                (720, by, SCREEN_W - PAD, by + 120),
                lambda: ui.push(SaveTrackDialog(self.points, ui.dev.now.strftime("%Y-%m-%d_%H-%M_%a"))),
                style="text",
                rid=rid("save"),
                enabled=bool(self.points),
            )
        )
        out.append(panel)
        return out


class SaveTrackDialog(Screen):
    modal = True

    def __init__(self, points: list[dict[str, Any]], name: str):
        super().__init__()
        self.points = [dict(p) for p in points]
        self.fields["name"] = name  # OsmAnd proposes the date and time

    def build(self, ui: UI) -> list[Node]:
        panel, y = ui.dialog_box("Save as new track", 520)
        panel.add(ui.field("name", (132, y, SCREEN_W - 132, y + 130), hint="File name", label="File name"))

        def save() -> None:
            save_track(ui.dev, self.field("name"), self.points)
            ui.toast("Track saved")
            ui.pop_to_root()

        ui.dialog_buttons(panel, [("Cancel", ui.pop), ("Save", save)])
        return [panel]


@register_app
class OsmAnd(App):
    package = PKG
    name = "OsmAnd"
    aliases = r"osmand"
    color = COLOR

    def main(self, dev: DeviceState) -> Screen:
        return MapScreen()

    def setup(self, dev: DeviceState) -> None:
        dev.write_file(FAVORITES, gpx_text(gpx_root()))
        dev.mkdir(TRACKS_DIR)
