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
size, the row count; results' `?` dims take it too); a mismatch is an `AccyInputError`
that is also a `TypeError` (`ArgumentTypeError`: count, dtype, keywords) or a
`ValueError` (`ArgumentShapeError`), and `mod["g"]` of no function `@g` one that is also a
`KeyError`. Calls into the CUDA runtime are checked with `accy_runtime_last_error()`; a
failure raises `CudaRuntimeError` with the runtime's message (no driver, no device, out of
memory, a failed launch...). A plan whose memory cannot be allocated raises
`OutOfMemoryError` (an `AccyMemoryError`). `close()` waits for the calls in flight, then
unloads; a call after it raises `ClosedModuleError`.

Each function `@f` is the library's `_mlir_ciface_accy_fn_f` (`function_symbol`): the
lowered host functions carry a prefix of their own (`accy.passes.lower.host.host_symbol`),
so no function name is a symbol of the C library, the runtimes or the export's glue.

The loader trusts nothing in the directory that it has not checked (`InvalidExportError`,
a `ValueError`, names the file and what is wrong): the manifest must follow accy's schema
(`validate_manifest`); it may name only the files accy writes, by their plain names
(`libaccy_program.so`, `libaccy_runtime.so`, `libaccy_async_runtime.so`, `<kernel>.ptx`),
as regular files inside the directory (no symbolic links); every library must have the
size and sha256 the manifest records and a sound ELF header before it is opened; and the
functions the manifest describes (names, symbols, argument and result shapes and dtypes)
must be those compiled into the program library, which `accy.export` records there as
the canonical JSON `accy_export_signature` (`export_signature`). A CPU export's code is
compiled for the CPU it was exported on: its manifest lists that CPU's instruction sets
(`instruction_sets`), and a machine lacking one is refused (`UnsupportedCpuError`) before
any library is opened.

This module imports only the standard library, numpy, ctypes and accy's error classes
(`accy.diagnostics`, which imports xdsl only for locations): it runs where no compiler
package (xdsl, MLIR bindings) is installed.
"""

from __future__ import annotations

import ctypes
import hashlib
import json
import os
import re
import stat
import struct
import threading
from pathlib import Path
from typing import Any

import numpy as np

from accy.diagnostics import AccyError, AccyInputError, AccyMemoryError
from accy.runtime.cpu_features import missing_instruction_sets
from accy.runtime.libraries import ASYNC_RUNTIME_LIBRARY_NAME, RUNTIME_LIBRARY_NAME
from accy.targets import TARGETS

__all__ = [
    "MANIFEST_FORMAT",
    "MANIFEST_NAME",
    "PROGRAM_LIBRARY_NAME",
    "SIGNATURE_SYMBOL",
    "ArgumentShapeError",
    "ArgumentTypeError",
    "ClosedModuleError",
    "CudaRuntimeError",
    "ExportedFunction",
    "ExportedModule",
    "InvalidExportError",
    "MemRefDescriptor",
    "OutOfMemoryError",
    "UnknownFunctionError",
    "UnsupportedCpuError",
    "device_sm_count",
    "export_files",
    "export_signature",
    "function_name",
    "function_symbol",
    "load",
    "read_manifest",
    "validate_manifest",
]

MANIFEST_NAME = "manifest.json"
MANIFEST_FORMAT = 3
"""3: each function's symbol is `_mlir_ciface_accy_fn_<name>`. 2: `_mlir_ciface_<name>`
(which the C library's functions of the same name could displace); `libraries` records
each library's size and sha256, and the program library holds `accy_export_signature`.
1: neither. Formats 1 and 2 are read only to let `accy.export` replace such an export."""
PROGRAM_LIBRARY_NAME = "libaccy_program.so"
SIGNATURE_SYMBOL = "accy_export_signature"
"""The program library's `const char[]`: `export_signature` of its manifest, as JSON."""
FUNCTION_SYMBOL_PREFIX = "_mlir_ciface_accy_fn_"
"""The C interface (`_mlir_ciface_`) of `accy.passes.lower.host.host_symbol`."""
DTYPES = (
    "float64",
    "float32",
    "float16",
    "bfloat16",
    "bool",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
)
"""The numpy names of accy's element types (`accy.dtypes.NUMPY_DTYPES`)."""
MANIFEST_MAX_BYTES = 64 << 20


class UnsupportedCpuError(RuntimeError):
    """A CPU export needs instruction sets this machine's CPU lacks (it was compiled for
    the CPU it was exported on)."""


class CudaRuntimeError(RuntimeError):
    """The CUDA runtime reported a failure (its first message since the call began)."""


def function_symbol(name: str, fmt: int = MANIFEST_FORMAT) -> str:
    """The program library's symbol of the function `@name` in a manifest of format
    `fmt`."""
    return f"{FUNCTION_SYMBOL_PREFIX}{name}" if fmt >= 3 else f"_mlir_ciface_{name}"


class ArgumentTypeError(AccyInputError, TypeError):
    """A compiled function called with the wrong number of arguments, with keywords, or
    with an argument that is not an array of its parameter's dtype; or a function looked
    up by something other than its name."""


class ArgumentShapeError(AccyInputError, ValueError):
    """An argument whose shape does not fit its parameter (or whose `?` dim disagrees
    with the call's row count)."""


class UnknownFunctionError(AccyInputError, KeyError):
    """`module[name]` where the module has no function `@name`."""


class ClosedModuleError(AccyError, ValueError):
    """A function of a loaded module called after `close()`."""


def function_name(key: object) -> str:
    """`key` of `module[key]` as a function name (a leading `@` dropped)."""
    if not isinstance(key, str):
        raise ArgumentTypeError(
            "functions are looked up by name (a str such as 'f' or '@f'), not by "
            f"{type(key).__name__} ({key!r:.60})"
        )
    return key.removeprefix("@")


def positional_only(name: str, keywords: dict[str, Any]) -> ArgumentTypeError:
    """The error for a call of `@name` with `keywords`."""
    return ArgumentTypeError(
        f"@{name} takes its arguments by position, not by keyword ({', '.join(keywords)})"
    )


class InvalidExportError(ValueError):
    """A directory is not a sound accy export: its manifest is malformed or not accy's
    format, names files accy does not write, or does not match its files (sizes, sha256,
    ELF headers, the signature compiled into the program library). `reason` is the
    message without the file name."""

    def __init__(self, path: str | os.PathLike[str], reason: str):
        super().__init__(f"{path}: {reason}")
        self.path = Path(path)
        self.reason = reason


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
            raise ArgumentTypeError("bfloat16 arrays need the ml_dtypes package") from None
        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(name)


def format_shape(shape: list) -> str:
    return "(" + ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"


def check_arguments(
    name: str, params: list[dict], arrays: tuple
) -> tuple[list[np.ndarray], int | None]:
    """The arguments as C-contiguous arrays and the call's row count (the size every `?`
    dim takes), or an `ArgumentTypeError`/`ArgumentShapeError` naming the argument."""
    if len(arrays) != len(params):
        raise ArgumentTypeError(f"@{name} takes {len(params)} arguments, got {len(arrays)}")
    rows: int | None = None
    checked = []
    for index, (param, value) in enumerate(zip(params, arrays)):
        expected = dtype_of(param["dtype"])
        try:
            array = np.asarray(value)
        except (TypeError, ValueError, OverflowError) as error:
            raise ArgumentTypeError(
                f"argument #{index} of @{name}: not an array of {expected} ({error})"
            ) from None
        if array.dtype != expected:
            raise ArgumentTypeError(
                f"argument #{index} of @{name}: dtype {array.dtype}, expected {expected}"
            )
        shape = param["shape"]
        fits = array.ndim == len(shape) and all(
            d == "?" or d == s for d, s in zip(shape, array.shape)
        )
        if not fits:
            raise ArgumentShapeError(
                f"argument #{index} of @{name}: shape {format_shape(list(array.shape))}, "
                f"expected {format_shape(shape)}"
            )
        for d, size in zip(shape, array.shape):
            if d == "?":
                if rows is not None and size != rows:
                    raise ArgumentShapeError(
                        f"argument #{index} of @{name}: a '?' dim is {size}, but another "
                        f"'?' of this call is {rows} (every '?' takes the row count)"
                    )
                rows = size
        checked.append(np.ascontiguousarray(array))
    return checked, rows


# ---------------------------------------------------------------------------------------
# The manifest and the export's files
# ---------------------------------------------------------------------------------------

_KERNEL_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")
_SHA256 = re.compile(r"[0-9a-f]{64}")
_FLAG = re.compile(r"[a-z0-9_]+")


def _is_int(value: Any) -> bool:
    return type(value) is int


def _validate_tensors(path: Path, where: str, specs: Any) -> None:
    if not isinstance(specs, list):
        raise InvalidExportError(path, f"{where} must be a list, got {_kind(specs)}")
    for index, spec in enumerate(specs):
        what = f"{where}[{index}]"
        if not isinstance(spec, dict) or set(spec) != {"shape", "dtype"}:
            raise InvalidExportError(
                path, f"{what} must be an object with exactly 'shape' and 'dtype'"
            )
        shape = spec["shape"]
        if not isinstance(shape, list) or not all(
            d == "?" or (_is_int(d) and 0 <= d < 1 << 62) for d in shape
        ):
            raise InvalidExportError(
                path, f"{what}.shape must be a list of sizes (integers >= 0) or '?', got {shape!r}"
            )
        if spec["dtype"] not in DTYPES:
            raise InvalidExportError(
                path, f"{what}.dtype must be one of {', '.join(DTYPES)}, got {spec['dtype']!r}"
            )


def _kind(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def validate_manifest(
    manifest: Any, path: str | os.PathLike[str], formats: tuple[int, ...] = (MANIFEST_FORMAT,)
) -> dict:
    """`manifest` (parsed JSON) if it follows accy's schema in one of `formats`, else an
    `InvalidExportError` naming `path` and the first thing wrong. Only the names accy
    writes are accepted for files, and each function's symbol is `function_symbol`'s."""
    path = Path(path)
    if not isinstance(manifest, dict):
        raise InvalidExportError(path, f"the manifest must be a JSON object, got {_kind(manifest)}")
    for key in ("format", "target", "library", "functions"):
        if key not in manifest:
            raise InvalidExportError(path, f"the manifest has no '{key}'")
    fmt = manifest["format"]
    if not _is_int(fmt) or fmt not in formats:
        raise InvalidExportError(
            path,
            f"manifest format {fmt!r}, this loader reads format "
            + " or ".join(str(f) for f in formats),
        )
    target = manifest["target"]
    if not isinstance(target, str) or target not in TARGETS:
        raise InvalidExportError(
            path, f"target must be one of {', '.join(TARGETS)}, got {target!r}"
        )

    def expect(key: str, allowed: tuple, wanted: str) -> None:
        value = manifest.get(key)
        if value not in allowed:
            raise InvalidExportError(
                path, f"'{key}' must be {wanted} (the name accy writes), got {value!r}"
            )

    expect("library", (PROGRAM_LIBRARY_NAME,), repr(PROGRAM_LIBRARY_NAME))
    if TARGETS[target].device_memory:
        expect("runtime", (RUNTIME_LIBRARY_NAME,), f"{RUNTIME_LIBRARY_NAME!r} for {target}")
        expect("async_runtime", (None,), f"null for {target}")
        if not isinstance(manifest.get("chip", ""), str):
            raise InvalidExportError(path, "'chip' must be a string")
    else:
        expect("runtime", (None,), f"null for {target}")
        expect(
            "async_runtime",
            (None, ASYNC_RUNTIME_LIBRARY_NAME),
            f"null or {ASYNC_RUNTIME_LIBRARY_NAME!r}",
        )
        threads = manifest.get("threads", 1)
        if not _is_int(threads) or threads < 1:
            raise InvalidExportError(path, f"'threads' must be an integer >= 1, got {threads!r}")
        sets = manifest.get("instruction_sets", [])
        if not isinstance(sets, list) or not all(
            isinstance(f, str) and _FLAG.fullmatch(f) for f in sets
        ):
            raise InvalidExportError(
                path, f"'instruction_sets' must be a list of CPU flag names, got {sets!r}"
            )
    kernels = manifest.get("kernels", {})
    if not isinstance(kernels, dict):
        raise InvalidExportError(path, f"'kernels' must be an object, got {_kind(kernels)}")
    if not TARGETS[target].device_memory and kernels:
        raise InvalidExportError(path, f"'kernels' must be empty for {target}")
    for name, file in kernels.items():
        if not _KERNEL_NAME.fullmatch(name) or file != f"{name}.ptx":
            raise InvalidExportError(
                path,
                f"kernel {name!r}: its file must be '<name>.ptx' with a plain name "
                f"(letters, digits, '_', '.', '-'), got {file!r}",
            )
    constant_bytes = manifest.get("constant_bytes", 0)
    if not _is_int(constant_bytes) or constant_bytes < 0:
        raise InvalidExportError(
            path, f"'constant_bytes' must be an integer >= 0, got {constant_bytes!r}"
        )
    functions = manifest["functions"]
    if not isinstance(functions, dict):
        raise InvalidExportError(path, f"'functions' must be an object, got {_kind(functions)}")
    for name, entry in functions.items():
        where = f"function {name!r}"
        if not name or "\0" in name:
            raise InvalidExportError(path, f"{where}: a function name must be non-empty")
        if not isinstance(entry, dict):
            raise InvalidExportError(path, f"{where} must be an object, got {_kind(entry)}")
        for key in ("symbol", "args", "results"):
            if key not in entry:
                raise InvalidExportError(path, f"{where} has no '{key}'")
        symbol = function_symbol(name, fmt)
        if entry["symbol"] != symbol:
            raise InvalidExportError(
                path, f"{where}: symbol must be '{symbol}', got {entry['symbol']!r}"
            )
        _validate_tensors(path, f"{where} args", entry["args"])
        _validate_tensors(path, f"{where} results", entry["results"])
        if not isinstance(entry.get("plan", {}), dict):
            raise InvalidExportError(path, f"{where}: 'plan' must be an object")
    if fmt >= 2:
        records = manifest.get("libraries")
        names = export_libraries(manifest)
        if not isinstance(records, dict) or sorted(records) != sorted(names):
            raise InvalidExportError(
                path,
                "'libraries' must record exactly the export's libraries "
                f"({', '.join(names)}), got {records!r}",
            )
        for name, record in records.items():
            if (
                not isinstance(record, dict)
                or set(record) != {"bytes", "sha256"}
                or not _is_int(record["bytes"])
                or record["bytes"] < 0
                or not isinstance(record["sha256"], str)
                or not _SHA256.fullmatch(record["sha256"])
            ):
                raise InvalidExportError(
                    path,
                    f"libraries[{name!r}] must be {{'bytes': size, 'sha256': 64 hex digits}}, "
                    f"got {record!r}",
                )
    return manifest


def export_libraries(manifest: dict) -> list[str]:
    """The shared libraries of a (validated) manifest's export, the program's first."""
    names = [manifest["library"]]
    for key in ("runtime", "async_runtime"):
        if manifest.get(key) is not None:
            names.append(manifest[key])
    return names


def export_files(manifest: dict) -> list[str]:
    """Every file of a (validated) manifest's export: its libraries, its kernels' PTX
    and the manifest."""
    return [*export_libraries(manifest), *manifest.get("kernels", {}).values(), MANIFEST_NAME]


def export_signature(manifest: dict) -> str:
    """The canonical JSON of what the program library's functions take and return:
    target, and per function its symbol and its arguments' and results' shapes and
    dtypes. `accy.export` compiles it into the library as `accy_export_signature`."""
    signature = {
        "target": manifest["target"],
        "functions": {
            name: {
                "symbol": entry["symbol"],
                "args": [{"shape": a["shape"], "dtype": a["dtype"]} for a in entry["args"]],
                "results": [{"shape": r["shape"], "dtype": r["dtype"]} for r in entry["results"]],
            }
            for name, entry in manifest["functions"].items()
        },
    }
    return json.dumps(signature, sort_keys=True, separators=(",", ":"), ensure_ascii=True)


def _regular_file(path: Path) -> os.stat_result:
    """`path`'s status if it is a regular file (not a symbolic link), else an error."""
    try:
        status = os.lstat(path)
    except FileNotFoundError:
        raise FileNotFoundError(f"{path}: missing (the export's manifest names it)") from None
    if stat.S_ISLNK(status.st_mode):
        raise InvalidExportError(
            path, "is a symbolic link; an export's files must be regular files in its directory"
        )
    if not stat.S_ISREG(status.st_mode):
        raise InvalidExportError(path, "is not a regular file")
    return status


def read_manifest(
    directory: str | os.PathLike[str], formats: tuple[int, ...] = (MANIFEST_FORMAT,)
) -> dict:
    """The validated manifest of the export in `directory` (see `validate_manifest`);
    `FileNotFoundError` when there is none, `InvalidExportError` when it is unsound."""
    path = Path(directory) / MANIFEST_NAME
    try:
        status = _regular_file(path)
    except FileNotFoundError:
        raise FileNotFoundError(f"{directory} is not an accy export: no {MANIFEST_NAME}") from None
    if status.st_size > MANIFEST_MAX_BYTES:
        raise InvalidExportError(path, f"is {status.st_size} bytes; a manifest is far smaller")
    try:
        manifest = json.loads(path.read_bytes().decode("utf-8"))
    except UnicodeDecodeError as error:
        raise InvalidExportError(path, f"is not UTF-8 text ({error.reason})") from None
    except json.JSONDecodeError as error:
        raise InvalidExportError(
            path, f"is not valid JSON ({error.msg} at line {error.lineno} column {error.colno})"
        ) from None
    except RecursionError:
        raise InvalidExportError(path, "is not valid JSON (nested too deeply)") from None
    return validate_manifest(manifest, path, formats)


_ELF_HEADER = struct.Struct("<16sHHIQQQIHHHHHH")
_ELF_PROGRAM_HEADER = struct.Struct("<IIQQQQQQ")


def check_elf(path: Path, data: bytes) -> None:
    """Refuse `data` (the file `path`) unless it is a 64-bit little-endian ELF shared
    object whose program headers, segments and section headers lie inside the file (a
    truncated library would fault in the dynamic loader)."""
    size = len(data)
    if size < _ELF_HEADER.size or data[:4] != b"\x7fELF":
        raise InvalidExportError(path, "is not an ELF shared library")
    (ident, e_type, _machine, _version, _entry, phoff, shoff, _flags, _ehsize, phentsize,
     phnum, shentsize, shnum, _shstrndx) = _ELF_HEADER.unpack_from(data)  # fmt: skip
    if ident[4] != 2 or ident[5] != 1:
        raise InvalidExportError(path, "is not a 64-bit little-endian ELF file")
    if e_type != 3:
        raise InvalidExportError(path, f"is not an ELF shared library (e_type {e_type})")
    if phnum == 0 or phentsize != _ELF_PROGRAM_HEADER.size or phoff + phnum * phentsize > size:
        raise InvalidExportError(path, "its ELF program headers do not fit in the file")
    if shoff and shoff + shnum * shentsize > size:
        raise InvalidExportError(
            path, "its ELF section headers lie past the end of the file (truncated?)"
        )
    for index in range(phnum):
        _type, _pflags, offset, _vaddr, _paddr, filesz, _memsz, _align = (
            _ELF_PROGRAM_HEADER.unpack_from(data, phoff + index * phentsize)
        )
        if offset + filesz > size:
            raise InvalidExportError(
                path,
                f"its ELF segment #{index} ends at byte {offset + filesz}, past the end of "
                f"the file ({size} bytes; truncated?)",
            )


def check_library(path: Path, record: dict) -> None:
    """Refuse the library `path` unless it is a regular file of the size and sha256 in
    `record` (its manifest entry) with a sound ELF header; run before it is opened."""
    _regular_file(path)
    data = path.read_bytes()
    if len(data) != record["bytes"]:
        raise InvalidExportError(
            path,
            f"is {len(data)} bytes, but the manifest records {record['bytes']} "
            "(truncated or replaced)",
        )
    if hashlib.sha256(data).hexdigest() != record["sha256"]:
        raise InvalidExportError(
            path, "its sha256 differs from the one the manifest records (the file was altered)"
        )
    check_elf(path, data)


def _spec_text(spec: Any) -> str:
    if isinstance(spec, dict) and isinstance(spec.get("shape"), list):
        return f"{spec.get('dtype')}{format_shape(spec['shape'])}"
    return repr(spec)


def _signature_mismatch(expected: dict, found: Any) -> str:
    """What differs between the manifest's signature and the library's (first found)."""
    if not isinstance(found, dict) or not isinstance(found.get("functions"), dict):
        return "the library's signature is not accy's"
    if found.get("target") != expected["target"]:
        return (
            f"the library is for {found.get('target')!r}, the manifest says {expected['target']!r}"
        )
    mine, theirs = expected["functions"], found["functions"]
    if sorted(mine) != sorted(theirs):
        return (
            f"the manifest lists functions {', '.join('@' + n for n in sorted(mine)) or 'none'}, "
            f"the library has {', '.join('@' + n for n in sorted(theirs)) or 'none'}"
        )
    for name in sorted(mine):
        a, b = mine[name], theirs[name]
        if a.get("symbol") != b.get("symbol"):
            return f"@{name}: symbol {a['symbol']!r} in the manifest, {b.get('symbol')!r} compiled"
        for side, label in (("args", "argument"), ("results", "result")):
            if len(a[side]) != len(b.get(side, [])):
                return (
                    f"@{name}: {len(a[side])} {label}s in the manifest, "
                    f"{len(b.get(side, []))} compiled"
                )
            for index, (x, y) in enumerate(zip(a[side], b[side])):
                if x != y:
                    return (
                        f"@{name} {label} #{index}: {_spec_text(x)} in the manifest, "
                        f"{_spec_text(y)} compiled"
                    )
    return "the signatures differ"


# ---------------------------------------------------------------------------------------
# Loaded programs
# ---------------------------------------------------------------------------------------


class OutOfMemoryError(AccyMemoryError):
    """A call could not allocate the memory its plan needs; nothing ran."""


class CallGate:
    """Keeps a loaded library open while its functions run: `enter` counts a call in
    (`ClosedModuleError` once `close` began), `leave` counts it out, and `close` refuses
    new calls and returns once none is in. So the library is unloaded only while no call
    runs in it, whichever thread closes it."""

    def __init__(self, what: str, remedy: str):
        self.what = what
        """What closes (`the export DIR`), for the error."""
        self.remedy = remedy
        """What to do instead (`load it again`)."""
        self.closed = False
        self._calls = 0
        self._condition = threading.Condition()

    def enter(self, name: str) -> None:
        with self._condition:
            if self.closed:
                raise ClosedModuleError(
                    f"@{name} called after {self.what} was closed; {self.remedy}"
                )
            self._calls += 1

    def leave(self) -> None:
        with self._condition:
            self._calls -= 1
            if not self._calls:
                self._condition.notify_all()

    def close(self) -> None:
        with self._condition:
            self.closed = True
            self._condition.wait_for(lambda: not self._calls)


class ExportedFunction:
    """One exported function: `f(*arrays) -> tuple of arrays`."""

    def __init__(self, module: ExportedModule, name: str, entry: dict):
        self.module = module
        self.name = name
        self.params: list[dict] = entry["args"]
        self.results: list[dict] = entry["results"]
        self.plan: dict = entry.get("plan", {})
        try:
            self._symbol = getattr(module.library, entry["symbol"])
        except AttributeError:
            raise InvalidExportError(
                module.path / module.manifest["library"], f"does not define {entry['symbol']}"
            ) from None
        self._symbol.restype = None

    def __call__(self, *arrays: Any, **keywords: Any) -> tuple[np.ndarray, ...]:
        if keywords:
            raise positional_only(self.name, keywords)
        inputs, rows = check_arguments(self.name, self.params, arrays)
        outputs = []
        for result in self.results:
            shape = [rows if d == "?" else d for d in result["shape"]]
            if None in shape:
                raise ValueError(f"@{self.name}: a result has a '?' dim but no argument does")
            outputs.append(np.empty(shape, dtype=dtype_of(result["dtype"])))
        descriptors = [MemRefDescriptor(a) for a in (*inputs, *outputs)]
        pointers = [ctypes.byref(d) for d in descriptors]
        module = self.module
        module.gate.enter(self.name)
        try:
            errors = module.errors
            if errors is None:  # the CPU: calls run at once, in any threads
                self._symbol(*pointers)
            else:  # the CUDA runtime's error record is the process's: one call at a time
                with module.lock:
                    errors.clear()
                    self._symbol(*pointers)
                    errors.check(f"running @{self.name}")
            failed = module.take_allocation_failure()
        finally:
            module.gate.leave()
        if failed >= 0:
            raise OutOfMemoryError(
                f"@{self.name} could not allocate {failed} bytes for its plan (the arena or "
                "a separately allocated buffer); nothing ran"
            )
        return tuple(outputs)

    def __repr__(self) -> str:
        args = ", ".join(f"{p['dtype']}{format_shape(p['shape'])}" for p in self.params)
        return f"<accy exported function @{self.name}({args}) [{self.module.target}]>"


class ExportedModule:
    """A loaded export: functions by name (`mod["f"]`, `mod.f`) and its manifest."""

    def __init__(self, path: Path, manifest: dict):
        self.path = path
        self.manifest = validate_manifest(manifest, path / MANIFEST_NAME)
        self.target: str = manifest["target"]
        self.lock = threading.Lock()
        """Held by each call on CUDA (the runtime's error record is one per process)."""
        self.gate = CallGate(f"the export {path}", "load it again")
        """Counts the calls running in the library (see `close`)."""
        self.errors: RuntimeErrors | None = None
        missing = missing_instruction_sets(manifest.get("instruction_sets", []))
        if missing:
            raise UnsupportedCpuError(
                f"{path}: this CPU lacks {', '.join(missing)}, which the export's code "
                "may use (it is compiled for the CPU it was exported on); export it again "
                "on this machine"
            )
        # Every library is checked (regular file, size, sha256, ELF headers) before any
        # is opened: the program library's dependencies resolve to these copies.
        for name in export_libraries(manifest):
            check_library(path / name, manifest["libraries"][name])
        runtime = manifest.get("runtime")
        if runtime is not None:
            # Loaded first, by path: the program library's dependency resolves to it.
            self.runtime_library = _open(path / runtime, os.RTLD_GLOBAL)
            self.errors = RuntimeErrors(self.runtime_library)
            self.errors.clear()
        # For CUDA the library's constructor loads the kernels (mgpuModuleLoadJIT).
        library_path = path / manifest["library"]
        self.library = _open(library_path, os.RTLD_LOCAL)
        if self.errors is not None:
            self.errors.check(f"loading the kernels of {path}")
        self.functions = {}
        self._check_signature(library_path)
        self._take_failure = getattr(self.library, "accy_take_allocation_failure", None)
        if self._take_failure is not None:
            self._take_failure.restype = ctypes.c_int64
            self._take_failure.argtypes = []
        self.functions = {
            name: ExportedFunction(self, name, entry)
            for name, entry in manifest["functions"].items()
        }

    def take_allocation_failure(self) -> int:
        """The bytes that the last call on this thread could not allocate, or -1."""
        return -1 if self._take_failure is None else int(self._take_failure())

    def _check_signature(self, library_path: Path) -> None:
        """Refuse a manifest whose functions are not those compiled into the library."""
        try:
            cell = ctypes.c_char.in_dll(self.library, SIGNATURE_SYMBOL)
            text = ctypes.string_at(ctypes.addressof(cell))
        except ValueError:
            self._unload_after_refusal()
            raise InvalidExportError(
                library_path, f"has no {SIGNATURE_SYMBOL} (it was not linked by accy.export)"
            ) from None
        expected = export_signature(self.manifest)
        if text == expected.encode():
            return
        self._unload_after_refusal()
        try:
            found = json.loads(text)
        except (UnicodeDecodeError, json.JSONDecodeError):
            found = None
        raise InvalidExportError(
            self.path / MANIFEST_NAME,
            f"does not describe the functions compiled into {library_path.name}: "
            + _signature_mismatch(json.loads(expected), found),
        )

    def _unload_after_refusal(self) -> None:
        try:
            self.close()
        except CudaRuntimeError:
            pass  # the refusal is the error to report

    @property
    def function_names(self) -> list[str]:
        return list(self.functions)

    def close(self) -> None:
        """Unload the program library (its destructor unloads the CUDA kernels) once the
        calls in flight have returned; a call afterwards raises `ClosedModuleError`. Done
        at process exit otherwise."""
        import _ctypes

        self.gate.close()
        library = self.__dict__.pop("library", None)
        if library is not None:
            _ctypes.dlclose(library._handle)
            if self.errors is not None:
                self.errors.check(f"unloading the kernels of {self.path}")

    def __enter__(self):
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def __getitem__(self, key: str) -> ExportedFunction:
        name = function_name(key)
        if name not in self.functions:
            raise UnknownFunctionError(
                f"no function @{name} in {self.path}; it has: "
                + (", ".join(f"@{n}" for n in self.functions) or "none")
            )
        return self.functions[name]

    def __getattr__(self, name: str) -> ExportedFunction:
        functions = self.__dict__.get("functions", {})
        if name in functions:
            return functions[name]
        raise AttributeError(name)

    def __repr__(self) -> str:
        return f"<accy exported module {self.path} [{self.target}]: {', '.join(self.functions)}>"


def _open(path: Path, mode: int) -> ctypes.CDLL:
    try:
        return ctypes.CDLL(str(path), mode=mode)
    except OSError as error:
        raise OSError(f"cannot load {path}: {error}") from None


def load(path: str | os.PathLike[str]) -> ExportedModule:
    """Load a directory written by `accy.export` (see the module docstring): a
    `FileNotFoundError` when it or one of its files is missing, an `InvalidExportError`
    (a `ValueError`) when its manifest or files are not sound."""
    directory = Path(path)
    if not directory.is_dir():
        raise FileNotFoundError(f"{directory} is not an accy export: no such directory")
    directory = directory.resolve()
    return ExportedModule(directory, read_manifest(directory))


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
