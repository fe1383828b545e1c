"""Broccoli (com.flauschcode.broccoli): a recipe list sorted by title with live search, a recipe details
screen (Edit, favourite and an overflow menu with Share / Duplicate / Delete), and the New Recipe editor (a
scrolling form saved with the check icon). Data lives in `dev.table("recipes")` with AndroidWorld's columns:
recipeId, title, description, servings, preparationTime, source, ingredients, directions, favorite and
imageName."""

from __future__ import annotations

from typing import Any

from voyager_gym.backends.sim import widgets as w
from voyager_gym.backends.sim.device import DeviceState
from voyager_gym.backends.sim.ui import GREY, LIGHT, PAD, UI, WHITE, App, Screen, register_app
from voyager_gym.backends.sim.widgets import SCREEN_W, Node

PKG = "com.flauschcode.broccoli"
TABLE = "recipes"
COLOR = (56, 142, 60)
CARD_H = 300
TEXT_COLUMNS = ("title", "description", "servings", "preparationTime", "source", "ingredients", "directions")
# The editor's fields: (column, hint, height, multiline).
FORM = (
    ("title", "Title", 170, False),
    ("description", "Description", 240, True),
    ("servings", "Servings", 170, False),
    ("preparationTime", "Time", 170, False),
    ("ingredients", "Ingredients", 300, True),
    ("directions", "Directions", 300, True),
    ("source", "Source", 170, False),
    ("nutritionalValues", "Nutrition", 240, True),
    ("notes", "Notes", 240, True),
)


def rows(dev: DeviceState) -> list[dict[str, Any]]:
    return dev.table(TABLE)


def find_recipe(dev: DeviceState, recipe_id: int) -> dict[str, Any] | None:
    return next((r for r in rows(dev) if r["recipeId"] == recipe_id), None)


def insert_recipe(dev: DeviceState, **values: Any) -> dict[str, Any]:
    """Append a recipe with the next autoincrement id; missing text columns are empty."""
    table = rows(dev)
    row: dict[str, Any] = {c: "" for c in TEXT_COLUMNS}
    row.update(favorite=0, imageName="")
    row.update(values)
    row["recipeId"] = max((r["recipeId"] for r in table), default=0) + 1
    table.append(row)
    return row


def by_title(dev: DeviceState) -> list[dict[str, Any]]:
    return sorted(rows(dev), key=lambda r: (r["title"].casefold(), r["recipeId"]))


def text_lines(text: str, per_line: int = 44) -> int:
    """Lines a paragraph of 38-px text wraps to across the screen (at most 8)."""
    return min(8, 1 + len(text) // per_line + text.count("\n"))


def close_modals(ui: UI) -> None:
    st = ui.phone.stack(PKG)
    while len(st) > 1 and st[-1].modal:
        st.pop()


def recipe_card(ui: UI, r: dict[str, Any], b: w.Bounds) -> Node:
    """A recipe card: photo placeholder at the left, title and two lines of description."""
    x0, y0, x1, y1 = b
    card = Node(
        w.FRAME,
        bounds=(x0 + 32, y0 + 16, x1 - 32, y1 - 16),
        clickable=True,
        bg=WHITE,
        radius=24,
        border=LIGHT,
        on_click=lambda rid=r["recipeId"]: ui.push(DetailsScreen(rid)),
    )
    card.add(
        Node(
            w.IMAGE,
            bounds=(x0 + 32, y0 + 16, x0 + 300, y1 - 16),
            bg=(220, 237, 200),
            icon="app:B",
            icon_fg=COLOR,
            a11y=False,
        )
    )
    card.add(
        Node(
            w.TEXT,
            text=r["title"],
            bounds=(x0 + 332, y0 + 40, x1 - 64, y0 + 130),
            size=44,
            bold=True,
            rid=f"{PKG}:id/card_text_view_title",
        )
    )
    card.add(
        Node(
            w.TEXT,
            text=r["description"] or None,
            bounds=(x0 + 332, y0 + 140, x1 - 64, y1 - 36),
            size=34,
            fg=GREY,
            lines=2,
            rid=f"{PKG}:id/card_text_view_description",
        )
    )
    return card


class RecipesScreen(Screen):
    """The recipe list; the search action turns the toolbar into a live search field."""

    def __init__(self) -> None:
        super().__init__()
        self.searching = False

    def back(self, ui: UI) -> bool:
        if self.searching:
            self.searching = False
            self.fields["query"] = ""
            return True
        return False

    def submit(self, ui: UI, key: str) -> None:
        ui.unfocus()

    def build(self, ui: UI) -> list[Node]:
        y0, y1 = ui.top, ui.below_bar()
        if self.searching:
            bar = Node(w.VIEW_GROUP, bounds=(0, y0, SCREEN_W, y1), bg=COLOR, rid=f"{PKG}:id/toolbar")
            bar.add(
                Node(
                    w.IMAGE_BUTTON,
                    desc="Collapse",
                    bounds=(24, y0 + 24, 144, y1 - 24),
                    clickable=True,
                    icon="back",
                    icon_fg=WHITE,
                    on_click=lambda: self.back(ui),
                )
            )
            field = ui.field("query", (168, y0 + 28, SCREEN_W - 160, y1 - 28), hint="Search")
            field.rid = f"{PKG}:id/search_src_text"
            field.bg, field.fg, field.border = COLOR, WHITE, WHITE
            bar.add(field)
            bar.add(
                Node(
                    w.IMAGE_BUTTON,
                    desc="Clear query",
                    bounds=(SCREEN_W - 144, y0 + 24, SCREEN_W - 24, y1 - 24),
                    clickable=True,
                    icon="close",
                    icon_fg=WHITE,
                    on_click=lambda: self.fields.__setitem__("query", ""),
                )
            )
        else:

            def start_search() -> None:
                self.searching = True
                ui.focus("query")

            bar = ui.app_bar("Recipes", back=False, actions=[("Search", "search", start_search)])
        q = self.field("query").strip().casefold() if self.searching else ""
        recipes = [r for r in by_title(ui.dev) if q in r["title"].casefold()]
        items = [(CARD_H, lambda b, r=r: recipe_card(ui, r, b)) for r in recipes]
        empty = "No recipes found." if q or not rows(ui.dev) else None
        lst = ui.list("recycler_view", items, empty=empty)
        out = [bar, lst]
        if not self.searching:
            out.append(ui.fab("New Recipe", lambda: ui.push(EditScreen())))
        return out


class DetailsScreen(Screen):
    """A recipe's details: description, servings and time, ingredients, directions, source."""

    def __init__(self, recipe_id: int) -> None:
        super().__init__()
        self.recipe_id = recipe_id

    def build(self, ui: UI) -> list[Node]:
        r = find_recipe(ui.dev, self.recipe_id)
        if r is None:
            return [ui.app_bar("Recipes")]
        fav = bool(r.get("favorite"))

        def toggle_fav() -> None:
            r["favorite"] = 0 if fav else 1

        bar = ui.app_bar(
            r["title"],
            actions=[
                (
                    "Remove from favorites" if fav else "Mark as favorite",
                    "check_on" if fav else "check_off",
                    toggle_fav,
                ),
                ("Edit", "edit", lambda: ui.push(EditScreen(self.recipe_id, ui.dev))),
                ("More options", "more", lambda: ui.push(MenuScreen(self.recipe_id))),
            ],
        )
        blocks: list[tuple[str | None, str, int]] = []
        if r["description"]:
            blocks.append((None, r["description"], text_lines(r["description"])))
        meta = "   ".join(x for x in (r["servings"], r["preparationTime"]) if x)
        if meta:
            blocks.append((None, meta, 1))
        for label, col in (
            ("Ingredients", "ingredients"),
            ("Directions", "directions"),
            ("Source", "source"),
        ):
            if r[col]:
                blocks.append((label, r[col], text_lines(r[col])))
        items = [
            (
                300,
                lambda b: Node(
                    w.IMAGE,
                    bounds=b,
                    bg=(220, 237, 200),
                    icon="app:B",
                    icon_fg=COLOR,
                    desc="Recipe photo",
                    rid=f"{PKG}:id/recipe_image",
                ),
            )
        ]
        for label, text, lines in blocks:
            h = (90 if label else 20) + 56 * lines + 40

            def make(b: w.Bounds, label=label, text=text, lines=lines) -> Node:
                box = Node(w.LINEAR, bounds=b, a11y=False)
                ty = b[1] + 20
                if label:
                    box.add(ui.text(label, (PAD, ty, SCREEN_W - PAD, ty + 70), size=44, bold=True, fg=COLOR))
                    ty += 90
                box.add(
                    ui.text(
                        text,
                        (PAD, ty, SCREEN_W - PAD, b[3] - 20),
                        size=38,
                        lines=lines,
                        rid=f"{PKG}:id/{(label or 'info').lower()}_text",
                    )
                )
                return box

            items.append((h, make))
        return [bar, ui.list("details", items)]


class MenuScreen(Screen):
    """The details overflow menu."""

    modal = True

    def __init__(self, recipe_id: int) -> None:
        super().__init__()
        self.recipe_id = recipe_id

    def build(self, ui: UI) -> list[Node]:
        dev = ui.dev

        def duplicate() -> None:
            r = find_recipe(dev, self.recipe_id)
            if r is not None:
                insert_recipe(dev, **{k: v for k, v in r.items() if k != "recipeId"})
            ui.pop()
            ui.toast("The recipe has been saved.")

        entries = [
            ("Cook", lambda: ui.pop()),
            ("Share", lambda: ui.pop()),
            ("Duplicate", duplicate),
            ("Delete", lambda: ui.replace(ConfirmDeleteScreen(self.recipe_id))),
        ]
        x0, y0 = SCREEN_W - 520, ui.top + 20
        panel = Node(
            w.FRAME,
            bounds=(x0, y0, SCREEN_W - 20, y0 + 40 + 150 * len(entries)),
            bg=WHITE,
            radius=16,
            absorb=True,
            a11y=False,
        )
        y = y0 + 20
        for label, fn in entries:
            panel.add(
                Node(
                    w.TEXT,
                    text=label,
                    bounds=(x0, y, SCREEN_W - 20, y + 150),
                    clickable=True,
                    on_click=fn,
                    size=42,
                    pad=48,
                    rid=f"{PKG}:id/title",
                )
            )
            y += 150
        return [panel]


class ConfirmDeleteScreen(Screen):
    """'Delete this recipe?' with Cancel / Delete."""

    modal = True

    def __init__(self, recipe_id: int) -> None:
        super().__init__()
        self.recipe_id = recipe_id

    def build(self, ui: UI) -> list[Node]:
        panel, _ = ui.dialog_box(None, 360, "Delete this recipe?")

        def delete() -> None:
            table = rows(ui.dev)
            table[:] = [r for r in table if r["recipeId"] != self.recipe_id]
            close_modals(ui)
            if isinstance(ui.phone.stack(PKG)[-1], DetailsScreen):
                ui.pop()
            ui.toast("The recipe has been deleted.")

        ui.dialog_buttons(panel, [("Cancel", ui.pop), ("Delete", delete)])
        return [panel]


class DiscardScreen(Screen):
    """'Discard changes?' when leaving the editor with unsaved input."""

    modal = True

    def build(self, ui: UI) -> list[Node]:
        panel, _ = ui.dialog_box(None, 360, "Discard changes?")

        def discard() -> None:
            close_modals(ui)
            ui.pop()

        ui.dialog_buttons(panel, [("Cancel", ui.pop), ("Discard", discard)])
        return [panel]


class EditScreen(Screen):
    """New Recipe / edit: a scrolling form; the check icon saves."""

    def __init__(self, recipe_id: int | None = None, dev: DeviceState | None = None) -> None:
        super().__init__()
        self.recipe_id = recipe_id
        self.original: dict[str, str] = {}
        if recipe_id is not None and dev is not None:
            r = find_recipe(dev, recipe_id)
            if r is not None:
                self.original = {k: str(r.get(k, "") or "") for k, *_ in FORM}
                self.fields = dict(self.original)

    def dirty(self) -> bool:
        return any(self.field(k).strip() != self.original.get(k, "").strip() for k, *_ in FORM)

    def back(self, ui: UI) -> bool:
        if self.dirty():
            ui.push(DiscardScreen())
            return True
        return False

    def save(self, ui: UI) -> None:
        values = {k: self.field(k).strip() for k, *_ in FORM}
        if not values["title"]:
            ui.toast("Please add a title.")
            return
        r = find_recipe(ui.dev, self.recipe_id) if self.recipe_id is not None else None
        if r is not None:
            r.update(values)
        else:
            insert_recipe(ui.dev, **values)
        ui.unfocus()
        ui.pop()
        ui.toast("The recipe has been saved.")

    def build(self, ui: UI) -> list[Node]:
        bar = ui.app_bar(
            "New Recipe" if self.recipe_id is None else "Edit Recipe",
            actions=[("Save", "check", lambda: self.save(ui))],
        )
        nav = bar.children[0]
        nav.on_click = lambda: self.back(ui) or ui.pop()
        items = [
            (
                340,
                lambda b: Node(
                    w.IMAGE,
                    bounds=(b[0] + PAD, b[1] + 20, b[2] - PAD, b[3] - 20),
                    bg=(220, 237, 200),
                    radius=24,
                    icon="add",
                    icon_fg=COLOR,
                    desc="Change photo",
                    clickable=True,
                    on_click=lambda: None,
                    rid=f"{PKG}:id/image_view",
                ),
            )
        ]
        for key, hint, h, multi in FORM:
            items.append(
                (
                    h,
                    lambda b, key=key, hint=hint, multi=multi: ui.field(
                        key, (b[0] + PAD, b[1] + 16, b[2] - PAD, b[3] - 16), hint=hint, multiline=multi
                    ),
                )
            )
            if key == "title":
                items.append(
                    (150, lambda b: ui.item("Categories", b, on_click=lambda: None, subtitle="None"))
                )
        self._reveal_focus(ui, items)
        return [bar, ui.list("form", items)]

    def _reveal_focus(self, ui: UI, items: list) -> None:
        """Scroll the form so the focused field stays above the keyboard, as Android does."""
        if self.focus is None or self.focus == getattr(self, "revealed", None):
            self.revealed = self.focus
            return
        self.revealed = self.focus
        top, view_h = 0, ui.bottom - ui.below_bar()
        off = self.scroll.get("form", 0)
        keys = ["photo"] + [k for k, *_ in FORM]
        keys.insert(2, "categories")
        for key, (h, _) in zip(keys, items, strict=True):
            if key == self.focus:
                if top < off:
                    self.scroll["form"] = top
                elif top + h > off + view_h:
                    self.scroll["form"] = top + h - view_h
                return
            top += h


@register_app
class Broccoli(App):
    package = PKG
    name = "Broccoli"
    aliases = r"broccoli|broccoli app|broccoli recipe app|recipe app"
    color = COLOR

    def main(self, dev: DeviceState) -> Screen:
        return RecipesScreen()

    def setup(self, dev: DeviceState) -> None:
        rows(dev)
