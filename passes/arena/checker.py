"""An independent check that a placement is valid for its buffers.

``check_placement`` proves, or raises ``ArenaCheckError`` naming the culprit: every buffer has
a non-negative offset that is a multiple of the alignment; the arena covers every buffer
(``offset + aligned size <= placement.size``); and no two buffers live at a common work item
overlap in address (extents are ``[offset, offset + aligned size)``; an empty buffer overlaps
nothing). Pairs are enumerated by a sweep over start times, O(n log n + conflicting pairs).
"""

from __future__ import annotations

from collections.abc import Sequence

from accy.passes.arena.placer import conflict_lists
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
    extents = [
        (placement.offsets[i.id], placement.offsets[i.id] + align_up(i.size, alignment))
        for i in intervals
    ]
    for a, neighbours in enumerate(conflict_lists(intervals)):
        for b in neighbours:
            if a < b and extents[a][0] < extents[b][1] and extents[b][0] < extents[a][1]:
                first, second = sorted((intervals[a].id, intervals[b].id))
                raise ArenaCheckError(
                    f"buffers {first} and {second} are live at a common work item and "
                    f"overlap in address"
                )
