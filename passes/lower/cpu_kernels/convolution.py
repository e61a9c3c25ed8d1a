"""CPU lowering of convolutions (the `convolution` kernels `window.WindowLoops` takes):
f32 register tiles where `has_register_tiles` holds (reading the kernel in place, or packed
first: `convolution.packed`), else one window loop per element.

Invariants: every result element is computed by one chain over its window (the kernel's
positions, then the input features, in order) and stored once; where the kernel's root is
not the convolution, the root's result (of its own type: a convert may end the epilogue)
takes the epilogue's value through the fused members. Tiles need all dims static and a
multiple of `VECTOR_WIDTH` output features in each feature or batch group (a tile's
features lie in one group), or one feature per batch group read lane-wise
(`dot_layout.lanewise_input`: a depthwise convolution's weight gradient;
`dot_layout.convolution_tile_read`); where the result does not keep its features last
(NCHW), a tile stores each feature's element on its own.
"""

from __future__ import annotations

import numpy as np
from accy.dialects import accy as ops
from accy.dialects import plan
from accy.passes.dot_layout import CONV_VECTOR_WIDTH, convolution_tile_read, lanewise_input
from accy.passes.element_types import shape_of
from accy.passes.families import convolution_packed
from accy.passes.lower.cpu_kernels.context import (
    CpuLoweringError,
    KernelContext,
    power_of_two_block,
)
from accy.passes.lower.indexing import (
    convolution_input,
    convolution_kernel,
    delinearize,
    window_work,
)
from accy.passes.lower.planned_kernel import PlannedKernel
from accy.passes.lower.scalar import emit, extend, narrow
from xdsl.builder import Builder
from xdsl.dialects import arith, llvm, memref, scf, vector
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    Float32Type,
    FloatAttr,
    MemRefType,
    VectorType,
)
from xdsl.ir import Operation, SSAValue

CONV_TILE_ROWS = 4
"""f32 convolution register tiles: result positions per tile along its last spatial dim."""

CONV_TILE_VECTORS = 4
"""f32 convolution register tiles: vectors of output features per tile (at most)."""

VECTOR_WIDTH = CONV_VECTOR_WIDTH
"""f32 lanes of the convolution register tiles (`vector<8xf32>`: one AVX register)."""

WIDE_LANES = 16
"""f32 lanes of the tiles where the output features are a multiple of them
(`vector<16xf32>`: one AVX-512 register)."""


def has_register_tiles(root: Operation, kernel: PlannedKernel | None = None) -> bool:
    """Whether `convolution_tiles` lowers `root` (`dot_layout.convolution_tile_read`): its
    kernel read in place, or packed where the plan runs `convolution.packed` for it."""
    if not isinstance(root, ops.ConvolutionOp):
        return False
    read = convolution_tile_read(root)
    packed = kernel is not None and kernel.family == convolution_packed.FAMILY.id
    return read == "direct" or (read == "packed" and packed)


def convolution_loops(
    ctx: KernelContext, b: Builder, conv: ops.ConvolutionOp, kernel: PlannedKernel
) -> None:
    """The convolution `conv` of `kernel` and its epilogue: register tiles
    (`convolution_tiles`) where it has them, else one loop nest over the result's
    elements, each its window's sum and epilogue through the fused members."""
    if has_register_tiles(conv, kernel):
        convolution_tiles(ctx, b, conv, kernel)
        return
    result = kernel.root.results[0]
    inner, ivs = ctx.parallel_nest(b, ctx.sizes(result), per_iteration=window_work(conv))
    element = ctx.group(kernel).evaluate(inner, result, ivs)
    ctx.store(inner, element, ctx.memref_of(result), ivs)


def convolution_tiles(
    ctx: KernelContext, b: Builder, root: ops.ConvolutionOp, kernel: PlannedKernel
) -> None:
    """A convolution (see `has_register_tiles`; f32 accumulators, bf16 extended as loaded
    and rounded once as stored) as register tiles of up to `CONV_TILE_ROWS` rows (result
    positions: consecutive ones of the spatial dims taken row-major as one, or of the
    batch, `tile_row_dims`; those past a multiple of `CONV_TILE_ROWS` in one-row tiles) x
    up to `CONV_TILE_VECTORS` vectors of 16 (else 8) output features of one feature group.
    Tiles run in parallel, strips of output features outermost (a strip's part of the
    kernel is read by every tile of it, in turn on one thread where there are enough
    strips). A tile's accumulators start at zero and are carried through the window's
    positions (one loop per window dim; the read positions and whether they fall on the
    input decided once per position and row) and, inside, its input features: each step
    loads the kernel's feature vectors once and one input scalar per row (zero where the
    row reads padding or a dilation hole), broadcast, for rows x vectors FMAs (lane-wise:
    one input vector per row and vector, each lane its feature's batch entry); stored once
    at the end, into the kernel's result. With an epilogue (the kernel's root is not the
    convolution) the sums are staged on the stack and a loop over each row's features
    stores each element's epilogue value (of the root's type)."""
    out_shape, rhs_shape = shape_of(root.result), shape_of(root.rhs)
    rank = len(out_shape)
    lb, lf = root.window_list("lhs_dims")[:2]
    ri, ro, *rs = root.window_list("rhs_dims")
    ob, of, *os = root.window_list("result_dims")
    kernel_sizes = [rhs_shape[d] for d in rs]
    inputs = rhs_shape[ri]
    row_dims = tile_row_dims(out_shape, ob, os)
    other_dims = [d for d in (ob, *os) if d not in row_dims]
    phases = dilation_phases(root, row_dims)
    grid = [out_shape[d] // phases.get(d, 1) for d in row_dims]  # each phase's positions
    size = int(np.prod(grid, dtype=np.int64))
    phased = list(phases)  # the dims whose positions are taken one phase at a time
    features = out_shape[of]
    lanewise = lanewise_input(root)  # a lane per output feature, each its own input batch
    # a tile's features lie in one group (or, lane-wise, span groups of one feature)
    per_group = features if lanewise else features // (root.feature_groups * root.batch_groups)
    lanes = WIDE_LANES if per_group % WIDE_LANES == 0 else VECTOR_WIDTH
    vectors = next(v for v in range(CONV_TILE_VECTORS, 0, -1) if per_group % (v * lanes) == 0)
    vector_type = VectorType(Float32Type(), [lanes])
    count = int(np.prod(kernel_sizes, dtype=np.int64))
    packed = None  # the kernel as the tiles read it, where it is not stored so
    if convolution_tile_read(root) == "packed":
        packed = pack_kernel(ctx, b, root, kernel)
    result = kernel.root.results[0]
    lhs, rhs, target = (ctx.memref_of(v) for v in (root.lhs, root.rhs, result))
    lhs_element, rhs_element, result_element = (
        v.type.get_element_type()  # type: ignore[attr-defined]
        for v in (root.lhs, root.rhs, root.result)
    )

    def part(start: int, extent: int, rows: int) -> None:
        """Tiles of `rows` rows over the row positions `start` to `start + extent`."""
        nest = [of, *other_dims]
        tile, nest_ivs = ctx.parallel_nest(
            b,
            [ctx.index(out_shape[d]) for d in nest]
            + [ctx.index(phases[d]) for d in phased]
            + [ctx.index(extent)],
            steps=[vectors * lanes] + [1] * (len(other_dims) + len(phased)) + [rows],
            parallel=len(nest) + len(phased) + 1,
            per_iteration=max(1, count * inputs * rows * vectors * lanes),
        )
        phase_of = dict(zip(phased, nest_ivs[len(nest) : -1]))
        first_row = nest_ivs[-1]
        if start:
            first_row = emit(tile, arith.AddiOp(first_row, ctx.index(start)))
        row_at = []  # per row: its result indices (the first feature of the tile's)
        for r in range(rows):
            at: list[SSAValue] = [ctx.index(0)] * rank
            for d, iv in zip(nest, nest_ivs):
                at[d] = iv
            flat = first_row if r == 0 else emit(tile, arith.AddiOp(first_row, ctx.index(r)))
            positions = delinearize(tile, flat, [ctx.index(n) for n in grid])
            for d, position in zip(row_dims, positions):
                if d in phases:  # the phase's position `position`
                    scaled = emit(tile, arith.MuliOp(position, ctx.index(phases[d])))
                    position = emit(tile, arith.AddiOp(scaled, phase_of[d]))
                at[d] = position
            row_at.append(at)
        zero = emit(tile, arith.ConstantOp(DenseIntOrFPElementsAttr.from_list(vector_type, [0.0])))
        first_input = None  # the tile's group's first input feature, with feature groups
        if root.feature_groups > 1:
            group = emit(tile, arith.DivUIOp(row_at[0][of], ctx.index(per_group)))
            first_input = emit(tile, arith.MuliOp(group, ctx.index(inputs)))
        batches = [at[ob] for at in row_at]  # the input batch each row reads
        if root.batch_groups > 1 and not lanewise:  # the group's part of the input batch
            group = emit(tile, arith.DivUIOp(row_at[0][of], ctx.index(per_group)))
            part = shape_of(root.lhs)[lb] // root.batch_groups
            offset = emit(tile, arith.MuliOp(group, ctx.index(part)))
            batches = [emit(tile, arith.AddiOp(batch, offset)) for batch in batches]
        sums: list[SSAValue] = [zero] * (rows * vectors)
        if count and inputs:
            starts = [  # where a phased dim's window starts, and its step
                None if d not in phases else window_start(ctx, tile, root, i, phase_of[d])
                for i, d in enumerate(os)
            ]
            loops, wb, ks, carried = window_nest(ctx, tile, kernel_sizes, sums, starts)
            scalar_zero = emit(wb, arith.ConstantOp(FloatAttr(0.0, Float32Type())))
            row_reads = [  # per row: the input indices (feature left to fill), inside
                convolution_input(wb, root, batch, [at[d] for d in os], ks)
                for at, batch in zip(row_at, batches)
            ]
            kernel_reads = []  # per vector: the kernel indices (input feature left to fill)
            for v in range(vectors):
                column = row_at[0][of]
                if v:
                    column = emit(wb, arith.AddiOp(column, ctx.index(v * lanes)))
                if packed is None:
                    kernel_reads.append(convolution_kernel(wb, root, column, ks))
                else:  # window position, input feature, output features
                    kernel_reads.append([linearize(ctx, wb, ks, kernel_sizes), None, column])
            kernel_column = ro if packed is None else 2  # where a kernel read's feature is
            features_loop, fb, c, acc = ctx.loop(wb, ctx.index(inputs), carried)
            columns = []
            for rhs_at in kernel_reads:
                rhs_at = list(rhs_at)
                rhs_at[ri if packed is None else 1] = c
                if packed is None:
                    loaded = emit(fb, vector.LoadOp(rhs, rhs_at, VectorType(rhs_element, [lanes])))
                    columns.append(extend(fb, loaded, rhs_element, vector_type))
                else:  # packed in f32
                    columns.append(emit(fb, vector.LoadOp(packed, rhs_at, vector_type)))
            updated = []
            feature = c if first_input is None else emit(fb, arith.AddiOp(first_input, c))
            for r, (indices, inside) in enumerate(row_reads):
                lhs_at = list(indices)
                lhs_at[lf] = feature
                if lanewise:  # each vector's features read their own input batch entries
                    for v, column in enumerate(columns):
                        lhs_at[lb] = kernel_reads[v][kernel_column]
                        loaded = emit(
                            fb, vector.LoadOp(lhs, lhs_at, VectorType(lhs_element, [lanes]))
                        )
                        loaded = extend(fb, loaded, lhs_element, vector_type)
                        if inside is not None:
                            loaded = emit(fb, arith.SelectOp(inside, loaded, zero))
                        updated.append(emit(fb, vector.FMAOp(loaded, column, acc[r * vectors + v])))
                    continue
                scalar = extend(
                    fb, emit(fb, memref.LoadOp.get(lhs, lhs_at)), lhs_element, Float32Type()
                )
                if inside is not None:
                    scalar = emit(fb, arith.SelectOp(inside, scalar, scalar_zero))
                broadcast = emit(fb, vector.BroadcastOp(scalar, vector_type))
                for v, column in enumerate(columns):
                    updated.append(emit(fb, vector.FMAOp(broadcast, column, acc[r * vectors + v])))
            fb.insert(scf.YieldOp(*updated))
            wb.insert(scf.YieldOp(*features_loop.results))
            sums = list(loops[0].results)
        if kernel.root is not root:
            # An epilogue: the sums, rounded to the convolution's type, staged in a stack
            # buffer released after the tile, then each element's epilogue value stored
            # (the root may have another type: a convert ends the epilogue).
            saved = emit(tile, llvm.StackSaveOp())
            width = vectors * lanes
            stage = emit(tile, memref.AllocaOp.get(result_element, 64, [rows, width]))
            staged = VectorType(result_element, [lanes])
            for r in range(rows):
                for v in range(vectors):
                    value = narrow(tile, sums[r * vectors + v], staged)
                    tile.insert(vector.StoreOp(value, stage, [ctx.index(r), ctx.index(v * lanes)]))
            group = ctx.group(kernel)
            for r, row in enumerate(row_at):
                epilogue, (j,) = ctx.stepped_loop_nest(tile, [ctx.index(width)], [1])
                at = list(row)
                at[of] = emit(epilogue, arith.AddiOp(row[of], j))
                known = {root.result: emit(epilogue, memref.LoadOp.get(stage, [ctx.index(r), j]))}
                ctx.store(epilogue, group.evaluate(epilogue, result, at, known), target, at)
            tile.insert(llvm.StackRestoreOp(saved))
            return
        for r, row in enumerate(row_at):
            for v in range(vectors):
                at = list(row)
                if v:
                    at[of] = emit(tile, arith.AddiOp(row[of], ctx.index(v * lanes)))
                value = sums[r * vectors + v]
                if of == rank - 1:  # the features contiguous: one vector store
                    stored = VectorType(result_element, [lanes])
                    tile.insert(vector.StoreOp(narrow(tile, value, stored), target, at))
                    continue
                for lane in range(lanes):  # else each feature's element on its own
                    element = emit(tile, vector.ExtractOp(value, [lane], Float32Type()))
                    place = list(at)
                    place[of] = emit(tile, arith.AddiOp(at[of], ctx.index(lane)))
                    stored = narrow(tile, element, result_element)
                    tile.insert(memref.StoreOp.get(stored, target, place))

    if size <= CONV_TILE_ROWS or size % CONV_TILE_ROWS == 0:
        part(0, size, power_of_two_block(size, CONV_TILE_ROWS))
    else:  # tiles of `CONV_TILE_ROWS` rows, then one-row tiles for the rest
        main = size - size % CONV_TILE_ROWS
        part(0, main, CONV_TILE_ROWS)
        part(main, size - main, 1)


def tile_row_dims(shape: tuple[int, ...], batch: int, spatial: list[int]) -> list[int]:
    """The result dims whose positions (row-major, as one) a tile's rows take: the
    spatial ones, or the batch where it has more positions (a weight gradient's result is
    the kernel: its spatial dims are the window's, its batch the input features)."""
    positions = int(np.prod([shape[d] for d in spatial], dtype=np.int64))
    return [batch] if not spatial or shape[batch] > positions else list(spatial)


def dilation_phases(root: ops.ConvolutionOp, row_dims: list[int]) -> dict[int, int]:
    """The result's spatial dims whose positions tiles take one phase at a time (modulo
    the input's dilation there, `lhs_dilation`: a transposed convolution, the input
    gradient of a strided one), with that dilation: those among the tiles' row dims
    dilated with a kernel not dilated (`rhs_dilation` 1) and a multiple of the dilation
    positions. A phase's rows read the input at the same window positions, the others
    fall in its holes: `window_start` skips them."""
    _ob, _of, *os = root.window_list("result_dims")
    shape = shape_of(root.result)
    bases, dilations = root.window_list("lhs_dilation"), root.window_list("rhs_dilation")
    return {
        d: bases[i]
        for i, d in enumerate(os)
        if d in row_dims and bases[i] > 1 and dilations[i] == 1 and shape[d] % bases[i] == 0
    }


def window_start(
    ctx: KernelContext, b: Builder, root: ops.ConvolutionOp, i: int, phase: SSAValue
) -> tuple[SSAValue, SSAValue, int]:
    """For spatial dim `i`, taken one phase at a time (`dilation_phases`): the first
    window position whose reads fall on the input rather than a hole at that phase's
    positions, how many do, and their step (the dilation). Position o = phase + d * n
    reads the dilated input at o * stride + k - low, on the input where that is a
    multiple of d: k = (low - phase * stride) mod d, then every d-th."""
    d = root.window_list("lhs_dilation")[i]
    stride, low = root.window_list("window_strides")[i], root.window_list("padding_low")[i]
    window = shape_of(root.rhs)[root.window_list("rhs_dims")[2 + i]]
    shifted = emit(b, arith.MuliOp(phase, ctx.index(-stride % d)))
    start = emit(b, arith.RemUIOp(emit(b, arith.AddiOp(shifted, ctx.index(low % d))), ctx.index(d)))
    left = emit(b, arith.SubiOp(ctx.index(window + d - 1), start))
    return start, emit(b, arith.DivUIOp(left, ctx.index(d))), d


def window_nest(
    ctx: KernelContext,
    b: Builder,
    sizes: list[int],
    carried: list[SSAValue],
    starts: list[tuple[SSAValue, SSAValue, int] | None],
) -> tuple[list[scf.ForOp], Builder, list[SSAValue], list[SSAValue]]:
    """One `scf.for` per window dim (outermost first) carrying `carried`: the loops, a
    builder at the end of the innermost body (the caller yields its results there), the
    window position and the carried args. A dim with a start (`window_start`) runs its
    positions from there by its step. Each outer loop yields its inner loop's results;
    nested loops, not one over the positions, so no position is divided out."""
    loops, positions = [], []
    for size, start in zip(sizes, starts):
        count = ctx.index(size) if start is None else start[1]
        loop, inner, position, carried = ctx.loop(b, count, carried)
        if start is not None:
            first, _count, step = start
            scaled = emit(inner, arith.MuliOp(position, ctx.index(step)))
            position = emit(inner, arith.AddiOp(first, scaled))
        if loops:
            b.insert(scf.YieldOp(*loop.results))
        loops.append(loop)
        positions.append(position)
        b = inner
    return loops, b, positions, carried


def linearize(
    ctx: KernelContext, b: Builder, indices: list[SSAValue], sizes: list[int]
) -> SSAValue:
    """The row-major position of `indices` in `sizes`."""
    linear = indices[0]
    for index, size in zip(indices[1:], sizes[1:]):
        linear = emit(b, arith.AddiOp(emit(b, arith.MuliOp(linear, ctx.index(size))), index))
    return linear


def pack_kernel(
    ctx: KernelContext, b: Builder, root: ops.ConvolutionOp, kernel: PlannedKernel
) -> SSAValue:
    """The kernel copied, reversed where the op says, into the kernel's `kernel` workspace
    (`convolution.packed`: window positions, input features, output features), positions
    in parallel; that workspace viewed so."""
    shape = convolution_packed.packed_kernel(root)
    workspace = kernel.workspaces.get(convolution_packed.WORKSPACE)
    planned = 0 if workspace is None else plan.buffer_bytes(workspace.type)  # type: ignore[arg-type]
    if shape is None or planned < int(np.prod(shape)) * 4:
        raise CpuLoweringError(
            f"work item {kernel.id} runs family '{convolution_packed.FAMILY.id}' but the plan "
            f"gives its kernel {planned} bytes",
            root.location,
        )
    assert workspace is not None
    packed = emit(
        b, memref.ViewOp(workspace, ctx.index(0), [], MemRefType(Float32Type(), list(shape)))
    )
    packed.name_hint = "packed_kernel"
    ri, _ro, *spatial = root.window_list("rhs_dims")
    rhs_shape = shape_of(root.rhs)
    rhs = ctx.memref_of(root.rhs)
    inner, (p, c, o) = ctx.parallel_nest(
        b, [ctx.index(n) for n in shape], parallel=1, per_iteration=shape[1] * shape[2]
    )
    ks = delinearize(inner, p, [ctx.index(rhs_shape[d]) for d in spatial])
    at = convolution_kernel(inner, root, o, ks)
    at[ri] = c
    value = emit(inner, memref.LoadOp.get(rhs, at))
    value = extend(inner, value, rhs.type.get_element_type(), Float32Type())  # type: ignore[attr-defined]
    inner.insert(memref.StoreOp.get(value, packed, [p, c, o]))
    return packed
