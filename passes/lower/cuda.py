"""The CUDA target of `accy-lower`: host functions that run the plan on a GPU, and one
`gpu.module` holding a kernel per work item (`cuda_kernels.py` and the family modules).

The lowered module has `gpu.container_module`. For each accy function
`@f(%args: tensor...) -> (tensor...)` it has

    func.func @f(%in_0: memref<...>, ..., %out_0: memref<...>, ...)
        attributes {llvm.emit_c_interface}

(the CPU target's calling convention: inputs, then one out-param per result; the caller
owns every argument) whose body, in order,

1. allocates the function's device arena once, `gpu.alloc() : memref<SIZExi8>` at the
   planned size, and takes every slot planned in the arena as a `memref.view` at its
   planned offset and every arena workspace as a view of its bytes; a workspace term
   that is not in the arena gets its own `gpu.alloc` (dynamic slots would be separate
   allocations: the CUDA target needs static shapes and refuses them);
2. copies host → device exactly the planned transfers: every slot whose transfer is
   `host_to_device` or `bidirectional` from its argument (`gpu.memcpy`); constants planned
   in `device_global` (too large for constant memory, or returned) are uploaded once from
   a host `memref.global`; constants planned in `device_constant` are constant-memory
   globals of the `gpu.module` and never copied;
3. launches every work item in schedule order (`gpu.launch_func`, grid and block from the
   shapes; multi-phase families launch several kernels; `dot.splitk` loops on the host
   over output tiles); an `accy.iterate` is a host `scf.for` over its trip count whose
   body launches the body's work items and then copies the yielded values into the
   carried buffers (device → device), after the inits were copied in before the loop;
4. copies device → host every result into its out-param (`device_to_host` and
   `bidirectional` slots; an aliased output is copied from its backing input/constant
   slot, which the plan keeps in the arena);
5. frees what it allocated (`gpu.dealloc`).

Steps 2 to 4 run only when every allocation succeeded (a failed `gpu.alloc` returns null
and the runtime records why; the caller reads the record), so a program that runs out of
device memory touches none.

The gpu ops are synchronous (no async tokens); `gpu-async-region` in the host pipeline
puts them on one stream.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from accy.dialects import accy as ops
from accy.passes.analysis import AnalysisManager
from accy.passes.arena_plan import FunctionArena
from accy.passes.buffers import BufferSlot
from accy.passes.lower import cuda_ir as ir
from accy.passes.lower.cuda_kernels import (
    CudaLoweringError,
    KernelContext,
    KernelProgram,
    Launch,
    LoopIndexArg,
    SlotArg,
    WorkspaceArg,
    lower_work_item,
    static_shape,
    storage_type,
)
from accy.passes.lower.plan import LoweringPlan
from accy.passes.memory import MemorySpace
from accy.passes.schedule import WorkItem, WorkKind
from xdsl.builder import Builder
from xdsl.dialects import arith, func, gpu, memref
from xdsl.dialects.builtin import (
    FunctionType,
    ModuleOp,
    StringAttr,
    SymbolRefAttr,
    UnitAttr,
)
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.rewriter import InsertPoint

KERNEL_MODULE = "accy_kernels"
"""The symbol of the `gpu.module` holding every kernel of a module."""

EMIT_C_INTERFACE = "llvm.emit_c_interface"


def lower_cuda(module: ModuleOp, manager: AnalysisManager) -> ModuleOp:
    """A new module (`gpu.container_module`) running `module`'s plan on a CUDA GPU; the
    input module is not changed. Raises `CudaLoweringError` for what the target cannot
    lower (dynamic shapes, 8-byte accumulators in 4-byte workspaces, ...)."""
    return lower_cuda_programs(module, manager)[0]


def lower_cuda_programs(
    module: ModuleOp, manager: AnalysisManager
) -> tuple[ModuleOp, dict[int, KernelProgram]]:
    """`lower_cuda`, plus the kernel program (launches) of every work item by id."""
    plan = LoweringPlan.from_manager(manager, module)
    programs: dict[int, KernelProgram] = {}
    lowered = ModuleOp([], attributes={"gpu.container_module": UnitAttr()})
    kernels = gpu.ModuleOp(StringAttr(KERNEL_MODULE), Region(Block()))  # type: ignore[arg-type]
    context = KernelContext(
        buffers=plan.buffers,
        memory=plan.memory,
        workspaces=plan.workspaces,
        sm_count=plan.sm_count,
        module_block=kernels.body.block,
    )
    host_globals = HostGlobals(lowered.body.block)
    functions = [op for op in module.ops if isinstance(op, func.FuncOp) and op.body.blocks]
    for source in functions:
        host = HostFunction(source, plan, context, host_globals, programs)
        lowered.body.block.add_op(host.lower())
    if kernels.body.block.first_op is not None:
        lowered.body.block.add_op(kernels)
    return lowered, programs


lower = lower_cuda
"""The name `accy-lower` looks up (see `lower_pass.OPTIONAL_TARGETS`)."""


@dataclass
class HostGlobals:
    """Host copies of constants the host uploads (`memref.global constant`, host memory)."""

    block: Block
    globals: dict[int, memref.GlobalOp] = field(default_factory=dict)

    def of(self, slot: BufferSlot) -> memref.GlobalOp:
        if slot.id not in self.globals:
            assert isinstance(slot.producer, ops.ConstantOp)
            op = ir.global_buffer(
                f"accy_host_constant_{slot.id}", storage_type(slot.value), slot.producer.value
            )
            first = self.block.first_op
            self.block.insert_op_before(op, first) if first else self.block.add_op(op)
            self.globals[slot.id] = op
        return self.globals[slot.id]


class HostFunction:
    """Lowers one accy function to its host `func.func` (see the module docstring)."""

    def __init__(
        self,
        source: func.FuncOp,
        plan: LoweringPlan,
        context: KernelContext,
        host_globals: HostGlobals,
        programs: dict[int, KernelProgram],
    ):
        self.source = source
        self.programs = programs
        self.plan = plan
        self.context = context
        self.host_globals = host_globals
        self.name = source.sym_name.data
        self.arena: FunctionArena = plan.arena.functions.get(self.name) or FunctionArena(self.name)
        self.device: dict[int, SSAValue] = {}
        """Slot id → its device buffer (a view of the arena)."""
        self.workspace: dict[tuple[str, str], SSAValue] = {}
        self.allocations: list[SSAValue] = []

    # -- helpers ---------------------------------------------------------------------

    def slot(self, value: SSAValue) -> BufferSlot:
        slot = self.plan.buffers.get_slot(value)
        assert slot is not None, "every stored value has a slot"
        return slot

    def space(self, slot: BufferSlot) -> MemorySpace:
        assignment = self.plan.memory.assignment_for_slot(slot.id)
        assert assignment is not None
        return assignment.space

    def items(self) -> list[WorkItem]:
        return [w for w in self.plan.schedule.work_items if w.function == self.name]

    def allocate(self, b: Builder, size: int) -> SSAValue:
        buffer = ir.emit(b, gpu.AllocOp(ir.bytes_type(size)))
        self.allocations.append(buffer)
        return buffer

    # -- the function ----------------------------------------------------------------

    def lower(self) -> func.FuncOp:
        inputs = [storage_type(arg) for arg in self.source.body.block.args]
        returned = self._returned_values()
        outputs = [storage_type(v) for v in returned]
        host = func.FuncOp(self.name, FunctionType.from_lists(inputs + outputs, []))
        host.attributes[EMIT_C_INTERFACE] = UnitAttr()
        block = host.body.block
        b = Builder(InsertPoint.at_end(block))
        params, out_params = block.args[: len(inputs)], block.args[len(inputs) :]
        self._allocate(b)

        def run(inner: Builder) -> None:
            self._copy_inputs(inner, params)
            for item in self.items():
                if item.parent is None:
                    self._run(inner, item)
            for out_param, value in zip(out_params, returned):
                inner.insert(gpu.MemcpyOp(self._device_buffer(inner, value), out_param))

        if self.allocations:
            ir.if_then(b, self._allocated(b), run)
        else:
            run(b)
        for buffer in reversed(self.allocations):
            b.insert(gpu.DeallocOp(buffer))
        b.insert(func.ReturnOp())
        return host

    def _allocated(self, b: Builder) -> SSAValue:
        """True when every `gpu.alloc` succeeded: a failed one returns null (the runtime
        recorded why), and nothing may then touch device memory."""
        succeeded = None
        for buffer in self.allocations:
            address = ir.emit(b, memref.ExtractAlignedPointerAsIndexOp.get(buffer))
            nonzero = ir.emit(b, arith.CmpiOp(address, ir.index(b, 0), "ne"))
            succeeded = (
                nonzero if succeeded is None else ir.emit(b, arith.AndIOp(succeeded, nonzero))
            )
        assert succeeded is not None
        return succeeded

    def _returned_values(self) -> list[SSAValue]:
        terminator = self.source.body.block.last_op
        assert isinstance(terminator, func.ReturnOp)
        return list(terminator.arguments)

    def _allocate(self, b: Builder) -> None:
        """The arena, the views of its slots and workspaces, and the other workspaces."""
        if self.arena.separate:
            slot = self.plan.buffers.slots[self.arena.separate[0]]
            static_shape(slot.value)  # raises: the CUDA target needs static shapes
        arena = self.allocate(b, self.arena.size) if self.arena.size else None
        for slot_id, offset in sorted(self.arena.offsets.items()):
            assert arena is not None
            slot = self.plan.buffers.slots[slot_id]
            self.device[slot_id] = ir.view(b, arena, offset, storage_type(slot.value))
        for buffer in self.arena.workspaces:
            assert arena is not None
            key = (buffer.term.family, buffer.term.name)
            self.workspace[key] = ir.view(b, arena, buffer.offset, ir.bytes_type(buffer.term.bytes))
        ids = {item.id for item in self.items()}
        for term in self.plan.workspaces.terms:
            if not term.arena and ids.intersection(term.nodes):
                self.workspace[(term.family, term.name)] = self.allocate(b, term.bytes)

    def _copy_inputs(self, b: Builder, params) -> None:
        """Planned host → device transfers, then uploads of device_global constants."""
        for arg, param in zip(self.source.body.block.args, params):
            slot = self.slot(arg)
            assignment = self.plan.memory.assignment_for_slot(slot.id)
            if assignment is not None and assignment.transfer.needs_host_input():
                b.insert(gpu.MemcpyOp(param, self.device[slot.id]))
        for slot in self.plan.buffers.slots:
            if (
                slot.function is self.source
                and slot.role.constant
                and self.space(slot) is MemorySpace.DEVICE_GLOBAL
            ):
                self._upload_constant(b, slot, self.device[slot.id])

    def _upload_constant(self, b: Builder, slot: BufferSlot, destination: SSAValue) -> None:
        host_copy = ir.get_global(b, self.host_globals.of(slot))
        b.insert(gpu.MemcpyOp(host_copy, destination))

    def _device_buffer(self, b: Builder, value: SSAValue) -> SSAValue:
        """The device buffer of a value's slot (constants in constant memory have none)."""
        slot = self.slot(value)
        if slot.id not in self.device:
            raise CudaLoweringError(
                f"function @{self.name}: slot {slot.id} has no device buffer in the arena "
                f"({self.space(slot).value})",
                value.owner.location if isinstance(value.owner, Operation) else None,
            )
        return self.device[slot.id]

    def _copy_into_slot(self, b: Builder, destination: BufferSlot, value: SSAValue) -> None:
        """Device copy of `value` into `destination`'s buffer (nothing when they share a
        slot; from the host copy when `value` lives in constant memory)."""
        source = self.slot(value)
        if source.id == destination.id:
            return
        if self.space(source) is MemorySpace.DEVICE_CONSTANT:
            self._upload_constant(b, source, self.device[destination.id])
            return
        b.insert(gpu.MemcpyOp(self._device_buffer(b, value), self.device[destination.id]))

    # -- work items ------------------------------------------------------------------

    def _run(self, b: Builder, item: WorkItem) -> None:
        if item.kind is WorkKind.ITERATE:
            self._run_loop(b, item)
        else:
            program = lower_work_item(self.context, item)
            self.programs[item.id] = program
            self._launch_program(b, program)

    def _launch_program(self, b: Builder, program: KernelProgram) -> None:
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
            if isinstance(arg, SlotArg):
                operands.append(self.device[arg.slot])
            elif isinstance(arg, WorkspaceArg):
                operands.append(self.workspace[(arg.term.family, arg.term.name)])
            else:
                assert isinstance(arg, LoopIndexArg) and loop_index is not None
                operands.append(loop_index)
        grid = [ir.index(b, n) for n in launch.grid]
        block = [ir.index(b, n) for n in launch.block]
        kernel = SymbolRefAttr(KERNEL_MODULE, [launch.kernel])
        b.insert(gpu.LaunchFuncOp(kernel, grid, block, kernelOperands=operands))

    def _run_loop(self, b: Builder, item: WorkItem) -> None:
        """`accy.iterate`: inits into the carried buffers, then a host loop running the
        body's work items and copying the yielded values into the carried buffers."""
        loop = item.root
        assert isinstance(loop, ops.IterateOp)
        carried = [self.slot(result) for result in loop.res]
        yielded = list(loop.body.block.last_op.operands)  # type: ignore[union-attr]
        self._check_no_swaps(loop, carried, yielded)
        for init, slot in zip(loop.inits, carried):
            self._copy_into_slot(b, slot, init)
        body_items = [w for w in self.items() if w.parent == item.id]

        def body(inner: Builder, _i: SSAValue, _carried) -> list[SSAValue]:
            for child in body_items:
                self._run(inner, child)
            for value, slot in zip(yielded, carried):
                self._copy_into_slot(inner, slot, value)
            return []

        ir.for_range(b, 0, loop.trip_count.value.data, 1, body)

    def _check_no_swaps(self, loop: ops.IterateOp, carried, yielded) -> None:
        ids = {slot.id for slot in carried}
        for index, (value, slot) in enumerate(zip(yielded, carried)):
            source = self.slot(value)
            if source.id != slot.id and source.id in ids:
                raise CudaLoweringError(
                    f"'accy.iterate' op yields carried value #{index} from another carried "
                    "buffer; the CUDA target copies yielded values in place and would need "
                    "an unplanned staging buffer for it",
                    loop.location,
                )


def _register() -> None:
    from accy.passes.lower.lower_pass import TARGETS

    TARGETS.setdefault("cuda", lower_cuda)


_register()

__all__ = [
    "KERNEL_MODULE",
    "CudaLoweringError",
    "lower",
    "lower_cuda",
    "lower_cuda_programs",
]
