"""Plan reports: the decisions of the planning analyses as plain-text tables.

Each report takes a module and the analysis manager that planned it (computing what is
missing) and returns text; `accy-opt --accy-report=NAME` prints it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block

from accy.passes.analysis import AnalysisManager
from accy.passes.arena import align_up
from accy.passes.arena_plan import ARENA, planned_bytes
from accy.passes.buffers import BUFFERS, value_names
from accy.passes.fusion import FUSION
from accy.passes.memory import MEMORY
from accy.passes.schedule import SCHEDULE
from accy.passes.shapes import SHAPES
from accy.passes.shared_memory import SHARED_MEMORY
from accy.passes.workspace.sizing import WORKSPACES


def table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """Columns padded to their widest cell, separated by two spaces."""
    cells = [list(map(str, header))] + [list(map(str, row)) for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip() for row in cells
    )


def memory_report(module: ModuleOp, manager: AnalysisManager) -> str:
    plan = manager.get(MEMORY, module)
    numbers = {}
    rows = []
    for a in plan.assignments:
        slot = plan.buffers.slots[a.slot_id]
        if slot.function not in numbers:
            numbers[slot.function] = value_names(slot.function)
        rows.append(
            (
                a.slot_id,
                f"@{slot.function_name}",
                f"%{numbers[slot.function][a.value]}",
                a.role,
                a.space.value,
                a.access.value,
                a.transfer.value,
                "?" if a.byte_size is None else a.byte_size,
                a.output_source or "-",
            )
        )
    summary = (
        f"memory-space plan: {plan.assignment_count()} slots, "
        f"{plan.total_static_bytes} static bytes, {plan.dynamic_slot_count} dynamic, "
        f"{plan.elided_value_count} elided; device_global {plan.device_global_slot_count}, "
        f"device_constant {plan.device_constant_slot_count}, host inputs "
        f"{plan.host_input_transfer_count}, host outputs {plan.host_output_transfer_count}"
    )
    header = ("slot", "function", "value", "role", "space", "access", "transfer", "bytes", "source")
    remarks = [f"remark: {text}" for _, text in plan.remarks]
    return "\n".join([summary, table(header, rows), *remarks])


def schedule_report(module: ModuleOp, manager: AnalysisManager) -> str:
    plan = manager.get(SCHEDULE, module)
    shared = manager.get(SHARED_MEMORY, module)
    families = manager.get(WORKSPACES, module).family_of
    rows = [
        (
            w.id,
            f"@{w.function}",
            w.kind.value,
            w.root.name,
            len(w.members),
            "-" if w.parent is None else w.parent,
            families.get(w.id, "-"),
            shared.bytes_of.get(w.id, 0),
        )
        for w in plan.work_items
    ]
    header = ("item", "function", "kind", "root", "ops", "in loop", "family", "cuda shared bytes")
    # The report is not told the target: shared memory is the CUDA kernels' (the plan and
    # the CUDA lowering agree on it), so both the limit and the column are labelled CUDA.
    return (
        f"schedule: {plan.work_item_count()} work item(s); CUDA target: shared memory limit "
        f"{shared.limit} bytes per block (the CPU target uses no shared memory)\n"
        + table(header, rows)
    )


def shapes_report(module: ModuleOp, manager: AnalysisManager) -> str:
    layouts = manager.get(SHAPES, module).layouts
    names: dict = {}
    rows = []
    for value, layout in layouts.items():
        function = _function_of(value)
        if function is None:
            continue
        if function not in names:
            names[function] = value_names(function)
        rows.append(
            (
                f"@{function.sym_name.data}",
                f"%{names[function][value]}",
                layout.element,
                "x".join("?" if d is None else str(d) for d in layout.shape) or "scalar",
                "?" if layout.byte_size is None else layout.byte_size,
                "[" + ", ".join("?" if s is None else str(s) for s in layout.strides) + "]",
            )
        )
    header = ("function", "value", "element", "shape", "bytes", "strides")
    return f"shapes: {len(rows)} value(s)\n" + table(header, rows)


def fusion_report(module: ModuleOp, manager: AnalysisManager) -> str:
    plan = manager.get(FUSION, module)
    rows = [
        (
            index,
            group.root.name,
            len(group.members),
            len(group.elided),
            ", ".join(m.name.removeprefix("accy.") for m in group.members),
        )
        for index, group in enumerate(plan.groups)
    ]
    header = ("group", "root", "ops", "elided values", "members")
    return (
        f"fusion: {len(plan.groups)} group(s), {len(plan.elided_values)} elided value(s)\n"
        + table(header, rows)
    )


def buffers_report(module: ModuleOp, manager: AnalysisManager) -> str:
    plan = manager.get(BUFFERS, module)
    names: dict = {}
    rows = []
    for slot in plan.slots:
        if slot.function not in names:
            names[slot.function] = value_names(slot.function)
        producer = "argument" if slot.producer is None else slot.producer.name
        size = "?" if slot.byte_size is None else slot.byte_size
        rows.append(
            (
                slot.id,
                f"@{slot.function_name}",
                f"%{names[slot.function][slot.value]}",
                producer,
                slot.role,
                size,
            )
        )
    header = ("slot", "function", "value", "producer", "role", "bytes")
    return (
        f"buffers: {plan.slot_count()} slot(s), {plan.total_static_bytes} static bytes, "
        f"{plan.elision_count()} elided value(s)\n" + table(header, rows)
    )


def _function_of(value) -> func.FuncOp | None:
    owner = value.owner
    op = owner.parent_op() if isinstance(owner, Block) else owner
    while op is not None and not isinstance(op, func.FuncOp):
        op = op.parent_op()
    return op


def workspaces_report(module: ModuleOp, manager: AnalysisManager) -> str:
    plan = manager.get(WORKSPACES, module)
    rows = [
        (
            t.family,
            t.name,
            t.bytes,
            "arena" if t.arena else "own",
            ", ".join(map(str, t.nodes)),
            t.max_node,
            "-" if t.rows is None else t.rows,
        )
        for t in plan.terms
    ]
    header = ("family", "workspace", "bytes", "where", "nodes", "max node", "rows")
    return f"workspaces: {len(plan.terms)} term(s)\n" + table(header, rows)


TEMPORARIES = (
    "buffers neither parameters, results nor constants, nor reused in place by a result, "
    "nor held in a result's out-parameter before it is written; workspaces included"
)
"""What the arena report's temporaries count: `FunctionArena.temporaries_size`, XLA's
`temp_size_in_bytes`. A temporary whose buffer a result takes over in place is that
result's buffer, and one that dies before a result is written may lie in that result's
out-parameter on the CPU (as XLA lets temporaries share an output's allocation), so
neither counts."""


def arena_report(module: ModuleOp, manager: AnalysisManager) -> str:
    plan = manager.get(ARENA, module)
    buffers = manager.get(BUFFERS, module)
    parts = []
    for name, arena in plan.functions.items():
        rows = []
        alignment = manager.options.arena_alignment
        total = 0
        for slot in (s for s in buffers.slots if s.function_name == name):
            live = plan.intervals[slot.id]
            where = re.sub(r" live \[\d+, \d+\]", "", plan.describe_slot(slot.id))
            size = planned_bytes(slot, plan.planned_rows)
            rows.append(
                (
                    slot.id,
                    slot.role,
                    where,
                    "?" if size is None else size,
                    f"[{live.start}, {live.end}]",
                )
            )
            if slot.id in arena.offsets and slot.id not in arena.reuses:
                total += align_up(size or 0, alignment)
        for w in arena.workspaces:
            rows.append(
                (
                    f"{w.term.family}.{w.term.name}",
                    "workspace",
                    f"offset {w.offset}",
                    w.term.bytes,
                    f"[{w.interval.start}, {w.interval.end}]",
                )
            )
            total += align_up(w.term.bytes, alignment)
        ratio = arena.size / arena.lower_bound if arena.lower_bound else 1.0
        dynamic = (
            f"dynamic slots planned at rows={plan.planned_rows}"
            if plan.planned_rows is not None
            else f"{len(arena.separate)} dynamic slot(s) allocated separately"
        )
        parts.append(
            f"arena of @{name}: {arena.size} bytes; lower bound {arena.lower_bound} bytes "
            f"(most bytes live at one work item); sum of aligned sizes {total} bytes; "
            f"size / lower bound {ratio:.3f}; temporaries alone would pack into "
            f"{arena.temporaries_size} bytes ({TEMPORARIES}); {dynamic}\n"
            + table(("buffer", "role", "placement", "bytes", "live"), rows)
        )
    parts.append(f"constant arena: {plan.constant_size} bytes")
    return "\n".join(parts)


REPORTS: dict[str, Callable[[ModuleOp, AnalysisManager], str]] = {
    "arena": arena_report,
    "buffers": buffers_report,
    "fusion": fusion_report,
    "memory": memory_report,
    "schedule": schedule_report,
    "shapes": shapes_report,
    "workspaces": workspaces_report,
}
