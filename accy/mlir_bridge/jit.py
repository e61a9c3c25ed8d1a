"""Running lowered code in-process (`JitModule`, `PreparedCall`) and dumping it as an
object file (`dump_object`), with the bindings' ExecutionEngine.

The calling convention is the out-param one of accy's CPU lowering (`JitModule`'s
docstring); every call checks afterwards whether the host code reported a failed
allocation of its plan (`ALLOCATION_FAILED`, `check_allocation`). ORC's own errors, which
it writes to file descriptor 2, are read back where they explain a failed lookup.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import os
import re
import sys
import tempfile
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from accy.mlir_bridge.bindings import _host, _Session
from accy.mlir_bridge.descriptors import (
    _PACKED_ENTRY,
    _SCALAR_CTYPES,
    ArgSpec,
    _np,
    _same_integer_storage,
    _signatures,
    memref_arg,
)
from accy.mlir_bridge.errors import UpstreamMlirError
from accy.mlir_bridge.lowering import _lower
from accy.mlir_bridge.pipelines import MGPU_RUNTIME_SYMBOLS, Target
from accy.runtime.abi import ALLOCATION_FAILED

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np


_MISSING_SYMBOLS = re.compile(r"Symbols not found: \[([^\]]*)\]")
"""What ORC prints on stderr when code it generates calls a function nothing defines."""


class _Captured:
    text = ""


@contextlib.contextmanager
def _stderr_captured() -> Iterator[_Captured]:
    """Collect what native code writes to file descriptor 2 meanwhile (ORC's errors),
    and write it through to stderr afterwards, so nothing is lost."""
    captured = _Captured()
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as sink:
        os.dup2(sink.fileno(), 2)
        try:
            yield captured
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            sink.seek(0)
            data = sink.read()
            captured.text = data.decode(errors="replace")
            if data:
                os.write(2, data)


_failed_allocation = threading.local()


@ctypes.CFUNCTYPE(None, ctypes.c_int64)
def _allocation_failed(size: int) -> None:
    # Called from the host code, on the thread that called the function.
    _failed_allocation.size = int(size)


def check_allocation(name: str) -> None:
    """Raise `AccyMemoryError` when the last call of `@name` on this thread could not
    allocate the memory of its plan."""
    size = getattr(_failed_allocation, "size", None)
    if size is not None:
        _failed_allocation.size = None
        raise allocation_error(name, size)


def allocation_error(name: str, size: int) -> Exception:
    """The `AccyMemoryError` of a call of `@name` that could not allocate `size` bytes."""
    from accy.diagnostics import AccyMemoryError

    return AccyMemoryError(
        f"@{name} could not allocate {size} bytes for its plan (the arena or a "
        "separately allocated buffer); nothing ran"
    )


class CompiledCode(ABC):
    """Machine code of a lowered module whose functions `run`, `invoke` and
    `prepared_call` call through their packed wrappers (see `JitModule` for the calling
    convention); subclasses say where the code is (`lookup`) and how a failed allocation
    is reported (`check_allocation`)."""

    symbol_prefix: str
    signatures: dict[str, tuple[ArgSpec, ...]]

    @abstractmethod
    def lookup(self, name: str) -> int:
        """Address of the packed wrapper of ``c_interface(name)`` (0 if absent)."""

    def check_allocation(self, name: str) -> None:
        """Raise `AccyMemoryError` when the last call of `@name` on this thread could
        not allocate its plan."""
        check_allocation(name)

    def c_interface(self, name: str) -> str:
        """The symbol of the C interface of the function NAME."""
        return f"_mlir_ciface_{self.symbol_prefix}{name}"

    def invoke(self, name: str, *ctypes_args: Any) -> None:
        """Call ``c_interface(name)`` with each argument given as a ctypes pointer to
        its value (memrefs: ``memref_arg(array)``)."""
        addr = self.lookup(name)
        if not addr:
            raise UpstreamMlirError(
                f"looking up @{name}",
                f"no function {self.c_interface(name)} (is @{self.symbol_prefix}{name} "
                "public, defined, with llvm.emit_c_interface?)",
            )
        # Each argument's pointer value, read from the pointer object itself:
        # `ctypes.cast` would tie the argument (and the arrays it keeps alive) into a
        # reference cycle, leaving freed outputs to the cyclic GC (memory grows and every
        # call faults in fresh pages).
        packed = (ctypes.c_void_p * max(1, len(ctypes_args)))(
            *(ctypes.c_void_p.from_buffer(a).value for a in ctypes_args)
        )
        _PACKED_ENTRY(addr)(packed)
        self.check_allocation(name)

    def run(
        self,
        name: str,
        inputs: Sequence[Any],
        result_specs: Sequence[tuple[Sequence[int], Any]] | None = None,
    ) -> list[np.ndarray]:
        """Call ``@NAME`` in the out-param convention (see the class docstring) and
        return the outputs. ``result_specs`` lists ``(shape, dtype)`` of the
        out-params; when omitted it is read from the function's static signature.
        Inputs are converted to C-contiguous arrays of the parameter's dtype."""
        np = _np()
        sig = self.signatures.get(name)
        if sig is None:
            raise KeyError(f"no defined func.func @{name}; have {sorted(self.signatures)}")
        if sig and sig[-1].type == "<results>":
            raise ValueError(f"@{name} returns values; run() needs results as out-params")
        n_in = len(inputs)
        if result_specs is None:
            outs_sig = sig[n_in:]
            if any(a.shape is None or None in a.shape or a.dtype is None for a in outs_sig):
                raise ValueError(f"@{name}: give result_specs (out-params are not static memrefs)")
            result_specs = [(a.shape, a.dtype) for a in outs_sig]
        if n_in + len(result_specs) != len(sig):
            raise ValueError(
                f"@{name} takes {len(sig)} parameters, got {n_in} inputs + {len(result_specs)} outputs"
            )
        args: list[Any] = []
        keep: list[Any] = []
        outputs: list[Any] = []
        for i, (spec, value) in enumerate(zip(sig, list(inputs) + [None] * len(result_specs))):
            if i >= n_in:
                shape, dtype = result_specs[i - n_in]
                value = np.empty(tuple(shape), dtype=np.dtype(dtype))
                outputs.append(value)
            if spec.shape is None:  # scalar
                cty = _SCALAR_CTYPES.get(spec.type)
                if cty is None:
                    raise TypeError(f"@{name} parameter #{i}: unsupported type {spec.type}")
                c = cty(value.item() if hasattr(value, "item") else value)
                keep.append(c)
                args.append(ctypes.pointer(c))
                continue
            arr = np.asarray(value)
            if spec.dtype is not None and arr.dtype != np.dtype(spec.dtype):
                if _same_integer_storage(arr.dtype, np.dtype(spec.dtype)):
                    arr = arr.view(spec.dtype)  # memrefs hold unsigned integers signless
                elif i >= n_in:
                    raise TypeError(
                        f"@{name} out-param #{i - n_in}: dtype {arr.dtype}, expected {spec.dtype}"
                    )
                else:
                    arr = arr.astype(spec.dtype)
            if len(spec.shape) != arr.ndim or any(
                d is not None and d != s_ for d, s_ in zip(spec.shape, arr.shape)
            ):
                raise ValueError(
                    f"@{name} parameter #{i}: shape {arr.shape} does not fit {spec.type}"
                )
            arr = np.ascontiguousarray(arr)
            keep.append(arr)
            args.append(memref_arg(arr))
        self.invoke(name, *args)
        del keep
        return outputs

    def prepared_call(self, name: str, shapes: Sequence[Sequence[int]]) -> PreparedCall:
        """A cheap caller of ``@NAME`` for memref arguments of fixed `shapes` (inputs then
        out-params); see ``PreparedCall``."""
        addr = self.lookup(name)
        if not addr:
            raise UpstreamMlirError(f"looking up @{name}", f"no function {self.c_interface(name)}")
        return PreparedCall(_PACKED_ENTRY(addr), shapes, name, self.check_allocation)


class JitModule(CompiledCode):
    """Lower upstream MLIR and JIT it with the ExecutionEngine.

    Calling convention for ``run`` (what accy's CPU lowering emits)::

        func.func @NAME(%in_0: memref<...>, ..., %in_{n-1}: memref<...>,
                        %out_0: memref<...>, ..., %out_{m-1}: memref<...>)

    * the function returns nothing; inputs come first, then one out-param per result;
    * every memref is ranked with the identity (row-major contiguous) layout; static
      dims must match the arrays, dynamic dims are taken from them;
    * all buffers are owned by the caller: the function reads inputs, fully writes
      outputs, and neither frees nor keeps any of them after returning; temporaries
      (arenas from ``memref.alloc``) are the function's to free;
    * scalar parameters (iN/index/f32/f64) may appear among the inputs and are
      passed by value (give a Python or numpy scalar);
    * the function is public and defined, so ``llvm.emit_c_interface`` is added
      (``c_interface=True``) and ``_mlir_ciface_NAME(desc*...)`` is called through
      the ExecutionEngine's packed wrapper: each argument is passed as a pointer to
      the value, i.e. a memref as ``pointer(pointer(descriptor))`` (``memref_arg``).

    ``invoke(name, *ctypes_args)`` is the raw form (arguments already pointers).

    ``symbol_prefix``: the module's functions are ``symbol_prefix + NAME``, and every
    method takes (and reports) the NAME without it (accy's lowered host functions are
    ``accy.passes.lower.host.host_symbol(NAME)``).

    ``target="cuda"`` JITs lowered CUDA host code (kernels already ``gpu.binary``);
    the ``mgpu*`` runtime ABI must then come from ``shared_libs`` (accy's runtime
    library) or ``symbols`` (name -> ctypes function, e.g. a test double).
    ``symbols`` are registered before the engine's global constructors run.
    """

    def __init__(
        self,
        text: str,
        *,
        opt_level: int = 3,
        shared_libs: Sequence[str | os.PathLike[str]] = (),
        target: Target = "cpu",
        symbols: Mapping[str, Any] | None = None,
        pipeline: str | None = None,
        symbol_prefix: str = "",
    ):
        b = _host()
        self._s = s = _Session(b)
        module = s.parse(text)
        self.symbol_prefix = symbol_prefix
        self.signatures = {
            name.removeprefix(symbol_prefix): signature
            for name, signature in _signatures(s, module).items()
            if name.startswith(symbol_prefix)
        }
        """Parameter specs by function NAME (the symbol without `symbol_prefix`)."""
        _lower(s, module, target, pipeline, True)
        self._module = module
        self._keep: list[Any] = []
        try:
            self.engine = b.execution_engine.ExecutionEngine(
                module, opt_level=int(opt_level), shared_libs=[str(p) for p in shared_libs]
            )
        except Exception as e:  # noqa: BLE001 - binding errors become diagnostics
            raise s.error("creating the ExecutionEngine", e) from None
        symbols = dict(symbols or {})
        if f"@{ALLOCATION_FAILED}" in text:
            symbols.setdefault(ALLOCATION_FAILED, _allocation_failed)
        for name, fn in symbols.items():
            self._keep.append(fn)
            self.engine.raw_register_runtime(name, ctypes.cast(fn, ctypes.c_void_p))
        try:
            self.engine.initialize()
        except Exception as e:  # noqa: BLE001 - binding errors become diagnostics
            raise s.error("initializing the ExecutionEngine", e) from None

    def close(self) -> None:
        """Release the engine (runs the module's global destructors, e.g.
        mgpuModuleUnload) while the registered ``symbols`` are still alive."""
        engine = self.__dict__.pop("engine", None)
        del engine

    def __del__(self) -> None:
        self.close()

    def lookup(self, name: str) -> int:
        """Address of the packed wrapper of ``c_interface(name)`` (0 if absent).
        ORC lookups cost about as much as a small kernel, so addresses are cached."""
        cache = self.__dict__.setdefault("_addresses", {})
        if name not in cache:
            with _stderr_captured() as captured:
                cache[name] = int(self.engine.raw_lookup(self.c_interface(name)))
            if not cache[name] and (missing := _MISSING_SYMBOLS.search(captured.text)):
                raise UpstreamMlirError(
                    f"looking up @{name}",
                    f"the JIT found no definition of {missing.group(1).strip()}, which the "
                    "machine code LLVM generated for it calls (an operation accy lowers to a "
                    "runtime function the JIT lacks)",
                )
        return cache[name]

    def dump_object(self, path: str | os.PathLike[str]) -> Path:
        """Write the JIT-compiled code as an object file (see ``dump_object``)."""
        p = Path(path)
        if p.exists():
            p.unlink()
        self.engine.dump_to_object_file(str(p))
        if not p.is_file() or p.stat().st_size == 0:
            raise self._s.error(f"dumping the object file {p}")
        return p


class LibraryModule(CompiledCode):
    """The machine code of a `JitModule` (`dump_object`) linked into a shared library
    with accy's allocation-failure record (`accy.aot.ALLOCATION_FAILURE_C`) and loaded
    again: the same functions, called the same way (a compile cache hit)."""

    def __init__(
        self,
        library: str | os.PathLike[str],
        signatures: dict[str, tuple[ArgSpec, ...]],
        *,
        symbol_prefix: str = "",
        shared_libs: Sequence[str | os.PathLike[str]] = (),
    ):
        self._keep = [ctypes.CDLL(str(p), mode=ctypes.RTLD_GLOBAL) for p in shared_libs]
        self.library = ctypes.CDLL(str(library))
        self.symbol_prefix = symbol_prefix
        self.signatures = signatures
        self._take = self.library.accy_take_allocation_failure
        self._take.restype = ctypes.c_int64
        self._addresses: dict[str, int] = {}

    def lookup(self, name: str) -> int:
        """Address of the packed wrapper of ``c_interface(name)`` (0 if absent)."""
        if name not in self._addresses:
            try:
                entry = getattr(self.library, "_mlir_" + self.c_interface(name))
                self._addresses[name] = ctypes.cast(entry, ctypes.c_void_p).value or 0
            except AttributeError:
                self._addresses[name] = 0
        return self._addresses[name]

    def check_allocation(self, name: str) -> None:
        size = self._take()
        if size >= 0:
            raise allocation_error(name, size)


class PreparedCall:
    """Calls one JIT-ed function whose arguments are memrefs of fixed shapes, with the
    descriptors and the packed argument array built once per thread: a call only writes
    each array's data pointer into its descriptor (the arrays must be C-contiguous, of
    the shapes given, of the parameters' dtypes: the caller has checked them). About
    10 µs less per argument than ``JitModule.run``."""

    def __init__(
        self,
        entry: Any,
        shapes: Sequence[Sequence[int]],
        name: str = "",
        check: Callable[[str], None] = check_allocation,
    ):
        self.entry = entry
        self.name = name
        self.check = check
        self.shapes = [tuple(int(d) for d in shape) for shape in shapes]
        self._local = threading.local()

    def _arguments(self) -> tuple[list[Any], Any]:
        from accy.runtime.loader import descriptor_type

        descriptors = []
        for shape in self.shapes:
            d = descriptor_type(len(shape))()
            d.offset = 0
            if shape:
                d.sizes[:] = list(shape)
                strides, step = [], 1
                for size in reversed(shape):
                    strides.append(step)
                    step *= size
                d.strides[:] = strides[::-1]
            descriptors.append(d)
        n = max(1, len(descriptors))
        cells = (ctypes.c_void_p * n)(*(ctypes.addressof(d) for d in descriptors))
        pointer_size = ctypes.sizeof(ctypes.c_void_p)
        packed = (ctypes.c_void_p * n)(
            *(ctypes.addressof(cells) + i * pointer_size for i in range(len(descriptors)))
        )
        packed._keep = (descriptors, cells)  # type: ignore[attr-defined]
        self._local.arguments = (descriptors, packed)
        return descriptors, packed

    def __call__(self, arrays: Sequence[Any]) -> None:
        arguments = getattr(self._local, "arguments", None)
        descriptors, packed = arguments if arguments is not None else self._arguments()
        for d, array in zip(descriptors, arrays):
            d.allocated = d.aligned = data_address(array)
        self.entry(packed)
        self.check(self.name)


@functools.cache
def _data_field_offset() -> int | None:
    """The byte offset of numpy's `PyArrayObject.data` (what `PyArray_DATA` reads: the
    field after the object header) in this interpreter, checked on arrays whose data
    addresses are known; None where it is not where expected."""
    import numpy as np

    probes = [np.empty(n, dtype) for n, dtype in ((3, np.float32), (5, np.int8))]
    offset = 2 * ctypes.sizeof(ctypes.c_void_p)  # PyObject_HEAD: reference count, type
    for probe in probes:
        found = ctypes.c_void_p.from_address(id(probe) + offset).value
        if found != probe.__array_interface__["data"][0]:
            return None
    return offset


def data_address(array: Any) -> int:
    """The address of a numpy array's data (the caller checked it is an `ndarray`):
    `PyArrayObject.data` read in place, a fifth of the time of `__array_interface__`
    whatever the dtype (ml_dtypes' bfloat16 has no buffer protocol), else through
    `__array_interface__`."""
    offset = _data_field_offset()
    if offset is None:
        return array.__array_interface__["data"][0]
    return ctypes.c_void_p.from_address(id(array) + offset).value or 0


def dump_object(
    text: str,
    path: str | os.PathLike[str],
    *,
    target: Target = "cpu",
    opt_level: int = 3,
    pipeline: str | None = None,
) -> Path:
    """Lower ``text`` and write ahead-of-time machine code to the object file ``path``.

    For ``target="cuda"`` placeholders are registered for every ``mgpu*`` symbol
    (``MGPU_RUNTIME_SYMBOLS`` plus any named in the module), and for any target for
    every ``mlirAsyncRuntime*`` symbol the module names, so the engine resolves
    everything; the object then keeps them undefined, to be linked against the
    runtime library (or the async runtime library). The object has no ``.init_array``:
    link ``ORC_INIT_STUB_C`` into the same shared library so
    ``__orc_init_func.LLVMDialectModule`` (which loads the embedded kernels) runs at
    load time. The code is not position-independent
    (the link warns about DT_TEXTREL; it loads on x86-64 Linux).
    """
    b = _host()
    s = _Session(b)
    module = s.parse(text)
    _lower(s, module, target, pipeline, True)
    with s.ctx:
        lowered = str(module)
    # The async runtime ABI (parallel CPU loops) stays undefined in the object too, to
    # be linked against libaccy_async_runtime.so: without placeholders the engine
    # would resolve it only if an earlier JIT had loaded that library into the process.
    syms: dict[str, Any] = {
        n: _PLACEHOLDER for n in sorted(set(re.findall(r"@(mlirAsyncRuntime\w+)", lowered)))
    }
    if f"@{ALLOCATION_FAILED}" in lowered:  # defined by the export's own C file
        syms[ALLOCATION_FAILED] = _PLACEHOLDER
    if target == "cuda":
        named = set(re.findall(r"@(mgpu\w+)", lowered))
        # Placeholders only satisfy symbol resolution: the engine is never
        # initialized (no constructor runs), but its destructor runs the global
        # destructors, which call mgpuModuleUnload(null): the placeholders return 0.
        syms.update({n: _PLACEHOLDER for n in sorted(set(MGPU_RUNTIME_SYMBOLS) | named)})
    try:
        engine = b.execution_engine.ExecutionEngine(module, opt_level=int(opt_level))
    except Exception as e:  # noqa: BLE001 - binding errors become diagnostics
        raise s.error("creating the ExecutionEngine", e) from None
    for n, fn in syms.items():
        engine.raw_register_runtime(n, ctypes.cast(fn, ctypes.c_void_p))
    p = Path(path)
    if p.exists():
        p.unlink()
    engine.dump_to_object_file(str(p))
    if not p.is_file() or p.stat().st_size == 0:
        raise s.error(f"dumping the object file {p}")
    return p


def _placeholder_called() -> None:
    # Reached only from the engine's destructor, which runs the module's global
    # destructors (mgpuModuleUnload(null)) even when it was never initialized.
    return None


_PLACEHOLDER = ctypes.CFUNCTYPE(ctypes.c_void_p)(_placeholder_called)
