"""Buffer plan: which values need storage (slots), and the role of each slot.

A slot is created, in pre-order through each function, for every function argument
(role `input`, and `donated` where the argument carries `accy.donated`), every constant
(role `constant`) and every result a work item leaves in storage; a slot whose value is
returned by `func.return` also has role `output`. Some values share a slot instead of
getting one: the result of `accy.scan` is written into the slot of its scratch operand
when the scan is that value's one use and it is no constant (#1; a scratch read elsewhere
keeps its value, and a constant's buffer is never written: the scan's result then gets a
slot of its own), and the block arguments of an `accy.iterate` body (of an `accy.while`'s cond and
body) are the loop's carried buffers, i.e. the slots of the loop's results. A loop's
result takes the slot of its init when that init is a temporary computed for the loop
alone (#2: the zeros a scan's outputs start from are computed in the loop's buffer), and
a body's `dynamic_update_slice` of a carried value nothing else reads, yielded as that
same carried value, writes into the carried buffer (#3: a scan stacking its outputs
updates one row in place each iteration). Values fused away are *elided* and get no slot.

Two kinds of value get no slot either:
- the results of dead ops (`FusionPlan.dead`: no live op uses them);
- *folded* splat constants (`BufferPlan.folded`): a constant of more than
  `FOLD_MIN_BYTES` whose elements are all one value (not NaN) and whose every use is by an op that both targets evaluate
  element by element through its fused group (an elementwise op, compare, select,
  convert, reshape or broadcast_in_dim, or a slice that is not its group's root; not a
  convert that a product loads as its operand prologue, which reads memory). The
  lowerings read it as a scalar (`arith.constant`), so a slot would never be read: ReLU's
  `maximum %h, dense<0.0>` keeps no 64 KiB zero buffer. A splat that is returned,
  reduced, transposed, scanned into, carried by a loop, ... keeps its slot.

Invariants: slot ids are 0, 1, 2, … in creation order (per function: arguments first,
then results in pre-order); every value has at most one slot; `total_static_bytes` is the
sum of the static slot sizes; a slot's byte size is None exactly when its shape is
dynamic.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from io import StringIO

import numpy as np
from accy.dialects import accy as ops
from accy.passes.analysis import (
    AnalysisDescriptor,
    AnalysisManager,
    Census,
    WorkBounds,
    WorkMeter,
    checked_add,
)
from accy.passes.fusion import DATA_OPS, FUSION, POINTWISE, FusionPlan, is_operand_prologue
from accy.passes.options import PlanOptions
from accy.passes.shapes import SHAPES
from xdsl.dialects import func
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr
from xdsl.ir import Block, Operation, SSAValue
from xdsl.printer import Printer

from accy.dtypes import dense_values


@dataclass(frozen=True)
class BufferRole:
    input: bool = False
    output: bool = False
    constant: bool = False
    donated: bool = False
    """An input whose buffer the caller gives up (`accy.donated`)."""

    def __str__(self) -> str:
        names = [n for n in ("input", "donated", "output", "constant") if getattr(self, n)]
        return "+".join(names) or "temporary"


@dataclass
class BufferSlot:
    """Storage for one value (and the values that share it)."""

    id: int
    value: SSAValue
    producer: Operation | None
    role: BufferRole
    byte_size: int | None
    function: func.FuncOp

    @property
    def function_name(self) -> str:
        return self.function.sym_name.data

    @property
    def is_dynamic(self) -> bool:
        return self.byte_size is None

    @property
    def is_temporary(self) -> bool:
        """Neither a parameter, a result nor a constant."""
        return not (self.role.input or self.role.output or self.role.constant)


@dataclass
class BufferPlan:
    slots: list[BufferSlot] = field(default_factory=list)
    slot_of_value: dict[SSAValue, BufferSlot] = field(default_factory=dict)
    elided: list[SSAValue] = field(default_factory=list)
    folded: list[SSAValue] = field(default_factory=list)
    """Splat constants read as scalars by their consumers (see the module docstring)."""

    def slot_count(self) -> int:
        return len(self.slots)

    def elision_count(self) -> int:
        return len(self.elided)

    def get_slot(self, value: SSAValue) -> BufferSlot | None:
        return self.slot_of_value.get(value)

    @property
    def total_static_bytes(self) -> int:
        return sum(s.byte_size for s in self.slots if s.byte_size is not None)


def value_names(function: func.FuncOp) -> dict[SSAValue, str]:
    """The name the printer shows for each value of a function (`%name`, `%name_1`, `%3`),
    taken from xDSL's own printer so diagnostics and reports match the printed IR."""
    printer = Printer(stream=StringIO())
    printer.print_op(function)
    return dict(printer._ssa_values)  # the printer keeps no public name table


class _SlotBuilder:
    def __init__(self, plan: BufferPlan, layouts, meter: WorkMeter):
        self.plan, self.layouts, self.meter = plan, layouts, meter

    def new(self, value: SSAValue, producer: Operation | None, role: BufferRole, function) -> None:
        slot = BufferSlot(
            id=len(self.plan.slots),
            value=value,
            producer=producer,
            role=role,
            byte_size=self.layouts.of(value).byte_size,
            function=function,
        )
        self.plan.slots.append(slot)
        self.share(value, slot)

    def share(self, value: SSAValue, slot: BufferSlot) -> None:
        self.plan.slot_of_value[value] = slot
        self.meter.retain()


def compute_buffers(manager: AnalysisManager, root: Operation, meter: WorkMeter) -> BufferPlan:
    layouts = manager.get(SHAPES, root)
    fusion = manager.get(FUSION, root)
    plan = BufferPlan()
    builder = _SlotBuilder(plan, layouts, meter)
    for function in root.walk():
        meter.visit()
        if not isinstance(function, func.FuncOp):
            continue
        donated = ops.donated_parameters(function)
        for arg in function.body.block.args:
            meter.visit()
            builder.new(arg, None, BufferRole(input=True, donated=donated[arg.index]), function)
        for op in function.body.walk():
            meter.visit()
            _assign(op, fusion, plan, builder, function)
        for op in function.body.block.ops:
            meter.visit()
            if isinstance(op, func.ReturnOp):
                for value in op.arguments:
                    slot = plan.slot_of_value[value]
                    slot.role = replace(slot.role, output=True)
    return plan


def splat_scalar(op: ops.ConstantOp) -> int | float | bool | None:
    """The single element of a splat constant (all elements equal, none NaN), or None."""
    return splat_of(op.value)


def splat_of(value: DenseIntOrFPElementsAttr) -> int | float | bool | None:
    """The single element of splat data (all elements equal, none NaN), or None."""
    values = dense_values(value)
    if values.size == 0 or not bool(np.all(values == values.flat[0])):
        return None
    scalar = values.flat[0]
    return bool(scalar) if values.dtype == np.bool_ else scalar.item()


FOLD_MIN_BYTES = 256
"""Splats of at most this many bytes (one aligned unit of constant memory) keep their
slot: folding them saves nothing worth a plan that differs from the program's text."""

ELEMENT_READERS = (
    *POINTWISE,
    ops.BroadcastInDimOp,
    ops.ReverseOp,
    ops.PadOp,
    ops.DynamicSliceOp,
    ops.DynamicUpdateSliceOp,
    ops.GatherOp,
)
"""Consumers that read an operand only through their fused group's element evaluation,
on both targets (a slice reads so only as a non-root member)."""


def is_folded_splat(op: ops.ConstantOp, fusion: FusionPlan, byte_size: int | None) -> bool:
    """Whether the constant is a splat of more than `FOLD_MIN_BYTES` that every live use
    reads as a scalar (see the module docstring)."""
    if byte_size is None or byte_size <= FOLD_MIN_BYTES or splat_scalar(op) is None:
        return False
    users = [use.operation for use in op.result.uses if not fusion.is_dead(use.operation)]
    return bool(users) and all(
        (isinstance(user, ELEMENT_READERS) and not is_operand_prologue(user))
        or isinstance(user, ops.SliceOp)
        and fusion.is_elided(user.results[0])
        for user in users
    )


def _assign(op: Operation, fusion, plan: BufferPlan, builder: _SlotBuilder, function) -> None:
    if fusion.is_dead(op) or ops.in_scalar_body(op):
        return
    if isinstance(op, ops.ConstantOp):
        if is_folded_splat(op, fusion, builder.layouts.of(op.result).byte_size):
            plan.folded.append(op.result)
            return
        builder.new(op.result, op, BufferRole(constant=True), function)
    elif isinstance(op, ops.ScanOp) and _scratch_taken_over(op, plan) is not None:
        builder.share(op.result, plan.slot_of_value[op.scratch])
    elif isinstance(op, ops.LOOP_OPS):
        for index, result in enumerate(op.results):
            init = _init_taken_over(op.inits[index], plan)
            if init is not None:
                builder.share(result, init)
            else:
                builder.new(result, op, BufferRole(), function)
            for region in op.regions:  # a while's cond and body read the carried values
                builder.share(region.block.args[index], plan.slot_of_value[result])
    elif isinstance(op, DATA_OPS):
        return
    elif fusion.is_elided(op.results[0]):
        plan.elided.extend(op.results)
    elif (carried := _carried_update(op, plan)) is not None:
        builder.share(op.results[0], carried)
    else:
        for result in op.results:
            builder.new(result, op, BufferRole(), function)


def _scratch_taken_over(op: ops.ScanOp, plan: BufferPlan) -> BufferSlot | None:
    """The slot of a scan's scratch operand that its result takes (#1 of the module
    docstring), or None: the scan is the scratch's one use, and the scratch is no constant
    (whose buffer no kernel writes: CUDA keeps it in constant memory)."""
    slot = plan.slot_of_value.get(op.scratch)
    if slot is None or not op.scratch.has_one_use() or slot.role.constant:
        return None
    return slot


def _init_taken_over(init: SSAValue, plan: BufferPlan) -> BufferSlot | None:
    """The slot of a loop's init that the loop's carried buffer takes over (#2 of the
    module docstring), or None: the init is a temporary a work item computes, read only as
    this init."""
    slot = plan.slot_of_value.get(init)
    if (
        slot is None
        or slot.value is not init
        or not isinstance(init.owner, Operation)
        or isinstance(init.owner, ops.LOOP_OPS)
        or slot.role.input
        or slot.role.constant
        or not init.has_one_use()
    ):
        return None
    return slot


def _carried_update(op: Operation, plan: BufferPlan) -> BufferSlot | None:
    """The carried buffer a loop body's `dynamic_update_slice` writes in place (#3 of the
    module docstring), or None: its operand is the body's carried value `p`, read by
    nothing else, and its result is only yielded, as the next value `p`."""
    if not isinstance(op, ops.DynamicUpdateSliceOp):
        return None
    operand, result = op.operand, op.result
    block = operand.owner
    if not isinstance(block, Block) or not operand.has_one_use() or not result.has_one_use():
        return None
    loop = block.parent_op()
    if not isinstance(loop, ops.LOOP_OPS) or block is not loop.body.block:
        return None
    use = result.get_unique_use()
    assert use is not None
    if use.operation is not block.last_op or use.index != operand.index:  # type: ignore[attr-defined]
        return None
    return plan.slot_of_value.get(operand)


def estimate_buffers(census: Census, _options: PlanOptions) -> WorkBounds:
    return WorkBounds(
        structural_visits=checked_add(
            census.operations, census.values, census.operations, census.operations
        ),
        retained_entries=checked_add(census.values, census.values),
    )


BUFFERS = AnalysisDescriptor(
    name="accy-buffer-plan",
    version=1,
    compute=compute_buffers,
    estimate=estimate_buffers,
)
