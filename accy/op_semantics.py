"""The numpy values of accy's elementwise ops, constants, broadcasts and reshapes.

`evaluate(op, *arrays)` computes the result of one such op (an `EVALUATORS` kind) from its
operands' arrays, with StableHLO's semantics as the compiled targets compute them (the
rules are listed in `accy.reference`'s docstring: f16/bf16 math in float32 rounded back
after each op, wrapping integers, XLA's integer division by zero, IEEE floats without
warnings, saturating float -> int conversion). The reference interpreter evaluates these
ops with it, and `accy-fold-constants` folds constant expressions with it, so a folded
constant holds the bits a compiled program computes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from xdsl.dialects.builtin import DYNAMIC_INDEX, TensorType
from xdsl.ir import Operation, SSAValue

from accy.diagnostics import AccyInputError
from accy.dialects import accy
from accy.dtypes import dense_values, is_bfloat16, numpy_dtype

# ---------------------------------------------------------------------------------------
# Types
# ---------------------------------------------------------------------------------------


def _is_float(dtype: np.dtype) -> bool:
    return is_bfloat16(dtype) or np.issubdtype(dtype, np.floating)


def _low_precision(dtype: np.dtype) -> bool:
    """Float dtypes whose math is done in float32 and rounded back."""
    return dtype == np.float16 or is_bfloat16(dtype)


def _tensor_type(value: SSAValue) -> TensorType:
    assert isinstance(value.type, TensorType), value.type
    return value.type


def _dtype_of(value: SSAValue) -> np.dtype:
    return numpy_dtype(_tensor_type(value).get_element_type())


def _shape_text(shape: Sequence[int]) -> str:
    """A shape as Python prints a tuple, `?` for a dynamic dim: `(4, ?)`, `(4,)`, `()`."""
    dims = ["?" if d == DYNAMIC_INDEX else str(d) for d in shape]
    return "(" + ", ".join(dims) + ("," if len(dims) == 1 else "") + ")"


def _shape_matches(declared: Sequence[int], actual: Sequence[int]) -> bool:
    return len(declared) == len(actual) and all(
        d == DYNAMIC_INDEX or d == a for d, a in zip(declared, actual)
    )


def _dtype_text(dtype: np.dtype) -> str:
    return dtype.name if dtype.isnative else str(dtype)


def _op_error(op: Operation, message: str) -> AccyInputError:
    return AccyInputError(f"'{op.name}' op {message}", op.location)


# ---------------------------------------------------------------------------------------
# Float helpers: compute f16/bf16 in float32 and round back
# ---------------------------------------------------------------------------------------


def _float_math(fn: Callable[..., np.ndarray], *args: np.ndarray) -> np.ndarray:
    """`fn` on float arrays of one dtype, in float32 for f16/bf16, result in that dtype."""
    dtype = args[0].dtype
    wide = [a.astype(np.float32) if _low_precision(dtype) else a for a in args]
    with np.errstate(all="ignore"):
        return np.asarray(fn(*wide)).astype(dtype, copy=False)


def _wide(x: np.ndarray) -> np.ndarray:
    return x.astype(np.float32) if _low_precision(x.dtype) else x


# ---------------------------------------------------------------------------------------
# Elementwise ops
# ---------------------------------------------------------------------------------------


def _int_divide(lhs: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """Truncating division; x / 0 = -1 (all bits set) and MIN / -1 = MIN (XLA's
    convention)."""
    zero = rhs == 0
    if lhs.dtype.kind == "u":
        quotient = lhs // np.where(zero, np.ones_like(rhs), rhs)
        return np.where(zero, np.full_like(lhs, np.iinfo(lhs.dtype).max), quotient)
    minimum = np.iinfo(lhs.dtype).min
    overflow = (lhs == minimum) & (rhs == -1)
    safe = np.where(zero | overflow, np.ones_like(rhs), rhs)
    quotient = lhs // safe  # floors
    remainder = lhs - quotient * safe
    quotient = quotient + ((remainder != 0) & ((lhs < 0) != (safe < 0))).astype(lhs.dtype)
    return np.where(zero, np.full_like(lhs, -1), quotient)


def _int_power(base: np.ndarray, exponent: np.ndarray) -> np.ndarray:
    """Wrapping `base ** exponent` by squaring (equal to repeated multiply mod 2**n)."""
    one = np.ones_like(base)
    result = one.copy()
    square = base.copy()
    remaining = np.where(exponent < 0, np.zeros_like(exponent), exponent)
    while np.any(remaining):
        result = np.where((remaining & 1) == 1, result * square, result)
        square = square * square
        remaining = remaining >> 1
    negative = np.where(
        base == 1, one, np.where(base == -1, np.where(exponent % 2 == 0, one, -one), 0 * one)
    )
    return np.where(exponent < 0, negative, result)


def _signed_zero(result: np.ndarray, x: np.ndarray, y: np.ndarray, negative) -> np.ndarray:
    """`result` of a float maximum or minimum with IEEE 754-2019's zeros: of two zeros the
    maximum is -0 only where both are (`negative` = and), the minimum where either is
    (`negative` = or); numpy's returns its first operand."""
    zeros = (x == 0) & (y == 0)
    signed = np.where(negative(np.signbit(x), np.signbit(y)), -0.0, 0.0).astype(result.dtype)
    return np.where(zeros, signed, result)


def _binary(float_fn: Callable, int_fn: Callable) -> Callable:
    def evaluate(op: Operation, lhs: np.ndarray, rhs: np.ndarray) -> np.ndarray:
        if lhs.shape != rhs.shape:
            raise _op_error(op, f"operand shapes {lhs.shape} and {rhs.shape} differ")
        if _is_float(lhs.dtype):
            return _float_math(float_fn, lhs, rhs)
        with np.errstate(all="ignore"):
            return np.asarray(int_fn(lhs, rhs)).astype(lhs.dtype, copy=False)

    return evaluate


def _unary(fn: Callable) -> Callable:
    def evaluate(op: Operation, operand: np.ndarray) -> np.ndarray:
        if _is_float(operand.dtype):
            return _float_math(fn, operand)
        with np.errstate(all="ignore"):
            return np.asarray(fn(operand)).astype(operand.dtype, copy=False)

    return evaluate


def _int_remainder(lhs: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """Truncating remainder; by 0 the dividend (np.fmod gives 0 there)."""
    safe = np.where(rhs == 0, 1, rhs)
    return np.where(rhs == 0, lhs, np.fmod(lhs, safe))


def _shift(kind: str) -> Callable:
    def shift(op: Operation, lhs: np.ndarray, rhs: np.ndarray) -> np.ndarray:
        bits = lhs.dtype.itemsize * 8
        unsigned = lhs.view(f"u{lhs.dtype.itemsize}")
        amount = rhs.view(f"u{rhs.dtype.itemsize}")
        inside = amount < bits
        by = np.where(inside, amount, 0).astype(unsigned.dtype)
        if kind == "left":
            out = np.where(inside, unsigned << by, 0).astype(unsigned.dtype).view(lhs.dtype)
        elif kind == "logical":
            out = np.where(inside, unsigned >> by, 0).astype(unsigned.dtype).view(lhs.dtype)
        else:  # on the bits as a signed integer, unsigned ones too (APInt's ashr)
            signed = lhs.view(f"i{lhs.dtype.itemsize}")
            shifted = signed >> by.astype(signed.dtype)
            out = np.where(inside, shifted, np.where(signed < 0, -1, 0)).astype(signed.dtype)
            out = out.view(lhs.dtype)
        return np.asarray(out).astype(lhs.dtype, copy=False)

    return shift


def _sign(x: np.ndarray) -> np.ndarray:
    """-1, 0 or 1; a float zero (either sign) or NaN is itself. Integers by the sign of
    their bits, unsigned ones too (the reference interpreter's `isNegative`)."""
    if _is_float(x.dtype):
        return np.where(x == 0, x, np.sign(x))
    return np.sign(_as_signed(x)).view(x.dtype)


def _abs(x: np.ndarray) -> np.ndarray:
    """|x|; of integers by their bits as signed (|MIN| = MIN), unsigned ones too (APInt's
    `abs`)."""
    if _is_float(x.dtype):
        return np.abs(x)
    return np.abs(_as_signed(x)).view(x.dtype)


def _as_signed(x: np.ndarray) -> np.ndarray:
    return x.view(f"i{x.dtype.itemsize}") if x.dtype.kind == "u" else x


def _round_half_away(x: np.ndarray) -> np.ndarray:
    whole = np.trunc(x)
    return np.where(np.abs(x - whole) >= 0.5, whole + np.sign(x), whole).astype(x.dtype)


def _leading_zeros(x: np.ndarray) -> np.ndarray:
    bits = x.dtype.itemsize * 8
    unsigned = x.view(f"u{x.dtype.itemsize}")
    count = np.zeros(x.shape, np.int64)
    seen = np.zeros(x.shape, bool)
    for bit in range(bits - 1, -1, -1):
        seen |= ((unsigned >> np.array(bit, unsigned.dtype)) & 1).astype(bool)
        count += ~seen
    return count


def _is_finite(op: Operation, x: np.ndarray) -> np.ndarray:
    return np.isfinite(_wide(x))


def _rsqrt(x: np.ndarray) -> np.ndarray:
    return np.reciprocal(np.sqrt(x))


def _logistic(x: np.ndarray) -> np.ndarray:
    """`1 / (1 + e)` for x >= 0, `e / (1 + e)` below, `e = exp(-|x|)`: no overflow, so a
    very negative x gives exp(x) (down to denormals), not `1 / inf = 0`."""
    one = np.ones((), dtype=x.dtype)
    e = np.exp(-np.abs(x))
    return np.where(x < 0, e, one) / (one + e)


_COMPARISONS = {
    accy.ComparisonDirection.EQ: np.equal,
    accy.ComparisonDirection.NE: np.not_equal,
    accy.ComparisonDirection.LT: np.less,
    accy.ComparisonDirection.LE: np.less_equal,
    accy.ComparisonDirection.GT: np.greater,
    accy.ComparisonDirection.GE: np.greater_equal,
}


def _compare(op: accy.CompareOp, lhs: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    if lhs.shape != rhs.shape:
        raise _op_error(op, f"operand shapes {lhs.shape} and {rhs.shape} differ")
    if op.total_order is not None:
        lhs, rhs = total_order_key(lhs), total_order_key(rhs)
    return _COMPARISONS[op.direction.data](_wide(lhs), _wide(rhs))


def total_order_key(x: np.ndarray) -> np.ndarray:
    """Signed integers ordered as StableHLO's TOTALORDER orders the floats `x`: the bit
    pattern, with the magnitude bits flipped where the sign bit is set."""
    bits = np.asarray(x).view(f"i{x.dtype.itemsize}")
    return np.where(bits < 0, bits ^ np.iinfo(bits.dtype).max, bits)


def _select(
    op: accy.SelectOp, pred: np.ndarray, on_true: np.ndarray, on_false: np.ndarray
) -> np.ndarray:
    if not pred.shape == on_true.shape == on_false.shape:
        raise _op_error(
            op,
            f"operand shapes {pred.shape}, {on_true.shape} and {on_false.shape} differ",
        )
    return np.where(pred, on_true, on_false)


def _bitcast_convert(op: accy.BitcastConvertOp, operand: np.ndarray) -> np.ndarray:
    """The operand's bytes read as the result's type (one element's bytes, a dim of narrower
    elements: the result's shape; a rank-0 operand stays rank 0)."""
    flat = np.array(operand, order="C").reshape(-1)
    shape = tuple(_tensor_type(op.result).get_shape())
    viewed = flat.view(_dtype_of(op.result))
    if DYNAMIC_INDEX in shape:
        ratio = operand.dtype.itemsize // viewed.dtype.itemsize
        shape = operand.shape + ((ratio,) if ratio > 1 else ())
        if ratio < 1:
            shape = operand.shape[:-1]
    return viewed.reshape(shape)


def _convert(op: accy.ConvertOp, operand: np.ndarray) -> np.ndarray:
    target = _dtype_of(op.result)
    source = operand.dtype
    if target == np.bool_:
        return operand != np.zeros((), dtype=source)
    if source == np.bool_:
        return operand.astype(target)
    if _is_float(source) and not _is_float(target):
        wide = operand.astype(np.float64)
        info = np.iinfo(target)
        # float64(info.max) rounds up to 2**63 for int64: compare with >= to saturate it.
        too_big = wide >= np.float64(info.max)
        too_small = wide <= np.float64(info.min)
        safe = np.where(too_big | too_small | np.isnan(wide), 0.0, np.trunc(wide))
        result = safe.astype(target)
        result[too_big] = info.max
        result[too_small] = info.min
        return result
    if _is_float(target):
        # Once rounded to f32 or f64; to f16/bf16 through float64 (exact for every
        # f16/bf16/f32 value and up to 32-bit integers), then one rounding.
        with np.errstate(over="ignore"):
            if target in (np.float32, np.float64):
                return operand.astype(target)
            return operand.astype(np.float64).astype(target)
    return operand.astype(target)  # int -> int wraps


# ---------------------------------------------------------------------------------------
# Constants and data movement
# ---------------------------------------------------------------------------------------


def _constant(op: accy.ConstantOp) -> np.ndarray:
    return dense_values(op.value)


def _broadcast_in_dim(op: accy.BroadcastInDimOp, operand: np.ndarray) -> np.ndarray:
    dims = [int(d) for d in op.broadcast_dimensions.get_values()]
    declared = _tensor_type(op.result).get_shape()
    shape = list(declared)
    for index, dim in enumerate(dims):
        if shape[dim] == DYNAMIC_INDEX:
            shape[dim] = operand.shape[index]
    if DYNAMIC_INDEX in shape:
        raise _op_error(
            op,
            f"cannot tell the size of result dim {shape.index(DYNAMIC_INDEX)}: it is "
            "dynamic and no operand dim maps to it",
        )
    for index, dim in enumerate(dims):
        if operand.shape[index] not in (1, shape[dim]):
            raise _op_error(
                op,
                f"operand dim {index} of size {operand.shape[index]} cannot broadcast "
                f"to result dim {dim} of size {shape[dim]}",
            )
    # Put the operand dims in result order, insert size-1 dims, then stretch.
    order = sorted(range(len(dims)), key=lambda i: dims[i])
    moved = np.transpose(operand, order)
    expanded = [1] * len(shape)
    for i in order:
        expanded[dims[i]] = operand.shape[i]
    return np.broadcast_to(moved.reshape(expanded), shape)


def _reshape(op: accy.ReshapeOp, operand: np.ndarray) -> np.ndarray:
    declared = list(_tensor_type(op.result).get_shape())
    if declared == list(_tensor_type(op.operand).get_shape()):
        return operand  # the type does not change: neither do the sizes
    dynamic = declared.count(DYNAMIC_INDEX)
    if dynamic > 1:
        raise _op_error(op, f"cannot infer {dynamic} dynamic dims of the result from the operand")
    static = int(np.prod([d for d in declared if d != DYNAMIC_INDEX], dtype=np.int64))
    if dynamic:
        fits = static != 0 and operand.size % static == 0
    else:
        fits = operand.size == static
    if not fits:
        raise _op_error(
            op,
            f"cannot reshape {operand.size} elements {operand.shape} into {_shape_text(declared)}",
        )
    return np.reshape(operand, [-1 if d == DYNAMIC_INDEX else d for d in declared])


# ---------------------------------------------------------------------------------------
# Dispatch
# ---------------------------------------------------------------------------------------

EVALUATORS: dict[type[Operation], Callable[..., np.ndarray]] = {
    accy.AddOp: _binary(np.add, np.add),
    accy.SubtractOp: _binary(np.subtract, np.subtract),
    accy.MultiplyOp: _binary(np.multiply, np.multiply),
    accy.DivideOp: _binary(np.divide, _int_divide),
    accy.MaximumOp: _binary(
        lambda x, y: _signed_zero(np.maximum(x, y), x, y, np.logical_and), np.maximum
    ),
    accy.MinimumOp: _binary(
        lambda x, y: _signed_zero(np.minimum(x, y), x, y, np.logical_or), np.minimum
    ),
    accy.PowerOp: _binary(np.power, _int_power),
    accy.RemainderOp: _binary(np.fmod, _int_remainder),
    accy.ShiftLeftOp: _shift("left"),
    accy.ShiftRightLogicalOp: _shift("logical"),
    accy.ShiftRightArithmeticOp: _shift("arithmetic"),
    accy.SignOp: _unary(_sign),
    accy.PopcntOp: _unary(lambda x: np.bitwise_count(x.view(f"u{x.dtype.itemsize}"))),
    accy.CountLeadingZerosOp: _unary(_leading_zeros),
    accy.RoundNearestEvenOp: _unary(np.rint),
    accy.RoundNearestAfzOp: _unary(_round_half_away),
    accy.IsFiniteOp: _is_finite,
    accy.SineOp: _unary(np.sin),
    accy.CosineOp: _unary(np.cos),
    accy.TanOp: _unary(np.tan),
    accy.CbrtOp: _unary(np.cbrt),
    accy.LogPlusOneOp: _unary(np.log1p),
    accy.ExponentialMinusOneOp: _unary(np.expm1),
    accy.Atan2Op: _binary(np.arctan2, np.arctan2),
    accy.AndOp: _binary(np.bitwise_and, np.bitwise_and),
    accy.OrOp: _binary(np.bitwise_or, np.bitwise_or),
    accy.XorOp: _binary(np.bitwise_xor, np.bitwise_xor),
    accy.NotOp: _unary(np.invert),
    accy.NegateOp: _unary(np.negative),
    accy.AbsOp: _unary(_abs),
    accy.ExponentialOp: _unary(np.exp),
    accy.LogOp: _unary(np.log),
    accy.TanhOp: _unary(np.tanh),
    accy.SqrtOp: _unary(np.sqrt),
    accy.RsqrtOp: _unary(_rsqrt),
    accy.FloorOp: _unary(np.floor),
    accy.CeilOp: _unary(np.ceil),
    accy.LogisticOp: _unary(_logistic),
    accy.CompareOp: _compare,
    accy.SelectOp: _select,
    accy.ConvertOp: _convert,
    accy.BitcastConvertOp: _bitcast_convert,
    accy.ConstantOp: _constant,
    accy.BroadcastInDimOp: _broadcast_in_dim,
    accy.ReshapeOp: _reshape,
}
"""One function per op kind: `(op, *operand arrays) -> result array`."""


def evaluate(op: Operation, *arrays: np.ndarray) -> np.ndarray:
    """The result of one single-result op of `EVALUATORS` on operand `arrays`."""
    return np.asarray(EVALUATORS[type(op)](op, *arrays))
