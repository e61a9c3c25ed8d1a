"""The restart schedule of the arena searches (``search``, ``tiling``, ``sweep``).

Each search runs in rounds cut off after ``luby(round)`` times a unit of nodes and restarts
with new choices; the Luby sequence (Luby, Sinclair and Zuckerman, 1993) keeps a round's
expected waste within a log factor of the best fixed cut-off, without knowing it.
"""

from __future__ import annotations


def luby(i: int) -> int:
    """The ``i``-th term (from 1) of the Luby sequence 1 1 2 1 1 2 4 1 1 2 1 1 2 4 8 ..."""
    k = 1
    while (1 << k) - 1 < i:
        k += 1
    while i != (1 << k) - 1:
        i -= (1 << (k - 1)) - 1
        k = 1
        while (1 << k) - 1 < i:
            k += 1
    return 1 << (k - 1)
