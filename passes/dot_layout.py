"""How a `dot_general` reads its operands: the layouts a product reads contiguously.

A product of one contracting dim reads its operands contiguously in one of two forms:

- `columns`: the rhs's last dim is its last free dim (N): each contracting position `k`
  reads a run of N from the rhs (the lhs, one scalar per output row, in any layout);
- `rows`: both operands' last dims are their contracting dims (`A . B^T`): each output
  element reads runs of K from both.

The CPU target's register tiles compute these forms (`accy.passes.lower.cpu.dot_tiling`);
`accy-fold-into-dots` folds a transpose or broadcast into a product only where the product keeps one.
"""

from __future__ import annotations

from collections.abc import Sequence

DimPair = tuple[Sequence[int], Sequence[int]]


def free_dims(rank: int, batching: Sequence[int], contracting: Sequence[int]) -> list[int]:
    """An operand's dims that are neither batching nor contracting, in order."""
    return [d for d in range(rank) if d not in batching and d not in contracting]


def contiguous_form(
    lhs_rank: int, rhs_rank: int, batching: DimPair, contracting: DimPair
) -> str | None:
    """`columns`, `rows` or None (see the module docstring)."""
    rb, (lc, rc) = batching[1], contracting
    if len(lc) != 1:
        return None
    r_free = free_dims(rhs_rank, rb, rc)
    if r_free and r_free[-1] == rhs_rank - 1:
        return "columns"
    if r_free and rc[0] == rhs_rank - 1 and lc[0] == lhs_rank - 1:
        return "rows"
    return None
