"""CUDA kernels of the reduction and scan families (see `accy/families/*.toml`).

A reduction folds the reduced dims of its operand (any set of dims, not only the last):
each *row* is one element of the result (the kept dims, row-major) and its *width* is the
number of reduced elements. A scan runs along one dim: each row is one position of the
other dims. Accumulation happens in the compute type (`f32` for `f16`/`bf16`).

- `reduce.row`: one block per row; threads stride over the row, then a shared-memory
  tree folds the block's values.
- `reduce.split` (two launches): phase 1 runs `sm_count * 8` blocks, block `b` folding
  slice `b` of every row into the `partials` workspace (one 4-byte accumulator per row and
  block); phase 2 folds each row's partials (one block per row).
- `scan.block`: one block per row walks the row in chunks of its block size; each chunk
  is scanned in shared memory (Hillis-Steele) and offset by the running carry.
- `scan.multiblock` (three launches): each 1024-element tile is scanned by its own block,
  which stores the tile's total in the `carries` workspace; the carries of each row are
  scanned in place; each tile then adds the carry of the tiles before it.

In both reduction families a float sum's threads add their strided elements in blocks
(`fold_row_range`: at most `THREAD_LEAF` elements per accumulator, then at most
`THREAD_FAN` partials per level), a block's values through a tree and the split's
partials in short strided chains, so its rounding error grows with the logarithm of the
row's width, not with the width.

Workspaces hold accumulators of the families' `accumulator` bytes: the compute type where
it is 4 or 8 bytes (`f32`, `f64`, `i32`, `i64`), `i32` for narrower integers and `i1`.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from accy.dialects import accy as ops
from accy.passes.element_types import compute_type, int_width, is_float, is_unsigned
from accy.passes.families import reduce_split, scan_multiblock
from accy.passes.families.reduce_split import SPLIT_BLOCKS_PER_SM
from accy.passes.lower import cuda_ir as ir
from accy.passes.lower.cuda_kernels import (
    Kernel,
    KernelContext,
    KernelProgram,
    gather_indices,
    static_indices,
    static_shape,
)
from accy.passes.lower.planned_kernel import PlannedKernel
from accy.passes.lower.scalar import (
    blocked_steps,
    combine,
    combiner_identity,
    element_type,
    emit,
    narrow,
    widen,
)
from accy.passes.shared_memory import REDUCE_BLOCK, SCAN_TILE, scan_block_size
from xdsl.builder import Builder
from xdsl.dialects import arith
from xdsl.dialects.builtin import i32
from xdsl.ir import Attribute, SSAValue

from accy.dtypes import byte_width

THREAD_LEAF = 64
"""A thread's innermost reduction loop folds at most this many of its elements (every
`REDUCE_BLOCK`-th of the row) into a fresh accumulator (see `fold_row_range`)."""

THREAD_FAN = 16
"""Each loop above a thread's innermost one folds at most this many partials."""


# ---------------------------------------------------------------------------------------
# Shared pieces
# ---------------------------------------------------------------------------------------


def tree_fold(
    b: Builder,
    shared: SSAValue,
    thread: SSAValue,
    threads: int,
    kind: ops.CombinerKind,
    value: SSAValue,
    unsigned: bool = False,
) -> SSAValue:
    """Fold one value per thread of the block into one, through a shared-memory tree
    (`threads` a power of two); every thread gets the result. `unsigned`: integer
    max/min compare as unsigned."""
    ir.store(b, value, shared, [thread])
    ir.barrier(b)
    stride = threads // 2
    while stride:

        def step(inner: Builder, stride: int = stride) -> None:
            mine = ir.load(inner, shared, [thread])
            other = ir.load(inner, shared, [ir.add(inner, thread, stride)])
            ir.store(inner, combine(inner, kind, mine, other, unsigned=unsigned), shared, [thread])

        ir.if_then(b, ir.less(b, thread, stride), step)
        ir.barrier(b)
        stride //= 2
    result = ir.load(b, shared, [ir.index(b, 0)])
    ir.barrier(b)  # every thread has read the result before the array is reused
    return result


def round_to(b: Builder, value: SSAValue, rounding: Attribute | None) -> SSAValue:
    """`value` rounded to the element type `rounding` and widened back (None: unchanged)."""
    return value if rounding is None else widen(b, narrow(b, value, rounding))


def block_scan(
    b: Builder,
    shared: SSAValue,
    thread: SSAValue,
    threads: int,
    kind: ops.CombinerKind,
    value: SSAValue,
    unsigned: bool = False,
    rounding: Attribute | None = None,
) -> tuple[SSAValue, SSAValue]:
    """Inclusive scan of one value per thread (Hillis-Steele in shared memory): the
    thread's prefix and the block's total. Ends with a barrier. `rounding`: an element
    type every combined value is rounded to (a `rounded` scan)."""
    ir.store(b, value, shared, [thread])
    ir.barrier(b)
    identity = combiner_identity(b, kind, value.type, unsigned=unsigned)
    offset = 1
    while offset < threads:
        mine = ir.load(b, shared, [thread])
        earlier = ir.select_if(
            b,
            ir.less(b, thread, offset),
            lambda inner: identity,
            lambda inner, offset=offset: ir.load(inner, shared, [ir.sub(inner, thread, offset)]),
        )
        ir.barrier(b)
        combined = round_to(b, combine(b, kind, earlier, mine, unsigned=unsigned), rounding)
        ir.store(b, combined, shared, [thread])
        ir.barrier(b)
        offset *= 2
    prefix = ir.load(b, shared, [thread])
    total = ir.load(b, shared, [ir.index(b, threads - 1)])
    ir.barrier(b)
    return prefix, total


def partial_type(element: Attribute) -> Attribute:
    """The accumulator a workspace slot holds for `element` (the families' `accumulator`
    bytes): its compute type where that is 4 or 8 bytes (f32, f64, i32, i64), i32 for
    narrower integers and i1."""
    compute = compute_type(element)
    if is_float(compute) or int_width(compute) >= 32:
        return compute
    return i32


def to_partial(b: Builder, value: SSAValue) -> SSAValue:
    """A compute-type value as its workspace accumulator (narrow integers zero-extended:
    `from_partial` truncates them back, so the extension does not matter)."""
    if not is_float(value.type) and int_width(value.type) < 32:
        return emit(b, arith.ExtUIOp(value, i32))
    return value


def from_partial(b: Builder, value: SSAValue, compute: Attribute) -> SSAValue:
    """A workspace accumulator back in the compute type."""
    if not is_float(compute) and int_width(compute) < 32:
        return emit(b, arith.TruncIOp(value, compute))
    return value


def workspace_view(b: Builder, kernel: Kernel, term, element: Attribute) -> SSAValue:
    """The whole workspace buffer as a 1-D memref of `element`s."""
    count = term.bytes // byte_width(element)
    return ir.view(b, kernel.workspace(term), 0, ir.memref_type(element, [count]))


class ReductionShape:
    """Rows (kept dims) and width (reduced dims) of an `accy.reduce`."""

    def __init__(self, op: ops.ReduceOp):
        self.op = op
        shape = static_shape(op.operand)
        self.rank = len(shape)
        self.reduced_dims = sorted(int(d) for d in op.dimensions.get_values())
        self.kept_shape = [s for d, s in enumerate(shape) if d not in self.reduced_dims]
        self.reduced_shape = [shape[d] for d in self.reduced_dims]
        self.rows = int(np.prod(self.kept_shape, dtype=np.int64))
        self.width = int(np.prod(self.reduced_shape, dtype=np.int64))
        self.kind = op.kind.data
        self.element = element_type(op.result)
        self.compute = compute_type(self.element)
        self.unsigned = is_unsigned(self.element)

    def operand_indices(self, b: Builder, row: list[SSAValue], position: SSAValue):
        inner = static_indices(b, position, self.reduced_shape)
        return gather_indices(row, inner, self.reduced_dims, self.rank)


def fold_row_range(
    b: Builder,
    kernel: Kernel,
    item: PlannedKernel,
    shape: ReductionShape,
    row: list[SSAValue],
    begin: SSAValue,
    end: SSAValue | int,
    extent: int,
) -> SSAValue:
    """This thread's fold of the row's elements `begin, begin + REDUCE_BLOCK, ... < end`
    (at most `extent` of them), each computed through the item's fused prologue. A float
    sum folds them in the blocked loops of `blocked_steps(extent, THREAD_LEAF,
    THREAD_FAN)` (in units of `REDUCE_BLOCK` positions), so no chain of adds is longer
    than `THREAD_LEAF`, however long the row; other kinds in one loop, as on the CPU
    (their results do not depend on the order; a product's rounding error barely does)."""
    group = kernel.fused(item)

    def element(inner: Builder, position: SSAValue, carried) -> list[SSAValue]:
        indices = shape.operand_indices(inner, row, position)
        value = widen(inner, kernel.evaluate(inner, group, shape.op.operand, indices))
        return [combine(inner, shape.kind, carried[0], value, unsigned=shape.unsigned)]

    def fold(inner: Builder, lower: SSAValue, upper: SSAValue | int, steps: list[int]):
        identity = combiner_identity(inner, shape.kind, shape.compute, unsigned=shape.unsigned)
        if not steps:
            return ir.for_range(inner, lower, upper, REDUCE_BLOCK, element, [identity])[0]

        def block(body: Builder, start: SSAValue, carried) -> list[SSAValue]:
            stop = ir.minimum(body, ir.add(body, start, steps[0]), upper)
            partial = fold(body, start, stop, steps[1:])
            return [combine(body, shape.kind, carried[0], partial, unsigned=shape.unsigned)]

        return ir.for_range(inner, lower, upper, steps[0], block, [identity])[0]

    steps = []
    if shape.kind == ops.CombinerKind.ADD and is_float(shape.compute):
        steps = [s * REDUCE_BLOCK for s in blocked_steps(extent, THREAD_LEAF, THREAD_FAN)]
    return fold(b, begin, end, steps)


# ---------------------------------------------------------------------------------------
# Reductions
# ---------------------------------------------------------------------------------------


def row_reduce_kernel(context: KernelContext, item: PlannedKernel) -> KernelProgram:
    """`reduce.row`: block `r` folds row `r`; its threads stride over the row and a
    shared-memory tree folds their values; thread 0 stores the row's result."""
    op = item.root
    assert isinstance(op, ops.ReduceOp)
    shape = ReductionShape(op)
    kernel = context.kernel(item, "reduce_row", reads=item.inputs, writes=[op.result])
    b = kernel.builder
    shared = kernel.shared(shape.compute, REDUCE_BLOCK)
    row_id, thread = ir.block_id(b), ir.thread_id(b)
    row = static_indices(b, row_id, shape.kept_shape)
    extent = ir.ceil_div(shape.width, REDUCE_BLOCK)
    mine = fold_row_range(b, kernel, item, shape, row, thread, shape.width, extent)
    total = tree_fold(b, shared, thread, REDUCE_BLOCK, shape.kind, mine, shape.unsigned)
    ir.if_then(
        b,
        ir.equal(b, thread, 0),
        lambda inner: kernel.store(inner, narrow(inner, total, shape.element), op.result, row),
    )
    if shape.rows == 0:
        return KernelProgram(())
    return KernelProgram((kernel.launch([shape.rows], [REDUCE_BLOCK]),))


def split_reduce_kernel(context: KernelContext, item: PlannedKernel) -> KernelProgram:
    """`reduce.split`: phase 1 (`sm_count * 8` blocks) folds slice `b` of every row into
    `partials[row, b]`; phase 2 (one block per row) folds the row's partials in order."""
    op = item.root
    assert isinstance(op, ops.ReduceOp)
    shape = ReductionShape(op)
    blocks = context.sm_count * SPLIT_BLOCKS_PER_SM
    stored = partial_type(shape.element)
    term = context.workspace_of(
        item, reduce_split.WORKSPACE, shape.rows * blocks * byte_width(stored)
    )
    slice_width = ir.ceil_div(shape.width, blocks)
    extent = ir.ceil_div(slice_width, REDUCE_BLOCK)

    # Phase 1: slices of every row.
    first = context.kernel(item, "reduce_split_partials", reads=item.inputs, workspaces=[term])
    b = first.builder
    shared = first.shared(shape.compute, REDUCE_BLOCK)
    partials = workspace_view(b, first, term, stored)
    block, thread = ir.block_id(b), ir.thread_id(b)
    begin = ir.mul(b, block, slice_width)
    end = ir.minimum(b, ir.add(b, begin, slice_width), shape.width)

    def fold_row(inner: Builder, row_id: SSAValue, _carried) -> list[SSAValue]:
        row = static_indices(inner, row_id, shape.kept_shape)
        start = ir.add(inner, begin, thread)
        mine = fold_row_range(inner, first, item, shape, row, start, end, extent)
        total = tree_fold(inner, shared, thread, REDUCE_BLOCK, shape.kind, mine, shape.unsigned)
        slot = ir.add(inner, ir.mul(inner, row_id, blocks), block)
        ir.if_then(
            inner,
            ir.equal(inner, thread, 0),
            lambda leader: ir.store(leader, to_partial(leader, total), partials, [slot]),
        )
        return []

    ir.for_range(b, 0, shape.rows, 1, fold_row)
    phase1 = first.launch([blocks], [REDUCE_BLOCK])

    # Phase 2: each row's partials.
    second = context.kernel(item, "reduce_split_fold", writes=[op.result], workspaces=[term])
    b = second.builder
    shared = second.shared(shape.compute, REDUCE_BLOCK)
    partials = workspace_view(b, second, term, stored)
    row_id, thread = ir.block_id(b), ir.thread_id(b)
    row_base = ir.mul(b, row_id, blocks)

    def fold_partials(inner: Builder, j: SSAValue, carried) -> list[SSAValue]:
        value = ir.load(inner, partials, [ir.add(inner, row_base, j)])
        partial = from_partial(inner, value, shape.compute)
        return [combine(inner, shape.kind, carried[0], partial, unsigned=shape.unsigned)]

    identity = combiner_identity(b, shape.kind, shape.compute, unsigned=shape.unsigned)
    mine = ir.for_range(b, thread, blocks, REDUCE_BLOCK, fold_partials, [identity])[0]
    total = tree_fold(b, shared, thread, REDUCE_BLOCK, shape.kind, mine, shape.unsigned)
    row = static_indices(b, row_id, shape.kept_shape)
    ir.if_then(
        b,
        ir.equal(b, thread, 0),
        lambda inner: second.store(inner, narrow(inner, total, shape.element), op.result, row),
    )
    if shape.rows == 0:
        return KernelProgram(())
    return KernelProgram((phase1, second.launch([shape.rows], [REDUCE_BLOCK])))


# ---------------------------------------------------------------------------------------
# Scans
# ---------------------------------------------------------------------------------------


class ScanShape:
    """Rows (every dim but the scanned one) and width (the scanned dim) of `accy.scan`."""

    def __init__(self, op: ops.ScanOp):
        self.op = op
        shape = static_shape(op.operand)
        self.rank = len(shape)
        self.dim = op.dimension.value.data
        self.outer_shape = [s for d, s in enumerate(shape) if d != self.dim]
        self.rows = int(np.prod(self.outer_shape, dtype=np.int64))
        self.width = shape[self.dim]
        self.kind = op.kind.data
        self.element = element_type(op.result)
        self.compute = compute_type(self.element)
        self.unsigned = is_unsigned(self.element)
        self.rounding = self.element if op.rounded is not None else None
        """The element type every step rounds to (a `rounded` scan), else None."""

    def indices(self, row: list[SSAValue], position: SSAValue) -> list[SSAValue]:
        return gather_indices(row, [position], [self.dim], self.rank)


Read = Callable[[Builder, SSAValue], SSAValue]
Write = Callable[[Builder, SSAValue, SSAValue], None]


def scan_row_in_chunks(
    b: Builder,
    shared: SSAValue,
    thread: SSAValue,
    threads: int,
    kind: ops.CombinerKind,
    compute: Attribute,
    width: int,
    read: Read,
    write: Write,
    unsigned: bool = False,
    rounding: Attribute | None = None,
) -> None:
    """Scan positions `0 .. width` of one row with one block: chunk by chunk of
    `threads` positions, each chunk's prefix offset by the carry of the chunks before.
    `read(b, j)` gives position `j` in the compute type; `write(b, j, value)` stores it."""

    def chunk(inner: Builder, start: SSAValue, carried) -> list[SSAValue]:
        position = ir.add(inner, start, thread)
        inside = ir.less(inner, position, width)
        identity = combiner_identity(inner, kind, compute, unsigned=unsigned)
        value = ir.select_if(inner, inside, lambda i: read(i, position), lambda i: identity)
        prefix, total = block_scan(inner, shared, thread, threads, kind, value, unsigned, rounding)
        result = combine(inner, kind, carried[0], prefix, unsigned=unsigned)
        result = round_to(inner, result, rounding)
        ir.if_then(inner, inside, lambda i: write(i, position, result))
        carry = combine(inner, kind, carried[0], total, unsigned=unsigned)
        return [round_to(inner, carry, rounding)]

    identity = combiner_identity(b, kind, compute, unsigned=unsigned)
    ir.for_range(b, 0, width, threads, chunk, [identity])


def block_scan_kernel(context: KernelContext, item: PlannedKernel) -> KernelProgram:
    """`scan.block`: block `r` scans row `r` in chunks of its block size (at most 1024
    threads), writing into the scan's output buffer (its scratch operand's slot)."""
    op = item.root
    assert isinstance(op, ops.ScanOp)
    shape = ScanShape(op)
    threads = scan_block_size(shape.width)
    kernel = context.kernel(item, "scan_block", reads=[op.operand], writes=[op.result])
    b = kernel.builder
    shared = kernel.shared(shape.compute, threads)
    row_id, thread = ir.block_id(b), ir.thread_id(b)
    row = static_indices(b, row_id, shape.outer_shape)

    def read(inner: Builder, j: SSAValue) -> SSAValue:
        return widen(inner, kernel.load(inner, op.operand, shape.indices(row, j)))

    def write(inner: Builder, j: SSAValue, value: SSAValue) -> None:
        kernel.store(inner, narrow(inner, value, shape.element), op.result, shape.indices(row, j))

    scan_row_in_chunks(
        b,
        shared,
        thread,
        threads,
        shape.kind,
        shape.compute,
        shape.width,
        read,
        write,
        shape.unsigned,
        shape.rounding,
    )
    if shape.rows == 0:
        return KernelProgram(())
    return KernelProgram((kernel.launch([shape.rows], [threads]),))


def multiblock_scan_kernel(context: KernelContext, item: PlannedKernel) -> KernelProgram:
    """`scan.multiblock`: (1) one block per 1024-element tile scans it and stores its total
    in `carries[row, tile]`; (2) one block per row scans the row's carries in place;
    (3) every tile but the first adds the carry of the tiles before it."""
    op = item.root
    assert isinstance(op, ops.ScanOp)
    shape = ScanShape(op)
    tiles = ir.ceil_div(shape.width, SCAN_TILE)
    stored = partial_type(shape.element)
    term = context.workspace_of(
        item, scan_multiblock.WORKSPACE, tiles * shape.rows * byte_width(stored)
    )
    if shape.rows == 0 or tiles == 0:
        return KernelProgram(())

    def tile_position(b: Builder) -> tuple[list[SSAValue], SSAValue, SSAValue, SSAValue]:
        """Row indices, tile, position in the row and carry slot of this thread."""
        block, thread = ir.block_id(b), ir.thread_id(b)
        row_id = emit(b, arith.DivUIOp(block, ir.index(b, tiles)))
        tile = emit(b, arith.RemUIOp(block, ir.index(b, tiles)))
        position = ir.add(b, ir.mul(b, tile, SCAN_TILE), thread)
        return static_indices(b, row_id, shape.outer_shape), tile, position, block

    # Phase 1: scan each tile, keep its total.
    first = context.kernel(
        item, "scan_tiles", reads=[op.operand], writes=[op.result], workspaces=[term]
    )
    b = first.builder
    shared = first.shared(shape.compute, SCAN_TILE)
    carries = workspace_view(b, first, term, stored)
    thread = ir.thread_id(b)
    row, tile, position, carry_slot = tile_position(b)
    inside = ir.less(b, position, shape.width)
    identity = combiner_identity(b, shape.kind, shape.compute, unsigned=shape.unsigned)
    value = ir.select_if(
        b,
        inside,
        lambda i: widen(i, first.load(i, op.operand, shape.indices(row, position))),
        lambda i: identity,
    )
    prefix, total = block_scan(
        b, shared, thread, SCAN_TILE, shape.kind, value, shape.unsigned, shape.rounding
    )
    ir.if_then(
        b,
        inside,
        lambda i: first.store(
            i, narrow(i, prefix, shape.element), op.result, shape.indices(row, position)
        ),
    )
    ir.if_then(
        b,
        ir.equal(b, thread, 0),
        lambda i: ir.store(i, to_partial(i, total), carries, [carry_slot]),
    )
    phase1 = first.launch([shape.rows * tiles], [SCAN_TILE])

    # Phase 2: scan each row's carries in place.
    second = context.kernel(item, "scan_carries", workspaces=[term])
    b = second.builder
    threads = scan_block_size(tiles)
    shared = second.shared(shape.compute, threads)
    carries = workspace_view(b, second, term, stored)
    row_base = ir.mul(b, ir.block_id(b), tiles)
    scan_row_in_chunks(
        b,
        shared,
        ir.thread_id(b),
        threads,
        shape.kind,
        shape.compute,
        tiles,
        lambda i, j: from_partial(i, ir.load(i, carries, [ir.add(i, row_base, j)]), shape.compute),
        lambda i, j, v: ir.store(i, to_partial(i, v), carries, [ir.add(i, row_base, j)]),
        shape.unsigned,
        shape.rounding,
    )
    phase2 = second.launch([shape.rows], [threads])

    # Phase 3: add the carry of the preceding tiles.
    third = context.kernel(item, "scan_add_carries", writes=[op.result], workspaces=[term])
    b = third.builder
    carries = workspace_view(b, third, term, stored)
    row, tile, position, carry_slot = tile_position(b)
    needs_carry = emit(
        b, arith.AndIOp(ir.less(b, position, shape.width), ir.less(b, ir.index(b, 0), tile))
    )

    def add_carry(inner: Builder) -> None:
        indices = shape.indices(row, position)
        carry = from_partial(
            inner, ir.load(inner, carries, [ir.sub(inner, carry_slot, 1)]), shape.compute
        )
        mine = widen(inner, third.load(inner, op.result, indices))
        result = combine(inner, shape.kind, carry, mine, unsigned=shape.unsigned)
        third.store(inner, narrow(inner, result, shape.element), op.result, indices)

    ir.if_then(b, needs_carry, add_carry)
    phase3 = third.launch([shape.rows * tiles], [SCAN_TILE])
    return KernelProgram((phase1, phase2, phase3))
