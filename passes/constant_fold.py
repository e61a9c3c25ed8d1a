"""`accy-fold-constants`: compute single-element values of constants at compile time.

An exactly rounded elementwise op (arithmetic without transcendentals, compare, select,
convert, bitwise ops), a `broadcast_in_dim` or a `reshape` whose operands are all
`accy.constant`s and whose result holds one element becomes an `accy.constant` of the
value `accy.op_semantics.evaluate` computes (the numpy semantics the reference interpreter
runs too): the same bits the compiled targets compute. Such values arise where JAX computes
sizes and normalizers (`N - ddof` of a standard deviation); folded, they need neither a work
item nor a buffer.
Larger values are left to run: folding them would grow the program's constants.
"""

from __future__ import annotations

from dataclasses import dataclass

from accy.dialects import accy as ops
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Operation
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
)

FOLDABLE = (
    ops.AddOp,
    ops.SubtractOp,
    ops.MultiplyOp,
    ops.DivideOp,
    ops.MaximumOp,
    ops.MinimumOp,
    ops.RemainderOp,
    ops.NegateOp,
    ops.AbsOp,
    ops.SignOp,
    ops.FloorOp,
    ops.CeilOp,
    ops.AndOp,
    ops.OrOp,
    ops.XorOp,
    ops.NotOp,
    ops.CompareOp,
    ops.SelectOp,
    ops.ConvertOp,
    ops.BroadcastInDimOp,
    ops.ReshapeOp,
)
"""Ops whose folded value is bit-exact with what the targets compute."""


class FoldSingleElementConstant(RewritePattern):
    """A `FOLDABLE` op of constants with a one-element result → `accy.constant`."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, FOLDABLE) or len(op.results) != 1:
            return
        result_type = op.results[0].type
        if not isinstance(result_type, TensorType) or not result_type.has_static_shape():
            return
        if result_type.element_count() != 1:
            return
        producers = [v.owner for v in op.operands]
        if not all(isinstance(p, ops.ConstantOp) for p in producers):
            return
        from accy import dtypes, op_semantics

        arrays = [op_semantics.evaluate(p) for p in producers]  # type: ignore[arg-type]
        value = op_semantics.evaluate(op, *arrays)
        rewriter.replace(op, ops.ConstantOp(dtypes.dense_attr(result_type, value)))


def fold_constants(module: ModuleOp) -> None:
    """Fold every single-element constant expression of `module` (see the module doc);
    constants left unused are erased."""
    PatternRewriteWalker(FoldSingleElementConstant()).rewrite_module(module)
    for op in list(module.walk()):
        if isinstance(op, ops.ConstantOp) and not op.result.uses:
            op.detach()
            op.erase()


@dataclass(frozen=True)
class FoldConstantsPass(ModulePass):
    """Folds single-element constant expressions into `accy.constant`s (the module doc)."""

    name = "accy-fold-constants"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        fold_constants(op)
