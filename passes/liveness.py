"""Liveness: the work items over which each slot's buffer must hold its value.

Time is the schedule: work item ids. For each function, whose work items are the id
range [first, last] (a function without work items has the single time `first`):

- a slot is live from the first work item that writes it to the last that reads it;
- inputs are live from `first`; outputs until `last`; constants placed in device_global
  for the whole function (constants in device_constant are packed separately);
- inside an `accy.iterate` (the loop item and its body items, [loop, loop_end]) every
  iteration re-reads what the body reads: a value read in the body but written before the
  loop stays live until `loop_end`; the loop's carried buffers (its result slots, which
  the body's block arguments share) live over the whole loop, and so do the values the
  body yields (copied into the carried buffers after each iteration).

Invariants: `start <= end` for every interval; every slot of the buffer plan has one.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from accy.dialects import accy as ops
from accy.passes.analysis import (
    AnalysisDescriptor,
    AnalysisManager,
    Census,
    WorkBounds,
    WorkMeter,
    checked_add,
)
from accy.passes.buffers import BUFFERS, BufferPlan
from accy.passes.memory import written_slots
from accy.passes.options import PlanOptions
from accy.passes.schedule import SCHEDULE, SchedulePlan, WorkKind
from xdsl.ir import Operation


@dataclass(frozen=True)
class LiveInterval:
    """Work items `start..end` (both inclusive)."""

    start: int
    end: int


@dataclass(frozen=True)
class Liveness:
    intervals: dict[int, LiveInterval]
    """Slot id → interval."""
    function_range: dict[str, LiveInterval]
    """Function name → the ids of its work items."""
    loop_end: dict[int, int]
    """Iterate work item id → id of the last work item of its body (itself if empty)."""


def _loop_ends(schedule: SchedulePlan) -> dict[int, int]:
    ends: dict[int, int] = {}
    for item in schedule.work_items:
        if item.kind is WorkKind.ITERATE:
            ends[item.id] = item.id
        parent = item.parent
        while parent is not None:
            ends[parent] = item.id
            parent = schedule.work_items[parent].parent
    return ends


def _enclosing_loops(schedule: SchedulePlan, item_id: int) -> list[int]:
    loops = []
    parent = schedule.work_items[item_id].parent
    while parent is not None:
        loops.append(parent)
        parent = schedule.work_items[parent].parent
    return loops


def _function_ranges(schedule: SchedulePlan, buffers: BufferPlan) -> dict[str, LiveInterval]:
    ranges: dict[str, LiveInterval] = {}
    for item in schedule.work_items:
        old = ranges.get(item.function)
        ranges[item.function] = LiveInterval(old.start if old else item.id, item.id)
    next_time = len(schedule.work_items)
    for slot in buffers.slots:
        if slot.function_name not in ranges:
            ranges[slot.function_name] = LiveInterval(next_time, next_time)
    return ranges


def compute_liveness(
    schedule: SchedulePlan, buffers: BufferPlan, meter: WorkMeter | None = None
) -> Liveness:
    meter = meter or WorkMeter()
    loop_end = _loop_ends(schedule)
    functions = _function_ranges(schedule, buffers)
    first_write: dict[int, int] = {}
    last_use: dict[int, int] = defaultdict(lambda: -1)

    def read(slot_id: int, time: int, loops: list[int]) -> None:
        for loop in loops:  # re-read each iteration: live until the loop ends
            if first_write.get(slot_id, -1) < loop:
                time = max(time, loop_end[loop])
        last_use[slot_id] = max(last_use[slot_id], time)

    for item in schedule.work_items:
        meter.visit()
        loops = _enclosing_loops(schedule, item.id)
        for value in item.inputs:
            meter.visit()
            if (slot := buffers.get_slot(value)) is not None:
                read(slot.id, item.id, loops)
        for slot_id in written_slots(item, buffers):
            first_write.setdefault(slot_id, item.id)
            last_use[slot_id] = max(last_use[slot_id], item.id)
        if item.kind is WorkKind.ITERATE:
            _keep_loop_state_live(item.root, item.id, loop_end[item.id], buffers, read)

    intervals: dict[int, LiveInterval] = {}
    for slot in buffers.slots:
        meter.visit()
        whole = functions[slot.function_name]
        start = (
            whole.start
            if slot.role.input or slot.role.constant
            else first_write.get(slot.id, whole.start)
        )
        end = whole.end if slot.role.output or slot.role.constant else last_use[slot.id]
        intervals[slot.id] = LiveInterval(start, max(start, end))
        meter.retain()
    return Liveness(intervals, functions, loop_end)


def _keep_loop_state_live(loop: Operation, start: int, end: int, buffers: BufferPlan, read) -> None:
    """Carried buffers and yielded values (a while's condition too) live over the whole
    loop."""
    assert isinstance(loop, ops.LOOP_OPS)
    values = list(loop.results)
    for region in loop.regions:
        yielded = region.block.last_op
        values += list(yielded.operands) if yielded is not None else []
    for value in values:
        if (slot := buffers.get_slot(value)) is not None:
            read(slot.id, end, [])


def _compute(manager: AnalysisManager, root: Operation, meter: WorkMeter) -> Liveness:
    return compute_liveness(manager.get(SCHEDULE, root), manager.get(BUFFERS, root), meter)


def estimate_liveness(census: Census, _options: PlanOptions) -> WorkBounds:
    return WorkBounds(
        structural_visits=checked_add(census.operations, census.operands, census.values),
        retained_entries=census.values,
    )


LIVENESS = AnalysisDescriptor(
    name="accy-liveness",
    version=1,
    compute=_compute,
    estimate=estimate_liveness,
)
