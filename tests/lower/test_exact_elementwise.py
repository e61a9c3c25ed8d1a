"""The exact elementwise ops: `accy.remainder`, the shifts, `accy.sign`, `accy.popcnt`,
`accy.count_leading_zeros`, the two roundings and `accy.is_finite`. Each against a
definition written out per element (the edge cases StableHLO specifies: shift amounts
outside the bit width, remainders by 0 and of MIN by -1, ties, signed zeros, NaN), the CPU
target bit for bit, StableHLO import, located verifier errors and CUDA export."""

from __future__ import annotations

import re

import numpy as np
import pytest

import accy
from accy import reference
from accy.diagnostics import AccyError

INTEGER = """
func.func @f(%a: tensor<8xT>, %b: tensor<8xT>) -> (tensor<8xT>, tensor<8xT>, tensor<8xT>, tensor<8xT>, tensor<8xT>, tensor<8xT>, tensor<8xT>) {
  %rem = accy.remainder %a, %b : tensor<8xT>
  %shl = accy.shift_left %a, %b : tensor<8xT>
  %sra = accy.shift_right_arithmetic %a, %b : tensor<8xT>
  %srl = accy.shift_right_logical %a, %b : tensor<8xT>
  %sign = accy.sign %a : tensor<8xT>
  %pop = accy.popcnt %a : tensor<8xT>
  %clz = accy.count_leading_zeros %a : tensor<8xT>
  func.return %rem, %shl, %sra, %srl, %sign, %pop, %clz : tensor<8xT>, tensor<8xT>, tensor<8xT>, tensor<8xT>, tensor<8xT>, tensor<8xT>, tensor<8xT>
}"""


def _integer_definition(a, b):
    """Each result written out per element with Python integers."""
    bits = a.dtype.itemsize * 8
    mask = (1 << bits) - 1
    out = [[] for _ in range(7)]
    for x, y in zip(a.tolist(), b.tolist()):
        if y == 0:
            rem = x
        else:
            rem = abs(x) % abs(y) * (1 if x >= 0 else -1)
        inside = 0 <= y < bits
        unsigned = x & mask
        out[0].append(rem)
        out[1].append(((unsigned << y) & mask) if inside else 0)
        out[2].append(x >> y if inside else (-1 if x < 0 else 0))
        out[3].append(unsigned >> y if inside else 0)
        out[4].append((x > 0) - (x < 0))
        out[5].append(unsigned.bit_count())
        out[6].append(bits - unsigned.bit_length())
    wrap = lambda v: ((v + (1 << (bits - 1))) & mask) - (1 << (bits - 1))
    return [np.array([wrap(v) for v in values], a.dtype) for values in out]


@pytest.mark.parametrize("element", ["i32", "i64"])
def test_integer_ops_follow_their_definition(element):
    dtype = np.int32 if element == "i32" else np.int64
    low = np.iinfo(dtype).min
    a = np.array([7, -7, low, 0, 5, -1, 12, -100], dtype)
    b = np.array([2, 2, -1, 3, 0, 99, -1, 31], dtype)
    text = INTEGER.replace("xT>", f"x{element}>")
    expected = _integer_definition(a, b)
    for outputs in (
        reference.run(accy.parse(text), "f", a, b),
        accy.compile(text, threads=1)(a, b),
    ):
        for index, (out, want) in enumerate(zip(outputs, expected)):
            np.testing.assert_array_equal(out, want, err_msg=f"result {index}")


FLOAT = """
func.func @f(%x: tensor<8xf32>, %y: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xi1>) {
  %rem = accy.remainder %x, %y : tensor<8xf32>
  %sign = accy.sign %x : tensor<8xf32>
  %even = accy.round_nearest_even %x : tensor<8xf32>
  %afz = accy.round_nearest_afz %x : tensor<8xf32>
  %fin = accy.is_finite %x : (tensor<8xf32>) -> tensor<8xi1>
  func.return %rem, %sign, %even, %afz, %fin : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xi1>
}"""


def test_float_ops_keep_signed_zeros_nan_and_ties():
    x = np.array([2.5, -2.5, 0.5, -0.0, np.inf, np.nan, 0.49999997, -7.25], np.float32)
    y = np.array([2.0, 2.0, 0.3, 1.0, 1.0, 1.0, 0.5, -2.0], np.float32)
    with np.errstate(invalid="ignore"):
        remainder = np.fmod(x, y)
    expected = [
        remainder,
        np.array([1, -1, 1, -0.0, 1, np.nan, 1, -1], np.float32),
        np.array([2, -2, 0, -0.0, np.inf, np.nan, 0, -7], np.float32),
        np.array([3, -3, 1, -0.0, np.inf, np.nan, 0, -7], np.float32),
        np.isfinite(x),
    ]
    for outputs in (
        reference.run(accy.parse(FLOAT), "f", x, y),
        accy.compile(FLOAT, threads=1)(x, y),
    ):
        for index, (out, want) in enumerate(zip(outputs, expected)):
            np.testing.assert_array_equal(out, want, err_msg=f"result {index}")
            if out.dtype.kind == "f":
                np.testing.assert_array_equal(np.signbit(out), np.signbit(want))


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("%r = accy.shift_left %x, %x : tensor<4xf32>", "expects an integer element type, got f32"),
        ("%r = accy.popcnt %p : tensor<4xi1>", "expects an integer element type, got i1"),
        (
            "%r = accy.round_nearest_even %i : tensor<4xi32>",
            "expects a floating-point element type",
        ),
        (
            "%r = accy.is_finite %i : (tensor<4xi32>) -> tensor<4xi1>",
            "expects a floating-point operand",
        ),
    ],
)
def test_verifier_errors_are_located(line, message):
    text = f"""
func.func @f(%x: tensor<4xf32>, %i: tensor<4xi32>, %p: tensor<4xi1>) {{
  {line}
  func.return
}}"""
    with pytest.raises(AccyError, match=re.escape(message)) as error:
        accy.parse(text)
    assert error.value.location is not None


IMPORTED = """
func.func public @main(%a: tensor<4xi32>, %x: tensor<4xbf16>) -> (tensor<4xi32>, tensor<4xi1>, tensor<4xbf16>) {
  %s = stablehlo.shift_right_logical %a, %a : tensor<4xi32>
  %f = stablehlo.is_finite %x : (tensor<4xbf16>) -> tensor<4xi1>
  %r = stablehlo.round_nearest_afz %x : tensor<4xbf16>
  return %s, %f, %r : tensor<4xi32>, tensor<4xi1>, tensor<4xbf16>
}"""


def test_stablehlo_import_and_cuda_export(tmp_path):
    import ml_dtypes

    module = accy.import_stablehlo(IMPORTED)
    a = np.array([1, 31, 32, -1], np.int32)
    x = np.array([2.5, -np.inf, np.nan, -0.5], ml_dtypes.bfloat16)
    shifted, finite, rounded = accy.compile(module, threads=1)(a, x)
    np.testing.assert_array_equal(shifted, [0, 0, 0, 0])  # -1 >> -1: the amount is out of range
    np.testing.assert_array_equal(finite, [True, False, False, True])
    np.testing.assert_array_equal(rounded.astype(np.float32), [3.0, -np.inf, np.nan, -1.0])
    for name, program in (
        ("int", INTEGER.replace("xT>", "xi32>")),
        ("float", FLOAT),
        ("hlo", module),
    ):
        assert list(accy.export(program, tmp_path / name, target="cuda").glob("*.ptx"))


def test_a_function_named_like_a_c_library_symbol_runs(tmp_path):
    """`@tan` is not the C library's `tan` in the compiled code (which the tan lowering
    calls): the lowered function has a symbol of its own (`accy_fn_tan`)."""
    text = """func.func @tan(%x: tensor<4xf32>) -> tensor<4xf32> {
  %r = accy.tan %x : tensor<4xf32>
  func.return %r : tensor<4xf32>
}"""
    x = np.linspace(-1, 1, 4, dtype=np.float32)
    (jit,) = accy.compile(text, threads=1).tan(x)
    (aot,) = accy.runtime.load(accy.export(text, tmp_path / "cpu", target="cpu")).tan(x)
    for result in (jit, aot):
        np.testing.assert_allclose(result, np.tan(x), rtol=1e-6)
    assert list(accy.export(text, tmp_path / "cuda", target="cuda").glob("*.ptx"))
