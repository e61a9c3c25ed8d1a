"""Memref arguments of JIT-ed functions: ranked descriptors, scalar ctypes, dtypes and
function signatures.

`memref_descriptor`/`memref_arg` view a numpy array without copying (the descriptor type
is `accy.runtime.loader`'s, shared with the ahead-of-time loader); `function_signatures`
reads each defined ``func.func``'s parameters as `ArgSpec`s. numpy is imported on first
use (`_np`), never at module level.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from accy.mlir_bridge.bindings import _host, _Session

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np


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


def _same_integer_storage(a: Any, b: Any) -> bool:
    """Dtypes stored as one integer type (`uint32` and `int32`: the same bits in a memref;
    bfloat16 in lowered CPU code's i16 memrefs, `passes/lower/bf16_storage.py`)."""
    stored = "iu" if a.name != "bfloat16" else "i"
    return (
        (a.kind in "iu" or a.name == "bfloat16") and b.kind in stored and a.itemsize == b.itemsize
    )
