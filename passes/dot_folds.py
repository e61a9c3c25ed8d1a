"""`accy-fold-into-dots`: products read transposed and broadcast operands in place and
write transposed results directly.

`dot_general` takes its dimension numbers in any layout, so a transpose or broadcast next
to a product can often become part of it:

- a transposed operand: `dot_general(transpose(x, perm), y)` reads `x` with each dimension
  number `d` replaced by `perm[d]`, when the operand's free dims keep their order (they
  order the result);
- a broadcast operand: `dot_general(broadcast_in_dim(x), y)` whose broadcast only adds
  batch dims (weights shared by a batch) reads `x`, the other operand's matching batch
  dims becoming free dims, when the result keeps its order;
- a transposed result: `transpose(dot_general(a, b))` whose permutation keeps the batch
  dims first and puts the rhs's free dims before the lhs's (each in order) is
  `dot_general(b, a)`, when the transpose is the product's one user;
- operands swapped for a contiguous form: `transpose(dot_general(a, b))`, where the
  product has no contiguous form but `dot_general(b, a)` has one and the transpose then
  keeps its last dim last, becomes the transpose of `dot_general(b, a)` that gives the
  same result: attention's `probs . v`, which JAX writes with `v` first and its heads put
  back in place by the transpose, runs on the register tiles, and the transpose moves
  runs of the head dim.

A transpose or broadcast left without users is erased (one with other users stays for
them). A fold is made only where the product keeps a contiguous form
(`accy.passes.dot_layout`) if it had one, so a product never loses its register tiles to a
fold. The StableHLO importer runs this pass: JAX writes `x @ w.T`, attention's `q @ k.T`
and gradients' `x.T @ g` with explicit transposes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from accy.dialects import accy as ops
from accy.passes.dot_layout import DimPair, contiguous_form, free_dims
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
)
from xdsl.rewriter import InsertPoint


def _rank(value: SSAValue) -> int:
    return value.type.get_num_dims()  # type: ignore[attr-defined]


def _dims(attribute) -> list[int]:
    return [int(d) for d in attribute.get_values()]


def _keeps_form(old: ops.DotGeneralOp, lhs: SSAValue, rhs: SSAValue, batching, contracting):
    """Whether a product of `lhs` and `rhs` with these dimension numbers keeps `old`'s
    contiguity: a contiguous form if `old` had one."""
    before = contiguous_form(_rank(old.lhs), _rank(old.rhs), old.batching, old.contracting)
    after = contiguous_form(_rank(lhs), _rank(rhs), batching, contracting)
    return before is None or after is not None


def _replace(
    rewriter: PatternRewriter,
    old: Operation,
    dot: ops.DotGeneralOp,
    operands: Sequence[SSAValue],
    batching: DimPair,
    contracting: DimPair,
    result_type,
) -> bool:
    """Replace `old` by a product of `operands` with these dimension numbers (and `dot`'s
    attributes), unless that loses `dot`'s contiguous form; whether it did."""
    lhs, rhs = operands
    if not _keeps_form(dot, lhs, rhs, batching, contracting):
        return False
    new = ops.DotGeneralOp(
        lhs, rhs, batching=batching, contracting=contracting, result_type=result_type
    )
    new.attributes.update(dot.attributes)
    rewriter.replace(old, new)
    return True


def _erase_if_unused(rewriter: PatternRewriter, op: Operation) -> None:
    if not op.results[0].uses:
        rewriter.erase(op)


class OperandTranspose(RewritePattern):
    """`dot_general(transpose(x), y)` (or `y`'s side) → `dot_general(x, y)`."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, ops.DotGeneralOp):
            return
        for side in (0, 1):
            transpose = op.operands[side].owner
            if not isinstance(transpose, ops.TransposeOp):
                continue
            perm = _dims(transpose.permutation)
            batching = [list(d) for d in op.batching]
            contracting = [list(d) for d in op.contracting]
            moved = [perm[d] for d in free_dims(len(perm), batching[side], contracting[side])]
            if moved != sorted(moved):  # the free dims order the result
                continue
            batching[side] = [perm[d] for d in batching[side]]
            contracting[side] = [perm[d] for d in contracting[side]]
            operands = list(op.operands)
            operands[side] = transpose.operand
            pair_b, pair_c = (batching[0], batching[1]), (contracting[0], contracting[1])
            if _replace(rewriter, op, op, operands, pair_b, pair_c, op.result.type):
                _erase_if_unused(rewriter, transpose)
                return


def _result_order(ranks, batching, contracting, other: int, x_dim) -> list:
    """The result dims of a product in its order (batch, lhs free, rhs free), each named
    by the dim of operand `other` it walks, or by `x_dim` of the other operand's dim."""
    order = [("other", d) for d in batching[other]]
    for side in (0, 1):
        for d in free_dims(ranks[side], batching[side], contracting[side]):
            order.append(("other", d) if side == other else ("x", x_dim(d)))
    return order


class OperandBroadcast(RewritePattern):
    """`dot_general(broadcast_in_dim(x), y)` adding batch dims only → `dot_general(x, y)`
    with `y`'s matching batch dims free (or the same on `y`'s side)."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, ops.DotGeneralOp):
            return
        for side in (0, 1):
            broadcast = op.operands[side].owner
            if not isinstance(broadcast, ops.BroadcastInDimOp):
                continue
            x, other = broadcast.operand, 1 - side
            dims = _dims(broadcast.broadcast_dimensions)
            shape = broadcast.result.type.get_shape()  # type: ignore[attr-defined]
            source = x.type.get_shape()  # type: ignore[attr-defined]
            if any(source[i] != shape[d] for i, d in enumerate(dims)):
                continue  # a size-1 dim stretched: not a layout
            added = {d for d in range(len(shape)) if d not in dims}
            batching, contracting = op.batching, op.contracting
            if not added or not added <= set(batching[side]):
                continue
            x_dim = {d: i for i, d in enumerate(dims)}
            kept = [t for t, d in enumerate(batching[side]) if d not in added]
            new_b = [[], []]
            new_b[side] = [x_dim[batching[side][t]] for t in kept]
            new_b[other] = [batching[other][t] for t in kept]
            new_c = [[], []]
            new_c[side] = [x_dim[d] for d in contracting[side]]
            new_c[other] = list(contracting[other])
            old_ranks = (_rank(op.lhs), _rank(op.rhs))
            ranks = list(old_ranks)
            ranks[side] = len(source)
            before = _result_order(old_ranks, batching, contracting, other, x_dim.__getitem__)
            after = _result_order(ranks, new_b, new_c, other, lambda d: d)
            if before != after:
                continue
            operands = list(op.operands)
            operands[side] = x
            pair_b, pair_c = (new_b[0], new_b[1]), (new_c[0], new_c[1])
            if _replace(rewriter, op, op, operands, pair_b, pair_c, op.result.type):
                _erase_if_unused(rewriter, broadcast)
                return


def _swaps_free_blocks(perm: Sequence[int], batch: int, lhs_free: int, rhs_free: int) -> bool:
    """Whether `perm` keeps the first `batch` dims and puts the last `rhs_free` dims
    before the `lhs_free` ones, each block in order."""
    expected = [
        *range(batch),
        *range(batch + lhs_free, batch + lhs_free + rhs_free),
        *range(batch, batch + lhs_free),
    ]
    return list(perm) == expected


def _transposed_product(op: Operation) -> ops.DotGeneralOp | None:
    """The product `op` transposes, where `op` is a transpose and its only user."""
    if not isinstance(op, ops.TransposeOp):
        return None
    dot = op.operand.owner
    if not isinstance(dot, ops.DotGeneralOp) or not dot.result.has_one_use():
        return None
    return dot


class ResultTranspose(RewritePattern):
    """`transpose(dot_general(a, b))` swapping the free dims → `dot_general(b, a)`."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        dot = _transposed_product(op)
        if dot is None:
            return
        (lb, rb), (lc, rc) = dot.batching, dot.contracting
        lhs_free = free_dims(_rank(dot.lhs), lb, lc)
        rhs_free = free_dims(_rank(dot.rhs), rb, rc)
        if not lhs_free or not rhs_free:
            return
        if not _swaps_free_blocks(_dims(op.permutation), len(lb), len(lhs_free), len(rhs_free)):
            return
        result_type = op.result.type
        assert isinstance(result_type, TensorType)
        operands = (dot.rhs, dot.lhs)
        if _replace(rewriter, op, dot, operands, (rb, lb), (rc, lc), result_type):
            rewriter.erase(dot)


class SwappedOperands(RewritePattern):
    """`transpose(dot_general(a, b), perm)` without a contiguous form →
    `transpose(dot_general(b, a), perm')` with one, `perm'` keeping the last dim."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        dot = _transposed_product(op)
        if dot is None:
            return
        (lb, rb), (lc, rc) = dot.batching, dot.contracting
        ranks = (_rank(dot.lhs), _rank(dot.rhs))
        if contiguous_form(*ranks, dot.batching, dot.contracting) is not None:
            return
        if contiguous_form(ranks[1], ranks[0], (rb, lb), (rc, lc)) is None:
            return
        nb, nl = len(lb), len(free_dims(ranks[0], lb, lc))
        nr = len(free_dims(ranks[1], rb, rc))
        # the product's dim i is the swapped product's dim swapped[i]
        swapped = [*range(nb), *range(nb + nr, nb + nr + nl), *range(nb, nb + nr)]
        permutation = [swapped[d] for d in _dims(op.permutation)]
        if permutation[-1] != len(permutation) - 1:
            return
        shape = _swapped_shape(dot, nb, nl)
        new = ops.DotGeneralOp(
            dot.rhs,
            dot.lhs,
            batching=(rb, lb),
            contracting=(rc, lc),
            result_type=TensorType(dot.result.type.get_element_type(), shape),  # type: ignore[attr-defined]
        )
        new.attributes.update(dot.attributes)
        rewriter.insert(new, InsertPoint.before(op))
        rewriter.replace(op, ops.TransposeOp(new.result, permutation, op.result.type))  # type: ignore[arg-type]
        rewriter.erase(dot)


def _swapped_shape(dot: ops.DotGeneralOp, nb: int, nl: int) -> list[int]:
    """The result shape of `dot` with its operands swapped (batch, rhs free, lhs free)."""
    shape = dot.result.type.get_shape()  # type: ignore[attr-defined]
    return [*shape[:nb], *shape[nb + nl :], *shape[nb : nb + nl]]


def fold_into_dots(module: ModuleOp) -> None:
    """Fold the transposes and broadcasts next to every product of `module` into it (the
    module docstring)."""
    patterns = GreedyRewritePatternApplier(
        [OperandTranspose(), OperandBroadcast(), ResultTranspose(), SwappedOperands()]
    )
    PatternRewriteWalker(patterns).rewrite_module(module)


@dataclass(frozen=True)
class FoldIntoDotsPass(ModulePass):
    """Folds transposes and broadcasts into the products they feed or read (see the
    module docstring)."""

    name = "accy-fold-into-dots"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        fold_into_dots(op)
