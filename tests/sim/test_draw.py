"""Simple Draw Pro: SimpleDrawProCreateDrawing's start state, its rule on both sides, and drawing and saving
through the UI."""

import pytest

from tests.sim.helpers import reset, run_expert_until_done, score_with_entry, view
from voyager_gym.backends.sim.apps import draw as app
from voyager_gym.backends.sim.device import SDCARD
from voyager_gym.backends.sim.tasks.base import click, open_app, scroll, type_into

NAME = "SimpleDrawProCreateDrawing"
PICTURES = f"{SDCARD}/Pictures"


def tap(backend, **find):
    i = view(backend).find(**find)
    assert i is not None, f"no element {find}"
    backend.execute(click(i))


def test_start_state_clears_the_storage(backend):
    backend.phone.dev.write_file(f"{PICTURES}/old.png", "PNG")
    reset(backend, NAME, seed=2)
    assert not backend.phone.dev.files  # storage cleared, folders kept
    assert backend.phone.dev.exists(PICTURES)
    assert backend.score() == 0.0


@pytest.mark.parametrize(
    ("path", "folder", "score"),
    [
        ("Pictures/{name}", False, 1.0),
        ("Pictures/{name}", True, 1.0),  # AndroidWorld's check accepts a folder of that name too
        ("Pictures/sub/{name}", False, 0.0),  # only directly in Pictures
        ("Simple Draw/{name}", False, 0.0),  # the app's default folder
        ("Pictures/{stem}.other", False, 0.0),  # another extension
        ("Pictures/{name}.png", False, 0.0),  # the extension doubled
    ],
)
def test_rule_is_the_name_directly_in_pictures(backend, path, folder, score):
    assert score_with_entry(backend, NAME, 3, path, folder) == score


def test_content_is_not_checked(backend):
    """AndroidWorld's task overrides its CreateFile validator's content check: an empty drawing passes."""
    params = reset(backend, NAME, seed=4)
    backend.phone.dev.write_file(f"{PICTURES}/{params['file_name']}", "")
    assert backend.score() == 1.0


def save_as(backend, name, ext, pick_pictures=True):
    tap(backend, desc="Save")
    if pick_pictures:
        tap(backend, rid=f"{app.PKG}:id/save_image_path")
        tap(
            backend, text="Internal", rid=f"{app.PKG}:id/breadcrumb_text"
        )  # the picker opens where it last was
        tap(backend, text="Pictures", rid=f"{app.PKG}:id/list_item_name")
        tap(backend, text="OK")
    backend.execute(type_into(view(backend).find(rid=f"{app.PKG}:id/filename"), name))
    tap(backend, rid=f"{app.PKG}:id/save_image_radio_{ext}")
    tap(backend, text="OK")


def test_strokes_undo_and_save_through_the_ui(backend):
    params = reset(backend, NAME, seed=5)
    dev = backend.phone.dev
    backend.execute(open_app("Simple Draw Pro"))
    canvas = view(backend).find(rid=f"{app.PKG}:id/my_canvas")
    backend.execute(scroll("down", canvas))
    backend.execute(scroll("left", view(backend).find(rid=f"{app.PKG}:id/my_canvas")))
    assert len(app.state(dev)["strokes"]) == 2
    tap(backend, desc="Undo")
    assert len(app.state(dev)["strokes"]) == 1
    stem, ext = params["file_name"].rsplit(".", 1)
    save_as(backend, stem, ext)
    assert dev.exists(f"{PICTURES}/{params['file_name']}") and backend.score() == 1.0
    assert dev.read_file(f"{PICTURES}/{params['file_name']}").endswith("strokes=1")
    assert view(backend).has(text="File saved successfully")


def test_default_folder_and_full_name_as_file_name_fail(backend):
    params = reset(backend, NAME, seed=6)
    dev = backend.phone.dev
    backend.execute(open_app("Simple Draw Pro"))
    stem, ext = params["file_name"].rsplit(".", 1)
    save_as(backend, stem, ext, pick_pictures=False)  # saved in Internal/Simple Draw
    assert dev.exists(f"{SDCARD}/Simple Draw/{params['file_name']}") and backend.score() == 0.0
    tap(backend, desc="Save")
    assert view(backend).find(rid=f"{app.PKG}:id/save_image_path") is not None
    assert (
        view(backend).el(view(backend).find(rid=f"{app.PKG}:id/save_image_path")).text
        == "Internal/Simple Draw"
    )
    tap(backend, text="Cancel")
    save_as(backend, params["file_name"], ext)  # the extension typed as well: name.ext.ext
    assert dev.exists(f"{PICTURES}/{params['file_name']}.{ext}") and backend.score() == 0.0


def test_empty_file_name_is_refused(backend):
    reset(backend, NAME, seed=7)
    backend.execute(open_app("Simple Draw Pro"))
    tap(backend, desc="Save")
    backend.execute(type_into(view(backend).find(rid=f"{app.PKG}:id/filename"), ""))
    tap(backend, text="OK")
    assert view(backend).has(text="Filename cannot be empty") and view(backend).has(text="Save as")
    assert not backend.phone.dev.files


def test_expert_stops_after_saving(backend):
    reset(backend, NAME, seed=9)
    run_expert_until_done(backend)
    assert backend.score() == 1.0


def test_saving_over_a_file_asks_first(backend):
    params = reset(backend, NAME, seed=8)
    dev = backend.phone.dev
    target = f"{PICTURES}/{params['file_name']}"
    dev.write_file(target, "old")
    backend.execute(open_app("Simple Draw Pro"))
    stem, ext = params["file_name"].rsplit(".", 1)
    save_as(backend, stem, ext)
    assert view(backend).has(contains="already exists. Overwrite?") and dev.read_file(target) == "old"
    tap(backend, text="Yes")
    assert dev.read_file(target).endswith("strokes=0") and not view(backend).has(text="Save as")
