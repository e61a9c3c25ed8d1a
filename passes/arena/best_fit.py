"""XLA heap-simulator-style best fit over decreasing size.

Like XLA's ``GlobalDecreasingSizeBestFitHeap``: buffers are taken largest first, longer
lifetimes first among equal sizes (then earlier start, then id); each takes the *smallest*
gap, among the conflicting buffers already placed, that fits it (the lowest such gap on ties),
and goes above all of them when none fits. Invariants: offsets are multiples of the alignment,
no two conflicting buffers overlap in address, and the result depends only on the set of
buffers (not on the input order).
"""

from __future__ import annotations

from collections.abc import Sequence

from accy.passes.arena.placer import Fit, place_intervals
from accy.passes.arena.problem import DEFAULT_ALIGNMENT, BufferInterval, Placement, align_up

NAME = "best_fit"


def pack_best_fit(
    intervals: Sequence[BufferInterval],
    alignment: int = DEFAULT_ALIGNMENT,
    *,
    deadline: float | None = None,
) -> Placement:
    """Place buffers in decreasing size (then lifetime), each in the smallest gap that fits.

    ``placer.OutOfTime`` when ``deadline`` (a ``time.perf_counter`` value) passes first.
    """

    def key(i: int) -> tuple[int, int, int, int]:
        interval = intervals[i]
        length = interval.end - interval.start
        return (-align_up(interval.size, alignment), -length, interval.start, interval.id)

    order = sorted(range(len(intervals)), key=key)
    return place_intervals(intervals, order, alignment, Fit.BEST, NAME, deadline)
