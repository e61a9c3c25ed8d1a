"""Arena plan: the offset of every device buffer in one packed arena per function.

Each function allocates one device arena. Its buffers are the device_global slots with a
known size and the workspace terms marked `arena = true` (one buffer per term, live over
the work items that run its family); they are packed with `accy.passes.arena.pack` over
their liveness intervals. Constants planned in device_constant are laid out one after
another in the module's constant arena (they are all live all the time).

In-place reuse: an elementwise, scatter or dot work item's output (a dot's with an epilogue
that reads the input; on the CPU, not one that accumulates in its output:
`dot_layout.accumulates_in_output`) takes the buffer of an input
of the same byte size (so the same element width) that dies at that work item, when every
member on the way from that input to the output is pointwise (element i reads only
element i: no broadcast, slice or concatenate on that path; a broadcast bias elsewhere in
the group is fine; a `dynamic_update_slice` or `scatter` of that input, whose other
operands do not read it, is: so a KV cache's update takes the cache's buffer and a
scatter-add combines into its operand's), the input is a temporary or a donated parameter
(`accy.donated`: never another function input, a constant or an output), and, in a loop
body, the input is written in that body (a value from before the loop is read again by
the next iteration) and not yielded (it is copied into a carried buffer after the body's
last work item). The two slots
then share one buffer whose interval covers both. A donated parameter's buffer is the
arena's copy of it on a device target (the host's array is copied in and never written); on
a host target planned with `donate` only a result takes one over: the caller's array
becomes that result (`donors`, see below). The caller's other arrays are never written.

The plan is the target's (`Target.device_memory`): on a device target (CUDA) the arena
holds every device_global slot; on a host target (the CPU), whose kernels read parameters
from the caller's arrays, write results into the caller's out-parameters and read constants
from globals, it holds the temporaries only and the target's workspaces. In-place reuse
there is of a temporary, by a temporary or by a result of the same type, which then holds
the temporary in its out-parameter (`in_outputs`): the chain of buffers a result takes over
is not in the arena; and, planned with `donate`, of a donated parameter by a result of its
type (`donors`, preferred to a temporary): a call passes that parameter's array as the
result's out-parameter where it can (a writeable, contiguous array of the type that no
other argument shares), else a fresh one.
Temporaries that die before anything touches a result's out-parameter lie in its bytes
(`output_arenas`), as XLA lets temporaries share an output's allocation.

Dynamic slots: with `rows` given they are planned at the largest row count (an upper
bound); otherwise they stay out of the arena as separate allocations.

Work: besides a visit per assignment and per slot, each packing charges the work it reports
(`PackResult.work`: the greedy packers' visits and the node and iteration caps of the searches
that ran, all set by `pack_budget_ms` and `pack_workers`); the estimate bounds it by
`pack.max_work` per packing, two per function, so a work budget too small for the packing
search refuses the plan before anything is packed.

Invariants (checked by `check_placement` when `check_arena` is set): no two buffers live
at the same work item overlap in address; every offset is aligned; the arena covers
every buffer. `lower_bound <= size`. Output is deterministic.
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass, field

from accy.dialects import accy as ops
from accy.dialects.plan import IN_PLACE_KINDS
from accy.passes.analysis import (
    AnalysisDescriptor,
    AnalysisManager,
    Census,
    WorkBounds,
    WorkMeter,
    checked_add,
    checked_mul,
)
from accy.passes.arena import BufferInterval, align_up, check_placement, pack
from accy.passes.arena.pack import max_work
from accy.passes.buffers import BUFFERS, BufferPlan, BufferSlot
from accy.passes.dot_layout import accumulates_in_output
from accy.passes.fusion import POINTWISE
from accy.passes.liveness import LIVENESS, LiveInterval, Liveness
from accy.passes.memory import MEMORY, MemorySpace, MemorySpacePlan
from accy.passes.options import PlanOptions
from accy.passes.schedule import SCHEDULE, SchedulePlan, WorkItem
from accy.passes.workspace.sizing import WORKSPACES
from accy.passes.workspace.terms import WorkspacePlan, WorkspaceTerm
from xdsl.dialects.builtin import DYNAMIC_INDEX, TensorType
from xdsl.ir import Operation, SSAValue

from accy.diagnostics import AccyError
from accy.dtypes import byte_width


@dataclass(frozen=True)
class WorkspaceBuffer:
    """A workspace term's buffer in one function's arena."""

    term: WorkspaceTerm
    offset: int
    interval: LiveInterval


@dataclass
class OutputArena:
    """(CPU) Scratch in a result's out-parameter: temporaries that die before the first
    work item that touches it (`first_touch`), at byte offsets of its `capacity` bytes;
    `size` is the bytes they use."""

    capacity: int
    first_touch: int
    size: int = 0
    offsets: dict[int, int] = field(default_factory=dict)
    """Slot id → byte offset in the out-parameter."""


@dataclass
class FunctionArena:
    """The device arena of one function."""

    function: str
    size: int = 0
    lower_bound: int = 0
    offsets: dict[int, int] = field(default_factory=dict)
    """Slot id → byte offset in the arena."""
    reuses: dict[int, int] = field(default_factory=dict)
    """Slot id → the slot whose buffer it takes over in place."""
    separate: list[int] = field(default_factory=list)
    """Dynamic slots allocated on their own (no rows given)."""
    workspaces: list[WorkspaceBuffer] = field(default_factory=list)
    packer_sizes: dict[str, int] = field(default_factory=dict)
    in_outputs: dict[int, int] = field(default_factory=dict)
    """(CPU) Temporary slot id → the result slot whose out-parameter holds it (the result
    takes its buffer over in place)."""
    donors: dict[int, int] = field(default_factory=dict)
    """(CPU) Result slot id → the donated parameter slot whose buffer it takes over in place:
    the caller's array becomes the result (`accy.donor` on the out-parameter)."""
    output_arenas: dict[int, OutputArena] = field(default_factory=dict)
    """(CPU) Result slot id → the arena in its out-parameter (temporaries that die before
    anything touches it)."""
    elsewhere: dict[int, str] = field(default_factory=dict)
    """(CPU) Slot id → where a slot outside the arena lives (`parameter`, `out-parameter`,
    `constant global`, `in the out-parameter of slot N`)."""
    temporaries: list[BufferInterval] = field(default_factory=list)
    """The buffers that are neither parameters, results nor constants, with the arena
    workspaces: what `temporaries_size` packs when a report or a benchmark asks."""
    temporaries_packing: tuple[int, float, int] = (1, 0.0, 1)
    """The alignment, budget and workers `temporaries_size` packs them with."""
    packed_temporaries: int | None = None
    """`temporaries_size` once known: at once on the CPU, whose arena holds only them."""

    @property
    def temporaries_size(self) -> int:
        """Packed bytes of the temporaries alone (XLA's `temp_size_in_bytes`): a figure for
        comparisons, packed on first use, not by every plan (on the CPU the arena is it)."""
        if self.packed_temporaries is None:
            alignment, budget_ms, workers = self.temporaries_packing
            packed = pack(
                self.temporaries, alignment=alignment, budget_ms=budget_ms, workers=workers
            )
            self.packed_temporaries = packed.placement.size
        return self.packed_temporaries


@dataclass
class ArenaPlan:
    functions: dict[str, FunctionArena]
    intervals: dict[int, LiveInterval]
    constant_offsets: dict[int, int]
    constant_size: int
    planned_rows: int | None
    """The row count dynamic slots were planned at, or None (separate allocations)."""

    @property
    def size(self) -> int:
        return sum(f.size for f in self.functions.values())

    @property
    def lower_bound(self) -> int:
        return sum(f.lower_bound for f in self.functions.values())

    @property
    def temporaries_size(self) -> int:
        """Packed bytes of buffers that are not parameters, results or constants, plus
        arena workspaces (what XLA reports as `temp_size_in_bytes`)."""
        return sum(f.temporaries_size for f in self.functions.values())

    def describe_slot(self, slot_id: int) -> str:
        """Where a slot lives: `offset 256 live [1, 3]`, `separate`, `constant offset 0`."""
        if slot_id in self.constant_offsets:
            return f"constant offset {self.constant_offsets[slot_id]}"
        live = self.intervals[slot_id]
        for arena in self.functions.values():
            if slot_id in arena.elsewhere:
                return f"{arena.elsewhere[slot_id]} live [{live.start}, {live.end}]"
            if slot_id in arena.separate:
                return f"separate live [{live.start}, {live.end}]"
            if slot_id in arena.offsets:
                reuse = f" reuses slot {arena.reuses[slot_id]}" if slot_id in arena.reuses else ""
                return f"offset {arena.offsets[slot_id]} live [{live.start}, {live.end}]{reuse}"
        raise KeyError(slot_id)

    def offset_of(self, slot_id: int) -> int | None:
        """The slot's offset in its function's arena (None if not in an arena)."""
        for arena in self.functions.values():
            if slot_id in arena.offsets:
                return arena.offsets[slot_id]
        return None


def planned_bytes(slot: BufferSlot, rows: int | None) -> int | None:
    """The slot's bytes, with dynamic dims at `rows` when given."""
    if slot.byte_size is not None or rows is None:
        return slot.byte_size
    assert isinstance(slot.value.type, TensorType)
    count = 1
    for dim in slot.value.type.get_shape():
        count *= rows if dim == DYNAMIC_INDEX else dim
    return count * byte_width(slot.value.type.get_element_type())


UPDATES = (ops.DynamicUpdateSliceOp, ops.ScatterOp)
"""Ops whose result is their operand with some elements replaced or combined."""


def _reads_pointwise(item: WorkItem, value: SSAValue) -> bool:
    """Whether every member that reads `value`, directly or through other members, is
    pointwise in it: then output element i depends only on element i of `value`. A
    `dynamic_update_slice` or `scatter` is, in its operand (result element i is operand
    element i, replaced or combined with update elements), when its other operands do not
    read `value`."""
    tainted = {value}
    for member in item.members:  # program order: producers before consumers
        if any(operand in tainted for operand in member.operands):
            updates = isinstance(member, UPDATES) and not any(
                operand in tainted for operand in member.operands[1:]
            )
            if not (updates or isinstance(member, POINTWISE)):
                return False
            tainted.update(member.results)
    return True


def _yielded_by_loop(value: SSAValue) -> bool:
    """Whether a loop region yields `value`: it is copied into a carried buffer after the
    region's last work item, so that item may be the last to read it and yet must not
    overwrite it."""
    return any(
        isinstance(use.operation, ops.YieldOp)
        and isinstance(use.operation.parent_op(), ops.LOOP_OPS)
        for use in value.uses
    )


def _donated_parameter(slot: BufferSlot) -> bool:
    """A parameter the caller donates (only parameters are), not also returned."""
    return slot.role.donated and not slot.role.output


def _in_place_pairs(
    schedule: SchedulePlan,
    buffers: BufferPlan,
    liveness: Liveness,
    sizes: dict[int, int],
    host: bool,
    donate: bool,
) -> dict[int, int]:
    """Output slot → input slot whose buffer it takes over (see the module docstring)."""
    reuses: dict[int, int] = {}
    taken: set[int] = set()
    for item in schedule.work_items:
        if item.kind not in IN_PLACE_KINDS:
            continue
        product = item.contraction
        if (
            host
            and isinstance(product, ops.DotGeneralOp)
            and accumulates_in_output(product, item.root)
        ):
            continue  # its output is zeroed before the epilogue reads an input
        out = buffers.get_slot(item.outputs[0])
        if out is None or out.id not in sizes or out.role.input or out.role.constant:
            continue
        inputs = list(item.inputs)
        if donate and out.role.output:  # a donated array first: it becomes the result
            inputs.sort(key=lambda v: not _donated_parameter(buffers.get_slot(v) or out))
        for value in inputs:
            source = buffers.get_slot(value)
            if (
                source is None
                or source.id in taken
                or source.id not in sizes
                or not (source.is_temporary or _donated_parameter(source))
                or isinstance(source.producer, ops.LOOP_OPS)
                or _yielded_by_loop(value)
                or liveness.intervals[source.id].end != item.id
                or (item.parent is not None and liveness.intervals[source.id].start <= item.parent)
                or sizes[source.id] != sizes[out.id]  # same count, so same element width
                or not _reads_pointwise(item, value)
            ):
                continue
            reuses[out.id] = source.id
            taken.add(source.id)
            break
    return reuses


def _host_arena_slots(
    arena: FunctionArena, owned: list[BufferSlot], buffer_of: dict[int, int]
) -> list[BufferSlot]:
    """The slots of the CPU arena: the temporaries, but those a result takes over in place
    (they live in its out-parameter, `in_outputs`). Records where the others live."""
    result_of = {buffer_of[s.id]: s.id for s in owned if s.role.output and buffer_of[s.id] != s.id}
    kept = []
    for slot in owned:
        if slot.role.output:
            arena.elsewhere[slot.id] = "out-parameter"
        elif slot.role.input:
            arena.elsewhere[slot.id] = "parameter"
        elif slot.role.constant:
            arena.elsewhere[slot.id] = "constant global"
        elif buffer_of[slot.id] in result_of:
            arena.in_outputs[slot.id] = result_of[buffer_of[slot.id]]
            arena.elsewhere[slot.id] = f"in the out-parameter of slot {arena.in_outputs[slot.id]}"
        else:
            kept.append(slot)
    return kept


def _output_hosts(
    arena: FunctionArena,
    owned: list[BufferSlot],
    buffer_of: dict[int, int],
    liveness: Liveness,
    sizes: dict[int, int],
) -> dict[int, OutputArena]:
    """(CPU) The out-parameters that can hold scratch, by result slot: a static result a
    work item of the function's body computes (not a parameter, a constant or a loop's
    carried value), free until the first work item that writes it or a temporary it takes
    over in place (`in_outputs`)."""
    taken_over: dict[int, int] = {}  # result → where the first temporary it takes over starts
    for temporary, result in arena.in_outputs.items():
        start = liveness.intervals[temporary].start
        taken_over[result] = min(start, taken_over.get(result, start))
    hosts: dict[int, OutputArena] = {}
    for slot in owned:
        if not slot.role.output or slot.role.input or slot.role.constant:
            continue
        if isinstance(slot.producer, ops.LOOP_OPS) or not slot.value.type.has_static_shape():  # type: ignore[attr-defined]
            continue
        start = liveness.intervals[slot.id].start
        first = min(start, taken_over.get(slot.id, start))
        if first > 0 and buffer_of[slot.id] == slot.id:
            hosts[slot.id] = OutputArena(sizes[slot.id], first)
    return hosts


HOST_TRIES = 16
"""(CPU) The most out-parameters a temporary is tried in (the smallest it fits in first)."""

HOST_BUFFERS = 256
"""(CPU) The most temporaries one out-parameter holds."""

PLACEMENT_VISITS = HOST_TRIES * (HOST_BUFFERS + 1)
"""(CPU) The most visits `_place_in_outputs` makes per temporary."""


def _place_in_outputs(
    candidates: list[BufferInterval],
    hosts: dict[int, OutputArena],
    alignment: int,
    meter: WorkMeter,
) -> dict[int, int]:
    """(CPU) Place temporaries in the out-parameters' arenas, largest first, each at the
    lowest aligned offset of the smallest host it fits in (of the `HOST_TRIES` smallest
    large enough that are free while it lives, each holding at most `HOST_BUFFERS`) beside
    the temporaries placed there that are live with it; buffer id → its host's result
    slot, for those placed."""
    placed: dict[int, list[BufferInterval]] = {result: [] for result in hosts}
    chosen: dict[int, int] = {}
    by_size = sorted(hosts.items(), key=lambda kv: (kv[1].capacity, kv[0]))
    capacities = [host.capacity for _, host in by_size]
    for buffer in sorted(candidates, key=lambda b: (-b.size, b.start, b.id)):
        tries = 0
        for result, host in by_size[bisect_left(capacities, buffer.size) :]:
            if buffer.end >= host.first_touch or len(placed[result]) >= HOST_BUFFERS:
                continue
            if tries == HOST_TRIES:
                break
            tries += 1
            meter.visit(1 + len(placed[result]))
            live = sorted(
                (
                    other
                    for other in placed[result]
                    if other.start <= buffer.end and buffer.start <= other.end
                ),
                key=lambda other: host.offsets[other.id],
            )
            offset = 0
            for other in live:
                if offset + buffer.size <= host.offsets[other.id]:
                    break
                offset = max(offset, align_up(host.offsets[other.id] + other.size, alignment))
            if offset + buffer.size > host.capacity:
                continue
            host.offsets[buffer.id] = offset
            host.size = max(host.size, offset + buffer.size)
            placed[result].append(buffer)
            chosen[buffer.id] = result
            break
    return chosen


def _workspace_interval(
    term: WorkspaceTerm, nodes: list[int], liveness: Liveness, schedule: SchedulePlan
) -> LiveInterval:
    start, end = min(nodes), max(nodes)
    for node in nodes:
        parent = schedule.work_items[node].parent
        while parent is not None:
            start, end = min(start, parent), max(end, liveness.loop_end[parent])
            parent = schedule.work_items[parent].parent
    return LiveInterval(start, end)


def plan_arena(
    schedule: SchedulePlan,
    buffers: BufferPlan,
    memory: MemorySpacePlan,
    liveness: Liveness,
    workspaces: WorkspacePlan,
    options: PlanOptions,
    meter: WorkMeter | None = None,
) -> ArenaPlan:
    meter = meter or WorkMeter()
    alignment = options.arena_alignment
    rows = max(options.rows) if options.rows else None
    functions = {name: FunctionArena(name) for name in liveness.function_range}
    constant_offsets: dict[int, int] = {}
    constant_size = 0
    sizes: dict[int, int] = {}
    for assignment in memory.assignments:
        meter.visit()
        slot = buffers.slots[assignment.slot_id]
        if assignment.space is MemorySpace.DEVICE_CONSTANT:
            constant_offsets[slot.id] = constant_size
            constant_size += align_up(slot.byte_size or 0, alignment)
        elif (size := planned_bytes(slot, rows)) is None:
            functions[slot.function_name].separate.append(slot.id)
        else:
            sizes[slot.id] = size
    host = not options.planned_for.device_memory  # the caller's arrays are not the arena's
    donate = host and options.donate
    reuses = _in_place_pairs(schedule, buffers, liveness, sizes, host, donate)
    if host:  # of a temporary by a temporary or a result, of a donated parameter by a result
        reuses = {
            out: source
            for out, source in reuses.items()
            if buffers.slots[out].value.type == buffers.slots[source].value.type
            and (
                buffers.slots[source].is_temporary
                or (
                    donate
                    and _donated_parameter(buffers.slots[source])
                    and buffers.slots[out].role.output
                )
            )
        }

    for name, arena in functions.items():
        owned = [s for s in buffers.slots if s.function_name == name and s.id in sizes]
        buffer_of = {s.id: reuses.get(s.id, s.id) for s in owned}
        while any(buffer_of[b] != b for b in buffer_of.values()):  # chains of reuse
            buffer_of = {s: buffer_of[b] for s, b in buffer_of.items()}
        hosts: dict[int, OutputArena] = {}
        if host:
            arena.donors = {
                s.id: buffer_of[s.id]
                for s in owned
                if s.role.output
                and buffer_of[s.id] != s.id
                and buffers.slots[buffer_of[s.id]].role.input
            }
            everything = owned
            owned = _host_arena_slots(arena, owned, buffer_of)
            hosts = _output_hosts(arena, everything, buffer_of, liveness, sizes)
            buffer_of = {s.id: buffer_of[s.id] for s in owned}
        spans: dict[int, LiveInterval] = {}
        for slot in owned:
            meter.visit()
            span, root = liveness.intervals[slot.id], buffer_of[slot.id]
            old = spans.get(root, span)
            spans[root] = LiveInterval(min(old.start, span.start), max(old.end, span.end))
        problem = [BufferInterval(b, i.start, i.end, sizes[b]) for b, i in spans.items()]
        static = {buffer_of[s.id] for s in owned if s.value.type.has_static_shape()}  # type: ignore[attr-defined]
        moved = _place_in_outputs([p for p in problem if p.id in static], hosts, alignment, meter)
        problem = [p for p in problem if p.id not in moved]
        arena.output_arenas = {r: h for r, h in hosts.items() if h.offsets}
        for slot, root in buffer_of.items():
            if root in moved:  # every slot of a placed buffer, at its offset
                result, output = moved[root], hosts[moved[root]]
                output.offsets[slot] = output.offsets[root]
                arena.elsewhere[slot] = (
                    f"in the out-parameter of slot {result} at byte {output.offsets[root]}"
                )
        buffer_of = {s: b for s, b in buffer_of.items() if b not in moved}
        not_temporary = {buffer_of[s.id] for s in owned if not s.is_temporary and s.id in buffer_of}
        temporaries = [p for p in problem if p.id not in not_temporary]
        workspace_ids: list[tuple[WorkspaceTerm, int, LiveInterval]] = []
        for term in workspaces.terms:
            nodes = [n for n in term.nodes if schedule.work_items[n].function == name]
            if term.arena and nodes:
                interval = _workspace_interval(term, nodes, liveness, schedule)
                buffer_id = len(buffers.slots) + len(workspace_ids)
                problem.append(BufferInterval(buffer_id, interval.start, interval.end, term.bytes))
                temporaries.append(problem[-1])
                workspace_ids.append((term, buffer_id, interval))
        result = pack(
            problem,
            alignment=alignment,
            budget_ms=options.pack_budget_ms,
            workers=options.pack_workers,
        )
        meter.visit(result.work)
        placement = result.placement
        if options.check_arena:
            check_placement(problem, placement, alignment)
        if placement.size > ops.ADDRESSABLE_BYTES:
            location = owned[0].function.location if owned else None
            raise AccyError(
                f"the arena of @{name} needs {placement.size} bytes; accy addresses at most "
                f"{ops.ADDRESSABLE_BYTES} bytes (2**48) per arena",
                location,
            )
        arena.size, arena.lower_bound = placement.size, placement.lower_bound
        arena.packer_sizes = dict(result.packer_sizes)
        arena.offsets = {s: placement.offsets[b] for s, b in buffer_of.items()}
        arena.reuses = {s: b for s, b in buffer_of.items() if s != b}
        arena.workspaces = [
            WorkspaceBuffer(term, placement.offsets[buffer_id], interval)
            for term, buffer_id, interval in workspace_ids
        ]
        arena.temporaries = temporaries
        arena.temporaries_packing = (alignment, options.pack_budget_ms, options.pack_workers)
        if host:  # the arena holds temporaries only
            arena.packed_temporaries = placement.size
        meter.retain(len(owned))
    return ArenaPlan(
        functions=functions,
        intervals=liveness.intervals,
        constant_offsets=constant_offsets,
        constant_size=constant_size,
        planned_rows=rows,
    )


def _compute(manager: AnalysisManager, root: Operation, meter: WorkMeter) -> ArenaPlan:
    return plan_arena(
        manager.get(SCHEDULE, root),
        manager.get(BUFFERS, root),
        manager.get(MEMORY, root),
        manager.get(LIVENESS, root),
        manager.get(WORKSPACES, root),
        manager.options,
        meter,
    )


PACKINGS_PER_FUNCTION = 1
"""`plan_arena` packs each function's buffers once (the temporaries alone are packed only
when `FunctionArena.temporaries_size` is asked for, outside the plan's budget)."""


def packing_work(options: PlanOptions) -> int:
    """The most work one packing of `plan_arena` does (`pack.max_work` at the options'
    budget and workers: the greedy packers' visits and the searches' node and iteration
    caps), whatever its buffers."""
    return max_work(options.pack_budget_ms, workers=options.pack_workers)


def estimate_arena(census: Census, options: PlanOptions) -> WorkBounds:
    """One visit per assignment and per slot of each function (bounded by values), plus the
    packings' work: `PACKINGS_PER_FUNCTION` of `packing_work` per function, and there are at
    most as many functions as operations. The meter counts the work each packing reports
    (`PackResult.work`), so a budget too small for the packing search refuses the plan
    before it runs. On the CPU, placing temporaries in out-parameters makes at most
    `PLACEMENT_VISITS` visits per temporary (bounded by values)."""
    packings = checked_mul(PACKINGS_PER_FUNCTION, census.operations, packing_work(options))
    placements = checked_mul(census.values, PLACEMENT_VISITS)
    return WorkBounds(
        structural_visits=checked_add(census.values, census.values, packings, placements),
        retained_entries=checked_mul(2, census.values),
    )


ARENA = AnalysisDescriptor(
    name="accy-arena-plan",
    version=1,
    compute=_compute,
    estimate=estimate_arena,
)
