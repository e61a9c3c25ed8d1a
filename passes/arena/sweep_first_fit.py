"""First fit by a sweep over time: the packer that is always fast, O(n log n).

The buffers are placed in the order they start (ties: larger first, then longer, then by id),
as an allocator running the program would: at each work item the buffers ending before it
give their bytes back, then each buffer starting there takes the lowest free run of addresses
that fits it. The free runs below the highest live buffer are kept in a treap keyed by offset,
with the longest run of each subtree, so the lowest run that fits is found, and a run split or
merged, in O(log n) expected steps; one run of unbounded length above everything stands for
the rest of the address space, so a fit always exists. A buffer meets in time exactly the
buffers live when it starts that started before it, and those hold the addresses it is kept
off, so no two conflicting buffers overlap; no list of conflicts is ever made, which is the
point: for ``n`` buffers all live at once there are ``n * (n - 1) / 2`` conflicting pairs, and
every other packer visits each of them.

It is ``pack``'s fallback where the budget does not cover the other packers, and not one of
``pack.PACKERS``: it usually packs worse than they do. Invariants: offsets are multiples of
the alignment; the result depends only on the set of buffers.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from accy.passes.arena.placer import aligned_sizes
from accy.passes.arena.problem import DEFAULT_ALIGNMENT, BufferInterval, Placement, make_placement

NAME = "sweep_first_fit"
_ENDLESS = float("inf")  # the length of the run above everything


class _Runs:
    """Disjoint free runs ``[offset, offset + length)`` in a treap keyed by offset (node 0 is
    the empty tree), each node with the longest length in its subtree."""

    def __init__(self) -> None:
        self.offset: list[int] = [0]
        self.length: list[float] = [-1]
        self.longest: list[float] = [-1]
        self.priority: list[float] = [0.0]
        self.left: list[int] = [0]
        self.right: list[int] = [0]
        self.root = 0
        self.spare: list[int] = []
        self.rng = random.Random(0)  # treap priorities: the shape only, never the result

    def _pull(self, x: int) -> None:
        left, right = self.longest[self.left[x]], self.longest[self.right[x]]
        length = self.length[x]
        self.longest[x] = length if length >= left and length >= right else max(left, right)

    def _split(self, t: int, offset: int) -> tuple[int, int]:
        """The tree ``t`` cut into the runs below ``offset`` and the others."""
        if not t:
            return 0, 0
        if self.offset[t] < offset:
            low, high = self._split(self.right[t], offset)
            self.right[t] = low
            self._pull(t)
            return t, high
        low, high = self._split(self.left[t], offset)
        self.left[t] = high
        self._pull(t)
        return low, t

    def _merge(self, low: int, high: int) -> int:
        """One tree of ``low`` and ``high``, every run of which is above every run of
        ``low``."""
        if not low or not high:
            return low or high
        if self.priority[low] > self.priority[high]:
            self.right[low] = self._merge(self.right[low], high)
            self._pull(low)
            return low
        self.left[high] = self._merge(low, self.left[high])
        self._pull(high)
        return high

    def add(self, offset: int, length: float) -> None:
        """A new run, disjoint from the others."""
        if self.spare:
            x = self.spare.pop()
            self.offset[x], self.length[x], self.longest[x] = offset, length, length
            self.priority[x], self.left[x], self.right[x] = self.rng.random(), 0, 0
        else:
            x = len(self.offset)
            self.offset.append(offset)
            self.length.append(length)
            self.longest.append(length)
            self.priority.append(self.rng.random())
            self.left.append(0)
            self.right.append(0)
        low, high = self._split(self.root, offset)
        self.root = self._merge(self._merge(low, x), high)

    def remove(self, offset: int) -> None:
        """Drop the run at ``offset``."""
        low, high = self._split(self.root, offset)
        node, high = self._split(high, offset + 1)
        self.spare.append(node)
        self.root = self._merge(low, high)

    def _path(self, offset: int) -> list[int]:
        """The nodes from the root to the run at ``offset``."""
        path, x = [], self.root
        while x:
            path.append(x)
            if offset == self.offset[x]:
                return path
            x = self.left[x] if offset < self.offset[x] else self.right[x]
        raise KeyError(offset)

    def resize(self, old: int, offset: int, length: float, path: list[int] | None = None) -> None:
        """Move the run at ``old`` (``path`` from the root to it, when known) to ``offset``
        with ``length``, staying between the same neighbours."""
        if path is None:
            path = self._path(old)
        x = path[-1]
        self.offset[x], self.length[x] = offset, length
        longest = self.longest
        for node in reversed(path):
            before = longest[node]
            self._pull(node)
            if longest[node] == before:
                break  # the subtrees above keep their longest runs

    def lowest_fit(self, size: int) -> list[int]:
        """The path from the root to the lowest run at least ``size`` long."""
        x, path = self.root, []
        while True:
            path.append(x)
            left = self.left[x]
            if self.longest[left] >= size:
                x = left
            elif self.length[x] >= size:
                return path
            else:
                x = self.right[x]

    def below(self, offset: int) -> tuple[int, float] | None:
        """The run just below ``offset`` (offset and length), if any."""
        x, found = self.root, None
        while x:
            if self.offset[x] < offset:
                found, x = x, self.right[x]
            else:
                x = self.left[x]
        return None if found is None else (self.offset[found], self.length[found])

    def at(self, offset: int) -> float | None:
        """The length of the run starting at ``offset``, if there is one."""
        x = self.root
        while x:
            if offset == self.offset[x]:
                return self.length[x]
            x = self.left[x] if offset < self.offset[x] else self.right[x]
        return None

    def take(self, size: int) -> int:
        """Allocate ``size`` (> 0) bytes at the lowest free run that fits; their offset."""
        path = self.lowest_fit(size)
        offset, length = self.offset[path[-1]], self.length[path[-1]]
        if length == size:
            self.remove(offset)
        else:
            self.resize(offset, offset + size, length - size, path)
        return offset

    def give(self, offset: int, size: int) -> None:
        """Free the ``size`` (> 0) bytes at ``offset``, joining the free runs beside them."""
        below = self.below(offset)
        joins_below = below is not None and below[0] + below[1] == offset
        above = self.at(offset + size)
        if joins_below and below is not None:
            start, length = below[0], below[1] + size
            if above is not None:
                self.remove(offset + size)
                length += above
            self.resize(start, start, length)
        elif above is not None:
            self.resize(offset + size, offset, above + size)
        else:
            self.add(offset, size)


def sweep_offsets(intervals: Sequence[BufferInterval], sizes: Sequence[int]) -> list[int]:
    """Offsets by index of ``intervals`` (of ``sizes`` aligned bytes) placed by the sweep."""
    offsets = [0] * len(intervals)  # empty buffers stay at 0: they overlap nothing
    events: list[tuple[int, int, int, int, int, int]] = []
    for i, interval in enumerate(intervals):
        if sizes[i]:
            length = interval.end - interval.start
            events.append((interval.start, 1, -sizes[i], -length, interval.id, i))
            events.append((interval.end + 1, 0, 0, 0, interval.id, i))
    events.sort()  # at an item, the buffers ending before it first
    runs = _Runs()
    runs.add(0, _ENDLESS)
    for _, starts, _, _, _, i in events:
        if starts:
            offsets[i] = runs.take(sizes[i])
        else:
            runs.give(offsets[i], sizes[i])
    return offsets


def pack_sweep_first_fit(
    intervals: Sequence[BufferInterval], alignment: int = DEFAULT_ALIGNMENT
) -> Placement:
    """Place buffers in the order they start, each at the lowest address free then."""
    offsets = sweep_offsets(intervals, aligned_sizes(intervals, alignment))
    by_id = {interval.id: offset for interval, offset in zip(intervals, offsets)}
    return make_placement(intervals, by_id, alignment, NAME)
