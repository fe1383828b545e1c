"""Wall time per phase of the training loop (env stepping, policy, buffer, update, ...), for benchmarks.

`PHASES("env")` is a context manager; phases nest, and time is charged to the innermost open phase under its
path ("evaluation/env"), so the shares add up to the wall time they cover. Cheap enough to stay on
(~1 us a phase); `PHASES.reset()` starts a new measurement. `collector_paused()` keeps Python's cyclic garbage
collector out of the loop's hot phases.
"""

from __future__ import annotations

import gc
import time
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager


class Phases:
    """Exclusive wall seconds per phase path."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)
        self._stack: list[str] = []
        self._since = 0.0

    def reset(self) -> None:
        self.seconds = defaultdict(float)

    @contextmanager
    def __call__(self, name: str) -> Iterator[None]:
        now = time.perf_counter()
        if self._stack:
            self.seconds[self._stack[-1]] += now - self._since
        self._stack.append(f"{self._stack[-1]}/{name}" if self._stack else name)
        self._since = now
        try:
            yield
        finally:
            now = time.perf_counter()
            self.seconds[self._stack.pop()] += now - self._since
            self._since = now

    def by_leaf(self) -> dict[str, float]:
        """Seconds per innermost phase name, whatever encloses it ("evaluation/env" counts as "env")."""
        out: dict[str, float] = defaultdict(float)
        for path, s in self.seconds.items():
            out[path.rsplit("/", 1)[-1]] += s
        return dict(out)


PHASES = Phases()


@contextmanager
def collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector paused for the block, then one full collection. A training
    iteration makes millions of short-lived objects (observations, features, steps), so the automatic
    collector runs thousands of times an iteration and, whenever enough of them outlive a young collection,
    walks the whole heap (~0.4 s each with a policy and its caches loaded): ~15% of a GRPO iteration's wall
    time. Reference counting still frees everything not in a cycle at once; cycles wait for the block's end,
    so what runs inside should make few (SimDroid's steps make none; with them a GRPO iteration's peak memory
    is what it was with the collector on). Nested blocks, or a caller that already turned the collector off,
    leave it as they found it."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
        gc.collect()
