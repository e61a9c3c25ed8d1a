"""Import-time values of the small integer tensors a shape-polymorphic StableHLO program
computes its shapes with (`get_dimension_size`, JAX's dimension variables, constants,
and the `convert`, `reshape`, `concatenate`, `broadcast_in_dim`, `slice` and integer
arithmetic between them), so that the dynamic-shape ops (`dynamic_broadcast_in_dim`,
`dynamic_iota`, `dynamic_reshape`, `real_dynamic_slice`) can be imported as their static
accy forms whose dynamic dims are the plan's run-time size.

An entry is an `int` or `DYNAMIC`, the run-time size every dynamic dim of an accy
function has (the plan's rows). A value is known only when all its entries are; an
operation on `DYNAMIC` is known only where it leaves it unchanged (`n * 1`, `n + 0`).
JAX passes its dimension variables as leading `tensor<i64>` / `tensor<i32>` parameters of
a function with dynamic dims; each is the size of a dynamic dim (`bind_dimension_variables`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from accy.mlir_bridge.stablehlo import UpstreamOp, UpstreamValue

DYNAMIC = "n"
"""The entry for the run-time size of accy's dynamic dims."""

Entry = int | str
MAX_ENTRIES = 16
"""Larger integer tensors are data, not shapes: they are not tracked."""


def _is_small_integer(v: UpstreamValue) -> bool:
    t = v.type
    return (
        t.shape is not None
        and None not in t.shape
        and len(t.shape) <= 1
        and int(np.prod(t.shape, dtype=np.int64)) <= MAX_ENTRIES
        and t.element is not None
        and t.element.lstrip("u").startswith("i")
        and t.element != "i1"
    )


def _arithmetic(name: str, a: Entry, b: Entry) -> Entry | None:
    if isinstance(a, int) and isinstance(b, int):
        if name == "add":
            return a + b
        if name == "subtract":
            return a - b
        if name == "multiply":
            return a * b
        if name == "divide" and b != 0:
            return int(a / b)  # StableHLO's division truncates toward zero
        if name == "maximum":
            return max(a, b)
        if name == "minimum":
            return min(a, b)
        return None
    if a == DYNAMIC and (
        (name in ("add", "subtract") and b == 0) or (name in ("multiply", "divide") and b == 1)
    ):
        return DYNAMIC
    if b == DYNAMIC and ((name == "add" and a == 0) or (name == "multiply" and a == 1)):
        return DYNAMIC
    return None


class ShapeValues:
    """The known values, by upstream value id."""

    def __init__(self) -> None:
        self.known: dict[int, tuple[Entry, ...]] = {}

    def get(self, v: UpstreamValue) -> tuple[Entry, ...] | None:
        return self.known.get(v.id)

    def bind(self, target: UpstreamValue, source: UpstreamValue) -> None:
        """`target` holds what `source` holds (a call's argument and its parameter)."""
        if (value := self.known.get(source.id)) is not None:
            self.known[target.id] = value

    def bind_dimension_variables(self, params: Sequence[UpstreamValue]) -> None:
        """The leading rank-0 integer parameters of a function with dynamic dims."""
        if not any(p.type.shape and None in p.type.shape for p in params):
            return
        for p in params:
            if p.type.shape != () or not _is_small_integer(p):
                break
            self.known[p.id] = (DYNAMIC,)

    def record(self, op: UpstreamOp) -> None:
        """The value of `op`'s result, when it is a small integer tensor it determines."""
        if len(op.results) != 1 or not _is_small_integer(op.results[0]):
            return
        value = self._evaluate(op)
        if value is not None:
            self.known[op.results[0].id] = value

    def _evaluate(self, op: UpstreamOp) -> tuple[Entry, ...] | None:
        name = op.name.removeprefix("stablehlo.")
        operands = [self.known.get(v.id) for v in op.operands]
        if name == "constant":
            array = op.attributes.get("value")
            if isinstance(array, np.ndarray) and array.dtype.kind in "iu":
                shape = op.results[0].type.shape or ()
                return tuple(int(x) for x in np.broadcast_to(array, shape).reshape(-1))
            return None
        if name == "get_dimension_size":
            size = op.operands[0].type.shape[op.attributes["dimension"]]  # type: ignore[index]
            return (DYNAMIC if size is None else size,)
        if any(v is None for v in operands):
            return None
        if name in ("convert", "reshape"):
            return operands[0]
        if name == "concatenate":
            return tuple(e for value in operands for e in value)  # type: ignore[union-attr]
        if name == "broadcast_in_dim" and len(operands[0]) == 1:  # type: ignore[arg-type]
            count = int(np.prod(op.results[0].type.shape, dtype=np.int64))
            return operands[0] * count  # type: ignore[operator]
        if name == "slice":
            a = op.attributes
            return operands[0][a["start_indices"][0] : a["limit_indices"][0] : a["strides"][0]]  # type: ignore[index]
        if name in ("add", "subtract", "multiply", "divide", "maximum", "minimum"):
            lhs, rhs = operands
            if len(lhs) != len(rhs):  # type: ignore[arg-type]
                return None
            entries = [_arithmetic(name, a, b) for a, b in zip(lhs, rhs)]  # type: ignore[arg-type]
            return None if None in entries else tuple(entries)  # type: ignore[arg-type]
        return None
