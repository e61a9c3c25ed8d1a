"""Reading accy programs: the context of dialects accy knows, parsing with locations, and
verification that reports the location of the first op that fails.

Ops parsed from text without an explicit `loc(...)` get a `FileLineColLoc` of where their
text starts, so every later diagnostic (verifier, planner) can point at the source.

On top of xDSL's parser: dense literals of numbers are read in bulk (`DenseLiteral`),
nesting deeper than `MAX_NESTING` is a located error rather than a RecursionError, and
shaped types spelled the same are built once. `benchmarks/parse_speed.py` measures it.
"""

from __future__ import annotations

import bisect
import re
import sys
import threading
from contextlib import contextmanager
from decimal import Decimal
from fractions import Fraction
from math import prod
from pathlib import Path

import numpy as np
from xdsl.context import Context
from xdsl.dialects import arith, builtin, func, gpu, llvm, math, memref, scf
from xdsl.dialects.builtin import (
    BFloat16Type,
    BytesAttr,
    DenseIntOrFPElementsAttr,
    FileLineColLoc,
    Float16Type,
    Float32Type,
    Float64Type,
    IndexType,
    IntAttr,
    IntegerType,
    ModuleOp,
    Signedness,
    StringAttr,
    UnknownLoc,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.parser import Parser
from xdsl.parser.generic_parser import ParserState
from xdsl.traits import IsolatedFromAbove
from xdsl.utils.exceptions import DiagnosticException, ParseError, VerifyException
from xdsl.utils.lexer import Input, Span
from xdsl.utils.mlir_lexer import MLIRLexer, MLIRToken, MLIRTokenKind

from accy.diagnostics import AccyParseError, AccyVerifyError, decode_source
from accy.dialects.accy import Accy, verify_parameter_attributes

UPSTREAM_DIALECTS = (
    builtin.Builtin,
    func.Func,
    arith.Arith,
    math.Math,
    memref.MemRef,
    scf.Scf,
    gpu.GPU,
    llvm.LLVM,
)
"""The upstream dialects accy programs and their lowerings use."""


def make_context() -> Context:
    """A context with the accy dialect and the upstream dialects of its lowerings."""
    ctx = Context()
    for dialect in (*UPSTREAM_DIALECTS, Accy):
        ctx.load_dialect(dialect)
    return ctx


MAX_SPLAT_ELEMENTS = 1 << 28
"""The largest splat constant (`dense<1.0> : tensor<...>`) accy reads: xDSL stores every
element, so a few characters of text could otherwise ask for any amount of memory."""

MAX_NESTING = 128
"""The deepest bracket nesting (`(`, `[`, `{`, `<` together: regions, types, attributes,
dense literals) accy reads. xDSL's parser, verifier and printer recurse once or more per
level, so text nested thousands deep ran out of Python stack (a RecursionError traceback)
in one of them; deeper text is a located error instead. `parse` lends the parser enough
stack for this depth; verifying and printing at it fit Python's default limit."""

_FRAMES_PER_LEVEL = 16
"""Python frames xDSL's parser may use per nesting level (11 measured, for attribute
dictionaries), for the recursion limit `parse` sets while it parses."""

_SPLAT = re.compile(
    r'dense<\s*(?:[^\[\]<>"]{1,64}|"0x[0-9A-Fa-f]{1,32}")\s*>\s*:\s*tensor<((?:\d+x)+)'
)

_SHAPED_TYPES = frozenset(("tensor", "memref", "vector"))
_SIMPLE_SHAPED_TYPE = re.compile(
    r"(?:tensor|memref|vector)<(?:[0-9]+x|\?x)*(?:[su]?i[0-9]+|f16|bf16|f32|f64|index)>",
    re.ASCII,
)
"""A shaped type with a static or dynamic shape, a scalar element type and nothing else
(no layout, encoding or memory space): the spelling fixes the type."""

_OPENERS = frozenset(
    (MLIRTokenKind.L_PAREN, MLIRTokenKind.L_SQUARE, MLIRTokenKind.L_BRACE, MLIRTokenKind.LESS)
)
_BRACKETS = _OPENERS | frozenset(
    (MLIRTokenKind.R_PAREN, MLIRTokenKind.R_SQUARE, MLIRTokenKind.R_BRACE, MLIRTokenKind.GREATER)
)


def nesting_error(location: FileLineColLoc) -> AccyParseError:
    return AccyParseError(
        f"nesting deeper than {MAX_NESTING} levels of brackets; accy reads up to "
        f"{MAX_NESTING} levels of nested regions, types, attributes and literals",
        location,
    )


class LinearLexer(MLIRLexer):
    """xDSL's lexer with a string-literal pattern that runs in linear time and space, and
    a limit on bracket nesting (`MAX_NESTING`).

    The pinned string pattern, `"(?:[^"...]+|\\...)*"`, nests quantifiers and backtracks
    exponentially over an unclosed string (30 characters took over a minute); a pattern
    with one character per repetition is linear but keeps a backtracking frame per
    character (a `dense<"0x...">` of 8 MB took 8 s and 1 GB). Possessive quantifiers match
    the same strings with neither.

    The depth is the number of brackets open before a token, except that the `{` of a
    region list in the generic form, `({`, adds no level to its `(`: a region is one level
    in either form, so what accy prints in either form reads back. The parser sometimes
    re-lexes from an earlier position (`_resume_from`), so each change of depth is logged
    with its position and undone when lexing goes back past it."""

    _unescaped_characters_regex = re.compile(r'"(?:[^"\\\n\v\f]++|\\(?:["nt\\]|[0-9A-Fa-f]{2}))*+"')

    def __init__(self, input: Input, locate=None):
        super().__init__(input)
        self.depth = 0
        """The nesting depth before the current position."""
        self._open: list[tuple[int, bool]] = []
        """(position, counts as a level) of each bracket open before the current position."""
        self._depth_log: list[tuple[int, tuple[int, bool] | None]] = []
        """(position, None) for a bracket opened there, (position, its opener) for one
        closed there."""
        self._paren_end = -1  # where the last token ended if it was a `(`
        self._locate = locate

    def lex(self) -> MLIRToken:
        token = super().lex()
        kind = token.kind
        if kind in _BRACKETS:
            start = token.span.start
            log, open_ = self._depth_log, self._open
            while log and log[-1][0] >= start:  # lexing again from an earlier position
                _, opener = log.pop()
                if opener is None:
                    self.depth -= open_.pop()[1]
                else:
                    open_.append(opener)
                    self.depth += opener[1]
            if kind in _OPENERS:
                level = not (
                    kind is MLIRTokenKind.L_BRACE
                    and self._paren_end >= 0
                    and not self.input.content[self._paren_end : start].strip()
                )
                if level and self.depth >= MAX_NESTING:
                    raise nesting_error(self.location(start))
                open_.append((start, level))
                self.depth += level
                log.append((start, None))
            elif open_:
                opener = open_.pop()
                self.depth -= opener[1]
                log.append((start, opener))
        self._paren_end = token.span.end if kind is MLIRTokenKind.L_PAREN else -1
        return token

    def location(self, position: int) -> FileLineColLoc:
        if self._locate is not None:
            return self._locate(position)
        where = Span(position, position + 1, self.input).get_location()
        return FileLineColLoc(
            StringAttr(where.file or "<input>"), IntAttr(where.line), IntAttr(where.col)
        )


class LocatingParser(Parser):
    """An xDSL parser that gives each op without `loc(...)` the file position of its text,
    reads with `LinearLexer`, reports attribute values out of range as parse errors and
    reads dense literals of integers and floats itself (`parse_dense_int_or_fp_elements_attr`).
    Constructing it lexes the first token (a `ParseError` for a bad one)."""

    def __init__(self, ctx: Context, text: str, filename: str, line_offset: int = 0):
        super().__init__(ctx, "", filename)
        self._text = text
        self._filename = StringAttr(filename)
        self._line_offset = line_offset
        self._line_starts: list[int] | None = None
        self._int_attrs: dict[int, IntAttr] = {}
        self._types: dict[str, Attribute] = {}
        self._parser_state = ParserState(LinearLexer(Input(text, filename), self.location_of))

    def location_of(self, position: int) -> FileLineColLoc:
        if self._line_starts is None:
            self._line_starts = _line_starts(self._text)
        line = bisect.bisect_right(self._line_starts, position)
        column = position - self._line_starts[line - 1] + 1
        return FileLineColLoc(
            self._filename, self._int_attr(line + self._line_offset), self._int_attr(column)
        )

    def _int_attr(self, value: int) -> IntAttr:
        # Attributes are immutable: one IntAttr per number serves every location.
        attr = self._int_attrs.get(value)
        if attr is None:
            attr = self._int_attrs[value] = IntAttr(value)
        return attr

    def parse_operation(self) -> Operation:
        start = self.pos
        try:
            op = super().parse_operation()
        except VerifyException as error:
            # An op whose types break its constraints fails while it is being built.
            name = self._op_name_at(start)
            raise AccyVerifyError(verify_message(error, name), self.location_of(start)) from None
        if isinstance(op.location, UnknownLoc):
            op.location = self.location_of(start)
        return op

    def parse_optional_attribute(self) -> Attribute | None:
        # xDSL builds attributes as it reads them; a value out of its type's range (an i1
        # of 2, an i64 beyond 2**63) raises ValueError or OverflowError there.
        start = self.pos
        if (splat := _SPLAT.match(self.lexer.input.content, start)) is not None:
            count = prod(int(d) for d in splat.group(1).split("x")[:-1])
            if count > MAX_SPLAT_ELEMENTS:
                raise AccyParseError(
                    f"a splat constant of {count} elements; accy holds constants in memory, "
                    f"up to {MAX_SPLAT_ELEMENTS} elements (2**28)",
                    self.location_of(start),
                )
        try:
            return super().parse_optional_attribute()
        except (ValueError, OverflowError) as error:
            raise AccyParseError(f"invalid attribute: {error}", self.location_of(start)) from None

    def parse_optional_type(self) -> Attribute | None:
        # Programs repeat a few shaped types (`tensor<4xf32>`) on every op, and building
        # one is a third of xDSL's time per op: each spelling is built once per parse.
        token = self._current_token
        if token.kind is MLIRTokenKind.BARE_IDENT and token.text in _SHAPED_TYPES:
            start = token.span.start
            text = self.lexer.input.content
            spelled = _SIMPLE_SHAPED_TYPE.match(text, start)
            if spelled is not None:
                cached = self._types.get(spelled.group())
                if cached is not None:
                    if self.lexer.depth >= MAX_NESTING:  # its `<` is not lexed
                        raise nesting_error(self.location_of(text.index("<", start)))
                    self._resume_from(spelled.end())
                    return cached
                parsed = super().parse_optional_type()
                if parsed is not None and self.pos == spelled.end():
                    self._types[spelled.group()] = parsed
                return parsed
        return super().parse_optional_type()

    def parse_dense_int_or_fp_elements_attr(self, type):
        """`dense<...>` from its `<` on. A literal of numbers (or booleans for i1) of an
        integer, index, f16, bf16, f32 or f64 element type is read by `DenseLiteral`, in
        time and memory linear in its text; others (hex strings, complex numbers, other
        element types, syntax it does not take) by xDSL."""
        start = self._current_token.span.start
        if (literal := DenseLiteral.match(self, type)) is not None:
            return literal
        self._resume_from(start)
        try:
            return super().parse_dense_int_or_fp_elements_attr(type)
        except NotImplementedError:  # xDSL packs no values of some types (f80, f128)
            raise AccyParseError(
                "dense literals of this element type are not supported", self.location_of(start)
            ) from None

    def _op_name_at(self, position: int) -> str:
        """The op name in the text of the op that starts at `position`."""
        text = self.lexer.input.content[position : position + 400]
        head = text.split("=", 1)[1] if text.lstrip().startswith("%") else text
        return head.split()[0].strip('"') if head.split() else "<op>"


def _line_starts(text: str) -> list[int]:
    """The position of each line's first character."""
    starts = [0]
    find = text.find
    index = find("\n")
    while index >= 0:
        starts.append(index + 1)
        index = find("\n", index + 1)
    return starts


# Dense literals ----------------------------------------------------------------------------
#
# xDSL reads `dense<[...]>` token by token, making Python objects per element (30 µs and
# about 500 bytes each: a 12.7 MB constant of 10**6 floats took 30 s and 600 MB). `DenseLiteral` checks the
# whole literal with one regular expression, its bracket structure with string
# operations, and converts the numbers with numpy, so the cost per element is a few
# machine operations; only errors, and floats that fall exactly between two values of
# their type, go back to the text of single elements.

_NUMBER = r"\d++(?:\.\d*+(?:[eE][-+]?\d++)?+)?+"
"""MLIR's decimal literal: `1`, `1.`, `1.5`, `1.5e-3` (not `1e5`, `.5`, `+1` or `0x1F`)."""
_ELEMENT = r"(?:-\s*+" + _NUMBER + r"|" + _NUMBER + r"|true|false)"
_DENSE_START = re.compile(r"\s*+[\[\-0-9tf]", re.ASCII)
_DENSE_BODY = re.compile(
    # Brackets and commas, and elements that are followed by `,` or `]` (or end a splat);
    # no element right after a `]`. The structure (which brackets, where) is checked apart.
    r"(?:\s*+(?:[\[,]|\](?!\s*+[-0-9tf])|" + _ELEMENT + r"(?=\s*+(?:[\],]|\Z))))*+\s*+",
    re.ASCII,
)
_TOKEN = re.compile(r"\s*+(?:([\[\],])|(" + _ELEMENT + r"))", re.ASCII)
_LONG_INTEGER = re.compile(r"\d{19}", re.ASCII)
"""An integer literal that int64 may not hold (up to 18 digits it does)."""
_WHITESPACE = " \t\n\r\f\v"
_SEPARATORS_ONLY = str.maketrans("", "", "0123456789.eE+-truefals" + _WHITESPACE)
_NUMBERS_ONLY = str.maketrans("", "", "[]" + _WHITESPACE)

_BINARY16_32 = {
    # element type: (bits of +infinity, bits → float64, float64 → nearby bits)
    Float16Type: (
        0x7C00,
        lambda bits: bits.astype(np.uint16).view(np.float16).astype(np.float64),
        lambda a: a.astype(np.float16).view(np.uint16).astype(np.int64),
    ),
    BFloat16Type: (
        0x7F80,
        lambda bits: (bits.astype(np.uint32) << 16).view(np.float32).astype(np.float64),
        lambda a: (a.astype(np.float32).view(np.uint32).astype(np.int64) + 0x8000) >> 16,
    ),
    Float32Type: (
        0x7F800000,
        lambda bits: bits.astype(np.uint32).view(np.float32).astype(np.float64),
        lambda a: a.astype(np.float32).view(np.uint32).astype(np.int64),
    ),
}


def _skeleton_length(shape: tuple[int, ...]) -> int:
    """The length of `_skeleton(shape)`, without building it."""
    length = 0
    for size in reversed(shape):
        length = 2 + max(size - 1, 0) + size * length
    return length


def _skeleton(shape: tuple[int, ...]) -> str:
    """The brackets and commas of a literal of `shape`: `[[,,],[,,]]` for (2, 3)."""
    text = ""
    for size in reversed(shape):
        text = "[" + ",".join([text] * size) + "]"
    return text


class DenseLiteral:
    """A `dense<...>` literal of numbers (booleans for i1) read in bulk.

    The values are those xDSL's element-by-element reading gives, as bytes: integers
    normalized as `IntegerType.get_normalized_value` does, floats rounded to nearest-even
    from the decimal text. xDSL rounds a float through float64 first, which rounds wrong
    when the float64 value lands exactly halfway between two values of a narrower type;
    those elements are rounded from their exact decimal value here. Integers out of their
    type's range and floats beyond the type's largest finite value are located errors (at
    the element); so are literals whose brackets do not match the type's shape."""

    def __init__(self, parser: LocatingParser, start: int, end: int, depth: int):
        self.parser = parser
        self.text = parser.lexer.input.content
        self.start, self.end = start, end
        self.depth = depth  # open brackets around the literal

    @staticmethod
    def match(parser: LocatingParser, type) -> DenseIntOrFPElementsAttr | None:
        """The attribute of the literal at the parser's `<`, its `>` and (when `type` is
        None) its `: type` consumed; None (nothing consumed that matters: the caller
        resumes at the `<`) when it is not one `DenseLiteral` reads."""
        token = parser._current_token
        if token.kind is not MLIRTokenKind.LESS:
            return None
        text = parser.lexer.input.content
        start = token.span.end
        end = text.find(">", start)
        if end < 0 or _DENSE_START.match(text, start) is None:
            return None
        if _DENSE_BODY.fullmatch(text, start, end) is None:
            return None  # xDSL reads it, or reports where it goes wrong
        literal = DenseLiteral(parser, start, end, parser.lexer.depth)
        parser._resume_from(end)
        parser.parse_punctuation(">", " in dense attribute")
        if type is None:
            parser.parse_punctuation(":", " in dense attribute")
            type = parser._parse_dense_literal_type()
        return literal.attribute(type)

    def attribute(self, type) -> DenseIntOrFPElementsAttr | None:
        element = type.get_element_type()
        integer = isinstance(element, IntegerType | IndexType)
        if isinstance(element, IntegerType) and not 0 < element.width.data <= 64:
            return None
        if not integer and not isinstance(element, tuple(_BINARY16_32) + (Float64Type,)):
            return None
        text, start, end = self.text, self.start, self.end
        booleans = text.find("t", start, end) >= 0 or text.find("f", start, end) >= 0
        if booleans and not (isinstance(element, IntegerType) and element.width.data == 1):
            return None  # xDSL decides (it takes booleans as floats, not as i32)
        shape = tuple(type.get_shape())
        count = prod(shape)
        separators = text[start:end].translate(_SEPARATORS_ONLY)
        if separators and (
            self.depth + len(shape) > MAX_NESTING
            or len(separators) != _skeleton_length(shape)
            or separators != _skeleton(shape)
        ):
            self.raise_structure_error(shape)
        numbers = text[start:end].translate(_NUMBERS_ONLY)
        if booleans:
            numbers = numbers.replace("true", "1").replace("false", "0")
        expected = count if separators else 1
        if expected == 0:  # `[]`, `[[], []]`: the structure matched, there are no numbers
            if numbers.strip(","):
                self.raise_structure_error(shape)
            return DenseIntOrFPElementsAttr(type, BytesAttr(b""))
        if integer:
            data = self.integers(numbers, element, expected, shape)
        else:
            data = self.floats(numbers, element, expected, shape)
        if not separators:  # a splat
            data *= count
        return DenseIntOrFPElementsAttr(type, BytesAttr(data))

    # Integers ------------------------------------------------------------------------------

    def integers(self, numbers: str, element, expected: int, shape) -> bytes:
        text, start, end = self.text, self.start, self.end
        if (dot := text.find(".", start, end)) >= 0:
            self.raise_at_element_around(dot, "Expected integer value")
        unsigned = isinstance(element, IntegerType) and (
            element.signedness.data == Signedness.UNSIGNED
        )
        if isinstance(element, IndexType):
            width, (low, high) = 64, (-(1 << 63), 1 << 63)
        else:
            width, (low, high) = element.width.data, element.value_range()
        size = (1, 2, 4, 4, 8, 8, 8, 8)[(width + 7) // 8 - 1]  # xDSL's struct formats
        container = np.dtype(("<u" if unsigned else "<i") + str(size))
        normalize = isinstance(element, IntegerType) and not unsigned and width < 64
        if _LONG_INTEGER.search(text, start, end) is None:
            values = self.convert(numbers, np.int64, expected, shape)
            if unsigned and (negative := values < 0).any():
                self.raise_at_element(
                    int(np.argmax(negative)), "Expected non-negative integer values"
                )
            outside = None
            if low > -(1 << 63):
                outside = values < low
            if high <= 1 << 63:
                outside = values >= high if outside is None else outside | (values >= high)
            if outside is not None and outside.any():
                self.raise_out_of_range(int(np.argmax(outside)), element, low, high)
            if normalize:
                values = np.where(values >= 1 << (width - 1), values - (1 << width), values)
            return values.astype(container).tobytes()
        # Some literal has 19 digits or more: exact Python integers.
        try:
            ints = [int(number) for number in numbers.split(",")]
        except ValueError:
            self.raise_structure_error(shape)
        if len(ints) != expected:
            self.raise_structure_error(shape)
        for index, value in enumerate(ints):
            if unsigned and value < 0:
                self.raise_at_element(index, "Expected non-negative integer values")
            if not low <= value < high:
                self.raise_out_of_range(index, element, low, high)
        if isinstance(element, IntegerType) and not unsigned:
            half, full = 1 << (width - 1), 1 << width
            ints = [value - full if value >= half else value for value in ints]
        return np.array(ints, dtype=container).tobytes()

    def raise_out_of_range(self, index: int, element, low: int, high: int):
        position, token = self.element(index)
        value = int("".join(token.split()))
        raise AccyParseError(
            f"invalid attribute: Integer value {value} is out of range for type {element} "
            f"which supports values in the range [{low}, {high})",
            self.parser.location_of(position),
        )

    # Floats --------------------------------------------------------------------------------

    def floats(self, numbers: str, element, expected: int, shape) -> bytes:
        values = self.convert(numbers, np.float64, expected, shape)
        if isinstance(element, Float64Type):
            # strtod rounds correctly to float64; beyond its range it gives infinity.
            if np.isinf(values).any():
                self.raise_too_large(int(np.argmax(np.isinf(values))), element, sys.float_info.max)
            return values.astype("<f8").tobytes()
        infinity, decode, approximate = _BINARY16_32[type(element)]
        top = infinity - 1  # the largest finite value's bits
        largest = float(decode(np.array([top]))[0])
        below = float(decode(np.array([top - 1]))[0])
        halfway_to_infinity = largest + (largest - below) / 2  # exact in float64
        magnitude = np.abs(values)
        with np.errstate(over="ignore"):
            bits = np.minimum(approximate(magnitude), top)
        # `bits` is within one step of the float64 value's nearest: compare with the
        # halfway points to the neighbours (exact in float64) and step where needed.
        lower, upper = np.maximum(bits - 1, 0), np.minimum(bits + 1, top)
        value = decode(bits)
        half_down = (decode(lower) + value) * 0.5
        half_up = (value + decode(upper)) * 0.5
        has_lower, has_upper = lower != bits, upper != bits
        bits = bits - ((magnitude < half_down) & has_lower) + ((magnitude > half_up) & has_upper)
        # Float64 values exactly halfway (or at the overflow threshold) are decided by the
        # exact decimal text of their element.
        ties = ((magnitude == half_down) & has_lower) | ((magnitude == half_up) & has_upper)
        overflow = magnitude >= halfway_to_infinity
        doubtful = np.flatnonzero(ties | overflow)
        if len(doubtful):
            exact = dict(zip(doubtful.tolist(), self.exact_magnitudes(doubtful.tolist())))
            for index, decimal in exact.items():
                if overflow[index]:
                    if magnitude[index] > halfway_to_infinity or decimal >= Fraction(
                        halfway_to_infinity
                    ):
                        self.raise_too_large(index, element, largest)
                    bits[index] = top
                    continue
                here = int(bits[index])
                below_here = magnitude[index] == half_down[index]
                low, high = (here - 1, here) if below_here else (here, here + 1)
                middle = Fraction(float(magnitude[index]))
                if decimal != middle:
                    bits[index] = high if decimal > middle else low
                else:
                    bits[index] = low if low % 2 == 0 else high
        width = 16 if infinity < 1 << 16 else 32
        sign = np.signbit(values).astype(np.int64) << (width - 1)
        return (bits | sign).astype(f"<u{width // 8}").tobytes()

    def exact_magnitudes(self, indices: list[int]) -> list[Fraction]:
        """The exact absolute values of the decimal text of the elements at `indices`."""
        wanted = set(indices)
        found: dict[int, Fraction] = {}
        for index, (_, token) in self.elements(wanted):
            found[index] = Fraction(Decimal("".join(token.split()).lstrip("-")))
        return [found[index] for index in indices]

    def raise_too_large(self, index: int, element, largest: float):
        position, token = self.element(index)
        raise AccyParseError(
            f"invalid attribute: Float value {' '.join(token.split())} is out of range for "
            f"type {element} (its largest finite value is {largest!r})",
            self.parser.location_of(position),
        )

    # Shared ----------------------------------------------------------------------------

    def convert(self, numbers: str, dtype, expected: int, shape):
        try:
            values = np.fromstring(numbers, dtype=dtype, sep=",")
        except ValueError:  # an empty element: `[1,,2]`
            self.raise_structure_error(shape)
        if len(values) != expected:
            self.raise_structure_error(shape)
        return values

    def elements(self, wanted: set[int] | None = None):
        """(index, (position, text)) of each element, or of those in `wanted`."""
        index = 0
        for match in _TOKEN.finditer(self.text, self.start, self.end):
            if match.group(2) is not None:
                if wanted is None or index in wanted:
                    yield index, (match.start(2), match.group(2))
                    if wanted is not None and len(wanted) == 1:
                        return
                index += 1

    def element(self, index: int) -> tuple[int, str]:
        for _, found in self.elements({index}):
            return found
        raise AssertionError(f"no element #{index}")

    def raise_at_element(self, index: int, message: str):
        raise AccyParseError(message, self.parser.location_of(self.element(index)[0]))

    def raise_at_element_around(self, position: int, message: str):
        """Raise `message` at the element whose text holds `position`."""
        for _, (start, token) in self.elements():
            if start <= position < start + len(token):
                raise AccyParseError(message, self.parser.location_of(start))
        raise AccyParseError(message, self.parser.location_of(position))

    def raise_structure_error(self, shape: tuple[int, ...]):
        """Raise the first structural mistake of the literal, as xDSL words them where it
        has a message: a missing element or separator, elements of different shapes,
        nesting deeper than `MAX_NESTING`, or a shape other than the type's. Walks the
        tokens with a stack: any depth costs no Python recursion."""
        location = self.parser.location_of
        lists: list[list] = []  # per open `[`: [elements, element shape or None]
        literal_shape = None
        want_element, just_opened = True, False
        for match in _TOKEN.finditer(self.text, self.start, self.end):
            separator = match.group(1)
            where = match.start(1) if separator else match.start(2)
            if separator == "[" or separator is None:
                if not want_element:
                    raise AccyParseError(
                        "expected ',' or ']' in the dense literal", location(where)
                    )
                if separator == "[":
                    if self.depth + len(lists) >= MAX_NESTING:
                        raise nesting_error(location(where))
                    lists.append([0, None])
                    just_opened = True
                    continue
                element_shape: tuple[int, ...] = ()
            elif separator == ",":
                if want_element or not lists:
                    raise AccyParseError(
                        "Expected either a float, integer, or complex literal", location(where)
                    )
                want_element, just_opened = True, False
                continue
            else:  # "]"
                if not lists:
                    raise AccyParseError("unexpected ']' in the dense literal", location(where))
                if want_element and not just_opened:
                    raise AccyParseError(
                        "Expected either a float, integer, or complex literal", location(where)
                    )
                size, inner = lists.pop()
                element_shape = (size, *(inner or ()))
            want_element, just_opened = False, False
            if not lists:
                literal_shape = element_shape
                continue
            if lists[-1][1] is None:
                lists[-1][1] = element_shape
            elif lists[-1][1] != element_shape:
                raise AccyParseError(
                    "Tensor literal has inconsistent ranks between elements", location(where)
                )
            lists[-1][0] += 1
        if lists:
            raise AccyParseError("expected ']' in the dense literal", location(self.end))
        if literal_shape is not None and literal_shape and literal_shape != shape:
            raise AccyParseError(
                f"Shape mismatch in dense literal. Expected {list(shape)} shape from the "
                f"type, but got {list(literal_shape)} shape.",
                location(_DENSE_START.match(self.text, self.start).end() - 1),
            )
        raise AccyParseError("invalid dense literal", location(self.start))


def parse_error(error: ParseError, line_offset: int = 0) -> AccyParseError:
    """An xDSL parse error as a located accy error."""
    location = error.span.get_location()
    # The pinned xDSL leaves one message's placeholder unfilled.
    message = error.msg.replace("{first_char}", repr(error.span.text[:1]))
    return AccyParseError(
        message,
        FileLineColLoc(
            StringAttr(location.file or "<input>"),
            IntAttr(location.line + line_offset),
            IntAttr(location.col),
        ),
    )


def parse(
    source: str | Path,
    *,
    filename: str | None = None,
    ctx: Context | None = None,
    line_offset: int = 0,
) -> ModuleOp:
    """Parse and verify an accy program from text or from a path to a `.mlir` file.

    Raises `AccyParseError` or `AccyVerifyError` carrying the location of the problem.
    """
    if isinstance(source, Path) or (
        "\n" not in source and source.endswith(".mlir") and Path(source).is_file()
    ):
        path = Path(source)
        filename = filename or str(path)
        text = decode_source(path.read_bytes(), filename)
    else:
        text = str(source)
    parser = None
    try:
        with _stack_for_nesting():
            parser = LocatingParser(ctx or make_context(), text, filename or "<input>", line_offset)
            module = parser.parse_module()
    except ParseError as error:
        raise parse_error(error, line_offset) from None
    except RecursionError:
        # Not expected below MAX_NESTING; a diagnostic rather than a traceback if it is.
        where = parser.location_of(parser.pos) if parser is not None else None
        raise AccyParseError("the input is nested too deeply to parse", where) from None
    verify(module)
    return module


_stack_lock = threading.Lock()
_stack_users = 0
_stack_limit_before = 0


@contextmanager
def _stack_for_nesting():
    """Python's recursion limit raised, while any thread parses, by what `MAX_NESTING`
    levels of xDSL's recursive descent take (the default limit of 1000 frames holds about
    90), and put back when the last parse ends."""
    global _stack_users, _stack_limit_before
    with _stack_lock:
        if _stack_users == 0:
            _stack_limit_before = sys.getrecursionlimit()
            sys.setrecursionlimit(_stack_limit_before + MAX_NESTING * _FRAMES_PER_LEVEL)
        _stack_users += 1
    try:
        yield
    finally:
        with _stack_lock:
            _stack_users -= 1
            if _stack_users == 0:
                sys.setrecursionlimit(_stack_limit_before)


def verify_message(error: Exception, op_name: str) -> str:
    """An xDSL verifier message in MLIR's one-line form: `'accy.add' op MESSAGE`."""
    message = str(error.args[0]) if error.args else str(error)
    message = message.removeprefix("Operation does not verify: ").strip()
    message = " ".join(line.strip() for line in message.splitlines() if line.strip())
    message = message.removeprefix(f"Operation {op_name} ")
    prefix = f"'{op_name}' "
    if message.startswith(prefix + "op "):
        return message
    return f"'{op_name}' op {message.removeprefix(prefix)}"


def verify(module: Operation) -> None:
    """Verify every op, innermost first, raising `AccyVerifyError` at the first failure;
    then that every operand is defined before its use (`verify_dominance`)."""
    for op in module.walk(reverse=False, region_first=True):
        try:
            op.verify(verify_nested_ops=False)
            if isinstance(op, func.FuncOp):
                verify_parameter_attributes(op)
        except (VerifyException, DiagnosticException) as error:
            raise AccyVerifyError(verify_message(error, op.name), op.location) from None
    verify_dominance(module)


def verify_dominance(root: Operation) -> None:
    """Raise `AccyVerifyError` at the first op (in text order) that reads a value not
    defined before it in its block, in an earlier block of its region (text order stands
    in for dominance: lowered functions branch only forward) or in a block around it
    (xDSL's parser accepts such forward uses, and its verifier does not check them).
    Regions of an op isolated from above (`func.func`) see nothing from outside.

    One depth-first walk with one set of the values in scope: a block's values are added
    as it is walked and removed when it ends, so the work is linear in the ops and
    operands however many regions there are (copying the scope into every region was
    quadratic: a block of n ops with regions copied n sets of up to n values). Iterative:
    nesting depth costs no Python stack."""
    visible: set[SSAValue] = set()
    # One frame per op whose regions are being walked: [op, its blocks, the scope to
    # restore after an op isolated from above, the block being walked, its ops, the
    # values it added].
    frames: list[list] = [[root, _blocks_of(root), None, None, None, None]]
    while frames:
        frame = frames[-1]
        if frame[3] is None:  # start the op's next block
            block = next(frame[1], None)
            if block is None:
                frames.pop()
                if frame[2] is not None:
                    visible = frame[2]
                if frames:  # the op's results are in scope after it in its block
                    frames[-1][5].extend(frame[0].results)
                    visible.update(frame[0].results)
                continue
            frame[3], frame[4] = block, iter(block.ops)
            frame[5] = [*(frame[5] or ()), *block.args]
            visible.update(block.args)
        op = next(frame[4], None)
        if op is None:  # the block ended
            if frame[3].next_block is None:  # and its region: its values go out of scope
                visible.difference_update(frame[5])
                frame[5] = None
            frame[3] = frame[4] = None
            continue
        for index, operand in enumerate(op.operands):
            if operand not in visible:
                raise AccyVerifyError(
                    f"'{op.name}' op operand #{index} is used before it is defined "
                    "(or outside the region that defines it)",
                    op.location,
                )
        if op.regions:
            saved = None
            if op.has_trait(IsolatedFromAbove):
                saved, visible = visible, set()
            frames.append([op, _blocks_of(op), saved, None, None, None])
        else:
            frame[5].extend(op.results)
            visible.update(op.results)


def _blocks_of(op: Operation):
    return (block for region in op.regions for block in region.blocks)
