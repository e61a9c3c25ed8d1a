"""An `attention` work item (`fusion.attention_chain`) seen one score row at a time: the
index arithmetic both targets' kernels share.

A *row* is an index of the scores S without its last dim (the keys, `k`): the scores
product's batch dims, then its lhs free dims. Per row, S[row, k] sums the scores product
over its contracting dims `c`; the values product reads the probabilities P[row, k] and
the values V at (its batch dims, `k`, its free dims `dv`) and writes the output at (its
batch dims, then its lhs free dims, then its rhs free dims), all of them fixed by `row`
and `dv`.

Invariants: the scores product has one rhs free dim (the keys, S's last); the values
product contracts P's last dim and nothing else of P; both products' operands are read
through `dot_operand_source` (a widening convert is an operand prologue).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from accy.dialects import accy as ops
from accy.passes.dot_layout import free_dims
from accy.passes.element_types import shape_of
from accy.passes.fusion import attention_products, dot_operand_source
from accy.passes.schedule import WorkItem
from xdsl.ir import Operation, SSAValue


@dataclass(frozen=True)
class AttentionRows:
    """What an attention kernel computes, per row of its scores."""

    scores: ops.DotGeneralOp
    """The scores product S (its rhs's one free dim: the keys)."""
    values: ops.DotGeneralOp
    """The values product: P contracted with V over the keys."""
    side: int
    """Which operand of `values` P is (0: lhs)."""
    reductions: tuple[ops.ReduceOp, ...]
    """The chain's reductions over the keys, in program order (each may read the earlier)."""
    evaluated: tuple[Operation, ...]
    """The members evaluated element by element: all but the products and reductions."""

    @staticmethod
    def of(item: WorkItem) -> AttentionRows:
        products = attention_products(item.members)
        assert products is not None, "an attention item holds two products"
        scores, values = products
        members = set(item.members)
        lhs = values.lhs  # P is computed in the group; V is loaded (maybe through a convert)
        side = 0 if lhs.owner in members and dot_operand_source(lhs) is lhs else 1
        reductions = tuple(m for m in item.members if isinstance(m, ops.ReduceOp))
        skipped = {scores, values, *reductions}
        evaluated = tuple(m for m in item.members if m not in skipped)
        return AttentionRows(scores, values, side, reductions, evaluated)

    # ------------------------------------------------------------------ shapes

    @property
    def probabilities(self) -> SSAValue:
        return (self.values.lhs, self.values.rhs)[self.side]

    @property
    def value_operand(self) -> SSAValue:
        """V as the values product reads it (its convert's operand if it has one)."""
        return dot_operand_source((self.values.rhs, self.values.lhs)[self.side])

    @property
    def row_shape(self) -> list[int]:
        return list(shape_of(self.scores.result)[:-1])

    @property
    def keys(self) -> int:
        return shape_of(self.scores.result)[-1]

    def dims(self, op: ops.DotGeneralOp, side: int) -> tuple[list[int], list[int], list[int]]:
        """Batch, contracting and free dims of `op`'s operand `side`."""
        batch, contracting = list(op.batching[side]), list(op.contracting[side])
        rank = len(shape_of((op.lhs, op.rhs)[side]))
        return batch, contracting, free_dims(rank, batch, contracting)

    @property
    def contracting_shape(self) -> list[int]:
        """The sizes of the scores product's contracting dims (`c`)."""
        _, contracting, _ = self.dims(self.scores, 0)
        return [shape_of(self.scores.lhs)[d] for d in contracting]

    @property
    def value_shape(self) -> list[int]:
        """The sizes of V's free dims (`dv`)."""
        _, _, free = self.dims(self.values, 1 - self.side)
        return [shape_of(self.value_operand)[d] for d in free]

    # ----------------------------------------------------------------- indices

    @property
    def query(self) -> SSAValue:
        return dot_operand_source(self.scores.lhs)

    @property
    def key(self) -> SSAValue:
        return dot_operand_source(self.scores.rhs)

    def query_index(self, row: Sequence[SSAValue], c: Sequence[SSAValue]) -> list[SSAValue]:
        """The scores product's lhs index at `row` and contracting position `c`."""
        batch, contracting, free = self.dims(self.scores, 0)
        index: list[SSAValue | None] = [None] * len(shape_of(self.scores.lhs))
        for d, i in zip([*batch, *free, *contracting], [*row, *c], strict=True):
            index[d] = i
        return index  # type: ignore[return-value]

    def key_index(
        self, row: Sequence[SSAValue], k: SSAValue, c: Sequence[SSAValue]
    ) -> list[SSAValue]:
        """The scores product's rhs index at `row`, key `k` and contracting position `c`."""
        batch, contracting, (keys,) = self.dims(self.scores, 1)
        index: list[SSAValue | None] = [None] * len(shape_of(self.scores.rhs))
        for d, i in zip([*batch, *contracting, keys], [*row[: len(batch)], *c, k], strict=True):
            index[d] = i
        return index  # type: ignore[return-value]

    def _probability_batch(self, row: Sequence[SSAValue]) -> list[SSAValue]:
        """The values product's batch indices at `row` (P's index is `[*row, k]`)."""
        batch, _, _ = self.dims(self.values, self.side)
        return [row[d] for d in batch]

    def value_index(
        self, row: Sequence[SSAValue], k: SSAValue, dv: Sequence[SSAValue]
    ) -> list[SSAValue]:
        """V's index at `row` (its heads suffice), key `k` and free position `dv`."""
        batch, (keys,), free = self.dims(self.values, 1 - self.side)
        at_batch = self._probability_batch(row)
        index: list[SSAValue | None] = [None] * len(shape_of(self.value_operand))
        for d, i in zip([*batch, keys, *free], [*at_batch, k, *dv], strict=True):
            index[d] = i
        return index  # type: ignore[return-value]

    def output_index(self, row: Sequence[SSAValue], dv: Sequence[SSAValue]) -> list[SSAValue]:
        """The values product's result index at `row` and V's free position `dv`."""
        _, _, free_dims = self.dims(self.values, self.side)
        batch, free = self._probability_batch(row), [row[d] for d in free_dims]
        return [*batch, *free, *dv] if self.side == 0 else [*batch, *dv, *free]
