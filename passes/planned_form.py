"""`accy-plan{target=cpu|cuda}`: the whole preparation, written as the planned form.

Each accy function becomes a host function on buffers (`accy.dialects.plan`): its
parameters, then one out-parameter per result (`accy.output = i`), all in host memory.
Its body holds, in order:

1. the row count (`memref.dim` of the first argument with a `?`), when dims are dynamic;
2. the arena (`accy.arena`, the planned size and alignment) and every buffer's home:
   - CUDA: each slot planned in the arena is an `accy.view` at its planned offset (a slot
     that reuses another's buffer in place is a view at the same offset); a
     `device_constant` constant is an `accy.global` in constant memory; each arena
     workspace is a view of its bytes, each other workspace an `accy.alloc`;
   - CPU: a parameter is its argument, a kernel-written result its out-parameter (and so
     is a temporary that result takes over in place), a constant an `accy.global` in host
     memory, another temporary a view of the arena; a
     parameter or constant that a kernel writes (a scan's scratch) is first copied into an
     `accy.alloc` of its own, so the caller's array and the constant stay untouched;
   - a dynamic slot planned without rows is an `accy.alloc` sized by the row count;
3. the transfers (`accy.copy`): CUDA copies every parameter whose transfer is
   host_to_device or bidirectional into its device buffer and uploads each `device_global`
   constant from a host `accy.global`; CPU copies an aliased or bidirectional slot into its
   out-parameter;
4. one `accy.kernel` per work item in schedule order: its fused members cloned into its
   body, block argument `i` read from `ins[i]`, the group's outputs yielded into `outs`,
   its family and workspaces (CUDA); splat constants that the target reads as scalars are
   cloned into the bodies that read them instead of being passed as buffers. An
   `accy.iterate` is an `accy.loop`: inits copied into the carried buffers before it, its
   body's kernels, then the yielded values copied into the carried buffers (a yielded value
   that is another position's carried buffer is staged through an `accy.alloc` first); an
   `accy.while` is an `accy.while_loop` alike, its `cond` region the cond's kernels, which
   leave the condition in the host buffer the loop reads (CUDA: copied back into an
   `accy.alloc` of its own each time; CPU: the condition's own buffer);
5. the copies of the results into the out-parameters (CUDA: every result, device to host;
   CPU: a result whose home is not its out-parameter), and `func.return`.

The plan is target-specific: the CPU plan's arena holds its temporaries and the one CPU
workspace (a split reduction's partials, `workspace.cpu_families`), not the CUDA families'. The module records the plan's target and
multiprocessor count (`accy.target`, `accy.sm_count`): lowering reads everything from here.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from accy.dialects import accy as ops
from accy.dialects import plan
from accy.dialects.plan import MemorySpace, buffer_type
from accy.passes.analysis import AnalysisManager
from accy.passes.arena_plan import ARENA, FunctionArena
from accy.passes.buffers import BUFFERS, BufferSlot, splat_scalar
from accy.passes.dead_code import program_position
from accy.passes.element_types import shape_of
from accy.passes.memory import MEMORY
from accy.passes.plan_passes import (
    ANNOTATIONS,
    PlanArenaPass,
    PlanMemorySpacesPass,
    SizeWorkspacesPass,
    analysis_manager,
)
from accy.passes.schedule import SCHEDULE, WorkItem, WorkKind
from accy.passes.workspace.sizing import WORKSPACES
from xdsl.builder import Builder
from xdsl.context import Context
from xdsl.dialects import arith, func, memref
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    ArrayAttr,
    DictionaryAttr,
    FunctionType,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    ModuleOp,
    StringAttr,
    TensorType,
    i8,
    i64,
)
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint

from accy.diagnostics import AccyError

TARGET = "accy.target"
SM_COUNT = "accy.sm_count"
TARGETS = ("cpu", "cuda")
KEPT_ARG_ATTRS = ("accy.donated",)
"""The accy parameter attributes the planned form keeps (the others are annotations of
the planning passes, which the planned form states as IR)."""


class CpuLoweringError(AccyError):
    """A program the CPU target cannot express (e.g. unbindable dynamic dims)."""


def row_binding(function: func.FuncOp) -> tuple[int, int] | None:
    """`(argument, dim)` whose size binds every `?` of `function`, or None when it has no
    `?` dims. Raises `CpuLoweringError` when the `?` dims cannot be bound: every `?` is
    the row count of the first argument that has one."""
    binding = None
    for index, arg in enumerate(function.body.block.args):
        shape = shape_of(arg)
        if DYNAMIC_INDEX in shape:
            binding = (index, shape.index(DYNAMIC_INDEX))
            break
    for op in function.body.walk():
        _check_dynamic_op(op)
        if binding is None:
            for value in op.results:
                if isinstance(value.type, TensorType) and DYNAMIC_INDEX in shape_of(value):
                    raise CpuLoweringError(
                        f"function @{function.sym_name.data} has dynamic dims but no "
                        "argument with a dynamic dim to bind them to (the CPU target binds "
                        "every '?' to the row count of the first argument that has one)",
                        op.location,
                    )
    if binding is None:
        for t in function.function_type.outputs:
            if isinstance(t, TensorType) and DYNAMIC_INDEX in t.get_shape():
                raise CpuLoweringError(
                    f"function @{function.sym_name.data} returns dynamic dims but no "
                    "argument has a dynamic dim to bind them to",
                    function.location,
                )
    return binding


def _check_dynamic_op(op: Operation) -> None:
    if isinstance(op, ops.ReshapeOp):
        source, target = shape_of(op.operand), shape_of(op.result)
        if source != target and (DYNAMIC_INDEX in source or DYNAMIC_INDEX in target):
            static = [int(np.prod([d for d in s if d != DYNAMIC_INDEX])) for s in (source, target)]
            counts = [s.count(DYNAMIC_INDEX) for s in (source, target)]
            if counts != [1, 1] or static[0] != static[1]:
                raise CpuLoweringError(
                    "'accy.reshape' op changes a dynamic dim's size; the CPU target binds "
                    "every '?' to one row count, so a reshape must keep exactly one '?' and "
                    "the same static element count",
                    op.location,
                )
    elif isinstance(op, ops.ConcatenateOp):
        if any(shape_of(v)[op.dim] == DYNAMIC_INDEX for v in op.inputs):
            raise CpuLoweringError(
                "'accy.concatenate' op along a dynamic dim is not supported by the CPU "
                "target (its size would differ from the bound row count)",
                op.location,
            )
    elif isinstance(op, ops.PadOp) and any(
        size == DYNAMIC_INDEX and edge != (0, 0, 0)
        for size, edge in zip(shape_of(op.operand), op.edges)
    ):
        raise CpuLoweringError(
            "'accy.pad' op pads a dynamic dim, which the CPU target does not support (its "
            "size would differ from the bound row count)",
            op.location,
        )
    elif isinstance(op, ops.SliceOp) and DYNAMIC_INDEX in shape_of(op.result):
        raise CpuLoweringError(
            "'accy.slice' op with a dynamic result dim is not supported by the CPU "
            "target (its size would differ from the bound row count)",
            op.location,
        )


def check_target(target: str) -> None:
    """`AccyError` naming the known targets unless `target` is one."""
    if target not in TARGETS:
        raise AccyError(f"unknown target '{target}'; known targets: {', '.join(TARGETS)}")


def plan_target(manager: AnalysisManager, target: str) -> None:
    """Plan for `target` from now on (results planned for another are dropped)."""
    check_target(target)
    manager.configure(dataclasses.replace(manager.options, target=target))


def planned_module(module: ModuleOp, manager: AnalysisManager, target: str) -> ModuleOp:
    """A new module: `module` planned by `manager` for `target`, in the planned form."""
    plan_target(manager, target)
    planned = ModuleOp(
        [],
        attributes={
            TARGET: StringAttr(target),
            SM_COUNT: IntegerAttr(manager.options.sm_count, i64),
        },
    )
    for op in module.ops:
        if isinstance(op, func.FuncOp) and op.body.blocks:
            planned.body.block.add_op(FunctionPlanner(op, module, manager, target).build())
    return planned


def is_planned(module: ModuleOp) -> bool:
    """Whether `module` is in the planned form (`accy-plan` made it)."""
    return TARGET in module.attributes


def planned_target(module: ModuleOp) -> str:
    """The target a planned module was planned for (`accy.target`); `AccyError` when the
    attribute does not name one."""
    target = module.attributes.get(TARGET)
    if not isinstance(target, StringAttr) or target.data not in TARGETS:
        raise AccyError(
            f"the module's {TARGET} is {target}; a planned module names its target: "
            + " or ".join(f'"{t}"' for t in TARGETS)
        )
    return target.data


def signature_of(planned: func.FuncOp) -> func.FuncOp:
    """The tensor signature of a planned function: a `func.func` of the same name whose
    parameters are the planned parameters (names kept) and whose results are the
    out-parameters' tensors in `accy.output` order. Its body holds no ops (it is what
    callers check arguments against, not a program)."""
    attrs = planned.arg_attrs.data if planned.arg_attrs is not None else ()
    params: list[SSAValue] = []
    outputs: dict[int, TensorType] = {}
    for index, arg in enumerate(planned.body.block.args):
        t = arg.type
        assert isinstance(t, MemRefType)
        tensor = TensorType(t.get_element_type(), t.get_shape())
        entry = attrs[index].data.get(plan.OUTPUT) if index < len(attrs) else None
        if isinstance(entry, IntegerAttr):
            outputs[entry.value.data] = tensor
        else:
            params.append(arg)
    block = Block(
        arg_types=[TensorType(a.type.get_element_type(), a.type.get_shape()) for a in params]
    )  # type: ignore[attr-defined]
    for old, new in zip(params, block.args):
        new.name_hint = old.name_hint
    results = [outputs[i] for i in sorted(outputs)]
    return func.FuncOp(
        planned.sym_name.data,
        FunctionType.from_lists(list(block.arg_types), results),
        Region(block),
    )


def max_rows_of(planned: func.FuncOp) -> int | None:
    """The most rows a planned function's dynamic views were planned for (None when it
    has none: its dynamic buffers are allocations sized at the call's rows)."""
    rows = [op.rows for op in planned.body.walk() if isinstance(op, plan.ViewOp) and op.max_rows]
    return min(rows) if rows else None


@dataclass(frozen=True)
class PlanPass(ModulePass):
    """Run the whole preparation and replace the module by its planned form.

    Options (`accy.prepare`'s, each as the pass of that analysis takes it; what is not
    given is the pipeline's, never an earlier pass's):
    - target: `cpu` or `cuda` (default `cuda`): what the plan is for; only that
      target's `accy-lower` takes it.
    - alignment: byte alignment of every arena buffer (default the target's: 256 on CUDA,
      64 on the CPU, as `accy.compile` plans it).
    - rows, sm-count, families: as `accy-size-workspaces`'s; constant-capacity as
      `accy-plan-memory-spaces`'s; pack-budget-ms, pack-workers, check as
      `accy-plan-arena`'s.
    """

    name = "accy-plan"

    target: str = "cuda"
    alignment: int | None = None
    rows: tuple[int, ...] | None = None
    sm_count: int | None = None
    families: str | None = None
    constant_capacity: int | None = None
    pack_budget_ms: int | float | None = None  # the pipeline syntax reads `20` as an int
    pack_workers: int | None = None
    check: bool = False

    preserves_all_analyses: ClassVar[bool] = False

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if is_planned(op):
            raise AccyError("the module is already planned (accy-plan ran on it)")
        check_target(self.target)
        # each option as the pass of its analysis reads it
        workspaces = SizeWorkspacesPass(
            rows=self.rows, sm_count=self.sm_count, families=self.families
        )
        memory = PlanMemorySpacesPass(constant_capacity=self.constant_capacity)
        arena = PlanArenaPass(
            alignment=self.alignment,
            pack_budget_ms=self.pack_budget_ms,
            pack_workers=self.pack_workers,
            rows=self.rows,
            check=self.check,
        )
        manager = analysis_manager(ctx, op)
        given = {**workspaces.plan_options(), **memory.plan_options(), **arena.plan_options()}
        manager.configure_pass(target=self.target, **given)
        planned = planned_module(op, manager, self.target)
        replace_module_body(op, planned)


def replace_module_body(module: ModuleOp, new: ModuleOp) -> None:
    """Move `new`'s ops and attributes into `module` (whose old ops are dropped)."""
    for old in list(module.body.block.ops):
        old.detach()
        old.erase(safe_erase=False)
    for op in list(new.body.block.ops):
        op.detach()
        module.body.block.add_op(op)
    module.attributes.clear()
    module.attributes.update(new.attributes)


class FunctionPlanner:
    """Builds the planned form of one accy function (see the module docstring)."""

    def __init__(
        self, source: func.FuncOp, module: ModuleOp, manager: AnalysisManager, target: str
    ):
        self.source = source
        self.name = source.sym_name.data
        self.target = target
        self.cuda = target == "cuda"
        self.schedule = manager.get(SCHEDULE, module)
        self.buffers = manager.get(BUFFERS, module)
        self.memory = manager.get(MEMORY, module)
        self.workspaces = manager.get(WORKSPACES, module)
        arena_plan = manager.get(ARENA, module)
        self.arena_plan = arena_plan.functions.get(self.name) or FunctionArena(self.name)
        self.alignment = manager.options.arena_alignment
        self.planned_rows = arena_plan.planned_rows
        self.items = [w for w in self.schedule.work_items if w.function == self.name]
        self.homes: dict[int, SSAValue] = {}
        self.workspace: dict[tuple[str, str], SSAValue] = {}
        self.host_constants: dict[int, SSAValue] = {}
        self.rows: SSAValue | None = None

    # -- helpers ---------------------------------------------------------------------

    def space(self, slot: BufferSlot) -> MemorySpace:
        if not self.cuda:
            return MemorySpace.HOST
        assignment = self.memory.assignment_for_slot(slot.id)
        assert assignment is not None
        return MemorySpace(assignment.space.value)

    def slot(self, value: SSAValue) -> BufferSlot:
        slot = self.buffers.get_slot(value)
        if slot is None:
            raise AccyError(f"internal: value read from storage has no slot ({value})")
        return slot

    def home(self, value: SSAValue) -> SSAValue:
        return self.homes[self.slot(value).id]

    def dynamic_sizes(self, t: TensorType) -> list[SSAValue]:
        return [self.rows for d in t.get_shape() if d == DYNAMIC_INDEX]  # type: ignore[misc]

    def alloc(self, b: Builder, t: TensorType, space: MemorySpace) -> SSAValue:
        return b.insert(plan.AllocOp(buffer_type(t, space), self.dynamic_sizes(t))).buffer

    def read_as_scalar(self, value: SSAValue) -> bool:
        """Whether kernels read `value` as a scalar rather than from a buffer: a folded splat,
        and on CUDA (whose kernels read every splat as a scalar) any splat constant."""
        owner = value.owner
        if not isinstance(owner, ops.ConstantOp):
            return False
        if value in self.buffers.folded:
            return True
        return self.cuda and splat_scalar(owner) is not None  # CPU kernels load the others

    # -- the function ----------------------------------------------------------------

    def build(self) -> func.FuncOp:
        returned = self._returned()
        params = [buffer_type(a.type, MemorySpace.HOST) for a in self.source.body.block.args]
        results = [buffer_type(v.type, MemorySpace.HOST) for v in returned]  # type: ignore[arg-type]
        entry = Block(arg_types=[*params, *results])
        self.inputs = list(entry.args[: len(params)])
        self.outputs = list(entry.args[len(params) :])
        b = Builder(InsertPoint.at_end(entry))
        if self.cuda:
            _check_static(self.source)
        else:
            binding = row_binding(self.source)
            if binding is not None:
                arg, dim = binding
                index = b.insert(arith.ConstantOp(IntegerAttr(dim, IndexType()))).result
                self.rows = b.insert(memref.DimOp(self.inputs[arg], index)).result
                self.rows.name_hint = "rows"
        self._homes(b, returned)
        for item in self.items:
            if item.parent is None:
                self._emit(b, item)
        self._results(b, returned)
        b.insert(func.ReturnOp())
        for op in list(entry.ops):  # a splat constant every kernel reads as a scalar
            if isinstance(op, plan.GlobalOp) and not op.buffer.uses:
                op.detach()
                op.erase()
        function = func.FuncOp(
            self.name, FunctionType.from_lists([*params, *results], []), Region(entry)
        )
        function.attributes[plan.PLANNED] = StringAttr(self.target)
        arg_attrs: list[DictionaryAttr] = []
        old = self.source.arg_attrs.data if self.source.arg_attrs is not None else ()
        for index in range(len(params)):
            entries = old[index].data if index < len(old) else {}
            kept = {
                k: v for k, v in entries.items() if k in KEPT_ARG_ATTRS or not k.startswith("accy.")
            }
            arg_attrs.append(DictionaryAttr(kept))  # the planning passes' annotations go
        for index in range(len(results)):
            arg_attrs.append(DictionaryAttr({plan.OUTPUT: IntegerAttr(index, i64)}))
        function.arg_attrs = ArrayAttr(arg_attrs)
        for arg, value in zip(self.inputs, self.source.body.block.args):
            arg.name_hint = value.name_hint
        for index, arg in enumerate(self.outputs):
            arg.name_hint = f"out{index}"
        return function

    def _returned(self) -> list[SSAValue]:
        terminator = self.source.body.block.last_op
        assert isinstance(terminator, func.ReturnOp)
        return list(terminator.arguments)

    def _needs_arena(self, slots: list[BufferSlot]) -> bool:
        arena = self.arena_plan
        if arena.size == 0:
            return False
        if self.cuda:
            return bool(arena.offsets) or bool(arena.workspaces)
        return bool(arena.workspaces) or any(
            s.is_temporary and s.id in arena.offsets for s in slots
        )

    def _homes(self, b: Builder, returned: list[SSAValue]) -> None:
        slots = [s for s in self.buffers.slots if s.function is self.source]
        arena = self.arena_plan
        self.arena: SSAValue | None = None
        if self._needs_arena(slots):
            space = MemorySpace.DEVICE_GLOBAL if self.cuda else MemorySpace.HOST
            self.arena = b.insert(plan.ArenaOp(arena.size, self.alignment, space)).buffer
            self.arena.name_hint = "arena"
        if self.cuda:
            self._device_homes(b, slots)
        else:
            self._host_homes(b, slots, returned)
        if self.arena is not None:
            space = MemorySpace.DEVICE_GLOBAL if self.cuda else MemorySpace.HOST
            for workspace in arena.workspaces:
                t = buffer_type(TensorType(i8, [workspace.term.bytes]), space)
                view = b.insert(plan.ViewOp(self.arena, workspace.offset, t)).buffer
                view.name_hint = workspace.term.name
                self.workspace[(workspace.term.family, workspace.term.name)] = view
        workspace_space = MemorySpace.DEVICE_GLOBAL if self.cuda else MemorySpace.HOST
        ids = {item.id for item in self.items}
        for term in self.workspaces.terms:
            if not term.arena and ids.intersection(term.nodes):
                buffer = self.alloc(b, TensorType(i8, [term.bytes]), workspace_space)
                buffer.name_hint = term.name
                self.workspace[(term.family, term.name)] = buffer
        if self.cuda:
            self._transfers_in(b, slots)

    def _view_or_alloc(self, b: Builder, slot: BufferSlot) -> SSAValue:
        t = slot.value.type
        assert isinstance(t, TensorType)
        offset = self.arena_plan.offsets.get(slot.id)
        if offset is not None and self.arena is not None:
            max_rows = self.planned_rows if not t.has_static_shape() else None
            view_op = plan.ViewOp(self.arena, offset, buffer_type(t, self.space(slot)), max_rows)
            view = b.insert(view_op)
            result = view.buffer
        else:
            result = self.alloc(b, t, self.space(slot))
        result.name_hint = f"slot{slot.id}"
        return result

    def _device_homes(self, b: Builder, slots: list[BufferSlot]) -> None:
        for slot in slots:
            if self.space(slot) is MemorySpace.DEVICE_CONSTANT:
                assert isinstance(slot.producer, ops.ConstantOp)
                constant = plan.GlobalOp(slot.producer.value, MemorySpace.DEVICE_CONSTANT)
                self.homes[slot.id] = b.insert(constant).buffer
                self.homes[slot.id].name_hint = f"constant{slot.id}"
            else:
                self.homes[slot.id] = self._view_or_alloc(b, slot)

    def _transfers_in(self, b: Builder, slots: list[BufferSlot]) -> None:
        for arg, param in zip(self.source.body.block.args, self.inputs):
            slot = self.slot(arg)
            assignment = self.memory.assignment_for_slot(slot.id)
            if assignment is not None and assignment.transfer.needs_host_input():
                b.insert(plan.CopyOp(param, self.homes[slot.id]))
        for slot in slots:
            if slot.role.constant and self.space(slot) is MemorySpace.DEVICE_GLOBAL:
                b.insert(plan.CopyOp(self._host_constant(b, slot), self.homes[slot.id]))

    def _host_constant(self, b: Builder, slot: BufferSlot) -> SSAValue:
        """The host copy of a constant, uploaded from."""
        if slot.id not in self.host_constants:
            assert isinstance(slot.producer, ops.ConstantOp)
            op = plan.GlobalOp(slot.producer.value, MemorySpace.HOST)
            self.host_constants[slot.id] = b.insert(op).buffer
            self.host_constants[slot.id].name_hint = f"host_constant{slot.id}"
        return self.host_constants[slot.id]

    def _host_homes(self, b: Builder, slots: list[BufferSlot], returned: list[SSAValue]) -> None:
        written = {s for item in self.items for s in _written_slots(item, self.buffers)}
        out_param: dict[int, SSAValue] = {}
        for index, value in enumerate(returned):
            out_param.setdefault(self.slot(value).id, self.outputs[index])
        for slot in slots:
            self.homes[slot.id] = self._host_home(b, slot, slot.id in written, out_param)

    def _host_home(
        self, b: Builder, slot: BufferSlot, written: bool, out_param: dict[int, SSAValue]
    ) -> SSAValue:
        if slot.role.constant or slot.role.input:
            if slot.role.constant:
                assert isinstance(slot.producer, ops.ConstantOp)
                source = b.insert(plan.GlobalOp(slot.producer.value, MemorySpace.HOST)).buffer
                source.name_hint = f"constant{slot.id}"
            else:
                source = self.inputs[self.source.body.block.args.index(slot.value)]
            if slot.id in out_param:  # aliased or bidirectional: copy into the out-param
                b.insert(plan.CopyOp(source, out_param[slot.id]))
                return out_param[slot.id]
            if written:  # a kernel writes it: keep the caller's array untouched
                t = slot.value.type
                assert isinstance(t, TensorType)
                private = self.alloc(b, t, MemorySpace.HOST)
                private.name_hint = f"private{slot.id}"
                b.insert(plan.CopyOp(source, private))
                return private
            return source
        if slot.id in out_param:
            return out_param[slot.id]
        if slot.id in self.arena_plan.in_outputs:  # a result takes it over in place
            return out_param[self.arena_plan.in_outputs[slot.id]]
        return self._view_or_alloc(b, slot)

    def _results(self, b: Builder, returned: list[SSAValue]) -> None:
        for index, value in enumerate(returned):
            home = self.home(value)
            if home is not self.outputs[index]:
                b.insert(plan.CopyOp(home, self.outputs[index]))

    # -- work items ------------------------------------------------------------------

    def _emit(self, b: Builder, item: WorkItem) -> None:
        if item.kind is WorkKind.ITERATE:
            self._loop(b, item)
        else:
            b.insert(self._kernel(item))

    def _kernel(self, item: WorkItem) -> plan.KernelOp:
        mapping: dict[SSAValue, SSAValue] = {}
        body = Block()
        ins: list[SSAValue] = []
        dynamic = False
        for value in item.inputs:
            if self.read_as_scalar(value):
                owner = value.owner
                assert isinstance(owner, ops.ConstantOp)
                clone = owner.clone()
                body.add_op(clone)
                mapping[value] = clone.results[0]
            else:
                ins.append(self.home(value))
                mapping[value] = body.insert_arg(value.type, len(body.args))
                mapping[value].name_hint = value.name_hint
        for member in sorted(item.members, key=program_position):
            clone = member.clone(value_mapper=mapping)
            body.add_op(clone)
            for old, new in zip(member.results, clone.results):
                mapping[old] = new
                new.name_hint = old.name_hint
        for op in body.walk():
            for key in ANNOTATIONS:  # an analysis's text, stale in the planned form
                op.attributes.pop(key, None)
            for value in op.results:
                if isinstance(value.type, TensorType) and DYNAMIC_INDEX in value.type.get_shape():
                    dynamic = True
        dynamic = dynamic or any(DYNAMIC_INDEX in a.type.get_shape() for a in body.args)  # type: ignore[attr-defined]
        outputs = list(item.outputs)
        body.add_op(ops.YieldOp([mapping[v] for v in outputs]))
        family = self.workspaces.family_of.get(item.id)
        workspaces = [
            (term.name, self.workspace[(term.family, term.name)])
            for term in self.workspaces.terms_of(item.id)
        ]
        kernel = plan.KernelOp(
            item.id,
            item.kind.value,
            ins,
            [self.home(v) for v in outputs],
            Region(body),
            family=family,
            workspaces=workspaces,
            rows=self.rows if dynamic else None,
        )
        kernel.location = item.root.location
        return kernel

    def _loop(self, b: Builder, item: WorkItem) -> None:
        """An `accy.iterate` as an `accy.loop`, an `accy.while` as an `accy.while_loop`
        (see the module docstring)."""
        loop = item.root
        assert isinstance(loop, ops.LOOP_OPS)
        carried = [self.home(r) for r in loop.res]
        for init, home in zip(loop.inits, carried):
            self._copy_into(b, init, home)
        yielded = loop.body.block.last_op
        assert isinstance(yielded, ops.YieldOp)
        sources = [self.home(v) for v in yielded.values]
        staged: dict[int, SSAValue] = {}
        for position, (source, home) in enumerate(zip(sources, carried)):
            if source is not home and source in carried:
                t = yielded.values[position].type
                assert isinstance(t, TensorType)
                space = MemorySpace.DEVICE_GLOBAL if self.cuda else MemorySpace.HOST
                staged[position] = self.alloc(b, t, space)
                staged[position].name_hint = "staged"
        if isinstance(loop, ops.WhileOp):
            condition = loop.cond.block.last_op
            assert isinstance(condition, ops.YieldOp)
            predicate = condition.values[0]
            if self.cuda:  # read back into a host buffer of its own each time
                flag = self.alloc(b, TensorType(IntegerType(1), []), MemorySpace.HOST)
                flag.name_hint = "flag"
            else:
                flag = self.home(predicate)
            host_loop = b.insert(plan.WhileLoopOp(flag))
            test = Builder(InsertPoint.at_end(host_loop.cond.block))
            for child in self.items:
                if child.parent == item.id and child.root.parent is loop.cond.block:
                    self._emit(test, child)
            if self.cuda:
                self._copy_into(test, predicate, flag)
        else:
            host_loop = b.insert(plan.LoopOp(loop.trip_count.value.data))
        host_loop.location = loop.location
        inner = Builder(InsertPoint.at_end(host_loop.body.block))
        for child in self.items:
            if child.parent == item.id and child.root.parent is loop.body.block:
                self._emit(inner, child)
        for position, temp in staged.items():
            inner.insert(plan.CopyOp(sources[position], temp))
        for position, (value, home) in enumerate(zip(yielded.values, carried)):
            if position in staged:
                inner.insert(plan.CopyOp(staged[position], home))
            else:
                self._copy_into(inner, value, home)

    def _copy_into(self, b: Builder, value: SSAValue, home: SSAValue) -> None:
        """Copy `value`'s buffer into `home` (nothing when they are one buffer; from the
        host copy when `value` lives in constant memory)."""
        slot = self.slot(value)
        source = self.homes[slot.id]
        if source is home:
            return
        if self.cuda and self.space(slot) is MemorySpace.DEVICE_CONSTANT:
            source = self._host_constant(b, slot)
        b.insert(plan.CopyOp(source, home))


def _check_static(function: func.FuncOp) -> None:
    """Raise `AccyError` at the first dynamic tensor: the CUDA target plans static shapes."""
    for arg in function.body.block.args:
        if isinstance(arg.type, TensorType) and not arg.type.has_static_shape():
            raise AccyError(
                f"the CUDA target needs static shapes; {arg.type} is dynamic", function.location
            )
    for op in function.body.walk():
        for value in op.results:
            if isinstance(value.type, TensorType) and not value.type.has_static_shape():
                raise AccyError(
                    f"the CUDA target needs static shapes; {value.type} is dynamic", op.location
                )


def _written_slots(item: WorkItem, buffers) -> list[int]:
    from accy.passes.memory import written_slots

    return written_slots(item, buffers)


__all__ = [
    "CpuLoweringError",
    "PlanPass",
    "is_planned",
    "max_rows_of",
    "planned_module",
    "planned_target",
    "row_binding",
    "signature_of",
]
