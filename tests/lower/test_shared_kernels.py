"""Kernels whose structure occurs more than once are lowered once (CPU,
`accy.passes.lower.cpu_shared`): one private `llvm.no_inline` function, called at each use
with that use's buffers; the values stay those of the reference."""

from __future__ import annotations

import numpy as np
from accy.passes.lower.cpu import lower_cpu
from accy.passes.lower.cpu_shared import KERNEL_SYMBOL_PREFIX, NO_INLINE
from xdsl.dialects import func

import accy
from accy.reference import run

LAYERS = """func.func @layers(%x: tensor<8x8xf32>, %w1: tensor<8x8xf32>, %w2: tensor<8x8xf32>) -> tensor<8x8xf32> {{
  %a = accy.dot_general %x, %w1, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  %c1 = accy.constant dense<{first}> : tensor<8x8xf32>
  %b = accy.maximum %a, %c1 : tensor<8x8xf32>
  %e = accy.dot_general %b, %w2, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  %c2 = accy.constant dense<{second}> : tensor<8x8xf32>
  %f = accy.maximum %e, %c2 : tensor<8x8xf32>
  func.return %f : tensor<8x8xf32>
}}"""
"""Two layers of a product and a clamp against a splat constant (of 256 bytes: it keeps its
buffer, an operand of the clamp's kernel read as a scalar)."""


def _lowered(text: str):
    module = accy.parse(text)
    lowered = lower_cpu(accy.compile(module).planned)
    functions = [op for op in lowered.ops if isinstance(op, func.FuncOp)]
    shared = [f for f in functions if f.sym_name.data.startswith(KERNEL_SYMBOL_PREFIX)]
    calls = [
        op
        for op in lowered.walk()
        if isinstance(op, func.CallOp)
        and op.callee.root_reference.data.startswith(KERNEL_SYMBOL_PREFIX)
    ]
    return module, shared, calls


def _arrays():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((8, 8)).astype(np.float32)
    w1, w2 = (rng.standard_normal((8, 8)).astype(np.float32) / 4 for _ in range(2))
    return x, w1, w2


def test_identical_layers_share_one_function_called_twice():
    module, shared, calls = _lowered(LAYERS.format(first=0.0, second=0.0))
    assert len(shared) == 1
    assert NO_INLINE in shared[0].attributes and shared[0].sym_visibility.data == "private"
    assert [c.callee.root_reference.data for c in calls] == [shared[0].sym_name.data] * 2
    args = _arrays()
    np.testing.assert_allclose(
        accy.compile(module)(*args)[0], run(module, "layers", *args)[0], rtol=1e-5, atol=1e-5
    )


def test_layers_reading_different_splat_values_are_not_shared():
    # the splats are operands read as scalars: their values are part of the key
    module, shared, calls = _lowered(LAYERS.format(first=0.0, second=0.25))
    assert shared == [] and calls == []
    args = _arrays()
    np.testing.assert_allclose(
        accy.compile(module)(*args)[0], run(module, "layers", *args)[0], rtol=1e-5, atol=1e-5
    )
