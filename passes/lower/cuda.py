"""The CUDA target of `accy-lower`: a planned module (`accy-plan{target=cuda}`) → host
functions that run it on a GPU and one `gpu.module` holding the kernels (`cuda_kernels.py`
and the family modules).

The lowered module has `gpu.container_module`. The host side is `host.HostLowering`'s:
each planned function becomes

    func.func @f(%in_0: memref<...>, ..., %out_0: memref<...>, ...)
        attributes {llvm.emit_c_interface}

(the CPU target's calling convention: inputs, then one out-param per result; the caller
owns every argument) whose arena and `accy.alloc`s are `gpu.alloc`s (freed with
`gpu.dealloc`), whose views are `memref.view`s of the arena and whose copies (host to
device, device to host, device to device) are `gpu.memcpy`s. Constants planned in
`device_constant` are constant-memory globals of the `gpu.module`, never copied; those in
`device_global` are uploaded from a host `memref.global` by the planned copies. Each
`accy.kernel` is its kernel program's launches (`gpu.launch_func`, grid and block from the
shapes; multi-phase families launch several kernels; `dot.splitk` loops on the host over
output tiles); an `accy.loop` is a host `scf.for`.

Everything after the allocations runs only when every allocation succeeded (a failed
`gpu.alloc` returns null and the runtime records why; the caller reads the record), so a
program that runs out of device memory touches none. The gpu ops are synchronous (no async
tokens); `gpu-async-region` in the host pipeline puts them on one stream.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from accy.dialects import accy as ops
from accy.passes.families import (
    convolution_tiled,
    dot_splitk,
    dot_tiled,
    reduce_row,
    reduce_split,
    scan_block,
    scan_multiblock,
)
from accy.passes.lower import cuda_ir as ir
from accy.passes.lower.cuda_attention import attention_kernel
from accy.passes.lower.cuda_dot import (
    splitk_dot_kernel,
    tiled_convolution_kernel,
    tiled_dot_kernel,
)
from accy.passes.lower.cuda_kernels import (
    ELEMENT_KINDS,
    BufferArg,
    CudaLoweringError,
    KernelContext,
    KernelProgram,
    Launch,
    LoopIndexArg,
    WorkspaceArg,
    element_kernel,
    fold_kernel,
    scatter_kernel,
    sort_kernel,
    update_kernel,
    window_kernel,
)
from accy.passes.lower.cuda_reductions import (
    block_scan_kernel,
    multiblock_scan_kernel,
    row_reduce_kernel,
    split_reduce_kernel,
)
from accy.passes.lower.host import (
    HostGlobals,
    HostLowering,
    KernelPattern,
    drop_unread_globals,
    planned_functions,
)
from accy.passes.lower.indexing import updated_in_place
from accy.passes.lower.planned_kernel import PlannedKernel
from accy.passes.planned_form import SM_COUNT
from accy.passes.schedule import WorkKind
from xdsl.builder import Builder
from xdsl.dialects import func, gpu, memref
from xdsl.dialects.builtin import (
    IntegerAttr,
    MemRefType,
    ModuleOp,
    StringAttr,
    SymbolRefAttr,
    UnitAttr,
)
from xdsl.ir import Block, Region, SSAValue
from xdsl.pattern_rewriter import PatternRewriter

from accy.diagnostics import AccyError

KERNEL_MODULE = "accy_kernels"
"""The symbol of the `gpu.module` holding every kernel of a module."""


def lower_cuda(module: ModuleOp) -> ModuleOp:
    """A new module (`gpu.container_module`) running the planned `module` on a CUDA GPU;
    the input module is not changed. Raises `CudaLoweringError` for what the target cannot
    lower (8-byte accumulators in 4-byte workspaces, ...)."""
    return lower_cuda_programs(module)[0]


def lower_cuda_programs(module: ModuleOp) -> tuple[ModuleOp, dict[int, KernelProgram]]:
    """`lower_cuda`, plus the kernel program (launches) of every kernel by id."""
    sm_count = module.attributes.get(SM_COUNT)
    assert isinstance(sm_count, IntegerAttr), "a planned module records its sm_count"
    programs: dict[int, KernelProgram] = {}
    lowered = ModuleOp([], attributes={"gpu.container_module": UnitAttr()})
    kernels = gpu.ModuleOp(StringAttr(KERNEL_MODULE), Region(Block()))  # type: ignore[arg-type]
    context = KernelContext(sm_count=sm_count.value.data, module_block=kernels.body.block)
    globals_ = HostGlobals(lowered)
    for planned in planned_functions(module):
        lowered.body.block.add_op(HostFunction(planned, globals_, context, programs).lower())
    if kernels.body.block.first_op is not None:
        lowered.body.block.add_op(kernels)
    drop_unread_globals(lowered)
    return lowered, programs


class HostFunction(HostLowering):
    """Lowers one planned function to its host `func.func` (see the module docstring)."""

    def __init__(
        self,
        planned: func.FuncOp,
        globals_: HostGlobals,
        context: KernelContext,
        programs: dict[int, KernelProgram],
    ):
        super().__init__(planned, globals_)
        self.context = context
        self.programs = programs
        self.host_buffers: set[SSAValue] = set()
        """Allocations in host memory (`allocate(host=True)`)."""

    def allocate(
        self,
        b: Builder,
        t: MemRefType,
        sizes: Sequence[SSAValue],
        alignment: int,
        *,
        host: bool = False,
    ) -> SSAValue:
        if host:  # a buffer the host reads (a while's condition)
            buffer = ir.emit(b, memref.AllocOp(list(sizes), [], t, IntegerAttr(alignment, 64)))
            self.host_buffers.add(buffer)
            return buffer
        return ir.emit(b, gpu.AllocOp(t, list(sizes)))  # cudaMalloc aligns to 256 bytes

    def deallocate(self, b: Builder, buffer: SSAValue) -> None:
        if buffer in self.host_buffers:
            b.insert(memref.DeallocOp.get(buffer))
        else:
            b.insert(gpu.DeallocOp(buffer))

    def copy(self, b: Builder, source: SSAValue, target: SSAValue) -> None:
        b.insert(gpu.MemcpyOp(source, target))

    def kernel_patterns(self) -> list[KernelPattern]:
        return [pattern(self) for pattern in CUDA_KERNEL_PATTERNS]

    def unlowered(self, kernel: PlannedKernel) -> AccyError:
        if kernel.family is not None:
            return CudaLoweringError(
                f"work item {kernel.id} ({kernel.kind.value}) runs family '{kernel.family}', "
                "which the CUDA target does not implement",
                kernel.op.location,
            )
        return CudaLoweringError(
            f"work item {kernel.id} of kind {kernel.kind.value} has no kernel family; the "
            "CUDA target lowers reduce, scan and dot only through their families",
            kernel.op.location,
        )

    def launch(self, b: Builder, kernel: PlannedKernel, program: KernelProgram) -> None:
        """Record a kernel's program and launch it (in a host loop when it has one)."""
        self.programs[kernel.id] = program
        if program.host_loop is None:
            for launch in program.launches:
                self._launch(b, launch, None)
            return

        def body(inner: Builder, tile: SSAValue, _carried) -> list[SSAValue]:
            for launch in program.launches:
                self._launch(inner, launch, tile)
            return []

        ir.for_range(b, 0, program.host_loop, 1, body)

    def _launch(self, b: Builder, launch: Launch, loop_index: SSAValue | None) -> None:
        operands: list[SSAValue] = []
        for arg in launch.args:
            if isinstance(arg, BufferArg):
                operands.append(arg.buffer)
            elif isinstance(arg, WorkspaceArg):
                operands.append(arg.workspace.buffer)
            else:
                assert isinstance(arg, LoopIndexArg) and loop_index is not None
                operands.append(loop_index)
        grid = [self.index(n) for n in launch.grid]
        block = [self.index(n) for n in launch.block]
        kernel = SymbolRefAttr(KERNEL_MODULE, [launch.kernel])
        b.insert(gpu.LaunchFuncOp(kernel, grid, block, kernelOperands=operands))


# ---------------------------------------------------------------------------------------
# Kernel patterns
# ---------------------------------------------------------------------------------------


@dataclass
class LaunchPattern(KernelPattern):
    """A kernel lowered to its kernel program (`gpu.func`s in the kernel module) and the
    host's launches of it, at the kernel."""

    host: HostFunction

    @property
    def function(self) -> str:  # type: ignore[override]
        return self.host.name

    def lower(self, rewriter: PatternRewriter, kernel: PlannedKernel) -> None:
        self.host.launch(rewriter, kernel, self.program(self.host.context, kernel))

    @abstractmethod
    def program(self, context: KernelContext, kernel: PlannedKernel) -> KernelProgram: ...


@dataclass
class FamilyLaunch(LaunchPattern):
    """A kernel of one planned family (its module in `accy.passes.families`)."""

    family: ClassVar[str]

    def matches(self, kernel: PlannedKernel) -> bool:
        return kernel.family == self.family


class RowReduceLaunch(FamilyLaunch):
    """`reduce.row`: one block per kept row, a tree in shared memory."""

    family = reduce_row.FAMILY.id

    def program(self, context: KernelContext, kernel: PlannedKernel) -> KernelProgram:
        return row_reduce_kernel(context, kernel)


class SplitReduceLaunch(FamilyLaunch):
    """`reduce.split`: partials of every row's slices into the `partials` workspace, then
    one fold per row (two launches)."""

    family = reduce_split.FAMILY.id

    def program(self, context: KernelContext, kernel: PlannedKernel) -> KernelProgram:
        return split_reduce_kernel(context, kernel)


class BlockScanLaunch(FamilyLaunch):
    """`scan.block`: one block per row scanning it in shared memory."""

    family = scan_block.FAMILY.id

    def program(self, context: KernelContext, kernel: PlannedKernel) -> KernelProgram:
        return block_scan_kernel(context, kernel)


class MultiblockScanLaunch(FamilyLaunch):
    """`scan.multiblock`: tiles scanned with their carries into the `carries` workspace,
    the carries scanned, then added to the tiles (three launches)."""

    family = scan_multiblock.FAMILY.id

    def program(self, context: KernelContext, kernel: PlannedKernel) -> KernelProgram:
        return multiblock_scan_kernel(context, kernel)


class TiledDotLaunch(FamilyLaunch):
    """`dot.tiled`: one block per output tile, operand tiles staged in shared memory."""

    family = dot_tiled.FAMILY.id

    def program(self, context: KernelContext, kernel: PlannedKernel) -> KernelProgram:
        return tiled_dot_kernel(context, kernel)


class SplitKDotLaunch(FamilyLaunch):
    """`dot.splitk`: a host loop over output tiles, each accumulating contraction slices
    into the `partials` workspace and then folding them (two launches per tile)."""

    family = dot_splitk.FAMILY.id

    def program(self, context: KernelContext, kernel: PlannedKernel) -> KernelProgram:
        return splitk_dot_kernel(context, kernel)


class UpdateInPlaceLaunch(LaunchPattern):
    """A `dynamic_update_slice` whose result takes its operand's buffer (the plan's
    in-place reuse): one thread per update element (`update_kernel`)."""

    def matches(self, kernel: PlannedKernel) -> bool:
        return (
            kernel.family is None
            and isinstance(kernel.root, ops.DynamicUpdateSliceOp)
            and updated_in_place(kernel)
        )

    def program(self, context: KernelContext, kernel: PlannedKernel) -> KernelProgram:
        return update_kernel(context, kernel)


class ScatterLaunch(LaunchPattern):
    """A `scatter`: the operand copied unless the result took its buffer, then one thread
    per update element combining it atomically (`scatter_kernel`)."""

    def matches(self, kernel: PlannedKernel) -> bool:
        return kernel.kind is WorkKind.SCATTER

    def program(self, context: KernelContext, kernel: PlannedKernel) -> KernelProgram:
        return scatter_kernel(context, kernel)


class FoldLaunch(LaunchPattern):
    """A `fold`: one thread per result element (`fold_kernel`)."""

    def matches(self, kernel: PlannedKernel) -> bool:
        return kernel.kind is WorkKind.FOLD

    def program(self, context: KernelContext, kernel: PlannedKernel) -> KernelProgram:
        return fold_kernel(context, kernel)


class TiledConvolutionLaunch(FamilyLaunch):
    """`convolution.tiled`: shared-memory tiles of the implicit product
    (`tiled_convolution_kernel`)."""

    family = convolution_tiled.FAMILY.id

    def program(self, context: KernelContext, kernel: PlannedKernel) -> KernelProgram:
        return tiled_convolution_kernel(context, kernel)


class WindowLaunch(LaunchPattern):
    """`window` and `convolution` items: one thread per result element (`window_kernel`)."""

    def matches(self, kernel: PlannedKernel) -> bool:
        return kernel.kind in (WorkKind.WINDOW, WorkKind.CONVOLUTION)

    def program(self, context: KernelContext, kernel: PlannedKernel) -> KernelProgram:
        return window_kernel(context, kernel)


class SortLaunch(LaunchPattern):
    """A `sort` (family `sort.merge`): one launch per merge pass (`sort_kernel`)."""

    def matches(self, kernel: PlannedKernel) -> bool:
        return kernel.kind is WorkKind.SORT

    def program(self, context: KernelContext, kernel: PlannedKernel) -> KernelProgram:
        return sort_kernel(context, kernel)


class AttentionLaunch(LaunchPattern):
    """`attention` kernels: one thread per score row (`cuda_attention`)."""

    def matches(self, kernel: PlannedKernel) -> bool:
        return kernel.kind is WorkKind.ATTENTION

    def program(self, context: KernelContext, kernel: PlannedKernel) -> KernelProgram:
        return attention_kernel(context, kernel)


class ElementLaunch(LaunchPattern):
    """Kernels without a family of the elementwise, broadcast, reshape and transpose
    kinds: one thread per result element."""

    def matches(self, kernel: PlannedKernel) -> bool:
        return kernel.family is None and kernel.kind in ELEMENT_KINDS

    def program(self, context: KernelContext, kernel: PlannedKernel) -> KernelProgram:
        return element_kernel(context, kernel)


CUDA_KERNEL_PATTERNS: tuple[type[LaunchPattern], ...] = (
    RowReduceLaunch,
    SplitReduceLaunch,
    BlockScanLaunch,
    MultiblockScanLaunch,
    TiledDotLaunch,
    SplitKDotLaunch,
    UpdateInPlaceLaunch,
    ScatterLaunch,
    FoldLaunch,
    SortLaunch,
    TiledConvolutionLaunch,
    WindowLaunch,
    AttentionLaunch,
    ElementLaunch,
)
"""The CUDA target's kernel patterns: one per family, and the one-thread-per-element
kernels."""
