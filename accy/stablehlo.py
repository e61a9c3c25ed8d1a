"""Import StableHLO (what `jax.jit(f).lower(...).as_text()` prints) as an accy program.

    module = accy.import_stablehlo("model.stablehlo.mlir")   # or the text itself
    (y,) = accy.reference.run(module, "main", x)

The text is parsed and verified by the upstream MLIR bindings that carry the StableHLO
dialect (through `accy.mlir_bridge.parse_stablehlo`, the only place that touches them),
then walked generically: every op is converted by the function that `CONVERTERS` names
for its op name, with the accy `BlockBuilder`. The result is a verified accy module with
one `func.func` per public function (private functions are inlined at their calls).

Locations carry over: an op's location is the first file location inside its upstream
location (looking through name, call-site and fused locations), so a diagnostic points at
the user's Python line for JAX text with debug info, and at the StableHLO text otherwise.

What is recognised beyond one-to-one op conversions:

- `stablehlo.reduce` with one operand whose body is a single `add`/`maximum`/`minimum`/
  `multiply` of its two block arguments (or `and`/`or` on i1: `min`/`max`), returned. An init value that is the combiner's
  identity (0, -inf/INT_MIN, +inf/INT_MAX, 1) disappears; any other init is combined with
  the reduced value afterwards (so the result is exactly StableHLO's).
- `stablehlo.select` with a scalar predicate broadcasts the predicate.
- A `stablehlo.pad` that pads nothing, and a `stablehlo.slice` of the whole operand with
  unit strides (as JAX's gradients of pooling write them), are their operand: no copy.
- `stablehlo.while` as `lax.fori_loop` emits it: a counter (i32 or i64 scalar) that
  starts at a constant, a `cond` that is `compare LT, counter, N` with N a constant (or a
  loop-invariant carried constant), and a body that yields `counter + 1`. It becomes
  `accy.iterate max(N - start, 0)` over the other carried values; the counter itself is
  carried too only when the body reads it for something else, and its final value after
  the loop is the constant `start + trip count`.

Anything else (an unknown op, an attribute that changes semantics and has no accy
equivalent, a reduce body or while loop of another shape, an element type accy does not
compute with) raises `AccyError` naming the op at its location; malformed text raises
`AccyParseError` with the upstream parser's message and location.
"""

from __future__ import annotations

import functools
import math
import os
import re
from collections import ChainMap, Counter
from collections.abc import Callable, MutableMapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    FileLineColLoc,
    IntAttr,
    LocationAttr,
    ModuleOp,
    StringAttr,
    TensorType,
    UnknownLoc,
)
from xdsl.ir import SSAValue

from accy import dtypes, expansions, random_bits
from accy.builder import BlockBuilder, Builder
from accy.diagnostics import (
    MAX_NESTING,
    AccyError,
    AccyParseError,
    StableHloTextError,
    decode_source,
    looks_like_path,
    nesting_error,
    wrong_type,
)
from accy.dialects import accy as ops
from accy.mlir_bridge.errors import MlirUnavailableError, UpstreamParseError
from accy.mlir_bridge.stablehlo import (
    UpstreamBlock,
    UpstreamEnum,
    UpstreamOp,
    UpstreamOpaque,
    UpstreamType,
    UpstreamValue,
    parse_stablehlo,
)
from accy.passes.constant_fold import fold_constants
from accy.passes.dot_folds import fold_into_dots
from accy.passes.loop_invariants import drop_loop_invariants
from accy.passes.rematerialize import rematerialize
from accy.passes.sort_prefixes import sort_prefixes
from accy.shape_values import DYNAMIC, ShapeValues
from accy.source import program_module

__all__ = ["CONVERTERS", "import_stablehlo", "read_program"]

Env = MutableMapping[int, SSAValue]

IGNORED_ATTRIBUTE_PREFIXES = ("mhlo.", "jax.", "sdy.", "xla.")
"""Attributes of these prefixes (sharding, frontend hints) are metadata for accy."""


# ---------------------------------------------------------------------------------------
# Entry point
# ---------------------------------------------------------------------------------------


_BRACKETS = re.compile(r'"(?:[^"\\]|\\.)*"|//[^\n]*|->|[(\[{<]|[)\]}>]')


def _check_nesting(text: str, filename: str, line_offset: int) -> None:
    """Refuse brackets nested deeper than `MAX_NESTING` (as `accy.parse` does) before the
    bindings parse the text: walking such attributes recurses in Python."""
    depth = 0
    for match in _BRACKETS.finditer(text):
        token = match.group()
        if token in "([{<":
            depth += 1
            if depth > MAX_NESTING:
                start = match.start()
                line = text.count("\n", 0, start) + 1 + line_offset
                column = start - (text.rfind("\n", 0, start) + 1) + 1
                raise nesting_error(_file_line_col(filename, line, column))
        elif token in ")]}>":
            depth -= 1


_STABLEHLO_OP = re.compile(r'^\s*(?:%[^=\n]*=\s*)?"?(?:stablehlo|chlo)\.\w', re.MULTILINE)
"""A line that starts a StableHLO or CHLO op (an accy program has none)."""


def read_program(module_or_text: object, function: str) -> ModuleOp:
    """The module `function` (`accy.compile`, `accy.export`) was given: an accy module,
    accy text or a path (`accy.source.program_module`), or StableHLO text or a path,
    imported (text with a StableHLO or CHLO op; JAX's locations, written after their uses,
    are not accy syntax)."""
    if isinstance(module_or_text, os.PathLike) or (
        isinstance(module_or_text, str) and looks_like_path(module_or_text)
    ):
        try:
            text = Path(module_or_text).read_text(errors="replace")
        except OSError:
            text = ""  # the parser says what is wrong with the path
    else:
        text = module_or_text if isinstance(module_or_text, str) else ""
    if _STABLEHLO_OP.search(text):
        return import_stablehlo(module_or_text)  # type: ignore[arg-type]
    try:
        return program_module(module_or_text, function)
    except StableHloTextError:
        return import_stablehlo(module_or_text)  # type: ignore[arg-type]


def import_stablehlo(
    source: str | os.PathLike[str],
    *,
    filename: str | None = None,
    line_offset: int = 0,
) -> ModuleOp:
    """The accy module of a StableHLO program, from its text or a path to a file.

    `filename` names the text in locations (default: the path, or `<input>`);
    `line_offset` is added to the line of every location in that file (for a chunk of a
    larger file). Raises `AccyParseError` for malformed text and `AccyError` (at the op's
    location) for anything accy cannot express; the module is verified.
    """
    if not isinstance(source, str | os.PathLike):
        expected = "StableHLO text (str) or the path of a file (str or os.PathLike)"
        raise wrong_type("accy.import_stablehlo", "source", expected, source)
    if isinstance(source, os.PathLike) or (
        isinstance(source, str)
        and "\n" not in source
        and "{" not in source
        and Path(source).is_file()
    ):
        path = Path(source)
        filename = filename or str(path)
        try:
            data = path.read_bytes()
        except OSError as error:
            raise AccyError(f"cannot read '{path}': {error.strerror}") from None
        text = decode_source(data, filename)
    elif "\n" not in source and source.strip().endswith(".mlir"):
        raise AccyError(f"cannot read '{source}': no such file")
    else:
        text = str(source)
    filename = filename or "<input>"
    _check_nesting(text, filename, line_offset)
    try:
        upstream = parse_stablehlo(text, filename)
    except UpstreamParseError as error:
        location = None
        if error.location is not None:
            file, line, col = error.location
            location = _file_line_col(file, line + (line_offset if file == filename else 0), col)
        raise AccyParseError(_parse_message(error, text), location) from None
    except MlirUnavailableError as error:
        raise AccyError(f"importing StableHLO needs the upstream MLIR bindings: {error}") from None
    return _Importer(filename, line_offset).module(upstream)


_UNKNOWN_DIALECT = re.compile(r"Dialect `([\w.]+)' not found for custom op '([\w.]+)'")
_OP_NAME = re.compile(r'"?([A-Za-z_][\w$]*\.[\w.$]+)"?')


def _parse_message(error: UpstreamParseError, text: str) -> str:
    """The upstream parser's message, naming the op when its dialect is one the bindings
    do not register (their message says only "unregistered dialect")."""
    if match := _UNKNOWN_DIALECT.search(error.message):
        dialect, op = match.groups()
    elif error.message.startswith("operation being parsed with an unregistered dialect"):
        op = None
        if error.location is not None:
            _, line, col = error.location
            lines = text.split("\n")
            if 1 <= line <= len(lines):
                # The location points into the op's name (the generic form's quotes).
                names = [m for m in _OP_NAME.finditer(lines[line - 1]) if m.start() < col]
                op = names[-1].group(1) if names else None
        if op is None:
            return error.message
        dialect = op.split(".")[0]
    else:
        return error.message
    return f"'{op}' is an op of the '{dialect}' dialect, which the StableHLO importer does not read"


def _file_line_col(file: str, line: int, col: int) -> FileLineColLoc:
    return FileLineColLoc(StringAttr(file), IntAttr(line), IntAttr(col))


@functools.lru_cache(maxsize=4096)
def _tensor_type(element: str, shape: tuple[int, ...]) -> TensorType:
    """A tensor type, built (and verified) once for each element and shape: a program
    names a few hundred types thousands of times."""
    return TensorType(dtypes.ELEMENT_TYPES[element], shape)


# ---------------------------------------------------------------------------------------
# The importer: module, functions, blocks
# ---------------------------------------------------------------------------------------


class _Importer:
    def __init__(self, filename: str, line_offset: int):
        self.filename = filename
        self.line_offset = line_offset
        self.builder = Builder()
        self.functions: dict[str, UpstreamOp] = {}
        self.constants: dict[int, np.ndarray] = {}
        """Values of upstream constants by value id (for reduce inits and loop bounds)."""
        self.uses: Counter[int] = Counter()
        self.random_ops = 0
        """`stablehlo.rng` ops imported so far (each draws from a state of its own)."""
        self.skipped: set[int] = set()
        """`id()` of upstream ops not to convert (a dropped loop counter's increment)."""
        self.inlining: list[str] = []
        self.shapes = ShapeValues()
        """Import-time values of the integer tensors shapes are computed with."""
        self.mapped: tuple[int, ...] | None = None
        """Inside a `stablehlo.map` body: the shape its rank-0 values stand for."""
        self.enclosing: LocationAttr = UnknownLoc()
        """The location of the op being converted, or of the nearest op around it (a
        call being inlined) that has one: where an op without a file location is."""

    # Locations and errors ---------------------------------------------------------

    def location(self, op: UpstreamOp, fallback: LocationAttr | None = None) -> LocationAttr:
        if op.location is None:
            return fallback or UnknownLoc()
        file, line, col = op.location
        if file == self.filename:
            line += self.line_offset
        return _file_line_col(file, line, col)

    def error(self, op: UpstreamOp, message: str) -> AccyError:
        return AccyError(f"'{op.name}' {message}", self.location(op, self.enclosing))

    # Types --------------------------------------------------------------------------

    def tensor_type(self, op: UpstreamOp, t: UpstreamType) -> TensorType:
        if t.shape is None or t.element is None:
            raise self.error(op, f"has a value of type {t.text}; accy computes on ranked tensors")
        if t.element not in dtypes.ELEMENT_TYPES:
            raise self.error(
                op,
                f"has element type {t.element} ({t.text}); accy computes with "
                + ", ".join(dtypes.ELEMENT_TYPES),
            )
        shape = tuple(DYNAMIC_INDEX if d is None else d for d in t.shape)
        if self.mapped is not None and not shape:
            shape = tuple(self.mapped)
        return _tensor_type(t.element, shape)

    # Module and functions -----------------------------------------------------------

    def module(self, upstream: UpstreamOp) -> ModuleOp:
        for block in upstream.regions[0] if upstream.regions else ():
            for op in block.ops:
                if op.name != "func.func":
                    raise self.error(op, "is not supported at module level (only func.func)")
                self.functions[str(op.attributes.get("sym_name"))] = op
        for function in self.functions.values():
            _count_uses(function, self.uses)
        for name, function in self.functions.items():
            if function.attributes.get("sym_visibility", "public") != "private":
                self.function(name, function)
        module = self.builder.finish()
        drop_loop_invariants(module)
        sort_prefixes(module)
        fold_into_dots(module)
        fold_constants(module)
        rematerialize(module)
        return module

    def function(self, name: str, function: UpstreamOp) -> None:
        if not function.regions or not function.regions[0]:
            raise self.error(function, f"@{name} is a declaration without a body")
        if len(function.regions[0]) != 1:
            raise self.error(function, f"@{name} has several blocks; accy needs one")
        block = function.regions[0][0]
        terminator = block.ops[-1]
        params = [self.tensor_type(function, a.type) for a in block.args]
        results = [self.tensor_type(terminator, v.type) for v in terminator.operands]
        self.builder.location = self.location(function)
        arg_attrs = function.attributes.get("arg_attrs", ())
        donated = [i for i, entries in enumerate(arg_attrs) if _donated(entries)]
        fb = self.builder.begin_function(name, params, results, donated=donated)
        env: Env = {}
        self.shapes.bind_dimension_variables(block.args)
        for i, arg in enumerate(block.args):
            env[arg.id] = fb.parameter(i)
            env[arg.id].name_hint = f"arg{i}"
        self.inlining.append(name)
        values = self.block(block, env, fb)
        self.inlining.pop()
        fb.return_(values)
        fb.finish()

    def block(
        self,
        block: UpstreamBlock,
        env: Env,
        bb: BlockBuilder,
        keep: Sequence[int] | None = None,
    ) -> list[SSAValue]:
        """Convert `block`'s ops into `bb`; the accy values of its terminator's operands
        (only those at the indices `keep`, when given)."""
        fallback = bb.location
        for op in block.ops:
            bb.location = self.enclosing = self.location(op, fallback)
            if op.name in ("func.return", "stablehlo.return"):
                indices = range(len(op.operands)) if keep is None else keep
                return [self.value(env, op.operands[i], op) for i in indices]
            if id(op) in self.skipped:
                continue
            values = self.convert(op, env, bb)
            for result, value in zip(op.results, values, strict=True):
                env[result.id] = value
        raise AccyError("a block has no terminator", fallback)

    def value(self, env: Env, v: UpstreamValue, op: UpstreamOp) -> SSAValue:
        try:
            value = env[v.id]
        except KeyError:
            raise self.error(op, "reads a value that the importer did not define") from None
        if isinstance(value, tuple) and not self.check_supported(op).tuples:
            raise self.error(op, f"reads a value of type {v.type.text}; accy computes on tensors")
        return value

    # Ops ----------------------------------------------------------------------------

    def check_supported(self, op: UpstreamOp) -> Converter:
        converter = CONVERTERS.get(op.name)
        if converter is None:
            raise self.error(op, "is not supported by the StableHLO importer")
        for name in op.attributes:
            if name.startswith(IGNORED_ATTRIBUTE_PREFIXES) or name in converter.ignored:
                continue
            if name not in converter.attributes:
                raise self.error(op, f"has attribute '{name}' that the importer does not support")
        return converter

    def convert(self, op: UpstreamOp, env: Env, bb: BlockBuilder) -> list[SSAValue]:
        converter = self.check_supported(op)
        if converter.tuples:
            operands = [self.value(env, v, op) for v in op.operands]
            return list(converter.convert(self, op, operands, bb, env))
        for t in [*(v.type for v in op.operands), *(v.type for v in op.results)]:
            self.tensor_type(op, t)
        for name, check in converter.attributes.items():
            if name in op.attributes and check is not None:
                problem = check(op.attributes[name])
                if problem:
                    raise self.error(op, problem)
        operands = [self.value(env, v, op) for v in op.operands]
        values = list(converter.convert(self, op, operands, bb, env))
        self.shapes.record(op)
        for result, value in zip(op.results, values, strict=True):
            expected = self.tensor_type(op, result.type)
            if value.type != expected:
                raise self.error(
                    op, f"result has type {result.type.text}, but accy computes {value.type}"
                )
        return values


def _donated(entries: object) -> bool:
    """Whether a parameter's attributes donate its buffer, as JAX marks `donate_argnums`:
    `tf.aliasing_output = N` (an output may take it over) or `jax.buffer_donor = true`."""
    if not isinstance(entries, dict):
        return False
    return "tf.aliasing_output" in entries or entries.get("jax.buffer_donor") is True


def _count_uses(op: UpstreamOp, uses: Counter[int]) -> None:
    for v in op.operands:
        uses[v.id] += 1
    for region in op.regions:
        for block in region:
            for inner in block.ops:
                _count_uses(inner, uses)


# ---------------------------------------------------------------------------------------
# Converters: one small function per op family
# ---------------------------------------------------------------------------------------

ConvertFn = Callable[[_Importer, UpstreamOp, list[SSAValue], BlockBuilder, Env], Sequence[SSAValue]]
AttributeCheck = Callable[[Any], str | None] | None


@dataclass(frozen=True)
class Converter:
    """How one StableHLO op becomes accy: the function and the attributes it reads.

    `attributes` maps each attribute the conversion honours to a check (returning a
    problem text or None); `ignored` lists attributes that are hints with no effect on
    the values accy computes (precision, a dot's algorithm: accy multiplies at full
    precision). Any other attribute is reported, never dropped silently.
    """

    convert: ConvertFn
    attributes: dict[str, AttributeCheck]
    ignored: frozenset[str] = frozenset()
    tuples: bool = False
    """The op makes or takes apart tuples (whose values the importer holds as Python tuples
    of accy values): its operand and result types are not tensors."""


def _elementwise(method: str) -> ConvertFn:
    """An op that maps to the builder method of the same name (operands in order)."""

    def convert(imp, op, operands, bb, env):
        return [getattr(bb, method)(*operands)]

    return convert


def _elementwise_or_on_i1(method: str, on_booleans: str) -> ConvertFn:
    """`method`, or `on_booleans` on i1 (the maximum of booleans is their `or`, the
    minimum their `and`: false < true; StableHLO's add on i1 is `or`, its multiply
    `and`)."""

    def convert(imp, op, operands, bb, env):
        boolean = op.operands[0].type.element == "i1"
        return [getattr(bb, on_booleans if boolean else method)(*operands)]

    return convert


def _default_accuracy(attr: Any) -> str | None:
    text = attr.text if isinstance(attr, UpstreamOpaque) else str(attr)
    if "DEFAULT" in text:
        return None
    return f"requests result accuracy {text}; accy computes with default accuracy only"


SPLAT_BROADCAST_ELEMENTS = 4096
"""A splat constant of this many elements or more (upstream simplification folds
broadcasts of scalars into them) is imported as its scalar broadcast: its bytes would cost
import time and memory, and the planner fuses the broadcast into its readers."""


def _constant(imp, op, operands, bb, env):
    value = op.attributes.get("value")
    if not isinstance(value, np.ndarray):
        what = value.text if isinstance(value, UpstreamOpaque) else value
        raise imp.error(op, f"has a value accy cannot read: {what}")
    imp.constants[op.results[0].id] = value
    t = imp.tensor_type(op, op.results[0].type)
    if value.size >= SPLAT_BROADCAST_ELEMENTS and not any(value.strides):  # a splat
        scalar = bb.constant(TensorType(t.get_element_type(), []), value.reshape(-1)[0])
        return [bb.broadcast_in_dim(scalar, t, [])]
    return [bb.constant(t, value)]


def _compare_type(attr: Any) -> str | None:
    value = attr.value if isinstance(attr, UpstreamEnum) else str(attr)
    if value in ("FLOAT", "SIGNED", "NOTYPE", "TOTALORDER"):
        return None
    if value == "UNSIGNED":
        return None  # checked against the element type in _compare
    return f"compares with type {value}; accy compares floats as FLOAT and integers as SIGNED"


def _compare(imp, op, operands, bb, env):
    direction = op.attributes["comparison_direction"]
    kind = op.attributes.get("compare_type")
    unsigned = isinstance(kind, UpstreamEnum) and kind.value == "UNSIGNED"
    element = op.operands[0].type.element
    signedness = isinstance(kind, UpstreamEnum) and kind.value in ("SIGNED", "UNSIGNED")
    if signedness and element != "i1" and unsigned != element.startswith("ui"):
        raise imp.error(
            op,
            f"compares {element} integers as {kind.value}; accy compares signless "
            "integers as SIGNED, unsigned ones and i1 as UNSIGNED",
        )
    total_order = isinstance(kind, UpstreamEnum) and kind.value == "TOTALORDER"
    return [bb.compare(direction.value, *operands, total_order=total_order)]


def _direction(attr: Any) -> str | None:
    if isinstance(attr, UpstreamEnum) and attr.value in ("EQ", "NE", "LT", "LE", "GT", "GE"):
        return None
    return f"has an unknown comparison direction {attr}"


def _clamp(imp, op, operands, bb, env):
    """`clamp(min, x, max)` as StableHLO defines it: `minimum(maximum(x, min), max)`, a
    rank-0 bound broadcast to the operand's shape."""
    low, x, high = operands
    bounds = []
    for bound in (low, high):
        if bound.type.get_num_dims() == 0 and x.type.get_num_dims() > 0:
            bound = bb.broadcast_in_dim(bound, x.type, [])
        bounds.append(bound)
    return [bb.minimum(bb.maximum(x, bounds[0]), bounds[1])]


def _select(imp, op, operands, bb, env):
    pred, on_true, on_false = operands
    if pred.type.get_num_dims() == 0 and on_true.type.get_num_dims() > 0:
        target = TensorType(pred.type.get_element_type(), on_true.type.get_shape())
        pred = bb.broadcast_in_dim(pred, target, [])
    return [bb.select(pred, on_true, on_false)]


def _bitcast_convert(imp, op, operands, bb, env):
    source, result = op.operands[0].type, op.results[0].type
    if source.shape != result.shape:
        raise imp.error(
            op,
            f"bitcasts {source.text} to {result.text}, changing the shape; accy bitcasts "
            "between element types of the same bit width only",
        )
    return [bb.bitcast_convert(operands[0], dtypes.ELEMENT_TYPES[result.element])]


def _convert(imp, op, operands, bb, env):
    return [bb.convert(operands[0], imp.tensor_type(op, op.results[0].type).get_element_type())]


def _broadcast_in_dim(imp, op, operands, bb, env):
    result = imp.tensor_type(op, op.results[0].type)
    value = imp.constants.get(op.operands[0].id)
    if value is not None and value.shape == () and result.get_num_dims() == 0:
        imp.constants[op.results[0].id] = value
    return [bb.broadcast_in_dim(operands[0], result, op.attributes["broadcast_dimensions"])]


def _reshape(imp, op, operands, bb, env):
    return [bb.reshape(operands[0], imp.tensor_type(op, op.results[0].type))]


def _transpose(imp, op, operands, bb, env):
    return [bb.transpose(operands[0], op.attributes["permutation"])]


_COMBINERS = {
    "stablehlo.add": ("add", "add"),
    "stablehlo.maximum": ("max", "maximum"),
    "stablehlo.minimum": ("min", "minimum"),
    "stablehlo.multiply": ("mul", "multiply"),
    "stablehlo.and": ("min", "and_"),
    "stablehlo.or": ("max", "or_"),
}
"""Reduce body op -> (accy combiner kind, builder method that combines two values). On
i1, `and` is `min` and `or` is `max`; the importer takes them on i1 only."""


def _reduce_kind(imp: _Importer, op: UpstreamOp) -> str | None:
    """The combiner of a reduce body that is a single add/max/min/mul (and/or on i1) of
    both arguments, returned; None for any other body (a general `accy.fold`)."""
    blocks = op.regions[0] if op.regions else []
    if len(blocks) != 1:
        raise imp.error(op, "has no single-block body")
    body = blocks[0]
    ops = body.ops
    if (
        len(body.args) != 2
        or len(ops) != 2
        or ops[0].name not in _COMBINERS
        or sorted(v.id for v in ops[0].operands) != sorted(a.id for a in body.args)
        or ops[1].name != "stablehlo.return"
        or [v.id for v in ops[1].operands] != [ops[0].results[0].id]
    ):
        return None
    element = op.operands[0].type.element
    if any(a.type.element != element or a.type.shape != () for a in body.args):
        return None
    if ops[0].name in ("stablehlo.and", "stablehlo.or") and element != "i1":
        return None
    return ops[0].name


def _scalar_body(imp, op, body, bb, env, arguments: list[str], results: int, what: str):
    """A builder callback converting the region block `body` of `op` (its block arguments
    rank-0 tensors of the element types `arguments`) into a scalar body that yields
    `results` values; a located error when its arguments or results differ."""
    if [(a.type.element, a.type.shape) for a in body.args] != [(e, ()) for e in arguments]:
        raise imp.error(
            op, f"has a {what} that does not take scalars of types ({', '.join(arguments)})"
        )

    def convert(inner: BlockBuilder, *args: SSAValue) -> list[SSAValue]:
        scope: Env = ChainMap({a.id: v for a, v in zip(body.args, args)}, env)
        inner.location = bb.location
        values = imp.block(body, scope, inner)
        if len(values) != results:
            raise imp.error(op, f"has a {what} returning {len(values)} values, not {results}")
        return values

    return convert


def _fold(imp, op, operands, bb, env):
    """A reduce with several operands or a general body: `accy.fold`."""
    count = len(op.operands) // 2
    elements = [v.type.element for v in op.operands[:count]]
    combine = _scalar_body(imp, op, op.regions[0][0], bb, env, elements * 2, count, "body")
    location = bb.location
    results = bb.fold(operands[:count], operands[count:], op.attributes["dimensions"], combine)
    bb.location = imp.enclosing = location
    return results


def _is_identity(kind: str, value: np.ndarray) -> bool:
    if value.shape != ():
        return False
    v = value[()]
    dtype = value.dtype
    if kind == "stablehlo.add":
        return bool(v == 0)  # (+0.0 differs from XLA only in the sign of an all -0.0 sum)
    if kind == "stablehlo.multiply":
        return bool(v == 1)
    maximum = kind in ("stablehlo.maximum", "stablehlo.or")
    if dtype == np.bool_:
        return bool(v) == (not maximum)
    if dtypes.is_bfloat16(dtype) or np.issubdtype(dtype, np.floating):
        return bool(np.float64(v) == (-np.inf if maximum else np.inf))
    info = np.iinfo(dtype)
    return int(v) == (info.min if maximum else info.max)


def _reduces_single_elements(x: SSAValue, dims: Sequence[int], kind_name: str) -> bool:
    """Whether a reduce of `x` from its identity over `dims` folds one element each (the
    reduced dims' extents multiply to 1): the result is `x` reshaped, exactly, but for a
    float sum (+0.0 + -0.0 is +0.0). JAX's gathers check their indices' bounds this way."""
    shape = x.type.get_shape()  # type: ignore[attr-defined]
    if DYNAMIC_INDEX in shape or any(shape[d] != 1 for d in dims):
        return False
    return not (kind_name == "stablehlo.add" and ops.is_float(x.type.get_element_type()))  # type: ignore[attr-defined]


def _reduce(imp, op, operands, bb, env):
    if len(op.operands) != 2 or _reduce_kind(imp, op) is None:
        return _fold(imp, op, operands, bb, env)
    kind_name = _reduce_kind(imp, op)
    kind, method = _COMBINERS[kind_name]
    x, init = operands
    dims = [int(d) for d in op.attributes["dimensions"]]
    init_value = imp.constants.get(op.operands[1].id)
    identity = init_value is not None and _is_identity(kind_name, init_value)
    shape = x.type.get_shape()
    if identity and _reduces_single_elements(x, dims, kind_name):
        kept = [n for d, n in enumerate(shape) if d not in dims]
        return [bb.reshape(x, TensorType(x.type.get_element_type(), kept))]
    reduced = bb.reduce(kind, x, dims)
    if identity:
        return [reduced]
    if reduced.type.get_num_dims() > 0:
        init = bb.broadcast_in_dim(init, reduced.type, [])
    return [getattr(bb, method)(reduced, init)]


def _padding_pairs(imp, op, rank: int) -> list[tuple[int, int]]:
    """The `padding` attribute (an N x 2 dense array) as (low, high) pairs; none by
    default."""
    padding = op.attributes.get("padding")
    if padding is None:
        return [(0, 0)] * rank
    pairs = np.asarray(padding).reshape(-1, 2) if np.size(padding) else np.zeros((0, 2))
    if pairs.shape != (rank, 2):
        raise imp.error(op, f"has padding of shape {np.shape(padding)} for {rank} dims")
    return [(int(low), int(high)) for low, high in pairs]


def _window_list(op, name: str, rank: int) -> list[int]:
    return [int(v) for v in op.attributes.get(name, (1,) * rank)]


def _cumulative(imp, op, rank: int, kind_name: str | None) -> tuple[int, bool] | None:
    """(dim, reverse) when a one-operand reduce_window is a running reduction along one
    dim (how JAX lowers `cumsum`, `cumprod`, `cummax`, `cummin`): a single combiner from
    its identity, a window the size of the dim padded by its size - 1 before (after,
    reversed), every other dim untouched."""
    if kind_name is None or len(op.operands) != 2:
        return None
    init = imp.constants.get(op.operands[1].id)
    if init is None or not _is_identity(kind_name, init):
        return None
    shape = op.operands[0].type.shape
    window = _window_list(op, "window_dimensions", rank)
    padding = _padding_pairs(imp, op, rank)
    if any(
        _window_list(op, name, rank) != [1] * rank
        for name in ("window_strides", "base_dilations", "window_dilations")
    ):
        return None
    along = [d for d in range(rank) if window[d] != 1 or padding[d] != (0, 0)]
    if len(along) != 1:
        return None
    (dim,) = along
    n = shape[dim]
    if window[dim] != n or n < 2:
        return None
    if padding[dim] == (n - 1, 0):
        return dim, False
    if padding[dim] == (0, n - 1):
        return dim, True
    return None


def _reduce_window(imp, op, operands, bb, env):
    """A running reduction as `accy.scan` (linear work; see `_cumulative`), any other
    window as `accy.reduce_window`."""
    count = len(op.results)
    rank = len(op.operands[0].type.shape)
    blocks = op.regions[0] if op.regions else []
    if len(blocks) != 1:
        raise imp.error(op, "has no single-block body")
    kind_name = _reduce_kind(imp, op) if count == 1 else None
    running = _cumulative(imp, op, rank, kind_name)
    if running is not None and kind_name is not None:
        dim, reverse = running
        kind = _COMBINERS[kind_name][0]
        x = operands[0]
        if reverse:
            x = bb.reverse(x, [dim])
        scratch = bb.broadcast_in_dim(operands[1], x.type, [])
        low_precision = op.operands[0].type.element in ("f16", "bf16")
        scanned = bb.scan(kind, x, scratch, dim, rounded=low_precision)
        return [bb.reverse(scanned, [dim]) if reverse else scanned]
    elements = [v.type.element for v in op.operands[:count]]
    combine = _scalar_body(imp, op, blocks[0], bb, env, elements * 2, count, "body")
    location = bb.location
    results = bb.reduce_window(
        operands[:count],
        operands[count:],
        combine,
        window=_window_list(op, "window_dimensions", rank),
        strides=_window_list(op, "window_strides", rank),
        base_dilations=_window_list(op, "base_dilations", rank),
        window_dilations=_window_list(op, "window_dilations", rank),
        padding=_padding_pairs(imp, op, rank),
    )
    bb.location = imp.enclosing = location
    return results


def _select_and_scatter(imp, op, operands, bb, env):
    rank = len(op.operands[0].type.shape)
    if len(op.regions) != 2 or any(len(r) != 1 for r in op.regions):
        raise imp.error(op, "has no single-block select and scatter regions")
    element = op.operands[0].type.element
    select = _scalar_body(imp, op, op.regions[0][0], bb, env, [element] * 2, 1, "select")
    scatter = _scalar_body(imp, op, op.regions[1][0], bb, env, [element] * 2, 1, "scatter")
    location = bb.location
    result = bb.select_and_scatter(
        *operands,
        lambda inner, a, b: select(inner, a, b)[0],
        lambda inner, a, b: scatter(inner, a, b)[0],
        window=_window_list(op, "window_dimensions", rank),
        strides=_window_list(op, "window_strides", rank),
        padding=_padding_pairs(imp, op, rank),
    )
    bb.location = imp.enclosing = location
    return [result]


def _conv_numbers(attr: Any) -> str | None:
    if isinstance(attr, dict) and "lhs_dims" in attr:
        return None
    return f"has convolution dimension numbers accy cannot read: {attr}"


def _convolution(imp, op, operands, bb, env, padding: list[tuple[int, int]] | None = None):
    a = op.attributes
    numbers = a["dimension_numbers"]
    spatial = len(numbers["lhs_dims"]) - 2
    result = imp.tensor_type(op, op.results[0].type)
    return [
        bb.convolution(
            operands[0],
            operands[1],
            lhs_dims=numbers["lhs_dims"],
            rhs_dims=numbers["rhs_dims"],
            result_dims=numbers["result_dims"],
            strides=_window_list(op, "window_strides", spatial),
            padding=padding if padding is not None else _padding_pairs(imp, op, spatial),
            lhs_dilation=_window_list(op, "lhs_dilation", spatial),
            rhs_dilation=_window_list(op, "rhs_dilation", spatial),
            reversal=[bool(r) for r in a.get("window_reversal", (False,) * spatial)],
            feature_groups=int(a.get("feature_group_count", 1)),
            batch_groups=int(a.get("batch_group_count", 1)),
            dtype=result.get_element_type(),
        )
    ]


def _dynamic_conv(imp, op, operands, bb, env):
    """A dynamic_conv whose padding operand is a constant: a convolution."""
    padding = imp.constants.get(op.operands[2].id)
    if padding is None:
        raise imp.error(op, "has a padding operand that is not a constant; accy pads statically")
    spatial = len(op.attributes["dimension_numbers"]["lhs_dims"]) - 2
    pairs = np.asarray(padding).reshape(-1, 2)
    if pairs.shape != (spatial, 2):
        raise imp.error(op, f"has padding of shape {np.shape(padding)} for {spatial} dims")
    return _convolution(imp, op, operands[:2], bb, env, [(int(lo), int(hi)) for lo, hi in pairs])


def _preferred(imp, op, operands, bb, product) -> SSAValue:
    """A product whose result type (StableHLO's preferred element type) differs from its
    operands': computed in the result type when that is as wide (of the same kind, or
    floats from integers: bf16 x bf16 -> f32, i8 x i8 -> i32, f32 x f32 -> f64 are exact
    there), else in the operands' type and rounded to the result's."""
    result = imp.tensor_type(op, op.results[0].type).get_element_type()
    source = operands[0].type.get_element_type()
    if operands[1].type.get_element_type() != source:
        raise imp.error(op, "multiplies operands of two element types; accy needs one")
    if result == source:
        return product(*operands)
    floats = ops.is_float(result), ops.is_float(source)
    wider = floats[0] == floats[1] and result.bitwidth >= source.bitwidth  # type: ignore[attr-defined]
    if wider or (floats[0] and not floats[1]):
        return product(*(bb.convert(x, result) for x in operands))
    return bb.convert(product(*operands), result)


def _dot_general(imp, op, operands, bb, env):
    numbers = op.attributes["dot_dimension_numbers"]

    def product(lhs, rhs):
        return bb.dot_general(
            lhs,
            rhs,
            batching=(numbers["lhs_batching_dimensions"], numbers["rhs_batching_dimensions"]),
            contracting=(
                numbers["lhs_contracting_dimensions"],
                numbers["rhs_contracting_dimensions"],
            ),
        )

    return [_preferred(imp, op, operands, bb, product)]


def _dot_numbers(attr: Any) -> str | None:
    return None if isinstance(attr, dict) else f"has dot dimension numbers accy cannot read: {attr}"


def _dot(imp, op, operands, bb, env):
    lhs, rhs = operands
    if not (1 <= lhs.type.get_num_dims() <= 2 and 1 <= rhs.type.get_num_dims() <= 2):
        raise imp.error(op, "needs operands of rank 1 or 2")
    contracting = ([lhs.type.get_num_dims() - 1], [0])
    return [
        _preferred(
            imp, op, operands, bb, lambda a, b: bb.dot_general(a, b, contracting=contracting)
        )
    ]


def _check_shape_operand(imp, op, index: int) -> None:
    """Operand `index` of a dynamic-shape op holds its result's shape: each static dim's
    size, and the run-time size of accy's dynamic dims (`shape_values.DYNAMIC`) at each
    dynamic one. accy imports such an op as its static form on the result type. A fully
    static result type is the shape even where the importer cannot evaluate the operand
    (torch-mlir computes `arange`'s length in f64): StableHLO requires the two to agree."""
    value = imp.shapes.get(op.operands[index])
    if value is None and None not in op.results[0].type.shape:
        return
    if value is None:
        raise imp.error(
            op,
            "takes its shape from a value the importer cannot determine; accy imports shapes "
            "computed from constants, get_dimension_size and JAX's dimension variables",
        )
    for d, (entry, size) in enumerate(zip(value, op.results[0].type.shape, strict=True)):
        if entry != (DYNAMIC if size is None else size):
            got = "the dynamic size" if entry == DYNAMIC else entry
            raise imp.error(
                op,
                f"sizes result dim {d} as {got}, but its type has "
                f"{'?' if size is None else size}; accy's dynamic dims all have one size "
                "(the plan's rows)",
            )


def _dynamic_broadcast_in_dim(imp, op, operands, bb, env):
    _check_shape_operand(imp, op, 1)
    result = imp.tensor_type(op, op.results[0].type)
    return [bb.broadcast_in_dim(operands[0], result, op.attributes["broadcast_dimensions"])]


def _dynamic_iota(imp, op, operands, bb, env):
    _check_shape_operand(imp, op, 0)
    return [bb.iota(imp.tensor_type(op, op.results[0].type), op.attributes["iota_dimension"])]


def _dynamic_reshape(imp, op, operands, bb, env):
    _check_shape_operand(imp, op, 1)
    source, result = op.operands[0].type.shape, op.results[0].type.shape
    if source.count(None) != result.count(None):
        raise imp.error(
            op,
            f"reshapes {op.operands[0].type.text} to {op.results[0].type.text}; accy "
            "reshapes keep the number of dynamic dims (all have one size)",
        )
    return [bb.reshape(operands[0], imp.tensor_type(op, op.results[0].type))]


def _real_dynamic_slice(imp, op, operands, bb, env):
    """The slice of the ranges known at import: a dynamic dim sliced whole, static dims by
    `accy.slice` (of a static operand) or whole."""
    ranges = [imp.shapes.get(v) for v in op.operands[1:]]
    if any(r is None for r in ranges):
        raise imp.error(
            op,
            "slices at run-time positions the importer cannot determine; accy imports "
            "ranges computed from constants, get_dimension_size and JAX's dimension variables",
        )
    start, limit, strides = ranges
    shape = op.operands[0].type.shape
    whole = [
        (start[d], limit[d], strides[d]) == (0, DYNAMIC if size is None else size, 1)
        for d, size in enumerate(shape)
    ]
    for d, size in enumerate(shape):
        if size is None and not whole[d]:
            raise imp.error(
                op, f"slices dynamic dim {d} in part; accy slices a dynamic dim whole only"
            )
    if all(whole):
        return [operands[0]]
    if None in shape:
        raise imp.error(op, "slices a static dim of an operand with dynamic dims")
    if DYNAMIC in (*start, *limit, *strides):
        raise imp.error(op, "slices a static dim at the dynamic size")
    return [bb.slice(operands[0], start, limit, strides)]


def _get_dimension_size(imp, op, operands, bb, env):
    """A static size as a constant; a dynamic one as the sum of a dynamic-size vector of
    ones (accy has no op reading a size)."""
    size = op.operands[0].type.shape[op.attributes["dimension"]]
    scalar = TensorType(dtypes.ELEMENT_TYPES["i32"], [])
    if size is not None:
        return [bb.constant(scalar, size)]
    ones = bb.broadcast_in_dim(
        bb.constant(scalar, 1), TensorType(scalar.get_element_type(), [DYNAMIC_INDEX]), []
    )
    return [bb.reduce("add", ones, [0])]


def _iota(imp, op, operands, bb, env):
    return [bb.iota(imp.tensor_type(op, op.results[0].type), op.attributes["iota_dimension"])]


def _concatenate(imp, op, operands, bb, env):
    return [bb.concatenate(operands, op.attributes["dimension"])]


def _slice(imp, op, operands, bb, env):
    a = op.attributes
    shape = op.operands[0].type.shape
    whole = tuple(a["limit_indices"]) == shape and not any(a["start_indices"])
    if whole and all(stride == 1 for stride in a["strides"]):  # the operand itself
        return [operands[0]]
    return [bb.slice(operands[0], a["start_indices"], a["limit_indices"], a["strides"])]


def _reverse(imp, op, operands, bb, env):
    return [bb.reverse(operands[0], op.attributes["dimensions"])]


def _pad(imp, op, operands, bb, env):
    a = op.attributes
    paddings = (a["edge_padding_low"], a["edge_padding_high"], a["interior_padding"])
    if not any(any(p) for p in paddings):  # pads nothing: the operand itself
        return [operands[0]]
    return [
        bb.pad(
            operands[0],
            operands[1],
            a["edge_padding_low"],
            a["edge_padding_high"],
            a["interior_padding"],
        )
    ]


def _dynamic_slice(imp, op, operands, bb, env):
    return [bb.dynamic_slice(operands[0], operands[1:], op.attributes["slice_sizes"])]


def _dynamic_update_slice(imp, op, operands, bb, env):
    return [bb.dynamic_update_slice(operands[0], operands[1], operands[2:])]


def _gather(imp, op, operands, bb, env):
    numbers = op.attributes["dimension_numbers"]
    return [
        bb.gather(
            *operands,
            offset_dims=numbers["offset_dims"],
            collapsed_slice_dims=numbers["collapsed_slice_dims"],
            operand_batching_dims=numbers["operand_batching_dims"],
            start_indices_batching_dims=numbers["start_indices_batching_dims"],
            start_index_map=numbers["start_index_map"],
            index_vector_dim=numbers["index_vector_dim"],
            slice_sizes=op.attributes["slice_sizes"],
        )
    ]


def _gather_numbers(attr: Any) -> str | None:
    if isinstance(attr, dict) and "start_index_map" in attr:
        return None
    return f"has gather dimension numbers accy cannot read: {attr}"


def _sort(imp, op, operands, bb, env):
    body = op.regions[0][0] if op.regions and len(op.regions[0]) == 1 else None
    if body is None:
        raise imp.error(op, "has no single-block comparator")
    pairs = [v.type.element for v in op.operands for _ in range(2)]
    comparator = _scalar_body(imp, op, body, bb, env, pairs, 1, "comparator")

    def less(inner: BlockBuilder, *args: SSAValue) -> SSAValue:
        return comparator(inner, *args)[0]

    location = bb.location
    dim = op.attributes.get("dimension", -1)
    rank = len(op.operands[0].type.shape)
    results = bb.sort(
        operands,
        dim + rank if dim < 0 else dim,
        less,
        stable=bool(op.attributes.get("is_stable", False)),
    )
    bb.location = imp.enclosing = location
    return results


def _enum_name(attr: Any) -> str:
    """The value of an enum attribute the bindings describe as text
    (`#stablehlo<rng_algorithm THREE_FRY>` -> `THREE_FRY`)."""
    text = attr.text if isinstance(attr, UpstreamOpaque) else str(attr)
    return text.rstrip(">").split()[-1]


def _rng_algorithm(attr: Any) -> str | None:
    if _enum_name(attr) in ("DEFAULT", "THREE_FRY", "PHILOX"):
        return None
    return f"uses the generator {_enum_name(attr)}; accy has THREE_FRY, PHILOX and DEFAULT"


def _rng_distribution(attr: Any) -> str | None:
    if _enum_name(attr) in ("UNIFORM", "NORMAL"):
        return None
    return f"draws from {_enum_name(attr)}; accy draws UNIFORM and NORMAL"


def _state_words(imp, op, bb, state) -> list[SSAValue]:
    """A generator's state as ui64 values of one element each (a 32-bit state: pairs of
    words, low first, as `bitcast_convert` joins them)."""
    t = op.operands[0].type
    if t.shape is None or len(t.shape) != 1 or None in t.shape:
        raise imp.error(op, f"has the state type {t.text}; accy reads a static 1-D state")
    if t.element in ("ui64", "i64"):
        words = state if t.element == "ui64" else bb.bitcast_convert(state, "ui64")
        return [bb.slice(words, [i], [i + 1]) for i in range(t.shape[0])]
    if t.element in ("ui32", "i32") and t.shape[0] % 2 == 0:
        words = state if t.element == "ui32" else bb.bitcast_convert(state, "ui32")
        pair = random_bits.Words(bb, 1)
        return [
            pair.join(bb.slice(words, [i], [i + 1]), bb.slice(words, [i + 1], [i + 2]))
            for i in range(0, t.shape[0], 2)
        ]
    raise imp.error(
        op, f"has the state type {t.text}; accy reads 64-bit words or pairs of 32-bit ones"
    )


def _state_value(imp, op, bb, words: list[SSAValue]) -> SSAValue:
    """`words` (ui64, one element each) as a value of the state's type."""
    t = op.operands[0].type
    joined = bb.concatenate(words, 0)
    if t.element in ("ui64", "i64"):
        return joined if t.element == "ui64" else bb.bitcast_convert(joined, "i64")
    w = random_bits.Words(bb, len(words))
    low, high = w.halves(joined)
    column = _tensor_type("ui32", (len(words), 1))
    pairs = bb.concatenate([bb.reshape(v, column) for v in (low, high)], 1)  # low first
    flat = bb.reshape(pairs, _tensor_type("ui32", (2 * len(words),)))
    return flat if t.element == "ui32" else bb.bitcast_convert(flat, "i32")


_BIT_WIDTHS = {
    "ui64": 64,
    "i64": 64,
    "f64": 64,
    "ui32": 32,
    "i32": 32,
    "f32": 32,
    "ui16": 16,
    "i16": 16,
    "f16": 16,
    "bf16": 16,
    "ui8": 8,
    "i8": 8,
}


def _rng_bit_generator(imp, op, operands, bb, env):
    output = op.results[1].type
    result = imp.tensor_type(op, output)
    if not result.has_static_shape() or output.element not in _BIT_WIDTHS:
        raise imp.error(
            op, f"fills {output.text}; accy generates static tensors of 8 to 64-bit types"
        )
    width = _BIT_WIDTHS[output.element]
    shape = result.get_shape()
    words = _state_words(imp, op, bb, operands[0])
    algorithm = _enum_name(op.attributes["rng_algorithm"])
    generated = 64 if width == 64 else 32
    if algorithm == "PHILOX":  # [key, counter low(, counter high)]
        if len(words) not in (2, 3):
            raise imp.error(
                op, f"has a PHILOX state of {len(words)} 64-bit words; PHILOX takes 2 or 3"
            )
        high = words[2] if len(words) == 3 else words[0]  # as XLA computes a 2-word state
        bits, (low, high) = random_bits.philox_bits(
            bb, words[0], (words[1], high), shape, generated
        )
        state = [words[0], low, high][: len(words)]
    else:  # THREE_FRY, and DEFAULT as THREE_FRY: [key, counter]
        if len(words) != 2:
            raise imp.error(op, f"has a {algorithm} state of {len(words)} 64-bit words; it takes 2")
        bits, counter = random_bits.three_fry_bits(bb, words[0], words[1], shape, generated)
        state = [words[0], counter]
    if width < generated:  # 8 or 16 bits: the low bits of each 32-bit draw
        bits = bb.convert(bits, f"ui{width}")
    unsigned = f"ui{width}"
    if output.element != unsigned:
        bits = bb.bitcast_convert(bits, output.element)
    return [_state_value(imp, op, bb, state), bits]


def _rng(imp, op, operands, bb, env):
    result = imp.tensor_type(op, op.results[0].type)
    element = op.results[0].type.element
    if not result.has_static_shape():
        raise imp.error(op, "draws a dynamic shape; accy draws static shapes")
    count = math.prod(result.get_shape())
    normal = _enum_name(op.attributes["rng_distribution"]) == "NORMAL"
    imp.random_ops += 1
    one = random_bits.Words(bb, 1)
    key, counter = one.c(imp.random_ops, "ui64"), one.c(0, "ui64")
    w = random_bits.Words(bb, count)
    a, b = (w.broadcast(v) for v in operands[:2])
    if element in ("f32", "f64", "f16", "bf16"):
        width = 64 if element == "f64" else 32
        narrow = element in ("f16", "bf16")  # drawn in f32, rounded once
        low, high = (bb.convert(v, "f32") for v in (a, b)) if narrow else (a, b)
        draws = 2 * count if normal else count
        bits, _ = random_bits.three_fry_bits(bb, key, counter, [draws], width)
        u = random_bits.uniform_floats(bb, bits, width)
        if normal:
            z = random_bits.normal_floats(
                bb, bb.slice(u, [0], [count]), bb.slice(u, [count], [draws])
            )
            values = bb.add(low, bb.multiply(high, z))
        else:
            values = bb.add(low, bb.multiply(bb.subtract(high, low), u))
        if narrow:
            values = bb.convert(values, element)
        if not normal:  # rounding may reach b: [a, b) keeps a there
            values = bb.select(bb.compare("LT", values, b), values, a)
    elif element in _BIT_WIDTHS and not normal:
        bits, _ = random_bits.three_fry_bits(bb, key, counter, [count], 64)
        low, high = bb.convert(a, "i64"), bb.convert(b, "i64")
        span = bb.bitcast_convert(bb.subtract(high, low), "ui64")
        offset = bb.bitcast_convert(bb.remainder(bits, span), "i64")
        values = bb.convert(bb.add(low, offset), element)
    else:
        raise imp.error(
            op,
            f"draws {'NORMAL' if normal else 'UNIFORM'} {element}; accy draws floats, and integers uniformly",
        )
    return [bb.reshape(values, result)]


def _reduce_precision(imp, op, operands, bb, env):
    a = op.attributes
    return [expansions.reduce_precision(bb, operands[0], a["exponent_bits"], a["mantissa_bits"])]


def _chlo_expansion(name: str) -> ConvertFn:
    """A chlo op the importer expands into accy ops (`accy.expansions`)."""
    expand = expansions.UNARY.get(name) or expansions.BINARY[name]

    def convert(imp, op, operands, bb, env):
        if any(not v.type.has_static_shape() for v in operands):
            raise imp.error(op, "has dynamic dims; accy expands chlo ops on static shapes")
        return [expand(bb, *operands)]

    return convert


def _top_k(imp, op, operands, bb, env):
    """`chlo.top_k` (read in generic form, see `mlir_bridge.parse_stablehlo`) as XLA
    expands it: the operand and an iota of positions sorted together along the last dim,
    greatest first (floats in total order, ties by position), then the first k of each."""
    (x,) = operands
    k = int(op.attributes["k"])
    shape = list(x.type.get_shape())
    if not shape or not 0 <= k <= shape[-1]:
        raise imp.error(op, f"takes the top {k} of a {x.type}")
    last = len(shape) - 1
    indices = imp.tensor_type(op, op.results[1].type)
    iota = bb.iota(TensorType(indices.get_element_type(), shape), last)
    floats = ops.is_float(x.type.get_element_type())

    def greater(inner: BlockBuilder, a, b, i, j) -> SSAValue:
        return inner.compare("GT", a, b, total_order=floats)

    values, positions = bb.sort([x, iota], last, greater, stable=True)
    limit = [*shape[:-1], k]
    starts, strides = [0] * len(shape), [1] * len(shape)
    return [bb.slice(values, starts, limit, strides), bb.slice(positions, starts, limit, strides)]


def _scatter(imp, op, operands, bb, env):
    count = len(op.results)
    blocks = op.regions[0] if op.regions else []
    if len(blocks) != 1:
        raise imp.error(op, "has no single-block update computation")
    elements = [v.type.element for v in op.operands[:count]]
    combine = _scalar_body(imp, op, blocks[0], bb, env, elements * 2, count, "update computation")

    numbers = op.attributes["scatter_dimension_numbers"]
    location = bb.location
    results = bb.scatter(
        operands[:count],
        operands[count],
        operands[count + 1 :],
        combine,
        update_window_dims=numbers["update_window_dims"],
        inserted_window_dims=numbers["inserted_window_dims"],
        input_batching_dims=numbers["input_batching_dims"],
        scatter_indices_batching_dims=numbers["scatter_indices_batching_dims"],
        scatter_dims_to_operand_dims=numbers["scatter_dims_to_operand_dims"],
        index_vector_dim=numbers["index_vector_dim"],
        unique_indices=bool(op.attributes.get("unique_indices", False)),
    )
    bb.location = imp.enclosing = location
    return results


def _scatter_numbers(attr: Any) -> str | None:
    if isinstance(attr, dict) and "scatter_dims_to_operand_dims" in attr:
        return None
    return f"has scatter dimension numbers accy cannot read: {attr}"


def _branches(imp, op, bb, env) -> list[list[SSAValue]]:
    """The values each region of a `case` / `if` returns, every branch imported in line
    (StableHLO's ops are pure, so computing a branch that is not taken changes nothing)."""
    results = []
    location = bb.location
    for region in op.regions:
        if len(region) != 1:
            raise imp.error(op, "has a branch of several blocks; accy needs one")
        results.append(imp.block(region[0], dict(env), bb))
        bb.location = imp.enclosing = location
    return results


def _case(imp, op, operands, bb, env):
    """`case(index)`: every branch computed, each result selected by `index == i` (an
    index outside `[0, N)` takes the last branch, as StableHLO defines)."""
    (index,) = operands
    branches = _branches(imp, op, bb, env)
    results = list(branches[-1])
    scalar = index.type
    for i in range(len(branches) - 2, -1, -1):
        taken = bb.compare("EQ", index, bb.constant(scalar, i))
        results = [
            _select(imp, op, [taken, mine, other], bb, env)[0]
            for mine, other in zip(branches[i], results, strict=True)
        ]
    return results


def _if(imp, op, operands, bb, env):
    """`if(pred)`: both branches computed, each result selected by `pred`."""
    (pred,) = operands
    on_true, on_false = _branches(imp, op, bb, env)
    return [
        _select(imp, op, [pred, a, b], bb, env)[0] for a, b in zip(on_true, on_false, strict=True)
    ]


def _tuple(imp, op, operands, bb, env):
    return [tuple(operands)]


def _get_tuple_element(imp, op, operands, bb, env):
    (whole,) = operands
    index = op.attributes["index"]
    if not isinstance(whole, tuple) or not 0 <= index < len(whole):
        raise imp.error(op, f"takes element {index} of a {op.operands[0].type.text}")
    return [whole[index]]


def _map(imp, op, operands, bb, env):
    """A map over every dim: its scalar body's elementwise ops applied to the whole
    operands (each rank-0 value of the body stands for the result's shape)."""
    shape = op.results[0].type.shape
    if shape is None or None in shape:
        raise imp.error(op, "maps a tensor with dynamic dims; accy maps static shapes")
    if tuple(op.attributes.get("dimensions", ())) != tuple(range(len(shape))):
        raise imp.error(op, f"maps dims {list(op.attributes.get('dimensions', ()))}, not all")
    blocks = op.regions[0] if op.regions else []
    if len(blocks) != 1:
        raise imp.error(op, "has no single-block computation")
    body = blocks[0]
    for inner in body.ops:
        if inner.name != "stablehlo.return" and inner.name not in MAPPABLE:
            raise imp.error(
                op, f"maps a computation holding '{inner.name}'; accy maps elementwise ops"
            )
    scope: Env = ChainMap({a.id: v for a, v in zip(body.args, operands, strict=True)}, env)
    outer, imp.mapped = imp.mapped, tuple(shape)
    location = bb.location
    try:
        values = imp.block(body, scope, bb)
    finally:
        imp.mapped = outer
    bb.location = imp.enclosing = location
    return values


def _optimization_barrier(imp, op, operands, bb, env):
    """An optimization barrier: its operands (accy keeps every value it computes)."""
    return list(operands)


def _composite(imp, op, operands, bb, env):
    """A composite: its decomposition, inlined like a call."""
    return _call(imp, op, operands, bb, env, callee=op.attributes["decomposition"])


def _call(imp, op, operands, bb, env, callee: str | None = None):
    callee = callee if callee is not None else op.attributes["callee"]
    function = imp.functions.get(callee)
    if function is None:
        raise imp.error(op, f"calls @{callee}, which the module does not define")
    if callee in imp.inlining:
        raise imp.error(op, f"calls @{callee} recursively; accy inlines calls")
    if not function.regions or len(function.regions[0]) != 1:
        raise imp.error(op, f"calls @{callee}, which has no single-block body to inline")
    block = function.regions[0][0]
    inner: Env = {arg.id: value for arg, value in zip(block.args, operands, strict=True)}
    for arg, operand in zip(block.args, op.operands, strict=True):
        imp.shapes.bind(arg, operand)
    imp.inlining.append(callee)
    location = bb.location
    values = imp.block(block, inner, bb)
    bb.location = imp.enclosing = location
    imp.inlining.pop()
    return values


# ---------------------------------------------------------------------------------------
# stablehlo.while as a counted loop
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _CountedLoop:
    counter: int
    """Index of the counter among the carried values."""
    start: int
    trip_count: int
    increment: UpstreamOp
    """The body's `counter + 1`."""
    carry_counter: bool
    """The body reads the counter for something other than its increment."""


def _scalar_int(imp: _Importer, value: UpstreamValue) -> int | None:
    array = imp.constants.get(value.id)
    if array is None or array.shape != () or array.dtype.kind not in "iu":
        return None
    return int(array[()])


def _constant_in(block: UpstreamBlock, imp: _Importer, value: UpstreamValue) -> int | None:
    """An integer scalar constant: defined in `block` or earlier outside the loop."""
    for op in block.ops:
        if op.name in ("stablehlo.constant", "arith.constant") and op.results[0].id == value.id:
            array = op.attributes.get("value")
            if isinstance(array, np.ndarray) and array.shape == () and array.dtype.kind in "iu":
                return int(array[()])
            return None
    return _scalar_int(imp, value)


def _counted_loop(imp: _Importer, op: UpstreamOp) -> _CountedLoop:
    def fail(reason: str) -> AccyError:
        return imp.error(
            op,
            "is not a counted loop (an i32 counter from a constant, `compare LT, counter, N` "
            f"with a constant N, the body adding 1): {reason}",
        )

    if len(op.regions) != 2 or len(op.regions[0]) != 1 or len(op.regions[1]) != 1:
        raise fail("expected one cond block and one body block")
    cond, body = op.regions[0][0], op.regions[1][0]
    body_yield = body.ops[-1]
    compares = [o for o in cond.ops if o.name == "stablehlo.compare"]
    others = [
        o
        for o in cond.ops
        if o.name not in ("stablehlo.compare", "stablehlo.constant", "stablehlo.return")
    ]
    if others or len(compares) != 1:
        raise fail(
            f"the cond must be a single compare of constants (found {', '.join(o.name for o in cond.ops)})"
        )
    compare = compares[0]
    returned = cond.ops[-1]
    if [v.id for v in returned.operands] != [compare.results[0].id]:
        raise fail("the cond does not return its compare")
    if compare.attributes["comparison_direction"].value != "LT":
        raise fail(f"the cond compares {compare.attributes['comparison_direction'].value}, not LT")
    lhs, rhs = compare.operands
    cond_args = [a.id for a in cond.args]
    if lhs.id not in cond_args:
        raise fail("the compare's left operand is not a carried value")
    counter = cond_args.index(lhs.id)
    if lhs.type.shape != () or lhs.type.element not in ("i32", "i64"):
        raise fail(f"the counter has type {lhs.type.text}, not a scalar i32")
    if rhs.id in cond_args:  # a loop-invariant carried bound (older JAX fori_loop)
        j = cond_args.index(rhs.id)
        if body_yield.operands[j].id != body.args[j].id:
            raise fail("the bound changes inside the loop")
        limit = _scalar_int(imp, op.operands[j])
    else:
        limit = _constant_in(cond, imp, rhs)
    if limit is None:
        raise fail("the bound is not a constant")
    start = _scalar_int(imp, op.operands[counter])
    if start is None:
        raise fail("the counter does not start at a constant")
    next_id = body_yield.operands[counter].id
    increment = next((o for o in body.ops if o.results and o.results[0].id == next_id), None)
    counter_arg = body.args[counter].id
    if increment is None or increment.name != "stablehlo.add":
        raise fail("the body does not yield counter + 1")
    a, b = increment.operands
    step_value = b if a.id == counter_arg else a if b.id == counter_arg else None
    if step_value is None or _constant_in(body, imp, step_value) != 1:
        raise fail("the body does not yield counter + 1")
    readers = imp.uses[counter_arg] - 1  # besides the increment
    carry = readers > 0 or imp.uses[next_id] > 1
    return _CountedLoop(counter, start, max(limit - start, 0), increment, carry)


def _general_while(imp, op, operands, bb, env):
    """A loop whose trip count depends on data: `accy.while`, its cond and body imported
    as they are."""
    if len(op.regions) != 2 or any(len(r) != 1 for r in op.regions):
        raise imp.error(op, "has no single-block cond and body")
    blocks = [r[0] for r in op.regions]

    def region(block):
        def build(inner: BlockBuilder, *args: SSAValue):
            scope: Env = ChainMap({a.id: v for a, v in zip(block.args, args, strict=True)}, env)
            inner.location = bb.location
            return imp.block(block, scope, inner)

        return build

    location = bb.location
    cond, body = region(blocks[0]), region(blocks[1])
    results = bb.while_(operands, lambda inner, *args: cond(inner, *args)[0], body)
    bb.location = imp.enclosing = location
    return list(results)


def _while(imp, op, operands, bb, env):
    """A counted loop (`_counted_loop`) as `accy.iterate`, any other as `accy.while`."""
    try:
        loop = _counted_loop(imp, op)
    except AccyError:
        return _general_while(imp, op, operands, bb, env)
    body = op.regions[1][0]
    carried = [i for i in range(len(operands)) if loop.carry_counter or i != loop.counter]
    if not loop.carry_counter:
        imp.skipped.add(id(loop.increment))

    def build(inner: BlockBuilder, *args: SSAValue) -> list[SSAValue]:
        scope: Env = ChainMap({}, env)
        for i, arg in zip(carried, args):
            scope[body.args[i].id] = arg
        inner.location = bb.location
        return imp.block(body, scope, inner, keep=carried)

    results = bb.iterate(loop.trip_count, [operands[i] for i in carried], build)
    by_index = dict(zip(carried, results))
    values = []
    for i, result in enumerate(op.results):
        if i in by_index:
            values.append(by_index[i])
        elif imp.uses[result.id] > 0:
            values.append(bb.constant(operands[i].type, loop.start + loop.trip_count))
        else:
            values.append(operands[i])  # the final counter, unread: no constant needed
    return values


# ---------------------------------------------------------------------------------------
# The table
# ---------------------------------------------------------------------------------------

_ACCURACY = {"result_accuracy": _default_accuracy}

_CONVOLUTION_ATTRIBUTES = {
    "window_strides": None,
    "padding": None,
    "lhs_dilation": None,
    "rhs_dilation": None,
    "window_reversal": None,
    "feature_group_count": None,
    "batch_group_count": None,
    "dimension_numbers": _conv_numbers,
}

CONVERTERS: dict[str, Converter] = {
    "stablehlo.constant": Converter(_constant, {"value": None}),
    "arith.constant": Converter(_constant, {"value": None}),  # torch-mlir's scalars
    "stablehlo.add": Converter(_elementwise_or_on_i1("add", "or_"), {}),
    "stablehlo.multiply": Converter(_elementwise_or_on_i1("multiply", "and_"), {}),
    **{
        f"stablehlo.{name}": Converter(_elementwise(name), {})
        for name in ("subtract", "divide", "power")
    },
    "stablehlo.maximum": Converter(_elementwise_or_on_i1("maximum", "or_"), {}),
    "stablehlo.minimum": Converter(_elementwise_or_on_i1("minimum", "and_"), {}),
    **{
        f"stablehlo.{name}": Converter(_elementwise(name), dict(_ACCURACY))
        for name in (
            "negate",
            "abs",
            "exponential",
            "log",
            "tanh",
            "sqrt",
            "rsqrt",
            "logistic",
            "sine",
            "cosine",
            "tan",
            "cbrt",
            "log_plus_one",
            "exponential_minus_one",
        )
    },
    **{
        f"stablehlo.{name}": Converter(_elementwise(name), {})
        for name in (
            "floor",
            "ceil",
            "remainder",
            "shift_left",
            "shift_right_arithmetic",
            "shift_right_logical",
            "sign",
            "popcnt",
            "count_leading_zeros",
            "round_nearest_even",
            "round_nearest_afz",
            "is_finite",
            "atan2",
        )
    },
    "stablehlo.and": Converter(_elementwise("and_"), {}),
    "stablehlo.or": Converter(_elementwise("or_"), {}),
    "stablehlo.xor": Converter(_elementwise("xor"), {}),
    "stablehlo.not": Converter(_elementwise("not_"), {}),
    "stablehlo.compare": Converter(
        _compare, {"comparison_direction": _direction, "compare_type": _compare_type}
    ),
    "stablehlo.select": Converter(_select, {}),
    "stablehlo.convert": Converter(_convert, {}),
    "stablehlo.bitcast_convert": Converter(_bitcast_convert, {}),
    "stablehlo.rng_bit_generator": Converter(_rng_bit_generator, {"rng_algorithm": _rng_algorithm}),
    "stablehlo.rng": Converter(_rng, {"rng_distribution": _rng_distribution}),
    "stablehlo.reduce_precision": Converter(
        _reduce_precision, {"exponent_bits": None, "mantissa_bits": None}
    ),
    "stablehlo.broadcast_in_dim": Converter(_broadcast_in_dim, {"broadcast_dimensions": None}),
    "stablehlo.reshape": Converter(_reshape, {}),
    "stablehlo.transpose": Converter(_transpose, {"permutation": None}),
    "stablehlo.reverse": Converter(_reverse, {"dimensions": None}),
    "stablehlo.dynamic_slice": Converter(_dynamic_slice, {"slice_sizes": None}),
    "stablehlo.dynamic_update_slice": Converter(_dynamic_update_slice, {}),
    "stablehlo.gather": Converter(
        _gather,
        {"dimension_numbers": _gather_numbers, "slice_sizes": None},
        frozenset({"indices_are_sorted"}),
    ),
    "stablehlo.scatter": Converter(
        _scatter,
        {"scatter_dimension_numbers": _scatter_numbers, "unique_indices": None},
        frozenset({"indices_are_sorted"}),
    ),
    "stablehlo.pad": Converter(
        _pad, {"edge_padding_low": None, "edge_padding_high": None, "interior_padding": None}
    ),
    "stablehlo.reduce": Converter(_reduce, {"dimensions": None}),
    "stablehlo.clamp": Converter(_clamp, {}),
    "stablehlo.sort": Converter(_sort, {"dimension": None, "is_stable": None}),
    "chlo.top_k": Converter(_top_k, {"k": None}),
    **{f"chlo.{name}": Converter(_chlo_expansion(name), {}) for name in expansions.UNARY},
    **{f"chlo.{name}": Converter(_chlo_expansion(name), {}) for name in expansions.BINARY},
    "stablehlo.dot_general": Converter(
        _dot_general,
        {"dot_dimension_numbers": _dot_numbers},
        frozenset({"precision_config", "algorithm"}),
    ),
    "stablehlo.dot": Converter(_dot, {}, frozenset({"precision_config"})),
    "stablehlo.convolution": Converter(
        _convolution,
        _CONVOLUTION_ATTRIBUTES,
        frozenset({"precision_config"}),
    ),
    "stablehlo.dynamic_conv": Converter(
        _dynamic_conv,
        _CONVOLUTION_ATTRIBUTES,
        frozenset({"precision_config"}),
    ),
    "stablehlo.reduce_window": Converter(
        _reduce_window,
        {
            "window_dimensions": None,
            "window_strides": None,
            "base_dilations": None,
            "window_dilations": None,
            "padding": None,
        },
    ),
    "stablehlo.select_and_scatter": Converter(
        _select_and_scatter, {"window_dimensions": None, "window_strides": None, "padding": None}
    ),
    "stablehlo.iota": Converter(_iota, {"iota_dimension": None}),
    "stablehlo.dynamic_iota": Converter(_dynamic_iota, {"iota_dimension": None}),
    "stablehlo.dynamic_broadcast_in_dim": Converter(
        _dynamic_broadcast_in_dim,
        {"broadcast_dimensions": None},
        frozenset({"known_expanding_dimensions", "known_nonexpanding_dimensions"}),
    ),
    "stablehlo.dynamic_reshape": Converter(_dynamic_reshape, {}),
    "stablehlo.real_dynamic_slice": Converter(_real_dynamic_slice, {}),
    "stablehlo.get_dimension_size": Converter(_get_dimension_size, {"dimension": None}),
    "stablehlo.concatenate": Converter(_concatenate, {"dimension": None}),
    "stablehlo.slice": Converter(
        _slice, {"start_indices": None, "limit_indices": None, "strides": None}
    ),
    "func.call": Converter(_call, {"callee": None}),
    "stablehlo.composite": Converter(
        _composite,
        {"name": None, "decomposition": None},
        frozenset({"composite_attributes", "version"}),
    ),
    "stablehlo.optimization_barrier": Converter(_optimization_barrier, {}),
    "stablehlo.map": Converter(_map, {"dimensions": None}),
    "stablehlo.tuple": Converter(_tuple, {}, tuples=True),
    "stablehlo.get_tuple_element": Converter(_get_tuple_element, {"index": None}, tuples=True),
    "stablehlo.case": Converter(_case, {}),
    "stablehlo.if": Converter(_if, {}),
    "stablehlo.while": Converter(_while, {}),
}
"""Upstream op name -> its conversion. Every other op is reported as unsupported."""

MAPPABLE = frozenset(
    {
        name
        for name, converter in CONVERTERS.items()
        if converter.convert.__qualname__.startswith("_elementwise")
    }
    | {
        "stablehlo.constant",
        "stablehlo.compare",
        "stablehlo.select",
        "stablehlo.clamp",
        "stablehlo.convert",
        "stablehlo.bitcast_convert",
    }
)
"""The ops a `stablehlo.map` computation may hold (elementwise: applied to whole tensors)."""
