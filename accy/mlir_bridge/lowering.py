"""Verifying upstream MLIR text and lowering it to the LLVM dialect.

`verify_upstream` parses and verifies; `lower_to_llvm` (and `_lower`, which the JIT and
object dumps share) runs the CPU or CUDA host pipeline and checks that nothing outside the
LLVM dialect is left: an op that was not lowered, or a `gpu.module` not yet compiled to a
`gpu.binary`, is an `UpstreamMlirError` naming it and its location.
"""

from __future__ import annotations

from typing import Any

from accy.mlir_bridge.bindings import _any_parser, _host, _Session
from accy.mlir_bridge.errors import UpstreamMlirError
from accy.mlir_bridge.pipelines import CPU_PIPELINE, CUDA_HOST_PIPELINE, Target


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
