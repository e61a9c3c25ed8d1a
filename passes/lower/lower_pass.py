"""`accy-lower{target=cpu|cuda}`: replace a planned module by upstream-only IR.

The pass lowers the planned form (`accy-plan`): given an unplanned module it plans it first
(through the pipeline's analysis manager, for the target), given a planned one it reads
only that IR, so `accy-plan,accy-lower` and `accy-plan | accy-lower` print the same.
Targets are looked up in `TARGETS` (name → `lower(planned module) -> new module`); `cuda`
is registered by `accy.passes.lower.cuda` when that module exists.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Collection
from dataclasses import dataclass

from accy.passes.analysis import AnalysisManager
from accy.passes.lower.cpu import lower_cpu
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from accy.diagnostics import AccyError

TargetLowering = Callable[[ModuleOp], ModuleOp]

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


def lower_module(
    module: ModuleOp,
    manager: AnalysisManager,
    target: str = "cpu",
    cpu_features: Collection[str] = (),
) -> ModuleOp:
    """A new module: `module` lowered for `target`; planned first for that target with
    `manager` when it is not in the planned form yet. `cpu_features` are `lower_cpu`'s."""
    lowering = target_lowering(target)
    planned = planned_for(module, manager, target)
    return lower_cpu(planned, cpu_features) if target == "cpu" else lowering(planned)


def planned_for(module: ModuleOp, manager: AnalysisManager, target: str) -> ModuleOp:
    """`module` in the planned form for `target`: itself when it is planned (for that
    target, else an `AccyError`), else a new module planned by `manager`."""
    from accy.passes.planned_form import is_planned, planned_module, planned_target

    if not is_planned(module):
        return planned_module(module, manager, target)
    planned = planned_target(module)
    if planned != target:
        raise AccyError(
            f"the module is planned for the {planned} target, not for {target}; use "
            f"target={planned} or plan the program again for {target}"
        )
    return module


@dataclass(frozen=True)
class LowerPass(ModulePass):
    """Lower a planned module (planning it first when it is not) to upstream MLIR.

    Options:
    - target: `cpu` (default) or `cuda` (when present).
    - cpu-features: the CPU's features the code may use, as Linux's /proc/cpuinfo names
      them (default none: code for any x86-64 CPU; `avx512_bf16` sums bf16 products in
      pairs). `accy.compile` and `accy.export` pass this machine's.
    """

    name = "accy-lower"

    target: str = "cpu"
    cpu_features: tuple[str, ...] = ()

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        from accy.passes.plan_passes import analysis_manager
        from accy.passes.planned_form import replace_module_body

        target_lowering(self.target)  # an unknown target fails before planning
        if self.cpu_features and self.target != "cpu":
            raise AccyError(f"cpu-features applies to the cpu target, not to {self.target}")
        manager = analysis_manager(ctx, op)
        manager.configure_pass(target=self.target)  # plans (if unplanned) as accy-plan would
        lowered = lower_module(op, manager, self.target, self.cpu_features)
        replace_module_body(op, lowered)  # with its attributes, e.g. gpu.container_module
        manager.invalidate()
