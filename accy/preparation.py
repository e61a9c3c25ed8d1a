"""`accy.prepare`: run the preparation analyses on a module and expose their results.

    prep = accy.prepare(module)
    prep.schedule.work_items        # kernels in order
    prep.memory.assignment_for_value(value).space

The analyses run through one `AnalysisManager` charged to `budget` (unlimited when None):
shape/layout → fusion → schedule → buffers → memory spaces → workspace terms →
liveness → arena offsets.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from xdsl.dialects.builtin import ModuleOp

from accy.diagnostics import AccyError
from accy.passes.analysis import AnalysisManager, Budget
from accy.passes.arena_plan import ARENA, ArenaPlan
from accy.passes.buffers import BUFFERS, BufferPlan
from accy.passes.fusion import FUSION, FusionPlan
from accy.passes.memory import MEMORY, MemorySpacePlan
from accy.passes.options import (
    DEFAULT_ALIGNMENT,
    DEFAULT_CONSTANT_CAPACITY,
    DEFAULT_PACK_BUDGET_MS,
    DEFAULT_SHARED_LIMIT,
    DEFAULT_SM_COUNT,
    PlanOptions,
)
from accy.passes.schedule import SCHEDULE, SchedulePlan
from accy.passes.shapes import SHAPES, ShapeLayoutAnalysis
from accy.passes.shared_memory import SHARED_MEMORY, SharedMemoryPlan
from accy.passes.workspace.sizing import WORKSPACES, WorkspacePlan


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


def prepare(
    module: ModuleOp,
    *,
    budget: Budget | None = None,
    rows: Sequence[int] = (),
    sm_count: int = DEFAULT_SM_COUNT,
    families: Sequence[str | Path] = (),
    alignment: int = DEFAULT_ALIGNMENT,
    pack_budget_ms: float = DEFAULT_PACK_BUDGET_MS,
    pack_workers: int = 1,
    constant_capacity: int = DEFAULT_CONSTANT_CAPACITY,
    shared_limit: int = DEFAULT_SHARED_LIMIT,
    check_arena: bool = False,
    target: str = "cuda",
) -> Preparation:
    """Plan `module`. Raises `WorkBudgetExhausted` when an analysis does not fit the
    budget, `MissingOutputWriter` when a result has no writer, `WorkspaceError` when
    a family's workspace expression fails and `SharedMemoryExceeded` when a kernel needs
    more shared memory per block than `shared_limit`. `target` (`cuda` or `cpu`) is what
    the plan is for: the CPU target plans no kernel-family workspaces."""
    from accy.passes.planned_form import is_planned

    if is_planned(module):
        raise AccyError(
            "the module is already planned (accy-plan ran on it); accy.compile and accy-run "
            "take it as it is"
        )
    options = PlanOptions(
        constant_capacity=constant_capacity,
        shared_limit=shared_limit,
        rows=tuple(rows),
        sm_count=sm_count,
        families=tuple(Path(f) for f in families),
        alignment=alignment,
        pack_budget_ms=pack_budget_ms,
        pack_workers=pack_workers,
        check_arena=check_arena,
        target=target,
    )
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
