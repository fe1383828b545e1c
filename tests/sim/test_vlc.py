"""VLC playlist tasks: AndroidWorld's rule (exact files, order, no extras), the add-to-playlist UI and the
player's frames."""

import numpy as np

from voyager_gym.actions import Action
from voyager_gym.backends.sim import widgets as w
from voyager_gym.backends.sim.apps.vlc import (
    PLAYLISTS,
    VIDEOS_DIR,
    add_to_playlist,
    clip_frames,
    duration_s,
    stem,
)


def _reset(backend, name, seed=5):
    params = backend.generate_params(name, seed)
    backend.reset(name, params, np.random.default_rng(0))
    return params, backend.phone.dev


def test_create_playlist_rules(backend):
    params, dev = _reset(backend, "VlcCreatePlaylist")
    name, files = params["playlist_name"], params["files"]
    add_to_playlist(dev, name, list(reversed(files)))
    assert backend.score() == 0.0  # wrong order
    dev.table(PLAYLISTS).clear()
    add_to_playlist(dev, name, files + [params["noise_files"][0]])
    assert backend.score() == 0.0  # an extra file
    dev.table(PLAYLISTS).clear()
    add_to_playlist(dev, name + " 2023 edition", files)
    assert backend.score() == 0.0  # another name
    dev.table(PLAYLISTS).clear()
    add_to_playlist(dev, name.lower(), files)
    assert backend.score() == 1.0


def test_two_playlists_half_credit(backend):
    params, dev = _reset(backend, "VlcCreateTwoPlaylists")
    add_to_playlist(dev, params["playlist_name1"], params["files1"])
    assert backend.score() == 0.5
    add_to_playlist(dev, params["playlist_name2"], params["files2"][:-1])
    assert backend.score() == 0.5
    add_to_playlist(dev, params["playlist_name2"], params["files2"][-1:])
    assert backend.score() == 1.0


def _find(backend, **kw):
    for i, e in enumerate(backend.phone.elements()):
        if all(getattr(e, k) == v for k, v in kw.items()):
            return i
    raise AssertionError(f"no element {kw}")


def test_add_to_new_playlist_via_ui(backend):
    params, dev = _reset(backend, "VlcCreatePlaylist", 9)
    backend.execute(Action("open_app", app_name="vlc player"))
    titles = [e.text for e in backend.phone.elements() if (e.resource_name or "").endswith("ml_item_title")]
    first = titles[0]
    backend.execute(Action("long_press", index=_find(backend, text=first)))
    assert any(e.text == "1 selected" for e in backend.phone.elements())
    backend.execute(Action("navigate_back"))  # leaves selection mode
    assert any(e.text == "Videos" for e in backend.phone.elements())
    backend.execute(Action("long_press", index=_find(backend, text=first)))
    backend.execute(Action("click", index=_find(backend, content_description="Add to playlist")))
    backend.execute(Action("input_text", index=_find(backend, is_editable=True), text="Mix", clear_text=True))
    pls = dev.table(PLAYLISTS)
    assert len(pls) == 1 and pls[0]["name"] == "Mix" and [stem(f) for f in pls[0]["media"]] == [first]
    backend.execute(Action("click", index=_find(backend, content_description="Playlists")))
    backend.execute(Action("click", index=_find(backend, text="Mix")))
    assert any(e.text == first for e in backend.phone.elements())


# -- the player: a clip's frames follow the device clock and are drawn, never listed ---------------------
def _frame_text(backend):
    """The text drawn on the video frame (pixels only), or None."""
    drawn = [n.text for n in backend.phone.root().walk() if n.cls == w.TEXT and n.fg == (255, 255, 0)]
    return drawn[0] if drawn else None


def _time(backend):
    return next(e.text for e in backend.phone.elements() if (e.resource_name or "").endswith("overlay_time"))


def test_player_shows_each_frame_in_turn_and_never_lists_it(backend):
    params, dev = _reset(backend, "MarkorTranscribeVideo", 7)
    names, title = params["messages"], stem(params["video_name"])
    backend.execute(Action("open_app", app_name="VLC"))
    while not any(e.text == title for e in backend.phone.elements()):
        backend.execute(Action("scroll", direction="down"))
    row = _find(backend, text=title)
    assert backend.phone.elements()[row + 1].text == "0:24"  # three names, 8 s each
    backend.execute(Action("click", index=row))  # a step is 5 s of device time
    assert (_time(backend), _frame_text(backend)) == ("0:05 / 0:24", names[0])
    assert not any(n in (e.text or "") + (e.content_description or "") for e in backend.phone.elements()
                   for n in names)
    backend.execute(Action("wait"))
    assert (_time(backend), _frame_text(backend)) == ("0:10 / 0:24", names[1])
    backend.execute(Action("click", index=_find(backend, content_description="Pause")))
    backend.execute(Action("wait"))
    assert (_time(backend), _frame_text(backend)) == ("0:10 / 0:24", names[1])  # paused
    backend.execute(Action("click", index=_find(backend, content_description="Rewind 10 seconds")))
    assert (_time(backend), _frame_text(backend)) == ("0:00 / 0:24", names[0])
    backend.execute(Action("click", index=_find(backend, content_description="Play")))
    assert _time(backend) == "0:05 / 0:24"
    for _ in range(2):
        backend.execute(Action("click", index=_find(backend, content_description="Forward 10 seconds")))
    assert (_time(backend), _frame_text(backend)) == ("0:24 / 0:24", names[2])  # ended on the last frame
    backend.execute(Action("click", index=_find(backend, content_description="Replay")))
    assert (_time(backend), _frame_text(backend)) == ("0:05 / 0:24", names[0])


def test_plain_text_clip_shows_its_text_for_its_pseudo_duration(backend):
    params, dev = _reset(backend, "VlcCreatePlaylist")
    path = f"{VIDEOS_DIR}/{params['files'][0]}"
    assert clip_frames(dev, path) == ([dev.read_file(path)], duration_s(path))


def test_two_playlists_may_share_a_name_as_in_androidworld(backend):
    """AndroidWorld draws the two names independently, and instance seed 14 draws one name twice. Rows of
    either playlist then count for both names, so 0.5 is the most a state scores; the expert makes the first
    playlist only."""
    from voyager_gym.backends.sim.expert import run_expert

    params = backend.generate_params("VlcCreateTwoPlaylists", 14)
    assert params["playlist_name1"] == params["playlist_name2"]
    assert run_expert(backend, "VlcCreateTwoPlaylists", instance_seed=14).score == 0.5
