"""softmax(Q K^T) V is one `attention` work item (`fusion.attention_chain`): the scores are
never stored. On the CPU the heads are packed on the stack and queries run in blocks where
the shapes allow (`cpu_kernels.attention.Packing`), else row by row; the CUDA export runs
one thread per score row. The rule refuses chains whose values leave them or that are not
row-wise."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from accy.passes.lower.attention_rows import AttentionRows
from accy.passes.lower.cpu_kernels.attention import Packing

import accy
from accy.reference import run
from accy.runtime.plan_check import plan_problems, ptxas_problems, run_with_fake_driver

RNG = np.random.default_rng(7)

FLAX = """func.func @attend(%q: tensor<{b}x{n}x{h}x{d}x{t}>, %k: tensor<{b}x{m}x{h}x{d}x{t}>, %v: tensor<{b}x{m}x{h}x{e}x{t}>) -> tensor<{b}x{h}x{n}x{e}x{t}> {{
  %s = accy.dot_general %q, %k, batching_dims = [0, 2] x [0, 2], contracting_dims = [3] x [3] : (tensor<{b}x{n}x{h}x{d}x{t}>, tensor<{b}x{m}x{h}x{d}x{t}>) -> tensor<{b}x{h}x{n}x{m}x{t}>
  %mx = accy.reduce max %s, dims = [3] : (tensor<{b}x{h}x{n}x{m}x{t}>) -> tensor<{b}x{h}x{n}x{t}>
  %m1 = accy.broadcast_in_dim %mx, dims = [0, 1, 2] : (tensor<{b}x{h}x{n}x{t}>) -> tensor<{b}x{h}x{n}x1x{t}>
  %mb = accy.broadcast_in_dim %m1, dims = [0, 1, 2, 3] : (tensor<{b}x{h}x{n}x1x{t}>) -> tensor<{b}x{h}x{n}x{m}x{t}>
  %z = accy.subtract %s, %mb : tensor<{b}x{h}x{n}x{m}x{t}>
  %e = accy.exponential %z : tensor<{b}x{h}x{n}x{m}x{t}>
  %sum = accy.reduce add %e, dims = [3] : (tensor<{b}x{h}x{n}x{m}x{t}>) -> tensor<{b}x{h}x{n}x{t}>
  %sb = accy.broadcast_in_dim %sum, dims = [0, 1, 2] : (tensor<{b}x{h}x{n}x{t}>) -> tensor<{b}x{h}x{n}x{m}x{t}>
  %p = accy.divide %e, %sb : tensor<{b}x{h}x{n}x{m}x{t}>
  %o = accy.dot_general %p, %v, batching_dims = [0, 1] x [0, 2], contracting_dims = [3] x [1] : (tensor<{b}x{h}x{n}x{m}x{t}>, tensor<{b}x{m}x{h}x{e}x{t}>) -> tensor<{b}x{h}x{n}x{e}x{t}>
  {tail}
}}"""
"""Flax's dot_product_attention after accy's folds: q, k, v as [batch, length, heads,
depth], the scores as [batch, heads, queries, keys]."""

CAUSAL = """func.func @attend(%q: tensor<{b}x{h}x{n}x{d}xf32>, %k: tensor<{b}x{h}x{n}x{d}xf32>, %v: tensor<{b}x{h}x{n}x{e}xf32>) -> tensor<{b}x{h}x{n}x{e}xf32> {{
  %raw = accy.dot_general %q, %k, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [3] : (tensor<{b}x{h}x{n}x{d}xf32>, tensor<{b}x{h}x{n}x{d}xf32>) -> tensor<{b}x{h}x{n}x{n}xf32>
  %c = accy.constant dense<0.125> : tensor<{b}x{h}x{n}x{n}xf32>
  %s = accy.multiply %raw, %c : tensor<{b}x{h}x{n}x{n}xf32>
  %i = accy.iota dim = 2 : tensor<{b}x{h}x{n}x{n}xi32>
  %j = accy.iota dim = 3 : tensor<{b}x{h}x{n}x{n}xi32>
  %keep = accy.compare GE, %i, %j : (tensor<{b}x{h}x{n}x{n}xi32>, tensor<{b}x{h}x{n}x{n}xi32>) -> tensor<{b}x{h}x{n}x{n}xi1>
  %low = accy.constant dense<-1.0e+09> : tensor<{b}x{h}x{n}x{n}xf32>
  %masked = accy.select %keep, %s, %low : tensor<{b}x{h}x{n}x{n}xi1>, tensor<{b}x{h}x{n}x{n}xf32>
  %mx = accy.reduce max %masked, dims = [3] : (tensor<{b}x{h}x{n}x{n}xf32>) -> tensor<{b}x{h}x{n}xf32>
  %mb = accy.broadcast_in_dim %mx, dims = [0, 1, 2] : (tensor<{b}x{h}x{n}xf32>) -> tensor<{b}x{h}x{n}x{n}xf32>
  %z = accy.subtract %masked, %mb : tensor<{b}x{h}x{n}x{n}xf32>
  %e = accy.exponential %z : tensor<{b}x{h}x{n}x{n}xf32>
  %sum = accy.reduce add %e, dims = [3] : (tensor<{b}x{h}x{n}x{n}xf32>) -> tensor<{b}x{h}x{n}xf32>
  %sb = accy.broadcast_in_dim %sum, dims = [0, 1, 2] : (tensor<{b}x{h}x{n}xf32>) -> tensor<{b}x{h}x{n}x{n}xf32>
  %p = accy.divide %e, %sb : tensor<{b}x{h}x{n}x{n}xf32>
  {product}
}}"""
"""PyTorch's layout ([batch, heads, length, depth]) with a scale and a causal mask."""

P_LEFT = """%o = accy.dot_general %p, %v, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [2] : (tensor<{b}x{h}x{n}x{n}xf32>, tensor<{b}x{h}x{n}x{e}xf32>) -> tensor<{b}x{h}x{n}x{e}xf32>
  func.return %o : tensor<{b}x{h}x{n}x{e}xf32>"""

P_RIGHT = """%o = accy.dot_general %v, %p, batching_dims = [0, 1] x [0, 1], contracting_dims = [2] x [3] : (tensor<{b}x{h}x{n}x{e}xf32>, tensor<{b}x{h}x{n}x{n}xf32>) -> tensor<{b}x{h}x{e}x{n}xf32>
  %t = accy.transpose %o, dims = [0, 1, 3, 2] : (tensor<{b}x{h}x{e}x{n}xf32>) -> tensor<{b}x{h}x{n}x{e}xf32>
  func.return %t : tensor<{b}x{h}x{n}x{e}xf32>"""

RETURN = "func.return %o : tensor<{b}x{h}x{n}x{e}x{t}>"

TYPES = {"f32": np.float32, "f64": np.float64, "bf16": ml_dtypes.bfloat16}


def flax(b, n, m, h, d, e, t="f32", tail=RETURN) -> str:
    return FLAX.format(b=b, n=n, m=m, h=h, d=d, e=e, t=t, tail=tail.format(b=b, h=h, n=n, e=e, t=t))


def draw(*shape, t="f32"):
    return RNG.uniform(-1, 1, shape).astype(TYPES[t])


def check(module, args, threads=2, tolerance=1e-5):
    got = accy.compile(module, target="cpu", threads=threads)(*args)
    want = run(module, "attend", *args)
    for g, w in zip(got, want):
        np.testing.assert_allclose(
            np.asarray(g, np.float64), np.asarray(w, np.float64), rtol=tolerance, atol=tolerance
        )


def attention_item(prepared):
    (item,) = [i for i in prepared.schedule.work_items if i.kind.value == "attention"]
    return item


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize(
    "b, n, m, h, d, e, packed",
    [
        (2, 16, 16, 4, 8, 8, True),  # the packed form, two vectors of keys per block
        (
            1,
            6,
            77,
            2,
            16,
            12,
            True,
        ),  # 77 keys padded to 5 vectors (the last alone); 6 queries: 4, then 2 alone
        (2, 5, 7, 3, 5, 3, False),  # V's width 3: row by row
        (1, 3, 20, 2, 4, 260, False),  # V too wide for the registers: row by row
    ],
)
def test_flax_attention_stores_no_scores_and_matches_the_reference(
    b, n, m, h, d, e, packed, threads
):
    module = accy.parse(flax(b, n, m, h, d, e))
    prepared = accy.prepare(module, target="cpu")
    assert [i.kind.value for i in prepared.schedule.work_items] == ["attention"]
    assert prepared.arena.temporaries_size == 0  # no scores, no probabilities
    assert (Packing.of(AttentionRows.of(attention_item(prepared))) is not None) == packed
    check(module, [draw(b, n, h, d), draw(b, m, h, d), draw(b, m, h, e)], threads)


@pytest.mark.parametrize("product", [P_LEFT, P_RIGHT])
def test_a_scaled_causal_softmax_in_torch_layout_is_one_kernel(product):
    b, h, n, d, e = 2, 3, 24, 16, 8
    text = CAUSAL.format(b=b, h=h, n=n, d=d, e=e, product=product.format(b=b, h=h, n=n, e=e))
    module = accy.parse(text)
    prepared = accy.prepare(module, target="cpu")
    kinds = [i.kind.value for i in prepared.schedule.work_items]
    assert kinds == (["attention"] if product is P_LEFT else ["attention", "transpose"])
    rows = AttentionRows.of(attention_item(prepared))
    assert rows.side == (0 if product is P_LEFT else 1)
    check(module, [draw(b, h, n, d), draw(b, h, n, d), draw(b, h, n, e)])


def test_f64_attention_and_an_epilogue_after_the_values_product():
    tail = """%two = accy.constant dense<2.0> : tensor<{b}x{h}x{n}x{e}x{t}>
  %y = accy.multiply %o, %two : tensor<{b}x{h}x{n}x{e}x{t}>
  %r = accy.tanh %y : tensor<{b}x{h}x{n}x{e}x{t}>
  func.return %r : tensor<{b}x{h}x{n}x{e}x{t}>"""
    module = accy.parse(flax(2, 8, 8, 2, 4, 8, "f64", tail))
    prepared = accy.prepare(module, target="cpu")
    item = attention_item(prepared)
    assert item.root.name == "accy.tanh"
    check(module, [draw(2, 8, 2, 4, t="f64"), draw(2, 8, 2, 4, t="f64"), draw(2, 8, 2, 8, t="f64")])


def test_a_chain_read_elsewhere_or_not_row_wise_is_not_attention():
    # the probabilities are also returned: they must be stored, so nothing fuses
    returned = (
        flax(1, 4, 4, 2, 4, 4)
        .replace("-> tensor<1x2x4x4xf32> {", "-> (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) {")
        .replace(
            "func.return %o : tensor<1x2x4x4xf32>",
            "func.return %o, %p : tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>",
        )
    )
    kinds = [
        i.kind.value for i in accy.prepare(accy.parse(returned), target="cpu").schedule.work_items
    ]
    assert "attention" not in kinds
    # the max is taken over the queries, not the keys: not a row-wise softmax
    other_dim = flax(1, 4, 4, 2, 4, 4).replace(
        "%mx = accy.reduce max %s, dims = [3]", "%mx = accy.reduce max %s, dims = [2]"
    )
    kinds = [
        i.kind.value for i in accy.prepare(accy.parse(other_dim), target="cpu").schedule.work_items
    ]
    assert "attention" not in kinds


def test_bf16_attention_is_not_fused():
    module = accy.parse(flax(1, 4, 4, 2, 4, 4, "bf16"))
    kinds = [i.kind.value for i in accy.prepare(module, target="cpu").schedule.work_items]
    assert "attention" not in kinds


def test_the_cuda_export_runs_one_attention_kernel(tmp_path):
    module = accy.parse(flax(2, 16, 16, 4, 8, 8))
    directory = accy.export(module, tmp_path / "attend", target="cuda")
    assert not ptxas_problems(directory)
    args = [np.ones((2, 16, 4, 8), np.float32)] * 3
    result = run_with_fake_driver(directory, args, function="attend")
    assert result["error"] is None
    assert not plan_problems(directory, "attend", result)
    assert len([c for c in result["calls"] if c.startswith("launch")]) == 1


def _layout(rng, names: str) -> str:
    return "".join(rng.permutation(list(names)))


@pytest.mark.parametrize("seed", range(6))
def test_any_operand_layout_computes_the_reference(seed):
    # q, k and v in random dim orders (heads h and batch b anywhere): the index arithmetic
    # of `AttentionRows` against the reference, packed form or row by row.
    rng = np.random.default_rng(seed)
    size = {"b": 2, "h": 3, "n": 5, "m": 16 if seed % 2 else 9, "d": 8, "e": 8 if seed < 3 else 3}
    q, k, v = _layout(rng, "bhnd"), _layout(rng, "bhmd"), _layout(rng, "bhme")

    def ty(layout):
        return "tensor<" + "x".join(str(size[c]) for c in layout) + "xf32>"

    scores, out = ty("bhnm"), ty("bhne")
    text = f"""func.func @attend(%q: {ty(q)}, %k: {ty(k)}, %v: {ty(v)}) -> {out} {{
  %s = accy.dot_general %q, %k, batching_dims = [{q.index("b")}, {q.index("h")}] x [{k.index("b")}, {k.index("h")}], contracting_dims = [{q.index("d")}] x [{k.index("d")}] : ({ty(q)}, {ty(k)}) -> {scores}
  %mx = accy.reduce max %s, dims = [3] : ({scores}) -> {ty("bhn")}
  %mb = accy.broadcast_in_dim %mx, dims = [0, 1, 2] : ({ty("bhn")}) -> {scores}
  %z = accy.subtract %s, %mb : {scores}
  %e = accy.exponential %z : {scores}
  %sum = accy.reduce add %e, dims = [3] : ({scores}) -> {ty("bhn")}
  %sb = accy.broadcast_in_dim %sum, dims = [0, 1, 2] : ({ty("bhn")}) -> {scores}
  %p = accy.divide %e, %sb : {scores}
  %o = accy.dot_general %p, %v, batching_dims = [0, 1] x [{v.index("b")}, {v.index("h")}], contracting_dims = [3] x [{v.index("m")}] : ({scores}, {ty(v)}) -> {out}
  func.return %o : {out}
}}"""
    module = accy.parse(text)
    prepared = accy.prepare(module, target="cpu")
    assert [i.kind.value for i in prepared.schedule.work_items] == ["attention"]
    shapes = [[size[c] for c in layout] for layout in (q, k, v)]
    check(module, [draw(*shape) for shape in shapes])
