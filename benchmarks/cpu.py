"""accy's CPU target against numpy (and XLA through JAX when importable), in one run.

    python benchmarks/cpu.py [--repeat 50] [--cases chain,softmax] [--threads N]

accy runs on `--threads` threads (default: all CPUs this process may use, as
`accy.compile`); XLA on its own default (all CPUs). To compare single-threaded code, run
with `--threads 1` and `XLA_FLAGS="--xla_cpu_multi_thread_eigen=false
intra_op_parallelism_threads=1"`.

Cases: a fused 4-input elementwise chain (1M f32), a GELU chain (tanh form), row softmax
(1024 x 1024), layernorm (1024 x 1024), a small MLP (dot + bias + relu), a row
reduction, a sort (1M f32), a segment sum (a scatter-add of 1M values into 4096) and a row
argmax (a fold of values and positions). Each case checks accy's result against numpy first, then times every
implementation (median of `--repeat` calls after warm-up; XLA's inputs are put on its
device once, before timing) and prints ratios
(numpy time / accy time: above 1 means accy is faster) and their geometric mean. Times are
printed only next to the ratios they come from.
"""

from __future__ import annotations

import argparse
import functools
from collections.abc import Callable

import numpy as np
from timing import geomean, median_time

import accy

N = 1 << 20
R, C = 1024, 1024


def _chain_text() -> str:
    t = f"tensor<{N}xf32>"
    return f"""
func.func @main(%a: {t}, %b: {t}, %c: {t}, %d: {t}) -> {t} {{
  %0 = accy.add %a, %b : {t}
  %1 = accy.multiply %0, %c : {t}
  %2 = accy.subtract %1, %d : {t}
  %3 = accy.maximum %2, %a : {t}
  %4 = accy.multiply %3, %b : {t}
  return %4 : {t}
}}"""


def _chain_numpy(a, b, c, d):
    return np.maximum((a + b) * c - d, a) * b


def _gelu_text() -> str:
    t = f"tensor<{R}x{C}xf32>"
    return f"""
func.func @main(%x: {t}) -> {t} {{
  %h = accy.constant dense<0.5> : {t}
  %one = accy.constant dense<1.0> : {t}
  %k = accy.constant dense<0.7978845608> : {t}
  %c = accy.constant dense<0.044715> : {t}
  %x2 = accy.multiply %x, %x : {t}
  %x3 = accy.multiply %x2, %x : {t}
  %cx3 = accy.multiply %c, %x3 : {t}
  %in = accy.add %x, %cx3 : {t}
  %kin = accy.multiply %k, %in : {t}
  %th = accy.tanh %kin : {t}
  %t1 = accy.add %one, %th : {t}
  %ht = accy.multiply %h, %t1 : {t}
  %g = accy.multiply %x, %ht : {t}
  return %g : {t}
}}"""


def _gelu_numpy(x):
    return x * (
        0.5 * (1.0 + np.tanh(np.float32(0.7978845608) * (x + np.float32(0.044715) * x * x * x)))
    )


def _softmax_text() -> str:
    t, v = f"tensor<{R}x{C}xf32>", f"tensor<{R}xf32>"
    return f"""
func.func @main(%x: {t}) -> {t} {{
  %m = accy.reduce max %x, dims = [1] : ({t}) -> {v}
  %mb = accy.broadcast_in_dim %m, dims = [0] : ({v}) -> {t}
  %d = accy.subtract %x, %mb : {t}
  %e = accy.exponential %d : {t}
  %s = accy.reduce add %e, dims = [1] : ({t}) -> {v}
  %sb = accy.broadcast_in_dim %s, dims = [0] : ({v}) -> {t}
  %r = accy.divide %e, %sb : {t}
  return %r : {t}
}}"""


def _softmax_numpy(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def _layernorm_text() -> str:
    t, v, w = f"tensor<{R}x{C}xf32>", f"tensor<{R}xf32>", f"tensor<{C}xf32>"
    return f"""
func.func @main(%x: {t}, %g: {w}, %b: {w}) -> {t} {{
  %n = accy.constant dense<{float(C)}> : {v}
  %eps = accy.constant dense<1.0e-5> : {v}
  %s = accy.reduce add %x, dims = [1] : ({t}) -> {v}
  %mean = accy.divide %s, %n : {v}
  %mb = accy.broadcast_in_dim %mean, dims = [0] : ({v}) -> {t}
  %c = accy.subtract %x, %mb : {t}
  %c2 = accy.multiply %c, %c : {t}
  %q = accy.reduce add %c2, dims = [1] : ({t}) -> {v}
  %var = accy.divide %q, %n : {v}
  %ve = accy.add %var, %eps : {v}
  %r = accy.rsqrt %ve : {v}
  %rb = accy.broadcast_in_dim %r, dims = [0] : ({v}) -> {t}
  %y = accy.multiply %c, %rb : {t}
  %gb = accy.broadcast_in_dim %g, dims = [1] : ({w}) -> {t}
  %bb = accy.broadcast_in_dim %b, dims = [1] : ({w}) -> {t}
  %yg = accy.multiply %y, %gb : {t}
  %out = accy.add %yg, %bb : {t}
  return %out : {t}
}}"""


def _layernorm_numpy(x, g, b):
    mean = x.mean(axis=1, keepdims=True)
    c = x - mean
    var = (c * c).mean(axis=1, keepdims=True)
    return c / np.sqrt(var + np.float32(1e-5)) * g + b


BATCH, IN, HIDDEN, OUT = 64, 256, 512, 128


def _mlp_text() -> str:
    return f"""
func.func @main(%x: tensor<{BATCH}x{IN}xf32>, %w: tensor<{IN}x{HIDDEN}xf32>, %b: tensor<{HIDDEN}xf32>) -> tensor<{BATCH}x{HIDDEN}xf32> {{
  %h = accy.dot_general %x, %w, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<{BATCH}x{IN}xf32>, tensor<{IN}x{HIDDEN}xf32>) -> tensor<{BATCH}x{HIDDEN}xf32>
  %bb = accy.broadcast_in_dim %b, dims = [1] : (tensor<{HIDDEN}xf32>) -> tensor<{BATCH}x{HIDDEN}xf32>
  %hb = accy.add %h, %bb : tensor<{BATCH}x{HIDDEN}xf32>
  %z = accy.constant dense<0.0> : tensor<{BATCH}x{HIDDEN}xf32>
  %r = accy.maximum %hb, %z : tensor<{BATCH}x{HIDDEN}xf32>
  return %r : tensor<{BATCH}x{HIDDEN}xf32>
}}"""


def _mlp_numpy(x, w, b):
    return np.maximum(x @ w + b, np.float32(0))


def _rowsum_text() -> str:
    return f"""
func.func @main(%x: tensor<{R}x{C}xf32>) -> tensor<{R}xf32> {{
  %s = accy.reduce add %x, dims = [1] : (tensor<{R}x{C}xf32>) -> tensor<{R}xf32>
  return %s : tensor<{R}xf32>
}}"""


def _rowsum_numpy(x):
    return x.sum(axis=1)


def _sort_text() -> str:
    t = f"tensor<{N}xf32>"
    return f"""
func.func @main(%x: {t}) -> {t} {{
  %s = accy.sort(%x : {t}), dim = 0 -> ({t}) {{
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %lt = accy.compare LT, %a, %b total_order : (tensor<f32>, tensor<f32>) -> tensor<i1>
    accy.yield %lt : tensor<i1>
  }}
  func.return %s : {t}
}}"""


def _segment_sum_text() -> str:
    return f"""
func.func @main(%ids: tensor<{N}xi32>, %v: tensor<{N}xf32>) -> tensor<{SEGMENTS}xf32> {{
  %zero = accy.constant dense<0.0> : tensor<f32>
  %table = accy.broadcast_in_dim %zero, dims = [] : (tensor<f32>) -> tensor<{SEGMENTS}xf32>
  %index = accy.reshape %ids : (tensor<{N}xi32>) -> tensor<{N}x1xi32>
  %r = accy.scatter %table[%index] updates(%v), update_window_dims = [], inserted_window_dims = [0], input_batching_dims = [], scatter_indices_batching_dims = [], scatter_dims_to_operand_dims = [0], index_vector_dim = 1 : (tensor<{SEGMENTS}xf32>), tensor<{N}x1xi32>, (tensor<{N}xf32>) -> (tensor<{SEGMENTS}xf32>) {{
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %s = accy.add %a, %b : tensor<f32>
    accy.yield %s : tensor<f32>
  }}
  func.return %r : tensor<{SEGMENTS}xf32>
}}"""


def _segment_sum_numpy(ids, v):
    out = np.zeros(SEGMENTS, np.float32)
    np.add.at(out, ids, v)
    return out


def _argmax_text() -> str:
    return f"""
func.func @main(%x: tensor<{R}x{C}xf32>) -> tensor<{R}xi32> {{
  %iota = accy.iota dim = 1 : tensor<{R}x{C}xi32>
  %lowest = accy.constant dense<-3.0e38> : tensor<f32>
  %zero = accy.constant dense<0> : tensor<i32>
  %v, %i = accy.fold(%x, %iota : tensor<{R}x{C}xf32>, tensor<{R}x{C}xi32>) init(%lowest, %zero : tensor<f32>, tensor<i32>), dims = [1] -> (tensor<{R}xf32>, tensor<{R}xi32>) {{
  ^bb0(%a: tensor<f32>, %j: tensor<i32>, %b: tensor<f32>, %k: tensor<i32>):
    %gt = accy.compare GT, %b, %a : (tensor<f32>, tensor<f32>) -> tensor<i1>
    %c = accy.select %gt, %b, %a : tensor<i1>, tensor<f32>
    %l = accy.select %gt, %k, %j : tensor<i1>, tensor<i32>
    accy.yield %c, %l : tensor<f32>, tensor<i32>
  }}
  func.return %i : tensor<{R}xi32>
}}"""


SEGMENTS = 4096


def _inputs(name: str, rng: np.random.Generator) -> list[np.ndarray]:
    f = lambda *shape: rng.standard_normal(shape, dtype=np.float32)
    return {
        "chain": lambda: [f(N) for _ in range(4)],
        "gelu": lambda: [f(R, C)],
        "softmax": lambda: [f(R, C)],
        "layernorm": lambda: [f(R, C), f(C), f(C)],
        "mlp": lambda: [f(BATCH, IN), f(IN, HIDDEN) * np.float32(0.05), f(HIDDEN)],
        "rowsum": lambda: [f(R, C)],
        "sort": lambda: [f(N)],
        "segment_sum": lambda: [rng.integers(0, SEGMENTS, N).astype(np.int32), f(N)],
        "argmax": lambda: [f(R, C)],
    }[name]()


CASES: dict[str, tuple[str, Callable[[], str], Callable[..., np.ndarray]]] = {
    "chain": ("fused 4-input elementwise chain, 1M f32", _chain_text, _chain_numpy),
    "gelu": ("GELU (tanh form), 1024x1024 f32", _gelu_text, _gelu_numpy),
    "softmax": ("row softmax, 1024x1024 f32", _softmax_text, _softmax_numpy),
    "layernorm": ("layernorm, 1024x1024 f32", _layernorm_text, _layernorm_numpy),
    "mlp": ("MLP dot+bias+relu, 64x256 @ 256x512", _mlp_text, _mlp_numpy),
    "rowsum": ("row reduction, 1024x1024 f32", _rowsum_text, _rowsum_numpy),
    "sort": ("sort, 1M f32", _sort_text, np.sort),
    "segment_sum": (
        "segment sum (scatter-add), 1M into 4096",
        _segment_sum_text,
        _segment_sum_numpy,
    ),
    "argmax": (
        "row argmax (fold), 1024x1024 f32",
        _argmax_text,
        lambda x: np.argmax(x, axis=1).astype(np.int32),
    ),
}


def _jax_function(name: str):
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        return None
    fns = {
        "chain": lambda a, b, c, d: jnp.maximum((a + b) * c - d, a) * b,
        "gelu": lambda x: x * (0.5 * (1.0 + jnp.tanh(0.7978845608 * (x + 0.044715 * x**3)))),
        "softmax": lambda x: jax.nn.softmax(x, axis=1),
        "layernorm": lambda x, g, b: (
            (x - x.mean(1, keepdims=True)) / jnp.sqrt(x.var(1, keepdims=True) + 1e-5) * g + b
        ),
        "mlp": lambda x, w, b: jnp.maximum(x @ w + b, 0),
        "rowsum": lambda x: x.sum(1),
        "sort": jnp.sort,
        "segment_sum": lambda ids, v: jnp.zeros(SEGMENTS, jnp.float32).at[ids].add(v),
        "argmax": lambda x: jnp.argmax(x, axis=1),
    }
    jitted = jax.jit(fns[name])

    def bind(*args):
        # Inputs go to the device once, outside the timed calls: accy reads the caller's
        # arrays in place, and converting numpy inputs on every call timed the copy
        # (14.8 of 15 ms for the chain), not XLA's computation.
        resident = [jax.device_put(a) for a in args]
        return lambda: jitted(*resident).block_until_ready()

    return bind


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--threads", type=int, default=None, help="accy's threads")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    ratios, xla_ratios = [], []
    jax_missing = _jax_function("chain") is None
    print(f"{'case':40} {'numpy ms':>9} {'accy ms':>9} {'numpy/accy':>11} {'xla/accy':>9}")
    for name in args.cases.split(","):
        title, text, reference = CASES[name]
        inputs = _inputs(name, rng)
        executable = accy.compile(text(), target="cpu", threads=args.threads)
        function = executable["main"]
        (got,) = function(*inputs)
        np.testing.assert_allclose(got, reference(*inputs), rtol=2e-4, atol=2e-4)
        accy_s = median_time(functools.partial(function, *inputs), args.repeat)
        numpy_s = median_time(functools.partial(reference, *inputs), args.repeat)
        ratios.append(numpy_s / accy_s)
        xla = "skipped"
        jax_fn = None if jax_missing else _jax_function(name)
        if jax_fn is not None:
            xla_s = median_time(jax_fn(*inputs), args.repeat)
            xla_ratios.append(xla_s / accy_s)
            xla = f"{xla_s / accy_s:9.2f}"
        print(
            f"{title:40} {numpy_s * 1e3:9.3f} {accy_s * 1e3:9.3f} {numpy_s / accy_s:11.2f} {xla:>9}"
        )
    print(f"accy threads: {executable.threads}")
    print(f"geometric mean numpy/accy: {geomean(ratios):.2f}")
    if xla_ratios:
        print(f"geometric mean xla/accy: {geomean(xla_ratios):.2f}")
    else:
        print("XLA: skipped (jax is not importable)")
    print("(accy times include argument checks and the ctypes call; ratios > 1: accy faster)")


if __name__ == "__main__":
    main()
