"""chlo ops as JAX emits them (the custom form, which the bindings cannot parse): those
StableHLO's `chlo-legalize-to-stablehlo` expands and those the importer expands itself
(`accy.expansions`), against math/numpy on both sides of each branch of an expansion; located
refusals of the rest, never a crash; `stablehlo.bitcast_convert` and `accy.bitcast_convert`."""

from __future__ import annotations

import math
import re

import ml_dtypes
import numpy as np
import pytest

import accy
from accy import reference
from accy.diagnostics import AccyError

UNARY = {
    "acosh": math.acosh,
    "asinh": math.asinh,
    "atanh": math.atanh,
    "asin": math.asin,
    "acos": math.acos,
    "atan": math.atan,
    "sinh": math.sinh,
    "cosh": math.cosh,
    "tan": math.tan,
    "lgamma": math.lgamma,
    "erf": math.erf,
    "erfc": math.erfc,
    "square": lambda x: x * x,
}
DOMAIN = {
    "acosh": [1.0, 1.0001, 1.5, 3.0, 1e5, 3e30],
    "asinh": [-3e30, -2.0, -1e-5, 0.0, 0.3, 1e5],
    "atanh": [-0.999, -0.923, -1e-6, 0.0, 0.5, 0.9],
    "asin": [-1.0, -0.7, -1e-6, 0.0, 0.5, 0.999],
    "acos": [-1.0, -0.7, -1e-6, 0.0, 0.5, 0.999],
    "atan": [-1e30, -3.0, -1e-6, 0.0, 0.5, 7.0],
    "sinh": [-20.0, -0.475, -0.1, 1e-6, 0.2, 5.0],
    "cosh": [-20.0, -0.475, -0.1, 1e-6, 0.2, 5.0],
    "tan": [-1.5, -0.7, -1e-6, 0.0, 0.5, 1.4],
    "lgamma": [-2.5, -0.5, 0.1, 1.5, 3.5, 40.0],
    "erf": [-3.0, -0.5, -1e-6, 0.0, 0.5, 2.0],
    "erfc": [-3.0, -0.5, -1e-6, 0.0, 0.5, 5.0],
    "square": [-3.0, -0.5, -1e-6, 0.0, 0.5, 2.0],
}


def _program(name: str, element: str) -> str:
    t = f"tensor<6x{element}>"
    return f"""func.func @main(%x: {t}) -> {t} {{
  %0 = chlo.{name} %x : {t} -> {t}
  return %0 : {t}
}}"""


@pytest.mark.parametrize("name", sorted(UNARY))
@pytest.mark.parametrize("element", ["f32", "f64"])
def test_unary_chlo_ops_match_math(name, element):
    dtype = np.float32 if element == "f32" else np.float64
    x = np.array(DOMAIN[name], dtype)
    (out,) = accy.compile(accy.import_stablehlo(_program(name, element)), threads=1)(x)
    want = np.array([UNARY[name](float(v)) for v in x], np.float64)
    # lgamma is XLA's Lanczos approximation (absolute error ~ eps near its zeros at 1, 2).
    rtol, atol = (2e-6, 1e-6) if element == "f32" else (1e-13, 1e-13)
    if name == "lgamma" and element == "f64":
        rtol, atol = 1e-13, 1e-14
    np.testing.assert_allclose(out.astype(np.float64), want, rtol=rtol, atol=atol)


def test_bf16_is_computed_in_f32_and_rounded_once():
    x = np.array(DOMAIN["lgamma"], ml_dtypes.bfloat16)
    (out,) = accy.compile(accy.import_stablehlo(_program("lgamma", "bf16")), threads=1)(x)
    want = np.array([math.lgamma(float(v)) for v in x]).astype(ml_dtypes.bfloat16)
    np.testing.assert_allclose(out.astype(np.float32), want.astype(np.float32), rtol=8e-3)


PREDICATES = """func.func @main(%x: tensor<5xf32>) -> (tensor<5xi1>, tensor<5xi1>, tensor<5xi1>) {
  %0 = chlo.is_inf %x : tensor<5xf32> -> tensor<5xi1>
  %1 = chlo.is_pos_inf %x : tensor<5xf32> -> tensor<5xi1>
  %2 = chlo.is_neg_inf %x : tensor<5xf32> -> tensor<5xi1>
  return %0, %1, %2 : tensor<5xi1>, tensor<5xi1>, tensor<5xi1>
}"""


def test_infinity_predicates():
    x = np.array([np.inf, -np.inf, np.nan, 0.0, 3e38], np.float32)
    outs = accy.compile(accy.import_stablehlo(PREDICATES), threads=1)(x)
    for out, want in zip(outs, (np.isinf(x), np.isposinf(x), np.isneginf(x))):
        np.testing.assert_array_equal(out, want)


MULHI = """func.func @main(%a: tensor<6xT>, %b: tensor<6xT>) -> tensor<6xT> {
  %0 = chlo.mulhi %a, %b : tensor<6xT>, tensor<6xT> -> tensor<6xT>
  return %0 : tensor<6xT>
}"""


INTEGER_DTYPES = {"i8": np.int8, "i32": np.int32, "i64": np.int64, "ui32": np.uint32}
INTEGER_DTYPES["ui64"] = np.uint64


@pytest.mark.parametrize("element", sorted(INTEGER_DTYPES))
def test_mulhi_is_the_high_half_of_the_exact_product(element):
    dtype = np.dtype(INTEGER_DTYPES[element])
    info = np.iinfo(dtype)
    third = info.max // 3
    a = [info.max, info.min, -1 if info.min else 3, third, info.max, 7]
    b = [info.max, info.max, info.max, -third if info.min else third, info.min, 0]
    a, b = np.array(a, dtype), np.array(b, dtype)
    text = MULHI.replace("xT>", f"x{element}>")
    (out,) = accy.compile(accy.import_stablehlo(text), threads=1)(a, b)
    high = [(int(x) * int(y)) >> info.bits for x, y in zip(a.tolist(), b.tolist())]
    wrapped = [(h - info.min) % (1 << info.bits) + info.min for h in high]
    np.testing.assert_array_equal(out, np.array(wrapped, dtype))


def test_expanded_ops_keep_the_chlo_ops_location():
    text = _program("erf", "f32").replace("%0 = chlo.erf", "%0 = chlo.erf")
    module = accy.import_stablehlo(text, filename="gelu.py")
    lines = {op.location.line.data for op in module.walk() if op.name.startswith("accy.")}
    assert lines == {2}


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (
            "%0 = chlo.polygamma %x, %x : tensor<6xf32>, tensor<6xf32> -> tensor<6xf32>",
            "'chlo.polygamma' is not supported by the StableHLO importer",
        ),
        (
            '%0 = "chlo.asin"(%x) : (tensor<6xf32>) -> tensor<6xf32>',
            None,  # the generic form is read too (and never reaches the legalization)
        ),
    ],
)
def test_chlo_ops_outside_the_expansions_are_refused_by_name(line, message):
    text = f"""func.func @main(%x: tensor<6xf32>) -> tensor<6xf32> {{
  {line}
  return %0 : tensor<6xf32>
}}"""
    if message is None:
        assert accy.import_stablehlo(text) is not None
        return
    with pytest.raises(AccyError, match=re.escape(message)) as error:
        accy.import_stablehlo(text, filename="p.mlir")
    assert "p.mlir:2:" in str(error.value)


BITCAST = """func.func @main(%x: tensor<4xf32>, %h: tensor<4xbf16>) -> (tensor<4xi32>, tensor<4xui16>, tensor<4xf32>) {
  %0 = stablehlo.bitcast_convert %x : (tensor<4xf32>) -> tensor<4xi32>
  %1 = stablehlo.bitcast_convert %h : (tensor<4xbf16>) -> tensor<4xui16>
  %2 = stablehlo.bitcast_convert %0 : (tensor<4xi32>) -> tensor<4xf32>
  return %0, %1, %2 : tensor<4xi32>, tensor<4xui16>, tensor<4xf32>
}"""


def test_bitcast_convert_reads_the_bits_as_another_type(tmp_path):
    x = np.array([1.0, -0.0, np.inf, 1e-45], np.float32)
    h = np.array([1.0, -2.0, 0.5, np.nan], ml_dtypes.bfloat16)
    module = accy.import_stablehlo(BITCAST)
    for outs in (reference.run(module, "main", x, h), accy.compile(module, threads=1)(x, h)):
        np.testing.assert_array_equal(outs[0], x.view(np.int32))
        np.testing.assert_array_equal(outs[1], h.view(np.uint16))
        np.testing.assert_array_equal(outs[2].view(np.int32), x.view(np.int32))
    assert list(
        accy.export(accy.import_stablehlo(BITCAST), tmp_path / "b", target="cuda").glob("*.ptx")
    )


def test_bitcast_between_widths_is_refused_with_locations():
    text = """func.func @main(%x: tensor<2xf32>) -> tensor<2x4xi8> {
  %0 = stablehlo.bitcast_convert %x : (tensor<2xf32>) -> tensor<2x4xi8>
  return %0 : tensor<2x4xi8>
}"""
    with pytest.raises(AccyError, match="changing the shape") as error:
        accy.import_stablehlo(text, filename="b.mlir")
    assert "b.mlir:2:" in str(error.value)
    wrong = """func.func @f(%x: tensor<2xf32>) -> tensor<2xi16> {
  %0 = accy.bitcast_convert %x : (tensor<2xf32>) -> tensor<2xi16>
  func.return %0 : tensor<2xi16>
}"""
    with pytest.raises(AccyError, match=r"bitcasts f32 \(32 bits\) to i16 \(16 bits\)"):
        accy.parse(wrong)


def test_chlo_programs_export_for_cuda(tmp_path):
    text = _program("lgamma", "f32")
    assert list(
        accy.export(accy.import_stablehlo(text), tmp_path / "l", target="cuda").glob("*.ptx")
    )


REDUCE_PRECISION = """func.func @main(%x: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  %0 = stablehlo.reduce_precision %x, format = e5m10 : tensor<8xf32>
  %1 = stablehlo.reduce_precision %x, format = e8m7 : tensor<8xf32>
  return %0, %1 : tensor<8xf32>, tensor<8xf32>
}"""


def test_reduce_precision_rounds_like_the_narrower_type():
    """e5m10 is f16's format (round to nearest even, overflow to inf, flush below f16's
    normal range), e8m7 bf16's; NaN stays NaN."""
    x = np.array([1.0 + 2**-11, 1.0 + 3 * 2**-11, 65520.0, -1e6, 3.3, np.nan, 1e-3, -0.0])
    x = x.astype(np.float32)
    half, brain = accy.compile(accy.import_stablehlo(REDUCE_PRECISION), threads=1)(x)
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(half, x.astype(np.float16).astype(np.float32))
    np.testing.assert_array_equal(brain, x.astype(ml_dtypes.bfloat16).astype(np.float32))
