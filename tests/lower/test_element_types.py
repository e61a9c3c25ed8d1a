"""The element types beyond f32/f16/bf16/i1/i32/i64: f64, i8, i16 and the unsigned
integers ui8..ui64. Integer ops against definitions written out per element with Python
integers (wrapping, unsigned division and comparison, division by 0), reductions and
scans, `convert` between them (saturation, unsigned to float), f64 math against numpy,
the Builder and `accy.compile` with numpy arrays of these dtypes, located refusals of the
types accy does not compute with, and CUDA export (ptxas, the fake driver's plan check)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import accy
from accy import reference
from accy.diagnostics import AccyError
from accy.runtime.plan_check import ptxas_problems

INTEGERS = ["i8", "i16", "ui8", "ui16", "ui32", "ui64"]
DTYPE = {
    "i8": np.int8,
    "i16": np.int16,
    "ui8": np.uint8,
    "ui16": np.uint16,
    "ui32": np.uint32,
    "ui64": np.uint64,
}

ARITHMETIC = """
func.func @f(%a: tensor<8xT>, %b: tensor<8xT>) -> (tensor<8xT>, tensor<8xT>, tensor<8xT>, tensor<8xT>, tensor<8xT>, tensor<8xT>, tensor<8xT>, tensor<8xi1>, tensor<8xT>) {
  %add = accy.add %a, %b : tensor<8xT>
  %sub = accy.subtract %a, %b : tensor<8xT>
  %mul = accy.multiply %a, %b : tensor<8xT>
  %div = accy.divide %a, %b : tensor<8xT>
  %rem = accy.remainder %a, %b : tensor<8xT>
  %max = accy.maximum %a, %b : tensor<8xT>
  %min = accy.minimum %a, %b : tensor<8xT>
  %lt = accy.compare LT, %a, %b : (tensor<8xT>, tensor<8xT>) -> tensor<8xi1>
  %srl = accy.shift_right_logical %a, %b : tensor<8xT>
  func.return %add, %sub, %mul, %div, %rem, %max, %min, %lt, %srl : tensor<8xT>, tensor<8xT>, tensor<8xT>, tensor<8xT>, tensor<8xT>, tensor<8xT>, tensor<8xT>, tensor<8xi1>, tensor<8xT>
}"""


def _arithmetic_definition(a: np.ndarray, b: np.ndarray) -> list[np.ndarray]:
    """Each result per element with Python integers, wrapped to the type (StableHLO:
    x / 0 is all ones for unsigned and -1 for signed, x % 0 is x, MIN / -1 is MIN)."""
    info = np.iinfo(a.dtype)
    bits = info.bits
    mask = (1 << bits) - 1

    def wrap(v: int) -> int:
        v &= mask
        return v - (1 << bits) if info.min < 0 and v > info.max else v

    def truncated(x: int, y: int) -> tuple[int, int]:
        if y == 0:
            return (-1 if info.min < 0 else info.max), x
        quotient = abs(x) // abs(y) * (1 if (x < 0) == (y < 0) else -1)
        return quotient, x - quotient * y

    out: list[list] = [[] for _ in range(9)]
    for x, y in zip(a.tolist(), b.tolist()):
        quotient, rest = truncated(x, y)
        row = [x + y, x - y, x * y, quotient, rest, max(x, y), min(x, y)]
        for index, value in enumerate(row):
            out[index].append(wrap(value))
        out[7].append(x < y)
        out[8].append((x & mask) >> y if 0 <= y < bits else 0)
    return [
        np.array(values, np.bool_ if index == 7 else a.dtype) for index, values in enumerate(out)
    ]


def _operands(element: str) -> tuple[np.ndarray, np.ndarray]:
    dtype = DTYPE[element]
    info = np.iinfo(dtype)
    if info.min < 0:
        a = [7, -7, info.min, 0, info.max, -1, 12, -100]
        b = [2, 2, -1, 3, 0, 5, -1, 3]
    else:
        a = [7, info.max, info.max - 1, 0, 5, 1 << (info.bits - 1), 12, 200 % (info.max + 1)]
        b = [2, 3, info.max, 3, 0, 5, 1, info.bits + 1]
    return np.array(a, dtype), np.array(b, dtype)


@pytest.mark.parametrize("element", INTEGERS)
def test_integer_ops_follow_their_definition(element):
    """Wrapping arithmetic, truncating division with StableHLO's x / 0, unsigned
    comparison and max/min where the type is unsigned (ui8 255 > 1, not -1 < 1)."""
    a, b = _operands(element)
    text = ARITHMETIC.replace("xT>", f"x{element}>")
    expected = _arithmetic_definition(a, b)
    for outputs in (
        reference.run(accy.parse(text), "f", a, b),
        accy.compile(text, threads=1)(a, b),
    ):
        for index, (out, want) in enumerate(zip(outputs, expected)):
            assert out.dtype == want.dtype, index
            np.testing.assert_array_equal(out, want, err_msg=f"{element} result {index}")


REDUCTIONS = """
func.func @f(%x: tensor<4x300xT>) -> (tensor<4xT>, tensor<4xT>, tensor<4xT>, tensor<4x300xT>) {
  %sum = accy.reduce add %x, dims = [1] : (tensor<4x300xT>) -> tensor<4xT>
  %max = accy.reduce max %x, dims = [1] : (tensor<4x300xT>) -> tensor<4xT>
  %min = accy.reduce min %x, dims = [1] : (tensor<4x300xT>) -> tensor<4xT>
  %s = accy.negate %x : tensor<4x300xT>
  %cum = accy.scan add %x, %s, dim = 1 : tensor<4x300xT>
  func.return %sum, %max, %min, %cum : tensor<4xT>, tensor<4xT>, tensor<4xT>, tensor<4x300xT>
}"""


@pytest.mark.parametrize("element", [*INTEGERS, "f64"])
def test_reductions_and_scans(element):
    """Sums wrap like the type (numpy's sum in the type); unsigned max/min see the
    values above the signed range as large."""
    dtype = DTYPE.get(element, np.float64)
    rng = np.random.default_rng(3)
    if element == "f64":
        x = rng.standard_normal((4, 300))
    else:
        info = np.iinfo(dtype)
        x = rng.integers(info.min, info.max, (4, 300), dtype=dtype, endpoint=True)
    text = REDUCTIONS.replace("xT>", f"x{element}>")
    with np.errstate(over="ignore"):
        expected = [
            x.sum(1, dtype=dtype),
            x.max(1),
            x.min(1),
            np.cumsum(x, 1, dtype=dtype),
        ]
    for outputs in (reference.run(accy.parse(text), "f", x), accy.compile(text, threads=1)(x)):
        for out, want in zip(outputs, expected):
            assert out.dtype == dtype
            if element == "f64":
                np.testing.assert_allclose(out, want, rtol=1e-12, atol=1e-12)
            else:
                np.testing.assert_array_equal(out, want)


CONVERTS = """
func.func @f(%x: tensor<6xf32>, %u: tensor<3xui32>, %i: tensor<3xi8>) -> (tensor<6xui8>, tensor<6xi16>, tensor<3xf32>, tensor<3xf64>, tensor<3xui8>, tensor<3xi64>) {
  %0 = accy.convert %x : (tensor<6xf32>) -> tensor<6xui8>
  %1 = accy.convert %x : (tensor<6xf32>) -> tensor<6xi16>
  %2 = accy.convert %u : (tensor<3xui32>) -> tensor<3xf32>
  %3 = accy.convert %u : (tensor<3xui32>) -> tensor<3xf64>
  %4 = accy.convert %i : (tensor<3xi8>) -> tensor<3xui8>
  %5 = accy.convert %i : (tensor<3xi8>) -> tensor<3xi64>
  func.return %0, %1, %2, %3, %4, %5 : tensor<6xui8>, tensor<6xi16>, tensor<3xf32>, tensor<3xf64>, tensor<3xui8>, tensor<3xi64>
}"""


def test_converts_saturate_and_read_unsigned_bits_as_unsigned():
    """Float to integer truncates toward zero and saturates at the type's bounds;
    unsigned integers convert to floats as unsigned values (rounded once); an integer
    to an integer of the same width keeps its bits, to a wider one sign-extends."""
    x = np.array([-1.5, 2.9, 300.7, -40000.0, 65.5, 1e10], np.float32)
    u = np.array([0, 2**32 - 1, 2**31 + 3], np.uint32)
    i = np.array([-1, 127, -128], np.int8)
    expected = [
        np.array([0, 2, 255, 0, 65, 255], np.uint8),
        np.array([-1, 2, 300, -32768, 65, 32767], np.int16),
        u.astype(np.float32),
        u.astype(np.float64),
        np.array([255, 127, 128], np.uint8),
        np.array([-1, 127, -128], np.int64),
    ]
    for outputs in (
        reference.run(accy.parse(CONVERTS), "f", x, u, i),
        accy.compile(CONVERTS, threads=1)(x, u, i),
    ):
        for index, (out, want) in enumerate(zip(outputs, expected)):
            assert out.dtype == want.dtype, index
            np.testing.assert_array_equal(out, want, err_msg=f"result {index}")


F64_MATH = """
func.func @f(%x: tensor<64xf64>) -> (tensor<64xf64>, tensor<64xf64>, tensor<64xf64>, tensor<64xf64>, tensor<64xf64>, tensor<64xf64>) {
  %a = accy.exponential %x : tensor<64xf64>
  %ax = accy.abs %x : tensor<64xf64>
  %b = accy.log %ax : tensor<64xf64>
  %c = accy.tanh %x : tensor<64xf64>
  %d = accy.sine %x : tensor<64xf64>
  %e = accy.sqrt %ax : tensor<64xf64>
  %f = accy.logistic %x : tensor<64xf64>
  func.return %a, %b, %c, %d, %e, %f : tensor<64xf64>, tensor<64xf64>, tensor<64xf64>, tensor<64xf64>, tensor<64xf64>, tensor<64xf64>
}"""


def test_f64_math_is_computed_in_f64():
    """Within a few f64 ULP of numpy (an f32 computation would be off by ~1e-8)."""
    x = np.linspace(-20.0, 20.0, 64) + 1e-3
    expected = [np.exp(x), np.log(abs(x)), np.tanh(x), np.sin(x), np.sqrt(abs(x))]
    expected.append(1 / (1 + np.exp(-x)))
    outputs = accy.compile(F64_MATH, threads=1)(x)
    for index, (out, want) in enumerate(zip(outputs, expected)):
        assert out.dtype == np.float64
        np.testing.assert_allclose(out, want, rtol=4e-15, atol=1e-300, err_msg=str(index))


def test_builder_and_compile_take_numpy_arrays_of_every_type():
    """A program built from numpy dtypes runs on arrays of those dtypes."""
    for dtype in (np.float64, np.int8, np.int16, np.uint8, np.uint16, np.uint32, np.uint64):
        t = accy.Builder.tensor(np.dtype(dtype), [5])
        b = accy.Builder()
        fb = b.begin_function("f", [t, t], [t])
        fb.return_([fb.add(fb.parameter(0), fb.parameter(1))])
        fb.finish()
        x = np.arange(5).astype(dtype)
        y = np.full(5, 3).astype(dtype)
        (out,) = accy.compile(b.finish(), threads=1)(x, y)
        assert out.dtype == dtype
        np.testing.assert_array_equal(out, x + y)


@pytest.mark.parametrize(
    ("element", "shown"),
    [("i4", "i4"), ("f8E4M3FN", "f8E4M3FN"), ("complex<f32>", "complex<f32>"), ("ui4", "ui4")],
)
def test_types_accy_does_not_compute_with_are_refused_where_they_appear(element, shown):
    text = f"""func.func @f(%x: tensor<4x{element}>) -> tensor<4x{element}> {{
  func.return %x : tensor<4x{element}>
}}"""
    with pytest.raises(AccyError, match=f"1:1.*{shown}") as error:
        accy.compile(text, threads=1)
    assert "f64, f32, f16, bf16, i1, i8, i16, i32, i64, ui8, ui16, ui32, ui64" in str(error.value)


STABLEHLO = """
func.func @main(%a: tensor<6xui32>, %b: tensor<6xui32>) -> (tensor<6xi1>, tensor<ui32>) {
  %lt = stablehlo.compare LT, %a, %b, UNSIGNED : (tensor<6xui32>, tensor<6xui32>) -> tensor<6xi1>
  %zero = stablehlo.constant dense<0> : tensor<ui32>
  %max = stablehlo.reduce(%a init: %zero) applies stablehlo.maximum across dimensions = [0] : (tensor<6xui32>, tensor<ui32>) -> tensor<ui32>
  return %lt, %max : tensor<6xi1>, tensor<ui32>
}"""


def test_stablehlo_unsigned_compare_and_reduce_import_and_run():
    a = np.array([1, 2**32 - 1, 5, 0, 2**31, 7], np.uint32)
    b = np.array([2, 1, 5, 2**32 - 1, 3, 8], np.uint32)
    lt, top = accy.compile(accy.import_stablehlo(STABLEHLO), threads=1)(a, b)
    np.testing.assert_array_equal(lt, a < b)
    assert top == 2**32 - 1


def test_a_signed_compare_of_unsigned_integers_is_refused():
    text = STABLEHLO.replace("%b, UNSIGNED", "%b, SIGNED")
    with pytest.raises(AccyError, match="compares ui32 integers as SIGNED"):
        accy.import_stablehlo(text)


CUDA = """
func.func @f(%a: tensor<3x5000xui32>, %b: tensor<3x5000xi8>, %c: tensor<3x5000xf64>) -> (tensor<3xui32>, tensor<3x5000xi8>, tensor<3xf64>, tensor<3x5000xf64>) {
  %m = accy.reduce max %a, dims = [1] : (tensor<3x5000xui32>) -> tensor<3xui32>
  %d = accy.divide %b, %b : tensor<3x5000xi8>
  %s = accy.reduce add %c, dims = [1] : (tensor<3x5000xf64>) -> tensor<3xf64>
  %n = accy.negate %c : tensor<3x5000xf64>
  %q = accy.scan add %c, %n, dim = 1 : tensor<3x5000xf64>
  func.return %m, %d, %s, %q : tensor<3xui32>, tensor<3x5000xi8>, tensor<3xf64>, tensor<3x5000xf64>
}"""


def test_cuda_export_of_the_new_types_with_64_bit_workspaces(tmp_path):
    """Wide rows run the multi-phase families, whose workspaces hold 8-byte accumulators
    for f64; the PTX uses unsigned max and f64 adds; the fake driver's run follows the
    plan (every workspace byte the kernels address was allocated)."""
    from accy.runtime.plan_check import plan_problems, run_with_fake_driver

    directory = accy.export(CUDA, tmp_path / "f", target="cuda")
    ptx = "\n".join(p.read_text() for p in directory.glob("*.ptx"))
    assert "max.u32" in ptx and ("add.f64" in ptx or "add.rn.f64" in ptx)
    plan = accy.prepare(accy.parse(CUDA), target="cuda", sm_count=132)
    workspaces = {(t.family, t.name): t.bytes for t in plan.workspaces.terms}
    assert workspaces[("reduce.split", "partials")] == 3 * 132 * 8 * 8
    assert workspaces[("scan.multiblock", "carries")] == 5 * 3 * 8
    inputs = [np.zeros((3, 5000), np.uint32), np.ones((3, 5000), np.int8)]
    inputs.append(np.zeros((3, 5000), np.float64))
    result = run_with_fake_driver(directory, inputs)
    assert plan_problems(directory, "f", result) == []


ROUND_ONCE = """
func.func @f(%x: tensor<8xf64>, %i: tensor<4xi32>) -> (tensor<8xbf16>, tensor<8xf16>, tensor<4xbf16>, tensor<4xf16>) {
  %a = accy.convert %x : (tensor<8xf64>) -> tensor<8xbf16>
  %b = accy.convert %x : (tensor<8xf64>) -> tensor<8xf16>
  %c = accy.convert %i : (tensor<4xi32>) -> tensor<4xbf16>
  %d = accy.convert %i : (tensor<4xi32>) -> tensor<4xf16>
  func.return %a, %b, %c, %d : tensor<8xbf16>, tensor<8xf16>, tensor<4xbf16>, tensor<4xf16>
}"""


def test_f64_and_integers_round_to_bf16_and_f16_once(tmp_path):
    """f64 -> bf16 (no instruction on either target; the CPU JIT lacks `__truncdfbf2`) and
    integers -> bf16/f16 round once, as the reference does, where rounding through f32 to
    nearest would make a tie of the f32 value and round it again."""
    x = np.array([1 + 2**-8 + 2**-40, 1 + 2**-8, 3.5e38, -1e-40, np.nan, -np.inf, 1e-3, 7])
    i = np.array([2**24 + 2**16 + 1, 2**24 + 2**16, 2**20 + 2**11 + 1, -7], np.int32)
    with np.errstate(over="ignore"):
        expected = [x.astype(ml_dtypes.bfloat16), x.astype(np.float16)]
        expected += [i.astype(np.float64).astype(ml_dtypes.bfloat16), i.astype(np.float16)]
    module = accy.parse(ROUND_ONCE)
    for outputs in (reference.run(module, "f", x, i), accy.compile(module, threads=1)(x, i)):
        for index, (out, want) in enumerate(zip(outputs, expected)):
            np.testing.assert_array_equal(
                np.asarray(out).view(np.uint16), want.view(np.uint16), err_msg=str(index)
            )
    directory = accy.export(module, tmp_path / "round", target="cuda")
    assert not ptxas_problems(directory)


def test_f16_and_bf16_tan_round_once_from_f64():
    """tan is computed in f64; f16/bf16 results are rounded through f32 to odd (LLVM had
    joined f64 -> f32 -> f16 into one truncation the JIT has no __truncdfhf2 for: found by
    the program fuzzer)."""
    text = """func.func @f(%x: tensor<64xf16>, %y: tensor<64xbf16>) -> (tensor<64xf16>, tensor<64xbf16>) {
  %a = accy.tan %x : tensor<64xf16>
  %b = accy.tan %y : tensor<64xbf16>
  func.return %a, %b : tensor<64xf16>, tensor<64xbf16>
}"""
    x = np.linspace(-1.5, 1.5, 64)
    module = accy.parse(text)
    args = (x.astype(np.float16), x.astype(ml_dtypes.bfloat16))
    got = accy.compile(module, threads=1)(*args)
    want = [np.tan(a.astype(np.float64)).astype(a.dtype) for a in args]
    for g, w, r in zip(got, want, reference.run(module, "f", *args)):
        np.testing.assert_array_equal(g.view(np.uint16), w.view(np.uint16))
        np.testing.assert_array_equal(r.view(np.uint16), w.view(np.uint16))


def test_bf16_arrays_reach_the_i16_buffers_of_cpu_code_on_every_call_path(tmp_path):
    """CPU code holds bf16 buffers as i16 (`passes/lower/bf16_storage.py`); an array that
    does not fit the prepared call (not contiguous, or of a dynamic size) goes through the
    bridge's checked call, which takes its bits, not its values converted to int16 (the
    program fuzzer found that path)."""
    text = """func.func @f(%x: tensor<?x4xbf16>) -> tensor<?x4xbf16> {
  %y = accy.negate %x : tensor<?x4xbf16>
  func.return %y : tensor<?x4xbf16>
}"""
    x = np.arange(-8, 8, dtype=np.float32).reshape(4, 4).astype(ml_dtypes.bfloat16)
    exe = accy.compile(text, threads=1)
    for argument in (x, x.T, x[:3]):
        (got,) = exe(argument)
        np.testing.assert_array_equal(got.astype(np.float32), -argument.astype(np.float32))
    loaded = accy.runtime.load(accy.export(text, tmp_path / "f", target="cpu"))
    np.testing.assert_array_equal(loaded.f(x.T)[0].astype(np.float32), -x.T.astype(np.float32))
