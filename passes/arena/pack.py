"""Pack buffers into one arena: every packer, the smallest result, then the searches.

Stages: the greedy packers of ``PACKERS``; when none meets the lower bound, the exact searches
at the lower bound (``exact``: one ``ExactSearch`` each, driven in the order of
``LOWER_BOUND_SEARCHES``: a short skyline ``search``; the exact-cover ``tiling``, strong where
only a perfect tiling reaches the bound, so it comes before the sweeps; the time sweeps of
``stitch``, forward and backward, when every section is full there or one unit short, raced
with the sweeps one unit above the bound, where they are exact too: a placement there is kept
while the sweeps at the bound go on), then, when none found a placement, the skyline
``search`` bisecting the capacities above the bound; then ``windows``, which lowers a
placement a section at a time by repacking windows of time around it: the best one, or the
start an exact search offered (the stitched sweeps' at the bound when no sweep got through
there: higher, mostly, but full wherever the sweeps' tilings are kept), where that placement
is at most ``tiling.MAX_ROWS`` units high (its tiling searches would outrun any budget above);
then the ``improve`` local search from the best. A search result only replaces the best so far
when it is strictly smaller.

Invariants: the result is a valid placement (see ``checker``) no larger than any single
packer's; packers are tried in the fixed order of ``PACKERS`` and the first smallest wins, and
the input is put in id order first, so the result does not depend on the input order.

Capacity: when a ``capacity`` is given and the best greedy arena exceeds it, fitting it comes
first: ``CAPACITY_SEARCH`` (the skyline search: any placement within a capacity, the way
MiniMalloc is used) gets ``CAPACITY_SHARE`` of the budget, and the stages above run in the
rest of the budget from the placement it found, if any.

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

Work: ``PackResult.work`` is the budgeted work of a call, in steps: the greedy packers' visits
that ran, the node cap of each search stage that ran and ``improve``'s iteration cap when it
ran (a search's nodes stay within its cap, give or take the node that crosses it). It never
exceeds ``max_work`` of the same arguments, which depends on the budget and the caps alone, not
on the problem, so a caller can charge it before packing (the arena plan does). The O(n log n)
passes over the buffers (sorting, counting conflicts, building sections, the fallback) are not
counted: they are the caller's to count per buffer.

Processes: with ``workers`` > 1, and a sweep stage of at least ``PARALLEL_MS``, the sweeps run
in that many processes (``race``) and the stage's node cap from the budget is that many times
larger: the result is reproducible for the same budget and workers.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import NamedTuple

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
from accy.passes.arena.exact import Attempt, ExactSearch
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


class Shares(NamedTuple):
    """Shares of the budget per search stage: the skyline ``search`` at the
    lower bound (``probe``), the ``sweeps`` at the lower bound and one unit above it, the
    ``tiling`` at the lower bound, the skyline ``bisection`` above it and window repacking
    (``windows``)."""

    probe: float
    sweeps: float
    tiling: float
    bisection: float
    windows: float


# Shares when the sweep suits the problem (every section full or one unit short), when only
# the tiling search does, and when neither does. Full problems give the skyline searches
# nothing: the sweeps one unit above the bound leave the bisection no capacity to try when they
# get through, and window repacking starts from the stitched sweeps when they do not.
# ``benchmarks/packing.py`` measures what the shares reach.
FULL_SHARES = Shares(0.0, 0.6, 0.15, 0.0, 0.25)
TILED_SHARES = Shares(0.0, 0.0, 0.5, 0.1, 0.3)
UNTILED_SHARES = Shares(0.2, 0.0, 0.0, 0.3, 0.2)
CAPACITY_SHARE = 0.75
"""The share of the budget for fitting a given capacity, before the other stages."""
CAPACITY_SEARCH: ExactSearch = search.EXACT
"""The exact search that fits a given capacity first, with the skyline stages' nodes."""
LOWER_BOUND_SEARCHES: tuple[tuple[str, ExactSearch], ...] = (
    ("probe", search.EXACT),
    ("tiling", tiling.EXACT),
    ("sweeps", stitch.EXACT),
)
"""The exact searches at the lower bound, in budget order, each with its field of ``Shares``:
each runs where it ``suits`` the problem and has nodes, until one places."""
PARALLEL_MS = 500.0
"""The shortest sweep stage (milliseconds of budget) run in ``workers`` processes: starting
them costs more than a shorter stage's sweeps would gain."""
DEFAULT_BUDGET_MS = 100.0
MAX_BUDGET_MS = 7 * 24 * 3600 * 1000.0
"""The longest budget, a week (``PlanOptions``' ``MAX_PACK_BUDGET_MS``): the node caps
derived from it stay integers (an infinite budget has none)."""
DEFAULT_MAX_ITERATIONS = 2000
GREEDY_WORK_PER_MS = 1000
"""Greedy packers' visits (``placer.placement_work``) per millisecond of budget, all packers
together: under half the rate a shared 2-core machine reaches, so the cap, not the clock,
decides which run."""
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
    all of ``PACKERS``. ``work`` is the budgeted work of the call (see the module doc), at
    most ``max_work`` of its arguments.
    """

    placement: Placement
    packer_sizes: Mapping[str, int]
    skipped: tuple[str, ...] = ()
    conflicts: int = 0
    greedy_ms: float = 0.0
    work: int = 0

    @property
    def budget_ran_out(self) -> bool:
        """Whether a stage did not run for want of budget."""
        return bool(self.skipped)


def greedy_budget_ms(work: int, packers: int = len(PACKERS)) -> float:
    """The budget (milliseconds) whose greedy work cap covers ``packers`` packers of
    ``work`` visits each (at least ``MIN_GREEDY_MS``)."""
    return max(packers * work / GREEDY_WORK_PER_MS, MIN_GREEDY_MS)


def _greedy_allowed(budget_ms: float) -> float:
    """The greedy packers' visits, all together, within ``budget_ms``."""
    return max(budget_ms, MIN_GREEDY_MS) * GREEDY_WORK_PER_MS


def _greedy(
    intervals: Sequence[BufferInterval], alignment: int, budget_ms: float, started: float
) -> tuple[list[tuple[str, Placement]], int]:
    """The ``(name, placement)`` of each packer of ``PACKERS`` that ran within the greedy
    work cap and deadline (see the module doc), in order, and the conflicting pairs."""
    pairs = conflict_pairs(intervals)
    work = len(intervals) + 2 * pairs  # placer.placement_work
    greedy_ms = max(budget_ms, MIN_GREEDY_MS)
    allowed, deadline = _greedy_allowed(budget_ms), started + greedy_ms / 1000.0
    results: list[tuple[str, Placement]] = []
    for name, packer in PACKERS:
        if (len(results) + 1) * work > allowed:
            break
        try:
            results.append((name, packer(intervals, alignment, deadline=deadline)))
        except OutOfTime:
            break
    return results, pairs


class _Nodes(NamedTuple):
    """Node caps per search stage (the fields of ``Shares``)."""

    probe: int
    sweeps: int
    tiling: int
    bisection: int
    windows: int


def _caps(
    budget_ms: float,
    shares: Shares,
    *,
    workers: int,
    search_nodes: int | None,
    tiling_nodes: int | None,
    sweep_nodes: int | None,
    windows_nodes: int | None,
) -> tuple[_Nodes, int]:
    """The node caps of the search stages within ``budget_ms`` at ``shares`` (see the
    module doc), the ``..._nodes`` arguments taking the place of the budget's where given,
    and the sweeps' processes."""
    if search_nodes is None:
        probe_nodes = int(budget_ms * shares.probe * search.NODES_PER_MS)
        search_nodes = int(budget_ms * shares.bisection * search.NODES_PER_MS)
    else:  # split between the skyline stages as their shares are (all to the bisection
        # where neither has a share)
        skyline_share = shares.probe + shares.bisection
        probe_nodes = int(search_nodes * shares.probe / skyline_share) if skyline_share else 0
        search_nodes -= probe_nodes
    if tiling_nodes is None:
        tiling_nodes = int(budget_ms * shares.tiling * tiling.NODES_PER_MS)
    if budget_ms * shares.sweeps < PARALLEL_MS:
        workers = 1  # starting processes would cost more than they bring
    if sweep_nodes is None:
        sweep_nodes = int(budget_ms * shares.sweeps * sweep.NODES_PER_MS) * workers
    if windows_nodes is None:
        windows_nodes = int(budget_ms * shares.windows * windows.NODES_PER_MS)
    return _Nodes(probe_nodes, sweep_nodes, tiling_nodes, search_nodes, windows_nodes), workers


def _capacity_ms(budget_ms: float) -> float:
    """The budget for fitting a given capacity."""
    return budget_ms * CAPACITY_SHARE


def _capacity_nodes(budget_ms: float, search_nodes: int | None) -> int:
    """The node cap for fitting a given capacity."""
    if search_nodes is not None:
        return search_nodes
    return int(_capacity_ms(budget_ms) * search.NODES_PER_MS)


def check_budget_ms(budget_ms: float) -> None:
    """``ValueError`` unless ``budget_ms`` is from 0 to ``MAX_BUDGET_MS`` (nan is not)."""
    if not 0 <= budget_ms <= MAX_BUDGET_MS:
        raise ValueError(
            f"pack: budget_ms must be from 0 to {MAX_BUDGET_MS:.0f} (a week), got {budget_ms!r}"
        )


def max_work(
    budget_ms: float = DEFAULT_BUDGET_MS,
    *,
    max_iterations: int = DEFAULT_MAX_ITERATIONS,
    search_nodes: int | None = None,
    tiling_nodes: int | None = None,
    sweep_nodes: int | None = None,
    windows_nodes: int | None = None,
    capacity: int | None = None,
    workers: int = 1,
) -> int:
    """The most ``PackResult.work`` a ``pack`` call with these arguments reports, whatever its
    buffers: the greedy packers' work cap, the largest sum of the search stages' node caps over
    the three shares (after the capacity fit's, when a ``capacity`` is given) and the iteration
    cap."""
    check_budget_ms(budget_ms)

    def stages(budget_ms: float) -> int:  # the most the search stages get within budget_ms
        return max(
            sum(
                _caps(
                    budget_ms,
                    shares,
                    workers=workers,
                    search_nodes=search_nodes,
                    tiling_nodes=tiling_nodes,
                    sweep_nodes=sweep_nodes,
                    windows_nodes=windows_nodes,
                )[0]
            )
            for shares in (FULL_SHARES, TILED_SHARES, UNTILED_SHARES)
        )

    searches = stages(budget_ms)
    if capacity is not None:  # the capacity fit, then the stages in the rest of the budget
        rest = _capacity_nodes(budget_ms, search_nodes) + stages(
            budget_ms - _capacity_ms(budget_ms)
        )
        searches = max(searches, rest)
    return int(_greedy_allowed(budget_ms)) + searches + max_iterations


@dataclass(frozen=True)
class _Searched:
    """The best placement after the searches, after window repacking from it, and the node
    caps of the stages that ran."""

    best: Placement
    lowered: Placement
    nodes: int


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
) -> _Searched:
    """The best placement after the searches (``best`` when they find nothing smaller), and
    after window repacking from it. The searches start at ``started`` and get ``budget_ms``;
    ``missed`` is a capacity the skyline search was given and did not fit, so it does not try
    that capacity or a lower one again."""
    lower = best.lower_bound
    sections = build_sections(intervals, alignment)
    rows = lower // sections.unit
    full = sweep.suits(sections, rows)
    tiled = tiling.suits(sections, rows)
    shares = FULL_SHARES if full else TILED_SHARES if tiled else UNTILED_SHARES
    nodes, workers = _caps(
        budget_ms,
        shares,
        workers=workers,
        search_nodes=search_nodes,
        tiling_nodes=tiling_nodes,
        sweep_nodes=sweep_nodes,
        windows_nodes=windows_nodes,
    )
    if missed is not None and lower <= missed:
        nodes = nodes._replace(probe=0)

    def share_end(*shares: float) -> float:
        return started + budget_ms * sum(shares) / 1000.0

    # The exact searches at the lower bound, each where it applies, in budget order, until one
    # places; an offered start (the stitched sweeps') is where window repacking starts.
    found = start = None
    spent, granted, tried_lower = 0.0, 0, False
    for stage, exact in LOWER_BOUND_SEARCHES:
        spent += getattr(shares, stage)
        stage_nodes: int = getattr(nodes, stage)
        if found is not None or stage_nodes <= 0 or not exact.suits(sections, rows):
            continue
        result = exact.fit(
            Attempt(intervals, alignment, lower, stage_nodes, share_end(spent), seed, workers)
        )
        found = result.placement
        if result.start is not None:
            start = result.start
        granted, tried_lower = granted + stage_nodes, True
    if found is None and nodes.bisection > 0:
        found = search.search(
            intervals,
            alignment,
            best.size,
            max_nodes=nodes.bisection,
            deadline=share_end(spent, shares.bisection),
            seed=seed,
            lowest=max(  # +1: rounded up to the next unit
                lower + 1 if tried_lower else lower, lower if missed is None else missed + 1
            ),
        )
        granted += nodes.bisection
    for candidate in (found, start):
        if candidate is not None and candidate.size < best.size:
            best = candidate
    lowered = None
    # From the offered start when there is one (the stitched sweeps': higher than the best,
    # mostly, but exactly full wherever their tilings are kept, which window repacking gets
    # further from).
    if start is None:
        start = best
    # Window repacking runs the tiling search on windows of the placement's height in rows:
    # beyond ``tiling.MAX_ROWS`` (units of a byte, say) its bitmasks get so slow that one
    # move of a few hundred nodes overruns any budget.
    if best.size > lower and nodes.windows > 0 and start.size // sections.unit <= tiling.MAX_ROWS:
        lowered = windows.lower(
            intervals,
            alignment,
            start,
            max_nodes=nodes.windows,
            deadline=share_end(spent, shares.bisection, shares.windows),
            seed=seed,
        )
        granted += nodes.windows
    if lowered is None or lowered.size >= best.size:
        lowered = best
    return _Searched(best, lowered, granted)


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
    check_budget_ms(budget_ms)
    check_alignment(alignment)
    check_unique_ids(intervals)
    started = time.perf_counter()
    intervals = sorted(intervals, key=lambda interval: interval.id)
    ran, pairs = _greedy(intervals, alignment, budget_ms, started)
    greedy_ms = greedy_budget_ms(len(intervals) + 2 * pairs)
    work = len(ran) * (len(intervals) + 2 * pairs)  # the greedy packers' visits
    if len(ran) < len(PACKERS):  # the budget ran out: the best so far, or the fallback
        ran.append((FALLBACK, sweep_first_fit.pack_sweep_first_fit(intervals, alignment)))
        best = min((result for _, result in ran), key=lambda result: result.size)
        sizes = {name: result.size for name, result in ran}
        sizes.update({SEARCHED: best.size, WINDOWS: best.size, IMPROVED: best.size})
        skipped = tuple(name for name, _ in PACKERS[len(ran) - 1 :]) + (SEARCHES,)
        return PackResult(best, sizes, skipped, pairs, greedy_ms, work)
    sizes = {name: result.size for name, result in ran}
    best = min((result for _, result in ran), key=lambda result: result.size)  # the first on ties
    searches_start, searches_ms, missed = started, budget_ms, None
    if capacity is not None and best.lower_bound <= capacity < best.size:
        share_ms = _capacity_ms(budget_ms)
        capacity_nodes = _capacity_nodes(budget_ms, search_nodes)
        deadline = started + share_ms / 1000.0
        attempt = Attempt(intervals, alignment, capacity, capacity_nodes, deadline, seed, workers)
        fitted = CAPACITY_SEARCH.fit(attempt).placement
        work += capacity_nodes
        if fitted is None:
            missed = capacity
        elif fitted.size < best.size:
            best = fitted
        searches_start, searches_ms = started + share_ms / 1000.0, budget_ms - share_ms
    searched = lowered = best
    if best.size > best.lower_bound:
        stages = _searched(
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
        searched, lowered, work = stages.best, stages.lowered, work + stages.nodes
    sizes[SEARCHED] = searched.size
    sizes[WINDOWS] = lowered.size
    spent_ms = (time.perf_counter() - started) * 1000.0
    if intervals and lowered.size > lowered.lower_bound:
        work += max_iterations  # improve searches (it returns at once otherwise)
    placement = improve(
        intervals,
        lowered,
        alignment=alignment,
        budget_ms=max(budget_ms - spent_ms, 0.0),
        max_iterations=max_iterations,
        seed=seed,
    )
    sizes[IMPROVED] = placement.size
    return PackResult(placement, sizes, conflicts=pairs, greedy_ms=greedy_ms, work=work)
