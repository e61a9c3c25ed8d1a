"""Window repacking: lowering a placement above the bound, one section at a time."""

from __future__ import annotations

import time

import hypothesis.strategies as st
from accy.passes.arena import (
    BufferInterval,
    check_placement,
    lower_bound,
    pack,
    pack_best_fit,
    tiling,
    windows,
)
from accy.passes.arena.problem import make_placement
from accy.passes.arena.sections import Sections, build_sections
from hypothesis import given, settings

LATER = 60.0  # seconds: a deadline the node caps always come first to


def _lower(intervals, placement, max_nodes=5000, seed=0):
    deadline = time.perf_counter() + LATER
    return windows.lower(
        intervals, 256, placement, max_nodes=max_nodes, deadline=deadline, seed=seed
    )


def test_hand_case_a_window_lowers_the_top_section_to_the_bound() -> None:
    # Units of 256 bytes. Section 0 holds a (2 units) and b (2); section 1 holds a and c (2):
    # 4 units live in each, so the bound is 4 * 256 = 1024.
    # Start: a at 0, b at 2 units (512), c at 4 units (1024): section 1 reaches 6 units.
    # Aim 5 units: the window holds both sections (c's lifetime and 4 sections of width),
    # all three buffers are free, section 1's limit is 5 units and section 0's max(5, 4) = 5.
    # The tiling search puts c beside a, at 0 or 2 units: section 1 reaches 4 units, and the
    # next aim (3 units) is below the bound, so the search stops at 1024 bytes.
    intervals = [
        BufferInterval(0, 0, 1, 512),  # a
        BufferInterval(1, 0, 0, 512),  # b
        BufferInterval(2, 1, 1, 512),  # c
    ]
    start = make_placement(intervals, {0: 0, 1: 512, 2: 1024}, 256, "hand")
    assert (start.size, start.lower_bound) == (1536, 1024)
    lowered = _lower(intervals, start)
    assert lowered is not None and lowered.packer == "windows"
    check_placement(intervals, lowered, 256)
    assert lowered.size == 1024
    a, b, c = (lowered.offsets[i] for i in range(3))
    assert {a, b} == {0, 512} and {a, c} == {0, 512}


def test_a_move_keeps_crossing_buffers_and_never_raises_a_section() -> None:
    # Sections 0..2 (items 0..2), units of 256 bytes. The long buffer l (1 unit) lives in
    # all three; s0, s1, s2 (1 unit each) in one section each; x (1 unit) in section 2.
    # Start: l at 1 unit, s0 at 0, s1 at 2 units, s2 at 0, x at 2 units: tops 2, 3, 3.
    # A move on section 1 with the window 1..1 and aim 2: l crosses the window and stays at
    # 1 unit; s1 is free and goes to 0 (the only offset below 2 beside l); section 2 is
    # outside the window and keeps its top of 3.
    intervals = [
        BufferInterval(0, 0, 2, 256),  # l
        BufferInterval(1, 0, 0, 256),  # s0
        BufferInterval(2, 1, 1, 256),  # s1
        BufferInterval(3, 2, 2, 256),  # s2
        BufferInterval(4, 2, 2, 256),  # x
    ]
    offsets = {0: 256, 1: 0, 2: 512, 3: 0, 4: 512}
    sections = build_sections(intervals, 256)
    search = windows._Windows(sections, [offsets[intervals[i].id] // 256 for i in sections.indices])
    assert search.top == [2, 3, 3]
    moved, _ = search.move(1, 1, 1, 2, nodes=100, deadline=time.perf_counter() + LATER, seed=0)
    assert moved
    assert search.offsets == [1, 0, 0, 0, 2]  # by search index: l, s0, s1, s2, x
    assert search.top == [2, 2, 3]


def test_a_placement_at_the_bound_is_left_alone(guillotine) -> None:
    intervals = guillotine(3, 20)
    result = pack(intervals, budget_ms=60_000, max_iterations=0, search_nodes=2000)
    assert result.placement.size == result.placement.lower_bound
    assert _lower(intervals, result.placement) is None


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10**6), st.integers(4, 14))
def test_lowered_placements_are_valid_smaller_and_repeatable(churn, seed: int, items: int) -> None:
    intervals = churn(seed, items=items, height=16)
    start = pack_best_fit(intervals, 256)
    lowered = _lower(intervals, start, max_nodes=1500, seed=seed)
    if lowered is None:
        return
    check_placement(intervals, lowered, 256)
    assert lower_bound(intervals, 256) <= lowered.size < start.size
    again = _lower(intervals, start, max_nodes=1500, seed=seed)
    assert again is not None and again.offsets == lowered.offsets


def test_windows_lower_a_churn_set_where_the_greedy_packers_stop(churn) -> None:
    # 24 items of a 16-unit arena re-cut where buffers end: best fit ends above the bound and
    # the window search (alone: no other search has nodes) brings it down.
    intervals = churn(5, items=24, height=16)
    result = pack(
        intervals,
        budget_ms=60_000,
        max_iterations=0,
        search_nodes=0,
        tiling_nodes=0,
        sweep_nodes=0,
        windows_nodes=5000,
    )
    check_placement(intervals, result.placement, 256)
    sizes = result.packer_sizes
    assert sizes["windows"] == result.placement.size < sizes["search"]
    assert result.placement.packer == "windows"


def test_tiling_keeps_each_buffer_within_its_domain() -> None:
    # One section of 4 rows holding a and b, 2 rows each (search indices 0 and 1). With a's
    # domain only offset 2 (bit 2), b must take rows 0..1; with only offset 1, a leaves rows
    # 0 and 3, neither enough for b.
    sections = Sections(1, (0, 1), (2, 2), (0, 0), (0, 0), (0, 1), (4,))
    options = {"max_nodes": 100, "deadline": time.perf_counter() + LATER, "seed": 0}
    found, used = tiling.fit_sections(sections, 4, domains={0: 1 << 2}, **options)
    assert found == [2, 0] and used >= 1
    refused, _ = tiling.fit_sections(sections, 4, domains={0: 1 << 1}, **options)
    assert refused is None
