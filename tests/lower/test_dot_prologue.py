"""A bf16/f16 -> f32 `convert` read only by a `dot_general` is the dot's operand prologue:
the product loads the narrow operand and extends it (no f32 copy is planned), on the CPU
(register tiles and scalar loops) and in the CUDA export (values: on a GPU)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import accy
from accy.reference import run
from accy.runtime.plan_check import plan_problems, ptxas_problems, run_with_fake_driver

MIXED = """func.func @mixed(%x: tensor<{m}x{k}x{t}>, %w: tensor<{k}x{n}x{t}>) -> tensor<{m}x{n}xf32> {{
  %xf = accy.convert %x : (tensor<{m}x{k}x{t}>) -> tensor<{m}x{k}xf32>
  %wf = accy.convert %w : (tensor<{k}x{n}x{t}>) -> tensor<{k}x{n}xf32>
  %y = accy.dot_general %xf, %wf, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<{m}x{k}xf32>, tensor<{k}x{n}xf32>) -> tensor<{m}x{n}xf32>
  func.return %y : tensor<{m}x{n}xf32>
}}"""

TYPES = {"bf16": ml_dtypes.bfloat16, "f16": np.float16}


@pytest.mark.parametrize("t", ["bf16", "f16"])
@pytest.mark.parametrize("m, k, n", [(16, 32, 48), (3, 5, 7)])  # tiles; scalar loops
def test_converted_operands_are_read_narrow(t, m, k, n):
    module = accy.parse(MIXED.format(m=m, k=k, n=n, t=t))
    rng = np.random.default_rng(1)
    x = rng.uniform(-1, 1, (m, k)).astype(TYPES[t])
    w = rng.uniform(-1, 1, (k, n)).astype(TYPES[t])
    function = accy.compile(module, target="cpu")
    assert function.preparation.arena.temporaries_size == 0
    got = function(x, w)[0]
    np.testing.assert_allclose(got, run(module, "mixed", x, w)[0], rtol=1e-5, atol=1e-5)


def test_the_cuda_export_reads_the_narrow_operands(tmp_path):
    module = accy.parse(MIXED.format(m=16, k=32, n=48, t="bf16"))
    directory = accy.export(module, tmp_path / "mixed", target="cuda")
    assert not ptxas_problems(directory)
    x = np.ones((16, 32), ml_dtypes.bfloat16)
    w = np.ones((32, 48), ml_dtypes.bfloat16)
    result = run_with_fake_driver(directory, [x, w], function="mixed")
    assert not plan_problems(directory, "mixed", result)
    assert accy.prepare(module).arena.temporaries_size == 0  # no f32 copies on the device
    launches = [c for c in result["calls"] if c.startswith("launch")]
    assert len(launches) == 1  # the product alone: no convert kernels


INTEGER = """func.func @quantized(%x: tensor<{m}x{k}x{t}>, %w: tensor<{k}x{n}x{t}>) -> tensor<{m}x{n}xi32> {{
  %xi = accy.convert %x : (tensor<{m}x{k}x{t}>) -> tensor<{m}x{k}xi32>
  %wi = accy.convert %w : (tensor<{k}x{n}x{t}>) -> tensor<{k}x{n}xi32>
  %y = accy.dot_general %xi, %wi, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<{m}x{k}xi32>, tensor<{k}x{n}xi32>) -> tensor<{m}x{n}xi32>
  func.return %y : tensor<{m}x{n}xi32>
}}"""


@pytest.mark.parametrize("t", ["i8", "ui8"])
@pytest.mark.parametrize("m, k, n", [(16, 32, 48), (3, 5, 7)])
def test_integer_operands_are_read_narrow_and_extended(t, m, k, n, tmp_path):
    # i8 x i8 -> i32 as JAX writes it (preferred_element_type=int32): sign- or
    # zero-extended as loaded, no i32 copy of either operand.
    module = accy.parse(INTEGER.format(m=m, k=k, n=n, t=t))
    rng = np.random.default_rng(2)
    dtype = np.int8 if t == "i8" else np.uint8
    x = rng.integers(np.iinfo(dtype).min, np.iinfo(dtype).max, (m, k)).astype(dtype)
    w = rng.integers(np.iinfo(dtype).min, np.iinfo(dtype).max, (k, n)).astype(dtype)
    function = accy.compile(module, target="cpu")
    assert function.preparation.arena.temporaries_size == 0
    got = function(x, w)[0]
    np.testing.assert_array_equal(got, x.astype(np.int32) @ w.astype(np.int32))
    np.testing.assert_array_equal(got, run(module, "quantized", x, w)[0])
    directory = accy.export(module, tmp_path / "q", target="cuda")
    assert not ptxas_problems(directory)


EPILOGUE_THEN_PROLOGUE = """func.func @mlp(%x: tensor<8x16x{t}>, %w1: tensor<16x32x{t}>, %b1: tensor<32x{t}>, %w2: tensor<32x8x{w}>) -> tensor<8x8x{w}> {{
  %h = accy.dot_general %x, %w1, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<8x16x{t}>, tensor<16x32x{t}>) -> tensor<8x32x{t}>
  %bb = accy.broadcast_in_dim %b1, dims = [1] : (tensor<32x{t}>) -> tensor<8x32x{t}>
  %hb = accy.add %h, %bb : tensor<8x32x{t}>
  %z = accy.constant dense<0.0> : tensor<8x32x{t}>
  %r = accy.maximum %hb, %z : tensor<8x32x{t}>
  %rf = accy.convert %r : (tensor<8x32x{t}>) -> tensor<8x32x{w}>
  %y = accy.dot_general %rf, %w2, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<8x32x{w}>, tensor<32x8x{w}>) -> tensor<8x8x{w}>
  func.return %y : tensor<8x8x{w}>
}}"""


@pytest.mark.parametrize("t, w", [("bf16", "f32"), ("f16", "f32"), ("f32", "f64")])
def test_an_epilogue_before_a_prologue_convert_is_the_first_products(t, w, tmp_path):
    # A product whose epilogue (bias + ReLU) ends in a value that a widening convert feeds
    # to the next product (a mixed-precision MLP): the convert's producers stay in the
    # first product's kernel, stored narrow, and the second product loads and extends
    # them (this was "kernel 1 reads ... accy.maximum from no buffer").
    module = accy.parse(EPILOGUE_THEN_PROLOGUE.format(t=t, w=w))
    types = {**TYPES, "f32": np.float32, "f64": np.float64}
    rng = np.random.default_rng(3)
    shapes = [(8, 16), (16, 32), (32,), (32, 8)]
    args = [rng.uniform(-1, 1, s).astype(types[t if i < 3 else w]) for i, s in enumerate(shapes)]
    preparation = accy.prepare(module)
    kinds = [item.kind for item in preparation.schedule.work_items]
    assert kinds == ["dot", "dot"], kinds
    got = accy.compile(module, target="cpu")(*args)[0]
    np.testing.assert_allclose(got, run(module, "mlp", *args)[0], rtol=1e-5, atol=1e-5)
    directory = accy.export(module, tmp_path / "mlp", target="cuda")
    assert not ptxas_problems(directory)
    result = run_with_fake_driver(directory, args, function="mlp")
    assert not plan_problems(directory, "mlp", result)


SPLAT_PROLOGUE = """func.func @f(%x: tensor<12x8xbf16>) -> tensor<8x8xf32> {
  %c = accy.constant dense<-1.5> : tensor<8x8x12xbf16>
  %xf = accy.convert %x : (tensor<12x8xbf16>) -> tensor<12x8xf32>
  %cf = accy.convert %c : (tensor<8x8x12xbf16>) -> tensor<8x8x12xf32>
  %y = accy.dot_general %xf, %cf, batching_dims = [1] x [1], contracting_dims = [0] x [2] : (tensor<12x8xf32>, tensor<8x8x12xf32>) -> tensor<8x8xf32>
  func.return %y : tensor<8x8xf32>
}"""


def test_a_splat_constant_a_product_loads_as_its_prologue_keeps_its_buffer(tmp_path):
    # A splat over 256 bytes read only element by element is folded to a scalar (no
    # buffer); one that a product's operand prologue loads is read from memory (this was
    # "kernel 0 reads ... accy.constant from no buffer", found by the program fuzzer).
    module = accy.parse(SPLAT_PROLOGUE)
    x = np.random.default_rng(4).uniform(-1, 1, (12, 8)).astype(ml_dtypes.bfloat16)
    (got,) = accy.compile(module, target="cpu")(x)
    np.testing.assert_allclose(got, run(module, "f", x)[0], rtol=1e-6)
    directory = accy.export(module, tmp_path / "splat", target="cuda")
    assert not ptxas_problems(directory)
    assert not plan_problems(directory, "f", run_with_fake_driver(directory, [x], function="f"))


@pytest.mark.parametrize("m, k, n", [(16, 32, 48), (7, 1, 16), (8, 64, 8)])
def test_bf16_products_read_subnormal_operands_as_themselves(m, k, n):
    # vdpbf16ps (AVX512_BF16) reads subnormal bf16 inputs as zero: a call whose operands
    # hold one runs the tiles that extend and multiply (9.2e-41 x -3.0e38 = -0.0276, not 0;
    # found by the program fuzzer). Without subnormals both paths agree with the reference.
    module = accy.parse(MIXED.format(m=m, k=k, n=n, t="bf16"))
    function = accy.compile(module, target="cpu")
    rng = np.random.default_rng(5)
    x = rng.uniform(-1, 1, (m, k)).astype(ml_dtypes.bfloat16)
    w = rng.uniform(-1, 1, (k, n)).astype(ml_dtypes.bfloat16)
    np.testing.assert_allclose(function(x, w)[0], run(module, "mixed", x, w)[0], rtol=1e-5)
    x[m // 2, 0] = ml_dtypes.bfloat16(9.18355e-41)
    w[0, :] = ml_dtypes.bfloat16(-3.0e38)
    (got,) = function(x, w)
    (want,) = run(module, "mixed", x, w)
    assert want[m // 2, 0] != 0
    np.testing.assert_allclose(got, want, rtol=1e-5)
