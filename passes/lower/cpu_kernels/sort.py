"""CPU lowering of `sort` kernels, top-k included (`SortLoops`).

Invariants: the lowering follows the family the planned form records: a sort of the
family `sort.merge` (planning's choice: `merge_sort.sorts_by_insertion` is false) is a
merge sort whose passes ping-pong through the planned `scratch` workspace (a plan giving
it less than `sort_scratch_offsets` needs is a `CpuLoweringError`), the last pass into the
results; any other inserts each slice's elements into the results, the slices in parallel. The operands are read once, through the fused producers.
"""

from __future__ import annotations

from collections.abc import Sequence

from accy.dialects import accy as ops
from accy.dialects import plan
from accy.passes.element_types import shape_of
from accy.passes.families.sort_merge import ID as SORT_FAMILY
from accy.passes.families.sort_merge import WORKSPACE as SORT_WORKSPACE
from accy.passes.lower.cpu_kernels.context import (
    CpuKernelPattern,
    CpuLoweringError,
    KernelContext,
)
from accy.passes.lower.indexing import insert_sorted, memref_elements, merge_runs
from accy.passes.lower.planned_kernel import PlannedKernel
from accy.passes.lower.scalar import emit
from accy.passes.merge_sort import RESULTS, merge_targets, sort_run_widths, sort_scratch_offsets
from xdsl.builder import Builder
from xdsl.dialects import arith, memref
from xdsl.dialects.builtin import MemRefType
from xdsl.ir import SSAValue


def sort_loops(ctx: KernelContext, b: Builder, kernel: PlannedKernel) -> None:
    """Each slice by insertion into the results (`insert_sorted`) when the sort keeps
    few elements of each (no family recorded), else a merge sort: pass p merges
    each pair of sorted runs of `sort_run_widths()[p]` (a parallel loop nest over the
    pairs of every slice, each merged in order: `merge_runs`) from the previous
    pass's target into its own (`merge_targets`: the `scratch` workspace's copies or
    the results, the last pass the results). The first pass, or the insertion, reads
    the operands through the fused producers."""
    root = kernel.root
    assert isinstance(root, ops.SortOp)
    group = ctx.group(kernel)

    def operands(inner: Builder, at: Sequence[SSAValue]) -> list[SSAValue]:
        return [group.evaluate(inner, value, at) for value in root.inputs]

    results = [ctx.memref_of(r) for r in root.res]
    sizes = ctx.sizes(root.inputs[0])
    if not root.kept:
        return
    if kernel.family != SORT_FAMILY:  # the plan chose insertion (no scratch)
        slices = list(sizes)
        slices[root.dim] = ctx.index(1)
        inner, ivs = ctx.parallel_nest(
            b, slices, parallel=len(slices), per_iteration=shape_of(root.inputs[0])[root.dim]
        )
        insert_sorted(inner, root, ivs, operands, results)
        return
    widths = sort_run_widths(root)
    offsets, needed = sort_scratch_offsets(root)
    workspace = kernel.workspaces.get(SORT_WORKSPACE)
    planned = 0 if workspace is None else plan.buffer_bytes(workspace.type)  # type: ignore[arg-type]
    if planned < needed:
        raise CpuLoweringError(
            f"work item {kernel.id} ({SORT_FAMILY}) needs {needed} bytes of "
            f"'{SORT_WORKSPACE}' but the plan gives it {planned}",
            root.location,
        )
    assert workspace is not None
    extent = shape_of(root.inputs[0])[root.dim]
    whole = [
        MemRefType(r.type.element_type, shape_of(root.inputs[0]), memory_space=r.type.memory_space)  # type: ignore[attr-defined]
        for r in results
    ]
    copies = [
        [
            emit(b, memref.ViewOp(workspace, ctx.index(offset), [], t))
            for offset, t in zip(copy, whole)
        ]
        for copy in offsets
    ]
    load = operands
    for width, target in zip(widths, merge_targets(root)):
        targets = results if target == RESULTS else copies[target]
        pairs = list(sizes)
        pairs[root.dim] = ctx.index(-(-extent // (2 * width)))
        inner, ivs = ctx.parallel_nest(b, pairs)
        first = emit(inner, arith.MuliOp(ivs[root.dim], ctx.index(2 * width)))
        at = [first if d == root.dim else v for d, v in enumerate(ivs)]
        kept = root.kept if target == RESULTS else extent
        merge_runs(inner, root, at, width, load, targets, kept)
        load = memref_elements(targets)


class SortLoops(CpuKernelPattern):
    """`sort` kernels: merge passes through the `scratch` workspace (`sort_loops`)."""

    def matches(self, kernel: PlannedKernel) -> bool:
        return isinstance(kernel.root, ops.SortOp)

    def emit(self, b: Builder, ctx: KernelContext) -> None:
        sort_loops(ctx, b, ctx.kernel)
