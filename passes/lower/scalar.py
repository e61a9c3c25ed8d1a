"""Scalar lowering of accy's elementwise ops: one element at a time, upstream `arith`/`math`.

Each entry of `SCALAR_LOWERINGS` (keyed by accy op class) builds the upstream ops that
compute one element of the op's result from the scalar SSA values of its operands' elements,
at a builder's insertion point. Nothing here knows about loops, memory or targets: the CPU
lowering calls it inside a loop nest, the CUDA lowering inside a kernel.

Element types and compute types:

- `f64`, `f32`, the integers and `i1` compute in their own type; in `arith` every integer
  is signless, so the unsigned ones (`ui8`...`ui64`) are stored and computed as the
  signless integer of their width (`signless`) and the lowerings that depend on a sign
  (divide, remainder, compare, maximum/minimum, power, convert, the combiners) read it
  from the accy op's types (`is_unsigned`).
- `f16` and `bf16` compute in `f32`: operands are extended (`arith.extf`), the op runs in
  f32 and the result is rounded back (`arith.truncf`) after each op, exactly what the
  reference interpreter does. (On the CPU the pipeline must expand bf16 truncation,
  `arith-expand{include-bf16=true}`, or LLVM calls `__truncsfbf2`, which the JIT lacks.)

Semantics follow `accy.reference` (the oracle); where an entry differs it says so.

Usage::

    from xdsl.builder import Builder
    value = lower_scalar(builder, op, [lhs_element, rhs_element])
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from accy.dialects import accy as ops
from accy.dialects.arith_remf import RemFOp
from accy.passes.element_types import (
    int_width,
    is_bool,
    is_float,
    is_low_precision,
    is_unsigned,
    signless,
)
from xdsl.builder import Builder
from xdsl.dialects import arith, math, scf
from xdsl.dialects.builtin import (
    BFloat16Type,
    DenseIntOrFPElementsAttr,
    Float32Type,
    Float64Type,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    TensorType,
    i32,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.rewriter import InsertPoint

from accy.diagnostics import AccyError

f32 = Float32Type()
f64 = Float64Type()
i1 = IntegerType(1)

ScalarLowering = Callable[[Builder, Operation, Sequence[SSAValue]], SSAValue]
"""`(builder, accy op, operand elements) -> result element` (in the result's element type)."""


# ---------------------------------------------------------------------------------------
# Small builders
# ---------------------------------------------------------------------------------------


def emit(b: Builder, op: Operation) -> SSAValue:
    """Insert `op` and return its (single) result."""
    b.insert(op)
    return op.results[0]


def signless_dense(attr: DenseIntOrFPElementsAttr) -> DenseIntOrFPElementsAttr:
    """A dense constant of unsigned integers as the same bytes of signless ones."""
    element = attr.get_element_type()
    if signless(element) == element:
        return attr
    lowered = TensorType(signless(element), list(attr.get_shape()))
    return DenseIntOrFPElementsAttr(lowered, attr.data)


def constant(b: Builder, value: float | bool, t: Attribute) -> SSAValue:
    """An `arith.constant` of element or index type `t`."""
    if is_float(t):
        return emit(b, arith.ConstantOp(FloatAttr(float(value), t)))  # type: ignore[arg-type]
    if isinstance(t, IndexType):
        return emit(b, arith.ConstantOp(IntegerAttr(int(value), t)))
    t = signless(t)
    width = int_width(t)
    value = int(value)
    if width == 1:
        value = -1 if value else 0  # i1 true is -1 as a signed 1-bit value
    elif value >= 2 ** (width - 1):
        value -= 2**width
    return emit(b, arith.ConstantOp(IntegerAttr(value, t)))


def widen(b: Builder, value: SSAValue) -> SSAValue:
    """`value` in its compute type (f16/bf16 extended to f32, others unchanged)."""
    if is_low_precision(value.type):
        return emit(b, arith.ExtFOp(value, f32))
    return value


def extend(b: Builder, value: SSAValue, source: Attribute, target: Attribute) -> SSAValue:
    """`value`, of element type `source` (a scalar or a vector of it), in `target` (a
    type as wide or wider: the compute type of a wider element type, or a vector of it):
    floats extended, integers sign- or zero-extended as `source` is signed or unsigned."""
    if value.type == target:
        return value
    if is_float(source):
        return emit(b, arith.ExtFOp(value, target))  # type: ignore[arg-type]
    if is_unsigned(source):
        return emit(b, arith.ExtUIOp(value, target))
    return emit(b, arith.ExtSIOp(value, target))


def narrow(b: Builder, value: SSAValue, t: Attribute) -> SSAValue:
    """`value` (in the compute type of `t`) rounded back to `t`."""
    if value.type != signless(t):
        return emit(b, arith.TruncFOp(value, t))  # type: ignore[arg-type]
    return value


def element_type(value: SSAValue) -> Attribute:
    t = value.type
    assert isinstance(t, TensorType), t
    return t.get_element_type()


def _float_binary(b, op, operands, make) -> SSAValue:
    t = element_type(op.results[0])
    lhs, rhs = (widen(b, v) for v in operands)
    return narrow(b, emit(b, make(lhs, rhs)), t)


def _float_unary(b, op, operands, make) -> SSAValue:
    t = element_type(op.results[0])
    return narrow(b, make(b, widen(b, operands[0])), t)


# ---------------------------------------------------------------------------------------
# One lowering per op
# ---------------------------------------------------------------------------------------


def lower_add(b: Builder, op: Operation, operands: Sequence[SSAValue]) -> SSAValue:
    """`arith.addf` (floats) / `arith.addi` (integers, wrapping)."""
    if is_float(element_type(op.results[0])):
        return _float_binary(b, op, operands, arith.AddfOp)
    return emit(b, arith.AddiOp(*operands))


def lower_subtract(b: Builder, op: Operation, operands: Sequence[SSAValue]) -> SSAValue:
    """`arith.subf` / `arith.subi` (wrapping)."""
    if is_float(element_type(op.results[0])):
        return _float_binary(b, op, operands, arith.SubfOp)
    return emit(b, arith.SubiOp(*operands))


def lower_multiply(b: Builder, op: Operation, operands: Sequence[SSAValue]) -> SSAValue:
    """`arith.mulf` / `arith.muli` (wrapping)."""
    if is_float(element_type(op.results[0])):
        return _float_binary(b, op, operands, arith.MulfOp)
    return emit(b, arith.MuliOp(*operands))


def lower_divide(b: Builder, op: Operation, operands: Sequence[SSAValue]) -> SSAValue:
    """`arith.divf` for floats (IEEE). Integers: `arith.divsi` / `divui` (truncating) on
    a safe divisor, with XLA's convention `x / 0 = -1` (all bits set) and `MIN / -1 = MIN`
    (divsi would be undefined for both)."""
    t = element_type(op.results[0])
    if is_float(t):
        return _float_binary(b, op, operands, arith.DivfOp)
    lhs, rhs = operands
    width = int_width(t)
    zero, one, minus_one = (constant(b, v, t) for v in (0, 1, -1))
    is_zero = emit(b, arith.CmpiOp(rhs, zero, "eq"))
    if is_unsigned(t):
        quotient = emit(b, arith.DivUIOp(lhs, emit(b, arith.SelectOp(is_zero, one, rhs))))
        return emit(b, arith.SelectOp(is_zero, minus_one, quotient))
    minimum = constant(b, -(2 ** (width - 1)), t)
    overflow = emit(
        b,
        arith.AndIOp(
            emit(b, arith.CmpiOp(lhs, minimum, "eq")),
            emit(b, arith.CmpiOp(rhs, minus_one, "eq")),
        ),
    )
    unsafe = emit(b, arith.OrIOp(is_zero, overflow))
    safe = emit(b, arith.SelectOp(unsafe, one, rhs))
    quotient = emit(b, arith.DivSIOp(lhs, safe))  # MIN / 1 = MIN for the overflow case
    return emit(b, arith.SelectOp(is_zero, minus_one, quotient))


def lower_maximum(b: Builder, op: Operation, operands: Sequence[SSAValue]) -> SSAValue:
    """`arith.maximumf` (propagates NaN, like numpy) / `arith.maxsi` / `arith.maxui`."""
    t = element_type(op.results[0])
    if is_float(t):
        return _float_binary(b, op, operands, arith.MaximumfOp)
    return emit(b, (arith.MaxUIOp if is_unsigned(t) else arith.MaxSIOp)(*operands))


def lower_minimum(b: Builder, op: Operation, operands: Sequence[SSAValue]) -> SSAValue:
    """`arith.minimumf` (propagates NaN) / `arith.minsi` / `arith.minui`."""
    t = element_type(op.results[0])
    if is_float(t):
        return _float_binary(b, op, operands, arith.MinimumfOp)
    return emit(b, (arith.MinUIOp if is_unsigned(t) else arith.MinSIOp)(*operands))


def integer_power(
    b: Builder, base: SSAValue, exponent: SSAValue, *, unsigned: bool = False
) -> SSAValue:
    """Wrapping `base ** exponent` by squaring: an `scf.for` over the exponent's bits with
    (result, square) carried. A negative (signed) exponent gives 0, except base 1 (-> 1)
    and base -1 (-> 1 or -1 by parity), as the reference does."""
    t = base.type
    width = int_width(t)
    index = IndexType()
    zero, one = constant(b, 0, t), constant(b, 1, t)
    bits = width if unsigned else width - 1
    lower, upper, step = (constant(b, v, index) for v in (0, bits, 1))
    body = Block(arg_types=[index, t, t, t])
    _, result, square, remaining = body.args
    inner = Builder(InsertPoint.at_end(body))
    bit = emit(inner, arith.AndIOp(remaining, one))
    odd = emit(inner, arith.CmpiOp(bit, one, "eq"))
    product = emit(inner, arith.MuliOp(result, square))
    next_result = emit(inner, arith.SelectOp(odd, product, result))
    next_square = emit(inner, arith.MuliOp(square, square))
    next_remaining = emit(inner, arith.ShRUIOp(remaining, one))
    inner.insert(scf.YieldOp(next_result, next_square, next_remaining))
    if unsigned:
        loop = scf.ForOp(lower, upper, step, [one, base, exponent], body)
        b.insert(loop)
        return loop.results[0]
    negative = emit(b, arith.CmpiOp(exponent, zero, "slt"))
    start = emit(b, arith.SelectOp(negative, zero, exponent))
    loop = scf.ForOp(lower, upper, step, [one, base, start], body)
    b.insert(loop)
    positive_result = loop.results[0]
    # Negative exponents: 1 -> 1, -1 -> +-1 by parity, everything else -> 0.
    minus_one = constant(b, -1, t)
    is_one = emit(b, arith.CmpiOp(base, one, "eq"))
    is_minus_one = emit(b, arith.CmpiOp(base, minus_one, "eq"))
    even = emit(b, arith.CmpiOp(emit(b, arith.AndIOp(exponent, one)), zero, "eq"))
    sign = emit(b, arith.SelectOp(even, one, minus_one))
    negative_result = emit(
        b, arith.SelectOp(is_one, one, emit(b, arith.SelectOp(is_minus_one, sign, zero)))
    )
    return emit(b, arith.SelectOp(negative, negative_result, positive_result))


def lower_power(b: Builder, op: Operation, operands: Sequence[SSAValue]) -> SSAValue:
    """`math.powf` for floats; integers by squaring (`integer_power`)."""
    t = element_type(op.results[0])
    if is_float(t):
        return _float_binary(b, op, operands, math.PowFOp)
    return integer_power(b, *operands, unsigned=is_unsigned(t))


def lower_negate(b: Builder, op: Operation, operands: Sequence[SSAValue]) -> SSAValue:
    """`arith.negf` / `0 - x` (wrapping: -MIN = MIN)."""
    t = element_type(op.results[0])
    if is_float(t):
        return _float_unary(b, op, operands, lambda b, x: emit(b, arith.NegfOp(x)))
    return emit(b, arith.SubiOp(constant(b, 0, t), operands[0]))


def lower_and(b: Builder, op: Operation, operands: Sequence[SSAValue]) -> SSAValue:
    """`arith.andi`."""
    return emit(b, arith.AndIOp(*operands))


def lower_or(b: Builder, op: Operation, operands: Sequence[SSAValue]) -> SSAValue:
    """`arith.ori`."""
    return emit(b, arith.OrIOp(*operands))


def lower_xor(b: Builder, op: Operation, operands: Sequence[SSAValue]) -> SSAValue:
    """`arith.xori`."""
    return emit(b, arith.XOrIOp(*operands))


def lower_not(b: Builder, op: Operation, operands: Sequence[SSAValue]) -> SSAValue:
    """`x xor -1` (all bits set; on i1, `x xor true`)."""
    t = element_type(op.results[0])
    return emit(b, arith.XOrIOp(operands[0], constant(b, -1 if int_width(t) > 1 else True, t)))


def lower_abs(b: Builder, op: Operation, operands: Sequence[SSAValue]) -> SSAValue:
    """`math.absf`; integers `x < 0 ? 0 - x : x` (|MIN| = MIN, as numpy), which LLVM
    matches to its `abs` on every width (NVVM lowers `math.absi` on i32 and i64 only)."""
    if is_float(element_type(op.results[0])):
        return _float_unary(b, op, operands, lambda b, x: emit(b, math.AbsFOp(x)))
    (x,) = operands
    zero = constant(b, 0, x.type)
    negative = emit(b, arith.CmpiOp(x, zero, "slt"))
    return emit(b, arith.SelectOp(negative, emit(b, arith.SubiOp(zero, x)), x))


EXP_POLYNOMIAL = (
    1.9875691500e-4,
    1.3981999507e-3,
    8.3334519073e-3,
    4.1665795894e-2,
    1.6666665459e-1,
    5.0000001201e-1,
)
"""Cephes' `expf` minimax polynomial for exp(r) - 1 - r on |r| <= ln(2) / 2, over r**2."""

EXP_CLAMP_HIGH = 89.0
"""exp's argument is clamped to [`EXP_CLAMP_LOW`, `EXP_CLAMP_HIGH`]: exp(89) is past the
largest f32 (88.72...), and the clamped computation overflows to +inf by itself."""

EXP_CLAMP_LOW = -104.0
"""exp(-104) is under half the smallest denormal f32 (-103.97...): it rounds to 0 by itself."""

CONTRACT = arith.FastMathFlagsAttr(["contract"])
"""Lets LLVM fuse a multiply and an add into one FMA where the target has it (one rounding
instead of two: polynomials get faster and no less accurate)."""


def _mul(b: Builder, x: SSAValue, y: SSAValue) -> SSAValue:
    return emit(b, arith.MulfOp(x, y, CONTRACT))


def _add(b: Builder, x: SSAValue, y: SSAValue) -> SSAValue:
    return emit(b, arith.AddfOp(x, y, CONTRACT))


def _horner(b: Builder, coefficients: Sequence[float], x: SSAValue) -> SSAValue:
    """`c0 * x**k + ... + ck` by Horner's rule, each step one (contractible) multiply-add."""
    result = constant(b, coefficients[0], x.type)
    for coefficient in coefficients[1:]:
        result = _add(b, _mul(b, result, x), constant(b, coefficient, x.type))
    return result


def _exp_reduced(b: Builder, x: SSAValue) -> tuple[SSAValue, SSAValue]:
    """`(y, n)` with exp(x) = y * 2**n for an f32 x (not NaN): Cephes' `n = floor(x / ln 2
    + 1/2)` and `y = 1 + r + r**2 * P(r)` on `r = x - n ln 2` (ln 2 in two parts)."""
    t = x.type
    n = emit(
        b,
        math.FloorOp(_add(b, _mul(b, x, constant(b, 1.44269504088896341, t)), constant(b, 0.5, t))),
    )
    r = _add(b, x, _mul(b, n, constant(b, -0.693359375, t)))
    r = _add(b, r, _mul(b, n, constant(b, 2.12194440e-4, t)))
    poly = _horner(b, EXP_POLYNOMIAL, r)
    y = _add(b, _add(b, _mul(b, poly, _mul(b, r, r)), r), constant(b, 1.0, t))
    return y, emit(b, arith.FPToSIOp(n, IntegerType(32)))


def _power_of_two(b: Builder, n: SSAValue, t: Attribute) -> SSAValue:
    """2**n as an f32 from its exponent bits (n an i32 in [-126, 127])."""
    i32 = IntegerType(32)
    exponent = emit(b, arith.AddiOp(n, constant(b, 127, i32)))
    return emit(b, arith.BitcastOp(emit(b, arith.ShLIOp(exponent, constant(b, 23, i32))), t))


def exp_f32(b: Builder, x: SSAValue) -> SSAValue:
    """exp of an f32 without libm's `expf` (a call LLVM cannot vectorize): `_exp_reduced`
    on x clamped to [`EXP_CLAMP_LOW`, `EXP_CLAMP_HIGH`], scaled by `2**n` built from exponent
    bits as `2**(n >> 1) * 2**(n - (n >> 1))`: both factors are normal for every n in
    [-150, 128], so results near the top overflow to +inf and tiny ones round to denormals
    or 0 exactly as exp's do, with no select. Within an ulp of the correctly rounded exp
    (`tests/lower/test_accuracy.py`); NaN stays NaN (the one select: `fptosi` of NaN is
    poison)."""
    t, i32 = x.type, IntegerType(32)
    clamped = emit(
        b,
        arith.MinimumfOp(
            emit(b, arith.MaximumfOp(x, constant(b, EXP_CLAMP_LOW, t))),
            constant(b, EXP_CLAMP_HIGH, t),
        ),
    )
    result, whole = _exp_reduced(b, clamped)
    half = emit(b, arith.ShRSIOp(whole, constant(b, 1, i32)))
    rest = emit(b, arith.SubiOp(whole, half))
    for power in (half, rest):
        result = emit(b, arith.MulfOp(result, _power_of_two(b, power, t)))
    return _where(b, arith.CmpfOp(x, x, "uno"), x, result)


def _where(b: Builder, condition: Operation, on_true: SSAValue, on_false: SSAValue) -> SSAValue:
    return emit(b, arith.SelectOp(emit(b, condition), on_true, on_false))


def exp(b: Builder, x: SSAValue) -> SSAValue:
    """exp in the type of `x`: `exp_f32` for f32 (vectorisable), else `math.exp`."""
    if isinstance(x.type, Float32Type):
        return exp_f32(b, x)
    return emit(b, math.ExpOp(x))


def lower_exponential(b: Builder, op: Operation, operands: Sequence[SSAValue]) -> SSAValue:
    """`exp` (f16/bf16 through f32); see `exp_f32` for why not `math.exp`."""
    return _float_unary(b, op, operands, exp)


def lower_log(b: Builder, op: Operation, operands: Sequence[SSAValue]) -> SSAValue:
    """`math.log` (natural logarithm)."""
    return _float_unary(b, op, operands, lambda b, x: emit(b, math.LogOp(x)))


TANH_SATURATE = 10.0
"""tanh_f32 computes with |x| clamped here: tanh(x) rounds to +-1 in f32 from |x| = 9.02."""

TANH_SMALL_RANGE = 0.625
"""Below this |x|, tanh is Cephes' odd polynomial `TANH_SMALL`; from it on, the exp form."""

TANH_SMALL = (
    -5.70498872745e-3,
    2.06390887954e-2,
    -5.37397155531e-2,
    1.33314422036e-1,
    -3.33332819422e-1,
)
"""Cephes `tanhf` odd polynomial for |x| < 0.625: `x + x**3 * P(x**2)` (about 1 ulp in f32)."""


def tanh_f32(b: Builder, x: SSAValue) -> SSAValue:
    """tanh of an f32 without libm's `tanhf` (slow, and not vectorisable), within 2 ulps
    of the correctly rounded tanh (`tests/lower/test_accuracy.py`): `tanh_small` for |x| <
    `TANH_SMALL_RANGE`, else `sign(x) * (1 - 2 / (exp(2a) + 1))` with `a = min(|x|,
    TANH_SATURATE)` (no cancellation there, and exp's error shrinks through it). The exp is
    `_exp_reduced` on `2a` in [1.25, 20], whose `2**n` is one normal factor: no clamps or
    overflow to handle. Both forms are computed and selected: no branches, one divide,
    so LLVM vectorizes it; NaN gives NaN (a select: `fptosi` of NaN is poison). Eigen's
    rational `x * P(x**2) / Q(x**2)` (what XLA uses) was measured 4 ulps off in f32 on
    [0.0004, 0.001], [2, 2.2] and [7.9, 9]. f64 is `math.tanh` (libm, libdevice)."""
    t = x.type
    if not isinstance(t, Float32Type):
        return emit(b, math.TanhOp(x))
    magnitude = emit(b, math.AbsFOp(x))
    a = emit(b, arith.MinnumfOp(magnitude, constant(b, TANH_SATURATE, t)))
    y, n = _exp_reduced(b, _add(b, a, a))
    e = emit(b, arith.MulfOp(y, _power_of_two(b, n, t)))
    one = constant(b, 1.0, t)
    large = emit(b, arith.SubfOp(one, emit(b, arith.DivfOp(constant(b, 2.0, t), _add(b, e, one)))))
    small = arith.CmpfOp(magnitude, constant(b, TANH_SMALL_RANGE, t), "olt")
    result = emit(b, math.CopySignOp(_where(b, small, tanh_small(b, magnitude), large), x))
    return _where(b, arith.CmpfOp(x, x, "uno"), x, result)


def tanh_small(b: Builder, a: SSAValue) -> SSAValue:
    """Cephes' `a + a**3 * P(a**2)`: tanh(a) for 0 <= a < `TANH_SMALL_RANGE` (denormals
    stay themselves: a + a tiny multiple of a is a). Callers put the sign back with
    `copysign` (which also keeps -0)."""
    square = emit(b, arith.MulfOp(a, a))
    poly = _horner(b, TANH_SMALL, square)
    return emit(b, arith.AddfOp(emit(b, arith.MulfOp(emit(b, arith.MulfOp(poly, square)), a)), a))


def lower_tanh(b: Builder, op: Operation, operands: Sequence[SSAValue]) -> SSAValue:
    """`tanh_f32` (f16/bf16 through f32); see there why not `math.tanh`."""
    return _float_unary(b, op, operands, tanh_f32)


def lower_sqrt(b: Builder, op: Operation, operands: Sequence[SSAValue]) -> SSAValue:
    """`math.sqrt`."""
    return _float_unary(b, op, operands, lambda b, x: emit(b, math.SqrtOp(x)))


def lower_rsqrt(b: Builder, op: Operation, operands: Sequence[SSAValue]) -> SSAValue:
    """`math.rsqrt` (1 / sqrt(x)); the CPU pipeline expands it to a divide of sqrt."""
    return _float_unary(b, op, operands, lambda b, x: emit(b, math.RsqrtOp(x)))


def lower_remainder(b: Builder, op: Operation, operands: Sequence[SSAValue]) -> SSAValue:
    """`arith.remf` (fmod) / `arith.remsi` / `arith.remui` on a divisor made safe: by 0
    the result is the dividend, MIN % -1 (an overflow for `remsi`) is 0."""
    t = element_type(op.results[0])
    if is_float(t):
        return _float_binary(b, op, operands, RemFOp)
    lhs, rhs = operands
    width = int_width(t)
    zero = emit(b, arith.CmpiOp(rhs, constant(b, 0, t), "eq"))
    if is_unsigned(t):
        divisor = emit(b, arith.SelectOp(zero, constant(b, 1, t), rhs))
        return emit(b, arith.SelectOp(zero, lhs, emit(b, arith.RemUIOp(lhs, divisor))))
    minimum = emit(b, arith.CmpiOp(lhs, constant(b, -(1 << (width - 1)), t), "eq"))
    minus_one = emit(b, arith.CmpiOp(rhs, constant(b, -1, t), "eq"))
    unsafe = emit(b, arith.OrIOp(zero, emit(b, arith.AndIOp(minimum, minus_one))))
    divisor = emit(b, arith.SelectOp(unsafe, constant(b, 1, t), rhs))
    remainder = emit(b, arith.RemSIOp(lhs, divisor))
    return emit(b, arith.SelectOp(zero, lhs, remainder))


def _shift(b: Builder, op: Operation, operands: Sequence[SSAValue], make, outside) -> SSAValue:
    """`make(lhs, rhs)` where rhs is in [0, bit width) (unsigned compare), else `outside`."""
    lhs, rhs = operands
    t = element_type(op.results[0])
    inside = emit(b, arith.CmpiOp(rhs, constant(b, int_width(t), t), "ult"))
    amount = emit(b, arith.SelectOp(inside, rhs, constant(b, 0, t)))
    return emit(b, arith.SelectOp(inside, emit(b, make(lhs, amount)), outside(b, lhs, t)))


def lower_shift_left(b: Builder, op: Operation, operands: Sequence[SSAValue]) -> SSAValue:
    """`arith.shli`; 0 for an amount outside [0, width)."""
    return _shift(b, op, operands, arith.ShLIOp, lambda b, x, t: constant(b, 0, t))


def lower_shift_right_logical(b: Builder, op: Operation, operands: Sequence[SSAValue]) -> SSAValue:
    """`arith.shrui`; 0 for an amount outside [0, width)."""
    return _shift(b, op, operands, arith.ShRUIOp, lambda b, x, t: constant(b, 0, t))


def lower_shift_right_arithmetic(
    b: Builder, op: Operation, operands: Sequence[SSAValue]
) -> SSAValue:
    """`arith.shrsi`; the sign bit everywhere for an amount outside [0, width)."""
    return _shift(
        b,
        op,
        operands,
        arith.ShRSIOp,
        lambda b, x, t: emit(b, arith.ShRSIOp(x, constant(b, int_width(t) - 1, t))),
    )


def lower_sign(b: Builder, op: Operation, operands: Sequence[SSAValue]) -> SSAValue:
    """Selects of 1, -1 and the operand itself (a float zero or NaN stays). Integers by
    their bits' sign, unsigned ones too (the reference interpreter's `isNegative`)."""
    t = element_type(op.results[0])

    def sign(b: Builder, x: SSAValue) -> SSAValue:
        w = x.type
        if is_float(w):
            positive = emit(b, arith.CmpfOp(x, constant(b, 0.0, w), "ogt"))
            negative = emit(b, arith.CmpfOp(x, constant(b, 0.0, w), "olt"))
        else:
            positive = emit(b, arith.CmpiOp(x, constant(b, 0, w), "sgt"))
            negative = emit(b, arith.CmpiOp(x, constant(b, 0, w), "slt"))
        below = emit(b, arith.SelectOp(negative, constant(b, -1, w), x))
        return emit(b, arith.SelectOp(positive, constant(b, 1, w), below))

    if is_float(t):
        return _float_unary(b, op, operands, sign)
    return sign(b, operands[0])


def population_count(b: Builder, x: SSAValue) -> SSAValue:
    """The set bits of an integer in arith alone (both targets): SWAR sums of 2, 4 and 8
    bits, then the bytes added by a multiply and the top byte taken."""
    t = x.type
    width = int_width(t)

    def pattern(byte: int) -> SSAValue:
        value = int.from_bytes(bytes([byte]) * (width // 8), "little")
        return constant(b, value - (1 << width) if value >= 1 << (width - 1) else value, t)

    def shr(v: SSAValue, n: int) -> SSAValue:
        return emit(b, arith.ShRUIOp(v, constant(b, n, t)))

    x = emit(b, arith.SubiOp(x, emit(b, arith.AndIOp(shr(x, 1), pattern(0x55)))))
    x = emit(
        b,
        arith.AddiOp(
            emit(b, arith.AndIOp(x, pattern(0x33))),
            emit(b, arith.AndIOp(shr(x, 2), pattern(0x33))),
        ),
    )
    x = emit(b, arith.AndIOp(emit(b, arith.AddiOp(x, shr(x, 4))), pattern(0x0F)))
    return shr(emit(b, arith.MuliOp(x, pattern(0x01))), width - 8)


def lower_popcnt(b: Builder, op: Operation, operands: Sequence[SSAValue]) -> SSAValue:
    """`population_count` (`math.ctpop` has no CUDA lowering here)."""
    return population_count(b, operands[0])


def lower_count_leading_zeros(b: Builder, op: Operation, operands: Sequence[SSAValue]) -> SSAValue:
    """The bit width less the set bits of x with every bit below its highest set bit
    set (`x |= x >> 1, 2, 4, ...`): the bit width for 0."""
    x = operands[0]
    t = x.type
    width = int_width(t)
    shift = 1
    while shift < width:
        x = emit(b, arith.OrIOp(x, emit(b, arith.ShRUIOp(x, constant(b, shift, t)))))
        shift *= 2
    return emit(b, arith.SubiOp(constant(b, width, t), population_count(b, x)))


def lower_is_finite(b: Builder, op: Operation, operands: Sequence[SSAValue]) -> SSAValue:
    """`|x| < inf` (ordered: false for NaN), in the widened type."""
    x = widen(b, operands[0])
    magnitude = emit(b, math.AbsFOp(x))
    return emit(b, arith.CmpfOp(magnitude, constant(b, float("inf"), x.type), "olt"))


def _math_unary(make: Callable[[SSAValue], Operation], doc: str):
    """A lowering by one `math` op in the widened type (the transcendental ones are libm
    on the CPU, libdevice on CUDA: within their documented ulps, inside StableHLO's 3)."""

    def lower(b: Builder, op: Operation, operands: Sequence[SSAValue]) -> SSAValue:
        return _float_unary(b, op, operands, lambda b, x: emit(b, make(x)))

    lower.__doc__ = doc
    return lower


lower_sine = _math_unary(math.SinOp, "`math.sin`.")
lower_cosine = _math_unary(math.CosOp, "`math.cos`.")
lower_cbrt = _math_unary(math.CbrtOp, "`math.cbrt`.")
lower_floor = _math_unary(math.FloorOp, "`math.floor` (exact).")
lower_ceil = _math_unary(math.CeilOp, "`math.ceil` (exact).")
lower_round_nearest_even = _math_unary(math.RoundEvenOp, "`math.roundeven` (exact).")
lower_round_nearest_afz = _math_unary(math.RoundOp, "`math.round`: ties away from zero.")


def log_plus_one(b: Builder, x: SSAValue) -> SSAValue:
    """log(1 + x) by Kahan's trick, `log(u) * (x / (u - 1))` for `u = 1 + x` (the rounding
    of u cancels; MLIR lowers `math.log1p` as `log(1 + x)`, which loses x near 0): x where
    u rounds to 1, +inf for +inf."""
    t = x.type
    u = emit(b, arith.AddfOp(constant(b, 1.0, t), x))
    ratio = emit(b, arith.DivfOp(x, emit(b, arith.SubfOp(u, constant(b, 1.0, t)))))
    result = emit(b, arith.MulfOp(emit(b, math.LogOp(u)), ratio))
    result = _where(b, arith.CmpfOp(u, constant(b, 1.0, t), "oeq"), x, result)
    return _where(b, arith.CmpfOp(x, constant(b, float("inf"), t), "oeq"), x, result)


def exponential_minus_one(b: Builder, x: SSAValue) -> SSAValue:
    """exp(x) - 1 by Kahan's trick, `(u - 1) * (x / log(u))` for `u = exp(x)` (MLIR lowers
    `math.expm1` as `exp(x) - 1`): x where u rounds to 1, -1 where u - 1 does, +inf where
    u overflows."""
    t = x.type
    u = exp(b, x)
    less = emit(b, arith.SubfOp(u, constant(b, 1.0, t)))
    result = emit(b, arith.MulfOp(less, emit(b, arith.DivfOp(x, emit(b, math.LogOp(u))))))
    result = _where(b, arith.CmpfOp(less, constant(b, -1.0, t), "oeq"), less, result)
    result = _where(b, arith.CmpfOp(u, constant(b, 1.0, t), "oeq"), x, result)
    return _where(b, arith.CmpfOp(u, constant(b, float("inf"), t), "oeq"), u, result)


def lower_log_plus_one(b: Builder, op: Operation, operands: Sequence[SSAValue]) -> SSAValue:
    """`log_plus_one` in the widened type."""
    return _float_unary(b, op, operands, log_plus_one)


def lower_exponential_minus_one(
    b: Builder, op: Operation, operands: Sequence[SSAValue]
) -> SSAValue:
    """`exponential_minus_one` in the widened type."""
    return _float_unary(b, op, operands, exponential_minus_one)


def lower_tan(b: Builder, op: Operation, operands: Sequence[SSAValue]) -> SSAValue:
    """`math.tan` in f64, rounded once (libdevice's f32 `tanf` may be 4 ulp off; f16 and
    bf16 through f32 rounded to odd, `convert_element`)."""
    if isinstance(operands[0].type, Float64Type):
        return emit(b, math.TanOp(operands[0]))
    wide = emit(b, arith.ExtFOp(widen(b, operands[0]), Float64Type()))
    return convert_element(b, emit(b, math.TanOp(wide)), element_type(op.results[0]))


PI = 3.141592653589793


def atan2(b: Builder, y: SSAValue, x: SSAValue) -> SSAValue:
    """`math.atan2` (within 3 ulp on both targets), but for y and x both zero: +-0 where x
    is +0, +-pi where x is -0 (the sign of y), as C's atan2 and StableHLO say. MLIR folds
    `math.atan2` of two constant zeros to NaN, so that case never reaches it."""
    zero = constant(b, 0.0, x.type)
    both_zero = emit(
        b,
        arith.AndIOp(emit(b, arith.CmpfOp(y, zero, "oeq")), emit(b, arith.CmpfOp(x, zero, "oeq"))),
    )
    x_negative = arith.CmpfOp(emit(b, math.CopySignOp(constant(b, 1.0, x.type), x)), zero, "olt")
    on_zeros = emit(b, math.CopySignOp(_where(b, x_negative, constant(b, PI, x.type), zero), y))
    return emit(b, arith.SelectOp(both_zero, on_zeros, emit(b, math.Atan2Op(y, x))))


def lower_atan2(b: Builder, op: Operation, operands: Sequence[SSAValue]) -> SSAValue:
    """`atan2` (f16/bf16 through f32)."""
    y, x = (widen(b, v) for v in operands)
    return narrow(b, atan2(b, y, x), element_type(op.results[0]))


def logistic(b: Builder, x: SSAValue) -> SSAValue:
    """`1 / (1 + e)` for x >= 0 and `e / (1 + e)` below, with `e = exp(-|x|)` in the type
    of `x`: never `exp` of a large positive value, so logistic(x) of a very negative x is
    exp(x) down to denormals instead of `1 / inf = 0`."""
    one = constant(b, 1.0, x.type)
    e = exp(b, emit(b, arith.NegfOp(emit(b, math.AbsFOp(x)))))
    denominator = emit(b, arith.AddfOp(one, e))
    negative = arith.CmpfOp(x, constant(b, 0.0, x.type), "olt")
    return emit(b, arith.DivfOp(_where(b, negative, e, one), denominator))


def lower_logistic(b: Builder, op: Operation, operands: Sequence[SSAValue]) -> SSAValue:
    """`1 / (1 + exp(-x))` (`logistic`)."""
    return _float_unary(b, op, operands, logistic)


FLOAT_PREDICATES = {
    ops.ComparisonDirection.EQ: "oeq",
    ops.ComparisonDirection.NE: "une",
    ops.ComparisonDirection.LT: "olt",
    ops.ComparisonDirection.LE: "ole",
    ops.ComparisonDirection.GT: "ogt",
    ops.ComparisonDirection.GE: "oge",
}
"""Ordered float predicates, except NE which is unordered (`une`): numpy's `!=` (the
reference) is true when either side is NaN."""

INT_PREDICATES = {
    ops.ComparisonDirection.EQ: "eq",
    ops.ComparisonDirection.NE: "ne",
    ops.ComparisonDirection.LT: "slt",
    ops.ComparisonDirection.LE: "sle",
    ops.ComparisonDirection.GT: "sgt",
    ops.ComparisonDirection.GE: "sge",
}
"""Signed integer predicates (i1 and unsigned integers use the unsigned ones: false <
true, as numpy bools)."""


def lower_compare(b: Builder, op: Operation, operands: Sequence[SSAValue]) -> SSAValue:
    """`arith.cmpf` (ordered; NE unordered, see `FLOAT_PREDICATES`; f16/bf16 compared in
    f32, which is exact) / `arith.cmpi` (signed; unsigned for i1 and unsigned integers;
    for floats in total order, of their `total_order_key`s)."""
    assert isinstance(op, ops.CompareOp)
    direction = op.direction.data
    lhs, rhs = operands
    t = element_type(op.lhs)
    if is_float(t) and op.total_order is not None:
        lhs, rhs = total_order_key(b, lhs), total_order_key(b, rhs)
    elif is_float(t):
        lhs, rhs = widen(b, lhs), widen(b, rhs)
        return emit(b, arith.CmpfOp(lhs, rhs, FLOAT_PREDICATES[direction]))
    predicate = INT_PREDICATES[direction]
    if (is_bool(t) or is_unsigned(t)) and predicate.startswith("s"):
        predicate = "u" + predicate[1:]
    return emit(b, arith.CmpiOp(lhs, rhs, predicate))


def total_order_key(b: Builder, x: SSAValue) -> SSAValue:
    """The float `x` as a signed integer in TOTALORDER's order: its bits, the magnitude
    flipped where the sign is set (`bits ^ ((bits >> (w - 1)) & MAX)`)."""
    width = x.type.bitwidth  # type: ignore[attr-defined]
    integer = IntegerType(width)
    bits = bits_of(b, x)
    sign = emit(b, arith.ShRSIOp(bits, constant(b, width - 1, integer)))
    magnitude = emit(b, arith.AndIOp(sign, constant(b, 2 ** (width - 1) - 1, integer)))
    return emit(b, arith.XOrIOp(bits, magnitude))


def lower_select(b: Builder, op: Operation, operands: Sequence[SSAValue]) -> SSAValue:
    """`select_value` on the stored element type (no widening needed)."""
    return select_value(b, *operands)


def select_value(b: Builder, condition: SSAValue, on_true: SSAValue, on_false: SSAValue):
    """`arith.select` of two elements; of bf16 ones, of their bits (`bits_of`): LLVM selects
    bf16 values in f32 registers and stores the choice with `vcvtneps2bf16` where the CPU
    has AVX512_BF16, which reads subnormals as zero."""
    if not isinstance(on_true.type, BFloat16Type):
        return emit(b, arith.SelectOp(condition, on_true, on_false))
    chosen = emit(b, arith.SelectOp(condition, bits_of(b, on_true), bits_of(b, on_false)))
    return emit(b, arith.BitcastOp(chosen, on_true.type))


def round_to_odd_f32(b: Builder, value: SSAValue) -> SSAValue:
    """The f64 `value` rounded to f32 *to odd*: truncated toward zero, its last bit set when
    that lost anything. Rounding this to bf16 (to nearest even) rounds `value` once, as
    the reference does: f32 keeps 13 bits more than f16 and 16 more than bf16, so the odd
    bit stands for everything below and no tie is made or broken twice. (LLVM's CPU JIT
    lacks `__truncdfbf2` and `__truncdfhf2`; PTX has no f64 -> bf16 conversion.)"""
    nearest = emit(b, arith.TruncFOp(value, f32))
    back = emit(b, arith.ExtFOp(nearest, f64))
    bits = emit(b, arith.BitcastOp(nearest, i32))
    inexact = emit(b, arith.CmpfOp(back, value, "one"))
    magnitude = emit(b, math.AbsFOp(value))
    rounded_away = emit(b, arith.CmpfOp(emit(b, math.AbsFOp(back)), magnitude, "ogt"))
    step_back = emit(b, arith.ExtUIOp(rounded_away, i32))
    toward_zero = emit(b, arith.SubiOp(bits, step_back))
    odd = emit(b, arith.OrIOp(toward_zero, emit(b, arith.ExtUIOp(inexact, i32))))
    return emit(b, arith.BitcastOp(odd, f32))


def convert_element(
    b: Builder, value: SSAValue, target: Attribute, source: Attribute | None = None
) -> SSAValue:
    """Convert one element of element type `source` (by default its value's type; an
    unsigned type must be given, values are signless) to `target` with the reference's
    semantics:

    - to i1: `x != 0` (`cmpf une`, so NaN -> true, / `cmpi ne`);
    - from i1: 0/1 (`arith.uitofp` through f32 / `arith.extui`);
    - float -> int: truncation toward zero, saturating at the integer range, NaN -> 0,
      decided in f64 like the reference (`fptosi`/`fptoui` alone would be poison out of
      range);
    - int -> float: `sitofp`/`uitofp`, rounded once, to an f32 or f64 target; for an
      f16/bf16 target through f64 and f32 rounded to odd (`round_to_odd_f32`), which
      rounds once (i64 beyond 2**53 rounds to f64 first);
    - float -> float: `extf`/`truncf` (f16 <-> bf16 through f32, which is exact; f64 ->
      f16/bf16 through f32 rounded to odd);
    - int -> int: `trunci` (wraps) / `extsi` from a signed, `extui` from an unsigned
      source (APSInt's `extOrTrunc`).
    """
    source = value.type if source is None else source
    if source == target:
        return value
    if signless(source) == signless(target):
        return value  # the same bits, another sign
    if is_bool(target):
        if is_float(source):
            return emit(b, arith.CmpfOp(value, constant(b, 0.0, source), "une"))
        return emit(b, arith.CmpiOp(value, constant(b, 0, source), "ne"))
    if is_bool(source):
        if isinstance(target, Float64Type):
            return emit(b, arith.UIToFPOp(value, target))
        if is_float(target):
            return narrow(b, emit(b, arith.UIToFPOp(value, f32)), target)
        return emit(b, arith.ExtUIOp(value, signless(target)))
    if is_float(source) and is_float(target):
        if is_low_precision(source) and is_low_precision(target):
            return emit(b, arith.TruncFOp(emit(b, arith.ExtFOp(value, f32)), target))
        if target.bitwidth > source.bitwidth:  # type: ignore[attr-defined]
            return emit(b, arith.ExtFOp(value, target))
        if isinstance(source, Float64Type) and is_low_precision(target):
            return emit(b, arith.TruncFOp(round_to_odd_f32(b, value), target))
        return emit(b, arith.TruncFOp(value, target))
    if is_float(source):
        width = int_width(target)
        lowered = signless(target)
        if is_unsigned(target):
            low_value, high_value = 0, 2**width - 1
            too_big_bound, too_small_bound = float(2**width), 0.0
            to_integer = arith.FPToUIOp
        else:
            low_value, high_value = -(2 ** (width - 1)), 2 ** (width - 1) - 1
            too_big_bound, too_small_bound = float(high_value), float(low_value)
            to_integer = arith.FPToSIOp
        wide = value if isinstance(source, Float64Type) else emit(b, arith.ExtFOp(value, f64))
        too_big = emit(b, arith.CmpfOp(wide, constant(b, too_big_bound, f64), "oge"))
        too_small = emit(
            b,
            arith.CmpfOp(
                wide, constant(b, too_small_bound, f64), "olt" if is_unsigned(target) else "ole"
            ),
        )
        nan = emit(b, arith.CmpfOp(wide, wide, "uno"))
        unsafe = emit(b, arith.OrIOp(emit(b, arith.OrIOp(too_big, too_small)), nan))
        safe = emit(b, arith.SelectOp(unsafe, constant(b, 0.0, f64), wide))
        truncated = emit(b, to_integer(safe, lowered))  # type: ignore[arg-type]
        result = emit(b, arith.SelectOp(too_small, constant(b, low_value, lowered), truncated))
        return emit(b, arith.SelectOp(too_big, constant(b, high_value, lowered), result))
    to_float = arith.UIToFPOp if is_unsigned(source) else arith.SIToFPOp
    if is_float(target):
        if isinstance(target, (Float32Type, Float64Type)):
            return emit(b, to_float(value, target))
        return narrow(b, round_to_odd_f32(b, emit(b, to_float(value, f64))), target)
    if int_width(source) > int_width(target):
        return emit(b, arith.TruncIOp(value, signless(target)))
    extend = arith.ExtUIOp if is_unsigned(source) else arith.ExtSIOp
    return emit(b, extend(value, signless(target)))  # type: ignore[arg-type]


def lower_convert(b: Builder, op: Operation, operands: Sequence[SSAValue]) -> SSAValue:
    """`convert_element` to the result's element type."""
    return convert_element(
        b, operands[0], element_type(op.results[0]), element_type(op.operands[0])
    )


def bits_of(b: Builder, x: SSAValue) -> SSAValue:
    """The bits of float `x` as a signless integer of its width. A bf16 value's are the high
    half of its exact f32 extension: LLVM holds a bf16 value in an f32 register on x86 and
    narrows it back for a bitcast with `vcvtneps2bf16` where the CPU has AVX512_BF16, which
    reads subnormals as zero (a bitcast made 0x8001 0x8000)."""
    if not isinstance(x.type, BFloat16Type):
        return emit(b, arith.BitcastOp(x, IntegerType(x.type.bitwidth)))  # type: ignore[attr-defined]
    wide = emit(b, arith.BitcastOp(emit(b, arith.ExtFOp(x, f32)), i32))
    high = emit(b, arith.ShRUIOp(wide, constant(b, 16, i32)))
    return emit(b, arith.TruncIOp(high, IntegerType(16)))


def lower_bitcast_convert(b: Builder, op: Operation, operands: Sequence[SSAValue]) -> SSAValue:
    """`arith.bitcast` between the storage types (none between equal signless types; a
    bf16 source's bits by `bits_of`)."""
    target = signless(element_type(op.results[0]))
    if operands[0].type == target:
        return operands[0]
    if isinstance(operands[0].type, BFloat16Type):
        bits = bits_of(b, operands[0])
        return bits if bits.type == target else emit(b, arith.BitcastOp(bits, target))
    return emit(b, arith.BitcastOp(operands[0], target))


SCALAR_LOWERINGS: dict[type[Operation], ScalarLowering] = {
    ops.AddOp: lower_add,
    ops.SubtractOp: lower_subtract,
    ops.MultiplyOp: lower_multiply,
    ops.DivideOp: lower_divide,
    ops.MaximumOp: lower_maximum,
    ops.MinimumOp: lower_minimum,
    ops.PowerOp: lower_power,
    ops.AndOp: lower_and,
    ops.OrOp: lower_or,
    ops.XorOp: lower_xor,
    ops.NotOp: lower_not,
    ops.NegateOp: lower_negate,
    ops.AbsOp: lower_abs,
    ops.ExponentialOp: lower_exponential,
    ops.LogOp: lower_log,
    ops.TanhOp: lower_tanh,
    ops.SqrtOp: lower_sqrt,
    ops.RsqrtOp: lower_rsqrt,
    ops.FloorOp: lower_floor,
    ops.RemainderOp: lower_remainder,
    ops.ShiftLeftOp: lower_shift_left,
    ops.ShiftRightLogicalOp: lower_shift_right_logical,
    ops.ShiftRightArithmeticOp: lower_shift_right_arithmetic,
    ops.SignOp: lower_sign,
    ops.PopcntOp: lower_popcnt,
    ops.CountLeadingZerosOp: lower_count_leading_zeros,
    ops.RoundNearestEvenOp: lower_round_nearest_even,
    ops.RoundNearestAfzOp: lower_round_nearest_afz,
    ops.IsFiniteOp: lower_is_finite,
    ops.SineOp: lower_sine,
    ops.CosineOp: lower_cosine,
    ops.TanOp: lower_tan,
    ops.CbrtOp: lower_cbrt,
    ops.LogPlusOneOp: lower_log_plus_one,
    ops.ExponentialMinusOneOp: lower_exponential_minus_one,
    ops.Atan2Op: lower_atan2,
    ops.CeilOp: lower_ceil,
    ops.LogisticOp: lower_logistic,
    ops.CompareOp: lower_compare,
    ops.SelectOp: lower_select,
    ops.ConvertOp: lower_convert,
    ops.BitcastConvertOp: lower_bitcast_convert,
}
"""Accy elementwise op class → its scalar lowering (see each function's docstring)."""


def lower_scalar(b: Builder, op: Operation, operands: Sequence[SSAValue]) -> SSAValue:
    """One element of `op`'s result from its operands' elements, built at `b`."""
    try:
        lowering = SCALAR_LOWERINGS[type(op)]
    except KeyError:
        raise AccyError(f"'{op.name}' op has no elementwise lowering", op.location) from None
    return lowering(b, op, operands)


def lower_scalar_body(b: Builder, body: Region, arguments: Sequence[SSAValue]) -> list[SSAValue]:
    """The elements a scalar body (a scatter's update computation, a fold's body) yields
    for the scalar `arguments` of its block, its ops lowered one by one at `b`."""
    from accy.dtypes import dense_values

    block = body.block
    values: dict[SSAValue, SSAValue] = dict(zip(block.args, arguments, strict=True))
    for op in block.ops:
        if isinstance(op, ops.YieldOp):
            return [values[v] for v in op.values]
        if isinstance(op, ops.ConstantOp):
            scalar = dense_values(op.value).reshape(()).item()
            values[op.result] = constant(b, scalar, element_type(op.result))
        else:
            values[op.results[0]] = lower_scalar(b, op, [values[v] for v in op.operands])
    raise AccyError("a scalar body has no accy.yield", body.parent_op().location)


# ---------------------------------------------------------------------------------------
# Combiners of reduce / scan / dot_general
# ---------------------------------------------------------------------------------------


def blocked_steps(extent: int, leaf: int, fan: int) -> list[int]:
    """The loop steps, outermost first, of a blocked fold of `extent` positions (both
    targets fold reductions this way, so no sequential chain of combines is long): the
    innermost loop folds at most `leaf` consecutive positions into a fresh accumulator,
    each loop above folds at most `fan` partials of the loop below into its own, and the
    outermost at most `fan` (at most `leaf` when the list is empty: one loop does).
    The rounding error of a sum then grows with `leaf + fan * levels`, not with `extent`.

    >>> blocked_steps(10**8, 1024, 16)
    [67108864, 4194304, 262144, 16384, 1024]
    """
    steps = []
    span = leaf
    while span < extent:
        steps.append(span)
        span *= fan
    return steps[::-1]


def combiner_identity(
    b: Builder, kind: ops.CombinerKind, t: Attribute, *, unsigned: bool = False
) -> SSAValue:
    """The neutral element of `kind` in compute type `t` (i1: add/max = false,
    mul/min = true; max of floats = -inf, of ints = the minimum: 0 when `unsigned`)."""
    if kind == ops.CombinerKind.ADD:
        return constant(b, 0, t)
    if kind == ops.CombinerKind.MUL:
        return constant(b, 1, t)
    maximum = kind == ops.CombinerKind.MAX
    if is_bool(t):
        return constant(b, 0 if maximum else 1, t)
    if is_float(t):
        return constant(b, float("-inf") if maximum else float("inf"), t)
    width = int_width(t)
    if unsigned:
        return constant(b, 0 if maximum else 2**width - 1, t)
    return constant(b, -(2 ** (width - 1)) if maximum else 2 ** (width - 1) - 1, t)


def combine(
    b: Builder,
    kind: ops.CombinerKind,
    acc: SSAValue,
    x: SSAValue,
    *,
    reassociate: bool = False,
    unsigned: bool = False,
) -> SSAValue:
    """`acc (kind) x` in the compute type. i1: add/max = OR, mul/min = AND. Floats:
    max/min propagate NaN. Integers: max/min `unsigned` or signed. `reassociate` puts
    `fastmath<reassoc>` on float add/mul/max/min so LLVM may vectorise a reduction (a
    different, not a worse, summation order; max/min results are unchanged, they are
    associative)."""
    t = acc.type
    if is_bool(t):
        if kind in (ops.CombinerKind.ADD, ops.CombinerKind.MAX):
            return emit(b, arith.OrIOp(acc, x))
        return emit(b, arith.AndIOp(acc, x))
    if is_float(t):
        flags = arith.FastMathFlagsAttr(["reassoc"]) if reassociate else None
        if kind == ops.CombinerKind.ADD:
            return emit(b, arith.AddfOp(acc, x, flags))
        if kind == ops.CombinerKind.MUL:
            return emit(b, arith.MulfOp(acc, x, flags))
        if kind == ops.CombinerKind.MAX:
            return emit(b, arith.MaximumfOp(acc, x, flags))
        return emit(b, arith.MinimumfOp(acc, x, flags))
    if kind == ops.CombinerKind.ADD:
        return emit(b, arith.AddiOp(acc, x))
    if kind == ops.CombinerKind.MUL:
        return emit(b, arith.MuliOp(acc, x))
    if kind == ops.CombinerKind.MAX:
        return emit(b, (arith.MaxUIOp if unsigned else arith.MaxSIOp)(acc, x))
    return emit(b, (arith.MinUIOp if unsigned else arith.MinSIOp)(acc, x))
