"""`accy.gather` and the bitwise ops (`accy.and`, `accy.or`, `accy.xor`, `accy.not`): the
reference's semantics (checked against a definition written out per element), the CPU
target's loops (against the reference, bit for bit), fusion of a gather into its
consumers, StableHLO import (an `and` reduce on i1) and the CUDA target's kernels."""

from __future__ import annotations

import itertools
import re

import numpy as np
import pytest

import accy
from accy import reference
from accy.diagnostics import AccyError

EMBEDDING = """
func.func @f(%table: tensor<10x4xf32>, %ids: tensor<3x1xi32>) -> tensor<3x4xf32> {
  %rows = accy.gather %table[%ids], offset_dims = [1], collapsed_slice_dims = [0], operand_batching_dims = [], start_indices_batching_dims = [], start_index_map = [0], index_vector_dim = 1, slice_sizes = [1, 4] : (tensor<10x4xf32>, tensor<3x1xi32>) -> tensor<3x4xf32>
  %t = accy.tanh %rows : tensor<3x4xf32>
  func.return %t : tensor<3x4xf32>
}"""

BATCHED = """
func.func @f(%x: tensor<2x5x3xf32>, %i: tensor<2x4x2xi64>) -> tensor<2x4x2xf32> {
  %g = accy.gather %x[%i], offset_dims = [2], collapsed_slice_dims = [1], operand_batching_dims = [0], start_indices_batching_dims = [0], start_index_map = [1, 2], index_vector_dim = 2, slice_sizes = [1, 1, 2] : (tensor<2x5x3xf32>, tensor<2x4x2xi64>) -> tensor<2x4x2xf32>
  func.return %g : tensor<2x4x2xf32>
}"""


def test_embedding_lookup_clamps_and_fuses_into_its_consumer():
    table = np.arange(40, dtype=np.float32).reshape(10, 4) / 10
    ids = np.array([[3], [-2], [12]], np.int32)  # out of range: clamped into [0, 9]
    expected = np.tanh(table[[3, 0, 9]])
    np.testing.assert_allclose(
        reference.run(accy.parse(EMBEDDING), "f", table, ids)[0], expected, rtol=1e-6
    )
    np.testing.assert_allclose(
        accy.compile(EMBEDDING, threads=1)(table, ids)[0], expected, rtol=1e-6
    )
    prep = accy.prepare(accy.parse(EMBEDDING))
    assert [w.kind.value for w in prep.schedule.work_items] == ["elementwise"]


def _batched_definition(x, i):
    """StableHLO's gather written out for BATCHED: operand dim 0 follows the indices'
    batch dim 0, the vector (dims 1, 2) is clamped into [0, 4] and [0, 1]."""
    out = np.empty((2, 4, 2), np.float32)
    for b, n, k in itertools.product(range(2), range(4), range(2)):
        row = min(max(int(i[b, n, 0]), 0), 4)
        column = min(max(int(i[b, n, 1]), 0), 1)
        out[b, n, k] = x[b, row, column + k]
    return out


def test_batched_gather_follows_the_definition_on_both_paths():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 5, 3)).astype(np.float32)
    i = rng.integers(-2, 7, (2, 4, 2)).astype(np.int64)
    expected = _batched_definition(x, i)
    np.testing.assert_array_equal(reference.run(accy.parse(BATCHED), "f", x, i)[0], expected)
    np.testing.assert_array_equal(accy.compile(BATCHED, threads=1)(x, i)[0], expected)


def test_builder_gather_shape():
    b = accy.Builder()
    f32, i32 = np.dtype(np.float32), np.dtype(np.int32)
    f = b.begin_function(
        "f",
        [accy.Builder.tensor(f32, [10, 4]), accy.Builder.tensor(i32, [5])],
        [accy.Builder.tensor(f32, [5, 4])],
    )
    rows = f.gather(
        f.parameter(0),
        f.parameter(1),
        offset_dims=[1],
        collapsed_slice_dims=[0],
        start_index_map=[0],
        index_vector_dim=1,
        slice_sizes=[1, 4],
    )
    assert rows.type.get_shape() == (5, 4)
    f.return_([rows])
    f.finish()
    table = np.arange(40, dtype=np.float32).reshape(10, 4)
    ids = np.array([0, 9, 4, 4, 1], np.int32)
    np.testing.assert_array_equal(accy.compile(b.finish(), threads=1)(table, ids)[0], table[ids])


@pytest.mark.parametrize(
    ("numbers", "message"),
    [
        (
            "offset_dims = [1], collapsed_slice_dims = [], operand_batching_dims = [], start_indices_batching_dims = [], start_index_map = [0], index_vector_dim = 1, slice_sizes = [1, 4]",
            "offset_dims [1] name 1 dims for the slice's 2 kept dims",
        ),
        (
            "offset_dims = [1], collapsed_slice_dims = [0], operand_batching_dims = [], start_indices_batching_dims = [], start_index_map = [0, 1], index_vector_dim = 1, slice_sizes = [1, 4]",
            "start_index_map has 2 dims for index vectors of 1",
        ),
        (
            "offset_dims = [1], collapsed_slice_dims = [0], operand_batching_dims = [], start_indices_batching_dims = [], start_index_map = [0], index_vector_dim = 1, slice_sizes = [2, 4]",
            "slice size 2 of collapsed or batching dim 0 exceeds 1",
        ),
        (
            "offset_dims = [1], collapsed_slice_dims = [0], operand_batching_dims = [], start_indices_batching_dims = [], start_index_map = [0], index_vector_dim = 3, slice_sizes = [1, 4]",
            "index_vector_dim 3 is not within the start indices' 2 dims",
        ),
        (
            "offset_dims = [1], collapsed_slice_dims = [0], operand_batching_dims = [], start_indices_batching_dims = [], start_index_map = [0], index_vector_dim = 1, slice_sizes = [1, 11]",
            "slice size 11 of dim 1 is not within its extent 4",
        ),
    ],
)
def test_gather_verifier_errors_are_located(numbers, message):
    text = f"""
func.func @f(%table: tensor<10x4xf32>, %ids: tensor<3x1xi32>) -> tensor<3x4xf32> {{
  %rows = accy.gather %table[%ids], {numbers} : (tensor<10x4xf32>, tensor<3x1xi32>) -> tensor<3x4xf32>
  func.return %rows : tensor<3x4xf32>
}}"""
    with pytest.raises(AccyError, match=re.escape(message)) as error:
        accy.parse(text)
    assert error.value.location is not None


BITWISE = """
func.func @f(%a: tensor<6xi32>, %b: tensor<6xi32>, %p: tensor<6xi1>, %q: tensor<6xi1>) -> (tensor<6xi32>, tensor<6xi32>, tensor<6xi32>, tensor<6xi32>, tensor<6xi1>) {
  %and = accy.and %a, %b : tensor<6xi32>
  %or = accy.or %a, %b : tensor<6xi32>
  %xor = accy.xor %a, %b : tensor<6xi32>
  %not = accy.not %a : tensor<6xi32>
  %pq = accy.and %p, %q : tensor<6xi1>
  %npq = accy.not %pq : tensor<6xi1>
  %r = accy.or %npq, %p : tensor<6xi1>
  func.return %and, %or, %xor, %not, %r : tensor<6xi32>, tensor<6xi32>, tensor<6xi32>, tensor<6xi32>, tensor<6xi1>
}"""


def test_bitwise_ops_on_integers_and_booleans():
    a = np.array([0, -1, 5, 12, -(2**31), 7], np.int32)
    b = np.array([3, 9, -6, 12, 1, 0], np.int32)
    p = np.array([True, False, True, False, True, False])
    q = np.array([True, True, False, False, True, False])
    expected = [a & b, a | b, a ^ b, ~a, ~(p & q) | p]
    for outputs in (
        reference.run(accy.parse(BITWISE), "f", a, b, p, q),
        accy.compile(BITWISE, threads=1)(a, b, p, q),
    ):
        for out, want in zip(outputs, expected):
            np.testing.assert_array_equal(out, want)


def test_bitwise_ops_refuse_floats():
    text = """
func.func @f(%a: tensor<2xf32>) -> tensor<2xf32> {
  %r = accy.xor %a, %a : tensor<2xf32>
  func.return %r : tensor<2xf32>
}"""
    with pytest.raises(AccyError, match="expects an integer or i1 element type, got f32"):
        accy.parse(text)


ALL_IN_RANGE = """
func.func public @main(%i: tensor<4xi64>) -> tensor<i1> {
  %c0 = stablehlo.constant dense<0> : tensor<4xi64>
  %ok = stablehlo.compare GE, %i, %c0, SIGNED : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi1>
  %true = stablehlo.constant dense<true> : tensor<i1>
  %all = stablehlo.reduce(%ok init: %true) applies stablehlo.and across dimensions = [0] : (tensor<4xi1>, tensor<i1>) -> tensor<i1>
  return %all : tensor<i1>
}"""


def test_stablehlo_and_reduce_on_booleans():
    module = accy.import_stablehlo(ALL_IN_RANGE)
    for values, want in (([0, 1, 2, 3], True), ([0, -1, 2, 3], False)):
        i = np.array(values, np.int64)
        assert bool(reference.run(module, "main", i)[0]) is want
        assert bool(accy.compile(module, threads=1)(i)[0]) is want


def test_cuda_exports_gather_and_bitwise(tmp_path):
    for name, text in (("embedding", EMBEDDING), ("batched", BATCHED), ("bitwise", BITWISE)):
        directory = accy.export(text, tmp_path / name, target="cuda")
        assert list(directory.glob("*.ptx"))


DYNAMIC_TABLE = """func.func @main(%table: tensor<?x3xf32>, %ids: tensor<4x1xi32>) -> tensor<4x3xf32> {
  %0 = "stablehlo.gather"(%table, %ids) {dimension_numbers = #stablehlo.gather<offset_dims = [1], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>, slice_sizes = array<i64: 1, 3>} : (tensor<?x3xf32>, tensor<4x1xi32>) -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}"""


@pytest.mark.parametrize("rows", [2, 5])
def test_a_gather_from_a_table_of_dynamic_rows_clamps_at_the_run_time_size(rows):
    table = np.arange(rows * 3, dtype=np.float32).reshape(rows, 3)
    ids = np.array([[0], [4], [-3], [1]], np.int32)
    (out,) = accy.compile(accy.import_stablehlo(DYNAMIC_TABLE), threads=1, rows=[rows])(table, ids)
    np.testing.assert_array_equal(out, table[np.clip(ids[:, 0], 0, rows - 1)])


def test_a_gather_of_wide_slices_along_a_dynamic_dim_is_refused():
    text = (
        DYNAMIC_TABLE.replace(
            "offset_dims = [1], collapsed_slice_dims = [0]",
            "offset_dims = [1, 2], collapsed_slice_dims = []",
        )
        .replace("slice_sizes = array<i64: 1, 3>", "slice_sizes = array<i64: 2, 3>")
        .replace("-> tensor<4x3xf32>", "-> tensor<4x2x3xf32>")
        .replace("tensor<4x3xf32>\n}", "tensor<4x2x3xf32>\n}")
    )
    with pytest.raises(AccyError, match="slice size 2 of dynamic dim 0 exceeds 1"):
        accy.import_stablehlo(text)


EMPTY_SLICE = """
func.func @f(%ids: tensor<1x2xi32>, %table: tensor<1x0xui32>) -> tensor<{n}xui32> {{
  %r = accy.gather %table[%ids], offset_dims = [], collapsed_slice_dims = [0, 1], operand_batching_dims = [], start_indices_batching_dims = [], start_index_map = [0, 1], index_vector_dim = 1, slice_sizes = [1, 0] : (tensor<1x0xui32>, tensor<1x2xi32>) -> tensor<{n}xui32>
  func.return %r : tensor<{n}xui32>
}}"""


def test_a_gather_of_elements_from_empty_slices_is_refused():
    # A collapsed dim of slice size 0 leaves the result's elements nothing to read (their
    # values are implementation-defined; found by the program fuzzer, where the reference
    # and the lowering read out of bounds).
    with pytest.raises(AccyError, match="slice size 0 of collapsed or batching dim 1") as error:
        accy.parse(EMPTY_SLICE.format(n=1))
    assert error.value.location is not None


def test_empty_gathers_and_folds_run_in_the_reference():
    # np.reshape(..., -1) of no elements was a ValueError in the reference.
    gather = accy.parse(EMPTY_SLICE.replace("1x2xi32", "0x2xi32").format(n=0))
    ids, table = np.zeros((0, 2), np.int32), np.zeros((1, 0), np.uint32)
    assert reference.run(gather, "f", ids, table)[0].shape == (0,)
    assert accy.compile(gather, threads=1)(ids, table)[0].shape == (0,)
    fold = accy.parse(
        """func.func @f(%x: tensor<0x3xi32>) -> tensor<0xi32> {
  %init = accy.constant dense<0> : tensor<i32>
  %m = accy.fold(%x : tensor<0x3xi32>) init(%init : tensor<i32>), dims = [1] -> (tensor<0xi32>) {
  ^bb0(%a: tensor<i32>, %b: tensor<i32>):
    %s = accy.maximum %a, %b : tensor<i32>
    accy.yield %s : tensor<i32>
  }
  func.return %m : tensor<0xi32>
}"""
    )
    assert reference.run(fold, "f", np.zeros((0, 3), np.int32))[0].shape == (0,)
