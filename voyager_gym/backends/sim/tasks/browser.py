"""Browser tasks on AndroidWorld's seeded local pages: the 4x4 maze, the multiply game, the colour drawing.

As in AndroidWorld, the task writes the seeded page to Download/task.html (storage cleared first, Chrome
fresh) and the goal asks to open it from the file manager with Chrome; success needs Chrome in front with
the page showing an element whose text is exactly "Success!". SimDroid reads the same from Chrome's tab
state: the task page is loaded and reached success.
"""

from __future__ import annotations

import random
from collections import deque
from typing import Any

from voyager_gym.actions import Action
from voyager_gym.backends.sim.apps import chrome as app
from voyager_gym.backends.sim.apps.files import PKG as FILES
from voyager_gym.backends.sim.device import DeviceState
from voyager_gym.backends.sim.tasks.base import (
    SimTask,
    View,
    back,
    click,
    done,
    open_app,
    register_task,
    scroll,
    type_into,
)
from voyager_gym.backends.sim.tasks.common import (
    clear_storage,
)

MOVES = {"Up": (-1, 0), "Down": (1, 0), "Left": (0, -1), "Right": (0, 1)}


class _Browser(SimTask):
    app_names = ("chrome",)
    complexity = 2.0
    kind = ""

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return {"browser_task_seed": rng.randint(0, 2**32 - 1)}

    preamble = (
        "Open the file task.html in Downloads in the file manager; when prompted open it with Chrome. Then "
    )

    @property
    def goal(self) -> str:
        return self.preamble + self.template[0].lower() + self.template[1:]

    def initialize(self, dev: DeviceState) -> None:
        clear_storage(dev)
        app.serve_task_page(dev, self.kind, self.params["browser_task_seed"])

    def is_successful(self, dev: DeviceState) -> float:
        st = dev.stacks.get(app.PKG)
        on_page = dev.foreground == app.PKG and (not st or isinstance(st[-1], app.ChromeScreen))
        return 1.0 if on_page and app.page_shows_success(dev) else 0.0

    def to_page(self, view: View) -> Action | None:
        """Get Chrome in front on the task page (Files -> Downloads -> task.html -> open with Chrome); `done`
        once it shows success, else None."""
        if view.app == app.PKG:
            if view.has(text="Success!"):
                return done()
            if view.has(rid=self.page_marker):
                return None
            return open_app("Files")
        if view.app != FILES:
            return open_app("Files")
        chooser = view.find(text="Chrome", rid="android:id/text1")
        if chooser is not None:
            return click(chooser)
        if view.title == "Downloads":
            row = view.find(text="task.html", rid="android:id/title")
            return click(row) if row is not None else back()
        downloads = view.find(text="Downloads", rid="android:id/title")
        if downloads is not None:  # the roots drawer
            return click(downloads)
        roots = view.find(desc="Show roots")
        return click(roots) if roots is not None else back()

    page_marker = ""


@register_task
class BrowserMaze(_Browser):
    kind = "maze"
    page_marker = "cell character"
    template = "Navigate the X to the bottom-right cell, by using the direction buttons."

    def expert(self, view: View, mem: dict[str, Any]) -> Action:
        act = self.to_page(view)
        if act is not None:
            return act
        cells = [i for i, e in enumerate(view.elements) if (e.resource_name or "").startswith("cell")]
        cells.sort(key=lambda i: (view.el(i).bbox_pixels.y_min, view.el(i).bbox_pixels.x_min))
        n = int(len(cells) ** 0.5)
        kinds = {divmod(k, n): view.el(i).resource_name for k, i in enumerate(cells)}
        start = next(p for p, k in kinds.items() if k == "cell character")
        goal = next(p for p, k in kinds.items() if k == "cell goal")
        prev: dict[tuple[int, int], tuple[tuple[int, int], str] | None] = {start: None}
        queue = deque([start])
        while queue:
            p = queue.popleft()
            for label, (dr, dc) in MOVES.items():
                q = (p[0] + dr, p[1] + dc)
                if q in kinds and kinds[q] != "cell wall" and q not in prev:
                    prev[q] = (p, label)
                    queue.append(q)
        step, label = goal, None
        while prev[step] is not None:
            step, label = prev[step]  # type: ignore[misc]
        return click(view.find(text=label, cls="Button"))


@register_task
class BrowserMultiply(_Browser):
    kind = "multiply"
    complexity = 2.2
    page_marker = "number"
    template = (
        "Click the button 5 times, remember the numbers displayed, and enter their product in the form."
    )

    def expert(self, view: View, mem: dict[str, Any]) -> Action:
        act = self.to_page(view)
        if act is not None:
            return act
        nums: list[int] = mem.setdefault("nums", [])
        button = view.find(text="Click Me")
        if button is not None:
            if len(nums) >= 5:  # the page was reloaded: start over
                nums.clear()
            nums.append(int(view.el(view.find(rid="number")).text))
            return click(button)
        product = 1
        for x in nums:
            product *= x
        field = view.find(rid="answer")
        if field is not None and view.el(field).text != str(product):
            return type_into(field, str(product))
        return click(view.find(text="Submit"))


@register_task
class BrowserDraw(_Browser):
    kind = "draw"
    page_marker = "canvas"
    template = "Create a drawing using the three colors shown at the top and hit submit."

    def expert(self, view: View, mem: dict[str, Any]) -> Action:
        act = self.to_page(view)
        if act is not None:
            return act
        drawn: list[str] = mem.setdefault("drawn", [])
        for i in view.find_all(rid="taskColors"):
            color = view.el(i).content_description
            if color in drawn:
                continue
            if mem.get("pen") != color:
                mem["pen"] = color
                return click(view.find(desc=color, rid="color-button"))
            drawn.append(color)
            return scroll(("right", "down", "left")[len(drawn) % 3], view.find(rid="canvas"))
        if mem.get("submitted"):  # submitted without success: clear and draw again
            mem.clear()
            return click(view.find(text="Clear"))
        mem["submitted"] = True
        return click(view.find(text="Submit"))
