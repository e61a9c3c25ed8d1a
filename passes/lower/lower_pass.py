"""`accy-lower{target=cpu}`: replace the module's accy functions by upstream-only IR.

The pass reads the plan from the pipeline's analysis manager (`plan_passes.analysis_manager`,
preparing the module there, for the target, if it was not yet), builds the target's lowering of the whole
module and swaps it in. Targets are looked up in `TARGETS` (name → `lower(module,
manager) -> new module`); `cuda` is registered by `accy.passes.lower.cuda` when that module
exists.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass

from accy.passes.analysis import AnalysisManager
from accy.passes.lower.cpu import lower_cpu
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from accy.diagnostics import AccyError

TargetLowering = Callable[[ModuleOp, AnalysisManager], ModuleOp]

TARGETS: dict[str, TargetLowering] = {"cpu": lower_cpu}
"""Target name → its lowering. A target module registers itself here on import."""

OPTIONAL_TARGETS = {"cuda": "accy.passes.lower.cuda"}
"""Targets provided by modules that may not be present; imported on first use."""


def target_lowering(target: str) -> TargetLowering:
    """The lowering of `target`; a clear `AccyError` when it is unknown or missing."""
    if target not in TARGETS and target in OPTIONAL_TARGETS:
        try:
            module = importlib.import_module(OPTIONAL_TARGETS[target])
        except ModuleNotFoundError as error:
            if error.name != OPTIONAL_TARGETS[target]:
                raise
            raise AccyError(
                f"the {target.upper()} target is not available: it is added by "
                f"passes/lower/{target}.py ({OPTIONAL_TARGETS[target]}), which is not "
                "installed"
            ) from None
        lowering = getattr(module, "lower", None) or getattr(module, f"lower_{target}", None)
        if target not in TARGETS and lowering is not None:
            TARGETS[target] = lowering
    if target not in TARGETS:
        known = ", ".join(sorted(set(TARGETS) | set(OPTIONAL_TARGETS)))
        raise AccyError(f"unknown target '{target}' for accy-lower; known targets: {known}")
    return TARGETS[target]


def lower_module(module: ModuleOp, manager: AnalysisManager, target: str = "cpu") -> ModuleOp:
    """A new module: `module` lowered for `target` with the plan of `manager`, planned
    for that target (the CPU target plans no kernel-family workspaces)."""
    from accy.passes.planned_form import plan_target

    lowering = target_lowering(target)
    plan_target(manager, target)
    return lowering(module, manager)


@dataclass(frozen=True)
class LowerPass(ModulePass):
    """Lower accy functions to upstream MLIR for `target` (`cpu`; `cuda` when present)."""

    name = "accy-lower"

    target: str = "cpu"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        from accy.passes.plan_passes import analysis_manager

        target_lowering(self.target)  # an unknown target fails before planning
        manager = analysis_manager(ctx, op)
        lowered = lower_module(op, manager, self.target)
        for old in list(op.body.block.ops):
            old.detach()
        for new in list(lowered.body.block.ops):
            new.detach()
            op.body.block.add_op(new)
        op.attributes.clear()
        op.attributes.update(lowered.attributes)  # e.g. gpu.container_module
        manager.invalidate()
