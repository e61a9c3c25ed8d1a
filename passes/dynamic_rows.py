"""The rule of a target that plans dynamic dims (`Target.dynamic_rows`): every `?` of a
function is one row count, read from the first argument that has one, so only ops that
keep that size are allowed on dynamic dims.
"""

from __future__ import annotations

import numpy as np
from accy.dialects import accy as ops
from accy.passes.element_types import shape_of
from xdsl.dialects import func
from xdsl.dialects.builtin import DYNAMIC_INDEX, TensorType
from xdsl.ir import Operation

from accy.diagnostics import AccyError


class DynamicRowsError(AccyError):
    """A function whose `?` dims are not one row count (see the module doc)."""


def row_binding(function: func.FuncOp) -> tuple[int, int] | None:
    """`(argument, dim)` whose size binds every `?` of `function`, or None when it has no
    `?` dims. Raises `DynamicRowsError` when the `?` dims cannot be bound: every `?` is
    the row count of the first argument that has one."""
    binding = None
    for index, arg in enumerate(function.body.block.args):
        shape = shape_of(arg)
        if DYNAMIC_INDEX in shape:
            binding = (index, shape.index(DYNAMIC_INDEX))
            break
    for op in function.body.walk():
        _check_dynamic_op(op)
        if binding is None:
            for value in op.results:
                if isinstance(value.type, TensorType) and DYNAMIC_INDEX in shape_of(value):
                    raise DynamicRowsError(
                        f"function @{function.sym_name.data} has dynamic dims but no "
                        "argument with a dynamic dim to bind them to (the CPU target binds "
                        "every '?' to the row count of the first argument that has one)",
                        op.location,
                    )
    if binding is None:
        for t in function.function_type.outputs:
            if isinstance(t, TensorType) and DYNAMIC_INDEX in t.get_shape():
                raise DynamicRowsError(
                    f"function @{function.sym_name.data} returns dynamic dims but no "
                    "argument has a dynamic dim to bind them to",
                    function.location,
                )
    return binding


def _check_dynamic_op(op: Operation) -> None:
    if isinstance(op, ops.ReshapeOp):
        source, target = shape_of(op.operand), shape_of(op.result)
        if source != target and (DYNAMIC_INDEX in source or DYNAMIC_INDEX in target):
            static = [int(np.prod([d for d in s if d != DYNAMIC_INDEX])) for s in (source, target)]
            counts = [s.count(DYNAMIC_INDEX) for s in (source, target)]
            if counts != [1, 1] or static[0] != static[1]:
                raise DynamicRowsError(
                    "'accy.reshape' op changes a dynamic dim's size; the CPU target binds "
                    "every '?' to one row count, so a reshape must keep exactly one '?' and "
                    "the same static element count",
                    op.location,
                )
    elif isinstance(op, ops.ConcatenateOp):
        if any(shape_of(v)[op.dim] == DYNAMIC_INDEX for v in op.inputs):
            raise DynamicRowsError(
                "'accy.concatenate' op along a dynamic dim is not supported by the CPU "
                "target (its size would differ from the bound row count)",
                op.location,
            )
    elif isinstance(op, ops.PadOp) and any(
        size == DYNAMIC_INDEX and edge != (0, 0, 0)
        for size, edge in zip(shape_of(op.operand), op.edges)
    ):
        raise DynamicRowsError(
            "'accy.pad' op pads a dynamic dim, which the CPU target does not support (its "
            "size would differ from the bound row count)",
            op.location,
        )
    elif isinstance(op, ops.SliceOp) and DYNAMIC_INDEX in shape_of(op.result):
        raise DynamicRowsError(
            "'accy.slice' op with a dynamic result dim is not supported by the CPU "
            "target (its size would differ from the bound row count)",
            op.location,
        )
