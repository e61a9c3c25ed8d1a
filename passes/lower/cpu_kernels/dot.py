"""CPU lowering of `dot` kernels: a `dot_general` with its operand prologue and its
epilogue (`DotLoops`).

Invariants: register tiles where `cpu_dot.dot_tiling` finds one (`emit_dot_tiles`); else
a product of f32, f64 or integers whose epilogue, if any, ends in its type
(`dot_layout.accumulates_in_output`) zeroes the output, then accumulates into it in loops
batch, i, k, j (j, contiguous, innermost; the last i and k dims blocked by up to
`DOT_ROWS` and `DOT_DEPTH`) and replaces each element by its epilogue's value (the arena
plan gives such an output no input's buffer); any other (f16/bf16, or an epilogue that
ends in another type) accumulates each output element over k in its compute type and
stores it once, rounded, or its epilogue's value (read before the element is written, so
the output may take an epilogue input's buffer). The batch and lhs-free dims run in
parallel.
"""

from __future__ import annotations

from collections.abc import Sequence

from accy.dialects import accy as ops
from accy.passes.dot_layout import accumulates_in_output
from accy.passes.element_types import compute_type, shape_of
from accy.passes.fusion import dot_operand_source
from accy.passes.lower.cpu_dot import emit_dot_tiles
from accy.passes.lower.cpu_kernels.context import (
    PARALLEL_MIN_WORK,
    CpuKernelPattern,
    KernelContext,
    power_of_two_block,
    work,
)
from accy.passes.lower.planned_kernel import PlannedKernel
from accy.passes.lower.scalar import combine, combiner_identity, emit, extend, narrow
from accy.passes.schedule import WorkItem, WorkKind
from xdsl.builder import Builder
from xdsl.dialects import arith, memref, scf
from xdsl.ir import SSAValue

DOT_ROWS = 4
"""f32 dot_general: output rows (last lhs free dim) per block sharing each rhs load."""

DOT_DEPTH = 4
"""f32 dot_general: contracting steps (last contracting dim) per block."""


def dot_loops(ctx: KernelContext, b: Builder, item: WorkItem) -> None:
    """A `dot_general` and its epilogue, if any (see the module docstring): the sums
    go to the kernel's result (which has the product's type), each replaced by the
    epilogue's value there (`KernelContext.epilogue_value`, `epilogue_block`)."""
    root = item.contraction
    assert isinstance(root, ops.DotGeneralOp)
    (lb, rb), (lc, rc) = root.batching, root.contracting
    lhs_sizes, rhs_sizes = ctx.sizes(root.lhs), ctx.sizes(root.rhs)
    l_free = [d for d in range(len(lhs_sizes)) if d not in lb and d not in lc]
    r_free = [d for d in range(len(rhs_sizes)) if d not in rb and d not in rc]
    result_element = root.result.type.get_element_type()
    acc_type = compute_type(result_element)
    target = ctx.memref_of(item.root.results[0])
    zero_kind = ops.CombinerKind.ADD
    lhs_source, rhs_source = dot_operand_source(root.lhs), dot_operand_source(root.rhs)

    def operand(builder: Builder, source: SSAValue, indices) -> SSAValue:
        """An element of an operand's `source` in the accumulator type."""
        loaded = ctx.load(builder, source, indices)
        return extend(builder, loaded, source.type.get_element_type(), acc_type)

    def product(builder: Builder, batch, free_l, contract, free_r) -> SSAValue:
        lhs_idx: list[SSAValue | None] = [None] * len(lhs_sizes)
        rhs_idx: list[SSAValue | None] = [None] * len(rhs_sizes)
        for d, iv in zip(lb, batch):
            lhs_idx[d] = iv
        for d, iv in zip(rb, batch):
            rhs_idx[d] = iv
        for d, iv in zip(l_free, free_l):
            lhs_idx[d] = iv
        for d, iv in zip(r_free, free_r):
            rhs_idx[d] = iv
        for d, iv in zip(lc, contract):
            lhs_idx[d] = iv
        for d, iv in zip(rc, contract):
            rhs_idx[d] = iv
        x = operand(builder, lhs_source, lhs_idx)
        y = operand(builder, rhs_source, rhs_idx)
        return combine(builder, ops.CombinerKind.MUL, x, y)

    batch_sizes = [lhs_sizes[d] for d in lb]
    lfree_sizes = [lhs_sizes[d] for d in l_free]
    rfree_sizes = [rhs_sizes[d] for d in r_free]
    contract_sizes = [lhs_sizes[d] for d in lc]
    nb, nl = len(batch_sizes), len(lfree_sizes)

    if emit_dot_tiles(ctx, b, item, root):
        return

    if not accumulates_in_output(root, item.root):
        # batch, i, j, then k carrying the accumulator (f32 for f16/bf16), rounded
        # once and stored (or its epilogue's value: the output is written only after
        # the epilogue read its inputs there, so it may take one's buffer in place).
        inner, ivs = ctx.parallel_nest(
            b,
            batch_sizes + lfree_sizes + rfree_sizes,
            per_iteration=work(contract_sizes) or PARALLEL_MIN_WORK,
        )
        batch, free_l, free_r = ivs[:nb], ivs[nb : nb + nl], ivs[nb + nl :]

        def build(builder: Builder, position: int, acc: SSAValue, contract: list):
            if position == len(contract_sizes):
                return combine(
                    builder, zero_kind, acc, product(builder, batch, free_l, contract, free_r)
                )
            loop, body, iv, (carried,) = ctx.loop(builder, contract_sizes[position], [acc])
            body.insert(scf.YieldOp(build(body, position + 1, carried, contract + [iv])))
            return loop.results[0]

        total = build(inner, 0, combiner_identity(inner, zero_kind, acc_type), [])
        total = ctx.epilogue_value(inner, item, narrow(inner, total, result_element), ivs)
        ctx.store(inner, total, target, ivs)
        return

    # Zero the output, then batch, i, k, j accumulating into it (j innermost), with
    # the last i dim blocked by up to DOT_ROWS and the last k dim by up to
    # DOT_DEPTH: the block's lhs scalars are loaded once per (i, k) block, and each
    # rhs element loaded in the j loop serves DOT_ROWS output rows (LLVM vectorizes
    # the j loop: per vector, DOT_DEPTH rhs loads and one load/store per output row
    # for DOT_ROWS * DOT_DEPTH multiply-adds).
    zero_inner, zero_ivs = ctx.parallel_nest(b, ctx.sizes(root.result))
    ctx.store(zero_inner, combiner_identity(zero_inner, zero_kind, acc_type), target, zero_ivs)
    lhs_shape = shape_of(root.lhs)
    rows_block = power_of_two_block(lhs_shape[l_free[-1]], DOT_ROWS) if l_free else 1
    depth_block = power_of_two_block(lhs_shape[lc[-1]], DOT_DEPTH) if lc else 1
    steps = [1] * (nb + nl) + [1] * len(contract_sizes)
    if l_free:
        steps[nb + nl - 1] = rows_block
    if lc:
        steps[-1] = depth_block
    outer, ivs = ctx.parallel_nest(
        b,
        batch_sizes + lfree_sizes + contract_sizes,
        steps=steps,
        parallel=nb + nl,
        per_iteration=work(rfree_sizes) or PARALLEL_MIN_WORK,
    )
    batch, free_l, contract = ivs[:nb], ivs[nb : nb + nl], ivs[nb + nl :]

    def offset(builder: Builder, ivs: list, position: int, by: int) -> list:
        if by == 0:
            return ivs
        moved = list(ivs)
        moved[position] = emit(builder, arith.AddiOp(ivs[position], ctx.index(by)))
        return moved

    def operand_indices(sizes, batch_dims, free_dims, contract_dims, free, k):
        idx: list[SSAValue | None] = [None] * len(sizes)
        for d, iv in zip(batch_dims, batch):
            idx[d] = iv
        for d, iv in zip(free_dims, free):
            idx[d] = iv
        for d, iv in zip(contract_dims, k):
            idx[d] = iv
        return idx

    row_ivs = [offset(outer, free_l, nl - 1, t) for t in range(rows_block)]
    depth_ivs = [offset(outer, contract, len(contract) - 1, u) for u in range(depth_block)]
    lhs_values = [
        [
            operand(outer, lhs_source, operand_indices(lhs_sizes, lb, l_free, lc, rows, k))
            for k in depth_ivs
        ]
        for rows in row_ivs
    ]
    inner, free_r = ctx.stepped_loop_nest(outer, rfree_sizes, [1] * len(rfree_sizes))
    rhs_values = [
        operand(inner, rhs_source, operand_indices(rhs_sizes, rb, r_free, rc, free_r, k))
        for k in depth_ivs
    ]
    for rows, lhs_row in zip(row_ivs, lhs_values):
        out_idx = batch + rows + free_r
        acc = emit(inner, memref.LoadOp.get(target, out_idx))
        for x, y in zip(lhs_row, rhs_values):
            acc = combine(inner, zero_kind, acc, combine(inner, ops.CombinerKind.MUL, x, y))
        ctx.store(inner, acc, target, out_idx)
    if item.root is not root:
        out_sizes = ctx.sizes(root.result)
        epilogue_block(ctx, b, item, [None] * len(out_sizes), out_sizes, parallel=True)


def epilogue_block(
    ctx: KernelContext,
    b: Builder,
    item: WorkItem,
    origin: Sequence[SSAValue | None],
    extents: Sequence[SSAValue],
    parallel: bool = False,
) -> None:
    """Replace each product's element staged in the kernel's result over the block
    `origin + [0, extents)` (an origin of None: 0) by its epilogue's value there (a
    parallel nest when `parallel`, else sequential loops)."""
    target = ctx.memref_of(item.root.results[0])
    if parallel:
        inner, ivs = ctx.parallel_nest(b, list(extents))
    else:
        inner, ivs = ctx.stepped_loop_nest(b, list(extents), [1] * len(extents))
    at = [iv if o is None else emit(inner, arith.AddiOp(o, iv)) for o, iv in zip(origin, ivs)]
    total = emit(inner, memref.LoadOp.get(target, at))
    ctx.store(inner, ctx.epilogue_value(inner, item, total, at), target, at)


class DotLoops(CpuKernelPattern):
    """`dot` kernels (a `dot_general` and its epilogue): register tiles, or the output
    zeroed, then loops batch, i, k, j (f16/bf16: accumulated in f32 over k innermost,
    rounded once); see `dot_loops`."""

    def matches(self, kernel: PlannedKernel) -> bool:
        return kernel.kind is WorkKind.DOT

    def emit(self, b: Builder, ctx: KernelContext) -> None:
        dot_loops(ctx, b, ctx.kernel)
