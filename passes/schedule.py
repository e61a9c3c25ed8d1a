"""Schedule plan: the work items (kernels) of each function, in a valid order.

Every fusion group becomes one work item; its kind is named after its root (a group that
computes a dot_general or a convolution with its epilogue is a `dot` or a `convolution`;
one that computes two products, a softmax between them, an `attention`). An
`accy.iterate` or `accy.while` is a work item of kind `iterate` (the host loop)
immediately followed by the work items of its regions (a while's cond, then its body),
whose `parent` is the loop's id.

Invariants: ids are 0, 1, 2, … in schedule order across the module; a work item comes
after every work item that produces a value it reads (program order of the roots is a
topological order because members precede their root); `outputs` are the values the item
leaves in storage.
"""

from __future__ import annotations

from dataclasses import dataclass

from accy.dialects import accy as ops
from accy.dialects.plan import WorkKind
from accy.passes.analysis import (
    AnalysisDescriptor,
    AnalysisManager,
    Census,
    WorkBounds,
    WorkMeter,
    checked_add,
)
from accy.passes.fusion import FUSION, FusionGroup, attention_products, contraction_of
from accy.passes.options import PlanOptions
from xdsl.dialects import func
from xdsl.ir import Operation, SSAValue

KIND_OF_ROOT: tuple[tuple[type[Operation] | tuple[type[Operation], ...], WorkKind], ...] = (
    (ops.BroadcastInDimOp, WorkKind.BROADCAST),
    (ops.ReshapeOp, WorkKind.RESHAPE),
    (ops.TransposeOp, WorkKind.TRANSPOSE),
    (ops.ReduceOp, WorkKind.REDUCE),
    (ops.ScanOp, WorkKind.SCAN),
    (ops.DotGeneralOp, WorkKind.DOT),
    (ops.ScatterOp, WorkKind.SCATTER),
    (ops.FoldOp, WorkKind.FOLD),
    (ops.SortOp, WorkKind.SORT),
    ((ops.ReduceWindowOp, ops.SelectAndScatterOp), WorkKind.WINDOW),
    (ops.ConvolutionOp, WorkKind.CONVOLUTION),
    ((ops.IterateOp, ops.WhileOp), WorkKind.ITERATE),
)


def kind_of(root: Operation) -> WorkKind:
    for op_type, kind in KIND_OF_ROOT:
        if isinstance(root, op_type):
            return kind
    return WorkKind.ELEMENTWISE


@dataclass(frozen=True)
class WorkItem:
    """One kernel launch (or, for `iterate`, one host loop)."""

    id: int
    kind: WorkKind
    root: Operation
    members: tuple[Operation, ...]
    outputs: tuple[SSAValue, ...]
    function: str
    parent: int | None = None

    @property
    def contraction(self) -> ops.DotGeneralOp | ops.ConvolutionOp | None:
        """The dot_general or convolution the item computes (its root, or the product
        whose epilogue the root ends), else None."""
        return contraction_of(self.members)

    @property
    def head(self) -> Operation:
        """The op the item is named after: its contraction, else its root."""
        return self.contraction or self.root

    @property
    def inputs(self) -> tuple[SSAValue, ...]:
        """Values read from storage: operands of members produced outside the group."""
        inside = set(self.members)
        seen: dict[SSAValue, None] = {}
        for member in self.members:
            for operand in member.operands:
                owner = operand.owner
                if not (isinstance(owner, Operation) and owner in inside):
                    seen.setdefault(operand, None)
        return tuple(seen)


@dataclass(frozen=True)
class SchedulePlan:
    work_items: tuple[WorkItem, ...]

    def work_item_count(self) -> int:
        return len(self.work_items)

    def item_of_root(self, root: Operation) -> WorkItem | None:
        return next((w for w in self.work_items if w.root is root), None)


def _function_of(op: Operation) -> str:
    current: Operation | None = op
    while current is not None and not isinstance(current, func.FuncOp):
        current = current.parent_op()
    return current.sym_name.data if current is not None else "<unknown>"


def compute_schedule(manager: AnalysisManager, root: Operation, meter: WorkMeter) -> SchedulePlan:
    fusion = manager.get(FUSION, root)
    items: list[WorkItem] = []
    loops: dict[Operation, int] = {}
    for group in fusion.groups:
        meter.visit()
        parent = loops.get(group.root.parent_op())  # type: ignore[arg-type]
        items.append(_work_item(len(items), group, _function_of(group.root), parent))
        meter.retain()
        if isinstance(group.root, ops.LOOP_OPS):
            loops[group.root] = items[-1].id
    return SchedulePlan(tuple(items))


def _work_item(id: int, group: FusionGroup, function: str, parent: int | None) -> WorkItem:
    return WorkItem(
        id=id,
        kind=(
            WorkKind.ATTENTION
            if attention_products(group.members)
            else kind_of(contraction_of(group.members) or group.root)
        ),
        root=group.root,
        members=group.members,
        outputs=tuple(group.root.results),
        function=function,
        parent=parent,
    )


def estimate_schedule(census: Census, _options: PlanOptions) -> WorkBounds:
    return WorkBounds(
        structural_visits=checked_add(census.operations, 1),
        retained_entries=census.operations,
    )


SCHEDULE = AnalysisDescriptor(
    name="accy-schedule-plan",
    version=1,
    compute=compute_schedule,
    estimate=estimate_schedule,
)
