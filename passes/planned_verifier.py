"""The whole-function rules of the planned form (`accy.dialects.plan`), beyond each op's own.

- No two buffers live at the same time overlap in address. Liveness is read from the IR:
  a buffer is live from the first to the last op of the function's body that touches it
  (a kernel or a copy, at its position in the body; anything inside an `accy.loop` or an
  `accy.while_loop` counts at every position of the loop, since it runs again). The one overlap allowed is in-place
  reuse: two views with the same offset and bytes, one read and the other written by the
  same elementwise kernel, which is where one dies and the other is born.
- Every out-parameter (`accy.output`) has a writer: a kernel's outs or a copy's target.
  Otherwise the seed's `MissingOutputWriter` text, located at the function.

Errors are `AccyVerifyError`s at the op concerned, naming the buffers.
"""

from __future__ import annotations

from dataclasses import dataclass

from accy.dialects import plan
from accy.passes.arena_plan import IN_PLACE_KINDS
from accy.passes.memory import MISSING_OUTPUT_FORMAT
from xdsl.dialects import func
from xdsl.dialects.builtin import IntegerAttr, ModuleOp
from xdsl.ir import Block, Operation, SSAValue

from accy.diagnostics import AccyVerifyError


@dataclass
class _Live:
    view: plan.ViewOp
    start: int
    end: int
    first: Operation


def verify_planned_module(module: ModuleOp) -> None:
    """Check every planned function of `module` (see the module docstring)."""
    for op in module.ops:
        if isinstance(op, func.FuncOp) and plan.PLANNED in op.attributes:
            verify_planned_function(op)


def verify_planned_function(function: func.FuncOp) -> None:
    _check_outputs(function)
    _check_overlaps(function)


def _name(value: SSAValue) -> str:
    return f"%{value.name_hint}" if value.name_hint else "a buffer"


def _check_outputs(function: func.FuncOp) -> None:
    written: set[SSAValue] = set()
    for op in function.body.walk():
        if isinstance(op, plan.KernelOp):
            written.update(op.outs)
        elif isinstance(op, plan.CopyOp):
            written.add(op.target)
    attrs = function.arg_attrs.data if function.arg_attrs is not None else ()
    for arg, entries in zip(function.body.block.args, attrs):
        index = entries.data.get(plan.OUTPUT)
        if isinstance(index, IntegerAttr) and arg not in written:
            message = MISSING_OUTPUT_FORMAT.format(
                function=function.sym_name.data,
                index=index.value.data,
                value=arg.name_hint or arg.index,
            )
            raise AccyVerifyError(message, function.location)


HOST_LOOPS = (plan.LoopOp, plan.WhileLoopOp)


def _positions(block: Block) -> tuple[dict[Operation, int], dict[Operation, Operation]]:
    """Each op of the body, loops' regions included, → its position in program order; and
    each op inside a loop → its outermost loop."""
    positions: dict[Operation, int] = {}
    loops: dict[Operation, Operation] = {}
    for op in block.ops:
        positions[op] = len(positions)
        if isinstance(op, HOST_LOOPS):
            for nested in op.walk():
                if nested is not op:
                    positions[nested] = len(positions)
                    loops[nested] = op
    return positions, loops


def _check_overlaps(function: func.FuncOp) -> None:
    positions, loops = _positions(function.body.block)
    live: dict[SSAValue, _Live] = {}
    touched_in: dict[SSAValue, set[Operation | None]] = {}
    for op, position in positions.items():
        if not isinstance(op, (plan.KernelOp, plan.CopyOp)):
            continue
        for value in op.operands:
            view = value.owner
            if not isinstance(view, plan.ViewOp):
                continue
            touched_in.setdefault(value, set()).add(loops.get(op))
            entry = live.get(value)
            if entry is None:
                live[value] = _Live(view, position, position, op)
            else:
                entry.start, entry.end = min(entry.start, position), max(entry.end, position)
    for value, where in touched_in.items():
        if len(where) > 1:  # used in a loop and outside it: live through the whole loop
            for loop in where - {None}:
                assert loop is not None
                inside = [positions[op] for op in loop.walk() if op is not loop]
                last = max(inside) if inside else positions[loop]
                live[value].start = min(live[value].start, positions[loop])
                live[value].end = max(live[value].end, last)
    entries = sorted(live.items(), key=lambda kv: kv[1].start)
    for i, (a, la) in enumerate(entries):
        for b, lb in entries[i + 1 :]:
            if lb.start > la.end:
                break
            if la.view.arena is not lb.view.arena:
                continue
            a0 = la.view.offset.value.data
            b0 = lb.view.offset.value.data
            a1 = a0 + plan.buffer_bytes(a.type, la.view.rows)  # type: ignore[arg-type]
            b1 = b0 + plan.buffer_bytes(b.type, lb.view.rows)  # type: ignore[arg-type]
            if a0 >= b1 or b0 >= a1 or _in_place(a, la, b, lb):
                continue
            raise AccyVerifyError(
                f"'accy.view' op {_name(b)} (bytes [{b0}, {b1}), live [{lb.start}, "
                f"{lb.end}]) overlaps {_name(a)} (bytes [{a0}, {a1}), live [{la.start}, "
                f"{la.end}]) in the arena while both are live",
                lb.view.location,
            )


def _in_place(a: SSAValue, la: _Live, b: SSAValue, lb: _Live) -> bool:
    """`b` takes `a`'s buffer over where `a` dies: same bytes, touching at one elementwise
    or scatter kernel that reads `a` and writes `b`."""
    a_bytes = plan.buffer_bytes(a.type, la.view.rows)  # type: ignore[arg-type]
    b_bytes = plan.buffer_bytes(b.type, lb.view.rows)  # type: ignore[arg-type]
    if la.view.offset != lb.view.offset or a_bytes != b_bytes:
        return False
    if la.end != lb.start:
        return False
    kernel = lb.first
    return (
        isinstance(kernel, plan.KernelOp)
        and kernel.kind.data in {kind.value for kind in IN_PLACE_KINDS}
        and a in kernel.ins
        and b in kernel.outs
    )
