"""CPU lowering of reductions: `reduce` (`ReduceLoops`: blocked, or split into chunks
folded in parallel) and `fold` (`FoldLoops`: each element's positions in order).

Invariants (see *Reductions* in `accy.passes.lower.cpu`): a float sum folds every reduced
dim in blocked loops from the identity (`blocked_steps` of `REDUCE_LEAF` and
`REDUCE_FAN`), other kinds one loop per dim carrying the accumulator; a split reduction
(`reduce.chunks`) folds each chunk into the planned `partials` workspace, then each row
its partials; every order is fixed at lowering, so the thread count never changes a
result. A fold folds its reduced positions sequentially, in order.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from accy.dialects import accy as ops
from accy.dialects import plan
from accy.passes.element_types import compute_type, is_float, is_unsigned, shape_of
from accy.passes.families.reduce_chunks import FAMILY, WORKSPACE, SplitReduce, split_partials
from accy.passes.lower.cpu_kernels.context import (
    DYNAMIC_EXTENT,
    INDEX,
    PARALLEL_MIN_WORK,
    CpuKernelPattern,
    CpuLoweringError,
    KernelContext,
    work,
)
from accy.passes.lower.indexing import fold_element
from accy.passes.lower.planned_kernel import PlannedKernel
from accy.passes.lower.scalar import blocked_steps, combine, emit, narrow, widen
from accy.passes.schedule import WorkItem
from xdsl.builder import Builder
from xdsl.dialects import arith, memref, scf
from xdsl.dialects.builtin import DYNAMIC_INDEX, MemRefType
from xdsl.ir import Attribute, Block, SSAValue
from xdsl.rewriter import InsertPoint

REDUCE_LEAF = 256
"""Reductions: consecutive positions of the innermost reduced dim one accumulator folds
from the identity (the loop LLVM vectorizes) before the partial joins the level above."""

REDUCE_FAN = 16
"""Reductions: partials each loop above the innermost folds (see `blocked_steps`)."""


FoldBody = Callable[[Builder, SSAValue, SSAValue], SSAValue]
"""`body(builder, iv, acc)`: `acc` with position `iv` folded in."""


@dataclass
class ReduceFold:
    """How a reduction's loops fold (see *Reductions* in `accy.passes.lower.cpu`)."""

    ctx: KernelContext
    kind: ops.CombinerKind
    acc_type: Attribute
    blocked: bool
    """Float sums: every dim's fold is blocked loops (`blocked_steps`) from the identity,
    combined into the enclosing accumulator. Other kinds: one loop per dim, carrying the
    accumulator through the nest (as a split's chunks do; see *Reductions*)."""
    unsigned: bool = False
    """Integer max/min compare unsigned (the reduced elements are unsigned)."""

    def over(
        self,
        b: Builder,
        acc: SSAValue,
        lower: SSAValue,
        upper: SSAValue,
        end: int | None,
        *,
        leaf: int,
        body: FoldBody,
        extent: int | None = None,
    ) -> SSAValue:
        """`acc` with `body` folded over `lower <= iv < upper` (`extent` positions at most;
        default `end`, the static end of the outermost range, or `DYNAMIC_EXTENT`)."""
        if not self.blocked:
            return self._loops(b, acc, lower, upper, [], end, body)
        steps = blocked_steps(extent or end or DYNAMIC_EXTENT, leaf, REDUCE_FAN)
        identity = self.ctx.identity(self.kind, self.acc_type, self.unsigned)
        folded = self._loops(b, identity, lower, upper, steps, end, body)
        return folded if acc is identity else self.combine(b, acc, folded)

    def combine(self, b: Builder, acc: SSAValue, x: SSAValue) -> SSAValue:
        return combine(b, self.kind, acc, x, unsigned=self.unsigned)

    def _loops(
        self,
        b: Builder,
        init: SSAValue,
        lower: SSAValue,
        upper: SSAValue,
        steps: Sequence[int],
        end: int | None,
        body: FoldBody,
    ) -> SSAValue:
        """The loops of `steps` (outermost first) over `lower <= iv < upper`, carrying
        `init`; every block is folded from the identity and combined in order. `lower`
        is a multiple of `steps[0]`, `upper` too where `steps[0]` divides `end`."""
        if not steps:
            return self._loop(b, init, lower, upper, 1, body)
        return self._blocks(
            b, init, lower, upper, steps, end is not None and end % steps[0] == 0, body
        )

    def _blocks(
        self,
        b: Builder,
        init: SSAValue,
        lower: SSAValue,
        upper: SSAValue,
        steps: Sequence[int],
        whole: bool,
        body: FoldBody,
    ) -> SSAValue:
        """`_loops` for at least one step: a loop over the whole blocks of `steps[0]`
        (each folded by the loops of the steps below, with static trip counts), then,
        unless `whole` says the range holds whole blocks only, the last partial block."""
        ctx = self.ctx
        step = steps[0]
        identity = ctx.identity(self.kind, self.acc_type, self.unsigned)
        stop = upper
        if not whole:
            length = emit(b, arith.SubiOp(upper, lower))
            rest = emit(b, arith.RemUIOp(length, ctx.index(step)))
            stop = emit(b, arith.SubiOp(upper, rest))

        def block(inner: Builder, iv: SSAValue, acc: SSAValue) -> SSAValue:
            block_end = emit(inner, arith.AddiOp(iv, ctx.index(step)))
            if len(steps) == 1:
                partial = self._loop(inner, identity, iv, block_end, 1, body)
            else:
                partial = self._blocks(inner, identity, iv, block_end, steps[1:], True, body)
            return self.combine(inner, acc, partial)

        result = self._loop(b, init, lower, stop, step, block)
        if whole:
            return result
        if len(steps) == 1:
            last = self._loop(b, identity, stop, upper, 1, body)
        else:
            last = self._blocks(b, identity, stop, upper, steps[1:], False, body)
        return self.combine(b, result, last)

    def _loop(
        self,
        b: Builder,
        init: SSAValue,
        lower: SSAValue,
        upper: SSAValue,
        step: int,
        body: FoldBody,
    ) -> SSAValue:
        """`scf.for %iv = lower to upper step step` carrying `init` through `body`."""
        block = Block(arg_types=[INDEX, self.acc_type])
        inner = Builder(InsertPoint.at_end(block))
        inner.insert(scf.YieldOp(body(inner, *block.args)))
        loop = scf.ForOp(lower, upper, self.ctx.index(step), [init], block)
        b.insert(loop)
        return loop.results[0]


def reduce_loops(ctx: KernelContext, b: Builder, item: WorkItem) -> None:
    """Loops over the kept dims, then the reduced dims' folds (see *Reductions* in
    `accy.passes.lower.cpu`); a reduction with few rows and a wide static outermost reduced
    dim is split into chunks folded in parallel (`split_reduce`)."""
    root = item.root
    assert isinstance(root, ops.ReduceOp)
    kind = root.kind.data
    reduced = sorted(int(d) for d in root.dimensions.get_values())
    operand = root.operand
    shape = shape_of(operand)
    sizes = ctx.sizes(operand)
    kept = [d for d in range(len(sizes)) if d not in reduced]
    kept_sizes = [sizes[d] for d in kept]
    element_type = root.result.type.get_element_type()
    acc_type = compute_type(element_type)
    group = ctx.group(item)
    blocked = kind == ops.CombinerKind.ADD and is_float(acc_type)
    unsigned = is_unsigned(element_type)
    fold = ReduceFold(ctx, kind, acc_type, blocked, unsigned)

    def element(builder: Builder, ivs: dict[int, SSAValue], acc: SSAValue) -> SSAValue:
        indices = [ivs[d] for d in range(len(sizes))]
        x = widen(builder, group.evaluate(builder, operand, indices))
        return combine(builder, kind, acc, x, reassociate=True, unsigned=unsigned)

    def body(position: int, ivs: dict[int, SSAValue]) -> FoldBody:
        """Folds reduced dim `position` at `iv` into `acc`: its element (innermost
        dim) or the fold of the reduced dims inside it."""
        dim = reduced[position]
        if position == len(reduced) - 1:
            return lambda builder, iv, acc: element(builder, {**ivs, dim: iv}, acc)
        inner = reduced[position + 1]
        return lambda builder, iv, acc: fold.over(
            builder,
            acc,
            ctx.index(0),
            sizes[inner],
            None if shape[inner] == DYNAMIC_INDEX else shape[inner],
            leaf=REDUCE_LEAF if position + 1 == len(reduced) - 1 else REDUCE_FAN,
            body=body(position + 1, {**ivs, dim: iv}),
        )

    if item.family == FAMILY.id:  # the plan chose the split (and sized its partials)
        split = split_partials(root)
        if split is None:
            raise CpuLoweringError(
                f"work item {item.id} runs family '{FAMILY.id}', which does not split this reduction",
                root.location,
            )
        split_reduce(ctx, b, item, fold, kept_sizes, reduced, split, body)
        return

    inner, kept_ivs = ctx.parallel_nest(
        b,
        kept_sizes,
        parallel=len(kept),
        per_iteration=work([sizes[d] for d in reduced]) or PARALLEL_MIN_WORK,
    )
    identity = ctx.identity(kind, acc_type, unsigned)
    ivs = dict(zip(kept, kept_ivs))
    if not reduced:
        total = element(inner, ivs, identity)
    else:
        total = fold.over(
            inner,
            identity,
            ctx.index(0),
            sizes[reduced[0]],
            None if shape[reduced[0]] == DYNAMIC_INDEX else shape[reduced[0]],
            leaf=REDUCE_LEAF if len(reduced) == 1 else REDUCE_FAN,
            body=body(0, ivs),
        )
    ctx.store(inner, narrow(inner, total, element_type), ctx.memref_of(root.result), kept_ivs)


def split_reduce(
    ctx: KernelContext,
    b: Builder,
    item: PlannedKernel,
    fold: ReduceFold,
    kept_sizes: list[SSAValue],
    reduced: list[int],
    split: SplitReduce,
    body: Callable[[int, dict[int, SSAValue]], FoldBody],
) -> None:
    """Phase 1: one `scf.parallel` over (chunk, kept dims) folds `chunk` positions
    of the outermost reduced dim into `partials[chunk, kept...]` (the kernel's planned
    `partials` workspace); phase 2 folds each row's partials in order."""
    root = item.root
    assert isinstance(root, ops.ReduceOp)
    shape = shape_of(root.operand)
    element_type = root.result.type.get_element_type()
    kept = [d for d in range(len(shape)) if d not in reduced]
    width = shape[reduced[0]]
    chunk, chunks = split.chunk, split.chunks
    workspace = item.workspaces.get(WORKSPACE)
    planned = 0 if workspace is None else plan.buffer_bytes(workspace.type)  # type: ignore[arg-type]
    if planned < split.bytes:
        raise CpuLoweringError(
            f"work item {item.id} ({FAMILY.id}) needs {split.bytes} bytes of '{WORKSPACE}' "
            f"but the plan gives it {planned}",
            root.location,
        )
    assert workspace is not None
    partials_type = MemRefType(fold.acc_type, list(split.shape))
    partials = emit(b, memref.ViewOp(workspace, ctx.index(0), [], partials_type))
    partials.name_hint = "partials"
    inside = int(np.prod([shape[d] for d in reduced[1:]], dtype=np.int64))
    identity = ctx.identity(fold.kind, fold.acc_type, fold.unsigned)

    inner, ivs = ctx.parallel_nest(
        b,
        [ctx.index(chunks), *kept_sizes],
        parallel=1 + len(kept),
        per_iteration=chunk * inside,
    )
    position, kept_ivs = ivs[0], ivs[1:]
    lower = emit(inner, arith.MuliOp(position, ctx.index(chunk)))
    upper = emit(inner, arith.AddiOp(lower, ctx.index(chunk)))
    if width % chunk:
        upper = emit(inner, arith.MinUIOp(upper, ctx.index(width)))
    partial = fold.over(
        inner,
        identity,
        lower,
        upper,
        width,
        leaf=REDUCE_LEAF if len(reduced) == 1 else REDUCE_FAN,
        body=body(0, dict(zip(kept, kept_ivs))),
        extent=chunk,
    )
    ctx.store(inner, partial, partials, ivs)

    inner, kept_ivs = ctx.parallel_nest(b, kept_sizes, parallel=len(kept), per_iteration=chunks)

    def partial_of(builder: Builder, iv: SSAValue, acc: SSAValue) -> SSAValue:
        value = emit(builder, memref.LoadOp.get(partials, [iv, *kept_ivs]))
        return fold.combine(builder, acc, value)

    total = fold.over(
        inner,
        identity,
        ctx.index(0),
        ctx.index(chunks),
        chunks,
        leaf=REDUCE_FAN,
        body=partial_of,
    )
    target = ctx.memref_of(root.result)
    ctx.store(inner, narrow(inner, total, element_type), target, kept_ivs)


def fold_loops(ctx: KernelContext, b: Builder, kernel: PlannedKernel) -> None:
    """One loop nest over the results' elements, each folding its reduced positions
    in order (`fold_element`, the operands through the fused members) and storing
    every result."""
    root = kernel.root
    assert isinstance(root, ops.FoldOp)
    extents = ctx.sizes(root.inputs[0])
    inner, ivs = ctx.parallel_nest(b, ctx.sizes(root.res[0]))
    values = fold_element(inner, root, ivs, ctx.group(kernel).evaluate, extents)
    for result, value in zip(root.res, values):
        ctx.store(inner, value, ctx.memref_of(result), ivs)


class ReduceLoops(CpuKernelPattern):
    """`reduce` kernels: loops over the kept dims, then blocked loops per reduced dim with
    the fused prologue in the innermost (see *Reductions*); split into chunks folded in
    parallel when few rows are wide."""

    def matches(self, kernel: PlannedKernel) -> bool:
        return isinstance(kernel.root, ops.ReduceOp)

    def emit(self, b: Builder, ctx: KernelContext) -> None:
        reduce_loops(ctx, b, ctx.kernel)


class FoldLoops(CpuKernelPattern):
    """`fold` kernels: each result element folds its reduced positions (`fold_loops`)."""

    def matches(self, kernel: PlannedKernel) -> bool:
        return isinstance(kernel.root, ops.FoldOp)

    def emit(self, b: Builder, ctx: KernelContext) -> None:
        fold_loops(ctx, b, ctx.kernel)
