"""`accy.compile` and `accy.export` take StableHLO text as well as accy's: told apart by a
StableHLO op, whatever comes first (JAX's `as_text(debug_info=True)` writes a `call` first
and its location aliases after their uses, which accy's parser does not read)."""

from __future__ import annotations

import numpy as np
import pytest

import accy

JAX_TEXT = """#loc1 = loc("x")
module @jit_f {
  func.func public @main(%arg0: tensor<4xf32> loc("x")) -> tensor<4xf32> {
    %0 = call @double(%arg0) : (tensor<4xf32>) -> tensor<4xf32> loc(#loc3)
    %1 = stablehlo.tanh %0 : tensor<4xf32> loc(#loc4)
    return %1 : tensor<4xf32> loc(#loc)
  } loc(#loc)
  func.func private @double(%arg0: tensor<4xf32>) -> tensor<4xf32> {
    %0 = stablehlo.add %arg0, %arg0 : tensor<4xf32> loc(#loc3)
    return %0 : tensor<4xf32> loc(#loc)
  } loc(#loc)
} loc(#loc)
#loc = loc(unknown)
#loc2 = loc("model.py":7:11 to :20)
#loc3 = loc("double"(#loc2))
#loc4 = loc("model.py":8:11 to :19)
"""


def test_stablehlo_text_with_trailing_location_aliases_compiles_and_exports(tmp_path):
    x = np.array([0.0, 0.25, -0.5, 1.0], np.float32)
    (got,) = accy.compile(JAX_TEXT)(x)
    np.testing.assert_allclose(got, np.tanh(2 * x), rtol=1e-6)
    path = tmp_path / "f.stablehlo.mlir"
    path.write_text(JAX_TEXT)
    accy.export(path, tmp_path / "out", threads=1)
    np.testing.assert_allclose(accy.runtime.load(tmp_path / "out").main(x)[0], got)


def test_an_error_in_stablehlo_text_is_at_the_line_jax_recorded():
    refused = "stablehlo.custom_call @my_kernel(%0) : (tensor<4xf32>) -> tensor<4xf32>"
    text = JAX_TEXT.replace("stablehlo.tanh %0 : tensor<4xf32>", refused)
    with pytest.raises(accy.AccyError) as error:
        accy.compile(text)
    assert error.value.diagnostic().startswith("model.py:8:11: error:")
