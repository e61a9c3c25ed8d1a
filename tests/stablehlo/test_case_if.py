"""`stablehlo.case` and `stablehlo.if` (`lax.switch`, `lax.cond`): every branch is
imported in line and each result selected by the index or predicate, which StableHLO's
pure ops allow; an index outside the branches takes the last one."""

from __future__ import annotations

import numpy as np
import pytest

import accy

SWITCH = """func.func @main(%i: tensor<i32>, %x: tensor<4xf32>) -> (tensor<4xf32>, tensor<f32>) {
  %r:2 = "stablehlo.case"(%i) ({
    %s = stablehlo.reduce(%x init: %z) applies stablehlo.add across dimensions = [0] : (tensor<4xf32>, tensor<f32>) -> tensor<f32>
    stablehlo.return %x, %s : tensor<4xf32>, tensor<f32>
  }, {
    %n = stablehlo.negate %x : tensor<4xf32>
    stablehlo.return %n, %z : tensor<4xf32>, tensor<f32>
  }, {
    %e = stablehlo.exponential %x : tensor<4xf32>
    %one = stablehlo.constant dense<1.0> : tensor<f32>
    stablehlo.return %e, %one : tensor<4xf32>, tensor<f32>
  }) : (tensor<i32>) -> (tensor<4xf32>, tensor<f32>)
  return %r#0, %r#1 : tensor<4xf32>, tensor<f32>
}""".replace("  %r:2", "  %z = stablehlo.constant dense<0.0> : tensor<f32>\n  %r:2")


@pytest.mark.parametrize(("index", "branch"), [(0, 0), (1, 1), (2, 2), (7, 2), (-1, 2)])
def test_case_takes_the_indexed_branch_and_the_last_out_of_range(index, branch):
    x = np.array([0.5, -1.0, 2.0, 0.0], np.float32)
    expected = [(x, x.sum()), (-x, 0.0), (np.exp(x), 1.0)][branch]
    program = accy.compile(accy.import_stablehlo(SWITCH), threads=1)
    values, scalar = program(np.int32(index), x)
    np.testing.assert_allclose(values, expected[0], rtol=1e-6)
    assert scalar == np.float32(expected[1])


COND = """func.func @main(%x: tensor<8xf32>) -> tensor<8xf32> {
  %zero = stablehlo.constant dense<0.0> : tensor<f32>
  %s = stablehlo.reduce(%x init: %zero) applies stablehlo.add across dimensions = [0] : (tensor<8xf32>, tensor<f32>) -> tensor<f32>
  %p = stablehlo.compare GT, %s, %zero, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
  %r = "stablehlo.if"(%p) ({
    %d = stablehlo.multiply %x, %x : tensor<8xf32>
    stablehlo.return %d : tensor<8xf32>
  }, {
    %n = stablehlo.negate %x : tensor<8xf32>
    stablehlo.return %n : tensor<8xf32>
  }) : (tensor<i1>) -> tensor<8xf32>
  return %r : tensor<8xf32>
}"""


def test_if_on_a_data_dependent_predicate_on_both_targets(tmp_path):
    program = accy.compile(accy.import_stablehlo(COND), threads=1)
    for x in (np.arange(8, dtype=np.float32), -np.arange(8, dtype=np.float32)):
        (out,) = program(x)
        np.testing.assert_array_equal(out, x * x if x.sum() > 0 else -x)
    assert list(
        accy.export(accy.import_stablehlo(COND), tmp_path / "c", target="cuda").glob("*.ptx")
    )
