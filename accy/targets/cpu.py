"""The CPU executable: the plan lowered by `accy-lower{target=cpu}` and JIT-compiled.

    exe = accy.compile(text, target="cpu")
    (y,) = exe(x)                      # the first (or only) function
    (y,) = exe["other"](x)             # any function by name
    exe.planned                        # the plan it runs (the planned form)
    print(exe.lowered_text)            # the upstream MLIR it compiled
    accy.compile(text, target="cpu", threads=1)   # sequential code

Threads: the lowering marks the loops of big work items `scf.parallel`
(`accy.passes.lower.cpu`, *Parallel loops*). With `threads` > 1 (default: the
environment variable ACCY_NUM_THREADS, else the CPUs this process may run on) the
pipeline splits them into tasks for that many threads (`CPU_PARALLEL_PASSES`), run by
accy's async runtime library (a thread pool; the calling thread is one of its threads);
with `threads=1` they are plain loops and no runtime library is loaded.

Compile cache: a planned module compiled before, by the same accy sources for the same CPU
features, threads and optimisation level, runs the library linked from that compile
(`accy.compile_cache`; `mlir_bridge.LibraryModule`): no lowering, no LLVM. A miss compiles
with the JIT and then links its code into a new entry.

Arguments are checked before anything runs, with `accy.reference.check_arguments` (so the
reference and the compiled target report the same `AccyInputError`s), plus the CPU rules:
every `?` dim of one call takes the same size (the row count, bound from the first
argument with a `?`), which may not exceed the largest planned row count when the plan
put dynamic buffers in the arena. A function with a static signature called with
C-contiguous arrays of exactly its dtypes and shapes skips the full check (nothing there
could fail) and runs through a prepared call (`mlir_bridge.PreparedCall`).
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import json
import os
import shutil
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import DYNAMIC_INDEX, ModuleOp, TensorType
from xdsl.printer import Printer

from accy import compile_cache, mlir_bridge
from accy.diagnostics import AccyError, AccyInputError
from accy.dtypes import numpy_dtype
from accy.passes.dynamic_rows import row_binding
from accy.passes.lower.host import HOST_SYMBOL_PREFIX, planned_functions
from accy.passes.planned_form import max_rows_of, signature_of
from accy.preparation import Preparation
from accy.reference import check_arguments
from accy.runtime.cpu_features import host_flags
from accy.runtime.loader import positional_only
from accy.targets import TARGETS
from accy.targets.executable import Executable, planned_input

JIT_PIPELINE_BF16 = "arith-expand{include-bf16=true},"
"""The CPU pipeline expands bf16 truncation in arith (LLVM would call `__truncsfbf2`)."""


def module_text(module: ModuleOp) -> str:
    """Upstream MLIR text of a lowered module."""
    import io

    stream = io.StringIO()
    Printer(stream=stream).print_op(module)
    return stream.getvalue() + "\n"


THREADS_VARIABLE = "ACCY_NUM_THREADS"


@functools.cache
def source_digest() -> str:
    """A SHA-256 of accy's Python sources (its packages `accy`, `accy.dialects` and
    `accy.passes`): part of every compile cache key, so a changed compiler never runs
    code an earlier one compiled."""
    import accy.dialects
    import accy.passes

    digest = hashlib.sha256()
    for package in (accy, accy.dialects, accy.passes):
        root = Path(package.__file__).parent
        for path in sorted(root.rglob("*.py")):
            digest.update(str(path.relative_to(root)).encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()


def resolve_threads(threads: int | None) -> int:
    """`threads`, checked; None means ACCY_NUM_THREADS, else the CPUs this process may
    run on."""
    source = "threads"
    if threads is None:
        text = os.environ.get(THREADS_VARIABLE, "").strip()
        if not text:
            return max(1, len(os.sched_getaffinity(0)))
        source = THREADS_VARIABLE
        try:
            threads = int(text)
        except ValueError:
            raise AccyError(
                f"{THREADS_VARIABLE} must be a positive integer, got {text!r}"
            ) from None
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
        raise AccyError(f"{source} must be a positive integer, got {threads!r}")
    return threads


def cpu_pipeline(threads: int = 1) -> str:
    """The pass pipeline from lowered accy (upstream dialects) to the LLVM dialect;
    parallel loops become tasks for `threads` threads when `threads` > 1."""
    from accy import mlir_bridge

    return mlir_bridge.cpu_pipeline(threads).replace("arith-expand,", JIT_PIPELINE_BF16)


def async_runtime(threads: int) -> str:
    """Path of accy's async runtime library, its pool grown to `threads` threads."""
    from accy.runtime.libraries import NativeLibraryNotFoundError, async_runtime_library_path

    try:
        path = str(async_runtime_library_path())
    except NativeLibraryNotFoundError as error:
        raise AccyError(
            f"{error}\n(threads=1 compiles sequential code, which needs no runtime)"
        ) from None
    library = ctypes.CDLL(path)
    library.accy_async_runtime_reserve.argtypes = [ctypes.c_int]
    library.accy_async_runtime_reserve(threads)
    return path


Signature = tuple[tuple[np.dtype, tuple[int, ...]], ...]


def _static_signature(function: func.FuncOp) -> tuple[Signature, Signature] | None:
    """The dtypes and shapes of `function`'s parameters and results, if all static."""
    sides = []
    for types in (function.function_type.inputs, function.function_type.outputs):
        side = []
        for t in types:
            if not isinstance(t, TensorType) or DYNAMIC_INDEX in t.get_shape():
                return None
            side.append((numpy_dtype(t.get_element_type()), tuple(t.get_shape())))  # type: ignore[arg-type]
        sides.append(tuple(side))
    return sides[0], sides[1]


def _fits(arrays: Sequence[Any], params: Signature, strides: list[tuple[int, ...]]) -> bool:
    """Whether `arrays` are C-contiguous numpy arrays of exactly `params`' dtypes and
    shapes (`strides`: the usual C-contiguous strides, compared first because that is
    quicker than numpy's flag; anything else takes the checked path, which reports what
    is wrong)."""
    if len(arrays) != len(params):
        return False
    for a, (dtype, shape), contiguous in zip(arrays, params, strides):
        if type(a) is not np.ndarray or a.shape != shape or a.dtype != dtype:
            return False
        if a.strides != contiguous and not a.flags.c_contiguous:
            return False
    return True


def _contiguous_strides(dtype: np.dtype, shape: tuple[int, ...]) -> tuple[int, ...]:
    """The usual strides of a C-contiguous array of `shape` (a dim's is the item size
    times the later dims' sizes), computed without making one: a parameter may be far
    larger than this machine's memory. (numpy may give an array with a dim of size 1, or
    an empty one, other strides: `_fits` then asks numpy.)"""
    strides, step = [], dtype.itemsize
    for size in reversed(shape):
        strides.append(step)
        step *= size
    return tuple(reversed(strides))


class CpuFunction:
    """One compiled function: call it with numpy arrays, get a tuple of arrays."""

    def __init__(self, executable: CpuExecutable, planned: func.FuncOp):
        self.executable = executable
        self.function = signature_of(planned)
        """The tensor signature arguments are checked against."""
        function = self.function
        self.name = function.sym_name.data
        self.binding = row_binding(function)
        self.max_rows = max_rows_of(planned)
        """The most rows a call may bind (None: any), from the plan's dynamic views."""
        self.last_seconds: float | None = None
        """Wall time of the last call's compiled code (arguments already checked)."""
        self.static = _static_signature(function)
        """((dtype, shape) per parameter, (dtype, shape) per result) when every shape is
        static: calls with exactly such arrays take the prepared fast path."""
        self._prepared: mlir_bridge.PreparedCall | None = None
        self._strides = (
            [] if self.static is None else [_contiguous_strides(*p) for p in self.static[0]]
        )

    def rows(self, arrays: Sequence[np.ndarray]) -> int | None:
        """The row count bound by `arrays` (checked: every `?` dim agrees)."""
        if self.binding is None:
            return None
        arg, dim = self.binding
        rows = arrays[arg].shape[dim]
        for index, (param, array) in enumerate(zip(self.function.body.block.args, arrays)):
            assert isinstance(param.type, TensorType)
            for d, size in enumerate(param.type.get_shape()):
                if size == DYNAMIC_INDEX and array.shape[d] != rows:
                    raise AccyInputError(
                        f"argument #{index} of @{self.name}: dynamic dim {d} is "
                        f"{array.shape[d]}, but the CPU target binds every '?' of a call to "
                        f"one row count, {rows} (dim {dim} of argument #{arg})"
                    )
        if self.max_rows is not None and rows > self.max_rows:
            raise AccyInputError(
                f"@{self.name} was planned for at most {self.max_rows} rows (rows=...), got "
                f"{rows}; compile with a larger rows value"
            )
        return rows

    def result_specs(self, rows: int | None) -> list[tuple[tuple[int, ...], np.dtype]]:
        specs = []
        for t in self.function.function_type.outputs:
            assert isinstance(t, TensorType)
            shape = tuple(rows if d == DYNAMIC_INDEX else d for d in t.get_shape())
            specs.append((shape, numpy_dtype(t.get_element_type())))  # type: ignore[misc]
        return specs

    def __call__(self, *arrays: Any, **keywords: Any) -> tuple[np.ndarray, ...]:
        if keywords:
            raise positional_only(self.name, keywords)
        static = self.static
        if static is not None and _fits(arrays, static[0], self._strides):
            outputs = tuple(np.empty(shape, dtype) for dtype, shape in static[1])
            if self._prepared is None:
                shapes = [shape for _, shape in (*static[0], *static[1])]
                self._prepared = self.executable.jit.prepared_call(self.name, shapes)
            start = time.perf_counter()
            self._prepared((*arrays, *outputs))
            self.last_seconds = time.perf_counter() - start
            return outputs
        checked = check_arguments(self.function, arrays)
        rows = self.rows(checked)
        inputs = [a if a.flags.c_contiguous else np.ascontiguousarray(a) for a in checked]
        start = time.perf_counter()
        outputs = self.executable.jit.run(self.name, inputs, self.result_specs(rows))
        self.last_seconds = time.perf_counter() - start
        return tuple(outputs)


class CpuExecutable(Executable):
    """A module compiled for the CPU; see the module docstring."""

    target = "cpu"

    def __init__(
        self,
        module: ModuleOp,
        preparation: Preparation | None,
        *,
        opt_level: int = 3,
        threads: int | None = None,
    ):
        from accy import mlir_bridge

        self.module = module
        self.preparation = preparation
        self.planned = planned_input(module, preparation, "cpu")
        """The planned form it runs (`accy-plan{target=cpu}`)."""
        self.threads = resolve_threads(threads)
        """Threads the parallel loops run on (1: sequential code)."""
        libraries = [async_runtime(self.threads)] if self.threads > 1 else []
        cache, entry_name = compile_cache.directory(), ""
        if cache is not None:
            entry_name = compile_cache.key(
                target="cpu",
                planned=module_text(self.planned),
                accy=source_digest(),
                features=sorted(host_flags()),
                threads=self.threads,
                opt_level=opt_level,
                libraries=[str(library) for library in libraries],
            )
            entry = compile_cache.lookup(cache, entry_name)
            if entry is not None:
                self._load(entry, libraries)
                return
        lowered = TARGETS["cpu"].lower(self.planned, features=host_flags())
        self.lowered_text = module_text(lowered)
        self.jit = mlir_bridge.JitModule(
            self.lowered_text,
            opt_level=opt_level,
            pipeline=cpu_pipeline(self.threads),
            shared_libs=libraries,
            symbol_prefix=HOST_SYMBOL_PREFIX,
        )
        self._bind()
        if cache is not None:
            compile_cache.store(cache, entry_name, self._write_entry)

    def _bind(self) -> None:
        self.functions = {
            op.sym_name.data: CpuFunction(self, op) for op in planned_functions(self.planned)
        }
        for name in self.functions:  # the JIT compiles lazily: pay for it here, not in calls
            self.jit.lookup(name)

    def _write_entry(self, directory: Path) -> None:
        """The compile cache's entry of this program (`accy.compile_cache`)."""
        from accy.aot import ALLOCATION_FAILURE_C, link_shared

        assert isinstance(self.jit, mlir_bridge.JitModule)
        code = self.jit.dump_object(directory / "program.o")
        record = directory / "allocation_failure.c"  # the host code's hook, and its record
        record.write_text(ALLOCATION_FAILURE_C)
        link_shared("cc", directory / compile_cache.LIBRARY, [str(code), str(record)])
        code.unlink()
        record.unlink()
        signatures = {
            name: [[a.type, None if a.shape is None else list(a.shape), a.dtype] for a in specs]
            for name, specs in self.jit.signatures.items()
        }
        program = {"lowered": self.lowered_text, "signatures": signatures}
        (directory / compile_cache.PROGRAM).write_text(json.dumps(program))

    def _load(self, entry: Path, libraries: Sequence[Path]) -> None:
        """Run the compile cache's entry `entry` (a hit): no lowering, no LLVM."""
        program = json.loads((entry / compile_cache.PROGRAM).read_text())
        self.lowered_text = program["lowered"]
        signatures = {
            name: tuple(
                mlir_bridge.ArgSpec(t, None if shape is None else tuple(shape), dtype)
                for t, shape, dtype in specs
            )
            for name, specs in program["signatures"].items()
        }
        self.jit = mlir_bridge.LibraryModule(
            entry / compile_cache.LIBRARY,
            signatures,
            symbol_prefix=HOST_SYMBOL_PREFIX,
            shared_libs=libraries,
        )
        self._bind()


def build(module: ModuleOp, preparation: Preparation | None, **options: Any) -> CpuExecutable:
    return CpuExecutable(module, preparation, **options)


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
