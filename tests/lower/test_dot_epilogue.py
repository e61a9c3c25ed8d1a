"""A `dot_general` computes its epilogue: the elementwise ops after it on its shape (bias,
scale, activation, residual add, a final convert to a narrower type) join its work item, on
the CPU (register tiles of both forms, bf16 pairs, packed panels, scalar loops) and in the
CUDA export (values: on a GPU). The output may take, in place, the buffer of an input the epilogue reads
pointwise (a residual that dies there)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import accy
from accy.reference import run
from accy.runtime.plan_check import plan_problems, ptxas_problems, run_with_fake_driver

RNG = np.random.default_rng(3)

DENSE = """func.func @dense(%x: tensor<{m}x{k}x{t}>, %w: tensor<{wshape}x{t}>, %b: tensor<{n}x{t}>, %r: tensor<{m}x{n}x{t}>) -> tensor<{m}x{n}x{t}> {{
  %y = accy.dot_general %x, %w, batching_dims = [] x [], contracting_dims = [1] x [{wk}] : (tensor<{m}x{k}x{t}>, tensor<{wshape}x{t}>) -> tensor<{m}x{n}x{t}>
  %bb = accy.broadcast_in_dim %b, dims = [1] : (tensor<{n}x{t}>) -> tensor<{m}x{n}x{t}>
  %z = accy.add %y, %bb : tensor<{m}x{n}x{t}>
  %zero = accy.constant dense<{zero}> : tensor<{m}x{n}x{t}>
  %a = accy.maximum %z, %zero : tensor<{m}x{n}x{t}>
  %s = accy.add %a, %r : tensor<{m}x{n}x{t}>
  func.return %s : tensor<{m}x{n}x{t}>
}}"""

TYPES = {"f32": np.float32, "bf16": ml_dtypes.bfloat16, "f64": np.float64, "i32": np.int32}


def dense(m, k, n, t="f32", transposed=False) -> str:
    wshape = f"{n}x{k}" if transposed else f"{k}x{n}"
    zero = "0" if t == "i32" else "0.0"
    return DENSE.format(m=m, k=k, n=n, t=t, wshape=wshape, wk=1 if transposed else 0, zero=zero)


def arrays(m, k, n, t, transposed=False):
    dtype = TYPES[t]
    if t == "i32":
        draw = lambda *s: RNG.integers(-5, 5, s).astype(dtype)
    else:
        draw = lambda *s: RNG.uniform(-1, 1, s).astype(dtype)
    w = draw(n, k) if transposed else draw(k, n)
    return draw(m, k), w, draw(n), draw(m, n)


@pytest.mark.parametrize(
    "m, k, n, t, transposed",
    [
        (16, 24, 64, "f32", False),  # columns form, two vectors per tile
        (13, 24, 64, "f32", False),  # 13 rows: tiles of 8, then one-row tiles
        (11, 40, 96, "bf16", False),  # the same with bf16 pairs
        (8, 33, 100, "f32", False),  # columns form, N's remainder one masked vector
        (6, 40, 12, "bf16", False),  # bf16 (pairs of k where the CPU sums them)
        (12, 40, 10, "f32", True),  # rows form (A . B^T)
        (5, 7, 9, "f64", False),  # scalar loops
        (4, 6, 5, "i32", False),  # scalar loops, integers
    ],
)
def test_the_product_computes_bias_activation_and_residual(m, k, n, t, transposed):
    module = accy.parse(dense(m, k, n, t, transposed))
    prepared = accy.prepare(module, target="cpu")
    (item,) = prepared.schedule.work_items
    assert (item.kind.value, item.root.name) == ("dot", "accy.add")
    args = arrays(m, k, n, t, transposed)
    got = accy.compile(module, target="cpu")(*args)[0]
    want = run(module, "dense", *args)[0]
    if t == "i32":
        np.testing.assert_array_equal(got, want)
    else:
        tolerance = 2e-2 if t == "bf16" else 1e-5
        np.testing.assert_allclose(
            got.astype(np.float64), want.astype(np.float64), rtol=tolerance, atol=tolerance
        )


RESIDUAL = """func.func @block(%x: tensor<32x64xf32>, %w1: tensor<64x64xf32>, %w2: tensor<64x64xf32>) -> tensor<64x32xf32> {
  %h = accy.dot_general %x, %w1, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<32x64xf32>, tensor<64x64xf32>) -> tensor<32x64xf32>
  %t = accy.tanh %h : tensor<32x64xf32>
  %y = accy.dot_general %x, %w2, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<32x64xf32>, tensor<64x64xf32>) -> tensor<32x64xf32>
  %s = accy.add %y, %t : tensor<32x64xf32>
  %o = accy.transpose %s, dims = [1, 0] : (tensor<32x64xf32>) -> tensor<64x32xf32>
  func.return %o : tensor<64x32xf32>
}"""


@pytest.mark.parametrize("threads", [1, 2])
def test_the_output_takes_the_residual_in_place(threads):
    # The tanh joins the second product's epilogue (its one consumer), so the first
    # product is stored: %h is read only by that epilogue, pointwise, and dies there, so
    # %s takes its buffer.
    module = accy.parse(RESIDUAL)
    prepared = accy.prepare(module, target="cpu")
    items = prepared.schedule.work_items
    assert [(i.kind.value, i.root.name) for i in items] == [
        ("dot", "accy.dot_general"),
        ("dot", "accy.add"),
        ("transpose", "accy.transpose"),
    ]
    assert prepared.arena.temporaries_size == 32 * 64 * 4  # one buffer for %h and %s
    x = RNG.uniform(-1, 1, (32, 64)).astype(np.float32)
    w1, w2 = (RNG.uniform(-0.2, 0.2, (64, 64)).astype(np.float32) for _ in range(2))
    got = accy.compile(module, target="cpu", threads=threads)(x, w1, w2)[0]
    np.testing.assert_allclose(got, run(module, "block", x, w1, w2)[0], rtol=1e-5, atol=1e-5)


NARROWING = """func.func @dense(%x: tensor<{m}x{k}x{t}>, %w: tensor<{wshape}x{t}>, %b: tensor<{n}x{t}>) -> tensor<{m}x{n}x{o}> {{
  %y = accy.dot_general %x, %w, batching_dims = [] x [], contracting_dims = [1] x [{wk}] : (tensor<{m}x{k}x{t}>, tensor<{wshape}x{t}>) -> tensor<{m}x{n}x{t}>
  %bb = accy.broadcast_in_dim %b, dims = [1] : (tensor<{n}x{t}>) -> tensor<{m}x{n}x{t}>
  %z = accy.add %y, %bb : tensor<{m}x{n}x{t}>
  %zero = accy.constant dense<0.0> : tensor<{m}x{n}x{t}>
  %a = accy.maximum %z, %zero : tensor<{m}x{n}x{t}>
  %o = accy.convert %a : (tensor<{m}x{n}x{t}>) -> tensor<{m}x{n}x{o}>
  func.return %o : tensor<{m}x{n}x{o}>
}}"""
"""A mixed-precision dense layer: the product in `t`, its bias and ReLU, stored as `o`."""


def narrowing(m, k, n, t, o, transposed=False) -> str:
    wshape = f"{n}x{k}" if transposed else f"{k}x{n}"
    return NARROWING.format(m=m, k=k, n=n, t=t, o=o, wshape=wshape, wk=1 if transposed else 0)


@pytest.mark.parametrize(
    "m, k, n, t, o, transposed",
    [
        (16, 24, 64, "f32", "bf16", False),  # columns form
        (8, 33, 100, "f32", "f16", False),  # columns form, a masked vector
        (12, 40, 10, "f32", "bf16", True),  # rows form
        (11, 40, 96, "bf16", "f32", False),  # bf16 pairs, widened as stored
        (24, 320, 1000, "f32", "bf16", False),  # packed panels
        (5, 7, 9, "f64", "f32", False),  # scalar loops
    ],
)
def test_an_epilogue_that_ends_in_a_convert_stores_the_converted_value(m, k, n, t, o, transposed):
    # The product's own result is never stored: the arena holds no buffer (the packed
    # product's panels, a workspace, are its only bytes).
    module = accy.parse(narrowing(m, k, n, t, o, transposed))
    prepared = accy.prepare(module, target="cpu")
    (item,) = prepared.schedule.work_items
    assert (item.kind.value, item.root.name) == ("dot", "accy.convert")
    assert prepared.arena.functions["dense"].offsets == {}
    x, w, b, _ = arrays(m, k, n, t, transposed)
    got = accy.compile(module, target="cpu")(x, w, b)[0]
    want = run(module, "dense", x, w, b)[0]
    assert got.dtype == want.dtype
    tolerance = 1e-5 if o in ("f32", "f64") and t != "bf16" else 2e-2
    np.testing.assert_allclose(
        got.astype(np.float64), want.astype(np.float64), rtol=tolerance, atol=tolerance
    )


@pytest.mark.parametrize(
    "tail",
    [
        # the product is also returned: it is stored, and the add is a kernel of its own
        "%s = accy.add %y, %r : tensor<8x16xf32>\n  func.return %s, %y : tensor<8x16xf32>, tensor<8x16xf32>",
        # a reduction is not elementwise
        "%s = accy.reduce add %y, dims = [1] : (tensor<8x16xf32>) -> tensor<8xf32>\n  func.return %s : tensor<8xf32>",
    ],
)
def test_the_product_keeps_its_result_where_an_epilogue_cannot_take_it(tail):
    results = tail.rpartition(": ")[2]
    text = f"""func.func @f(%x: tensor<8x4xf32>, %w: tensor<4x16xf32>, %r: tensor<8x16xf32>) -> ({results}) {{
  %y = accy.dot_general %x, %w, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<8x4xf32>, tensor<4x16xf32>) -> tensor<8x16xf32>
  {tail}
}}"""
    module = accy.parse(text)
    items = accy.prepare(module, target="cpu").schedule.work_items
    assert (items[0].kind.value, items[0].root.name) == ("dot", "accy.dot_general")
    args = [RNG.uniform(-1, 1, s).astype(np.float32) for s in [(8, 4), (4, 16), (8, 16)]]
    for got, want in zip(accy.compile(module, target="cpu")(*args), run(module, "f", *args)):
        np.testing.assert_allclose(
            np.asarray(got, np.float64), np.asarray(want, np.float64), rtol=1e-2, atol=1e-2
        )


def test_two_products_summed_are_one_epilogue_and_one_product():
    # SwiGLU's and an LSTM's shape: a group computes one product; the other is stored.
    text = """func.func @f(%x: tensor<8x4xf32>, %w: tensor<4x16xf32>, %v: tensor<4x16xf32>) -> tensor<8x16xf32> {
  %a = accy.dot_general %x, %w, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<8x4xf32>, tensor<4x16xf32>) -> tensor<8x16xf32>
  %b = accy.dot_general %x, %v, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<8x4xf32>, tensor<4x16xf32>) -> tensor<8x16xf32>
  %s = accy.add %a, %b : tensor<8x16xf32>
  func.return %s : tensor<8x16xf32>
}"""
    module = accy.parse(text)
    items = accy.prepare(module, target="cpu").schedule.work_items
    assert [(i.kind.value, i.root.name) for i in items] == [
        ("dot", "accy.dot_general"),
        ("dot", "accy.add"),
    ]
    args = [RNG.uniform(-1, 1, s).astype(np.float32) for s in [(8, 4), (4, 16), (4, 16)]]
    got = accy.compile(module, target="cpu")(*args)[0]
    np.testing.assert_allclose(got, run(module, "f", *args)[0], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("k", [64, 5000])  # dot.tiled; dot.splitk (k > 4096)
def test_the_cuda_export_computes_the_epilogue_as_it_stores(k, tmp_path):
    module = accy.parse(dense(16, k, 48))
    directory = accy.export(module, tmp_path / "dense", target="cuda")
    assert not ptxas_problems(directory)
    args = [np.ones(a.shape, np.float32) for a in arrays(16, k, 48, "f32")]
    result = run_with_fake_driver(directory, args, function="dense")
    assert not plan_problems(directory, "dense", result)
    launches = [c for c in result["calls"] if c.startswith("launch")]
    assert len(launches) == (1 if k == 64 else 2)  # the product and its epilogue, no more


@pytest.mark.parametrize("k", [64, 5000])  # dot.tiled; dot.splitk (k > 4096)
def test_the_cuda_export_stores_an_epilogue_that_ends_in_a_convert(k, tmp_path):
    module = accy.parse(narrowing(16, k, 48, "f32", "bf16"))
    directory = accy.export(module, tmp_path / "dense", target="cuda")
    assert not ptxas_problems(directory)
    args = [np.ones(a.shape, np.float32) for a in arrays(16, k, 48, "f32")[:3]]
    result = run_with_fake_driver(directory, args, function="dense")
    assert not plan_problems(directory, "dense", result)
    launches = [c for c in result["calls"] if c.startswith("launch")]
    assert len(launches) == (1 if k == 64 else 2)


UNTILED = """func.func @project(%a: tensor<2x4x16x8xf32>, %w: tensor<4x8x32xf32>, %b: tensor<32xf32>, %x: tensor<2x32x16xf32>) -> tensor<2x16x32x{o}> {{
  %t = accy.transpose %x, dims = [0, 2, 1] : (tensor<2x32x16xf32>) -> tensor<2x16x32xf32>
  %y = accy.dot_general %a, %w, batching_dims = [] x [], contracting_dims = [1, 3] x [0, 1] : (tensor<2x4x16x8xf32>, tensor<4x8x32xf32>) -> tensor<2x16x32xf32>
  %bb = accy.broadcast_in_dim %b, dims = [2] : (tensor<32xf32>) -> tensor<2x16x32xf32>
  %z = accy.add %y, %bb : tensor<2x16x32xf32>
  %s = accy.add %z, %t : tensor<2x16x32xf32>
  {tail}
}}"""
"""Attention's output projection as JAX writes it after its transpose is folded: two
contracting dims, so no register tiles; a bias and a residual (a temporary that dies
there) after it."""


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("o", ["f32", "bf16"])
def test_a_product_without_tiles_accumulates_in_its_output_then_runs_its_epilogue(o, threads):
    # In f32 the product accumulates into the output, vectorized along it, and the
    # epilogue replaces each element after: the output is zeroed first, so it does not
    # take the residual's buffer. Ending in bf16, each element is summed on its own and
    # stored as its epilogue's value, so the output may not share the residual's either
    # (the types differ) and the plan is the same.
    tail = (
        "func.return %s : tensor<2x16x32xf32>"
        if o == "f32"
        else "%n = accy.convert %s : (tensor<2x16x32xf32>) -> tensor<2x16x32xbf16>\n"
        "  func.return %n : tensor<2x16x32xbf16>"
    )
    module = accy.parse(UNTILED.format(o=o, tail=tail))
    prepared = accy.prepare(module, target="cpu")
    assert [(i.kind.value, i.root.name) for i in prepared.schedule.work_items] == [
        ("transpose", "accy.transpose"),
        ("dot", "accy.add" if o == "f32" else "accy.convert"),
    ]
    arena = prepared.arena.functions["project"]
    assert (arena.in_outputs, arena.reuses) == ({}, {})
    assert prepared.arena.temporaries_size == 2 * 16 * 32 * 4  # the residual, on its own
    a = RNG.uniform(-1, 1, (2, 4, 16, 8)).astype(np.float32)
    w = RNG.uniform(-1, 1, (4, 8, 32)).astype(np.float32)
    b = RNG.uniform(-1, 1, 32).astype(np.float32)
    x = RNG.uniform(-1, 1, (2, 32, 16)).astype(np.float32)
    got = accy.compile(module, target="cpu", threads=threads)(a, w, b, x)[0]
    want = run(module, "project", a, w, b, x)[0]
    tolerance = 1e-5 if o == "f32" else 2e-2
    np.testing.assert_allclose(
        got.astype(np.float64), want.astype(np.float64), rtol=tolerance, atol=tolerance
    )
