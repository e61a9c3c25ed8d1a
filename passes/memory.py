"""Memory-space plan: for every slot, its memory space, access mode, host/device transfer
and, for outputs, what writes it. Ported from the seed planner
(shared/seeds/accy-preparation-memory.zig) with its rules and numbers.

Rules:
- space: `device_constant` for a constant that is not an output, else `device_global`.
  (`host`, `device_shared` and `unified` are spaces the counters track; the planner does
  not assign them yet.) A constant larger than what remains of the constant-memory
  capacity goes to `device_global` (read-only), with a remark saying why.
- access: input and output → read_write; output → write_only; input or constant →
  read_only; otherwise read_write.
- transfer: input and output → bidirectional; input → host_to_device; output →
  device_to_host; otherwise none.
- output source: `KernelWritten(work item)` when a work item writes the slot (its outputs;
  for `iterate` any of its results; for `scan` its scratch operand #1); otherwise
  `Aliased(slot)` when the slot is an input or a constant; otherwise planning fails with
  `MissingOutputWriter` and one error at the producer's location (or the return's).

Invariants: one assignment per slot, in slot order; `total_static_bytes` equals the
buffer plan's; the counters count the assignments.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from accy.dialects.plan_verifier import MISSING_OUTPUT_FORMAT
from accy.passes.analysis import (
    AnalysisDescriptor,
    AnalysisManager,
    Census,
    WorkBounds,
    WorkMeter,
    checked_add,
    checked_mul,
)
from accy.passes.buffers import (
    BUFFERS,
    BufferPlan,
    BufferRole,
    BufferSlot,
    value_names,
)
from accy.passes.options import DEFAULT_CONSTANT_CAPACITY, PlanOptions
from accy.passes.schedule import SCHEDULE, SchedulePlan, WorkItem
from xdsl.dialects import func
from xdsl.dialects.builtin import LocationAttr
from xdsl.ir import Operation, SSAValue

from accy.diagnostics import AccyError


class MemorySpace(str, Enum):
    HOST = "host"
    DEVICE_GLOBAL = "device_global"
    DEVICE_CONSTANT = "device_constant"
    DEVICE_SHARED = "device_shared"
    UNIFIED = "unified"


class MemoryAccess(str, Enum):
    READ_ONLY = "read_only"
    WRITE_ONLY = "write_only"
    READ_WRITE = "read_write"


class BoundaryTransfer(str, Enum):
    NONE = "none"
    HOST_TO_DEVICE = "host_to_device"
    DEVICE_TO_HOST = "device_to_host"
    BIDIRECTIONAL = "bidirectional"

    def needs_host_input(self) -> bool:
        return self in (BoundaryTransfer.HOST_TO_DEVICE, BoundaryTransfer.BIDIRECTIONAL)

    def needs_host_output(self) -> bool:
        return self in (BoundaryTransfer.DEVICE_TO_HOST, BoundaryTransfer.BIDIRECTIONAL)


@dataclass(frozen=True)
class KernelWritten:
    """The output is written by the work item with this id."""

    work_item: int

    def __str__(self) -> str:
        return f"kernel {self.work_item}"


@dataclass(frozen=True)
class Aliased:
    """The output is the input or constant buffer with this slot id."""

    slot: int

    def __str__(self) -> str:
        return f"alias {self.slot}"


OutputSource = KernelWritten | Aliased


class MissingOutputWriter(AccyError):
    """A function result has no kernel writer and no input/constant backing."""


@dataclass(frozen=True)
class MemorySpaceAssignment:
    slot_id: int
    value: SSAValue
    producer: Operation | None
    role: BufferRole
    space: MemorySpace
    access: MemoryAccess
    transfer: BoundaryTransfer
    byte_size: int | None
    output_source: OutputSource | None = None

    @property
    def is_dynamic(self) -> bool:
        return self.byte_size is None

    def describe(self) -> str:
        """`slot 2 device_global write_only device_to_host 16 bytes kernel 0`."""
        size = "?" if self.byte_size is None else str(self.byte_size)
        text = (
            f"slot {self.slot_id} {self.space.value} {self.access.value} "
            f"{self.transfer.value} {size} bytes"
        )
        return text if self.output_source is None else f"{text} {self.output_source}"


@dataclass
class MemorySpacePlan:
    assignments: list[MemorySpaceAssignment] = field(default_factory=list)
    remarks: list[tuple[int, str]] = field(default_factory=list)
    host_slot_count: int = 0
    device_global_slot_count: int = 0
    device_constant_slot_count: int = 0
    device_shared_slot_count: int = 0
    unified_slot_count: int = 0
    host_input_transfer_count: int = 0
    host_output_transfer_count: int = 0
    dynamic_slot_count: int = 0
    elided_value_count: int = 0
    total_static_bytes: int = 0
    _by_slot: dict[int, int] = field(default_factory=dict, repr=False)
    buffers: BufferPlan = field(default_factory=BufferPlan, repr=False)

    def assignment_count(self) -> int:
        return len(self.assignments)

    def assignment_for_slot(self, slot_id: int) -> MemorySpaceAssignment | None:
        index = self._by_slot.get(slot_id)
        return None if index is None else self.assignments[index]

    def assignment_for_value(self, value: SSAValue) -> MemorySpaceAssignment | None:
        slot = self.buffers.get_slot(value)
        return None if slot is None else self.assignment_for_slot(slot.id)

    def add(self, assignment: MemorySpaceAssignment) -> None:
        if assignment.slot_id in self._by_slot:
            return
        self._by_slot[assignment.slot_id] = len(self.assignments)
        self.assignments.append(assignment)
        counter = f"{assignment.space.value}_slot_count"
        setattr(self, counter, getattr(self, counter) + 1)
        if assignment.transfer.needs_host_input():
            self.host_input_transfer_count += 1
        if assignment.transfer.needs_host_output():
            self.host_output_transfer_count += 1
        if assignment.byte_size is None:
            self.dynamic_slot_count += 1
        else:
            self.total_static_bytes += assignment.byte_size


def space_for(role: BufferRole) -> MemorySpace:
    if role.constant and not role.output:
        return MemorySpace.DEVICE_CONSTANT
    return MemorySpace.DEVICE_GLOBAL


def access_for(role: BufferRole) -> MemoryAccess:
    if role.input and role.output:
        return MemoryAccess.READ_WRITE
    if role.output:
        return MemoryAccess.WRITE_ONLY
    if role.input or role.constant:
        return MemoryAccess.READ_ONLY
    return MemoryAccess.READ_WRITE


def transfer_for(role: BufferRole) -> BoundaryTransfer:
    if role.input and role.output:
        return BoundaryTransfer.BIDIRECTIONAL
    if role.input:
        return BoundaryTransfer.HOST_TO_DEVICE
    if role.output:
        return BoundaryTransfer.DEVICE_TO_HOST
    return BoundaryTransfer.NONE


def written_slots(item: WorkItem, buffers: BufferPlan) -> list[int]:
    """Slots a work item writes: its outputs (for scan, the scratch operand's slot where
    the result shares it)."""
    return [s.id for v in item.outputs if (s := buffers.get_slot(v)) is not None]


def plan_memory_spaces(
    buffers: BufferPlan,
    schedule: SchedulePlan,
    *,
    constant_capacity: int = DEFAULT_CONSTANT_CAPACITY,
    meter: WorkMeter | None = None,
) -> MemorySpacePlan:
    """The memory-space plan of `buffers` under `schedule` (raises MissingOutputWriter)."""
    meter = meter or WorkMeter()
    writer: dict[int, int] = {}
    for item in schedule.work_items:
        meter.visit()
        for slot_id in written_slots(item, buffers):
            writer.setdefault(slot_id, item.id)
    plan = MemorySpacePlan(buffers=buffers, elided_value_count=buffers.elision_count())
    constant_bytes = 0
    for slot in buffers.slots:
        meter.visit()
        space = space_for(slot.role)
        if space is MemorySpace.DEVICE_CONSTANT:
            size = slot.byte_size or 0
            if constant_bytes + size > constant_capacity:
                space = MemorySpace.DEVICE_GLOBAL
                remaining = constant_capacity - constant_bytes
                remark = (
                    f"constant slot {slot.id} ({size} bytes) placed in device_global: only "
                    f"{remaining} of {constant_capacity} bytes of constant memory remain"
                )
                plan.remarks.append((slot.id, remark))
            else:
                constant_bytes += size
        plan.add(
            MemorySpaceAssignment(
                slot_id=slot.id,
                value=slot.value,
                producer=slot.producer,
                role=slot.role,
                space=space,
                access=access_for(slot.role),
                transfer=transfer_for(slot.role),
                byte_size=slot.byte_size,
                output_source=_output_source(slot, writer),
            )
        )
        meter.retain()
    return plan


def _output_source(slot: BufferSlot, writer: dict[int, int]) -> OutputSource | None:
    if not slot.role.output:
        return None
    if slot.id in writer:
        return KernelWritten(writer[slot.id])
    if slot.role.input or slot.role.constant:
        return Aliased(slot.id)
    raise _missing_output(slot)


def _missing_output(slot: BufferSlot) -> MissingOutputWriter:
    ret, index = min(
        (
            (use.operation, use.index)
            for use in slot.value.uses
            if isinstance(use.operation, func.ReturnOp)
        ),
        key=lambda pair: pair[1],
    )
    message = MISSING_OUTPUT_FORMAT.format(
        function=slot.function_name,
        index=index,
        value=value_names(slot.function)[slot.value],
    )
    location: LocationAttr = (slot.producer or ret).location
    return MissingOutputWriter(message, location)


def compute_memory(manager: AnalysisManager, root: Operation, meter: WorkMeter) -> MemorySpacePlan:
    buffers = manager.get(BUFFERS, root)
    schedule = manager.get(SCHEDULE, root)
    return plan_memory_spaces(
        buffers,
        schedule,
        constant_capacity=manager.options.constant_capacity,
        meter=meter,
    )


def estimate_memory(census: Census, _options: PlanOptions) -> WorkBounds:
    """Visits: one per work item and per slot (each at most one per op and value), plus
    the diagnostic's value numbering (one per value) and its symbol bytes."""
    return WorkBounds(
        structural_visits=checked_add(
            census.operations,
            census.values,
            checked_mul(2, census.values),
            census.symbol_bytes,
        ),
        retained_entries=census.values,
    )


MEMORY = AnalysisDescriptor(
    name="accy-memory-space-plan",
    version=1,
    compute=compute_memory,
    estimate=estimate_memory,
)
