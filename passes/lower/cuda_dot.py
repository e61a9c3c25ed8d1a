"""CUDA kernels of the contraction families (`accy/families/dot.toml`,
`accy/families/convolutions.toml`).

Any `accy.dot_general` is seen as a batched `M x K` by `K x N` product: the batch dims,
the lhs free dims (M), the contracting dims (K) and the rhs free dims (N) are each
linearized row-major, so the result's row-major index is `(batch * M + m) * N + n`.
Products accumulate in the compute type (`f32` for `f16`/`bf16`; `i1`: AND then OR).

Both families stage operand tiles in shared memory (address space 3, `device_shared`):
a block of 16 x 16 threads walks the contraction in steps of 16, each step loading one
16 x 16 tile of each operand into shared memory and accumulating from there.

- `dot.tiled`: one block per 16 x 16 output tile walks the whole contraction.
- `convolution.tiled`: `dot.tiled` over a convolution's implicit product (the input read
  in place at each window position; see `ConvolutionContraction`).
- `dot.splitk`: the host loops over 128 x 128 output tiles; per tile, phase 1 runs
  `sm_count` blocks, block `g` accumulating contraction slice `g` of the tile into its own
  slot of the `partials` workspace (`sm_count * 128 * 128` accumulators of the compute
  type), and phase 2 adds the slots in block order (deterministic) into the result.
"""

from __future__ import annotations

import numpy as np
from accy.dialects import accy as ops
from accy.passes.element_types import compute_type
from accy.passes.families import dot_splitk
from accy.passes.families.dot_splitk import SPLITK_TILE
from accy.passes.fusion import dot_operand_source
from accy.passes.lower import cuda_ir as ir
from accy.passes.lower import indexing
from accy.passes.lower.cuda_kernels import (
    Kernel,
    KernelContext,
    KernelProgram,
    linear_thread,
    static_indices,
    static_shape,
)
from accy.passes.lower.cuda_reductions import (
    from_partial,
    partial_type,
    to_partial,
    workspace_view,
)
from accy.passes.lower.indexing import FusedGroup
from accy.passes.lower.planned_kernel import PlannedKernel
from accy.passes.lower.scalar import combine, combiner_identity, element_type, emit, extend, narrow
from accy.passes.shared_memory import DOT_TILE
from xdsl.builder import Builder
from xdsl.dialects import arith
from xdsl.ir import SSAValue

from accy.dtypes import byte_width

TILE = DOT_TILE
"""Threads per block side and contraction step of the shared-memory tiles."""


ADD, MUL = ops.CombinerKind.ADD, ops.CombinerKind.MUL


def _product(sizes) -> int:
    return int(np.prod(sizes, dtype=np.int64))


class Contraction:
    """A `dot_general` as a batched `M x K` by `K x N` product."""

    def __init__(self, op: ops.DotGeneralOp):
        self.op = op
        lhs, rhs = static_shape(op.lhs), static_shape(op.rhs)
        (lb, rb), (lc, rc) = op.batching, op.contracting
        l_free = [d for d in range(len(lhs)) if d not in lb and d not in lc]
        r_free = [d for d in range(len(rhs)) if d not in rb and d not in rc]
        self.lhs_groups = (list(lb), l_free, list(lc))  # batch, m, k
        self.rhs_groups = (list(rb), list(rc), r_free)  # batch, k, n
        self.lhs_shape, self.rhs_shape = lhs, rhs
        self.lhs, self.rhs = dot_operand_source(op.lhs), dot_operand_source(op.rhs)
        """The values loaded: an operand's narrower source when its convert is fused."""
        self.batch = _product([lhs[d] for d in lb])
        self.m = _product([lhs[d] for d in l_free])
        self.k = _product([lhs[d] for d in lc])
        self.n = _product([rhs[d] for d in r_free])
        self.element = element_type(op.result)
        self.compute = compute_type(self.element)
        self.result_shape = static_shape(op.result)

    @staticmethod
    def _indices(b: Builder, shape, groups, linears) -> list[SSAValue]:
        indices: list[SSAValue | None] = [None] * len(shape)
        for dims, linear in zip(groups, linears):
            for d, index in zip(dims, static_indices(b, linear, [shape[d] for d in dims])):
                indices[d] = index
        return indices  # type: ignore[return-value]

    def lhs_element(self, b: Builder, kernel: Kernel, batch, m, k) -> SSAValue:
        indices = self._indices(b, self.lhs_shape, self.lhs_groups, (batch, m, k))
        loaded = kernel.load(b, self.lhs, indices)
        return extend(b, loaded, element_type(self.lhs), self.compute)

    def rhs_element(self, b: Builder, kernel: Kernel, batch, k, n) -> SSAValue:
        indices = self._indices(b, self.rhs_shape, self.rhs_groups, (batch, k, n))
        loaded = kernel.load(b, self.rhs, indices)
        return extend(b, loaded, element_type(self.rhs), self.compute)

    def store(
        self,
        b: Builder,
        kernel: Kernel,
        value: SSAValue,
        batch,
        m,
        n,
        epilogue: tuple[FusedGroup, SSAValue] | None = None,
    ) -> None:
        """Store the sum of (batch, m, n); with an `epilogue` (the fused group and its
        result), the epilogue's value there instead."""
        linear = ir.add(b, ir.mul(b, ir.add(b, ir.mul(b, batch, self.m), m), self.n), n)
        indices = static_indices(b, linear, self.result_shape)
        element = narrow(b, value, self.element)
        if epilogue is None:
            kernel.store(b, element, self.op.result, indices)
            return
        fused, result = epilogue
        known = {self.op.result: element}
        kernel.store(b, kernel.evaluate(b, fused, result, indices, known), result, indices)


def _epilogue(kernel: Kernel, item: PlannedKernel) -> tuple[FusedGroup, SSAValue] | None:
    """A contraction kernel's epilogue: its fused group and result, or None when the
    item's root is the product itself."""
    if item.root is item.contraction:
        return None
    return kernel.fused(item), item.root.results[0]


def _both(b: Builder, first: SSAValue, second: SSAValue) -> SSAValue:
    return emit(b, arith.AndIOp(first, second))


def accumulate_tile(
    b: Builder,
    kernel: Kernel,
    contraction: Contraction,
    tiles: tuple[SSAValue, SSAValue],
    threads: tuple[SSAValue, SSAValue],
    batch: SSAValue,
    m: SSAValue,
    n: SSAValue,
    k_begin: SSAValue | int,
    k_end: SSAValue | int,
) -> SSAValue:
    """This thread's sum over `k_begin <= k < k_end` of `lhs[m, k] * rhs[k, n]`, staged
    through the shared tiles `(lhs_tile, rhs_tile)` (16 x 16 each) with every thread of
    the block taking part (the bounds must be the same for the whole block). The block's
    threads `(tx, ty)` load `lhs[m0 + ty, k + tx]` and `rhs[k + ty, n0 + tx]`; elements
    out of range are 0."""
    lhs_tile, rhs_tile = tiles
    tx, ty = threads
    end = ir.index(b, k_end) if isinstance(k_end, int) else k_end
    zero = combiner_identity(b, ADD, contraction.compute)
    slot = ir.add(b, ir.mul(b, ty, TILE), tx)

    def step(inner: Builder, k0: SSAValue, carried) -> list[SSAValue]:
        k_lhs, k_rhs = ir.add(inner, k0, tx), ir.add(inner, k0, ty)
        lhs_inside = _both(inner, ir.less(inner, m, contraction.m), ir.less(inner, k_lhs, end))
        rhs_inside = _both(inner, ir.less(inner, n, contraction.n), ir.less(inner, k_rhs, end))
        lhs_value = ir.select_if(
            inner,
            lhs_inside,
            lambda i: contraction.lhs_element(i, kernel, batch, m, k_lhs),
            lambda i: zero,
        )
        rhs_value = ir.select_if(
            inner,
            rhs_inside,
            lambda i: contraction.rhs_element(i, kernel, batch, k_rhs, n),
            lambda i: zero,
        )
        ir.store(inner, lhs_value, lhs_tile, [slot])
        ir.store(inner, rhs_value, rhs_tile, [slot])
        ir.barrier(inner)

        def multiply_add(i: Builder, kk: SSAValue, acc) -> list[SSAValue]:
            a = ir.load(i, lhs_tile, [ir.add(i, ir.mul(i, ty, TILE), kk)])
            c = ir.load(i, rhs_tile, [ir.add(i, ir.mul(i, kk, TILE), tx)])
            return [combine(i, ADD, acc[0], combine(i, MUL, a, c))]

        total = ir.for_range(inner, 0, TILE, 1, multiply_add, [carried[0]])[0]
        ir.barrier(inner)
        return [total]

    return ir.for_range(b, k_begin, end, TILE, step, [zero])[0]


def _tile_memory(kernel: Kernel, contraction: Contraction) -> tuple[SSAValue, SSAValue]:
    return (
        kernel.shared(contraction.compute, TILE * TILE),
        kernel.shared(contraction.compute, TILE * TILE),
    )


def tiled_dot_kernel(context: KernelContext, item: PlannedKernel) -> KernelProgram:
    """`dot.tiled`: block `(x, y, z)` computes output tile `(m0, n0) = (16 y, 16 x)` of
    batch `z` over the whole contraction; grid `(ceil(N/16), ceil(M/16), batch)`. A fused
    epilogue is computed on each sum as it is stored."""
    op = item.contraction
    assert isinstance(op, ops.DotGeneralOp)
    contraction = Contraction(op)
    kernel = context.kernel(item, "dot_tiled", reads=item.inputs, writes=[item.root.results[0]])
    epilogue = _epilogue(kernel, item)
    b = kernel.builder
    tiles = _tile_memory(kernel, contraction)
    tx, ty = ir.thread_id(b, "x"), ir.thread_id(b, "y")
    m = ir.add(b, ir.mul(b, ir.block_id(b, "y"), TILE), ty)
    n = ir.add(b, ir.mul(b, ir.block_id(b, "x"), TILE), tx)
    batch = ir.block_id(b, "z")
    total = accumulate_tile(b, kernel, contraction, tiles, (tx, ty), batch, m, n, 0, contraction.k)
    inside = _both(b, ir.less(b, m, contraction.m), ir.less(b, n, contraction.n))
    ir.if_then(b, inside, lambda i: contraction.store(i, kernel, total, batch, m, n, epilogue))
    grid = [ir.ceil_div(contraction.n, TILE), ir.ceil_div(contraction.m, TILE), contraction.batch]
    if 0 in grid:
        return KernelProgram(())
    return KernelProgram((kernel.launch(grid, [TILE, TILE]),))


def splitk_dot_kernel(context: KernelContext, item: PlannedKernel) -> KernelProgram:
    """`dot.splitk`: the host loops over the 128 x 128 output tiles (of every batch);
    phase 1 (`sm_count` blocks of 16 x 16 threads) accumulates contraction slice `g` of
    the tile into `partials[g]`, 16 x 16 sub-tile by sub-tile; phase 2 (64 blocks of 256
    threads, one thread per tile element) adds `partials[0 .. sm_count)` in order and
    stores the sum, or a fused epilogue's value."""
    op = item.contraction
    assert isinstance(op, ops.DotGeneralOp)
    contraction = Contraction(op)
    blocks = context.sm_count
    tile_elements = SPLITK_TILE * SPLITK_TILE
    stored = partial_type(contraction.element)
    term = context.workspace_of(
        item, dot_splitk.WORKSPACE, blocks * tile_elements * byte_width(stored)
    )
    tiles_m = ir.ceil_div(contraction.m, SPLITK_TILE)
    tiles_n = ir.ceil_div(contraction.n, SPLITK_TILE)
    tile_count = contraction.batch * tiles_m * tiles_n
    if tile_count == 0:
        return KernelProgram(())
    slice_width = ir.ceil_div(contraction.k, blocks)

    def tile_origin(kernel: Kernel, b: Builder) -> tuple[SSAValue, SSAValue, SSAValue]:
        """Batch, first row and first column of the host loop's tile."""
        tile = kernel.loop_index()
        per_batch = ir.index(b, tiles_m * tiles_n)
        batch = emit(b, arith.DivUIOp(tile, per_batch))
        within = emit(b, arith.RemUIOp(tile, per_batch))
        m0 = ir.mul(b, emit(b, arith.DivUIOp(within, ir.index(b, tiles_n))), SPLITK_TILE)
        n0 = ir.mul(b, emit(b, arith.RemUIOp(within, ir.index(b, tiles_n))), SPLITK_TILE)
        return batch, m0, n0

    # Phase 1: slice g of the contraction for every 16 x 16 sub-tile of the tile.
    first = context.kernel(
        item,
        "dot_splitk_partials",
        reads=[contraction.lhs, contraction.rhs],
        workspaces=[term],
        loop_index=True,
    )
    b = first.builder
    tiles = _tile_memory(first, contraction)
    partials = workspace_view(b, first, term, stored)
    tx, ty = ir.thread_id(b, "x"), ir.thread_id(b, "y")
    slice_id = ir.block_id(b)
    batch, m0, n0 = tile_origin(first, b)
    k_begin = ir.minimum(b, ir.mul(b, slice_id, slice_width), contraction.k)
    k_end = ir.minimum(b, ir.add(b, k_begin, slice_width), contraction.k)
    side = SPLITK_TILE // TILE

    def sub_tile(inner: Builder, s: SSAValue, _carried) -> list[SSAValue]:
        row = ir.add(
            inner, ir.mul(inner, emit(inner, arith.DivUIOp(s, ir.index(inner, side))), TILE), ty
        )
        col = ir.add(
            inner, ir.mul(inner, emit(inner, arith.RemUIOp(s, ir.index(inner, side))), TILE), tx
        )
        total = accumulate_tile(
            inner,
            first,
            contraction,
            tiles,
            (tx, ty),
            batch,
            ir.add(inner, m0, row),
            ir.add(inner, n0, col),
            k_begin,
            k_end,
        )
        slot = ir.add(
            inner,
            ir.mul(inner, slice_id, tile_elements),
            ir.add(inner, ir.mul(inner, row, SPLITK_TILE), col),
        )
        ir.store(inner, to_partial(inner, total), partials, [slot])
        return []

    ir.for_range(b, 0, side * side, 1, sub_tile)
    phase1 = first.launch([blocks], [TILE, TILE])

    # Phase 2: add the slices in order.
    threads = 256
    second = context.kernel(
        item,
        "dot_splitk_fold",
        reads=item.inputs,
        writes=[item.root.results[0]],
        workspaces=[term],
        loop_index=True,
    )
    epilogue = _epilogue(second, item)
    b = second.builder
    partials = workspace_view(b, second, term, stored)
    element = linear_thread(b, threads)
    batch, m0, n0 = tile_origin(second, b)
    m = ir.add(b, m0, emit(b, arith.DivUIOp(element, ir.index(b, SPLITK_TILE))))
    n = ir.add(b, n0, emit(b, arith.RemUIOp(element, ir.index(b, SPLITK_TILE))))

    def add_slice(inner: Builder, g: SSAValue, acc) -> list[SSAValue]:
        value = ir.load(inner, partials, [ir.add(inner, ir.mul(inner, g, tile_elements), element)])
        return [combine(inner, ADD, acc[0], from_partial(inner, value, contraction.compute))]

    inside = _both(b, ir.less(b, m, contraction.m), ir.less(b, n, contraction.n))

    def fold(inner: Builder) -> None:
        zero = combiner_identity(inner, ADD, contraction.compute)
        total = ir.for_range(inner, 0, blocks, 1, add_slice, [zero])[0]
        contraction.store(inner, second, total, batch, m, n, epilogue)

    ir.if_then(b, inside, fold)
    phase2 = second.launch([tile_elements // threads], [threads])
    return KernelProgram((phase1, phase2), host_loop=tile_count)


class ConvolutionContraction:
    """An `accy.convolution` as the batched product `dot.tiled` computes (an implicit
    GEMM: nothing is materialized): one batch per group (feature or batch groups, else
    one), M the result's batch and spatial positions of a group (row-major), K the
    kernel's window positions then input features, N the output features of a group.
    The input element of (m, k) is read where it falls on the input; padding and
    dilation holes are 0."""

    def __init__(self, op: ops.ConvolutionOp):
        self.op = op
        self.lhs_shape, self.rhs_shape = static_shape(op.lhs), static_shape(op.rhs)
        self.result_shape = static_shape(op.result)
        self.lhs_dims = op.window_list("lhs_dims")
        self.rhs_dims = op.window_list("rhs_dims")
        self.result_dims = op.window_list("result_dims")
        ob, _of, *os = self.result_dims
        _ri, ro, *rs = self.rhs_dims
        self.groups = max(op.feature_groups, op.batch_groups)
        self.batch = self.groups
        self.positions = [self.result_shape[ob], *(self.result_shape[d] for d in os)]
        self.kernel_sizes = [self.rhs_shape[d] for d in rs]
        self.inputs = self.rhs_shape[self.rhs_dims[0]]
        self.m = _product(self.positions)
        self.k = _product(self.kernel_sizes) * self.inputs
        self.n = self.rhs_shape[ro] // self.groups
        self.element = element_type(op.result)
        self.compute = compute_type(self.element)

    def _load(self, kernel: Kernel):
        return lambda b, value, indices: kernel.load(b, value, indices)

    def _window(self, b: Builder, k: SSAValue) -> tuple[list[SSAValue], SSAValue]:
        """The window position (one index per spatial dim) and input feature of `k`."""
        parts = static_indices(b, k, [*self.kernel_sizes, self.inputs])
        return parts[:-1], parts[-1]

    def _feature(self, b: Builder, group, n) -> SSAValue:
        return ir.add(b, ir.mul(b, group, self.n), n) if self.groups > 1 else n

    def lhs_element(self, b: Builder, kernel: Kernel, group, m, k) -> SSAValue:
        op = self.op
        lf = self.lhs_dims[1]
        batch, *spatial = static_indices(b, m, self.positions)
        window, c = self._window(b, k)
        # the group's input batch and first input feature, as output feature (group, 0) reads
        batch, base = indexing.convolution_groups(
            b, op, batch, self._feature(b, group, ir.index(b, 0))
        )
        indices, inside = indexing.convolution_input(b, op, batch, spatial, window)
        indices[lf] = ir.add(b, base, c) if base is not None else c
        load = self._load(kernel)
        if inside is None:
            return indexing.convolution_operand(b, op, load, op.lhs, indices)
        zero = combiner_identity(b, ADD, self.compute)
        return ir.select_if(
            b,
            inside,
            lambda i: indexing.convolution_operand(i, op, load, op.lhs, indices),
            lambda i: zero,
        )

    def rhs_element(self, b: Builder, kernel: Kernel, group, k, n) -> SSAValue:
        window, c = self._window(b, k)
        indices = indexing.convolution_kernel(b, self.op, self._feature(b, group, n), window)
        indices[self.rhs_dims[0]] = c
        return indexing.convolution_operand(b, self.op, self._load(kernel), self.op.rhs, indices)

    def store(
        self,
        b: Builder,
        kernel: Kernel,
        value: SSAValue,
        group,
        m,
        n,
        epilogue: tuple[FusedGroup, SSAValue] | None = None,
    ) -> None:
        """Store the sum of (m, n); with an `epilogue` (the fused group and its result),
        the epilogue's value there instead."""
        ob, of, *os = self.result_dims
        batch, *spatial = static_indices(b, m, self.positions)
        indices: list[SSAValue | None] = [None] * len(self.result_shape)
        indices[ob] = batch
        indices[of] = self._feature(b, group, n)
        for d, index in zip(os, spatial):
            indices[d] = index
        element = narrow(b, value, self.element)
        if epilogue is None:
            kernel.store(b, element, self.op.result, indices)
            return
        fused, result = epilogue
        kernel.store(
            b,
            kernel.evaluate(b, fused, result, indices, {self.op.result: element}),
            result,
            indices,
        )


def tiled_convolution_kernel(context: KernelContext, item: PlannedKernel) -> KernelProgram:
    """`convolution.tiled`: `dot.tiled` over the convolution's implicit product
    (`ConvolutionContraction`): block `(x, y, z)` computes the 16 x 16 tile of output
    features `16 x` and positions `16 y` of group `z`, staging input and kernel tiles in
    shared memory; a fused epilogue is computed on each sum as it is stored."""
    op = item.contraction
    assert isinstance(op, ops.ConvolutionOp)
    contraction = ConvolutionContraction(op)
    kernel = context.kernel(
        item, "convolution_tiled", reads=item.inputs, writes=[item.root.results[0]]
    )
    epilogue = _epilogue(kernel, item)
    b = kernel.builder
    tiles = _tile_memory(kernel, contraction)  # type: ignore[arg-type]
    tx, ty = ir.thread_id(b, "x"), ir.thread_id(b, "y")
    m = ir.add(b, ir.mul(b, ir.block_id(b, "y"), TILE), ty)
    n = ir.add(b, ir.mul(b, ir.block_id(b, "x"), TILE), tx)
    group = ir.block_id(b, "z")
    total = accumulate_tile(
        b,
        kernel,
        contraction,
        tiles,
        (tx, ty),
        group,
        m,
        n,
        0,
        contraction.k,  # type: ignore[arg-type]
    )
    inside = _both(b, ir.less(b, m, contraction.m), ir.less(b, n, contraction.n))
    ir.if_then(b, inside, lambda i: contraction.store(i, kernel, total, group, m, n, epilogue))
    grid = [ir.ceil_div(contraction.n, TILE), ir.ceil_div(contraction.m, TILE), contraction.batch]
    if 0 in grid:
        return KernelProgram(())
    return KernelProgram((kernel.launch(grid, [TILE, TILE]),))
