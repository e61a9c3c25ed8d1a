"""CPU lowering of `attention` kernels (`fusion.attention_chain`): softmax(Q K^T) V one
score row at a time (`attention_rows.AttentionRows`), the rows' scores on the thread's
stack, never stored.

Per row, the scores go to a stack buffer of the keys' length (the scores' element type);
each reduction of the chain then folds the keys in program order from its identity
(`fastmath<reassoc>`, so LLVM vectorizes), its operand evaluated from the buffer and the
earlier reductions; the probabilities replace the scores in the buffer; the output row
accumulates probability times value, key after key; its epilogue, if any, replaces each
element after. Rows write disjoint output elements; the output takes no input's buffer
(`plan.IN_PLACE_KINDS`). Two forms:

- *packed* (`Packing`: one contracting dim, V one free dim, last in the output, its
  width a multiple of 4 lanes, the packed head within `PACKED_BYTES`): a parallel nest
  over the heads (the scores product's batch dims); per head, K packed transposed
  (`kt[c, k]`, the keys padded with zeros to whole vectors) and V packed
  (`vp[k, dv]`) on the stack; then blocks of up to `ROW_BLOCK` queries (the queries past
  the last whole block one by one): their scores in vectors of keys (a broadcast Q
  element times two vectors of `kt` per contracting step), their softmax row by row, and
  their output rows in vectors of V's width carried across the keys (a broadcast
  probability times a row of `vp`), so every K and V element loaded serves a block;
- *row by row* otherwise: a parallel nest over the rows, every sum in scalar loops.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from accy.dialects import accy as ops
from accy.passes.dot_layout import REGISTER_BITS
from accy.passes.element_types import compute_type, is_unsigned
from accy.passes.lower.attention_rows import AttentionRows
from accy.passes.lower.cpu_kernels.context import (
    INDEX,
    CpuKernelPattern,
    KernelContext,
    power_of_two_block,
)
from accy.passes.lower.indexing import FusedGroup
from accy.passes.lower.planned_kernel import PlannedKernel
from accy.passes.lower.scalar import combine, combiner_identity, element_type, emit, extend, narrow
from accy.passes.schedule import WorkItem, WorkKind
from xdsl.builder import Builder
from xdsl.dialects import arith, llvm, memref, scf, vector
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, VectorType
from xdsl.ir import Block, SSAValue
from xdsl.rewriter import InsertPoint

ADD, MUL = ops.CombinerKind.ADD, ops.CombinerKind.MUL

PACKED_BYTES = 1 << 20
"""The most stack a packed head takes (K and V packed, the rows' scores)."""

MIN_LANES = 4
"""V's width must be a multiple of this many lanes for the packed form."""

ROW_BLOCK = 4
"""The most queries a packed head computes together."""

ACCUMULATORS = 16
"""The most vectors of output rows a block carries across the keys (registers)."""

KEY_VECTORS = 2
"""Vectors of keys a block's scores take per step (with `ROW_BLOCK` queries, eight
independent multiply-add chains)."""


@dataclass(frozen=True)
class Packing:
    """The packed form's sizes (see the module docstring)."""

    heads: int
    """How many leading row dims are heads (the scores product's batch dims)."""
    depth: int
    """The contracting dim's size."""
    lanes: int
    """Keys per vector of scores."""
    padded: int
    """The keys padded to whole vectors."""
    width: int
    """V's free dim's size."""
    value_lanes: int
    """Lanes per vector of an output row."""
    rows: int
    """Queries per block."""

    @staticmethod
    def of(rows: AttentionRows) -> Packing | None:
        """The packed form's sizes for `rows`, or None where it does not apply."""
        element = element_type(rows.scores.result)
        bits = element.bitwidth  # type: ignore[attr-defined]
        heads = len(rows.scores.batching[0])
        _, _, value_free = rows.dims(rows.values, 1 - rows.side)
        p_batch, _, p_free = rows.dims(rows.values, rows.side)
        if (
            len(rows.contracting_shape) != 1
            or len(value_free) != 1
            or sorted(p_batch) != list(range(heads))
            or (rows.side == 1 and p_free)
        ):
            return None
        (depth,), (width,) = rows.contracting_shape, rows.value_shape
        lanes = REGISTER_BITS // bits
        padded = -(-rows.keys // lanes) * lanes
        value_lanes = power_of_two_block(width, lanes)
        count = width // value_lanes
        if value_lanes < MIN_LANES or count > ACCUMULATORS:
            return None
        queries = rows.row_shape[heads:]
        block = min(ROW_BLOCK, ACCUMULATORS // count) if queries else 1
        stack = (depth * padded + rows.keys * width + block * padded) * bits // 8
        if stack > PACKED_BYTES:
            return None
        return Packing(heads, depth, lanes, padded, width, value_lanes, block)


def attention_loops(ctx: KernelContext, b: Builder, item: WorkItem) -> None:
    """An attention work item (see the module docstring)."""
    rows = AttentionRows.of(item)
    packing = Packing.of(rows)
    if packing is not None:
        _packed(ctx, b, item, rows, packing)
    else:
        _row_by_row(ctx, b, item, rows)


def _packed(
    ctx: KernelContext, b: Builder, item: WorkItem, rows: AttentionRows, packing: Packing
) -> None:
    """The packed form (see the module docstring)."""
    element = element_type(rows.scores.result)
    shape = rows.row_shape
    heads, queries = shape[: packing.heads], shape[packing.heads :]
    per_head = _count(queries) * rows.keys * (packing.depth + packing.width)
    inner, head = ctx.parallel_nest(
        b, [ctx.index(n) for n in heads], parallel=len(heads), per_iteration=per_head
    )
    saved = emit(inner, llvm.StackSaveOp())
    kt = emit(inner, memref.AllocaOp.get(element, 64, [packing.depth, packing.padded]))
    vp = emit(inner, memref.AllocaOp.get(element, 64, [rows.keys, packing.width]))
    buffer = emit(inner, memref.AllocaOp.get(element, 64, [packing.rows, packing.padded]))

    # K transposed (zeros past the keys) and V, packed
    pack, (k, c) = ctx.stepped_loop_nest(
        inner, [ctx.index(rows.keys), ctx.index(packing.depth)], [1, 1]
    )
    key = _operand(ctx, pack, rows.key, rows.key_index(head, k, [c]), element)
    pack.insert(memref.StoreOp.get(key, kt, [c, k]))
    if packing.padded > rows.keys:
        pad, (c, k) = ctx.stepped_loop_nest(
            inner, [ctx.index(packing.depth), ctx.index(packing.padded - rows.keys)], [1, 1]
        )
        past = emit(pad, arith.AddiOp(k, ctx.index(rows.keys)))
        pad.insert(memref.StoreOp.get(combiner_identity(pad, ADD, element), kt, [c, past]))
    pack, (k, dv) = ctx.stepped_loop_nest(
        inner, [ctx.index(rows.keys), ctx.index(packing.width)], [1, 1]
    )
    value = _operand(ctx, pack, rows.value_operand, rows.value_index(head, k, [dv]), element)
    pack.insert(memref.StoreOp.get(value, vp, [k, dv]))

    def block(b: Builder, block_rows: list[list[SSAValue]]) -> None:
        _packed_scores(ctx, b, rows, packing, block_rows, kt, buffer)
        for r, row in enumerate(block_rows):
            _softmax(ctx, b, rows, row, buffer, ctx.index(r))
        _packed_output(ctx, b, item, rows, packing, block_rows, vp, buffer)

    _query_blocks(ctx, inner, list(head), queries, packing.rows, block)
    inner.insert(llvm.StackRestoreOp(saved))


def _query_blocks(
    ctx: KernelContext,
    b: Builder,
    head: list[SSAValue],
    queries: Sequence[int],
    size: int,
    block: Callable[[Builder, list[list[SSAValue]]], None],
) -> None:
    """`block` for each block of `size` consecutive queries along the last query dim (the
    others looped one by one), then for each query past the last whole block alone."""
    if not queries:
        block(b, [head])
        return
    outer, q = ctx.stepped_loop_nest(
        b, [ctx.index(n) for n in queries[:-1]], [1] * (len(queries) - 1)
    )
    last = queries[-1]
    whole = last - last % size
    if whole:
        _, body, i, _ = ctx.loop(outer, ctx.index(whole // size))
        first = emit(body, arith.MuliOp(i, ctx.index(size)))
        at = [first] + [emit(body, arith.AddiOp(first, ctx.index(r))) for r in range(1, size)]
        block(body, [[*head, *q, j] for j in at])
        body.insert(scf.YieldOp())
    if whole < last:
        loop = scf.ForOp(
            ctx.index(whole), ctx.index(last), ctx.index(1), [], Block(arg_types=[INDEX])
        )
        outer.insert(loop)
        body = Builder(InsertPoint.at_end(loop.body.block))
        block(body, [[*head, *q, loop.body.block.args[0]]])
        body.insert(scf.YieldOp())


def _packed_scores(
    ctx: KernelContext,
    b: Builder,
    rows: AttentionRows,
    packing: Packing,
    block_rows: Sequence[list[SSAValue]],
    kt: SSAValue,
    buffer: SSAValue,
) -> None:
    """The block's scores, `KEY_VECTORS` vectors of keys at a time (the last vector alone
    where their count is odd): per contracting step, each row's Q element broadcast times
    each vector of `kt`, added lane by lane."""
    element = element_type(rows.scores.result)
    t = VectorType(element, [packing.lanes])

    def scores_at(b: Builder, at: list[SSAValue]) -> None:  # the vectors of keys from `at`
        totals = _weighted_sums(
            ctx,
            b,
            t,
            packing.depth,
            len(at),
            lambda step, c: [emit(step, vector.LoadOp(kt, [c, a], t)) for a in at],
            [
                lambda step, c, row=row: _operand(
                    ctx, step, rows.query, rows.query_index(row, [c]), element
                )
                for row in block_rows
            ],
        )
        for r in range(len(block_rows)):
            for j, a in enumerate(at):
                b.insert(vector.StoreOp(totals[r * len(at) + j], buffer, [ctx.index(r), a]))

    vectors = packing.padded // packing.lanes
    span = packing.lanes * KEY_VECTORS
    if vectors >= KEY_VECTORS:
        _, keys, first, _ = ctx.loop(b, ctx.index(vectors // KEY_VECTORS))
        start = emit(keys, arith.MuliOp(first, ctx.index(span)))
        scores_at(
            keys,
            [start]
            + [
                emit(keys, arith.AddiOp(start, ctx.index(j * packing.lanes)))
                for j in range(1, KEY_VECTORS)
            ],
        )
        keys.insert(scf.YieldOp())
    if vectors % KEY_VECTORS:
        scores_at(b, [ctx.index((vectors - 1) * packing.lanes)])


def _weighted_sums(
    ctx: KernelContext,
    b: Builder,
    t: VectorType,
    extent: int,
    width: int,
    vectors: Callable[[Builder, SSAValue], list[SSAValue]],
    weights: Sequence[Callable[[Builder, SSAValue], SSAValue]],
) -> list[SSAValue]:
    """Over steps `0 .. extent`, each weight (one per row, broadcast) times each of the
    step's `width` vectors, added lane by lane from zero: the sums row by row, then vector
    by vector, carried through one `scf.for` (registers)."""
    zero = _zeros(b, t)
    count = len(weights) * width
    body = Block(arg_types=[INDEX, *[t] * count])
    loop = scf.ForOp(ctx.index(0), ctx.index(extent), ctx.index(1), [zero] * count, body)
    b.insert(loop)
    step = Builder(InsertPoint.at_end(body))
    i, *sums = body.args
    loaded = vectors(step, i)
    updated = []
    for r, weight_of in enumerate(weights):
        weight = emit(step, vector.BroadcastOp(weight_of(step, i), t))
        for j, row in enumerate(loaded):
            updated.append(emit(step, vector.FMAOp(weight, row, sums[r * len(loaded) + j])))
    step.insert(scf.YieldOp(*updated))
    return list(loop.results)


def _packed_output(
    ctx: KernelContext,
    b: Builder,
    item: WorkItem,
    rows: AttentionRows,
    packing: Packing,
    block_rows: Sequence[list[SSAValue]],
    vp: SSAValue,
    buffer: SSAValue,
) -> None:
    """The block's output rows in vectors carried across the keys (per key, each row's
    probability broadcast times each vector of V's packed row), stored, then their
    epilogue."""
    element = element_type(rows.scores.result)
    t = VectorType(element, [packing.value_lanes])
    vectors = packing.width // packing.value_lanes
    totals = _weighted_sums(
        ctx,
        b,
        t,
        rows.keys,
        vectors,
        lambda step, k: [
            emit(step, vector.LoadOp(vp, [k, ctx.index(j * packing.value_lanes)], t))
            for j in range(vectors)
        ],
        [
            lambda step, k, r=r: emit(step, memref.LoadOp.get(buffer, [ctx.index(r), k]))
            for r in range(len(block_rows))
        ],
    )
    target = ctx.memref_of(item.root.results[0])
    for r, row in enumerate(block_rows):
        for j in range(vectors):
            at = rows.output_index(row, [ctx.index(j * packing.value_lanes)])
            b.insert(vector.StoreOp(totals[r * vectors + j], target, at))
        _epilogue(ctx, b, item, rows, row)


def _row_by_row(ctx: KernelContext, b: Builder, item: WorkItem, rows: AttentionRows) -> None:
    """The row-by-row form (see the module docstring)."""
    element = element_type(rows.scores.result)
    acc_type = compute_type(element)
    keys = ctx.index(rows.keys)
    contracting = [ctx.index(n) for n in rows.contracting_shape]
    value_sizes = [ctx.index(n) for n in rows.value_shape]
    work = rows.keys * (_count(rows.contracting_shape) + _count(rows.value_shape))
    inner, row = ctx.parallel_nest(
        b, [ctx.index(n) for n in rows.row_shape], parallel=len(rows.row_shape), per_iteration=work
    )
    saved = emit(inner, llvm.StackSaveOp())
    buffer = emit(inner, memref.AllocaOp.get(element, 64, [1, rows.keys]))
    first = ctx.index(0)

    # the scores: one sum over the contracting dims per key
    _, body, k, _ = ctx.loop(inner, keys)

    def summed(builder: Builder, position: int, total: SSAValue, c: list) -> SSAValue:
        if position == len(contracting):
            x = _operand(ctx, builder, rows.query, rows.query_index(row, c), acc_type)
            y = _operand(ctx, builder, rows.key, rows.key_index(row, k, c), acc_type)
            return combine(builder, ADD, total, combine(builder, MUL, x, y), reassociate=True)
        loop, inside, iv, (carried,) = ctx.loop(builder, contracting[position], [total])
        inside.insert(scf.YieldOp(summed(inside, position + 1, carried, [*c, iv])))
        return loop.results[0]

    total = summed(body, 0, combiner_identity(body, ADD, acc_type), [])
    body.insert(memref.StoreOp.get(narrow(body, total, element), buffer, [first, k]))
    body.insert(scf.YieldOp())

    _softmax(ctx, inner, rows, row, buffer, first)

    # the output row: zeroed, then probability times value, key after key, in place
    target = ctx.memref_of(item.root.results[0])
    zero_body, dv = ctx.stepped_loop_nest(inner, value_sizes, [1] * len(value_sizes))
    zero = combiner_identity(zero_body, ADD, acc_type)
    ctx.store(zero_body, narrow(zero_body, zero, element), target, rows.output_index(row, dv))
    _, body, k, _ = ctx.loop(inner, keys)
    weight = extend(body, emit(body, memref.LoadOp.get(buffer, [first, k])), element, acc_type)
    each, dv = ctx.stepped_loop_nest(body, value_sizes, [1] * len(value_sizes))
    at = rows.output_index(row, dv)
    v = _operand(ctx, each, rows.value_operand, rows.value_index(row, k, dv), acc_type)
    sum_so_far = extend(each, emit(each, memref.LoadOp.get(target, at)), element, acc_type)
    updated = combine(each, ADD, sum_so_far, combine(each, MUL, weight, v))
    ctx.store(each, narrow(each, updated, element), target, at)
    body.insert(scf.YieldOp())
    _epilogue(ctx, inner, item, rows, row)
    inner.insert(llvm.StackRestoreOp(saved))


def _softmax(
    ctx: KernelContext,
    b: Builder,
    rows: AttentionRows,
    row: Sequence[SSAValue],
    buffer: SSAValue,
    r: SSAValue,
) -> None:
    """Row `row`'s reductions, in program order, then its probabilities in place of its
    scores in `buffer[r]`."""
    reduced: dict[SSAValue, SSAValue] = {}

    def load(builder: Builder, value: SSAValue, indices: Sequence[SSAValue]) -> SSAValue:
        if value is rows.scores.result:  # read at [row, k] only (attention_chain)
            return emit(builder, memref.LoadOp.get(buffer, [r, indices[-1]]))
        if value in reduced:  # read at the row only
            return reduced[value]
        return ctx.load(builder, value, indices)

    group = FusedGroup(rows.evaluated, load, ctx.sizes, ctx.splat)
    keys = ctx.index(rows.keys)
    for reduction in rows.reductions:
        reduced_type = element_type(reduction.result)
        kind = reduction.kind.data
        unsigned = is_unsigned(reduced_type)
        start = ctx.identity(kind, compute_type(reduced_type), unsigned)
        loop, body, k, (acc,) = ctx.loop(b, keys, [start])
        x = group.evaluate(body, reduction.operand, [*row, k])
        x = extend(body, x, reduced_type, compute_type(reduced_type))
        body.insert(scf.YieldOp(combine(body, kind, acc, x, reassociate=True, unsigned=unsigned)))
        reduced[reduction.result] = narrow(b, loop.results[0], reduced_type)
    _, body, k, _ = ctx.loop(b, keys)
    p = group.evaluate(body, rows.probabilities, [*row, k])
    body.insert(memref.StoreOp.get(p, buffer, [r, k]))
    body.insert(scf.YieldOp())


def _epilogue(
    ctx: KernelContext, b: Builder, item: WorkItem, rows: AttentionRows, row: Sequence[SSAValue]
) -> None:
    """Replace each element of the output row by its epilogue's value, if any."""
    if item.root is rows.values:
        return
    target = ctx.memref_of(item.root.results[0])
    sizes = [ctx.index(n) for n in rows.value_shape]
    each, dv = ctx.stepped_loop_nest(b, sizes, [1] * len(sizes))
    at = rows.output_index(row, dv)
    known = {rows.values.result: emit(each, memref.LoadOp.get(target, at))}
    ctx.store(each, ctx.group(item).evaluate(each, item.root.results[0], at, known), target, at)


def _operand(ctx: KernelContext, b: Builder, source: SSAValue, indices, t) -> SSAValue:
    """An element of a product's operand `source` in type `t`."""
    return extend(b, ctx.load(b, source, indices), element_type(source), t)


def _zeros(b: Builder, t: VectorType) -> SSAValue:
    return emit(b, arith.ConstantOp(DenseIntOrFPElementsAttr.from_list(t, [0.0])))


def _count(sizes: Sequence[int]) -> int:
    count = 1
    for size in sizes:
        count *= size
    return count


class AttentionLoops(CpuKernelPattern):
    """`attention` kernels, their scores on the stack; see `attention_loops`."""

    def matches(self, kernel: PlannedKernel) -> bool:
        return kernel.kind is WorkKind.ATTENTION

    def emit(self, b: Builder, ctx: KernelContext) -> None:
        attention_loops(ctx, b, ctx.kernel)
