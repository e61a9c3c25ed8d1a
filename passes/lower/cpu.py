"""The CPU target: a planned module (`accy-plan{target=cpu}`) → upstream
`func`/`memref`/`scf`/`arith`/`math` code that runs the plan with loops instead of kernels.

The host side is `host.HostLowering`'s: each planned function becomes

    func.func @f(%in_0: memref<...>, ..., %out_0: memref<...>, ...)
        attributes {llvm.emit_c_interface}

(the calling convention of `accy.mlir_bridge.JitModule.run`: inputs, then one out-param
per result; the caller owns every argument buffer, each `llvm.noalias`), its arena and
`accy.alloc`s `memref.alloc`s (aligned as planned), its views `memref.view`s, its copies
`memref.copy`s. Each `accy.kernel` becomes one loop nest (the innermost loop over the
contiguous last dim; see *Parallel loops* for which loops are `scf.parallel`), reading its
ins and writing its outs:

- fused elementwise/broadcast/reshape groups: one loop nest over the root's shape, the
  members through `scalar` + `indexing` (splat constants become `arith.constant`);
- transpose, iota, slice: one loop nest over the result; concatenate: one per operand;
- scatter: the operand copied into the result (unless the plan gave the result its
  buffer), then a sequential loop nest over the updates combining each in-bounds one
  into its element with the update computation;
- sort: a parallel loop nest over the slices, each sorted by binary insertion straight
  into the results when they keep at most `INSERTION_SORT_KEPT` elements of it (a top-k
  keeps k), else merge passes (a parallel loop nest over each pass's pairs of runs, each
  pair merged by one sequential loop) ping-ponging through the `sort.merge` family's
  `scratch` workspace; the operands through the fused producers;
- fold: one loop nest over the results, each element a sequential `scf.for` over its
  reduced positions carrying the accumulated values through the body;
- reduce: loops over the kept dims, then blocked loops per reduced dim (see *Reductions*)
  accumulating in f32 for f16/bf16, with the fused prologue evaluated in the innermost
  loop;
- dot_general (with its operand prologue and epilogue, `dot_loops`): register tiles
  where `cpu_dot.dot_tiling` finds one (one contracting dim, a contiguous form,
  f32/f16/bf16, f64 or 32/64-bit integer accumulators); other products without an
  epilogue of f32, f64 or integers: output zeroed, then loops batch, lhs free (i),
  contracting (k), rhs free (j) accumulating into the output, so the innermost loop is
  contiguous; the others (f16/bf16, or with an epilogue) accumulate in loops batch, i, j,
  k and store each sum (rounded, or its epilogue value) once;
- scan: loops over the other dims, then a sequential loop along the scan dim with the
  carry, writing its out (the scratch the result shares);
- attention (softmax(Q K^T) V, `cpu_kernels.attention`): a parallel nest over the score
  rows, each row's scores in a stack buffer, its reductions, then its output row
  accumulated key after key.

Each kind is lowered by its module of `accy.passes.lower.cpu_kernels` (`elementwise`,
`layout`, `scatter`, `reduction`, `scan`, `dot`, `attention`, `convolution`, `window`, `sort`): one
`CpuKernelPattern` per lowering (`CPU_KERNEL_PATTERNS`), which reads the kernel, the
function's constants and the CPU's features through an explicit `KernelContext`; this
module keeps the host side and the order the patterns are tried in.

Allocation failures: every allocation of a function (its arena, its `accy.alloc`s) is
made at its start, before anything runs. If one returns
null, the function calls `accy_allocation_failed(bytes)` (i64: the size of the first that
failed; the caller's runtime records it and raises), frees the others and returns.

Parallel loops: a nest whose iterations write disjoint elements (every item's loops over
its result's dims; a reduce's kept dims, or a split reduce's chunks and kept dims; a
dot's batch and lhs-free dims; a scan's other dims) takes its outer dims, all but the
contiguous last one (the only one of a rank-1 nest) and of those the fewest giving
`PARALLEL_TASKS` iterations, as one one-dimensional `scf.parallel` over their iterations
(each dim's index divided out inside), and the rest as `scf.for`s inside it, when it does at least `PARALLEL_MIN_WORK` scalar steps (or has
a dynamic size); a dot's register tiles, whose multiply-adds are vector lanes, when they do
at least `cpu_dot.DOT_PARALLEL_MIN_WORK` of them. How `scf.parallel` runs is the pipeline's choice: the CPU target splits
it into tasks on a thread pool (`async-parallel-for`) or, for one thread, lowers it to
plain loops (`convert-scf-to-cf`).

Reductions: in a float sum no sequential chain of adds is long, so its rounding error
grows with the logarithm of the width, not with the width. The reduced dims are folded
outermost first; each dim's fold is the loops of `blocked_steps` (outermost first), each
carrying its own accumulator from zero: the innermost loop of the innermost reduced dim
adds up to `REDUCE_LEAF` consecutive elements (`fastmath<reassoc>`, so LLVM vectorizes
it), every other loop up to `REDUCE_FAN` partials, in order. Each level loops over its
whole blocks (so the loops inside have static trip counts, which LLVM unrolls), then
folds the last, partial block, if any, the same way. Other kinds keep one loop per
reduced dim carrying the accumulator through the nest (the innermost `reassoc`): max, min
and integer results do not depend on the order, and a float product's rounding errors
add up alike in any order (to first order), while accumulators restarting from 1 make
products of factors near 1 worse (the sub-ulp parts of a product near 1 are lost one
way), so float products are never blocked nor split.

A reduction with fewer than `REDUCE_SPLIT_ROWS` rows (all dims static) whose outermost
reduced dim holds more than one chunk (a power of two of its positions, at least
`REDUCE_CHUNK` elements) runs the CPU family `reduce.chunks` (`families.reduce_chunks`
decides it; the planned form records it and this lowering follows the record): one `scf.parallel` over (chunk, kept dims) folds
each chunk from the identity into `partials[chunk, kept...]` (the kernel's planned
`partials` workspace), then each row folds its partials (a sum in blocked loops). Every order is fixed at lowering, so the thread count
never changes a result.

Dynamic dims: every `?` dim of a function is bound to one row count, read with
`memref.dim` from the first argument that has a `?` (its first `?` dim). A function with
`?` dims but no argument with one, a reshape whose dynamic dim is not carried through
unchanged, a concatenate along a dynamic dim or a slice with a dynamic result dim cannot
be bound that way and is rejected when planned (`dynamic_rows.DynamicRowsError`, at the
op's location). When the plan sized dynamic slots at `rows`, the caller must not pass more
rows than the largest planned (`accy.compile` checks this before running).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

import numpy as np
from accy.dialects import plan
from accy.passes.lower.bf16_storage import store_bf16_as_i16
from accy.passes.lower.cpu_kernels.attention import AttentionLoops
from accy.passes.lower.cpu_kernels.context import CpuKernelPattern, CpuLoweringError
from accy.passes.lower.cpu_kernels.dot import DotLoops
from accy.passes.lower.cpu_kernels.elementwise import ElementwiseLoops
from accy.passes.lower.cpu_kernels.layout import ConcatenateLoops, IotaLoops, TransposeLoops
from accy.passes.lower.cpu_kernels.reduction import FoldLoops, ReduceLoops
from accy.passes.lower.cpu_kernels.scan import ScanLoops
from accy.passes.lower.cpu_kernels.scatter import ScatterLoops, UpdateInPlaceLoops
from accy.passes.lower.cpu_kernels.sort import SortLoops
from accy.passes.lower.cpu_kernels.window import WindowLoops
from accy.passes.lower.cpu_shared import SharedKernels
from accy.passes.lower.host import (
    FunctionConstants,
    HostGlobals,
    HostLowering,
    KernelPattern,
    drop_unread_globals,
    planned_functions,
)
from accy.passes.lower.scalar import emit
from xdsl.builder import Builder
from xdsl.dialects import arith, func, memref
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    ArrayAttr,
    DictionaryAttr,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    UnitAttr,
    i64,
)
from xdsl.ir import Region, SSAValue

from accy.runtime.abi import ALLOCATION_FAILED

NOALIAS = "llvm.noalias"


def lower_cpu(module: ModuleOp, features: Collection[str] = ()) -> ModuleOp:
    """A new module of upstream ops running the planned `module` (`accy-plan{target=cpu}`)
    on a CPU with `features` (flags as Linux's /proc/cpuinfo names them: `BF16_PAIRS`
    is the one read; `accy.runtime.cpu_features.host_flags()` for this machine's), the
    input module unchanged. Without features the code runs on any x86-64 CPU that LLVM
    compiles it for."""
    lowered = ModuleOp([])
    globals_ = HostGlobals(lowered)
    shared = SharedKernels(module, lowered)
    hook = False
    for planned in planned_functions(module):
        lowering = FunctionLowering(planned, globals_, features, shared)
        lowered.body.block.add_op(lowering.lower())
        hook = hook or lowering.uses_allocation_hook
    if hook:
        lowered.body.block.add_op(func.FuncOp.external(ALLOCATION_FAILED, [i64], []))
    drop_unread_globals(lowered)
    store_bf16_as_i16(lowered)
    return lowered


@dataclass
class FunctionLowering(HostLowering):
    """Lowers one planned function for the CPU (see the module docstring): the shared host
    lowering (`host`) with `memref` allocations and copies, and a loop nest per kernel
    (`CPU_KERNEL_PATTERNS`, each given the kernel's `KernelContext`)."""

    def __init__(
        self,
        planned: func.FuncOp,
        globals_: HostGlobals,
        features: Collection[str],
        shared: SharedKernels | None = None,
    ):
        super().__init__(planned, globals_)
        self.features = frozenset(features)
        """The CPU's features (see `lower_cpu`)."""
        self.shared = shared
        """The module's kernels that occur more than once (`cpu_shared`), if any."""
        self.uses_allocation_hook = False
        """Whether the lowered function calls `ALLOCATION_FAILED` (it allocates)."""

    def lower(self) -> func.FuncOp:
        function = super().lower()
        # Parameters and results are distinct arrays (results are fresh or a donated
        # parameter's, inputs are only read), so LLVM may vectorize the loops without
        # runtime overlap checks; an out-parameter and its donor may be one array.
        aliased: set[int] = set()
        for arg in self.planned.body.block.args:
            donor = plan.donor_of(arg)
            if donor is not None:
                aliased.update((arg.index, donor.index))  # type: ignore[attr-defined]
        function.arg_attrs = ArrayAttr(
            [
                DictionaryAttr({} if index in aliased else {NOALIAS: UnitAttr()})
                for index in range(len(function.function_type.inputs))
            ]
        )
        return function

    # ----------------------------------------------------------------- host hooks

    def allocate(
        self,
        b: Builder,
        t: MemRefType,
        sizes: Sequence[SSAValue],
        alignment: int,
        *,
        host: bool = False,
    ) -> SSAValue:
        del host  # every buffer is in host memory
        return emit(b, memref.AllocOp(list(sizes), [], t, IntegerAttr(alignment, 64)))

    def deallocate(self, b: Builder, buffer: SSAValue) -> None:
        b.insert(memref.DeallocOp.get(buffer))

    def copy(self, b: Builder, source: SSAValue, target: SSAValue) -> None:
        if source is not target:
            b.insert(memref.CopyOp(source, target))

    def allocation_failed(self, b: Builder) -> None:
        """Report the size of the first allocation that failed (see *Allocation failures*)."""
        zero = self.index(0)
        failed: SSAValue = zero
        for buffer in reversed(self.allocated):  # the first allocation's failure wins
            pointer = emit(b, memref.ExtractAlignedPointerAsIndexOp.get(buffer))
            is_null = emit(b, arith.CmpiOp(pointer, zero, "eq"))
            failed = emit(b, arith.SelectOp(is_null, self._bytes(b, buffer), failed))
        size = emit(b, arith.IndexCastOp(failed, i64))
        b.insert(func.CallOp(ALLOCATION_FAILED, [size], []))
        self.uses_allocation_hook = True

    def kernel_patterns(self) -> list[KernelPattern]:
        return self.patterns_for(self)

    def patterns_for(self, function: FunctionConstants) -> list[KernelPattern]:
        """The kernel patterns, building into `function` (this one, or a shared kernel's)."""
        return [pattern(function, self.features) for pattern in CPU_KERNEL_PATTERNS]

    def _lower_kernels(self, body: Region) -> None:
        """A kernel whose structure occurs more than once is a call of its structure's
        function (`cpu_shared`); the others are lowered in place."""
        if self.shared is not None and self._rows is None:
            for op in [op for op in body.walk() if isinstance(op, plan.KernelOp)]:
                key = self.shared.key_of(self.name, op)
                if key is not None:
                    self.shared.call(op, key, self.globals, self.name, self.patterns_for)
        super()._lower_kernels(body)

    def _bytes(self, b: Builder, buffer: SSAValue) -> SSAValue:
        """The byte size of an allocated buffer (dynamic dims read from it)."""
        t = buffer.type
        assert isinstance(t, MemRefType)
        width = max(1, (t.get_element_type().bitwidth + 7) // 8)
        static = width * int(np.prod([d for d in t.get_shape() if d != DYNAMIC_INDEX]))
        size = self.index(static)
        for dim, d in enumerate(t.get_shape()):
            if d == DYNAMIC_INDEX:
                extent = emit(b, memref.DimOp(buffer, self.index(dim)))
                size = emit(b, arith.MuliOp(size, extent))
        return size


CPU_KERNEL_PATTERNS: tuple[type[CpuKernelPattern], ...] = (
    ReduceLoops,
    DotLoops,
    AttentionLoops,
    ScanLoops,
    TransposeLoops,
    IotaLoops,
    ConcatenateLoops,
    ScatterLoops,
    FoldLoops,
    SortLoops,
    WindowLoops,
    UpdateInPlaceLoops,
    ElementwiseLoops,
)
"""The CPU target's kernel patterns, tried in order (the root-specific ones before
`ElementwiseLoops`, which takes what remains of the elementwise kinds)."""


__all__ = [
    "CpuLoweringError",
    "lower_cpu",
]
