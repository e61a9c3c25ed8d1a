"""`accy.iota`, `accy.concatenate`, `accy.slice`: syntax, verifiers, builder, reference.

Expected values are written out or computed with plain numpy indexing here.
"""

from __future__ import annotations

import numpy as np
import pytest

from accy.builder import Builder
from accy.diagnostics import AccyParseError, AccyVerifyError
from accy.reference import run
from accy.source import parse

PROGRAM = """func.func @main(%a: tensor<2x3xf32>, %b: tensor<4x3xf32>, %x: tensor<4x3xf32>) -> (tensor<4x3xi32>, tensor<6x3xf32>, tensor<2x2xf32>, tensor<3xbf16>) {
  %0 = accy.iota dim = 0 : tensor<4x3xi32>
  %1 = accy.concatenate %a, %b, dim = 0 : (tensor<2x3xf32>, tensor<4x3xf32>) -> tensor<6x3xf32>
  %2 = accy.slice %x [1:3, 0:3:2] : (tensor<4x3xf32>) -> tensor<2x2xf32>
  %3 = accy.iota dim = 0 : tensor<3xbf16>
  func.return %0, %1, %2, %3 : tensor<4x3xi32>, tensor<6x3xf32>, tensor<2x2xf32>, tensor<3xbf16>
}
"""


def test_syntax_round_trips_and_evaluates() -> None:
    module = parse(PROGRAM)
    text = str(module)
    for line in PROGRAM.splitlines()[1:5]:
        assert line.strip() in text
    assert str(parse(text)) == text
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = np.arange(12, dtype=np.float32).reshape(4, 3) + 100
    x = np.arange(12, dtype=np.float32).reshape(4, 3) * -1
    iota, joined, sliced, iota_bf16 = run(module, "main", a, b, x)
    np.testing.assert_array_equal(iota, [[0, 0, 0], [1, 1, 1], [2, 2, 2], [3, 3, 3]])
    assert iota.dtype == np.int32
    np.testing.assert_array_equal(joined, np.vstack([a, b]))
    np.testing.assert_array_equal(sliced, [[x[1, 0], x[1, 2]], [x[2, 0], x[2, 2]]])
    np.testing.assert_array_equal(iota_bf16.astype(np.float32), [0, 1, 2])


def test_generic_form_round_trips() -> None:
    module = parse(PROGRAM)
    import io

    from xdsl.printer import Printer

    stream = io.StringIO()
    Printer(stream=stream, print_generic_format=True).print_op(module)
    generic = stream.getvalue()
    assert '"accy.slice"(%x) <{start_indices = array<i64: 1, 0>' in generic
    assert str(parse(generic)) == str(module)


def test_builder_infers_result_types() -> None:
    b = Builder()
    f32 = b.tensor("f32", [2, 3])
    g = b.tensor("f32", [None, 3])
    fb = b.begin_function("f", [f32, g], [b.tensor("f32", [None, 3]), b.tensor("f32", [1, 2])])
    joined = fb.concatenate([fb.parameter(0), fb.parameter(1)], 0)
    sliced = fb.slice(fb.parameter(0), [0, 0], [2, 3], [2, 2])
    fb.iota(b.tensor("i64", [5]), 0)
    fb.return_([joined, sliced])
    fb.finish()
    module = b.finish()
    assert str(joined.type) == "tensor<?x3xf32>"
    assert str(sliced.type) == "tensor<1x2xf32>"
    x = np.ones((2, 3), np.float32)
    y = np.zeros((5, 3), np.float32)
    out, part = run(module, "f", x, y)
    assert out.shape == (7, 3) and part.shape == (1, 2)


@pytest.mark.parametrize(
    "body,message",
    [
        ("%0 = accy.iota dim = 2 : tensor<4x3xi32>", "dim 2 is out of range for rank 2"),
        ("%0 = accy.iota dim = 0 : tensor<4xi1>", "expects a numeric element type"),
        (
            "%0 = accy.concatenate %a, %b, dim = 0 : (tensor<2x3xf32>, tensor<4x3xf32>) -> tensor<5x3xf32>",
            "result dim 0 is 5, the operands' sizes add up to 6",
        ),
        (
            "%0 = accy.concatenate %a, %c, dim = 0 : (tensor<2x3xf32>, tensor<2x4xf32>) -> tensor<4x3xf32>",
            "operand #1 dim 1 is 4, the result's 3",
        ),
        (
            "%0 = accy.concatenate %a, %i, dim = 0 : (tensor<2x3xf32>, tensor<2x3xi32>) -> tensor<4x3xf32>",
            "operand #1 has element type i32",
        ),
        (
            "%0 = accy.slice %b [1:5, 0:3] : (tensor<4x3xf32>) -> tensor<4x3xf32>",
            "range 1:5 of dim 0 is not within 0:4",
        ),
        (
            "%0 = accy.slice %b [0:4:0, 0:3] : (tensor<4x3xf32>) -> tensor<4x3xf32>",
            "stride 0 of dim 0 must be at least 1",
        ),
        (
            "%0 = accy.slice %b [0:4] : (tensor<4x3xf32>) -> tensor<4xf32>",
            "expects one range per operand dim (2)",
        ),
        (
            "%0 = accy.slice %b [0:4:3, 0:3] : (tensor<4x3xf32>) -> tensor<1x3xf32>",
            "result shape [1, 3] differs from the sliced shape [2, 3]",
        ),
    ],
)
def test_verifier_messages(body: str, message: str) -> None:
    text = (
        "func.func @f(%a: tensor<2x3xf32>, %b: tensor<4x3xf32>, %c: tensor<2x4xf32>, "
        "%i: tensor<2x3xi32>) {\n  " + body + "\n  func.return\n}\n"
    )
    with pytest.raises(AccyVerifyError) as info:
        parse(text, filename="v.mlir")
    assert message in info.value.message
    assert str(info.value).startswith("v.mlir:2:")


def test_concatenate_needs_a_dim() -> None:
    with pytest.raises(AccyParseError):
        parse(
            "func.func @f(%a: tensor<2xf32>) {\n  %0 = accy.concatenate %a : (tensor<2xf32>) "
            "-> tensor<2xf32>\n  func.return\n}\n"
        )


def test_reference_checks_dynamic_slices_and_concatenations() -> None:
    module = parse(
        """func.func @f(%x: tensor<?xf32>, %y: tensor<?x2xf32>, %z: tensor<3x2xf32>) -> (tensor<2xf32>, tensor<?x2xf32>) {
  %0 = accy.slice %x [1:3] : (tensor<?xf32>) -> tensor<2xf32>
  %1 = accy.concatenate %y, %z, dim = 0 : (tensor<?x2xf32>, tensor<3x2xf32>) -> tensor<?x2xf32>
  func.return %0, %1 : tensor<2xf32>, tensor<?x2xf32>
}"""
    )
    x = np.arange(5, dtype=np.float32)
    y = np.ones((1, 2), np.float32)
    z = np.zeros((3, 2), np.float32)
    sliced, joined = run(module, "f", x, y, z)
    np.testing.assert_array_equal(sliced, [1, 2])
    assert joined.shape == (4, 2)
    with pytest.raises(Exception, match="limit 3 of dim 0 is beyond its size 2"):
        run(module, "f", x[:2], y, z)


def test_ops_are_in_the_dialect() -> None:
    from accy.dialects.dialect import Accy

    names = {op.name for op in Accy.operations}
    assert {"accy.iota", "accy.concatenate", "accy.slice"} <= names
