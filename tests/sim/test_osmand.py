"""OsmAnd: search, favourites, markers and planned tracks through the UI, and near misses for each rule
(0.001 degrees either way, a favourite's name, the waypoints' order, where the files live)."""

import numpy as np
import pytest

from tests.sim.helpers import view
from voyager_gym.actions import Action
from voyager_gym.backends.sim.apps import osmand as app
from voyager_gym.backends.sim.tasks.base import click, open_app, type_into
from voyager_gym.backends.sim.tasks.osmand import LOCATIONS

MALBUN = LOCATIONS["Malbun, Liechtenstein"]


def start(backend, name, **params):
    params.setdefault("seed", 5)
    backend.reset(name, params, np.random.default_rng(0))
    return backend.phone.dev


def tap(backend, **find):
    i = view(backend).find(**find)
    assert i is not None, f"no element {find}"
    backend.execute(click(i))


def search_for(backend, query):
    tap(backend, desc="Search")
    backend.execute(type_into(view(backend).find(rid=app.rid("query")), query))
    return [view(backend).el(i).text for i in view(backend).find_all(rid=app.rid("title"))]


def open_point(backend, query, title):
    """From the map: search `query` and open the context menu of the result `title`."""
    search_for(backend, query)
    tap(backend, text=title, rid=app.rid("title"))


def favorites_gpx(*wpts, ns=app.GPX_NS):
    body = "".join(f'<wpt lat="{lat}" lon="{lon}"><name>{name}</name></wpt>' for name, lat, lon in wpts)
    return f'<gpx xmlns="{ns}" version="1.1">{body}</gpx>'


def track_gpx(*points):
    pts = "".join(f'<trkpt lat="{lat}" lon="{lon}"/>' for lat, lon in points)
    return f'<gpx xmlns="{app.GPX_NS}"><trk><trkseg>{pts}</trkseg></trk></gpx>'


# -- search ----------------------------------------------------------------------------------------------
def test_search_finds_places_by_name_and_coordinates(backend):
    start(backend, "OsmAndMarker", location="Schaan, Liechtenstein")
    backend.execute(open_app("OsmAnd"))
    titles = search_for(backend, "Schaan, Liechtenstein")
    assert titles[0] == "Schaan" and "Schaanwald" in titles and "Schaan-Vaduz" in titles
    assert "Vaduz" not in titles
    backend.execute(Action("navigate_back"))
    assert search_for(backend, "47.1303814, 9.5930117") == ["47.1303814, 9.5930117"]
    tap(backend, text="47.1303814, 9.5930117", rid=app.rid("title"))
    assert view(backend).has(text="Add") and view(backend).has(text="Marker")


# -- OsmAndFavorite ------------------------------------------------------------------------------------
def test_favorite_through_ui_is_written_to_favorites_gpx(backend):
    dev = start(backend, "OsmAndFavorite", location="Malbun, Liechtenstein")
    backend.execute(open_app("OsmAnd"))
    open_point(backend, "Malbun", "Malbun")
    tap(backend, text="Add")
    assert backend.score() == 0.0  # the editor is open, nothing saved yet
    tap(backend, text="Save")
    assert app.favorites(dev) == [{"name": "Malbun", "lat": MALBUN[0], "lon": MALBUN[1]}]
    assert backend.score() == 1.0  # the name "Malbun" does not contain the location: the coordinates match


@pytest.mark.parametrize(
    ("wpt", "score"),
    [
        (("Home", MALBUN[0] + 0.0009, MALBUN[1] - 0.0009), 1.0),
        (("Home", MALBUN[0] + 0.0011, MALBUN[1]), 0.0),
        (("Home", MALBUN[0], MALBUN[1] - 0.0011), 0.0),
        (("Malbun, Liechtenstein (ski)", 47.0, 9.0), 1.0),  # the name contains the location
        (("Malbun", 47.0, 9.0), 0.0),  # contains only part of it
    ],
)
def test_favorite_matches_by_coordinates_or_name(backend, wpt, score):
    dev = start(backend, "OsmAndFavorite", location="Malbun, Liechtenstein")
    dev.write_file(app.FAVORITES, favorites_gpx(wpt))
    assert backend.score() == score


def test_favorite_given_as_coordinates(backend):
    dev = start(backend, "OsmAndFavorite", location="47.1026191, 9.6083057")
    dev.write_file(app.FAVORITES, favorites_gpx(("Malbun", 47.1035, 9.6075)))
    assert backend.score() == 1.0
    dev.write_file(app.FAVORITES, favorites_gpx(("Malbun", 47.1038, 9.6075)))
    assert backend.score() == 0.0


def test_favorite_elsewhere_does_not_count(backend):
    dev = start(backend, "OsmAndFavorite", location="Malbun, Liechtenstein")
    gpx = favorites_gpx(("Malbun", *MALBUN))
    dev.write_file(f"{app.FILES}/favorites/favorites-Ski.gpx", gpx)  # another group's file
    dev.write_file(app.LEGACY_FAVORITES, gpx)
    assert backend.score() == 0.0
    dev.write_file(app.FAVORITES, favorites_gpx(("Malbun", *MALBUN), ns="urn:other"))  # not GPX 1.1
    assert backend.score() == 0.0
    dev.remove(app.FAVORITES)
    assert backend.score() == 0.0


def test_favorite_start_state_clears_waypoints_and_backups(backend):
    dev = start(backend, "OsmAndFavorite", location="Malbun, Liechtenstein")
    dev.write_file(app.FAVORITES, favorites_gpx(("Malbun", *MALBUN)))
    dev.write_file(app.LEGACY_FAVORITES, favorites_gpx(("Malbun", *MALBUN)))
    dev.write_file(f"{app.BACKUP_DIR}/favorites_bak_1.gpx", "x")
    assert backend.score() == 1.0
    backend.task.initialize(dev)  # as on a device left with favourites
    assert app.favorites(dev) == [] and backend.score() == 0.0
    assert "<wpt" not in dev.read_file(app.LEGACY_FAVORITES)
    assert dev.listdir(app.BACKUP_DIR)[1] == []


# -- OsmAndMarker --------------------------------------------------------------------------------------
def test_marker_through_ui(backend):
    dev = start(backend, "OsmAndMarker", location="47.1026191, 9.6083057")
    backend.execute(open_app("OsmAnd"))
    open_point(backend, "47.1026191, 9.6083057", "47.1026191, 9.6083057")
    tap(backend, text="Add")
    tap(backend, text="Save")
    assert backend.score() == 0.0  # a favourite is not a marker
    tap(backend, text="Marker")
    assert [(r["marker_lat"], r["marker_lon"]) for r in dev.table(app.MARKERS)] == [MALBUN]
    assert backend.score() == 1.0


@pytest.mark.parametrize(
    ("row", "score"),
    [
        ((MALBUN[0] - 0.0009, MALBUN[1] + 0.0009, "x"), 1.0),
        ((MALBUN[0] - 0.0011, MALBUN[1], "Malbun, Liechtenstein"), 0.0),  # names are not read
        ((MALBUN[0], MALBUN[1] + 0.0011, "Malbun"), 0.0),
    ],
)
def test_marker_matches_by_coordinates_only(backend, row, score):
    dev = start(backend, "OsmAndMarker", location="Malbun, Liechtenstein")
    app.add_marker(dev, row[2], row[0], row[1])
    assert backend.score() == score


# -- OsmAndTrack ---------------------------------------------------------------------------------------
WAYPOINTS = ["Triesen, Liechtenstein", "Planken, Liechtenstein", "Ruggell, Liechtenstein"]
T, P, R = (LOCATIONS[w] for w in WAYPOINTS)


def start_track(backend):
    return start(backend, "OsmAndTrack", waypoints=WAYPOINTS, track_name="Triesen to Ruggell")


@pytest.mark.parametrize(
    ("points", "score"),
    [
        ([T, P, R], 1.0),
        ([(47.0, 9.4), T, (47.15, 9.53), P, P, R, (47.3, 9.6)], 1.0),  # points between and around
        ([(T[0] + 0.0009, T[1]), P, (R[0], R[1] - 0.0009)], 1.0),
        ([(T[0] + 0.0011, T[1]), P, R], 0.0),
        ([T, R, P], 0.0),  # out of order
        ([T, P], 0.0),  # one missing
    ],
)
def test_track_waypoints_in_order(backend, points, score):
    dev = start_track(backend)
    dev.write_file(f"{app.TRACKS_DIR}/plan.gpx", track_gpx(*points))
    assert backend.score() == score


def test_track_must_be_one_file_in_the_tracks_folder(backend):
    dev = start_track(backend)
    dev.write_file(f"{app.TRACKS_DIR}/a.gpx", track_gpx(T, P))
    dev.write_file(f"{app.TRACKS_DIR}/b.gpx", track_gpx(R))
    assert backend.score() == 0.0  # split over two files
    dev.write_file(f"{app.TRACKS_DIR}/rec/c.gpx", track_gpx(T, P, R))
    assert backend.score() == 0.0  # a sub-folder is not read
    dev.write_file(f"{app.FILES}/c.gpx", track_gpx(T, P, R))
    assert backend.score() == 0.0
    dev.write_file(f"{app.TRACKS_DIR}/c.gpx", track_gpx(T, P, R))
    assert backend.score() == 1.0


def test_track_start_state_clears_tracks(backend):
    dev = start_track(backend)
    assert dev.listdir(app.TRACKS_DIR) == ([], [])
    dev.write_file(f"{app.TRACKS_DIR}/old.gpx", track_gpx(T, P, R))
    dev.write_file(f"{app.TRACKS_DIR}/rec/old.gpx", track_gpx(T, P, R))
    assert backend.score() == 1.0
    backend.task.initialize(dev)  # as on a device left with tracks
    assert dev.listdir(app.TRACKS_DIR) == ([], []) and backend.score() == 0.0


def test_plan_a_route_undo_and_save(backend):
    dev = start_track(backend)
    backend.execute(open_app("OsmAnd"))
    tap(backend, desc="Menu")
    tap(backend, text="Plan a route")
    for name in ("Triesen", "Ruggell", "Planken", "Ruggell"):
        open_point(backend, name, name)
        assert view(backend).has(text=name, rid=app.rid("center_name"))
        tap(backend, text="Add point")
    texts = [view(backend).el(i).text for i in view(backend).find_all(rid=app.rid("point_name"))]
    assert texts == ["Triesen", "Ruggell", "Planken", "Ruggell"]
    tap(backend, text="Save")
    tap(backend, text="Save", rid="android:id/button1")
    assert backend.score() == 1.0  # Triesen, Planken, Ruggell occur in order
    [file] = app.tracks(dev)
    assert file.startswith("2023-10-15_") and app.track_points(dev, file)[1] == pytest.approx(R)
    tap(backend, desc="Menu")
    tap(backend, text="My Places")
    tap(backend, text="Tracks")
    assert view(backend).has(text=file.removesuffix(".gpx"))


def test_map_pans_by_scrolling_and_plans_at_the_centre(backend):
    dev = start_track(backend)
    backend.execute(open_app("OsmAnd"))
    tap(backend, desc="Menu")
    tap(backend, text="Plan a route")
    open_point(backend, "Triesen", "Triesen")
    before = list(app.state(dev)["center"])
    backend.execute(Action("scroll", direction="down"))
    lat, lon = app.state(dev)["center"]
    assert lat < before[0] and lon == before[1]  # south of Triesen now
    assert view(backend).has(text=app.fmt_coords(lat, lon), rid=app.rid("center_name"))
    tap(backend, text="Add point")
    assert view(backend).has(text=app.fmt_coords(lat, lon), rid=app.rid("point_name"))


def test_favorite_without_coordinates_matches_by_name_only(backend):
    dev = start(backend, "OsmAndFavorite", location="Malbun, Liechtenstein")
    dev.write_file(app.FAVORITES, f'<gpx xmlns="{app.GPX_NS}"><wpt><name>Malbun</name></wpt></gpx>')
    assert backend.score() == 0.0
    dev.write_file(
        app.FAVORITES, f'<gpx xmlns="{app.GPX_NS}"><wpt><name>Malbun, Liechtenstein</name></wpt></gpx>'
    )
    assert backend.score() == 1.0


def test_saved_track_takes_the_typed_name_and_never_overwrites(backend):
    dev = start_track(backend)
    backend.execute(open_app("OsmAnd"))
    for _ in range(2):
        tap(backend, desc="Menu")
        tap(backend, text="Plan a route")
        open_point(backend, "Triesen", "Triesen")
        tap(backend, text="Add point")
        tap(backend, text="Save")
        backend.execute(type_into(view(backend).find(rid=app.rid("name")), "Triesen walk"))
        tap(backend, text="Save", rid="android:id/button1")
    assert app.tracks(dev) == ["Triesen walk.gpx", "Triesen walk_2.gpx"]
    assert backend.score() == 0.0  # one waypoint of three
