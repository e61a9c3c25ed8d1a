"""`accy.compile`: plan a program, lower it for a target and load it, ready to call.

(The module is `accy.compiler`, so that the package attribute `accy.compile` is the
function.)

    exe = accy.compile(text_or_module, target="cpu", rows=[1024])
    outputs = exe(x, y)            # tuple of numpy arrays (first function)
    outputs = exe["f"](x, y)       # by name
    exe.preparation                # the plan (accy.prepare's result)
    exe.lowered_text               # the upstream MLIR that was compiled

`plan_options` are `accy.prepare`'s keyword arguments (`rows`, `budget`, `alignment`, ...);
`threads=N` sets the CPU target's thread count. A module in the planned form (`accy-plan`)
is compiled as planned, for the target it was planned for, without plan options (and
`exe.preparation` is None).
For `cuda`, `sm_count` defaults to the GPU's own multiprocessor count when one answers.
Targets: `cpu` (`accy.targets.cpu`) and `cuda` (`accy.targets.cuda`, when installed).
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

from xdsl.dialects.builtin import ModuleOp

from accy.diagnostics import AccyError
from accy.passes.planned_form import is_planned
from accy.preparation import prepare
from accy.source import program_module

TARGET_MODULES = {"cpu": "accy.targets.cpu", "cuda": "accy.targets.cuda"}


def compile(
    module_or_text: ModuleOp | str | Path,
    target: str = "cpu",
    *,
    threads: int | None = None,
    **plan_options: Any,
):
    """Compile `module_or_text` (an accy module, `.mlir` text or a path) for `target`.

    `threads` (cpu only): how many threads the parallel loops run on; default the
    environment variable ACCY_NUM_THREADS, else the CPUs this process may use; 1 compiles
    sequential code.

    Raises `AccyParseError`/`AccyVerifyError` for bad programs, the planner's errors
    (`MissingOutputWriter`, `WorkBudgetExhausted`, ...), `AccyError` for an unknown or
    unavailable target or a program the target cannot lower.
    """
    module = program_module(module_or_text, "accy.compile")
    if target not in TARGET_MODULES:
        raise AccyError(
            f"unknown target '{target}'; known targets: {', '.join(sorted(TARGET_MODULES))}"
        )
    try:
        target_module = importlib.import_module(TARGET_MODULES[target])
    except ModuleNotFoundError as error:
        if error.name != TARGET_MODULES[target]:
            raise
        raise AccyError(
            f"the {target} target is not available: {TARGET_MODULES[target]} "
            f"(accy/targets/{target}.py) is not installed"
        ) from None
    if threads is not None and target != "cpu":
        raise AccyError(f"threads applies to the cpu target, not to {target}")
    if is_planned(module):  # compiled as planned: the plan is the IR
        if plan_options:
            raise AccyError(
                "the module is already planned (accy-plan ran on it): plan options ("
                + ", ".join(sorted(plan_options))
                + ") do not apply"
            )
        if threads is not None:
            return target_module.build(module, None, threads=threads)
        return target_module.build(module, None)
    if target == "cuda" and "sm_count" not in plan_options:
        # Size the workspaces for the GPU this process will run on.
        from accy.runtime import device_sm_count

        if (count := device_sm_count()) is not None:
            plan_options["sm_count"] = count
    preparation = prepare(module, target=target, **plan_options)
    if target == "cpu":
        return target_module.build(module, preparation, threads=threads)
    return target_module.build(module, preparation)
