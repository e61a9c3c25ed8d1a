"""A function's tensor signature as plain data, and the check of a call's arguments
against it, shared by the reference interpreter and the compiled targets (so that all of
them report the same `AccyInputError`s).

Imports only numpy and accy's error classes: a compiled program loaded from the compile
cache checks its calls without the compiler (`accy.targets.cpu_executable`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from accy.diagnostics import AccyInputError
from accy.runtime.loader import dtype_of


@dataclass(frozen=True)
class TensorSpec:
    """A parameter's or result's dtype and shape (None: a `?` dim, any size)."""

    dtype: np.dtype
    shape: tuple[int | None, ...]
    name_hint: str | None = None
    """The parameter's SSA name in the source (`%x`), for messages."""

    def to_json(self) -> list[Any]:
        return [self.dtype.name, list(self.shape), self.name_hint]

    @staticmethod
    def from_json(data: list[Any]) -> TensorSpec:
        name, shape, hint = data
        return TensorSpec(dtype_of(name), tuple(shape), hint)


def shape_text(shape: Sequence[int | None]) -> str:
    """A shape as Python prints a tuple, `?` for a dynamic dim: `(4, ?)`, `(4,)`, `()`."""
    dims = ["?" if d is None else str(d) for d in shape]
    return "(" + ", ".join(dims) + ("," if len(dims) == 1 else "") + ")"


def dtype_text(dtype: np.dtype) -> str:
    return dtype.name if dtype.isnative else str(dtype)


def check_arguments(
    function: str, params: Sequence[TensorSpec], arrays: Sequence[object]
) -> list[np.ndarray]:
    """`arrays` as numpy arrays if they fit `params` (count, numpy type, dtype exactly,
    shape with any size at a `?` dim); else an `AccyInputError` naming the parameter of
    `@function`."""
    if len(arrays) != len(params):
        raise AccyInputError(
            f"function @{function} takes {len(params)} argument"
            f"{'' if len(params) == 1 else 's'}, got {len(arrays)}"
        )
    checked = []
    for index, (param, array) in enumerate(zip(params, arrays)):
        label = (
            f"argument #{index}"
            + (f" (%{param.name_hint})" if param.name_hint else "")
            + f" of @{function}"
        )
        if not isinstance(array, (np.ndarray, np.generic)):
            raise AccyInputError(
                f"{label}: expected a numpy array (np.ndarray or numpy scalar) of dtype "
                f"{dtype_text(param.dtype)} and shape {shape_text(param.shape)}, got "
                f"{type(array).__name__}"
            )
        array = np.asarray(array)
        if array.dtype != param.dtype or not array.dtype.isnative:
            raise AccyInputError(
                f"{label}: expected dtype {dtype_text(param.dtype)}, got {dtype_text(array.dtype)}"
            )
        fits = len(param.shape) == array.ndim and all(
            d is None or d == a for d, a in zip(param.shape, array.shape)
        )
        if not fits:
            raise AccyInputError(
                f"{label}: expected shape {shape_text(param.shape)}, got {shape_text(array.shape)}"
            )
        checked.append(array)
    return checked
