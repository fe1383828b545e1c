"""Broccoli recipe tasks (AndroidWorld's single/recipe.py): add a recipe, delete named recipes (with or
without noise), delete duplicate recipes. Verifiers read `dev.table("recipes")` with AndroidWorld's sqlite
rules (see tasks/base.py): text columns compared fuzzily, `favorite` exactly; deletes must leave every
other row intact."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from voyager_gym.actions import Action
from voyager_gym.backends.sim.apps.recipe import PKG, TABLE, insert_recipe
from voyager_gym.backends.sim.device import DeviceState
from voyager_gym.backends.sim.tasks.base import (
    View,
    back,
    click,
    done,
    open_app,
    register_task,
    scroll,
    scroll_to_find,
    type_into,
)
from voyager_gym.backends.sim.tasks.common import (
    AddRows,
    DedupeRows,
    DeleteRows,
    FromImage,
    RowsTask,
    read_note,
    wrapped,
    write_note,
)

APP = "broccoli app"
# Recipe titles and directions (AndroidWorld's list, in its order).
RECIPES: tuple[tuple[str, str], ...] = (
    (
        "Spicy Tuna Wraps",
        (
            "Mix canned tuna with mayo and sriracha. Spread on tortillas, add lettuce and cucumber slices, "
            "roll up."
        ),
    ),
    (
        "Avocado Toast with Egg",
        "Toast bread, top with mashed avocado, a fried egg, salt, pepper, and chili flakes.",
    ),
    (
        "Greek Salad Pita Pockets",
        "Fill pita pockets with lettuce, cucumber, tomato, feta, olives, and Greek dressing.",
    ),
    (
        "Quick Fried Rice",
        "Sauté cooked rice with vegetables, add soy sauce and scrambled eggs. Toss until hot.",
    ),
    (
        "Pesto Pasta with Peas",
        "Cook pasta, stir in pesto sauce and cooked peas. Add Parmesan cheese before serving.",
    ),
    (
        "BBQ Chicken Quesadillas",
        (
            "Mix shredded cooked chicken with BBQ sauce. Place on tortillas with cheese, fold and cook "
            "until crispy."
        ),
    ),
    (
        "Tomato Basil Bruschetta",
        "Top sliced baguette with a mix of chopped tomatoes, basil, garlic, olive oil, salt, and pepper.",
    ),
    (
        "Lemon Garlic Tilapia",
        "Sauté tilapia in butter, add lemon juice and garlic. Serve with steamed vegetables.",
    ),
    (
        "Turkey and Cheese Panini",
        "Layer turkey and cheese on bread, grill in a panini press until golden.",
    ),
    (
        "Veggie and Hummus Sandwich",
        "Spread hummus on bread, add cucumber, bell pepper, carrot, and lettuce.",
    ),
    (
        "Mango Chicken Curry",
        (
            "Cook chicken pieces in a pan, add onions, garlic, and ginger. Stir in curry powder, coconut "
            "milk, and mango pieces. Simmer until chicken is cooked."
        ),
    ),
    (
        "Beef Stir Fry",
        (
            "Stir-fry beef slices with broccoli, bell peppers, and onions in soy sauce and garlic. Serve "
            "over rice or noodles."
        ),
    ),
    (
        "Shrimp Avocado Salad",
        (
            "Mix cooked shrimp with avocado, tomatoes, cucumber, and onion. Dress with lime juice, olive "
            "oil, salt, and pepper."
        ),
    ),
    (
        "Spinach and Feta Stuffed Chicken",
        (
            "Stuff chicken breasts with a mixture of spinach, feta, garlic, and herbs. Bake until chicken "
            "is cooked through."
        ),
    ),
    (
        "Zucchini Noodles with Pesto",
        (
            "Spiralize zucchini into noodles, sauté with garlic, then mix with pesto sauce. Top with grated"
            " Parmesan cheese."
        ),
    ),
    (
        "Cauliflower Fried \"Rice\"",
        (
            "Pulse cauliflower in a food processor until it resembles rice. Sauté with vegetables, soy "
            "sauce, and add scrambled eggs."
        ),
    ),
    (
        "Sweet Potato and Black Bean Tacos",
        (
            "Roast sweet potato cubes, mix with black beans, and use as filling for tacos. Top with avocado"
            " and cilantro lime sauce."
        ),
    ),
    (
        "Salmon with Dill Sauce",
        "Bake salmon fillets and serve with a sauce made from Greek yogurt, dill, lemon juice, and garlic.",
    ),
    (
        "Quinoa Salad with Vegetables",
        "Mix cooked quinoa with diced vegetables, feta cheese, and a lemon olive oil dressing.",
    ),
    (
        "Chickpea Vegetable Soup",
        (
            "Sauté onions, carrots, and celery, add broth, canned tomatoes, and chickpeas. Simmer with "
            "spinach and seasonings."
        ),
    ),
    (
        "Chicken Caesar Salad Wrap",
        (
            "Toss chopped romaine lettuce with Caesar dressing, grilled chicken strips, and Parmesan "
            "cheese. Wrap in a large tortilla."
        ),
    ),
    (
        "Vegetarian Chili",
        (
            "Cook onions, garlic, bell peppers, and carrots. Add canned tomatoes, kidney beans, black "
            "beans, corn, and chili seasoning. Simmer until vegetables are tender."
        ),
    ),
    (
        "Pan-Seared Salmon with Quinoa",
        "Pan-sear salmon fillets until crispy. Serve over cooked quinoa with a side of steamed asparagus.",
    ),
    (
        "Caprese Salad Skewers",
        (
            "Thread cherry tomatoes, basil leaves, and mozzarella balls onto skewers. Drizzle with balsamic"
            " glaze."
        ),
    ),
    (
        "Chicken Alfredo Pasta",
        (
            "Cook fettuccine pasta, toss with Alfredo sauce and grilled chicken strips. Serve with a "
            "sprinkle of Parmesan cheese."
        ),
    ),
    (
        "Stuffed Bell Peppers",
        (
            "Mix cooked quinoa, black beans, corn, tomato sauce, and spices. Stuff into bell peppers and "
            "bake until tender."
        ),
    ),
    (
        "Eggplant Parmesan",
        (
            "Slice eggplant, bread, and fry. Layer in a baking dish with marinara sauce and mozzarella "
            "cheese. Bake until bubbly."
        ),
    ),
    (
        "Thai Peanut Noodle Salad",
        (
            "Toss cooked noodles with a Thai peanut sauce, sliced red bell peppers, cabbage, carrots, and "
            "cilantro."
        ),
    ),
    (
        "Butternut Squash Soup",
        (
            "Sauté onions and garlic, add cubed butternut squash and broth. Puree until smooth and season "
            "with nutmeg, salt, and pepper."
        ),
    ),
    (
        "Baked Cod with Lemon and Dill",
        (
            "Place cod fillets in a baking dish, season with lemon juice, dill, salt, and pepper. Bake "
            "until fish flakes easily."
        ),
    ),
    (
        "Vegetable Stir Fry with Tofu",
        (
            "Stir-fry tofu cubes until golden, add assorted vegetables and a stir-fry sauce. Serve over "
            "rice or noodles."
        ),
    ),
    (
        "Classic Margherita Pizza",
        (
            "Spread pizza dough with tomato sauce, top with slices of mozzarella cheese and fresh basil "
            "leaves. Bake until crust is golden."
        ),
    ),
    (
        "Raspberry Almond Smoothie",
        "Blend together raspberries, almond milk, banana, and a scoop of almond butter until smooth.",
    ),
    (
        "Moroccan Chickpea Stew",
        (
            "Sauté onions, garlic, carrots, and spices. Add canned chickpeas, diced tomatoes, and vegetable"
            " broth. Simmer until flavors meld."
        ),
    ),
    (
        "Kale and Quinoa Salad",
        (
            "Toss chopped kale, cooked quinoa, dried cranberries, sliced almonds, and feta cheese with a "
            "lemon vinaigrette."
        ),
    ),
    (
        "Grilled Cheese with Tomato and Basil",
        (
            "Butter bread slices, layer with cheese, tomato slices, and basil. Grill until bread is toasted"
            " and cheese is melted."
        ),
    ),
    (
        "Sausage and Peppers Skillet",
        (
            "Sauté sliced sausage, bell peppers, and onions until browned. Serve with mustard or on a "
            "hoagie roll."
        ),
    ),
    (
        "Lentil Soup",
        (
            "Cook onions, carrots, celery, garlic, and lentils in vegetable broth until lentils are tender."
            " Season with thyme and bay leaves."
        ),
    ),
    (
        "Garlic Butter Shrimp",
        (
            "Sauté shrimp in butter and minced garlic until pink. Sprinkle with parsley and serve with "
            "lemon wedges."
        ),
    ),
)
DESCRIPTIONS = (
    "A quick and easy meal, perfect for busy weekdays.",
    "A delicious and healthy choice for any time of the day.",
    "An ideal recipe for experimenting with different flavors and ingredients.",
)
EXTRAS = (
    "Try adding a pinch of your favorite spices for extra flavor.",
    "Feel free to substitute with ingredients you have on hand.",
    "Garnish with fresh herbs for a more vibrant taste.",
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
    """A recipe as AndroidWorld draws one (the recipe, then description, servings, time, the directions' extra
    sentence, ingredients), with every column of its row; `recipeId` is -1 until the row is inserted."""
    title, directions = rng.choice(RECIPES)
    description, servings, prep = rng.choice(DESCRIPTIONS), rng.choice(SERVINGS), rng.choice(PREP_TIMES)
    directions = f"{directions} {rng.choice(EXTRAS)}"
    return {
        "title": title,
        "description": description,
        "servings": servings,
        "preparationTime": prep,
        "source": "",
        "ingredients": rng.choice(INGREDIENTS),
        "directions": directions,
        "favorite": 0,
        "imageName": "",
        "recipeId": -1,
    }


def distinct_recipes(
    rng: random.Random,
    n: int,
    unique_titles: bool = False,
    keep: Callable[[dict[str, Any]], bool] | None = None,
) -> list[dict[str, Any]]:
    """`n` recipes, each differing from the earlier ones (by title with `unique_titles`, else in some column),
    skipping those `keep` rejects: AndroidWorld's rejection sampling, so the draws match its own."""
    out: list[dict[str, Any]] = []
    while len(out) < n:
        c = random_recipe(rng)
        if (keep is not None and not keep(c)) or c in out:
            continue
        if unique_titles and any(c["title"] == o["title"] for o in out):
            continue
        out.append(c)
    return out


def rows_as_text(rows: list[dict[str, Any]], fmt: str, wrap: int | None = None) -> str:
    """AndroidWorld's text of recipe rows: csv, or text blocks whose values wrap at `wrap` columns."""
    if fmt == "csv":
        return (
            "|".join(GOAL_FIELDS) + "\n" + "\n".join("|".join(str(r[f]) for f in GOAL_FIELDS) for r in rows)
        )
    blocks = [
        f"Recipe: {r['title']}\n" + "".join(f" {f}: {wrapped(r[f], wrap)}\n" for f in GOAL_FIELDS[1:])
        for r in rows
    ]
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


class _Recipe(RowsTask):
    app_names = (APP,)
    table = TABLE
    id_key = "recipeId"

    @classmethod
    def distinct_rows(cls, rng: random.Random, n: int) -> list[dict[str, Any]]:
        # For the duplicates, a noise recipe may share the target's title (and even its description) while
        # differing in another column.
        return distinct_recipes(rng, n)

    def insert_rows(self, dev: DeviceState, rows: list[dict[str, Any]]) -> None:
        dev.table(TABLE).clear()
        for r in rows:
            insert_recipe(dev, **r)


@register_task
class RecipeAddSingleRecipe(AddRows, _Recipe):
    compare = COMPARE
    free_form = FREE_FORM
    complexity = 2.4
    template = "Add the following recipes into the Broccoli app:\n{rows_text}"
    rows_as_text = staticmethod(rows_as_text)

    @classmethod
    def noise_rows(cls, rng: random.Random, targets: list[dict[str, Any]]) -> list[dict[str, Any]]:
        # AndroidWorld keeps a noise recipe whose title differs from *any* target's (one target: from it).
        return distinct_recipes(rng, cls.n_noise,
                                keep=lambda r: any(r["title"] != t["title"] for t in targets))

    def expert(self, view: View, mem: dict[str, Any]) -> Action:
        """FAB -> fill Title..Directions (scrolling the form) -> check icon -> done on the list. The rows are
        the goal's, or those `mem["rows"]` holds (read from a note)."""
        targets = mem.get("rows", self.params["row_objects"])
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


class _RecipeDelete(DeleteRows, _Recipe):
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
    complexity = 1
    n_rows = 1


@register_task
class RecipeDeleteMultipleRecipes(_RecipeDelete):
    complexity = 2.4
    n_rows = 3


@register_task
class RecipeDeleteSingleWithRecipeWithNoise(_RecipeDelete):
    complexity = 2
    n_rows = 1
    n_noise = 29
    use_search = True


@register_task
class RecipeDeleteDuplicateRecipes(DedupeRows, _Recipe):
    complexity = 1
    n_noise = 5
    template = (
        "Delete all but one of any recipes in the Broccoli app that are exact duplicates, ensuring at least "
        "one instance of each unique recipe remains"
    )

    @property
    def goal(self) -> str:
        return self.template

    def expert(self, view: View, mem: dict[str, Any]) -> Action:
        """Open the cards showing the duplicated recipe's title and description one by one; delete the first
        whose details (servings, time, ingredients, directions) all match, going back from any that differ (a
        noise recipe may share the title and description)."""
        t = self.params["row_objects"][0]
        if mem.get("deleted"):
            return done() if view.app == PKG and view.title == "Recipes" else back()
        if mem.get("target"):
            if view.title == t["title"] and view.has(desc="More options") and not mem.get("checked"):
                meta = "   ".join(x for x in (t["servings"], t["preparationTime"]) if x)
                if not all(view.has(text=x) for x in (meta, t["ingredients"], t["directions"]) if x):
                    mem["tried"] = mem.get("tried", 0) + 1
                    mem.pop("target")
                    return back()
                mem["checked"] = True
            act = delete_open_recipe(view, mem, mem["target"])
            if act is not None:
                return act
        act = to_list(view)
        if act is not None:
            return act
        want = (t["title"], t["description"])
        cands = [i for i, title, desc in card_records(view) if (title, desc) == want]
        if len(cands) > mem.get("tried", 0):
            mem["target"] = t["title"]
            return click(cands[mem.get("tried", 0)])
        mem["scrolls"] = mem.get("scrolls", 0) + 1
        if mem["scrolls"] > 12:
            raise LookupError("expert found no duplicate recipes")
        return scroll("down", view.scrollable())


# -- harder delete variants: more noise, a constraint instead of names, near-duplicates ---------------------
# Ingredients AndroidWorld draws for RecipeDeleteMultipleRecipesWithConstraint (its list, in its order; it
# matches them case-sensitively against lower-cased directions, so capitalised ones never match).
COMMON_INGREDIENTS = (
    "tuna", "mayonnaise", "sriracha", "tortillas", "lettuce", "cucumber", "bread", "avocado", "eggs", "salt",
    "pepper", "chili flakes", "pita bread", "tomatoes", "feta cheese", "olives", "Greek dressing", "rice",
    "vegetables", "soy sauce", "pesto sauce", "peas", "Parmesan cheese", "chicken", "BBQ sauce", "cheese",
    "baguette", "basil", "garlic", "olive oil", "tilapia", "butter", "lemon juice", "turkey", "hummus",
    "bell peppers", "carrots", "mango", "curry powder", "coconut milk", "beef", "broccoli", "onions",
    "shrimp", "spinach", "herbs", "zucchini", "cauliflower", "sweet potato", "black beans", "cilantro",
    "Greek yogurt", "dill", "quinoa", "chickpeas", "romaine lettuce", "Caesar dressing", "Parmesan",
    "kidney beans", "corn", "chili seasoning", "asparagus", "mozzarella balls", "balsamic glaze",
    "fettuccine", "Alfredo sauce", "quinoa", "tomato sauce", "eggplant", "marinara sauce",
    "mozzarella cheese", "noodles", "Thai peanut sauce", "red bell peppers", "cabbage", "butternut squash",
    "nutmeg", "tofu", "pizza dough", "mozzarella cheese", "raspberries", "almond milk", "banana",
    "almond butter", "lentils", "thyme", "bay leaves", "parsley", "lemon wedges", "ghee", "cardamom",
    "fenugreek", "amchur (dry mango powder)", "rose water", "pomegranate molasses", "kaffir lime leaves",
    "galangal", "lemongrass", "furikake", "black garlic", "hemp seeds", "chia seeds", "açai berry",
    "maca powder", "spirulina", "cassava flour", "arrowroot powder", "seaweed", "escargot", "venison",
    "quail eggs", "duck fat", "morel mushrooms", "chanterelle mushrooms", "black truffle", "edible flowers",
    "salsify", "rutabaga", "celeriac", "finger limes",
)  # fmt: skip
DRAW_LIMIT = 10_000  # AndroidWorld gives up on a filtered draw after this many candidates


def capped_recipes(
    rng: random.Random, n: int, keep: Callable[[dict[str, Any]], bool]
) -> list[dict[str, Any]] | None:
    """`distinct_recipes` with AndroidWorld's limit: None once DRAW_LIMIT candidates did not yield `n`.
    When no recipe can pass `keep` at all, None at once: AndroidWorld would draw its DRAW_LIMIT candidates
    in vain, and nothing is drawn after them, so skipping those draws changes no param."""
    if not any(keep({"title": t, "directions": f"{d} {e}"}) for t, d in RECIPES for e in EXTRAS):
        return None
    out: list[dict[str, Any]] = []
    for _ in range(DRAW_LIMIT):
        c = random_recipe(rng)
        if keep(c) and c not in out:
            out.append(c)
            if len(out) == n:
                return out
    return None


def shows_recipe(view: View, r: dict[str, Any]) -> bool:
    """Whether the details screen on view shows recipe `r` (title, description, servings and time,
    ingredients, directions)."""
    meta = "   ".join(x for x in (r["servings"], r["preparationTime"]) if x)
    shown = (r["description"], meta, r["ingredients"], r["directions"])
    return view.title == r["title"] and all(view.has(text=x) for x in shown if x)


def last_card_of(view: View, mem: dict[str, Any], key: tuple[str, str], skip: int = 0) -> Action | int:
    """The card showing `key` (title, description) that is `skip` places before the last such card of its
    title's run in the list (cards with one title are listed together, oldest first), scrolling down until the
    run's end is on screen; raises LookupError when the list ends without one."""
    sig = tuple(view.texts())
    at_end = mem.pop("scrolled_from", None) == sig  # the last scroll did not move the list
    cards = card_records(view)
    hits = [j for j, (_, title, desc) in enumerate(cards) if (title, desc) == key]
    if hits and (at_end or any(c[1] != key[0] for c in cards[hits[-1] + 1 :])):
        if skip >= len(hits):
            raise LookupError(f"expert ran out of cards showing {key}")
        return cards[hits[-1 - skip]][0]
    if at_end:
        raise LookupError(f"expert found no card showing {key}")
    mem["scrolled_from"] = sig
    return scroll("down", view.scrollable())


@register_task
class RecipeDeleteMultipleRecipesWithNoise(_RecipeDelete):
    complexity = 3.4
    n_rows = 3
    n_noise = 29
    use_search = True


@register_task
class RecipeDeleteMultipleRecipesWithConstraint(_RecipeDelete):
    """Delete the recipes whose directions use a drawn ingredient. As in AndroidWorld, up to three targets
    are drawn (none when no recipe can use it: then the start state already passes) after 29 recipes that
    do not."""

    complexity = 4
    n_rows = 3
    n_noise = 29
    template = "Delete the recipes from Broccoli app that use {ingredient} in the directions."

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        ingredient = rng.choice(COMMON_INGREDIENTS)
        noise = distinct_recipes(rng, cls.n_noise, keep=lambda r: ingredient not in r["directions"].lower())
        targets: list[dict[str, Any]] = []
        for n in range(cls.n_rows, 0, -1):
            drawn = capped_recipes(rng, n, lambda r: ingredient in r["directions"].lower())
            if drawn is not None:
                targets = drawn
                break
        return {"row_objects": targets, "noise_row_objects": noise, "ingredient": ingredient}

    @property
    def goal(self) -> str:
        return self.template.format(ingredient=self.params["ingredient"])

    def solved_at_start(self) -> bool:
        return not self.params["row_objects"]

    def expert(self, view: View, mem: dict[str, Any]) -> Action:
        """For each drawn target (its title and description, from the params): open the last card showing
        them, check on the details screen that it is that recipe and that its directions use the ingredient
        (going back from one that does not), then More options, Delete, Delete."""
        ingredient = self.params["ingredient"]
        pending = mem.setdefault("pending", [dict(r) for r in self.params["row_objects"]])
        if view.has(text="Delete this recipe?") and mem.get("target") in pending:
            pending.remove(mem.pop("target"))
            return click(view.find(text="Delete"))
        if not pending:
            return done() if view.app == PKG and view.title == "Recipes" else (to_list(view) or done())
        if mem.get("opened") and view.has(desc="More options"):
            directions = view.find(rid=f"{PKG}:id/directions_text")
            uses = directions is not None and ingredient in (view.el(directions).text or "").lower()
            match = next((r for r in pending if uses and shows_recipe(view, r)), None)
            if match is None:
                key = mem.pop("opened")
                mem.setdefault("skip", {})[key] = mem.get("skip", {}).get(key, 0) + 1
                return back()
            mem.pop("opened")
            mem["target"] = match
            return click(view.find(desc="More options"))
        if mem.get("target") is not None:
            act = delete_open_recipe(view, mem, mem["target"]["title"])
            if act is not None:
                return act
        act = to_list(view)
        if act is not None:
            return act
        mem.pop("opened", None)
        keys = [(r["title"], r["description"]) for r in pending]
        key = next(((t, d) for _, t, d in card_records(view) if (t, d) in keys), keys[0])
        found = last_card_of(view, mem, key, mem.get("skip", {}).get(repr(key), 0))
        if isinstance(found, int):
            mem["opened"] = repr(key)
            return click(found)
        return found


class _RecipeDeleteNearDuplicates(RecipeDeleteDuplicateRecipes):
    """Deduplication among recipes that share the duplicated one's title (and, for 3, its description)."""

    @classmethod
    def noise_before_variants(cls, rng: random.Random) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        raise NotImplementedError

    @classmethod
    def same_as_target(cls, r: dict[str, Any], t: dict[str, Any]) -> bool:
        return r["title"] == t["title"]

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        noise, target = cls.noise_before_variants(rng)
        while len(noise) < cls.n_noise:  # variations of the target, each drawn on its own (repeats possible)
            value = distinct_recipes(rng, 1, keep=lambda r: cls.same_as_target(r, target))[0]
            if value != target:
                noise.append(value)
        return {"row_objects": [target, dict(target)], "noise_row_objects": noise}

    def expert(self, view: View, mem: dict[str, Any]) -> Action:
        """Open the last card showing the duplicated recipe's title and description (copies are listed
        together, oldest first) and delete it if its details match; going back from one that differs, try the
        one above."""
        t = self.params["row_objects"][0]
        if mem.get("deleted"):
            return done() if view.app == PKG and view.title == "Recipes" else back()
        if mem.get("opened") and view.has(desc="More options"):
            if not shows_recipe(view, t):
                mem["skip"] = mem.get("skip", 0) + 1
                mem.pop("opened")
                return back()
            mem.pop("opened")
            mem["target"] = t["title"]
        if mem.get("target"):
            act = delete_open_recipe(view, mem, mem["target"])
            if act is not None:
                return act
        act = to_list(view)
        if act is not None:
            return act
        found = last_card_of(view, mem, (t["title"], t["description"]), mem.get("skip", 0))
        if not isinstance(found, int):
            return found
        mem["opened"] = True
        return click(found)


@register_task
class RecipeDeleteDuplicateRecipes2(_RecipeDeleteNearDuplicates):
    complexity = 2.4
    n_noise = 10

    @classmethod
    def noise_before_variants(cls, rng: random.Random) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        noise = distinct_recipes(rng, 7)
        return noise, noise.pop()


@register_task
class RecipeDeleteDuplicateRecipes3(_RecipeDeleteNearDuplicates):
    """Also three 'Avocado Toast with Egg' recipes at the top of the list, so that the agent must scroll."""

    complexity = 3.4
    n_noise = 30
    top = "Avocado Toast with Egg"

    @classmethod
    def noise_before_variants(cls, rng: random.Random) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        noise = distinct_recipes(rng, 22, keep=lambda r: r["title"] != cls.top)
        target = noise.pop()
        return noise + distinct_recipes(rng, 3, keep=lambda r: r["title"] == cls.top), target

    @classmethod
    def same_as_target(cls, r: dict[str, Any], t: dict[str, Any]) -> bool:
        return r["title"] == t["title"] and r["description"] == t["description"]


# -- add several recipes: listed in the goal, or in a Markor note (AndroidWorld's write_to_markor) ----------
def parse_rows(text: str) -> list[dict[str, str]]:
    """The recipes of a note written by `rows_as_text` (either format), as {goal field: value}."""
    lines = text.split("\n")
    if lines[0] == "|".join(GOAL_FIELDS):
        return [dict(zip(GOAL_FIELDS, ln.split("|"), strict=True)) for ln in lines[1:] if ln]
    rows: list[dict[str, str]] = []
    for ln in lines:
        if ln.startswith("Recipe: "):
            rows.append({"title": ln[len("Recipe: ") :]})
        elif ln.startswith(" ") and ": " in ln and rows:
            key, value = ln.strip().split(": ", 1)
            rows[-1][key] = value
    return rows


@register_task
class RecipeAddMultipleRecipes(RecipeAddSingleRecipe):
    complexity = 6
    n_rows = 3


@register_task
class RecipeAddMultipleRecipesFromMarkor(RecipeAddMultipleRecipes):
    """The targets are written to recipes.txt in Markor (goal-text format) instead of the goal."""

    app_names = (APP, "markor")
    template = "Add the recipes from recipes.txt in Markor to the Broccoli recipe app."

    @property
    def goal(self) -> str:
        return self.template.format(**self.params)

    def note_rows(self) -> list[dict[str, Any]]:
        return self.params["row_objects"]

    def initialize(self, dev: DeviceState) -> None:
        super().initialize(dev)
        text = rows_as_text(self.note_rows(), self.params["text_representation_type"])
        write_note(dev, "recipes.txt", text)

    def wanted(self, row: dict[str, str]) -> bool:
        return True

    def expert(self, view: View, mem: dict[str, Any]) -> Action:
        """Open recipes.txt in Markor and read the recipes off the editor, then add them as the goal's."""
        if "rows" not in mem:
            text = read_note(view, mem, "recipes.txt")
            if not isinstance(text, str):
                return text
            mem["rows"] = [r for r in parse_rows(text) if self.wanted(r)]
        return super().expert(view, mem)


@register_task
class RecipeAddMultipleRecipesFromMarkor2(RecipeAddMultipleRecipesFromMarkor):
    """recipes.txt lists the targets among 40 recipes of other preparation times, shuffled."""

    n_noise = 40
    template = (
        "Add the recipes from recipes.txt in Markor that take {prep_time} to prepare into the Broccoli "
        "recipe app."
    )

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        prep = rng.choice(PREP_TIMES)
        targets = distinct_recipes(rng, cls.n_rows, keep=lambda r: r["preparationTime"] == prep)
        noise = distinct_recipes(rng, cls.n_noise, keep=lambda r: r["preparationTime"] != prep)
        return {
            "row_objects": targets,
            "noise_row_objects": noise,
            "text_representation_type": rng.choice(["csv", "text_block"]),
            "prep_time": prep,
        }

    def note_rows(self) -> list[dict[str, Any]]:
        # AndroidWorld shuffles with `random` seeded by the instance seed (its setup seeds it): same order.
        rows = self.params["row_objects"] + self.params["noise_row_objects"]
        self.setup_rng().shuffle(rows)
        return rows

    def wanted(self, row: dict[str, str]) -> bool:
        return row.get("preparationTime") == self.params["prep_time"]


# -- add the recipes drawn in an image (AndroidWorld's write_to_gallery) ------------------------------------
@register_task
class RecipeAddMultipleRecipesFromImage(FromImage, RecipeAddMultipleRecipes):
    """recipes.jpg, alone in DCIM once storage is cleared, draws the three targets as text blocks (values
    wrapped at 60 columns, whatever format was drawn)."""

    app_names = (APP, "simple gallery pro")
    template = "Add the recipes from recipes.jpg in Simple Gallery Pro to the Broccoli recipe app."
    image_name = "recipes.jpg"
