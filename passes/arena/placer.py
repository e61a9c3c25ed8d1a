"""The placement step every packer shares: put buffers, one at a time, into address gaps.

Buffers are addressed by their index in the problem's interval list. ``sizes`` are already
aligned, and every offset this module produces is a sum of aligned sizes, so offsets stay
multiples of the alignment. A buffer is placed against the buffers placed before it that
conflict with it in time; it never overlaps one of them in address, so placing buffers in any
order yields a valid placement.

Work: placing a buffer visits every buffer conflicting with it, so a packer's placements cost
``n + conflicting pairs`` visits (``placement_work``), which ``conflict_pairs`` counts in
O(n log n) without listing the pairs: for ``n`` buffers all live at once the lists would hold
``n * (n - 1)`` entries, 400 million for 20000 buffers. ``pack`` counts first and runs the
packers only where their work fits its budget; ``extend_placement`` also stops at a
deadline (``OutOfTime``), a safety stop for a machine far slower than the budget assumes.
"""

from __future__ import annotations

import time
from bisect import bisect_right
from collections.abc import Iterable, Sequence
from enum import Enum

from accy.passes.arena.problem import BufferInterval, Placement, align_up, make_placement

UNPLACED = -1
DEADLINE_CHECK = 255
"""``extend_placement`` reads the clock every ``DEADLINE_CHECK + 1`` placements."""


class OutOfTime(Exception):
    """A placement stopped at its deadline before every buffer was placed."""


class Fit(Enum):
    """Which gap among the free ones a buffer takes."""

    FIRST = "first"  # the lowest gap that fits
    BEST = "best"  # the smallest gap that fits (lowest on ties); above everything otherwise


def conflict_lists(intervals: Sequence[BufferInterval]) -> list[list[int]]:
    """For each buffer index, the indices of the other buffers live at a common work item.

    Sorts by start; the buffers conflicting with a buffer that start after it are those that
    follow it in that order up to the last one starting within its lifetime (a binary
    search): O(n log n + number of conflicting pairs). Each list is in start order (then
    index order).
    """
    by_start, starts = _by_start(intervals)
    conflicts: list[list[int]] = [[] for _ in intervals]
    for rank, i in enumerate(by_start):
        later = by_start[rank + 1 : bisect_right(starts, intervals[i].end, rank + 1)]
        conflicts[i] += later
        for j in later:
            conflicts[j].append(i)
    return conflicts


def conflict_pairs(intervals: Sequence[BufferInterval]) -> int:
    """The number of pairs of buffers live at a common work item, counted without listing
    them (as ``conflict_lists`` orders them): O(n log n)."""
    by_start, starts = _by_start(intervals)
    return sum(
        bisect_right(starts, intervals[i].end, rank + 1) - rank - 1
        for rank, i in enumerate(by_start)
    )


def placement_work(intervals: Sequence[BufferInterval]) -> int:
    """The visits of one packer's placements: a buffer each, and each buffer conflicting
    with it."""
    return len(intervals) + 2 * conflict_pairs(intervals)


def _by_start(intervals: Sequence[BufferInterval]) -> tuple[list[int], list[int]]:
    """Buffer indices by start (then index), and their starts in that order."""
    by_start = sorted(range(len(intervals)), key=lambda i: (intervals[i].start, i))
    return by_start, [intervals[i].start for i in by_start]


def choose_offset(size: int, occupied: list[tuple[int, int]], fit: Fit) -> int:
    """The offset for a ``size``-byte buffer given the ``(offset, end)`` ranges it must avoid.

    ``occupied`` must be sorted by offset; the ranges may overlap one another.
    """
    cursor = 0  # everything below cursor, from the ranges seen so far, is taken
    best_offset, best_gap = -1, -1
    for offset, end in occupied:
        gap = offset - cursor
        if gap >= size:
            if fit is Fit.FIRST:
                return cursor
            if best_gap < 0 or gap < best_gap:
                best_offset, best_gap = cursor, gap
        cursor = max(cursor, end)
    return best_offset if best_gap >= 0 else cursor


def extend_placement(
    sizes: Sequence[int],
    conflicts: Sequence[Sequence[int]],
    offsets: list[int],
    order: Iterable[int],
    fit: Fit,
    deadline: float | None = None,
) -> None:
    """Place the buffers of ``order``, in that order, into ``offsets`` (in place).

    ``offsets[i]`` is ``UNPLACED`` for buffers not placed yet; placed ones stay where they are.
    Raises ``OutOfTime`` when the clock passes ``deadline`` (a ``time.perf_counter`` value,
    read every ``DEADLINE_CHECK + 1`` placements) with buffers left.
    """
    for count, i in enumerate(order):
        if (
            deadline is not None
            and not count & DEADLINE_CHECK
            and count
            and time.perf_counter() > deadline
        ):
            raise OutOfTime
        occupied = sorted(
            (offsets[j], offsets[j] + sizes[j]) for j in conflicts[i] if offsets[j] != UNPLACED
        )
        offsets[i] = choose_offset(sizes[i], occupied, fit)


def place_in_order(
    sizes: Sequence[int],
    conflicts: Sequence[Sequence[int]],
    order: Iterable[int],
    fit: Fit,
    deadline: float | None = None,
) -> list[int]:
    """Offsets, by buffer index, from placing every buffer of ``order`` in turn (see
    ``extend_placement`` for ``deadline``)."""
    offsets = [UNPLACED] * len(sizes)
    extend_placement(sizes, conflicts, offsets, order, fit, deadline)
    return offsets


def aligned_sizes(intervals: Sequence[BufferInterval], alignment: int) -> list[int]:
    """Each buffer's size rounded up to the alignment, by index."""
    return [align_up(interval.size, alignment) for interval in intervals]


def place_intervals(
    intervals: Sequence[BufferInterval],
    order: Iterable[int],
    alignment: int,
    fit: Fit,
    packer: str,
    deadline: float | None = None,
) -> Placement:
    """The placement from placing the buffers (indices into ``intervals``) in ``order``;
    ``OutOfTime`` when ``deadline`` passes first (see ``extend_placement``)."""
    sizes = aligned_sizes(intervals, alignment)
    offsets = place_in_order(sizes, conflict_lists(intervals), order, fit, deadline)
    by_id = {interval.id: offset for interval, offset in zip(intervals, offsets)}
    return make_placement(intervals, by_id, alignment, packer)
