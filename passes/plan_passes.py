"""Passes that run a planning analysis and write its result onto the IR as attributes,
so that FileCheck tests (and people) can read the plan in the program text.

Each pass takes its analysis from the module's `AnalysisManager` (shared by the passes of
one pipeline, and charged to its budget) and preserves every analysis: attributes are
not structure.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable
from dataclasses import dataclass
from typing import ClassVar
from weakref import WeakKeyDictionary

from accy.passes.analysis import AnalysisDescriptor, AnalysisManager
from accy.passes.buffers import BUFFERS, BufferPlan
from accy.passes.fusion import FUSION, FusionPlan
from accy.passes.memory import MEMORY, MemorySpacePlan
from accy.passes.schedule import SCHEDULE, SchedulePlan
from accy.passes.shapes import SHAPES, ShapeLayoutAnalysis
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, ModuleOp, StringAttr
from xdsl.ir import Attribute, BlockArgument, OpResult, SSAValue
from xdsl.passes import ModulePass

_MANAGERS: WeakKeyDictionary[ModuleOp, AnalysisManager] = WeakKeyDictionary()


def analysis_manager(module: ModuleOp) -> AnalysisManager:
    """The analysis manager of `module`, created on first use."""
    if module not in _MANAGERS:
        _MANAGERS[module] = AnalysisManager()
    return _MANAGERS[module]


def attach_analysis_manager(module: ModuleOp, manager: AnalysisManager) -> None:
    """Use `manager` (with its budget and options) for the passes run on `module`."""
    _MANAGERS[module] = manager


def annotate_value(value: SSAValue, key: str, text: str) -> None:
    """Attach `text` to the op defining `value` (an array for multi-result ops), or to the
    function argument attributes for a function argument."""
    if isinstance(value, OpResult):
        op = value.op
        if len(op.results) == 1:
            op.attributes[key] = StringAttr(text)
            return
        texts = list(op.attributes[key].data) if key in op.attributes else []  # type: ignore[attr-defined]
        texts += [StringAttr("")] * (len(op.results) - len(texts))
        texts[value.index] = StringAttr(text)
        op.attributes[key] = ArrayAttr(texts)
    elif isinstance(value, BlockArgument) and isinstance(
        function := value.block.parent_op(), func.FuncOp
    ):
        count = len(function.body.block.args)
        arg_attrs = (
            list(function.arg_attrs.data)
            if function.arg_attrs is not None
            else [DictionaryAttr({})] * count
        )
        entries: dict[str, Attribute] = dict(arg_attrs[value.index].data)
        entries[key] = StringAttr(text)
        arg_attrs[value.index] = DictionaryAttr(entries)
        function.arg_attrs = ArrayAttr(arg_attrs)


@dataclass(frozen=True)
class AnnotatingPass(ModulePass, ABC):
    """Runs one analysis and writes its result as `accy.*` attributes."""

    analysis: ClassVar[AnalysisDescriptor]
    preserves_all_analyses: ClassVar[bool] = True

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        result = analysis_manager(op).get(self.analysis, op)
        for value, key, text in self.annotations(result):
            annotate_value(value, key, text)

    @abstractmethod
    def annotations(self, result) -> Iterable[tuple[SSAValue, str, str]]: ...


@dataclass(frozen=True)
class PlanShapesPass(AnnotatingPass):
    """Annotates every op result with its byte size (`?` if dynamic) and strides."""

    name = "accy-plan-shapes"
    analysis = SHAPES

    def annotations(self, result: ShapeLayoutAnalysis):
        for value, layout in result.layouts.items():
            if isinstance(value, OpResult) or isinstance(
                value.owner.parent_op() if isinstance(value, BlockArgument) else None,
                func.FuncOp,
            ):
                size = "?" if layout.byte_size is None else str(layout.byte_size)
                strides = ", ".join("?" if s is None else str(s) for s in layout.strides)
                yield value, "accy.layout", f"{size} bytes, strides [{strides}]"


@dataclass(frozen=True)
class PlanFusionPass(AnnotatingPass):
    """Annotates every computing op with its fusion group; fused-away results say so."""

    name = "accy-plan-fusion"
    analysis = FUSION

    def annotations(self, result: FusionPlan):
        for index, group in enumerate(result.groups):
            for member in group.members:
                role = "root" if member is group.root else "elided"
                for value in member.results:
                    yield value, "accy.fusion", f"group {index} {role}"


@dataclass(frozen=True)
class PlanSchedulePass(AnnotatingPass):
    """Annotates every work item's root with its id and kind."""

    name = "accy-plan-schedule"
    analysis = SCHEDULE

    def annotations(self, result: SchedulePlan):
        for item in result.work_items:
            parent = "" if item.parent is None else f" in {item.parent}"
            for value in item.root.results:
                yield value, "accy.work_item", f"{item.id} {item.kind.value}{parent}"


@dataclass(frozen=True)
class PlanBuffersPass(AnnotatingPass):
    """Annotates every slot-holding value with its slot id, role and byte size."""

    name = "accy-plan-buffers"
    analysis = BUFFERS

    def annotations(self, result: BufferPlan):
        for slot in result.slots:
            size = "?" if slot.byte_size is None else str(slot.byte_size)
            yield slot.value, "accy.slot", f"slot {slot.id} {slot.role} {size} bytes"


@dataclass(frozen=True)
class PlanMemorySpacesPass(AnnotatingPass):
    """Annotates every slot-holding value with its memory-space assignment:
    `slot N SPACE ACCESS TRANSFER BYTES bytes [kernel N | alias N]`."""

    name = "accy-plan-memory-spaces"
    analysis = MEMORY

    def annotations(self, result: MemorySpacePlan):
        for assignment in result.assignments:
            yield assignment.value, "accy.memory", assignment.describe()


PLAN_PASSES: tuple[type[AnnotatingPass], ...] = (
    PlanShapesPass,
    PlanFusionPass,
    PlanSchedulePass,
    PlanBuffersPass,
    PlanMemorySpacesPass,
)
