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
Targets: `accy.targets` (`cpu`, the default everywhere, and `cuda`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from xdsl.dialects.builtin import ModuleOp

from accy.diagnostics import AccyError
from accy.passes.planned_form import is_planned
from accy.preparation import prepare
from accy.source import program_module
from accy.targets import DEFAULT_TARGET, check_target_options, target_named


def compile(
    module_or_text: ModuleOp | str | Path,
    target: str = DEFAULT_TARGET,
    *,
    threads: int | None = None,
    chip: str | None = None,
    **plan_options: Any,
):
    """Compile `module_or_text` (an accy module, `.mlir` text or a path) for `target`.

    `threads` (cpu only): how many threads the parallel loops run on; default the
    environment variable ACCY_NUM_THREADS, else the CPUs this process may use; 1 compiles
    sequential code. `chip` (cuda only): the GPU architecture of the kernels (sm_90).

    Raises `AccyParseError`/`AccyVerifyError` for bad programs, the planner's errors
    (`MissingOutputWriter`, `WorkBudgetExhausted`, ...), `AccyError` for an unknown or
    unavailable target or a program the target cannot lower.
    """
    module = program_module(module_or_text, "accy.compile")
    chosen = target_named(target)
    options = {k: v for k, v in (("threads", threads), ("chip", chip)) if v is not None}
    check_target_options(chosen, options)
    implementation = chosen.implementation()
    if is_planned(module):  # compiled as planned: the plan is the IR
        if plan_options:
            raise AccyError(
                "the module is already planned (accy-plan ran on it): plan options ("
                + ", ".join(sorted(plan_options))
                + ") do not apply"
            )
        return implementation.build(module, None, **options)
    preparation = prepare(module, target=target, **implementation.plan_defaults(plan_options))
    return implementation.build(module, preparation, **options)
