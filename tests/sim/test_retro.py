"""Retro Music tasks: AndroidWorld's rules on both sides of each line (the playlist join, the playing queue,
the exported file, the 45-50 minute window) and the app behaviours they rest on (selection order, an empty
queue opened by "Add to playing queue", songs under 20 s hidden, Save as file into Downloads)."""

import pytest

from tests.sim.helpers import reset, view
from voyager_gym.actions import Action
from voyager_gym.backends.sim.apps import retro as app
from voyager_gym.backends.sim.tasks.base import click, long_press, open_app, type_into
from voyager_gym.backends.sim.tasks.retro import list_with_sum, pick_lengths, title

TITLE = f"{app.PKG}:id/title"


def _lib(dev):
    return {s["title"]: s for s in app.songs(dev)}


def _wanted(dev, params):
    lib = _lib(dev)
    return [lib[title(f)] for f in params["files"]]


def _noise(dev, params):
    lib = _lib(dev)
    return [lib[title(f)] for f in params["noise_files"] if title(f) in lib]


def _song(name, ms):
    return {
        "id": hash(name) & 0xFFFF,
        "title": name,
        "artist_name": "Ana",
        "duration": ms,
        "data": f"/x/{name}",
    }


# -- RetroCreatePlaylist: AndroidWorld's verify_playlist over the playlist join ------------------------------
def test_create_playlist_rule(backend):
    params = reset(backend, "RetroCreatePlaylist")
    dev = backend.phone.dev
    name, wanted = params["playlist_name"], _wanted(dev, params)
    app.add_to_playlist(dev, name, wanted)
    assert backend.score() == 1.0
    for case, songs, pname in [
        ("reversed", wanted[::-1], name),
        ("one missing", wanted[:-1], name),
        ("a noise song more", wanted + _noise(dev, params)[:1], name),
        ("another name", wanted, "Road Trip Mix"),
        ("name off by more than the fuzz", wanted, name[: len(name) // 2]),
    ]:
        dev.table(app.PLAYLISTS).clear()
        dev.table(app.PLAYLIST_SONGS).clear()
        app.add_to_playlist(dev, pname, songs)
        assert backend.score() == 0.0, case
    for case, pname in [("case ignored", name.upper()), ("one character off (ratio >= 0.9)", name[:-1])]:
        dev.table(app.PLAYLISTS).clear()
        dev.table(app.PLAYLIST_SONGS).clear()
        app.add_to_playlist(dev, pname, wanted)
        assert backend.score() == 1.0, case


def test_create_playlist_positions_come_from_song_keys(backend):
    """Adding a song already in the playlist replaces its row (a new key: it moves to the end); two
    playlists of one name are one partition, ranked by song key across both."""
    params = reset(backend, "RetroCreatePlaylist", seed=3)
    dev = backend.phone.dev
    name, wanted = params["playlist_name"], _wanted(dev, params)
    app.add_to_playlist(dev, name, wanted[1:] + wanted[:1])
    assert backend.score() == 0.0
    app.add_to_playlist(dev, name, wanted[1:])  # re-added: they move behind the first song
    assert backend.score() == 1.0
    dev.table(app.PLAYLISTS).clear()
    dev.table(app.PLAYLIST_SONGS).clear()
    app.add_to_playlist(dev, name, wanted[:1])
    dev.table(app.PLAYLISTS).append({"playlist_id": dev.new_id(), "playlist_name": name})
    app.insert_songs(dev, dev.table(app.PLAYLISTS)[-1]["playlist_id"], wanted[1:])
    assert backend.score() == 1.0


# -- RetroPlayingQueue: the queue's titles equal the wanted ones, in order -----------------------------------
def test_playing_queue_rule(backend):
    params = reset(backend, "RetroPlayingQueue")
    dev = backend.phone.dev
    wanted, noise = _wanted(dev, params), _noise(dev, params)
    app.enqueue(dev, wanted)
    assert backend.score() == 1.0
    app.enqueue(dev, noise[:1])
    assert backend.score() == 0.0, "one song more"
    app.open_queue(dev, noise[:1] + wanted, 1, True)
    assert backend.score() == 0.0, "a song before them, even if playback starts after it"
    app.open_queue(dev, wanted[:-1], 0, False)
    assert backend.score() == 0.0, "one missing"
    app.open_queue(dev, [wanted[1], wanted[0], *wanted[2:]], 0, False)
    assert backend.score() == 0.0, "order"


def test_playing_a_song_queues_the_whole_list(backend):
    """Tapping a song opens the queue with every song listed: the queue task is not solved that way."""
    reset(backend, "RetroPlayingQueue")
    backend.execute(open_app("Retro Music"))
    backend.execute(click(view(backend).find(desc="Songs")))
    backend.execute(click(view(backend).find(rid=TITLE)))
    dev = backend.phone.dev
    assert len(app.queue(dev)) == 15 and app.player(dev)["playing"]
    assert backend.score() == 0.0


def test_selection_keeps_tap_order_for_the_queue(backend):
    params = reset(backend, "RetroPlayingQueue", seed=11)
    wanted = [title(f) for f in params["files"]]
    dev = backend.phone.dev
    backend.execute(open_app("Retro Music"))
    backend.execute(click(view(backend).find(desc="Songs")))
    order = sorted(wanted, key=str.lower)[::-1]  # against the list's A-Z order
    for k, t in enumerate(order):
        v = view(backend)
        while v.find(text=t, rid=TITLE) is None:
            backend.execute(Action("scroll", direction="down", index=v.find(rid=f"{app.PKG}:id/list_song")))
            v = view(backend)
        i = v.find(text=t, rid=TITLE)
        backend.execute(long_press(i) if k == 0 else click(i))
    assert view(backend).has(text=f"{len(order)} selected")
    backend.execute(click(view(backend).find(desc="Add to playing queue")))
    assert [r["title"] for r in app.queue(dev)] == order
    assert not app.player(dev)["playing"]  # an empty queue is opened, not played
    assert backend.score() == (1.0 if order == wanted else 0.0)


# -- RetroSavePlaylist: half for the playlist, half for Download/<name>.m3u ----------------------------------
def test_save_playlist_halves(backend):
    params = reset(backend, "RetroSavePlaylist")
    dev = backend.phone.dev
    name = params["playlist_name"]
    dev.write_file(f"{app.DOWNLOAD_DIR}/{name} (1).m3u", "")
    dev.write_file(f"{app.MUSIC_DIR}/{name}.m3u", "")
    assert backend.score() == 0.0, "a copy's name, or another folder"
    dev.write_file(f"{app.DOWNLOAD_DIR}/{name}.m3u", "")
    assert backend.score() == 0.5
    app.add_to_playlist(dev, name, _wanted(dev, params))
    assert backend.score() == 1.0
    dev.remove(f"{app.DOWNLOAD_DIR}/{name}.m3u")
    assert backend.score() == 0.5


def test_save_as_file_writes_m3u_to_downloads(backend):
    params = reset(backend, "RetroSavePlaylist", seed=4)
    dev = backend.phone.dev
    name, wanted = params["playlist_name"], _wanted(dev, params)
    pid, created = app.add_to_playlist(dev, name, wanted)
    assert created
    backend.execute(open_app("Retro Music"))
    backend.execute(click(view(backend).find(desc="Playlists")))
    backend.execute(click(view(backend).find(text=name, rid=TITLE)))
    backend.execute(click(view(backend).find(desc="More options")))
    backend.execute(click(view(backend).find(text="Save as file")))
    v = view(backend)
    assert v.title == "Downloads" and v.el(v.find(editable=True)).text == f"{name}.m3u"
    backend.execute(click(v.find(text="Save")))
    body = dev.read_file(f"{app.DOWNLOAD_DIR}/{name}.m3u")
    assert body.startswith("#EXTM3U") and body.count("#EXTINF:") == len(wanted)
    assert backend.score() == 1.0
    app.add_to_playlist(dev, name, wanted)  # saving again never overwrites: "name (1).m3u"
    backend.execute(click(view(backend).find(desc="More options")))
    backend.execute(click(view(backend).find(text="Save as file")))
    backend.execute(click(view(backend).find(text="Save")))
    assert f"{app.DOWNLOAD_DIR}/{name} (1).m3u" in dev.files


# -- RetroPlaylistDuration: only the named playlist, total within 45-50 minutes (inclusive) ------------------
@pytest.mark.parametrize(
    ("total_ms", "score"),
    [
        (45 * 60_000, 1.0),
        (45 * 60_000 - 1, 0.0),
        (50 * 60_000, 1.0),
        (50 * 60_000 + 1, 0.0),
        (47 * 60_000 + 30_000, 1.0),
    ],
)
def test_playlist_duration_window(backend, total_ms, score):
    params = reset(backend, "RetroPlaylistDuration")
    dev = backend.phone.dev
    app.add_to_playlist(dev, params["playlist_name"], [_song("a", total_ms - 600_000), _song("b", 600_000)])
    assert backend.score() == score


def test_playlist_duration_name_exact_and_alone(backend):
    params = reset(backend, "RetroPlaylistDuration")
    dev = backend.phone.dev
    name = params["playlist_name"]
    app.add_to_playlist(dev, name.lower(), [_song("a", 47 * 60_000)])
    assert backend.score() == 0.0, "the name is compared exactly here"
    dev.table(app.PLAYLISTS).clear()
    dev.table(app.PLAYLIST_SONGS).clear()
    app.add_to_playlist(dev, name, [_song("a", 47 * 60_000)])
    assert backend.score() == 1.0
    app.add_to_playlist(dev, "Other", [_song("b", 60_000)])
    assert backend.score() == 0.0, "any other playlist with songs fails"
    app.delete_playlist(dev, dev.table(app.PLAYLISTS)[-1]["playlist_id"])
    app.add_to_playlist(dev, "Empty", [])
    assert backend.score() == 1.0, "an empty playlist has no rows in the join"


# -- start states --------------------------------------------------------------------------------------------
def test_start_state_as_androidworld_writes_it(backend):
    for seed in range(5):
        params = reset(backend, "RetroCreatePlaylist", seed=seed)
        dev = backend.phone.dev
        music = sorted(p for p in dev.files if p.startswith(app.MUSIC_DIR))
        assert music == sorted(f"{app.MUSIC_DIR}/{f}" for f in params["files"] + params["noise_files"])
        assert len(music) == 15 and not dev.table(app.PLAYLISTS) and not app.queue(dev)
        for s in app.songs(dev):
            assert 3 * 60_000 <= s["duration"] <= 5 * 60_000 and s["album"] == "Music"


def test_duration_start_state_splits_47_and_a_half_minutes(backend):
    for seed in range(5):
        params = reset(backend, "RetroPlaylistDuration", seed=seed)
        dev = backend.phone.dev
        tagged = {s["title"]: s for s in (app.song_of(dev, p) for p in dev.files if p.endswith(".mp3"))}
        assert sum(tagged[title(f)]["duration"] for f in params["files"]) == int(47.5 * 60_000)
        assert all(3 * 60_000 <= tagged[title(f)]["duration"] <= 5 * 60_000 for f in params["noise_files"])
        shown = {s["title"] for s in app.songs(dev)}  # Retro hides songs under 20 s
        assert shown == {t for t, s in tagged.items() if s["duration"] >= 20_000}


def test_list_with_sum_and_pick_lengths():
    import random

    parts = list_with_sum(random.Random(1), 1000, 7)
    assert len(parts) == 7 and sum(parts) == 1000 and min(parts) >= 0
    # shown lengths are whole seconds: the pick must hold even if each song is up to 1 s longer
    pick = pick_lengths({"a": 1500, "b": 1499, "c": 1200, "d": 300})
    total = sum({"a": 1500, "b": 1499, "c": 1200, "d": 300}[t] for t in pick)
    assert 2700 <= total and total + len(pick) <= 3000


def test_new_playlist_dialog_enter_does_not_create(backend):
    params = reset(backend, "RetroCreatePlaylist")
    dev = backend.phone.dev
    backend.execute(open_app("Retro Music"))
    backend.execute(click(view(backend).find(desc="Playlists")))
    backend.execute(click(view(backend).find(desc="More options")))
    backend.execute(click(view(backend).find(text="New playlist")))
    backend.execute(type_into(view(backend).find(editable=True), params["playlist_name"]))
    assert not dev.table(app.PLAYLISTS), "Enter closes the keyboard only"
    backend.execute(click(view(backend).find(text="Create")))
    assert [p["playlist_name"] for p in dev.table(app.PLAYLISTS)] == [params["playlist_name"]]
    assert backend.score() == 0.0  # an empty playlist


def test_clear_playing_queue_undoes_an_accidental_play(backend):
    """Playing a song fills the queue with the list; the queue page's Clear playing queue empties it, and
    the wanted songs can then be queued."""
    params = reset(backend, "RetroPlayingQueue", seed=2)
    dev = backend.phone.dev
    backend.execute(open_app("Retro Music"))
    backend.execute(click(view(backend).find(desc="Songs")))
    backend.execute(click(view(backend).find(rid=TITLE)))
    backend.execute(click(view(backend).find(desc="Now playing queue")))
    assert len(view(backend).find_all(rid=f"{app.PKG}:id/time")) > 0  # the queue shows lengths
    backend.execute(click(view(backend).find(desc="Clear playing queue")))
    assert not app.queue(dev)
    app.enqueue(dev, _wanted(dev, params))
    assert backend.score() == 1.0
