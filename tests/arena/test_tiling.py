"""The exact-cover tiling search, and the section grid it shares with the skyline search."""

from __future__ import annotations

import time

import pytest
from accy.passes.arena import (
    BufferInterval,
    check_placement,
    lower_bound,
    pack,
    pack_best_fit,
    pack_greedy_by_breadth,
    pack_greedy_by_size,
    tiling,
)
from accy.passes.arena.sections import build_sections
from hypothesis import given, settings
from hypothesis import strategies as st

PACKERS = [pack_greedy_by_size, pack_greedy_by_breadth, pack_best_fit]


def test_sections_count_units_and_sections() -> None:
    # Alignment 256: a (300 bytes) takes 512, b 256, z (empty) is left out; unit = 256.
    # Starts {0, 2} and ends + 1 {4, 6} cut time at 0, 2, 4, 6: sections [0,1] [2,3] [4,5].
    # a (items 0-3) spans sections 0-1, b (items 2-5) sections 1-2: live = [2, 2+1, 1] units.
    intervals = [
        BufferInterval(0, 0, 3, 300),  # a
        BufferInterval(1, 2, 5, 256),  # b
        BufferInterval(2, 1, 1, 0),  # z
    ]
    sections = build_sections(intervals, 256)
    assert sections.unit == 256
    assert (sections.indices, sections.size) == ((0, 1), (2, 1))
    assert (sections.first, sections.last) == ((0, 1), (1, 2))
    assert (sections.live, sections.lower) == ((2, 3, 1), 3)


def test_tiling_hand_case() -> None:
    # Alignment 1, unit gcd(200, 100, 300) = 100 bytes, capacity 600 = 6 rows. Columns:
    # items 0-1 hold a (2 rows) + b (1) + c (3), items 2-5 hold a + d (2) + e (2): no slack.
    # Fewest choices: row 0 of column 1 (a, or one of the interchangeable d, e): a at 0.
    # Column 0 then has rows 2-5 for b and c: c has offsets {2, 3}, fewest; c at 2 leaves
    # row 5 to b (forced). Column 1 has rows 2-5 for d and e: d at 2, then e forced at 4.
    # In bytes: a [0,200) c [200,500) b [500,600); d [200,400) e [400,600).
    intervals = [
        BufferInterval(0, 0, 5, 200),  # a
        BufferInterval(1, 0, 1, 100),  # b
        BufferInterval(2, 0, 1, 300),  # c
        BufferInterval(3, 2, 5, 200),  # d
        BufferInterval(4, 2, 5, 200),  # e
    ]
    assert min(packer(intervals, 1).size for packer in PACKERS) == 700
    found = tiling.fit(intervals, 1, 600, max_nodes=100, deadline=time.perf_counter() + 60)
    assert found is not None
    assert dict(found.offsets) == {0: 0, 1: 500, 2: 200, 3: 200, 4: 400}
    assert (found.size, found.lower_bound, found.packer) == (600, 600, "tiling")


def test_tiling_declines_below_the_bound_and_without_tight_columns() -> None:
    # Live 512 + 256 at item 1: 700 bytes is below the lower bound (768).
    # At 1024 bytes neither column is full: no column without slack, so it does not search.
    intervals = [BufferInterval(0, 0, 1, 512), BufferInterval(1, 1, 2, 256)]
    options = {"max_nodes": 100, "deadline": time.perf_counter() + 60}
    assert tiling.fit(intervals, 256, 700, **options) is None
    assert tiling.fit(intervals, 256, 1024, **options) is None
    assert tiling.fit(intervals, 256, 768, **options) is not None


@pytest.mark.parametrize("seed", [0, 7, 14, 35])
def test_tiling_reaches_the_optimum_of_cut_rectangles(guillotine, seed: int) -> None:
    # In these cases a greedy packer misses the optimum (the lower bound).
    intervals = guillotine(seed, 30)
    bound = lower_bound(intervals, 256)
    assert min(packer(intervals, 256).size for packer in PACKERS) > bound
    found = tiling.fit(intervals, 256, bound, max_nodes=2000, deadline=time.perf_counter() + 60)
    assert found is not None
    check_placement(intervals, found, 256)
    assert found.size == bound


def _fits(intervals: list[BufferInterval], capacity: int) -> bool:
    """Brute force (alignment 1): some offsets, largest buffer first, fit in ``capacity``."""
    order = sorted(intervals, key=lambda interval: -interval.size)
    placed: list[tuple[BufferInterval, int]] = []

    def extend(i: int) -> bool:
        if i == len(order):
            return True
        a = order[i]
        for offset in range(capacity - a.size + 1):
            if all(
                b.end < a.start or a.end < b.start or o + b.size <= offset or offset + a.size <= o
                for b, o in placed
            ):
                placed.append((a, offset))
                if extend(i + 1):
                    return True
                placed.pop()
        return False

    return extend(0)


@st.composite
def small_problems(draw: st.DrawFn) -> list[BufferInterval]:
    count = draw(st.integers(1, 6))
    result = []
    for ident in range(count):
        start = draw(st.integers(0, 4))
        length = draw(st.integers(0, 3))
        result.append(BufferInterval(ident, start, start + length, draw(st.integers(1, 5))))
    return result


@settings(max_examples=60, deadline=None)
@given(small_problems(), st.integers(0, 2), st.integers(0, 3))
def test_tiling_is_complete_valid_and_deterministic(
    intervals: list[BufferInterval], extra: int, seed: int
) -> None:
    capacity = lower_bound(intervals, 1) + extra
    options = {"max_nodes": 10**6, "deadline": time.perf_counter() + 600, "seed": seed}
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(tiling, "MIN_TIGHT_SHARE", 0.0)  # search even with one full column
        found = tiling.fit(intervals, 1, capacity, **options)
        again = tiling.fit(intervals, 1, capacity, **options)
    if found is None:
        # The unit may be coarser than a byte: no capacity between its multiples helps.
        unit = build_sections(intervals, 1).unit
        assert not _fits(intervals, capacity // unit * unit)
    else:
        check_placement(intervals, found, 1)
        assert found.size <= capacity
    assert again == found


def test_pack_uses_the_tiling_search_alone(guillotine) -> None:
    # With no skyline, sweep or windows nodes, only the tiling search can beat the greedy
    # packers.
    intervals = guillotine(7, 30)
    bound = lower_bound(intervals, 256)
    result = pack(
        intervals,
        budget_ms=60_000,
        search_nodes=0,
        tiling_nodes=2000,
        sweep_nodes=0,
        windows_nodes=0,
        max_iterations=0,
    )
    check_placement(intervals, result.placement, 256)
    assert result.placement.packer == "tiling"
    assert result.packer_sizes["search"] == result.placement.size == bound
