"""Broccoli recipe tasks (AndroidWorld's single/recipe.py): add a recipe, delete named recipes (with or
without noise), delete duplicate recipes. Verifiers read `dev.table("recipes")` with AndroidWorld's sqlite
rules (see tasks/base.py): text columns compared fuzzily, `favorite` exactly; deletes must leave every
other row intact."""

from __future__ import annotations

import copy
import random
from typing import Any

from voyager_gym.actions import Action
from voyager_gym.backends.sim.apps.recipe import PKG, TABLE, insert_recipe
from voyager_gym.backends.sim.device import DeviceState
from voyager_gym.backends.sim.tasks.base import (
    SimTask,
    View,
    addition_ok,
    back,
    click,
    dedupe_ok,
    done,
    open_app,
    register_task,
    removal_ok,
    scroll,
    scroll_to_find,
    type_into,
)

APP = "broccoli app"
# Recipe titles (AndroidWorld's list) with directions written for SimDroid.
RECIPES: tuple[tuple[str, str], ...] = (
    (
        "Spicy Tuna Wraps",
        "Stir tuna with mayo and sriracha, spread it on tortillas, add lettuce and cucumber, roll.",
    ),
    (
        "Avocado Toast with Egg",
        "Toast the bread, spread mashed avocado, top with a fried egg and chili flakes.",
    ),
    (
        "Greek Salad Pita Pockets",
        "Stuff pita with lettuce, tomato, cucumber, olives and feta; drizzle dressing.",
    ),
    ("Quick Fried Rice", "Fry cooked rice with mixed vegetables and soy sauce, then fold in scrambled eggs."),
    ("Pesto Pasta with Peas", "Boil the pasta, toss with pesto and peas, finish with grated Parmesan."),
    (
        "BBQ Chicken Quesadillas",
        "Coat shredded chicken in BBQ sauce, fill tortillas with it and cheese, fry.",
    ),
    (
        "Tomato Basil Bruschetta",
        "Pile diced tomatoes, basil, garlic and olive oil onto toasted baguette slices.",
    ),
    ("Lemon Garlic Tilapia", "Pan-fry tilapia in butter with garlic and lemon juice; serve with greens."),
    ("Turkey and Cheese Panini", "Layer turkey and cheese in bread and press in a hot grill until golden."),
    (
        "Veggie and Hummus Sandwich",
        "Spread hummus on bread and pile on cucumber, pepper, carrot and lettuce.",
    ),
    (
        "Mango Chicken Curry",
        "Brown chicken with onion, garlic and ginger, add curry powder, coconut milk, mango.",
    ),
    ("Beef Stir Fry", "Stir-fry beef with broccoli, peppers and onion in soy sauce; serve over rice."),
    ("Shrimp Avocado Salad", "Toss shrimp, avocado, tomato and cucumber with lime juice and olive oil."),
    ("Spinach and Feta Stuffed Chicken", "Fill chicken breasts with spinach, feta and garlic, then bake."),
    (
        "Zucchini Noodles with Pesto",
        "Spiralize zucchini, saute briefly with garlic, toss in pesto and Parmesan.",
    ),
    ('Cauliflower Fried "Rice"', "Pulse cauliflower to rice size, fry with vegetables, soy sauce and egg."),
    (
        "Sweet Potato and Black Bean Tacos",
        "Roast sweet potato, mix with black beans, fill tacos, add avocado.",
    ),
    ("Salmon with Dill Sauce", "Bake salmon and serve with a yogurt sauce of dill, lemon and garlic."),
    (
        "Quinoa Salad with Vegetables",
        "Combine cooked quinoa, chopped vegetables and feta with lemon dressing.",
    ),
    ("Chickpea Vegetable Soup", "Cook onion, carrot and celery, add broth, tomatoes, chickpeas and spinach."),
    (
        "Chicken Caesar Salad Wrap",
        "Toss romaine, grilled chicken, Parmesan and Caesar dressing; wrap tightly.",
    ),
    (
        "Vegetarian Chili",
        "Simmer onion, garlic, peppers, tomatoes, kidney and black beans with chili spices.",
    ),
    ("Pan-Seared Salmon with Quinoa", "Sear salmon until crisp and serve on quinoa with steamed asparagus."),
    ("Caprese Salad Skewers", "Thread tomatoes, basil and mozzarella on skewers; drizzle balsamic glaze."),
    ("Chicken Alfredo Pasta", "Toss fettuccine with Alfredo sauce and grilled chicken; top with Parmesan."),
    (
        "Stuffed Bell Peppers",
        "Fill peppers with quinoa, black beans, corn and tomato sauce; bake until soft.",
    ),
    ("Eggplant Parmesan", "Bread and fry eggplant slices, layer with marinara and mozzarella, bake."),
    (
        "Thai Peanut Noodle Salad",
        "Toss noodles in peanut sauce with red pepper, cabbage, carrot and cilantro.",
    ),
    (
        "Butternut Squash Soup",
        "Cook onion and garlic, add squash and broth, blend smooth, season with nutmeg.",
    ),
    ("Baked Cod with Lemon and Dill", "Season cod with lemon, dill, salt and pepper and bake until flaky."),
    ("Vegetable Stir Fry with Tofu", "Brown tofu cubes, add vegetables and stir-fry sauce; serve with rice."),
    ("Classic Margherita Pizza", "Top dough with tomato sauce, mozzarella and basil and bake until golden."),
    ("Raspberry Almond Smoothie", "Blend raspberries, almond milk, banana and almond butter until smooth."),
    ("Moroccan Chickpea Stew", "Saute onion, garlic, carrot and spices, add chickpeas, tomatoes and broth."),
    ("Kale and Quinoa Salad", "Toss kale, quinoa, cranberries, almonds and feta with lemon vinaigrette."),
    ("Grilled Cheese with Tomato and Basil", "Fill buttered bread with cheese, tomato and basil; grill."),
    ("Sausage and Peppers Skillet", "Brown sliced sausage with peppers and onion; serve on a roll."),
    ("Lentil Soup", "Simmer lentils with onion, carrot, celery and garlic in broth with thyme."),
    ("Garlic Butter Shrimp", "Cook shrimp in garlic butter until pink; finish with parsley and lemon."),
)
DESCRIPTIONS = (
    "A fast, simple dish for busy weeknights.",
    "A wholesome and tasty option for any meal.",
    "A flexible recipe that invites you to play with flavors.",
)
EXTRAS = (
    "Season with your favourite spices to taste.",
    "Swap in whatever ingredients you have at home.",
    "Finish with fresh herbs before serving.",
)
INGREDIENTS = (
    "see directions",
    "as per recipe",
    "varies",
    "to preference",
    "quantities to taste",
    "as needed",
    "optional ingredients",
    "n/a",
    "various amounts",
    "adjustable",
    "to your liking",
    "flexible ingredients",
    "per individual taste",
    "as desired",
    "subject to change",
)
SERVINGS = ("1 serving", "2 servings", "3-4 servings", "6 servings", "8 servings")
PREP_TIMES = ("10 mins", "20 mins", "30 mins", "45 mins", "1 hrs", "2 hrs", "3 hrs", "4 hrs")
COMPARE = (
    "title",
    "description",
    "servings",
    "preparationTime",
    "source",
    "ingredients",
    "directions",
    "favorite",
)
FREE_FORM = COMPARE[:-1]
GOAL_FIELDS = ("title", "description", "servings", "preparationTime", "ingredients", "directions")
# The editor fields the expert fills: (column, field hint).
EDIT_FIELDS = (
    ("title", "Title"),
    ("description", "Description"),
    ("servings", "Servings"),
    ("preparationTime", "Time"),
    ("ingredients", "Ingredients"),
    ("directions", "Directions"),
)


def random_recipe(rng: random.Random) -> dict[str, Any]:
    title, directions = rng.choice(RECIPES)
    return {
        "title": title,
        "description": rng.choice(DESCRIPTIONS),
        "servings": rng.choice(SERVINGS),
        "preparationTime": rng.choice(PREP_TIMES),
        "source": "",
        "ingredients": rng.choice(INGREDIENTS),
        "directions": f"{directions} {rng.choice(EXTRAS)}",
        "favorite": 0,
        "imageName": "",
    }


def distinct_recipes(
    rng: random.Random, n: int, unique_titles: bool = False, exclude_titles: frozenset[str] = frozenset()
) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    while len(out) < n:
        c = random_recipe(rng)
        if (
            c in out
            or c["title"] in exclude_titles
            or (unique_titles and any(c["title"] == o["title"] for o in out))
        ):
            continue
        out.append(c)
    return out


def rows_as_text(rows: list[dict[str, Any]], fmt: str) -> str:
    if fmt == "csv":
        return (
            "|".join(GOAL_FIELDS) + "\n" + "\n".join("|".join(str(r[f]) for f in GOAL_FIELDS) for r in rows)
        )
    blocks = [f"Recipe: {r['title']}\n" + "".join(f" {f}: {r[f]}\n" for f in GOAL_FIELDS[1:]) for r in rows]
    return "\n".join(blocks)


# -- expert helpers --------------------------------------------------------------------------------
def to_list(view: View) -> Action | None:
    """From anywhere, get to the recipe list; None once there."""
    if view.app != PKG:
        return open_app("Broccoli")
    if view.title == "Recipes" or view.has(rid=f"{PKG}:id/search_src_text"):
        return None
    return back()


def delete_open_recipe(view: View, mem: dict[str, Any], title: str) -> Action | None:
    """On the details screen of `title`, its menu or its confirm dialog: the next step of deleting it."""
    if view.has(text="Delete this recipe?"):
        mem.setdefault("deleted", []).append(title)
        return click(view.find(text="Delete"))
    if view.has(text="Duplicate") and view.has(text="Delete"):
        return click(view.find(text="Delete"))
    if view.title == title and view.has(desc="More options"):
        return click(view.find(desc="More options"))
    return None


def card_records(view: View) -> list[tuple[int, str, str]]:
    """(title element index, title, description) of every visible recipe card."""
    out: list[tuple[int, str, str]] = []
    for i, e in enumerate(view.elements):
        rid = e.resource_name or ""
        if rid.endswith(":id/card_text_view_title"):
            out.append((i, e.text or "", ""))
        elif rid.endswith(":id/card_text_view_description") and out:
            out[-1] = (out[-1][0], out[-1][1], e.text or "")
    return out


class _Recipe(SimTask):
    app_names = (APP,)
    insert_targets = True  # delete tasks start with their target rows; add tasks only with the noise

    def initialize(self, dev: DeviceState) -> None:
        dev.table(TABLE).clear()
        targets = self.params.get("row_objects", []) if self.insert_targets else []
        for r in self.params.get("noise_row_objects", []) + targets:
            insert_recipe(dev, **r)
        self.before = copy.deepcopy(dev.table(TABLE))


@register_task
class RecipeAddSingleRecipe(_Recipe):
    name = "RecipeAddSingleRecipe"
    insert_targets = False
    complexity = 2.4
    n_rows = 1
    n_noise = 10
    template = "Add the following recipes into the Broccoli app:\n{rows_text}"

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        targets = distinct_recipes(rng, cls.n_rows)
        noise = distinct_recipes(rng, cls.n_noise)
        return {
            "row_objects": targets,
            "noise_row_objects": noise,
            "text_representation_type": rng.choice(["csv", "text_block"]),
        }

    @property
    def goal(self) -> str:
        text = rows_as_text(self.params["row_objects"], self.params["text_representation_type"])
        return f"Add the following recipes into the Broccoli app:\n{text}"

    def is_successful(self, dev: DeviceState) -> float:
        ok = addition_ok(self.before, dev.table(TABLE), self.params["row_objects"], COMPARE, FREE_FORM)
        return 1.0 if ok else 0.0

    def expert(self, view: View, mem: dict[str, Any]) -> Action:
        """FAB -> fill Title..Directions (scrolling the form) -> check icon -> done on the list."""
        targets = self.params["row_objects"]
        added = mem.setdefault("added", 0)
        if view.app != PKG:
            return open_app("Broccoli")
        if view.title == "Recipes" and view.has(desc="New Recipe"):
            return done() if added >= len(targets) else click(view.find(desc="New Recipe"))
        if view.title != "New Recipe" or added >= len(targets):
            if view.has(text="Discard changes?"):
                return click(view.find(text="Discard"))
            return back()
        row = targets[added]
        for col, hint in EDIT_FIELDS:
            if mem.get(f"filled:{added}:{col}"):
                continue
            found = scroll_to_find(view, mem, f"find:{col}", hint=hint, editable=True)
            if not isinstance(found, int):
                return found
            if (view.el(found).text or "").strip() == row[col]:
                mem[f"filled:{added}:{col}"] = True
                continue
            return type_into(found, row[col])
        mem["added"] = added + 1
        return click(view.find(desc="Save"))


class _RecipeDelete(_Recipe):
    n_rows = 3
    n_noise = 0
    use_search = False
    template = "Delete the following recipes from Broccoli app: {titles}."

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        recipes = distinct_recipes(rng, cls.n_rows + cls.n_noise, unique_titles=True)
        if cls.n_noise:
            return {"row_objects": recipes[cls.n_noise :], "noise_row_objects": recipes[: cls.n_noise]}
        return {"row_objects": recipes}

    @property
    def goal(self) -> str:
        titles = ", ".join(r["title"] for r in self.params["row_objects"])
        return f"Delete the following recipes from Broccoli app: {titles}."

    def is_successful(self, dev: DeviceState) -> float:
        ids = [r["recipeId"] for r in self.before[len(self.before) - self.n_rows :]]
        return 1.0 if removal_ok(self.before, dev.table(TABLE), ids, "recipeId") else 0.0

    def expert(self, view: View, mem: dict[str, Any]) -> Action:
        """For each title: find it in the list (scroll or search), open it, More options, Delete, Delete."""
        titles = [r["title"] for r in self.params["row_objects"]]
        deleted = mem.setdefault("deleted", [])
        pending = [t for t in titles if t not in deleted]
        if not pending:
            return done() if view.app == PKG and view.title == "Recipes" else back()
        act = delete_open_recipe(view, mem, pending[0])
        if act is not None:
            return act
        act = to_list(view)
        if act is not None:
            return act
        search = view.find(rid=f"{PKG}:id/search_src_text")
        if self.use_search:
            if search is None:
                return click(view.find(desc="Search"))
            if (view.el(search).text or "") != pending[0]:
                return type_into(search, pending[0])
        found = scroll_to_find(
            view, mem, f"find:{pending[0]}", text=pending[0], rid=f"{PKG}:id/card_text_view_title"
        )
        return click(found) if isinstance(found, int) else found


@register_task
class RecipeDeleteSingleRecipe(_RecipeDelete):
    name = "RecipeDeleteSingleRecipe"
    complexity = 1
    n_rows = 1


@register_task
class RecipeDeleteMultipleRecipes(_RecipeDelete):
    name = "RecipeDeleteMultipleRecipes"
    complexity = 2.4
    n_rows = 3


@register_task
class RecipeDeleteSingleWithRecipeWithNoise(_RecipeDelete):
    name = "RecipeDeleteSingleWithRecipeWithNoise"
    complexity = 2
    n_rows = 1
    n_noise = 29
    use_search = True


@register_task
class RecipeDeleteDuplicateRecipes(_Recipe):
    name = "RecipeDeleteDuplicateRecipes"
    complexity = 1
    n_noise = 5
    template = (
        "Delete all but one of any recipes in the Broccoli app that are exact duplicates, ensuring at least "
        "one instance of each unique recipe remains"
    )

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        # Noise titles differ from the target's: the duplicated pair is the only repeated title in the list.
        target = random_recipe(rng)
        noise = distinct_recipes(rng, cls.n_noise, exclude_titles=frozenset({target["title"]}))
        return {"row_objects": [target, dict(target)], "noise_row_objects": noise}

    @property
    def goal(self) -> str:
        return self.template

    def is_successful(self, dev: DeviceState) -> float:
        return 1.0 if dedupe_ok(self.before, dev.table(TABLE), "recipeId") else 0.0

    def expert(self, view: View, mem: dict[str, Any]) -> Action:
        """Spot two cards with the same title and description, open one, delete it."""
        if mem.get("deleted"):
            return done() if view.app == PKG and view.title == "Recipes" else back()
        if mem.get("target"):
            act = delete_open_recipe(view, mem, mem["target"])
            if act is not None:
                return act
        act = to_list(view)
        if act is not None:
            return act
        seen: set[tuple[str, str]] = set()
        for idx, title, desc in card_records(view):
            if (title, desc) in seen:
                mem["target"] = title
                return click(idx)
            seen.add((title, desc))
        mem["scrolls"] = mem.get("scrolls", 0) + 1
        if mem["scrolls"] > 12:
            raise LookupError("expert found no duplicate recipes")
        return scroll("down", view.scrollable())
