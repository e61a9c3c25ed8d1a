"""Execution targets: the one registry of what accy compiles for.

    from accy.targets import DEFAULT_TARGET, target_named
    target_named("cpu").alignment          # a fact planning reads (`Target`)
    target_named("cuda").implementation()  # the module that lowers, builds and exports

`cpu` (`accy.targets.cpu`): loops JIT-compiled by MLIR's ExecutionEngine; `cuda`
(`accy.targets.cuda`): kernels as PTX, host code JIT-compiled against accy's runtime
library. `DEFAULT_TARGET` is what every entry point plans, lowers, compiles, exports and
runs for when none is named (`accy.compile`, `accy.export`, `accy.prepare`, `accy-plan`,
`accy-lower`, `accy-run`).

A target names its lowering (`Target.lower`: the planned form to upstream MLIR) and its
module, which exposes `build(module, preparation, **options) -> Executable`,
`export(module, preparation, directory, **options) -> manifest` and `plan_defaults(options)`
(plan options the target fills in, e.g. the GPU's multiprocessor count).
This package imports nothing heavy: planning reads the registry.
"""

from __future__ import annotations

from collections.abc import Iterable

from accy.diagnostics import AccyError
from accy.targets.target import Target

CPU_ALIGNMENT = 64
"""Byte alignment of every buffer in a CPU arena: a cache line, one AVX-512 vector."""

CUDA_ALIGNMENT = 256
"""Byte alignment of every buffer in a CUDA arena (what `cudaMalloc` guarantees)."""

TARGETS: dict[str, Target] = {
    t.name: t
    for t in (
        Target(
            name="cpu",
            alignment=CPU_ALIGNMENT,
            device_memory=False,
            dynamic_rows=True,
            lowering="accy.passes.lower.cpu.lower_cpu",
            lowering_options=("features",),
            options=("threads",),
            module="accy.targets.cpu",
            summary="this machine's CPU, JIT-compiled loops",
            text_cache="accy.targets.cpu_executable.load_cached",
        ),
        Target(
            name="cuda",
            alignment=CUDA_ALIGNMENT,
            device_memory=True,
            dynamic_rows=False,
            lowering="accy.passes.lower.cuda.lower_cuda",
            lowering_options=(),
            options=("chip",),
            module="accy.targets.cuda",
            summary="an NVIDIA GPU, PTX kernels",
        ),
    )
}
"""Every target by name."""

DEFAULT_TARGET = "cpu"
"""The target of every entry point that is not given one."""


def target_named(name: str) -> Target:
    """The target called `name`; `AccyError` naming the known targets otherwise."""
    if not isinstance(name, str) or name not in TARGETS:
        raise AccyError(f"unknown target '{name}'; known targets: {', '.join(TARGETS)}")
    return TARGETS[name]


def check_target_options(chosen: Target, options: Iterable[str]) -> None:
    """`AccyError` for an option of `build`/`export` that `chosen` does not take (naming
    the targets that do)."""
    for name in options:
        if name not in chosen.options:
            owners = " or ".join(t.name for t in TARGETS.values() if name in t.options)
            raise AccyError(f"{name} applies to the {owners} target, not to {chosen.name}")


__all__ = [
    "CPU_ALIGNMENT",
    "CUDA_ALIGNMENT",
    "DEFAULT_TARGET",
    "TARGETS",
    "Target",
    "check_target_options",
    "target_named",
]
