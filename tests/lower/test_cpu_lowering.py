"""The CPU target against the reference interpreter: every accy op, the seed programs,
dynamic shapes, iterate, scan, arena reuse and argument errors.

Each case compiles with `accy.compile(target="cpu")`, runs, and compares with
`accy.reference.run` on the same arrays (f32 rtol 1e-5, f16 1e-3, bf16 1e-2; integers and
booleans exactly). The lowered text is also checked by upstream MLIR's verifier.
"""

from __future__ import annotations

from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from accy.passes.lower.cpu_dot import BF16_PAIRS
from accy.passes.lower.lower_pass import lower_module

import accy
from accy import mlir_bridge
from accy.diagnostics import AccyError, AccyInputError
from accy.runtime.cpu_features import host_flags
from accy.source import module_text

DATA = Path(__file__).resolve().parents[1] / "data" / "stablehlo"
BF16 = np.dtype(ml_dtypes.bfloat16)
BF16_TYPE = ml_dtypes.bfloat16
RNG = np.random.default_rng(0)

TOLERANCES = {
    np.dtype(np.float32): (1e-5, 1e-6),
    np.dtype(np.float16): (2e-3, 2e-3),
    BF16: (1e-2, 1e-2),
}


def assert_same(got: np.ndarray, want: np.ndarray) -> None:
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.shape == want.shape, (got.shape, want.shape)
    if want.dtype in TOLERANCES:
        rtol, atol = TOLERANCES[want.dtype]
        np.testing.assert_allclose(
            got.astype(np.float64), want.astype(np.float64), rtol=rtol, atol=atol, equal_nan=True
        )
    else:
        np.testing.assert_array_equal(got, want)


def check(text: str, *arrays: np.ndarray, function: str | None = None, **plan):
    exe = accy.compile(text, target="cpu", **plan)
    mlir_bridge.verify_upstream(exe.lowered_text)
    name = function or exe.function_names[0]
    got = exe[name](*arrays)
    want = accy.reference.run(exe.module, name, *arrays)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert_same(g, w)
    return exe, got


def data(shape, dtype, low=-3.0, high=3.0) -> np.ndarray:
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return RNG.random(shape) < 0.5
    if dtype.kind == "i":
        return RNG.integers(-20, 20, size=shape).astype(dtype)
    return RNG.uniform(low, high, size=shape).astype(dtype)


TYPES = {"f32": np.float32, "f16": np.float16, "bf16": BF16_TYPE, "i32": np.int32, "i64": np.int64}

# --------------------------------------------------------------------------- elementwise

BINARY = ["add", "subtract", "multiply", "divide", "maximum", "minimum", "power"]
UNARY_NUMERIC = ["negate", "abs"]
UNARY_FLOAT = ["exponential", "log", "tanh", "sqrt", "rsqrt", "logistic"]


@pytest.mark.parametrize("op", BINARY)
@pytest.mark.parametrize("t", list(TYPES))
def test_binary(op: str, t: str) -> None:
    text = f"""
func.func @f(%a: tensor<3x17x{t}>, %b: tensor<3x17x{t}>) -> tensor<3x17x{t}> {{
  %r = accy.{op} %a, %b : tensor<3x17x{t}>
  return %r : tensor<3x17x{t}>
}}"""
    a, b = data((3, 17), TYPES[t]), data((3, 17), TYPES[t])
    if op == "power":
        a = np.abs(a) + TYPES[t](1) if t not in ("i32", "i64") else a
        b = data((3, 17), TYPES[t], 0, 3) if t not in ("i32", "i64") else (b % 7) - 1
    if op == "divide" and t in ("i32", "i64"):
        b[0, :3] = 0  # x / 0 = -1
        a[1, 0], b[1, 0] = np.iinfo(TYPES[t]).min, -1  # MIN / -1 = MIN
    check(text, a, b)


@pytest.mark.parametrize(
    ("op", "t"),
    [
        (op, t)
        for op in UNARY_NUMERIC + UNARY_FLOAT
        for t in TYPES
        if not (op in UNARY_FLOAT and t in ("i32", "i64"))
    ],  # the verifier rejects those
)
def test_unary(op: str, t: str) -> None:
    text = f"""
func.func @f(%a: tensor<5x9x{t}>) -> tensor<5x9x{t}> {{
  %r = accy.{op} %a : tensor<5x9x{t}>
  return %r : tensor<5x9x{t}>
}}"""
    low = 0.1 if op in ("log", "sqrt", "rsqrt") else -3.0
    check(text, data((5, 9), TYPES[t], low, 3.0))


@pytest.mark.parametrize("direction", ["EQ", "NE", "LT", "LE", "GT", "GE"])
@pytest.mark.parametrize("t", ["f32", "f16", "bf16", "i32", "i64", "i1"])
def test_compare(direction: str, t: str) -> None:
    text = f"""
func.func @f(%a: tensor<40x{t}>, %b: tensor<40x{t}>) -> tensor<40xi1> {{
  %r = accy.compare {direction}, %a, %b : (tensor<40x{t}>, tensor<40x{t}>) -> tensor<40xi1>
  return %r : tensor<40xi1>
}}"""
    dtype = np.bool_ if t == "i1" else TYPES[t]
    a, b = data((40,), dtype), data((40,), dtype)
    b[:10] = a[:10]
    if t.startswith("f") or t == "bf16":
        a[10] = np.nan
    check(text, a, b)


@pytest.mark.parametrize("t", ["f32", "bf16", "i64", "i1"])
def test_select(t: str) -> None:
    text = f"""
func.func @f(%p: tensor<4x8xi1>, %a: tensor<4x8x{t}>, %b: tensor<4x8x{t}>) -> tensor<4x8x{t}> {{
  %r = accy.select %p, %a, %b : tensor<4x8xi1>, tensor<4x8x{t}>
  return %r : tensor<4x8x{t}>
}}"""
    dtype = np.bool_ if t == "i1" else TYPES[t]
    check(text, data((4, 8), np.bool_), data((4, 8), dtype), data((4, 8), dtype))


ALL = ["f32", "f16", "bf16", "i1", "i32", "i64"]


@pytest.mark.parametrize("source", ALL)
@pytest.mark.parametrize("target", ALL)
def test_convert(source: str, target: str) -> None:
    text = f"""
func.func @f(%a: tensor<16x{source}>) -> tensor<16x{target}> {{
  %r = accy.convert %a : (tensor<16x{source}>) -> tensor<16x{target}>
  return %r : tensor<16x{target}>
}}"""
    dtype = np.bool_ if source == "i1" else TYPES[source]
    a = data((16,), dtype, -100.0, 100.0)
    if source in ("f32",):
        a[:4] = [np.nan, 1e20, -1e20, 2.5]
    check(text, a)


# ------------------------------------------------------------------- data movement


def test_constant_and_broadcast() -> None:
    text = """
func.func @f(%a: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>) {
  %c = accy.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
  %s = accy.constant dense<0.5> : tensor<f32>
  %b = accy.broadcast_in_dim %c, dims = [1] : (tensor<3xf32>) -> tensor<2x3xf32>
  %t = accy.broadcast_in_dim %s, dims = [] : (tensor<f32>) -> tensor<2x3xf32>
  %r = accy.multiply %a, %b : tensor<2x3xf32>
  %q = accy.add %r, %t : tensor<2x3xf32>
  %k = accy.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
  return %q, %k : tensor<2x3xf32>, tensor<2x3xf32>
}"""
    check(text, data((2, 3), np.float32))


def test_broadcast_size_one_and_permuted() -> None:
    text = """
func.func @f(%a: tensor<4x1xf32>, %b: tensor<5x4xf32>) -> tensor<4x5xf32> {
  %x = accy.broadcast_in_dim %a, dims = [0, 1] : (tensor<4x1xf32>) -> tensor<4x5xf32>
  %y = accy.broadcast_in_dim %b, dims = [1, 0] : (tensor<5x4xf32>) -> tensor<4x5xf32>
  %r = accy.add %x, %y : tensor<4x5xf32>
  return %r : tensor<4x5xf32>
}"""
    check(text, data((4, 1), np.float32), data((5, 4), np.float32))


def test_reshape_fused_and_root() -> None:
    text = """
func.func @f(%a: tensor<2x6xf32>, %b: tensor<3x4xf32>) -> (tensor<3x4xf32>, tensor<12xf32>) {
  %r = accy.reshape %a : (tensor<2x6xf32>) -> tensor<3x4xf32>
  %s = accy.add %r, %b : tensor<3x4xf32>
  %t = accy.reshape %b : (tensor<3x4xf32>) -> tensor<12xf32>
  return %s, %t : tensor<3x4xf32>, tensor<12xf32>
}"""
    check(text, data((2, 6), np.float32), data((3, 4), np.float32))


def test_transpose() -> None:
    text = """
func.func @f(%a: tensor<2x3x4xf32>) -> tensor<4x2x3xf32> {
  %r = accy.transpose %a, dims = [2, 0, 1] : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
  return %r : tensor<4x2x3xf32>
}"""
    check(text, data((2, 3, 4), np.float32))


@pytest.mark.parametrize("t", ["i32", "i64", "f32", "bf16"])
def test_iota(t: str) -> None:
    text = f"""
func.func @f() -> tensor<3x5x{t}> {{
  %r = accy.iota dim = 1 : tensor<3x5x{t}>
  return %r : tensor<3x5x{t}>
}}"""
    check(text)


def test_concatenate_and_slice() -> None:
    text = """
func.func @f(%a: tensor<2x3xf32>, %b: tensor<4x3xf32>) -> (tensor<6x3xf32>, tensor<2x2xf32>) {
  %c = accy.concatenate %a, %b, dim = 0 : (tensor<2x3xf32>, tensor<4x3xf32>) -> tensor<6x3xf32>
  %s = accy.slice %c [1:5:2, 0:3:2] : (tensor<6x3xf32>) -> tensor<2x2xf32>
  return %c, %s : tensor<6x3xf32>, tensor<2x2xf32>
}"""
    check(text, data((2, 3), np.float32), data((4, 3), np.float32))


# ------------------------------------------------------------------ reduce / dot / scan


@pytest.mark.parametrize("kind", ["add", "mul", "max", "min"])
@pytest.mark.parametrize("t", ["f32", "f16", "bf16", "i32", "i1"])
@pytest.mark.parametrize("dims", [[1], [0], [0, 2]])
def test_reduce(kind: str, t: str, dims: list[int]) -> None:
    shape = [3, 5, 4]
    kept = [s for d, s in enumerate(shape) if d not in dims]
    result = "x".join(map(str, kept))
    text = f"""
func.func @f(%a: tensor<3x5x4x{t}>) -> tensor<{result}x{t}> {{
  %r = accy.reduce {kind} %a, dims = {dims} : (tensor<3x5x4x{t}>) -> tensor<{result}x{t}>
  return %r : tensor<{result}x{t}>
}}"""
    dtype = np.bool_ if t == "i1" else TYPES[t]
    low, high = (0.5, 1.5) if kind == "mul" else (-3.0, 3.0)
    check(text, data(shape, dtype, low, high))


def test_reduce_with_fused_prologue() -> None:
    text = """
func.func @f(%a: tensor<8x33xf32>, %b: tensor<33xf32>) -> tensor<8xf32> {
  %bb = accy.broadcast_in_dim %b, dims = [1] : (tensor<33xf32>) -> tensor<8x33xf32>
  %m = accy.multiply %a, %bb : tensor<8x33xf32>
  %e = accy.exponential %m : tensor<8x33xf32>
  %r = accy.reduce add %e, dims = [1] : (tensor<8x33xf32>) -> tensor<8xf32>
  return %r : tensor<8xf32>
}"""
    exe, _ = check(text, data((8, 33), np.float32, -1, 1), data((33,), np.float32, -1, 1))
    assert exe.preparation.schedule.work_item_count() == 1


@pytest.mark.parametrize("t", ["f32", "f16", "bf16", "i32", "i1"])
def test_dot_general_matmul(t: str) -> None:
    text = f"""
func.func @f(%a: tensor<5x7x{t}>, %b: tensor<7x3x{t}>) -> tensor<5x3x{t}> {{
  %r = accy.dot_general %a, %b, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<5x7x{t}>, tensor<7x3x{t}>) -> tensor<5x3x{t}>
  return %r : tensor<5x3x{t}>
}}"""
    dtype = np.bool_ if t == "i1" else TYPES[t]
    check(text, data((5, 7), dtype), data((7, 3), dtype))


def test_dot_general_batched_transposed() -> None:
    text = """
func.func @f(%a: tensor<2x7x5xf32>, %b: tensor<3x2x7xf32>) -> tensor<2x5x3xf32> {
  %r = accy.dot_general %a, %b, batching_dims = [0] x [1], contracting_dims = [1] x [2] : (tensor<2x7x5xf32>, tensor<3x2x7xf32>) -> tensor<2x5x3xf32>
  return %r : tensor<2x5x3xf32>
}"""
    check(text, data((2, 7, 5), np.float32), data((3, 2, 7), np.float32))


@pytest.mark.parametrize(
    "batch, m, k, n",
    [
        ((), 5, 7, 8),  # one row per tile (5 is odd), one vector
        ((), 6, 96, 16),  # two rows per tile, two vectors
        ((), 64, 300, 24),  # four rows, one vector (24 is not a multiple of 16)
        ((3,), 12, 256, 32),  # a batch dim
    ],
)
@pytest.mark.parametrize("t", ["f32", "bf16", "f16"])
def test_dot_general_register_tiles(batch, m, k, n, t) -> None:
    # [batch, M, K] x [batch, K, N] with N a multiple of 8: `_dot_tiles` (f16/bf16 extended
    # to f32, rounded once). Inputs are positive so the sums have no cancellation (the
    # accumulation order differs from numpy's).
    b = len(batch)
    dims = "".join(f"{d}x" for d in batch)
    lhs, rhs, out = (f"tensor<{dims}{x}x{y}x{t}>" for x, y in ((m, k), (k, n), (m, n)))
    batching = f"[{', '.join(map(str, range(b)))}] x [{', '.join(map(str, range(b)))}]"
    text = f"""
func.func @f(%a: {lhs}, %b: {rhs}) -> {out} {{
  %r = accy.dot_general %a, %b, batching_dims = {batching}, contracting_dims = [{b + 1}] x [{b}] : ({lhs}, {rhs}) -> {out}
  return %r : {out}
}}"""
    exe, _ = check(
        text, data((*batch, m, k), TYPES[t], 0.5, 1.5), data((*batch, k, n), TYPES[t], 0.5, 1.5)
    )
    assert any(i in exe.lowered_text for i in tile_instructions(t))


@pytest.mark.parametrize(
    "lhs, rhs, batching, contracting",
    [
        ((16, 64), (64, 100), ((), ()), ((1,), (0,))),  # N = 6 x 16 + a masked 4
        ((3, 9), (9, 5), ((), ()), ((1,), (0,))),  # N below 8: one masked vector
        ((32, 10), (32, 24), ((), ()), ((0,), (0,))),  # lhs transposed (scalar loads)
        ((6,), (6, 40), ((), ()), ((0,), (0,))),  # no lhs free dim
        ((32, 4, 16), (32, 4, 24), ((1,), (1,)), ((0,), (0,))),  # batch dim in the middle
        ((32, 10), (24, 10), ((), ()), ((1,), (1,))),  # rows form, K = 10: one masked step
        ((4, 32, 40), (4, 12, 40), ((0,), (0,)), ((2,), (2,))),  # rows form, K = 16 + 16 + 8
        ((5, 3, 33), (7, 33), ((), ()), ((2,), (1,))),  # rows form, two lhs free dims
        ((12, 20), (6, 20), ((), ()), ((1,), (1,))),  # rows form, 3 columns: no lane tree
    ],
)
@pytest.mark.parametrize("t", ["f32", "bf16"])
def test_dot_general_register_tile_forms(lhs, rhs, batching, contracting, t) -> None:
    # Any batch/free dims, the rhs contiguous along N (columns form: N's remainder a masked
    # vector) or both operands contiguous along K (rows form: K's remainder a masked step).
    (lb, rb), (lc, rc) = batching, contracting
    free_l = [d for d in range(len(lhs)) if d not in lb and d not in lc]
    free_r = [d for d in range(len(rhs)) if d not in rb and d not in rc]
    out = [lhs[d] for d in lb] + [lhs[d] for d in free_l] + [rhs[d] for d in free_r]

    def ty(shape):
        return f"tensor<{''.join(f'{d}x' for d in shape)}{t}>"

    text = f"""
func.func @f(%a: {ty(lhs)}, %b: {ty(rhs)}) -> {ty(out)} {{
  %r = accy.dot_general %a, %b, batching_dims = {list(lb)} x {list(rb)}, contracting_dims = {list(lc)} x {list(rc)} : ({ty(lhs)}, {ty(rhs)}) -> {ty(out)}
  return %r : {ty(out)}
}}"""
    exe, _ = check(text, data(lhs, TYPES[t], 0.5, 1.5), data(rhs, TYPES[t], 0.5, 1.5))
    assert any(i in exe.lowered_text for i in tile_instructions(t))


def tile_instructions(t: str) -> tuple[str, ...]:
    """What register tiles of element type `t` may sum with on this machine: bf16 pairs
    where the CPU has AVX512_BF16 (tiles of 16 lanes), else f32 FMAs."""
    if t == "bf16" and BF16_PAIRS in host_flags():
        return ("x86.avx512.dot", "vector.fma")
    return ("vector.fma",)


@pytest.mark.parametrize("features", [(), (BF16_PAIRS,)])
def test_dot_general_bf16_pairs_follow_the_cpu_features(features) -> None:
    # The lowering sums bf16 pairs only for a CPU said to have AVX512_BF16 (accy.compile
    # says so where this machine has it); without it, the code runs on any x86-64 CPU.
    # With it, the FMA tiles are built too, for calls whose operands hold a subnormal.
    text = """
func.func @f(%a: tensor<8x33xbf16>, %b: tensor<33x40xbf16>) -> tensor<8x40xbf16> {
  %r = accy.dot_general %a, %b, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<8x33xbf16>, tensor<33x40xbf16>) -> tensor<8x40xbf16>
  return %r : tensor<8x40xbf16>
}"""
    module = accy.parse(text)
    prep = accy.prepare(module, target="cpu")
    lowered = lower_module(module, prep.manager, "cpu", features)
    lowered_text = module_text(lowered)
    mlir_bridge.verify_upstream(lowered_text)
    assert ("x86.avx512.dot" in lowered_text) == bool(features)
    assert "vector.fma" in lowered_text
    assert ("vector.reduction <minui>" in lowered_text) == bool(features)


@pytest.mark.parametrize("dim", [0, 1, 2])
@pytest.mark.parametrize("kind", ["add", "mul", "max", "min"])
def test_scan(dim: int, kind: str) -> None:
    text = f"""
func.func @f(%a: tensor<3x4x5xf32>, %s: tensor<3x4x5xf32>) -> tensor<3x4x5xf32> {{
  %r = accy.scan {kind} %a, %s, dim = {dim} : tensor<3x4x5xf32>
  return %r : tensor<3x4x5xf32>
}}"""
    low, high = (0.5, 1.5) if kind == "mul" else (-3.0, 3.0)
    scratch = data((3, 4, 5), np.float32)
    before = scratch.copy()
    check(text, data((3, 4, 5), np.float32, low, high), scratch)
    np.testing.assert_array_equal(scratch, before)  # the caller's array is untouched


@pytest.mark.parametrize("t", ["i32", "bf16"])
def test_scan_types_with_temporary_scratch(t: str) -> None:
    text = f"""
func.func @f(%a: tensor<6x9x{t}>) -> tensor<6x9x{t}> {{
  %s = accy.negate %a : tensor<6x9x{t}>
  %r = accy.scan add %a, %s, dim = 1 : tensor<6x9x{t}>
  %q = accy.add %r, %a : tensor<6x9x{t}>
  return %q : tensor<6x9x{t}>
}}"""
    check(text, data((6, 9), TYPES[t], -1, 1))


def test_a_scan_keeps_a_scratch_read_elsewhere() -> None:
    # The scan writes into its scratch's buffer only where the scan is that value's one use;
    # a scratch that is returned or read later keeps its value (a constant scratch
    # returned as well read the scan's result: found by the program fuzzer).
    text = """
func.func @f(%a: tensor<4xf32>, %p: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %c = accy.constant dense<1.0> : tensor<4xf32>
  %m = accy.scan max %a, %c, dim = 0 : tensor<4xf32>
  %n = accy.negate %a : tensor<4xf32>
  %s = accy.scan add %a, %n, dim = 0 : tensor<4xf32>
  %q = accy.multiply %n, %s : tensor<4xf32>
  %t = accy.scan add %a, %p, dim = 0 : tensor<4xf32>
  return %m, %c, %q, %p : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}"""
    a = np.array([0.5, -2, 3, 1], np.float32)
    _, got = check(text, a, a.copy())
    np.testing.assert_array_equal(got[1], np.ones(4, np.float32))


# ---------------------------------------------------------------------------- iterate


@pytest.mark.parametrize("trips", [0, 1, 5])
def test_iterate(trips: int) -> None:
    text = f"""
func.func @f(%a: tensor<4x8xf32>, %b: tensor<8xf32>) -> (tensor<4x8xf32>, tensor<8xf32>) {{
  %r:2 = accy.iterate {trips} iter_args(%x = %a, %y = %b) : tensor<4x8xf32>, tensor<8xf32> {{
    %yb = accy.broadcast_in_dim %y, dims = [1] : (tensor<8xf32>) -> tensor<4x8xf32>
    %n = accy.add %x, %yb : tensor<4x8xf32>
    %h = accy.tanh %n : tensor<4x8xf32>
    %s = accy.reduce add %h, dims = [0] : (tensor<4x8xf32>) -> tensor<8xf32>
    accy.yield %h, %s : tensor<4x8xf32>, tensor<8xf32>
  }}
  return %r#0, %r#1 : tensor<4x8xf32>, tensor<8xf32>
}}"""
    check(text, data((4, 8), np.float32, -1, 1), data((8,), np.float32, -1, 1))


@pytest.mark.parametrize("trips", [0, 1, 2, 5])
def test_iterate_swap_yields_block_arguments(trips: int) -> None:
    text = f"""
func.func @f(%a: tensor<6xi32>, %b: tensor<6xi32>) -> (tensor<6xi32>, tensor<6xi32>) {{
  %r:2 = accy.iterate {trips} iter_args(%x = %a, %y = %b) : tensor<6xi32>, tensor<6xi32> {{
    accy.yield %y, %x : tensor<6xi32>, tensor<6xi32>
  }}
  return %r#0, %r#1 : tensor<6xi32>, tensor<6xi32>
}}"""
    check(text, data((6,), np.int32), data((6,), np.int32))


def test_nested_iterate_and_outer_values() -> None:
    text = """
func.func @f(%a: tensor<5xf32>, %k: tensor<5xf32>) -> tensor<5xf32> {
  %r = accy.iterate 3 iter_args(%x = %a) : tensor<5xf32> {
    %i = accy.iterate 2 iter_args(%z = %x) : tensor<5xf32> {
      %m = accy.multiply %z, %k : tensor<5xf32>
      accy.yield %m : tensor<5xf32>
    }
    %n = accy.add %i, %k : tensor<5xf32>
    accy.yield %n : tensor<5xf32>
  }
  return %r : tensor<5xf32>
}"""
    check(text, data((5,), np.float32, -1, 1), data((5,), np.float32, -1, 1))


# ------------------------------------------------------------------------ outputs


def test_aliased_and_repeated_outputs() -> None:
    text = """
func.func @f(%a: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<2xi32>) {
  %c = accy.constant dense<[7, 8]> : tensor<2xi32>
  %n = accy.negate %a : tensor<4xf32>
  return %a, %n, %n, %c : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<2xi32>
}"""
    a = data((4,), np.float32)
    _, got = check(text, a)
    assert not np.shares_memory(got[0], a)


def test_multiple_functions_and_rank0() -> None:
    text = """
func.func @first(%a: tensor<f32>) -> tensor<f32> {
  %r = accy.multiply %a, %a : tensor<f32>
  return %r : tensor<f32>
}
func.func @second(%a: tensor<3xi64>) -> tensor<i64> {
  %r = accy.reduce add %a, dims = [0] : (tensor<3xi64>) -> tensor<i64>
  return %r : tensor<i64>
}"""
    check(text, np.array(3.0, np.float32))
    check(text, np.array([1, 2, 3], np.int64), function="second")


# ------------------------------------------------------------------------ dynamic dims

DYNAMIC = """
func.func @f(%a: tensor<?x16xf32>, %b: tensor<16xf32>) -> (tensor<?x16xf32>, tensor<?xf32>) {
  %s = accy.multiply %a, %a : tensor<?x16xf32>
  %e = accy.exponential %s : tensor<?x16xf32>
  %m = accy.reduce max %e, dims = [1] : (tensor<?x16xf32>) -> tensor<?xf32>
  %mb = accy.broadcast_in_dim %m, dims = [0] : (tensor<?xf32>) -> tensor<?x16xf32>
  %q = accy.divide %e, %mb : tensor<?x16xf32>
  %t = accy.transpose %q, dims = [0, 1] : (tensor<?x16xf32>) -> tensor<?x16xf32>
  %bt = accy.transpose %b, dims = [0] : (tensor<16xf32>) -> tensor<16xf32>
  %dot = accy.dot_general %t, %bt, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<?x16xf32>, tensor<16xf32>) -> tensor<?xf32>
  %sum = accy.reduce add %t, dims = [1] : (tensor<?x16xf32>) -> tensor<?xf32>
  %both = accy.add %sum, %dot : tensor<?xf32>
  return %t, %both : tensor<?x16xf32>, tensor<?xf32>
}"""


@pytest.mark.parametrize("rows_option", [(), (64,)])
@pytest.mark.parametrize("rows", [0, 1, 7, 64])
def test_dynamic_rows(rows_option, rows: int) -> None:
    exe = accy.compile(DYNAMIC, rows=rows_option)
    a, b = data((rows, 16), np.float32, -1, 1), data((16,), np.float32, -1, 1)
    got = exe(a, b)
    want = accy.reference.run(exe.module, "f", a, b)
    for g, w in zip(got, want):
        assert_same(g, w)
    arena = exe.preparation.arena.functions["f"]
    assert bool(arena.separate) == (rows_option == ())


def test_dynamic_rows_above_plan_rejected() -> None:
    exe = accy.compile(DYNAMIC, rows=[8])
    with pytest.raises(AccyInputError, match="planned for at most 8 rows"):
        exe(data((9, 16), np.float32), data((16,), np.float32))


def test_dynamic_rows_must_agree() -> None:
    text = """
func.func @f(%a: tensor<?xf32>, %b: tensor<?xf32>) -> tensor<?xf32> {
  %r = accy.add %a, %b : tensor<?xf32>
  return %r : tensor<?xf32>
}"""
    exe = accy.compile(text)
    with pytest.raises(AccyInputError, match=r"argument #1 of @f: dynamic dim 0 is 4"):
        exe(np.zeros(3, np.float32), np.zeros(4, np.float32))


def test_dynamic_reshape_keeping_rows() -> None:
    text = """
func.func @f(%a: tensor<?x4xf32>) -> tensor<?x2x2xf32> {
  %r = accy.reshape %a : (tensor<?x4xf32>) -> tensor<?x2x2xf32>
  %n = accy.negate %r : tensor<?x2x2xf32>
  return %n : tensor<?x2x2xf32>
}"""
    check(text, data((5, 4), np.float32))


def test_unbindable_dynamic_dims_rejected() -> None:
    text = """
func.func @f(%a: tensor<?x4xf32>) -> tensor<?xf32> {
  %r = accy.reshape %a : (tensor<?x4xf32>) -> tensor<?xf32>
  return %r : tensor<?xf32>
}"""
    with pytest.raises(AccyError, match="reshape.*one row count"):
        accy.compile(text)


# -------------------------------------------------------------------------- arena reuse


def test_arena_reuse_keeps_results_right() -> None:
    text = """
func.func @f(%a: tensor<64x64xf32>, %b: tensor<64x64xf32>) -> tensor<64xf32> {
  %t = accy.transpose %a, dims = [1, 0] : (tensor<64x64xf32>) -> tensor<64x64xf32>
  %u = accy.transpose %b, dims = [1, 0] : (tensor<64x64xf32>) -> tensor<64x64xf32>
  %s = accy.add %t, %u : tensor<64x64xf32>
  %e = accy.exponential %s : tensor<64x64xf32>
  %v = accy.transpose %e, dims = [1, 0] : (tensor<64x64xf32>) -> tensor<64x64xf32>
  %r = accy.reduce add %v, dims = [1] : (tensor<64x64xf32>) -> tensor<64xf32>
  return %r : tensor<64xf32>
}"""
    exe, _ = check(text, data((64, 64), np.float32, -1, 1), data((64, 64), np.float32, -1, 1))
    arena = exe.preparation.arena.functions["f"]
    assert arena.reuses, "the elementwise item should take over a dying transpose's buffer"
    offsets = {arena.offsets[s] for s in arena.reuses} | {
        arena.offsets[s] for s in arena.reuses.values()
    }
    assert len(offsets) == len(set(arena.reuses.values()))
    assert "memref.alloc() {alignment = 64 : i64} : memref<" in exe.lowered_text


def test_donated_parameter_buffer_keeps_results_right() -> None:
    # On CUDA %s takes the arena copy of the donated %x in place; the CPU target reads %x
    # from the caller's array, which is not in its arena, so %s gets bytes of its own there:
    # the caller's arrays stay as given.
    text = """
func.func @f(%x: tensor<64x96xf32> {accy.donated}, %y: tensor<64x96xf32>) -> (tensor<96xf32>, tensor<64xf32>) {
  %s = accy.add %x, %y : tensor<64x96xf32>
  %c = accy.reduce add %s, dims = [0] : (tensor<64x96xf32>) -> tensor<96xf32>
  %r = accy.reduce max %s, dims = [1] : (tensor<64x96xf32>) -> tensor<64xf32>
  func.return %c, %r : tensor<96xf32>, tensor<64xf32>
}"""
    # Positive terms: the reference sums each column pairwise and the CPU in blocks, the
    # same value up to rounding, which a cancelling sum would magnify past assert_same's
    # absolute tolerance.
    x, y = data((64, 96), np.float32, 0.0, 3.0), data((64, 96), np.float32, 0.0, 3.0)
    given = x.copy(), y.copy()
    exe, _ = check(text, x, y)
    arena = exe.preparation.arena.functions["f"]
    assert arena.reuses == {} and 0 not in arena.offsets and 2 in arena.offsets
    cuda = accy.prepare(accy.parse(text), target="cuda").arena.functions["f"]
    assert cuda.reuses == {2: 0} and cuda.offsets[2] == cuda.offsets[0]
    np.testing.assert_array_equal(x, given[0])
    np.testing.assert_array_equal(y, given[1])


# ---------------------------------------------------------------------------- seeds


SEEDS = {
    "softmax": """
func.func @main(%x: tensor<128x1000xf32>) -> tensor<128x1000xf32> {
  %m = accy.reduce max %x, dims = [1] : (tensor<128x1000xf32>) -> tensor<128xf32>
  %mb = accy.broadcast_in_dim %m, dims = [0] : (tensor<128xf32>) -> tensor<128x1000xf32>
  %d = accy.subtract %x, %mb : tensor<128x1000xf32>
  %e = accy.exponential %d : tensor<128x1000xf32>
  %s = accy.reduce add %e, dims = [1] : (tensor<128x1000xf32>) -> tensor<128xf32>
  %sb = accy.broadcast_in_dim %s, dims = [0] : (tensor<128xf32>) -> tensor<128x1000xf32>
  %r = accy.divide %e, %sb : tensor<128x1000xf32>
  return %r : tensor<128x1000xf32>
}""",
    "fused_elementwise": """
func.func @main(%a: tensor<262144xf32>, %b: tensor<262144xf32>, %c: tensor<262144xf32>, %d: tensor<262144xf32>) -> tensor<262144xf32> {
  %0 = accy.add %a, %b : tensor<262144xf32>
  %1 = accy.multiply %0, %c : tensor<262144xf32>
  %2 = accy.subtract %1, %d : tensor<262144xf32>
  %3 = accy.tanh %2 : tensor<262144xf32>
  return %3 : tensor<262144xf32>
}""",
    "layernorm": """
func.func @main(%x: tensor<256x768xf32>, %g: tensor<768xf32>, %b: tensor<768xf32>) -> tensor<256x768xf32> {
  %n = accy.constant dense<7.680000e+02> : tensor<256xf32>
  %eps = accy.constant dense<1.000000e-05> : tensor<256xf32>
  %s = accy.reduce add %x, dims = [1] : (tensor<256x768xf32>) -> tensor<256xf32>
  %mean = accy.divide %s, %n : tensor<256xf32>
  %mb = accy.broadcast_in_dim %mean, dims = [0] : (tensor<256xf32>) -> tensor<256x768xf32>
  %c = accy.subtract %x, %mb : tensor<256x768xf32>
  %c2 = accy.multiply %c, %c : tensor<256x768xf32>
  %v = accy.reduce add %c2, dims = [1] : (tensor<256x768xf32>) -> tensor<256xf32>
  %var = accy.divide %v, %n : tensor<256xf32>
  %ve = accy.add %var, %eps : tensor<256xf32>
  %r = accy.rsqrt %ve : tensor<256xf32>
  %rb = accy.broadcast_in_dim %r, dims = [0] : (tensor<256xf32>) -> tensor<256x768xf32>
  %y = accy.multiply %c, %rb : tensor<256x768xf32>
  %gb = accy.broadcast_in_dim %g, dims = [1] : (tensor<768xf32>) -> tensor<256x768xf32>
  %bb = accy.broadcast_in_dim %b, dims = [1] : (tensor<768xf32>) -> tensor<256x768xf32>
  %yg = accy.multiply %y, %gb : tensor<256x768xf32>
  %out = accy.add %yg, %bb : tensor<256x768xf32>
  return %out : tensor<256x768xf32>
}""",
    "mlp": """
func.func @main(%x: tensor<64x256xf32>, %w1: tensor<256x512xf32>, %b1: tensor<512xf32>, %w2: tensor<512x10xf32>, %b2: tensor<10xf32>) -> tensor<64x10xf32> {
  %h = accy.dot_general %x, %w1, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<64x256xf32>, tensor<256x512xf32>) -> tensor<64x512xf32>
  %bb1 = accy.broadcast_in_dim %b1, dims = [1] : (tensor<512xf32>) -> tensor<64x512xf32>
  %hb = accy.add %h, %bb1 : tensor<64x512xf32>
  %z = accy.constant dense<0.0> : tensor<64x512xf32>
  %r = accy.maximum %hb, %z : tensor<64x512xf32>
  %o = accy.dot_general %r, %w2, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<64x512xf32>, tensor<512x10xf32>) -> tensor<64x10xf32>
  %bb2 = accy.broadcast_in_dim %b2, dims = [1] : (tensor<10xf32>) -> tensor<64x10xf32>
  %out = accy.add %o, %bb2 : tensor<64x10xf32>
  return %out : tensor<64x10xf32>
}""",
    "gelu_chain": """
func.func @main(%x: tensor<256x1024xf32>, %y: tensor<256x1024xf32>, %z: tensor<256x1024xf32>) -> tensor<256x1024xf32> {
  %h = accy.constant dense<0.5> : tensor<256x1024xf32>
  %one = accy.constant dense<1.0> : tensor<256x1024xf32>
  %k = accy.constant dense<0.7978845608> : tensor<256x1024xf32>
  %c = accy.constant dense<0.044715> : tensor<256x1024xf32>
  %a = accy.add %x, %y : tensor<256x1024xf32>
  %a3 = accy.multiply %a, %a : tensor<256x1024xf32>
  %a33 = accy.multiply %a3, %a : tensor<256x1024xf32>
  %ca = accy.multiply %c, %a33 : tensor<256x1024xf32>
  %in = accy.add %a, %ca : tensor<256x1024xf32>
  %kin = accy.multiply %k, %in : tensor<256x1024xf32>
  %t = accy.tanh %kin : tensor<256x1024xf32>
  %t1 = accy.add %one, %t : tensor<256x1024xf32>
  %ht = accy.multiply %h, %t1 : tensor<256x1024xf32>
  %g = accy.multiply %a, %ht : tensor<256x1024xf32>
  %r = accy.multiply %g, %z : tensor<256x1024xf32>
  return %r : tensor<256x1024xf32>
}""",
}


@pytest.mark.parametrize("name", sorted(SEEDS))
def test_seed_programs(name: str) -> None:
    """The seed programs (tests/data/stablehlo, written here in the accy dialect) against
    the reference on their recorded inputs."""
    inputs = np.load(DATA / f"{name}.npz")
    arrays = [inputs[f"arg{i}"] for i in range(len([k for k in inputs if k.startswith("arg")]))]
    if name in ("gelu_chain", "fused_elementwise"):
        arrays = [data(a.shape, np.float32, -1, 1) for a in arrays]
    check(SEEDS[name], *arrays)


def test_seed_softmax_matches_recorded_expected() -> None:
    inputs = np.load(DATA / "softmax.npz")
    (got,) = accy.compile(SEEDS["softmax"])(inputs["arg0"])
    np.testing.assert_allclose(got, inputs["expected"], rtol=1e-5, atol=1e-7)


# ------------------------------------------------------------------------ argument errors

ADD = """
func.func @f(%lhs: tensor<4xf32>, %rhs: tensor<4xf32>) -> tensor<4xf32> {
  %r = accy.add %lhs, %rhs : tensor<4xf32>
  return %r : tensor<4xf32>
}"""


@pytest.fixture(scope="module")
def add_exe():
    return accy.compile(ADD)


def test_argument_count(add_exe) -> None:
    with pytest.raises(AccyInputError, match="takes 2 arguments, got 1"):
        add_exe(np.zeros(4, np.float32))


def test_argument_dtype(add_exe) -> None:
    with pytest.raises(
        AccyInputError, match=r"argument #1 \(%rhs\) of @f: expected dtype float32, got float64"
    ):
        add_exe(np.zeros(4, np.float32), np.zeros(4))


def test_argument_shape(add_exe) -> None:
    with pytest.raises(
        AccyInputError, match=r"argument #0 \(%lhs\) of @f: expected shape \(4,\), got \(5,\)"
    ):
        add_exe(np.zeros(5, np.float32), np.zeros(4, np.float32))


def test_argument_not_array_and_unknown_function(add_exe) -> None:
    with pytest.raises(AccyInputError, match="expected a numpy array"):
        add_exe([1, 2, 3, 4], np.zeros(4, np.float32))
    with pytest.raises(AccyInputError, match="no function @g"):
        add_exe["g"]


def test_unknown_and_missing_targets() -> None:
    with pytest.raises(AccyError, match="unknown target 'tpu'"):
        accy.compile(ADD, target="tpu")


def test_executable_exposes_plan_and_text(add_exe) -> None:
    assert add_exe.preparation.schedule.work_item_count() == 1
    assert "llvm.emit_c_interface" in add_exe.lowered_text
    assert "accy." not in add_exe.lowered_text.replace("__accy_", "")


def test_tanh_f32_accuracy_and_special_values() -> None:
    """The rational `tanh_f32` against float64 tanh: a dense range, tiny and denormal
    values, +-0 (sign kept), the clamp, +-inf (+-1) and NaN."""
    n = 1 << 16
    special = [
        0.0,
        -0.0,
        np.inf,
        -np.inf,
        np.nan,
        1e-45,
        -1e-45,
        1e-38,
        3.9999e-4,
        4e-4,
        0.625,
        7.9,
        7.906,
        9.0,
        -9.0,
        20.0,
        1e30,
    ]
    dense = np.linspace(-10.0, 10.0, n // 2)
    logs = np.geomspace(1e-30, 20.0, n // 2 - len(special)) * np.where(
        np.arange(n // 2 - len(special)) % 2, 1, -1
    )
    x = np.concatenate([dense, logs, special]).astype(np.float32)
    text = f"""
func.func @f(%a: tensor<{n}xf32>) -> tensor<{n}xf32> {{
  %r = accy.tanh %a : tensor<{n}xf32>
  return %r : tensor<{n}xf32>
}}"""
    (got,) = accy.compile(text, target="cpu")["f"](x)
    want = np.tanh(x.astype(np.float64))
    finite = ~np.isnan(want)
    ulps = np.abs(got[finite].astype(np.float64) - want[finite]) / np.spacing(
        np.abs(want[finite]).astype(np.float32)
    ).astype(np.float64)
    assert ulps.max() <= 8, (ulps.max(), x[finite][ulps.argmax()])
    assert np.isnan(got[np.isnan(x)]).all()
    zeros = got[-len(special) :][:2]
    assert zeros[0] == 0 and not np.signbit(zeros[0]) and zeros[1] == 0 and np.signbit(zeros[1])
    assert list(got[-len(special) :][2:4]) == [1.0, -1.0]


def test_fused_iota_and_slice_members() -> None:
    # The iota and the slice join the add's work item (they are fusible producers):
    # the group computes the iota from the loop index and reads the slice's operand at
    # start + i * stride.
    text = """
func.func @f(%x: tensor<6x8xf32>) -> tensor<3x4xf32> {
  %s = accy.slice %x [1:6:2, 0:8:2] : (tensor<6x8xf32>) -> tensor<3x4xf32>
  %i = accy.iota dim = 1 : tensor<3x4xf32>
  %r = accy.add %s, %i : tensor<3x4xf32>
  return %r : tensor<3x4xf32>
}"""
    x = data((6, 8), np.float32)
    exe, (got,) = check(text, x)
    assert len(exe.preparation.schedule.work_items) == 1
    np.testing.assert_array_equal(got, x[1:6:2, 0:8:2] + np.arange(4, dtype=np.float32))


STATIC_ADD = """
func.func @f(%a: tensor<64x32xf32>, %b: tensor<64x32xf32>) -> tensor<64x32xf32> {
  %s = accy.add %a, %b : tensor<64x32xf32>
  return %s : tensor<64x32xf32>
}"""


def test_static_calls_take_the_prepared_path_and_others_are_checked() -> None:
    exe = accy.compile(STATIC_ADD, target="cpu")
    f = exe["f"]
    assert f.signature.static
    a, b = data((64, 32), np.float32), data((64, 32), np.float32)
    (got,) = f(a, b)
    np.testing.assert_array_equal(got, a + b)
    assert f._prepared is not None
    assert f.last_seconds is not None
    # Not C-contiguous: taken through the checked path, made contiguous, same result.
    wide = data((64, 64), np.float32)
    (got,) = f(wide[:, ::2], b)
    np.testing.assert_array_equal(got, wide[:, ::2] + b)
    # Wrong dtype / shape / count: the checked path's errors.
    with pytest.raises(AccyInputError, match="expected dtype f32|expected dtype float32"):
        f(a.astype(np.float64), b)
    with pytest.raises(AccyInputError, match=r"expected shape \(64, 32\), got \(32, 64\)"):
        f(a.T.copy(), b)
    with pytest.raises(AccyInputError, match="takes 2 arguments, got 1"):
        f(a)


def test_concurrent_calls_from_python_threads() -> None:
    # Each thread has its own descriptors: results never mix.
    from concurrent.futures import ThreadPoolExecutor

    f = accy.compile(STATIC_ADD, target="cpu")["f"]
    pairs = [(data((64, 32), np.float32), data((64, 32), np.float32)) for _ in range(8)]

    def run(pair):
        for _ in range(50):
            (got,) = f(*pair)
        return got

    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(run, pairs))
    for (a, b), got in zip(pairs, results):
        np.testing.assert_array_equal(got, a + b)


def test_exp_f32_accuracy_and_special_values() -> None:
    """The polynomial `exp_f32` against float64 exp: within 2 ulps on normal results, and
    exactly right at the edges: overflow to +inf just past 88.7228, the largest finite
    results below it, denormal results, 0 below -103.97, +-inf, +-0 and NaN."""
    n = 1 << 16
    special = [
        0.0,
        -0.0,
        np.inf,
        -np.inf,
        np.nan,
        88.72,
        88.7228,
        88.7229,
        88.8,
        89.0,
        89.5,
        1e30,
        -87.33,
        -87.34,
        -100.0,
        -103.9,
        -103.97,
        -103.98,
        -104.0,
        -1e30,
        1e-30,
    ]
    dense = np.linspace(-87.0, 88.7, n // 2)
    denormal = np.linspace(-103.9, -87.4, n // 2 - len(special))
    x = np.concatenate([dense, denormal, special]).astype(np.float32)
    text = f"""
func.func @f(%a: tensor<{n}xf32>) -> tensor<{n}xf32> {{
  %r = accy.exponential %a : tensor<{n}xf32>
  return %r : tensor<{n}xf32>
}}"""
    with np.errstate(over="ignore", under="ignore"):
        (got,) = accy.compile(text, target="cpu")["f"](x)
        want = np.exp(x.astype(np.float64))
        rounded = want.astype(np.float32)
    normal = np.abs(rounded) >= np.finfo(np.float32).tiny
    normal &= np.isfinite(rounded)
    ulps = np.abs(got[normal].astype(np.float64) - want[normal]) / np.spacing(
        rounded[normal]
    ).astype(np.float64)
    assert ulps.max() <= 2, (ulps.max(), x[normal][ulps.argmax()])
    small = (rounded < np.finfo(np.float32).tiny) & ~np.isnan(x)  # denormal or 0
    assert np.abs(got[small].astype(np.float64) - want[small]).max() <= np.float32(1.5e-45)
    assert (np.isinf(got) == np.isinf(rounded)).all()  # overflow exactly where exp's is
    assert np.isnan(got[np.isnan(x)]).all()
    tail = dict(zip(special, got[-len(special) :]))
    assert tail[np.inf] == np.inf and tail[-np.inf] == 0 and tail[0.0] == 1 and tail[-0.0] == 1


def test_only_constants_read_from_memory_become_globals() -> None:
    # %h is a splat read as a scalar by the fused multiply: no global. %w is a splat read
    # from memory by the dot (not fusible): its global stays.
    text = """
func.func @f(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %h = accy.constant dense<0.5> : tensor<4x4xf32>
  %w = accy.constant dense<2.0> : tensor<4x4xf32>
  %m = accy.multiply %x, %h : tensor<4x4xf32>
  %d = accy.dot_general %m, %w, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  return %d : tensor<4x4xf32>
}"""
    exe, _ = check(text, data((4, 4), np.float32))
    assert exe.lowered_text.count('"memref.global"') == 1
    assert "dense<2.000000e+00>" in exe.lowered_text
    assert "dense<5.000000e-01>" not in exe.lowered_text


@pytest.mark.parametrize("t", ["f64", "i32", "i64"])
@pytest.mark.parametrize(
    "lhs, rhs, contracting",
    [
        ((8, 33), (33, 20), ((1,), (0,))),  # columns form, N's remainder masked
        ((6, 24), (10, 24), ((1,), (1,))),  # rows form
    ],
)
def test_dot_general_register_tiles_of_wide_and_integer_types(lhs, rhs, contracting, t) -> None:
    # f64 tiles of vector<8xf64> FMAs, integer tiles of vector<16xi32> / vector<8xi64>
    # multiply-adds (wrapping as the type does).
    (lc,), (rc,) = contracting
    out = [lhs[1 - lc], rhs[1 - rc]]

    def ty(shape):
        return f"tensor<{shape[0]}x{shape[1]}x{t}>"

    text = f"""
func.func @f(%a: {ty(lhs)}, %b: {ty(rhs)}) -> {ty(out)} {{
  %r = accy.dot_general %a, %b, batching_dims = [] x [], contracting_dims = [{lc}] x [{rc}] : ({ty(lhs)}, {ty(rhs)}) -> {ty(out)}
  return %r : {ty(out)}
}}"""
    dtype = {"f64": np.float64, "i32": np.int32, "i64": np.int64}[t]
    if t == "i32":
        a = RNG.integers(-(2**20), 2**20, lhs).astype(dtype)  # products wrap in i32
        b = RNG.integers(-(2**20), 2**20, rhs).astype(dtype)
    else:
        a, b = data(lhs, dtype), data(rhs, dtype)
    exe = accy.compile(text, target="cpu")
    got, want = exe(a, b)[0], accy.reference.run(exe.module, "f", a, b)[0]
    if t == "f64":  # fused multiply-adds round once where the reference rounds twice
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    else:
        np.testing.assert_array_equal(got, want)
    instruction = "vector.fma" if t == "f64" else "arith.muli"
    assert instruction in exe.lowered_text and "vector<" in exe.lowered_text
