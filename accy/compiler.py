"""`accy.compile`: plan a program, lower it for a target and load it, ready to call.

(The module is `accy.compiler`, so that the package attribute `accy.compile` is the
function.)

    exe = accy.compile(text_or_module, target="cpu", rows=[1024])
    exe = accy.compile(jax.jit(f).lower(x).as_text())   # StableHLO text is imported
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

Text compiled before for the CPU (the same text, options, accy and machine) is found in
the compile cache (`accy.compile_cache`) by the text itself, before anything imports or
plans it: such a compile loads neither xDSL nor the MLIR bindings, and what only the
compiler knows (`exe.module`, `exe.preparation`, `exe.planned`) is computed again when
first asked for.
"""

from __future__ import annotations

import gc
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from accy.diagnostics import AccyError, looks_like_path
from accy.targets import DEFAULT_TARGET, check_target_options, target_named
from accy.targets.executable import planned_input

if TYPE_CHECKING:
    from xdsl.dialects.builtin import ModuleOp

    from accy.targets.target import Target


def compile(
    module_or_text: ModuleOp | str | Path,
    target: str = DEFAULT_TARGET,
    *,
    threads: int | None = None,
    chip: str | None = None,
    **plan_options: Any,
):
    """Compile `module_or_text` (an accy module, accy or StableHLO text, or a path) for
    `target`.

    `threads` (cpu only): how many threads the parallel loops run on; default the
    environment variable ACCY_NUM_THREADS, else the CPUs this process may use; 1 compiles
    sequential code. `chip` (cuda only): the GPU architecture of the kernels (sm_90).

    Raises `AccyParseError`/`AccyVerifyError` for bad programs, the planner's errors
    (`MissingOutputWriter`, `WorkBudgetExhausted`, ...), `AccyError` for an unknown or
    unavailable target or a program the target cannot lower.
    """
    chosen = target_named(target)
    options = {k: v for k, v in (("threads", threads), ("chip", chip)) if v is not None}
    check_target_options(chosen, options)
    with collections_deferred():
        return _compile(module_or_text, chosen, options, plan_options)


def _compile(
    module_or_text: ModuleOp | str | Path,
    chosen: Target,
    options: dict[str, Any],
    plan_options: dict[str, Any],
):
    """`compile` once its arguments are checked: the compile cache asked by the text, else
    the program read, planned and built by the target."""
    text_key = None
    if (text := _source_text(module_or_text)) is not None:
        source = {"file": str(module_or_text) if text[1] else None, "plan": plan_options}

        def front() -> tuple:
            module, preparation = _front(module_or_text, chosen.name, plan_options)
            return module, preparation, planned_input(module, preparation, chosen.name)

        found, text_key = chosen.load_cached(text[0], source, options.get("threads"), front)
        if found is not None:
            return found
    module, preparation = _front(module_or_text, chosen.name, plan_options)
    if text_key is not None:
        options["text_key"] = text_key
    return chosen.implementation().build(module, preparation, **options)


@contextmanager
def collections_deferred() -> Iterator[None]:
    """Python's cyclic garbage collector run less often while a program compiles: the
    importer, the planner and the lowering allocate IR objects by the hundred thousand,
    none of them garbage until the compile ends, and each collection of the youngest
    generation would scan them again. The thresholds are put back afterwards."""
    global _deferring, _threshold_before
    with _threshold_lock:
        if _deferring == 0:
            _threshold_before = gc.get_threshold()
            gc.set_threshold(max(_threshold_before[0], 50_000), *_threshold_before[1:])
        _deferring += 1
    try:
        yield
    finally:
        with _threshold_lock:
            _deferring -= 1
            if _deferring == 0:
                gc.set_threshold(*_threshold_before)


_threshold_lock = threading.Lock()
_deferring = 0
"""How many compiles (in any thread) run with the collector deferred."""
_threshold_before: tuple[int, ...] = (700, 10, 10)


def _source_text(module_or_text: object) -> tuple[bytes, bool] | None:
    """`(bytes, from a file)` of a program given as text or a path; None otherwise (a
    module, or a file that cannot be read: the compile reports it)."""
    if isinstance(module_or_text, os.PathLike) or (
        isinstance(module_or_text, str) and looks_like_path(module_or_text)
    ):
        try:
            return Path(module_or_text).read_bytes(), True
        except OSError:
            return None
    if isinstance(module_or_text, str):
        return module_or_text.encode(), False
    return None


def _front(module_or_text: object, target: str, plan_options: dict[str, Any]) -> tuple:
    """`(module, preparation)`: the program read (`accy.stablehlo.read_program`) and planned
    for `target` (preparation None for a module already planned)."""
    from accy.passes.planned_form import is_planned
    from accy.preparation import prepare
    from accy.stablehlo import read_program

    module = read_program(module_or_text, "accy.compile")
    implementation = target_named(target).implementation()
    if is_planned(module):  # compiled as planned: the plan is the IR
        if plan_options:
            raise AccyError(
                "the module is already planned (accy-plan ran on it): plan options ("
                + ", ".join(sorted(plan_options))
                + ") do not apply"
            )
        preparation = None
    else:
        preparation = prepare(module, target=target, **implementation.plan_defaults(plan_options))
    return module, preparation
