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
