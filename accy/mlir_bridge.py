"""The one module of accy that imports the upstream MLIR Python bindings.

Everything else in accy produces upstream MLIR *text* (func/arith/math/memref/scf/
vector/gpu/llvm) and goes through the small API below. The bindings are imported
lazily, inside functions, so ``import accy`` works without them.

Two PyPI distributions supply the bindings (see DESIGN.md, "Toolchain facts"):

* host code: ``torch-mlir`` (module ``torch_mlir``): parse/verify, CPU and CUDA host
  lowering to the LLVM dialect, the ExecutionEngine (JIT) and object dumps;
* kernels: ``numba-cuda-mlir`` (module ``numba_cuda_mlir._mlir``): the NVPTX backend,
  ``gpu.module`` -> ``gpu.binary`` holding PTX.

Both load in one Python process (numba-cuda-mlir preloads its LLVM with
``RTLD_DEEPBIND``), host bindings first (see ``_nvptx``), so no subprocess is needed. ``ACCY_MLIR_HOST_BINDINGS`` and
``ACCY_MLIR_NVPTX_BINDINGS`` name another package (e.g. a real upstream ``mlir``)
whose ``ir``/``passmanager`` (and ``execution_engine`` for the host) to use instead.

Public API
----------
``verify_upstream``, ``lower_to_llvm``, ``compile_kernels_to_ptx``, ``extract_ptx``,
``find_libdevice``, ``JitModule``, ``dump_object``, ``memref_descriptor``,
``memref_arg``, ``function_signatures``, the pipeline constants, the errors
``MlirUnavailableError``, ``UpstreamMlirError``, ``LibdeviceNotFoundError``;
``parse_stablehlo`` (StableHLO text -> a plain-Python ``UpstreamOp`` tree, for
``accy.stablehlo``) and ``UpstreamParseError``.

Command line (debugging aid)::

    python -m accy.mlir_bridge verify FILE
    python -m accy.mlir_bridge lower FILE [--target cpu|cuda]
    python -m accy.mlir_bridge ptx FILE [--chip sm_90] [--opt 3] [--extract]
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import importlib
import importlib.util
import math
import os
import re
import sys
import tempfile
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

__all__ = [
    "CPU_PARALLEL_PASSES",
    "CPU_PIPELINE",
    "CUDA_HOST_PIPELINE",
    "KERNEL_PIPELINE",
    "MGPU_RUNTIME_SYMBOLS",
    "ORC_INIT_STUB_C",
    "ArgSpec",
    "JitModule",
    "LibdeviceNotFoundError",
    "MlirUnavailableError",
    "UpstreamBlock",
    "UpstreamEnum",
    "UpstreamMlirError",
    "UpstreamOp",
    "UpstreamOpaque",
    "UpstreamParseError",
    "UpstreamType",
    "UpstreamValue",
    "compile_kernels_to_ptx",
    "cpu_pipeline",
    "dump_object",
    "eval_stablehlo",
    "extract_ptx",
    "find_libdevice",
    "function_signatures",
    "lower_to_llvm",
    "memref_arg",
    "memref_descriptor",
    "parse_stablehlo",
    "verify_upstream",
]

Target = Literal["cpu", "cuda"]

# --------------------------------------------------------------------------- errors


class MlirUnavailableError(ImportError):
    """The MLIR bindings needed for an operation are not installed."""


class UpstreamMlirError(RuntimeError):
    """MLIR rejected the input: parse, verification, pass or JIT failure.

    ``diagnostics`` holds MLIR's own diagnostic text (``loc: error: message`` lines).
    """

    def __init__(self, stage: str, diagnostics: str):
        self.stage = stage
        self.diagnostics = diagnostics.strip()
        super().__init__(
            f"{stage} failed:\n{self.diagnostics}" if self.diagnostics else f"{stage} failed"
        )


class LibdeviceNotFoundError(FileNotFoundError):
    """libdevice.10.bc is needed (kernels call ``__nv_*`` math) but was not found."""


# ------------------------------------------------------------------------ pipelines

#: CPU: memref/scf/affine/vector/math/arith/cf/func -> LLVM dialect.
#: Order matters: ``convert-math-to-libm`` scalarises vector math into
#: ``vector.extract/insert`` and so runs before ``convert-vector-to-llvm``;
#: ``convert-math-to-llvm`` runs first so exp/log/tanh/... become LLVM intrinsics and
#: only the rest (erf, atan2, ...) become libm calls (resolved from the process).
CPU_PIPELINE = (
    "builtin.module("
    "lower-affine, convert-vector-to-scf, convert-scf-to-cf, arith-expand, "
    "expand-strided-metadata, convert-math-to-llvm, convert-math-to-libm, "
    "convert-vector-to-llvm{enable-x86}, finalize-memref-to-llvm, convert-arith-to-llvm, "
    "convert-index-to-llvm, convert-cf-to-llvm, convert-func-to-llvm, "
    "reconcile-unrealized-casts)"
)

#: CPU parallel loops, run in front of ``CPU_PIPELINE``: every ``scf.parallel`` is
#: split into blocks run as async tasks (``async-parallel-for``; ``{threads}`` sizes
#: the split, oversharded for balance), which become LLVM coroutines and calls to the
#: ``mlirAsyncRuntime*`` ABI (accy's libaccy_async_runtime.so provides it). Without
#: these passes ``convert-scf-to-cf`` runs each ``scf.parallel`` as plain loops.
CPU_PARALLEL_PASSES = (
    "async-parallel-for{{async-dispatch=true num-workers={threads} min-task-size=1}}, "
    "async-to-async-runtime, async-runtime-ref-counting, async-runtime-ref-counting-opt, "
    "convert-async-to-llvm, "
)


def cpu_pipeline(threads: int = 1) -> str:
    """``CPU_PIPELINE``, with ``CPU_PARALLEL_PASSES`` for `threads` in front when
    `threads` > 1."""
    if threads <= 1:
        return CPU_PIPELINE
    head = "builtin.module("
    return head + CPU_PARALLEL_PASSES.format(threads=threads) + CPU_PIPELINE[len(head) :]


#: CUDA host code (gpu.alloc/gpu.memcpy/gpu.launch_func/gpu.dealloc in host
#: functions, kernels already compiled to ``gpu.binary``). Synchronous gpu ops need
#: ``gpu-async-region`` first; ``gpu-to-llvm`` must see memref types, so it runs
#: before ``finalize-memref-to-llvm``. ``gpu.binary``/``gpu.launch_func`` survive and
#: are turned into mgpuModuleLoad*/mgpuLaunchKernel calls by LLVM translation.
CUDA_HOST_PIPELINE = (
    "builtin.module("
    "func.func(gpu-async-region), "
    "lower-affine, convert-vector-to-scf, convert-scf-to-cf, arith-expand, "
    "expand-strided-metadata, gpu-to-llvm, convert-math-to-llvm, convert-math-to-libm, "
    "convert-vector-to-llvm, finalize-memref-to-llvm, convert-arith-to-llvm, "
    "convert-index-to-llvm, convert-cf-to-llvm, convert-func-to-llvm, "
    "reconcile-unrealized-casts)"
)

#: Kernels (numba-cuda-mlir bindings). ``{target}`` is filled with the
#: nvvm-attach-target options. scf/affine inside gpu.func must be lowered before
#: convert-gpu-to-nvvm (otherwise translation fails on scf.if).
KERNEL_PIPELINE = (
    "builtin.module("
    "nvvm-attach-target{{{target}}}, "
    "gpu.module(lower-affine, convert-scf-to-cf, expand-strided-metadata, "
    "convert-gpu-to-nvvm, reconcile-unrealized-casts), "
    "gpu-module-to-binary{{format=isa}})"
)

#: The MLIR GPU runtime ABI (CudaRuntimeWrappers) functions that lowered host code or
#: its LLVM translation may call. ``dump_object`` registers placeholders for them.
MGPU_RUNTIME_SYMBOLS: tuple[str, ...] = (
    "mgpuModuleLoad",
    "mgpuModuleLoadJIT",
    "mgpuModuleUnload",
    "mgpuModuleGetFunction",
    "mgpuLaunchKernel",
    "mgpuLaunchClusterKernel",
    "mgpuStreamCreate",
    "mgpuStreamDestroy",
    "mgpuStreamSynchronize",
    "mgpuStreamWaitEvent",
    "mgpuEventCreate",
    "mgpuEventDestroy",
    "mgpuEventSynchronize",
    "mgpuEventRecord",
    "mgpuMemAlloc",
    "mgpuMemFree",
    "mgpuMemcpy",
    "mgpuMemset16",
    "mgpuMemset32",
    "mgpuMemHostRegister",
    "mgpuMemHostRegisterMemRef",
    "mgpuMemHostUnregister",
    "mgpuMemHostUnregisterMemRef",
    "mgpuSetDefaultDevice",
)

#: C source to link next to a dumped CUDA host object (see ``dump_object``): the
#: object has no ``.init_array``; its init/deinit functions load/unload the embedded
#: kernels and must be called by the shared library's constructor/destructor.
ORC_INIT_STUB_C = r"""
extern void accy_orc_init(void) __asm__("__orc_init_func.LLVMDialectModule");
extern void accy_orc_deinit(void) __asm__("__orc_deinit_func.LLVMDialectModule");
__attribute__((constructor)) static void accy_module_ctor(void) { accy_orc_init(); }
__attribute__((destructor)) static void accy_module_dtor(void) { accy_orc_deinit(); }
"""

# ------------------------------------------------------------------------- bindings

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


# --------------------------------------------------------------------------- verify


def verify_upstream(text: str) -> None:
    """Parse and verify upstream MLIR text; raise ``UpstreamMlirError`` with MLIR's
    diagnostics. Unregistered dialects (e.g. ``accy.*``) are errors."""
    s = _Session(_any_parser())
    module = s.parse(text)
    try:
        with s.ctx:
            module.operation.verify()
    except Exception as e:  # noqa: BLE001 - binding errors become diagnostics
        raise s.error("verifying upstream MLIR", e) from None


# ---------------------------------------------------------------------------- lower


def _add_c_interface(s: _Session, module: Any) -> None:
    """Put ``llvm.emit_c_interface`` on every public, defined ``func.func``."""
    ir = s.b.ir
    with s.ctx:
        unit = ir.UnitAttr.get()
        for op in module.body.operations:
            o = op.operation
            if o.name != "func.func" or len(o.regions[0].blocks) == 0:
                continue
            attrs = o.attributes
            if "sym_visibility" in attrs and str(attrs["sym_visibility"]).strip('"') != "public":
                continue
            attrs["llvm.emit_c_interface"] = unit


_LLVM_OK_CPU = ("builtin.module",)
_LLVM_OK_CUDA = _LLVM_OK_CPU + ("gpu.binary", "gpu.launch_func")


def _check_lowered(s: _Session, module: Any, target: Target) -> None:
    allowed = _LLVM_OK_CUDA if target == "cuda" else _LLVM_OK_CPU
    bad: dict[str, str] = {}

    def visit(op: Any) -> None:
        name = op.name
        if name == "gpu.module":
            bad.setdefault(
                name,
                f"{op.location}: error: 'gpu.module' @{str(op.attributes['sym_name']).strip(chr(34))} "
                "was not compiled; run compile_kernels_to_ptx first",
            )
            return
        if not (name.startswith("llvm.") or name in allowed):
            bad.setdefault(
                name, f"{op.location}: error: '{name}' was not lowered to the LLVM dialect"
            )
        for region in op.regions:
            for block in region.blocks:
                for child in block.operations:
                    visit(child.operation)

    with s.ctx:
        visit(module.operation)
    if bad:
        raise UpstreamMlirError(f"lowering to LLVM ({target})", "\n".join(bad.values()))


def _lower(
    s: _Session, module: Any, target: Target, pipeline: str | None, c_interface: bool
) -> None:
    if target not in ("cpu", "cuda"):
        raise ValueError(f"target must be 'cpu' or 'cuda', not {target!r}")
    with s.ctx:
        kernels = [
            f"{op.operation.location}: error: 'gpu.module' @{str(op.operation.attributes['sym_name']).strip(chr(34))}"
            " is not compiled; run compile_kernels_to_ptx first (it becomes a gpu.binary)"
            for op in module.body.operations
            if op.operation.name == "gpu.module"
        ]
    if kernels:
        raise UpstreamMlirError(f"lowering to LLVM ({target})", "\n".join(kernels))
    if c_interface:
        _add_c_interface(s, module)
    pipe = pipeline or (CPU_PIPELINE if target == "cpu" else CUDA_HOST_PIPELINE)
    s.run(module, pipe, f"lowering to LLVM ({target})")
    _check_lowered(s, module, target)


def lower_to_llvm(
    text: str,
    *,
    target: Target = "cpu",
    pipeline: str | None = None,
    c_interface: bool = True,
) -> str:
    """Lower upstream MLIR text to the LLVM dialect and return it as text.

    ``target="cpu"`` runs ``CPU_PIPELINE``; ``target="cuda"`` runs
    ``CUDA_HOST_PIPELINE`` on host code whose kernels are already ``gpu.binary``
    (``compile_kernels_to_ptx``); a remaining ``gpu.module`` is an error. With
    ``c_interface`` every public defined ``func.func`` gets ``llvm.emit_c_interface``
    (so ``_mlir_ciface_<name>`` exists). Any op left outside the LLVM dialect is
    reported as an ``UpstreamMlirError`` naming it and its location.
    """
    s = _Session(_host())
    module = s.parse(text)
    _lower(s, module, target, pipeline, c_interface)
    with s.ctx:
        return str(module)


# ---------------------------------------------------------------------------- kernels

_LIBDEVICE_NAME = "libdevice.10.bc"


def find_libdevice(*, required: bool = True) -> Path | None:
    """Locate ``libdevice.10.bc``: ``$ACCY_LIBDEVICE`` (a file), then
    ``$CUDA_HOME``/``$CUDA_PATH``/``/usr/local/cuda`` ``nvvm/libdevice/``, then the
    ``nvidia-cuda-nvcc`` wheel (``nvidia/cuda_nvcc/nvvm/libdevice`` or
    ``nvidia/cu13/nvvm/libdevice``). Raises ``LibdeviceNotFoundError`` when absent and
    ``required``, else returns None."""
    cands: list[Path] = []
    env = os.environ.get("ACCY_LIBDEVICE")
    if env:
        cands.append(Path(env))
    for var in ("CUDA_HOME", "CUDA_PATH", "CUDA_ROOT"):
        v = os.environ.get(var)
        if v:
            cands.append(Path(v) / "nvvm" / "libdevice" / _LIBDEVICE_NAME)
    cands.append(Path("/usr/local/cuda/nvvm/libdevice") / _LIBDEVICE_NAME)
    try:
        import nvidia  # type: ignore[import-not-found]

        for base in getattr(nvidia, "__path__", []):
            for sub in ("cuda_nvcc", "cu13", "cu12"):
                cands.append(Path(base) / sub / "nvvm" / "libdevice" / _LIBDEVICE_NAME)
    except ImportError:
        pass
    for c in cands:
        if c.is_file():
            return c.resolve()
    if required:
        raise LibdeviceNotFoundError(
            f"{_LIBDEVICE_NAME} not found (looked in: {', '.join(str(c) for c in cands)}); "
            "install the CUDA toolkit, set CUDA_HOME or ACCY_LIBDEVICE, or "
            "pip install nvidia-cuda-nvcc"
        )
    return None


_OPT_CHARS = re.compile(r"^[A-Za-z0-9_./+\-]+$")


def compile_kernels_to_ptx(
    text: str,
    *,
    chip: str = "sm_90",
    opt: int = 3,
    libdevice: Path | str | None = None,
    features: str | None = None,
) -> str:
    """Compile every ``gpu.module`` in ``text`` to a ``gpu.binary`` holding PTX.

    Runs ``KERNEL_PIPELINE`` with ``nvvm-attach-target{chip=CHIP O=OPT l=LIBDEVICE}``
    on the NVPTX-capable bindings and returns the whole module as text (host code
    untouched; it parses in the host bindings). ``libdevice=None`` looks it up with
    ``find_libdevice``; if it is missing and the PTX calls ``__nv_*`` functions,
    ``LibdeviceNotFoundError`` is raised. No GPU is needed.
    """
    lib = Path(libdevice) if libdevice is not None else find_libdevice(required=False)
    if lib is not None and not lib.is_file():
        raise LibdeviceNotFoundError(f"libdevice {lib} does not exist")
    opts = [f"chip={chip}", f"O={int(opt)}"]
    if features:
        opts.append(f"features={features}")
    if lib is not None:
        if not _OPT_CHARS.match(str(lib)):
            raise ValueError(
                f"libdevice path {str(lib)!r} has characters a pass option cannot carry"
            )
        opts.append(f"l={lib}")
    for v in (chip, features or ""):
        if v and not _OPT_CHARS.match(v):
            raise ValueError(f"bad nvvm-attach-target option {v!r}")
    s = _Session(_nvptx())
    module = s.parse(text)
    s.run(
        module, KERNEL_PIPELINE.format(target=" ".join(opts)), f"compiling kernels to PTX ({chip})"
    )
    with s.ctx:
        out = str(module)
    if lib is None:
        missing = sorted(
            {m for ptx in extract_ptx(out).values() for m in re.findall(r"\b(__nv_\w+)", ptx)}
        )
        if missing:
            find_libdevice(required=True)  # raises with the search list
    return out


_BINARY_RE = re.compile(r"gpu\.binary\s+@(\"(?:[^\"\\]|\\.)*\"|[\w$.]+)")
_OBJ_RE = re.compile(r"#gpu\.object<\s*#(\w+)\.target<([^>]*)>")


def _read_mlir_string(s: str, i: int) -> tuple[str, int]:
    """Decode the MLIR string literal whose opening quote is at ``s[i]``."""
    assert s[i] == '"'
    out = bytearray()
    i += 1
    n = len(s)
    while i < n:
        c = s[i]
        if c == '"':
            return out.decode("utf-8", errors="replace"), i + 1
        if c == "\\":
            nxt = s[i + 1]
            if nxt in '\\"':
                out += nxt.encode()
                i += 2
            elif nxt == "n":
                out += b"\n"
                i += 2
            elif nxt == "t":
                out += b"\t"
                i += 2
            else:
                out.append(int(s[i + 1 : i + 3], 16))
                i += 3
        else:
            j = i
            while j < n and s[j] not in '"\\':
                j += 1
            out += s[i:j].encode("utf-8")
            i = j
    raise ValueError("unterminated MLIR string literal")


def extract_ptx(text: str) -> dict[str, str]:
    """Map each ``gpu.binary`` symbol name to its PTX (``format=isa`` objects).

    Pure text scanning (no bindings needed) of the custom form that
    ``compile_kernels_to_ptx`` prints. A binary with several objects yields
    ``name`` for the first and ``name:chip`` for every object."""
    result: dict[str, str] = {}
    if '"gpu.binary"' in text:  # generic form: reprint in custom form first
        s = _Session(_any_parser())
        m = s.parse(text)
        with s.ctx:
            text = str(m)
    for bm in _BINARY_RE.finditer(text):
        name = bm.group(1).strip('"')
        start = bm.end()
        nxt = _BINARY_RE.search(text, start)
        stop = nxt.start() if nxt else len(text)
        pos = start
        first = True
        while True:
            om = _OBJ_RE.search(text, pos, stop)
            if not om:
                break
            chip_m = re.search(r'chip\s*=\s*"([^"]*)"', om.group(2))
            a = text.find("assembly = ", om.end(), stop)
            if a < 0:
                pos = om.end()
                continue
            ptx, pos = _read_mlir_string(text, a + len("assembly = "))
            if first:
                result[name] = ptx
                first = False
            if chip_m:
                result[f"{name}:{chip_m.group(1)}"] = ptx
    return result


# ------------------------------------------------------------------ memref descriptors


def _np():
    import numpy as np

    return np


def memref_descriptor(array: np.ndarray) -> ctypes.Structure:
    """A ctypes ranked memref descriptor viewing ``array`` (no copy; see
    ``accy.runtime.loader.MemRefDescriptor``, which the ahead-of-time loader shares).
    Non-contiguous arrays are copied to a contiguous one first by the caller."""
    from accy.runtime.loader import MemRefDescriptor

    return MemRefDescriptor(array)


def memref_arg(array: np.ndarray) -> Any:
    """The ``invoke`` argument for a memref parameter: a pointer to a pointer to the
    descriptor (``_mlir_ciface_`` takes descriptors by pointer; the packed interface
    takes a pointer to each argument). Keeps the descriptor alive via ``._keep``."""
    d = memref_descriptor(array)
    p = ctypes.pointer(d)
    pp = ctypes.pointer(p)
    pp._keep = (array, d, p)  # type: ignore[attr-defined]
    return pp


_PACKED_ENTRY = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
"""The type of a packed `_mlir_ciface_` wrapper: one pointer to the argument pointers."""

_SCALAR_CTYPES = {
    "f32": ctypes.c_float,
    "f64": ctypes.c_double,
    "i1": ctypes.c_bool,
    "i8": ctypes.c_int8,
    "i16": ctypes.c_int16,
    "i32": ctypes.c_int32,
    "i64": ctypes.c_int64,
    "index": ctypes.c_int64,
}
_ELEM_DTYPES = {
    "f16": "float16",
    "f32": "float32",
    "f64": "float64",
    "i1": "bool",
    "i8": "int8",
    "i16": "int16",
    "i32": "int32",
    "i64": "int64",
    "ui8": "uint8",
    "ui16": "uint16",
    "ui32": "uint32",
    "ui64": "uint64",
    "index": "int64",
    "bf16": "bfloat16",
}


@dataclass(frozen=True)
class ArgSpec:
    """One parameter of a ``func.func``: a memref (``shape`` with None for dynamic
    dims, numpy ``dtype`` name) or a scalar (``shape`` is None)."""

    type: str
    shape: tuple[int | None, ...] | None
    dtype: str | None


def _arg_spec(ir: Any, t: Any) -> ArgSpec:
    text = str(t)
    if isinstance(t, ir.MemRefType):
        mt = ir.MemRefType(t)
        shape = tuple(None if ir.ShapedType.is_dynamic_size(d) else int(d) for d in mt.shape)
        return ArgSpec(text, shape, _ELEM_DTYPES.get(str(mt.element_type)))
    return ArgSpec(text, None, _ELEM_DTYPES.get(text))


def function_signatures(text: str) -> dict[str, tuple[ArgSpec, ...]]:
    """Parameter specs of every defined ``func.func`` in upstream MLIR text."""
    s = _Session(_host())
    return _signatures(s, s.parse(text))


def _signatures(s: _Session, module: Any) -> dict[str, tuple[ArgSpec, ...]]:
    ir = s.b.ir
    out: dict[str, tuple[ArgSpec, ...]] = {}
    with s.ctx:
        for op in module.body.operations:
            o = op.operation
            if o.name != "func.func" or len(o.regions[0].blocks) == 0:
                continue
            name = str(o.attributes["sym_name"]).strip('"')
            ft = ir.FunctionType(ir.TypeAttr(o.attributes["function_type"]).value)
            if len(ft.results):
                out[name] = tuple(_arg_spec(ir, t) for t in ft.inputs) + (
                    ArgSpec("<results>", None, None),
                )
            else:
                out[name] = tuple(_arg_spec(ir, t) for t in ft.inputs)
    return out


# ------------------------------------------------------------------------------- JIT


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


ALLOCATION_FAILED = "accy_allocation_failed"
"""`void accy_allocation_failed(int64_t bytes)`: what CPU host code calls, before returning
without running anything, when an allocation of its plan fails (`accy.passes.lower.cpu`,
*Allocation failures*). The JIT binds it to `_allocation_failed` and checks the record
after every call; an export links a definition of its own (`accy.aot`)."""

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
        from accy.diagnostics import AccyMemoryError

        raise AccyMemoryError(
            f"@{name} could not allocate {size} bytes for its plan (the arena or a "
            "separately allocated buffer); nothing ran"
        )


class JitModule:
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

    def c_interface(self, name: str) -> str:
        """The symbol of the C interface of the function NAME."""
        return f"_mlir_ciface_{self.symbol_prefix}{name}"

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
        check_allocation(name)

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
        return PreparedCall(_PACKED_ENTRY(addr), shapes, name)

    def dump_object(self, path: str | os.PathLike[str]) -> Path:
        """Write the JIT-compiled code as an object file (see ``dump_object``)."""
        p = Path(path)
        if p.exists():
            p.unlink()
        self.engine.dump_to_object_file(str(p))
        if not p.is_file() or p.stat().st_size == 0:
            raise self._s.error(f"dumping the object file {p}")
        return p


class PreparedCall:
    """Calls one JIT-ed function whose arguments are memrefs of fixed shapes, with the
    descriptors and the packed argument array built once per thread: a call only writes
    each array's data pointer into its descriptor (the arrays must be C-contiguous, of
    the shapes given, of the parameters' dtypes: the caller has checked them). About
    10 µs less per argument than ``JitModule.run``."""

    def __init__(self, entry: Any, shapes: Sequence[Sequence[int]], name: str = ""):
        self.entry = entry
        self.name = name
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
        check_allocation(self.name)


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


# ------------------------------------------------------------------------ StableHLO
#
# The StableHLO importer (accy.stablehlo) never touches the bindings: it reads the
# plain-Python description below, which `parse_stablehlo` builds by walking the upstream
# module generically (op name, operands, result types, attributes, regions, locations).


@dataclass(frozen=True)
class UpstreamType:
    """An upstream type: its text and, for a ranked tensor, element type name and shape
    (``None`` for a dynamic dim); ``element``/``shape`` are ``None`` for other types."""

    text: str
    element: str | None = None
    shape: tuple[int | None, ...] | None = None


@dataclass(frozen=True)
class UpstreamValue:
    """An SSA value: a module-unique ``id`` and its type."""

    id: int
    type: UpstreamType


@dataclass(frozen=True)
class UpstreamEnum:
    """An enum attribute such as ``#stablehlo<comparison_direction LT>``: kind and value."""

    kind: str
    value: str


@dataclass(frozen=True)
class UpstreamOpaque:
    """An attribute the description does not decode: its text."""

    text: str


@dataclass
class UpstreamBlock:
    args: list[UpstreamValue]
    ops: list[UpstreamOp]


@dataclass
class UpstreamOp:
    """One upstream op. ``location`` is the first file location found (through name,
    call-site and fused locations) as ``(file, line, col)``, or ``None``. Attributes are
    decoded to Python: dense elements -> numpy arrays, dense arrays -> tuples of ints,
    integers, floats, strings, symbol names, ``UpstreamType``, ``UpstreamEnum``, dicts
    for dictionary attributes (by name), ``#stablehlo.dot<...>``, ``#stablehlo.gather<...>``, ``#stablehlo.scatter<...>`` and ``#stablehlo.conv<...>``, tuples for array
    attributes, ``True`` for unit attributes, else ``UpstreamOpaque``."""

    name: str
    operands: list[UpstreamValue]
    results: list[UpstreamValue]
    attributes: dict[str, Any]
    regions: list[list[UpstreamBlock]]
    location: tuple[str, int, int] | None


class UpstreamParseError(UpstreamMlirError):
    """Upstream MLIR could not parse (or verify) the text; ``message`` is its first error
    and ``location`` that error's ``(file, line, col)`` (or ``None``)."""

    def __init__(self, diagnostics: str, message: str, location: tuple[str, int, int] | None):
        super().__init__("parsing upstream MLIR", diagnostics)
        self.message = message
        self.location = location


_FILE_LOC = re.compile(r'"((?:[^"\\]|\\.)*)":(\d+):(\d+)')


def _file_location(loc: Any, source_name: str) -> tuple[str, int, int] | None:
    """The first file location inside ``loc`` (callee before caller, fused in order)."""
    try:
        if hasattr(loc, "filename"):
            name = str(loc.filename)
            return (source_name if name == "-" else name, int(loc.start_line), int(loc.start_col))
        if hasattr(loc, "child_loc"):
            return _file_location(loc.child_loc, source_name)
        if hasattr(loc, "callee"):
            return _file_location(loc.callee, source_name) or _file_location(
                loc.caller, source_name
            )
        if hasattr(loc, "locations"):
            for inner in loc.locations:
                found = _file_location(inner, source_name)
                if found:
                    return found
            return None
    except Exception:  # noqa: BLE001, S110  # pragma: no cover - odd bindings: read the text
        pass
    match = _FILE_LOC.search(str(loc))
    if not match:
        return None
    name = match.group(1).replace('\\"', '"').replace("\\\\", "\\")
    return (source_name if name == "-" else name, int(match.group(2)), int(match.group(3)))


_NUMPY_ELEMENTS = {name: dtype for name, dtype in _ELEM_DTYPES.items() if name != "index"}
"""Element types whose dense attributes are decoded to numpy arrays (dtype names; bfloat16
is ml_dtypes'). Dense attributes of other element types (complex, sub-byte integers, f8,
f6, f4, ...) are described as `UpstreamOpaque` and never decoded."""


def _same_integer_storage(a: Any, b: Any) -> bool:
    """Dtypes stored as one integer type (`uint32` and `int32`: the same bits in a memref;
    bfloat16 in lowered CPU code's i16 memrefs, `passes/lower/bf16_storage.py`)."""
    stored = "iu" if a.name != "bfloat16" else "i"
    return (
        (a.kind in "iu" or a.name == "bfloat16") and b.kind in stored and a.itemsize == b.itemsize
    )


MAX_DECODED_ELEMENTS = 1 << 28
"""Dense attributes of more elements stay undecoded (a splat's text is short, its array
need not be)."""


def _numpy_dtype(element: str) -> np.dtype:
    np = _np()
    if element == "bf16":
        import ml_dtypes

        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(_NUMPY_ELEMENTS[element])


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


def _describe_type(ir: Any, t: Any) -> UpstreamType:
    text = str(t)
    if _isa(ir.RankedTensorType, t):
        rt = ir.RankedTensorType(t)
        shape = tuple(None if rt.is_dynamic_dim(i) else int(rt.shape[i]) for i in range(rt.rank))
        return UpstreamType(text, str(rt.element_type), shape)
    return UpstreamType(text)


_DENSE_TEXT = re.compile(r"^dense<(.*)>\s*:\s*(.*)$", re.DOTALL)
_DENSE_NUMBER = re.compile(
    r"0x[0-9A-Fa-f]+|[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|[-+]?inf|nan|true|false"
)


def _dense_from_text(text: str, element: str, shape: tuple[int, ...]) -> np.ndarray:
    """Values of a dense attribute the buffer protocol refuses (bf16), from its text."""
    np = _np()
    match = _DENSE_TEXT.match(text.strip())
    if not match:
        raise ValueError(f"cannot read the dense attribute {text[:80]}")
    body = match.group(1).strip()
    dtype = _numpy_dtype(element)
    bits = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[dtype.itemsize]
    count = int(np.prod(shape, dtype=np.int64))
    if body.startswith('"0x'):
        raw = bytes.fromhex(body.strip('"')[2:])
        flat = np.frombuffer(raw, dtype=np.dtype(bits).newbyteorder("<")).view(
            dtype.newbyteorder("<")
        )
    else:
        values = []
        for token in _DENSE_NUMBER.findall(body):
            if token.startswith("0x"):
                values.append(np.array(int(token, 16), dtype=bits).view(dtype)[()])
            else:
                values.append(np.array(float(token), dtype=np.float64).astype(dtype)[()])
        flat = np.array(values, dtype=dtype)
    if flat.size == 1 and count != 1:
        return np.full(shape, flat[0], dtype=dtype)
    if flat.size != count:
        raise ValueError(f"dense attribute has {flat.size} values for shape {shape}")
    return flat.astype(dtype).reshape(shape)


_RESOURCES = re.compile(r"\{-#\s*dialect_resources\s*:\s*\{(.*?)\}\s*#-\}", re.DOTALL)
_RESOURCE_BLOB = re.compile(r'([\w.$-]+|"[^"]*")\s*:\s*"0x([0-9A-Fa-f]*)"')
_RESOURCE_NAME = re.compile(r"^dense_resource<([^>]*)>")


def dialect_resources(text: str) -> dict[str, str]:
    """The blobs of the `{-# dialect_resources: {...} #-}` section of MLIR text (where
    torch-mlir puts a model's weights), by name, as hex text; decoded only when a
    `dense_resource` attribute is read (`_resource_array`)."""
    blobs: dict[str, str] = {}
    for section in _RESOURCES.finditer(text):
        for name, digits in _RESOURCE_BLOB.findall(section.group(1)):
            blobs[name.strip('"')] = digits
    return blobs


def _decodable_shape(t: UpstreamType, what: str) -> tuple[int, ...] | UpstreamOpaque:
    """The static shape of a constant of type `t` that accy decodes into numpy, or an
    `UpstreamOpaque` saying why it does not (`what` names the constant)."""
    if t.element not in _NUMPY_ELEMENTS or t.shape is None:
        return UpstreamOpaque(f"{what} of type {t.text}")
    shape = tuple(int(d) for d in t.shape)
    if (count := math.prod(shape)) > MAX_DECODED_ELEMENTS:
        return UpstreamOpaque(
            f"{what} of type {t.text}: {count} elements, over the {MAX_DECODED_ELEMENTS} "
            "accy decodes"
        )
    return shape


def _resource_array(text: str, t: UpstreamType, resources: dict[str, str]) -> Any:
    """The values of `dense_resource<NAME> : t` from its blob: 4 bytes of alignment, then
    the elements little-endian (i1 one byte each), as `DenseResourceElementsAttr` stores
    them; an `UpstreamOpaque` naming what is missing or wrong."""
    np = _np()
    match = _RESOURCE_NAME.match(text)
    name = match.group(1).strip('"') if match else text
    shape = _decodable_shape(t, f"dense_resource<{name}>")
    if isinstance(shape, UpstreamOpaque):
        return shape
    if name not in resources:
        return UpstreamOpaque(f"dense_resource<{name}>, whose blob the text does not hold")
    count = math.prod(shape)
    dtype = _numpy_dtype(str(t.element))
    stored = np.dtype(np.uint8) if dtype == np.bool_ else dtype.newbyteorder("<")
    raw = bytes.fromhex(resources[name])[4:]
    if len(raw) != count * stored.itemsize:
        return UpstreamOpaque(
            f"dense_resource<{name}> holds {len(raw)} bytes; {t.text} takes "
            f"{count * stored.itemsize}"
        )
    return np.frombuffer(raw, dtype=stored).astype(dtype).reshape(shape)


def _describe_attribute(
    b: SimpleNamespace, shlo: Any, attr: Any, resources: dict[str, str] | None = None
) -> Any:
    ir, np = b.ir, _np()
    resource_class = getattr(ir, "DenseResourceElementsAttr", None)
    if resource_class is not None and _isa(resource_class, attr):
        t = _describe_type(ir, resource_class(attr).type)
        return _resource_array(str(attr), t, resources or {})
    if _isa(ir.DenseElementsAttr, attr):
        dense = ir.DenseElementsAttr(attr)
        t = _describe_type(ir, dense.type)
        shape = _decodable_shape(t, "dense elements")
        if isinstance(shape, UpstreamOpaque):
            return shape
        try:
            if t.element == "bf16":  # numpy has no bfloat16: the buffer protocol refuses it
                raise TypeError("bf16")
            array = np.array(dense)
            if array.dtype == object:
                raise TypeError("object array")
            if array.shape != shape:  # some binding versions return splats as one value
                array = np.broadcast_to(array.reshape(-1)[:1].reshape(()), shape).copy()
            return array
        except Exception:  # noqa: BLE001 - bindings that cannot convert: read the text
            return _dense_from_text(str(attr), str(t.element), shape)
    for name in (
        "DenseI64ArrayAttr",
        "DenseI32ArrayAttr",
        "DenseI16ArrayAttr",
        "DenseI8ArrayAttr",
        "DenseBoolArrayAttr",
    ):
        cls = getattr(ir, name, None)
        if _isa(cls, attr):
            return tuple(cls(attr))
    if _isa(ir.BoolAttr, attr):
        return bool(ir.BoolAttr(attr).value)
    if _isa(ir.IntegerAttr, attr):
        return int(ir.IntegerAttr(attr).value)
    if _isa(ir.FloatAttr, attr):
        return float(ir.FloatAttr(attr).value)
    if _isa(ir.FlatSymbolRefAttr, attr):
        return str(ir.FlatSymbolRefAttr(attr).value)
    if _isa(ir.StringAttr, attr):
        return str(ir.StringAttr(attr).value)
    if _isa(ir.TypeAttr, attr):
        return _describe_type(ir, ir.TypeAttr(attr).value)
    if _isa(ir.ArrayAttr, attr):
        return tuple(_describe_attribute(b, shlo, a, resources) for a in ir.ArrayAttr(attr))
    if _isa(ir.DictAttr, attr):
        return {
            str(n.name): _describe_attribute(b, shlo, n.attr, resources) for n in ir.DictAttr(attr)
        }
    if _isa(ir.UnitAttr, attr):
        return True
    if shlo is not None:
        for kind in (
            "ComparisonDirectionAttr",
            "ComparisonTypeAttr",
            "PrecisionAttr",
            "ResultAccuracyModeAttr",
        ):
            cls = getattr(shlo, kind, None)
            if _isa(cls, attr):
                return UpstreamEnum(kind.removesuffix("Attr"), str(cls(attr).value))
        dot = getattr(shlo, "DotDimensionNumbers", None)
        if dot is not None and _isa(dot, attr):
            d = dot(attr)
            return {
                "lhs_batching_dimensions": tuple(d.lhs_batching_dimensions),
                "rhs_batching_dimensions": tuple(d.rhs_batching_dimensions),
                "lhs_contracting_dimensions": tuple(d.lhs_contracting_dimensions),
                "rhs_contracting_dimensions": tuple(d.rhs_contracting_dimensions),
            }
        gather = getattr(shlo, "GatherDimensionNumbers", None)
        if gather is not None and _isa(gather, attr):
            g = gather(attr)
            return {
                "offset_dims": tuple(g.offset_dims),
                "collapsed_slice_dims": tuple(g.collapsed_slice_dims),
                "operand_batching_dims": tuple(g.operand_batching_dims),
                "start_indices_batching_dims": tuple(g.start_indices_batching_dims),
                "start_index_map": tuple(g.start_index_map),
                "index_vector_dim": int(g.index_vector_dim),
            }
        conv = getattr(shlo, "ConvDimensionNumbers", None)
        if conv is not None and _isa(conv, attr):
            c = conv(attr)
            return {
                "lhs_dims": (
                    int(c.input_batch_dimension),
                    int(c.input_feature_dimension),
                    *c.input_spatial_dimensions,
                ),
                "rhs_dims": (
                    int(c.kernel_input_feature_dimension),
                    int(c.kernel_output_feature_dimension),
                    *c.kernel_spatial_dimensions,
                ),
                "result_dims": (
                    int(c.output_batch_dimension),
                    int(c.output_feature_dimension),
                    *c.output_spatial_dimensions,
                ),
            }
        scatter = getattr(shlo, "ScatterDimensionNumbers", None)
        if scatter is not None and _isa(scatter, attr):
            n = scatter(attr)
            return {
                "update_window_dims": tuple(n.update_window_dims),
                "inserted_window_dims": tuple(n.inserted_window_dims),
                "input_batching_dims": tuple(n.input_batching_dims),
                "scatter_indices_batching_dims": tuple(n.scatter_indices_batching_dims),
                "scatter_dims_to_operand_dims": tuple(n.scattered_dims_to_operand_dims),
                "index_vector_dim": int(n.index_vector_dim),
            }
    return UpstreamOpaque(str(attr))


class _Describer:
    def __init__(self, b: SimpleNamespace, shlo: Any, source_name: str, resources: dict[str, str]):
        self.b, self.shlo, self.source_name = b, shlo, source_name
        self.resources = resources
        self.ids: dict[Any, int] = {}

    def value(self, v: Any) -> UpstreamValue:
        key = v  # Values hash and compare by identity of the underlying MLIR value
        if key not in self.ids:
            self.ids[key] = len(self.ids)
        return UpstreamValue(self.ids[key], _describe_type(self.b.ir, v.type))

    def op(self, op: Any) -> UpstreamOp:
        op = op.operation
        attributes = {}
        for i in range(len(op.attributes)):
            named = op.attributes[i]
            attributes[str(named.name)] = _describe_attribute(
                self.b, self.shlo, named.attr, self.resources
            )
        name = str(op.name)
        return UpstreamOp(
            name="chlo." + name.removeprefix(HIDDEN_CHLO) if name.startswith(HIDDEN_CHLO) else name,
            operands=[self.value(v) for v in op.operands],
            results=[self.value(v) for v in op.results],
            attributes=attributes,
            regions=[
                [
                    UpstreamBlock(
                        [self.value(a) for a in block.arguments],
                        [self.op(o) for o in block.operations],
                    )
                    for block in region.blocks
                ]
                for region in op.regions
            ],
            location=_file_location(op.location, self.source_name),
        )


def _stablehlo_bindings() -> tuple[SimpleNamespace, Any]:
    b = _host()
    try:
        shlo = importlib.import_module(b.name + "._mlir_libs._stablehlo")
    except ImportError as e:
        raise MlirUnavailableError(
            f"the MLIR bindings {b.name!r} do not carry the StableHLO dialect ({e}); "
            f"install them with: {_HOST_PIP}"
        ) from e
    return b, shlo


_TOP_K = re.compile(
    r"(?P<results>%[\w.$-]+(?::2)?(?:\s*,\s*%[\w.$-]+)?)\s*=\s*chlo\.top_k\s*\(\s*"
    r"(?P<operand>%[\w.$#-]+)\s*,\s*k\s*=\s*(?P<k>\d+)\s*\)\s*:\s*"
    r"(?P<operand_type>tensor<[^>]*>)\s*->\s*\((?P<result_types>[^)]*)\)"
)
"""`chlo.top_k` in its custom form (which the bindings, without chlo, cannot parse)."""

_TENSOR_TYPE = r"tensor<(?:[^<>]|<[^<>]*>)*>"
_CHLO_ELEMENTWISE = re.compile(
    r"(?P<result>%[\w.$-]+)\s*=\s*chlo\.(?P<name>\w+)\s+"
    r"(?P<operands>%[\w.$#-]+(?:\s*,\s*%[\w.$#-]+)*)\s*(?P<attributes>\{[^{}]*\})?\s*:\s*"
    rf"(?P<types>\([^()]*\)|{_TENSOR_TYPE}(?:\s*,\s*{_TENSOR_TYPE})*)\s*->\s*"
    rf"(?P<result_type>{_TENSOR_TYPE})"
)
"""A chlo op of one result in its custom form: `%r = chlo.erf %x : T -> T`, `%r =
chlo.next_after %x, %y : T, T -> T`, `%r = chlo.broadcast_add %x, %y {...} : (A, B) -> R`."""

CHLO_LEGALIZATION = "builtin.module(func.func(chlo-legalize-to-stablehlo))"
"""StableHLO's own expansion of chlo ops (XLA's) into StableHLO ops, keeping each op's
location. Run on `CHLO_EXPANDED_BY_STABLEHLO` only: the bindings lack the chlo dialect,
and the patterns of the other ops build intermediate chlo ops, which crashes the pass."""

CHLO_EXPANDED_BY_STABLEHLO = frozenset(
    {"bessel_i1e", "cosh", "digamma", "erf", "erf_inv", "erfc", "next_after", "zeta"}
    | {f"broadcast_{name}" for name in ("add", "subtract", "multiply", "divide", "maximum")}
    | {f"broadcast_{name}" for name in ("minimum", "power", "remainder", "atan2")}
    | {f"broadcast_{name}" for name in ("and", "or", "xor", "next_after")}
)
"""The chlo ops `CHLO_LEGALIZATION` expands (each checked here in f16, bf16, f32, f64)."""

HIDDEN_CHLO = "unexpanded.chlo."
"""The generic name prefix a chlo op outside `CHLO_EXPANDED_BY_STABLEHLO` is parsed under
(so the pass never meets it); the importer sees it as `chlo.<name>` again."""


def _generic_chlo(text: str) -> str:
    """`text` with each chlo op in the generic form of an unregistered op, on the same
    line (so locations stay): `"chlo.<name>"` for `CHLO_EXPANDED_BY_STABLEHLO`, else
    under `HIDDEN_CHLO`, for the importer to expand (`accy.expansions`) or refuse by name."""

    def name(op: str) -> str:
        return f"chlo.{op}" if op in CHLO_EXPANDED_BY_STABLEHLO else f"{HIDDEN_CHLO}{op}"

    def elementwise(m: re.Match[str]) -> str:
        types = m["types"]
        if not types.startswith("("):
            types = f"({types})"
        attributes = f" {m['attributes']}" if m["attributes"] else ""
        return (
            f'{m["result"]} = "{name(m["name"])}"({m["operands"]}){attributes} : '
            f"{types} -> {m['result_type']}"
        )

    text = _TOP_K.sub(
        lambda m: (
            f'{m["results"]} = "{name("top_k")}"({m["operand"]}) {{k = {m["k"]} : i64}} : '
            f"({m['operand_type']}) -> ({m['result_types']})"
        ),
        text,
    )
    text = _CHLO_ELEMENTWISE.sub(elementwise, text)
    # Ops written in generic form already: the pass must not meet those it cannot expand.
    return re.sub(r'"chlo\.(\w+)"(?=\s*\()', lambda m: f'"{name(m[1])}"', text)


_CHLO_PASSES = threading.Lock()
_chlo_passes_registered = False


def _register_chlo_passes(shlo: Any) -> None:
    """Register StableHLO's passes (once per process), which loads the chlo dialect: it
    must be loaded before text holding chlo ops is parsed (an op parsed as unregistered
    whose dialect loads later crashes the pass that meets it)."""
    global _chlo_passes_registered
    with _CHLO_PASSES:
        if not _chlo_passes_registered:
            shlo.register_stablehlo_passes()
            _chlo_passes_registered = True


def parse_stablehlo(text: str, source_name: str = "<input>") -> UpstreamOp:
    """Parse (and verify) StableHLO text with the upstream bindings; the ``builtin.module``
    as an ``UpstreamOp`` tree. Ops without an explicit ``loc(...)`` get
    ``(source_name, line, col)`` of their text. Raises ``UpstreamParseError`` (with
    the first error's message and location) for malformed text."""
    b, shlo = _stablehlo_bindings()
    s = _Session(b)
    shlo.register_dialect(s.ctx)
    text = _generic_chlo(text)
    legalize = '"chlo.' in text
    if legalize:
        _register_chlo_passes(shlo)
    s.ctx.allow_unregistered_dialects = legalize or f'"{HIDDEN_CHLO}' in text
    try:
        with s.ctx:
            module = b.ir.Module.parse(text)
    except Exception as e:  # noqa: BLE001 - binding errors (MLIRError, ...) become diagnostics
        diags = list(getattr(e, "error_diagnostics", None) or ())
        message, location = str(e), None
        if diags:
            message = str(diags[0].message)
            location = _file_location(diags[0].location, source_name)
        lines = [str(e)] + [s.take()]
        raise UpstreamParseError(
            "\n".join(x for x in lines if x), message.strip(), location
        ) from None
    if legalize:
        s.run(module, CHLO_LEGALIZATION, "expanding chlo ops into StableHLO")
    with s.ctx:
        return _Describer(b, shlo, source_name, dialect_resources(text)).op(module.operation)


def eval_stablehlo(text: str, *arrays: np.ndarray) -> list[np.ndarray]:
    """Run the ``@main`` of a StableHLO program with StableHLO's reference interpreter
    (``eval_module``): an oracle independent of accy.

    Each array is passed with the element type of ``@main``'s parameter (so a numpy
    ``uint32`` array feeds a ``ui32`` parameter; bf16 is ``ml_dtypes.bfloat16``). A
    ``@main`` with dynamic dimensions is first refined to the arrays' shapes
    (``stablehlo-refine-arguments``, ``-refine-shapes``, ``-canonicalize-dynamism``).
    Results come back as numpy arrays of the element types in ``_NUMPY_ELEMENTS``.
    Raises ``UpstreamMlirError`` when the program does not parse, when shapes stay
    dynamic (the interpreter would abort on them), when a result's element type has no
    numpy dtype, or when the interpreter fails; never aborts on those."""
    np = _np()
    b, shlo = _stablehlo_bindings()
    s = _Session(b)
    shlo.register_dialect(s.ctx)
    module = s.parse(text)
    with s.ctx:
        main = _main_function(b, module)
        if main is None:
            raise UpstreamMlirError("evaluating StableHLO", "the module has no @main function")
        signature = b.ir.FunctionType(b.ir.TypeAttr(main.attributes["function_type"]).value)
        params = [_describe_type(b.ir, t) for t in signature.inputs]
        if len(params) != len(arrays):
            raise UpstreamMlirError(
                "evaluating StableHLO", f"@main takes {len(params)} arguments, got {len(arrays)}"
            )
        arrays = tuple(np.asarray(a) for a in arrays)
        for i, (p, a) in enumerate(zip(params, arrays, strict=True)):
            if p.element not in _NUMPY_ELEMENTS:
                raise UpstreamMlirError(
                    "evaluating StableHLO",
                    f"argument #{i} has type {p.text}, which numpy cannot hold",
                )
            if (
                p.shape is None
                or len(p.shape) != a.ndim
                or any(d is not None and d != n for d, n in zip(p.shape, a.shape, strict=True))
            ):
                raise UpstreamMlirError(
                    "evaluating StableHLO",
                    f"argument #{i} of shape {a.shape} does not fit {p.text}",
                )
        if any(None in p.shape for p in params):
            shaped = ",".join(
                f"tensor<{''.join(f'{n}x' for n in a.shape)}{p.element}>"
                for p, a in zip(params, arrays, strict=True)
            )
            shlo.register_stablehlo_passes()
            s.run(
                module,
                f"builtin.module(stablehlo-refine-arguments{{types='{shaped}'}}, "
                "stablehlo-refine-shapes, func.func(stablehlo-canonicalize-dynamism), "
                "stablehlo-refine-shapes)",
                "refining StableHLO shapes",
            )
        dynamic = _first_dynamic_value(b, module)
        if dynamic is not None:
            raise UpstreamMlirError(
                "evaluating StableHLO",
                f"the reference interpreter needs static shapes; {dynamic} stays dynamic",
            )
    try:
        with s.ctx:
            args = []
            for p, a in zip(params, arrays, strict=True):
                element = b.ir.Type.parse(p.element)
                raw = np.ascontiguousarray(a.astype(_numpy_dtype(p.element), copy=False))
                if p.element == "bf16":
                    raw = raw.view(np.uint16)
                args.append(b.ir.DenseElementsAttr.get(raw, type=element, shape=list(a.shape)))
            results = shlo.eval_module(module, args)
            return [_result_array(b, r) for r in results]
    except UpstreamMlirError:
        raise
    except Exception as e:  # noqa: BLE001 - binding errors become diagnostics
        raise s.error("evaluating StableHLO", e) from None


def _main_function(b: SimpleNamespace, module: Any) -> Any:
    for op in module.body.operations:
        op = op.operation
        if (
            op.name == "func.func"
            and "sym_name" in op.attributes
            and b.ir.StringAttr(op.attributes["sym_name"]).value == "main"
        ):
            return op
    return None


def _first_dynamic_value(b: SimpleNamespace, module: Any) -> str | None:
    """The type text of the first op result of dynamic shape in `module`, or None."""
    found: list[str] = []

    def visit(op: Any) -> Any:
        for v in op.results:
            t = v.type
            if _isa(b.ir.RankedTensorType, t):
                if not b.ir.RankedTensorType(t).has_static_shape:
                    found.append(f"{op.name} of type {t}")
            elif _isa(b.ir.UnrankedTensorType, t):
                found.append(f"{op.name} of type {t}")
        return b.ir.WalkResult.INTERRUPT if found else b.ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    return found[0] if found else None


def _result_array(b: SimpleNamespace, attr: Any) -> np.ndarray:
    if not _isa(b.ir.DenseElementsAttr, attr):
        raise UpstreamMlirError("evaluating StableHLO", f"a result is not a tensor: {attr}")
    t = _describe_type(b.ir, b.ir.DenseElementsAttr(attr).type)
    if t.element not in _NUMPY_ELEMENTS or t.shape is None:
        raise UpstreamMlirError(
            "evaluating StableHLO", f"a result has type {t.text}, which numpy cannot hold"
        )
    value = _describe_attribute(b, None, attr)
    return value if isinstance(value, _np().ndarray) else _np().asarray(value)


# ------------------------------------------------------------------------------ CLI


def main(argv: Iterable[str] | None = None) -> int:
    import argparse

    ap = argparse.ArgumentParser(
        prog="python -m accy.mlir_bridge", description=__doc__.split("\n")[0]
    )
    sub = ap.add_subparsers(dest="cmd", required=True)
    v = sub.add_parser("verify")
    v.add_argument("file")
    lo = sub.add_parser("lower")
    lo.add_argument("file")
    lo.add_argument("--target", choices=("cpu", "cuda"), default="cpu")
    lo.add_argument(
        "--threads",
        type=int,
        default=1,
        help="cpu: run scf.parallel loops as async tasks for this many threads",
    )
    px = sub.add_parser("ptx")
    px.add_argument("file")
    px.add_argument("--chip", default="sm_90")
    px.add_argument("--opt", type=int, default=3)
    px.add_argument("--libdevice", default=None)
    px.add_argument("--extract", action="store_true", help="print the PTX of each gpu.binary")
    args = ap.parse_args(list(argv) if argv is not None else None)
    text = sys.stdin.read() if args.file == "-" else Path(args.file).read_text()
    try:
        if args.cmd == "verify":
            verify_upstream(text)
        elif args.cmd == "lower":
            pipeline = cpu_pipeline(args.threads) if args.target == "cpu" else None
            sys.stdout.write(lower_to_llvm(text, target=args.target, pipeline=pipeline) + "\n")
        else:
            out = compile_kernels_to_ptx(
                text, chip=args.chip, opt=args.opt, libdevice=args.libdevice
            )
            if args.extract:
                for name, ptx in extract_ptx(out).items():
                    if ":" not in name:
                        sys.stdout.write(f"// ----- gpu.binary @{name}\n{ptx}\n")
            else:
                sys.stdout.write(out + "\n")
    except (UpstreamMlirError, MlirUnavailableError, LibdeviceNotFoundError) as e:
        sys.stderr.write(f"{args.file}: error: {e}\n")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
