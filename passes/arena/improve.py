"""Improvement search: seeded local search over placement orders.

A placement order is decoded by placing buffers, in that order, at the lowest gap that fits
(first fit). The search starts from the given placement's buffers sorted by offset: decoding
that order puts every buffer at or below its given offset (by induction, the buffers placed
before it end no higher than before, so its old offset is still free), so the start is never
worse than the input. Each step takes a buffer that reaches the arena top and moves it to a
random earlier position in the order, then re-decodes only the changed suffix. A step is kept
when it does not worsen (arena size, number of buffers reaching the top), so the result is
never worse than the input.

Determinism: the random stream is seeded and buffers are taken in id order, so for the same
buffers, seed and iteration count the result is the same. The time budget only stops the
search early; give a budget the iteration cap is sure to hit first for reproducible output.
"""

from __future__ import annotations

import random
import time
from collections.abc import Sequence
from dataclasses import dataclass

from accy.passes.arena.placer import (
    UNPLACED,
    Fit,
    aligned_sizes,
    conflict_lists,
    extend_placement,
    place_in_order,
)
from accy.passes.arena.problem import BufferInterval, Placement, make_placement

SUFFIX = "+improve"


@dataclass
class _Search:
    """The current order, its decoded offsets (by buffer index) and its score."""

    sizes: list[int]
    conflicts: list[list[int]]
    order: list[int]
    offsets: list[int]

    def score(self) -> tuple[int, int]:
        """(arena size, number of buffers whose end is the arena top); smaller is better."""
        tops = [offset + size for offset, size in zip(self.offsets, self.sizes)]
        top = max(tops, default=0)
        return top, tops.count(top)

    def critical_positions(self) -> list[int]:
        """Positions in the order of the buffers that reach the arena top."""
        top = self.score()[0]
        return [
            position
            for position, i in enumerate(self.order)
            if self.offsets[i] + self.sizes[i] == top
        ]

    def moved(self, source: int, target: int) -> tuple[list[int], list[int]]:
        """The order with position ``source`` moved to ``target < source``, and its offsets."""
        order = self.order[:target] + [self.order[source]]
        order += self.order[target:source] + self.order[source + 1 :]
        offsets = list(self.offsets)
        for i in order[target:]:
            offsets[i] = UNPLACED
        extend_placement(self.sizes, self.conflicts, offsets, order[target:], Fit.FIRST)
        return order, offsets


def _start(intervals: Sequence[BufferInterval], placement: Placement, alignment: int) -> _Search:
    """The search state for the order of ``placement`` (by offset, then id)."""
    sizes = aligned_sizes(intervals, alignment)
    conflicts = conflict_lists(intervals)
    order = sorted(
        range(len(intervals)),
        key=lambda i: (placement.offsets[intervals[i].id], intervals[i].id),
    )
    offsets = place_in_order(sizes, conflicts, order, Fit.FIRST)
    return _Search(sizes, conflicts, order, offsets)


def improve(
    intervals: Sequence[BufferInterval],
    placement: Placement,
    *,
    alignment: int,
    budget_ms: float,
    max_iterations: int,
    seed: int = 0,
) -> Placement:
    """A placement no larger than ``placement``, from at most ``max_iterations`` moves.

    Stops after ``budget_ms`` milliseconds even if the iteration cap is not reached. Returns
    ``placement`` itself when the search finds nothing smaller.
    """
    if not intervals or placement.size <= placement.lower_bound:
        return placement  # nothing to place, or already optimal
    intervals = sorted(intervals, key=lambda interval: interval.id)
    search = _start(intervals, placement, alignment)
    rng = random.Random(seed)
    score = search.score()
    deadline = time.perf_counter() + budget_ms / 1000.0
    for _ in range(max_iterations):
        if time.perf_counter() >= deadline or score[0] <= placement.lower_bound:
            break
        source = rng.choice(search.critical_positions())
        if source == 0:
            continue
        order, offsets = search.moved(source, rng.randrange(source))
        candidate = _Search(search.sizes, search.conflicts, order, offsets)
        if candidate.score() <= score:
            search, score = candidate, candidate.score()
    if score[0] >= placement.size:
        return placement
    by_id = {interval.id: offset for interval, offset in zip(intervals, search.offsets)}
    return make_placement(intervals, by_id, alignment, placement.packer + SUFFIX)
