"""`accy-fold-into-dots` keeps every program's values: the lit cases run through the
reference and the CPU target before and after the fold; the importer folds JAX's
`q @ k.T` so that no transpose is left to plan."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from accy.dialects import accy as ops
from accy.passes.dot_folds import fold_into_dots

import accy
from accy.reference import run

ROOT = Path(__file__).resolve().parents[2]
CASES = ROOT / "lit_tests" / "preparation" / "fold_into_dots.mlir"
RNG = np.random.default_rng(5)


def _layout_ops(module) -> int:
    return sum(isinstance(op, ops.TransposeOp | ops.BroadcastInDimOp) for op in module.walk())


@pytest.mark.parametrize(
    "name",
    ["scores", "heads", "gradient", "kept", "shared_weights", "kept_broadcasts", "probs_values"],
)
def test_folded_programs_compute_the_same_values(name):
    text = CASES.read_text()
    original, folded = accy.parse(text), accy.parse(text)
    fold_into_dots(folded)
    function = next(
        op for op in original.walk() if getattr(op, "sym_name", None) and op.sym_name.data == name
    )
    args = [
        RNG.uniform(-1, 1, t.get_shape()).astype(np.float32) for t in function.function_type.inputs
    ]
    want = run(original, name, *args)
    got_reference = run(folded, name, *args)
    got_cpu = accy.compile(folded, target="cpu")[name](*args)
    for w, r, c in zip(want, got_reference, got_cpu):
        np.testing.assert_allclose(r, w, rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(c, w, rtol=1e-5, atol=1e-5)
    assert _layout_ops(folded) <= _layout_ops(original)


def test_the_importer_folds_an_attention_score_transpose():
    text = """func.func public @main(%q: tensor<8x4xf32>, %k: tensor<6x4xf32>) -> tensor<8x6xf32> {
  %kt = stablehlo.transpose %k, dims = [1, 0] : (tensor<6x4xf32>) -> tensor<4x6xf32>
  %s = stablehlo.dot_general %q, %kt, contracting_dims = [1] x [0] : (tensor<8x4xf32>, tensor<4x6xf32>) -> tensor<8x6xf32>
  return %s : tensor<8x6xf32>
}"""
    module = accy.import_stablehlo(text)
    assert _layout_ops(module) == 0
    (item,) = accy.prepare(module, target="cpu").schedule.work_items
    assert item.kind.value == "dot"
