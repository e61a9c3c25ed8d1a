"""`accy-rematerialize` (the importer runs it): a cheap value read again late is recomputed
for that reader, whose kernel computes it; the plan holds less and the results are the
same (lit_tests/preparation/rematerialize.mlir shows the rule's cases)."""

from __future__ import annotations

import numpy as np
import pytest
from accy.passes.rematerialize import rematerialize

import accy
from accy.reference import run

STABLEHLO = """func.func public @main(%x: tensor<64x256xf32>, %w: tensor<256x256xf32>, %mean: tensor<256xf32>) -> tensor<256xf32> {
  %mb = stablehlo.broadcast_in_dim %mean, dims = [1] : (tensor<256xf32>) -> tensor<64x256xf32>
  %c = stablehlo.subtract %x, %mb : tensor<64x256xf32>
  %y = stablehlo.dot_general %c, %w, contracting_dims = [1] x [0] : (tensor<64x256xf32>, tensor<256x256xf32>) -> tensor<64x256xf32>
  %u = stablehlo.dot_general %y, %w, contracting_dims = [1] x [0] : (tensor<64x256xf32>, tensor<256x256xf32>) -> tensor<64x256xf32>
  %s = stablehlo.multiply %c, %u : tensor<64x256xf32>
  %zero = stablehlo.constant dense<0.0> : tensor<f32>
  %r = stablehlo.reduce(%s init: %zero) applies stablehlo.add across dimensions = [0] : (tensor<64x256xf32>, tensor<f32>) -> tensor<256xf32>
  return %r : tensor<256xf32>
}"""


def _temporaries(module) -> int:
    return accy.prepare(module, target="cpu").arena.temporaries_size


@pytest.mark.parametrize("threads", [1, 2])
def test_the_importer_recomputes_x_minus_mean_for_its_late_reader(threads):
    module = accy.import_stablehlo(STABLEHLO)
    clones = [op for op in module.walk() if op.name == "accy.subtract"]
    assert len(clones) == 2  # the stored one and its recomputation for the late reader
    assert _temporaries(module) == 2 * 64 * 256 * 4  # %y and %u; %c dies at its first reader
    rng = np.random.default_rng(29)
    x = rng.standard_normal((64, 256)).astype(np.float32)
    w = rng.uniform(-0.1, 0.1, (256, 256)).astype(np.float32)
    mean = rng.standard_normal(256).astype(np.float32)
    got = accy.compile(module, target="cpu", threads=threads)(x, w, mean)[0]
    np.testing.assert_allclose(got, run(module, "main", x, w, mean)[0], rtol=1e-4, atol=1e-4)


def test_rematerializing_twice_changes_nothing_more():
    module = accy.import_stablehlo(STABLEHLO)
    text = str(module)
    rematerialize(module)
    assert str(module) == text
