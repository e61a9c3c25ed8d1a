"""The whole-function rules of the planned form (`accy.dialects.plan`), beyond each op's own.

Lowering reads only the planned form, so a planned module written by hand is held to what
`accy-plan` guarantees:

- Targets: the module's `accy.target`, when it has one, names a known target
  (`accy.targets`); each planned function is marked `accy.planned` (a unit attribute: the
  target is recorded once, on the module); in a module with an `accy.target` every
  function with a body is planned.
- Signature: a function's out-parameters (`accy.output = i`) are its last arguments,
  numbered 0, 1, ... in order (a call passes the parameters, then one array per result).
- Kernels: each `accy.kernel`'s kind is a work kind that lowering knows (`KERNEL_KINDS`:
  `plan.WorkKind` without `iterate`, which is a host loop); kernel ids are unique in a
  function.
- Parameters (arguments that are not out-parameters) are the caller's arrays: no kernel
  (outs or workspaces) and no copy writes one. A kernel that updates a parameter works on
  a copy (CPU), or on the device arena's copy of it (CUDA, a donated one included).
- Every out-parameter has a writer: a kernel's outs or a copy's target. Otherwise the
  seed's `MissingOutputWriter` text, located at the function.
- An out-parameter's `accy.donor` (CPU) names a donated parameter of its type, each once:
  the two may be one array, so writing the out-parameter clobbers the parameter (below).
- A view of an arena in an out-parameter's bytes (CPU scratch) is dead before the first
  op that touches that out-parameter or its donor (a loop's ops count at its start).
- No two buffers live at the same time overlap in address. Liveness is read from the IR:
  a buffer is live from the first to the last op of the function's body that touches it
  (a kernel or a copy, at its position in the body; anything inside an `accy.loop` or an
  `accy.while_loop` counts at every position of the loop, since it runs again). The one
  overlap allowed is in-place reuse: two views with the same offset and bytes, one read
  and the other written by the same elementwise (or scatter, or dot) kernel, which is
  where one dies and the other is born.
- Every read sees a written value: each kernel input, copy source and while-loop flag is a
  parameter, a constant (`accy.global`), or a buffer that an earlier kernel or copy wrote
  with no write between clobbering it. A write clobbers every other buffer that shares
  bytes with it (views of one arena, an out-parameter with the views of an arena in it
  and with its donor); a kernel reads its ins before it writes, so in-place reuse reads
  the old buffer before the new one takes its bytes; workspaces are scratch, whose writes
  clobber what they overlap and which hold nothing afterwards. In a loop a
  value counts as written at the loop's start only if it is written before the loop and
  still at the end of the body (the previous iteration); after an `accy.loop` of at least
  one trip, what its body left; after an `accy.while_loop`, what its cond left.

Errors are `AccyVerifyError`s at the op concerned, naming the buffers and kernels.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from accy.dialects import plan
from accy.dialects.accy import DONATED
from accy.dialects.plan import IN_PLACE_KINDS, KERNEL_KINDS, TARGET
from xdsl.dialects import func
from xdsl.dialects.builtin import IntegerAttr, MemRefType, ModuleOp, StringAttr, UnitAttr
from xdsl.ir import Block, BlockArgument, Operation, SSAValue

from accy.diagnostics import AccyVerifyError
from accy.targets import TARGETS

MISSING_OUTPUT_FORMAT = (
    "function @{function} result #{index} (%{value}) has no kernel writer or backing "
    "alias; schedule its producer or provide an input/constant alias"
)
"""A result no kernel writes and nothing backs (the planner's `MissingOutputWriter` and
this verifier say the same)."""

HOST_LOOPS = (plan.LoopOp, plan.WhileLoopOp)


def verify_planned_module(module: ModuleOp) -> None:
    """Check every planned function of `module` (see the module docstring)."""
    target = _module_target(module)
    for op in module.ops:
        if isinstance(op, func.FuncOp) and plan.PLANNED in op.attributes:
            verify_planned_function(op, target)
        elif isinstance(op, func.FuncOp) and target is not None and op.body.blocks:
            raise AccyVerifyError(
                f'function @{op.sym_name.data} of a module planned for "{target}" ({TARGET}) '
                f"is not planned ({plan.PLANNED}); a planned module holds planned functions",
                op.location,
            )


def verify_planned_function(function: func.FuncOp, target: str | None = None) -> None:
    """Check one planned function; `target` is its module's `accy.target` (if any)."""
    _check_target(function, target)
    _check_signature(function)
    _check_kernels(function)
    _check_parameters_unwritten(function)
    _check_donors(function)
    _check_outputs(function)
    _check_overlaps(function)
    _check_reads(function)


def _name(value: SSAValue) -> str:
    if value.name_hint:
        return f"%{value.name_hint}"
    if isinstance(value, BlockArgument):
        return f"argument #{value.index}"
    return "a buffer"


# -- targets and signature -------------------------------------------------------------


def _module_target(module: ModuleOp) -> str | None:
    """The module's `accy.target` (None when it has none); an error unless it is known."""
    target = module.attributes.get(TARGET)
    if target is None:
        return None
    if not isinstance(target, StringAttr) or target.data not in TARGETS:
        raise AccyVerifyError(
            f"the module's {TARGET} is {target}; known targets: {', '.join(TARGETS)}",
            module.location,
        )
    return target.data


def _check_target(function: func.FuncOp, module_target: str | None) -> None:
    """`accy.planned` marks a planned function (a unit attribute): its module's
    `accy.target` is the one place a planned program names its target."""
    if not isinstance(function.attributes[plan.PLANNED], UnitAttr):
        raise AccyVerifyError(
            f"function @{function.sym_name.data} has {plan.PLANNED} = "
            f"{function.attributes[plan.PLANNED]}; {plan.PLANNED} is a unit attribute (the "
            f"module's {TARGET} names the target)",
            function.location,
        )


def _output_indices(function: func.FuncOp) -> list[IntegerAttr | None]:
    """Each argument's `accy.output` (None for a parameter); an error for a non-integer."""
    attrs = function.arg_attrs.data if function.arg_attrs is not None else ()
    indices: list[IntegerAttr | None] = []
    for index, arg in enumerate(function.body.block.args):
        entry = attrs[index].data.get(plan.OUTPUT) if index < len(attrs) else None
        if entry is not None and not isinstance(entry, IntegerAttr):
            raise AccyVerifyError(
                f"{plan.OUTPUT} of {_name(arg)} is {entry}, not a result index",
                function.location,
            )
        indices.append(entry)
    return indices


def _check_signature(function: func.FuncOp) -> None:
    """Out-parameters come last, numbered 0, 1, ... in argument order."""
    count = 0
    indices = _output_indices(function)
    results = sum(1 for entry in indices if entry is not None)
    for arg, entry in zip(function.body.block.args, indices):
        if entry is None and count:
            raise AccyVerifyError(
                f"parameter {_name(arg)} of @{function.sym_name.data} follows an "
                "out-parameter; out-parameters come after every parameter",
                function.location,
            )
        if entry is None:
            continue
        if entry.value.data != count:
            raise AccyVerifyError(
                f"out-parameter {_name(arg)} of @{function.sym_name.data} has {plan.OUTPUT} "
                f"= {entry.value.data}, expected {count}: out-parameters are numbered 0, 1, "
                f"... in argument order, one per result ({results} here)",
                function.location,
            )
        count += 1


def _parameters(function: func.FuncOp) -> list[SSAValue]:
    return [
        arg
        for arg, entry in zip(function.body.block.args, _output_indices(function))
        if entry is None
    ]


def _out_parameters(function: func.FuncOp) -> list[tuple[SSAValue, int]]:
    return [
        (arg, entry.value.data)
        for arg, entry in zip(function.body.block.args, _output_indices(function))
        if entry is not None
    ]


# -- kernels, parameters, outputs ------------------------------------------------------


def _check_kernels(function: func.FuncOp) -> None:
    """Known kinds, unique ids."""
    seen: dict[int, plan.KernelOp] = {}
    for op in function.body.walk():
        if not isinstance(op, plan.KernelOp):
            continue
        kernel_id = op.id.value.data
        if op.kind.data not in KERNEL_KINDS:
            raise AccyVerifyError(
                f"'accy.kernel' op {kernel_id} has unknown kind \"{op.kind.data}\"; kernel "
                f"kinds: {', '.join(KERNEL_KINDS)}",
                op.location,
            )
        if kernel_id in seen:
            raise AccyVerifyError(
                f"'accy.kernel' op id {kernel_id} is used twice in @{function.sym_name.data}; "
                "kernel ids are unique in a function",
                op.location,
            )
        seen[kernel_id] = op


def _writes(op: Operation) -> Iterable[tuple[SSAValue, str]]:
    """The buffers a kernel or copy writes, each with where it appears."""
    if isinstance(op, plan.KernelOp):
        for index, value in enumerate(op.outs):
            yield value, f"outs #{index}"
        for index, value in enumerate(op.workspaces):
            yield value, f"workspaces #{index}"
    elif isinstance(op, plan.CopyOp):
        yield op.target, "its target"


def _describe(op: Operation) -> str:
    """`'accy.kernel' op 3` or `'accy.copy' op`: the op an error is about."""
    if isinstance(op, plan.KernelOp):
        return f"'accy.kernel' op {op.id.value.data}"
    return f"'{op.name}' op"


def _check_parameters_unwritten(function: func.FuncOp) -> None:
    parameters = set(_parameters(function))
    for op in function.body.walk():
        for value, where in _writes(op):
            if value in parameters:
                raise AccyVerifyError(
                    f"{_describe(op)} writes the parameter {_name(value)} ({where}); "
                    "parameters are the caller's arrays and are never written (work on a "
                    "copy of it)",
                    op.location,
                )


def _check_donors(function: func.FuncOp) -> None:
    """An out-parameter's `accy.donor` names a donated parameter of its type, each
    parameter once."""
    parameters = _parameters(function)
    attrs = function.arg_attrs.data if function.arg_attrs is not None else ()
    taken: dict[int, SSAValue] = {}
    for arg, _ in _out_parameters(function):
        entry = attrs[arg.index].data.get(plan.DONOR)  # type: ignore[attr-defined]
        if entry is None:
            continue
        index = entry.value.data if isinstance(entry, IntegerAttr) else -1
        if not 0 <= index < len(parameters):
            raise AccyVerifyError(
                f"{plan.DONOR} of out-parameter {_name(arg)} is {entry}, not the index of a "
                "parameter",
                function.location,
            )
        donor = parameters[index]
        if DONATED not in attrs[index].data or donor.type != arg.type:
            raise AccyVerifyError(
                f"out-parameter {_name(arg)} takes over {_name(donor)} ({plan.DONOR}), which "
                f"is not a donated parameter of its type {arg.type}",
                function.location,
            )
        if index in taken:
            raise AccyVerifyError(
                f"out-parameters {_name(taken[index])} and {_name(arg)} both take over "
                f"{_name(donor)} ({plan.DONOR}); a parameter's buffer goes to one result",
                function.location,
            )
        taken[index] = arg


def _check_outputs(function: func.FuncOp) -> None:
    written: set[SSAValue] = set()
    for op in function.body.walk():
        written.update(value for value, _ in _writes(op))
    for arg, index in _out_parameters(function):
        if arg not in written:
            message = MISSING_OUTPUT_FORMAT.format(
                function=function.sym_name.data,
                index=index,
                value=arg.name_hint or arg.index,  # type: ignore[attr-defined]
            )
            raise AccyVerifyError(message, function.location)


# -- overlaps --------------------------------------------------------------------------


@dataclass
class _Live:
    view: plan.ViewOp
    start: int
    end: int
    first: Operation


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
    first_touch: dict[SSAValue, tuple[int, Operation]] = {}
    for op, position in positions.items():
        if isinstance(op, (plan.KernelOp, plan.CopyOp)):
            at = positions[loops[op]] if op in loops else position
            for value in op.operands:
                if value not in first_touch or at < first_touch[value][0]:
                    first_touch[value] = (at, op)
    for value, entry in live.items():
        backing = entry.view.arena.owner.backing  # type: ignore[attr-defined]
        if backing is None:
            continue
        touches = [first_touch[v] for v in (backing, plan.donor_of(backing)) if v in first_touch]
        if touches:
            at, toucher = min(touches, key=lambda touch: touch[0])
            if at <= entry.end:
                raise AccyVerifyError(
                    f"'accy.view' op {_name(value)} (live [{entry.start}, {entry.end}]) lies "
                    f"in out-parameter {_name(backing)}, which {_describe(toucher)} touches "
                    f"at {at}; an arena in an out-parameter holds buffers that die before "
                    "anything touches it",
                    entry.view.location,
                )
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


# -- reads of written values -----------------------------------------------------------


def _check_reads(function: func.FuncOp) -> None:
    initial = set(_parameters(function))
    initial.update(op.buffer for op in function.body.walk() if isinstance(op, plan.GlobalOp))
    _WrittenBuffers(function).check(function.body.block, frozenset(initial))


Written = frozenset[SSAValue]
"""The buffers that hold a value at a point of a planned body (a must-analysis)."""


@dataclass(frozen=True)
class _Effect:
    """What running some ops does to the written buffers: `(written - kills) | gens`.
    Every kernel, copy and loop has such an effect, so a body's is its ops' composed."""

    kills: Written = frozenset()
    gens: Written = frozenset()

    def then(self, other: _Effect) -> _Effect:
        """This effect followed by `other`."""
        return _Effect(self.kills | other.kills, (self.gens - other.kills) | other.gens)

    def apply(self, written: Written) -> Written:
        return (written - self.kills) | self.gens

    def loop_start(self, before: Written) -> Written:
        """What is written at every start of a loop whose iteration has this effect: the
        greatest `start` = `before` ∩ `apply(start)`, which is `before` less what an
        iteration kills and does not write again."""
        return before - (self.kills - self.gens)


def _extent(value: SSAValue) -> tuple[SSAValue, int, int | None]:
    """The memory a buffer occupies: (the allocation it is part of, first byte, end byte
    or None for all of it). Views share their arena's bytes, an out-parameter its donor's
    (`accy.donor`); every other buffer (an argument, an alloc, a global) is an allocation
    of its own."""
    donor = plan.donor_of(value)
    if donor is not None:
        return donor, 0, None
    owner = value.owner
    if isinstance(owner, plan.ViewOp):
        start = owner.offset.value.data
        t = value.type
        assert isinstance(t, MemRefType)
        arena = owner.arena.owner
        assert isinstance(arena, plan.ArenaOp)
        memory = owner.arena if arena.backing is None else arena.backing
        return memory, start, start + plan.buffer_bytes(t, owner.rows)
    return value, 0, None


def _overlap(a0: int, a1: int | None, b0: int, b1: int | None) -> bool:
    """Whether byte ranges [a0, a1) and [b0, b1) (None: to the end) share a byte."""
    return (a1 is None or b0 < a1) and (b1 is None or a0 < b1) and a0 != a1 and b0 != b1


class _WrittenBuffers:
    """The forward analysis behind the read rule. Each block's effect is computed once
    (a loop's from its body's), then one walk carries the written buffers through the
    body, entering each loop at its `loop_start`, and raises at the first read of a
    buffer not written. Linear in the ops, however deep loops nest."""

    def __init__(self, function: func.FuncOp):
        self.extents: dict[SSAValue, list[tuple[SSAValue, int, int | None]]] = {}
        """Each allocation (an arena, an alloc, ...) → the buffers in it, with their bytes."""
        values = [*function.body.block.args]
        values += [value for op in function.body.walk() for value in op.results]
        for value in values:
            if isinstance(value.type, MemRefType):
                root, start, end = _extent(value)
                self.extents.setdefault(root, []).append((value, start, end))
        self.sharers: dict[SSAValue, Written] = {}
        self.effects: dict[Block, _Effect] = {}
        self.clobbered: dict[SSAValue, tuple[Operation, SSAValue]] = {}
        """The last write (op, buffer) that took a buffer's bytes, for the error message."""

    def sharing(self, buffer: SSAValue) -> Written:
        """The other buffers whose bytes `buffer` shares (computed once per buffer)."""
        if buffer not in self.sharers:
            root, start, end = _extent(buffer)
            self.sharers[buffer] = frozenset(
                other
                for other, other_start, other_end in self.extents.get(root, ())
                if other is not buffer and _overlap(start, end, other_start, other_end)
            )
        return self.sharers[buffer]

    def writes(self, op: Operation) -> list[tuple[SSAValue, _Effect]]:
        """A kernel's or copy's writes in order, each with its effect: a write clobbers
        the buffers sharing its bytes; a workspace (scratch) holds nothing afterwards."""
        if isinstance(op, plan.KernelOp):
            outs = [(b, _Effect(self.sharing(b), frozenset({b}))) for b in op.outs]
            scratch = [(w, _Effect(self.sharing(w) | {w})) for w in op.workspaces]
            return outs + scratch
        if isinstance(op, plan.CopyOp):
            return [(op.target, _Effect(self.sharing(op.target), frozenset({op.target})))]
        return []

    def effect(self, op: Operation) -> _Effect:
        if isinstance(op, plan.LoopOp):
            # Started at `loop_start`, a run of trips leaves what one trip leaves.
            return self.block_effect(op.body.block) if op.trip_count.value.data else _Effect()
        if isinstance(op, plan.WhileLoopOp):
            cond = self.block_effect(op.cond.block)
            trip = cond.then(self.block_effect(op.body.block))
            return _Effect(trip.kills - trip.gens, frozenset()).then(cond)
        effect = _Effect()
        for _, write in self.writes(op):
            effect = effect.then(write)
        return effect

    def block_effect(self, block: Block) -> _Effect:
        if block not in self.effects:
            effect = _Effect()
            for op in block.ops:
                effect = effect.then(self.effect(op))
            self.effects[block] = effect
        return self.effects[block]

    def check(self, block: Block, written: Written) -> Written:
        """Walk `block` from `written`, raising at a read of an unwritten buffer."""
        for op in block.ops:
            if isinstance(op, plan.LoopOp):
                self.check(op.body.block, self.block_effect(op.body.block).loop_start(written))
                written = self.effect(op).apply(written)
            elif isinstance(op, plan.WhileLoopOp):
                cond = self.block_effect(op.cond.block)
                trip = cond.then(self.block_effect(op.body.block))
                tested = self.check(op.cond.block, trip.loop_start(written))
                self.read(tested, op, op.flag, "its flag")
                self.check(op.body.block, tested)
                written = tested
            else:
                if isinstance(op, plan.KernelOp):
                    for index, value in enumerate(op.ins):
                        self.read(written, op, value, f"ins #{index}")
                elif isinstance(op, plan.CopyOp):
                    self.read(written, op, op.source, "its source")
                for buffer, write in self.writes(op):
                    for other in write.kills & written:
                        self.clobbered[other] = (op, buffer)
                    if buffer in write.kills:  # scratch
                        self.clobbered[buffer] = (op, buffer)
                    else:
                        self.clobbered.pop(buffer, None)
                    written = write.apply(written)
        return written

    def read(self, written: Written, op: Operation, buffer: SSAValue, where: str) -> None:
        if buffer in written:
            return
        clobber = self.clobbered.get(buffer)
        if clobber is not None and clobber[1] is buffer:
            why = (
                f"after {_describe(clobber[0])} used it as a workspace (scratch, which holds "
                "nothing afterwards)"
            )
        elif clobber is not None:
            writer, other = clobber
            why = (
                f"after {_describe(writer)} wrote {_name(other)} over its bytes (a write "
                "clobbers every buffer that shares its bytes)"
            )
        elif any(isinstance(parent, HOST_LOOPS) for parent in _ancestors(op)):
            why = (
                "not written before it on every path: a value written later in a loop's "
                "body counts at the loop's start only if it is also written before the loop"
            )
        else:
            why = "before any kernel or copy writes it"
        raise AccyVerifyError(f"{_describe(op)} reads {_name(buffer)} ({where}) {why}", op.location)


def _ancestors(op: Operation) -> Iterable[Operation]:
    parent = op.parent_op()
    while parent is not None:
        yield parent
        parent = parent.parent_op()
