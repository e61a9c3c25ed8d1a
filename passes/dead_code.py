"""`accy-eliminate-dead-code`: erase the accy ops whose results no live op uses.

All accy ops are pure, so an op nobody reads does nothing observable. The planning
analyses already leave such ops out of the plan (`FusionPlan.dead`: no work item, no
slot) without changing the module, so `accy.prepare` and the `accy-plan-*` passes plan
the same program with or without this pass; the pass makes the IR say so too. It erases
what the fusion analysis calls dead (an `accy.iterate` with its body), then plans again,
until nothing is dead: a value used only in the body of a loop by an op found dead there
is dead once that op is gone. Values unused in a loop body and not yielded are dead.
"""

from __future__ import annotations

from dataclasses import dataclass

from accy.passes.analysis import AnalysisManager
from accy.passes.fusion import FUSION
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.passes import ModulePass


def erase_dead_code(module: ModuleOp) -> int:
    """Erase `module`'s dead accy ops (see the module docstring); the number erased."""
    manager = AnalysisManager()
    erased = 0
    while dead := manager.get(FUSION, module).dead:
        # Later ops first: an op is erased after every dead op that uses it.
        positions = program_positions(module)
        for op in sorted(dead, key=positions.__getitem__, reverse=True):
            op.detach()
            op.erase()
        erased += len(dead)
        manager.invalidate()
    return erased


def program_positions(root: Operation) -> dict[Operation, tuple[int, ...]]:
    """The ops nested in `root` by their path of indices from it (each op's index in its
    block, outermost first): program order, nesting included, in one walk."""
    positions: dict[Operation, tuple[int, ...]] = {}

    def visit(op: Operation, prefix: tuple[int, ...]) -> None:
        for region in op.regions:
            for block in region.blocks:
                for index, child in enumerate(block.ops):
                    positions[child] = path = (*prefix, index)
                    visit(child, path)

    visit(root, ())
    return positions


@dataclass(frozen=True)
class EliminateDeadCodePass(ModulePass):
    """Erases every accy op whose results no live op uses (an `accy.iterate` with its
    body; values unused in a loop body and not yielded), repeated until none is left.
    Invalidates the module's cached analyses when it erases anything."""

    name = "accy-eliminate-dead-code"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        from accy.passes.plan_passes import analysis_manager

        if erase_dead_code(op):
            analysis_manager(ctx, op).invalidate()
