"""The grid the exact searches work on: sections of time by units of address.

Time is cut into *sections*: the stretches between consecutive buffer starts and ends, within
which the set of live buffers does not change. Sizes are counted in *units*, the greatest
common divisor of the aligned sizes, so every aligned size is a whole number of units and an
offset found in units, times the unit, is a multiple of the alignment. Zero-size buffers are
left out (they conflict with nothing); ``placement`` puts them at offset 0.

A search that allows a little free space works on the sections ``padded`` to a height: each
section short of it gets one *gap*, a pseudo-buffer (interval index -1) of the missing units
living in that section alone. Every section is then exactly full, and the placements of the
padded sections, gaps left out, are the placements of the buffers in which each section's
free rows form one run: all of them where no section is more than one unit short.

Invariants: ``first[b] <= last[b]`` are the inclusive sections of buffer ``b``; ``live[t]`` is
the sum of the sizes live in section ``t``, so ``max(live)`` times the unit is the lower bound;
buffers with the same ``kind`` have the same sections and size (they are interchangeable);
gaps come after the buffers, whose search indices padding keeps.
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

    def padded(self, rows: int) -> Sections:
        """The same buffers plus a gap of ``rows - live[t]`` units in each section ``t`` short
        of ``rows`` (see the module doc); kinds are worked out again, gaps included."""
        gaps = [(t, rows - units) for t, units in enumerate(self.live) if units < rows]
        size = self.size + tuple(units for _, units in gaps)
        first = self.first + tuple(t for t, _ in gaps)
        last = self.last + tuple(t for t, _ in gaps)
        return Sections(
            self.unit,
            self.indices + (-1,) * len(gaps),
            size,
            first,
            last,
            _kinds(first, last, size),
            tuple(max(units, rows) for units in self.live),
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
        for index, offset in zip(self.indices, offsets):
            if index >= 0:  # not a gap
                by_id[intervals[index].id] = offset * self.unit
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
    return Sections(
        unit,
        tuple(indices),
        tuple(size),
        tuple(first),
        tuple(last),
        _kinds(first, last, size),
        tuple(live),
    )


def _kinds(first: Sequence[int], last: Sequence[int], size: Sequence[int]) -> tuple[int, ...]:
    """A kind per buffer: the same for the same sections and size, numbered as first met."""
    kinds: dict[tuple[int, int, int], int] = {}
    return tuple(kinds.setdefault(key, len(kinds)) for key in zip(first, last, size))
