"""CPU lowering of `window` kernels, reduce_window and select_and_scatter, and of
`convolution` kernels, which `convolution` lowers (`WindowLoops`).

Invariants: one loop nest over the results' elements (parallel per *Parallel loops*,
weighed by each element's window), each element computed by its window's loops
(`WINDOW_ELEMENTS`), its operands through the fused members, and stored once.
"""

from __future__ import annotations

from accy.dialects import accy as ops
from accy.passes.lower.cpu_kernels.context import CpuKernelPattern, KernelContext
from accy.passes.lower.cpu_kernels.convolution import convolution_loops
from accy.passes.lower.indexing import WINDOW_ELEMENTS, window_work
from accy.passes.lower.planned_kernel import PlannedKernel
from accy.passes.schedule import WorkKind
from xdsl.builder import Builder


def window_loops(ctx: KernelContext, b: Builder, kernel: PlannedKernel) -> None:
    """One loop nest over the results' elements, each computed by its window's loops
    (`WINDOW_ELEMENTS`: a reduce_window's fold, a select_and_scatter's gather) and
    stored; a kernel with a convolution as `convolution_loops` lowers it."""
    root = kernel.root
    conv = next((m for m in kernel.members if isinstance(m, ops.ConvolutionOp)), None)
    if conv is not None:
        convolution_loops(ctx, b, conv, kernel)
        return
    results = list(root.results)
    inner, ivs = ctx.parallel_nest(b, ctx.sizes(results[0]), per_iteration=window_work(root))
    element = WINDOW_ELEMENTS[type(root)]
    values = element(inner, root, ivs, ctx.group(kernel).evaluate)
    for result, value in zip(results, values):
        ctx.store(inner, value, ctx.memref_of(result), ivs)


class WindowLoops(CpuKernelPattern):
    """`window` and `convolution` kernels: each result element computed by its window's
    loops (`window_loops`)."""

    def matches(self, kernel: PlannedKernel) -> bool:
        return kernel.kind in (WorkKind.WINDOW, WorkKind.CONVOLUTION)

    def emit(self, b: Builder, ctx: KernelContext) -> None:
        window_loops(ctx, b, ctx.kernel)
