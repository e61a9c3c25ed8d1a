"""Pack buffers into one arena: every packer, the smallest result, then the searches.

Stages: the greedy packers of ``PACKERS``; when none meets the lower bound, the searches at the
lower bound (a short skyline ``search.fit``; the exact-cover ``tiling.fit``, strong where only
a perfect tiling reaches the bound: it places the guillotine-cut sets of
``benchmarks/packing.py`` in a fraction of its share, so it comes before the sweeps, which do
not; the time sweeps of ``stitch.fit``, forward and backward, when every section is full there
or one unit short, raced with the sweeps one unit above the bound, where they are exact too: a
placement there is kept while the sweeps at the bound go on), then, when none found a
placement, the skyline ``search`` bisecting the capacities above the bound; then ``windows``,
which lowers a placement a section at a time by repacking windows of time around it: the best
one, or the stitched sweeps' at the bound when no sweep got through there (higher, mostly, but
full wherever the sweeps' tilings are kept), where that placement is at most
``tiling.MAX_ROWS`` units high (its tiling searches would outrun any budget above); then the
``improve`` local search from the best. A search result only replaces the best so far when it
is strictly smaller.

Invariants: the result is a valid placement (see ``checker``) no larger than any single
packer's; packers are tried in the fixed order of ``PACKERS`` and the first smallest wins, and
the input is put in id order first, so the result does not depend on the input order.

Capacity: when a ``capacity`` is given and the best greedy arena exceeds it, fitting it comes
first: the skyline ``search.fit`` at the capacity gets ``CAPACITY_SHARE`` of the budget (the
way MiniMalloc is used: any placement within a capacity), and the stages above run in the rest
of the budget from the placement it found, if any.

Greedy work: a greedy packer visits, for each buffer, every buffer conflicting with it
(``placer.placement_work``: ``n`` plus twice the conflicting pairs, counted in O(n log n)
before anything is placed), which no budget bounds: 20000 buffers all live at once make 200
million pairs. So the packers of ``PACKERS`` run, in order, only while their work together
stays within ``GREEDY_WORK_PER_MS`` visits per millisecond of the budget (of at least
``MIN_GREEDY_MS``, so that every small problem gets all three, whatever the budget), and stop
at the end of that time as a safety stop (a machine far slower than the rate assumes). When
one does not run, the budget ran out: the result is the best of the packers that ran and of
``sweep_first_fit`` (first fit by a sweep over time, O(n log n), listing no conflicts), and
nothing else runs (the searches and ``improve`` need the conflicts, or structures as large);
``PackResult.skipped`` names what did not run. Like the node caps, the work cap, not the
clock, decides, so the result stays reproducible.

Time: ``budget_ms`` bounds the searches together. Each search stage gets a share of it
(``FULL_SHARES`` when ``sweep.suits`` the problem at its lower bound, else ``TILED_SHARES``
when ``tiling.suits`` it, else ``UNTILED_SHARES``) as a node cap, the share times its
module's ``NODES_PER_MS`` (or a part of the ``search_nodes`` / ``tiling_nodes`` /
``sweep_nodes`` / ``windows_nodes`` argument when given), and the end of its share as a
safety deadline; ``improve`` gets what is left. The node and iteration caps make the result
reproducible as long as they, not the clock, end the searches.

Processes: with ``workers`` > 1, and a sweep stage of at least ``PARALLEL_MS``, the sweeps run
in that many processes (``race``) and the stage's node cap from the budget is that many times
larger: the result is reproducible for the same budget and workers. On the 150-buffer churn
sets (3 s, seeds 0-19) two processes searched about three times the nodes of one and took all
20 within 1.02 of the bound (all 20 with one too since the sweeps one unit above the bound
get more of the nodes, ``stitch.RELAXED_WEIGHT``); on the 400-buffer sets, seeds 0-39 at 3 s,
39 of 40 (14 at the bound) against 36-37 with one (measured with the searches compiled, see
``compiled``, 2026-12-01).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from accy.passes.arena import (
    best_fit,
    greedy_by_breadth,
    greedy_by_size,
    search,
    stitch,
    sweep,
    sweep_first_fit,
    tiling,
    windows,
)
from accy.passes.arena.improve import improve
from accy.passes.arena.placer import OutOfTime, conflict_pairs
from accy.passes.arena.problem import (
    DEFAULT_ALIGNMENT,
    BufferInterval,
    Placement,
    check_alignment,
    check_unique_ids,
)
from accy.passes.arena.sections import build_sections

Packer = Callable[..., Placement]
"""``packer(intervals, alignment, deadline=None)``: a placement, or ``placer.OutOfTime``."""

# Tie order: the first packer reaching the smallest size wins.
PACKERS: tuple[tuple[str, Packer], ...] = (
    (best_fit.NAME, best_fit.pack_best_fit),
    (greedy_by_size.NAME, greedy_by_size.pack_greedy_by_size),
    (greedy_by_breadth.NAME, greedy_by_breadth.pack_greedy_by_breadth),
)
SEARCHED = search.NAME
WINDOWS = windows.NAME
IMPROVED = "improve"
# Shares of the budget: (skyline at the lower bound, sweeps at the lower bound and one unit
# above it, tiling at the lower bound, skyline bisection above it, window repacking), when the
# sweep suits the problem (every section full or one unit short), when only the tiling search
# does, and when neither does. Full problems give the skyline bisection nothing: the sweeps
# one unit above the bound leave it no capacity to try when they get through, and window
# repacking starts from the stitched sweeps when they do not. On the 150-buffer churn sets of
# ``benchmarks/packing.py`` (3 s, seeds 0-19) the sweeps one unit above the bound, raced in the
# sweep stage, take 17 within 1.02 of the bound (13-14 without them, shares 0.45, 0.25, 0.05,
# 0.25 then); on the 400-buffer sets, where no sweep gets through, the time they take costs
# window repacking a little (seeds 0-9: mean 1.092-1.098 over two runs, 1.084 without them;
# measured before the sweeps left out dominated splits). Sweeps 0.7 and window repacking 0.15
# took 12 of seeds 0-19 within 1.02 in two processes against 11, mean 1.046 against 1.041.
FULL_SHARES = (0.0, 0.6, 0.15, 0.0, 0.25)
TILED_SHARES = (0.0, 0.0, 0.5, 0.1, 0.3)
UNTILED_SHARES = (0.2, 0.0, 0.0, 0.3, 0.2)
CAPACITY_SHARE = 0.75
"""The share of the budget for fitting a given capacity, before the other stages."""
PARALLEL_MS = 500.0
"""The shortest sweep stage (milliseconds of budget) run in ``workers`` processes: starting
them takes about 50 ms a race (a third of a second for a program's first)."""
DEFAULT_BUDGET_MS = 100.0
DEFAULT_MAX_ITERATIONS = 2000
GREEDY_WORK_PER_MS = 1000
"""Greedy packers' visits (``placer.placement_work``) per millisecond of budget, all packers
together: under half the rate measured on a shared 2-core machine (1800-3700 a millisecond on
churn sets, random lifetimes and buffers all live at once, 2026-12-02), so the cap, not the
clock, decides which run."""
MIN_GREEDY_MS = 100.0
"""The greedy packers' work cap is that of at least this budget (three packers of 33000
visits each: a thousand buffers of up to 32 conflicts each, or 180 all live at once)."""
FALLBACK = sweep_first_fit.NAME
SEARCHES = "searches"
"""In ``PackResult.skipped``: the searches and ``improve`` did not run."""


@dataclass(frozen=True)
class PackResult:
    """The chosen placement and, for reports, the arena size each packer reached.

    ``packer_sizes`` holds one entry per packer of ``PACKERS``, then ``SEARCHED``, the best
    size after the searches (``placement.packer`` names the one that found it), then
    ``WINDOWS``, the size after window repacking, then ``IMPROVED``, the size after the
    improvement search (each equal to the size before it when it found nothing smaller).

    When the budget ran out (see the module doc), ``skipped`` names the packers that did not
    run, then ``SEARCHES``; ``packer_sizes`` leaves those packers out and has ``FALLBACK``
    after the others that ran (and ``SEARCHED``, ``WINDOWS`` and ``IMPROVED`` at its size);
    ``conflicts`` is the number of conflicting pairs and ``greedy_ms`` the budget that runs
    all of ``PACKERS``.
    """

    placement: Placement
    packer_sizes: Mapping[str, int]
    skipped: tuple[str, ...] = ()
    conflicts: int = 0
    greedy_ms: float = 0.0

    @property
    def budget_ran_out(self) -> bool:
        """Whether a stage did not run for want of budget."""
        return bool(self.skipped)


def greedy_budget_ms(work: int, packers: int = len(PACKERS)) -> float:
    """The budget (milliseconds) whose greedy work cap covers ``packers`` packers of
    ``work`` visits each (at least ``MIN_GREEDY_MS``)."""
    return max(packers * work / GREEDY_WORK_PER_MS, MIN_GREEDY_MS)


def _greedy(
    intervals: Sequence[BufferInterval], alignment: int, budget_ms: float, started: float
) -> tuple[list[tuple[str, Placement]], int]:
    """The ``(name, placement)`` of each packer of ``PACKERS`` that ran within the greedy
    work cap and deadline (see the module doc), in order, and the conflicting pairs."""
    pairs = conflict_pairs(intervals)
    work = len(intervals) + 2 * pairs  # placer.placement_work
    greedy_ms = max(budget_ms, MIN_GREEDY_MS)
    allowed, deadline = greedy_ms * GREEDY_WORK_PER_MS, started + greedy_ms / 1000.0
    results: list[tuple[str, Placement]] = []
    for name, packer in PACKERS:
        if (len(results) + 1) * work > allowed:
            break
        try:
            results.append((name, packer(intervals, alignment, deadline=deadline)))
        except OutOfTime:
            break
    return results, pairs


def _searched(
    intervals: Sequence[BufferInterval],
    alignment: int,
    best: Placement,
    *,
    started: float,
    budget_ms: float,
    seed: int,
    search_nodes: int | None,
    tiling_nodes: int | None,
    sweep_nodes: int | None,
    windows_nodes: int | None,
    missed: int | None,
    workers: int,
) -> tuple[Placement, Placement]:
    """The best placement after the searches (``best`` when they find nothing smaller), and
    after window repacking from it. The searches start at ``started`` and get ``budget_ms``;
    ``missed`` is a capacity the skyline search was given and did not fit, so it does not try
    that capacity or a lower one again."""
    lower = best.lower_bound
    sections = build_sections(intervals, alignment)
    full = sweep.suits(sections, lower // sections.unit)
    tiled = tiling.suits(sections, lower // sections.unit)
    shares = FULL_SHARES if full else TILED_SHARES if tiled else UNTILED_SHARES
    probe_share, sweep_share, tiling_share, search_share, windows_share = shares

    def share_end(*shares: float) -> float:
        return started + budget_ms * sum(shares) / 1000.0

    if search_nodes is None:
        probe_nodes = int(budget_ms * probe_share * search.NODES_PER_MS)
        search_nodes = int(budget_ms * search_share * search.NODES_PER_MS)
    else:  # split between the skyline stages as their shares are (all to the bisection
        # where neither has a share)
        skyline_share = probe_share + search_share
        probe_nodes = int(search_nodes * probe_share / skyline_share) if skyline_share else 0
        search_nodes -= probe_nodes
    if missed is not None and lower <= missed:
        probe_nodes = 0
    if tiling_nodes is None:
        tiling_nodes = int(budget_ms * tiling_share * tiling.NODES_PER_MS)
    if budget_ms * sweep_share < PARALLEL_MS:
        workers = 1  # starting processes would cost more than they bring
    if sweep_nodes is None:
        sweep_nodes = int(budget_ms * sweep_share * sweep.NODES_PER_MS) * workers
    if windows_nodes is None:
        windows_nodes = int(budget_ms * windows_share * windows.NODES_PER_MS)
    found = search.fit(
        intervals,
        alignment,
        lower,
        max_nodes=probe_nodes,
        deadline=share_end(probe_share),
        seed=seed,
    )
    # The exact searches at the lower bound, each where it applies, in budget order: the
    # tiling, then the sweeps (forward and backward, raced with the two one unit above the
    # bound; stitched when none gets through at the bound).
    spent = probe_share + tiling_share
    if found is None and tiled and tiling_nodes > 0:
        found = tiling.fit(
            intervals,
            alignment,
            lower,
            max_nodes=tiling_nodes,
            deadline=share_end(spent),
            seed=seed,
        )
    spent += sweep_share
    stitched = None
    if found is None and full and sweep_nodes > 0:
        found, stitched = stitch.fit(
            intervals,
            alignment,
            lower,
            max_nodes=sweep_nodes,
            deadline=share_end(spent),
            seed=seed,
            relaxed=lower + sections.unit,
            workers=workers,
        )
    tried_lower = probe_nodes > 0 or (full and sweep_nodes > 0) or (tiled and tiling_nodes > 0)
    if found is None and search_nodes > 0:
        found = search.search(
            intervals,
            alignment,
            best.size,
            max_nodes=search_nodes,
            deadline=share_end(spent, search_share),
            seed=seed,
            lowest=max(  # +1: rounded up to the next unit
                lower + 1 if tried_lower else lower, lower if missed is None else missed + 1
            ),
        )
    for candidate in (found, None if stitched is None else stitched.placement):
        if candidate is not None and candidate.size < best.size:
            best = candidate
    lowered = None
    # From the stitched sweeps when there are some: higher than the best, mostly, but exactly
    # full wherever their tilings are kept, which window repacking gets further from.
    start = best if stitched is None else stitched.placement
    # Window repacking runs the tiling search on windows of the placement's height in rows:
    # beyond ``tiling.MAX_ROWS`` (units of a byte, say) its bitmasks get so slow that one
    # move of a few hundred nodes overruns any budget (300 buffers of random byte sizes spent
    # 52 s of a 1 s budget there).
    if best.size > lower and windows_nodes > 0 and start.size // sections.unit <= tiling.MAX_ROWS:
        lowered = windows.lower(
            intervals,
            alignment,
            start,
            max_nodes=windows_nodes,
            deadline=share_end(spent, search_share, windows_share),
            seed=seed,
        )
    if lowered is None or lowered.size >= best.size:
        lowered = best
    return best, lowered


def pack(
    intervals: Sequence[BufferInterval],
    *,
    alignment: int = DEFAULT_ALIGNMENT,
    budget_ms: float = DEFAULT_BUDGET_MS,
    max_iterations: int = DEFAULT_MAX_ITERATIONS,
    seed: int = 0,
    search_nodes: int | None = None,
    tiling_nodes: int | None = None,
    sweep_nodes: int | None = None,
    windows_nodes: int | None = None,
    capacity: int | None = None,
    workers: int = 1,
) -> PackResult:
    """Place every buffer, first within ``capacity`` bytes when given (see the module doc);
    ``budget_ms`` bounds the greedy packers' work and, with ``search_nodes`` (both skyline
    stages, and the capacity fit as many), ``tiling_nodes``, ``sweep_nodes``,
    ``windows_nodes`` and ``max_iterations``, the searches; ``workers`` processes run the
    sweeps."""
    if workers < 1:
        raise ValueError(f"pack: workers must be at least 1, got {workers}")
    check_alignment(alignment)
    check_unique_ids(intervals)
    started = time.perf_counter()
    intervals = sorted(intervals, key=lambda interval: interval.id)
    ran, pairs = _greedy(intervals, alignment, budget_ms, started)
    greedy_ms = greedy_budget_ms(len(intervals) + 2 * pairs)
    if len(ran) < len(PACKERS):  # the budget ran out: the best so far, or the fallback
        ran.append((FALLBACK, sweep_first_fit.pack_sweep_first_fit(intervals, alignment)))
        best = min((result for _, result in ran), key=lambda result: result.size)
        sizes = {name: result.size for name, result in ran}
        sizes.update({SEARCHED: best.size, WINDOWS: best.size, IMPROVED: best.size})
        skipped = tuple(name for name, _ in PACKERS[len(ran) - 1 :]) + (SEARCHES,)
        return PackResult(best, sizes, skipped, pairs, greedy_ms)
    sizes = {name: result.size for name, result in ran}
    best = min((result for _, result in ran), key=lambda result: result.size)  # the first on ties
    searches_start, searches_ms, missed = started, budget_ms, None
    if capacity is not None and best.lower_bound <= capacity < best.size:
        share_ms = budget_ms * CAPACITY_SHARE
        fitted = search.fit(
            intervals,
            alignment,
            capacity,
            max_nodes=int(share_ms * search.NODES_PER_MS) if search_nodes is None else search_nodes,
            deadline=started + share_ms / 1000.0,
            seed=seed,
        )
        if fitted is None:
            missed = capacity
        elif fitted.size < best.size:
            best = fitted
        searches_start, searches_ms = started + share_ms / 1000.0, budget_ms - share_ms
    searched = lowered = best
    if best.size > best.lower_bound:
        searched, lowered = _searched(
            intervals,
            alignment,
            best,
            started=searches_start,
            budget_ms=searches_ms,
            seed=seed,
            search_nodes=search_nodes,
            tiling_nodes=tiling_nodes,
            sweep_nodes=sweep_nodes,
            windows_nodes=windows_nodes,
            missed=missed,
            workers=workers,
        )
    sizes[SEARCHED] = searched.size
    sizes[WINDOWS] = lowered.size
    spent_ms = (time.perf_counter() - started) * 1000.0
    placement = improve(
        intervals,
        lowered,
        alignment=alignment,
        budget_ms=max(budget_ms - spent_ms, 0.0),
        max_iterations=max_iterations,
        seed=seed,
    )
    sizes[IMPROVED] = placement.size
    return PackResult(placement, sizes, conflicts=pairs, greedy_ms=greedy_ms)
