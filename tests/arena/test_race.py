"""Racing sweeps: the winner depends on node counts only, in one process or in several."""

from __future__ import annotations

import gc
import random
import time

import pytest
from accy.passes.arena import race
from accy.passes.arena.generated import churn as generated_churn
from accy.passes.arena.race import _Standings
from accy.passes.arena.sections import Sections, build_sections


def test_caps_split_the_nodes_and_a_placement_lowers_them() -> None:
    caps, waiting = [0, 0, 0, 0], [0, 0, 0, 0]
    standings = _Standings(10, [0, 0, 0, 1], caps, waiting)
    assert caps == [3, 3, 2, 2]  # 10 = 3 + 3 + 2 + 2: the first ones take the remainder
    assert waiting == [True, True, True, False]  # for the sweep of the later rank
    # Sweep 1 places after 2 nodes: sweep 0 (listed before) may still place within 2 nodes
    # (a cap of 3: a sweep stops on reaching its cap), sweep 2 (after) within 1; the later
    # rank stops.
    standings.place(1, 2)
    assert caps == [3, 3, 2, 0] and standings.winner() == 1
    standings.place(0, 2)  # as few nodes, listed first: it wins
    assert standings.winner() == 0


def test_weights_share_the_nodes_out() -> None:
    caps, waiting = [0, 0, 0, 0], [0, 0, 0, 0]
    _Standings(200, [0, 0, 1, 1], caps, waiting, [1, 1, 9, 9])
    assert caps == [10, 10, 90, 90]  # 200 * 1 // 20 and 200 * 9 // 20
    _Standings(10, [0, 0, 1, 1], caps, waiting, [1, 1, 9, 9])
    # 10 * 1 // 20 = 0 and 10 * 9 // 20 = 4 leave 2 nodes: the first two take one each.
    assert caps == [1, 1, 4, 4]


def test_a_race_needs_a_positive_weight_per_problem(no_tiling) -> None:
    problems = [build_sections(no_tiling, 256).padded(7)] * 2
    for weights in ([1], [1, 0]):
        with pytest.raises(ValueError, match="one rank and one positive weight per problem"):
            race.race(problems, max_nodes=10, deadline=time.perf_counter() + 60, weights=weights)


def test_an_earlier_rank_wins_whatever_its_nodes() -> None:
    caps, waiting = [0, 0], [0, 0]
    standings = _Standings(100, [1, 0], caps, waiting)
    standings.place(0, 3)
    assert caps == [50, 50]  # the earlier rank keeps its cap
    standings.place(1, 40)
    assert standings.winner() == 1


def test_a_later_rank_that_placed_hands_its_nodes_down() -> None:
    caps, waiting = [0, 0, 0, 0], [0, 0, 0, 0]
    standings = _Standings(400, [0, 0, 1, 1], caps, waiting)
    assert caps == [100] * 4 and waiting == [True, True, False, False]
    # Sweep 3 places after 30 nodes; sweep 2, listed before it, may still win within 30.
    standings.ended(3, 30)
    assert caps == [100, 100, 31, 100] and waiting == [True, True, False, False]
    standings.ended(2, None)  # it did not
    # The rank's 200 nodes less what it could use once sweep 3 placed (30 nodes, and a cap of
    # 31 for sweep 2) leave 139: 70 + 69 to the earlier rank, which waits no longer.
    assert caps == [170, 169, 31, 100] and waiting == [False, False, False, False]
    assert standings.winner() == 3


def test_nothing_is_handed_down_without_a_placement_or_after_an_earlier_one() -> None:
    caps, waiting = [0, 0, 0], [0, 0, 0]
    standings = _Standings(300, [0, 1, 1], caps, waiting)
    standings.ended(1, None)
    standings.ended(2, None)
    assert caps == [100, 100, 100] and not waiting[0]
    caps, waiting = [0, 0, 0], [0, 0, 0]
    standings = _Standings(300, [0, 1, 1], caps, waiting)
    standings.place(0, 5)  # the earlier rank placed: the later one stops
    standings.ended(1, 7)
    standings.ended(2, None)
    assert caps[0] == 100 and standings.winner() == 0


def test_only_the_winner_has_offsets(no_tiling) -> None:
    sections = build_sections(no_tiling, 256)
    problems = [sections.padded(6), sections.padded(7), sections.padded(7).mirrored()]
    results = race.race(problems, max_nodes=10_000, deadline=time.perf_counter() + 60)
    # No placement at 6 units (every split failed: proved); one of the two at 7 wins.
    placed = [result.offsets is not None for result in results]
    assert placed[0] is False and placed.count(True) == 1
    assert results[0].depth < len(sections.live)


def test_a_placement_at_a_later_rank_does_not_stop_an_earlier_one(churn) -> None:
    sections = build_sections(churn(4, items=12, height=16), 256)
    lower = sections.lower
    problems = [sections.padded(lower + 1), sections.padded(lower)]
    deadline = time.perf_counter() + 60
    alone = race.race(problems[1:], max_nodes=5_000, deadline=deadline)
    assert alone[0].offsets is not None
    # With the gap's room the sweep one unit above places first; ranked after the sweep at the
    # bound, it does not stop that one, which wins with the placement it finds alone.
    ranked = race.race(problems, max_nodes=10_000, deadline=deadline, ranks=[1, 0])
    assert ranked[0].offsets is None and ranked[1].offsets == alone[0].offsets


def test_nodes_handed_down_let_a_sweep_at_the_bound_win_in_any_number_of_workers() -> None:
    # Alone, the sweeps of this churn set place after 71 and 215 nodes at the bound (forward,
    # backward) and 38 and 68 one unit above it. With 240 nodes each gets a cap of 60: the
    # forward sweep above the bound places after 38 and the backward one there may go on to
    # 38 only (cap 38), so that rank leaves 120 - 76 = 44 nodes, 22 more for each sweep at the
    # bound, where the forward one places after 71 (< 82) and wins.
    intervals = generated_churn(random.Random(1), items=40, height=32, max_width=8)
    sections = build_sections(intervals, 256)
    lower = sections.lower
    wide = sections.padded(lower + 1)
    problems = [sections.padded(lower), sections.padded(lower).mirrored(), wide, wide.mirrored()]
    placed = []
    for workers in (1, 2, 4):
        results = race.race(
            problems,
            max_nodes=240,
            deadline=time.perf_counter() + 120,
            ranks=[0, 0, 1, 1],
            workers=workers,
        )
        assert [result.offsets is not None for result in results] == [True, False, False, False]
        placed.append(results[0].offsets)
    assert placed[0] == placed[1] == placed[2]


def _outcomes(problems: list[Sections], max_nodes: int, workers: int) -> list:
    """Each sweep's offsets, depth and tiling when none placed; else the winner's offsets
    (the other sweeps stopped where timing left them)."""
    results = race.race(
        problems,
        max_nodes=max_nodes,
        deadline=time.perf_counter() + 120,
        ranks=[0, 0, 1, 1],
        workers=workers,
    )
    placed = [result.offsets for result in results if result.offsets is not None]
    if placed:
        return placed
    return [(result.offsets, result.depth, result.prefix) for result in results]


@pytest.mark.parametrize("max_nodes", [60, 4_000])
def test_the_results_do_not_depend_on_the_workers(churn, max_nodes) -> None:
    sections = build_sections(churn(11, items=40, height=24), 256)
    lower = sections.lower
    wide = sections.padded(lower + 1)
    problems = [sections.padded(lower), sections.padded(lower).mirrored(), wide, wide.mirrored()]
    alone = _outcomes(problems, max_nodes, workers=1)
    # 60 nodes place nothing, so every sweep runs to its cap and reports its deepest tiling;
    # with 4000 one places.
    assert (len(alone) == 1) == (max_nodes > 60)
    assert _outcomes(problems, max_nodes, workers=2) == alone
    assert _outcomes(problems, max_nodes, workers=3) == alone


def test_a_failing_worker_is_reported() -> None:
    broken = Sections(1, (0,), (1,), (), (), (0,), (1,))  # no first or last section
    with pytest.raises(RuntimeError, match="a worker failed"):
        race.race([broken, broken], max_nodes=10, deadline=time.perf_counter() + 60, workers=2)


def test_available_workers_is_between_one_and_the_maximum() -> None:
    assert 1 <= race.available_workers() <= race.MAX_WORKERS


def test_the_sweeps_make_no_reference_cycles(churn) -> None:
    # The race turns the cyclic collector off while its sweeps run: what they drop must be
    # freed by reference counting alone (a recursive closure, say, would not be).
    sections = build_sections(churn(11, items=40, height=24), 256)
    lower = sections.lower
    problems = [sections.padded(lower), sections.padded(lower + 1).mirrored()]
    gc.collect()
    enabled = gc.isenabled()
    gc.disable()
    try:
        race.race(problems, max_nodes=400, deadline=time.perf_counter() + 120, ranks=[0, 1])
        assert gc.collect() == 0
    finally:
        if enabled:
            gc.enable()
    assert gc.isenabled() == enabled  # the race left the collector as it found it
