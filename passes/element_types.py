"""Facts about element types and tensor shapes that planning and lowering share: which
floats are narrow, the type arithmetic happens in, a value's static shape. Pure functions
of xDSL types; neither planning nor lowering owns them (both import them from here)."""

from __future__ import annotations

from xdsl.dialects.builtin import (
    BFloat16Type,
    Float16Type,
    Float32Type,
    Float64Type,
    IntegerType,
    Signedness,
    TensorType,
    f32,
)
from xdsl.ir import Attribute, SSAValue


def shape_of(value: SSAValue) -> tuple[int, ...]:
    assert isinstance(value.type, TensorType), value.type
    return tuple(value.type.get_shape())


def is_float(t: Attribute) -> bool:
    return isinstance(t, (Float32Type, Float16Type, BFloat16Type, Float64Type))


def is_low_precision(t: Attribute) -> bool:
    return isinstance(t, (Float16Type, BFloat16Type))


def is_bool(t: Attribute) -> bool:
    return isinstance(t, IntegerType) and t.width.data == 1


def int_width(t: Attribute) -> int:
    assert isinstance(t, IntegerType)
    return t.width.data


def is_unsigned(t: Attribute) -> bool:
    return isinstance(t, IntegerType) and t.signedness.data == Signedness.UNSIGNED


def signless(t: Attribute) -> Attribute:
    """The `arith` type of values of element type `t` (unsigned integers are signless)."""
    if isinstance(t, IntegerType) and t.signedness.data != Signedness.SIGNLESS:
        return IntegerType(t.width.data)
    return t


def compute_type(t: Attribute) -> Attribute:
    """The type arithmetic on element type `t` is done in (f32 for f16/bf16; `signless`)."""
    return f32 if is_low_precision(t) else signless(t)
