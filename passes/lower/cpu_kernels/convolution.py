"""CPU lowering of convolutions (the `convolution` kernels `window.WindowLoops` takes):
f32 register tiles where `has_register_tiles` holds (reading the kernel in place, or packed
first: `convolution.packed`), else one window loop per element.

Invariants: every result element is computed by one chain over its window (the kernel's
positions, then the input features, in order) and stored once; where the kernel's root is
not the convolution, its result (of the convolution's type) then takes the epilogue's
value through the fused members. Tiles need all dims static, no batch groups and a
multiple of `VECTOR_WIDTH` output features in each feature group (a tile's features lie in
one group; `dot_layout.convolution_tile_read`); where the result does not keep its features
last (NCHW), a tile stores each feature's element on its own.
"""

from __future__ import annotations

import numpy as np
from accy.dialects import accy as ops
from accy.dialects import plan
from accy.passes.dot_layout import CONV_VECTOR_WIDTH, convolution_tile_read
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
from xdsl.dialects import arith, memref, scf, vector
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
    and rounded once as stored) as register tiles of up to
    `CONV_TILE_ROWS` consecutive positions along the result's last spatial dim (when it
    is the dim before the features; the positions past a multiple of `CONV_TILE_ROWS` in
    one-row tiles) x up to `CONV_TILE_VECTORS` vectors of 16 (else 8) output features of
    one feature group, all in parallel. A tile's accumulators start at zero and are carried
    through the kernel's window positions (the read positions and whether they fall on
    the input decided once per position and row) and, inside, its input features: each
    step loads the kernel's feature vectors once and one input scalar per row (zero
    where the row reads padding or a dilation hole), broadcast, for rows x vectors FMAs;
    stored once at the end, into the kernel's result. With an epilogue (the kernel's
    root is not the convolution) a loop over the tile's elements then replaces each
    with the epilogue's value at it (the result has the convolution's type)."""
    out_shape, rhs_shape = shape_of(root.result), shape_of(root.rhs)
    rank = len(out_shape)
    lf = root.window_list("lhs_dims")[1]
    ri, _ro, *rs = root.window_list("rhs_dims")
    ob, of, *os = root.window_list("result_dims")
    kernel_sizes = [rhs_shape[d] for d in rs]
    inputs = rhs_shape[ri]
    row_dim = os[-1] if os else ob  # tiles take consecutive positions of the last spatial dim
    size = out_shape[row_dim]
    features = out_shape[of]
    per_group = features // root.feature_groups  # a tile's features lie in one group
    lanes = WIDE_LANES if per_group % WIDE_LANES == 0 else VECTOR_WIDTH
    vectors = next(v for v in range(CONV_TILE_VECTORS, 0, -1) if per_group % (v * lanes) == 0)
    vector_type = VectorType(Float32Type(), [lanes])
    count = int(np.prod(kernel_sizes, dtype=np.int64))
    packed = None  # the kernel as the tiles read it, where it is not stored so
    if convolution_tile_read(root) == "packed":
        packed = pack_kernel(ctx, b, root, kernel)

    def part(start: int, extent: int, rows: int) -> None:
        """Tiles of `rows` rows over the result's rows `start` to `start + extent`."""
        sizes = [ctx.index(n) for n in out_shape]
        sizes[row_dim] = ctx.index(extent)
        steps = [1] * rank
        steps[row_dim] = rows
        steps[of] = vectors * lanes
        tile, ivs = ctx.parallel_nest(
            b,
            sizes,
            steps=steps,
            parallel=rank,
            per_iteration=max(1, count * inputs * rows * vectors * lanes),
        )
        if start:
            ivs[row_dim] = emit(tile, arith.AddiOp(ivs[row_dim], ctx.index(start)))
        result = kernel.root.results[0]
        lhs, rhs, target = (ctx.memref_of(v) for v in (root.lhs, root.rhs, result))
        lhs_element, rhs_element, result_element = (
            v.type.get_element_type()  # type: ignore[attr-defined]
            for v in (root.lhs, root.rhs, root.result)
        )
        zero = emit(tile, arith.ConstantOp(DenseIntOrFPElementsAttr.from_list(vector_type, [0.0])))
        first_input = None  # the tile's group's first input feature, with feature groups
        if root.feature_groups > 1:
            group = emit(tile, arith.DivUIOp(ivs[of], ctx.index(per_group)))
            first_input = emit(tile, arith.MuliOp(group, ctx.index(inputs)))
        accumulators = [zero] * (rows * vectors)
        if count == 0 or inputs == 0:
            window = None
        else:
            window, wb, k, carried = ctx.loop(tile, ctx.index(count), accumulators)
            ks = delinearize(wb, k, [ctx.index(n) for n in kernel_sizes])
            scalar_zero = emit(wb, arith.ConstantOp(FloatAttr(0.0, Float32Type())))
            row_reads = []  # per row: the input indices (feature left to fill), inside
            for r in range(rows):
                at = list(ivs)
                if r:
                    at[row_dim] = emit(wb, arith.AddiOp(ivs[row_dim], ctx.index(r)))
                row_reads.append(convolution_input(wb, root, ivs[ob], [at[d] for d in os], ks))
            kernel_reads = []  # per vector: the kernel indices (input feature left to fill)
            for v in range(vectors):
                column = (
                    ivs[of] if v == 0 else emit(wb, arith.AddiOp(ivs[of], ctx.index(v * lanes)))
                )
                if packed is None:
                    kernel_reads.append(convolution_kernel(wb, root, column, ks))
                else:  # window position, input feature, output features
                    kernel_reads.append([k, None, column])
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
        for r in range(rows):
            for v in range(vectors):
                at = list(ivs)
                if r:
                    at[row_dim] = emit(tile, arith.AddiOp(ivs[row_dim], ctx.index(r)))
                if v:
                    at[of] = emit(tile, arith.AddiOp(ivs[of], ctx.index(v * lanes)))
                value = window.results[r * vectors + v] if window is not None else zero
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
        if kernel.root is root:
            return
        group = ctx.group(kernel)
        epilogue, positions = ctx.stepped_loop_nest(
            tile, [ctx.index(rows), ctx.index(vectors * lanes)], [1, 1]
        )
        at = list(ivs)
        at[row_dim] = emit(epilogue, arith.AddiOp(ivs[row_dim], positions[0]))
        at[of] = emit(epilogue, arith.AddiOp(ivs[of], positions[1]))
        known = {root.result: ctx.load(epilogue, result, at)}
        ctx.store(epilogue, group.evaluate(epilogue, result, at, known), target, at)

    if row_dim not in os or size <= CONV_TILE_ROWS or size % CONV_TILE_ROWS == 0:
        rows = power_of_two_block(size, CONV_TILE_ROWS) if row_dim in os else 1
        part(0, size, rows)
    else:  # tiles of `CONV_TILE_ROWS` rows, then one-row tiles for the rest
        main = size - size % CONV_TILE_ROWS
        part(0, main, CONV_TILE_ROWS)
        part(main, size - main, 1)


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
