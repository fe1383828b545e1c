"""OsmAnd tasks: add a favourite, add a map marker, save a track through given waypoints.

AndroidWorld's location params are one of twelve Liechtenstein places on its preloaded map, given either by
name ("Balzers, Liechtenstein") or, half the time, by its coordinates ("47.0688832, 9.5061564"). A saved
point matches a location when its coordinates are within 0.001 degrees in both latitude and longitude (and a
favourite also when its name contains the location string). Favourites are read from
favorites/favorites.gpx, markers from the map_markers table, tracks from the GPX files in tracks/.
"""

from __future__ import annotations

import random
import re
import xml.etree.ElementTree as ET
from typing import Any

from voyager_gym.actions import Action
from voyager_gym.backends.sim.apps import osmand as app
from voyager_gym.backends.sim.device import DeviceState
from voyager_gym.backends.sim.tasks.base import (
    SimTask,
    View,
    back,
    click,
    done,
    open_app,
    register_task,
    type_into,
)

# AndroidWorld's preloaded-map locations, in its (sorted) order: the draws index this sequence.
LOCATION_NAMES = (
    "Balzers",
    "Bendern",
    "Malbun",
    "Nendeln",
    "Oberplanken",
    "Planken",
    "Rotenboden",
    "Ruggell",
    "Schaan",
    "Schaanwald",
    "Schönberg",
    "Triesen",
)
_PLACE = {p.name: p for p in app.PLACES}
LOCATIONS = {f"{n}, Liechtenstein": (_PLACE[n].lat, _PLACE[n].lon) for n in LOCATION_NAMES}
DELTA_DEG = 0.001


def random_locations(rng: random.Random, names_only: bool = False, k: int = 1) -> list[str]:
    """`k` distinct locations; unless `names_only`, a coin flip gives them as "lat, lon" strings instead."""
    names = rng.sample(list(LOCATIONS), k)
    if names_only or rng.getrandbits(1):
        return names
    return [f"{LOCATIONS[n][0]}, {LOCATIONS[n][1]}" for n in names]


def location_coords(location: str) -> tuple[float, float] | None:
    """A known place's coordinates, else the two numbers the string holds (None unless exactly two)."""
    if location in LOCATIONS:
        return LOCATIONS[location]
    nums = [float(x) for x in re.findall(r"-?\d*\.?\d+", location)]
    return (nums[0], nums[1]) if len(nums) == 2 else None


def near(a: tuple[float, float], b: tuple[float, float]) -> bool:
    return all(abs(x - y) < DELTA_DEG for x, y in zip(a, b, strict=True))


def target_title(location: str) -> str:
    """The search result a user picks for a location: the place's name, or the coordinates as typed."""
    if location in LOCATIONS:
        return location.split(",")[0]
    lat, lon = location_coords(location) or (0.0, 0.0)
    return f"{lat}, {lon}"


class _OsmAnd(SimTask):
    app_names = ("osmand",)

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return {"location": random_locations(rng)[0]}

    def open_point(self, view: View, location: str) -> Action | None:
        """Steps that bring `location`'s context menu up on the map (None once it is up)."""
        if view.app != app.PKG:
            return open_app("OsmAnd")
        title = target_title(location)
        shown = view.find(rid=app.rid("context_menu_line1"))
        if shown is not None:
            if view.el(shown).text == title:
                return None
            return click(view.find(desc="Close"))
        query = view.find(rid=app.rid("query"))
        if query is not None:
            if view.el(query).text != location:
                return type_into(query, location)
            return click(view.find(text=title, rid=app.rid("title")))
        search = view.find(desc="Search")
        return click(search) if search is not None else back()


@register_task
class OsmAndFavorite(_OsmAnd):
    complexity = 1.3
    template = "Add a favorite location marker for {location} in the OsmAnd maps app."

    def initialize(self, dev: DeviceState) -> None:
        # AndroidWorld empties the favourites files of waypoints and clears the backup folder.
        for path in (app.FAVORITES, app.LEGACY_FAVORITES):
            root = app.parse_gpx(dev.read_file(path))
            if root is not None:
                for wpt in root.findall(app.gpx_tag("wpt")):
                    root.remove(wpt)
                # written back as ElementTree serialises it, without the XML declaration, as there
                dev.write_file(path, ET.tostring(root, encoding="unicode"))
        for f in dev.listdir(app.BACKUP_DIR)[1]:
            dev.remove(f"{app.BACKUP_DIR}/{f}")

    def is_successful(self, dev: DeviceState) -> float:
        root = app.parse_gpx(dev.read_file(app.FAVORITES))
        if root is None:
            return 0.0
        loc = self.params["location"]
        target = location_coords(loc)
        for wpt in root.findall(app.gpx_tag("wpt")):
            name = wpt.find(app.gpx_tag("name"))
            if name is not None and loc in (name.text or ""):
                return 1.0
            try:
                coords = (float(wpt.get("lat")), float(wpt.get("lon")))
            except (TypeError, ValueError):  # a waypoint without coordinates matches by name only
                continue
            if target is not None and near(coords, target):
                return 1.0
        return 0.0

    def expert(self, view: View, mem: dict[str, Any]) -> Action:
        if mem.get("saved"):
            return done()
        if view.title == "Add favorite":
            mem["saved"] = True
            return click(view.find(text="Save"))
        step = self.open_point(view, self.params["location"])
        return step or click(view.find(text="Add"))


@register_task
class OsmAndMarker(_OsmAnd):
    complexity = 2.0
    template = "Add a location marker for {location} in the OsmAnd maps app."

    def is_successful(self, dev: DeviceState) -> float:
        target = location_coords(self.params["location"])
        if target is None:
            return 0.0
        rows = dev.table(app.MARKERS)
        return 1.0 if any(near((r["marker_lat"], r["marker_lon"]), target) for r in rows) else 0.0

    def expert(self, view: View, mem: dict[str, Any]) -> Action:
        if mem.get("added"):
            return done()
        step = self.open_point(view, self.params["location"])
        if step is not None:
            return step
        mem["added"] = True
        return click(view.find(text="Marker"))


def track_matches(points: list[tuple[float, float]], targets: list[tuple[float, float]]) -> bool:
    """The targets occur in order among the track points (each point matches at most one target)."""
    i = 0
    for p in points:
        if near(p, targets[i]):
            i += 1
            if i == len(targets):
                return True
    return False


@register_task
class OsmAndTrack(SimTask):
    app_names = ("osmand",)
    complexity = 12

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        waypoints = random_locations(rng, names_only=True, k=rng.randint(2, 4))
        return {"track_name": f"{waypoints[0]} to {waypoints[-1]}", "waypoints": waypoints}

    @property
    def goal(self) -> str:
        waypoints = self.params["waypoints"]
        if len(waypoints) < 2:
            raise ValueError(f"OsmAndTrack needs at least two waypoints, got {waypoints!r}")
        return (
            f"Save a track with waypoints {', '.join(waypoints)} in the OsmAnd maps app in the same order as"
            " listed."
        )

    def initialize(self, dev: DeviceState) -> None:
        # AndroidWorld removes everything in the tracks folder.
        dirs, files = dev.listdir(app.TRACKS_DIR)
        for name in dirs + files:
            dev.remove(f"{app.TRACKS_DIR}/{name}")
        self.targets = []
        for wp in self.params["waypoints"]:
            coords = location_coords(wp)
            if coords is None:
                raise ValueError(f"waypoint {wp!r} is neither a known place nor 'lat, lon'")
            self.targets.append(coords)

    def is_successful(self, dev: DeviceState) -> float:
        for f in app.tracks(dev):
            if track_matches(app.track_points(dev, f), self.targets):
                return 1.0
        return 0.0

    def expert(self, view: View, mem: dict[str, Any]) -> Action:
        if mem.get("saved"):
            return done()
        if view.app != app.PKG:
            return open_app("OsmAnd")
        waypoints = self.params["waypoints"]
        names = [target_title(wp) for wp in waypoints]
        if view.has(text="Save as new track"):
            mem["saved"] = True
            return click(view.find(text="Save"))
        if view.title == "Plan a route":
            added = [view.el(i).text for i in view.find_all(rid=app.rid("point_name"))]
            if added != names[: len(added)]:
                return click(view.find(rid=app.rid("undo")))
            if len(added) == len(names):
                return click(view.find(rid=app.rid("save")))
            center = view.find(rid=app.rid("center_name"))
            if center is not None and view.el(center).text == names[len(added)]:
                return click(view.find(rid=app.rid("add_point")))
            mem["planning"] = waypoints[len(added)]
            return click(view.find(desc="Search"))
        query = view.find(rid=app.rid("query"))
        if query is not None and mem.get("planning"):
            nxt = mem["planning"]
            if view.el(query).text != nxt:
                return type_into(query, nxt)
            return click(view.find(text=target_title(nxt), rid=app.rid("title")))
        if view.has(text="Plan a route"):  # the menu sheet
            return click(view.find(text="Plan a route"))
        if view.has(rid=app.rid("context_menu_line1")):
            return click(view.find(desc="Close"))
        menu = view.find(desc="Menu")
        return click(menu) if menu is not None else back()
