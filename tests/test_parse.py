"""Reading programs with `accy.source.parse`: dense literals read in bulk (the same values
as xDSL's element-by-element reading, floats rounded from the exact decimal), their
errors located at the element, a limit on nesting depth instead of a RecursionError, and
operands used before their definition across regions."""

from __future__ import annotations

import io
import random
import struct
import tracemalloc

import numpy as np
import pytest
from xdsl.parser import Parser
from xdsl.parser.attribute_parser import AttrParser
from xdsl.printer import Printer
from xdsl.utils.lexer import Input
from xdsl.utils.mlir_lexer import MLIRTokenKind

from accy import reference
from accy.diagnostics import AccyParseError, AccyVerifyError
from accy.source import MAX_NESTING, LinearLexer, make_context, parse, verify_dominance


def module_text(literal: str, type_: str) -> str:
    return f"builtin.module attributes {{v = dense<{literal}> : {type_}}} {{\n}}\n"


def read(literal: str, type_: str):
    return parse(module_text(literal, type_)).attributes["v"]


def read_by_xdsl(literal: str, type_: str):
    return Parser(make_context(), module_text(literal, type_)).parse_module().attributes["v"]


def nested(values: list[str], shape: tuple[int, ...]) -> str:
    if not shape:
        return values[0]
    if shape[0] == 0:
        return "[]"
    step = len(values) // shape[0]
    return "[" + ", ".join(nested(values[i * step : (i + 1) * step], shape[1:]) for i in range(shape[0])) + "]"  # fmt: skip


def random_elements(element: str, count: int, rng: random.Random) -> list[str]:
    if element.startswith(("f", "bf")):
        limit = {"f16": 6e4, "bf16": 3e38, "f32": 3e38, "f64": 1e308}[element]
        exponent_limit = int(np.log10(limit))
        values = []
        for _ in range(count):
            mantissa = f"{rng.uniform(1, 10):.{rng.randrange(1, 18)}f}"
            exponent = rng.randrange(-40, exponent_limit)
            sign = rng.choice(["", "-"])
            values.append(f"{sign}{mantissa}e{exponent}" if rng.random() < 0.5 else f"{sign}{rng.uniform(0, 100):.6f}")  # fmt: skip
        return values
    if element == "i1":
        return [rng.choice(["true", "false", "0", "1", "-1"]) for _ in range(count)]
    unsigned = element.startswith("ui")
    width = 64 if element == "index" else int(element.lstrip("suio"))
    low = 0 if unsigned else -(1 << (width - 1))
    high = (1 << width) if (unsigned or element.startswith("i")) and element != "index" else 1 << (width - 1)  # fmt: skip
    return [str(rng.randrange(low, high)) for _ in range(count)]


ELEMENTS = ["i1", "i8", "i16", "si16", "i32", "ui32", "i64", "ui64", "index", "f16", "bf16", "f32", "f64"]  # fmt: skip
SHAPES = [(), (0,), (1,), (5,), (2, 3), (2, 1, 2), (3, 0)]


@pytest.mark.parametrize("element", ELEMENTS)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_dense_literals_hold_the_values_xdsl_reads(element: str, shape: tuple[int, ...]) -> None:
    rng = random.Random(f"{element}{shape}")
    for splat in (False, True):
        count = 1 if splat else int(np.prod(shape))
        values = random_elements(element, count, rng)
        literal = values[0] if splat else nested(values, shape)
        if not shape and not splat:
            literal = values[0]
        dims = "x".join(str(d) for d in shape)
        type_ = f"tensor<{dims}x{element}>" if shape else f"tensor<{element}>"
        ours, theirs = read(literal, type_), read_by_xdsl(literal, type_)
        assert ours.type == theirs.type
        assert ours.data.data == theirs.data.data, literal


@pytest.mark.parametrize(
    "literal,type_,bits,xdsl_bits",
    [
        # Halfway between 1 and the next f32 in float64, but just above it in decimal:
        # rounding through float64 gives 1.0 (ties to even), the exact value rounds up.
        ("1.000000059604644775390625000001", "f32", 0x3F800001, 0x3F800000),
        ("-1.000000059604644775390625000001", "f32", 0xBF800001, 0xBF800000),
        # Exactly halfway: ties to even, both ways.
        ("1.000000059604644775390625", "f32", 0x3F800000, 0x3F800000),
        ("1.000000178813934326171875", "f32", 0x3F800002, 0x3F800002),
        # Just below halfway, but float64 rounds it onto the halfway point.
        ("1.000000178813934326171874999999", "f32", 0x3F800001, 0x3F800002),
        ("1.000488281250000000000001", "f16", 0x3C01, 0x3C00),
        ("1.0039062500000000000001", "bf16", 0x3F81, 0x3F80),
        # f16's overflow threshold: 65520 rounds to infinity (an error), just below to max.
        ("65519.999999999999999999", "f16", 0x7BFF, None),
        # Subnormals.
        ("5.960464477539063e-8", "f16", 0x0001, 0x0001),
        ("2.98023223876953125e-8", "f16", 0x0000, 0x0000),
        ("2.980232238769531250001e-8", "f16", 0x0001, 0x0000),
        ("1.401298464324817e-45", "f32", 0x00000001, 0x00000001),
        ("-0.0", "f32", 0x80000000, 0x80000000),
    ],
)
def test_floats_round_from_the_exact_decimal(
    literal: str, type_: str, bits: int, xdsl_bits: int | None
) -> None:
    data = read(f"[{literal}]", f"tensor<1x{type_}>").data.data
    assert int.from_bytes(data, "little") == bits
    if xdsl_bits is not None:
        theirs = read_by_xdsl(f"[{literal}]", f"tensor<1x{type_}>").data.data
        assert int.from_bytes(theirs, "little") == xdsl_bits


def test_a_large_literal_is_read_in_bulk(monkeypatch: pytest.MonkeyPatch) -> None:
    """200,000 elements in about 2.4 MB: no Python object per element (xDSL's tensor
    literal reader is not called) and memory a small multiple of the text (xDSL's reading
    took about 500 bytes per element, some 100 MB here)."""
    rng = random.Random(0)
    count = 200_000
    values = [f"{rng.uniform(-4, 4):.9g}" for _ in range(count)]
    text = module_text("[" + ", ".join(values) + "]", f"tensor<{count}xf32>")

    def refuse(*_args):
        raise AssertionError("xDSL's element-by-element reader was used")

    monkeypatch.setattr(AttrParser, "_parse_tensor_literal", refuse)
    tracemalloc.start()
    try:
        attr = parse(text).attributes["v"]
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    expected = np.array(values, dtype=np.float64).astype("<f4")
    assert attr.data.data == expected.tobytes()
    assert peak < 16 * len(text), peak


def test_a_large_hex_literal_is_lexed_in_linear_space() -> None:
    """`dense<"0x...">` of 1.6 MB: the string-literal pattern keeps no backtracking state
    per character (the one-character-per-repetition pattern took 120 bytes per character:
    about 190 MB here, 1 GB for 8 MB)."""
    data = np.arange(200_000, dtype="<f4").tobytes()
    text = module_text('"0x' + data.hex().upper() + '"', "tensor<200000xf32>")
    tracemalloc.start()
    try:
        attr = parse(text).attributes["v"]
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert attr.data.data == data
    assert peak < 16 * len(text), peak
    # The pattern matches the strings the pinned one did.
    pattern = LinearLexer._unescaped_characters_regex
    for good in ['""', '"a b"', '"\\n\\t\\\\\\""', '"\\0A\\ff"', '"é"']:
        assert pattern.match(good).group() == good
    for bad in ['"abc', '"\\q"', '"a\nb"', '"\\0"']:
        assert pattern.match(bad) is None


ERRORS = [
    # literal, type, index in the literal of the error's position, message
    ("[1, 2]", "tensor<2xi1>", 4, "Integer value 2 is out of range for type i1"),
    ("[0, 7, 300]", "tensor<3xui8>", 7, "Integer value 300 is out of range for type ui8"),
    ("[1, 128]", "tensor<2xsi8>", 4, "Integer value 128 is out of range for type si8"),
    ("[1, -32769]", "tensor<2xi16>", 4, "Integer value -32769 is out of range for type i16"),
    ("[1, 18446744073709551616]", "tensor<2xi64>", 4, "Integer value 18446744073709551616 is out of range for type i64"),
    ("[1, -9223372036854775809]", "tensor<2xindex>", 4, "Integer value -9223372036854775809 is out of range for type index"),
    ("[1, -2]", "tensor<2xui32>", 4, "Expected non-negative integer values"),
    ("[1, 2.5]", "tensor<2xi32>", 4, "Expected integer value"),
    ("[1.0, 3.5e38]", "tensor<2xf32>", 6, "Float value 3.5e38 is out of range for type f32"),
    ("[1.0, -1.0e309]", "tensor<2xf64>", 6, "Float value -1.0e309 is out of range for type f64"),
    ("[[1.0], [2.0, 3.0]]", "tensor<2x1xf32>", 17, "Tensor literal has inconsistent ranks"),
    ("[1.0, 2.0]", "tensor<3xf32>", 0, "Shape mismatch in dense literal. Expected [3] shape from the type, but got [2] shape."),
    ("[1.0, , 2.0]", "tensor<3xf32>", 6, "Expected either a float, integer, or complex literal"),
    ("[1.0, 2.0,]", "tensor<2xf32>", 10, "Expected either a float, integer, or complex literal"),
]  # fmt: skip


@pytest.mark.parametrize("literal,type_,index,message", ERRORS)
def test_dense_literal_errors_are_located_at_the_element(
    literal: str, type_: str, index: int, message: str
) -> None:
    with pytest.raises(AccyParseError) as error:
        read(literal, type_)
    assert message in error.value.message
    location = error.value.location
    column = module_text(literal, type_).index(literal) + index + 1
    assert (location.line.data, location.column.data) == (1, column)


def test_syntax_the_bulk_reader_does_not_take_goes_to_xdsl() -> None:
    # Hex integers (`0x1F`), hex strings, complex numbers: xDSL reads them as before.
    assert read("[0x1F, 2]", "tensor<2xi32>").data.data == struct.pack("<2i", 31, 2)
    assert read('"0x0000803F"', "tensor<2xf32>").data.data == struct.pack("<2f", 1, 1)
    assert read("[(1.0, 2.0)]", "tensor<1xcomplex<f32>>").data.data == struct.pack("<2f", 1, 2)
    with pytest.raises(AccyParseError, match="']' expected"):
        read("[1e5]", "tensor<1xf32>")  # MLIR has no `1e5` (a float needs a `.`)


def nest(kind: str, depth: int) -> str:
    """A program whose deepest point has `depth` brackets open."""
    if kind == "regions":  # func.func { and depth - 2 accy.iterate {, then tensor<
        loops = depth - 2
        lines = ["func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {"]
        for i in range(loops):
            lines.append(f"%r{i} = accy.iterate 1 iter_args(%p{i} = %{'a' if i == 0 else f'p{i - 1}'}) : tensor<4xf32> {{")  # fmt: skip
        for i in reversed(range(loops)):
            lines.append(f"accy.yield %{f'p{i}' if i == loops - 1 else f'r{i + 1}'} : tensor<4xf32>\n}}")  # fmt: skip
        return "\n".join([*lines, "func.return %r0 : tensor<4xf32>\n}\n"])
    if kind == "array":  # attributes { then depth - 1 [
        return "func.func @f() attributes {x = " + "[" * (depth - 1) + "1" + "]" * (depth - 1) + "} {\n  func.return\n}\n"  # fmt: skip
    if kind == "dict":
        return "func.func @f() attributes {x = " + "{a = " * (depth - 1) + "1" + "}" * (depth - 1) + "} {\n  func.return\n}\n"  # fmt: skip
    if kind == "dense":  # attributes { dense< then depth - 2 [
        rank = depth - 2
        return "func.func @f() attributes {x = dense<" + "[" * rank + "1.0" + "]" * rank + "> : tensor<" + "1x" * rank + "f32>} {\n  func.return\n}\n"  # fmt: skip
    if kind == "type":  # @g( then depth - 1 (
        return "func.func private @g(" + "(" * (depth - 1) + "i32" + ") -> i32" * (depth - 1) + ")\n"  # fmt: skip
    raise AssertionError(kind)


KINDS = ["regions", "array", "dict", "dense", "type"]


@pytest.mark.parametrize("kind", KINDS)
def test_nesting_up_to_the_limit_parses_verifies_and_prints(kind: str) -> None:
    module = parse(nest(kind, MAX_NESTING))
    for generic in (False, True):
        out = io.StringIO()
        Printer(stream=out, print_generic_format=generic).print_op(module)
        assert out.getvalue()


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("depth", [MAX_NESTING + 1, 2000])
def test_nesting_beyond_the_limit_is_a_located_error(kind: str, depth: int) -> None:
    text = nest(kind, depth)
    with pytest.raises(AccyParseError, match=f"nesting deeper than {MAX_NESTING} levels") as error:
        parse(text)
    # At the first bracket too many.
    location = error.value.location
    lines = text.split("\n")
    position = sum(len(line) + 1 for line in lines[: location.line.data - 1])
    position += location.column.data - 1
    assert text[position] in "([{<"
    before = text[:position]
    opened = sum(before.count(c) for c in "([{<") - sum(before.count(c) for c in ")]}>")
    opened += before.count("->")  # `->` is no bracket
    assert opened == MAX_NESTING


def test_lexing_again_from_an_earlier_position_keeps_the_depth() -> None:
    # xDSL's parser goes back (`_resume_from`) to split or retry tokens; the depth is
    # that of the position lexed, not a count of tokens seen.
    lexer = LinearLexer(Input("((a)) [b]", "x"))
    kinds = [lexer.lex().kind for _ in range(3)]  # ( ( a
    assert lexer.depth == 2 and kinds[-1] is MLIRTokenKind.BARE_IDENT
    lexer.pos = 0
    lexer.lex()
    assert lexer.depth == 1
    for _ in range(3):  # ( a )
        lexer.lex()
    assert lexer.depth == 1
    lexer.pos = 3  # back to the first `)`
    lexer.lex()
    assert lexer.depth == 1
    lexer.lex()  # )
    lexer.lex()  # [
    assert lexer.depth == 1
    lexer.pos = 1
    lexer.lex()  # ( again
    assert lexer.depth == 2


FORWARD = """func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {
  %r = accy.iterate 1 iter_args(%p = %a) : tensor<4xf32> {
    %i = accy.iterate 1 iter_args(%q = %p) : tensor<4xf32> {
      %n = accy.add %q, USE : tensor<4xf32>
      accy.yield %n : tensor<4xf32>
    }
    accy.yield %i : tensor<4xf32>
  }
  %later = accy.add %a, %a : tensor<4xf32>
  %s = accy.iterate 1 iter_args(%t = %a) : tensor<4xf32> {
    accy.yield %t : tensor<4xf32>
  }
  func.return %r : tensor<4xf32>
}
"""


@pytest.mark.parametrize(
    "use,defined",
    [
        ("%a", True),  # an argument of the function
        ("%p", True),  # an argument of the enclosing region
        ("%q", True),
        ("%later", False),  # defined later in the outer block
        ("%t", False),  # an argument of a later sibling region
        ("%r", False),  # the result of the op around the use
        ("%i", False),
    ],
)
def test_operands_defined_later_or_elsewhere_are_located_errors(use: str, defined: bool) -> None:
    text = FORWARD.replace("USE", use)
    if defined:
        parse(text)
        return
    with pytest.raises(AccyVerifyError, match="operand #1 is used before it is defined") as error:
        parse(text)
    assert (error.value.location.line.data, error.value.location.column.data) == (4, 7)


def test_a_value_of_one_function_is_not_visible_in_the_next() -> None:
    text = (
        "func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {\n"
        "  %x = accy.add %a, %a : tensor<4xf32>\n  func.return %x : tensor<4xf32>\n}\n"
        "func.func @g(%b: tensor<4xf32>) -> tensor<4xf32> {\n"
        "  %y = accy.add %b, %x : tensor<4xf32>\n  func.return %y : tensor<4xf32>\n}\n"
    )
    with pytest.raises((AccyVerifyError, AccyParseError)) as error:
        parse(text)
    assert error.value.location is not None


def test_the_dominance_check_holds_each_value_once() -> None:
    """A block of n ops that hold regions: the check used to copy the values in scope
    into a set for every region, all alive at once (87 MB at n = 2000, 8 s at n = 8000);
    now each value enters and leaves one scope set once."""
    count = 2000
    lines = ["func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {", "%v0 = accy.add %a, %a : tensor<4xf32>"]  # fmt: skip
    for i in range(count):
        lines.append(f"%v{i + 1} = accy.iterate 1 iter_args(%p{i} = %v{i}) : tensor<4xf32> {{")
        lines.append(f"  accy.yield %p{i} : tensor<4xf32>\n}}")
    lines.append(f"func.return %v{count} : tensor<4xf32>\n}}\n")
    module = parse("\n".join(lines))
    tracemalloc.start()
    try:
        verify_dominance(module)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 2_000_000, peak  # 4002 values in a set: well under 1 MB


def test_hex_float_elements_are_bit_patterns_and_round_trip() -> None:
    """xDSL prints infinities and NaNs as hex bit patterns (`0xff800000`); accy reads them
    back as such (as MLIR does), so printing and parsing again loses nothing."""
    text = """func.func @f() -> (tensor<3xf32>, tensor<2xbf16>, tensor<2xf16>) {
  %a = accy.constant dense<[1.0, 0xFF800000, 0x7FC00000]> : tensor<3xf32>
  %b = accy.constant dense<[0xff80, 2.0]> : tensor<2xbf16>
  %c = accy.constant dense<0x7C00> : tensor<2xf16>
  func.return %a, %b, %c : tensor<3xf32>, tensor<2xbf16>, tensor<2xf16>
}"""
    module = parse(text)
    assert parse(str(module)).is_structurally_equivalent(module)
    a, b, c = reference.run(module, "f")
    assert a[0] == 1.0 and a[1] == -np.inf and np.isnan(a[2])
    assert b[0] == -np.inf and b[1] == 2.0
    assert list(c) == [np.inf, np.inf]
    with pytest.raises(
        AccyParseError, match="hex literal 0x1FF800000 has more than 32 bits for f32"
    ):
        parse(text.replace("0xFF800000", "0x1FF800000"))
