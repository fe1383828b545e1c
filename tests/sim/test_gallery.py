"""Simple Gallery Pro: SaveCopyOfReceiptTaskEval's start state, its rule on both sides, the receipt drawn but
not listed, and the copy and move flows through the UI."""

import hashlib
import json
import random
from pathlib import Path

import numpy as np
import pytest

from tests.sim.helpers import reset, run_expert_until_done, score_with_entry, view
from voyager_gym.actions import Action
from voyager_gym.backends.sim.apps import gallery as app
from voyager_gym.backends.sim.apps.simple_commons import parse_picture
from voyager_gym.backends.sim.device import SDCARD
from voyager_gym.backends.sim.tasks import gallery as task
from voyager_gym.backends.sim.tasks.base import click, long_press, open_app

NAME = "SaveCopyOfReceiptTaskEval"
DCIM, DOWNLOAD = f"{SDCARD}/DCIM", f"{SDCARD}/Download"


def tap(backend, **find):
    i = view(backend).find(**find)
    assert i is not None, f"no element {find}"
    backend.execute(click(i))


def test_start_state_is_the_receipt_alone_in_dcim(backend):
    dev = backend.phone.dev
    dev.write_file(f"{DOWNLOAD}/old.txt", "x")
    params = reset(backend, NAME, seed=11)
    dev = backend.phone.dev
    assert list(dev.files) == [f"{DCIM}/{params['file_name']}"]  # storage cleared, as AndroidWorld does
    receipt = task.draw_receipt(random.Random(11))
    pw, ph, runs = parse_picture(dev.files[f"{DCIM}/{params['file_name']}"].content)
    texts = [t for _, _, t in runs]
    assert (pw, ph) == (500, 500) and texts[:2] == [receipt.company, receipt.slogan]
    assert texts[2] == receipt.lines()[0]
    assert receipt_digest(params) == hashlib.sha256(task.receipt_image(receipt).tobytes()).hexdigest()
    assert backend.score() == 0.0


def receipt_digest(params):
    return params["receipt_image"]["__image__"]["sha256"]


@pytest.mark.parametrize(
    ("path", "folder", "score"),
    [
        ("Download/{name}", False, 1.0),
        ("Download/{name}", True, 1.0),  # AndroidWorld's check accepts a folder of that name too
        ("Download/sub/{name}", False, 0.0),  # only directly in Download
        ("Download/copy_{name}", False, 0.0),
        ("Pictures/{name}", False, 0.0),
        ("Download/{stem}.png", False, 0.0),
    ],
)
def test_rule_is_the_name_directly_in_download(backend, path, folder, score):
    assert score_with_entry(backend, NAME, 3, path, folder) == score


def test_moving_instead_of_copying_still_passes(backend):
    """AndroidWorld checks only Download: a move (the original gone from DCIM) passes too."""
    params = reset(backend, NAME, seed=4)
    dev = backend.phone.dev
    dev.move(f"{DCIM}/{params['file_name']}", DOWNLOAD)
    assert backend.score() == 1.0


def test_receipt_is_drawn_but_only_the_image_is_listed(backend):
    params = reset(backend, NAME, seed=5)
    receipt = task.draw_receipt(random.Random(5))
    backend.execute(open_app("Simple Gallery Pro"))
    tap(backend, text="DCIM", rid=f"{app.PKG}:id/dir_name")
    tap(backend, rid=f"{app.PKG}:id/medium_thumbnail")
    v = view(backend)
    assert v.title == params["file_name"]
    assert v.has(rid=f"{app.PKG}:id/gestures_view")
    assert not v.has(contains=receipt.company)  # the picture's text is not in the accessibility tree
    drawn = [n.text for n in backend.phone.root().walk() if n.text]
    assert receipt.company in drawn and receipt.lines()[0] in drawn
    frame, _, _ = backend.observe()
    assert frame is not None and frame.std() > 0


def test_copy_from_a_selection_to_another_folder(backend):
    params = reset(backend, NAME, seed=6)
    dev = backend.phone.dev
    dev.write_file(f"{SDCARD}/Pictures/IMG_1.jpg", "JPEG 4032x3024 camera=back")
    backend.execute(open_app("Simple Gallery Pro"))
    tap(backend, text="DCIM", rid=f"{app.PKG}:id/dir_name")
    backend.execute(long_press(view(backend).find(rid=f"{app.PKG}:id/medium_thumbnail")))
    assert view(backend).title == "1 / 1"
    tap(backend, desc="More options")
    tap(backend, text="Copy to")
    assert view(backend).has(text="Select destination")
    tap(backend, text="DCIM", rid=f"{app.PKG}:id/dir_name")  # the source itself: refused
    assert view(backend).has(text="Source and destination cannot be the same")
    assert backend.score() == 0.0
    tap(backend, text="Pictures", rid=f"{app.PKG}:id/dir_name")  # a media folder: copied at once
    assert dev.exists(f"{SDCARD}/Pictures/{params['file_name']}") and dev.exists(
        f"{DCIM}/{params['file_name']}"
    )
    assert view(backend).has(text="Files copied successfully")
    assert backend.score() == 0.0


def test_move_through_other_folder_and_back_in_the_picker(backend):
    params = reset(backend, NAME, seed=8)
    dev = backend.phone.dev
    backend.execute(open_app("Simple Gallery Pro"))
    tap(backend, text="DCIM", rid=f"{app.PKG}:id/dir_name")
    tap(backend, rid=f"{app.PKG}:id/medium_thumbnail")
    tap(backend, desc="More options")
    tap(backend, text="Move to")
    tap(backend, text="Other folder")
    assert view(backend).has(text="Select a folder")
    backend.execute(Action("navigate_back"))  # back goes up a folder in the picker
    tap(backend, text="Download", rid=f"{app.PKG}:id/list_item_name")
    tap(backend, text="OK")
    assert not dev.exists(f"{DCIM}/{params['file_name']}")
    assert dev.exists(f"{DOWNLOAD}/{params['file_name']}") and backend.score() == 1.0
    assert view(backend).has(text="Files moved successfully")


def test_expert_stops_after_the_copy(backend):
    reset(backend, NAME, seed=9)
    run_expert_until_done(backend)
    assert backend.score() == 1.0


def test_fixture_params_start_the_task(backend):
    """AndroidWorld's params as exported (the image as a digest) start the receipt drawn from the seed."""
    fixture = json.loads(
        (Path(__file__).resolve().parents[1] / "data" / "androidworld_params.json").read_text()
    )
    inst = fixture[NAME][0]
    backend.reset(NAME, inst["params"], np.random.default_rng(0))
    content = backend.phone.dev.files[f"{DCIM}/{inst['params']['file_name']}"].content
    sim = backend.generate_params(NAME, inst["seed"])
    assert receipt_digest(sim) == inst["params"]["receipt_image"]["__image__"]["sha256"]
    assert json.loads(json.dumps(sim)) == sim  # params are JSON-able (buffers store them as JSON)
    assert content == task.receipt_picture(task.draw_receipt(random.Random(inst["seed"])))


# -- MarkorTranscribeReceipt -----------------------------------------------------------------------------
TRANSCRIBE = "MarkorTranscribeReceipt"
MARKOR_DIR = f"{SDCARD}/Documents/Markor"


def test_transcribe_start_state_is_the_receipt_png_alone(backend):
    dev = backend.phone.dev
    dev.write_file(f"{MARKOR_DIR}/old.md", "x")
    params = reset(backend, TRANSCRIBE, seed=2)
    dev = backend.phone.dev
    assert list(dev.files) == [f"{DCIM}/receipt.png"]
    receipt = task.MarkorTranscribeReceipt.receipt(random.Random(2))
    pw, ph, runs = parse_picture(dev.files[f"{DCIM}/receipt.png"].content)
    n = len(receipt.transactions)
    assert (pw, ph) == (500, max(250, 50 * (n + 4)) * 2) and 1 <= n <= 5
    assert [t for _, _, t in runs][2 : 2 + n] == params["text"].split("\n")[1:]  # the header is not drawn
    assert params["text"].split("\n")[0] == "Date, Item, Amount" and backend.score() == 0.0


@pytest.mark.parametrize(
    ("name", "edit", "score"),
    [
        ("receipt.md", lambda t: t, 1.0),
        ("receipt.md", lambda t: t + "\n\n", 1.0),  # stripped
        ("receipt.md", lambda t: t.replace("$", "", 1), 1.0),  # a small slip still fuzzy-matches
        ("receipt.md", lambda t: t.split("\n", 1)[1], 0.0),  # the header left out
        ("receipt.md", lambda t: "Tech Gadgets Inc.\nInnovating the Future\n" + t, 0.0),  # company lines too
        ("receipt.txt", lambda t: t, 0.0),
        ("sub/receipt.md", lambda t: t, 0.0),
    ],
)
def test_transcribe_rule_is_a_fuzzy_match_of_receipt_md(backend, name, edit, score):
    params = reset(backend, TRANSCRIBE, seed=1)  # two transactions
    backend.phone.dev.write_file(f"{MARKOR_DIR}/{name}", edit(params["text"]))
    assert backend.score() == score


def test_transcribe_expert_views_the_receipt_first(backend):
    params = reset(backend, TRANSCRIBE, seed=4)
    titles = []
    for _ in range(20):
        a = backend.expert_action()
        if a.action_type == "status":
            break
        backend.execute(a)
        titles.append(view(backend).title)
    assert "receipt.png" in titles and backend.score() == 1.0
    assert params["text"].split("\n")[1] not in [t for t in titles if t]
