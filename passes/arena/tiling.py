"""Exact-cover search over offset domains: does every buffer fit in a given capacity?

The arena is a grid (see ``sections``): a column per section and a row per unit, ``capacity``
rows in all. A buffer at offset ``o`` covers rows ``[o, o + size)`` of every column of its
lifetime. Each column keeps its free rows as a bitmask, and each unplaced buffer its *domain*:
the bitmask of offsets still open to it. A column's *slack* is its free rows minus the units of
the unplaced buffers live in it: the rows it will leave empty. At the lower bound the fullest
columns have no slack, and every free row there must be covered; that is what makes this search
strong exactly where the skyline ``search`` struggles (arenas whose lower bound is reachable
only by a perfect tiling).

Propagation; each rule only removes offsets that no completion of the current placement uses:

- overlap: placing a buffer removes from each unplaced buffer it meets in time the offsets
  that would overlap it;
- cover: the free rows of a column that no unplaced buffer live there can cover stay empty, so
  there may be at most slack of them;
- single (columns without slack): a free row that only one buffer can cover must be covered by
  it, so its domain keeps only the offsets covering every such row;
- runs: every unplaced buffer live in a column lies in one run of its free rows; per run, the
  largest total of such buffers that fits leaves the rest of the run empty, and the empty rows
  of all runs together may not exceed the slack (a subset-sum bound, one bitmask per run);
- forced: a buffer with one offset left is placed.

Branching takes the alternative with the fewest choices (fail first) among: a buffer's domain,
tried low to high; in a column without slack, its lowest free row, where some unplaced buffer
must start since the rows below are covered; likewise its highest free row, where some buffer
must end. Buffers of one ``kind`` are interchangeable, so a row tries one buffer per kind. Every
branching covers every completion, so a search that runs out of choices proves there is none.

Backjumping: a section boundary that no unplaced buffer crosses splits the rest of the problem
into independent parts (*components*). When a node runs out of choices, the part holding its
branching has no completion, so the search backs up past every decision that changed nothing in
that part (each decision records the columns its propagation touched).

Restarts: searches are cut off after a number of nodes following the Luby sequence (times the
buffer count) and started again from the root; the first keeps the fixed order, the others
shuffle each node's choices with a seeded generator. The node cap makes the result
reproducible; the wall-clock deadline is only a safety stop. A node is a branching or an
alternative that failed propagation.

Costs: free rows, domains and the rows a buffer may cover (its *spread*, computed when a check
needs it) are Python ints used as bitmasks; changed columns are queued and checked until
nothing changes; each column's row alternatives are cached with a count of its changes.

Invariants: every offset placed is in its buffer's domain, so a placement found is valid
within the capacity; every rule and branching keeps every completion, so a search that runs
out of choices proves there is none; for the same problem, capacity, node cap and seed the result is the same.
``EXACT`` is ``fit`` as an ``exact.ExactSearch``.
"""

from __future__ import annotations

import random
import time
from collections.abc import Mapping, Sequence
from typing import Final

from accy.passes.arena.exact import one_process
from accy.passes.arena.placer import conflict_lists
from accy.passes.arena.problem import BufferInterval, Placement
from accy.passes.arena.restarts import luby
from accy.passes.arena.sections import Sections, build_sections

NAME = "tiling"
MAX_ROWS = 4096
"""Capacities of more units than this are not tried (the bitmasks would get slow)."""
NODES_PER_MS = 6
"""Nodes granted per millisecond (a node here costs far more than a skyline node): below what
the compiled search reaches on the problems of ``benchmarks/packing.py``, so the cap, not the
clock, ends the stage."""
RESTART_UNIT = 1.0
"""The Luby sequence's unit, in nodes per buffer."""
MIN_TIGHT_SHARE = 0.25
"""The search is only tried when at least this share of the columns have no slack at the
capacity: the single rule and the row branchings need them, and without them the skyline
``search`` does better."""
# Final: compiled, a constant, not a lookup in the module's globals
_DEADLINE_CHECK: Final = 31  # the clock is read every 32 nodes
_FOUND: Final = "found"
_PROVED: Final = "proved"
_STOPPED: Final = "stopped"
_Rows = tuple[int, list[tuple[int, int]], list[tuple[int, int]]]
_PLACED: Final = 1 << 62  # the choice count of a placed buffer: above any domain's


class _Conflict(Exception):
    """Propagation found a buffer with no offset left or a column that cannot be filled."""


def _spread(mask: int, size: int) -> int:
    """The rows covered by a ``size``-row buffer at any offset of ``mask``."""
    rows, width = mask, 1
    while width * 2 <= size:
        rows |= rows << width
        width *= 2
    if size > width:
        rows |= rows << (size - width)
    return rows


class _Grid:
    """The search state: free rows per column, domains per buffer, and the undo trail.

    Trail entries are ``(buffer, old domain, old spread)`` for a narrowed domain and
    ``(-1 - buffer, offset, None)`` for a placement; undoing pops them in reverse.
    """

    def __init__(self, sections: Sections, rows: int) -> None:
        self.size, self.first, self.last = sections.size, sections.first, sections.last
        self.kind = sections.kind
        count, columns = sections.count, len(sections.live)
        self.count, self.columns, self.rows = count, columns, rows
        # Branching order among a row's candidates: longer lifetimes, larger, then index;
        # the start before the index keeps each kind's buffers together.
        order = sorted(
            range(count),
            key=lambda b: (self.first[b] - self.last[b], -self.size[b], self.first[b], b),
        )
        self.live_at: list[list[int]] = [[] for _ in range(columns)]
        for b in order:
            for t in range(self.first[b], self.last[b] + 1):
                self.live_at[t].append(b)
        lifetimes = [BufferInterval(b, self.first[b], self.last[b], 0) for b in range(count)]
        self.conflicts = conflict_lists(lifetimes)  # in columns
        self.free = [(1 << rows) - 1] * columns
        # A placement takes as many free rows from a column as it adds placed units, so the
        # slack of a column (its rows less its live units) never changes.
        self.slack = [rows - units for units in sections.live]
        self.tight = [t for t in range(columns) if not self.slack[t]]
        self.cross = [0] * (columns + 1)  # unplaced buffers live in both t - 1 and t
        for b in range(count):
            for t in range(self.first[b] + 1, self.last[b] + 1):
                self.cross[t] += 1
        self.domain = [(1 << (rows - self.size[b] + 1)) - 1 for b in range(count)]
        self.spread: list[int | None] = [None] * count  # rows each could cover
        self.choices = [self.domain[b].bit_count() for b in range(count)]
        self.placed = [False] * count
        self.offsets = [0] * count
        self.unplaced = count
        self.trail: list[tuple[int, int, int | None]] = []
        self.queue: list[int] = []
        self.queued = [False] * columns
        self.forced: list[int] = []
        self.touched = [columns, -1]  # columns touched since the last reset
        # Per column, a count of its changes and the row alternatives cached at a count.
        self.stamp = [0] * columns
        self.cached: list[_Rows | None] = [None] * columns

    # --- propagation -------------------------------------------------------------------------

    def enqueue(self, low: int, high: int) -> None:
        """Queue columns ``low..high`` for a check and widen the touched range."""
        queued, queue, stamp = self.queued, self.queue, self.stamp
        for t in range(low, high + 1):
            stamp[t] += 1
            if not queued[t]:
                queued[t] = True
                queue.append(t)
        touched = self.touched
        touched[0] = min(touched[0], low)
        touched[1] = max(touched[1], high)

    def narrow(self, b: int, domain: int) -> bool:
        """Shrink ``b``'s domain to ``domain`` (a subset of it); whether it changed.

        The caller queues the columns of ``b`` (``place`` and ``check`` queue the union of the
        buffers they narrow, one interval since all of them share a column).
        """
        old = self.domain[b]
        if domain == old:
            return False
        self.trail.append((b, old, self.spread[b]))
        self.domain[b] = domain
        if not domain:
            raise _Conflict
        self.spread[b] = None  # recomputed when a check needs it
        choices = domain.bit_count()
        self.choices[b] = choices
        if choices == 1:
            self.forced.append(b)
        return True

    def place(self, b: int, offset: int) -> None:
        """Put ``b`` at ``offset`` (in its domain) and remove overlapping offsets elsewhere."""
        if not self.domain[b] >> offset & 1:
            raise _Conflict  # not open to it (a safeguard: alternatives come from domains)
        size, first, last = self.size[b], self.first[b], self.last[b]
        self.trail.append((-1 - b, offset, None))
        self.placed[b] = True
        self.choices[b] = _PLACED
        self.offsets[b] = offset
        self.unplaced -= 1
        keep = ~(((1 << size) - 1) << offset)
        free, cross = self.free, self.cross
        for t in range(first, last + 1):
            free[t] &= keep
        for t in range(first + 1, last + 1):
            cross[t] -= 1
        low, high = first, last
        placed, domain, sizes, spread = self.placed, self.domain, self.size, self.spread
        starts, ends, choices, trail = self.first, self.last, self.choices, self.trail
        for c in self.conflicts[b]:  # ``narrow`` inlined: this is the hottest loop
            if placed[c]:
                continue
            # The offsets of ``c`` overlapping rows [offset, offset + size) are the
            # size + other - 1 from offset - other + 1 to offset + size - 1.
            old = domain[c]
            other = sizes[c]
            start = offset - other + 1
            block = (1 << (size + other - 1)) - 1
            new = old & ~(block << start if start >= 0 else block >> -start)
            if new == old:
                continue
            trail.append((c, old, spread[c]))
            domain[c] = new
            if not new:
                raise _Conflict
            spread[c] = None  # recomputed when a check needs it
            count = choices[c] = new.bit_count()
            if count == 1:
                self.forced.append(c)
            low = min(low, starts[c])
            high = max(high, ends[c])
        self.enqueue(low, high)

    def check(self, t: int) -> None:
        """Apply the cover, single and runs rules to column ``t``."""
        free = self.free[t]
        if not free:
            return
        placed, spread, size, domain = self.placed, self.spread, self.size, self.domain
        live = [c for c in self.live_at[t] if not placed[c]]
        once = twice = 0
        covers: list[int] = []  # the rows each of ``live`` could cover
        for c in live:
            rows = spread[c]
            if rows is None:
                rows = spread[c] = _spread(domain[c], size[c])
            covers.append(rows)
            twice |= once & rows
            once |= rows
        slack = self.slack[t]
        if (free & ~once).bit_count() > slack:
            raise _Conflict
        if not slack:
            singles = free & ~twice
            if singles:
                low, high = self.columns, -1
                for c, cover in zip(live, covers):  # narrowing c changes only its spread
                    rows = cover & singles
                    if rows:
                        first_row, last_row = (rows & -rows).bit_length() - 1, rows.bit_length() - 1
                        start = max(last_row - size[c] + 1, 0)
                        if start > first_row:
                            raise _Conflict
                        window = ((1 << (first_row - start + 1)) - 1) << start
                        if self.narrow(c, domain[c] & window):
                            low, high = min(low, self.first[c]), max(high, self.last[c])
                if high >= low:
                    self.enqueue(low, high)
        if (free + (free & -free)) & free:  # more than one run (one run holds them all)
            self.check_runs(free, slack, live)

    def check_runs(self, free: int, slack: int, live: list[int]) -> None:
        """The runs rule for a column: subset sums of the ``live`` buffers fitting each run."""
        size, domain = self.size, self.domain
        empty = 0
        while free:
            start = (free & -free).bit_length() - 1
            above = free >> start
            length = (above ^ (above + 1)).bit_length() - 1  # the run is rows start..+length
            free ^= ((1 << length) - 1) << start
            full = 1 << length
            sums, keep = 1, (full << 1) - 1  # bit k: some of them add up to k rows
            for c in live:
                units = size[c]
                # Fits the run: an offset in start .. start + length - units.
                if units <= length and domain[c] >> start & ((full >> (units - 1)) - 1):
                    sums |= (sums << units) & keep
                    if sums & full:
                        break
            empty += length - (sums.bit_length() - 1)
            if empty > slack:
                raise _Conflict

    def propagate(self) -> None:
        """Run the rules to a fixed point, placing forced buffers; raise ``_Conflict``."""
        queue, queued, forced = self.queue, self.queued, self.forced
        while True:
            while queue:
                t = queue.pop()
                queued[t] = False
                self.check(t)
            if not forced:
                return
            b = forced.pop()
            if not self.placed[b]:
                self.place(b, self.domain[b].bit_length() - 1)

    def reset_queue(self) -> None:
        """Forget pending checks (after a conflict) and start a new touched range."""
        for t in self.queue:
            self.queued[t] = False
        self.queue.clear()
        self.forced.clear()
        self.touched[0], self.touched[1] = self.columns, -1

    def undo(self, mark: int) -> None:
        """Undo the trail back to length ``mark``."""
        trail = self.trail
        free, cross, stamp = self.free, self.cross, self.stamp
        while len(trail) > mark:
            entry = trail.pop()
            if entry[0] >= 0:
                b, domain, spread = entry
                self.domain[b] = domain
                self.spread[b] = spread
                self.choices[b] = domain.bit_count()
                for t in range(self.first[b], self.last[b] + 1):
                    stamp[t] += 1
                continue
            b, offset = -1 - entry[0], entry[1]
            size, first, last = self.size[b], self.first[b], self.last[b]
            self.placed[b] = False
            self.choices[b] = self.domain[b].bit_count()
            self.unplaced += 1
            rows = ((1 << size) - 1) << offset
            for t in range(first, last + 1):
                stamp[t] += 1
                free[t] |= rows
            for t in range(first + 1, last + 1):
                cross[t] += 1

    # --- search ------------------------------------------------------------------------------

    def row_alternatives(self, t: int) -> _Rows:
        """For a column without slack: its change count, the ``(buffer, offset)`` pairs
        covering its lowest free row, then those covering its highest, one buffer per kind;
        cached in ``self.cached[t]`` (valid while the change count is unchanged)."""
        free = self.free[t]
        bottom_row, top_row = (free & -free).bit_length() - 1, free.bit_length() - 1
        placed, domain, size, kind = self.placed, self.domain, self.size, self.kind
        bottom: list[tuple[int, int]] = []
        top: list[tuple[int, int]] = []
        bottom_kind = top_kind = -1
        for c in self.live_at[t]:
            if placed[c]:
                continue
            rows, group = domain[c], kind[c]
            if group != bottom_kind and rows >> bottom_row & 1:
                bottom_kind = group
                bottom.append((c, bottom_row))
            offset = top_row - size[c] + 1
            if group != top_kind and offset >= 0 and rows >> offset & 1:
                top_kind = group
                top.append((c, offset))
        entry = self.cached[t] = (self.stamp[t], bottom, top)
        return entry

    def branching(self, rng: random.Random | None) -> tuple[list[tuple[int, int]], int, int]:
        """The fail-first alternatives ``(buffer, offset)`` and the columns they concern."""
        choices = self.choices
        fewest = min(choices)  # placed buffers count as _PLACED, more than any domain
        best = choices.index(fewest)
        column, alternatives = -1, []
        if fewest > 2:
            free, cached, stamp = self.free, self.cached, self.stamp
            for t in self.tight:
                if not free[t]:
                    continue
                entry = cached[t]
                if entry is None or entry[0] != stamp[t]:
                    entry = self.row_alternatives(t)
                for candidates in entry[1:]:
                    if len(candidates) < fewest:
                        column, alternatives, fewest = t, candidates, len(candidates)
                if fewest <= 2:
                    break
        if column < 0:
            domain = self.domain[best]
            while domain:
                low = domain & -domain
                alternatives.append((best, low.bit_length() - 1))
                domain ^= low
            low_column, high_column = self.first[best], self.last[best]
        else:
            alternatives = list(alternatives)
            low_column = high_column = column
        if rng is not None:
            rng.shuffle(alternatives)
        return alternatives, low_column, high_column

    def component(self, low: int, high: int) -> tuple[int, int]:
        """The widest column range around ``low..high`` joined by unplaced buffers."""
        cross = self.cross
        while cross[low]:
            low -= 1
        while cross[high + 1]:
            high += 1
        return low, high

    def run(self, node_limit: int, deadline: float, rng: random.Random | None) -> tuple[str, int]:
        """One depth-first search from the root state; leaves the grid solved or at the root.

        Frames are ``[alternatives, next, trail mark, component low, component high, touched
        low, touched high]``.
        """
        stack: list[list] = []
        nodes = 0
        while True:
            nodes += 1
            if nodes > node_limit or (
                not nodes & _DEADLINE_CHECK and time.perf_counter() > deadline
            ):
                self.undo(0)
                return _STOPPED, nodes
            if not self.unplaced:
                return _FOUND, nodes
            alternatives, low, high = self.branching(rng)
            stack.append([alternatives, 0, len(self.trail), *self.component(low, high), 0, -1])
            while True:  # find the next alternative that survives propagation
                frame = stack[-1]
                self.undo(frame[2])
                if frame[1] == len(frame[0]):
                    stack.pop()
                    low, high = frame[3], frame[4]
                    while stack and (stack[-1][5] > high or stack[-1][6] < low):
                        stack.pop()  # its decision changed nothing in the failed component
                    if not stack:
                        self.undo(0)
                        return _PROVED, nodes
                    continue
                b, offset = frame[0][frame[1]]
                frame[1] += 1
                self.reset_queue()
                try:
                    self.place(b, offset)
                    self.propagate()
                except _Conflict:
                    nodes += 1
                    continue
                frame[5], frame[6] = self.touched
                break

    def solve(
        self,
        max_nodes: int,
        deadline: float,
        seed: int,
        domains: Mapping[int, int] | None = None,
    ) -> tuple[list[int] | None, int]:
        """Offsets by search index fitting in the rows, or ``None`` (none, or out of nodes),
        and the nodes used. ``domains`` (search index to a bitmask of offsets) narrows the
        offsets open to some buffers before the search."""
        try:
            self.reset_queue()
            for b, domain in (domains or {}).items():
                self.narrow(b, self.domain[b] & domain)
            self.enqueue(0, self.columns - 1)
            self.propagate()
        except _Conflict:
            return None, 1
        self.trail.clear()  # the root state is never undone
        rng = random.Random(seed)
        unit = max(int(self.count * RESTART_UNIT), 1)
        used, restart = 0, 0
        while used < max_nodes and time.perf_counter() <= deadline:
            restart += 1
            limit = min(unit * luby(restart), max_nodes - used)
            status, nodes = self.run(limit, deadline, rng if restart > 1 else None)
            used += nodes
            if status == _FOUND:
                return list(self.offsets), used
            if status == _PROVED:
                return None, used
        return None, used


def suits(sections: Sections, rows: int) -> bool:
    """Whether the search is worth trying at ``rows`` units: within ``MAX_ROWS`` and at least
    ``MIN_TIGHT_SHARE`` of the columns without slack."""
    if not sections.count or rows < sections.lower or rows > MAX_ROWS:
        return False
    tight = sum(units == rows for units in sections.live)
    return tight >= MIN_TIGHT_SHARE * len(sections.live)


def fit(
    intervals: Sequence[BufferInterval],
    alignment: int,
    capacity: int,
    *,
    max_nodes: int,
    deadline: float,
    seed: int = 0,
) -> Placement | None:
    """A placement within ``capacity`` bytes, or ``None`` when none was found.

    ``None`` without searching when the search does not ``suits`` the capacity. Stops after
    ``max_nodes`` nodes or at ``deadline`` (a ``time.perf_counter`` value).
    """
    sections = build_sections(intervals, alignment)
    rows = capacity // sections.unit
    if not suits(sections, rows):
        return None
    offsets, _ = _Grid(sections, rows).solve(max_nodes, deadline, seed)
    if offsets is None:
        return None
    return sections.placement(intervals, offsets, alignment, NAME)


EXACT = one_process(NAME, suits, fit)
"""The exact-cover search at one capacity (``exact``)."""


def fit_sections(
    sections: Sections,
    rows: int,
    *,
    domains: Mapping[int, int],
    max_nodes: int,
    deadline: float,
    seed: int,
) -> tuple[list[int] | None, int]:
    """Unit offsets by search index within ``rows``, each buffer of ``domains`` (search index
    to a bitmask of unit offsets) at one of its offsets, or ``None``; and the nodes the
    search used.

    For searches over part of a placement (``windows``); no ``suits`` check."""
    return _Grid(sections, rows).solve(max_nodes, deadline, seed, domains)
