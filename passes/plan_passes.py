"""Passes that run a planning analysis and write its result onto the IR as attributes,
so that FileCheck tests (and people) can read the plan in the program text.

Each pass takes its analysis from the module's `AnalysisManager` (shared by the passes of
one pipeline, and charged to its budget) and preserves every analysis: attributes are
not structure.
"""

from __future__ import annotations

import weakref
from abc import ABC, abstractmethod
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from accy.passes.analysis import AnalysisManager
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, IntegerAttr, ModuleOp, StringAttr
from xdsl.ir import Attribute, Block, BlockArgument, OpResult, SSAValue
from xdsl.passes import ModulePass

ANNOTATIONS = (
    "accy.layout",
    "accy.fusion",
    "accy.work_item",
    "accy.slot",
    "accy.memory",
    "accy.arena",
)
"""The attributes the annotating passes write on ops: what the planned form states as IR
instead (it drops them from the ops it copies)."""

_PIPELINES: dict[int, tuple[weakref.ref[Context], dict[int, tuple[ModuleOp, AnalysisManager]]]]
_PIPELINES = {}
"""The analysis managers of each live pipeline `Context`, one per module: the state of one
pipeline run, dropped with its context (a weak reference; xDSL's `Context` is not
hashable, so it is keyed by identity)."""


def _managers(ctx: Context) -> dict[int, tuple[ModuleOp, AnalysisManager]]:
    key = id(ctx)
    entry = _PIPELINES.get(key)
    if entry is None or entry[0]() is not ctx:
        entry = (weakref.ref(ctx, lambda _, key=key: _PIPELINES.pop(key, None)), {})
        _PIPELINES[key] = entry
    return entry[1]


def analysis_manager(ctx: Context, module: ModuleOp) -> AnalysisManager:
    """The analysis manager the passes of `ctx`'s pipeline share on `module` (created on
    first use, with the default options): the state of one pipeline run."""
    managers = _managers(ctx)
    entry = managers.get(id(module))
    if entry is None or entry[0] is not module:
        entry = managers[id(module)] = (module, AnalysisManager())
    return entry[1]


def attach_analysis_manager(ctx: Context, module: ModuleOp, manager: AnalysisManager) -> None:
    """Use `manager` (with its budget and options) for the passes `ctx` runs on `module`."""
    _managers(ctx)[id(module)] = (module, manager)


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
    """Runs one analysis and writes its result as `accy.*` attributes.

    A pass with options gives them in `plan_options`; the module's manager plans with the
    pipeline's options and these (`configure_pass`: never an earlier pass's), dropping
    results planned under other options.
    """

    preserves_all_analyses: ClassVar[bool] = True

    def plan_options(self) -> dict[str, object]:
        return {}

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        manager = analysis_manager(ctx, op)
        manager.configure_pass(**self.plan_options())
        for value, key, text in self.annotations(manager, op):
            annotate_value(value, key, text)

    @abstractmethod
    def annotations(
        self, manager: AnalysisManager, module: ModuleOp
    ) -> Iterable[tuple[SSAValue, str, str]]: ...


def _size(byte_size: int | None) -> str:
    return "?" if byte_size is None else str(byte_size)


@dataclass(frozen=True)
class PlanShapesPass(AnnotatingPass):
    """Annotates every op result and function argument with its byte size (`?` if
    dynamic) and row-major strides."""

    name = "accy-plan-shapes"

    def annotations(self, manager, module):
        from accy.passes.shapes import SHAPES

        for value, layout in manager.get(SHAPES, module).layouts.items():
            if (
                isinstance(value, OpResult)
                or isinstance(value.owner, Block)
                and isinstance(value.owner.parent_op(), func.FuncOp)
            ):
                strides = ", ".join("?" if s is None else str(s) for s in layout.strides)
                yield value, "accy.layout", f"{_size(layout.byte_size)} bytes, strides [{strides}]"


@dataclass(frozen=True)
class PlanFusionPass(AnnotatingPass):
    """Annotates every computing op with its fusion group; fused-away results say so."""

    name = "accy-plan-fusion"

    def annotations(self, manager, module):
        from accy.passes.fusion import FUSION

        for index, group in enumerate(manager.get(FUSION, module).groups):
            for member in group.members:
                role = "root" if member is group.root else "elided"
                for value in member.results:
                    yield value, "accy.fusion", f"group {index} {role}"


@dataclass(frozen=True)
class PlanSchedulePass(AnnotatingPass):
    """Annotates every work item's root with its id and kind (and enclosing loop)."""

    name = "accy-plan-schedule"

    def annotations(self, manager, module):
        from accy.passes.schedule import SCHEDULE

        for item in manager.get(SCHEDULE, module).work_items:
            parent = "" if item.parent is None else f" in {item.parent}"
            for value in item.root.results:
                yield value, "accy.work_item", f"{item.id} {item.kind.value}{parent}"


@dataclass(frozen=True)
class PlanBuffersPass(AnnotatingPass):
    """Annotates every slot-holding value with its slot id, role and byte size."""

    name = "accy-plan-buffers"

    def annotations(self, manager, module):
        from accy.passes.buffers import BUFFERS

        for slot in manager.get(BUFFERS, module).slots:
            yield (
                slot.value,
                "accy.slot",
                f"slot {slot.id} {slot.role} {_size(slot.byte_size)} bytes",
            )


@dataclass(frozen=True)
class PlanMemorySpacesPass(AnnotatingPass):
    """Annotates every slot-holding value with its memory-space assignment:
    `slot N SPACE ACCESS TRANSFER BYTES bytes [kernel N | alias N]`.

    Options:
    - constant-capacity: bytes of constant memory per kernel module (default 65536);
      larger constants go to device_global with a remark.
    """

    name = "accy-plan-memory-spaces"

    constant_capacity: int | None = None

    def plan_options(self):
        return {"constant_capacity": self.constant_capacity}

    def annotations(self, manager, module):
        from accy.passes.memory import MEMORY

        for assignment in manager.get(MEMORY, module).assignments:
            yield assignment.value, "accy.memory", assignment.describe()


@dataclass(frozen=True)
class SizeWorkspacesPass(AnnotatingPass):
    """Sizes the workspaces of the kernel families the schedule runs and writes the terms
    onto the module: `accy.workspaces = ["reduce.split partials 4224 bytes arena nodes [3]"]`.

    Options:
    - rows: the plans (row counts) to size for; the widest term wins.
    - sm-count: the device's multiprocessor count (default 132, an H200).
    - families: a user family file, searched before the package's.
    - target: the target whose families run (default cpu, as everywhere).
    """

    name = "accy-size-workspaces"

    rows: tuple[int, ...] | None = None
    sm_count: int | None = None
    families: str | None = None
    target: str | None = None

    def plan_options(self):
        families = (Path(self.families),) if self.families else None
        return {
            "rows": self.rows,
            "sm_count": self.sm_count,
            "families": families,
            "target": self.target,
        }

    def annotations(self, manager, module):
        from accy.passes.workspace.sizing import WORKSPACES

        terms = manager.get(WORKSPACES, module).terms
        module.attributes["accy.workspaces"] = ArrayAttr([StringAttr(t.describe()) for t in terms])
        return ()


@dataclass(frozen=True)
class PlanArenaPass(AnnotatingPass):
    """Packs each function's device buffers into one arena. Every slot-holding value gets
    `accy.arena = "offset O live [a, b]"` (or `separate`, `constant offset O`, and
    `reuses slot N` for in-place reuse); every function gets `accy.arena_size`.

    Options:
    - alignment: byte alignment of every buffer (default the target's: 64 on the CPU, 256
      on CUDA).
    - pack-budget-ms: time the improvement search may spend per function (default 20).
    - pack-workers: processes for the exact sweeps when the budget is long (default 1; see
      `accy.passes.arena.race`: the result is reproducible for the same budget and workers).
    - rows: plan dynamic slots at the largest of these row counts (an upper bound);
      without rows they are separate allocations.
    - check: validate the placement (no overlap, alignment, coverage).
    - donate: (CPU) results take donated parameters' buffers over, so a call writes them
      into the caller's donated arrays (default false: the caller's arrays are never
      written).
    - target: the target planned for (default cpu, as everywhere): a device target's arena
      holds every device buffer, a host target's the temporaries.
    """

    name = "accy-plan-arena"

    alignment: int | None = None
    pack_budget_ms: int | float | None = None  # the pipeline syntax reads `20` as an int
    pack_workers: int | None = None
    rows: tuple[int, ...] | None = None
    check: bool = False
    donate: bool = False
    target: str | None = None

    def plan_options(self):
        return {
            "target": self.target,
            "alignment": self.alignment,
            "pack_budget_ms": None if self.pack_budget_ms is None else float(self.pack_budget_ms),
            "pack_workers": self.pack_workers,
            "rows": self.rows,
            "check_arena": self.check or None,
            "donate": self.donate or None,
        }

    def annotations(self, manager, module):
        from accy.passes.arena_plan import ARENA
        from accy.passes.buffers import BUFFERS

        plan = manager.get(ARENA, module)
        for function in module.walk():
            if isinstance(function, func.FuncOp) and function.sym_name.data in plan.functions:
                size = plan.functions[function.sym_name.data].size
                function.attributes["accy.arena_size"] = IntegerAttr(size, 64)
        for slot in manager.get(BUFFERS, module).slots:
            yield slot.value, "accy.arena", plan.describe_slot(slot.id)


PLAN_PASSES: tuple[type[AnnotatingPass], ...] = (
    PlanShapesPass,
    PlanFusionPass,
    PlanSchedulePass,
    PlanBuffersPass,
    PlanMemorySpacesPass,
    SizeWorkspacesPass,
    PlanArenaPass,
)
