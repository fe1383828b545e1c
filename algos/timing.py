"""Wall time per phase of the training loop (env stepping, policy, buffer, update, ...), for benchmarks.

`PHASES("env")` is a context manager; phases nest, and time is charged to the innermost open phase under its
path ("evaluation/env"), so the shares add up to the wall time they cover. Cheap enough to stay on
(~1 us a phase); `PHASES.reset()` starts a new measurement.
"""

from __future__ import annotations

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
