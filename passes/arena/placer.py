"""The placement step every packer shares: put buffers, one at a time, into address gaps.

Buffers are addressed by their index in the problem's interval list. ``sizes`` are already
aligned, and every offset this module produces is a sum of aligned sizes, so offsets stay
multiples of the alignment. A buffer is placed against the buffers placed before it that
conflict with it in time; it never overlaps one of them in address, so placing buffers in any
order yields a valid placement.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from enum import Enum

from accy.passes.arena.problem import BufferInterval, Placement, align_up, make_placement

UNPLACED = -1


class Fit(Enum):
    """Which gap among the free ones a buffer takes."""

    FIRST = "first"  # the lowest gap that fits
    BEST = "best"  # the smallest gap that fits (lowest on ties); above everything otherwise


def conflict_lists(intervals: Sequence[BufferInterval]) -> list[list[int]]:
    """For each buffer index, the indices of the other buffers live at a common work item.

    Sorts by start, then for each buffer scans forward only while the next start is within its
    lifetime: O(n log n + number of conflicting pairs).
    """
    by_start = sorted(range(len(intervals)), key=lambda i: (intervals[i].start, i))
    conflicts: list[list[int]] = [[] for _ in intervals]
    for rank, i in enumerate(by_start):
        end = intervals[i].end
        for j in by_start[rank + 1 :]:
            if intervals[j].start > end:
                break
            conflicts[i].append(j)
            conflicts[j].append(i)
    return conflicts


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
) -> None:
    """Place the buffers of ``order``, in that order, into ``offsets`` (in place).

    ``offsets[i]`` is ``UNPLACED`` for buffers not placed yet; placed ones stay where they are.
    """
    for i in order:
        occupied = sorted(
            (offsets[j], offsets[j] + sizes[j]) for j in conflicts[i] if offsets[j] != UNPLACED
        )
        offsets[i] = choose_offset(sizes[i], occupied, fit)


def place_in_order(
    sizes: Sequence[int], conflicts: Sequence[Sequence[int]], order: Iterable[int], fit: Fit
) -> list[int]:
    """Offsets, by buffer index, from placing every buffer of ``order`` in turn."""
    offsets = [UNPLACED] * len(sizes)
    extend_placement(sizes, conflicts, offsets, order, fit)
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
) -> Placement:
    """The placement from placing the buffers (indices into ``intervals``) in ``order``."""
    sizes = aligned_sizes(intervals, alignment)
    offsets = place_in_order(sizes, conflict_lists(intervals), order, fit)
    by_id = {interval.id: offset for interval, offset in zip(intervals, offsets)}
    return make_placement(intervals, by_id, alignment, packer)
