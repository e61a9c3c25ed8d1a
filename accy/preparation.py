"""`accy.prepare`: run the preparation analyses on a module and expose their results.

    prep = accy.prepare(module)
    prep.schedule.work_items        # kernels in order
    prep.memory.assignment_for_value(value).space

The analyses run through one `AnalysisManager` charged to `budget` (unlimited when None):
shape/layout → fusion → schedule → buffers → memory spaces.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects.builtin import ModuleOp

from accy.passes.analysis import AnalysisManager, Budget
from accy.passes.buffers import BUFFERS, BufferPlan
from accy.passes.fusion import FUSION, FusionPlan
from accy.passes.memory import MEMORY, MemorySpacePlan
from accy.passes.options import DEFAULT_CONSTANT_CAPACITY, PlanOptions
from accy.passes.schedule import SCHEDULE, SchedulePlan
from accy.passes.shapes import SHAPES, ShapeLayoutAnalysis


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

    @property
    def budget(self) -> Budget:
        return self.manager.budget


def prepare(
    module: ModuleOp,
    *,
    budget: Budget | None = None,
    constant_capacity: int = DEFAULT_CONSTANT_CAPACITY,
) -> Preparation:
    """Plan `module`. Raises `WorkBudgetExhausted` when an analysis does not fit the
    budget and `MissingOutputWriter` when a result has no writer."""
    manager = AnalysisManager(budget, PlanOptions(constant_capacity=constant_capacity))
    return Preparation(
        module=module,
        manager=manager,
        memory=manager.get(MEMORY, module),
        shapes=manager.get(SHAPES, module),
        fusion=manager.get(FUSION, module),
        schedule=manager.get(SCHEDULE, module),
        buffers=manager.get(BUFFERS, module),
    )
