"""A program compiled for the CPU, ready to call (`accy.targets.cpu` compiles it).

    exe = accy.compile(text, target="cpu")
    (y,) = exe(x)                      # the first (or only) function
    (y,) = exe["other"](x)             # any function by name
    exe.planned                        # the plan it runs (the planned form)
    print(exe.lowered_text)            # the upstream MLIR it compiled

Invariants: an executable is its functions' signatures (`CpuSignature`: plain data, the
tensor types, the row binding and the planned row bound) and the code that runs them (a
`mlir_bridge.CompiledCode`: the JIT's, or a compile cache entry's library); it needs
neither xDSL nor the MLIR bindings, so a compile cache hit on a program's text
(`accy.compiler`) loads without the compiler. What only the compiler knows (`module`,
`preparation`, `planned`) is given by the compile, or computed again when first asked
for (`front`); `lowered_text` likewise.

Arguments are checked before anything runs, with `accy.arguments.check_arguments` (so
the reference and the compiled target report the same `AccyInputError`s), plus the CPU
rules: every `?` dim of one call takes the same size (the row count, bound from the first
argument with a `?`), which may not exceed the largest planned row count when the plan
put dynamic buffers in the arena. A function with a static signature called with
C-contiguous arrays of exactly its dtypes and shapes skips the full check (nothing there
could fail) and runs through a prepared call (`mlir_bridge.PreparedCall`).

Threads: with `threads` > 1 the parallel loops run on accy's async runtime library (a
thread pool; the calling thread is one of its threads), loaded here (`async_runtime`).
"""

from __future__ import annotations

import ctypes
import functools
import json
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from accy import compile_cache, mlir_bridge
from accy.arguments import TensorSpec, check_arguments
from accy.diagnostics import AccyError, AccyInputError
from accy.runtime.abi import HOST_SYMBOL_PREFIX
from accy.runtime.cpu_features import host_flags
from accy.runtime.loader import positional_only
from accy.targets.executable import Executable

Front = tuple[Any, Any, Any]
"""`(module, preparation, planned)`: what the compiler made of a program."""

THREADS_VARIABLE = "ACCY_NUM_THREADS"

OPT_LEVEL = 3
"""LLVM's optimisation level for compiled code (O1 to O3 measured alike, run and compile
time: benchmarks/results/compile_time.md)."""


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


@dataclass(frozen=True)
class CpuSignature:
    """What a call of one compiled function is checked against."""

    name: str
    params: tuple[TensorSpec, ...]
    results: tuple[TensorSpec, ...]
    binding: tuple[int, int] | None
    """`(argument, dim)` whose size is the call's row count (None: no `?` dims)."""
    max_rows: int | None
    """The most rows a call may bind (None: any), from the plan's dynamic views."""
    donors: tuple[int | None, ...] = ()
    """Per result, the donated parameter whose array may become it (`accy.donor`, planned
    with `donate`), or None; empty: none."""

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "params": [p.to_json() for p in self.params],
            "results": [r.to_json() for r in self.results],
            "binding": None if self.binding is None else list(self.binding),
            "max_rows": self.max_rows,
            "donors": list(self.donors),
        }

    @staticmethod
    def from_json(data: dict[str, Any]) -> CpuSignature:
        binding = data["binding"]
        return CpuSignature(
            data["name"],
            tuple(TensorSpec.from_json(p) for p in data["params"]),
            tuple(TensorSpec.from_json(r) for r in data["results"]),
            None if binding is None else (binding[0], binding[1]),
            data["max_rows"],
            tuple(data.get("donors", ())),
        )

    @property
    def static(self) -> bool:
        return all(None not in spec.shape for spec in (*self.params, *self.results))


def _fits(arrays: Sequence[Any], params: Sequence[TensorSpec], strides: list[tuple]) -> bool:
    """Whether `arrays` are C-contiguous numpy arrays of exactly `params`' dtypes and
    shapes (`strides`: the usual C-contiguous strides, compared first because that is
    quicker than numpy's flag; anything else takes the checked path, which reports what
    is wrong)."""
    if len(arrays) != len(params):
        return False
    for a, param, contiguous in zip(arrays, params, strides):
        if type(a) is not np.ndarray or a.shape != param.shape or a.dtype != param.dtype:
            return False
        if a.strides != contiguous and not a.flags.c_contiguous:
            return False
    return True


def _contiguous_strides(spec: TensorSpec) -> tuple[int, ...]:
    """The usual strides of a C-contiguous array of `spec` (a dim's is the item size
    times the later dims' sizes), computed without making one: a parameter may be far
    larger than this machine's memory. (numpy may give an array with a dim of size 1, or
    an empty one, other strides: `_fits` then asks numpy.)"""
    strides, step = [], spec.dtype.itemsize
    for size in reversed(spec.shape):
        strides.append(step)
        step *= size  # type: ignore[operator] - static shapes only
    return tuple(reversed(strides))


class CpuFunction:
    """One compiled function: call it with numpy arrays, get a tuple of arrays."""

    def __init__(self, executable: CpuExecutable, signature: CpuSignature):
        self.executable = executable
        self.signature = signature
        """What arguments are checked against."""
        self.name = signature.name
        self.params = signature.params
        """What each argument must be (`accy.arguments.TensorSpec`)."""
        self.max_rows = signature.max_rows
        self.last_seconds: float | None = None
        """Wall time of the last call's compiled code (arguments already checked)."""
        self._prepared: mlir_bridge.PreparedCall | None = None
        self._strides = (
            [_contiguous_strides(p) for p in signature.params] if signature.static else None
        )

    def rows(self, arrays: Sequence[np.ndarray]) -> int | None:
        """The row count bound by `arrays` (checked: every `?` dim agrees)."""
        binding = self.signature.binding
        if binding is None:
            return None
        arg, dim = binding
        rows = arrays[arg].shape[dim]
        for index, (param, array) in enumerate(zip(self.signature.params, arrays)):
            for d, size in enumerate(param.shape):
                if size is None and array.shape[d] != rows:
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
        return [
            (tuple(rows if d is None else d for d in r.shape), r.dtype)  # type: ignore[misc]
            for r in self.signature.results
        ]

    def _outputs(self, arrays: Sequence[np.ndarray]) -> tuple[np.ndarray, ...]:
        """The out-parameters of a call on `arrays` (checked to fit): fresh arrays, but a
        result that takes a donated parameter over (`CpuSignature.donors`) is that
        argument's array where it is writeable and shares no memory with another
        argument."""
        donors = self.signature.donors or (None,) * len(self.signature.results)
        outputs = []
        for spec, donor in zip(self.signature.results, donors, strict=True):
            array = None if donor is None else arrays[donor]
            if (
                array is not None
                and array.flags.writeable
                and not any(
                    np.may_share_memory(array, other)
                    for i, other in enumerate(arrays)
                    if i != donor
                )
            ):
                outputs.append(array)
            else:
                outputs.append(np.empty(spec.shape, spec.dtype))  # type: ignore[arg-type]
        return tuple(outputs)

    def __call__(self, *arrays: Any, **keywords: Any) -> tuple[np.ndarray, ...]:
        """The results of the function on `arrays`. It writes none of them, but in a
        program planned with `donate`, when every argument is a C-contiguous numpy array
        of its parameter's dtype and shape: a result planned to take a donated parameter's
        buffer over is written into that parameter's array, if it is writeable and no
        other argument shares it, and returned, the array's old contents gone, as JAX's
        donation gives buffers up (otherwise the result is a fresh array)."""
        if keywords:
            raise positional_only(self.name, keywords)
        code = self.executable.jit
        if self._strides is not None and _fits(arrays, self.signature.params, self._strides):
            results = self.signature.results
            outputs = self._outputs(arrays)
            if self._prepared is None:
                shapes = [p.shape for p in (*self.signature.params, *results)]
                self._prepared = code.prepared_call(self.name, shapes)  # type: ignore[arg-type]
            start = time.perf_counter()
            self._prepared((*arrays, *outputs))
            self.last_seconds = time.perf_counter() - start
            return outputs
        checked = check_arguments(self.name, self.signature.params, arrays)
        rows = self.rows(checked)
        inputs = [a if a.flags.c_contiguous else np.ascontiguousarray(a) for a in checked]
        start = time.perf_counter()
        outputs = code.run(self.name, inputs, self.result_specs(rows))
        self.last_seconds = time.perf_counter() - start
        return tuple(outputs)


class CpuExecutable(Executable):
    """A program compiled for the CPU; see the module docstring."""

    target = "cpu"

    def __init__(
        self,
        code: mlir_bridge.CompiledCode,
        signatures: Sequence[CpuSignature],
        *,
        threads: int,
        lowered_text: str | Callable[[], str],
        front: Front | Callable[[], Front],
    ):
        self.jit = code
        """The machine code (`mlir_bridge.JitModule`, or a cached `LibraryModule`)."""
        self.threads = threads
        """Threads the parallel loops run on (1: sequential code)."""
        self._lowered_text = lowered_text
        self._front = front
        if isinstance(front, tuple):
            self.module, self.preparation, self.planned = front
        self.functions = {s.name: CpuFunction(self, s) for s in signatures}
        for name in self.functions:  # the JIT compiles lazily: pay for it here, not in calls
            code.lookup(name)

    @functools.cached_property
    def lowered_text(self) -> str:
        """The upstream MLIR it compiled."""
        text = self._lowered_text
        return text if isinstance(text, str) else text()

    def _compiled_front(self) -> None:
        """`module`, `preparation` and `planned`, computed again (a compile cache hit)."""
        assert callable(self._front)
        self.module, self.preparation, self.planned = self._front()

    @functools.cached_property
    def module(self) -> Any:  # type: ignore[override]
        self._compiled_front()
        return self.__dict__["module"]

    @functools.cached_property
    def preparation(self) -> Any:  # type: ignore[override]
        self._compiled_front()
        return self.__dict__["preparation"]

    @functools.cached_property
    def planned(self) -> Any:  # type: ignore[override]
        self._compiled_front()
        return self.__dict__["planned"]

    @staticmethod
    def from_entry(
        entry: Path, threads: int, libraries: Sequence[str], front: Front | Callable[[], Front]
    ) -> CpuExecutable:
        """The program of the compile cache's entry `entry` (a hit): no lowering, no LLVM."""
        program = json.loads((entry / compile_cache.PROGRAM).read_text())
        abi = {
            name: tuple(
                mlir_bridge.ArgSpec(t, None if shape is None else tuple(shape), dtype)
                for t, shape, dtype in specs
            )
            for name, specs in program["abi"].items()
        }
        code = mlir_bridge.LibraryModule(
            entry / compile_cache.LIBRARY,
            abi,
            symbol_prefix=HOST_SYMBOL_PREFIX,
            shared_libs=libraries,
        )
        return CpuExecutable(
            code,
            [CpuSignature.from_json(f) for f in program["functions"]],
            threads=threads,
            lowered_text=lambda: (entry / compile_cache.LOWERED).read_text(),
            front=front,
        )


def write_entry_program(
    directory: Path, executable: CpuExecutable, abi: Mapping[str, Sequence[Any]]
) -> None:
    """What runs a compile cache entry's library: the functions' signatures, their
    lowered parameters (`abi`: `mlir_bridge.ArgSpec`s by name) and the lowered text."""
    program = {
        "functions": [f.signature.to_json() for f in executable.functions.values()],
        "abi": {
            name: [[a.type, None if a.shape is None else list(a.shape), a.dtype] for a in specs]
            for name, specs in abi.items()
        },
    }
    (directory / compile_cache.PROGRAM).write_text(json.dumps(program))
    (directory / compile_cache.LOWERED).write_text(executable.lowered_text)


def cache_key(opt_level: int, threads: int, libraries: Sequence[str], **program: Any) -> str:
    """The compile cache key of a program compiled for this CPU by these accy sources;
    `program`: its planned text, or its source text and plan options (`text_key`)."""
    return compile_cache.key(
        target="cpu",
        accy=compile_cache.source_digest(),
        features=sorted(host_flags()),
        threads=threads,
        opt_level=opt_level,
        libraries=[str(library) for library in libraries],
        **program,
    )


def load_cached(
    text: bytes, source: dict[str, Any], threads: int | None, front: Callable[[], Front]
) -> tuple[CpuExecutable | None, str | None]:
    """A compile of the program `text` found in the compile cache by the text itself,
    before anything imports or plans it: `(executable, key)` on a hit, `(None, key)` on a
    miss (`key` names the entry `build` writes), `(None, None)` when the cache is off or
    `source` (how the text is read and planned: file name, plan options) is not plain
    data. `front` computes what the compiler made of the program when asked for."""
    cache = compile_cache.directory()
    if cache is None:
        return None, None
    try:
        described = json.dumps(source, sort_keys=True)
    except (TypeError, ValueError):  # a plan option that is not plain data (a Budget)
        return None, None
    threads = resolve_threads(threads)
    libraries = [async_runtime(threads)] if threads > 1 else []
    key = cache_key(
        OPT_LEVEL, threads, libraries, text=compile_cache.digest(text), source=described
    )
    entry = compile_cache.lookup_alias(cache, key)
    if entry is None:
        return None, key
    return CpuExecutable.from_entry(entry, threads, libraries, front), key
