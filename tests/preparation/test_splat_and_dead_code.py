"""Splat constants read pointwise get no slot, dead ops no work item or slot, and the
CPU target still computes what the reference does."""

from __future__ import annotations

import numpy as np
from accy.passes.dead_code import erase_dead_code

import accy

RELU = """
func.func @relu(%x: tensor<64x256xf32>, %b: tensor<64x256xf32>) -> tensor<64x256xf32> {
  %zero = accy.constant dense<0.0> : tensor<64x256xf32>
  %h = accy.add %x, %b : tensor<64x256xf32>
  %r = accy.maximum %h, %zero : tensor<64x256xf32>
  %dead = accy.multiply %x, %x : tensor<64x256xf32>
  %dead2 = accy.exponential %dead : tensor<64x256xf32>
  func.return %r : tensor<64x256xf32>
}
"""

LOOP = """
func.func @loop(%a: tensor<256xf32>) -> tensor<256xf32> {
  %two = accy.constant dense<2.0> : tensor<256xf32>
  %l = accy.iterate 3 iter_args(%c = %a) : tensor<256xf32> {
    %unused = accy.negate %c : tensor<256xf32>
    %n = accy.multiply %c, %two : tensor<256xf32>
    accy.yield %n : tensor<256xf32>
  }
  %dead = accy.iterate 2 iter_args(%d = %a) : tensor<256xf32> {
    %e = accy.exponential %d : tensor<256xf32>
    accy.yield %e : tensor<256xf32>
  }
  func.return %l : tensor<256xf32>
}
"""


def _check_cpu(text: str, name: str, *inputs: np.ndarray) -> None:
    module = accy.parse(text)
    out = accy.compile(module, target="cpu")(*inputs)
    expected = accy.reference.run(accy.parse(text), name, *inputs)
    for got, want in zip(out, expected, strict=True):
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6)


def test_relu_plan_has_no_zero_slot_and_no_dead_kernel():
    prep = accy.prepare(accy.parse(RELU))
    assert prep.schedule.work_item_count() == 1
    assert prep.buffers.slot_count() == 3  # x, b, r: no zero, no dead temporary
    assert len(prep.buffers.folded) == 1
    assert prep.memory.device_constant_slot_count == 0
    assert prep.buffers.total_static_bytes == 3 * 64 * 256 * 4
    assert len(prep.fusion.dead) == 2


def test_relu_runs_on_cpu():
    rng = np.random.default_rng(0)
    x, b = (rng.standard_normal((64, 256)).astype(np.float32) for _ in range(2))
    _check_cpu(RELU, "relu", x, b)


def test_loop_plan_and_cpu_result():
    prep = accy.prepare(accy.parse(LOOP))
    kinds = [w.kind.value for w in prep.schedule.work_items]
    assert kinds == ["iterate", "elementwise"]  # no negate, no dead loop
    assert len(prep.buffers.folded) == 1  # the splat 2.0, read in the loop body
    assert prep.buffers.slot_count() == 3  # a, the carried buffer, the body result
    _check_cpu(LOOP, "loop", np.arange(256, dtype=np.float32))


def test_prepare_leaves_the_module_alone_and_the_pass_erases():
    module = accy.parse(RELU)
    before = str(module)
    accy.prepare(module)
    assert str(module) == before
    assert erase_dead_code(module) == 2
    assert "exponential" not in str(module) and "multiply" not in str(module)
    assert accy.prepare(module).buffers.slot_count() == 3


def test_splat_read_by_a_non_pointwise_op_keeps_its_slot():
    text = """
func.func @t(%x: tensor<64x256xf32>) -> tensor<256x64xf32> {
  %one = accy.constant dense<1.0> : tensor<64x256xf32>
  %t = accy.transpose %one, dims = [1, 0] : (tensor<64x256xf32>) -> tensor<256x64xf32>
  func.return %t : tensor<256x64xf32>
}
"""
    assert accy.prepare(accy.parse(text)).buffers.folded == []
