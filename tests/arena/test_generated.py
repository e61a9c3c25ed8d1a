"""The generated problems: full at every item, and ids that do not give the answer away."""

from __future__ import annotations

from accy.passes.arena import BufferInterval
from accy.passes.arena.sections import build_sections


def _full_at_every_item(intervals: list[BufferInterval], height: int) -> bool:
    """Every section holds exactly ``height`` 256-byte units."""
    sections = build_sections(intervals, 256)
    return set(sections.live) == {height * 256 // sections.unit}


def test_churn_and_cut_are_full_at_every_item(churn, guillotine) -> None:
    for seed in range(5):
        assert _full_at_every_item(churn(seed, items=12, height=16), 16)
        assert _full_at_every_item(guillotine(seed, 40), 16)


def test_churn_ids_are_not_in_generation_order(churn) -> None:
    # churn makes each buffer when it ends, the ones ending together from the bottom up: ids
    # in that order would tell a packer that breaks ties by id the answer. They are shuffled.
    intervals = churn(3, items=20, height=32)
    assert [interval.id for interval in intervals] == list(range(len(intervals)))
    ends = [interval.end for interval in intervals]
    assert ends != sorted(ends)
