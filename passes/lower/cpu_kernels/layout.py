"""CPU lowering of the kernels that move elements without arithmetic: transpose, iota
and concatenate (`TransposeLoops`, `IotaLoops`, `ConcatenateLoops`).

Invariants: one loop nest over the result (concatenate: one per operand, over its range
of the result), parallel per *Parallel loops*; each result element is stored once.
"""

from __future__ import annotations

from accy.dialects import accy as ops
from accy.passes.element_types import shape_of
from accy.passes.lower.cpu_kernels.context import CpuKernelPattern, KernelContext
from accy.passes.lower.indexing import iota_element, transpose_operand_indices
from accy.passes.lower.planned_kernel import PlannedKernel
from accy.passes.lower.scalar import emit
from accy.passes.schedule import WorkItem
from xdsl.builder import Builder
from xdsl.dialects import arith


def transpose_loops(ctx: KernelContext, b: Builder, item: WorkItem) -> None:
    root = item.root
    assert isinstance(root, ops.TransposeOp)
    inner, ivs = ctx.parallel_nest(b, ctx.sizes(root.result))
    element = ctx.load(inner, root.operand, transpose_operand_indices(root, ivs))
    ctx.store(inner, element, ctx.memref_of(root.result), ivs)


def iota_loops(ctx: KernelContext, b: Builder, item: WorkItem) -> None:
    root = item.root
    assert isinstance(root, ops.IotaOp)
    inner, ivs = ctx.parallel_nest(b, ctx.sizes(root.result))
    element = iota_element(inner, root, ivs)
    ctx.store(inner, element, ctx.memref_of(root.result), ivs)


def concatenate_loops(ctx: KernelContext, b: Builder, item: WorkItem) -> None:
    root = item.root
    assert isinstance(root, ops.ConcatenateOp)
    target = ctx.memref_of(root.result)
    offset = 0
    for value in root.inputs:
        inner, ivs = ctx.parallel_nest(b, ctx.sizes(value))
        element = ctx.load(inner, value, ivs)
        out = list(ivs)
        if offset:
            out[root.dim] = emit(inner, arith.AddiOp(ivs[root.dim], ctx.index(offset)))
        ctx.store(inner, element, target, out)
        offset += shape_of(value)[root.dim]


class TransposeLoops(CpuKernelPattern):
    """`transpose` kernels: one loop nest over the result, reading the operand permuted."""

    def matches(self, kernel: PlannedKernel) -> bool:
        return isinstance(kernel.root, ops.TransposeOp)

    def emit(self, b: Builder, ctx: KernelContext) -> None:
        transpose_loops(ctx, b, ctx.kernel)


class IotaLoops(CpuKernelPattern):
    """Kernels rooted at `iota`: one loop nest storing each index along the iota dim."""

    def matches(self, kernel: PlannedKernel) -> bool:
        return isinstance(kernel.root, ops.IotaOp)

    def emit(self, b: Builder, ctx: KernelContext) -> None:
        iota_loops(ctx, b, ctx.kernel)


class ConcatenateLoops(CpuKernelPattern):
    """Kernels rooted at `concatenate`: one loop nest per operand, each writing its range."""

    def matches(self, kernel: PlannedKernel) -> bool:
        return isinstance(kernel.root, ops.ConcatenateOp)

    def emit(self, b: Builder, ctx: KernelContext) -> None:
        concatenate_loops(ctx, b, ctx.kernel)
