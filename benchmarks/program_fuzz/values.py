"""Random arguments per element type, deterministic from a seed.

Each program draws one profile: `normal` (values around 1, some zeros), `wide` (magnitudes
from 1e-12 to 1e12 for floats, the whole range for integers) or `special` (normal values
with zeros of both signs, infinities, NaNs, the extremes and tiny values sprinkled in).
Integer values cover what `accy/reference.py` defines: division by zero, `MIN / -1`,
shifts by the bit width or more, float -> integer converts that saturate. Parameters with
the role "index" (slice starts, gather and scatter indices) hold values in
`[-1, bound + 1]`, mostly inside `[0, bound)`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from accy import dtypes

from .spec import BOOL, FLOATS, Tensor

PROFILES = ("normal", "normal", "normal", "wide", "special")


def profile(rng: np.random.Generator) -> str:
    return PROFILES[int(rng.integers(len(PROFILES)))]


def numpy_dtype(t: Tensor) -> np.dtype:
    return dtypes.NUMPY_DTYPES[t.dtype]


def array(rng: np.random.Generator, t: Tensor, kind: str) -> np.ndarray:
    """Random values of type `t` in the profile `kind`."""
    dtype = dtypes.NUMPY_DTYPES[t.dtype]
    shape = t.shape
    if t.role == "index":
        inside = rng.integers(0, max(t.bound, 1), size=shape)
        outside = rng.integers(-1, t.bound + 2, size=shape)
        values = np.where(rng.random(shape) < 0.9, inside, outside)
        if dtype.kind == "u":
            values = np.maximum(values, 0)
        return values.astype(dtype)
    if t.dtype == BOOL:
        return rng.random(shape) < 0.5
    if t.dtype in FLOATS:
        with np.errstate(over="ignore"):
            return _floats(rng, shape, kind).astype(dtype)
    return _integers(rng, shape, dtype, kind)


def _floats(rng: np.random.Generator, shape: Sequence[int], kind: str) -> np.ndarray:
    values = rng.standard_normal(shape) * 1.5
    values = np.where(rng.random(shape) < 0.05, 0.0, values)
    if kind == "wide":
        values = values * 10.0 ** rng.integers(-12, 13, size=shape)
    elif kind == "special":
        specials = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-40, -1e-40, 3e38, -3e38,
                             65504.0, 1e-7, 88.7, -88.7])  # fmt: skip
        chosen = specials[rng.integers(len(specials), size=shape)]
        values = np.where(rng.random(shape) < 0.2, chosen, values)
    return np.asarray(values, np.float64)


def _integers(
    rng: np.random.Generator, shape: Sequence[int], dtype: np.dtype, kind: str
) -> np.ndarray:
    info = np.iinfo(dtype)
    small = rng.integers(max(info.min, -9), min(info.max, 9) + 1, size=shape)
    if kind == "normal":
        return small.astype(dtype)
    anything = rng.integers(info.min, int(info.max) + 1, size=shape, dtype=np.int64 if
                            info.max < 2**63 else np.uint64)  # fmt: skip
    edges = np.array([info.min, info.max, 0, 1, -1 if info.min < 0 else 2, info.bits,
                      info.bits + 1], dtype=object)  # fmt: skip
    chosen = np.array([int(edges[i]) for i in rng.integers(len(edges), size=int(np.prod(shape)))],
                      dtype=object).reshape(shape)  # fmt: skip
    mix = np.where(rng.random(shape) < 0.5, anything.astype(object), small.astype(object))
    values = np.where(rng.random(shape) < 0.25, chosen, mix)
    return np.array(values.tolist() if shape else values[()], dtype=dtype).reshape(shape)


def arguments(params: Sequence[Tensor], seed: int, index: int) -> list[np.ndarray]:
    """The arguments of program `index` of the run with `seed`."""
    rng = np.random.default_rng([seed, index, 0xACC7])
    kind = profile(rng)
    return [array(rng, t, kind) for t in params]


def save(path, arguments: Sequence[np.ndarray]) -> None:
    """Write `arguments` to an `.npz` file as `arg0`, `arg1`, ... (bf16 as its uint16 bits,
    named `argN.bf16`: numpy's format has no bfloat16)."""
    named = {}
    for i, a in enumerate(arguments):
        if a.dtype == dtypes.NUMPY_DTYPES["bf16"]:
            named[f"arg{i}.bf16"] = a.view(np.uint16)
        else:
            named[f"arg{i}"] = a
    np.savez(path, **named)


def load(path) -> list[np.ndarray]:
    """The arguments `save` wrote."""
    with np.load(path) as data:
        found = {}
        for key in data.files:
            name, _, kind = key.partition(".")
            value = data[key]
            found[int(name[3:])] = value.view(dtypes.NUMPY_DTYPES["bf16"]) if kind else value
    return [found[i] for i in sorted(found)]
