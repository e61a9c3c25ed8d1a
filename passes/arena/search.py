"""Branch-and-bound over skyline placements, in the spirit of MiniMalloc and TelaMalloc.

Time is cut into *sections*: the stretches between consecutive buffer starts and ends, within
which the set of live buffers does not change. The search fixes an arena capacity ``C`` and
fills the arena from the bottom up. Its state is a *floor* per section (nothing unplaced may go
below it there) and the unplaced buffers. At each node it takes the lowest floor, leftmost on
ties, and its *segment* (the maximal run of neighbouring sections at that floor, at height
``h``). A buffer can sit at ``h`` only if its whole lifetime lies inside the segment. The
branches are:

- for each such buffer ``b``, ``b`` is the leftmost buffer at ``h`` in the segment: ``b`` goes
  to ``h`` and the sections of the segment left of ``b`` are raised to the lower of their two
  neighbouring floors (the old left neighbour and ``h + size(b)``);
- no buffer sits at ``h`` in the segment: the segment is raised to the lower of its two
  neighbouring floors (the capacity beyond the first or last section).

Completeness: take any placement consistent with the state and let every unplaced buffer fall
as low as the floors allow (gravity). A fallen buffer rests on a floor or on the top of another
unplaced buffer it meets in time; following those supports down from a buffer live in a run of
sections where nothing sits at ``h`` ends at a buffer reaching outside the run, which sits at
or above one of the run's neighbouring floors. So raising the run to the lower neighbour loses
no placement, and the branches above cover every gravity placement. Placements made this way
are valid by construction: a buffer goes to a height equal to the floor of every section of its
lifetime, and every floor is at or above the top of every placed buffer live there.

Pruning: raising a floor wastes address space in that section. ``slack[t]`` is the capacity
minus the floor minus the bytes of unplaced buffers live in section ``t``; placing a buffer
leaves it unchanged and a raise spends it, so a branch whose raise exceeds the slack of some
section it raises is cut (the live bytes there could no longer fit). Symmetry: buffers with the
same lifetime and size are interchangeable, so only the first unplaced one of each such class
is branched on.

Decomposition: a section boundary that no buffer crosses cuts the problem into *parts* that
share no buffer and no section; a capacity is tried a part at a time (each with the nodes
the parts before it left), and a part without a placement ends the attempt. Searched whole,
a part's failure would be retried under every choice made in the parts before it.

``fit`` tries one capacity. ``search`` bisects the capacities between the lowest one asked
for (by default the lower bound, tried first with its own share of a node budget) and an
incumbent size; the first success is the smallest the search can reach. Each capacity is tried
with restarts, alternately on the problem and on its mirror image in time (see ``_attempt``).
The node budget is the deterministic limit; a wall-clock deadline is a safety stop. Sections
and units come from ``sections``. ``EXACT`` is ``fit`` as an ``exact.ExactSearch``.

Invariants: a placement returned is valid and within the capacity tried (``search``: below the
incumbent); for the same problem, capacities, node cap and seed the result is the same.
"""

from __future__ import annotations

import random
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Final

from accy.passes.arena.exact import one_process
from accy.passes.arena.problem import BufferInterval, Placement
from accy.passes.arena.restarts import luby
from accy.passes.arena.sections import Sections, build_sections

NAME = "search"
NODES_PER_MS = 50
"""Search nodes granted per millisecond of budget (well under a slow machine's rate, so the
node cap, not the clock, ends a search and the result stays reproducible)."""

RESTART_UNIT = 2
FIRST_SHARE = 0.25
_DEADLINE_CHECK: Final = 127  # the clock is read every 128 nodes (Final: a constant)


@dataclass
class _Problem:
    """The sections of a search, ``buckets[s]``, the buffers starting in section ``s`` in
    branching order (shuffled between restarts), the independent *parts* of the problem (see
    ``_parts``), each with the search indices of its buffers (none when it is one), and its
    mirror image in time (same search indices, so its offsets place the problem too)."""

    sections: Sections
    buckets: list[list[int]]
    parts: list[tuple[list[int], _Problem]] = field(default_factory=list)
    mirror: _Problem | None = None  # the same buffers with time running backwards


def _problem(sections: Sections, *, with_mirror: bool = True) -> _Problem:
    """The search problem of ``sections`` and, with ``with_mirror``, of their mirror image in
    time (a placement of either is one of the other: buffers meet in both or in neither)."""
    first, last, size = sections.first, sections.last, sections.size
    buckets: list[list[int]] = [[] for _ in sections.live]
    # Branching order: longer lifetimes, then larger buffers, then input (id) order.
    for b in sorted(range(sections.count), key=lambda b: (-last[b], -size[b], b)):
        buckets[first[b]].append(b)
    problem = _Problem(sections, buckets)
    if with_mirror:
        problem.mirror = _problem(sections.mirrored(), with_mirror=False)
    return problem


def _parts(sections: Sections) -> list[tuple[list[int], _Problem]]:
    """The problem cut at every section boundary that no buffer crosses: the parts share no
    buffer and no section, so each fits a capacity on its own or the whole does not (a search
    over the whole would retry one part's choices for another part's failures)."""
    crossing = [0] * (len(sections.live) + 1)  # difference array of the buffers crossing t
    for b in range(sections.count):
        crossing[sections.first[b] + 1] += 1
        crossing[sections.last[b] + 1] -= 1
    part_of, part, running = [0] * len(sections.live), 0, 0
    for t in range(len(sections.live)):
        running += crossing[t]
        if t and not running:
            part += 1
        part_of[t] = part
    if not part:
        return []
    members: list[list[int]] = [[] for _ in range(part + 1)]
    for b in range(sections.count):
        members[part_of[sections.first[b]]].append(b)
    parts = []
    for indices in members:
        if not indices:
            continue
        low = min(sections.first[b] for b in indices)
        high = max(sections.last[b] for b in indices)
        piece = Sections(
            sections.unit,
            tuple(sections.indices[b] for b in indices),
            tuple(sections.size[b] for b in indices),
            tuple(sections.first[b] - low for b in indices),
            tuple(sections.last[b] - low for b in indices),
            tuple(sections.kind[b] for b in indices),
            sections.live[low : high + 1],
        )
        parts.append((indices, _problem(piece)))
    return parts


def _build(intervals: Sequence[BufferInterval], alignment: int) -> _Problem:
    sections = build_sections(intervals, alignment)
    parts = _parts(sections)
    problem = _problem(sections, with_mirror=not parts)  # parts have their own mirrors
    problem.parts = parts
    return problem


def _solve(
    problem: _Problem, capacity: int, node_limit: int, deadline: float
) -> tuple[list[int] | None, int]:
    """Offsets (in units, by search index) fitting in ``capacity`` units, and nodes used.

    ``None`` when the search proves there is none or runs out of nodes or time.
    """
    size, first, last, kind = (
        problem.sections.size,
        problem.sections.first,
        problem.sections.last,
        problem.sections.kind,
    )
    buckets = problem.buckets
    count = len(size)
    sections = len(problem.sections.live)
    remaining = list(problem.sections.live)
    if any(units > capacity for units in remaining):
        return None, 0
    # A section with nothing left to place is closed: its floor is the capacity.
    floors = [0 if units else capacity for units in remaining]
    slack = [capacity - units if units else 0 for units in remaining]
    placed = [False] * count
    offsets = [0] * count
    starts = [0] * sections  # unplaced buffers starting, and ending, in each section
    ends = [0] * sections
    for b in range(count):
        starts[first[b]] += 1
        ends[last[b]] += 1
    # Frames: [choices, next choice, saved (low, floors, slack, remaining) or None, buffer]
    stack: list[list] = []
    nodes = 0
    fresh = True
    while True:
        if fresh:
            nodes += 1
            if nodes > node_limit or (
                not nodes & _DEADLINE_CHECK and time.perf_counter() > deadline
            ):
                return None, nodes
            h = min(floors, default=capacity)
            if h >= capacity:
                return offsets, nodes
            low = floors.index(h)
            high = low
            while high + 1 < sections and floors[high + 1] == h:
                high += 1
            left = floors[low - 1] if low else capacity
            right = floors[high + 1] if high + 1 < sections else capacity
            choices: list[tuple[int, int, int]] = []  # (buffer or -1, first raised, level)
            room = capacity  # least slack over the sections left of the current start
            for s in range(low, high + 1):
                if s > low:
                    room = min(room, slack[s - 1])
                    if room <= 0:
                        break
                seen = set()
                for b in buckets[s]:
                    if placed[b] or last[b] > high or kind[b] in seen:
                        continue
                    seen.add(kind[b])
                    level = min(left, h + size[b])
                    if s > low and level - h > room:
                        continue
                    choices.append((b, s, level))
            level = min(left, right)
            if level - h <= min(slack[low : high + 1]):
                choices.append((-1, high + 1, level))
            stack.append([choices, 0, None, -1])
            fresh = False
        frame = stack[-1]
        saved = frame[2]
        if saved is not None:  # undo the choice tried last
            lo, old_floors, old_slack, old_remaining = saved
            hi = lo + len(old_floors)
            floors[lo:hi] = old_floors
            slack[lo:hi] = old_slack
            remaining[lo:hi] = old_remaining
            if frame[3] >= 0:
                placed[frame[3]] = False
                starts[first[frame[3]]] += 1
                ends[last[frame[3]]] += 1
            frame[2] = None
        choices, index = frame[0], frame[1]
        if index == len(choices):
            stack.pop()
            if not stack:
                return None, nodes
            continue
        frame[1] = index + 1
        b, raised_end, level = choices[index]
        # Recover the node's segment from the floors: the lowest, leftmost run.
        h = min(floors)
        low = floors.index(h)
        if b < 0:
            hi = raised_end
            frame[2] = (low, floors[low:hi], slack[low:hi], remaining[low:hi])
            frame[3] = -1
            waste = level - h
            for t in range(low, hi):
                floors[t] = level
                slack[t] -= waste
        else:
            s, e = first[b], last[b] + 1
            frame[2] = (low, floors[low:e], slack[low:e], remaining[low:e])
            frame[3] = b
            waste = level - h
            for t in range(low, s):
                floors[t] = level
                slack[t] -= waste
            units = size[b]
            top = h + units
            for t in range(s, e):
                left_units = remaining[t] - units
                remaining[t] = left_units
                if left_units:
                    floors[t] = top
                else:
                    floors[t] = capacity
                    slack[t] = 0
            placed[b] = True
            offsets[b] = h
            starts[s] -= 1
            ends[e - 1] -= 1
            hi = e
        # A step in the floors whose lower side has no slack needs an unplaced buffer
        # starting (or ending) right at the step, at the lower floor.
        fresh = True
        for t in range(max(low, 1), min(hi + 1, sections)):
            a, c = floors[t - 1], floors[t]
            if (c < a and not slack[t] and not starts[t]) or (
                a < c and not slack[t - 1] and not ends[t - 1]
            ):
                fresh = False
                nodes += 1
                break


def _attempt(
    problem: _Problem, capacity: int, node_limit: int, deadline: float, seed: int
) -> tuple[list[int] | None, int]:
    """Restarted searches at one capacity, alternately over the problem and its mirror image
    in time (the skyline fills from the left, and which end suits a problem varies: one
    direction fitted some of MiniMalloc's benchmark problems ten times faster than the other,
    either way round); per direction the first search takes the fixed branching order and the
    others shuffle each start's candidates (seeded), node limits following the Luby sequence.
    A problem in independent parts is searched a part at a time, each with the nodes left."""
    if problem.parts:
        offsets = [0] * problem.sections.count
        used = 0
        for indices, part in problem.parts:
            found, nodes = _attempt(part, capacity, node_limit - used, deadline, seed)
            used += nodes
            if found is None:
                return None, used
            for b, offset in zip(indices, found):
                offsets[b] = offset
        return offsets, used
    directions = [problem] if problem.mirror is None else [problem, problem.mirror]
    bases = [direction.buckets for direction in directions]
    rngs = [random.Random(seed) for _ in directions]  # a stream per direction
    unit = RESTART_UNIT * max(problem.sections.count, 1)
    used = 0
    restart = 0
    try:
        while used < node_limit and time.perf_counter() <= deadline:
            run, turn = divmod(restart, len(directions))
            restart += 1
            direction, base = directions[turn], bases[turn]
            limit = min(unit * luby(run + 1), node_limit - used)
            if run:
                rng = rngs[turn]
                direction.buckets = [rng.sample(bucket, len(bucket)) for bucket in base]
            found, nodes = _solve(direction, capacity, limit, deadline)
            used += nodes
            if found is not None:
                return found, used
            if nodes < limit:  # proved infeasible
                return None, used
    finally:
        for direction, base in zip(directions, bases):
            direction.buckets = base
    return None, used


def suits(sections: Sections, rows: int) -> bool:
    """Whether the search applies at ``rows`` units: at or above the lower bound."""
    return rows >= sections.lower


def fit(
    intervals: Sequence[BufferInterval],
    alignment: int,
    capacity: int,
    *,
    max_nodes: int,
    deadline: float,
    seed: int = 0,
) -> Placement | None:
    """A placement within ``capacity`` bytes (rounded down to the unit), or ``None`` when none
    was found within ``max_nodes`` nodes and ``deadline``."""
    problem = _build(intervals, alignment)
    rows = capacity // problem.sections.unit
    if not suits(problem.sections, rows) or max_nodes <= 0:
        return None
    offsets, _ = _attempt(problem, rows, max_nodes, deadline, seed)
    if offsets is None:
        return None
    return problem.sections.placement(intervals, offsets, alignment, NAME)


EXACT = one_process(NAME, suits, fit)
"""The skyline search at one capacity (``exact``)."""


def search(
    intervals: Sequence[BufferInterval],
    alignment: int,
    incumbent: int,
    *,
    max_nodes: int,
    deadline: float,
    seed: int = 0,
    lowest: int | None = None,
) -> Placement | None:
    """A placement smaller than ``incumbent`` bytes, or ``None`` when none was found.

    Tries ``lowest`` bytes (rounded up to the unit; by default the lower bound) first, with
    ``FIRST_SHARE`` of the nodes, then bisects the capacities between the smallest not yet
    tried and the best arena so far, each attempt with an even share of the nodes left over the
    bisection steps left. Stops at ``deadline`` (a ``time.perf_counter`` value).
    """
    problem = _build(intervals, alignment)
    sections = problem.sections
    unit = sections.unit
    low = sections.lower if lowest is None else max(sections.lower, -(-lowest // unit))
    high = incumbent // unit  # every capacity tried is below the best arena found
    best: list[int] | None = None
    left = max_nodes
    attempt = 0
    while low < high and left > 0 and time.perf_counter() <= deadline:
        if attempt == 0:
            capacity, limit = low, max(int(left * FIRST_SHARE), 1)
        else:
            capacity = (low + high - 1) // 2
            steps = max((high - low).bit_length(), 1)
            limit = max(left // steps, 1)
        offsets, used = _attempt(problem, capacity, limit, deadline, seed + attempt)
        attempt += 1
        left -= used
        if offsets is None:
            low = capacity + 1
        else:
            best = offsets
            high = max(offsets[b] + sections.size[b] for b in range(len(offsets)))
    if best is None:
        return None
    return sections.placement(intervals, best, alignment, NAME)
