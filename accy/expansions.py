"""The ops the StableHLO importer expands into accy ops itself, after XLA's own
expansions (`xla/client/lib/math.cc`, StableHLO's `ChloDecompositionPatterns`, XLA's
elemental `ReducePrecision`): chlo ops and `stablehlo.reduce_precision`.

StableHLO's `chlo-legalize-to-stablehlo` expands the others before import
(`mlir_bridge.CHLO_LEGALIZATION`); it cannot expand these where the bindings lack the chlo
dialect (its patterns build intermediate chlo ops). Each expansion reads the operands as
accy values and returns the result; f16 and bf16 are computed in f32 and rounded once at
the end, as XLA does.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from xdsl.dialects.builtin import BFloat16Type, Float16Type, TensorType
from xdsl.ir import SSAValue

from accy.builder import BlockBuilder

LANCZOS_GAMMA = 7
LANCZOS_BASE = 0.99999999999980993227684700473478
LANCZOS_COEFFICIENTS = (
    676.520368121885098567009190444019,
    -1259.13921672240287047156078755283,
    771.3234287776530788486528258894,
    -176.61502916214059906584551354,
    12.507343278686904814458936853,
    -0.13857109526572011689554707,
    9.984369578019570859563e-6,
    1.50563273514931155834e-7,
)
"""The Lanczos approximation of the gamma function that XLA's `Lgamma` uses (g = 7)."""


FLOAT_LAYOUT = {"f64": (11, 52), "f32": (8, 23), "f16": (5, 10), "bf16": (8, 7)}
"""Exponent and mantissa bits of each float type."""


class Expansion:
    """Builds one expansion on values of one tensor type (`like`)."""

    def __init__(self, bb: BlockBuilder, like: SSAValue):
        self.bb = bb
        self.type = like.type
        assert isinstance(self.type, TensorType)

    def c(self, value: float) -> SSAValue:
        """A splat constant of the expansion's type."""
        return self.bb.constant(self.type, value)

    def mantissa_bits(self) -> int:
        return FLOAT_LAYOUT[str(self.type.get_element_type())][1]


def _in_f32(bb: BlockBuilder, x: SSAValue, body: Callable[[SSAValue], SSAValue]) -> SSAValue:
    """`body(x)`, computed in f32 for f16/bf16 and rounded once to `x`'s type."""
    element = x.type.get_element_type()  # type: ignore[attr-defined]
    if not isinstance(element, Float16Type | BFloat16Type):
        return body(x)
    return bb.convert(body(bb.convert(x, "f32")), element)


def _large(e: Expansion, x: SSAValue) -> SSAValue:
    """`|x|` beyond which `sqrt(x^2 + 1)` and `sqrt(x^2 - 1)` round to `|x|`."""
    return e.bb.compare("GE", e.bb.abs(x), e.c(2.0 ** (e.mantissa_bits() // 2 + 2)))


def acosh(bb: BlockBuilder, x: SSAValue) -> SSAValue:
    """`log1p((x - 1) + sqrt((x - 1)(x + 1)))`; `log(x) + log(2)` for large x (no
    overflow); NaN below 1 (the square root's)."""

    def body(x: SSAValue) -> SSAValue:
        e = Expansion(bb, x)
        minus = bb.subtract(x, e.c(1.0))
        root = bb.sqrt(bb.multiply(minus, bb.add(x, e.c(1.0))))
        small = bb.log_plus_one(bb.add(minus, root))
        big = bb.add(bb.log(x), e.c(math.log(2.0)))
        return bb.select(_large(e, x), big, small)

    return _in_f32(bb, x, body)


def asinh(bb: BlockBuilder, x: SSAValue) -> SSAValue:
    """`sign(x) * log1p(|x| + x^2 / (1 + sqrt(1 + x^2)))`; `sign(x) * (log|x| + log 2)`
    for large |x|."""

    def body(x: SSAValue) -> SSAValue:
        e = Expansion(bb, x)
        a = bb.abs(x)
        square = bb.multiply(a, a)
        root = bb.sqrt(bb.add(square, e.c(1.0)))
        small = bb.log_plus_one(bb.add(a, bb.divide(square, bb.add(root, e.c(1.0)))))
        big = bb.add(bb.log(a), e.c(math.log(2.0)))
        magnitude = bb.select(_large(e, x), big, small)
        return bb.select(bb.compare("LT", x, e.c(0.0)), bb.negate(magnitude), magnitude)

    return _in_f32(bb, x, body)


def atanh(bb: BlockBuilder, x: SSAValue) -> SSAValue:
    """`(log1p(x) - log1p(-x)) / 2`: ±inf at ±1, NaN beyond (log1p's)."""

    def body(x: SSAValue) -> SSAValue:
        e = Expansion(bb, x)
        difference = bb.subtract(bb.log_plus_one(x), bb.log_plus_one(bb.negate(x)))
        return bb.multiply(difference, e.c(0.5))

    return _in_f32(bb, x, body)


def sinh(bb: BlockBuilder, x: SSAValue) -> SSAValue:
    """`(e - e / (e + 1)) / 2` with `e = expm1(x)` for |x| < 1/4 (no cancellation),
    else `exp(x + log 1/2) - exp(-x + log 1/2)` (no overflow before sinh's own)."""

    def body(x: SSAValue) -> SSAValue:
        e = Expansion(bb, x)
        m = bb.exponential_minus_one(bb.abs(x))
        small = bb.multiply(bb.add(m, bb.divide(m, bb.add(m, e.c(1.0)))), e.c(0.5))
        small = bb.select(bb.compare("LT", x, e.c(0.0)), bb.negate(small), small)
        half = e.c(math.log(0.5))
        large = bb.subtract(
            bb.exponential(bb.add(x, half)), bb.exponential(bb.add(bb.negate(x), half))
        )
        return bb.select(bb.compare("LT", bb.abs(x), e.c(0.25)), small, large)

    return _in_f32(bb, x, body)


def _one_minus_square_root(bb: BlockBuilder, e: Expansion, x: SSAValue) -> SSAValue:
    """`sqrt((1 - x)(1 + x))`: `sqrt(1 - x^2)` without cancelling near |x| = 1."""
    one = e.c(1.0)
    return bb.sqrt(bb.multiply(bb.subtract(one, x), bb.add(one, x)))


def asin(bb: BlockBuilder, x: SSAValue) -> SSAValue:
    """`2 atan2(x, 1 + sqrt((1 - x)(1 + x)))`."""

    def body(x: SSAValue) -> SSAValue:
        e = Expansion(bb, x)
        root = _one_minus_square_root(bb, e, x)
        return bb.multiply(e.c(2.0), bb.atan2(x, bb.add(e.c(1.0), root)))

    return _in_f32(bb, x, body)


def acos(bb: BlockBuilder, x: SSAValue) -> SSAValue:
    """`2 atan2(sqrt((1 - x)(1 + x)), 1 + x)`; pi at -1."""

    def body(x: SSAValue) -> SSAValue:
        e = Expansion(bb, x)
        root = _one_minus_square_root(bb, e, x)
        general = bb.multiply(e.c(2.0), bb.atan2(root, bb.add(e.c(1.0), x)))
        return bb.select(bb.compare("EQ", x, e.c(-1.0)), e.c(math.pi), general)

    return _in_f32(bb, x, body)


def atan(bb: BlockBuilder, x: SSAValue) -> SSAValue:
    """`atan2(x, 1)`."""
    return bb.atan2(x, Expansion(bb, x).c(1.0))


def square(bb: BlockBuilder, x: SSAValue) -> SSAValue:
    """`x * x`."""
    return bb.multiply(x, x)


def is_inf(bb: BlockBuilder, x: SSAValue) -> SSAValue:
    return bb.compare("EQ", bb.abs(x), Expansion(bb, x).c(math.inf))


def is_pos_inf(bb: BlockBuilder, x: SSAValue) -> SSAValue:
    return bb.compare("EQ", x, Expansion(bb, x).c(math.inf))


def is_neg_inf(bb: BlockBuilder, x: SSAValue) -> SSAValue:
    return bb.compare("EQ", x, Expansion(bb, x).c(-math.inf))


def lgamma(bb: BlockBuilder, x: SSAValue) -> SSAValue:
    """XLA's `Lgamma`: the Lanczos approximation for x >= 0.5, Euler's reflection
    `log(pi) - lgamma(1 - x) - log|sin(pi x)|` below (with sin's argument reduced to
    [0, 0.5] of the period), +inf at ±inf and at the poles."""

    def body(x: SSAValue) -> SSAValue:
        e = Expansion(bb, x)
        reflect = bb.compare("LT", x, e.c(0.5))
        z = bb.select(reflect, bb.negate(x), bb.subtract(x, e.c(1.0)))
        series = e.c(LANCZOS_BASE)
        for index, coefficient in enumerate(LANCZOS_COEFFICIENTS):
            term = bb.divide(e.c(coefficient), bb.add(z, e.c(index + 1.0)))
            series = bb.add(series, term)
        half = LANCZOS_GAMMA + 0.5
        t = bb.add(z, e.c(half))
        log_t = bb.add(e.c(math.log(half)), bb.log_plus_one(bb.divide(z, e.c(half))))
        # (z + 1/2 - t / log t) * log t: (z + 1/2) log t - t without overflowing.
        scaled = bb.subtract(bb.add(z, e.c(0.5)), bb.divide(t, log_t))
        log_y = bb.add(
            bb.add(e.c(0.5 * math.log(2 * math.pi)), bb.multiply(scaled, log_t)),
            bb.log(series),
        )
        magnitude = bb.abs(x)
        fraction = bb.subtract(magnitude, bb.floor(magnitude))
        reduced = bb.select(
            bb.compare("GT", fraction, e.c(0.5)), bb.subtract(e.c(1.0), fraction), fraction
        )
        denominator = bb.log(bb.sine(bb.multiply(e.c(math.pi), reduced)))
        reflection = bb.select(
            bb.is_finite(denominator),
            bb.subtract(bb.subtract(e.c(math.log(math.pi)), denominator), log_y),
            bb.negate(denominator),
        )
        result = bb.select(reflect, reflection, log_y)
        return bb.select(is_inf(bb, x), e.c(math.inf), result)

    return _in_f32(bb, x, body)


def mulhi(bb: BlockBuilder, lhs: SSAValue, rhs: SSAValue) -> SSAValue:
    """The high half of the double-width product of two integers (signed or unsigned as
    the type): computed in the type twice as wide for 8-, 16- and 32-bit integers; for
    64-bit ones from 32-bit halves (schoolbook, carries propagated)."""
    element = lhs.type.get_element_type()  # type: ignore[attr-defined]
    width = element.bitwidth
    unsigned = str(element).startswith("ui")
    shift = bb.shift_right_logical if unsigned else bb.shift_right_arithmetic
    if width < 64:
        wide = f"{'ui' if unsigned else 'i'}{2 * width}"
        product = bb.multiply(bb.convert(lhs, wide), bb.convert(rhs, wide))
        shape = lhs.type.get_shape()  # type: ignore[attr-defined]
        bits = bb.constant(TensorType(product.type.get_element_type(), shape), width)
        return bb.convert(shift(product, bits), element)
    e = Expansion(bb, lhs)
    low_mask, half = e.c(0xFFFFFFFF), e.c(32)

    def halves(v: SSAValue) -> tuple[SSAValue, SSAValue]:
        return shift(v, half), bb.and_(v, low_mask)

    a_high, a_low = halves(lhs)
    b_high, b_low = halves(rhs)
    low_low = bb.multiply(a_low, b_low)
    high_low = bb.multiply(a_high, b_low)
    low_high = bb.multiply(a_low, b_high)
    high_high = bb.multiply(a_high, b_high)
    # The middle column: the low product's carry plus the cross products' low halves.
    carry = bb.shift_right_logical(low_low, half)
    middle = bb.add(bb.add(bb.and_(high_low, low_mask), bb.and_(low_high, low_mask)), carry)
    high = bb.add(high_high, bb.add(shift(high_low, half), shift(low_high, half)))
    return bb.add(high, bb.shift_right_logical(middle, half))


UNARY: dict[str, Callable[[BlockBuilder, SSAValue], SSAValue]] = {
    "acosh": acosh,
    "asinh": asinh,
    "atanh": atanh,
    "sinh": sinh,
    "asin": asin,
    "acos": acos,
    "atan": atan,
    "tan": lambda bb, x: bb.tan(x),
    "square": square,
    "is_inf": is_inf,
    "is_pos_inf": is_pos_inf,
    "is_neg_inf": is_neg_inf,
    "lgamma": lgamma,
}
"""chlo ops of one operand the importer expands, by name (without `chlo.`)."""

BINARY: dict[str, Callable[[BlockBuilder, SSAValue, SSAValue], SSAValue]] = {"mulhi": mulhi}
"""chlo ops of two operands the importer expands."""


def reduce_precision(
    bb: BlockBuilder, x: SSAValue, exponent_bits: int, mantissa_bits: int
) -> SSAValue:
    """`x` rounded to `mantissa_bits` (to nearest, ties to even) and its exponent range
    cut to `exponent_bits` (overflow to ±inf, underflow to ±0), on its bits; NaN stays
    NaN where a mantissa bit is left, else becomes ±inf."""
    element = x.type.get_element_type()  # type: ignore[attr-defined]
    exponent, mantissa = FLOAT_LAYOUT[str(element)]
    width = 1 + exponent + mantissa
    bits_type = f"i{width}"
    bits = bb.bitcast_convert(x, bits_type)
    e = Expansion(bb, bits)

    def c(value: int) -> SSAValue:
        value &= (1 << width) - 1
        return e.c(value - (1 << width) if value >> (width - 1) else value)

    if mantissa_bits < mantissa:
        dropped = mantissa - mantissa_bits
        last = bb.shift_right_logical(bb.and_(bits, c(1 << dropped)), c(dropped))
        bias = bb.add(last, c((1 << (dropped - 1)) - 1))
        bits = bb.and_(bb.add(bits, bias), c(~((1 << dropped) - 1)))
    if exponent_bits < exponent:
        exponent_mask = ((1 << exponent) - 1) << mantissa
        bias = (1 << (exponent - 1)) - 1
        reduced = (1 << (exponent_bits - 1)) - 1
        field = bb.and_(bits, c(exponent_mask))
        # The exponent field compares as unsigned: it never has the sign bit.
        overflows = bb.compare("GT", field, c((bias + reduced) << mantissa))
        underflows = bb.compare("LE", field, c((bias - reduced) << mantissa))
        signed_zero = bb.and_(bits, c(1 << (width - 1)))
        signed_inf = bb.or_(signed_zero, c(exponent_mask))
        bits = bb.select(overflows, signed_inf, bb.select(underflows, signed_zero, bits))
    result = bb.bitcast_convert(bits, element)
    if mantissa_bits == 0:  # no mantissa bit is left to tell NaN from inf
        original = bb.bitcast_convert(x, bits_type)
        sign = bb.and_(original, c(1 << (width - 1)))
        infinity = bb.bitcast_convert(bb.or_(sign, c(((1 << exponent) - 1) << mantissa)), element)
        return bb.select(bb.compare("NE", x, x), infinity, result)
    return bb.select(bb.compare("NE", x, x), x, result)
