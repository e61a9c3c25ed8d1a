"""What every CPU kernel lowering reads (`KernelContext`), the pattern they share
(`CpuKernelPattern`) and the loop builders of every kind (see *Parallel loops* in
`accy.passes.lower.cpu`).

Invariants: a context is built per kernel and never changed; it reads the kernel's
buffers and workspaces, the function's constants (built once at its start, in the order
first asked for) and row count, the module's host constants and the CPU's features, and
nothing else; the kind modules read nothing but their context.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass

from accy.dialects import accy as ops
from accy.passes.buffers import splat_of, splat_scalar
from accy.passes.element_types import shape_of
from accy.passes.lower.host import FunctionConstants, KernelPattern
from accy.passes.lower.indexing import FusedGroup, delinearize
from accy.passes.lower.planned_kernel import PlannedKernel
from accy.passes.lower.scalar import combiner_identity, emit
from accy.passes.schedule import WorkItem
from xdsl.builder import Builder
from xdsl.dialects import arith, memref, scf
from xdsl.dialects.builtin import DYNAMIC_INDEX, IndexType, IntegerAttr
from xdsl.ir import Attribute, Block, Region, SSAValue
from xdsl.pattern_rewriter import PatternRewriter
from xdsl.rewriter import InsertPoint

from accy.diagnostics import AccyError

INDEX = IndexType()

DYNAMIC_EXTENT = 1 << 32
"""The extent a dynamic reduced dim's blocked loops are built for (past it, the chain of
the outermost loop grows beyond `REDUCE_FAN`)."""

PARALLEL_MIN_WORK = 1 << 15
"""Loop nests doing fewer scalar steps than this stay sequential: handing a slice of them
to another thread costs microseconds, more than they take."""


def _constant(value: SSAValue) -> int | None:
    """The value of an index `arith.constant`, else None."""
    if isinstance(value.owner, arith.ConstantOp) and isinstance(value.owner.value, IntegerAttr):
        return value.owner.value.value.data
    return None


def work(sizes: Sequence[SSAValue], per_iteration: int = 1) -> int | None:
    """Scalar steps of a nest over `sizes` doing `per_iteration` each (None if dynamic)."""
    steps = per_iteration
    for size in sizes:
        extent = _constant(size)
        if extent is None:
            return None
        steps *= extent
    return steps


PARALLEL_TASKS = 32
"""A parallel nest takes as few of its outer dims as give this many iterations: the rest
run as plain loops inside each task (a task over several dims of a multi-dim
`scf.parallel` runs its inner dims' loops far slower, up to 3x for convolution tiles)."""


def parallel_prefix(sizes: Sequence[SSAValue], steps: Sequence[int]) -> int:
    """How many of the dims `sizes` (stepped by `steps`) a parallel nest takes: the
    fewest outer ones with at least `PARALLEL_TASKS` iterations, all where a size is
    dynamic or they have fewer."""
    iterations = 1
    for taken, (size, step) in enumerate(zip(sizes, steps), 1):
        extent = _constant(size)
        if extent is None:
            return len(sizes)
        iterations *= -(-extent // step)
        if iterations >= PARALLEL_TASKS:
            return taken
    return len(sizes)


def power_of_two_block(size: int, most: int) -> int:
    """The largest power of two up to `most` dividing a static `size` (1 if dynamic)."""
    if size == DYNAMIC_INDEX or size <= 0:
        return 1
    block = most
    while size % block:
        block //= 2
    return block


class CpuLoweringError(AccyError):
    """A planned program the CPU lowering cannot express (e.g. less sort scratch than the
    merge sort needs)."""


@dataclass(frozen=True)
class KernelContext:
    """One kernel being lowered to loops, and what its lowering may read."""

    kernel: PlannedKernel
    """The kernel: its members, buffers (already the lowered host values) and workspaces."""
    function: FunctionConstants
    """The function it is in: its constants at its start (`index`, `scalar`, `identity`),
    its row count and the module's host constants (`globals`)."""
    features: frozenset[str]
    """The CPU's features (see `accy.passes.lower.cpu.lower_cpu`)."""

    # ------------------------------------------------------ the function's constants

    def index(self, value: int) -> SSAValue:
        """An index constant, built once at the function's start."""
        return self.function.index(value)

    def scalar(self, value: object, t: Attribute) -> SSAValue:
        """A scalar constant of type `t`, built once at the function's start."""
        return self.function.scalar(value, t)

    @property
    def rows(self) -> SSAValue:
        """The function's row count."""
        return self.function.rows

    def identity(self, kind: ops.CombinerKind, t: Attribute, unsigned: bool = False) -> SSAValue:
        """The neutral element of `kind` in `t`, built once at the function's start."""
        constants = self.function.constants
        key = (("identity", kind, unsigned), t)
        if key not in constants:
            constants[key] = combiner_identity(self.function.start, kind, t, unsigned=unsigned)
        return constants[key]

    # ----------------------------------------------------------- the kernel's values

    def sizes(self, value: SSAValue) -> list[SSAValue]:
        """The dim sizes of a tensor value as index values (`?` → the row count)."""
        return [self.rows if d == DYNAMIC_INDEX else self.index(d) for d in shape_of(value)]

    def memref_of(self, value: SSAValue) -> SSAValue:
        """The memref the kernel reads `value` from or writes it to."""
        return self.kernel.buffer_of(value)

    def load(self, b: Builder, value: SSAValue, indices: Sequence[SSAValue]) -> SSAValue:
        return emit(b, memref.LoadOp.get(self.memref_of(value), list(indices)))

    def splat(self, b: Builder, value: SSAValue) -> SSAValue | None:
        """The scalar of a splat constant, cloned into the kernel's body or read from a
        host constant (None for other values)."""
        owner = value.owner
        scalar = None
        if isinstance(owner, ops.ConstantOp):
            scalar = splat_scalar(owner)
        elif value in self.kernel.buffers:
            data = self.kernel.buffers[value].owner
            if isinstance(data, memref.GetGlobalOp):
                scalar = splat_of(self.function.globals.value_of(data))
        if scalar is None:
            return None
        return self.scalar(scalar, value.type.get_element_type())  # type: ignore[attr-defined]

    def store(self, b: Builder, element: SSAValue, target: SSAValue, indices) -> None:
        b.insert(memref.StoreOp.get(element, target, list(indices)))

    def group(self, item: WorkItem) -> FusedGroup:
        """`item`'s fused members, evaluated through this context's loads and splats."""
        return FusedGroup(item.members, self.load, self.sizes, self.splat)

    def epilogue_value(
        self, b: Builder, item: WorkItem, total: SSAValue, indices: Sequence[SSAValue]
    ) -> SSAValue:
        """What the dot kernel `item` stores at `indices` for the product's element `total`
        there: `total`, or its epilogue's value (the kernel's root's element)."""
        dot = item.contraction
        if item.root is dot:
            return total
        assert dot is not None
        known = {dot.results[0]: total}
        return self.group(item).evaluate(b, item.root.results[0], indices, known)

    # ------------------------------------------------------------------- loops

    def loop(
        self, b: Builder, size: SSAValue, carried: Sequence[SSAValue] = ()
    ) -> tuple[scf.ForOp, Builder, SSAValue, list[SSAValue]]:
        """`scf.for %i = 0 to size` carrying `carried`; returns the loop, a builder at the
        end of its body (the caller inserts the `scf.yield`), the iv and the carried args."""
        body = Block(arg_types=[INDEX, *(v.type for v in carried)])
        loop = scf.ForOp(self.index(0), size, self.index(1), list(carried), body)
        b.insert(loop)
        return loop, Builder(InsertPoint.at_end(body)), body.args[0], list(body.args[1:])

    def parallel_nest(
        self,
        b: Builder,
        sizes: Sequence[SSAValue],
        *,
        steps: Sequence[int] | None = None,
        parallel: int | None = None,
        per_iteration: int = 1,
        min_work: int = PARALLEL_MIN_WORK,
    ) -> tuple[Builder, list[SSAValue]]:
        """Loops over `sizes` (`steps` default to 1; each size a multiple of its step)
        whose iterations are independent: of the first `parallel` dims (default: all but
        the last, or the only one), the fewest giving `PARALLEL_TASKS` iterations
        (`parallel_prefix`) as one one-dimensional `scf.parallel` over their iterations,
        each dim's index divided out inside, when the nest does at least `min_work` steps
        of `per_iteration` work (see *Parallel loops*); the rest as `scf.for`s inside it.
        Returns a builder inside the innermost loop and the ivs (the parallel dims' too)."""
        steps = list(steps) if steps is not None else [1] * len(sizes)
        if parallel is None:
            parallel = max(len(sizes) - 1, 1) if sizes else 0
        parallel = parallel_prefix(sizes[:parallel], steps[:parallel])
        steps_done = work(sizes, per_iteration)
        if parallel == 0 or (steps_done is not None and steps_done < min_work):
            return self.stepped_loop_nest(b, sizes, steps)
        counts = [  # each parallel dim's iterations
            self.iterations(b, size, step) for size, step in zip(sizes[:parallel], steps[:parallel])
        ]
        total = counts[0]
        for count in counts[1:]:
            total = self.iterations(b, total, 1, times=count)
        body = Block(arg_types=[INDEX])
        b.insert(scf.ParallelOp([self.index(0)], [total], [self.index(1)], Region(body)))
        reduce = scf.ReduceOp()
        inside = Builder(InsertPoint.at_end(body))
        inside.insert(reduce)
        inside = Builder(InsertPoint.before(reduce))
        outer = [
            index if step == 1 else emit(inside, arith.MuliOp(index, self.index(step)))
            for index, step in zip(delinearize(inside, body.args[0], counts), steps[:parallel])
        ]
        inner, ivs = self.stepped_loop_nest(inside, sizes[parallel:], steps[parallel:])
        return inner, [*outer, *ivs]

    def iterations(
        self, b: Builder, size: SSAValue, step: int, times: SSAValue | None = None
    ) -> SSAValue:
        """`size / step` (a multiple of it), times `times` if given: a constant where
        every operand is one."""
        static = [_constant(v) for v in (size, times or self.index(1))]
        if None not in static:
            return self.index(static[0] // step * static[1])  # type: ignore[operator]
        count = size if step == 1 else emit(b, arith.DivUIOp(size, self.index(step)))
        return count if times is None else emit(b, arith.MuliOp(count, times))

    def stepped_loop_nest(
        self, b: Builder, sizes: Sequence[SSAValue], steps: Sequence[int]
    ) -> tuple[Builder, list[SSAValue]]:
        """Nested `scf.for %i = 0 to size step s` without carried values (each size a
        multiple of its step); a builder inside the innermost."""
        ivs = []
        for size, step in zip(sizes, steps):
            body = Block(arg_types=[INDEX])
            b.insert(scf.ForOp(self.index(0), size, self.index(step), [], body))
            yield_op = scf.YieldOp()
            Builder(InsertPoint.at_end(body)).insert(yield_op)
            b = Builder(InsertPoint.before(yield_op))
            ivs.append(body.args[0])
        return b, ivs


@dataclass
class CpuKernelPattern(KernelPattern):
    """A kernel lowered to loops in place by `emit`, given its own `KernelContext`."""

    host: FunctionConstants
    """The function the kernel is lowered into (its host function, or the function of a
    kernel that occurs more than once: `accy.passes.lower.cpu_shared`)."""
    features: frozenset[str]
    """The CPU's features."""

    @property
    def function(self) -> str:  # type: ignore[override]
        return self.host.name

    def lower(self, rewriter: PatternRewriter, kernel: PlannedKernel) -> None:
        self.emit(rewriter, KernelContext(kernel, self.host, self.features))

    @abstractmethod
    def emit(self, b: Builder, ctx: KernelContext) -> None: ...
