"""Timing helpers shared by the benchmarks: the median of repeated runs and the geometric
mean of ratios (every benchmark prints ratios measured side by side, never a bare time)."""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable


def median_time(fn: Callable[[], object], repeat: int) -> float:
    """Seconds per call of `fn`: the median of `repeat` timed calls after 3 warm-ups."""
    for _ in range(3):
        fn()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def geomean(values: list[float | None]) -> float | None:
    """The geometric mean of the finite positive values (None when there are none)."""
    kept = [v for v in values if v is not None and 0 < v < math.inf]
    return math.exp(sum(map(math.log, kept)) / len(kept)) if kept else None


def print_table(header: list[str], rows: list[list[str]], markdown: bool) -> None:
    """`rows` under `header`: a markdown table, or columns padded to their widest cell."""
    if markdown:
        print("| " + " | ".join(header) + " |")
        print("|" + "---|" * len(header))
        for row in rows:
            print("| " + " | ".join(row) + " |")
        return
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    for row in [header, *rows]:
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths)))
