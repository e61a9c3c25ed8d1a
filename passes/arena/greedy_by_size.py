"""TFLite's "greedy by size" arena packer.

Buffers are taken largest first (ties by id) and each goes to the lowest-offset gap, among the
buffers already placed that conflict with it in time, that fits it; when no gap fits it goes
above all of them. Invariants: offsets are multiples of the alignment, no two conflicting
buffers overlap in address, and the result depends only on the set of buffers (not on the
input order).
"""

from __future__ import annotations

from collections.abc import Sequence

from accy.passes.arena.placer import Fit, place_intervals
from accy.passes.arena.problem import DEFAULT_ALIGNMENT, BufferInterval, Placement, align_up

NAME = "greedy_by_size"


def pack_greedy_by_size(
    intervals: Sequence[BufferInterval],
    alignment: int = DEFAULT_ALIGNMENT,
    *,
    deadline: float | None = None,
) -> Placement:
    """Place buffers in decreasing aligned size, each at the lowest gap that fits.

    ``placer.OutOfTime`` when ``deadline`` (a ``time.perf_counter`` value) passes first.
    """
    order = sorted(
        range(len(intervals)),
        key=lambda i: (-align_up(intervals[i].size, alignment), intervals[i].id),
    )
    return place_intervals(intervals, order, alignment, Fit.FIRST, NAME, deadline)
