"""Simple Gallery Pro task: save a copy of a receipt image from DCIM in Download.

AndroidWorld draws a receipt (a company and slogan, one transaction: date, item, price) and renders it as a
500x500 image, the `receipt_image` param. SimDroid makes the same draws and renders the same image (the same
bytes where the same fonts are installed), kept in params in the JSON form AndroidWorld's export gives it
(mode, size, digest of the bytes). The device gets the receipt as a picture file in DCIM: the image's lines
of text at the image's positions, which the gallery draws on screen. Start state and rule are AndroidWorld's:
storage cleared, the receipt in DCIM; success when Download holds a file or folder of that name.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import functools
import random
from typing import Any

from PIL import Image, ImageDraw, ImageFont

from voyager_gym.actions import Action
from voyager_gym.androidworld_params import json_safe
from voyager_gym.backends.sim.apps import gallery as app
from voyager_gym.backends.sim.apps.simple_commons import INTERNAL, picture_content
from voyager_gym.backends.sim.device import SDCARD, DeviceState
from voyager_gym.backends.sim.tasks import vocab
from voyager_gym.backends.sim.tasks.base import (
    SimTask,
    View,
    back,
    click,
    done,
    open_app,
    register_task,
    scroll,
)
from voyager_gym.backends.sim.tasks.markor import clear_storage, exists_under

DCIM = f"{SDCARD}/DCIM"
DOWNLOAD = f"{SDCARD}/Download"

# AndroidWorld's receipt vocabulary, in its order.
COMPANIES = ("Tech Gadgets Inc.", "Innovate Solutions Ltd.", "Future Tech LLC", "Gadget Gurus Co.")
SLOGANS = (
    "Innovating the Future",
    "Technology for Tomorrow",
    "Bringing Ideas to Life",
    "Innovation and Excellence",
)
ITEMS = (
    ("USB-C Cable", (5, 20)),
    ("Wireless Mouse", (10, 50)),
    ("Bluetooth Keyboard", (30, 100)),
    ("External Hard Drive", (50, 150)),
    ("Webcam", (20, 70)),
    ("Monitor Stand", (15, 60)),
)
FOOTER = "Thank you for your purchase!\nVisit us at: www.tech-gadgets.com"
FONT_FILES = (
    "arial.ttf",
    "Arial Unicode.ttf",
    "Roboto-Regular.ttf",
    "DejaVuSans-Bold.ttf",
    "LiberationSans-Regular.ttf",
)  # AndroidWorld's font search order
SIZE = (500, 500)  # one transaction: max(250, 50 * 5) * 2 high


@dataclasses.dataclass(frozen=True)
class Receipt:
    company: str
    slogan: str
    date: dt.date
    item: str
    price: str  # "$12.34"

    def blocks(self) -> list[tuple[int, int, str]]:
        """(y, font size, text) of each block as AndroidWorld draws it (x is 10)."""
        return [
            (100, 20, f"{self.company}\n{self.slogan}"),
            (170, 16, f"{self.date}, {self.item}, {self.price}"),
            (SIZE[1] - 40, 12, FOOTER),
        ]


def draw_receipt(rng: random.Random) -> Receipt:
    """AndroidWorld's draws: company, slogan, item, price, then the date (a 2023 day before the device's)."""
    company, slogan = rng.choice(COMPANIES), rng.choice(SLOGANS)
    item, (lo, hi) = rng.choice(ITEMS)
    price = rng.uniform(lo, hi)
    start = dt.date(2023, 1, 1)
    date = start + dt.timedelta(days=rng.randrange((vocab.DEVICE_DATE - start).days))
    return Receipt(company, slogan, date, item, f"${price:.2f}")


@functools.cache
def _font(size: int) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    for name in FONT_FILES:
        try:
            return ImageFont.truetype(name, size=float(size))
        except OSError:
            continue
    return ImageFont.load_default(float(size))


def _line_step(size: int) -> int:
    """Pillow's multiline spacing: the height of "A" plus 4 px."""
    return int(ImageDraw.Draw(Image.new("L", (1, 1))).textbbox((0, 0), "A", font=_font(size))[3]) + 4


def receipt_image(r: Receipt) -> Image.Image:
    img = Image.new("RGB", SIZE, color=(255, 255, 255))
    d = ImageDraw.Draw(img)
    for y, size, text in r.blocks():
        d.text((10, y), text, fill=(0, 0, 0), font=_font(size))
    return img


def receipt_picture(r: Receipt) -> str:
    """The receipt as a picture file's content: every line of text at the height the image draws it."""
    runs = []
    for y, size, text in r.blocks():
        for i, line in enumerate(text.split("\n")):
            runs.append((y + i * _line_step(size), size, line))
    return picture_content("JPEG", SIZE[0], SIZE[1], runs)


# -- expert ------------------------------------------------------------------------------------------------
def folder_picker_expert(view: View, dest: str) -> Action | None:
    """In the commons folder picker: up to Internal, into `dest` (a folder of the storage root), OK. None
    when no picker is showing."""
    if not view.has(text="Select a folder", rid="android:id/alertTitle"):
        return None
    crumbs = view.find_all(rid_suffix=":id/breadcrumb_text")
    current = view.el(crumbs[-1]).text if crumbs else None
    if current == dest:
        return click(view.find(text="OK", rid="android:id/button1"))
    target = view.find(text=dest, rid_suffix=":id/list_item_name")
    if current == INTERNAL and target is not None:
        return click(target)
    root = view.find(text=INTERNAL, rid_suffix=":id/breadcrumb_text")
    return click(root) if root is not None else back()


@register_task
class SaveCopyOfReceiptTaskEval(SimTask):
    name = "SaveCopyOfReceiptTaskEval"
    app_names = ("simple gallery pro",)
    complexity = 1.6
    template = (
        "In Simple Gallery Pro, copy {file_name} in DCIM and save a copy with the same name in Download"
    )

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        # Params stay JSON-able (buffers store them as JSON): the image in the JSON form AndroidWorld's export
        # gives it, {"__image__": {mode, size, sha256 of its bytes}}.
        image = json_safe(receipt_image(draw_receipt(rng)))
        return {"receipt_image": image, "file_name": "receipt_" + vocab.random_file_name(rng) + ".jpg"}

    def initialize(self, dev: DeviceState) -> None:
        clear_storage(dev)
        # The image param is not decoded: the receipt is drawn again from the instance seed, as params were.
        receipt = draw_receipt(random.Random(self.params.get("seed", 0)))
        dev.write_file(f"{DCIM}/{self.params['file_name']}", receipt_picture(receipt))

    def is_successful(self, dev: DeviceState) -> float:
        return 1.0 if exists_under(dev, DOWNLOAD, self.params["file_name"]) else 0.0

    def expert(self, view: View, mem: dict[str, Any]) -> Action:
        """DCIM -> the receipt in the viewer -> More options -> Copy to -> Other folder -> Internal ->
        Download -> OK."""
        name = self.params["file_name"]
        if view.has(text="Files copied successfully"):
            return done()
        if view.app != app.PKG:
            return open_app("Simple Gallery Pro")
        picker = folder_picker_expert(view, "Download")
        if picker is not None:
            return picker
        if view.has(text="Select destination", rid="android:id/alertTitle"):
            tile = view.find(text="Download", rid=f"{app.PKG}:id/dir_name")
            if tile is not None:
                return click(tile)
            return click(view.find(text="Other folder"))
        if view.has(text="Copy to", rid="android:id/title"):
            return click(view.find(text="Copy to", rid="android:id/title"))
        title = view.title or ""
        image = view.find(rid=f"{app.PKG}:id/gestures_view")
        if image is not None:  # the viewer
            if title == name:
                return click(view.find(desc="More options"))
            seen = mem.setdefault("viewed", [])
            if title in seen:  # every medium seen: the file is not here (should not happen)
                return back()
            seen.append(title)
            return scroll("right", image)
        if title == "DCIM":
            thumbs = view.find_all(rid=f"{app.PKG}:id/medium_thumbnail")
            if thumbs:
                return click(thumbs[0])
        if view.has(desc="Done"):  # a selection is open
            return click(view.find(desc="Done"))
        dcim = view.find(text="DCIM", rid=f"{app.PKG}:id/dir_name")
        return click(dcim) if dcim is not None else back()
