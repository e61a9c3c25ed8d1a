"""CPU lowering of `scan` kernels (`ScanLoops`).

Invariants: the rows (every position of the other dims) run in parallel, each along the
scan dim in one pass writing every prefix once, into the scan's result. A float sum not
rounded every step accumulates in f64 in blocks of `SCAN_FAN` at every level
(`blocked_scan`), each prefix rounded once; every other scan is one sequential chain from
the identity in its compute type (rounded every step where the scan says so).
"""

from __future__ import annotations

from collections.abc import Callable

from accy.dialects import accy as ops
from accy.passes.element_types import compute_type, is_float, is_unsigned, shape_of
from accy.passes.lower.cpu_kernels.context import (
    DYNAMIC_EXTENT,
    PARALLEL_MIN_WORK,
    CpuKernelPattern,
    KernelContext,
    work,
)
from accy.passes.lower.planned_kernel import PlannedKernel
from accy.passes.lower.scalar import (
    combine,
    combiner_identity,
    convert_element,
    emit,
    narrow,
    widen,
)
from accy.passes.schedule import WorkItem
from xdsl.builder import Builder
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import Float64Type
from xdsl.ir import SSAValue

SCAN_FAN = 16
"""Float prefix sums and products: positions per block at every level (`blocked_scan`)."""


def scan_loops(ctx: KernelContext, b: Builder, item: WorkItem) -> None:
    """Each row of the scan (every position of the other dims, in parallel) along its
    dim. A float sum that does not round every step accumulates in f64, in blocks
    (`blocked_scan`), each result rounded once from it: within about half an ulp of
    the exact prefix (XLA's blocked f32 rewrite is off by a few ulps). The others run
    one sequential chain from the identity: exact ones, those rounded every step as
    the reference does, and products, whose relative error grows with the number of
    factors in any order, and whose overflow to inf (then NaN at a zero) is the
    sequential chain's, as XLA's and StableHLO's interpreter's."""
    root = item.root
    assert isinstance(root, ops.ScanOp)
    kind = root.kind.data
    dim = root.dimension.value.data
    sizes = ctx.sizes(root.operand)
    others = [d for d in range(len(sizes)) if d != dim]
    inner, outer_ivs = ctx.parallel_nest(
        b,
        [sizes[d] for d in others],
        parallel=len(others),
        per_iteration=work([sizes[dim]]) or PARALLEL_MIN_WORK,
    )
    element_type = root.result.type.get_element_type()
    unsigned = is_unsigned(element_type)
    blocked = is_float(element_type) and root.rounded is None and kind is ops.CombinerKind.ADD
    acc_type = Float64Type() if blocked else compute_type(element_type)
    identity = combiner_identity(inner, kind, acc_type, unsigned=unsigned)
    target = ctx.memref_of(root.result)
    ivs = dict(zip(others, outer_ivs))

    def element(body: Builder, position: SSAValue) -> tuple[SSAValue, Callable]:
        """The operand's element at `position` of the row in the accumulator type,
        and a function storing an accumulated value there (rounded once)."""
        indices = [position if d == dim else ivs[d] for d in range(len(sizes))]
        x = widen(body, ctx.load(body, root.operand, indices))
        if x.type != acc_type:
            x = emit(body, arith.ExtFOp(x, acc_type))

        def store(value: SSAValue) -> SSAValue:
            if blocked:
                stored = convert_element(body, value, element_type, acc_type)
            else:
                stored = narrow(body, value, element_type)
            ctx.store(body, stored, target, indices)
            return stored

        return x, store

    if blocked:
        extent = shape_of(root.operand)[dim]
        blocked_scan(ctx, inner, kind, identity, sizes[dim], extent, element)
        return
    loop, body, iv, (carry,) = ctx.loop(inner, sizes[dim], [identity])
    x, store = element(body, iv)
    new = combine(body, kind, carry, x, unsigned=unsigned)
    stored = store(new)
    body.insert(scf.YieldOp(widen(body, stored) if root.rounded is not None else new))
    del loop


def blocked_scan(
    ctx: KernelContext,
    b: Builder,
    kind: ops.CombinerKind,
    identity: SSAValue,
    width: SSAValue,
    extent: int,
    element: Callable[[Builder, SSAValue], tuple[SSAValue, Callable]],
) -> None:
    """A prefix sum of one row of `width` elements in blocks of
    `SCAN_FAN` at every level: a position's value is the total of the level-`L` blocks
    before it, plus the level-`L-1` blocks before it within its block, ..., plus its
    own block's running sum, each a chain of at most `SCAN_FAN` terms, where one
    sequential chain adds `width` (an f64 scan's error grows with log(width), not with
    width, as in XLA's blocked rewrite of a cumulative reduce_window). One pass: each
    loop carries the total of its completed sub-blocks. `extent` is the static width
    (-1: dynamic, built for `DYNAMIC_EXTENT`)."""
    levels, span = 1, SCAN_FAN
    while span < (DYNAMIC_EXTENT if extent < 0 else extent):
        levels, span = levels + 1, span * SCAN_FAN

    def level(body: Builder, depth: int, start: SSAValue, base: SSAValue | None):
        """Positions `start` to `start + SCAN_FAN**depth` (within the row) given the
        total `base` of those before them (None: none); returns their total."""
        stride = SCAN_FAN ** (depth - 1)
        end = emit(body, arith.AddiOp(start, ctx.index(stride * SCAN_FAN)))
        end = emit(body, arith.MinUIOp(end, width))
        count = emit(body, arith.SubiOp(end, start))
        if stride > 1:
            count = emit(body, arith.CeilDivUIOp(count, ctx.index(stride)))
        loop, inner, iv, (done,) = ctx.loop(body, count, [identity])
        position = emit(inner, arith.MuliOp(iv, ctx.index(stride))) if stride > 1 else iv
        position = emit(inner, arith.AddiOp(start, position))
        if depth == 1:
            x, store = element(inner, position)
            total = combine(inner, kind, done, x)
            store(total if base is None else combine(inner, kind, base, total))
        else:
            below = done if base is None else combine(inner, kind, base, done)
            part = level(inner, depth - 1, position, below)
            total = combine(inner, kind, done, part)
        inner.insert(scf.YieldOp(total))
        return loop.results[0]

    level(b, levels, ctx.index(0), None)


class ScanLoops(CpuKernelPattern):
    """`scan` kernels: loops over the other dims, then a sequential loop along the scanned
    dim carrying the running value."""

    def matches(self, kernel: PlannedKernel) -> bool:
        return isinstance(kernel.root, ops.ScanOp)

    def emit(self, b: Builder, ctx: KernelContext) -> None:
        scan_loops(ctx, b, ctx.kernel)
