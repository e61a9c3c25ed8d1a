"""The plan a lowering executes: the analyses it reads, taken from the module's analysis
manager, so that what runs is exactly what was planned."""

from __future__ import annotations

from dataclasses import dataclass

from accy.passes.analysis import AnalysisManager
from accy.passes.arena_plan import ARENA, ArenaPlan
from accy.passes.buffers import BUFFERS, BufferPlan
from accy.passes.memory import MEMORY, MemorySpacePlan
from accy.passes.schedule import SCHEDULE, SchedulePlan
from accy.passes.workspace.sizing import WORKSPACES, WorkspacePlan
from xdsl.dialects.builtin import ModuleOp


@dataclass(frozen=True)
class LoweringPlan:
    schedule: SchedulePlan
    buffers: BufferPlan
    memory: MemorySpacePlan
    workspaces: WorkspacePlan
    arena: ArenaPlan
    sm_count: int
    """The multiprocessor count the workspaces were sized for (grids follow it)."""

    @classmethod
    def from_manager(cls, manager: AnalysisManager, module: ModuleOp) -> LoweringPlan:
        return cls(
            schedule=manager.get(SCHEDULE, module),
            buffers=manager.get(BUFFERS, module),
            memory=manager.get(MEMORY, module),
            workspaces=manager.get(WORKSPACES, module),
            arena=manager.get(ARENA, module),
            sm_count=manager.options.sm_count,
        )
