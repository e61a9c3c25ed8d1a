"""`accy.prepare`: run the preparation analyses on a module and expose their results.

    prep = accy.prepare(module)
    prep.schedule.work_items        # kernels in order
    prep.memory.assignment_for_value(value).space

The analyses run through one `AnalysisManager` charged to `budget` (unlimited when None):
shape/layout → fusion → schedule → buffers → memory spaces → workspace terms →
liveness → arena offsets.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from xdsl.dialects.builtin import ModuleOp

from accy.diagnostics import AccyError, wrong_type
from accy.passes.analysis import AnalysisManager, Budget
from accy.passes.arena_plan import ARENA, ArenaPlan
from accy.passes.buffers import BUFFERS, BufferPlan
from accy.passes.fusion import FUSION, FusionPlan
from accy.passes.memory import MEMORY, MemorySpacePlan
from accy.passes.options import (
    PlanOptions,
)
from accy.passes.schedule import SCHEDULE, SchedulePlan
from accy.passes.shapes import SHAPES, ShapeLayoutAnalysis
from accy.passes.shared_memory import SHARED_MEMORY, SharedMemoryPlan
from accy.passes.workspace.sizing import WORKSPACES
from accy.passes.workspace.terms import WorkspacePlan


@dataclass(frozen=True)
class Preparation:
    """Every planning decision about one module."""

    module: ModuleOp
    manager: AnalysisManager
    shapes: ShapeLayoutAnalysis
    fusion: FusionPlan
    schedule: SchedulePlan
    buffers: BufferPlan
    memory: MemorySpacePlan
    workspaces: WorkspacePlan
    arena: ArenaPlan
    shared_memory: SharedMemoryPlan

    @property
    def budget(self) -> Budget:
        return self.manager.budget


def prepare(module: ModuleOp, *, budget: Budget | None = None, **options: Any) -> Preparation:
    """Plan `module` with the plan options `options` (the fields of `PlanOptions`, defined
    there once: `rows`, `sm_count`, `families`, `alignment`, `pack_budget_ms`,
    `pack_workers`, `constant_capacity`, `shared_limit`, `check_arena`, `donate`, `target`).
    Raises `WorkBudgetExhausted` when an analysis does not fit the budget,
    `MissingOutputWriter` when a result has no writer, `WorkspaceError` when a family's
    workspace expression fails, `SharedMemoryExceeded` when a kernel needs more shared
    memory per block than `shared_limit`, `AccyError` for an unknown or invalid option
    and `AccyTypeError` for a `module` that is not a module or an option of the wrong type.
    `target` (`cpu`, the default everywhere, or `cuda`: `accy.targets`) is what the plan is
    for."""
    from accy.passes.planned_form import is_planned

    if not isinstance(module, ModuleOp):
        expected = "an accy module (from accy.parse, Builder.finish or accy.import_stablehlo)"
        raise wrong_type("accy.prepare", "module", expected, module)
    if budget is not None and not isinstance(budget, Budget):
        raise wrong_type("accy.prepare", "budget", "an accy.Budget or None", budget)

    if is_planned(module):
        raise AccyError(
            "the module is already planned (accy-plan ran on it); accy.compile and accy-run "
            "take it as it is"
        )
    options = PlanOptions.of(**options)
    manager = AnalysisManager(budget, options)
    return Preparation(
        module=module,
        manager=manager,
        memory=manager.get(MEMORY, module),
        shapes=manager.get(SHAPES, module),
        fusion=manager.get(FUSION, module),
        schedule=manager.get(SCHEDULE, module),
        buffers=manager.get(BUFFERS, module),
        workspaces=manager.get(WORKSPACES, module),
        arena=manager.get(ARENA, module),
        shared_memory=manager.get(SHARED_MEMORY, module),
    )
