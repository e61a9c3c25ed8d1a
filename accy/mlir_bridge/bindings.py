"""Loading the upstream MLIR Python bindings, and the session every operation runs in.

`_host` gives the bindings with the ExecutionEngine (torch-mlir by default), `_nvptx`
those with the NVPTX backend (numba-cuda-mlir), `_any_parser` whichever parses; the
environment variables ``ACCY_MLIR_HOST_BINDINGS`` and ``ACCY_MLIR_NVPTX_BINDINGS`` name
others. Invariants: the bindings are imported on first use only (never at module level,
so importing the bridge stays cheap), once per process (`_cache`, under `_lock`), the host
bindings before the NVPTX ones (see `_nvptx`). A `_Session` is a fresh context per
operation whose diagnostics are collected, never printed, and become `UpstreamMlirError`s.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import threading
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

from accy.mlir_bridge.errors import MlirUnavailableError, UpstreamMlirError

_HOST_PIP = "pip install torch-mlir==20261001  (needs only numpy and packaging, not PyTorch)"
_NVPTX_PIP = "pip install numba-cuda-mlir==0.6.0  (pulls cuda-bindings, cuda-core, cuda-pathfinder)"

_lock = threading.Lock()
_cache: dict[str, SimpleNamespace] = {}


def _load(prefix: str, need_engine: bool) -> SimpleNamespace:
    ns = SimpleNamespace()
    ns.name = prefix
    ns.ir = importlib.import_module(prefix + ".ir")
    ns.passmanager = importlib.import_module(prefix + ".passmanager")
    ns.execution_engine = (
        importlib.import_module(prefix + ".execution_engine") if need_engine else None
    )
    return ns


def _bindings(
    key: str, variable: str, default: str, need_engine: bool, pip: str
) -> SimpleNamespace:
    """The first importable bindings among: the package named by `variable`, else a real
    upstream `mlir` package when one is installed, then `default`."""
    with _lock:
        if key not in _cache:
            explicit = os.environ.get(variable)
            upstream = ["mlir"] if importlib.util.find_spec("mlir") is not None else []
            candidates = [explicit] if explicit else [*upstream, default]
            errors = []
            for prefix in candidates:
                try:
                    _cache[key] = _load(prefix, need_engine=need_engine)
                    break
                except ImportError as e:
                    errors.append(f"{prefix!r}: {e}")
            else:
                raise MlirUnavailableError(
                    f"no {key} MLIR bindings are importable ({'; '.join(errors)}); "
                    f"install them with: {pip}"
                )
        return _cache[key]


def _host() -> SimpleNamespace:
    """Bindings with the ExecutionEngine (torch_mlir by default)."""
    return _bindings("host", "ACCY_MLIR_HOST_BINDINGS", "torch_mlir", True, _HOST_PIP)


def _nvptx() -> SimpleNamespace:
    """Bindings with the NVPTX backend (numba_cuda_mlir._mlir by default).

    The host bindings are loaded first when installed. Both bundle an LLVM, and LLVM's
    `STB_GNU_UNIQUE` data (the runtime library-call name table among it) binds
    process-wide to the first copy loaded, whatever the `dlopen` flags: with the NVPTX
    bindings first, the host JIT read another LLVM's libcall names and could not resolve
    `logf`, `sinf` or `memset` ("Symbols not found: [ df ]"). The kernels' NVPTX code
    does not call library functions by those names, so this order is safe for both."""
    try:
        _host()
    except MlirUnavailableError:
        pass
    return _bindings(
        "nvptx", "ACCY_MLIR_NVPTX_BINDINGS", "numba_cuda_mlir._mlir", False, _NVPTX_PIP
    )


def _any_parser() -> SimpleNamespace:
    try:
        return _host()
    except MlirUnavailableError as host_err:
        try:
            return _nvptx()
        except MlirUnavailableError:
            raise host_err from None


class _Session:
    """A fresh MLIR context that collects diagnostics instead of printing them.

    The diagnostic handler must not refer to the session (or anything holding the
    context): the context owns the handler in C++, where Python's collector cannot see
    the cycle, and every context (with its modules and JIT) would stay alive."""

    def __init__(self, b: SimpleNamespace):
        self.b = b
        self.ctx = b.ir.Context()
        self.diags: list[str] = []
        self._handler = self.ctx.attach_diagnostic_handler(_collector(self.diags))
        _install_safe_casters(b, self.ctx)

    def take(self) -> str:
        out = "\n".join(self.diags)
        self.diags.clear()
        return out

    def error(self, stage: str, exc: BaseException | None = None) -> UpstreamMlirError:
        text = str(exc) if exc is not None else ""
        extra = self.take()
        if extra and extra not in text:
            text = f"{text}\n{extra}" if text else extra
        return UpstreamMlirError(stage, text)

    def parse(self, text: str) -> Any:
        try:
            with self.ctx:
                return self.b.ir.Module.parse(text)
        except Exception as e:  # noqa: BLE001 - binding errors (MLIRError, ...) become diagnostics
            raise self.error("parsing upstream MLIR", e) from None

    def run(self, module: Any, pipeline: str, stage: str) -> None:
        try:
            with self.ctx:
                pm = self.b.passmanager.PassManager.parse(pipeline)
                pm.run(module.operation)
        except Exception as e:  # noqa: BLE001 - binding errors become diagnostics
            raise self.error(stage, e) from None


def _collector(diags: list[str]) -> Callable[[Any], bool]:
    """A diagnostic handler appending to `diags` (and holding nothing else)."""

    def collect(d: Any) -> bool:
        # Called from C++: a Python exception must not cross it (it would abort).
        try:
            diags.append(_format_diag(d))
        except Exception as e:  # noqa: BLE001
            diags.append(f"error: (a diagnostic that could not be read: {e})")
        return True

    return collect


def _install_safe_casters(b: SimpleNamespace, ctx: Any) -> None:
    """Replace the bindings' downcast of dense elements attributes with one that cannot
    raise: theirs raises a Python error inside a C++ caster for element types it has no
    class for (complex), which aborts the process wherever such an attribute is read
    (``op.attributes[...]``, ``named.attr``). Ours returns the plain ``Attribute`` then,
    which ``_describe_attribute`` reads as an undecoded dense attribute. Once per
    bindings; the registration is global to them."""
    if getattr(b, "safe_casters", False):
        return
    with _lock:
        if getattr(b, "safe_casters", False):
            return
        ir = b.ir
        register = getattr(
            importlib.import_module(b.name + "._mlir_libs._mlir"), "register_type_caster", None
        )
        if register is not None:
            with ctx:
                typeid = ir.Attribute.parse("dense<0.0> : tensor<f32>").typeid
            fp, integer = ir.DenseFPElementsAttr, ir.DenseIntElementsAttr

            def cast(attr: Any) -> Any:
                try:
                    if _isa(fp, attr):
                        return fp(attr)
                    if _isa(integer, attr):
                        return integer(attr)
                except Exception:  # noqa: BLE001, S110 - called from C++: never raise
                    pass
                return attr

            register(typeid, replace=True)(cast)
        b.safe_casters = True


def _format_diag(d: Any) -> str:
    sev = str(getattr(d, "severity", "")).rsplit(".", 1)[-1].lower() or "error"
    line = f"{d.location}: {sev}: {d.message}"
    for n in getattr(d, "notes", ()) or ():
        line += "\n  " + _format_diag(n)
    return line


def _isa(cls: Any, obj: Any) -> bool:
    """``obj`` is an upstream attribute/type of class ``cls`` (old and new bindings)."""
    if cls is None:
        return False
    check = getattr(cls, "isinstance", None)
    if callable(check):
        return bool(check(obj))
    if isinstance(obj, cls):
        return True
    try:
        cls(obj)
    except Exception:  # noqa: BLE001 - a failed conversion means not that kind
        return False
    return True
