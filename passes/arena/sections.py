"""The grid the exact searches work on: sections of time by units of address.

Time is cut into *sections*: the stretches between consecutive buffer starts and ends, within
which the set of live buffers does not change. Sizes are counted in *units*, the greatest
common divisor of the aligned sizes, so every aligned size is a whole number of units and an
offset found in units, times the unit, is a multiple of the alignment. Zero-size buffers are
left out (they conflict with nothing); ``placement`` puts them at offset 0.

Invariants: ``first[b] <= last[b]`` are the inclusive sections of buffer ``b``; ``live[t]`` is
the sum of the sizes live in section ``t``, so ``max(live)`` times the unit is the lower bound;
buffers with the same ``kind`` have the same sections and size (they are interchangeable).
"""

from __future__ import annotations

import math
from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass

from accy.passes.arena.problem import BufferInterval, Placement, align_up, make_placement


@dataclass(frozen=True)
class Sections:
    """The buffers of a problem in sections and units, by search index."""

    unit: int  # bytes per unit
    indices: tuple[int, ...]  # index into the interval list, by search index
    size: tuple[int, ...]  # units
    first: tuple[int, ...]
    last: tuple[int, ...]
    kind: tuple[int, ...]
    live: tuple[int, ...]  # units live per section

    @property
    def count(self) -> int:
        """The number of (non-empty) buffers."""
        return len(self.size)

    @property
    def lower(self) -> int:
        """The lower bound in units (0 for no buffers)."""
        return max(self.live, default=0)

    def mirrored(self) -> Sections:
        """The same buffers with time running backwards (same search indices): buffers meet
        in both or in neither, so offsets placing one place the other."""
        end = len(self.live) - 1
        return Sections(
            self.unit,
            self.indices,
            self.size,
            tuple(end - t for t in self.last),
            tuple(end - t for t in self.first),
            self.kind,
            self.live[::-1],
        )

    def placement(
        self,
        intervals: Sequence[BufferInterval],
        offsets: Sequence[int],
        alignment: int,
        packer: str,
    ) -> Placement:
        """The placement of ``intervals`` from unit offsets by search index."""
        by_id = {interval.id: 0 for interval in intervals}
        for b, offset in enumerate(offsets):
            by_id[intervals[self.indices[b]].id] = offset * self.unit
        return make_placement(intervals, by_id, alignment, packer)


def build_sections(intervals: Sequence[BufferInterval], alignment: int) -> Sections:
    """The sections and units of ``intervals`` (in the given order)."""
    aligned = [align_up(interval.size, alignment) for interval in intervals]
    indices = [i for i, size in enumerate(aligned) if size > 0]
    unit = 0
    for i in indices:
        unit = math.gcd(unit, aligned[i])
    unit = unit or 1
    points = sorted({intervals[i].start for i in indices} | {intervals[i].end + 1 for i in indices})
    size = [aligned[i] // unit for i in indices]
    first = [bisect_left(points, intervals[i].start) for i in indices]
    last = [bisect_left(points, intervals[i].end + 1) - 1 for i in indices]
    live = [0] * max(len(points) - 1, 0)
    for b, units in enumerate(size):
        for t in range(first[b], last[b] + 1):
            live[t] += units
    kinds: dict[tuple[int, int, int], int] = {}
    kind = [kinds.setdefault((first[b], last[b], size[b]), len(kinds)) for b in range(len(size))]
    return Sections(
        unit, tuple(indices), tuple(size), tuple(first), tuple(last), tuple(kind), tuple(live)
    )
