"""Generated arena problems whose optimum is known: every work item is exactly full.

Both generators fill a ``height``-unit arena over ``items`` work items with no gap, so the
lower bound (max live bytes) is the optimum and a packer's ratio to it is its distance from
optimal. Sizes are a whole number of ``alignment`` units less a random slack below one unit,
so rounding up to the alignment is exercised. Ids are a random permutation: in generation
order they would tell a packer the answer (both generators emit neighbours in address order),
and every packer here breaks ties by id. Used by ``benchmarks/packing.py`` and the tests.

- ``cut_rectangle``: the rectangle cut by random guillotine cuts (in time or in address).
- ``churn``: at each item random buffers end, and the freed runs of rows (merged across
  neighbours) are cut into new buffers of 1..``max_width`` units.
"""

from __future__ import annotations

import random

from accy.passes.arena.problem import DEFAULT_ALIGNMENT, BufferInterval


def _slack_size(rng: random.Random, units: int, alignment: int) -> int:
    """``units`` alignment units less a random slack below one unit."""
    return units * alignment - rng.randrange(alignment)


def _shuffled_ids(rng: random.Random, buffers: list[BufferInterval]) -> list[BufferInterval]:
    """``buffers`` with ids ``0..n-1`` in a random order, listed by id."""
    ids = list(range(len(buffers)))
    rng.shuffle(ids)
    relabelled = [BufferInterval(i, b.start, b.end, b.size) for i, b in zip(ids, buffers)]
    return sorted(relabelled, key=lambda interval: interval.id)


def cut_rectangle(
    rng: random.Random,
    count: int,
    *,
    items: int,
    height: int,
    alignment: int = DEFAULT_ALIGNMENT,
) -> list[BufferInterval]:
    """An ``items`` x ``height``-unit rectangle cut into ``count`` buffers (fewer when no
    piece can be cut further)."""
    pieces = [(0, items, 0, height)]  # (first item, last item + 1, low unit, high unit)
    while len(pieces) < min(count, items * height):
        index = rng.randrange(len(pieces))
        t0, t1, a0, a1 = pieces[index]
        if t1 - t0 > 1 and (a1 - a0 == 1 or rng.random() < 0.5):
            cut = rng.randint(t0 + 1, t1 - 1)
            pieces[index : index + 1] = [(t0, cut, a0, a1), (cut, t1, a0, a1)]
        elif a1 - a0 > 1:
            cut = rng.randint(a0 + 1, a1 - 1)
            pieces[index : index + 1] = [(t0, t1, a0, cut), (t0, t1, cut, a1)]
    buffers = [
        BufferInterval(i, t0, t1 - 1, _slack_size(rng, a1 - a0, alignment))
        for i, (t0, t1, a0, a1) in enumerate(pieces)
    ]
    return _shuffled_ids(rng, buffers)


def churn(
    rng: random.Random,
    *,
    items: int,
    height: int,
    max_width: int,
    alignment: int = DEFAULT_ALIGNMENT,
) -> list[BufferInterval]:
    """A ``height``-unit arena over ``items`` items, re-cut wherever buffers end (each live
    buffer ends at an item with probability 0.3; all end at the last item)."""
    buffers: list[BufferInterval] = []
    live: list[tuple[int, int, int]] = []  # (low unit, high unit, first item)

    def cut(low: int, high: int, first: int) -> None:
        while low < high:
            width = min(high - low, rng.randint(1, max_width))
            live.append((low, low + width, first))
            low += width

    cut(0, height, 0)
    for item in range(items):
        ended = sorted(s for s in live if item == items - 1 or rng.random() < 0.3)
        for low, high, first in ended:
            size = _slack_size(rng, high - low, alignment)
            buffers.append(BufferInterval(len(buffers), first, item, size))
        live[:] = [s for s in live if s not in ended]
        runs: list[list[int]] = []
        for low, high, _ in ended:
            if runs and runs[-1][1] == low:
                runs[-1][1] = high
            else:
                runs.append([low, high])
        for low, high in runs if item < items - 1 else []:
            cut(low, high, item + 1)
    return _shuffled_ids(rng, buffers)
