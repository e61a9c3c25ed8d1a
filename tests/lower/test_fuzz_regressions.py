"""Minimal programs the differential program fuzzer (`benchmarks/fuzz_programs.py`) found
failing, as it shrank them, each checked against values written out here (the numpy
reference is one of the things found wrong). Open bugs are marked `xfail(strict=True)`:
a fix makes the test pass, and the mark must go; fixed ones stay as regression tests."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import accy
from accy.runtime import plan_check

BF16 = ml_dtypes.bfloat16


def compiled(text: str, *arguments, threads: int = 1) -> tuple[np.ndarray, ...]:
    return accy.compile(accy.parse(text), target="cpu", threads=threads)(*arguments)


def reference(text: str, *arguments) -> tuple[np.ndarray, ...]:
    return accy.reference.run(accy.parse(text), "f", *arguments)


# ---------------------------------------------------------------------------------------
# A scan's scratch operand
# ---------------------------------------------------------------------------------------

SCAN_INTO_A_RETURNED_CONSTANT = """\
func.func @f(%x: tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>) {
  %c = accy.constant dense<1.000000e+00> : tensor<3xf32>
  %r = accy.scan add %x, %c, dim = 0 : tensor<3xf32>
  func.return %r, %c : tensor<3xf32>, tensor<3xf32>
}"""

SCAN_INTO_A_PARAMETER_READ_LATER = """\
func.func @f(%x: tensor<3xf32>, %s: tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>) {
  %r = accy.scan add %x, %s, dim = 0 : tensor<3xf32>
  %t = accy.negate %s : tensor<3xf32>
  func.return %r, %t : tensor<3xf32>, tensor<3xf32>
}"""

SCAN_INTO_A_CONSTANT_A_PRODUCT_READS = """\
func.func @f(%x: tensor<1x1xf64>, %y: tensor<1xf64>) -> (tensor<1x1xf64>, tensor<1xf64>) {
  %c = accy.constant dense<1.000000e+00> : tensor<1x1xf64>
  %m = accy.scan max %x, %c, dim = 0 : tensor<1x1xf64>
  %d = accy.dot_general %m, %y, batching_dims = [] x [], contracting_dims = [0] x [0] : (tensor<1x1xf64>, tensor<1xf64>) -> tensor<1xf64>
  func.return %c, %d : tensor<1x1xf64>, tensor<1xf64>
}"""


def test_a_scan_leaves_a_returned_constant_scratch_as_it_was():
    """A scan wrote its result into its scratch constant's buffer, which the function
    also returned (the constant read as the running sums)."""
    x = np.float32([1, 2, 3])
    total, constant = compiled(SCAN_INTO_A_RETURNED_CONSTANT, x)
    np.testing.assert_array_equal(total, [1, 3, 6])
    np.testing.assert_array_equal(constant, [1, 1, 1])


def test_a_scan_leaves_a_scratch_parameter_that_is_read_later_as_it_was():
    """A negate after the scan read the scan's result from its scratch parameter."""
    x, s = np.float32([1, 2, 3]), np.float32([5, 5, 5])
    total, negated = compiled(SCAN_INTO_A_PARAMETER_READ_LATER, x, s)
    np.testing.assert_array_equal(total, [1, 3, 6])
    np.testing.assert_array_equal(negated, [-5, -5, -5])
    np.testing.assert_array_equal(s, [5, 5, 5])


SCAN_INTO_A_RETURNED_PARAMETER = """\
func.func @f(%s: tensor<1x1xf32>, %x: tensor<1x1xf32>) -> (tensor<1x1xf32>, tensor<1x1xf32>) {
  %r = accy.scan add %x, %s, dim = 0 : tensor<1x1xf32>
  func.return %r, %s : tensor<1x1xf32>, tensor<1x1xf32>
}"""


def test_a_scan_leaves_a_returned_scratch_parameter_as_it_was():
    """A scratch parameter returned as it came got the scan's result."""
    s, x = np.float32([[-1.5]]), np.float32([[7.0]])
    total, returned = compiled(SCAN_INTO_A_RETURNED_PARAMETER, s, x)
    np.testing.assert_array_equal(total, [[7.0]])
    np.testing.assert_array_equal(returned, [[-1.5]])


def test_a_scan_leaves_a_constant_scratch_as_it_was_for_a_product_after_it():
    """A returned constant scratch, with a product reading the scan (f64)."""
    x, y = np.array([[-2.0]]), np.array([3.0])
    constant, product = compiled(SCAN_INTO_A_CONSTANT_A_PRODUCT_READS, x, y)
    np.testing.assert_array_equal(constant, [[1.0]])
    np.testing.assert_array_equal(product, [-6.0])


CUDA_SCAN_INTO_A_CONSTANT = """\
func.func @f(%x: tensor<1x1xf32>) -> tensor<1x1xf32> {
  %c = accy.constant dense<1.000000e+00> : tensor<1x1xf32>
  %r = accy.scan add %x, %c, dim = 0 : tensor<1x1xf32>
  %s = accy.add %r, %x : tensor<1x1xf32>
  func.return %s : tensor<1x1xf32>
}"""


def test_a_scan_into_a_constant_scratch_exports_for_cuda(tmp_path):
    """A constant's buffer is never written: the scan's result gets a slot of its own (it
    took the constant's over, which the CUDA plan puts in constant memory, no kernel's to
    write: 'kernel f_item0_scan_block writes ... device_constant memory')."""
    x = np.float32([[2.0]])
    np.testing.assert_array_equal(compiled(CUDA_SCAN_INTO_A_CONSTANT, x)[0], [[4.0]])
    directory = accy.export(accy.parse(CUDA_SCAN_INTO_A_CONSTANT), tmp_path / "scan", target="cuda")
    assert not plan_check.ptxas_problems(directory)


# ---------------------------------------------------------------------------------------
# bf16 products
# ---------------------------------------------------------------------------------------

WIDENED_BF16_PRODUCT = """\
func.func @f(%a: tensor<1x8xbf16>, %b: tensor<8x1xbf16>) -> tensor<1x1xf32> {
  %x = accy.convert %a : (tensor<1x8xbf16>) -> tensor<1x8xf32>
  %y = accy.convert %b : (tensor<8x1xbf16>) -> tensor<8x1xf32>
  %r = accy.dot_general %x, %y, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<1x8xf32>, tensor<8x1xf32>) -> tensor<1x1xf32>
  func.return %r : tensor<1x1xf32>
}"""

BF16_PRODUCT = """\
func.func @f(%a: tensor<1x8xbf16>, %b: tensor<8x1xbf16>) -> tensor<1x1xbf16> {
  %r = accy.dot_general %a, %b, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<1x8xbf16>, tensor<8x1xbf16>) -> tensor<1x1xbf16>
  func.return %r : tensor<1x1xbf16>
}"""


def _subnormal_operands() -> tuple[np.ndarray, np.ndarray, float]:
    """A bf16 subnormal (1e-40) times 1e38: 0.0092, nowhere near the subnormal range."""
    a = np.zeros((1, 8), BF16)
    b = np.zeros((8, 1), BF16)
    a[0, 0], b[0, 0] = 1e-40, 1e38
    return a, b, float(np.float32(a[0, 0]) * np.float32(b[0, 0]))


@pytest.mark.parametrize("text", [WIDENED_BF16_PRODUCT, BF16_PRODUCT], ids=["widened", "bf16"])
def test_a_bf16_product_keeps_subnormal_operands(text):
    """The AVX-512 BF16 dot product reads subnormal bf16 operands as zero (DAZ): 1e-40 *
    1e38 gave 0 for 0.0092."""
    a, b, expected = _subnormal_operands()
    (got,) = compiled(text, a, b)
    assert float(got[0, 0]) == pytest.approx(expected, rel=1e-2)


# ---------------------------------------------------------------------------------------
# bf16 data movement
# ---------------------------------------------------------------------------------------

BF16_SORT = """\
func.func @f(%x: tensor<4xbf16>) -> tensor<4xbf16> {
  %r = accy.sort(%x : tensor<4xbf16>), dim = 0 -> (tensor<4xbf16>) {
  ^bb0(%a: tensor<bf16>, %b: tensor<bf16>):
    %p = accy.compare LT, %a, %b total_order : (tensor<bf16>, tensor<bf16>) -> tensor<i1>
    accy.yield %p : tensor<i1>
  }
  func.return %r : tensor<4xbf16>
}"""

BF16_INTERIOR_PAD = """\
func.func @f(%x: tensor<12x3x12xbf16>) -> tensor<35x3x13xbf16> {
  %one = accy.constant dense<1.000000e+00> : tensor<bf16>
  %r = accy.pad %x, %one, low = [0, 0, 0], high = [1, 0, 1], interior = [2, 0, 0] : (tensor<12x3x12xbf16>, tensor<bf16>) -> tensor<35x3x13xbf16>
  func.return %r : tensor<35x3x13xbf16>
}"""

SUBNORMAL_BF16 = -9.18355e-41
"""The bf16 of bits 0x8001: the negative subnormal closest to zero."""


def test_a_bf16_sort_keeps_subnormal_values():
    """A bf16 sort returned -0 for -9.2e-41 (a bitcast of the sorted values showed it)."""
    x = np.array([1.0, SUBNORMAL_BF16, 0.5, -SUBNORMAL_BF16], BF16)
    (got,) = compiled(BF16_SORT, x)
    np.testing.assert_array_equal(got.view(np.uint16), np.sort(x).view(np.uint16))


def test_a_bf16_pad_with_interior_padding_keeps_subnormal_values():
    """The last column, stored by scalar code, came out -0 for -9.2e-41 (LLVM stored the
    selected bf16 value through vcvtneps2bf16; bf16 buffers are i16 in CPU code now)."""
    x = np.ones((12, 3, 12), BF16)
    x[:, :, 11] = SUBNORMAL_BF16
    (got,) = compiled(BF16_INTERIOR_PAD, x)
    np.testing.assert_array_equal(got[::3, :, :12].view(np.uint16), x.view(np.uint16))


# ---------------------------------------------------------------------------------------
# Constants
# ---------------------------------------------------------------------------------------

CONSTANT_ATAN2 = """\
func.func @f() -> tensor<4xf32> {
  %c = accy.constant dense<0.000000e+00> : tensor<4xf32>
  %r = accy.atan2 %c, %c : tensor<4xf32>
  func.return %r : tensor<4xf32>
}"""


def test_atan2_of_constant_zeros_is_zero():
    """atan2 of two constant zeros gave NaN (on zero arguments it gives 0)."""
    (got,) = compiled(CONSTANT_ATAN2)
    np.testing.assert_array_equal(got, np.zeros(4, np.float32))


# ---------------------------------------------------------------------------------------
# f16 math
# ---------------------------------------------------------------------------------------

F16_TAN_TANH = """\
func.func @f(%x: tensor<7x32xf16>) -> tensor<7x32xf16> {
  %t = accy.tan %x : tensor<7x32xf16>
  %r = accy.tanh %t : tensor<7x32xf16>
  func.return %r : tensor<7x32xf16>
}"""


def test_f16_tan_then_tanh_compiles():
    """The JIT had no function to call ('no function _mlir_ciface_accy_fn_f': LLVM joined
    the f16 tan's two truncations into one, __truncdfhf2, which the JIT lacks)."""
    x = np.linspace(-1.5, 1.5, 224).astype(np.float16).reshape(7, 32)
    (got,) = compiled(F16_TAN_TANH, x)
    expected = np.tanh(np.tan(x.astype(np.float64)).astype(np.float16).astype(np.float64))
    np.testing.assert_allclose(got.astype(np.float64), expected, rtol=4e-3, atol=1e-3)


# ---------------------------------------------------------------------------------------
# CUDA scatters
# ---------------------------------------------------------------------------------------

CUDA_BOOL_SCATTER = """\
func.func @f(%x: tensor<4xi1>, %i: tensor<2x1xi32>, %u: tensor<2xi1>) -> tensor<4xi1> {
  %r = accy.scatter %x[%i] updates(%u), update_window_dims = [], inserted_window_dims = [0], input_batching_dims = [], scatter_indices_batching_dims = [], scatter_dims_to_operand_dims = [0], index_vector_dim = 1 : (tensor<4xi1>), tensor<2x1xi32>, (tensor<2xi1>) -> (tensor<4xi1>) {
  ^bb0(%a: tensor<i1>, %b: tensor<i1>):
    %o = accy.or %a, %b : tensor<i1>
    accy.yield %o : tensor<i1>
  }
  func.return %r : tensor<4xi1>
}"""

CUDA_UI8_SCATTER_OF_A_CONSTANT = """\
func.func @f(%x: tensor<2x24xui8>, %i: tensor<1x2xi32>) -> tensor<2x24xui8> {
  %u = accy.constant dense<0> : tensor<18x1xui8>
  %r = accy.scatter %x[%i] updates(%u), update_window_dims = [0], inserted_window_dims = [0], input_batching_dims = [], scatter_indices_batching_dims = [], scatter_dims_to_operand_dims = [1, 0], index_vector_dim = 1 : (tensor<2x24xui8>), tensor<1x2xi32>, (tensor<18x1xui8>) -> (tensor<2x24xui8>) {
  ^bb0(%a: tensor<ui8>, %b: tensor<ui8>):
    %m = accy.minimum %a, %b : tensor<ui8>
    accy.yield %m : tensor<ui8>
  }
  func.return %r : tensor<2x24xui8>
}"""


@pytest.mark.parametrize(
    "text", [CUDA_BOOL_SCATTER, CUDA_UI8_SCATTER_OF_A_CONSTANT], ids=["i1-or", "ui8-min-constant"]
)
def test_a_scatter_that_no_compare_and_swap_updates_exports_for_cuda(text, tmp_path):
    """PTX generation failed: an i1 scatter's combine became a one-bit `llvm.cmpxchg`;
    a ui8 minimum with constant zero updates folded into a constant that the atomic body
    yielded from outside ('result not defined in region')."""
    directory = accy.export(accy.parse(text), tmp_path / "scatter", target="cuda")
    assert (directory / "manifest.json").exists()


# ---------------------------------------------------------------------------------------
# select_and_scatter
# ---------------------------------------------------------------------------------------

UNIT_WINDOW_SELECT_AND_SCATTER = """\
func.func @f(%x: tensor<4xf32>, %s: tensor<4xf32>) -> tensor<4xf32> {
  %z = accy.constant dense<0.000000e+00> : tensor<f32>
  %r = accy.select_and_scatter %x, %s, %z, window = [1], strides = [1], padding_low = [0], padding_high = [0] : (tensor<4xf32>, tensor<4xf32>, tensor<f32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %p = accy.compare GT, %a, %b : (tensor<f32>, tensor<f32>) -> tensor<i1>
    accy.yield %p : tensor<i1>
  } {
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %q = accy.add %a, %b : tensor<f32>
    accy.yield %q : tensor<f32>
  }
  func.return %r : tensor<4xf32>
}"""


def test_a_select_and_scatter_of_one_element_windows_compiles():
    """Windows that never move failed an assertion in the CPU lowering."""
    x, s = np.float32([3, 1, 4, 1]), np.float32([1, 2, 3, 4])
    (got,) = compiled(UNIT_WINDOW_SELECT_AND_SCATTER, x, s)
    np.testing.assert_array_equal(got, s)


# ---------------------------------------------------------------------------------------
# The numpy reference
# ---------------------------------------------------------------------------------------

RANK_0_BITCAST = """\
func.func @f(%x: tensor<f32>) -> tensor<i32> {
  %r = accy.bitcast_convert %x : (tensor<f32>) -> tensor<i32>
  func.return %r : tensor<i32>
}"""

RANK_0_GATHER = """\
func.func @f(%x: tensor<5xf32>, %i: tensor<i32>) -> tensor<f32> {
  %r = accy.gather %x[%i], offset_dims = [], collapsed_slice_dims = [0], operand_batching_dims = [], start_indices_batching_dims = [], start_index_map = [0], index_vector_dim = 0, slice_sizes = [1] : (tensor<5xf32>, tensor<i32>) -> tensor<f32>
  func.return %r : tensor<f32>
}"""

PAD_INTO_A_NEGATIVE_EDGE = """\
func.func @f(%x: tensor<2xf32>) -> tensor<1xf32> {
  %one = accy.constant dense<1.000000e+00> : tensor<f32>
  %r = accy.pad %x, %one, low = [2], high = [-3], interior = [0] : (tensor<2xf32>, tensor<f32>) -> tensor<1xf32>
  func.return %r : tensor<1xf32>
}"""

EMPTY_FOLD = """\
func.func @f(%x: tensor<0x2xf16>) -> tensor<0xf16> {
  %zero = accy.constant dense<0.000000e+00> : tensor<f16>
  %r = accy.fold(%x : tensor<0x2xf16>) init(%zero : tensor<f16>), dims = [1] -> (tensor<0xf16>) {
  ^bb0(%a: tensor<f16>, %b: tensor<f16>):
    %s = accy.add %a, %b : tensor<f16>
    accy.yield %s : tensor<f16>
  }
  func.return %r : tensor<0xf16>
}"""


def test_the_reference_bitcasts_a_rank_0_tensor():
    x = np.array(1.0, np.float32)
    assert int(reference(RANK_0_BITCAST, x)[0]) == 0x3F800000
    assert int(compiled(RANK_0_BITCAST, x)[0]) == 0x3F800000


def test_the_reference_gathers_a_rank_0_result():
    """The reference raised ValueError (cannot reshape array of size 0 into shape
    (0,newaxis)) for a gather whose result has no dims."""
    x, i = np.arange(5, dtype=np.float32), np.array(3, np.int32)
    assert float(compiled(RANK_0_GATHER, x, i)[0]) == 3.0
    assert float(reference(RANK_0_GATHER, x, i)[0]) == 3.0


def test_the_reference_folds_an_empty_operand():
    """The reference raised the same ValueError for a fold of an operand without
    elements."""
    x = np.zeros((0, 2), np.float16)
    assert reference(EMPTY_FOLD, x)[0].shape == (0,)
    assert compiled(EMPTY_FOLD, x)[0].shape == (0,)


def test_the_reference_crops_a_negative_edge_after_padding():
    """[1, 1, a, b] without its last 3 elements is [1]."""
    x = np.float32([5, 6])
    np.testing.assert_array_equal(compiled(PAD_INTO_A_NEGATIVE_EDGE, x)[0], [1.0])
    np.testing.assert_array_equal(reference(PAD_INTO_A_NEGATIVE_EDGE, x)[0], [1.0])


# ---------------------------------------------------------------------------------------
# bf16 values a window carries
# ---------------------------------------------------------------------------------------

BF16_SELECT_AND_SCATTER = """\
func.func @f(%x: tensor<12x4x1xbf16>, %s: tensor<13x5x1xbf16>) -> tensor<12x4x1xbf16> {
  %zero = accy.constant dense<0.000000e+00> : tensor<bf16>
  %r = accy.select_and_scatter %x, %s, %zero, window = [2, 2, 1], strides = [1, 1, 1], padding_low = [1, 0, 0], padding_high = [1, 2, 0] : (tensor<12x4x1xbf16>, tensor<13x5x1xbf16>, tensor<bf16>) -> tensor<12x4x1xbf16> {
  ^bb0(%a: tensor<bf16>, %b: tensor<bf16>):
    %c = accy.compare LE, %a, %b : (tensor<bf16>, tensor<bf16>) -> tensor<i1>
    accy.yield %c : tensor<i1>
  } {
  ^bb0(%a: tensor<bf16>, %b: tensor<bf16>):
    %q = accy.add %a, %b : tensor<bf16>
    accy.yield %q : tensor<bf16>
  }
  func.return %r : tensor<12x4x1xbf16>
}"""


def test_a_bf16_select_and_scatter_keeps_a_subnormal_sum():
    """The sum a select_and_scatter carries through its windows was held in an f32
    register and stored with vcvtneps2bf16, which reads subnormals as zero: the smallest
    subnormal scattered into zeros came out 0."""
    x = np.zeros((12, 4, 1), BF16)
    s = np.zeros((13, 5, 1), np.uint16)
    s[7, 1, 0] = 1  # the smallest bf16 subnormal
    (got,) = compiled(BF16_SELECT_AND_SCATTER, x, s.view(BF16))
    want = np.zeros((12, 4, 1), np.uint16)
    want[6, 1, 0] = 1
    np.testing.assert_array_equal(got.view(np.uint16), want)
    np.testing.assert_array_equal(
        reference(BF16_SELECT_AND_SCATTER, x, s.view(BF16))[0].view(np.uint16), want
    )
