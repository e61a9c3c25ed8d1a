"""The interface of the arena's exact searches: a placement within one capacity, by nodes.

An exact search tries one capacity (in bytes, rounded down to the problem's unit) and either
places every buffer within it or gives up after ``max_nodes`` nodes. Each search module provides
its own ``EXACT``, an ``ExactSearch``: ``search`` (skyline branch-and-bound), ``tiling`` (exact
cover over offset domains) and ``stitch`` (the time sweeps, raced and stitched). ``pack``
drives them through one table, each with a share of its budget turned into a node cap.

Invariants: a search ``suits`` a capacity or is not tried there (``fit`` then returns an empty
``ExactFit`` without searching); ``ExactFit.placement`` is a valid placement of every buffer,
within the capacity (``stitch``: or within its relaxed capacity one unit above, see there);
``ExactFit.start`` is a valid placement too, of any height, offered as a start for window
repacking when none within the capacity was found. The result depends only on the problem, the capacity,
the node cap and the seed (and, for ``stitch``, not on ``workers``); ``deadline`` (a
``time.perf_counter`` value) is a safety stop.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from accy.passes.arena.problem import BufferInterval, Placement
from accy.passes.arena.sections import Sections


@dataclass(frozen=True)
class ExactFit:
    """What an exact search found: a placement within the capacity, or ``None``; and, when
    it found none, perhaps a start for window repacking (see the module doc)."""

    placement: Placement | None = None
    start: Placement | None = None


@dataclass(frozen=True)
class Attempt:
    """One exact search's task: place ``intervals`` (aligned to ``alignment``) within
    ``capacity`` bytes in at most ``max_nodes`` nodes, by ``deadline``, from ``seed``, with
    ``workers`` processes (only ``stitch`` uses more than one)."""

    intervals: Sequence[BufferInterval]
    alignment: int
    capacity: int
    max_nodes: int
    deadline: float
    seed: int
    workers: int = 1


@dataclass(frozen=True)
class ExactSearch:
    """An exact search: its ``name`` (its module's ``NAME``), whether it ``suits`` a problem's
    sections at a capacity in units, and its ``fit`` of an ``Attempt``."""

    name: str
    suits: Callable[[Sections, int], bool]
    fit: Callable[[Attempt], ExactFit]


class OneProcessFit(Protocol):
    """``fit(intervals, alignment, capacity, max_nodes=, deadline=, seed=)``: a search that
    runs in the calling process and returns a placement or ``None``."""

    def __call__(
        self,
        intervals: Sequence[BufferInterval],
        alignment: int,
        capacity: int,
        *,
        max_nodes: int,
        deadline: float,
        seed: int,
    ) -> Placement | None: ...


def one_process(
    name: str, suits: Callable[[Sections, int], bool], fit: OneProcessFit
) -> ExactSearch:
    """The ``ExactSearch`` of a search that runs in one process (``workers`` is not used)."""

    def exact_fit(attempt: Attempt) -> ExactFit:
        placement = fit(
            attempt.intervals,
            attempt.alignment,
            attempt.capacity,
            max_nodes=attempt.max_nodes,
            deadline=attempt.deadline,
            seed=attempt.seed,
        )
        return ExactFit(placement)

    return ExactSearch(name, suits, exact_fit)
