"""Ops the importer resolves while it imports: tuples, optimization barriers, composites
(their decomposition, inlined), `map` (its body's elementwise ops on whole tensors), add
and multiply on i1 (or, and), and products whose result type is StableHLO's preferred
element type."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import accy
from accy.diagnostics import AccyError
from accy.reference import run

STRUCTURAL = """func.func @main(%x: tensor<4xf32>, %y: tensor<4xf32>, %p: tensor<4xi1>, %q: tensor<4xi1>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xi1>, tensor<4xi1>) {
  %t = stablehlo.tuple %x, %y : tuple<tensor<4xf32>, tensor<4xf32>>
  %n = stablehlo.tuple %t : tuple<tuple<tensor<4xf32>, tensor<4xf32>>>
  %inner = stablehlo.get_tuple_element %n[0] : (tuple<tuple<tensor<4xf32>, tensor<4xf32>>>) -> tuple<tensor<4xf32>, tensor<4xf32>>
  %b = stablehlo.get_tuple_element %inner[1] : (tuple<tensor<4xf32>, tensor<4xf32>>) -> tensor<4xf32>
  %kept:2 = stablehlo.optimization_barrier %x, %b : tensor<4xf32>, tensor<4xf32>
  %m = "stablehlo.map"(%kept#0, %kept#1) ({
  ^bb0(%a: tensor<f32>, %c: tensor<f32>):
    %two = stablehlo.constant dense<2.0> : tensor<f32>
    %s = stablehlo.multiply %a, %two : tensor<f32>
    %r = stablehlo.add %s, %c : tensor<f32>
    stablehlo.return %r : tensor<f32>
  }) {dimensions = array<i64: 0>} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %c = stablehlo.composite "my.scale" %x {composite_attributes = {k = 3 : i64}, decomposition = @scale} : (tensor<4xf32>) -> tensor<4xf32>
  %or = stablehlo.add %p, %q : tensor<4xi1>
  %and = stablehlo.multiply %p, %q : tensor<4xi1>
  return %kept#1, %m, %c, %or, %and : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xi1>, tensor<4xi1>
}
func.func private @scale(%v: tensor<4xf32>) -> tensor<4xf32> {
  %three = stablehlo.constant dense<3.0> : tensor<4xf32>
  %r = stablehlo.multiply %v, %three : tensor<4xf32>
  return %r : tensor<4xf32>
}"""


def test_tuples_barriers_maps_composites_and_boolean_arithmetic():
    module = accy.import_stablehlo(STRUCTURAL)
    x = np.array([1, -2, 3, 0.5], np.float32)
    y = np.array([10, 20, 30, 40], np.float32)
    p = np.array([True, True, False, False])
    q = np.array([True, False, True, False])
    expected = (y, 2 * x + y, 3 * x, p | q, p & q)
    for got in (run(module, "main", x, y, p, q), accy.compile(module, threads=1)(x, y, p, q)):
        for value, want in zip(got, expected, strict=True):
            np.testing.assert_array_equal(value, want)


def test_a_tuple_reaching_a_tensor_op_is_refused_where_it_is_read():
    text = """func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %t = stablehlo.tuple %x : tuple<tensor<4xf32>>
  %r = stablehlo.add %t, %t : tuple<tensor<4xf32>>
  return %x : tensor<4xf32>
}"""
    with pytest.raises(AccyError) as info:
        accy.import_stablehlo(text, filename="t.mlir")
    assert "3:" in str(info.value) and "'stablehlo.add'" in str(info.value)


def test_a_map_of_a_reduction_is_refused():
    text = """func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %m = "stablehlo.map"(%x) ({
  ^bb0(%a: tensor<f32>):
    %r = stablehlo.reshape %a : (tensor<f32>) -> tensor<f32>
    stablehlo.return %r : tensor<f32>
  }) {dimensions = array<i64: 0>} : (tensor<4xf32>) -> tensor<4xf32>
  return %m : tensor<4xf32>
}"""
    with pytest.raises(AccyError, match="maps a computation holding 'stablehlo.reshape'"):
        accy.import_stablehlo(text)


PREFERRED = """func.func @main(%a: tensor<3x5x{s}>, %b: tensor<5x4x{s}>) -> tensor<3x4x{r}> {{
  %0 = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : (tensor<3x5x{s}>, tensor<5x4x{s}>) -> tensor<3x4x{r}>
  return %0 : tensor<3x4x{r}>
}}"""


@pytest.mark.parametrize(
    ("source", "result"),
    [("bf16", "f32"), ("i8", "i32"), ("f32", "f64"), ("f32", "bf16"), ("i8", "f32")],
)
def test_products_in_their_preferred_element_type(source, result):
    dtypes = {
        "bf16": ml_dtypes.bfloat16,
        "f32": np.float32,
        "f64": np.float64,
        "i8": np.int8,
        "i32": np.int32,
    }
    rng = np.random.default_rng(0)
    a = rng.integers(-100, 100, (3, 5)).astype(dtypes[source])
    b = rng.integers(-100, 100, (5, 4)).astype(dtypes[source])
    module = accy.import_stablehlo(PREFERRED.format(s=source, r=result))
    exact = a.astype(np.float64) @ b.astype(np.float64)
    (got,) = accy.compile(module, threads=1)(a, b)
    assert got.dtype == dtypes[result]
    np.testing.assert_array_equal(got, exact.astype(dtypes[result]))
