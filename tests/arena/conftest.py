"""Shared problems of the arena tests (``accy.passes.arena.generated``, seeded)."""

from __future__ import annotations

import random

import pytest
from accy.passes.arena import BufferInterval
from accy.passes.arena.generated import churn as generated_churn
from accy.passes.arena.generated import cut_rectangle


def _guillotine(seed: int, count: int, items: int = 12, height: int = 16) -> list[BufferInterval]:
    """A full ``items`` x ``height``-unit rectangle cut into ``count`` buffers (256-byte units,
    less a random slack): every item is exactly full, so the lower bound is the optimum."""
    return cut_rectangle(random.Random(seed), count, items=items, height=height)


@pytest.fixture(scope="session")
def guillotine():
    """`_guillotine`, for tests (a session fixture, so hypothesis tests may take it too)."""
    return _guillotine


def _churn(seed: int, items: int = 8, height: int = 16) -> list[BufferInterval]:
    """A full ``height``-unit arena over ``items`` work items, re-cut into buffers of 1..4
    units wherever buffers end: every item is exactly full, so the lower bound is the optimum."""
    return generated_churn(random.Random(seed), items=items, height=height, max_width=4)


@pytest.fixture(scope="session")
def churn():
    """`_churn`, for tests."""
    return _churn


# Units of 256 bytes; full at 6 units in every item (the last six buffers fill each item).
# a (1 unit) lives in items 1..4, b (2) in 0..2, c (2) in 2..5. At 6 units:
# item 0 holds b and a 4-unit filler, so b is at 0 or 4; item 5 likewise puts c at 0 or 4;
# item 2 holds a, b, c and 1 unit: b and c take rows 0..1 and 4..5, a is at 2 or 3.
# Item 1 holds a, b and a 3-unit filler: with b at 0, a must be at 2 (rows 3..5 free);
# item 3 holds a, c and a 3-unit filler: c is then at 4, so a must be at 3. No placement
# (b at 4 is the same upside down). At 7 units the gap gives the fillers room.
_NO_TILING = [
    BufferInterval(i, start, end, units * 256)
    for i, (start, end, units) in enumerate(
        [(1, 4, 1), (0, 2, 2), (2, 5, 2), (0, 0, 4), (1, 1, 3), (2, 2, 1)]
        + [(3, 3, 3), (4, 4, 3), (5, 5, 4)]
    )
]


@pytest.fixture(scope="session")
def no_tiling() -> list[BufferInterval]:
    """``_NO_TILING``: full at 6 units with no placement there, placed at 7."""
    return _NO_TILING
