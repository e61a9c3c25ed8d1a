"""The restart schedule shared by the arena searches."""

from accy.passes.arena.restarts import luby


def test_luby_sequence() -> None:
    assert [luby(i) for i in range(1, 16)] == [1, 1, 2, 1, 1, 2, 4, 1, 1, 2, 1, 1, 2, 4, 8]
