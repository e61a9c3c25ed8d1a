"""`accy.jit`: a JAX function compiled by accy, called as `jax.jit`'s would be.

    step = accy.jit(update, static_argnums=(2,), donate_argnums=(0,))
    params, loss = step(params, batch, "adam")   # pytrees of numpy or JAX arrays in and out

A call picks a compiled program by the arguments' pytree structure, shapes and dtypes and
the static arguments' values (`Jitted.compiled`). A new combination is traced by JAX
(`jax.jit(fn, ...).lower(...)`, with source locations, so accy's diagnostics name the
user's lines), compiled by `accy.compile` and kept: a second call with equal shapes
compiles nothing (and a compile in another process finds the program in the compile
cache by its text). Donated arguments (`donate_argnums`) reach accy as JAX marks them in
the StableHLO and are planned as donated; the caller's arrays are never written. Results
come back in the function's pytree, as JAX arrays when an argument is one, else as numpy
arrays. Needs JAX (`pip install 'accy[jax]'`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from accy.diagnostics import AccyError, wrong_type
from accy.targets import DEFAULT_TARGET


def jit(
    fn: Callable[..., Any],
    *,
    static_argnums: int | Sequence[int] = (),
    donate_argnums: int | Sequence[int] = (),
    target: str = DEFAULT_TARGET,
    **compile_options: Any,
) -> Jitted:
    """`fn` compiled by accy on each new signature of its arguments (see the module doc);
    `compile_options` are `accy.compile`'s (`threads`, `rows`, ...)."""
    if not callable(fn):
        raise wrong_type("accy.jit", "fn", "a function", fn)
    _jax()
    return Jitted(fn, _indices(static_argnums), _indices(donate_argnums), target, compile_options)


def _jax() -> Any:
    """The jax module; `AccyError` saying how to install it when it is not."""
    try:
        import jax
    except ModuleNotFoundError:
        raise AccyError("accy.jit needs JAX: pip install 'accy[jax]'") from None
    return jax


def _indices(numbers: int | Sequence[int]) -> tuple[int, ...]:
    return (numbers,) if isinstance(numbers, int) else tuple(numbers)


class Jitted:
    """A function compiled by accy for each signature it is called with."""

    def __init__(
        self,
        fn: Callable[..., Any],
        static_argnums: tuple[int, ...],
        donate_argnums: tuple[int, ...],
        target: str,
        compile_options: dict[str, Any],
    ):
        self.fn = fn
        self.static_argnums = static_argnums
        self.donate_argnums = donate_argnums
        self.target = target
        self.compile_options = compile_options
        self.compiled: dict[Hashable, _Program] = {}
        """The programs compiled so far, by signature."""
        functools.update_wrapper(self, fn)  # type: ignore[arg-type]

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        jax = _jax()

        static = []
        for index in self.static_argnums:
            if not -len(args) <= index < len(args):
                raise AccyError(f"accy.jit: static_argnums names argument {index}, of {len(args)}")
            value = args[index]
            try:
                hash(value)
            except TypeError:
                raise wrong_type(
                    "accy.jit", f"static argument #{index}", "a hashable value", value
                ) from None
            static.append((index % len(args), value))
        positions = {position for position, _ in static}
        dynamic = [a for i, a in enumerate(args) if i not in positions]
        leaves, tree = jax.tree_util.tree_flatten((dynamic, kwargs))
        arrays = [np.asarray(leaf) for leaf in leaves]  # (a JAX array copied to the host)
        key = (tree, tuple((a.shape, a.dtype) for a in arrays), tuple(static))
        program = self.compiled.get(key)
        if program is None:
            program = self.compiled[key] = self._compile(args, kwargs)
        given = [a.astype(d, copy=False) for a, d in zip(arrays, program.dtypes)]
        outputs = program.executable["main"](*given)
        if any(isinstance(leaf, jax.Array) for leaf in leaves):
            outputs = [jax.numpy.asarray(o) for o in outputs]
        return jax.tree_util.tree_unflatten(program.out_tree, outputs)

    def _compile(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> _Program:
        jax = _jax()

        from accy.compiler import compile as accy_compile

        jitted = jax.jit(
            self.fn,
            static_argnums=self.static_argnums,
            donate_argnums=self.donate_argnums,
            keep_unused=True,
        )
        lowered = jitted.lower(*args, **kwargs)
        text = lowered.as_text(debug_info=True)
        dtypes = [np.dtype(a.dtype) for a in jax.tree_util.tree_leaves(lowered.args_info)]
        executable = accy_compile(text, self.target, **self.compile_options)
        return _Program(executable, dtypes, lowered.out_tree)


@dataclass(frozen=True)
class _Program:
    """One compiled signature: the executable, the dtype each argument leaf is given as
    (JAX's: a Python float is f32), the results' pytree."""

    executable: Any
    dtypes: list[np.dtype]
    out_tree: Any
