"""Broccoli: near-miss verifier cases for every task and the app's delete / search / duplicate flows."""

import numpy as np

from voyager_gym.actions import Action
from voyager_gym.backends.sim.apps.recipe import insert_recipe


def start(backend, name, seed=5):
    backend.reset(name, backend.generate_params(name, seed), np.random.default_rng(0))
    return backend.task, backend.phone.dev


def act(backend, action_type, **kw):
    backend.execute(Action(action_type, **kw))


def index_of(backend, text=None, desc=None):
    for i, e in enumerate(backend.phone.elements()):
        if (text is None or e.text == text) and (desc is None or e.content_description == desc):
            return i
    raise AssertionError(f"no element text={text!r} desc={desc!r}")


def test_add_recipe_near_misses(backend):
    task, dev = start(backend, "RecipeAddSingleRecipe")
    target = task.params["row_objects"][0]
    assert len(dev.table("recipes")) == 10 and task.is_successful(dev) == 0.0
    snap = dev.snapshot()
    insert_recipe(dev, **{**target, "favorite": 1})  # favorite must match exactly
    assert task.is_successful(dev) == 0.0
    dev = snap.snapshot()
    insert_recipe(dev, **{**target, "directions": "Just wing it."})
    assert task.is_successful(dev) == 0.0
    dev = snap.snapshot()
    insert_recipe(dev, **{**target, "title": target["title"].upper() + "\n"})  # fuzzy, case-insensitive
    assert task.is_successful(dev) == 1.0
    insert_recipe(dev, **target)  # added twice
    assert task.is_successful(dev) == 0.0


def test_delete_named_recipes_near_misses(backend):
    task, dev = start(backend, "RecipeDeleteSingleRecipe")
    assert len(dev.table("recipes")) == 1 and task.is_successful(dev) == 0.0
    task, dev = start(backend, "RecipeDeleteMultipleRecipes")
    rows = dev.table("recipes")
    del rows[0]
    del rows[0]
    assert task.is_successful(dev) == 0.0
    rows.clear()
    assert task.is_successful(dev) == 1.0
    task, dev = start(backend, "RecipeDeleteSingleWithRecipeWithNoise")
    rows = dev.table("recipes")
    assert len(rows) == 30
    rows.pop(0)  # a noise recipe instead of the target
    assert task.is_successful(dev) == 0.0
    rows.pop()  # and the target too
    assert task.is_successful(dev) == 0.0


def test_delete_duplicates_near_misses(backend):
    task, dev = start(backend, "RecipeDeleteDuplicateRecipes")
    rows = dev.table("recipes")
    assert len(rows) == 7
    snap = dev.snapshot()
    rows.pop(-1)
    assert task.is_successful(dev) == 1.0
    rows.pop(-1)  # both copies
    assert task.is_successful(dev) == 0.0
    dev = snap.snapshot()
    dev.table("recipes")[-1]["favorite"] = 1  # nothing deleted, one copy changed
    assert task.is_successful(dev) == 0.0


def test_delete_search_and_duplicate_through_the_ui(backend):
    task, dev = start(backend, "RecipeDeleteSingleWithRecipeWithNoise")
    title = task.params["row_objects"][0]["title"]
    act(backend, "open_app", app_name="broccoli recipe app")
    act(backend, "click", index=index_of(backend, desc="Search"))
    search = next(i for i, e in enumerate(backend.phone.elements()) if e.is_editable)
    act(backend, "input_text", index=search, text=title[:6])
    shown = [
        e.text for e in backend.phone.elements() if (e.resource_name or "").endswith("card_text_view_title")
    ]
    assert title in shown and all(title[:6].lower() in s.lower() for s in shown)
    act(backend, "click", index=index_of(backend, text=title))
    act(backend, "click", index=index_of(backend, desc="More options"))
    act(backend, "click", index=index_of(backend, text="Duplicate"))  # a wrong move: an extra copy
    assert len(dev.table("recipes")) == 31 and task.is_successful(dev) == 0.0
    dev.table("recipes").pop()
    act(backend, "click", index=index_of(backend, desc="More options"))
    act(backend, "click", index=index_of(backend, text="Delete"))
    assert backend.phone.find(text="Delete this recipe?") is not None
    act(backend, "click", index=index_of(backend, text="Delete"))
    assert title not in [r["title"] for r in dev.table("recipes")]
    assert task.is_successful(dev) == 1.0


def test_new_recipe_editor_saves_trimmed_fields_and_discard_asks(backend):
    task, dev = start(backend, "RecipeAddSingleRecipe")
    act(backend, "open_app", app_name="broccoli")
    act(backend, "click", index=index_of(backend, desc="New Recipe"))
    field = next(i for i, e in enumerate(backend.phone.elements()) if e.hint_text == "Title")
    act(backend, "input_text", index=field, text="Toast")
    act(backend, "navigate_back")
    assert backend.phone.find(text="Discard changes?") is not None
    act(backend, "click", index=index_of(backend, text="Cancel"))
    desc = next(i for i, e in enumerate(backend.phone.elements()) if e.hint_text == "Description")
    act(backend, "input_text", index=desc, text="Crunchy")
    act(backend, "click", index=index_of(backend, desc="Save"))
    new = dev.table("recipes")[-1]
    assert (new["title"], new["description"], new["favorite"]) == ("Toast", "Crunchy", 0)
    assert len(dev.table("recipes")) == 11
