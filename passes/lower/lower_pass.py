"""`accy-lower{target=...}`: replace a planned module by upstream-only IR.

The pass lowers the planned form (`accy-plan`): given an unplanned module it plans it first
(through the pipeline's analysis manager, for the target), given a planned one it reads
only that IR, so `accy-plan,accy-lower` and `accy-plan | accy-lower` print the same.
Every target's lowering is reached through its `Target` (`accy.targets`).
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from accy.passes.analysis import AnalysisManager
from accy.passes.plan_passes import analysis_manager
from accy.passes.planned_form import (
    is_planned,
    planned_for,
    planned_target,
    replace_module_body,
)
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from accy.diagnostics import AccyError
from accy.targets import DEFAULT_TARGET, target_named


def lower_module(
    module: ModuleOp,
    manager: AnalysisManager,
    target: str = DEFAULT_TARGET,
    cpu_features: Collection[str] = (),
) -> ModuleOp:
    """A new module: `module` lowered for `target`; planned first for that target with
    `manager` when it is not in the planned form yet. `cpu_features` are the CPU
    lowering's `features` (an `AccyError` for another target)."""
    lowering = target_named(target)
    if cpu_features and "features" not in lowering.lowering_options:
        raise AccyError(f"cpu-features applies to the cpu target, not to {target}")
    options = {"features": tuple(cpu_features)} if cpu_features else {}
    return lowering.lower(planned_for(module, manager, target), **options)


@dataclass(frozen=True)
class LowerPass(ModulePass):
    """Lower a planned module (planning it first when it is not) to upstream MLIR.

    Options:
    - target: the target lowered for (`accy.targets`); a planned module must have been
      planned for it. Default: a planned module's own target, else the pipeline's
      (`accy-opt --accy-target`, else `cpu` as everywhere).
    - cpu-features: the CPU's features the code may use, as Linux's /proc/cpuinfo names
      them (default none: code for any x86-64 CPU; `avx512_bf16` sums bf16 products in
      pairs). `accy.compile` and `accy.export` pass this machine's.
    """

    name = "accy-lower"

    target: str | None = None
    cpu_features: tuple[str, ...] = ()

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        manager = analysis_manager(ctx, op)
        if self.target is not None:
            name = self.target
        else:  # a planned module's own target, else the pipeline's
            name = planned_target(op) if is_planned(op) else manager.pipeline_options.target
        target_named(name)  # an unknown target fails before planning
        manager.configure_pass(target=name)  # plans (if unplanned) as accy-plan would
        lowered = lower_module(op, manager, name, self.cpu_features)
        replace_module_body(op, lowered)  # with its attributes, e.g. gpu.container_module
        manager.invalidate()
