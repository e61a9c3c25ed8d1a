"""Racing sweeps: the winner depends on node counts only, in one process or in several."""

from __future__ import annotations

import time

import pytest
from accy.passes.arena import race
from accy.passes.arena.race import _Standings
from accy.passes.arena.sections import Sections, build_sections


def test_caps_split_the_nodes_and_a_placement_lowers_them() -> None:
    caps = [0, 0, 0, 0]
    standings = _Standings(10, [0, 0, 0, 1], caps)
    assert caps == [3, 3, 2, 2]  # 10 = 3 + 3 + 2 + 2: the first ones take the remainder
    # Sweep 1 places after 2 nodes: sweep 0 (listed before) may still place within 2 nodes
    # (a cap of 3: a sweep stops on reaching its cap), sweep 2 (after) within 1; the later
    # rank stops.
    standings.place(1, 2)
    assert caps == [3, 3, 2, 0] and standings.winner() == 1
    standings.place(0, 2)  # as few nodes, listed first: it wins
    assert standings.winner() == 0


def test_an_earlier_rank_wins_whatever_its_nodes() -> None:
    caps = [0, 0]
    standings = _Standings(100, [1, 0], caps)
    standings.place(0, 3)
    assert caps == [50, 50]  # the earlier rank keeps its cap
    standings.place(1, 40)
    assert standings.winner() == 1


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


def _outcomes(problems: list[Sections], max_nodes: int, workers: int) -> list:
    """Each sweep's offsets, depth and tiling when none placed; else the winner's offsets
    (the other sweeps stopped where timing left them)."""
    results = race.race(
        problems,
        max_nodes=max_nodes,
        deadline=time.perf_counter() + 120,
        ranks=[0, 0, 1, 1],
        dominance=[True, False, True, False],
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
