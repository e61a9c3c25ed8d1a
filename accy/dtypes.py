"""Element types: names, MLIR types, numpy dtypes and raw bytes of constants.

accy computes with `f64`, `f32`, `f16`, `bf16`, `i1`, the signless integers `i8`, `i16`,
`i32`, `i64` (two's complement, signed where an op needs a sign) and the unsigned `ui8`,
`ui16`, `ui32`, `ui64`. numpy has no bfloat16, so `ml_dtypes.bfloat16` stands in for it,
imported when a bf16 dtype is first asked for (ml_dtypes 0.7 takes 0.4 s to load).
xDSL stores dense constants as raw little-endian bytes, with `i1` as one byte per element
(`0xff` for true).
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    BFloat16Type,
    BytesAttr,
    DenseIntOrFPElementsAttr,
    Float16Type,
    Float32Type,
    Float64Type,
    IntegerType,
    Signedness,
    TensorType,
)
from xdsl.ir import Attribute

from accy.arguments import TensorSpec

ELEMENT_TYPES: dict[str, Attribute] = {
    "f64": Float64Type(),
    "f32": Float32Type(),
    "f16": Float16Type(),
    "bf16": BFloat16Type(),
    "i1": IntegerType(1),
    "i8": IntegerType(8),
    "i16": IntegerType(16),
    "i32": IntegerType(32),
    "i64": IntegerType(64),
    "ui8": IntegerType(8, Signedness.UNSIGNED),
    "ui16": IntegerType(16, Signedness.UNSIGNED),
    "ui32": IntegerType(32, Signedness.UNSIGNED),
    "ui64": IntegerType(64, Signedness.UNSIGNED),
}

_PLAIN_DTYPES: dict[str, np.dtype[Any]] = {
    "f64": np.dtype(np.float64),
    "f32": np.dtype(np.float32),
    "f16": np.dtype(np.float16),
    "i1": np.dtype(np.bool_),
    "i8": np.dtype(np.int8),
    "i16": np.dtype(np.int16),
    "i32": np.dtype(np.int32),
    "i64": np.dtype(np.int64),
    "ui8": np.dtype(np.uint8),
    "ui16": np.dtype(np.uint16),
    "ui32": np.dtype(np.uint32),
    "ui64": np.dtype(np.uint64),
}

_NAME_OF_DTYPE = {dtype: name for name, dtype in _PLAIN_DTYPES.items()}


@functools.cache
def bfloat16() -> np.dtype[Any]:
    """`ml_dtypes.bfloat16`, imported on first use."""
    import ml_dtypes

    return np.dtype(ml_dtypes.bfloat16)


def is_bfloat16(dtype: np.dtype[Any]) -> bool:
    """Whether `dtype` is bfloat16 (without importing ml_dtypes for any other dtype: an
    array of bfloat16 exists only once ml_dtypes is loaded)."""
    return dtype.name == "bfloat16" and dtype == bfloat16()


class _NumpyDtypes(Mapping[str, np.dtype[Any]]):
    """The numpy dtype of each element type's name; bf16's resolved when asked for."""

    def __getitem__(self, name: str) -> np.dtype[Any]:
        return bfloat16() if name == "bf16" else _PLAIN_DTYPES[name]

    def __iter__(self) -> Iterator[str]:
        return iter(ELEMENT_TYPES)

    def __len__(self) -> int:
        return len(ELEMENT_TYPES)


NUMPY_DTYPES: Mapping[str, np.dtype[Any]] = _NumpyDtypes()
"""The numpy dtype that holds each element type (by name)."""


def element_type(spec: str | Attribute | np.dtype[Any] | type) -> Attribute:
    """The MLIR element type for a name (`"f32"`, or numpy's `"float32"`), a numpy dtype,
    or an element type. Numpy's short codes are not names: `"i4"` is MLIR's 4-bit integer,
    not numpy's int32."""
    if isinstance(spec, Attribute):
        element_name(spec)  # raises for types accy does not compute with
        return spec
    if isinstance(spec, str) and spec in ELEMENT_TYPES:
        return ELEMENT_TYPES[spec]
    try:
        dtype = np.dtype(spec)
        if isinstance(spec, str) and dtype.name != spec:
            raise KeyError(spec)
        return ELEMENT_TYPES["bf16" if is_bfloat16(dtype) else _NAME_OF_DTYPE[dtype]]
    except (KeyError, TypeError):
        raise ValueError(
            f"unsupported element type {spec!r}; accy supports " + ", ".join(ELEMENT_TYPES)
        ) from None


def element_name(element: Attribute) -> str:
    for name, candidate in ELEMENT_TYPES.items():
        if candidate == element:
            return name
    raise ValueError(f"unsupported element type {element}")


def numpy_dtype(element: Attribute) -> np.dtype[Any]:
    """The numpy dtype that holds values of an accy element type."""
    return NUMPY_DTYPES[element_name(element)]


def byte_width(element: Attribute) -> int:
    """Bytes per element in device memory (`i1` takes one byte)."""
    return numpy_dtype(element).itemsize


def dense_attr(tensor_type: TensorType, values: Any) -> DenseIntOrFPElementsAttr:
    """A dense constant of `tensor_type` from values (a scalar splat or matching shape)."""
    if not tensor_type.has_static_shape():
        raise ValueError(f"a constant needs a static shape, got {tensor_type}")
    dtype = numpy_dtype(tensor_type.get_element_type())
    if np.issubdtype(dtype, np.integer) and not isinstance(values, np.ndarray):
        array = np.asarray(values, dtype=dtype)  # exact for Python ints beyond 2**53
    else:
        array = np.asarray(values).astype(dtype, copy=False)
    shape = tuple(tensor_type.get_shape())
    if array.shape != shape:
        if array.size != 1:
            raise ValueError(f"constant of {array.size} values does not fill {tensor_type}")
        array = np.broadcast_to(array.reshape(()), shape)
    raw = np.ascontiguousarray(array)
    if dtype == np.bool_:
        raw = raw.view(np.uint8) * np.uint8(0xFF)
    little_endian = raw.astype(raw.dtype.newbyteorder("<"), copy=False)
    return DenseIntOrFPElementsAttr(tensor_type, BytesAttr(little_endian.tobytes()))


def dense_values(attr: DenseIntOrFPElementsAttr) -> np.ndarray:
    """The values of a dense constant as a numpy array of its shape (a fresh copy)."""
    element = attr.get_element_type()
    dtype = numpy_dtype(element)
    storage = np.uint8 if dtype == np.bool_ else dtype.newbyteorder("<")
    flat = np.frombuffer(attr.data.data, dtype=storage)
    if dtype == np.bool_:
        flat = flat != 0
    shape = tuple(attr.get_shape())
    count = int(np.prod(shape, dtype=np.int64))
    if flat.size == 1 and count != 1:
        return np.full(shape, flat[0], dtype=dtype)
    return flat.astype(dtype).reshape(shape)


def tensor_spec(tensor_type: Attribute, name_hint: str | None = None) -> TensorSpec:
    """A tensor type as plain data (`accy.arguments`): its dtype and shape, `?` as None."""
    assert isinstance(tensor_type, TensorType), tensor_type
    shape = tuple(None if d == DYNAMIC_INDEX else d for d in tensor_type.get_shape())
    return TensorSpec(numpy_dtype(tensor_type.get_element_type()), shape, name_hint)
