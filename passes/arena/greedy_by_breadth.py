"""TFLite's "greedy by breadth" arena packer.

The breadth of a work item is the total aligned size live at it. Work items are taken in
decreasing breadth (ties: earlier item first); at each, the buffers live there and not yet
placed are placed largest first (ties by id), each in the smallest gap that fits among the
conflicting buffers already placed, above all of them when none fits. Only the items where a
buffer starts are considered: the live set is largest there, and every buffer is live at its
own start, so every buffer is placed. Invariants: offsets are multiples of the alignment, no
two conflicting buffers overlap in address, and the result depends only on the set of buffers.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Sequence

from accy.passes.arena.placer import Fit, aligned_sizes, place_intervals
from accy.passes.arena.problem import DEFAULT_ALIGNMENT, BufferInterval, Placement

NAME = "greedy_by_breadth"


def live_at_starts(intervals: Sequence[BufferInterval]) -> dict[int, list[int]]:
    """For each work item where some buffer starts, the indices of the buffers live there."""
    starts = sorted({interval.start for interval in intervals})
    live: dict[int, list[int]] = {start: [] for start in starts}
    for index, interval in enumerate(intervals):
        first = bisect_left(starts, interval.start)
        last = bisect_right(starts, interval.end)
        for start in starts[first:last]:
            live[start].append(index)
    return live


def breadth_order(intervals: Sequence[BufferInterval], alignment: int) -> list[int]:
    """Buffer indices in placement order: widest work item first, largest buffer first in it."""
    sizes = aligned_sizes(intervals, alignment)
    live = live_at_starts(intervals)
    breadth = {item: sum(sizes[i] for i in indices) for item, indices in live.items()}
    order: list[int] = []
    placed = [False] * len(intervals)
    for item in sorted(live, key=lambda item: (-breadth[item], item)):
        for i in sorted(live[item], key=lambda i: (-sizes[i], intervals[i].id)):
            if not placed[i]:
                placed[i] = True
                order.append(i)
    return order


def pack_greedy_by_breadth(
    intervals: Sequence[BufferInterval],
    alignment: int = DEFAULT_ALIGNMENT,
    *,
    deadline: float | None = None,
) -> Placement:
    """Place the buffers of the widest work items first, each in the smallest gap that fits.

    ``placer.OutOfTime`` when ``deadline`` (a ``time.perf_counter`` value) passes first.
    """
    order = breadth_order(intervals, alignment)
    return place_intervals(intervals, order, alignment, Fit.BEST, NAME, deadline)
