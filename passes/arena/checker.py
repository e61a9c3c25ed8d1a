"""An independent check that a placement is valid for its buffers.

``check_placement`` proves, or raises ``ArenaCheckError`` naming the culprit: every buffer has
a non-negative offset that is a multiple of the alignment; the arena covers every buffer
(``offset + aligned size <= placement.size``); and no two buffers live at a common work item
overlap in address (extents are ``[offset, offset + aligned size)``; an empty buffer overlaps
nothing). A sweep over time keeps the live buffers in address order and checks each buffer,
as it starts, against its two neighbours there (the live ones are disjoint, or the check
stopped): O(n log n) list operations however many pairs conflict (for ``n`` buffers all live
at once, ``n * (n - 1) / 2``), none of them listed.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence

from accy.passes.arena.problem import BufferInterval, Placement, align_up


class ArenaCheckError(ValueError):
    """A placement that violates one of the checked invariants."""


def _check_buffer(interval: BufferInterval, placement: Placement, alignment: int) -> None:
    """Offset present, non-negative, aligned, and inside the arena."""
    if interval.id not in placement.offsets:
        raise ArenaCheckError(f"buffer {interval.id} has no offset")
    offset = placement.offsets[interval.id]
    if offset < 0 or offset % alignment:
        raise ArenaCheckError(
            f"buffer {interval.id} offset {offset} is not a non-negative multiple of {alignment}"
        )
    end = offset + align_up(interval.size, alignment)
    if end > placement.size:
        raise ArenaCheckError(
            f"buffer {interval.id} ends at {end}, past the arena size {placement.size}"
        )


def check_placement(
    intervals: Sequence[BufferInterval], placement: Placement, alignment: int
) -> None:
    """Raise ``ArenaCheckError`` unless ``placement`` is valid for ``intervals``."""
    for interval in intervals:
        _check_buffer(interval, placement, alignment)
    events: list[tuple[int, int, int]] = []  # (item, 0 for an end and 1 for a start, index)
    for index, interval in enumerate(intervals):
        if align_up(interval.size, alignment):  # an empty buffer overlaps nothing
            events.append((interval.start, 1, index))
            events.append((interval.end + 1, 0, index))
    events.sort()  # at an item, the buffers ending before it first
    offsets: list[int] = []  # of the live buffers, ascending
    ends: list[int] = []  # their address ends, in the same order
    owners: list[int] = []  # their indices
    for _, starts, index in events:
        interval = intervals[index]
        offset = placement.offsets[interval.id]
        at = bisect_left(offsets, offset)
        if not starts:
            del offsets[at], ends[at], owners[at]
            continue
        end = offset + align_up(interval.size, alignment)
        for other in (at - 1, at):
            if 0 <= other < len(offsets) and offsets[other] < end and offset < ends[other]:
                first, second = sorted((intervals[owners[other]].id, interval.id))
                raise ArenaCheckError(
                    f"buffers {first} and {second} are live at a common work item and "
                    f"overlap in address"
                )
        offsets.insert(at, offset)
        ends.insert(at, end)
        owners.insert(at, index)
