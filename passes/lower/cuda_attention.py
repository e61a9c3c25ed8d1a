"""CUDA kernel of `attention` work items (`fusion.attention_chain`): softmax(Q K^T) V with
one thread per score row (`attention_rows.AttentionRows`), no scores stored anywhere.

Invariants: each of the chain's reductions folds the row's keys in order, each key's score
recomputed for it (a sum over the contracting dims, in the compute type, rounded as S
stores it) and its operand evaluated from that score and the earlier reductions; then the
output row is zeroed and accumulates probability times value, key after key, each
probability evaluated from its recomputed score; its epilogue, if any, replaces each
element after. Rows write disjoint output elements.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from accy.dialects import accy as ops
from accy.passes.element_types import compute_type, is_unsigned
from accy.passes.lower import cuda_ir as ir
from accy.passes.lower.attention_rows import AttentionRows
from accy.passes.lower.cuda_kernels import (
    ELEMENT_BLOCK,
    Kernel,
    KernelContext,
    KernelProgram,
    linear_thread,
    static_indices,
)
from accy.passes.lower.planned_kernel import PlannedKernel
from accy.passes.lower.scalar import combine, combiner_identity, element_type, extend, narrow
from xdsl.builder import Builder
from xdsl.ir import SSAValue

ADD, MUL = ops.CombinerKind.ADD, ops.CombinerKind.MUL


def attention_kernel(context: KernelContext, item: PlannedKernel) -> KernelProgram:
    """An `attention` item (see the module docstring)."""
    rows = AttentionRows.of(item)
    count = int(np.prod(rows.row_shape, dtype=np.int64))
    if not count:
        return KernelProgram(())
    result = item.root.results[0]
    kernel = context.kernel(item, "attention", reads=item.inputs, writes=[result])
    linear = linear_thread(kernel.builder, ELEMENT_BLOCK)
    ir.if_then(
        kernel.builder,
        ir.less(kernel.builder, linear, count),
        lambda b: _row(kernel, item, rows, b, static_indices(b, linear, rows.row_shape)),
    )
    return KernelProgram((kernel.launch([ir.ceil_div(count, ELEMENT_BLOCK)], [ELEMENT_BLOCK]),))


def _row(
    kernel: Kernel, item: PlannedKernel, rows: AttentionRows, b: Builder, row: list[SSAValue]
) -> None:
    element = element_type(rows.scores.result)
    acc_type = compute_type(element)
    reduced: dict[SSAValue, SSAValue] = {}
    score: list[SSAValue] = []  # the score of the key being evaluated

    def load(builder: Builder, value: SSAValue, indices: Sequence[SSAValue]) -> SSAValue:
        if value is rows.scores.result:  # read at [row, k] only (attention_chain)
            return score[-1]
        if value in reduced:  # read at the row only
            return reduced[value]
        return kernel.load(builder, value, indices)

    group = kernel.fused(item, rows.evaluated, load)

    def operand(builder: Builder, source: SSAValue, indices) -> SSAValue:
        return extend(
            builder, kernel.load(builder, source, indices), element_type(source), acc_type
        )

    def scored(builder: Builder, k: SSAValue) -> None:
        def summed(inner: Builder, position: int, total: SSAValue, c: list) -> SSAValue:
            if position == len(rows.contracting_shape):
                x = operand(inner, rows.query, rows.query_index(row, c))
                y = operand(inner, rows.key, rows.key_index(row, k, c))
                return combine(inner, ADD, total, combine(inner, MUL, x, y))

            def step(body: Builder, iv: SSAValue, carried: Sequence[SSAValue]):
                return [summed(body, position + 1, carried[0], [*c, iv])]

            (done,) = ir.for_range(inner, 0, rows.contracting_shape[position], 1, step, [total])
            return done

        total = summed(builder, 0, combiner_identity(builder, ADD, acc_type), [])
        score.append(narrow(builder, total, element))

    for reduction in rows.reductions:
        reduced_type = element_type(reduction.result)
        kind = reduction.kind.data
        unsigned = is_unsigned(reduced_type)
        start = combiner_identity(b, kind, compute_type(reduced_type), unsigned=unsigned)

        def fold(
            body: Builder,
            k: SSAValue,
            carried: Sequence[SSAValue],
            reduction: ops.ReduceOp = reduction,
            unsigned: bool = unsigned,
        ) -> list[SSAValue]:
            scored(body, k)
            x = kernel.evaluate(body, group, reduction.operand, [*row, k])
            x = extend(body, x, element_type(reduction.result), carried[0].type)
            return [combine(body, reduction.kind.data, carried[0], x, unsigned=unsigned)]

        (total,) = ir.for_range(b, 0, rows.keys, 1, fold, [start])
        reduced[reduction.result] = narrow(b, total, reduced_type)

    target = item.root.results[0]
    value_shape = rows.value_shape
    width = int(np.prod(value_shape, dtype=np.int64))

    def each_value(builder: Builder, body) -> None:
        def one(inner: Builder, j: SSAValue, _carried) -> list[SSAValue]:
            body(inner, static_indices(inner, j, value_shape))
            return []

        ir.for_range(builder, 0, width, 1, one)

    def zero(builder: Builder, dv: list[SSAValue]) -> None:
        value = narrow(builder, combiner_identity(builder, ADD, acc_type), element)
        kernel.store(builder, value, target, rows.output_index(row, dv))

    each_value(b, zero)

    def accumulate(body: Builder, k: SSAValue, _carried) -> list[SSAValue]:
        scored(body, k)
        p = kernel.evaluate(body, group, rows.probabilities, [*row, k])
        weight = extend(body, p, element, acc_type)

        def add(inner: Builder, dv: list[SSAValue]) -> None:
            at = rows.output_index(row, dv)
            v = operand(inner, rows.value_operand, rows.value_index(row, k, dv))
            so_far = extend(inner, kernel.load(inner, target, at), element, acc_type)
            total = combine(inner, ADD, so_far, combine(inner, MUL, weight, v))
            kernel.store(inner, narrow(inner, total, element), target, at)

        each_value(body, add)
        return []

    ir.for_range(b, 0, rows.keys, 1, accumulate)
    if item.root is not rows.values:
        epilogue = kernel.fused(item)

        def replace(builder: Builder, dv: list[SSAValue]) -> None:
            at = rows.output_index(row, dv)
            known = {rows.values.result: kernel.load(builder, target, at)}
            value = kernel.evaluate(builder, epilogue, target, at, known)
            kernel.store(builder, value, target, at)

        each_value(b, replace)
