"""The CPU target: the plan lowered by `accy-lower{target=cpu}`, JIT-compiled, and run
by a `CpuExecutable` (`accy.targets.cpu_executable`).

    exe = accy.compile(text, target="cpu")
    accy.compile(text, target="cpu", threads=1)   # sequential code

Threads: the lowering marks the loops of big work items `scf.parallel`
(`accy.passes.lower.cpu`, *Parallel loops*). With `threads` > 1 (default: the
environment variable ACCY_NUM_THREADS, else the CPUs this process may run on) the
pipeline splits them into tasks for that many threads (`CPU_PARALLEL_PASSES`), run by
accy's async runtime library; with `threads=1` they are plain loops and no runtime
library is loaded.

Compile cache: a planned module compiled before, by the same accy sources for the same CPU
features, threads and optimisation level, runs the library linked from that compile
(`accy.compile_cache`; `mlir_bridge.LibraryModule`): no lowering, no LLVM. A miss compiles
with the JIT and then links its code into a new entry, also named by `text_key` when the
caller has one (`accy.compiler`: a later compile of the same text finds the entry before
importing or planning anything, `load_cached`).
"""

from __future__ import annotations

import functools
import shutil
from pathlib import Path
from typing import Any

from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp

from accy import compile_cache, mlir_bridge
from accy.dialects import plan
from accy.dtypes import tensor_spec
from accy.passes.dynamic_rows import row_binding
from accy.passes.lower.host import planned_functions
from accy.passes.planned_form import max_rows_of, signature_of
from accy.preparation import Preparation
from accy.runtime.abi import HOST_SYMBOL_PREFIX
from accy.runtime.cpu_features import host_flags
from accy.source import module_text
from accy.targets import TARGETS
from accy.targets.cpu_executable import (
    OPT_LEVEL,
    CpuExecutable,
    CpuSignature,
    async_runtime,
    cache_key,
    resolve_threads,
    write_entry_program,
)
from accy.targets.executable import planned_input

JIT_PIPELINE_BF16 = "arith-expand{include-bf16=true},"
"""The CPU pipeline expands bf16 truncation in arith (LLVM would call `__truncsfbf2`)."""


def cpu_pipeline(threads: int = 1) -> str:
    """The pass pipeline from lowered accy (upstream dialects) to the LLVM dialect;
    parallel loops become tasks for `threads` threads when `threads` > 1."""
    return mlir_bridge.cpu_pipeline(threads).replace("arith-expand,", JIT_PIPELINE_BF16)


def cpu_signature(planned: func.FuncOp) -> CpuSignature:
    """What calls of the planned function `planned` are checked against."""
    function = signature_of(planned)
    return CpuSignature(
        function.sym_name.data,
        tuple(tensor_spec(a.type, a.name_hint) for a in function.body.block.args),
        tuple(tensor_spec(t) for t in function.function_type.outputs),
        row_binding(function),
        max_rows_of(planned),
        _donors(planned),
    )


def _donors(planned: func.FuncOp) -> tuple[int | None, ...]:
    """Per result, the parameter whose array it takes over (`accy.donor`); empty where the
    plan gives it none."""
    donors = tuple(
        None if (donor := plan.donor_of(a)) is None else donor.index
        for a in planned.body.block.args
        if plan.is_output(a)
    )
    return donors if any(d is not None for d in donors) else ()


def build(
    module: ModuleOp,
    preparation: Preparation | None,
    *,
    opt_level: int = OPT_LEVEL,
    threads: int | None = None,
    text_key: str | None = None,
) -> CpuExecutable:
    """The planned form of `module` compiled (or found in the compile cache), ready to
    call; `text_key` (`accy.compiler`) names the cache entry a second way."""
    planned = planned_input(module, preparation, "cpu")
    threads = resolve_threads(threads)
    libraries = [async_runtime(threads)] if threads > 1 else []
    front = (module, preparation, planned)
    cache = compile_cache.directory()
    name = ""
    if cache is not None:
        name = cache_key(opt_level, threads, libraries, planned=module_text(planned))
        entry = compile_cache.lookup(cache, name)
        if entry is not None:
            if text_key is not None:
                compile_cache.alias(cache, text_key, name)
            return CpuExecutable.from_entry(entry, threads, libraries, front)
    lowered_text = module_text(TARGETS["cpu"].lower(planned, features=host_flags()))
    code = mlir_bridge.JitModule(
        lowered_text,
        opt_level=opt_level,
        pipeline=cpu_pipeline(threads),
        shared_libs=libraries,
        symbol_prefix=HOST_SYMBOL_PREFIX,
    )
    signatures = [cpu_signature(f) for f in planned_functions(planned)]
    executable = CpuExecutable(
        code, signatures, threads=threads, lowered_text=lowered_text, front=front
    )
    if cache is not None:
        compile_cache.store(cache, name, functools.partial(_write_entry, executable, code))
        if text_key is not None:
            compile_cache.alias(cache, text_key, name)
    return executable


def _write_entry(executable: CpuExecutable, code: mlir_bridge.JitModule, directory: Path) -> None:
    """The compile cache's entry of `executable` (`accy.compile_cache`): `code`'s object
    linked with accy's allocation-failure record, and what runs it."""
    from accy.aot import ALLOCATION_FAILURE_C, link_shared

    obj = code.dump_object(directory / "program.o")
    record = directory / "allocation_failure.c"  # the host code's hook, and its record
    record.write_text(ALLOCATION_FAILURE_C)
    link_shared("cc", directory / compile_cache.LIBRARY, [str(obj), str(record)])
    obj.unlink()
    record.unlink()
    write_entry_program(directory, executable, code.signatures)


def plan_defaults(plan_options: dict[str, Any]) -> dict[str, Any]:
    """The plan options as given: the CPU fills in none."""
    return plan_options


def export(
    module: ModuleOp,
    preparation: Preparation,
    directory: Path,
    *,
    opt_level: int,
    cc: str,
    threads: int | None = None,
) -> dict:
    """Write the program library (and the async runtime, with threads) into `directory`;
    the manifest (`accy.aot`)."""
    from accy.aot import export_manifest, link_program
    from accy.runtime.cpu_features import instruction_sets
    from accy.runtime.libraries import ASYNC_RUNTIME_LIBRARY_NAME, async_runtime_library_path

    threads = resolve_threads(threads)
    planned = planned_input(module, preparation, "cpu")
    text = module_text(TARGETS["cpu"].lower(planned, features=host_flags()))
    libraries = ["-lm"]
    if threads > 1:
        shutil.copyfile(async_runtime_library_path(), directory / ASYNC_RUNTIME_LIBRARY_NAME)
        libraries = [
            f"-L{directory}",
            "-l:" + ASYNC_RUNTIME_LIBRARY_NAME,
            "-Wl,-rpath,$ORIGIN",
            "-lm",
        ]
    manifest = export_manifest(module, preparation, "cpu", None)
    manifest.update(
        runtime=None,
        kernels={},
        threads=threads,
        async_runtime=ASYNC_RUNTIME_LIBRARY_NAME if threads > 1 else None,
        instruction_sets=instruction_sets(),
    )
    link_program(
        directory,
        text,
        manifest,
        target="cpu",
        opt_level=opt_level,
        cc=cc,
        pipeline=cpu_pipeline(threads),
        libraries=libraries,
    )
    return manifest
