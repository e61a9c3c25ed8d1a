"""The arena packing problem: buffers with lifetimes, and the placement of each in one arena.

A ``BufferInterval`` is live over the inclusive work-item range ``[start, end]`` (first writer
to last reader). Two buffers *conflict* when their ranges share a work item; conflicting
buffers must occupy disjoint address ranges. A buffer occupies ``align_up(size, alignment)``
bytes from its offset, so every offset and every occupied extent is a multiple of the
alignment, and the arena size is the largest ``offset + align_up(size)``.

``lower_bound`` is the largest total of aligned sizes live at one work item: no placement can
be smaller, because the buffers live at that item are pairwise conflicting.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

DEFAULT_ALIGNMENT = 256


@dataclass(frozen=True)
class BufferInterval:
    """A buffer of ``size`` bytes live over work items ``start..end`` (both inclusive).

    Invariants: ``start <= end`` and ``size >= 0``.
    """

    id: int
    start: int
    end: int
    size: int

    def __post_init__(self) -> None:
        if self.start > self.end:
            raise ValueError(f"buffer {self.id}: start {self.start} is after end {self.end}")
        if self.size < 0:
            raise ValueError(f"buffer {self.id}: negative size {self.size}")


@dataclass(frozen=True)
class Placement:
    """Where each buffer sits: ``offsets[id]`` in bytes, from the arena base.

    ``size`` is the arena size (largest aligned end), ``lower_bound`` the largest live total,
    ``packer`` the name of the algorithm that produced the offsets.
    """

    offsets: Mapping[int, int] = field(hash=False)
    size: int
    lower_bound: int
    packer: str

    @property
    def ratio(self) -> float:
        """Arena size over the lower bound (1.0 is optimal; 1.0 for an empty problem)."""
        return self.size / self.lower_bound if self.lower_bound else 1.0


def align_up(value: int, alignment: int) -> int:
    """The smallest multiple of ``alignment`` that is ``>= value``."""
    return -(-value // alignment) * alignment


def check_alignment(alignment: int) -> None:
    """Reject a non-positive alignment."""
    if alignment < 1:
        raise ValueError(f"alignment must be a positive number of bytes, got {alignment}")


def overlaps_in_time(a: BufferInterval, b: BufferInterval) -> bool:
    """Whether ``a`` and ``b`` are live at a common work item."""
    return a.start <= b.end and b.start <= a.end


def check_unique_ids(intervals: Iterable[BufferInterval]) -> None:
    """Reject a problem that names the same buffer twice."""
    seen: set[int] = set()
    for interval in intervals:
        if interval.id in seen:
            raise ValueError(f"buffer id {interval.id} appears more than once")
        seen.add(interval.id)


def lower_bound(intervals: Iterable[BufferInterval], alignment: int = DEFAULT_ALIGNMENT) -> int:
    """The largest sum of aligned sizes live at one work item (0 for no buffers).

    A sweep over start/end events, O(n log n). A buffer ending at ``t`` is released before
    buffers starting at ``t + 1`` are counted, since they never meet.
    """
    events: list[tuple[int, int]] = []
    for interval in intervals:
        size = align_up(interval.size, alignment)
        events.append((interval.start, size))
        events.append((interval.end + 1, -size))
    events.sort(key=lambda event: (event[0], event[1]))  # releases before claims
    live = best = 0
    for _, delta in events:
        live += delta
        best = max(best, live)
    return best


def arena_size(
    intervals: Iterable[BufferInterval], offsets: Mapping[int, int], alignment: int
) -> int:
    """The largest ``offset + align_up(size)`` over the buffers (0 for no buffers)."""
    return max(
        (offsets[i.id] + align_up(i.size, alignment) for i in intervals),
        default=0,
    )


def make_placement(
    intervals: Sequence[BufferInterval], offsets: Mapping[int, int], alignment: int, packer: str
) -> Placement:
    """A ``Placement`` whose size and lower bound are computed from ``offsets``."""
    return Placement(
        offsets=dict(sorted(offsets.items())),
        size=arena_size(intervals, offsets, alignment),
        lower_bound=lower_bound(intervals, alignment),
        packer=packer,
    )
