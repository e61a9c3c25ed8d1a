"""Time sweep over PQ-trees: an exact search for arenas (nearly) full at every section.

When every section (see ``sections``) is exactly full at the capacity, the buffers live in a
section tile the arena with no gap, so a placement is an *order* of the live buffers per
section, each buffer's offset the sizes below it. The sweep goes through the section
boundaries in time. At a boundary, the buffers that end free some runs of rows and the
buffers that start must tile exactly those runs; so the ending and starting buffers split into
*blocks*: a group ``G`` of ending buffers, consecutive in the order, whose rows a group ``H``
of starting buffers (as many units) fills in any order. Every placement has such a split (its
runs), and every split that the earlier boundaries allow extends to a placement of the
sections so far, so searching the splits is exact.

Sections one unit short are searched ``padded`` (``Sections.padded``) with a one-unit gap
each, a pseudo-buffer living in its section alone: the free row is then a buffer like the
others, which stays where it is at a boundary (a block of one gap ending and the next
starting) or moves into rows other buffers free there, merged into their block. So the sweep
is exact one unit above the lower bound of a full problem too, where there are many more
placements to find (and more splits per boundary to work out).

The orders still open are kept as one PQ-tree (``pq_tree``) over the live buffers: a block
``reduce``-s the tree so that ``G`` is consecutive, then ``replace``-s ``G`` by a P-node of
``H``. A set of buffers is a mask of their leaf bits (``leaf_bits``: reused over time, so a
mask fits a machine word, and the compiled set operations allocate nothing). Offsets
are only fixed at the end, from the last section back to the first: each section's order keeps
the buffers that cross into the next section where the next order has them, and puts each
``G`` where its ``H`` is (``order_by`` on the tree kept for the section).

Invariants: the tree at a boundary stands for exactly the orders of the live buffers that
every earlier split allows; a buffer keeps one offset over its lifetime, since a block only
rearranges rows that its ``G`` held; a ``(boundary, tree)`` pair is remembered as failed
(trees are canonical) and not searched again only when the search below it was exhaustive:
every split of it and of every boundary under it collected and tried.

Search: depth first, a boundary's splits tried in decreasing ``freedom`` of the tree they
leave (keeping more orders open for later boundaries; ``replaced_freedom`` works it out
without making the tree, which only the split descended into needs); splits are built
lazily, one group at a time, a group dropped as soon as the tree cannot make it consecutive
or no starting buffers sum to it (its reductions remembered per sweep; most groups tried
cannot be made consecutive, which ``pq_tree.reduce`` tells from the nodes' labels alone), or
when the tree forces it next to another group of the split, or next to an ending buffer still
to be grouped
(*dominance*: the split joining the two groups, and their starting groups into one P-node,
stands for every order it does and more; without these splits, which mostly had the lowest
freedom, the collected ones are more often the useful ones); starting buffers of one ``kind``
are interchangeable, so one is tried per kind. The groups that can come next after some
groups are the same for every starting group of those, so a collection remembers them
(``_Level``), worked out as far as asked: the same splits, counted the same, in less time.
A boundary's splits are worked out on the tree ``contract``-ed to its ending buffers (the
subtrees without any made single leaves: the same groups can be made consecutive, and the
freedoms differ by one constant) and kept per boundary and contracted ``shape``, since the
trees met again after backtracking mostly differ only away from the ending buffers; only the
split the search descends into is applied to the whole tree.

Runs: a wrong split is mostly refuted a few boundaries later, but chronological backtracking
through the boundaries in between takes longer the further it is. So the search runs in
*windows* of the path to the deepest boundary reached (``_Sweep.runs``): from a boundary
``back`` before it (its tree kept from that path) to ``WINDOW_AHEAD`` past it, with restarts
from the window's first boundary on the Luby sequence (times ``RESTART_UNIT`` window
boundaries, in nodes; a node is a split tried) and ``WINDOW_NODES`` nodes per window boundary
in all. A window that gets deeper is followed by the next from just before the new deepest
boundary; one that does not doubles ``back``, back to the first boundary, which undoes ever
earlier choices (restarting from the first boundary instead places far less often). After the
first run, near-equal splits are tried in a seeded random order. At most ``MAX_SPLITS``
splits per boundary are collected, with at most ``MAX_REDUCTIONS`` tree reductions (a
boundary cut off by either, and every boundary above it on the path, is not remembered as
failed). The node cap makes the result reproducible; the deadline is a safety stop, read
between nodes and during a boundary's reductions. A search that stops without a placement
still reports the deepest boundary it reached and its tiling of the sections before it
(``SweepResult``; ``stitch`` joins a forward and a backward one). Sweeps share a budget
through ``race``, a run at a time each, in one process or several.

This module is compiled with mypyc when accy is installed, like the other exact searches (see
``compiled``): keep it typed so that mypy accepts it, and reinstall after editing it.
"""

from __future__ import annotations

import heapq
import random
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Final, NamedTuple, cast

from accy.passes.arena.pq_tree import (
    Node,
    always_adjacent,
    contract,
    fixed_neighbours,
    frontier,
    leaf,
    order_by,
    p_node,
    reduce,
    replaced_freedom,
    shape,
)
from accy.passes.arena.pq_tree import replace as replace_leaves
from accy.passes.arena.problem import BufferInterval, Placement
from accy.passes.arena.restarts import luby
from accy.passes.arena.sections import Sections, build_sections

NAME = "sweep"
NODES_PER_MS = 6
"""Nodes granted per millisecond (a node builds and sorts a boundary's splits, whose cost
varies with the boundary: on large problems the stage's deadline may end a sweep before its
cap does)."""
MAX_SPLITS = 64
"""Splits collected per boundary, at most."""
MAX_REDUCTIONS = 4096
"""Tree reductions per boundary, at most: the groups are tried one against another, so a
boundary with many ending buffers whose groups the tree mostly refuses could take very long
to collect its splits."""
MAX_GROUP_TRIES = 4096
"""Ending groups per anchor, at most (a boundary with many small ending and starting buffers
has exponentially many); ``MAX_SPLITS`` bounds the starting groups per ending group."""
WINDOW_AHEAD = 12
"""Boundaries past the deepest one reached that a run aims for (see ``_Sweep.runs``)."""
WINDOW_NODES = 15
"""Nodes per boundary of a run's window."""
RESTART_UNIT = 2
"""Window boundaries of nodes per unit of the Luby sequence, for the runs within a window."""
RESTART_NOISE = 1e-6
"""After the first run, a uniform draw up to this is added to each split's freedom: splits of
equal freedom come in a seeded random order (larger values would reorder near-equal ones
too)."""
MAX_KNOWN = 65_536
"""Entries of each of a sweep's memories (boundaries' splits by contracted shape, reductions,
ending and starting groups), at most (each cleared when full)."""
MAX_FAILED = 200_000
"""Failed ``(boundary, tree)`` pairs remembered, at most (the memory is cleared when full)."""
PAUSED: Final = object()
"""Yielded by a race's sweep at its cap (see ``_Sweep.runs``)."""
# Final: compiled, a constant, not a lookup in the module's globals
_UNKNOWN: Final = object()  # a reduction not remembered
# a reduction remembered, its tree not worked out yet (see ``dominated``)
_PENDING: Final = object()
_DEADLINE_CHECK: Final = 31  # the clock (and a race's cap) is read every 32 nodes

Group = tuple[int, ...]
Block = tuple[Group, Group]  # (ending group G, starting group H)
Split = tuple[float, tuple[Block, ...]]  # (freedom of the next tree, up to a constant; blocks)
# an ending group, its mask and units (see ``ending_groups``)
Ending = tuple[Group, int, int]
# (ending group, its mask, its units, the tree reduced by it, the ending buffers left)
Candidate = tuple[Group, int, int, Node, list[int]]


class _Level:
    """One level of a boundary's split collection: the candidates ``_Sweep.candidates`` gives,
    worked out as far as ``blockings`` asked, each with the dominance checks it took (counted
    again on each later visit, as ``dominated`` counts remembered ones), and the checks after
    the last (``tail``) once ``done``."""

    def __init__(self, source: Iterator[tuple[Candidate | None, int]]) -> None:
        self.source = source
        self.found: list[tuple[Candidate, int]] = []
        self.done = False
        self.tail = 0

    def extend(self) -> Candidate | None:
        """The next candidate, remembered; ``None`` when there is none."""
        candidate, checks = next(self.source)
        if candidate is None:
            self.done, self.tail = True, checks
            return None
        self.found.append((candidate, checks))
        return candidate


class _Restart(Exception):
    """The run's node limit is reached."""


class _Stopped(Exception):
    """The node cap or the deadline is reached."""


class _Truncated(Exception):
    """A boundary's reductions reached ``MAX_REDUCTIONS``."""


def _next_tree(
    reduced: Node, blocks: tuple[Block, ...], leaves: list[Node], bit: list[int]
) -> Node:
    """The next section's tree: in ``reduced`` (every ending group consecutive), each group
    replaced by a P-node of its starting buffers (``leaves`` and ``bit``: each buffer's leaf
    and leaf bit)."""
    following = reduced
    for group, filling in blocks:
        starting = p_node([leaves[b] for b in filling])
        following = replace_leaves(following, _mask(group, bit), starting)
    return following


def _mask(group: Sequence[int], bit: list[int]) -> int:
    """The mask of the buffers ``group`` (``bit``: each buffer's leaf bit)."""
    mask = 0
    for b in group:
        mask |= bit[b]
    return mask


def leaf_bits(first: Sequence[int], last: Sequence[int]) -> list[int]:
    """A leaf bit per buffer (sections ``first[b]..last[b]``) for the sweep's trees: the same
    for two buffers only where no tree holds both, that is where one ends at least two
    sections before the other starts (a boundary's tree holds the buffers ending there while
    their starting buffers replace them). The bits are as few as the most buffers live in two
    neighbouring sections, a colouring of intervals: in start order, each buffer takes the
    lowest bit no buffer still live, or ending just before it starts, holds."""
    bits = [0] * len(first)
    free: list[int] = []  # bit numbers no buffer holds now (a heap)
    held: list[tuple[int, int]] = []  # (section after the holder's last, bit number), a heap
    count = 0
    for b in sorted(range(len(first)), key=lambda b: (first[b], b)):
        while held and held[0][0] < first[b]:
            heapq.heappush(free, heapq.heappop(held)[1])
        if free:
            number = heapq.heappop(free)
        else:
            number, count = count, count + 1
        heapq.heappush(held, (last[b] + 1, number))
        bits[b] = 1 << number
    return bits


# The group enumerations are module functions, not closures: a recursive closure is a
# reference cycle, which only the cyclic collector frees, and a race pauses it (see ``race``).


def _grow_starting(
    starting: list[int],
    size: tuple[int, ...],
    kind: tuple[int, ...],
    reach: list[int],
    i: int,
    left: int,
    chosen: list[int],
    found: list[Group],
    cap: int,
) -> None:
    """Append to ``found`` each group of ``chosen`` and buffers of ``starting[i:]`` of
    ``left`` more units, one per multiset of kinds (kinds are together in ``starting``), up to
    ``cap`` groups; ``reach[i]`` has bit ``u`` set when ``starting[i:]`` can sum to ``u``."""
    if left == 0:
        found.append(tuple(chosen))
        return
    if len(found) == cap or not reach[i] >> left & 1:
        return
    b = starting[i]
    if size[b] <= left:
        chosen.append(b)
        _grow_starting(starting, size, kind, reach, i + 1, left - size[b], chosen, found, cap)
        chosen.pop()
    j = i + 1  # leaving b out leaves out the rest of its kind too
    while j < len(starting) and kind[starting[j]] == kind[b]:
        j += 1
    _grow_starting(starting, size, kind, reach, j, left, chosen, found, cap)


def _grow_ending(
    anchor: int,
    others: list[int],
    size: tuple[int, ...],
    bit: list[int],
    reach: list[int],
    sums: int,
    i: int,
    units: int,
    mask: int,
    chosen: list[int],
    found: list[Ending],
    cap: int,
) -> None:
    """Append to ``found`` each group of ``anchor``, ``chosen`` (``units`` units and the leaf
    bits ``mask`` so far) and some of ``others[i:]`` whose units are a bit of ``sums``, with
    its mask and units, up to ``cap`` groups; ``reach[i]`` has bit ``u`` set when
    ``others[i:]`` can sum to ``u``."""
    if len(found) == cap or not reach[i] & sums >> units:  # (a right shift: no overflow)
        return  # no extension sums to a starting group
    if i == len(others):
        found.append(((anchor, *chosen), mask, units))
        return
    _grow_ending(anchor, others, size, bit, reach, sums, i + 1, units, mask, chosen, found, cap)
    b = others[i]
    chosen.append(b)
    _grow_ending(
        anchor,
        others,
        size,
        bit,
        reach,
        sums,
        i + 1,
        units + size[b],
        mask | bit[b],
        chosen,
        found,
        cap,
    )
    chosen.pop()


def suits(sections: Sections, rows: int) -> bool:
    """Whether the sweep applies at ``rows`` units: every section full or one unit short."""
    return sections.count > 0 and all(rows - 1 <= units <= rows for units in sections.live)


class _Sweep:
    """The boundaries of a full problem and the search over their splits, leaving out the
    dominated ones when ``skips_dominated`` (see ``blockings``)."""

    def __init__(self, sections: Sections, skips_dominated: bool = True) -> None:
        self.size, self.kind = sections.size, sections.kind
        self.sections = len(sections.live)
        self.starts: list[list[int]] = [[] for _ in range(self.sections)]
        self.ends: list[list[int]] = [[] for _ in range(self.sections)]
        for b in range(sections.count):
            self.starts[sections.first[b]].append(b)
            self.ends[sections.last[b]].append(b)
        for group in self.starts:  # kinds together, so that one per kind is tried
            group.sort(key=lambda b: (self.kind[b], b))
        self.bit = leaf_bits(sections.first, sections.last)  # each buffer's leaf bit
        self.leaves = [leaf(b, self.bit[b]) for b in range(sections.count)]  # and leaf
        self.truncated = False
        self.reductions = 0
        self.skips_dominated = skips_dominated
        self.known: dict[tuple[int, str], tuple[list[Split], bool]] = {}
        # reductions by (tree, mask) (values: a tree, None for no order, or _PENDING)
        self.reduced: dict[tuple[Node, int], object] = {}
        # a collection's next ending groups (see ``candidates``), by the masks of the groups
        # before them and the units that the starting buffers left can sum to (bits)
        self.levels: dict[tuple[tuple[int, ...], int], _Level] = {}
        self.checks = 0  # dominance checks counted (see ``candidates``)
        # the groups of a boundary's buffers, by the arguments they were worked out for (and
        # whether a cap cut them off): the same ones come back for every starting group of
        # the blocks before them
        self.ending: dict[tuple[int, tuple[int, ...], int], tuple[list[Ending], bool]] = {}
        self.starting: dict[tuple[tuple[int, ...], int], tuple[list[Group], bool]] = {}
        self.deadline = float("inf")
        self.max_nodes = 0
        self.cap: Callable[[], int] | None = None  # a race's: max_nodes as it changes
        self.nodes = 0  # nodes searched, over all runs
        self.window = (1, 1)  # the runs' window: its first boundary and the one it aims for
        self.failed: set[tuple[int, Node]] = set()  # (boundary, tree) pairs that failed
        self.root = p_node([self.leaves[b] for b in self.starts[0]])  # the first section's tree
        # (boundary, tree, reduced trees, blocks, trees) on the path to the deepest boundary
        # reached: the tree at each boundary (before its split), each reduced by its split,
        # the blocks of each split
        self.deepest: tuple[int, Node, list[Node | None], list[tuple[Block, ...]], list[Node]] = (
            1,
            self.root,
            [None] * self.sections,
            [()] * self.sections,
            [self.root] * (self.sections + 1),
        )

    def mask(self, group: Sequence[int]) -> int:
        """The mask of the buffers ``group``."""
        return _mask(group, self.bit)

    # --- the splits of one boundary ----------------------------------------------------------

    def starting_groups(self, starting: list[int], units: int) -> list[Group]:
        """The groups of ``starting`` (kinds together) of ``units`` units, fewest first, one
        per multiset of kinds; at most ``MAX_SPLITS`` (then the boundary is truncated).
        Remembered per sweep."""
        key = (tuple(starting), units)
        known = self.starting.get(key)
        if known is None:
            if len(self.starting) >= MAX_KNOWN:
                self.starting.clear()
            known = self.starting[key] = self._starting_groups(starting, units)
        found, cut = known
        self.truncated |= cut
        return found

    def _starting_groups(self, starting: list[int], units: int) -> tuple[list[Group], bool]:
        """``starting_groups`` worked out, and whether ``MAX_SPLITS`` cut them off."""
        size, kind = self.size, self.kind
        found: list[Group] = []
        # reach[i]: bit u set when buffers from position i on can sum to u units
        reach = [1] * (len(starting) + 1)
        for i in range(len(starting) - 1, -1, -1):
            reach[i] = reach[i + 1] | reach[i + 1] << size[starting[i]]

        _grow_starting(starting, size, kind, reach, 0, units, [], found, MAX_SPLITS)
        found.sort(key=len)
        return found, len(found) == MAX_SPLITS

    def ending_groups(self, anchor: int, others: list[int], sums: int) -> list[Ending]:
        """The groups of ``anchor`` and some of ``others`` whose units some starting buffers
        sum to (bits of ``sums``), each with its mask and units, fewest first; at most
        ``MAX_GROUP_TRIES`` (then the boundary is truncated). Remembered per sweep."""
        key = (anchor, tuple(others), sums)
        known = self.ending.get(key)
        if known is None:
            if len(self.ending) >= MAX_KNOWN:
                self.ending.clear()
            known = self.ending[key] = self._ending_groups(anchor, others, sums)
        found, cut = known
        self.truncated |= cut
        return found

    def _ending_groups(
        self, anchor: int, others: list[int], sums: int
    ) -> tuple[list[Ending], bool]:
        """``ending_groups`` worked out, and whether ``MAX_GROUP_TRIES`` cut them off."""
        size = self.size
        found: list[Ending] = []
        # reach[i]: bit u set when buffers from position i on can sum to u units
        reach = [1] * (len(others) + 1)
        for i in range(len(others) - 1, -1, -1):
            reach[i] = reach[i + 1] | reach[i + 1] << size[others[i]]

        cap, bit = MAX_GROUP_TRIES, self.bit
        _grow_ending(
            anchor, others, size, bit, reach, sums, 0, size[anchor], bit[anchor], [], found, cap
        )
        found.sort(key=lambda ending: len(ending[0]))
        return found, len(found) == cap

    def blockings(
        self,
        tree: Node,
        ending: list[int],
        starting: list[int],
        dominance: bool,
        before: tuple[int, ...] = (),
    ) -> Iterator[tuple[Node, tuple[Block, ...]]]:
        """Each split of ``ending``/``starting`` into blocks that ``tree`` allows, with the
        tree reduced so that every group is consecutive; ``before`` holds the masks of the
        ending groups of the blocks already chosen (``tree`` is reduced by them).

        With ``dominance``, a group is left out where every order of the reduced tree
        puts it next to an earlier group or to an ending buffer still to be grouped
        (``dominated``): the split joining the two groups into one block (their starting
        groups into one P-node) is among the others and stands for every order this one
        does, and more.
        """
        if not ending:
            yield tree, ()
            return
        sums = 1  # bit u set: some starting buffers sum to u units
        for b in starting:
            sums |= sums << self.size[b]
        key = (before, sums)
        level = self.levels.get(key)
        if level is None:
            level = self.levels[key] = _Level(
                self.candidates(tree, ending, sums, dominance, before)
            )
        i = 0
        while (candidate := self.candidate(level, i)) is not None:
            i += 1
            group, mask, units, reduced, rest = candidate
            for filling in self.starting_groups(starting, units):
                left = [b for b in starting if b not in filling]
                deeper = self.blockings(reduced, rest, left, dominance, (*before, mask))
                for final, blocks in deeper:
                    yield final, ((group, filling), *blocks)

    def candidates(
        self,
        tree: Node,
        ending: list[int],
        sums: int,
        dominance: bool,
        before: tuple[int, ...],
    ) -> Iterator[tuple[Candidate | None, int]]:
        """The next ending groups of ``blockings`` after the groups ``before`` (masks), with
        their masks and units, ``tree`` reduced by them and the ending buffers left, each with
        the dominance checks counted since the one before (and ``None`` with those after the
        last): those that some starting buffers (``sums``) sum to, that ``tree`` can make
        consecutive and, with ``dominance``, that are not ``dominated``.

        ``blockings`` remembers them per collection (a ``_Level`` by ``before`` and ``sums``,
        which fix the rest): the same ones come back for every starting group of the blocks
        before them, and one is worked out only when the last is used up (a collection mostly
        stops at ``MAX_SPLITS`` long before the first level's groups are through).
        """
        anchor, others = ending[0], ending[1:]
        left = self.mask(others)
        checked = self.checks
        for group, mask, units in self.ending_groups(anchor, others, sums):
            reduced = self.reduce(tree, mask)
            if reduced is None:
                continue
            if dominance and self.dominated(reduced, mask, before, left & ~mask):
                continue
            rest = [b for b in others if b not in group]
            yield (group, mask, units, reduced, rest), self.checks - checked
            checked = self.checks
        yield None, self.checks - checked

    def candidate(self, level: _Level, i: int) -> Candidate | None:
        """The ``i``-th candidate of ``level`` (``None`` past the last), worked out if it is
        the next one; one worked out on an earlier visit has its dominance checks counted
        again, as ``dominated`` counts remembered ones."""
        if i < len(level.found):
            candidate, checks = level.found[i]
        elif level.done:
            candidate, checks = None, level.tail
        else:
            return level.extend()
        self.reductions += checks
        if self.reductions > MAX_REDUCTIONS:
            raise _Truncated
        return candidate

    def dominated(self, reduced: Node, leaves: int, before: tuple[int, ...], rest: int) -> bool:
        """Whether every order of ``reduced`` puts the group ``leaves`` next to an earlier group
        (masks ``before``), or next to an ending buffer still to be grouped (mask ``rest``;
        whose group would then be next to it). Each earlier group checked counts as a
        reduction, worked out or remembered.

        The two groups are next to each other in every order exactly when reducing ``reduced``
        by both leaves it as it is; ``pq_tree.always_adjacent`` tells so without reducing, and
        the reduction is remembered as ``_PENDING`` (not worked out: ``reduce`` does it if ever
        asked) where they are not, so that it counts and is remembered as it would be.
        """
        for prior in before:
            self.reductions += 1
            self.checks += 1
            if self.reductions > MAX_REDUCTIONS:
                raise _Truncated
            key = (reduced, prior | leaves)
            known = self.reduced.get(key, _UNKNOWN)
            if known is _UNKNOWN:
                self.count_reduction()
                adjacent = always_adjacent(reduced, prior, leaves)
                self.reduced[key] = known = reduced if adjacent else _PENDING
            if known == reduced:
                return True
        return fixed_neighbours(reduced, leaves) & rest != 0

    def count_reduction(self) -> None:
        """Count a reduction worked out (a remembered one is not counted): stops the boundary
        at ``MAX_REDUCTIONS`` and the search at the deadline; makes room for it to be
        remembered."""
        self.reductions += 1
        if self.reductions > MAX_REDUCTIONS:
            raise _Truncated
        if not self.reductions & _DEADLINE_CHECK and self.interrupted():
            raise _Stopped
        if len(self.reduced) >= MAX_KNOWN:
            self.reduced.clear()

    def reduce(self, tree: Node, mask: int) -> Node | None:
        """``pq_tree.reduce`` by the buffers of ``mask``, remembered by tree and mask: a
        boundary's groups are tried on the same trees once per starting group of the blocks
        before them (counted in ``reductions`` only when worked out)."""
        key = (tree, mask)
        known = self.reduced.get(key, _UNKNOWN)
        if known is _PENDING:  # remembered by ``dominated``: worked out now, as if it were
            self.reduced[key] = known = reduce(tree, mask)
        if known is not _UNKNOWN:
            return cast(Node | None, known)
        self.count_reduction()
        self.reduced[key] = reduced = reduce(tree, mask)
        return reduced

    def splits(self, t: int, tree: Node) -> tuple[list[Split], bool]:
        """The splits at boundary ``t`` (between sections ``t - 1`` and ``t``) that ``tree``
        allows, best first (without restart noise), and whether they are all of them.

        Worked out on the tree contracted to the ending buffers (``pq_tree.contract``) and kept
        per boundary and contracted shape: trees met again after backtracking mostly differ
        only in subtrees the boundary does not touch. Splits that another one covers are left
        out (see ``blockings``), unless the caps cut the collection off before any split was
        found: then it is collected again with every split kept.
        """
        ending = self.ends[t - 1]
        keep = self.mask(ending)
        key = (t, shape(tree, keep))
        known = self.known.get(key)
        if known is not None:
            return known
        contracted = contract(tree, keep)
        starting = self.starts[t]
        for dominance in (True, False) if self.skips_dominated else (False,):
            self.truncated, self.reductions = False, 0
            found: list[Split] = []
            try:
                for reduced, blocks in self.blockings(contracted, ending, starting, dominance):
                    parts = [(self.mask(group), len(filling)) for group, filling in blocks]
                    found.append((replaced_freedom(reduced, parts), blocks))
                    if len(found) == MAX_SPLITS:
                        self.truncated = True
                        break
            except _Truncated:
                self.truncated = True
            finally:  # the levels' generators refer to this sweep: no cycle is left behind
                self.levels.clear()
            if found or not self.truncated:
                break  # else cut off before any split: collected again, every split kept
        found.sort(key=lambda split: -split[0])
        if len(self.known) >= MAX_KNOWN:
            self.known.clear()
        self.known[key] = found, not self.truncated
        return found, not self.truncated

    def follow(self, tree: Node, blocks: tuple[Block, ...]) -> tuple[Node, Node]:
        """``tree`` reduced so that every ending group of ``blocks`` is consecutive, and the
        next section's tree (each group replaced by its starting buffers)."""
        reduced = tree
        for group, _ in blocks:  # consecutive in some order: the split was collected so
            narrowed = reduce(reduced, self.mask(group), checked=True)
            if narrowed is None:
                raise AssertionError(f"sweep: group {group} not consecutive (a bug)")
            reduced = narrowed
        return reduced, _next_tree(reduced, blocks, self.leaves, self.bit)

    # --- the search --------------------------------------------------------------------------

    def interrupted(self) -> bool:
        """Whether the deadline has passed, or ``cap`` lowered ``max_nodes`` to the nodes
        searched (read every 32 nodes, and every 32 reductions of a boundary)."""
        if self.cap is not None:
            self.max_nodes = self.cap()
            if self.nodes >= self.max_nodes:
                return True
        return time.perf_counter() > self.deadline

    def solve(self, max_nodes: int, deadline: float, seed: int) -> list[int] | None:
        """Offsets in units by search index, or ``None`` (stopped, or proved impossible)."""
        self.max_nodes, self.deadline = max_nodes, deadline
        for offsets in self.runs(seed):
            if isinstance(offsets, list):
                return offsets
        return None

    def runs(self, seed: int) -> Iterator[list[int] | object | None]:
        """The search a run at a time: yields ``None`` after each run that ends without a
        placement, the offsets in units by search index when one is found (and stops); stops
        without them when the search proved there is none, or at the node cap (``max_nodes``,
        counted in ``nodes`` over all runs) or the ``deadline``, which are read during the runs
        and may be raised between them. With a ``cap`` (a race's), it yields ``PAUSED`` on
        reaching it instead, and goes on when resumed with a higher one.

        A run searches a *window* of the path to the deepest boundary reached: from ``back``
        boundaries before it (its tree kept from that path), aiming ``WINDOW_AHEAD`` past it,
        with ``WINDOW_NODES`` nodes per boundary of the window. A run that gets deeper moves the
        window on (``back`` 1 again); one that does not doubles ``back``, so the search undoes
        ever earlier choices of the path, back to the first boundary.
        """
        failed = self.failed
        run, back, window_end = 0, 1, -1
        rng: random.Random | None = None
        while True:
            run += 1
            if self.nodes >= window_end:  # a new window
                depth = self.deepest[0]
                start = max(1, depth - back)
                target = min(self.sections, depth + WINDOW_AHEAD)
                self.window = start, target
                length = target - start + 1
                window_end, window_run = self.nodes + WINDOW_NODES * length, 0
            window_run += 1
            limit = min(window_end, self.nodes + luby(window_run) * RESTART_UNIT * length)
            _, _, best_reduced, best_blocks, best_trees = self.deepest
            path_reduced, path_blocks = list(best_reduced), list(best_blocks)
            path_trees = list(best_trees)
            stack: list[tuple[int, Node, list[Split]]] = []
            position: list[int] = []
            exhaustive: list[bool] = []  # per boundary on the stack: every split below tried
            try:
                t, tree = start, path_trees[start]
                while True:
                    path_trees[t] = tree
                    if t > self.deepest[0]:
                        self.deepest = (
                            t,
                            tree,
                            list(path_reduced),
                            list(path_blocks),
                            list(path_trees),
                        )
                    if t == self.sections:
                        offsets = self.offsets(t, tree, path_reduced, path_blocks)
                        yield [offsets[b] for b in range(len(self.size))]
                        return
                    if t == target:
                        window_end = self.nodes  # the window is through: the next one follows
                        raise _Restart
                    if (t, tree) in failed:
                        splits: list[Split] = []
                        complete = True  # remembered: it failed with every split tried
                    else:
                        splits, complete = self.splits(t, tree)
                        splits = self.ordered(splits, rng)
                    stack.append((t, tree, splits))
                    position.append(0)
                    exhaustive.append(complete)
                    # descend into the next untried split, backing up past exhausted boundaries
                    while stack:
                        t, tree, splits = stack[-1]
                        index = position[-1]
                        if index < len(splits):
                            position[-1] += 1
                            self.nodes += 1
                            if self.nodes >= self.max_nodes:
                                if self.cap is None:
                                    raise _Stopped
                                yield PAUSED  # a race may raise the cap and resume, or end it
                                self.max_nodes = self.cap()
                                if self.nodes >= self.max_nodes:
                                    raise _Stopped
                            if self.nodes >= limit:
                                raise _Restart
                            if not self.nodes & _DEADLINE_CHECK and self.interrupted():
                                raise _Stopped
                            blocks = splits[index][1]
                            reduced, following = self.follow(tree, blocks)
                            path_reduced[t - 1], path_blocks[t] = reduced, blocks
                            t, tree = t + 1, following
                            break
                        stack.pop()
                        position.pop()
                        if exhaustive.pop():
                            if len(failed) >= MAX_FAILED:
                                failed.clear()
                            failed.add((t, tree))
                        elif exhaustive:  # a cut-off below leaves the boundary above open
                            exhaustive[-1] = False
                    else:  # every split of the window's first boundary failed
                        if start == 1 and (1, path_trees[1]) in failed:
                            return  # proved: no placement
                        window_end = self.nodes
                        raise _Restart
            except _Restart:
                if self.nodes >= window_end:
                    back = 1 if self.deepest[0] > depth else min(2 * back, self.sections)
                rng = random.Random(seed * 1_000_003 + run)
                yield None
            except _Stopped:
                return

    def ordered(self, splits: list[Split], rng: random.Random | None) -> list[Split]:
        """Splits by decreasing freedom of the tree they leave (plus noise after a restart)."""
        if rng is None:
            return splits
        scored = [(score + rng.random() * RESTART_NOISE, blocks) for score, blocks in splits]
        scored.sort(key=lambda split: -split[0])
        return scored

    def prefix(self) -> tuple[int, dict[int, int]]:
        """The deepest boundary the search reached and the unit offsets (by search index) of
        the buffers live before it: a tiling of those sections at the capacity."""
        depth, tree, reduced, blocks, _ = self.deepest
        return depth, self.offsets(depth, tree, reduced, blocks)

    def result(self, offsets: list[int] | None) -> SweepResult:
        """The ``SweepResult`` of a search that ended with ``offsets`` (``None``: without a
        placement, so its deepest prefix)."""
        if offsets is not None:
            return SweepResult(offsets, self.sections, dict(enumerate(offsets)))
        depth, prefix = self.prefix()
        return SweepResult(None, depth, prefix)

    def offsets(
        self, depth: int, last: Node, reduced: list[Node | None], blocks: list[tuple[Block, ...]]
    ) -> dict[int, int]:
        """Unit offsets by search index of the buffers live in the sections before boundary
        ``depth`` (``last`` the tree there), fixing each section's order from the last back."""
        size = self.size
        offsets: dict[int, int] = {}
        order = frontier(last)
        for t in range(depth - 1, -1, -1):
            below = 0
            for b in order:
                if offsets.setdefault(b, below) != below:
                    raise AssertionError(f"sweep: buffer {b} moved in section {t} (a bug)")
                below += size[b]
            if t == 0:
                break
            rank = {b: i for i, b in enumerate(order)}
            for group, filling in blocks[t]:
                where = min(rank[b] for b in filling)
                for b in group:
                    rank[b] = where
            tree = reduced[t - 1]
            assert tree is not None
            previous = order_by(tree, rank)
            if previous is None:
                raise AssertionError(f"sweep: no order for section {t - 1} (a bug)")
            order = previous
        return offsets


class SweepResult(NamedTuple):
    """A sweep's result: the unit offsets (by search index) when it placed every buffer, else
    ``None``; and the deepest boundary it reached, with the unit offsets of the buffers live
    before it there (``prefix``: a tiling of those sections, full but for the gaps). A named
    tuple, not a frozen dataclass: racing workers send it back pickled, which a compiled
    frozen dataclass refuses (see ``compiled``)."""

    offsets: list[int] | None
    depth: int
    prefix: dict[int, int]


def sweep_sections(
    sections: Sections, *, max_nodes: int, deadline: float, seed: int = 0
) -> SweepResult:
    """The sweep over ``sections``, which must be exactly full (``padded`` where they are
    short); stops after ``max_nodes`` nodes or at ``deadline``."""
    search = _Sweep(sections)
    return search.result(search.solve(max_nodes, deadline, seed))


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

    ``None`` without searching when the sweep does not ``suits`` the capacity. Stops after
    ``max_nodes`` nodes or at ``deadline`` (a ``time.perf_counter`` value).
    """
    sections = build_sections(intervals, alignment)
    rows = capacity // sections.unit
    if not suits(sections, rows):
        return None
    sections = sections.padded(rows)
    offsets = sweep_sections(sections, max_nodes=max_nodes, deadline=deadline, seed=seed).offsets
    if offsets is None:
        return None
    return sections.placement(intervals, offsets, alignment, NAME)
