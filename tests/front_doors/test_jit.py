"""`accy.jit` (runs where JAX is installed): the results of `jax.jit`, pytrees in and out,
one compile per signature, static and donated arguments, diagnostics at the user's line."""

from __future__ import annotations

import inspect

import numpy as np
import pytest
from accy.dialects.accy import donated_parameters

import accy

jax = pytest.importorskip("jax")
jnp = jax.numpy


def layer(params, x, activation):
    y = x @ params["w"] + params["b"]
    return {"y": jnp.tanh(y) if activation == "tanh" else y, "total": y.sum()}


PARAMS = {
    "w": np.random.default_rng(0).standard_normal((4, 3)).astype(np.float32),
    "b": np.arange(3, dtype=np.float32),
}
X = np.random.default_rng(1).standard_normal((2, 4)).astype(np.float32)


def _close(got, want) -> None:
    assert jax.tree_util.tree_structure(got) == jax.tree_util.tree_structure(want)
    for g, w in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-5, atol=1e-6)


def test_results_match_jax_jit_and_equal_shapes_compile_once():
    fast = accy.jit(layer, static_argnums=2)
    got = fast(PARAMS, X, "tanh")
    _close(got, jax.jit(layer, static_argnums=2)(PARAMS, X, "tanh"))
    assert isinstance(got["y"], np.ndarray)  # numpy in, numpy out
    fast(PARAMS, 2 * X, "tanh")
    assert len(fast.compiled) == 1
    _close(fast(PARAMS, X, "linear"), layer(PARAMS, X, "linear"))  # another static value
    fast(PARAMS, np.ones((5, 4), np.float32), "tanh")  # another shape
    assert len(fast.compiled) == 3


def test_jax_arrays_in_jax_arrays_out_and_python_scalars_take_jax_dtypes():
    scale = accy.jit(lambda x, s: x * s)
    got = scale(jnp.asarray(X), 2.0)
    assert isinstance(got, jax.Array) and got.dtype == jnp.float32
    np.testing.assert_allclose(np.asarray(got), X * 2)


def test_donated_arguments_are_planned_as_donated_and_never_written():
    step = accy.jit(
        lambda p, g: jax.tree_util.tree_map(lambda a, b: a - 0.1 * b, p, g), donate_argnums=0
    )
    grads = {k: np.ones_like(v) for k, v in PARAMS.items()}
    before = {k: v.copy() for k, v in PARAMS.items()}
    got = step(PARAMS, grads)
    _close(got, {k: v - 0.1 for k, v in before.items()})
    _close(PARAMS, before)
    (program,) = step.compiled.values()
    main = program.executable.module.ops.first  # params: b, w (donated), then the grads
    assert donated_parameters(main) == (True, True, False, False)


def test_a_refused_op_is_reported_at_the_users_line():
    line = inspect.currentframe().f_lineno + 1
    spectrum = accy.jit(lambda a: jnp.fft.fft(a).real)
    with pytest.raises(accy.AccyError) as error:
        spectrum(np.ones(8, np.float32))
    assert f"{__file__}:{line}:" in error.value.diagnostic()


def test_a_static_argument_must_be_hashable():
    with pytest.raises(accy.AccyTypeError, match="static argument #1 must be a hashable"):
        accy.jit(lambda x, s: x, static_argnums=1)(X, [1, 2])
