"""AndroidWorld's information-retrieval task parameters: for each task, its parameter names in drawing order
and each one's possible values, in AndroidWorld's order. The facts are data, `ir_vocab.json` next to this
module (package data, written by `tools/export_androidworld_ir_vocab.py` from AndroidWorld's task
definitions: regenerate rather than edit), read once, on import. `draw(name, rng)` draws a task's params as
AndroidWorld does: one `rng.choice` per parameter, in order.
"""

from __future__ import annotations

import json
import random
from importlib import resources

DATA_FILE = "ir_vocab.json"


def _load() -> dict[str, tuple[tuple[str, tuple[str, ...]], ...]]:
    text = resources.files(__package__).joinpath(DATA_FILE).read_text(encoding="utf-8")
    return {
        name: tuple((p["name"], tuple(p["possible_values"])) for p in params)
        for name, params in json.loads(text)["tasks"].items()
    }


# task name -> ((parameter, possible values), ...), parameters in drawing order
IR_PARAMS: dict[str, tuple[tuple[str, tuple[str, ...]], ...]] = _load()


def draw(name: str, rng: random.Random) -> dict[str, str]:
    """`name`'s params for a generator seeded like AndroidWorld's instance (same values for the same seed)."""
    return {param: rng.choice(values) for param, values in IR_PARAMS[name]}
