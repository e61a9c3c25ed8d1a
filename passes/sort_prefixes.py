"""`accy-sort-prefixes`: a sort whose results are read only through leading slices keeps
only those elements.

When every use of every result of an `accy.sort` is an `accy.slice` that keeps the first
`k` elements along the sort's dim (start 0, stride 1) and every other dim whole, with one
`k` for all of them, the sort's results become those slices (`accy.sort` results may be
shorter than its operands along `dim`). `lax.top_k` (`chlo.top_k`, which the importer
expands as XLA does: a sort of the values and their positions, then the first k) becomes a
sort that keeps k elements of each slice, which the CPU target computes by bounded
insertion straight into the results, without a sorted copy of the whole operand.
"""

from __future__ import annotations

from dataclasses import dataclass

from accy.dialects import accy as ops
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, PatternRewriteWalker, RewritePattern


def leading_extent(slice_op: ops.SliceOp, dim: int) -> int | None:
    """`k` when `slice_op` keeps the first `k` elements along `dim` and every other dim
    whole (start 0, stride 1), else None."""
    shape = slice_op.operand.type.get_shape()  # type: ignore[attr-defined]
    starts = slice_op.start_indices.get_values()
    limits = slice_op.limit_indices.get_values()
    strides = slice_op.strides.get_values()
    if any(starts) or any(s != 1 for s in strides):
        return None
    if any(limit != size for d, (limit, size) in enumerate(zip(limits, shape)) if d != dim):
        return None
    return limits[dim]


class SortLeadingSlices(RewritePattern):
    """A sort read only through leading slices of one extent → a sort keeping that many."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, ops.SortOp) or not op.inputs[0].type.get_shape():  # type: ignore[attr-defined]
            return
        extents = set()
        for result in op.res:
            for use in result.uses:
                user = use.operation
                if not isinstance(user, ops.SliceOp):
                    return
                extents.add(leading_extent(user, op.dim))
        if len(extents) != 1 or None in extents:
            return
        (kept,) = extents
        if kept == op.kept:  # slices of everything
            for result in op.res:
                for use in list(result.uses):
                    rewriter.replace(use.operation, [], new_results=[result])
            return
        region = op.detach_region(op.comparator)
        sort = ops.SortOp(
            list(op.inputs), op.dim, region, stable=op.is_stable is not None, extent=kept
        )
        sort.attributes.update(op.attributes)
        rewriter.insert(sort)
        for old, new in zip(op.res, sort.res):
            for use in list(old.uses):
                rewriter.replace(use.operation, [], new_results=[new])
        rewriter.erase(op)


def sort_prefixes(module: ModuleOp) -> None:
    """Fold the leading slices of every sort of `module` into it (the module docstring)."""
    PatternRewriteWalker(SortLeadingSlices()).rewrite_module(module)


@dataclass(frozen=True)
class SortPrefixesPass(ModulePass):
    """Folds the leading slices that read a sort into it (see the module docstring)."""

    name = "accy-sort-prefixes"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        sort_prefixes(op)
