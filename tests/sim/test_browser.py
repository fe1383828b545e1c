"""Chrome with AndroidWorld's seeded task pages: generators, page interaction through actions, near misses."""

from collections import deque

import numpy as np
import pytest

from voyager_gym.actions import Action
from voyager_gym.backends.sim.apps import chrome
from voyager_gym.backends.sim.tasks.base import View


def view(backend):
    return View(backend.phone.elements())


def tap(backend, **find):
    i = view(backend).find(**find)
    assert i is not None, f"no element {find}"
    backend.execute(Action("click", index=i))


def open_page(backend, name, seed):
    """Start the task and open its page the way the goal says: Files -> Downloads -> task.html -> Chrome."""
    backend.reset(name, {"browser_task_seed": seed, "seed": seed}, np.random.default_rng(0))
    backend.execute(Action("open_app", app_name="Files"))
    tap(backend, desc="Show roots")
    tap(backend, text="Downloads", rid="android:id/title")
    tap(backend, text="task.html", rid="android:id/title")
    tap(backend, text="Chrome", rid="android:id/text1")


def test_the_page_starts_in_downloads_not_in_chrome(backend):
    """AndroidWorld's start: task.html in Download, a fresh Chrome on a new tab."""
    backend.reset("BrowserMaze", {"browser_task_seed": 5, "seed": 5}, np.random.default_rng(0))
    assert backend.phone.dev.exists(chrome.TASK_FILE)
    backend.execute(Action("open_app", app_name="Google Chrome"))
    assert not view(backend).has(rid="cell character")
    assert backend.task.goal.startswith("Open the file task.html in Downloads in the file manager;")


def test_lcg_matches_the_pages_generator():
    rnd = chrome.lcg(0)
    assert next(rnd) == 1013904223 / 2**32
    assert next(rnd) == ((1664525 * 1013904223 + 1013904223) % 2**32) / 2**32


@pytest.mark.parametrize("seed", range(40))
def test_every_maze_is_4x4_and_solvable(seed):
    layout = chrome.generate_maze(seed * 7919 + 13)
    assert len(layout) == 4 and all(len(r) == 4 for r in layout)
    assert layout[0][0] == " " and layout[3][3] == "$"
    seen, queue = {(0, 0)}, deque([(0, 0)])
    while queue:
        r, c = queue.popleft()
        for dr, dc in ((1, 0), (-1, 0), (0, 1), (0, -1)):
            q = (r + dr, c + dc)
            if 0 <= q[0] < 4 and 0 <= q[1] < 4 and layout[q[0]][q[1]] != "#" and q not in seen:
                seen.add(q)
                queue.append(q)
    assert (3, 3) in seen


def test_maze_walls_block_and_goal_needs_chrome_in_front(backend):
    open_page(backend, "BrowserMaze", 12345)
    v = view(backend)
    assert v.app == chrome.PKG and v.has(rid="cell character")
    layout = backend.phone.dev.data(chrome.PKG)["page"]["layout"]
    for label in ("Up", "Left"):  # off the grid from the start: no move
        tap(backend, text=label, cls="Button")
        assert backend.phone.dev.data(chrome.PKG)["page"]["pos"] == [0, 0]
    assert backend.score() == 0.0
    # walk the solution but stop one move short: a near miss
    run_moves = []
    prev = {(0, 0): None}
    queue = deque([(0, 0)])
    while queue:
        p = queue.popleft()
        for label, (dr, dc) in {"Up": (-1, 0), "Down": (1, 0), "Left": (0, -1), "Right": (0, 1)}.items():
            q = (p[0] + dr, p[1] + dc)
            if 0 <= q[0] < 4 and 0 <= q[1] < 4 and layout[q[0]][q[1]] != "#" and q not in prev:
                prev[q] = (p, label)
                queue.append(q)
    node = (3, 3)
    while prev[node] is not None:
        node, label = prev[node]
        run_moves.insert(0, label)
    for label in run_moves[:-1]:
        tap(backend, text=label, cls="Button")
    assert backend.score() == 0.0
    tap(backend, text=run_moves[-1], cls="Button")
    assert view(backend).has(text="Success!")
    assert backend.score() == 1.0
    backend.execute(Action("navigate_home"))
    assert backend.score() == 0.0  # AndroidWorld requires Chrome in front


def test_multiply_wrong_product_fails_right_one_succeeds(backend):
    open_page(backend, "BrowserMultiply", 777)
    nums = []
    for _ in range(5):
        v = view(backend)
        nums.append(int(v.el(v.find(rid="number")).text))
        tap(backend, text="Click Me")
    assert nums == chrome.multiply_numbers(777)
    product = int(np.prod(nums))
    field = view(backend).find(rid="answer")
    backend.execute(Action("input_text", index=field, text=str(product + 1), clear_text=True))
    tap(backend, text="Submit")
    assert not view(backend).has(text="Success!")
    assert backend.score() == 0.0
    field = view(backend).find(rid="answer")
    backend.execute(Action("input_text", index=field, text=str(product), clear_text=True))
    tap(backend, text="Submit")
    assert view(backend).has(text="Success!")
    assert backend.score() == 1.0


def test_draw_needs_all_three_colors(backend):
    open_page(backend, "BrowserDraw", 4242)
    v = view(backend)
    colors = [v.el(i).content_description for i in v.find_all(rid="taskColors")]
    assert colors == chrome.draw_task_colors(4242) and len(set(colors)) == 3
    canvas = v.find(rid="canvas")
    tap(backend, desc=colors[0], rid="color-button")
    tap(backend, rid="canvas")  # a tap draws nothing
    assert backend.phone.dev.data(chrome.PKG)["page"]["strokes"] == []
    for c in colors[:2]:
        tap(backend, desc=c, rid="color-button")
        backend.execute(Action("swipe", index=canvas, direction="right"))
    tap(backend, text="Submit")
    assert backend.score() == 0.0  # two of three colours
    tap(backend, desc=colors[2], rid="color-button")
    backend.execute(Action("scroll", index=canvas, direction="up"))
    tap(backend, text="Clear")
    tap(backend, text="Submit")
    assert backend.score() == 0.0  # cleared canvas
    for c in colors:
        tap(backend, desc=c, rid="color-button")
        backend.execute(Action("swipe", index=canvas, direction="down"))
    tap(backend, text="Submit")
    assert view(backend).has(text="Success!")
    assert backend.score() == 1.0


def test_url_bar_leaves_and_reloads_the_page(backend):
    open_page(backend, "BrowserMaze", 99)
    tap(backend, text="Down", cls="Button")
    bar = view(backend).find(rid=f"{chrome.PKG}:id/url_bar")
    backend.execute(Action("input_text", index=bar, text="example.com", clear_text=True))
    assert view(backend).has(text="This site can’t be reached")
    backend.execute(Action("navigate_back"))  # history back reloads the task page from its seed
    v = view(backend)
    assert v.has(rid="cell character")
    assert backend.phone.dev.data(chrome.PKG)["page"]["pos"] == [0, 0]
    backend.execute(Action("navigate_back"))  # nothing left in history: Chrome closes
    assert view(backend).app != chrome.PKG


@pytest.mark.parametrize(
    ("url", "page"),
    [
        ("file:///sdcard/Download/task.html", True),
        ("file:///storage/emulated/0/Download/task.html", True),
        ("localhost:8000/task.html", False),  # no web server on the device, as on AndroidWorld's
        ("http://localhost:8000/task.html", False),
    ],
)
def test_typed_addresses_of_the_task_page(backend, url, page):
    backend.reset("BrowserMaze", {"browser_task_seed": 5, "seed": 5}, np.random.default_rng(0))
    backend.execute(Action("open_app", app_name="Chrome"))
    bar = view(backend).find(rid=f"{chrome.PKG}:id/url_bar")
    backend.execute(Action("input_text", index=bar, text=url, clear_text=True))
    assert view(backend).has(rid="cell character") == page
    assert view(backend).has(text="This site can’t be reached") != page
