"""Pro Expense: near-miss verifier cases for every task and the app's add / delete flows through actions."""

import numpy as np

from voyager_gym.actions import Action
from voyager_gym.backends.sim.apps.expense import insert_expense
from voyager_gym.backends.sim.expert import run_expert


def start(backend, name, seed=7):
    backend.reset(name, backend.generate_params(name, seed), np.random.default_rng(0))
    return backend.task, backend.phone.dev


def add_row(dev, row, **changes):
    r = {**row, **changes}
    insert_expense(dev, r["name"], r["amount"], r["category"], r["note"], dev.time_ms)


def act(backend, action_type, **kw):
    backend.execute(Action(action_type, **kw))


def index_of(backend, text=None, desc=None, hint=None):
    for i, e in enumerate(backend.phone.elements()):
        if (
            (text is None or e.text == text)
            and (desc is None or e.content_description == desc)
            and (hint is None or e.hint_text == hint)
        ):
            return i
    raise AssertionError(f"no element text={text!r} desc={desc!r} hint={hint!r}")


def test_add_single_exact_row_passes_and_near_misses_fail(backend):
    task, dev = start(backend, "ExpenseAddSingle")
    target = task.params["row_objects"][0]
    assert task.is_successful(dev) == 0.0
    snap = dev.snapshot()
    add_row(dev, target, amount=target["amount"] + 1)  # one cent off
    assert task.is_successful(dev) == 0.0
    dev = snap.snapshot()
    add_row(dev, target, category=target["category"] % 11 + 1)  # wrong category
    assert task.is_successful(dev) == 0.0
    dev = snap.snapshot()
    add_row(dev, target, note=target["note"].lower() + " ")  # fuzzy text still matches
    assert task.is_successful(dev) == 1.0
    add_row(dev, target, name="Something else")  # an extra row
    assert task.is_successful(dev) == 0.0
    dev = snap.snapshot()
    add_row(dev, target)
    dev.table("expense")[0]["note"] = "changed"  # an earlier row altered
    assert task.is_successful(dev) == 0.0


def test_add_multiple_needs_every_row(backend):
    task, dev = start(backend, "ExpenseAddMultiple")
    for r in task.params["row_objects"][:2]:
        add_row(dev, r)
    assert task.is_successful(dev) == 0.0
    add_row(dev, task.params["row_objects"][2])
    assert task.is_successful(dev) == 1.0


def test_delete_single_and_multiple_near_misses(backend):
    task, dev = start(backend, "ExpenseDeleteSingle")
    assert len(dev.table("expense")) == 1  # AndroidWorld inserts only the target row
    dev.table("expense").clear()
    insert_expense(dev, "Coffee", 1234, 3, "", dev.time_ms)  # deleted, but a new row appeared
    assert task.is_successful(dev) == 0.0
    dev.table("expense").clear()
    assert task.is_successful(dev) == 1.0

    task, dev = start(backend, "ExpenseDeleteMultiple")
    rows = dev.table("expense")
    del rows[0:2]  # two of three
    assert task.is_successful(dev) == 0.0
    rows.clear()
    assert task.is_successful(dev) == 1.0


def test_delete_duplicates_exactly_one_copy(backend):
    task, dev = start(backend, "ExpenseDeleteDuplicates")
    rows = dev.table("expense")
    assert len(rows) == 7
    a, b = rows[-2], rows[-1]
    assert {k: v for k, v in a.items() if k != "expense_id"} == {
        k: v for k, v in b.items() if k != "expense_id"
    }
    snap = dev.snapshot()
    rows.remove(b)
    assert task.is_successful(dev) == 1.0
    rows.remove(a)  # both copies gone
    assert task.is_successful(dev) == 0.0
    dev = snap.snapshot()
    dev.table("expense").pop(-2)
    dev.table("expense").pop(0)  # one copy and a unique expense
    assert task.is_successful(dev) == 0.0


def test_delete_via_detail_sheet_and_add_via_entry_form(backend):
    task, dev = start(backend, "ExpenseDeleteMultiple")
    name = task.params["row_objects"][1]["name"]
    act(backend, "open_app", app_name="pro expense app")
    act(backend, "click", index=index_of(backend, text=name))
    assert backend.phone.find(text="Expense Detail") is not None
    act(backend, "click", index=index_of(backend, text="Delete"))
    act(backend, "click", index=index_of(backend, text="Cancel"))
    assert len(dev.table("expense")) == 3
    act(backend, "click", index=index_of(backend, text=name))
    act(backend, "click", index=index_of(backend, text="Delete"))
    act(backend, "click", index=index_of(backend, text="Confirm"))
    assert [r["name"] for r in dev.table("expense")] == [
        r["name"] for r in task.params["row_objects"] if r["name"] != name
    ]
    act(backend, "click", index=index_of(backend, desc="Add Expense"))
    act(backend, "input_text", index=index_of(backend, hint="Name"), text="Taxi Fare")
    act(backend, "input_text", index=index_of(backend, hint="Amount"), text="$12.5")
    act(backend, "click", index=index_of(backend, text="Transportation"))
    act(backend, "input_text", index=index_of(backend, hint="Note"), text="Airport")
    act(backend, "click", index=index_of(backend, text="Save"))
    new = dev.table("expense")[-1]
    assert (new["name"], new["amount"], new["category"], new["note"]) == ("Taxi Fare", 1250, 7, "Airport")
    assert backend.phone.find(text="Taxi Fare") is not None  # back on the home screen's recent list


def test_expert_trajectory_with_a_wrong_category_fails(backend):
    seed = next(
        s
        for s in range(11, 60)
        if backend.generate_params("ExpenseAddSingle", s)["row_objects"][0]["category"] != 1
    )
    run = run_expert(backend, "ExpenseAddSingle", seed)
    assert run.score == 1.0
    task, dev = start(backend, "ExpenseAddSingle", seed)
    for a in run.actions:  # replay, but never tap a category chip: the default "Others" is kept
        if (
            a.action_type == "click"
            and backend.phone.element_nodes()[a.index].rid == "com.arduia.expense:id/category_chip"
        ):
            continue
        backend.execute(a)
    assert len(dev.table("expense")) == 11
    assert task.is_successful(dev) == 0.0


def test_delete_multiple2_three_named_among_fifty(backend):
    task, dev = start(backend, "ExpenseDeleteMultiple2")
    rows = dev.table("expense")
    names = [r["name"] for r in task.params["row_objects"]]
    assert len(rows) == 53 and [r["name"] for r in rows[-3:]] == names  # targets inserted after the noise
    assert len({r["name"] for r in rows}) == 53  # every name distinct, as AndroidWorld draws them
    snap = dev.snapshot()
    del rows[-3:]
    assert task.is_successful(dev) == 1.0
    rows.pop(0)  # and a noise expense too
    assert task.is_successful(dev) == 0.0
    dev = snap.snapshot()
    del dev.table("expense")[-2:]  # two of the three
    assert task.is_successful(dev) == 0.0
    dev = snap.snapshot()
    del dev.table("expense")[-3:]
    dev.table("expense")[5]["note"] = "changed"  # a noise expense altered
    assert task.is_successful(dev) == 0.0


def test_delete_duplicates2_near_copies_are_not_duplicates(backend):
    task, dev = start(backend, "ExpenseDeleteDuplicates2")
    rows = dev.table("expense")
    target = task.params["row_objects"][0]
    near = [r for r in rows[:-2] if r["name"] == target["name"]]
    assert len(rows) == 42 and len(near) >= 3
    assert all(r["amount"] != target["amount"] and r["category"] == target["category"] for r in near[-3:])
    snap = dev.snapshot()
    rows.pop(-2)  # one of the two exact copies
    assert task.is_successful(dev) == 1.0
    dev = snap.snapshot()
    dev.table("expense").remove(near[-1])  # a copy with another amount and date instead
    assert task.is_successful(dev) == 0.0
    dev = snap.snapshot()
    del dev.table("expense")[-2:]  # both exact copies
    assert task.is_successful(dev) == 0.0


def test_add_from_markor_reimbursable_rows(backend):
    from voyager_gym.backends.sim.apps.markor import MARKOR_DIR

    task, dev = start(backend, "ExpenseAddMultipleFromMarkor")
    rows = task.params["row_objects"]
    assert len(rows) == 2 and len(dev.table("expense")) == 100 and rows[0]["name"] not in task.goal
    assert [f for f in dev.files if f.startswith(MARKOR_DIR + "/")] == [f"{MARKOR_DIR}/my_expenses.txt"]
    lines = dev.read_file(f"{MARKOR_DIR}/my_expenses.txt").split("\n")
    assert lines[0] == "name|amount_dollars|category_name|note" and len(lines) == 103
    marked = [ln for ln in lines if ln.endswith(". Reimbursable.")]
    assert sorted(ln.split("|")[0] for ln in marked) == sorted(r["name"] for r in rows)
    snap = dev.snapshot()
    for r in rows:
        add_row(dev, r, note=r["note"] + ". Reimbursable.")  # AndroidWorld's rule wants the unmarked note
    assert task.is_successful(dev) == 0.0
    dev = snap.snapshot()
    add_row(dev, rows[0])
    assert task.is_successful(dev) == 0.0  # one missing
    add_row(dev, rows[1])
    assert task.is_successful(dev) == 1.0


def test_add_from_gallery_image_and_noise_images(backend):
    from voyager_gym.backends.sim.apps.simple_commons import parse_picture
    from voyager_gym.backends.sim.tasks.expense import rows_as_text

    task, dev = start(backend, "ExpenseAddMultipleFromGallery")
    rows, noise = task.params["row_objects"], task.params["noise_row_objects"]
    assert len(rows) == 3 and len(dev.table("expense")) == 10 and rows[0]["name"] not in task.goal
    dcim = "/storage/emulated/0/DCIM"
    names = ["expenses.jpg"] + [f"old_expenses_{i}.jpg" for i in range(10)]
    assert sorted(dev.files) == sorted(f"{dcim}/{n}" for n in names)  # storage cleared first
    drawn = [t for _, _, t in parse_picture(dev.read_file(f"{dcim}/expenses.jpg"))[2]]
    assert drawn == [ln for ln in rows_as_text(rows, "text_block").split("\n") if ln]  # short values: no wrap
    noise_drawn = [t for _, _, t in parse_picture(dev.read_file(f"{dcim}/old_expenses_9.jpg"))[2]]
    assert f"Expense: {noise[0]['name']}" in noise_drawn and f"Expense: {rows[0]['name']}" not in noise_drawn
    snap = dev.snapshot()
    for r in rows[:2]:
        add_row(dev, r)
    add_row(dev, rows[2], amount=rows[2]["amount"] + 1)  # one cent off
    assert task.is_successful(dev) == 0.0
    dev = snap.snapshot()
    for r in rows:
        add_row(dev, r)
    assert task.is_successful(dev) == 1.0
    add_row(dev, noise[0])  # an old expense's row added again: an extra row
    assert task.is_successful(dev) == 0.0


def test_add_from_gallery_image_text_is_drawn_not_listed(backend):
    task, dev = start(backend, "ExpenseAddMultipleFromGallery", seed=3)
    for _ in range(20):  # to DCIM, then swiping past the ten newer images
        if any(e.text == "expenses.jpg" for e in backend.phone.elements()):
            break
        backend.execute(backend.expert_action())
    texts = [e.text or "" for e in backend.phone.elements()]
    assert "expenses.jpg" in texts  # the viewer's title
    assert not any(task.params["row_objects"][0]["name"] in t for t in texts if t != "expenses.jpg")


def test_add_from_gallery_images_keep_the_order_they_were_written(backend):
    from voyager_gym.backends.sim.apps.simple_commons import media_files

    _, dev = start(backend, "ExpenseAddMultipleFromGallery")
    names = [p.rsplit("/", 1)[1] for p in media_files(dev, "/storage/emulated/0/DCIM")]
    assert names == [f"old_expenses_{i}.jpg" for i in range(9, -1, -1)] + ["expenses.jpg"]  # newest first
