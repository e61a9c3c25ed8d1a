"""The numpy reference interpreter (`accy.reference.run`) against numpy written here.

Expected values are computed independently in each test (float64 math rounded to the
element type, Python integers wrapped to the width, explicit loops), never with the
interpreter's helpers.
"""

from __future__ import annotations

import math
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from accy.diagnostics import AccyError, AccyInputError, AccyTypeError
from accy.reference import run
from accy.source import parse

BF16 = np.dtype(ml_dtypes.bfloat16)
DTYPES = {
    "f32": np.dtype(np.float32),
    "f16": np.dtype(np.float16),
    "bf16": BF16,
    "i1": np.dtype(np.bool_),
    "i32": np.dtype(np.int32),
    "i64": np.dtype(np.int64),
}
FLOATS = ["f32", "f16", "bf16"]
INTS = ["i32", "i64"]
BITS = {"i32": 32, "i64": 64}
# One unit in the last place, relative: tolerances for math that is not correctly rounded.
RTOL = {"f32": 4e-6, "f16": 2e-3, "bf16": 1.6e-2}


# ---------------------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------------------


def tensor(shape, element: str) -> str:
    dims = "".join(("?" if d is None else str(d)) + "x" for d in shape)
    return f"tensor<{dims}{element}>"


def evaluate(text: str, *arrays, name: str = "f"):
    return run(parse(text), name, *arrays)


def single(text: str, *arrays):
    (out,) = evaluate(text, *arrays)
    return out


def assert_same(out: np.ndarray, expected: np.ndarray) -> None:
    """Same dtype, shape and values (NaN equals NaN)."""
    expected = np.asarray(expected)
    assert isinstance(out, np.ndarray)
    assert out.dtype == expected.dtype, (out.dtype, expected.dtype)
    assert out.shape == expected.shape, (out.shape, expected.shape)
    if out.dtype in (BF16, np.float16, np.float32):
        np.testing.assert_array_equal(out.astype(np.float64), expected.astype(np.float64))
    else:
        np.testing.assert_array_equal(out, expected)


def assert_close(out: np.ndarray, expected: np.ndarray, element: str) -> None:
    expected = np.asarray(expected)
    assert out.dtype == expected.dtype and out.shape == expected.shape
    np.testing.assert_allclose(
        out.astype(np.float64), expected.astype(np.float64), rtol=RTOL[element], atol=1e-30
    )


def wrap(value: int, bits: int) -> int:
    value &= (1 << bits) - 1
    return value - (1 << bits) if value >> (bits - 1) else value


def int_map(fn, element: str, *arrays: np.ndarray) -> np.ndarray:
    """`fn` on Python ints element by element, wrapped to the width of `element`."""
    flat = [fn(*(int(v) for v in values)) for values in zip(*(a.ravel() for a in arrays))]
    bits = BITS[element]
    return np.array([wrap(v, bits) for v in flat], DTYPES[element]).reshape(arrays[0].shape)


def float_map(fn, element: str, *arrays: np.ndarray) -> np.ndarray:
    """`fn` on Python floats (float64) element by element, rounded to `element`."""
    flat = [fn(*(float(v) for v in values)) for values in zip(*(a.ravel() for a in arrays))]
    return np.array(flat, np.float64).astype(DTYPES[element]).reshape(arrays[0].shape)


def random_array(rng, shape, element: str, low=-4.0, high=4.0) -> np.ndarray:
    dtype = DTYPES[element]
    if element == "i1":
        return rng.integers(0, 2, size=shape).astype(bool)
    if element in INTS:
        return rng.integers(int(low) * 10, int(high) * 10 + 1, size=shape).astype(dtype)
    return rng.uniform(low, high, size=shape).astype(dtype)


def unary_program(op: str, ty: str) -> str:
    return f"""
func.func @f(%x: {ty}) -> {ty} {{
  %r = accy.{op} %x : {ty}
  func.return %r : {ty}
}}"""


def binary_program(op: str, ty: str) -> str:
    return f"""
func.func @f(%a: {ty}, %b: {ty}) -> {ty} {{
  %r = accy.{op} %a, %b : {ty}
  func.return %r : {ty}
}}"""


# ---------------------------------------------------------------------------------------
# Elementwise binary ops
# ---------------------------------------------------------------------------------------

FLOAT_BINARY = {
    "add": lambda a, b: a + b,
    "subtract": lambda a, b: a - b,
    "multiply": lambda a, b: a * b,
    "divide": lambda a, b: a / b,
    "maximum": max,
    "minimum": min,
}


@pytest.mark.parametrize("element", FLOATS)
@pytest.mark.parametrize("op", sorted(FLOAT_BINARY))
def test_float_binary_is_correctly_rounded(op, element):
    rng = np.random.default_rng(1)
    a = random_array(rng, (3, 5), element)
    b = random_array(rng, (3, 5), element)
    b[b == 0] = 1
    out = single(binary_program(op, tensor((3, 5), element)), a, b)
    assert_same(out, float_map(FLOAT_BINARY[op], element, a, b))


@pytest.mark.parametrize("element", FLOATS)
def test_float_power(element):
    rng = np.random.default_rng(2)
    a = random_array(rng, (7,), element, 0.1, 3.0)
    b = random_array(rng, (7,), element, -2.0, 2.0)
    out = single(binary_program("power", tensor((7,), element)), a, b)
    assert_close(out, float_map(math.pow, element, a, b), element)


def test_float_division_by_zero_and_nan_follow_ieee():
    a = np.array([1.0, -1.0, 0.0, np.nan], np.float32)
    b = np.zeros(4, np.float32)
    out = single(binary_program("divide", tensor((4,), "f32")), a, b)
    assert_same(out, np.array([np.inf, -np.inf, np.nan, np.nan], np.float32))
    out = single(binary_program("maximum", tensor((4,), "f32")), a, b)
    assert_same(out, np.array([1.0, 0.0, 0.0, np.nan], np.float32))


def trunc_div(a: int, b: int) -> int:
    quotient = abs(a) // abs(b)
    return quotient if (a < 0) == (b < 0) else -quotient


INT_BINARY = {
    "add": lambda a, b: a + b,
    "subtract": lambda a, b: a - b,
    "multiply": lambda a, b: a * b,
    "divide": trunc_div,
    "maximum": max,
    "minimum": min,
}


@pytest.mark.parametrize("element", INTS)
@pytest.mark.parametrize("op", sorted(INT_BINARY))
def test_int_binary(op, element):
    rng = np.random.default_rng(3)
    a = random_array(rng, (4, 6), element)
    b = random_array(rng, (4, 6), element)
    b[b == 0] = -3
    out = single(binary_program(op, tensor((4, 6), element)), a, b)
    assert_same(out, int_map(INT_BINARY[op], element, a, b))


@pytest.mark.parametrize("element", INTS)
def test_int_arithmetic_wraps(element):
    info = np.iinfo(DTYPES[element])
    a = np.array([info.max, info.min, info.max, 3], DTYPES[element])
    b = np.array([1, -1, info.max, info.max], DTYPES[element])
    for op in ("add", "subtract", "multiply"):
        out = single(binary_program(op, tensor((4,), element)), a, b)
        assert_same(out, int_map(INT_BINARY[op], element, a, b))


def test_int_divide_truncates_toward_zero():
    a = np.array([7, -7, 7, -7, 1, -1, 0, 6], np.int32)
    b = np.array([2, 2, -2, -2, 3, 3, -5, -3], np.int32)
    out = single(binary_program("divide", tensor((8,), "i32")), a, b)
    assert_same(out, np.array([3, -3, -3, 3, 0, 0, 0, -2], np.int32))


def test_int_divide_by_zero_and_overflow():
    """XLA's convention: x / 0 = -1, MIN / -1 = MIN."""
    low = np.iinfo(np.int64).min
    a = np.array([5, -5, 0, low], np.int64)
    b = np.array([0, 0, 0, -1], np.int64)
    out = single(binary_program("divide", tensor((4,), "i64")), a, b)
    assert_same(out, np.array([-1, -1, -1, low], np.int64))


@pytest.mark.parametrize("element", INTS)
def test_int_power_is_repeated_multiply(element):
    a = np.array([2, -3, 0, 0, 5, -1, 7, 3], DTYPES[element])
    b = np.array([10, 3, 0, 4, 1, 7, 0, 45], DTYPES[element])
    out = single(binary_program("power", tensor((8,), element)), a, b)
    assert_same(out, int_map(pow, element, a, b))


def test_int_power_negative_exponent():
    a = np.array([2, 1, -1, -1, 0, -5], np.int32)
    b = np.array([-1, -3, -3, -2, -1, -2], np.int32)
    out = single(binary_program("power", tensor((6,), "i32")), a, b)
    assert_same(out, np.array([0, 1, -1, 1, 0, 0], np.int32))


# ---------------------------------------------------------------------------------------
# Elementwise unary ops
# ---------------------------------------------------------------------------------------


def _rsqrt(x: float) -> float:
    return 1.0 / math.sqrt(x)


def _logistic(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x))


FLOAT_UNARY = {
    # op: (python function, input range)
    "exponential": (math.exp, (-3.0, 3.0)),
    "log": (math.log, (0.05, 8.0)),
    "tanh": (math.tanh, (-3.0, 3.0)),
    "sqrt": (math.sqrt, (0.0, 9.0)),
    "rsqrt": (_rsqrt, (0.05, 9.0)),
    "logistic": (_logistic, (-6.0, 6.0)),
    "negate": (lambda x: -x, (-4.0, 4.0)),
    "abs": (abs, (-4.0, 4.0)),
}


@pytest.mark.parametrize("element", FLOATS)
@pytest.mark.parametrize("op", sorted(FLOAT_UNARY))
def test_float_unary(op, element):
    fn, (low, high) = FLOAT_UNARY[op]
    x = random_array(np.random.default_rng(4), (2, 9), element, low, high)
    out = single(unary_program(op, tensor((2, 9), element)), x)
    expected = float_map(fn, element, x)
    if op in ("negate", "abs", "sqrt"):
        assert_same(out, expected)  # exact (sqrt is correctly rounded)
    else:
        assert_close(out, expected, element)


def test_float_unary_edges():
    x = np.array([0.0, -1.0, np.inf, -np.inf, 200.0, -200.0], np.float32)
    ty = tensor((6,), "f32")
    with np.errstate(all="ignore"):
        assert_same(
            single(unary_program("log", ty), x)[:4],
            np.array([-np.inf, np.nan, np.inf, np.nan], np.float32),
        )
        assert_same(
            single(unary_program("rsqrt", ty), x)[:3], np.array([np.inf, np.nan, 0.0], np.float32)
        )
        assert_same(
            single(unary_program("logistic", ty), x)[2:], np.array([1.0, 0.0, 1.0, 0.0], np.float32)
        )
        assert_same(
            single(unary_program("exponential", ty), x)[4:], np.array([np.inf, 0.0], np.float32)
        )


@pytest.mark.parametrize("element", INTS)
@pytest.mark.parametrize("op", ["negate", "abs"])
def test_int_unary_wraps(op, element):
    info = np.iinfo(DTYPES[element])
    x = np.array([3, -3, 0, info.max, info.min], DTYPES[element])
    fn = (lambda v: -v) if op == "negate" else abs
    out = single(unary_program(op, tensor((5,), element)), x)
    assert_same(out, int_map(fn, element, x))
    assert out[-1] == info.min


# ---------------------------------------------------------------------------------------
# compare, select, convert
# ---------------------------------------------------------------------------------------

DIRECTIONS = {
    "EQ": lambda a, b: a == b,
    "NE": lambda a, b: a != b,
    "LT": lambda a, b: a < b,
    "LE": lambda a, b: a <= b,
    "GT": lambda a, b: a > b,
    "GE": lambda a, b: a >= b,
}


def compare_program(direction: str, shape, element: str) -> str:
    ty, bool_ty = tensor(shape, element), tensor(shape, "i1")
    return f"""
func.func @f(%a: {ty}, %b: {ty}) -> {bool_ty} {{
  %r = accy.compare {direction}, %a, %b : ({ty}, {ty}) -> {bool_ty}
  func.return %r : {bool_ty}
}}"""


@pytest.mark.parametrize("element", ["f32", "bf16", "i32", "i64", "i1"])
@pytest.mark.parametrize("direction", sorted(DIRECTIONS))
def test_compare(direction, element):
    rng = np.random.default_rng(5)
    a = random_array(rng, (12,), element, -2, 2)
    b = random_array(rng, (12,), element, -2, 2)
    b[::3] = a[::3]  # some equal pairs
    out = single(compare_program(direction, (12,), element), a, b)
    fn = DIRECTIONS[direction]
    expected = np.array([fn(x, y) for x, y in zip(a.tolist(), b.tolist())], bool)
    assert_same(out, expected)


def test_compare_nan():
    a = np.array([np.nan, 1.0, np.nan], np.float32)
    b = np.array([np.nan, np.nan, 1.0], np.float32)
    expected = {"EQ": [0, 0, 0], "NE": [1, 1, 1], "LT": [0, 0, 0], "GE": [0, 0, 0]}
    for direction, values in expected.items():
        out = single(compare_program(direction, (3,), "f32"), a, b)
        assert_same(out, np.array(values, bool))


@pytest.mark.parametrize("element", ["f32", "bf16", "i64", "i1"])
def test_select(element):
    rng = np.random.default_rng(6)
    pred = random_array(rng, (3, 4), "i1")
    a = random_array(rng, (3, 4), element)
    b = random_array(rng, (3, 4), element)
    ty, pty = tensor((3, 4), element), tensor((3, 4), "i1")
    text = f"""
func.func @f(%p: {pty}, %a: {ty}, %b: {ty}) -> {ty} {{
  %r = accy.select %p, %a, %b : {pty}, {ty}
  func.return %r : {ty}
}}"""
    out = single(text, pred, a, b)
    expected = np.array(
        [x if p else y for p, x, y in zip(pred.ravel(), a.ravel(), b.ravel())], a.dtype
    ).reshape(3, 4)
    assert_same(out, expected)


def convert_program(shape, source: str, target: str) -> str:
    src, dst = tensor(shape, source), tensor(shape, target)
    return f"""
func.func @f(%x: {src}) -> {dst} {{
  %r = accy.convert %x : ({src}) -> {dst}
  func.return %r : {dst}
}}"""


CONVERSIONS = [
    # (source, target, input values, expected values)
    ("f32", "i32", [2.7, -2.7, 0.5, -0.5, 3.0, -1e-3], [2, -2, 0, 0, 3, 0]),
    ("f32", "i64", [1e10, -1e10, 7.99], [10000000000, -10000000000, 7]),
    ("bf16", "i32", [1.5, -3.75, 256.0], [1, -3, 256]),
    ("f16", "i64", [-1.5, 2.5, 1000.0], [-1, 2, 1000]),
    ("f32", "i1", [0.0, -0.0, 0.25, -3.0, np.nan], [False, False, True, True, True]),
    ("i32", "i1", [0, 1, -7, 2], [False, True, True, True]),
    ("i64", "i1", [0, 1 << 40], [False, True]),
    ("i1", "f32", [True, False], [1.0, 0.0]),
    ("i1", "i32", [True, False], [1, 0]),
    ("i1", "bf16", [True, False], [1.0, 0.0]),
    ("i32", "f32", [-3, 16777217, 5], [-3.0, 16777216.0, 5.0]),
    ("i32", "i64", [-3, 2147483647], [-3, 2147483647]),
    ("i64", "i32", [-3, (1 << 32) + 5, (1 << 31)], [-3, 5, -(1 << 31)]),
    ("f32", "f16", [1.0, 65504.0, 1e6, 1.0009765625], [1.0, 65504.0, np.inf, 1.0009765625]),
    ("f32", "bf16", [1.0, 1.00390625, 1.01171875, -2.5], [1.0, 1.0, 1.015625, -2.5]),
    ("bf16", "f32", [1.5, -0.0078125], [1.5, -0.0078125]),
    ("f16", "bf16", [1.0009765625, 3.0], [1.0, 3.0]),
    ("bf16", "f16", [1.5, 3.0], [1.5, 3.0]),
    ("f32", "f32", [1.25, -2.0], [1.25, -2.0]),
]


@pytest.mark.parametrize("source, target, values, expected", CONVERSIONS)
def test_convert(source, target, values, expected):
    x = np.array(values, np.float64 if source in FLOATS else object).astype(DTYPES[source])
    out = single(convert_program((len(values),), source, target), x)
    assert_same(out, np.array(expected).astype(DTYPES[target]))


def test_convert_float_to_int_saturates():
    """Out of range saturates and NaN becomes 0 (XLA's choice; StableHLO leaves it open)."""
    x = np.array([3e9, -3e9, np.inf, -np.inf, np.nan], np.float32)
    out = single(convert_program((5,), "f32", "i32"), x)
    assert_same(out, np.array([2**31 - 1, -(2**31), 2**31 - 1, -(2**31), 0], np.int32))
    out = single(convert_program((5,), "f32", "i64"), x * np.float32(1e10))
    assert_same(out, np.array([2**63 - 1, -(2**63), 2**63 - 1, -(2**63), 0], np.int64))


# ---------------------------------------------------------------------------------------
# constant
# ---------------------------------------------------------------------------------------

CONSTANTS = [
    ("dense<[1.5, -2.0, 0.25]>", (3,), "f32", [1.5, -2.0, 0.25]),
    ("dense<[[1.0, 2.0], [3.0, 4.0]]>", (2, 2), "f32", [[1.0, 2.0], [3.0, 4.0]]),
    ("dense<7.0>", (2, 3), "f32", [[7.0] * 3] * 2),
    ("dense<[1.5, -2.25]>", (2,), "f16", [1.5, -2.25]),
    ("dense<[1.5, -2.25, 3.0e+38]>", (3,), "bf16", [1.5, -2.25, 3.0e38]),
    ("dense<1.5>", (2,), "bf16", [1.5, 1.5]),
    ("dense<[1, -2, 2147483647]>", (3,), "i32", [1, -2, 2147483647]),
    ("dense<-9000000000>", (2, 2), "i64", [[-9000000000] * 2] * 2),
    ("dense<[true, false, true]>", (3,), "i1", [True, False, True]),
    ("dense<[[true], [false]]>", (2, 1), "i1", [[True], [False]]),
    ("dense<true>", (4,), "i1", [True] * 4),
    ("dense<-5>", (), "i32", -5),
    ("dense<2.5>", (), "f32", 2.5),
]


@pytest.mark.parametrize("value, shape, element, expected", CONSTANTS)
def test_constant(value, shape, element, expected):
    ty = tensor(shape, element)
    text = f"""
func.func @f() -> {ty} {{
  %c = accy.constant {value} : {ty}
  func.return %c : {ty}
}}"""
    out = single(text)
    assert_same(
        out, np.array(expected, np.float64 if element in FLOATS else None).astype(DTYPES[element])
    )
    assert out.flags.writeable and out.flags.c_contiguous


# ---------------------------------------------------------------------------------------
# broadcast_in_dim, reshape, transpose
# ---------------------------------------------------------------------------------------


def broadcast_program(src_shape, dst_shape, dims, element) -> str:
    src, dst = tensor(src_shape, element), tensor(dst_shape, element)
    return f"""
func.func @f(%x: {src}) -> {dst} {{
  %r = accy.broadcast_in_dim %x, dims = {list(dims)} : ({src}) -> {dst}
  func.return %r : {dst}
}}"""


def broadcast_expected(x, dst_shape, dims):
    out = np.empty(dst_shape, x.dtype)
    for index in np.ndindex(*dst_shape):
        source = tuple(0 if x.shape[i] == 1 else index[dims[i]] for i in range(x.ndim))
        out[index] = x[source]
    return out


BROADCASTS = [
    ((3,), (2, 3), [1]),
    ((2,), (2, 3), [0]),
    ((1, 3), (4, 3), [0, 1]),  # size-1 dim stretches
    ((1,), (2, 3), [1]),
    ((2, 1), (2, 5, 3), [0, 2]),
    ((), (2, 3), []),
    ((3, 2), (2, 3), [1, 0]),  # dims out of order: a transpose
    ((4,), (4,), [0]),
]


@pytest.mark.parametrize("element", ["f32", "bf16", "i32", "i1"])
@pytest.mark.parametrize("src_shape, dst_shape, dims", BROADCASTS)
def test_broadcast_in_dim(src_shape, dst_shape, dims, element):
    x = random_array(np.random.default_rng(7), src_shape, element)
    out = single(broadcast_program(src_shape, dst_shape, dims, element), x)
    assert_same(out, broadcast_expected(x, dst_shape, dims))


def test_broadcast_in_dim_dynamic():
    x = np.arange(5, dtype=np.float32)
    out = single(broadcast_program((None,), (2, None), [1], "f32"), x)
    assert_same(out, np.stack([x, x]))


def reshape_program(src_shape, dst_shape, element) -> str:
    src, dst = tensor(src_shape, element), tensor(dst_shape, element)
    return f"""
func.func @f(%x: {src}) -> {dst} {{
  %r = accy.reshape %x : ({src}) -> {dst}
  func.return %r : {dst}
}}"""


@pytest.mark.parametrize("element", ["f32", "i64", "f16"])
@pytest.mark.parametrize(
    "src_shape, dst_shape",
    [((2, 3), (6,)), ((6,), (3, 2)), ((2, 3, 4), (4, 6)), ((1,), ()), ((), (1, 1))],
)
def test_reshape_is_row_major(src_shape, dst_shape, element):
    x = random_array(np.random.default_rng(8), src_shape, element)
    out = single(reshape_program(src_shape, dst_shape, element), x)
    flat = x.ravel().tolist()  # row-major order
    assert_same(out, np.array(flat, x.dtype).reshape(dst_shape))


def test_reshape_dynamic():
    x = np.arange(15, dtype=np.float32).reshape(5, 3)
    assert_same(single(reshape_program((None, 3), (None,), "f32"), x), x.ravel())
    assert_same(
        single(reshape_program((None, 3), (3, None), "f32"), x),
        np.arange(15, dtype=np.float32).reshape(3, 5),
    )


def transpose_program(src_shape, perm, element) -> str:
    dst_shape = [src_shape[p] for p in perm]
    src, dst = tensor(src_shape, element), tensor(dst_shape, element)
    return f"""
func.func @f(%x: {src}) -> {dst} {{
  %r = accy.transpose %x, dims = {list(perm)} : ({src}) -> {dst}
  func.return %r : {dst}
}}"""


@pytest.mark.parametrize("element", ["f32", "i64", "bf16"])
@pytest.mark.parametrize(
    "src_shape, perm", [((2, 3), [1, 0]), ((2, 3, 4), [2, 0, 1]), ((2, 3, 4), [0, 1, 2])]
)
def test_transpose(src_shape, perm, element):
    x = random_array(np.random.default_rng(9), src_shape, element)
    out = single(transpose_program(src_shape, perm, element), x)
    expected = np.empty([src_shape[p] for p in perm], x.dtype)
    for index in np.ndindex(*expected.shape):
        source = [0] * x.ndim
        for i, p in enumerate(perm):
            source[p] = index[i]  # result dim i is operand dim perm[i]
        expected[index] = x[tuple(source)]
    assert_same(out, expected)
    assert out.flags.c_contiguous


# ---------------------------------------------------------------------------------------
# reduce, dot_general, scan
# ---------------------------------------------------------------------------------------

COMBINE = {
    "add": lambda a, b: a + b,
    "mul": lambda a, b: a * b,
    "max": max,
    "min": min,
}


def reduce_program(kind, src_shape, dims, element) -> str:
    dst_shape = [s for d, s in enumerate(src_shape) if d not in dims]
    src, dst = tensor(src_shape, element), tensor(dst_shape, element)
    return f"""
func.func @f(%x: {src}) -> {dst} {{
  %r = accy.reduce {kind} %x, dims = {list(dims)} : ({src}) -> {dst}
  func.return %r : {dst}
}}"""


def reduce_expected(x, kind, dims, element):
    """Fold with Python numbers (float64 or exact ints) and round once."""
    kept = [d for d in range(x.ndim) if d not in dims]
    out_shape = [x.shape[d] for d in kept]
    values = {}
    for index in np.ndindex(*x.shape):
        key = tuple(index[d] for d in kept)
        v = x[index].item() if element in INTS + ["i1"] else float(x[index])
        values[key] = v if key not in values else COMBINE[kind](values[key], v)
    if element in INTS:
        flat = [wrap(values[k], BITS[element]) for k in np.ndindex(*out_shape)]
    else:
        flat = [values[k] for k in np.ndindex(*out_shape)]
    return (
        np.array(flat, np.float64 if element in FLOATS else None)
        .astype(DTYPES[element])
        .reshape(out_shape)
    )


@pytest.mark.parametrize("element", ["f32", "bf16", "i32", "i64"])
@pytest.mark.parametrize("kind", sorted(COMBINE))
@pytest.mark.parametrize("dims", [[1], [0], [0, 2], [2, 0, 1]])
def test_reduce(kind, dims, element):
    shape = (3, 4, 2)
    low, high = (0.5, 1.5) if kind == "mul" else (-4.0, 4.0)
    x = random_array(np.random.default_rng(10), shape, element, low, high)
    out = single(reduce_program(kind, shape, dims, element), x)
    expected = reduce_expected(x, kind, dims, element)
    if kind in ("add", "mul") and element in FLOATS:
        assert_close(out, expected, element)
    else:
        assert_same(out, expected)


def test_reduce_i1_and_wrapping():
    x = np.array([[True, False], [False, False]])
    for kind, expected in [
        ("add", [True, False]),
        ("max", [True, False]),
        ("mul", [False, False]),
        ("min", [False, False]),
    ]:
        out = single(reduce_program(kind, (2, 2), [1], "i1"), x)
        assert_same(out, np.array(expected))
    big = np.full((4,), 2**30, np.int32)
    assert_same(single(reduce_program("add", (4,), [0], "i32"), big), np.int32(0))


def test_reduce_empty_dim_gives_the_identity():
    x = np.zeros((0, 3), np.float32)
    for kind, value in [("add", 0.0), ("mul", 1.0), ("max", -np.inf), ("min", np.inf)]:
        out = single(reduce_program(kind, (0, 3), [0], "f32"), x)
        assert_same(out, np.full((3,), value, np.float32))


def dot_program(lhs_shape, rhs_shape, batching, contracting, element) -> str:
    lb, rb = batching
    lc, rc = contracting
    lfree = [d for d in range(len(lhs_shape)) if d not in lb + lc]
    rfree = [d for d in range(len(rhs_shape)) if d not in rb + rc]
    out_shape = (
        [lhs_shape[d] for d in lb] + [lhs_shape[d] for d in lfree] + [rhs_shape[d] for d in rfree]
    )
    lt, rt, ot = (tensor(s, element) for s in (lhs_shape, rhs_shape, out_shape))
    return f"""
func.func @f(%l: {lt}, %r: {rt}) -> {ot} {{
  %0 = accy.dot_general %l, %r, batching_dims = {lb} x {rb}, contracting_dims = {lc} x {rc} : ({lt}, {rt}) -> {ot}
  func.return %0 : {ot}
}}"""


DOTS = [
    # (lhs shape, rhs shape, batching, contracting, einsum written by hand)
    ((2, 3), (3, 4), ([], []), ([1], [0]), "mk,kn->mn"),  # plain matmul
    ((4, 2, 3), (4, 3, 5), ([0], [0]), ([2], [1]), "bmk,bkn->bmn"),  # batched
    ((3, 2), (3, 4), ([], []), ([0], [0]), "km,kn->mn"),  # contracting over dim 0
    ((5,), (5,), ([], []), ([0], [0]), "k,k->"),  # vector dot
    ((2, 3), (4,), ([], []), ([], []), "ab,c->abc"),  # outer product
    ((3, 4, 2), (2, 5, 3), ([2], [0]), ([0], [2]), "kmb,bnk->bmn"),  # batch not leading
    ((2, 3, 4), (4, 3, 5), ([], []), ([1, 2], [1, 0]), "mkj,jkn->mn"),  # two contracting
]


@pytest.mark.parametrize("element", ["f32", "f16", "bf16", "i32", "i64"])
@pytest.mark.parametrize("lhs_shape, rhs_shape, batching, contracting, spec", DOTS)
def test_dot_general(lhs_shape, rhs_shape, batching, contracting, spec, element):
    rng = np.random.default_rng(11)
    lhs = random_array(rng, lhs_shape, element)
    rhs = random_array(rng, rhs_shape, element)
    text = dot_program(lhs_shape, rhs_shape, list(batching), list(contracting), element)
    out = single(text, lhs, rhs)
    if element in INTS:
        exact = np.einsum(spec, lhs.astype(object), rhs.astype(object))
        expected = np.vectorize(lambda v: wrap(int(v), BITS[element]), otypes=[object])(
            np.asarray(exact, object)
        ).astype(DTYPES[element])
        assert_same(out, expected)
    else:
        expected = np.einsum(spec, lhs.astype(np.float64), rhs.astype(np.float64))
        assert_close(out, np.asarray(expected).astype(DTYPES[element]), element)


def test_dot_general_f16_accumulates_wider():
    # 4096 products of 1 * 1: a float16 running sum would stop at 2048.
    lhs = np.ones((1, 4096), np.float16)
    rhs = np.ones((4096, 1), np.float16)
    out = single(dot_program((1, 4096), (4096, 1), [[], []], [[1], [0]], "f16"), lhs, rhs)
    assert_same(out, np.array([[4096.0]], np.float16))


def scan_program(kind, shape, dim, element) -> str:
    ty = tensor(shape, element)
    return f"""
func.func @f(%x: {ty}, %s: {ty}) -> {ty} {{
  %r = accy.scan {kind} %x, %s, dim = {dim} : {ty}
  func.return %r : {ty}
}}"""


def scan_expected(x, kind, dim, element):
    out = np.empty(x.shape, x.dtype)
    for index in np.ndindex(*x.shape):
        running = None
        for i in range(index[dim] + 1):
            source = index[:dim] + (i,) + index[dim + 1 :]
            v = x[source].item() if element in INTS else float(x[source])
            running = v if running is None else COMBINE[kind](running, v)
        if element in INTS:
            running = wrap(running, BITS[element])
        out[index] = np.array(running, np.float64 if element in FLOATS else None).astype(x.dtype)
    return out


@pytest.mark.parametrize("element", ["f32", "bf16", "i32", "i64"])
@pytest.mark.parametrize("kind", sorted(COMBINE))
@pytest.mark.parametrize("dim", [0, 1])
def test_scan(kind, dim, element):
    shape = (4, 5)
    low, high = (0.5, 1.5) if kind == "mul" else (-4.0, 4.0)
    rng = np.random.default_rng(12)
    x = random_array(rng, shape, element, low, high)
    scratch = random_array(rng, shape, element)  # its contents do not matter
    out = single(scan_program(kind, shape, dim, element), x, scratch)
    expected = scan_expected(x, kind, dim, element)
    if kind in ("add", "mul") and element in FLOATS:
        assert_close(out, expected, element)
    else:
        assert_same(out, expected)


def test_scan_does_not_touch_its_operands():
    x = np.arange(6, dtype=np.int32).reshape(2, 3)
    scratch = np.full((2, 3), 99, np.int32)
    out = single(scan_program("add", (2, 3), 1, "i32"), x, scratch)
    assert_same(out, np.array([[0, 1, 3], [3, 7, 12]], np.int32))
    assert (scratch == 99).all() and (x == np.arange(6).reshape(2, 3)).all()


# ---------------------------------------------------------------------------------------
# iterate / yield
# ---------------------------------------------------------------------------------------


def iterate_program(trip_count: int) -> str:
    ty = tensor((4,), "f32")
    return f"""
func.func @f(%a: {ty}, %b: {ty}) -> ({ty}, {ty}) {{
  %r:2 = accy.iterate {trip_count} iter_args(%p = %a, %q = %b) : {ty}, {ty} {{
    %p2 = accy.add %p, %q : {ty}
    %q2 = accy.multiply %q, %b : {ty}
    accy.yield %p2, %q2 : {ty}, {ty}
  }}
  func.return %r#0, %r#1 : {ty}, {ty}
}}"""


@pytest.mark.parametrize("trip_count", [0, 1, 5])
def test_iterate(trip_count):
    a = np.array([1.0, -2.0, 0.5, 3.0], np.float32)
    b = np.array([2.0, 0.5, -1.0, 1.0], np.float32)
    p, q = a.astype(np.float64), b.astype(np.float64)
    for _ in range(trip_count):
        p, q = p + q, q * b
    out_p, out_q = evaluate(iterate_program(trip_count), a, b)
    assert_same(out_p, p.astype(np.float32))
    assert_same(out_q, q.astype(np.float32))
    if trip_count == 0:  # the inits, as fresh arrays
        assert not np.shares_memory(out_p, a) and not np.shares_memory(out_q, b)


def test_iterate_nested_i32():
    ty = tensor((2,), "i32")
    text = f"""
func.func @f(%x: {ty}) -> {ty} {{
  %two = accy.constant dense<2> : {ty}
  %r = accy.iterate 3 iter_args(%p = %x) : {ty} {{
    %inner = accy.iterate 2 iter_args(%s = %p) : {ty} {{
      %t = accy.multiply %s, %two : {ty}
      accy.yield %t : {ty}
    }}
    %u = accy.add %inner, %x : {ty}
    accy.yield %u : {ty}
  }}
  func.return %r : {ty}
}}"""
    x = np.array([1, -3], np.int32)
    expected = [int(v) for v in x]
    for _ in range(3):
        expected = [4 * e + int(v) for e, v in zip(expected, x)]
    assert_same(single(text, x), np.array(expected, np.int32))


# ---------------------------------------------------------------------------------------
# Dynamic dims
# ---------------------------------------------------------------------------------------

DYNAMIC = """
func.func @f(%x: tensor<?x3xf32>, %y: tensor<?x3xf32>) -> (tensor<?xf32>, tensor<?x3xf32>) {
  %s = accy.add %x, %y : tensor<?x3xf32>
  %r = accy.reduce add %s, dims = [1] : (tensor<?x3xf32>) -> tensor<?xf32>
  %e = accy.exponential %s : tensor<?x3xf32>
  func.return %r, %e : tensor<?xf32>, tensor<?x3xf32>
}"""


@pytest.mark.parametrize("rows", [0, 1, 5])
def test_dynamic_leading_dim(rows):
    rng = np.random.default_rng(13)
    x = rng.standard_normal((rows, 3)).astype(np.float32)
    y = rng.standard_normal((rows, 3)).astype(np.float32)
    total, exp = evaluate(DYNAMIC, x, y)
    s = x.astype(np.float64) + y.astype(np.float64)
    assert total.shape == (rows,) and exp.shape == (rows, 3)
    assert_close(total, s.sum(axis=1).astype(np.float32), "f32")
    assert_close(exp, np.exp(s.astype(np.float32).astype(np.float64)).astype(np.float32), "f32")


def test_dynamic_dims_that_disagree_at_run_time():
    x = np.zeros((4, 3), np.float32)
    y = np.zeros((1, 3), np.float32)  # numpy would broadcast; accy must not
    with pytest.raises(AccyInputError) as info:
        evaluate(DYNAMIC, x, y)
    assert "'accy.add' op operand shapes (4, 3) and (1, 3) differ" in info.value.message
    assert str(info.value).startswith("<input>:3:")  # points at the op


# ---------------------------------------------------------------------------------------
# Seed programs
# ---------------------------------------------------------------------------------------

SEEDS = """
func.func @memory_add4(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %0 = accy.add %a, %b : tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

func.func @memory_const_add(%x: tensor<4xi32>) -> tensor<4xi32> {
  %c = accy.constant dense<[1, 2, 3, 4]> : tensor<4xi32>
  %0 = accy.add %x, %c : tensor<4xi32>
  func.return %0 : tensor<4xi32>
}

func.func @backed_outputs(%x: tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>) {
  %c = accy.constant dense<[3.0, -4.0]> : tensor<2xf32>
  func.return %x, %c : tensor<2xf32>, tensor<2xf32>
}

func.func @memory_fused_add_mul(%a: tensor<4xf32>, %b: tensor<4xf32>, %c: tensor<4xf32>) -> tensor<4xf32> {
  %0 = accy.add %a, %b : tensor<4xf32>
  %1 = accy.multiply %0, %c : tensor<4xf32>
  func.return %1 : tensor<4xf32>
}
"""


@pytest.fixture(scope="module")
def seeds():
    return parse(SEEDS, filename="seeds.mlir")


def test_seed_memory_add4(seeds):
    a = np.array([1.0, 2.0, 3.0, 4.0], np.float32)
    b = np.array([0.5, -2.0, 10.0, 0.25], np.float32)
    (out,) = run(seeds, "memory_add4", a, b)
    assert_same(out, np.array([1.5, 0.0, 13.0, 4.25], np.float32))


def test_seed_memory_const_add(seeds):
    (out,) = run(seeds, "memory_const_add", np.array([10, -2, 0, 7], np.int32))
    assert_same(out, np.array([11, 0, 3, 11], np.int32))


def test_seed_backed_outputs(seeds):
    x = np.array([1.25, -8.0], np.float32)
    same, constant = run(seeds, "backed_outputs", x)
    assert_same(same, x)
    assert_same(constant, np.array([3.0, -4.0], np.float32))
    assert not np.shares_memory(same, x)  # a fresh array, not the input
    same[0] = 100.0
    assert x[0] == 1.25


def test_seed_memory_fused_add_mul(seeds):
    a = np.array([1.0, 2.0, 3.0, 4.0], np.float32)
    b = np.array([1.0, 1.0, -3.0, 0.5], np.float32)
    c = np.array([2.0, -1.0, 5.0, 4.0], np.float32)
    (out,) = run(seeds, "memory_fused_add_mul", a, b, c)
    assert_same(out, np.array([4.0, -3.0, 0.0, 18.0], np.float32))


def test_outputs_never_alias_inputs():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    text = """
func.func @f(%x: tensor<2x3xf32>) -> (tensor<3x2xf32>, tensor<6xf32>, tensor<2x3xf32>) {
  %t = accy.transpose %x, dims = [1, 0] : (tensor<2x3xf32>) -> tensor<3x2xf32>
  %r = accy.reshape %x : (tensor<2x3xf32>) -> tensor<6xf32>
  %b = accy.broadcast_in_dim %x, dims = [0, 1] : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %t, %r, %b : tensor<3x2xf32>, tensor<6xf32>, tensor<2x3xf32>
}"""
    outputs = evaluate(text, x)
    for out in outputs:
        assert not np.shares_memory(out, x)
        assert out.flags.writeable and out.flags.owndata


def test_every_accy_op_is_tested():
    """Every op of the dialect is exercised by name, here or (iota, concatenate, slice,
    which came with the StableHLO importer) in tests/stablehlo/test_new_ops.py, or
    (reverse, pad, dynamic_slice, dynamic_update_slice) in tests/lower/test_reverse_pad.py,
    or (gather, and, or, xor, not) in tests/lower/test_gather_bitwise.py, or (scatter) in
    tests/lower/test_scatter.py, or (fold, sort, floor, ceil) in tests/lower/test_fold_sort.py, or
    (remainder, the shifts, sign, popcnt, count_leading_zeros, the roundings, is_finite) in
    tests/lower/test_exact_elementwise.py, or (sine, cosine, tan, cbrt, log_plus_one,
    exponential_minus_one, atan2) in tests/lower/test_accuracy.py, or (bitcast_convert) in
    tests/stablehlo/test_expansions.py, or (convolution, reduce_window, select_and_scatter)
    in tests/lower/test_windows.py, or (while) in tests/lower/test_while.py.
    The planned form's ops on buffers (`accy.dialects.plan`) have no reference semantics:
    tests/plan."""
    from accy.dialects.dialect import Accy
    from accy.dialects.plan import PLAN_OPS

    tensor_ops = [op for op in Accy.operations if op not in PLAN_OPS]
    names = {op.name.removeprefix("accy.") for op in tensor_ops}
    assert len(names) == 66
    here = Path(__file__)
    source = "".join(
        path.read_text()
        for path in (
            here,
            here.parents[1] / "stablehlo" / "test_new_ops.py",
            here.parents[1] / "lower" / "test_reverse_pad.py",
            here.parents[1] / "lower" / "test_gather_bitwise.py",
            here.parents[1] / "lower" / "test_scatter.py",
            here.parents[1] / "lower" / "test_fold_sort.py",
            here.parents[1] / "lower" / "test_exact_elementwise.py",
            here.parents[1] / "lower" / "test_accuracy.py",
            here.parents[1] / "stablehlo" / "test_expansions.py",
            here.parents[1] / "lower" / "test_windows.py",
            here.parents[1] / "lower" / "test_while.py",
        )
    )
    missing = [n for n in names if f'"{n}"' not in source and f"accy.{n} " not in source]
    assert not missing


# ---------------------------------------------------------------------------------------
# Argument errors
# ---------------------------------------------------------------------------------------

SIGNATURE = """
func.func @f(%a: tensor<4x?xf32>, %b: tensor<2xbf16>) -> tensor<4x?xf32> {
  func.return %a : tensor<4x?xf32>
}

func.func @g(%x: tensor<i1>) -> tensor<i1> {
  func.return %x : tensor<i1>
}
"""


@pytest.fixture(scope="module")
def signature():
    return parse(SIGNATURE)


def good_args():
    return np.zeros((4, 3), np.float32), np.zeros((2,), ml_dtypes.bfloat16)


def input_error(module, name, *args) -> str:
    with pytest.raises(AccyInputError) as info:
        run(module, name, *args)
    return info.value.message


def test_good_arguments_run(signature):
    (out,) = run(signature, "f", *good_args())
    assert out.shape == (4, 3)
    (out,) = run(signature, "g", np.bool_(True))  # a numpy scalar is a rank-0 array
    assert_same(out, np.array(True))


def test_wrong_arity(signature):
    message = input_error(signature, "f", *good_args(), np.zeros(1, np.float32))
    assert message == "function @f takes 2 arguments, got 3"
    assert input_error(signature, "g") == "function @g takes 1 argument, got 0"


def test_unknown_function(signature):
    message = input_error(signature, "h", *good_args())
    assert message == "no function @h in the module; known functions: @f, @g"


def test_dtype_mismatch(signature):
    a, _ = good_args()
    message = input_error(signature, "f", a, np.zeros((2,), np.float64))
    assert message == "argument #1 (%b) of @f: expected dtype bfloat16, got float64"
    message = input_error(signature, "g", np.array(1, np.int32))
    assert message == "argument #0 (%x) of @g: expected dtype bool, got int32"


def test_shape_mismatch(signature):
    _, b = good_args()
    message = input_error(signature, "f", np.zeros((3, 2), np.float32), b)
    assert message == "argument #0 (%a) of @f: expected shape (4, ?), got (3, 2)"
    message = input_error(signature, "f", np.zeros((4,), np.float32), b)
    assert message == "argument #0 (%a) of @f: expected shape (4, ?), got (4,)"


def test_non_array_arguments(signature):
    _, b = good_args()
    message = input_error(signature, "f", [[0.0] * 3] * 4, b)
    assert message == (
        "argument #0 (%a) of @f: expected a numpy array (np.ndarray or numpy scalar) "
        "of dtype float32 and shape (4, ?), got list"
    )
    message = input_error(signature, "g", True)
    assert message.endswith("of dtype bool and shape (), got bool")


def test_unsupported_op_is_an_error():
    text = """
func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = arith.addf %a, %a : tensor<4xf32>
  func.return %0 : tensor<4xf32>
}"""
    with pytest.raises(AccyError, match="does not evaluate 'arith.addf'"):
        evaluate(text, np.zeros(4, np.float32))


# ---------------------------------------------------------------------------------------
# Signed zeros in maxima and minima (IEEE 754-2019, as MLIR's arith.maximumf/minimumf)
# ---------------------------------------------------------------------------------------

ZEROS_A = np.array([0.0, -0.0, 0.0, -0.0], np.float32)
ZEROS_B = np.array([0.0, 0.0, -0.0, -0.0], np.float32)


def signbits(out: np.ndarray) -> list[bool]:
    return np.signbit(np.asarray(out, np.float32)).ravel().tolist()


@pytest.mark.parametrize(
    ("op", "negative"),
    [("maximum", [False, False, False, True]), ("minimum", [False, True, True, True])],
)
def test_maximum_and_minimum_order_minus_zero_below_plus_zero(op, negative):
    """numpy's maximum of two zeros is its first operand; StableHLO's is +0 unless both
    are -0, and its minimum -0 if either is (1/rsqrt of it tells them apart)."""
    text = binary_program(op, tensor((4,), "f32"))
    assert signbits(single(text, ZEROS_A, ZEROS_B)) == negative
    assert signbits(single(text, ZEROS_B, ZEROS_A)) == negative


@pytest.mark.parametrize(("kind", "negative"), [("max", [False, True]), ("min", [True, True])])
def test_reduce_max_and_min_of_zeros_order_minus_zero_below_plus_zero(kind, negative):
    """Rows [-0, +0] and [-0, -0]: the maximum is +0 then -0, the minimum -0 for both."""
    text = f"""
func.func @f(%x: tensor<2x2xf32>) -> tensor<2xf32> {{
  %r = accy.reduce {kind} %x, dims = [1] : (tensor<2x2xf32>) -> tensor<2xf32>
  func.return %r : tensor<2xf32>
}}"""
    x = np.array([[-0.0, 0.0], [-0.0, -0.0]], np.float32)
    assert signbits(single(text, x)) == negative


@pytest.mark.parametrize(
    ("kind", "negative"), [("max", [True, False, False]), ("min", [False, True, True])]
)
def test_scan_max_and_min_of_zeros_order_minus_zero_below_plus_zero(kind, negative):
    """Running over [-0, +0, -0] for max, [+0, -0, +0] for min."""
    text = f"""
func.func @f(%x: tensor<3xf32>, %s: tensor<3xf32>) -> tensor<3xf32> {{
  %r = accy.scan {kind} %x, %s, dim = 0 : tensor<3xf32>
  func.return %r : tensor<3xf32>
}}"""
    x = np.array([-0.0, 0.0, -0.0] if kind == "max" else [0.0, -0.0, 0.0], np.float32)
    assert signbits(single(text, x, np.zeros(3, np.float32))) == negative


def test_run_names_an_argument_of_the_wrong_type():
    """`run(None, "f")` raised AttributeError from inside the interpreter."""
    with pytest.raises(AccyTypeError, match="module must be a ModuleOp, not NoneType"):
        run(None, "f")
    with pytest.raises(AccyTypeError, match="function_name must be a str, not int"):
        run(parse(binary_program("add", tensor((4,), "f32"))), 0)
