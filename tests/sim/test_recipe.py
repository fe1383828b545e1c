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


def test_delete_multiple_with_noise_near_misses(backend):
    task, dev = start(backend, "RecipeDeleteMultipleRecipesWithNoise")
    rows = dev.table("recipes")
    titles = [r["title"] for r in task.params["row_objects"]]
    assert len(rows) == 32 and [r["title"] for r in rows[-3:]] == titles
    snap = dev.snapshot()
    del rows[-3:]
    assert task.is_successful(dev) == 1.0
    rows.pop(0)  # a noise recipe too
    assert task.is_successful(dev) == 0.0
    dev = snap.snapshot()
    del dev.table("recipes")[-2:]  # two of three
    assert task.is_successful(dev) == 0.0


def _without(dev, pred):
    dev.table("recipes")[:] = [r for r in dev.table("recipes") if not pred(r)]


def test_delete_with_constraint_deletes_what_uses_the_ingredient(backend):
    task, dev = start(backend, "RecipeDeleteMultipleRecipesWithConstraint", seed=5)
    ing = task.params["ingredient"]
    assert task.goal == f"Delete the recipes from Broccoli app that use {ing} in the directions."
    assert len(dev.table("recipes")) == 32 and not task.solved_at_start() and task.is_successful(dev) == 0.0
    snap = dev.snapshot()
    _without(dev, lambda r: ing in r["directions"].lower())
    assert task.is_successful(dev) == 1.0
    dev.table("recipes").pop(0)  # and a recipe that does not use it
    assert task.is_successful(dev) == 0.0
    dev = snap.snapshot()
    dev.table("recipes").pop()  # only some of them
    assert task.is_successful(dev) == 0.0


def test_delete_with_constraint_same_title_without_the_ingredient_stays(backend):
    # "herbs" is the one ingredient an added directions sentence may hold: one title can be both kept and
    # deleted (seed 47 has a kept recipe with a target's title and description).
    task, dev = start(backend, "RecipeDeleteMultipleRecipesWithConstraint", seed=47)
    assert task.params["ingredient"] == "herbs"
    targets = {(r["title"], r["description"]) for r in task.params["row_objects"]}
    snap = dev.snapshot()
    _without(dev, lambda r: (r["title"], r["description"]) in targets)  # the look-alike kept one too
    assert task.is_successful(dev) == 0.0
    dev = snap.snapshot()
    _without(dev, lambda r: "herbs" in r["directions"])
    assert task.is_successful(dev) == 1.0


def test_delete_with_constraint_nothing_to_delete_starts_solved(backend):
    # AndroidWorld matches the ingredient against lower-cased directions: "Parmesan" never matches, so no
    # target is drawn and the start state passes; deleting a recipe that mentions it fails.
    task, dev = start(backend, "RecipeDeleteMultipleRecipesWithConstraint", seed=75)
    assert task.params["ingredient"] == "Parmesan" and task.params["row_objects"] == []
    assert task.solved_at_start() and task.is_successful(dev) == 1.0
    _without(dev, lambda r: "Parmesan" in r["directions"])
    assert len(dev.table("recipes")) < 29 and task.is_successful(dev) == 0.0


def test_delete_duplicates2_and_3_near_copies_are_not_duplicates(backend):
    for name, n, variations, same in (
        ("RecipeDeleteDuplicateRecipes2", 12, 4, ("title",)),
        ("RecipeDeleteDuplicateRecipes3", 32, 6, ("title", "description")),
    ):
        task, dev = start(backend, name)
        rows = dev.table("recipes")
        t = task.params["row_objects"][0]
        near = [r for r in rows[:-2] if all(r[k] == t[k] for k in same)]
        assert len(rows) == n and len(near) >= variations, name
        assert all(dict(r, recipeId=-1) != t for r in near), name
        snap = dev.snapshot()
        rows.pop()
        assert task.is_successful(dev) == 1.0, name
        dev = snap.snapshot()
        dev.table("recipes").remove(near[-1])  # a look-alike instead
        assert task.is_successful(dev) == 0.0, name
        dev = snap.snapshot()
        del dev.table("recipes")[-2:]  # both copies
        assert task.is_successful(dev) == 0.0, name
    task, dev = start(backend, "RecipeDeleteDuplicateRecipes3")
    assert sum(r["title"] == "Avocado Toast with Egg" for r in dev.table("recipes")) >= 3


# -- add several recipes (in the goal, or in a Markor note) ------------------------------------------------
def test_add_multiple_needs_every_recipe(backend):
    task, dev = start(backend, "RecipeAddMultipleRecipes")
    rows = task.params["row_objects"]
    assert len(rows) == 3 and all(r["title"] in task.goal for r in rows)
    for r in rows[:2]:
        insert_recipe(dev, **r)
    assert task.is_successful(dev) == 0.0  # one missing
    insert_recipe(dev, **rows[2])
    assert task.is_successful(dev) == 1.0


def test_add_from_markor_writes_the_note_and_keeps_the_rule(backend):
    from voyager_gym.backends.sim.apps.markor import MARKOR_DIR
    from voyager_gym.backends.sim.tasks.recipe import parse_rows, rows_as_text

    for seed in (5, 6):  # both formats among these seeds
        task, dev = start(backend, "RecipeAddMultipleRecipesFromMarkor", seed)
        rows = task.params["row_objects"]
        assert [f for f in dev.files if f.startswith(MARKOR_DIR + "/")] == [f"{MARKOR_DIR}/recipes.txt"]
        text = dev.read_file(f"{MARKOR_DIR}/recipes.txt")
        assert text == rows_as_text(rows, task.params["text_representation_type"])  # no newline added
        assert parse_rows(text) == [{k: r[k] for k in parse_rows(text)[0]} for r in rows]
        assert len(dev.table("recipes")) == 10 and rows[0]["title"] not in task.goal
        snap = dev.snapshot()
        for r in rows[:2]:
            insert_recipe(dev, **r)
        insert_recipe(dev, **{**rows[2], "servings": "99 servings", "ingredients": "none"})  # one row off
        assert task.is_successful(dev) == 0.0
        dev = snap.snapshot()
        for r in rows:
            insert_recipe(dev, **r)
        assert task.is_successful(dev) == 1.0
    assert {start(backend, "RecipeAddMultipleRecipesFromMarkor", s)[0].params["text_representation_type"]
            for s in (5, 6, 7, 8)} == {"csv", "text_block"}


def titles(rows):
    return sorted(r["title"] for r in rows)


def test_add_from_markor2_only_the_recipes_of_the_prep_time(backend):
    from voyager_gym.backends.sim.apps.markor import MARKOR_DIR
    from voyager_gym.backends.sim.tasks.recipe import parse_rows

    task, dev = start(backend, "RecipeAddMultipleRecipesFromMarkor2")
    prep, rows, noise = task.params["prep_time"], task.params["row_objects"], task.params["noise_row_objects"]
    assert prep in task.goal and len(noise) == 40 and len(dev.table("recipes")) == 40
    listed = parse_rows(dev.read_file(f"{MARKOR_DIR}/recipes.txt"))
    assert len(listed) == 43 and titles(listed) == titles(rows + noise)  # shuffled together
    assert titles(r for r in listed if r["preparationTime"] == prep) == titles(rows)
    assert all(r["preparationTime"] != prep for r in noise)
    for r in rows:
        insert_recipe(dev, **r)
    assert task.is_successful(dev) == 1.0
    insert_recipe(dev, **noise[0])  # a recipe of another prep time too
    assert task.is_successful(dev) == 0.0


def test_add_from_image_draws_wrapped_text_blocks(backend):
    from voyager_gym.backends.sim.apps.simple_commons import parse_picture
    from voyager_gym.backends.sim.tasks.recipe import rows_as_text

    task, dev = start(backend, "RecipeAddMultipleRecipesFromImage")
    rows = task.params["row_objects"]
    assert list(dev.files) == ["/storage/emulated/0/DCIM/recipes.jpg"] and len(dev.table("recipes")) == 10
    assert rows[0]["title"] not in task.goal
    drawn = [t for _, _, t in parse_picture(dev.read_file("/storage/emulated/0/DCIM/recipes.jpg"))[2]]
    assert all(len(t.split(": ", 1)[-1]) <= 60 for t in drawn) and len(drawn) > 3 * 6  # values wrap at 60
    assert " ".join(drawn).split() == rows_as_text(rows, "text_block").split()  # nothing else lost
    snap = dev.snapshot()
    for r in rows[:2]:
        insert_recipe(dev, **r)
    insert_recipe(dev, **{**rows[2], "preparationTime": "99 mins"})  # one column off
    assert task.is_successful(dev) == 0.0
    dev = snap.snapshot()
    for r in rows:
        insert_recipe(dev, **r)
    assert task.is_successful(dev) == 1.0
    dev.table("recipes")[0]["title"] = "changed"  # a noise recipe altered
    assert task.is_successful(dev) == 0.0
