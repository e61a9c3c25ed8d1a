"""Planners of one function's planned form (`planned_form` describes the form).

`FunctionPlanner` emits what every target shares (the row count, the arena, workspaces,
kernels, loops, result copies); its two subclasses place buffers as the target's memory
asks (`Target.device_memory`):

- `HostFunctionPlanner`: kernels read the caller's arrays and write its result arrays in
  place; constants are host globals; the arena holds temporaries only.
- `DeviceFunctionPlanner`: every buffer a kernel touches lives in device memory (the
  arena, constant memory or an allocation); parameters are copied in, constants uploaded,
  splat constants passed to kernels as scalars.

Invariants: planners read only the analyses and the target's facts, never its name;
`planner_for` is the one place a target's facts choose a planner.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import ClassVar

from accy.dialects import accy as ops
from accy.dialects import plan
from accy.dialects.plan import MemorySpace, buffer_type
from accy.passes.analysis import AnalysisManager
from accy.passes.arena_plan import ARENA, FunctionArena
from accy.passes.buffers import BUFFERS, BufferSlot, splat_scalar
from accy.passes.dead_code import program_positions
from accy.passes.dynamic_rows import row_binding
from accy.passes.memory import MEMORY, written_slots
from accy.passes.plan_passes import ANNOTATIONS
from accy.passes.schedule import SCHEDULE, WorkItem, WorkKind
from accy.passes.workspace.sizing import WORKSPACES
from xdsl.builder import Builder
from xdsl.dialects import arith, func, memref
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    ArrayAttr,
    DictionaryAttr,
    FunctionType,
    IndexType,
    IntegerAttr,
    IntegerType,
    ModuleOp,
    TensorType,
    UnitAttr,
    i8,
    i64,
)
from xdsl.ir import Block, Region, SSAValue
from xdsl.rewriter import InsertPoint

from accy.diagnostics import AccyError
from accy.targets import Target

KEPT_ARG_ATTRS = ("accy.donated",)
"""The accy parameter attributes the planned form keeps (the others are annotations of
the planning passes, which the planned form states as IR)."""


def planner_for(target: Target) -> type[FunctionPlanner]:
    """The planner of `target`'s functions."""
    return DeviceFunctionPlanner if target.device_memory else HostFunctionPlanner


class FunctionPlanner(ABC):
    """Builds the planned form of one accy function; the subclasses place its buffers."""

    buffer_space: ClassVar[MemorySpace]
    """Where the arena, workspaces and staging buffers live."""

    def __init__(
        self, source: func.FuncOp, module: ModuleOp, manager: AnalysisManager, target: Target
    ):
        self.source = source
        self.name = source.sym_name.data
        self.target = target
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
        self.rows: SSAValue | None = None
        self.positions = program_positions(source)
        """Each op of the source function by its place in program order."""

    # -- helpers ---------------------------------------------------------------------

    @abstractmethod
    def space(self, slot: BufferSlot) -> MemorySpace:
        """The memory space `slot`'s buffer lives in."""

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
        """Whether kernels read `value` as a scalar rather than from a buffer: a folded
        splat constant."""
        return isinstance(value.owner, ops.ConstantOp) and value in self.buffers.folded

    # -- the function ----------------------------------------------------------------

    def build(self) -> func.FuncOp:
        returned = self._returned()
        params = [buffer_type(a.type, MemorySpace.HOST) for a in self.source.body.block.args]
        results = [buffer_type(v.type, MemorySpace.HOST) for v in returned]  # type: ignore[arg-type]
        entry = Block(arg_types=[*params, *results])
        self.inputs = list(entry.args[: len(params)])
        self.outputs = list(entry.args[len(params) :])
        b = Builder(InsertPoint.at_end(entry))
        if not self.target.dynamic_rows:
            _check_static(self.source, self.target)
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
        function.attributes[plan.PLANNED] = UnitAttr()  # the target: the module's
        arg_attrs: list[DictionaryAttr] = []
        old = self.source.arg_attrs.data if self.source.arg_attrs is not None else ()
        for index in range(len(params)):
            entries = old[index].data if index < len(old) else {}
            kept = {
                k: v for k, v in entries.items() if k in KEPT_ARG_ATTRS or not k.startswith("accy.")
            }
            arg_attrs.append(DictionaryAttr(kept))  # the planning passes' annotations go
        donors = self._donors(returned)
        for index in range(len(results)):
            entries = {plan.OUTPUT: IntegerAttr(index, i64)}
            if index in donors:
                entries[plan.DONOR] = IntegerAttr(donors[index], i64)
            arg_attrs.append(DictionaryAttr(entries))
        function.arg_attrs = ArrayAttr(arg_attrs)
        for arg, value in zip(self.inputs, self.source.body.block.args):
            arg.name_hint = value.name_hint
        for index, arg in enumerate(self.outputs):
            arg.name_hint = f"out{index}"
        return function

    def _donors(self, returned: list[SSAValue]) -> dict[int, int]:
        """Out-parameter index → the donated parameter (its index) whose buffer the result
        takes over (`ArenaPlan`'s `donors`: the CPU's), each parameter once."""
        donors: dict[int, int] = {}
        seen: set[int] = set()  # a result returned twice: its first out-parameter
        for index, value in enumerate(returned):
            slot = self.slot(value).id
            donor = self.arena_plan.donors.get(slot)
            if donor is not None and slot not in seen:
                parameter = self.buffers.slots[donor].value
                donors[index] = self.source.body.block.args.index(parameter)  # type: ignore[arg-type]
            seen.add(slot)
        return donors

    def _returned(self) -> list[SSAValue]:
        terminator = self.source.body.block.last_op
        assert isinstance(terminator, func.ReturnOp)
        return list(terminator.arguments)

    @abstractmethod
    def _needs_arena(self, slots: list[BufferSlot]) -> bool:
        """Whether any buffer of the function is a view of the arena (its size is not 0)."""

    @abstractmethod
    def _place(self, b: Builder, slots: list[BufferSlot], returned: list[SSAValue]) -> None:
        """Give every slot its home (`self.homes`)."""

    def _transfers_in(self, b: Builder, slots: list[BufferSlot]) -> None:
        """Copies into the homes before the first kernel (none by default)."""

    def _homes(self, b: Builder, returned: list[SSAValue]) -> None:
        slots = [s for s in self.buffers.slots if s.function is self.source]
        arena = self.arena_plan
        space = self.buffer_space
        self.arena: SSAValue | None = None
        if arena.size and self._needs_arena(slots):
            self.arena = b.insert(plan.ArenaOp(arena.size, self.alignment, space)).buffer
            self.arena.name_hint = "arena"
        self._place(b, slots, returned)
        if self.arena is not None:
            for workspace in arena.workspaces:
                t = buffer_type(TensorType(i8, [workspace.term.bytes]), space)
                view = b.insert(plan.ViewOp(self.arena, workspace.offset, t)).buffer
                view.name_hint = workspace.term.name
                self.workspace[(workspace.term.family, workspace.term.name)] = view
        ids = {item.id for item in self.items}
        for term in self.workspaces.terms:
            if not term.arena and ids.intersection(term.nodes):
                buffer = self.alloc(b, TensorType(i8, [term.bytes]), space)
                buffer.name_hint = term.name
                self.workspace[(term.family, term.name)] = buffer
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
        for member in sorted(item.members, key=self.positions.__getitem__):
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
                staged[position] = self.alloc(b, t, self.buffer_space)
                staged[position].name_hint = "staged"
        if isinstance(loop, ops.WhileOp):
            condition = loop.cond.block.last_op
            assert isinstance(condition, ops.YieldOp)
            predicate = condition.values[0]
            flag = self._loop_flag(b, predicate)
            host_loop = b.insert(plan.WhileLoopOp(flag))
            test = Builder(InsertPoint.at_end(host_loop.cond.block))
            for child in self.items:
                if child.parent == item.id and child.root.parent is loop.cond.block:
                    self._emit(test, child)
            self._copy_into(test, predicate, flag)  # nothing when the flag is its home
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
        if self.homes[slot.id] is not home:
            b.insert(plan.CopyOp(self._copy_source(b, slot), home))

    def _loop_flag(self, b: Builder, predicate: SSAValue) -> SSAValue:
        """The host buffer a while loop reads its condition from: `predicate`'s home."""
        return self.home(predicate)

    def _copy_source(self, b: Builder, slot: BufferSlot) -> SSAValue:
        """The buffer a copy of `slot` reads: its home."""
        return self.homes[slot.id]


class HostFunctionPlanner(FunctionPlanner):
    """Buffers in host memory: parameters are the caller's arrays, a kernel-written result
    (or a temporary it takes over in place) its out-parameter, constants host globals, the
    other temporaries views of the arena or of an arena in a result's out-parameter (those
    that die before anything touches it); a parameter or constant a kernel writes is first
    copied into an allocation of its own."""

    buffer_space = MemorySpace.HOST

    def space(self, slot: BufferSlot) -> MemorySpace:
        return MemorySpace.HOST

    def _needs_arena(self, slots: list[BufferSlot]) -> bool:
        arena = self.arena_plan
        return bool(arena.workspaces) or any(
            s.is_temporary and s.id in arena.offsets for s in slots
        )

    def _place(self, b: Builder, slots: list[BufferSlot], returned: list[SSAValue]) -> None:
        self.output_arenas: dict[int, SSAValue] = {}
        self.scratch_in: dict[int, int] = {  # slot → the result whose out-parameter holds it
            slot: result
            for result, output in self.arena_plan.output_arenas.items()
            for slot in output.offsets
        }
        written = {s for item in self.items for s in written_slots(item, self.buffers)}
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
        if slot.id in self.scratch_in:  # scratch in a result's out-parameter
            result = self.scratch_in[slot.id]
            arena = self._output_arena(b, result, out_param[result])
            offset = self.arena_plan.output_arenas[result].offsets[slot.id]
            t = buffer_type(slot.value.type, MemorySpace.HOST)  # type: ignore[arg-type]
            view = b.insert(plan.ViewOp(arena, offset, t)).buffer
            view.name_hint = f"slot{slot.id}"
            return view
        return self._view_or_alloc(b, slot)

    def _output_arena(self, b: Builder, result: int, out_param: SSAValue) -> SSAValue:
        """The arena in the out-parameter of result slot `result` (made once)."""
        if result not in self.output_arenas:
            size = self.arena_plan.output_arenas[result].size
            arena = plan.ArenaOp(size, self.alignment, MemorySpace.HOST, backing=out_param)
            self.output_arenas[result] = b.insert(arena).buffer
            self.output_arenas[result].name_hint = f"scratch{result}"
        return self.output_arenas[result]


class DeviceFunctionPlanner(FunctionPlanner):
    """Buffers in device memory, in the spaces the memory plan assigns: arena views,
    constant-memory globals and allocations; parameters copied in, constants uploaded,
    a while loop's condition read back into a host flag of its own each time."""

    buffer_space = MemorySpace.DEVICE_GLOBAL

    def __init__(
        self, source: func.FuncOp, module: ModuleOp, manager: AnalysisManager, target: Target
    ):
        super().__init__(source, module, manager, target)
        self.host_constants: dict[int, SSAValue] = {}

    def space(self, slot: BufferSlot) -> MemorySpace:
        assignment = self.memory.assignment_for_slot(slot.id)
        assert assignment is not None
        return MemorySpace(assignment.space.value)

    def read_as_scalar(self, value: SSAValue) -> bool:
        """Device kernels also read every other splat constant as a scalar."""
        owner = value.owner
        return super().read_as_scalar(value) or (
            isinstance(owner, ops.ConstantOp) and splat_scalar(owner) is not None
        )

    def _needs_arena(self, slots: list[BufferSlot]) -> bool:
        return bool(self.arena_plan.offsets) or bool(self.arena_plan.workspaces)

    def _place(self, b: Builder, slots: list[BufferSlot], returned: list[SSAValue]) -> None:
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
        if slot.id not in self.host_constants:  # one per constant and function
            assert isinstance(slot.producer, ops.ConstantOp)
            op = plan.GlobalOp(slot.producer.value, MemorySpace.HOST)
            self.host_constants[slot.id] = b.insert(op).buffer
            self.host_constants[slot.id].name_hint = f"host_constant{slot.id}"
        return self.host_constants[slot.id]

    def _loop_flag(self, b: Builder, predicate: SSAValue) -> SSAValue:
        flag = self.alloc(b, TensorType(IntegerType(1), []), MemorySpace.HOST)
        flag.name_hint = "flag"
        return flag

    def _copy_source(self, b: Builder, slot: BufferSlot) -> SSAValue:
        """A constant in constant memory is copied from its host copy."""
        if self.space(slot) is MemorySpace.DEVICE_CONSTANT:
            return self._host_constant(b, slot)
        return self.homes[slot.id]


def _check_static(function: func.FuncOp, target: Target) -> None:
    """Raise `AccyError` at the first dynamic tensor of a target that plans static shapes."""
    need = f"the {target.name.upper()} target needs static shapes"
    for arg in function.body.block.args:
        if isinstance(arg.type, TensorType) and not arg.type.has_static_shape():
            raise AccyError(f"{need}; {arg.type} is dynamic", function.location)
    for op in function.body.walk():
        for value in op.results:
            if isinstance(value.type, TensorType) and not value.type.has_static_shape():
                raise AccyError(f"{need}; {value.type} is dynamic", op.location)
