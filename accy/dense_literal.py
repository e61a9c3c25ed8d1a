"""`dense<[...]>` literals of numbers, read in bulk (`DenseLiteral`, called by
`accy.source.LocatingParser`).

xDSL reads a dense literal token by token, making Python objects per element.
`DenseLiteral` checks the whole literal with one regular expression, its bracket structure
with string operations, and converts the numbers with numpy, so the cost per element is a
few machine operations; only errors, and floats that fall exactly between two values of
their type, go back to the text of single elements (`benchmarks/parse_speed.py` measures
it).
"""

from __future__ import annotations

import re
import sys
from decimal import Decimal
from fractions import Fraction
from math import prod
from typing import TYPE_CHECKING

import numpy as np
from xdsl.dialects.builtin import (
    BFloat16Type,
    BytesAttr,
    DenseIntOrFPElementsAttr,
    Float16Type,
    Float32Type,
    Float64Type,
    IndexType,
    IntegerType,
    Signedness,
)
from xdsl.utils.mlir_lexer import MLIRTokenKind

from accy.diagnostics import MAX_NESTING, AccyParseError, nesting_error

if TYPE_CHECKING:
    from accy.source import LocatingParser


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


_FLOAT_STORAGE = {Float16Type: "<u2", BFloat16Type: "<u2", Float32Type: "<u4", Float64Type: "<u8"}
_LITERAL_TOKEN = re.compile(r"0x[0-9A-Fa-f]+|[^\s\[\],<>]+")


def with_float_bit_patterns(attr: DenseIntOrFPElementsAttr, text: str) -> DenseIntOrFPElementsAttr:
    """`attr`, which xDSL read from the dense literal `text` (`<...>`), with each hex
    element of a float type read as MLIR reads it, as the element's bit pattern (xDSL reads
    `0xFF800000` as the number 4286578688; its printer writes infinities and NaNs so).
    Raises ValueError for a hex element wider than the type."""
    storage = _FLOAT_STORAGE.get(type(attr.get_element_type()))
    body = text[text.find("<") + 1 : text.find(">")]
    if storage is None or "0x" not in body.lower() or body.lstrip().startswith('"'):
        return attr
    tokens = _LITERAL_TOKEN.findall(body)
    count = len(attr)
    if len(tokens) not in (1, count):
        return attr
    decoded = np.frombuffer(attr.data.data, dtype=storage).copy()
    bits = [int(t, 16) if t.lower().startswith("0x") else None for t in tokens]
    width = decoded.dtype.itemsize * 8
    for token, value in zip(tokens, bits):
        if value is not None and value >= 1 << width:
            raise ValueError(
                f"hex literal {token} has more than {width} bits for {attr.get_element_type()}"
            )
    for index in range(count):
        value = bits[0] if len(tokens) == 1 else bits[index]
        if value is not None:
            decoded[index] = value
    return DenseIntOrFPElementsAttr(attr.type, BytesAttr(decoded.tobytes()))
