"""The transcendental functions of the scalar lowering (accy's own exp, tanh and logistic
polynomials; sine, cosine, tan, cbrt, log_plus_one and exponential_minus_one through
`math`), swept against correctly rounded values: within StableHLO's 3 ULP (`check.expect_close`) on every f32 of a sweep over all
bit patterns, on every f16 and bf16, and exact on the special values.

The scalar lowering (`passes/lower/scalar.py`) is shared by the CPU and CUDA kernels, so
the CPU run here checks the polynomials both targets execute (on CUDA `math.log` is
libdevice's `__nv_logf`, within 1 ulp by its documentation). The reference is numpy's
float64 function rounded once to the element type: correctly rounded except where the
float64 value lies within a float64 ulp of a rounding boundary of the narrow type (then
at most one ulp off, which the bound allows for).
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import accy
from accy.reference import ulp_difference

STEP = 4099
"""Every STEP-th f32 bit pattern (about a million values: every binade, both signs,
denormals included); odd, so consecutive sweeps do not share a stride with the binades."""

MAX_ULP = 3

FUNCTIONS = {
    "exponential": np.exp,
    "log": np.log,
    "tanh": np.tanh,
    "logistic": lambda x: 1.0 / (1.0 + np.exp(-x)),
    "sine": np.sin,
    "cosine": np.cos,
    "tan": np.tan,
    "cbrt": np.cbrt,
    "log_plus_one": np.log1p,
    "exponential_minus_one": np.expm1,
}

SPECIAL = np.array(
    [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, -1e-45, 88.72283, 88.72284, -87.33654,
     -103.27893, -103.97208, -104.0, 9.0, 9.02, -9.02, 0.625, -0.625, 0.62499994, 8.8, 1.0,
     -1.0, 1e-30, -1e-30, 3.4028235e38, -3.4028235e38, -89.0, -100.0, -np.inf],
    dtype=np.float32,
)  # fmt: skip
"""Around exp's overflow and underflow, tanh's saturation and its form boundary, and the
IEEE specials."""


def _sweep_f32() -> np.ndarray:
    patterns = np.arange(0, 2**32, STEP, dtype=np.uint64).astype(np.uint32)
    values = patterns.view(np.float32)
    return np.concatenate([values[np.isfinite(values)], SPECIAL])


def _all_of(dtype: np.dtype) -> np.ndarray:
    values = np.arange(2**16, dtype=np.uint32).astype(np.uint16).view(dtype)
    return values[np.isfinite(values.astype(np.float32))]


def _reference(name: str, x: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        return FUNCTIONS[name](x.astype(np.float64)).astype(x.dtype)


@pytest.fixture(scope="module")
def executables():
    """One program per element type computing every function, compiled once."""
    compiled = {}
    for element, values in (
        ("f32", _sweep_f32()),
        ("f16", _all_of(np.dtype(np.float16))),
        ("bf16", _all_of(np.dtype(ml_dtypes.bfloat16))),
    ):
        b = accy.Builder()
        t = b.tensor(element, [values.size])
        for name in FUNCTIONS:
            # (not `name` itself: the CPU target refuses a function named `tan`, the C
            # library function its tan lowering calls)
            fb = b.begin_function(f"{name}_sweep", [t], [t])
            fb.return_([getattr(fb, name)(fb.parameter(0))])
            fb.finish()
        compiled[element] = (accy.compile(b.finish(), target="cpu"), values)
    return compiled


@pytest.mark.parametrize("element", ["f32", "f16", "bf16"])
@pytest.mark.parametrize("name", list(FUNCTIONS))
def test_within_three_ulp(executables, element, name):
    executable, x = executables[element]
    (actual,) = executable[f"{name}_sweep"](x)
    expected = _reference(name, x)
    ulps = ulp_difference(actual, expected)
    worst = int(np.argmax(ulps))
    assert ulps[worst] <= MAX_ULP, (
        f"{name}({x[worst]!r}) = {actual[worst]!r}, correctly rounded {expected[worst]!r}: "
        f"{int(ulps[worst])} ULP; {int(np.count_nonzero(ulps > MAX_ULP))} of {x.size} over"
    )


INF, NAN = np.inf, np.nan
EXACT = {
    "exponential": [(0.0, 1.0), (-0.0, 1.0), (INF, INF), (-INF, 0.0), (NAN, NAN),
                    (88.72284, INF), (-104.0, 0.0)],
    "log": [(0.0, -INF), (-0.0, -INF), (INF, INF), (-INF, NAN), (NAN, NAN), (1.0, 0.0),
            (-1.0, NAN)],
    "tanh": [(0.0, 0.0), (-0.0, -0.0), (INF, 1.0), (-INF, -1.0), (NAN, NAN), (9.02, 1.0),
             (-9.02, -1.0), (3.4028235e38, 1.0), (-3.4028235e38, -1.0)],
    "logistic": [(0.0, 0.5), (-0.0, 0.5), (INF, 1.0), (-INF, 0.0), (NAN, NAN),
                 (3.4028235e38, 1.0), (-3.4028235e38, 0.0)],
    "sine": [(0.0, 0.0), (-0.0, -0.0), (INF, NAN), (-INF, NAN), (NAN, NAN)],
    "cosine": [(0.0, 1.0), (-0.0, 1.0), (INF, NAN), (-INF, NAN), (NAN, NAN)],
    "tan": [(0.0, 0.0), (-0.0, -0.0), (INF, NAN), (-INF, NAN), (NAN, NAN)],
    "cbrt": [(0.0, 0.0), (-0.0, -0.0), (INF, INF), (-INF, -INF), (NAN, NAN), (1.0, 1.0),
             (-1.0, -1.0)],
    "log_plus_one": [(0.0, 0.0), (-0.0, -0.0), (INF, INF), (-1.0, -INF), (NAN, NAN),
                     (1e-30, 1e-30)],
    "exponential_minus_one": [(0.0, 0.0), (-0.0, -0.0), (INF, INF), (-INF, -1.0),
                              (NAN, NAN), (1e-30, 1e-30)],
}  # fmt: skip
"""Exact results: IEEE specials, exp's overflow to inf and underflow to 0, tanh's and
logistic's saturation (signed zeros compared by sign too)."""


@pytest.mark.parametrize("name", list(FUNCTIONS))
def test_special_values_exactly(executables, name):
    executable, x = executables["f32"]
    (actual,) = executable[f"{name}_sweep"](x)
    for value, result in EXACT[name]:
        where = np.flatnonzero(x.view(np.uint32) == np.float32(value).view(np.uint32))
        assert where.size, value
        got = actual[where[0]]
        if np.isnan(result):
            assert np.isnan(got), (name, value, got)
        else:
            assert got == result and np.signbit(got) == np.signbit(result), (name, value, got)


def test_ulp_difference_counts_floats_between():
    a = np.array([1.0, -0.0, 1.0, np.nan, np.inf, 0.0], np.float32)
    b = np.array([np.nextafter(np.float32(1), np.float32(2)), 0.0, -1.0, np.nan, 1.0, 1e-45])
    b = b.astype(np.float32)
    assert ulp_difference(a, b).tolist() == [1, 0, 2 * 0x3F800000, 0, 2**64 - 1, 1]


def test_atan2_within_three_ulp_and_quadrants():
    """accy.atan2 (`math.atan2`) on a grid of both signs, zeros and infinities."""
    values = np.array(
        [0.0, -0.0, 1e-30, -1e-30, 0.5, -0.5, 1.0, -1.0, 3.0, -7.5, 1e30, -1e30, np.inf, -np.inf],
        np.float32,
    )
    y, x = (a.ravel() for a in np.meshgrid(values, values))
    b = accy.Builder()
    t = b.tensor("f32", [y.size])
    fb = b.begin_function("angle", [t, t], [t])
    fb.return_([fb.atan2(fb.parameter(0), fb.parameter(1))])
    fb.finish()
    (actual,) = accy.compile(b.finish(), target="cpu")(y, x)
    expected = np.arctan2(y.astype(np.float64), x.astype(np.float64)).astype(np.float32)
    assert int(ulp_difference(actual, expected).max()) <= MAX_ULP
    np.testing.assert_array_equal(np.signbit(actual), np.signbit(expected))


def test_atan2_of_constant_zeros_is_zero_or_pi():
    """MLIR folds `math.atan2` of two constant zeros to NaN; StableHLO (and C) say +-0, or
    +-pi where x is -0 (found by the program fuzzer: a zero splat's atan2)."""
    text = """func.func @f() -> (tensor<16xf32>, tensor<16xf32>, tensor<16xf64>) {
  %z = accy.constant dense<0.0> : tensor<16xf32>
  %n = accy.constant dense<-0.0> : tensor<16xf32>
  %w = accy.constant dense<-0.0> : tensor<16xf64>
  %a = accy.atan2 %z, %z : tensor<16xf32>
  %b = accy.atan2 %n, %n : tensor<16xf32>
  %c = accy.atan2 %w, %w : tensor<16xf64>
  func.return %a, %b, %c : tensor<16xf32>, tensor<16xf32>, tensor<16xf64>
}"""
    zeros, negative_zeros, wide = accy.compile(text, target="cpu")()
    np.testing.assert_array_equal(zeros, np.zeros(16, np.float32))
    assert not np.signbit(zeros).any()
    np.testing.assert_array_equal(negative_zeros, np.full(16, -np.pi, np.float32))
    np.testing.assert_array_equal(wide, np.full(16, -np.pi))
