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
