"""Joplin IR tasks: right answers pass, near misses fail, and the app's list/viewer act on the notes table."""

import numpy as np

from voyager_gym.actions import Action
from voyager_gym.backends.sim.apps.joplin import NOTES


def _reset(backend, name, seed=7):
    params = backend.generate_params(name, seed)
    backend.reset(name, params, np.random.default_rng(0))
    return params, backend.phone.dev


def _score(backend, text):
    backend.phone.dev.interaction_cache = text
    return backend.score()


def test_is_todo_answer(backend):
    for seed in range(6):
        params, dev = _reset(backend, "NotesIsTodo", seed)
        matches = [n for n in dev.table(NOTES) if n["title"].lower() == params["title"].lower()]
        assert len(matches) == 1 and bool(matches[0]["is_todo"]) == (params["is_todo"] == "True")
        wrong = "False" if params["is_todo"] == "True" else "True"
        assert _score(backend, wrong) == 0.0
        assert _score(backend, params["is_todo"]) == 1.0


def test_meeting_attendee_count_near_miss(backend):
    params, _ = _reset(backend, "NotesMeetingAttendeeCount")
    n = int(params["attendee_count"])
    assert _score(backend, str(n + 5)) == 0.0
    assert _score(backend, "") == 0.0
    assert _score(backend, str(n)) == 1.0


def test_recipe_quantity_near_miss(backend):
    params, _ = _reset(backend, "NotesRecipeIngredientCount")
    q = params["ingredient_quantity"]
    other = "3/4 cup" if q != "3/4 cup" else "1/4 cup"
    assert _score(backend, other) == 0.0
    assert _score(backend, f"{q} {params['ingredient']} and more") == 0.0
    assert _score(backend, q) == 1.0


def test_todo_item_count_matches_data_and_near_miss(backend):
    for seed in range(5):
        params, dev = _reset(backend, "NotesTodoItemCount", seed)
        todos = [n for n in dev.table(NOTES) if n["folder"] == params["folder"] and n["is_todo"]]
        assert len(todos) == 3
        assert (
            len([n for n in dev.table(NOTES) if n["folder"] == params["folder"]]) > 3
        )  # noise in the folder
        assert _score(backend, "4") == 0.0
        assert _score(backend, "3") == 1.0


def _find(backend, **kw):
    els = backend.phone.elements()
    for i, e in enumerate(els):
        if all(getattr(e, k) == v for k, v in kw.items()):
            return i
    raise AssertionError(f"no element {kw}")


def test_search_open_toggle_and_delete_via_ui(backend):
    params, dev = _reset(backend, "NotesIsTodo", 3)
    title = params["title"]
    backend.execute(Action("open_app", app_name="joplin"))
    backend.execute(Action("click", index=_find(backend, content_description="Search")))
    field = _find(backend, is_editable=True)
    backend.execute(Action("input_text", index=field, text=title, clear_text=True))
    els = backend.phone.elements()
    hit = next(i for i, e in enumerate(els) if e.text == title and not e.is_editable)
    backend.execute(Action("click", index=hit))
    note = next(n for n in dev.table(NOTES) if n["title"] == title)
    if note["is_todo"]:
        backend.execute(Action("click", index=_find(backend, class_name="android.widget.CheckBox")))
        assert note["todo_completed"] == 1
    before = len(dev.table(NOTES))
    backend.execute(Action("click", index=_find(backend, content_description="Delete")))
    backend.execute(Action("click", index=_find(backend, text="OK")))
    assert len(dev.table(NOTES)) == before - 1
    assert not any(n["title"] == title for n in dev.table(NOTES))


def test_side_menu_filters_notebook(backend):
    params, dev = _reset(backend, "NotesTodoItemCount", 1)
    backend.execute(Action("open_app", app_name="Joplin"))
    backend.execute(Action("click", index=_find(backend, content_description="Side menu")))
    backend.execute(Action("click", index=_find(backend, text=params["folder"])))
    els = backend.phone.elements()
    titles = {
        e.text for e in els if e.class_name.endswith("TextView") and e.text and e.bbox_pixels.y_min > 300
    }
    in_folder = {n["title"] for n in dev.table(NOTES) if n["folder"] == params["folder"]}
    assert titles and titles <= in_folder
