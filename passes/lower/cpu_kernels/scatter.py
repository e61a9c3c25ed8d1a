"""CPU lowering of the kernels that write updates into a copy of their operand: scatter
(`ScatterLoops`) and a dynamic_update_slice whose result took its operand's buffer
(`UpdateInPlaceLoops`).

Invariants: an input is copied into its result unless the plan gave the result its
buffer (`updated_in_place`); a scatter's updates are then combined one at a time, in
row-major order, in one sequential loop nest (two updates may address one element); an
in-place update writes only the update's block, each element at its clamped place.
"""

from __future__ import annotations

from accy.dialects import accy as ops
from accy.passes.lower.cpu_kernels.context import CpuKernelPattern, KernelContext
from accy.passes.lower.indexing import scatter_result_indices, update_starts, updated_in_place
from accy.passes.lower.planned_kernel import PlannedKernel
from accy.passes.lower.scalar import emit, lower_scalar_body
from accy.passes.schedule import WorkItem
from xdsl.builder import Builder
from xdsl.dialects import arith, memref, scf
from xdsl.ir import Block, Region
from xdsl.rewriter import InsertPoint


def update_loops(ctx: KernelContext, b: Builder, item: WorkItem) -> None:
    root = item.root
    assert isinstance(root, ops.DynamicUpdateSliceOp)
    group = ctx.group(item)
    starts = [group.evaluate(b, start, []) for start in root.start_indices]
    firsts = update_starts(b, root, starts, ctx.sizes)
    inner, ivs = ctx.parallel_nest(b, ctx.sizes(root.update))
    element = group.evaluate(inner, root.update, ivs)
    at = [emit(inner, arith.AddiOp(first, iv)) for first, iv in zip(firsts, ivs)]
    ctx.store(inner, element, ctx.memref_of(root.result), at)


def scatter_loops(ctx: KernelContext, b: Builder, kernel: PlannedKernel) -> None:
    """Each input copied into its result (but the first when the result took its
    buffer), then one sequential loop nest over the updates, in row-major order: each
    update element inside the results combines with the elements it addresses
    (`lower_scalar_body`); inputs, indices and updates through the fused members."""
    root = kernel.root
    assert isinstance(root, ops.ScatterOp)
    group = ctx.group(kernel)
    targets = [ctx.memref_of(r) for r in root.res]
    for index, (value, target) in enumerate(zip(root.inputs, targets)):
        if index == 0 and updated_in_place(kernel):
            continue
        inner, ivs = ctx.parallel_nest(b, ctx.sizes(value))
        ctx.store(inner, group.evaluate(inner, value, ivs), target, ivs)
    sizes = ctx.sizes(root.updates[0])
    extents = ctx.sizes(root.result)
    inner, ivs = ctx.stepped_loop_nest(b, sizes, [1] * len(sizes))
    at, inside = scatter_result_indices(
        inner,
        root,
        ivs,
        lambda position: group.evaluate(inner, root.scatter_indices, position),
        extents,
    )

    def combine_element(then: Builder) -> None:
        currents = [emit(then, memref.LoadOp.get(t, at)) for t in targets]
        updates = [group.evaluate(then, u, ivs) for u in root.updates]
        values = lower_scalar_body(then, root.update_computation, [*currents, *updates])
        for value, target in zip(values, targets):
            ctx.store(then, value, target, at)

    then = Block()
    combine_element(Builder(InsertPoint.at_end(then)))
    Builder(InsertPoint.at_end(then)).insert(scf.YieldOp())
    inner.insert(scf.IfOp(inside, [], Region(then)))


class ScatterLoops(CpuKernelPattern):
    """`scatter` kernels: the operand copied into the result unless it is the same buffer,
    then the updates combined in order (`scatter_loops`)."""

    def matches(self, kernel: PlannedKernel) -> bool:
        return isinstance(kernel.root, ops.ScatterOp)

    def emit(self, b: Builder, ctx: KernelContext) -> None:
        scatter_loops(ctx, b, ctx.kernel)


class UpdateInPlaceLoops(CpuKernelPattern):
    """`dynamic_update_slice` kernels whose result takes its operand's buffer (the plan's
    in-place reuse): one loop nest over the update's block, writing each update element
    at its clamped place; the rest of the buffer is already the result."""

    def matches(self, kernel: PlannedKernel) -> bool:
        return isinstance(kernel.root, ops.DynamicUpdateSliceOp) and updated_in_place(kernel)

    def emit(self, b: Builder, ctx: KernelContext) -> None:
        update_loops(ctx, b, ctx.kernel)
