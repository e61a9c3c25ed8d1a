"""Stitched sweeps: a start for window repacking where the exact sweeps run out.

On a problem full at every section at its lower bound (see ``sweep``), a sweep that ends
without a placement has still tiled the sections before the deepest boundary it reached, and a
sweep over the mirror image in time (``Sections.mirrored``) tiles the last sections the same
way (``fit`` races the two; at one unit above the bound, over the sections ``padded`` with a
one-unit gap each; given a ``relaxed`` capacity, with the two padded to it after them in
preference). When neither gets through, the two tilings disagree where they overlap and leave
a gap where they do not; this module joins them at one section ``m``:

- every buffer starting before ``m`` takes its offset in the forward tiling, every other
  buffer its offset in the backward tiling (where that tiling has one; gaps left out); the
  forward ones are placed first: they fit together, as the backward ones do among themselves;
- a buffer without an offset, or whose offset would overlap a buffer placed before it, is
  *displaced*: placed after all the others, by start then decreasing size, at the lowest
  offset free over its lifetime.

Every ``m`` from one depth to the other is tried and the lowest stitched arena kept (then the
fewest displaced units, then the earliest ``m``), for the pair of sweeps that got further
(forward and backward depths together): the pair at the capacity, or the pair at a relaxed
capacity when its sweeps got deeper. The stitched arena is usually above the
greedy packers' (the displaced buffers land on top), but it is full wherever a tiling is kept,
and window repacking (``windows``), which lowers a placement a few sections at a time, gets a
little further from it than from a placement with slack everywhere.

The sweeps one unit above the bound get ``RELAXED_WEIGHT`` times the nodes of those at it:
they place far more often within a small budget, a placement there hands the nodes it leaves
to the sweeps at the bound, and without one their deeper tilings are a better start for window
repacking. Where the pairs get equally far, the tilings at the bound are kept: window
repacking closes the gap a relaxed tiling leaves in each section less easily. Every sweep of
the race leaves out dominated splits (see ``sweep``). ``EXACT`` is the sweeps at a capacity
and one unit above it as an ``exact.ExactSearch``, the stitched placement its start for window
repacking.

Invariants: the stitched offsets are a valid placement (a buffer keeps its tiling's offset only
when it overlaps no buffer placed before it; a displaced one goes where it overlaps none); the
sections before both ``m`` and the forward depth keep the forward tiling, so they are full
(but for a gap); the result depends only on the problem, the node cap and the seed (as the
sweeps do).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from accy.passes.arena import race, sweep
from accy.passes.arena.exact import Attempt, ExactFit, ExactSearch
from accy.passes.arena.problem import BufferInterval, Placement
from accy.passes.arena.sections import Sections, build_sections

NAME = "stitch"
RELAXED_WEIGHT = 9
"""Nodes of a sweep one unit above the bound per node of one at the bound, racing (see
``fit``)."""


@dataclass(frozen=True)
class Stitched:
    """A stitched placement: ``forward`` sections tiled by the forward sweep (the first ones),
    ``backward`` by the backward one (the last ones), joined at section ``joined``."""

    placement: Placement
    forward: int
    backward: int
    joined: int


def _lowest_free(used: int, size: int) -> int:
    """The lowest offset of ``size`` free rows (clear bits) in the bitmask ``used``."""
    mask, offset = (1 << size) - 1, 0
    while used >> offset & mask:
        offset += 1
    return offset


def stitch_offsets(
    sections: Sections, forward: Mapping[int, int], backward: Mapping[int, int], joined: int
) -> tuple[list[int], int]:
    """Unit offsets by search index of the tilings joined at section ``joined`` (see the
    module doc), and the units of the displaced buffers."""
    size, first, last = sections.size, sections.first, sections.last
    used = [0] * len(sections.live)  # per section, a bitmask of its occupied rows
    offsets = [0] * sections.count

    def occupy(b: int, offset: int) -> None:
        offsets[b] = offset
        rows = ((1 << size[b]) - 1) << offset
        for t in range(first[b], last[b] + 1):
            used[t] |= rows

    displaced: list[int] = []
    before = [b for b in range(sections.count) if first[b] < joined]
    after = [b for b in range(sections.count) if first[b] >= joined]
    for tiling, buffers in ((forward, before), (backward, after)):
        for b in buffers:
            offset = tiling.get(b)
            if offset is None:
                displaced.append(b)
                continue
            rows = ((1 << size[b]) - 1) << offset
            if any(used[t] & rows for t in range(first[b], last[b] + 1)):
                displaced.append(b)
            else:
                occupy(b, offset)
    displaced.sort(key=lambda b: (first[b], -size[b], b))
    for b in displaced:
        taken = 0
        for t in range(first[b], last[b] + 1):
            taken |= used[t]
        occupy(b, _lowest_free(taken, size[b]))
    return offsets, sum(size[b] for b in displaced)


def _buffers(prefix: Mapping[int, int], sections: Sections) -> dict[int, int]:
    """The offsets of ``prefix`` (a padded sweep's) of the buffers, the gaps left out."""
    return {b: offset for b, offset in prefix.items() if b < sections.count}


def fit(
    intervals: Sequence[BufferInterval],
    alignment: int,
    capacity: int,
    *,
    max_nodes: int,
    deadline: float,
    seed: int = 0,
    relaxed: int | None = None,
    workers: int = 1,
) -> tuple[Placement | None, Stitched | None]:
    """A placement within ``capacity`` bytes from either sweep and no stitched one; else the
    placement within ``relaxed`` bytes, if any, and the stitched placement. ``(None, None)``
    when the sweep does not ``suits`` the capacity.

    The sweeps forward and backward (over the sections ``padded`` to the capacity) ``race``,
    sharing ``max_nodes`` and the time to ``deadline``. With a ``relaxed`` capacity (above
    ``capacity``) that the sweep suits, the sweeps padded to it race too, ranked after the
    others and with ``RELAXED_WEIGHT`` times their nodes: a placement within ``relaxed`` stops
    them, not the sweeps at ``capacity`` (which get the nodes it leaves), and is returned when
    those find none, with the stitching of those (window repacking gets to the capacity from it
    where it does not from the relaxed placement, whose gaps it closes less easily). Without
    any placement, the
    stitched one is the lowest stitching of the pair whose two sweeps got further, the pair at
    the capacity on a tie.
    ``workers`` processes run the sweeps (see ``race``; the result does not depend on it).
    """
    return _fit(
        build_sections(intervals, alignment),
        intervals,
        alignment,
        capacity,
        max_nodes=max_nodes,
        deadline=deadline,
        seed=seed,
        relaxed=relaxed,
        workers=workers,
    )


def _fit(
    sections: Sections,
    intervals: Sequence[BufferInterval],
    alignment: int,
    capacity: int,
    *,
    max_nodes: int,
    deadline: float,
    seed: int,
    relaxed: int | None,
    workers: int,
) -> tuple[Placement | None, Stitched | None]:
    """``fit`` over the ``sections`` of ``intervals``."""
    rows = capacity // sections.unit
    if not sweep.suits(sections, rows):
        return None, None
    padded = sections.padded(rows)
    problems, ranks, weights = [padded, padded.mirrored()], [0, 0], [1, 1]
    wide = rows if relaxed is None else relaxed // sections.unit
    if wide > rows and sweep.suits(sections, wide):
        wider = sections.padded(wide)
        problems += [wider, wider.mirrored()]
        ranks += [1, 1]
        weights += [RELAXED_WEIGHT, RELAXED_WEIGHT]
    results = race.race(
        problems,
        max_nodes=max_nodes,
        deadline=deadline,
        seed=seed,
        ranks=ranks,
        weights=weights,
        workers=workers,
    )
    placed = None
    for i, (problem, result) in enumerate(zip(problems, results)):  # the winner's, if any
        if result.offsets is not None:
            placed = problem.placement(intervals, result.offsets, alignment, sweep.NAME)
            if ranks[i] == 0:
                return placed, None
    # the pair whose sweeps got further (max keeps the first, at the capacity, on a tie); the
    # pair at the capacity after a placement within the relaxed capacity
    pairs = list(zip(results[::2], results[1::2]))
    ahead, back = max(
        pairs[:1] if placed else pairs, key=lambda pair: pair[0].depth + pair[1].depth
    )
    behind = len(sections.live) - back.depth  # the backward tiling covers sections behind.. on
    forward, backward = _buffers(ahead.prefix, sections), _buffers(back.prefix, sections)
    best: tuple[tuple[int, int, int], list[int]] | None = None
    for joined in range(min(ahead.depth, behind), max(ahead.depth, behind) + 1):
        offsets, displaced = stitch_offsets(sections, forward, backward, joined)
        top = max((o + s for o, s in zip(offsets, sections.size, strict=True)), default=0)
        key = (top, displaced, joined)
        if best is None or key < best[0]:
            best = key, offsets
    assert best is not None
    (_, _, joined), offsets = best
    placement = sections.placement(intervals, offsets, alignment, NAME)
    return placed, Stitched(placement, ahead.depth, back.depth, joined)


def _exact_fit(attempt: Attempt) -> ExactFit:
    """``fit`` as an ``ExactSearch``, relaxed one unit above the capacity: the placement
    within the capacity, else the one within the relaxed capacity, if any, with the stitched
    placement as the start for window repacking."""
    sections = build_sections(attempt.intervals, attempt.alignment)
    placed, stitched = _fit(
        sections,
        attempt.intervals,
        attempt.alignment,
        attempt.capacity,
        max_nodes=attempt.max_nodes,
        deadline=attempt.deadline,
        seed=attempt.seed,
        relaxed=attempt.capacity + sections.unit,
        workers=attempt.workers,
    )
    return ExactFit(placed, None if stitched is None else stitched.placement)


EXACT = ExactSearch(NAME, sweep.suits, _exact_fit)
"""The sweeps at one capacity and one unit above it, stitched where none places (``exact``)."""
