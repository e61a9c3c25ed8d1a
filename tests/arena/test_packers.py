"""Arena packers: validity properties, hand-checked offsets, determinism, the checker."""

from __future__ import annotations

import importlib
import random
import time

import pytest
from accy.passes.arena import (
    ArenaCheckError,
    BufferInterval,
    Placement,
    align_up,
    check_placement,
    improve,
    lower_bound,
    pack,
    pack_best_fit,
    pack_greedy_by_breadth,
    pack_greedy_by_size,
    search,
    sweep,
)
from accy.passes.arena.exact import ExactSearch
from accy.passes.arena.generated import churn
from hypothesis import given, settings
from hypothesis import strategies as st

PACKERS = [pack_greedy_by_size, pack_greedy_by_breadth, pack_best_fit]
pack_module = importlib.import_module("accy.passes.arena.pack")  # the function shadows it


@st.composite
def problems(draw: st.DrawFn) -> list[BufferInterval]:
    count = draw(st.integers(0, 25))
    result = []
    for ident in range(count):
        start = draw(st.integers(0, 15))
        length = draw(st.integers(0, 8))
        size = draw(st.integers(0, 2000))
        result.append(BufferInterval(ident, start, start + length, size))
    return result


def _assert_sound(intervals: list[BufferInterval], placement: Placement, alignment: int) -> None:
    check_placement(intervals, placement, alignment)
    total = sum(align_up(i.size, alignment) for i in intervals)
    assert placement.lower_bound == lower_bound(intervals, alignment)
    assert placement.lower_bound <= placement.size <= total


@settings(max_examples=40, deadline=None)
@given(problems(), st.sampled_from([1, 64, 256]), st.randoms(use_true_random=False))
def test_every_packer_is_valid_and_order_independent(
    intervals: list[BufferInterval], alignment: int, rng: random.Random
) -> None:
    shuffled = list(intervals)
    rng.shuffle(shuffled)
    for packer in PACKERS:
        placement = packer(intervals, alignment)
        _assert_sound(intervals, placement, alignment)
        assert packer(shuffled, alignment) == placement


@settings(max_examples=30, deadline=None)
@given(problems(), st.randoms(use_true_random=False))
def test_pack_is_valid_deterministic_and_no_worse_than_any_packer(
    intervals: list[BufferInterval], rng: random.Random
) -> None:
    # A large budget with small caps: the caps, not the clock, end the searches.
    options = {
        "alignment": 256,
        "budget_ms": 10_000,
        "max_iterations": 30,
        "tiling_nodes": 500,
        "sweep_nodes": 200,
        "windows_nodes": 500,
    }
    result = pack(intervals, **options)
    _assert_sound(intervals, result.placement, 256)
    assert result.placement.size <= min(p(intervals, 256).size for p in PACKERS)
    assert result.placement.size == result.packer_sizes["improve"]
    shuffled = list(intervals)
    rng.shuffle(shuffled)
    assert pack(shuffled, **options) == result


def test_greedy_by_size_hand_case() -> None:
    # a=1000 live 0..1, b=512 live 1..2, c=512 live 2..3, alignment 256.
    # Largest first: a -> 0 (aligned 1024). b meets a: lowest gap above a -> 1024.
    # c meets only b (at item 2): gap [0, 1024) below b fits 512 -> 0.
    # Arena = max(0+1024, 1024+512, 0+512) = 1536; lower bound at item 1 = 1024+512.
    intervals = [
        BufferInterval(0, 0, 1, 1000),
        BufferInterval(1, 1, 2, 512),
        BufferInterval(2, 2, 3, 512),
    ]
    placement = pack_greedy_by_size(intervals)
    assert dict(placement.offsets) == {0: 0, 1: 1024, 2: 0}
    assert (placement.size, placement.lower_bound) == (1536, 1536)


def test_best_fit_takes_smallest_gap_where_first_fit_takes_lowest() -> None:
    # Alignment 1; both packers place a, b, c, d, e, x (decreasing size), stacking the first
    # five at item 0: a [0,200) b [200,300) c [300,390) d [390,440) e [440,480).
    # x (30 bytes, item 1 only) meets a, c, e but not b, d (item 0 only), so its free gaps
    # are [200,300) (100 bytes) and [390,440) (50 bytes):
    # first fit takes the lowest, 200; best fit the smallest, 390. Both arenas are 480.
    intervals = [
        BufferInterval(0, 0, 2, 200),  # a
        BufferInterval(1, 0, 0, 100),  # b
        BufferInterval(2, 0, 2, 90),  # c
        BufferInterval(3, 0, 0, 50),  # d
        BufferInterval(4, 0, 2, 40),  # e
        BufferInterval(5, 1, 1, 30),  # x
    ]
    stacked = {0: 0, 1: 200, 2: 300, 3: 390, 4: 440}
    best = pack_best_fit(intervals, 1)
    first = pack_greedy_by_size(intervals, 1)
    assert dict(best.offsets) == {**stacked, 5: 390}
    assert dict(first.offsets) == {**stacked, 5: 200}
    assert best.size == first.size == 480


def test_lower_bound_releases_before_claiming() -> None:
    # Buffer 0 ends at item 1, buffer 1 starts at item 2: never live together.
    intervals = [BufferInterval(0, 0, 1, 300), BufferInterval(1, 2, 3, 300)]
    assert lower_bound(intervals, 256) == 512
    assert lower_bound(intervals, 1) == 300


def test_improve_never_returns_worse() -> None:
    rng = random.Random(7)
    intervals = [
        BufferInterval(i, (s := rng.randrange(30)), s + rng.randrange(10), rng.randrange(1, 5000))
        for i in range(80)
    ]
    start = pack_greedy_by_breadth(intervals, 256)
    better = improve(intervals, start, alignment=256, budget_ms=10_000, max_iterations=200)
    check_placement(intervals, better, 256)
    assert better.size <= start.size


def test_checker_names_overlapping_buffers() -> None:
    intervals = [BufferInterval(3, 0, 2, 256), BufferInterval(9, 2, 4, 256)]
    bad = Placement(offsets={3: 0, 9: 0}, size=256, lower_bound=512, packer="hand")
    with pytest.raises(ArenaCheckError, match="buffers 3 and 9"):
        check_placement(intervals, bad, 256)


@pytest.mark.parametrize(
    ("offsets", "size", "message"),
    [
        ({3: 0}, 512, "buffer 9 has no offset"),
        ({3: 0, 9: 100}, 512, "buffer 9 offset 100 is not"),
        ({3: 0, 9: 256}, 300, "buffer 9 ends at 512, past the arena size 300"),
    ],
)
def test_checker_catches_missing_misaligned_and_uncovered(
    offsets: dict[int, int], size: int, message: str
) -> None:
    intervals = [BufferInterval(3, 0, 2, 256), BufferInterval(9, 2, 4, 256)]
    placement = Placement(offsets=offsets, size=size, lower_bound=512, packer="hand")
    with pytest.raises(ArenaCheckError, match=message):
        check_placement(intervals, placement, 256)


def test_invalid_problems_are_rejected() -> None:
    with pytest.raises(ValueError, match="start 3 is after end 1"):
        BufferInterval(0, 3, 1, 8)
    with pytest.raises(ValueError, match="appears more than once"):
        pack([BufferInterval(0, 0, 1, 8), BufferInterval(0, 1, 2, 8)])
    with pytest.raises(ValueError, match="alignment"):
        pack([BufferInterval(0, 0, 1, 8)], alignment=0)


# --- branch-and-bound search over skyline placements -------------------------------------


# Alignment 1. Items 0-1 hold a (200) + b (100) + c (300) = 600; items 2-5 hold
# a + d (200) + e (200) = 600: the lower bound is 600 and a tiling reaches it
# (a [0,200), c [200,500), b [500,600), d [200,400), e [400,600)).
# Largest first puts c at 0 and a above it at 300, so d goes to 0 and e finds only the
# 100-byte gap [200,300) below a: e goes to 500 and the arena is 700. Best fit and
# greedy by breadth land on 700 as well.
GREEDY_MISSES = [
    BufferInterval(0, 0, 5, 200),  # a
    BufferInterval(1, 0, 1, 100),  # b
    BufferInterval(2, 0, 1, 300),  # c
    BufferInterval(3, 2, 5, 200),  # d
    BufferInterval(4, 2, 5, 200),  # e
]


def test_search_finds_the_optimum_where_every_greedy_packer_misses() -> None:
    intervals = GREEDY_MISSES
    assert min(packer(intervals, 1).size for packer in PACKERS) == 700
    found = search.search(intervals, 1, 700, max_nodes=1000, deadline=time.perf_counter() + 60)
    assert found is not None
    check_placement(intervals, found, 1)
    assert (found.size, found.lower_bound) == (600, 600)
    result = pack(intervals, alignment=1, budget_ms=10_000, max_iterations=0)
    assert result.packer_sizes["search"] == result.placement.size == 600


def test_search_fits_parts_no_buffer_crosses_one_at_a_time() -> None:
    # GREEDY_MISSES twice, in items 0-5 and 6-11: no buffer crosses from item 5 to 6, so
    # the search takes two parts of five buffers, each fitted at 600 on its own.
    intervals = GREEDY_MISSES + [
        BufferInterval(b.id + 5, b.start + 6, b.end + 6, b.size) for b in GREEDY_MISSES
    ]
    problem = search._build(intervals, 1)
    assert [indices for indices, _ in problem.parts] == [[0, 1, 2, 3, 4], [5, 6, 7, 8, 9]]
    # Sections items 0-1 and 2-5 (6-7 and 8-11), each 600 bytes live: 6 units of 100 bytes.
    assert [part.sections.live for _, part in problem.parts] == [(6, 6), (6, 6)]
    found = search.fit(intervals, 1, 600, max_nodes=1000, deadline=time.perf_counter() + 60)
    assert found is not None and found.size == 600
    check_placement(intervals, found, 1)
    # One buffer across the cut joins the parts.
    joined = [*intervals, BufferInterval(10, 5, 6, 1)]
    assert not search._build(joined, 1).parts


def test_search_alternates_with_the_mirror_image_in_time() -> None:
    # a (items 0-1) then b (items 2-3) on top of c (items 0-3): mirrored, b comes first.
    intervals = [BufferInterval(0, 0, 1, 1), BufferInterval(1, 2, 3, 1), BufferInterval(2, 0, 3, 1)]
    problem = search._build(intervals, 1)
    mirror = problem.mirror
    assert mirror is not None and mirror.mirror is None
    assert problem.sections.first == (0, 1, 0) and problem.sections.last == (0, 1, 1)
    assert mirror.sections.first == (1, 0, 0) and mirror.sections.last == (1, 0, 1)
    # Offsets found on the mirror are a placement of the problem (buffers meet in both).
    offsets, _ = search._solve(mirror, 2, 100, time.perf_counter() + 60)
    assert offsets is not None
    placement = problem.sections.placement(intervals, offsets, 1, "search")
    check_placement(intervals, placement, 1)
    assert placement.size == 2


def test_pack_fits_a_given_capacity_first(monkeypatch) -> None:
    # Every greedy packer needs 700 bytes, the lower bound 600 is reachable.
    intervals = GREEDY_MISSES
    fits = []  # (capacity, node cap) of each skyline fit, in order

    def spy(attempt):
        fits.append((attempt.capacity, attempt.max_nodes))
        return search.EXACT.fit(attempt)

    # The skyline search spied on, both where it fits the capacity and at the lower bound.
    spied = ExactSearch(search.NAME, search.EXACT.suits, spy)
    monkeypatch.setattr(pack_module, "CAPACITY_SEARCH", spied)
    stages = tuple(
        (stage, spied if exact is search.EXACT else exact)
        for stage, exact in pack_module.LOWER_BOUND_SEARCHES
    )
    monkeypatch.setattr(pack_module, "LOWER_BOUND_SEARCHES", stages)
    options = {"alignment": 1, "budget_ms": 60_000, "max_iterations": 0, "search_nodes": 1000}
    fitted = pack(intervals, capacity=650, **options)
    # The capacity fit comes first, with the skyline nodes; it places everything at 600.
    assert fits == [(650, 1000)]
    check_placement(intervals, fitted.placement, 1)
    assert fitted.placement.size == 600 and fitted.placement.packer == "search"
    assert pack(list(reversed(intervals)), capacity=650, **options) == fitted
    # No capacity: a skyline fit is only the probe at the lower bound (none here: the problem
    # is full at its bound, where the probe gets no nodes, FULL_SHARES).
    fits.clear()
    pack(intervals, **options)
    assert all(tried == 600 for tried, _ in fits)
    # A capacity below the lower bound, or one the greedy arena meets, needs no fit.
    for capacity in (500, 700):
        fits.clear()
        result = pack(intervals, capacity=capacity, **options)
        check_placement(intervals, result.placement, 1)
        assert all(capacity != tried for tried, _ in fits)


@pytest.mark.parametrize("seed", [0, 7, 14, 35])
def test_search_reaches_the_optimum_of_cut_rectangles(guillotine, seed: int) -> None:
    # In these cases a greedy packer misses the optimum (the lower bound).
    intervals = guillotine(seed, 30)
    greedy = min(packer(intervals, 256).size for packer in PACKERS)
    assert greedy > lower_bound(intervals, 256)
    found = search.search(
        intervals, 256, greedy, max_nodes=20_000, deadline=time.perf_counter() + 60
    )
    assert found is not None
    check_placement(intervals, found, 256)
    assert found.size == found.lower_bound


@settings(max_examples=40, deadline=None)
@given(problems(), st.sampled_from([1, 64, 256]), st.integers(0, 300))
def test_search_is_valid_below_its_incumbent_and_deterministic(
    intervals: list[BufferInterval], alignment: int, max_nodes: int
) -> None:
    incumbent = min(packer(intervals, alignment).size for packer in PACKERS)
    options = {"max_nodes": max_nodes, "deadline": time.perf_counter() + 600}
    found = search.search(intervals, alignment, incumbent, **options)
    if found is not None:
        _assert_sound(intervals, found, alignment)
        assert found.size < incumbent
    assert search.search(intervals, alignment, incumbent, **options) == found


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10**6), st.integers(10, 60))
def test_pack_with_search_is_valid_deterministic_and_never_worse(
    guillotine, seed: int, count: int
) -> None:
    intervals = guillotine(seed, count)
    options = {
        "alignment": 256,
        "budget_ms": 60_000,
        "max_iterations": 20,
        "search_nodes": 2000,
        "tiling_nodes": 2000,
        "sweep_nodes": 500,
        "windows_nodes": 2000,
    }
    result = pack(intervals, **options)
    _assert_sound(intervals, result.placement, 256)
    greedy = min(packer(intervals, 256).size for packer in PACKERS)
    sizes = result.packer_sizes
    assert result.placement.size <= sizes["windows"] <= sizes["search"] <= greedy
    assert pack(list(reversed(intervals)), **options) == result


def test_pack_keeps_the_sweeps_placement_one_unit_above_the_bound() -> None:
    # A 150-buffer churn set (64 units high, every item full) whose sweeps at the bound do
    # not get through in 400 nodes, while those one unit above it, raced with them, place it
    # there: 65 units (1.016 of the bound), where the greedy packers need 76-81. Only the sweep
    # stage searches (the others get no nodes).
    intervals = churn(random.Random(10), items=37, height=64, max_width=16)
    lower = lower_bound(intervals, 256)
    options = {"search_nodes": 0, "tiling_nodes": 0, "sweep_nodes": 400, "windows_nodes": 0}
    result = pack(intervals, alignment=256, budget_ms=60_000, max_iterations=10, **options)
    _assert_sound(intervals, result.placement, 256)
    assert result.packer_sizes["search"] == lower + 256
    assert min(packer(intervals, 256).size for packer in PACKERS) > lower + 256
    assert result.placement.packer.startswith(sweep.NAME)


def test_pack_results_do_not_depend_on_the_workers_for_given_node_caps() -> None:
    # The churn set above: its sweeps race in two processes (the budget's sweep share is far
    # above PARALLEL_MS) and the winner, by node counts, is the one of a single process.
    intervals = churn(random.Random(10), items=37, height=64, max_width=16)
    options = {"search_nodes": 0, "tiling_nodes": 0, "sweep_nodes": 400, "windows_nodes": 0}
    alone = pack(intervals, alignment=256, budget_ms=60_000, max_iterations=10, **options)
    assert (
        pack(intervals, alignment=256, budget_ms=60_000, max_iterations=10, workers=2, **options)
        == alone
    )
    with pytest.raises(ValueError, match="workers must be at least 1, got 0"):
        pack(intervals, workers=0)


def test_pack_search_respects_a_small_budget(guillotine) -> None:
    # The default compile-time budget: the whole pack stays within a small multiple of it
    # (the greedy packers' work too: far under its cap at this size). Measured in this
    # process's CPU time: a loaded machine that deschedules it only ends the search sooner,
    # where a wall-clock bound would count the time it did not run.
    intervals = guillotine(11, 150, items=40, height=64)
    started = time.process_time()
    result = pack(intervals, alignment=256, budget_ms=20)
    elapsed_ms = (time.process_time() - started) * 1000
    check_placement(intervals, result.placement, 256)
    assert elapsed_ms < 20 + 200
