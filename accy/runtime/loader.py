"""Load and call programs compiled ahead of time by `accy.export`.

    mod = accy.runtime.load("out/program")      # a directory written by accy.export
    (y,) = mod["f"](x)                          # or mod.f(x): numpy arrays in, a tuple out
    mod.manifest["functions"]["f"]["plan"]      # what the plan decided
    mod.close()                                 # unload (also at process exit)

An exported directory holds `manifest.json`, the program's shared library (host code; for
the CUDA target with its kernels' PTX embedded, loaded by the library's constructor), a
copy of `libaccy_runtime.so` for the CUDA target (found through the library's
`$ORIGIN` run path), and each kernel module's PTX as `.ptx` (for inspection).

Every function takes its inputs and returns its results as numpy arrays. Arguments are
checked against the manifest before anything runs: count, dtype (exactly; no silent
casts) and shape (a `?` dim takes any size, but every `?` of one call takes the same
size, the row count; results' `?` dims take it too). Calls into the CUDA runtime are
checked with `accy_runtime_last_error()`; a failure raises `CudaRuntimeError` with the
runtime's message (no driver, no device, out of memory, a failed launch...).

This module imports only the standard library, numpy and ctypes: it runs where no
compiler package (xdsl, MLIR bindings) is installed.
"""

from __future__ import annotations

import ctypes
import json
import os
import threading
from pathlib import Path
from typing import Any

import numpy as np

__all__ = [
    "MANIFEST_NAME",
    "CudaRuntimeError",
    "ExportedFunction",
    "ExportedModule",
    "MemRefDescriptor",
    "device_sm_count",
    "load",
]

MANIFEST_NAME = "manifest.json"
MANIFEST_FORMAT = 1


class CudaRuntimeError(RuntimeError):
    """The CUDA runtime reported a failure (its first message since the call began)."""


# ---------------------------------------------------------------------------------------
# Memref descriptors (the C interface of MLIR functions)
# ---------------------------------------------------------------------------------------

_DESCRIPTOR_TYPES: dict[int, type[ctypes.Structure]] = {}


def descriptor_type(rank: int) -> type[ctypes.Structure]:
    """`StridedMemRefType<T, rank>`: allocated and aligned pointers, an i64 offset, then
    `rank` i64 sizes and `rank` i64 strides (in elements)."""
    if rank not in _DESCRIPTOR_TYPES:
        fields: list[tuple[str, Any]] = [
            ("allocated", ctypes.c_void_p),
            ("aligned", ctypes.c_void_p),
            ("offset", ctypes.c_int64),
        ]
        if rank:
            fields += [("sizes", ctypes.c_int64 * rank), ("strides", ctypes.c_int64 * rank)]
        _DESCRIPTOR_TYPES[rank] = type(f"MemRef{rank}D", (ctypes.Structure,), {"_fields_": fields})
    return _DESCRIPTOR_TYPES[rank]


def MemRefDescriptor(array: np.ndarray) -> ctypes.Structure:
    """A descriptor viewing a C-contiguous `array` (no copy; keep the array alive)."""
    assert array.flags.c_contiguous
    descriptor = descriptor_type(array.ndim)()
    descriptor.allocated = descriptor.aligned = array.ctypes.data
    descriptor.offset = 0
    if array.ndim:
        descriptor.sizes[:] = list(array.shape)
        descriptor.strides[:] = [s // array.itemsize for s in array.strides]
    return descriptor


# ---------------------------------------------------------------------------------------
# The CUDA runtime's error record
# ---------------------------------------------------------------------------------------


class RuntimeErrors:
    """`accy_runtime_clear_error` / `accy_runtime_last_error` of libaccy_runtime.so."""

    def __init__(self, library: ctypes.CDLL):
        self.library = library
        library.accy_runtime_last_error.restype = ctypes.c_char_p
        library.accy_runtime_last_error.argtypes = []
        library.accy_runtime_clear_error.restype = None
        library.accy_runtime_clear_error.argtypes = []

    def clear(self) -> None:
        self.library.accy_runtime_clear_error()

    def check(self, what: str) -> None:
        message = self.library.accy_runtime_last_error()
        if message is not None:
            self.clear()
            raise CudaRuntimeError(f"{what}: {message.decode(errors='replace')}")


# ---------------------------------------------------------------------------------------
# Arguments
# ---------------------------------------------------------------------------------------


def dtype_of(name: str) -> np.dtype:
    """A manifest dtype name as a numpy dtype (`bfloat16` needs `ml_dtypes`)."""
    if name == "bfloat16":
        try:
            import ml_dtypes
        except ImportError:
            raise TypeError("bfloat16 arrays need the ml_dtypes package") from None
        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(name)


def format_shape(shape: list) -> str:
    return "(" + ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"


def check_arguments(
    name: str, params: list[dict], arrays: tuple
) -> tuple[list[np.ndarray], int | None]:
    """The arguments as C-contiguous arrays and the call's row count (the size every `?`
    dim takes), or a `TypeError`/`ValueError` naming the argument."""
    if len(arrays) != len(params):
        raise TypeError(f"@{name} takes {len(params)} arguments, got {len(arrays)}")
    rows: int | None = None
    checked = []
    for index, (param, value) in enumerate(zip(params, arrays)):
        array = np.asarray(value)
        expected = dtype_of(param["dtype"])
        if array.dtype != expected:
            raise TypeError(
                f"argument #{index} of @{name}: dtype {array.dtype}, expected {expected}"
            )
        shape = param["shape"]
        fits = array.ndim == len(shape) and all(
            d == "?" or d == s for d, s in zip(shape, array.shape)
        )
        if not fits:
            raise ValueError(
                f"argument #{index} of @{name}: shape {format_shape(list(array.shape))}, "
                f"expected {format_shape(shape)}"
            )
        for d, size in zip(shape, array.shape):
            if d == "?":
                if rows is not None and size != rows:
                    raise ValueError(
                        f"argument #{index} of @{name}: a '?' dim is {size}, but another "
                        f"'?' of this call is {rows} (every '?' takes the row count)"
                    )
                rows = size
        checked.append(np.ascontiguousarray(array))
    return checked, rows


# ---------------------------------------------------------------------------------------
# Loaded programs
# ---------------------------------------------------------------------------------------


class ExportedFunction:
    """One exported function: `f(*arrays) -> tuple of arrays`."""

    def __init__(self, module: ExportedModule, name: str, entry: dict):
        self.module = module
        self.name = name
        self.params: list[dict] = entry["args"]
        self.results: list[dict] = entry["results"]
        self.plan: dict = entry.get("plan", {})
        self._symbol = getattr(module.library, entry["symbol"])
        self._symbol.restype = None

    def __call__(self, *arrays: Any) -> tuple[np.ndarray, ...]:
        inputs, rows = check_arguments(self.name, self.params, arrays)
        outputs = []
        for result in self.results:
            shape = [rows if d == "?" else d for d in result["shape"]]
            if None in shape:
                raise ValueError(f"@{self.name}: a result has a '?' dim but no argument does")
            outputs.append(np.empty(shape, dtype=dtype_of(result["dtype"])))
        descriptors = [MemRefDescriptor(a) for a in (*inputs, *outputs)]
        with self.module.lock:
            errors = self.module.errors
            if errors is not None:
                errors.clear()
            self._symbol(*[ctypes.byref(d) for d in descriptors])
            if errors is not None:
                errors.check(f"running @{self.name}")
        return tuple(outputs)

    def __repr__(self) -> str:
        args = ", ".join(f"{p['dtype']}{format_shape(p['shape'])}" for p in self.params)
        return f"<accy exported function @{self.name}({args}) [{self.module.target}]>"


class ExportedModule:
    """A loaded export: functions by name (`mod["f"]`, `mod.f`) and its manifest."""

    def __init__(self, path: Path, manifest: dict):
        self.path = path
        self.manifest = manifest
        self.target: str = manifest["target"]
        self.lock = threading.Lock()
        self.errors: RuntimeErrors | None = None
        runtime = manifest.get("runtime")
        if runtime is not None:
            # Loaded first, by path: the program library's dependency resolves to it.
            self.runtime_library = ctypes.CDLL(str(path / runtime), mode=os.RTLD_GLOBAL)
            self.errors = RuntimeErrors(self.runtime_library)
            self.errors.clear()
        # For CUDA the library's constructor loads the kernels (mgpuModuleLoadJIT).
        self.library = ctypes.CDLL(str(path / manifest["library"]))
        if self.errors is not None:
            self.errors.check(f"loading the kernels of {path}")
        self.functions = {
            name: ExportedFunction(self, name, entry)
            for name, entry in manifest["functions"].items()
        }

    @property
    def function_names(self) -> list[str]:
        return list(self.functions)

    def close(self) -> None:
        """Unload the program library (its destructor unloads the CUDA kernels); the
        functions cannot be called afterwards. Done at process exit otherwise."""
        import _ctypes

        library = self.__dict__.pop("library", None)
        if library is not None:
            self.functions = {}
            _ctypes.dlclose(library._handle)
            if self.errors is not None:
                self.errors.check(f"unloading the kernels of {self.path}")

    def __enter__(self):
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def __getitem__(self, name: str) -> ExportedFunction:
        name = name.removeprefix("@")
        if name not in self.functions:
            raise KeyError(
                f"no function @{name} in {self.path} (or it was closed); it has: "
                + ", ".join(f"@{n}" for n in self.functions)
            )
        return self.functions[name]

    def __getattr__(self, name: str) -> ExportedFunction:
        functions = self.__dict__.get("functions", {})
        if name in functions:
            return functions[name]
        raise AttributeError(name)

    def __repr__(self) -> str:
        return f"<accy exported module {self.path} [{self.target}]: {', '.join(self.functions)}>"


def load(path: str | os.PathLike[str]) -> ExportedModule:
    """Load a directory written by `accy.export` (see the module docstring)."""
    directory = Path(path)
    manifest_path = directory / MANIFEST_NAME
    if not manifest_path.is_file():
        raise FileNotFoundError(f"{directory} is not an accy export: no {MANIFEST_NAME}")
    manifest = json.loads(manifest_path.read_text())
    if manifest.get("format") != MANIFEST_FORMAT:
        raise ValueError(
            f"{manifest_path}: manifest format {manifest.get('format')!r}, this loader "
            f"reads format {MANIFEST_FORMAT}"
        )
    return ExportedModule(directory.resolve(), manifest)


def device_sm_count() -> int | None:
    """The multiprocessor count of the GPU that `libaccy_runtime.so` drives (the
    `sm_count` of workspace expressions), or None when no driver or GPU answers (the
    runtime prints why)."""
    from accy.runtime.libraries import runtime_library_path

    library = ctypes.CDLL(str(runtime_library_path()))
    library.accy_runtime_device_sm_count.restype = ctypes.c_int
    library.accy_runtime_device_sm_count.argtypes = []
    errors = RuntimeErrors(library)
    errors.clear()
    count = library.accy_runtime_device_sm_count()
    errors.clear()
    return count if count > 0 else None
