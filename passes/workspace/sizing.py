"""Workspace sizing: the scratch buffers of the kernel families a plan runs. Ported from
the seed sizer (shared/seeds/metrale-memory-workspace.rs).

Every work item runs the first family of the registry whose kinds and condition match
(`accy.passes.families`: the target's families). Each (family, workspace) is one *term*:
one buffer serves every launch of that family, so its size is the largest value over the
family's work items, and it lists every work item that runs the family. Over several plans (several row counts)
the widest term wins (`widest`).

Names an expression may read: the function's named dims (`accy.dims = {d_model = 768}` on
the `func.func`), `n` (the plan's rows: the value bound to dynamic dims; for a static
function, the leading dim of its first parameter — the same for every work item of the
function), `k` (the work item's input width: the last dim of its root's first operand),
`kept` (the rows the work item's kernel keeps: a reduce's result elements, the product of
its kept dims — 1 for a full reduction; a scan's positions of the dims other than the
scanned one; a dynamic dim reads the plan's rows; bound only for reduce and scan items),
`width` (the positions folded per kept row: the product of a reduce's reduced dims, the size
of a scan's scanned dim; likewise), `accumulator` (the bytes of one accumulator of a
reduce, scan or dot: 8 for 64-bit element types, else 4; bound for those items only),
`sort_bytes` (a sort's scratch: `merge_sort.sort_scratch_offsets`) and `sm_count` (the
device's multiprocessor count). `n` and `kept` agree only where the work
item's rows are the function's leading rows (a 2-D row reduction of the first
parameter); a workspace per kept row must read `kept`. Any other name is an error naming
the family, the workspace and the name, at the work item's location — never 0.

Invariants: one term per (family, workspace), sorted by (family, name); `bytes` is the
maximum over the term's nodes; `nodes` are work-item ids in schedule order.
"""

from __future__ import annotations

from collections.abc import Sequence

from accy.dialects import accy as ops
from accy.passes.analysis import (
    AnalysisDescriptor,
    AnalysisManager,
    Census,
    WorkBounds,
    WorkMeter,
    checked_mul,
)
from accy.passes.families import FamilyEvaluationError, FamilyRegistry, UnknownNameError
from accy.passes.merge_sort import sort_scratch_offsets
from accy.passes.options import PlanOptions
from accy.passes.schedule import SCHEDULE, SchedulePlan, WorkItem
from accy.passes.workspace.terms import WorkspacePlan, WorkspaceTerm
from xdsl.dialects import func
from xdsl.dialects.builtin import DYNAMIC_INDEX, DictionaryAttr, IntegerAttr, TensorType
from xdsl.ir import Operation

from accy.diagnostics import AccyError


class WorkspaceError(AccyError):
    """A family's expression failed for a work item (unknown name, overflow, …)."""


def function_dims(function: func.FuncOp) -> dict[str, int]:
    """The named dims of a function (`accy.dims = {d_model = 768 : i64}`)."""
    attr = function.attributes.get("accy.dims")
    if attr is None:
        return {}
    if not isinstance(attr, DictionaryAttr) or not all(
        isinstance(v, IntegerAttr) for v in attr.data.values()
    ):
        raise AccyError(
            f"function @{function.sym_name.data}: accy.dims must be a dictionary of "
            "integers, e.g. {d_model = 768}",
            function.location,
        )
    return {name: v.value.data for name, v in attr.data.items()}  # type: ignore[union-attr]


def _is_dynamic(function: func.FuncOp) -> bool:
    return any(
        isinstance(t, TensorType) and not t.has_static_shape()
        for t in (*function.function_type.inputs, *function.function_type.outputs)
    )


def plan_rows(function: func.FuncOp, rows: int | None) -> int | None:
    """`n` for a function: `rows` for a dynamic function, else the leading dim of its
    first parameter (None when there is none)."""
    if _is_dynamic(function):
        return rows
    inputs = function.function_type.inputs.data
    if inputs and isinstance(inputs[0], TensorType) and inputs[0].get_num_dims() > 0:
        return inputs[0].get_shape()[0]
    return None


def input_width(item: WorkItem, rows: int | None) -> int | None:
    """`k`: the last dim of the first operand of the item's head (its root, or the
    product whose epilogue the root ends; a dynamic dim reads `rows`)."""
    head = item.head
    if not head.operands or not isinstance(head.operands[0].type, TensorType):
        return None
    shape = head.operands[0].type.get_shape()
    if not shape:
        return 1
    return rows if shape[-1] == DYNAMIC_INDEX else shape[-1]


def _folded(item: WorkItem) -> tuple[TensorType, set[int]] | None:
    """The operand type a reduce or scan work item folds and the dims it folds along (a
    reduce's reduced dims, a scan's scanned dim); None for other kinds."""
    root = item.root
    if isinstance(root, ops.ReduceOp):
        value, dims = root.operand, {int(d) for d in root.dimensions.get_values()}
    elif isinstance(root, ops.ScanOp):
        value, dims = root.operand, {root.dimension.value.data}
    else:
        return None
    return (value.type, dims) if isinstance(value.type, TensorType) else None


def _positions(item: WorkItem, rows: int | None, folded: bool) -> int | None:
    """The product of the folded dims (`folded`) or of the others, a dynamic dim reading
    `rows`; None where a dynamic dim has no rows, or for other kinds of work item."""
    found = _folded(item)
    if found is None:
        return None
    shape, dims = found
    count = 1
    for dim, size in enumerate(shape.get_shape()):
        if (dim in dims) != folded:
            continue
        if size == DYNAMIC_INDEX:
            if rows is None:
                return None
            size = rows
        count *= size
    return count


def kept_rows(item: WorkItem, rows: int | None) -> int | None:
    """`kept`: the rows the work item's kernel keeps, one per result element of a reduce
    (the product of its kept dims; 1 for a full reduction) or per position of a scan's
    dims other than the scanned one (see `_positions`)."""
    return _positions(item, rows, folded=False)


def folded_width(item: WorkItem, rows: int | None) -> int | None:
    """`width`: the positions the work item's kernel folds per kept row, the product of a
    reduce's reduced dims or the size of a scan's scanned dim (see `_positions`)."""
    return _positions(item, rows, folded=True)


ITEM_NAME_KINDS = {
    "kept": ("reduce", "scan"),
    "width": ("reduce", "scan"),
    "accumulator": ("reduce", "scan", "dot"),
}
"""The names bound for some work-item kinds only, and those kinds."""


def accumulator_bytes(item: WorkItem) -> int | None:
    """`accumulator`: the bytes of one accumulator of a reduce, scan or dot kernel (of its
    result's element type): 8 for 64-bit types (f64, i64, ui64), else 4 (f32 for f16/bf16,
    i32 for narrower integers and i1)."""
    if not isinstance(item.head, ops.ReduceOp | ops.ScanOp | ops.DotGeneralOp):
        return None
    element = item.head.results[0].type.get_element_type()  # type: ignore[attr-defined]
    return 8 if element.bitwidth == 64 else 4


def _function_of(op: Operation) -> func.FuncOp:
    current = op
    while not isinstance(current, func.FuncOp):
        parent = current.parent_op()
        assert parent is not None, "work items live in functions"
        current = parent
    return current


def workspace_terms(
    schedule: SchedulePlan,
    registry: FamilyRegistry,
    *,
    rows: int | None,
    sm_count: int,
    meter: WorkMeter | None = None,
) -> WorkspacePlan:
    """The terms of one plan (`rows` rows on a device of `sm_count` SMs)."""
    meter = meter or WorkMeter()
    terms: dict[tuple[str, str], WorkspaceTerm] = {}
    family_of: dict[int, str] = {}
    env_of_function: dict[func.FuncOp, dict[str, int]] = {}
    for item in schedule.work_items:
        meter.visit()
        function = _function_of(item.root)
        if function not in env_of_function:
            env = function_dims(function)
            if (n := plan_rows(function, rows)) is not None:
                env["n"] = n
            env["sm_count"] = sm_count
            env_of_function[function] = env
        env = dict(env_of_function[function])
        if (k := input_width(item, rows)) is not None:
            env["k"] = k
        if (kept := kept_rows(item, rows)) is not None:
            env["kept"] = kept
        if (width := folded_width(item, rows)) is not None:
            env["width"] = width
        if (accumulator := accumulator_bytes(item)) is not None:
            env["accumulator"] = accumulator
        if isinstance(item.root, ops.SortOp):
            env["sort_bytes"] = sort_scratch_offsets(item.root)[1]
        try:
            family = registry.select(item.kind.value, env, item)
            if family is None:
                continue
            sizes = family.workspace_bytes(env, item)
        except FamilyEvaluationError as error:
            hint = ""
            name = error.error.name if isinstance(error.error, UnknownNameError) else None
            kinds = ITEM_NAME_KINDS.get(name or "")
            if kinds is not None and item.kind.value not in kinds:
                listed = ", ".join(kinds[:-1]) + f" and {kinds[-1]}"
                hint = f"; `{name}` is defined for {listed} work items only"
            elif name in ("n", "k", "kept", "width") and _is_dynamic(function):
                what = {
                    "n": "`n` is the row count",
                    "k": "`k` (a dynamic dim here) is the row count",
                    "kept": "`kept` (a dynamic dim is kept here) needs the row count",
                    "width": "`width` (a dynamic dim is folded here) needs the row count",
                }[name]
                hint = (
                    f"; @{function.sym_name.data} has dynamic dims, so {what} to plan for: "
                    "give rows (accy.prepare(..., rows=[...]) or the pass option rows=...)"
                )
            raise WorkspaceError(f"{error}{hint}", item.root.location) from None
        family_of[item.id] = family.id
        for decl in family.workspaces:
            key = (family.id, decl.name)
            size = sizes[decl.name]
            old = terms.get(key)
            nodes = (old.nodes if old else ()) + (item.id,)
            widest = old is None or size > old.bytes
            terms[key] = WorkspaceTerm(
                family=family.id,
                name=decl.name,
                bytes=size if widest else old.bytes,  # type: ignore[union-attr]
                arena=decl.arena,
                nodes=nodes,
                max_node=item.id if widest else old.max_node,  # type: ignore[union-attr]
                rows=rows if family.sized_by_rows else None,
            )
            meter.retain()
    return WorkspacePlan(tuple(terms[k] for k in sorted(terms)), family_of)


def widest(plans: Sequence[WorkspacePlan]) -> WorkspacePlan:
    """One term per (family, workspace) over several plans: the largest bytes, with the
    nodes of the plan that needed them (the earlier plan on ties)."""
    by_key: dict[tuple[str, str], WorkspaceTerm] = {}
    family_of: dict[int, str] = {}
    for plan in plans:
        family_of.update(plan.family_of)
        for term in plan.terms:
            key = (term.family, term.name)
            if key not in by_key or term.bytes > by_key[key].bytes:
                by_key[key] = term
    return WorkspacePlan(tuple(by_key[k] for k in sorted(by_key)), family_of)


def compute_workspaces(
    manager: AnalysisManager, root: Operation, meter: WorkMeter
) -> WorkspacePlan:
    options = manager.options
    schedule = manager.get(SCHEDULE, root)
    registry = FamilyRegistry.load(options.families, target=options.target)
    plans = [
        workspace_terms(schedule, registry, rows=rows, sm_count=options.sm_count, meter=meter)
        for rows in (options.rows or (None,))
    ]
    return widest(plans)


def estimate_workspaces(census: Census, options: PlanOptions) -> WorkBounds:
    """One visit and at most one kept term per work item and plan."""
    plans = max(1, len(options.rows))
    return WorkBounds(
        structural_visits=checked_mul(census.operations, plans),
        retained_entries=checked_mul(census.operations, plans),
    )


WORKSPACES = AnalysisDescriptor(
    name="accy-workspace-terms",
    version=1,
    compute=compute_workspaces,
    estimate=estimate_workspaces,
)
