"""Simple Gallery Pro tasks: save a copy of a receipt image from DCIM in Download, and transcribe a receipt
image into a Markor note (MarkorTranscribeReceipt, here beside the receipt it draws). The images of text
other apps' tasks put in DCIM (AndroidWorld's write_to_gallery) and the expert's way to view a medium are in
tasks/common.py.

AndroidWorld draws a receipt (a company and slogan, transactions: date, item, price; one for the copy, 1-5 to
transcribe) and renders it as an image, for the copy the 500x500 `receipt_image` param. SimDroid makes the
same draws and renders the same image (the same bytes where the same fonts are installed), kept in params in
the JSON form AndroidWorld's export gives it (mode, size, digest of the bytes). The device gets the receipt
as a picture file in DCIM: the image's lines of text at the image's positions, which the gallery draws on
screen. Start state and rule are AndroidWorld's: storage cleared, the receipt in DCIM; the copy succeeds
when Download holds a file or folder of that name, the transcription when receipt.md fuzzy-matches.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import random
from typing import Any

from PIL import Image, ImageDraw

from voyager_gym.actions import Action
from voyager_gym.androidworld_params import json_safe
from voyager_gym.backends.sim.apps import gallery as app
from voyager_gym.backends.sim.apps.simple_commons import picture_content
from voyager_gym.backends.sim.device import SDCARD, DeviceState
from voyager_gym.backends.sim.tasks import vocab
from voyager_gym.backends.sim.tasks.base import (
    SimTask,
    View,
    click,
    done,
    register_task,
)
from voyager_gym.backends.sim.tasks.common import (
    DCIM,
    clear_storage,
    create_note_expert,
    created_file_ok,
    exists_under,
    folder_picker_expert,
    text_font,
    view_medium,
)

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


def receipt_size(n: int) -> tuple[int, int]:
    """AndroidWorld's receipt size for `n` transactions: 500 wide, max(250, 50 * (n + 4)) * 2 high."""
    return 500, max(250, 50 * (n + 4)) * 2


SIZE = receipt_size(1)
HEADER = "Date, Item, Amount"


@dataclasses.dataclass(frozen=True)
class Receipt:
    company: str
    slogan: str
    transactions: tuple[tuple[dt.date, str, str], ...]  # (date, item, price "$12.34")

    @property
    def size(self) -> tuple[int, int]:
        return receipt_size(len(self.transactions))

    def lines(self) -> list[str]:
        """The transactions as the receipt prints them: "2023-03-23, Monitor Stand, $33.22"."""
        return [f"{date}, {item}, {price}" for date, item, price in self.transactions]

    def text(self) -> str:
        """AndroidWorld's text of the receipt without its company lines: the csv header, then the lines."""
        return "\n".join([HEADER, *self.lines()])

    def blocks(self) -> list[tuple[int, int, str]]:
        """(y, font size, text) of each block as AndroidWorld draws it (x is 10)."""
        rows = [(170 + 30 * i, 16, line) for i, line in enumerate(self.lines())]
        return [(100, 20, f"{self.company}\n{self.slogan}"), *rows, (self.size[1] - 40, 12, FOOTER)]


def draw_receipt(rng: random.Random, n: int = 1) -> Receipt:
    """AndroidWorld's draws: company, slogan, then per transaction its item, price and date (a 2023 day
    before the device's)."""
    company, slogan = rng.choice(COMPANIES), rng.choice(SLOGANS)
    start = dt.date(2023, 1, 1)
    transactions = []
    for _ in range(n):
        item, (lo, hi) = rng.choice(ITEMS)
        price = rng.uniform(lo, hi)
        date = start + dt.timedelta(days=rng.randrange((vocab.DEVICE_DATE - start).days))
        transactions.append((date, item, f"${price:.2f}"))
    return Receipt(company, slogan, tuple(transactions))


def _line_step(size: int) -> int:
    """Pillow's multiline spacing: the height of "A" plus 4 px."""
    return int(ImageDraw.Draw(Image.new("L", (1, 1))).textbbox((0, 0), "A", font=text_font(size))[3]) + 4


def receipt_image(r: Receipt) -> Image.Image:
    img = Image.new("RGB", r.size, color=(255, 255, 255))
    d = ImageDraw.Draw(img)
    for y, size, text in r.blocks():
        d.text((10, y), text, fill=(0, 0, 0), font=text_font(size))
    return img


def receipt_picture(r: Receipt, fmt: str = "JPEG") -> str:
    """The receipt as a picture file's content: every line of text at the height the image draws it."""
    runs = []
    for y, size, text in r.blocks():
        for i, line in enumerate(text.split("\n")):
            runs.append((y + i * _line_step(size), size, line))
    return picture_content(fmt, r.size[0], r.size[1], runs)


@register_task
class SaveCopyOfReceiptTaskEval(SimTask):
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
        step = view_medium(view, mem, name)
        return click(view.find(desc="More options")) if step is None else step


# -- a receipt of 1-5 transactions to transcribe into a Markor note -----------------------------------------
@register_task
class MarkorTranscribeReceipt(SimTask):
    """receipt.png in DCIM (storage cleared first, as AndroidWorld's CreateFile setup does) lists 1-5
    transactions; receipt.md in Markor must hold them as csv under the header "Date, Item, Amount" (the `text`
    param, AndroidWorld's receipt text without its company lines), fuzzy-matched as AndroidWorld's CreateFile
    does. The image param (AndroidWorld pops it before params are recorded) is drawn again from the seed."""

    app_names = ("simple gallery pro", "markor")
    complexity = 1.8
    template = (
        "Create a file in Markor, called receipt.md with the transactions from the receipt.png. Use Simple "
        'Gallery to view the receipt. Please enter transactions in csv format including the header "Date, '
        'Item, Amount".'
    )

    @staticmethod
    def receipt(rng: random.Random) -> Receipt:
        return draw_receipt(rng, rng.randint(1, 5))

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return {"file_name": "receipt.md", "text": cls.receipt(rng).text()}

    def initialize(self, dev: DeviceState) -> None:
        clear_storage(dev)
        receipt = self.receipt(random.Random(self.params.get("seed", 0)))
        dev.write_file(f"{DCIM}/receipt.png", receipt_picture(receipt, "PNG"))

    def is_successful(self, dev: DeviceState) -> float:
        return 1.0 if created_file_ok(dev, self.params["file_name"], self.params["text"]) else 0.0

    def expert(self, view: View, mem: dict[str, Any]) -> Action:
        """DCIM -> receipt.png in the viewer, then in Markor a new receipt.md with the transactions. The
        expert takes the receipt's text from the `text` param, standing for reading it off the image's pixels
        (the accessibility tree shows only the ImageView)."""
        if not mem.get("seen"):
            step = view_medium(view, mem, "receipt.png")
            if step is not None:
                return step
            mem["seen"] = True
        return create_note_expert(view, mem, self.params["file_name"], self.params["text"])
