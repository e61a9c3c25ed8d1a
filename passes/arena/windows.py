"""Window repacking: a large-neighbourhood search that lowers a placement above the bound.

The search works on the grid of ``sections`` (time in sections, address in units) and starts
from a valid placement whose arena is ``top`` units high. It aims at ``top - 1`` rows, and at
one row less each time it gets there, until the lower bound or the budget.

A *move* lowers one section ``t`` whose buffers reach above the aim ``R``:

- the *window* is a run of sections around ``t`` (``WIDTH`` of them, a random one of the runs
  holding ``t``), widened until it holds the whole lifetime of every buffer reaching above
  ``R`` in ``t``;
- the buffers whose lifetimes lie inside the window are *free*; every other buffer live in the
  window (it *crosses* the window's edge) stays where it is, a domain of one offset;
- the exact ``tiling`` search places the free buffers so that section ``t`` ends at ``R`` at
  most and every other section of the window no higher than it is now (or ``R``): below a
  window-wide height, each section's limit is a fixed *blocker* covering the rows from it up.

Crossing buffers stay where they are even where the sections outside the window leave them
room: letting them move makes bigger searches, which fail more often for the same nodes.

Invariants: the offsets always form a valid placement, a move changes only the free buffers
of its window, and no section's top ever rises; a move that succeeds brings section ``t``
down to ``R``, so the sections above ``R`` are one fewer after it, and ``R`` is reached when
none is left. A move that fails changes nothing; the next window is one section wider for
every ``WIDEN_AFTER`` moves in a row that failed (up to ``MAX_WIDTH``), and ``WIDTH`` again
after a success; a failed move is not tried again until a success changes a section of its
window.

Costs and determinism: a move gets at most ``MOVE_NODES`` tiling nodes and the search at most
``max_nodes`` in all, so for the same placement, seed and caps the result is the same; the
deadline is a safety stop. Offsets that are not whole units (no packer of this package makes
them) are left alone.
"""

from __future__ import annotations

import random
import time
from collections.abc import Sequence

from accy.passes.arena import tiling
from accy.passes.arena.problem import BufferInterval, Placement
from accy.passes.arena.sections import Sections, build_sections

NAME = "windows"
NODES_PER_MS = 16
"""Tiling nodes granted per millisecond of budget (window searches are small: a node, with
its share of setting up the window, costs less than in ``tiling`` over the whole problem); set
for the compiled search (see ``compiled``): as plain Python the deadline may end it first."""
WIDTH = 4
"""Sections in a window before it is widened to the lifetimes it must hold."""
MAX_WIDTH = 26
"""Sections in a window at most, before that widening."""
WIDEN_AFTER = 2
"""Failed moves in a row that widen the next window by one section."""
MOVE_NODES = 500
"""Tiling nodes per move, at most."""


class _Windows:
    """The placement being lowered: offsets and each section's top, in units."""

    def __init__(self, sections: Sections, offsets: list[int]) -> None:
        self.sections = sections
        self.offsets = offsets
        self.columns = len(sections.live)
        self.live_at: list[list[int]] = [[] for _ in range(self.columns)]
        for b in range(sections.count):
            for t in range(sections.first[b], sections.last[b] + 1):
                self.live_at[t].append(b)
        self.top = [self.section_top(t) for t in range(self.columns)]

    def section_top(self, t: int) -> int:
        """The highest row (exclusive) a buffer live in section ``t`` reaches."""
        size, offsets = self.sections.size, self.offsets
        return max((offsets[b] + size[b] for b in self.live_at[t]), default=0)

    def window(self, t: int, width: int, aim: int, rng: random.Random) -> tuple[int, int]:
        """A run of sections holding ``t`` and every lifetime reaching above ``aim`` there."""
        low = max(t - rng.randint(0, width - 1), 0)
        high = min(low + width - 1, self.columns - 1)
        size, first, last = self.sections.size, self.sections.first, self.sections.last
        for b in self.live_at[t]:
            if self.offsets[b] + size[b] > aim:
                low, high = min(low, first[b]), max(high, last[b])
        return low, high

    def move(
        self, t: int, low: int, high: int, aim: int, nodes: int, deadline: float, seed: int
    ) -> tuple[bool, int]:
        """Repack the window ``low..high`` so that section ``t`` ends at ``aim`` at most and no
        other gets higher; whether it did, and the tiling nodes used."""
        sections, offsets = self.sections, self.offsets
        first, last, size = sections.first, sections.last, sections.size
        inside = sorted({b for s in range(low, high + 1) for b in self.live_at[s]})
        free = [b for b in inside if first[b] >= low and last[b] <= high]
        crossing = [b for b in inside if first[b] < low or last[b] > high]
        limits = [aim if s == t else max(aim, self.top[s]) for s in range(low, high + 1)]
        rows = max(limits)
        # The window's own sections: free buffers, then the crossing ones where they are (an
        # offset domain of one), then one blocker per section whose limit is below ``rows``
        # (search index -1: not a buffer).
        index = free + crossing
        sizes = [size[b] for b in index]
        firsts = [max(first[b], low) - low for b in index]
        lasts = [min(last[b], high) - low for b in index]
        domains = {len(free) + i: 1 << offsets[b] for i, b in enumerate(crossing)}
        for s, limit in enumerate(limits):
            if limit < rows:
                domains[len(index)] = 1 << limit
                index.append(-1)
                sizes.append(rows - limit)
                firsts.append(s)
                lasts.append(s)
        live = [0] * (high - low + 1)
        for b, units in enumerate(sizes):
            for s in range(firsts[b], lasts[b] + 1):
                live[s] += units
        if max(live) > rows:
            return False, 0  # the free buffers cannot fit whatever their places
        # Free buffers of one shape are interchangeable; the others are each their own kind.
        kinds: dict[tuple[int, ...], int] = {}
        kind = [
            kinds.setdefault(
                (firsts[b], lasts[b], sizes[b]) if b < len(free) else (-1, b), len(kinds)
            )
            for b in range(len(index))
        ]
        window = Sections(
            sections.unit,
            tuple(index),
            tuple(sizes),
            tuple(firsts),
            tuple(lasts),
            tuple(kind),
            tuple(live),
        )
        found, used = tiling.fit_sections(
            window, rows, domains=domains, max_nodes=nodes, deadline=deadline, seed=seed
        )
        if found is None:
            return False, used
        for i, b in enumerate(free):
            offsets[b] = found[i]
        for s in range(low, high + 1):
            self.top[s] = self.section_top(s)
        return True, used

    def lower(self, max_nodes: int, deadline: float, seed: int) -> int:
        """Lower the placement as far as the budget allows; the arena top reached."""
        rng = random.Random(seed)
        lowest, used, failures = self.sections.lower, 0, 0
        # A move that failed is not searched again while its window is unchanged: ``changed``
        # holds per section the count of successful moves when it last changed, ``failed`` the
        # count when a (section, window, aim) move failed.
        successes, changed = 0, [0] * self.columns
        failed: dict[tuple[int, int, int, int], int] = {}
        reached = max(self.top, default=0)
        while reached > lowest:
            aim = reached - 1
            above = [t for t in range(self.columns) if self.top[t] > aim]
            while above:
                if used >= max_nodes or time.perf_counter() > deadline:
                    return reached
                t = rng.choice(above)
                width = min(WIDTH + failures // WIDEN_AFTER, MAX_WIDTH)
                low, high = self.window(t, width, aim, rng)
                key = (t, low, high, aim)
                seed = rng.randrange(1 << 30)
                used += 1
                if key in failed and max(changed[low : high + 1]) <= failed[key]:
                    failures += 1
                    continue
                nodes = min(MOVE_NODES, max_nodes - used)
                moved, spent = self.move(t, low, high, aim, nodes, deadline, seed)
                used += spent
                if moved:
                    failures, successes = 0, successes + 1
                    changed[low : high + 1] = [successes] * (high - low + 1)
                    above = [s for s in above if self.top[s] > aim]
                else:
                    failures += 1
                    failed[key] = successes
            reached = max(self.top)
        return reached


def lower(
    intervals: Sequence[BufferInterval],
    alignment: int,
    placement: Placement,
    *,
    max_nodes: int,
    deadline: float,
    seed: int = 0,
) -> Placement | None:
    """A placement smaller than ``placement`` (valid for ``intervals``), or ``None`` when the
    search found none within ``max_nodes`` tiling nodes or by ``deadline``."""
    sections = build_sections(intervals, alignment)
    unit = sections.unit
    offsets = [placement.offsets[intervals[i].id] for i in sections.indices]
    if any(offset % unit for offset in offsets):
        return None
    search = _Windows(sections, [offset // unit for offset in offsets])
    start = max(search.top, default=0)
    if search.lower(max_nodes, deadline, seed) >= start:
        return None
    return sections.placement(intervals, search.offsets, alignment, NAME)
