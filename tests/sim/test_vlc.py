"""VLC playlist tasks: AndroidWorld's rule (exact files, order, no extras) and the add-to-playlist UI."""

import numpy as np

from voyager_gym.actions import Action
from voyager_gym.backends.sim.apps.vlc import PLAYLISTS, add_to_playlist, stem


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
