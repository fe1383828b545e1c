"""Camera and Audio Recorder: captures and recordings through the UI, and near misses for each task."""

import numpy as np

from voyager_gym.actions import Action
from voyager_gym.backends.sim.apps import camera, recorder
from voyager_gym.backends.sim.tasks.base import View


def view(backend):
    return View(backend.phone.elements())


def tap(backend, **find):
    i = view(backend).find(**find)
    assert i is not None, f"no element {find}"
    backend.execute(Action("click", index=i))


def start(backend, name, app, **params):
    params.setdefault("seed", 5)
    backend.reset(name, params, np.random.default_rng(0))
    backend.execute(Action("open_app", app_name=app))


# -- Camera --------------------------------------------------------------------------------------------
def test_photo_is_saved_and_two_photos_fail(backend):
    start(backend, "CameraTakePhoto", "Camera")
    if not view(backend).has(desc="Shutter"):
        tap(backend, text="Photo")
    tap(backend, desc="Shutter")
    dev = backend.phone.dev
    _, files = dev.listdir(camera.PHOTOS_DIR)
    assert len(files) == 1 and files[0].startswith("IMG_20231015_") and files[0].endswith(".jpg")
    assert backend.score() == 1.0
    tap(backend, desc="Shutter")
    assert backend.score() == 0.0  # two photos, not one


def test_video_mode_and_unfinished_recording(backend):
    start(backend, "CameraTakeVideo", "Camera")
    if not view(backend).has(desc="Start recording"):
        tap(backend, text="Video")
    tap(backend, desc="Start recording")
    assert view(backend).has(desc="Stop recording")
    assert backend.score() == 0.0  # still recording: nothing saved yet
    tap(backend, desc="Stop recording")
    _, files = backend.phone.dev.listdir(camera.VIDEOS_DIR)
    assert len(files) == 1 and files[0].endswith(".mp4")
    assert backend.score() == 1.0


def test_photo_does_not_count_as_video_and_filmstrip_delete(backend):
    start(backend, "CameraTakeVideo", "Camera")
    if not view(backend).has(desc="Shutter"):
        tap(backend, text="Photo")
    tap(backend, desc="Shutter")
    assert backend.score() == 0.0  # a photo, not a video
    tap(backend, desc="Filmstrip")
    tap(backend, desc="Delete")
    tap(backend, text="Delete", cls="Button")
    assert backend.phone.dev.listdir(camera.PHOTOS_DIR)[1] == []


# -- Audio Recorder ------------------------------------------------------------------------------------
def record(backend):
    tap(backend, desc="Start recording")
    tap(backend, desc="Stop recording")
    assert view(backend).has(text="Record name")


def test_record_audio_once_and_twice(backend):
    start(backend, "AudioRecorderRecordAudio", "Audio Recorder")
    dev = backend.phone.dev
    before = len(recorder.recordings(dev))
    assert before == 0  # AndroidWorld's recordings folder starts empty
    record(backend)
    tap(backend, text="Cancel")  # keeps the default name
    assert len(recorder.recordings(dev)) == before + 1
    assert backend.score() == 1.0
    record(backend)
    tap(backend, text="Save")
    assert backend.score() == 0.0  # two new recordings


def test_recording_not_stopped_or_discarded_fails(backend):
    start(backend, "AudioRecorderRecordAudio", "Audio Recorder")
    tap(backend, desc="Start recording")
    tap(backend, desc="Pause recording")
    assert view(backend).has(desc="Resume recording")
    assert backend.score() == 0.0  # not stopped yet
    tap(backend, desc="Delete recording")
    assert backend.score() == 0.0


def test_named_recording_appends_extension(backend):
    name = "final_workshop.m4a"
    start(backend, "AudioRecorderRecordAudioWithFileName", "Audio Recorder", file_name=name, text="")
    record(backend)
    field = view(backend).find(editable=True)
    backend.execute(Action("input_text", index=field, text="final_workshop", clear_text=True))
    dev = backend.phone.dev
    assert dev.exists(f"{recorder.RECORDS_DIR}/final_workshop.m4a")
    assert backend.score() == 0.0  # AndroidWorld looks for "<file_name>.m4a" = final_workshop.m4a.m4a
    # rename through the records list
    tap(backend, desc="Records")
    tap(backend, text="final_workshop.m4a")
    tap(backend, text="Rename")
    field = view(backend).find(editable=True)
    backend.execute(Action("input_text", index=field, text=name, clear_text=True))
    assert dev.exists(f"{recorder.RECORDS_DIR}/{name}.m4a")
    assert backend.score() == 1.0


def test_wrong_name_fails_and_records_list_delete(backend):
    start(
        backend, "AudioRecorderRecordAudioWithFileName", "Audio Recorder", file_name="memo_copy.m4a", text=""
    )
    record(backend)
    field = view(backend).find(editable=True)
    backend.execute(Action("input_text", index=field, text="memo_copy2.m4a", clear_text=True))
    assert backend.score() == 0.0
    dev = backend.phone.dev
    n = len(recorder.recordings(dev))
    tap(backend, desc="Records")
    tap(backend, text="memo_copy2.m4a.m4a")
    tap(backend, text="Delete")
    assert view(backend).has(text="Delete record?")
    tap(backend, text="Delete", cls="Button")
    assert len(recorder.recordings(dev)) == n - 1
    assert not dev.exists(f"{recorder.RECORDS_DIR}/memo_copy2.m4a.m4a")
