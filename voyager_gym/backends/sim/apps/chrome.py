"""Chrome (com.android.chrome) with AndroidWorld's local task pages rendered as widgets in a WebView.

AndroidWorld writes a seeded HTML page to Download/task.html; the agent opens it from the Files app, which
hands it to Chrome. SimDroid keeps the tab in `dev.data(PKG)`: the URL, the task page spec (kind + seed) the
task wrote, and the live page state. Files opens the task file at `TASK_FILE_URL`; typed into the URL bar,
the file's own addresses (`TASK_FILE_URLS`: file:///sdcard/Download/task.html and its
/storage/emulated/0 twin) open it too, as Chrome opens a local file. There is no web server on the device (as
on AndroidWorld's), so any http address shows Chrome's error page. The three pages (maze, multiply,
draw) follow the HTML pages' logic, including their linear congruential generator, so a seed gives the same
maze, numbers and colours as the real page.
Loading the URL again (the URL bar) reloads the page from its seed, as a browser reload does.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from voyager_gym.actions import OPPOSITE_DIRECTION
from voyager_gym.backends.sim import widgets as w
from voyager_gym.backends.sim.device import SDCARD, DeviceState
from voyager_gym.backends.sim.ui import ACCENT, GREY, INK, PAD, UI, WHITE, App, Screen, register_app
from voyager_gym.backends.sim.widgets import APPBAR_H, SCREEN_W, Node

PKG = "com.android.chrome"
TASK_FILE = f"{SDCARD}/Download/task.html"
# What Files hands Chrome for Download/task.html (a document URI, as Android's DocumentsUI passes files).
TASK_FILE_URL = "content://com.android.externalstorage.documents/document/primary%3ADownload%2Ftask.html"
# The file's addresses as typed into the URL bar.
TASK_FILE_URLS = ("file:///sdcard/Download/task.html", f"file://{TASK_FILE}")
BAR_BG = (241, 243, 244)
PAGE_TITLES = {"maze": "Maze Puzzle", "multiply": "Memory Task", "draw": "Color Challenge"}
MAZE_SIZE = 4
AVAILABLE_COLORS = (
    "#ff0000",
    "#00ff00",
    "#0000ff",
    "#ffff00",
    "#ff00ff",
    "#00ffff",
    "#800000",
    "#008000",
    "#000080",
    "#808000",
    "#800080",
    "#008080",
    "#ffa500",
    "#ff1493",
    "#9932cc",
    "#20b2aa",
    "#4b0082",
    "#00ff7f",
    "#ff6347",
    "#00ced1",
    "#9400d3",
    "#f0e68c",
    "#ff8c00",
    "#228b22",
)


# -- the pages' seeded generator and content -------------------------------------------------------------
def lcg(seed: int) -> Iterator[float]:
    """The pages' SeededRNG: x = (1664525 x + 1013904223) mod 2^32, yielding x / 2^32."""
    x = int(seed)
    while True:
        x = (1664525 * x + 1013904223) % 2**32
        yield x / 2**32


def generate_maze(seed: int) -> list[str]:
    """The maze page's layout: rows of '#' (wall), ' ' (open) and '$' (goal); the player starts top-left."""
    rnd = lcg(seed)
    grid = [["#"] * MAZE_SIZE for _ in range(MAZE_SIZE)]
    stack = [(0, 0)]
    dirs = [(-1, 0), (1, 0), (0, -1), (0, 1)]
    while stack:
        r, c = stack.pop()
        grid[r][c] = " "
        if (r, c) == (MAZE_SIZE - 1, MAZE_SIZE - 1):
            break
        for i in range(len(dirs) - 1, 0, -1):  # the page shuffles one direction list in place, every visit
            j = int(next(rnd) * (i + 1))
            dirs[i], dirs[j] = dirs[j], dirs[i]
        for dr, dc in dirs:
            nr, nc = r + dr, c + dc
            if 0 <= nr < MAZE_SIZE and 0 <= nc < MAZE_SIZE and grid[nr][nc] == "#":
                stack.append((nr, nc))
    grid[0][0] = " "
    grid[MAZE_SIZE - 1][MAZE_SIZE - 1] = "$"
    return ["".join(row) for row in grid]


def multiply_numbers(seed: int, n: int = 5) -> list[int]:
    rnd = lcg(seed)
    return [int(next(rnd) * 10) + 1 for _ in range(n)]


def draw_task_colors(seed: int, n: int = 3) -> list[str]:
    rnd = lcg(seed)
    remaining = list(AVAILABLE_COLORS)
    out = []
    for _ in range(n):
        out.append(remaining.pop(int(next(rnd) * len(remaining))))
    return out


def fresh_page(kind: str, seed: int) -> dict[str, Any]:
    """The page state right after loading."""
    page: dict[str, Any] = {"kind": kind, "seed": seed, "success": False}
    if kind == "maze":
        page.update(layout=generate_maze(seed), pos=[0, 0])
    elif kind == "multiply":
        page.update(numbers=multiply_numbers(seed), shown=1, clicks=0, form=False, result="")
    elif kind == "draw":
        page.update(task_colors=draw_task_colors(seed), pen="#000000", strokes=[], result="")
    return page


def state(dev: DeviceState) -> dict[str, Any]:
    d = dev.data(PKG)
    d.setdefault("url", None)  # None: the New tab page
    d.setdefault("task", None)  # {"kind", "seed"}: the page Download/task.html holds
    d.setdefault("page", None)
    d.setdefault("history", [])
    return d


def is_task_url(url: str | None) -> bool:
    return url is not None and url.rstrip("/") in (TASK_FILE_URL, *TASK_FILE_URLS)


def serve_task_page(dev: DeviceState, kind: str, seed: int) -> None:
    """What the task's initialization does (as AndroidWorld's): write Download/task.html with the seeded page
    and leave Chrome fresh, on a new tab."""
    st = state(dev)
    st.update(task={"kind": kind, "seed": int(seed)}, url=None, page=None, history=[])
    dev.write_file(TASK_FILE, f"<!-- {PAGE_TITLES[kind]}: seed {int(seed)} -->\n")


def open_file(ui: UI, path: str) -> None:
    """Chrome chosen to open `path` from Files: a new tab on the file, with Chrome in front."""
    st = state(ui.dev)
    st["history"] = []
    load(ui.dev, TASK_FILE_URL if path == TASK_FILE else "content://" + path)
    ui.open_app(PKG)


def open_task_page(dev: DeviceState, kind: str, seed: int) -> None:
    """Serve the page and point Chrome's tab straight at it (a shortcut for tests; tasks start from
    `serve_task_page`)."""
    serve_task_page(dev, kind, seed)
    state(dev).update(url=TASK_FILE_URL, page=fresh_page(kind, int(seed)))


def normalize_url(text: str) -> str:
    t = text.strip()
    if "://" not in t and ("." in t or t.startswith("localhost")) and " " not in t:
        t = "http://" + t
    return t


def load(dev: DeviceState, url: str | None) -> None:
    st = state(dev)
    st["url"] = url
    task = st["task"]
    if is_task_url(url) and task is not None and dev.exists(TASK_FILE):
        st["page"] = fresh_page(task["kind"], task["seed"])
    elif url is None:
        st["page"] = None
    else:
        st["page"] = {"kind": "error", "success": False}


def page_shows_success(dev: DeviceState) -> bool:
    """True when Chrome's tab shows the task page with an element whose text is exactly 'Success!'."""
    st = state(dev)
    page = st["page"]
    return bool(is_task_url(st["url"]) and page and page.get("success"))


def display_url(url: str | None) -> str:
    if url is None:
        return ""
    return url.split("://", 1)[-1]


# -- the browser -----------------------------------------------------------------------------------------
class ChromeScreen(Screen):
    def build(self, ui: UI) -> list[Node]:
        dev = ui.dev
        st = state(dev)
        top = ui.top
        bar_y1 = top + APPBAR_H
        if self.focus != "url":
            self.fields["url"] = display_url(st["url"])
        bar = Node(w.FRAME, bounds=(0, top, SCREEN_W, bar_y1), bg=WHITE, a11y=False, rid=f"{PKG}:id/toolbar")
        bar.add(
            Node(
                w.IMAGE_BUTTON,
                desc="Home",
                bounds=(12, top + 24, 132, bar_y1 - 24),
                clickable=True,
                on_click=lambda: self.navigate(ui, None),
                icon="home",
                icon_fg=GREY,
                rid=f"{PKG}:id/home_button",
            )
        )
        url = ui.field("url", (144, top + 20, SCREEN_W - 276, bar_y1 - 20), hint="Search or type URL")
        url.bg, url.radius, url.border, url.rid = BAR_BG, 64, None, f"{PKG}:id/url_bar"
        screen = self

        def focus_url() -> None:
            screen.focus = "url"

        url.on_click = focus_url
        bar.add(url)
        bar.add(
            Node(
                w.IMAGE_BUTTON,
                desc="Switch or close tabs",
                text=None,
                bounds=(SCREEN_W - 264, top + 24, SCREEN_W - 144, bar_y1 - 24),
                clickable=True,
                on_click=lambda: ui.toast("1 open tab"),
                icon="tabs",
                icon_fg=GREY,
                rid=f"{PKG}:id/tab_switcher_button",
            )
        )
        bar.add(
            Node(
                w.IMAGE_BUTTON,
                desc="Customize and control Google Chrome",
                bounds=(SCREEN_W - 132, top + 24, SCREEN_W - 12, bar_y1 - 24),
                clickable=True,
                on_click=lambda: None,
                icon="more",
                icon_fg=GREY,
                rid=f"{PKG}:id/menu_button",
            )
        )
        web = Node(w.WEBVIEW, bounds=(0, bar_y1, SCREEN_W, ui.bottom), bg=WHITE, a11y=False)
        page = st["page"]
        x = {"maze": self._maze, "multiply": self._multiply, "draw": self._draw, "error": self._error}.get(
            page["kind"] if page else "", self._new_tab
        )
        web.add(*x(ui, bar_y1, page))
        return [web, bar]

    def submit(self, ui: UI, key: str) -> None:
        if key == "url":
            text = self.field("url").strip()
            self.focus = None
            if text:
                self.navigate(ui, normalize_url(text))

    def navigate(self, ui: UI, url: str | None) -> None:
        st = state(ui.dev)
        st["history"].append(st["url"])
        self.fields.pop("answer", None)
        load(ui.dev, url)

    def back(self, ui: UI) -> bool:
        st = state(ui.dev)
        if st["history"]:
            self.fields.pop("answer", None)
            load(ui.dev, st["history"].pop())
            return True
        return False

    # -- pages ------------------------------------------------------------------------------------------
    def _new_tab(self, ui: UI, y0: int, page: Any) -> list[Node]:
        return [
            ui.text("Google", (PAD, y0 + 300, SCREEN_W - PAD, y0 + 460), size=110, fg=ACCENT, align="center"),
            Node(
                w.TEXT,
                text="Search or type URL",
                bounds=(PAD, y0 + 540, SCREEN_W - PAD, y0 + 680),
                bg=BAR_BG,
                radius=70,
                fg=GREY,
                pad=60,
                size=40,
                clickable=True,
                on_click=lambda: setattr(self, "focus", "url"),
                rid=f"{PKG}:id/search_box_text",
            ),
        ]

    def _error(self, ui: UI, y0: int, page: Any) -> list[Node]:
        host = display_url(state(ui.dev)["url"]).split("/")[0]
        return [
            ui.text(
                "This site can’t be reached", (PAD, y0 + 240, SCREEN_W - PAD, y0 + 340), size=56, bold=True
            ),
            ui.text(
                f"Check if there is a typo in {host}.",
                (PAD, y0 + 380, SCREEN_W - PAD, y0 + 460),
                size=40,
                fg=GREY,
            ),
            ui.text(
                "DNS_PROBE_FINISHED_NXDOMAIN", (PAD, y0 + 500, SCREEN_W - PAD, y0 + 560), size=32, fg=GREY
            ),
            ui.button(
                "Reload",
                (SCREEN_W - 380, y0 + 640, SCREEN_W - PAD, y0 + 770),
                lambda: load(ui.dev, state(ui.dev)["url"]),
            ),
        ]

    def _maze(self, ui: UI, y0: int, page: dict[str, Any]) -> list[Node]:
        if page["success"]:
            return [
                Node(
                    w.TEXT, text="Success!", bounds=(24, y0 + 24, SCREEN_W - 24, y0 + 140), size=64, bold=True
                )
            ]
        cell = 150
        gx, gy = 24, y0 + 24
        grid = Node(
            w.VIEW,
            bounds=(gx - 2, gy - 2, gx + cell * MAZE_SIZE + 2, gy + cell * MAZE_SIZE + 2),
            bg=(0, 0, 0),
            a11y=False,
            rid="maze",
        )
        pr, pc = page["pos"]
        for r, row in enumerate(page["layout"]):
            for c, ch in enumerate(row):
                b = (gx + c * cell + 2, gy + r * cell + 2, gx + (c + 1) * cell - 2, gy + (r + 1) * cell - 2)
                if ch == "#":
                    cls, bg, text = "cell wall", (0, 0, 0), None
                elif (r, c) == (pr, pc):
                    cls, bg, text = "cell character", WHITE, "X"
                elif ch == "$":
                    cls, bg, text = "cell goal", (0, 128, 0), None
                else:
                    cls, bg, text = "cell", WHITE, None
                grid.add(Node(w.VIEW, text=text, bounds=b, bg=bg, rid=cls, size=64, align="center", fg=INK))
        dev = ui.dev

        def move(d: str) -> None:
            p = state(dev)["page"]
            dr, dc = {"up": (-1, 0), "down": (1, 0), "left": (0, -1), "right": (0, 1)}[d]
            r, c = p["pos"][0] + dr, p["pos"][1] + dc
            if 0 <= r < MAZE_SIZE and 0 <= c < MAZE_SIZE and p["layout"][r][c] != "#":
                p["pos"] = [r, c]
                if p["layout"][r][c] == "$":
                    p["success"] = True

        out: list[Node] = [grid]
        by = gy + cell * MAZE_SIZE + 30
        x = gx
        for label in ("Up", "Down", "Left", "Right"):
            bw = 120 + 28 * len(label)
            out.append(_web_button(label, (x, by, x + bw, by + 110), lambda d=label: move(d.lower()), 40))
            x += bw + 16
        return out

    def _multiply(self, ui: UI, y0: int, page: dict[str, Any]) -> list[Node]:
        dev = ui.dev
        cx = SCREEN_W // 2
        shown = page["numbers"][page["shown"] - 1]
        out: list[Node] = [
            Node(
                w.TEXT,
                text=str(shown),
                bounds=(PAD, y0 + 110, SCREEN_W - PAD, y0 + 260),
                size=110,
                align="center",
                rid="number",
            )
        ]

        def click_me() -> None:
            p = state(dev)["page"]
            p["clicks"] += 1
            if p["clicks"] < 5:
                p["shown"] += 1
            else:
                p["form"] = True

        def check() -> None:
            p = state(dev)["page"]
            product = 1
            for n in p["numbers"][: p["shown"]]:
                product *= n
            text = self.field("answer").strip()
            ok = text.lstrip("-").isdigit() and int(text) == product
            p["result"] = "Success!" if ok else ""
            p["success"] = ok

        if not page["form"]:
            out.append(
                _web_button("Click Me", (cx - 190, y0 + 300, cx + 190, y0 + 430), click_me, 48, "button")
            )
        else:
            f = ui.field("answer", (cx - 400, y0 + 300, cx + 130, y0 + 420), hint="Enter the product")
            f.rid, f.radius, f.bg = "answer", 6, WHITE
            out.append(f)
            out.append(_web_button("Submit", (cx + 150, y0 + 305, cx + 400, y0 + 415), check, 40))
        if page["result"]:
            out.append(
                Node(
                    w.TEXT,
                    text=page["result"],
                    bounds=(PAD, y0 + 480, SCREEN_W - PAD, y0 + 580),
                    size=60,
                    bold=True,
                    align="center",
                    rid="result",
                )
            )
        return out

    def _draw(self, ui: UI, y0: int, page: dict[str, Any]) -> list[Node]:
        dev = ui.dev
        cx = SCREEN_W // 2
        out: list[Node] = []
        sw = 120
        x = cx - (3 * sw + 2 * 26) // 2
        for c in page["task_colors"]:
            out.append(
                Node(
                    w.VIEW, desc=c, bounds=(x, y0 + 20, x + sw, y0 + 20 + sw), bg=hex_rgb(c), rid="taskColors"
                )
            )
            x += sw + 26
        c0, c1 = y0 + 170, y0 + 170 + 760
        canvas_b = (cx - 380, c0, cx + 380, c1)

        def stroke(direction: str) -> None:
            p = state(dev)["page"]
            n = len(p["strokes"])
            off = ((n % 7) - 3) * 90
            finger = OPPOSITE_DIRECTION[direction]
            mx, my = (
                cx + (off if finger in ("up", "down") else 0),
                (c0 + c1) // 2 + (off if finger in ("left", "right") else 0),
            )
            ex, ey = {
                "up": (mx, c0 + 20),
                "down": (mx, c1 - 20),
                "left": (cx - 360, my),
                "right": (cx + 360, my),
            }[finger]
            p["strokes"].append([p["pen"], mx, my, ex, ey])

        out.append(
            Node(w.VIEW, bounds=(canvas_b[0] - 3, c0 - 3, canvas_b[2] + 3, c1 + 3), bg=(0, 0, 0), a11y=False)
        )
        out.append(Node(w.VIEW, bounds=canvas_b, bg=WHITE, rid="canvas", on_scroll=stroke, scrollable=False))
        for color, x0, y_0, x1, y_1 in page["strokes"]:
            out.append(
                Node(
                    w.VIEW,
                    bounds=(min(x0, x1) - 4, min(y_0, y_1) - 4, max(x0, x1) + 4, max(y_0, y_1) + 4),
                    bg=hex_rgb(color),
                    a11y=False,
                )
            )
        out.append(
            ui.text("Available Colors:", (PAD, c1 + 20, SCREEN_W - PAD, c1 + 90), size=36, align="center")
        )

        def pick(c: str) -> None:
            state(dev)["page"]["pen"] = c

        bw = 94
        px0 = cx - 4 * bw
        for i, c in enumerate(AVAILABLE_COLORS):
            r, k = divmod(i, 8)
            b = (px0 + k * bw + 8, c1 + 110 + r * bw + 8, px0 + (k + 1) * bw - 8, c1 + 110 + (r + 1) * bw - 8)
            out.append(
                Node(
                    w.BUTTON,
                    desc=c,
                    bounds=b,
                    clickable=True,
                    on_click=lambda c=c: pick(c),
                    bg=hex_rgb(c),
                    rid="color-button",
                )
            )
        by = c1 + 110 + 3 * bw + 30

        def clear() -> None:
            state(dev)["page"]["strokes"] = []

        def submit() -> None:
            p = state(dev)["page"]
            used = {s[0] for s in p["strokes"]}
            ok = all(c in used for c in p["task_colors"])
            p["result"] = "Success!" if ok else ""
            p["success"] = ok

        out.append(_web_button("Clear", (cx - 260, by, cx - 20, by + 110), clear, 38, "clearButton"))
        out.append(_web_button("Submit", (cx + 20, by, cx + 260, by + 110), submit, 38, "submitButton"))
        if page["result"]:
            out.append(
                Node(
                    w.TEXT,
                    text=page["result"],
                    bounds=(PAD, by + 130, SCREEN_W - PAD, by + 210),
                    size=38,
                    align="center",
                    rid="result",
                )
            )
        return out


def _web_button(
    text: str, bounds: w.Bounds, on_click: Callable[[], Any], size: int, rid: str | None = None
) -> Node:
    """A plain HTML button of the test pages: grey fill, grey border, small corners."""
    return Node(
        w.BUTTON,
        text=text,
        bounds=bounds,
        clickable=True,
        on_click=on_click,
        bg=(239, 239, 239),
        border=(118, 118, 118),
        radius=8,
        size=size,
        align="center",
        rid=rid,
    )


def hex_rgb(c: str) -> tuple[int, int, int]:
    return int(c[1:3], 16), int(c[3:5], 16), int(c[5:7], 16)


@register_app
class Chrome(App):
    package = PKG
    name = "Chrome"
    aliases = r"google chrome|chrome"
    color = (26, 115, 232)

    def main(self, dev: DeviceState) -> Screen:
        return ChromeScreen()

    def setup(self, dev: DeviceState) -> None:
        state(dev)
