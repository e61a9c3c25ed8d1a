"""Shared problems of the arena tests."""

from __future__ import annotations

import random

import pytest
from accy.passes.arena import BufferInterval


def _guillotine(seed: int, count: int, items: int = 12, height: int = 16) -> list[BufferInterval]:
    """A full ``items`` x ``height``-unit rectangle cut into ``count`` buffers (256-byte units,
    less a random slack): every item is exactly full, so the lower bound is the optimum."""
    rng = random.Random(seed)
    pieces = [(0, items, 0, height)]
    while len(pieces) < count:
        index = rng.randrange(len(pieces))
        t0, t1, a0, a1 = pieces[index]
        if t1 - t0 > 1 and (a1 - a0 == 1 or rng.random() < 0.5):
            cut = rng.randint(t0 + 1, t1 - 1)
            pieces[index : index + 1] = [(t0, cut, a0, a1), (cut, t1, a0, a1)]
        elif a1 - a0 > 1:
            cut = rng.randint(a0 + 1, a1 - 1)
            pieces[index : index + 1] = [(t0, t1, a0, cut), (t0, t1, cut, a1)]
    return [
        BufferInterval(i, t0, t1 - 1, (a1 - a0) * 256 - rng.randrange(256))
        for i, (t0, t1, a0, a1) in enumerate(pieces)
    ]


@pytest.fixture(scope="session")
def guillotine():
    """`_guillotine`, for tests (a session fixture, so hypothesis tests may take it too)."""
    return _guillotine


def _churn(seed: int, items: int = 8, height: int = 16) -> list[BufferInterval]:
    """A full ``height``-unit arena over ``items`` work items where, at each item, random
    buffers end and the freed runs of rows (merged across neighbours) are cut into new
    buffers: every item is exactly full, so the lower bound is the optimum."""
    rng = random.Random(seed)
    buffers: list[BufferInterval] = []
    live: list[tuple[int, int, int]] = []  # (low unit, high unit, first item)

    def cut(low: int, high: int, first: int) -> None:
        while low < high:
            width = min(high - low, rng.randint(1, 4))
            live.append((low, low + width, first))
            low += width

    cut(0, height, 0)
    for item in range(items):
        ended = sorted(s for s in live if item == items - 1 or rng.random() < 0.3)
        for low, high, first in ended:
            size = (high - low) * 256 - rng.randrange(256)
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
    return buffers


@pytest.fixture(scope="session")
def churn():
    """`_churn`, for tests."""
    return _churn
