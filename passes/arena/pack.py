"""Pack buffers into one arena: every packer, the smallest result, then improvement search.

Invariants: the result is a valid placement (see ``checker``) no larger than any single
packer's; packers are tried in the fixed order of ``PACKERS`` and the first smallest wins, and
the input is put in id order first, so the result does not depend on the input order.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from accy.passes.arena import best_fit, greedy_by_breadth, greedy_by_size
from accy.passes.arena.improve import improve
from accy.passes.arena.problem import (
    DEFAULT_ALIGNMENT,
    BufferInterval,
    Placement,
    check_alignment,
    check_unique_ids,
)

Packer = Callable[[Sequence[BufferInterval], int], Placement]

# Tie order: the first packer reaching the smallest size wins.
PACKERS: tuple[tuple[str, Packer], ...] = (
    (best_fit.NAME, best_fit.pack_best_fit),
    (greedy_by_size.NAME, greedy_by_size.pack_greedy_by_size),
    (greedy_by_breadth.NAME, greedy_by_breadth.pack_greedy_by_breadth),
)
IMPROVED = "improve"
DEFAULT_BUDGET_MS = 100.0
DEFAULT_MAX_ITERATIONS = 2000


@dataclass(frozen=True)
class PackResult:
    """The chosen placement and, for reports, the arena size each packer reached.

    ``packer_sizes`` holds one entry per packer of ``PACKERS`` plus ``IMPROVED``, the size
    after the improvement search (equal to the best packer's when it found nothing smaller).
    """

    placement: Placement
    packer_sizes: Mapping[str, int]


def pack(
    intervals: Sequence[BufferInterval],
    *,
    alignment: int = DEFAULT_ALIGNMENT,
    budget_ms: float = DEFAULT_BUDGET_MS,
    max_iterations: int = DEFAULT_MAX_ITERATIONS,
    seed: int = 0,
) -> PackResult:
    """Place every buffer; see ``improve`` for how ``budget_ms``/``max_iterations`` bound work."""
    check_alignment(alignment)
    check_unique_ids(intervals)
    intervals = sorted(intervals, key=lambda interval: interval.id)
    results = [packer(intervals, alignment) for _, packer in PACKERS]
    sizes = {name: result.size for (name, _), result in zip(PACKERS, results)}
    best = min(results, key=lambda result: result.size)  # min keeps the first on ties
    placement = improve(
        intervals,
        best,
        alignment=alignment,
        budget_ms=budget_ms,
        max_iterations=max_iterations,
        seed=seed,
    )
    sizes[IMPROVED] = placement.size
    return PackResult(placement, sizes)
