"""Shape-polymorphic StableHLO (`jax.export` with symbolic dims): the shapes computed
from `get_dimension_size`, JAX's dimension variables and constants are known at import
time (`accy.shape_values`), so `dynamic_broadcast_in_dim`, `dynamic_iota`,
`dynamic_reshape` and `real_dynamic_slice` import as their static forms whose dynamic dims
have the plan's run-time size; a shape accy cannot honour is refused where it is computed."""

from __future__ import annotations

import numpy as np
import pytest

import accy
from accy.diagnostics import AccyError

VMAP = """func.func @main(%x: tensor<?x4xf32>) -> (tensor<?x4xf32>, tensor<?x4xi32>, tensor<i32>) {
  %half = stablehlo.constant dense<0.5> : tensor<f32>
  %four = stablehlo.constant dense<4> : tensor<1xi32>
  %n = stablehlo.get_dimension_size %x, dim = 0 : (tensor<?x4xf32>) -> tensor<i32>
  %n1 = stablehlo.reshape %n : (tensor<i32>) -> tensor<1xi32>
  %shape = stablehlo.concatenate %n1, %four, dim = 0 : (tensor<1xi32>, tensor<1xi32>) -> tensor<2xi32>
  %b = stablehlo.dynamic_broadcast_in_dim %half, %shape, dims = [] : (tensor<f32>, tensor<2xi32>) -> tensor<?x4xf32>
  %y = stablehlo.multiply %x, %b : tensor<?x4xf32>
  %i = stablehlo.dynamic_iota %shape, dim = 0 : (tensor<2xi32>) -> tensor<?x4xi32>
  return %y, %i, %n : tensor<?x4xf32>, tensor<?x4xi32>, tensor<i32>
}"""


@pytest.mark.parametrize("rows", [1, 5])
def test_shapes_from_get_dimension_size_run_at_any_row_count(rows):
    x = np.arange(rows * 4, dtype=np.float32).reshape(rows, 4)
    y, i, n = accy.compile(accy.import_stablehlo(VMAP), threads=1, rows=[rows])(x)
    np.testing.assert_array_equal(y, x * 0.5)
    np.testing.assert_array_equal(i, np.broadcast_to(np.arange(rows)[:, None], (rows, 4)))
    assert n == rows


DIMENSION_VARIABLE = """func.func @main(%b: tensor<i64>, %x: tensor<?x3xf32>) -> tensor<1x?x3xf32> {
  %0 = stablehlo.constant dense<1> : tensor<1xi32>
  %1 = stablehlo.convert %b : (tensor<i64>) -> tensor<i32>
  %2 = stablehlo.reshape %1 : (tensor<i32>) -> tensor<1xi32>
  %3 = stablehlo.constant dense<3> : tensor<1xi32>
  %4 = stablehlo.concatenate %0, %2, %3, dim = 0 : (tensor<1xi32>, tensor<1xi32>, tensor<1xi32>) -> tensor<3xi32>
  %5 = stablehlo.dynamic_broadcast_in_dim %x, %4, dims = [1, 2] : (tensor<?x3xf32>, tensor<3xi32>) -> tensor<1x?x3xf32>
  %6 = stablehlo.dynamic_reshape %5, %4 : (tensor<1x?x3xf32>, tensor<3xi32>) -> tensor<1x?x3xf32>
  %7 = stablehlo.constant dense<0> : tensor<3xi32>
  %8 = stablehlo.constant dense<1> : tensor<3xi32>
  %9 = stablehlo.real_dynamic_slice %6, %7, %4, %8 : (tensor<1x?x3xf32>, tensor<3xi32>, tensor<3xi32>, tensor<3xi32>) -> tensor<1x?x3xf32>
  return %9 : tensor<1x?x3xf32>
}"""


def test_jax_dimension_variables_are_the_dynamic_size():
    """A leading `tensor<i64>` parameter of a function with dynamic dims is JAX's
    dimension variable: the shapes computed from it are the dynamic size."""
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    module = accy.import_stablehlo(DIMENSION_VARIABLE)
    (out,) = accy.compile(module, threads=1, rows=[2])(np.int64(2), x)
    np.testing.assert_array_equal(out, x[None])


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            (
                "%1 = stablehlo.convert %b",
                "%m = stablehlo.multiply %b, %b : tensor<i64>\n  %1 = stablehlo.convert %m",
            ),
            "takes its shape from a value the importer cannot determine",
        ),
        (
            ("dense<3> : tensor<1xi32>", "dense<7> : tensor<1xi32>"),
            "sizes result dim 2 as 7, but its type has 3",
        ),
    ],
)
def test_shapes_accy_cannot_honour_are_refused_with_a_location(change, message):
    text = DIMENSION_VARIABLE.replace(*change)
    with pytest.raises(AccyError, match=message) as error:
        accy.import_stablehlo(text, filename="poly.mlir")
    assert "poly.mlir:" in str(error.value)


def test_a_partial_slice_of_a_dynamic_dim_is_refused():
    text = DIMENSION_VARIABLE.replace(
        "%7 = stablehlo.constant dense<0> : tensor<3xi32>",
        "%7 = stablehlo.constant dense<[0, 1, 0]> : tensor<3xi32>",
    )
    with pytest.raises(AccyError, match="slices dynamic dim 1 in part"):
        accy.import_stablehlo(text)
