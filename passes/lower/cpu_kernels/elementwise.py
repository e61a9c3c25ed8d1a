"""CPU lowering of fused elementwise, broadcast and reshape kernels (`ElementwiseLoops`).

Invariants: one loop nest over the root's shape (parallel per *Parallel loops*), each
element computed through the fused members and stored once, to the root's result at the
full index; loads and arithmetic invariant in a loop are hoisted in front of it.
"""

from __future__ import annotations

from collections.abc import Sequence

from accy.passes.lower.cpu_kernels.context import CpuKernelPattern, KernelContext
from accy.passes.lower.planned_kernel import PlannedKernel
from accy.passes.schedule import WorkItem, WorkKind
from xdsl.builder import Builder
from xdsl.dialects import memref, scf
from xdsl.ir import Block, SSAValue


def hoist_invariants(ivs: Sequence[SSAValue]) -> None:
    """Move the loads and pure ops of an elementwise loop nest whose operands are all
    defined outside a loop (row scalars of a broadcast, their arithmetic, constants) in
    front of that loop (`scf.for` or `scf.parallel`), innermost loop first. The nest's
    only store is to the item's result at the full index, and the item reads its inputs
    as they were before it, so reading them earlier is right; LLVM could not hoist them
    itself where the result and the input are views of the same arena."""
    blocks: list[Block] = []
    for iv in reversed(ivs):  # a loop's iv, or an index computed from a parallel one
        block = iv.owner if isinstance(iv.owner, Block) else iv.owner.parent_block()
        assert block is not None
        if block not in blocks:
            blocks.append(block)
    for block in blocks:
        loop = block.parent_op()
        assert isinstance(loop, (scf.ForOp, scf.ParallelOp))
        inside = {id(arg) for arg in block.args}
        for op in list(block.ops):
            movable = isinstance(op, memref.LoadOp) or (
                not isinstance(op, (memref.StoreOp, scf.YieldOp))
                and not op.regions
                and (op.name.startswith("arith.") or op.name.startswith("math."))
            )
            if movable and not any(id(v) in inside for v in op.operands):
                op.detach()
                loop.parent_block().insert_op_before(op, loop)
            else:
                inside.update(id(r) for r in op.results)


def elementwise_loops(ctx: KernelContext, b: Builder, item: WorkItem) -> None:
    result = item.root.results[0]
    target = ctx.memref_of(result)
    inner, ivs = ctx.parallel_nest(b, ctx.sizes(result))
    element = ctx.group(item).evaluate(inner, result, ivs)
    ctx.store(inner, element, target, ivs)
    hoist_invariants(ivs)


class ElementwiseLoops(CpuKernelPattern):
    """Fused elementwise, broadcast and reshape kernels: one loop nest over the root's
    shape computing each element through the fused members."""

    def matches(self, kernel: PlannedKernel) -> bool:
        return kernel.kind in (WorkKind.ELEMENTWISE, WorkKind.BROADCAST, WorkKind.RESHAPE)

    def emit(self, b: Builder, ctx: KernelContext) -> None:
        elementwise_loops(ctx, b, ctx.kernel)
