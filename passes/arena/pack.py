"""Pack buffers into one arena: every packer, the smallest result, then two searches.

Stages: the greedy packers of ``PACKERS``; the branch-and-bound ``search`` over skyline
placements (skipped when a packer already meets the lower bound), which may only replace the
best so far with a strictly smaller arena; then the ``improve`` local search from the best.

Invariants: the result is a valid placement (see ``checker``) no larger than any single
packer's; packers are tried in the fixed order of ``PACKERS`` and the first smallest wins, and
the input is put in id order first, so the result does not depend on the input order.

Time: ``budget_ms`` bounds both searches together. The branch-and-bound search gets
``SEARCH_SHARE`` of it as a node cap (``search.NODES_PER_MS`` nodes per millisecond, or
``search_nodes`` when given), with the whole budget's end as a safety deadline; ``improve``
gets what is left. The node and iteration caps make the result reproducible as long as they,
not the clock, end the searches.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from accy.passes.arena import best_fit, greedy_by_breadth, greedy_by_size, search
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
SEARCHED = search.NAME
IMPROVED = "improve"
SEARCH_SHARE = 0.5
DEFAULT_BUDGET_MS = 100.0
DEFAULT_MAX_ITERATIONS = 2000


@dataclass(frozen=True)
class PackResult:
    """The chosen placement and, for reports, the arena size each packer reached.

    ``packer_sizes`` holds one entry per packer of ``PACKERS``, then ``SEARCHED``, the best
    size after the branch-and-bound search, then ``IMPROVED``, the size after the improvement
    search (each equal to the size before it when it found nothing smaller).
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
    search_nodes: int | None = None,
) -> PackResult:
    """Place every buffer; ``budget_ms``, ``search_nodes`` and ``max_iterations`` bound the
    searches (see the module doc)."""
    check_alignment(alignment)
    check_unique_ids(intervals)
    started = time.perf_counter()
    intervals = sorted(intervals, key=lambda interval: interval.id)
    results = [packer(intervals, alignment) for _, packer in PACKERS]
    sizes = {name: result.size for (name, _), result in zip(PACKERS, results)}
    best = min(results, key=lambda result: result.size)  # min keeps the first on ties
    if search_nodes is None:
        search_nodes = int(budget_ms * SEARCH_SHARE * search.NODES_PER_MS)
    if best.size > best.lower_bound and search_nodes > 0:
        found = search.search(
            intervals,
            alignment,
            best.size,
            max_nodes=search_nodes,
            deadline=started + budget_ms / 1000.0,
            seed=seed,
        )
        if found is not None and found.size < best.size:
            best = found
    sizes[SEARCHED] = best.size
    spent_ms = (time.perf_counter() - started) * 1000.0
    placement = improve(
        intervals,
        best,
        alignment=alignment,
        budget_ms=max(budget_ms - spent_ms, 0.0),
        max_iterations=max_iterations,
        seed=seed,
    )
    sizes[IMPROVED] = placement.size
    return PackResult(placement, sizes)
