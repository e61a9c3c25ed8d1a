"""Float prefix sums accumulate in f64 in blocks (`passes/lower/cpu_kernels/scan.py`, `blocked_scan`):
their error against float64 is at most that of XLA's blocked rewrite of a cumulative
`reduce_window` (emulated here in numpy: 128-element blocks, each block's running sum,
the block totals scanned the same way, then added) on a sweep of widths and layouts, and
far below one sequential chain's. With JAX installed, also against XLA itself."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

import accy

SCAN = """func.func @f(%a: tensor<{shape}xf32>, %s: tensor<{shape}xf32>) -> tensor<{shape}xf32> {{
  %r = accy.scan {kind} %a, %s, dim = {dim} : tensor<{shape}xf32>
  return %r : tensor<{shape}xf32>
}}"""

SWEEP = [
    ((4, 15), 1),
    ((3, 17), 1),
    ((2, 257), 1),
    ((64, 1000), 1),
    ((1000, 8), 0),
    ((2, 70000), 1),
]


def xla_blocked_cumsum(row: np.ndarray, base: int = 128) -> np.ndarray:
    """XLA's rewrite of a cumulative sum (ReduceWindowRewriter, base length 128), in f32."""
    if len(row) <= base:
        return np.cumsum(row, dtype=np.float32)
    blocks = np.concatenate([row, np.zeros(-len(row) % base, np.float32)]).reshape(-1, base)
    local = np.cumsum(blocks, axis=1, dtype=np.float32)
    before = np.concatenate([[np.float32(0)], xla_blocked_cumsum(local[:, -1], base)[:-1]])
    return (local + before[:, None].astype(np.float32)).ravel()[: len(row)]


def _scan(shape, dim, kind="add"):
    text = SCAN.format(shape="x".join(map(str, shape)), kind=kind, dim=dim)
    return accy.compile(accy.parse(text), target="cpu", threads=1)


def _error(values: np.ndarray, exact: np.ndarray) -> float:
    return float(np.abs(values.astype(np.float64) - exact).max())


@pytest.mark.parametrize("shape, dim", SWEEP)
def test_cumsum_error_is_at_most_xlas_blocked_sum(shape, dim):
    x = np.random.default_rng(sum(shape)).standard_normal(shape).astype(np.float32) + 0.25
    (got,) = _scan(shape, dim)(x, x)
    exact = np.cumsum(x.astype(np.float64), axis=dim)
    xla = np.apply_along_axis(xla_blocked_cumsum, dim, x)
    sequential = np.cumsum(x, axis=dim, dtype=np.float32)
    assert _error(got, exact) <= _error(xla, exact)
    if shape[dim] >= 1000:
        assert _error(got, exact) * 3 < _error(sequential, exact)


def test_products_and_maxima_scan_in_order():
    # A product's relative error grows with its factors in any order, and its overflow to
    # inf (then NaN at a zero) is the sequential chain's, as XLA and the interpreter say:
    # 1e30 * 1e30 is inf in f32 (not 1e60 carried in f64), inf * 1e-30 inf, inf * 0 NaN.
    x = np.ones((2, 40), np.float32)
    x[:, 20:23] = [1e30, 1e30, 1e-30]
    x[1, 30] = 0
    (got,) = _scan((2, 40), 1, "mul")(x, x)
    want = np.cumprod(x, axis=1, dtype=np.float32)
    np.testing.assert_array_equal(got, want)
    assert np.isinf(got[0, -1]) and np.isnan(got[1, -1])
    y = np.random.default_rng(5).standard_normal((3, 5000)).astype(np.float32)
    (peak,) = _scan((3, 5000), 1, "max")(y, y)
    np.testing.assert_array_equal(peak, np.maximum.accumulate(y, axis=1))


@pytest.mark.skipif(importlib.util.find_spec("jax") is None, reason="JAX (the peer) not installed")
@pytest.mark.parametrize("shape, dim", [((64, 1000), 1), ((1000, 64), 0), ((3, 20000), 1)])
def test_jnp_cumsum_error_is_at_most_xlas(shape, dim):
    import jax
    import jax.numpy as jnp

    def cumsum(v):
        return jnp.cumsum(v, axis=dim)

    x = np.random.default_rng(1).standard_normal(shape).astype(np.float32) + 0.25
    module = accy.import_stablehlo(jax.jit(cumsum).lower(x).as_text())
    (got,) = accy.compile(module, target="cpu", threads=1)(x)
    exact = np.cumsum(x.astype(np.float64), axis=dim)
    assert _error(got, exact) <= _error(np.asarray(jax.jit(cumsum)(x)), exact)
