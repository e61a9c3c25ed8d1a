"""How far a compiled result may lie from the numpy reference: per element, measured.

A compiled program rounds differently from `accy.reference` (another summation order,
fused multiply-adds, its own exp and tanh polynomials within 3 ulp), and a program can
amplify such differences without bound (a cancellation, a compare that flips, a floor).
So the tolerance is not a constant: `noisy_run` evaluates the reference again with every
rounding op's result jittered by a few ulps of its type - sums, products and
convolutions by their own error scale, `(sqrt(K) + 1)` ulps of the accumulation type
times the sum of the terms' magnitudes, with a random sign on an exact zero and a random class
where those magnitudes overflow; products also a random class (or zero) where some order
of their factors overflows (or underflows) - and `problems` allows each element `FACTOR`
times the largest deviation those runs showed, plus two ulps of its type (subnormals
included: a flushed one differs). Every NaN an op
makes gets a random sign in the noisy runs (which NaN is not specified; a bitcast or a
total-order compare shows it). Elements whose class (finite, NaN, +inf, -inf) or boolean
value changes in some noisy run are unstable and not compared; integers that never moved
must match exactly, and so must NaN and infinity positions elsewhere.

The jitter is applied by temporarily wrapping the evaluators of `accy.reference` (its
`_EVALUATORS` table), in this process only.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import ml_dtypes
import numpy as np
from accy.dialects import accy as ops

from accy import reference

FACTOR = 4.0
"""Each element may deviate this many times the largest deviation of the noisy runs."""
ROUNDED = {ops.AddOp: 1, ops.SubtractOp: 1, ops.MultiplyOp: 1, ops.DivideOp: 1, ops.SqrtOp: 1,
           ops.RemainderOp: 1, ops.RsqrtOp: 2, ops.PowerOp: 4, ops.ExponentialOp: 4,
           ops.LogOp: 4, ops.TanhOp: 4, ops.SineOp: 4, ops.CosineOp: 4, ops.TanOp: 4,
           ops.CbrtOp: 4, ops.LogPlusOneOp: 4, ops.ExponentialMinusOneOp: 4, ops.Atan2Op: 4,
           ops.LogisticOp: 4}  # fmt: skip
"""Ops whose float result is rounded (by the ulps it may be off, transcendental ones
within accy's 3 ulp); the others are exact or sums, handled apart."""
SUMS = (ops.DotGeneralOp, ops.ReduceOp, ops.ConvolutionOp, ops.ScanOp)
MOVES = (ops.ConstantOp, ops.BroadcastInDimOp, ops.ReshapeOp, ops.TransposeOp, ops.SliceOp,
         ops.ReverseOp, ops.PadOp, ops.ConcatenateOp, ops.DynamicSliceOp,
         ops.DynamicUpdateSliceOp, ops.GatherOp, ops.SelectOp, ops.IotaOp, ops.BitcastConvertOp)  # fmt: skip
"""Ops that move bits unchanged (a NaN keeps its sign through them)."""

_LOW = (np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16))


def is_float(dtype: np.dtype) -> bool:
    return dtype == np.dtype(ml_dtypes.bfloat16) or np.issubdtype(dtype, np.floating)


def eps(dtype: np.dtype) -> float:
    return float(ml_dtypes.finfo(dtype).eps)


def tiny(dtype: np.dtype) -> float:
    return float(ml_dtypes.finfo(dtype).smallest_normal)


def _jitter(x: np.ndarray, relative: float, rng: np.random.Generator) -> np.ndarray:
    """`x` times `1 + u * relative`, u uniform in [-1, 1], rounded to its dtype."""
    if not is_float(x.dtype) or x.size == 0:
        return x
    wide = x.astype(np.float64)
    with np.errstate(all="ignore"):
        noisy = wide * (1.0 + rng.uniform(-1.0, 1.0, x.shape) * relative)
    return np.asarray(noisy).astype(x.dtype)


def _sum_terms(op, arrays: Sequence[np.ndarray]) -> int:
    """How many terms each element of a sum-like op's result adds."""
    if isinstance(op, ops.DotGeneralOp):
        return math.prod(arrays[0].shape[d] for d in op.contracting[0])
    if isinstance(op, ops.ReduceOp):
        return math.prod(arrays[0].shape[int(d)] for d in op.dimensions.get_values())
    if isinstance(op, ops.ScanOp):
        return arrays[0].shape[op.dimension.value.data]
    ri, _, *spatial = op.window_list("rhs_dims")
    return arrays[1].shape[ri] * math.prod(arrays[1].shape[d] for d in spatial)


@dataclass(frozen=True)
class Noise:
    """One noisy run's random numbers, and the class (0, 1: finite, 2: +inf, 3: -inf,
    4: NaN) that every overflowing sum takes in it, or None: each its own at random."""

    rng: np.random.Generator
    overflow: int | None = None


def _sum_jitter(op, evaluator, arrays, result: np.ndarray, noise: Noise) -> np.ndarray:
    """A sum-like op's result moved by `(sqrt(K) + 1)` ulps of the accumulation type times
    the sum of its terms' magnitudes (a product of K factors: relatively)."""
    rng = noise.rng
    terms = _sum_terms(op, arrays)
    accumulate = np.dtype(np.float32) if result.dtype in _LOW else result.dtype
    scale = (math.sqrt(terms) + 1.0) * eps(accumulate)
    kind = getattr(op, "kind", None)
    if kind is not None and kind.data == ops.CombinerKind.MUL:
        moved = _jitter(result, scale + eps(result.dtype), rng)
        return _product_jitter(op, arrays[0], moved, noise)
    magnitude = np.asarray(evaluator(op, *(np.abs(a) if is_float(a.dtype) else a
                                           for a in arrays)), np.float64)  # fmt: skip
    with np.errstate(all="ignore"):
        magnitude = np.nan_to_num(magnitude, nan=0.0, posinf=np.finfo(np.float64).max)
        offset = rng.uniform(-1.0, 1.0, result.shape) * scale * magnitude
        moved = np.asarray(result.astype(np.float64) + offset).astype(result.dtype)
    moved = _jitter(moved, eps(result.dtype), rng)
    # An exact zero's sign depends on the order and the initial value of the sum.
    moved = np.where(moved == 0, np.where(rng.random(result.shape) < 0.5, 0.0, -0.0), moved)
    # Where the terms' magnitudes overflow, the order of the sum (and fused multiply-adds,
    # which skip a product's overflow) decides whether it is finite, inf or NaN: such
    # elements take another class in each noisy run.
    overflow = magnitude >= float(ml_dtypes.finfo(accumulate).max)
    classes = _any_class(result, noise)
    return np.where(overflow, classes, moved).astype(result.dtype)


def _any_class(result: np.ndarray, noise: Noise) -> np.ndarray:
    """For each element a finite value (itself if finite, else the largest number of its
    type and sign), +inf, -inf or NaN: what a sum or product that overflows in some order
    may give. At random (finite twice as likely), or all `noise.overflow`'s class: after
    a sort or a max, only overflows that agree show that their elements are unstable."""
    top = float(ml_dtypes.finfo(result.dtype).max)
    wide = result.astype(np.float64)
    finite = np.where(np.isfinite(wide), wide, np.where(wide < 0, -top, top))
    if noise.overflow is None:
        pick = noise.rng.integers(5, size=result.shape)
    else:
        pick = np.full(result.shape, noise.overflow)
    return np.select([pick < 2, pick == 2, pick == 3], [finite, np.inf, -np.inf], np.nan)


def _product_jitter(op, x: np.ndarray, result: np.ndarray, noise: Noise) -> np.ndarray:
    """A product (a reduce or a scan) where some order of its factors may overflow or
    underflow the accumulation type: where the factors above 1 (below 1) multiply past
    its largest (below its smallest normal) number, a random class (a random zero)."""
    accumulate = np.dtype(np.float32) if result.dtype in _LOW else result.dtype
    magnitude = np.abs(x.astype(np.float64))
    with np.errstate(all="ignore"):
        if isinstance(op, ops.ScanOp):
            axis = op.dimension.value.data
            high = np.cumprod(np.maximum(magnitude, 1.0), axis=axis)
            low = np.cumprod(np.minimum(magnitude, 1.0), axis=axis)
        else:
            axes = tuple(int(d) for d in op.dimensions.get_values())
            high = np.prod(np.maximum(magnitude, 1.0), axis=axes)
            low = np.prod(np.minimum(magnitude, 1.0), axis=axes)
    info = ml_dtypes.finfo(accumulate)
    over = high >= float(info.max)
    under = low <= float(info.smallest_normal)
    classes = _any_class(result, noise)
    zeros = np.where(noise.rng.random(result.shape) < 0.5, 0.0, result.astype(np.float64))
    return np.where(over, classes, np.where(under, zeros, result)).astype(result.dtype)


def _any_nan(result: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """`result` with each NaN made +NaN or -NaN at random: which NaN an op makes is not
    specified (x86 makes -NaN, numpy's constants are +NaN), yet a bitcast or a total-order
    compare reads it."""
    nan = np.isnan(result.astype(np.float32))
    if not nan.any():
        return result
    signs = np.where(rng.random(result.shape) < 0.5, np.nan, -np.nan)
    return np.where(nan, signs, result).astype(result.dtype)


def _noisy(evaluator, noise: Noise):
    rng = noise.rng

    def evaluate(op, *arrays):
        result = np.asarray(evaluator(op, *arrays))
        if not is_float(result.dtype):
            return result
        if type(op) in ROUNDED:
            result = _jitter(result, ROUNDED[type(op)] * eps(result.dtype), rng)
        elif isinstance(op, SUMS):
            kind = getattr(op, "kind", None)
            if kind is None or kind.data not in (ops.CombinerKind.MAX, ops.CombinerKind.MIN):
                result = _sum_jitter(op, evaluator, arrays, result, noise)
        return _any_nan(result, rng)

    return evaluate


@contextlib.contextmanager
def _jittered(noise: Noise) -> Iterator[None]:
    table = reference._EVALUATORS
    saved = dict(table)
    try:
        for op_type, evaluator in saved.items():
            if op_type not in MOVES:
                table[op_type] = _noisy(evaluator, noise)
        yield
    finally:
        table.clear()
        table.update(saved)


def noisy_run(module, name: str, arguments: Sequence[np.ndarray], seed: int) -> tuple:
    """The reference's results with every rounding op jittered (see the module doc); every
    third seed gives all overflowing sums one class (`Noise`)."""
    overflow = None if seed % 3 else (seed // 3) % 5
    with _jittered(Noise(np.random.default_rng(seed), overflow)):
        return reference.run(module, name, *arguments)


def noisy_runs(module, name: str, arguments, count: int, first_seed: int = 1) -> list[tuple]:
    return [noisy_run(module, name, arguments, first_seed + k) for k in range(count)]


# ---------------------------------------------------------------------------------------
# The comparison
# ---------------------------------------------------------------------------------------


def _classes(x: np.ndarray) -> np.ndarray:
    """0 finite, 1 NaN, 2 +inf, 3 -inf."""
    return np.where(np.isnan(x), 1, np.where(x == np.inf, 2, np.where(x == -np.inf, 3, 0)))


@dataclass
class Verdict:
    """Per element of one result: `bad` (differs beyond its tolerance), `unstable` (not
    compared) and the `tolerance` (None for booleans)."""

    bad: np.ndarray
    unstable: np.ndarray
    tolerance: np.ndarray | None


def verdict(actual: np.ndarray, expected: np.ndarray, trials: Sequence[np.ndarray],
            center: np.ndarray | None = None, flushes: bool = False) -> Verdict:  # fmt: skip
    """`actual` against `expected` within the noisy runs' spread around `center` (the
    reference run they jitter; default `expected`), element by element; both of one
    shape and dtype. `flushes=True` allows anything below the smallest normal number
    (XLA's CPU flushes subnormals to zero; accy must not)."""
    center = expected if center is None else np.asarray(center)
    if expected.dtype == np.bool_:
        unstable = np.zeros(expected.shape, bool)
        for t in trials:
            unstable |= np.asarray(t) != center
        return Verdict((actual != expected) & ~unstable, unstable, None)
    a, e = actual.astype(np.float64), expected.astype(np.float64)
    c = center.astype(np.float64)
    deviation = np.zeros(expected.shape)
    unstable = np.zeros(expected.shape, bool)
    for t in trials:
        t = np.asarray(t).astype(np.float64)
        with np.errstate(all="ignore"):
            unstable |= _classes(t) != _classes(c)
            deviation = np.fmax(deviation, np.where(np.isfinite(t - c), np.abs(t - c), 0.0))
    if is_float(expected.dtype):
        floor = tiny(expected.dtype) if flushes else 0.0
        ulp = eps(expected.dtype) * np.maximum(np.abs(np.nan_to_num(e)), floor)
        tolerance = FACTOR * deviation + 2.0 * ulp + floor
        with np.errstate(all="ignore"):
            far = (_classes(a) != _classes(e)) | (
                (_classes(e) == 0) & ~(np.abs(a - e) <= tolerance)
            )
        return Verdict(far & ~unstable, unstable, tolerance)
    # Integers: compared exactly unless a noisy run moved them (float64 loses the low
    # bits of a large int64, so "moved" is decided on the integers themselves).
    moved = np.zeros(expected.shape, bool)
    for t in trials:
        moved |= np.asarray(t) != center
    allowed = FACTOR * np.maximum(deviation, np.spacing(np.abs(e)))
    exact = ~moved & (actual != expected)
    with np.errstate(all="ignore"):
        loose = moved & (np.abs(a - e) > allowed)
    return Verdict(exact | loose, unstable, np.where(moved, allowed, 0))


def problems(actual: np.ndarray, expected: np.ndarray, trials: Sequence[np.ndarray],
             center: np.ndarray | None = None, flushes: bool = False) -> str | None:  # fmt: skip
    """Why `actual` is not `expected` (see `verdict`), or None."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    if actual.shape != expected.shape or actual.dtype != expected.dtype:
        return (f"got {actual.dtype}{list(actual.shape)}, expected "
                f"{expected.dtype}{list(expected.shape)}")  # fmt: skip
    if expected.size == 0:
        return None
    v = verdict(actual, expected, trials, center, flushes)
    return _report(actual, expected, v.bad, v.unstable, v.tolerance)


def _report(actual, expected, bad, unstable, tolerance) -> str | None:
    count = int(np.count_nonzero(bad))
    if not count:
        return None
    at = tuple(int(i) for i in np.argwhere(bad)[0])
    allowed = "" if tolerance is None else f" (tolerance {float(tolerance[at]):.3g})"
    skipped = int(np.count_nonzero(unstable))
    return (f"{count} of {expected.size} elements differ, first at {list(at)}: got "
            f"{actual[at]!r}, expected {expected[at]!r}{allowed}"
            + (f"; {skipped} unstable elements not compared" if skipped else ""))  # fmt: skip


def compare(actual: Sequence[np.ndarray], expected: Sequence[np.ndarray],
            trials: Sequence[Sequence[np.ndarray]],
            center: Sequence[np.ndarray] | None = None,
            flushes: bool = False) -> str | None:  # fmt: skip
    """The first result that differs beyond its tolerance, described; or None."""
    if len(actual) != len(expected):
        return f"{len(actual)} results, expected {len(expected)}"
    for k, (a, e) in enumerate(zip(actual, expected)):
        middle = None if center is None else center[k]
        problem = problems(a, e, [t[k] for t in trials], middle, flushes)
        if problem:
            return f"result #{k}: {problem}"
    return None
