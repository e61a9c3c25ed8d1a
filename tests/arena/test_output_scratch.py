"""Scratch in out-parameters (CPU): a temporary that dies before anything touches a result's
out-parameter lies in that out-parameter's bytes (`accy.arena ... in %out`), not in the
arena, as XLA lets temporaries share an output's allocation. Not a temporary that the
result's own work item reads, nor one live when a temporary the result takes over in place
is written; a result that is a parameter, or a loop's carried value, holds none. Programs
run right with it (the planned form's verifier refuses a scratch view still live when its
out-parameter is touched: lit_tests/plan/invalid.mlir)."""

from __future__ import annotations

import numpy as np
import pytest

import accy
from accy.reference import run

RNG = np.random.default_rng(17)

EARLY = """func.func @f(%x: tensor<64x64xf32>) -> tensor<64x64xf32> {
  %t = accy.transpose %x, dims = [1, 0] : (tensor<64x64xf32>) -> tensor<64x64xf32>
  %r = accy.reduce add %t, dims = [1] : (tensor<64x64xf32>) -> tensor<64xf32>
  %b = accy.broadcast_in_dim %r, dims = [0] : (tensor<64xf32>) -> tensor<64x64xf32>
  %o = accy.add %x, %b : tensor<64x64xf32>
  func.return %o : tensor<64x64xf32>
}"""
"""%t (16 KiB) dies at the reduce, before %o is written: it lies in %o's out-parameter.
%r dies at %o's own work item, which reads it: it stays in the arena."""


def _slot(prepared, value_name: str, module) -> int:
    for op in module.walk():
        for result in op.results:
            if result.name_hint == value_name:
                slot = prepared.buffers.get_slot(result)
                assert slot is not None
                return slot.id
    raise KeyError(value_name)


@pytest.mark.parametrize("threads", [1, 2])
def test_a_temporary_that_dies_early_lies_in_the_result(threads):
    module = accy.parse(EARLY)
    prepared = accy.prepare(module, target="cpu")
    arena = prepared.arena.functions["f"]
    t, r, o = (_slot(prepared, name, module) for name in ("t", "r", "o"))
    assert arena.output_arenas[o].offsets == {t: 0}
    assert (
        prepared.arena.describe_slot(t) == f"in the out-parameter of slot {o} at byte 0 live [0, 1]"
    )
    assert arena.offsets == {r: 0}
    assert prepared.arena.temporaries_size == arena.size == 256  # %r alone (aligned)
    executable = accy.compile(module, target="cpu", threads=threads)
    assert "accy.arena alignment 64 in %out0" in str(executable.planned)
    x = RNG.standard_normal((64, 64)).astype(np.float32)
    got = executable(x)[0]
    np.testing.assert_allclose(got, run(module, "f", x)[0], rtol=1e-5, atol=1e-5)


def test_the_device_arena_holds_every_buffer_as_before():
    # CUDA's arena holds the results too: the packer already shares their bytes over time.
    arena = accy.prepare(accy.parse(EARLY), target="cuda").arena.functions["f"]
    assert arena.output_arenas == {}


RESULT_FIRST = """func.func @f(%x: tensor<64x64xf32>) -> (tensor<64x64xf32>, tensor<64xf32>) {
  %o = accy.exponential %x : tensor<64x64xf32>
  %t = accy.transpose %x, dims = [1, 0] : (tensor<64x64xf32>) -> tensor<64x64xf32>
  %r = accy.reduce add %t, dims = [1] : (tensor<64x64xf32>) -> tensor<64xf32>
  func.return %o, %r : tensor<64x64xf32>, tensor<64xf32>
}"""


def test_a_result_written_first_holds_nothing():
    # %o is written at the first work item; %t lives after it, and %r's out-parameter is
    # too small for it.
    prepared = accy.prepare(accy.parse(RESULT_FIRST), target="cpu")
    assert prepared.arena.functions["f"].output_arenas == {}
    assert prepared.arena.temporaries_size == 64 * 64 * 4


PARAMETER = """func.func @f(%x: tensor<64x64xf32>) -> (tensor<64x64xf32>, tensor<64xf32>) {
  %t = accy.transpose %x, dims = [1, 0] : (tensor<64x64xf32>) -> tensor<64x64xf32>
  %r = accy.reduce add %t, dims = [1] : (tensor<64x64xf32>) -> tensor<64xf32>
  func.return %x, %r : tensor<64x64xf32>, tensor<64xf32>
}"""


def test_a_returned_parameter_holds_nothing():
    # %x's out-parameter receives a copy of the parameter before anything runs.
    prepared = accy.prepare(accy.parse(PARAMETER), target="cpu")
    assert prepared.arena.functions["f"].output_arenas == {}


IN_PLACE = """func.func @f(%x: tensor<64x64xf32>, %y: tensor<64x64xf32>) -> tensor<64x64xf32> {
  %t = accy.transpose %x, dims = [1, 0] : (tensor<64x64xf32>) -> tensor<64x64xf32>
  %u = accy.transpose %y, dims = [1, 0] : (tensor<64x64xf32>) -> tensor<64x64xf32>
  %r = accy.reduce add %t, dims = [1] : (tensor<64x64xf32>) -> tensor<64xf32>
  %b = accy.broadcast_in_dim %r, dims = [0] : (tensor<64xf32>) -> tensor<64x64xf32>
  %o = accy.add %u, %b : tensor<64x64xf32>
  func.return %o : tensor<64x64xf32>
}"""


def test_a_temporary_the_result_takes_over_is_its_first_touch():
    # %o takes %u over in place, so its out-parameter holds %u from item 1 on; %t, live
    # then, cannot lie in it and stays in the arena.
    module = accy.parse(IN_PLACE)
    prepared = accy.prepare(module, target="cpu")
    arena = prepared.arena.functions["f"]
    u, o = _slot(prepared, "u", module), _slot(prepared, "o", module)
    assert arena.in_outputs == {u: o}
    assert arena.output_arenas == {}
    x, y = (RNG.standard_normal((64, 64)).astype(np.float32) for _ in range(2))
    got = accy.compile(module, target="cpu")(x, y)[0]
    np.testing.assert_allclose(got, run(module, "f", x, y)[0], rtol=1e-5, atol=1e-5)


MIXED = """func.func @f(%x: tensor<32x64xf32>, %y: tensor<64x32xf32>) -> (tensor<64x32xf32>, tensor<32xf64>) {
  %a = accy.transpose %x, dims = [1, 0] : (tensor<32x64xf32>) -> tensor<64x32xf32>
  %d = accy.convert %y : (tensor<64x32xf32>) -> tensor<64x32xf64>
  %dt = accy.transpose %d, dims = [1, 0] : (tensor<64x32xf64>) -> tensor<32x64xf64>
  %zero = accy.constant dense<0.0> : tensor<64x32xf32>
  %p = accy.compare GT, %a, %zero : (tensor<64x32xf32>, tensor<64x32xf32>) -> tensor<64x32xi1>
  %pt = accy.transpose %p, dims = [1, 0] : (tensor<64x32xi1>) -> tensor<32x64xi1>
  %s1 = accy.reduce add %a, dims = [1] : (tensor<64x32xf32>) -> tensor<64xf32>
  %s2 = accy.reduce add %dt, dims = [1] : (tensor<32x64xf64>) -> tensor<32xf64>
  %pf = accy.convert %pt : (tensor<32x64xi1>) -> tensor<32x64xf64>
  %s3 = accy.reduce add %pf, dims = [1] : (tensor<32x64xf64>) -> tensor<32xf64>
  %s4 = accy.add %s2, %s3 : tensor<32xf64>
  %b1 = accy.broadcast_in_dim %s1, dims = [0] : (tensor<64xf32>) -> tensor<64x32xf32>
  %r1 = accy.multiply %y, %b1 : tensor<64x32xf32>
  func.return %r1, %s4 : tensor<64x32xf32>, tensor<32xf64>
}"""
"""Temporaries of f64, f32 and i1 around two results written last; the f32 result's
out-parameter holds those that die early enough, at aligned offsets of its bytes."""


@pytest.mark.parametrize("threads", [1, 2])
def test_temporaries_of_other_types_lie_in_an_f32_result(threads):
    module = accy.parse(MIXED)
    prepared = accy.prepare(module, target="cpu")
    arena = prepared.arena.functions["f"]
    (output,) = arena.output_arenas.values()
    assert output.offsets and all(offset % 64 == 0 for offset in output.offsets.values())
    assert not set(output.offsets) & set(arena.offsets)
    x = RNG.standard_normal((32, 64)).astype(np.float32)
    y = RNG.standard_normal((64, 32)).astype(np.float32)
    got = accy.compile(module, target="cpu", threads=threads)(x, y)
    for g, w in zip(got, run(module, "f", x, y), strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)


def test_an_export_runs_with_scratch_in_its_result(tmp_path):
    # The ahead-of-time library lowers the arena in the out-parameter the same way.
    module = accy.parse(EARLY)
    accy.export(module, tmp_path / "early", target="cpu")
    library = accy.runtime.load(tmp_path / "early")
    x = RNG.standard_normal((64, 64)).astype(np.float32)
    got = library["f"](x)[0]
    np.testing.assert_allclose(got, run(module, "f", x)[0], rtol=1e-5, atol=1e-5)
