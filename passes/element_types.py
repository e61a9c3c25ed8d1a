"""Facts about element types and tensor shapes that planning and lowering share: which
floats are narrow, the type arithmetic happens in, a value's static shape. Pure functions
of xDSL types; neither planning nor lowering owns them (both import them from here;
`is_float` and `is_bool` are the dialect's own, re-exported)."""

from __future__ import annotations

from accy.dialects.accy import is_bool, is_float
from xdsl.dialects.builtin import (
    BFloat16Type,
    Float16Type,
    IntegerType,
    Signedness,
    TensorType,
    f32,
)
from xdsl.ir import Attribute, SSAValue

__all__ = [
    "compute_type",
    "int_width",
    "is_bool",
    "is_float",
    "is_low_precision",
    "is_unsigned",
    "shape_of",
    "signless",
]


def shape_of(value: SSAValue) -> tuple[int, ...]:
    assert isinstance(value.type, TensorType), value.type
    return tuple(value.type.get_shape())


def is_low_precision(t: Attribute) -> bool:
    return isinstance(t, (Float16Type, BFloat16Type))


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
