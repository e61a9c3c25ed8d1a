"""Stitched sweeps: the forward and backward sweeps' tilings joined into a start for windows."""

from __future__ import annotations

import time

import hypothesis.strategies as st
from accy.passes.arena import BufferInterval, check_placement, lower_bound, stitch, sweep
from accy.passes.arena.sections import build_sections
from hypothesis import given, settings


def _fit(
    intervals: list[BufferInterval],
    max_nodes: int,
    capacity: int | None = None,
    relaxed: int | None = None,
):
    capacity = lower_bound(intervals, 256) if capacity is None else capacity
    return stitch.fit(
        intervals,
        256,
        capacity,
        relaxed=relaxed,
        max_nodes=max_nodes,
        deadline=time.perf_counter() + 60,
    )


def test_mirrored_sections_run_backwards_and_mirror_back() -> None:
    intervals = [
        BufferInterval(0, 0, 1, 256),
        BufferInterval(1, 0, 0, 512),
        BufferInterval(2, 1, 2, 768),
    ]
    sections = build_sections(intervals, 256)
    mirror = sections.mirrored()
    # Three sections (items 0, 1, 2): buffer 0 lives in 0..1, so in the mirror 1..2.
    assert (mirror.first, mirror.last) == ((1, 2, 0), (2, 2, 1))
    assert mirror.live == sections.live[::-1] and mirror.size == sections.size
    assert mirror.mirrored() == sections


def test_stitching_keeps_the_forward_tiling_first_and_displaces_what_collides() -> None:
    # Units of 512 bytes (the sizes' common divisor), 2 rows, two sections. a lives in both,
    # b in section 0, c in section 1. The forward tiling covers section 0 with a at row 0 and
    # b at row 1; the backward one covers section 1 with c at row 0 and a at row 1.
    intervals = [
        BufferInterval(0, 0, 1, 512),  # a
        BufferInterval(1, 0, 0, 512),  # b
        BufferInterval(2, 1, 1, 512),  # c
    ]
    sections = build_sections(intervals, 256)
    assert sections.unit == 512
    a, b, c = 0, 1, 2
    forward, backward = {a: 0, b: 1}, {c: 0, a: 1}
    # Joined at section 1: a and b start before it, so a = 0 and b = 1 (forward); c starts
    # there and takes its backward row 0, but a holds row 0 in section 1: c is displaced (1
    # unit) to the lowest row free there, 1.
    assert stitch.stitch_offsets(sections, forward, backward, 1) == ([0, 1, 1], 1)
    # Joined at section 0: everything takes the backward tiling; a = 1, c = 0, and b has no
    # backward row (it ends before section 1), so it is displaced to section 0's free row 0.
    assert stitch.stitch_offsets(sections, forward, backward, 0) == ([1, 0, 0], 1)


def test_a_sweep_that_gets_through_places_at_the_lower_bound(churn) -> None:
    intervals = churn(3, items=12, height=16)
    found, stitched = _fit(intervals, 100_000)
    assert stitched is None and found is not None and found.packer == sweep.NAME
    check_placement(intervals, found, 256)
    assert found.size == lower_bound(intervals, 256)


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10**6), st.integers(2, 8))
def test_cut_off_sweeps_stitch_a_valid_placement_full_before_the_join(
    churn, seed: int, nodes: int
) -> None:
    # Every boundary takes a node, so a few nodes cannot get either sweep through 30 items.
    intervals = churn(seed, items=30, height=32)
    found, stitched = _fit(intervals, nodes)
    assert found is None and stitched is not None
    placement = stitched.placement
    assert placement.packer == stitch.NAME
    check_placement(intervals, placement, 256)
    sections = build_sections(intervals, 256)
    columns = len(sections.live)
    assert 1 <= stitched.forward < columns and 1 <= stitched.backward < columns
    ends = sorted((stitched.forward, columns - stitched.backward))
    assert ends[0] <= stitched.joined <= ends[1]
    # The sections before both the join and the forward depth keep the forward tiling.
    offsets = [placement.offsets[intervals[i].id] // 256 for i in sections.indices]
    for t in range(min(stitched.joined, stitched.forward)):
        live = [b for b in range(sections.count) if sections.first[b] <= t <= sections.last[b]]
        assert max(offsets[b] + sections.size[b] for b in live) == sections.lower


def test_problems_with_slack_are_not_stitched() -> None:
    # Section 1 holds 1 unit of 2: padded with a gap, the sweeps place it.
    intervals = [BufferInterval(0, 0, 1, 256), BufferInterval(1, 0, 0, 256)]
    found, stitched = _fit(intervals, 100)
    assert found is not None and found.size == 512 and stitched is None
    # At 4 units every section is two or more short: left to the other searches.
    assert _fit(intervals, 100, 1024) == (None, None)


def test_sweeps_one_unit_above_the_bound_place_what_it_cannot(no_tiling) -> None:
    # Full at 6 units, no placement there, one at 7 (see the fixture).
    found, stitched = _fit(no_tiling, 10_000)
    assert found is None and stitched is not None  # at the bound: none
    check_placement(no_tiling, stitched.placement, 256)
    found, stitched = _fit(no_tiling, 10_000, 7 * 256)  # padded with a one-unit gap
    assert found is not None and found.size == 7 * 256 and stitched is None
    check_placement(no_tiling, found, 256)


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10**6), st.integers(2, 8))
def test_padded_sweeps_stitch_without_their_gaps(churn, seed: int, nodes: int) -> None:
    # One unit above the bound every section is one unit short: the sweeps run padded, and
    # the stitched placement is of the buffers alone (no gap takes rows; all are placed).
    intervals = churn(seed, items=30, height=32)
    found, stitched = _fit(intervals, nodes, lower_bound(intervals, 256) + 256)
    assert found is None and stitched is not None
    check_placement(intervals, stitched.placement, 256)
    assert set(stitched.placement.offsets) == {interval.id for interval in intervals}


def test_a_relaxed_capacity_is_placed_when_the_capacity_is_not(no_tiling) -> None:
    # No placement at the lower bound, 6 units (the test above), and one at 7: it comes with
    # the stitched tilings of the sweeps at 6 units (window repacking starts from those, full
    # where kept; the placement is the best so far).
    capacity = 6 * 256
    found, stitched = _fit(no_tiling, 10_000, capacity, relaxed=capacity + 256)
    assert found is not None and found.size == capacity + 256
    assert stitched is not None and stitched.placement.packer == stitch.NAME
    check_placement(no_tiling, found, 256)
    check_placement(no_tiling, stitched.placement, 256)


def test_the_relaxed_pair_is_stitched_when_its_sweeps_get_further(churn) -> None:
    intervals = churn(0, items=30, height=32)  # full at 32 units
    capacity = lower_bound(intervals, 256)
    # 40 nodes, weights 1, 1, 9, 9: the sweeps at the capacity get 40 * 1 // 20 = 2 nodes each,
    # the relaxed ones 40 * 9 // 20 = 18; none places.
    found, stitched = _fit(intervals, 40, capacity, relaxed=capacity + 256)
    assert found is None and stitched is not None
    check_placement(intervals, stitched.placement, 256)
    # The pair at the capacity alone (2 nodes each) reaches boundary 2 both ways and stitches
    # 38 units; the relaxed pair reached 17 both ways (further: its stitching is kept) and
    # stitches 37.
    alone = _fit(intervals, 4)[1]
    assert alone is not None and (alone.forward, alone.backward) == (2, 2)
    assert alone.placement.size == 38 * 256
    assert (stitched.forward, stitched.backward) == (17, 17)
    assert stitched.placement.size == 37 * 256
