"""`dot.packed` (CPU): products whose rhs the tiles would read across pages pack it into
contiguous panels first (`accy.passes.families.dot_packed`)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from accy.passes.dot_layout import dot_tiling
from accy.passes.families.dot_packed import (
    PACK_CACHED_BYTES,
    PACK_MIN_BYTES,
    PACK_MIN_STRIDE,
    PACK_SLOTS,
    packed_panels,
)

import accy
from accy.reference import run

DENSE = """func.func @dense(%x: tensor<{m}x{k}x{t}>, %w: tensor<{k}x{n}x{t}>, %b: tensor<{n}x{t}>) -> tensor<{m}x{n}x{t}> {{
  %y = accy.dot_general %x, %w, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<{m}x{k}x{t}>, tensor<{k}x{n}x{t}>) -> tensor<{m}x{n}x{t}>
  %bb = accy.broadcast_in_dim %b, dims = [1] : (tensor<{n}x{t}>) -> tensor<{m}x{n}x{t}>
  %z = accy.add %y, %bb : tensor<{m}x{n}x{t}>
  %zero = accy.constant dense<0.0> : tensor<{m}x{n}x{t}>
  %a = accy.maximum %z, %zero : tensor<{m}x{n}x{t}>
  func.return %a : tensor<{m}x{n}x{t}>
}}"""
"""A dense layer: the product, a bias and a ReLU (its epilogue)."""

RNG = np.random.default_rng(7)


def dense(m: int, k: int, n: int, t: str = "f32") -> str:
    return DENSE.format(m=m, k=k, n=n, t=t)


def arrays(m: int, k: int, n: int, t: str) -> list[np.ndarray]:
    dtype = np.float32 if t == "f32" else ml_dtypes.bfloat16
    return [RNG.uniform(-1, 1, shape).astype(dtype) for shape in ((m, k), (k, n), (n,))]


BATCHED = """func.func @scores(%q: tensor<3x64x{k}xbf16>, %k: tensor<3x{k}x{n}xbf16>) -> tensor<3x64x{n}xf32> {{
  %qf = accy.convert %q : (tensor<3x64x{k}xbf16>) -> tensor<3x64x{k}xf32>
  %kf = accy.convert %k : (tensor<3x{k}x{n}xbf16>) -> tensor<3x{k}x{n}xf32>
  %s = accy.dot_general %qf, %kf, batching_dims = [0] x [0], contracting_dims = [2] x [1] : (tensor<3x64x{k}xf32>, tensor<3x{k}x{n}xf32>) -> tensor<3x64x{n}xf32>
  func.return %s : tensor<3x64x{n}xf32>
}}"""


def _kernel_families(exe) -> list[str | None]:
    return [
        op.family.data if op.family else None
        for op in exe.planned.walk()
        if op.name == "accy.kernel"
    ]


@pytest.mark.parametrize(
    "m, k, n, t",
    [
        (40, 384, 1024, "f32"),  # whole strips of two vectors
        (24, 320, 1000, "f32"),  # N's remainder read in place, one masked vector
        (16, 640, 1040, "bf16"),  # bf16 panels (pairs of k where the CPU sums them)
    ],
)
def test_packed_products_compute_their_epilogue(m, k, n, t):
    module = accy.parse(dense(m, k, n, t))
    exe = accy.compile(module)
    assert _kernel_families(exe) == ["dot.packed"]
    args = arrays(m, k, n, t)
    got, want = exe(*args)[0], run(module, "dense", *args)[0]
    tolerance = 2e-2 if t == "bf16" else 1e-5
    np.testing.assert_allclose(
        got.astype(np.float64), want.astype(np.float64), rtol=tolerance, atol=tolerance
    )


def test_the_panels_are_a_planned_workspace_of_the_rhs_strips():
    module = accy.parse(dense(24, 320, 1000, "f32"))
    prepared = accy.prepare(module)
    (term,) = prepared.workspaces.terms
    # 1000 columns: 31 strips of 32 (two vectors of 16 f32), 8 columns read in place
    assert (term.family, term.name, term.bytes, term.arena) == (
        "dot.packed",
        "panels",
        31 * 320 * 32 * 4,
        True,
    )
    product = next(op for op in module.walk() if op.name == "accy.dot_general")
    assert packed_panels(product).shape == (31, 320, 32)


TRANSPOSED = """func.func @dense(%x: tensor<{m}x{k}x{t}>, %w: tensor<{n}x{k}x{t}>, %b: tensor<{n}x{t}>) -> tensor<{m}x{n}x{t}> {{
  %y = accy.dot_general %x, %w, batching_dims = [] x [], contracting_dims = [1] x [1] : (tensor<{m}x{k}x{t}>, tensor<{n}x{k}x{t}>) -> tensor<{m}x{n}x{t}>
  %bb = accy.broadcast_in_dim %b, dims = [1] : (tensor<{n}x{t}>) -> tensor<{m}x{n}x{t}>
  %z = accy.add %y, %bb : tensor<{m}x{n}x{t}>
  %g = accy.tanh %z : tensor<{m}x{n}x{t}>
  func.return %g : tensor<{m}x{n}x{t}>
}}"""
"""A dense layer with its weights stored `[n, k]` (GPT-2's Conv1D, `x @ w.T`): the `rows`
form, packed across K into columns-form panels."""


@pytest.mark.parametrize(
    "m, k, n, t",
    [
        (64, 300, 1024, "f32"),  # k: 18 blocks of 16 and 12 positions one at a time
        (72, 320, 2048, "bf16"),
    ],
)
def test_an_rhs_read_along_k_is_packed_across_it_for_the_columns_tiles(m, k, n, t):
    module = accy.parse(TRANSPOSED.format(m=m, k=k, n=n, t=t))
    product = next(op for op in module.walk() if op.name == "accy.dot_general")
    assert dot_tiling(product).form == "rows"
    panels = packed_panels(product)
    width = dot_tiling(product, transposed_panels=True).columns * 16
    assert panels.transposed and panels.shape == (n // width, k, width)
    exe = accy.compile(module)
    assert _kernel_families(exe) == ["dot.packed"]
    dtype = np.float32 if t == "f32" else ml_dtypes.bfloat16
    args = [RNG.uniform(-1, 1, s).astype(dtype) for s in ((m, k), (n, k), (n,))]
    got, want = exe(*args)[0], run(module, "dense", *args)[0]
    tolerance = 2e-2 if t == "bf16" else 1e-5
    np.testing.assert_allclose(
        got.astype(np.float64), want.astype(np.float64), rtol=tolerance, atol=tolerance
    )


def test_attention_scores_pack_the_keys_across_the_head_dim():
    # q . k^T as JAX writes it: [b, s, h, d] . [b, s, h, d], batch (b, h), contracting d;
    # the keys' free dim (s) lies between batch dims
    s, heads = 1056, 4
    text = f"""func.func @scores(%q: tensor<1x{s}x{heads}x64xf32>, %k: tensor<1x{s}x{heads}x64xf32>) -> tensor<1x{heads}x{s}x{s}xf32> {{
  %w = accy.dot_general %q, %k, batching_dims = [0, 2] x [0, 2], contracting_dims = [3] x [3] : (tensor<1x{s}x{heads}x64xf32>, tensor<1x{s}x{heads}x64xf32>) -> tensor<1x{heads}x{s}x{s}xf32>
  func.return %w : tensor<1x{heads}x{s}x{s}xf32>
}}"""
    module = accy.parse(text)
    product = next(op for op in module.walk() if op.name == "accy.dot_general")
    assert packed_panels(product).shape == (1, heads, s // 32, 64, 32)
    exe = accy.compile(module)
    assert _kernel_families(exe) == ["dot.packed"]
    q, k = (RNG.uniform(-1, 1, (1, s, heads, 64)).astype(np.float32) for _ in range(2))
    np.testing.assert_allclose(
        exe(q, k)[0], np.einsum("bqhd,bkhd->bhqk", q, k), rtol=1e-5, atol=1e-4
    )


def test_an_rhs_read_along_k_that_few_rows_share_stays_in_place():
    module = accy.parse(TRANSPOSED.format(m=8, k=300, n=1024, t="f32"))
    assert _kernel_families(accy.compile(module)) == [None]


def test_a_large_rhs_few_rows_share_is_packed_strip_by_strip_into_slots():
    # 1024 x 4408 f32 (17.2 MiB) > PACK_CACHED_BYTES, 19 rows: strip panels, one per task
    m, k, n = 19, 1024, 4408
    assert k * n * 4 > PACK_CACHED_BYTES
    module = accy.parse(dense(m, k, n))
    product = next(op for op in module.walk() if op.name == "accy.dot_general")
    panels, tiling = packed_panels(product), dot_tiling(product)
    width = tiling.columns * tiling.lanes
    assert panels.slots and panels.shape == (PACK_SLOTS, k, width)
    (term,) = accy.prepare(module).workspaces.terms
    assert (term.family, term.bytes) == ("dot.packed", PACK_SLOTS * k * width * 4)
    exe = accy.compile(module)
    assert _kernel_families(exe) == ["dot.packed"]
    args = arrays(m, k, n, "f32")  # whole strips, and a remainder read in place
    np.testing.assert_allclose(exe(*args)[0], run(module, "dense", *args)[0], rtol=1e-4, atol=1e-4)
    one_thread = accy.compile(module, threads=1)
    np.testing.assert_allclose(one_thread(*args)[0], exe(*args)[0], rtol=1e-6, atol=1e-6)


def test_a_batched_product_with_widened_operands_packs_each_batch():
    text = BATCHED.format(k=192, n=1536)
    module = accy.parse(text)
    exe = accy.compile(module)
    assert _kernel_families(exe) == ["dot.packed"]
    rng = np.random.default_rng(5)
    q = rng.uniform(-1, 1, (3, 64, 192)).astype(ml_dtypes.bfloat16)
    key = rng.uniform(-1, 1, (3, 192, 1536)).astype(ml_dtypes.bfloat16)
    np.testing.assert_allclose(
        exe(q, key)[0], run(module, "scores", q, key)[0], rtol=1e-5, atol=1e-4
    )


def test_products_read_in_place_stay_unpacked():
    # rows of the rhs closer than PACK_MIN_STRIDE: the tiles read it in place
    n = PACK_MIN_STRIDE // 4 // 2
    assert _kernel_families(accy.compile(accy.parse(dense(16, 2048, n)))) == [None]
    # an rhs of at most PACK_MIN_BYTES stays in the cache
    k = PACK_MIN_BYTES // (1024 * 4)
    assert _kernel_families(accy.compile(accy.parse(dense(16, k, 1024)))) == [None]
