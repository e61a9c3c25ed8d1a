"""StableHLO text -> a plain-Python `UpstreamOp` tree, and StableHLO's reference
interpreter.

The StableHLO importer (`accy.stablehlo`) never touches the bindings: it reads the
plain-Python description below, which `parse_stablehlo` builds by walking the upstream
module generically (op name, operands, result types, attributes, regions, locations).
chlo ops are rewritten to generic form before parsing (the bindings lack the chlo
dialect); those in `CHLO_EXPANDED_BY_STABLEHLO` are expanded by StableHLO's own pass, the
others reach the importer by name. `eval_stablehlo` runs a program's ``@main`` with the
reference interpreter, an oracle independent of accy.
"""

from __future__ import annotations

import importlib
import importlib.util
import math
import re
import sys
import threading
import types
from collections.abc import Sequence
from dataclasses import dataclass
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

from accy.mlir_bridge.bindings import _HOST_PIP, _host, _isa, _Session
from accy.mlir_bridge.descriptors import _ELEM_DTYPES, _np
from accy.mlir_bridge.errors import MlirUnavailableError, UpstreamMlirError, UpstreamParseError

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np


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


MAX_DECODED_ELEMENTS = 1 << 28
"""Dense attributes of more elements stay undecoded (a splat's text is short, its array
need not be)."""


def _numpy_dtype(element: str) -> np.dtype:
    np = _np()
    if element == "bf16":
        import ml_dtypes

        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(_NUMPY_ELEMENTS[element])


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
            if dense.is_splat or array.shape != shape:  # a splat: its one value, broadcast
                array = np.broadcast_to(array.reshape(-1)[:1].reshape(()), shape)
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
        self.types: dict[Any, UpstreamType] = {}
        """Each type described once (types hash and compare as MLIR uniques them)."""

    def value(self, v: Any) -> UpstreamValue:
        key = v  # Values hash and compare by identity of the underlying MLIR value
        if key not in self.ids:
            self.ids[key] = len(self.ids)
        t = v.type
        described = self.types.get(t)
        if described is None:
            described = self.types[t] = _describe_type(self.b.ir, t)
        return UpstreamValue(self.ids[key], described)

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
    _remember_missing_dialect_modules(b.name, UNREGISTERED_DIALECT_MODULES)
    return b, shlo


UNREGISTERED_DIALECT_MODULES = ("stablehlo", "chlo", "unexpanded")
"""Dialects of the ops the importer reads whose Python module the bindings may lack."""


def _remember_missing_dialect_modules(prefix: str, dialects: Sequence[str]) -> None:
    """The bindings look for `PREFIX.dialects.NAME` (the dialect's Python op classes) each
    time they hand out an op, and do not remember a miss: an import attempt per op, a third
    of the import of a 12-layer decoder. Register an empty module for each dialect whose
    module does not exist, so the bindings find it once and use their generic op class,
    as they did on every miss."""
    for name in dialects:
        module = f"{prefix}.dialects.{name}"
        if module in sys.modules:
            continue
        try:
            missing = importlib.util.find_spec(module) is None
        except ImportError:
            missing = True
        if missing:
            sys.modules[module] = types.ModuleType(module)


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
