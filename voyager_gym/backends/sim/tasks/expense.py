"""Pro Expense tasks (AndroidWorld's single/expense.py): add expenses, delete named ones, delete duplicates.

Verifiers read `dev.table("expense")` with AndroidWorld's sqlite rules: add tasks need every expected row
present (name and note fuzzy, amount in cents and category id exact), exactly before + n rows and every
earlier row unchanged; delete tasks need exactly the target rows gone and every other row intact (for
duplicates: exactly one of the two identical rows gone)."""

from __future__ import annotations

import random
import re
from typing import Any

from voyager_gym.actions import Action
from voyager_gym.backends.sim.apps.expense import CATEGORIES, PKG, TABLE, insert_expense
from voyager_gym.backends.sim.device import DeviceState
from voyager_gym.backends.sim.tasks import vocab
from voyager_gym.backends.sim.tasks.base import (
    View,
    back,
    click,
    done,
    long_press,
    open_app,
    register_task,
    scroll,
    scroll_to_find,
    type_into,
)
from voyager_gym.backends.sim.tasks.common import (
    DCIM,
    AddRows,
    DedupeRows,
    DeleteRows,
    FromImage,
    RowsTask,
    read_note,
    wrapped,
    write_note,
    write_to_gallery,
)

APP = "pro expense"
OCT_1_MS = 1696118400000  # 2023-10-01 00:00 UTC

# Expense names per category (AndroidWorld's generator draws a category, then a name from its list).
EXPENSE_NAMES: dict[str, tuple[str, ...]] = {
    "Others": (
        "Emergency Repairs",
        "Pet Supplies",
        "Pet Care",
        "Household Items",
        "Stationery",
        "Unexpected Expenses",
        "Miscellaneous Gifts",
        "Subscriptions",
        "Membership Fees",
        "Legal Fees",
    ),
    "Income": (
        "Salary",
        "Freelance Payment",
        "Bonus",
        "Dividends",
        "Interest Income",
        "Rental Income",
        "Capital Gains",
        "Reimbursements",
        "Side Business",
        "Consulting Fees",
    ),
    "Food": (
        "Restaurant Meal",
        "Groceries",
        "Coffee",
        "Fast Food",
        "Fine Dining",
        "Bakery Items",
        "Snacks",
        "Food Delivery",
        "Specialty Foods",
        "Dining Out",
    ),
    "Housing": (
        "Rent Payment",
        "Mortgage",
        "Home Repairs",
        "Utilities",
        "Property Taxes",
        "Home Insurance",
        "Furnishing",
        "Cleaning Services",
        "Landscaping",
        "Pest Control",
    ),
    "Social": (
        "Dinner Party",
        "Gift for Friend",
        "Club Membership",
        "Wedding Gift",
        "Charity Donations",
        "Birthday Present",
        "Social Club Dues",
        "Event Tickets",
        "Night Out",
        "Party Supplies",
    ),
    "Entertainment": (
        "Concert Tickets",
        "Movie Night",
        "Theater Show",
        "Streaming Services",
        "Video Games",
        "Books",
        "Magazines",
        "Hobbies",
        "Museum Tickets",
        "Amusement Park",
    ),
    "Transportation": (
        "Taxi Fare",
        "Public Transit Pass",
        "Gas",
        "Parking Fees",
        "Car Maintenance",
        "Bike Repairs",
        "Car Insurance",
        "Public Transit",
        "Flight Tickets",
        "Ride-Sharing",
    ),
    "Clothes": (
        "New Jacket",
        "Shirt Purchase",
        "Shoes",
        "Dress",
        "Jeans",
        "Accessories",
        "Sportswear",
        "Undergarments",
        "Tailoring Services",
        "Laundry",
    ),
    "Health Care": (
        "Doctor Visits",
        "Medications",
        "Health Insurance",
        "Dental Care",
        "Eyecare",
        "Wellness Products",
        "Gym Membership",
        "Therapy Sessions",
        "Medical Tests",
    ),
    "Education": (
        "Tuition Fees",
        "School Supplies",
        "Textbooks",
        "Online Courses",
        "Seminars",
        "Workshops",
        "Educational Software",
        "Library Fees",
        "ProDev",
        "Tutoring Services",
    ),
    "Donation": (
        "Charity",
        "Fundraising Events",
        "Sponsorships",
        "Non-Profit Support",
        "Crowdfunding",
        "Religious",
        "Political",
        "Educational",
        "Medical Research",
        "Environmental",
    ),
}
NOTES = (
    "Paid by card",
    "Urgent",
    "Monthly recurring",
    "Want to have",
    "A need",
    "Remember to transfer funds",
    "I may repeat this",
)
COMPARE = ("name", "amount", "category", "note")
FREE_FORM = ("name", "note")


# -- data ----------------------------------------------------------------------------------------------
def random_expense(rng: random.Random) -> dict[str, Any]:
    """A realistic expense, drawn as AndroidWorld draws it: a whole hour of 1-15 October, a category, a name
    of that category, $10-$500 in cents, a note. `expense_id` is -1 until the row is inserted (as there)."""
    ts = vocab.random_october_2023_ts(rng, start_day=1, end_day=15) * 1000
    category = rng.choice(list(CATEGORIES))
    return {
        "name": rng.choice(EXPENSE_NAMES[CATEGORIES[category]]),
        "amount": rng.randint(1000, 50000),
        "category": category,
        "note": rng.choice(NOTES),
        "created_date": ts,
        "modified_date": ts,
        "expense_id": -1,
    }


def distinct_expenses(
    rng: random.Random, n: int, exclude_names: set[str] = frozenset(), unique_names: bool = False
) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    while len(out) < n:
        c = random_expense(rng)
        if (
            c["name"] in exclude_names
            or c in out
            or (unique_names and any(c["name"] == o["name"] for o in out))
        ):
            continue
        out.append(c)
    return out


def amount_dollars(cents: int) -> str:
    """AndroidWorld's text form of an amount: `$` + cents / 100 as a Python float (e.g. $123.4, $100.0)."""
    return f"${cents / 100}"


def rows_as_text(rows: list[dict[str, Any]], fmt: str, wrap: int | None = None) -> str:
    """AndroidWorld's text of expense rows: csv, or text blocks whose values wrap at `wrap` columns."""
    fields = ("name", "amount_dollars", "category_name", "note")

    def value(r: dict[str, Any], f: str) -> str:
        return {
            "amount_dollars": amount_dollars(r["amount"]),
            "category_name": CATEGORIES[r["category"]],
        }.get(f, str(r.get(f, "")))

    if fmt == "csv":
        return "|".join(fields) + "\n" + "\n".join("|".join(value(r, f) for f in fields) for r in rows)
    blocks = []
    for r in rows:
        lines = "".join(f" {f}: {wrapped(value(r, f), wrap)}\n" for f in fields[1:])
        blocks.append(f"Expense: {r['name']}\n{lines}")
    return "\n".join(blocks)


def insert_rows(dev: DeviceState, rows: list[dict[str, Any]]) -> None:
    for r in rows:
        insert_expense(
            dev, r["name"], r["amount"], r["category"], r["note"], r["created_date"], r["modified_date"]
        )


# -- expert helpers ------------------------------------------------------------------------------------------
def to_logs(view: View) -> Action | None:
    """From anywhere, get to Expense Logs; None once there."""
    if view.app != PKG:
        return open_app("Pro Expense")
    title = view.title or ""
    if title == "Expense Logs" or title.endswith(("item", "items")):
        return None
    more = view.find(rid=f"{PKG}:id/btn_more")
    if title == "Pro Expense" and more is not None:
        return click(more)
    return back()


def log_records(view: View) -> list[tuple[int, str, str, str]]:
    """(name element index, name, amount text, day header) for every visible expense row, top to bottom."""
    out, day = [], ""
    cur: list[Any] | None = None
    for i, e in enumerate(view.elements):
        rid = e.resource_name or ""
        if rid.endswith(":id/tv_date_header"):
            day = e.text or ""
        elif rid.endswith(":id/tv_name"):
            cur = [i, e.text or "", "", day]
        elif rid.endswith(":id/tv_amount") and cur is not None:
            cur[2] = e.text or ""
            out.append(tuple(cur))
            cur = None
    return out


class _Expense(RowsTask):
    app_names = (APP,)
    table = TABLE
    id_key = "expense_id"

    @classmethod
    def distinct_rows(cls, rng: random.Random, n: int) -> list[dict[str, Any]]:
        return distinct_expenses(rng, n)

    def insert_rows(self, dev: DeviceState, rows: list[dict[str, Any]]) -> None:
        dev.table(TABLE).clear()
        insert_rows(dev, rows)


class _ExpenseAdd(AddRows, _Expense):
    compare = COMPARE
    free_form = FREE_FORM
    template = f"Add the following expenses into the {APP}:\n{{rows_text}}"
    rows_as_text = staticmethod(rows_as_text)

    @classmethod
    def noise_rows(cls, rng: random.Random, targets: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return distinct_expenses(rng, cls.n_noise, exclude_names={t["name"] for t in targets})

    def expert(self, view: View, mem: dict[str, Any]) -> Action:
        """Add Expense -> name, amount, category chip, note -> Save, per row: the goal's rows, or those
        `mem["rows"]` holds (read from a note)."""
        targets = mem.get("rows", self.params["row_objects"])
        added = mem.setdefault("added", 0)
        if view.app != PKG:
            return open_app("Pro Expense")
        title = view.title
        if title == "Pro Expense" and view.has(desc="Add Expense"):
            return done() if added >= len(targets) else click(view.find(desc="Add Expense"))
        if title != "Expense Entry" or added >= len(targets):
            return back()
        row = targets[added]
        want = {"Name": row["name"], "Amount": f"{row['amount'] / 100}", "Note": row["note"]}
        for hint in ("Name", "Amount"):
            i = view.find(hint=hint, editable=True)
            if i is not None and (view.el(i).text or "") != want[hint]:
                return type_into(i, want[hint])
        chip = view.find(text=CATEGORIES[row["category"]], rid=f"{PKG}:id/category_chip")
        if chip is not None and not view.el(chip).is_selected:
            return click(chip)
        i = view.find(hint="Note", editable=True)
        if i is not None and (view.el(i).text or "") != want["Note"]:
            return type_into(i, want["Note"])
        mem["added"] = added + 1
        return click(view.find(text="Save"))


@register_task
class ExpenseAddSingle(_ExpenseAdd):
    complexity = 1.2
    n_rows = 1


@register_task
class ExpenseAddMultiple(_ExpenseAdd):
    complexity = 6
    n_rows = 3


class _ExpenseDelete(DeleteRows, _Expense):
    """Delete named expenses (AndroidWorld inserts only the targets: no noise rows)."""

    n_rows = 3
    template = "Delete the following expenses from pro expense: {names}."

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return {"row_objects": distinct_expenses(rng, cls.n_rows, unique_names=True)}

    @property
    def goal(self) -> str:
        names = ", ".join(r["name"] for r in self.params["row_objects"])
        return f"Delete the following expenses from {APP}: {names}."


@register_task
class ExpenseDeleteSingle(_ExpenseDelete):
    complexity = 1
    n_rows = 1

    def expert(self, view: View, mem: dict[str, Any]) -> Action:
        """Open the expense from Expense Logs, Delete in its detail sheet, Confirm."""
        target = self.params["row_objects"][0]["name"]
        if mem.get("deleted"):
            return done() if view.app == PKG and view.title in ("Expense Logs", "Pro Expense") else back()
        confirm = view.find(text="Confirm")
        if confirm is not None and view.has(text="Delete Items"):
            mem["deleted"] = True
            return click(confirm)
        if view.has(text="Expense Detail"):
            name = view.find(rid=f"{PKG}:id/tv_detail_name")
            return (
                click(view.find(text="Delete"))
                if name is not None and view.el(name).text == target
                else back()
            )
        act = to_logs(view)
        if act is not None:
            return act
        found = scroll_to_find(view, mem, "find", text=target, rid=f"{PKG}:id/tv_name")
        return click(found) if isinstance(found, int) else found


@register_task
class ExpenseDeleteMultiple(_ExpenseDelete):
    complexity = 2
    n_rows = 3

    def expert(self, view: View, mem: dict[str, Any]) -> Action:
        """One pass down Expense Logs: long-press the first target seen, tap each other one as it scrolls into
        view (remembering those already picked once they scroll away), then Delete and Confirm."""
        names = [r["name"] for r in self.params["row_objects"]]
        if mem.get("deleted"):
            return done() if view.app == PKG and view.title in ("Expense Logs", "Pro Expense") else back()
        if view.has(text="Delete Items"):
            mem["deleted"] = True
            return click(view.find(text="Confirm"))
        act = to_logs(view)
        if act is not None:
            return act
        selecting = (view.title or "") != "Expense Logs"
        picked = set(mem.get("picked", ())) if selecting else set()
        for i in view.find_all(rid=f"{PKG}:id/tv_name"):
            text = view.el(i).text
            if text in names:
                (picked.add if view.el(i).is_selected else picked.discard)(text)
        mem["picked"] = sorted(picked)
        if len(picked) == len(names):
            return click(view.find(desc="Delete"))
        pattern = "^(" + "|".join(re.escape(n) for n in names if n not in picked) + ")$"
        found = scroll_to_find(view, mem, "find", regex=pattern, rid=f"{PKG}:id/tv_name")
        if not isinstance(found, int):
            return found
        return click(found) if selecting else long_press(found)


@register_task
class ExpenseDeleteDuplicates(DedupeRows, _Expense):
    complexity = 1.2
    n_noise = 5
    template = (
        "Delete all but one of any expenses in pro expense that are exact duplicates, ensuring at least one "
        "instance of each unique expense remains."
    )

    def expert(self, view: View, mem: dict[str, Any]) -> Action:
        """Find two rows with the same name, amount and day in Expense Logs; delete the second."""
        if mem.get("deleted"):
            return done() if view.app == PKG and view.title in ("Expense Logs", "Pro Expense") else back()
        if view.has(text="Delete Items"):
            mem["deleted"] = True
            return click(view.find(text="Confirm"))
        if view.has(text="Expense Detail"):
            return click(view.find(text="Delete")) if mem.get("opened") else back()
        act = to_logs(view)
        if act is not None:
            return act
        seen: dict[tuple[str, str, str], int] = {}
        for idx, name, amount, day in log_records(view):
            if (name, amount, day) in seen:
                mem["opened"] = True
                return click(idx)
            seen[(name, amount, day)] = idx
        mem["scrolls"] = mem.get("scrolls", 0) + 1
        if mem["scrolls"] > 12:
            raise LookupError("expert found no duplicate expenses")
        return scroll("down", view.scrollable())


# -- harder delete variants (many noise rows) ----------------------------------------------------------------
@register_task
class ExpenseDeleteMultiple2(ExpenseDeleteMultiple):
    """Three named expenses among 50 others (AndroidWorld draws 53 expenses with distinct names: the first
    three are the targets, inserted after the 50 noise rows)."""

    complexity = 3.4
    n_rows = 3
    n_noise = 50

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        rows = distinct_expenses(rng, cls.n_rows + cls.n_noise, unique_names=True)
        return {"row_objects": rows[: cls.n_rows], "noise_row_objects": rows[cls.n_rows :]}


@register_task
class ExpenseDeleteDuplicates2(ExpenseDeleteDuplicates):
    """One duplicated expense among 40 others, three of which share its name with another amount and date
    (AndroidWorld's harder variant)."""

    complexity = 1.8
    n_noise = 40

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        rows = distinct_expenses(rng, cls.n_noise + 1 - 3)
        target = rows.pop()
        variations = []
        for extra in rng.sample(range(50, 1000), 3):
            created = vocab.random_october_2023_ts(rng, start_day=1, end_day=15) * 1000
            modified = vocab.random_october_2023_ts(rng, start_day=1, end_day=15) * 1000
            variations.append(
                {
                    **target,
                    "amount": target["amount"] + extra,
                    "created_date": created,
                    "modified_date": modified,
                }
            )
        return {"row_objects": [target, dict(target)], "noise_row_objects": rows + variations}


# -- add the reimbursable rows of a Markor note (AndroidWorld's write_to_markor) ---------------------------
REIMBURSABLE = ". Reimbursable."


@register_task
class ExpenseAddMultipleFromMarkor(_ExpenseAdd):
    """my_expenses.txt (csv) lists the two targets, their notes marked reimbursable, among 100 others; the
    reference rows keep their unmarked notes (AndroidWorld's rule compares against them)."""

    app_names = (APP, "markor")
    complexity = 6
    n_rows = 2
    n_noise = 100
    template = (
        "Go through the transactions in my_expenses.txt in Markor. Log the reimbursable transactions in the "
        f"{APP}."
    )

    @property
    def goal(self) -> str:
        return self.template

    def initialize(self, dev: DeviceState) -> None:
        super().initialize(dev)
        marked = [{**r, "note": r["note"] + REIMBURSABLE} for r in self.params["row_objects"]]
        rows = marked + self.params["noise_row_objects"]
        # AndroidWorld shuffles with `random` seeded by the instance seed (its setup seeds it): same order.
        self.setup_rng().shuffle(rows)
        write_note(dev, "my_expenses.txt", rows_as_text(rows, "csv"))

    def expert(self, view: View, mem: dict[str, Any]) -> Action:
        """Open my_expenses.txt in Markor, keep the rows whose note says Reimbursable (their note entered
        without that mark), then add them as the goal's."""
        if "rows" not in mem:
            text = read_note(view, mem, "my_expenses.txt")
            if not isinstance(text, str):
                return text
            ids = {v: k for k, v in CATEGORIES.items()}
            mem["rows"] = [
                {"name": name, "amount": round(float(amount.lstrip("$")) * 100), "category": ids[category],
                 "note": note[: -len(REIMBURSABLE)]}
                for name, amount, category, note in (ln.split("|") for ln in text.split("\n")[1:] if ln)
                if note.endswith(REIMBURSABLE)
            ]
        return super().expert(view, mem)


# -- add the expenses drawn in an image (AndroidWorld's write_to_gallery) -----------------------------------
@register_task
class ExpenseAddMultipleFromGallery(FromImage, _ExpenseAdd):
    """expenses.jpg in DCIM draws the three targets as text blocks (values wrapped at 60 columns), beside
    old_expenses_0..9.jpg, each drawing the ten noise rows the app already holds; storage is cleared first."""

    app_names = (APP, "simple gallery pro")
    complexity = 6
    n_rows = 3
    n_noise = 10
    template = f"Add the expenses from expenses.jpg in Simple Gallery Pro to {APP}."
    image_name = "expenses.jpg"

    def initialize(self, dev: DeviceState) -> None:
        super().initialize(dev)  # expenses.jpg, the oldest: the gallery shows it after the ten others
        dev.files[f"{DCIM}/{self.image_name}"].mtime_ms -= 10_000
        noise = rows_as_text(self.params["noise_row_objects"], "text_block", wrap=60)
        for i in range(10):
            write_to_gallery(dev, noise, f"old_expenses_{i}.jpg", age_s=9 - i)
