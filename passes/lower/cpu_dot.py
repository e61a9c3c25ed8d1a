"""The CPU target's register tiles for `dot_general` (`dot_tiling`, `DotTiles`).

A product with static shapes, one contracting dim and a contiguous form
(`accy.passes.dot_layout`: `columns` or `rows`) whose accumulators are f32 (f32, f16 and
bf16 products), f64 or 32/64-bit integers runs as tiles of `rows` output rows x `columns`
units, in parallel from `DOT_PARALLEL_MIN_WORK` multiply-adds (by column strip where there
are `PARALLEL_STRIPS`, else by tile), each accumulator a vector carried through the whole
contraction and stored once: the output is written, never read.

- `columns`: the units are rhs vectors of `lanes` output columns; each contracting
  position broadcasts one lhs element per row against the tile's rhs vectors (a
  multiply-add per row and vector). N's remainder past a multiple of `lanes` is one masked
  vector, in a nest of its own.
- `rows` (`A . B^T`): the units are output columns; each accumulator is a vector of
  `lanes` consecutive contracting positions of one output element, both operands loaded
  along K, summed across its lanes at the end (K's remainder one masked step); a row's
  sums are stored as one vector.

Operands are loaded in their stored type and extended to the accumulators' as loaded (a
product's operand prologue, `dot_operand_source`, is read narrow); the sums are rounded
to the result's type once, as they are stored. bf16 products on a CPU with AVX512_BF16
(`BF16_PAIRS` among the lowering's features) sum pairs of contracting positions with
`vdpbf16ps` (`x86.avx512.dot`): its products are exact and summed in f32. It reads
subnormal bf16 inputs as zero, so each call first checks both operands and runs tiles
that extend and multiply where either holds one (`emit_dot_tiles`); it also flushes f32
sums below the smallest normal number (2**-126) to zero, an error within that of the
exact sum each step. With an epilogue (the kernel's root is not the product), a
columns tile's sums are staged in a stack buffer and each element's epilogue value is
stored, a rows tile's sums are stored as their epilogue values: an element's epilogue
inputs are read before it is written, so the output may take one's buffer in place.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING

from accy.dialects import accy as ops
from accy.dialects import plan
from accy.dialects.x86_avx512 import DotBF16Op
from accy.passes.dot_layout import DotTiling, dot_tiling, row_parts
from accy.passes.element_types import is_float, signless
from accy.passes.families import dot_packed
from accy.passes.fusion import dot_operand_source
from accy.passes.lower.cpu_kernels.context import CpuLoweringError
from accy.passes.lower.planned_kernel import PlannedKernel
from accy.passes.lower.scalar import element_type, emit, extend
from accy.passes.schedule import WorkItem
from xdsl.builder import Builder
from xdsl.dialects import arith, llvm, memref, scf, vector
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    ArrayAttr,
    BFloat16Type,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    MemRefType,
    VectorType,
    i1,
    i32,
    i64,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.irdl import IRDLOperation
from xdsl.rewriter import InsertPoint

if TYPE_CHECKING:
    from accy.passes.lower.cpu_kernels.context import KernelContext

DOT_PARALLEL_MIN_WORK = 1 << 20
"""Tiles run in parallel from this many multiply-adds (16 or 8 a vector multiply-add):
below it, handing tiles to another thread costs more than they take."""

PARALLEL_STRIPS = 8
"""From this many column strips (a tile's columns, at every position of the outer dims),
tiles run in parallel by strip, each strip's row tiles in turn on one thread (the strip's rhs
columns stay in its cache); with fewer, every tile in parallel."""

BF16_PAIRS = "avx512_bf16"
"""The CPU feature (Linux's name for AVX512_BF16, with AVX512VL on every CPU that has it)
under which bf16 products sum pairs of k with `DotBF16Op`."""


def _pairs(lhs: SSAValue, rhs: SSAValue, features: Collection[str]) -> bool:
    """Whether a tile reading `lhs` and `rhs` memrefs sums bf16 pairs (`DotBF16Op`)."""
    return BF16_PAIRS in features and all(
        isinstance(v.type.get_element_type(), BFloat16Type)  # type: ignore[attr-defined]
        for v in (lhs, rhs)
    )


def sum_of_lanes(value: SSAValue, kind: vector.CombiningKindAttr, fastmath) -> Operation:
    """`vector.reduction` of `value` to its element type (xDSL's constructor gives the
    result the vector's type)."""
    op = vector.ReductionOp.__new__(vector.ReductionOp)
    IRDLOperation.__init__(
        op,
        operands=[value, None],
        result_types=[value.type.get_element_type()],  # type: ignore[attr-defined]
        properties={"kind": kind, "fastmath": fastmath},
    )
    return op


def _splat(b: Builder, t: VectorType, value: float) -> SSAValue:
    element = t.get_element_type()
    number = int(value) if isinstance(element, IntegerType) else value
    return emit(b, arith.ConstantOp(DenseIntOrFPElementsAttr.from_list(t, [number])))


def emit_dot_tiles(
    lowering: KernelContext, b: Builder, item: WorkItem, root: ops.DotGeneralOp
) -> bool:
    """Emit `root` (the product of dot kernel `item`) as register tiles at `b`; False
    (nothing emitted) when it has no tiling. Tiles that may sum bf16 pairs (`_pairs`) are
    built twice, behind a check of both operands for subnormal values made at every call:
    `vdpbf16ps` reads those as zero, so where one holds any the tiles extend and multiply
    as the other element types do."""
    tiling = dot_tiling(root)
    if tiling is None:
        return False
    lhs = lowering.memref_of(dot_operand_source(root.lhs))
    rhs = lowering.memref_of(dot_operand_source(root.rhs))
    if not _pairs(lhs, rhs, lowering.features):
        _emit_tiles(lowering, b, item, root, tiling, pairs=False)
        return True
    subnormal = any_subnormal_bf16(lowering, b, [lhs, rhs])
    exact, paired = Block(), Block()
    b.insert(scf.IfOp(subnormal, [], Region(exact), Region(paired)))
    for block, pairs in ((exact, False), (paired, True)):
        inner = Builder(InsertPoint.at_end(block))
        _emit_tiles(lowering, inner, item, root, tiling, pairs=pairs)
        inner.insert(scf.YieldOp())
    return True


def _emit_tiles(
    lowering: KernelContext,
    b: Builder,
    item: WorkItem,
    root: ops.DotGeneralOp,
    tiling: DotTiling,
    *,
    pairs: bool,
) -> None:
    out_shape = root.result.type.get_shape()  # type: ignore[attr-defined]
    n_size = out_shape[tiling.n]
    packed = isinstance(item, PlannedKernel) and item.family == dot_packed.FAMILY.id
    if tiling.form == "rows" and packed:  # panels packed across K: the columns form
        tiling = dot_tiling(root, transposed_panels=True)  # type: ignore[assignment]
    if tiling.form == "rows":
        DotTiles(
            lowering, b, item, root, tiling, 0, n_size, tiling.columns, None, pairs
        ).rows_form()
        return
    main = n_size - n_size % tiling.lanes
    panel, slotted = None, False
    if isinstance(item, PlannedKernel) and item.family == dot_packed.FAMILY.id:
        panel = pack_rhs(lowering, b, item, root, tiling)
        slotted = dot_packed.packed_panels(root).slots  # type: ignore[union-attr]
    m_size = out_shape[tiling.m] if tiling.m is not None else 1
    for part in row_parts(tiling, m_size) if tiling.m is not None else [None]:
        if main:
            DotTiles(
                lowering,
                b,
                item,
                root,
                tiling,
                0,
                main,
                tiling.columns,
                None,
                pairs,
                panel,
                part,
                slotted,
            ).columns_form()
        if main != n_size:
            remainder = n_size - main
            DotTiles(
                lowering, b, item, root, tiling, main, tiling.lanes, 1, remainder, pairs, None, part
            ).columns_form()


def pack_rhs(
    lowering: KernelContext,
    b: Builder,
    item: PlannedKernel,
    root: ops.DotGeneralOp,
    tiling: DotTiling,
) -> SSAValue:
    """The rhs's whole strips copied into the kernel's `panels` workspace (`dot.packed`:
    the rhs's other dims, strips, k, width), strips in parallel, each k's run a vector at
    a time; the panels, a view of the workspace. Strip panels (`Panels.slots`) are only
    viewed: the tiles copy each strip as they come to it (`DotTiles.strip_by_strip`)."""
    panels = dot_packed.packed_panels(root)
    workspace = item.workspaces.get(dot_packed.WORKSPACE)
    planned = 0 if workspace is None else plan.buffer_bytes(workspace.type)  # type: ignore[arg-type]
    if panels is None:
        raise CpuLoweringError(
            f"work item {item.id} runs family '{dot_packed.FAMILY.id}', which does not pack "
            "this product",
            root.location,
        )
    if planned < panels.bytes:
        raise CpuLoweringError(
            f"work item {item.id} ({dot_packed.FAMILY.id}) needs {panels.bytes} bytes of "
            f"'{dot_packed.WORKSPACE}' but the plan gives it {planned}",
            root.location,
        )
    assert workspace is not None
    rhs = lowering.memref_of(dot_operand_source(root.rhs))
    element = rhs.type.get_element_type()  # type: ignore[attr-defined]
    shape = rhs.type.get_shape()  # type: ignore[attr-defined]
    panel = emit(
        b, memref.ViewOp(workspace, lowering.index(0), [], MemRefType(element, panels.shape))
    )
    panel.name_hint = "panels"
    if panels.slots:
        return panel
    if panels.transposed:
        return _pack_across_k(lowering, b, root, rhs, panel, panels)
    k_dim, last = root.contracting[1][0], len(shape) - 1
    others = [d for d in range(len(shape)) if d not in (k_dim, last)]
    sizes = [lowering.index(shape[d]) for d in others] + [lowering.index(panels.strips)]
    nest, ivs = lowering.parallel_nest(
        b, sizes, parallel=len(sizes), per_iteration=panels.shape[-2] * panels.width
    )
    strip = ivs[-1]
    first = emit(nest, arith.MuliOp(strip, lowering.index(panels.width)))
    _, body, kv, _ = lowering.loop(nest, lowering.index(panels.shape[-2]))
    vector_type = VectorType(element, [tiling.lanes])
    for offset in range(0, panels.width, tiling.lanes):
        column = emit(body, arith.AddiOp(first, lowering.index(offset)))
        place = dict(zip(others, ivs))
        at = [kv if d == k_dim else column if d == last else place[d] for d in range(len(shape))]
        run = emit(body, vector.LoadOp(rhs, at, vector_type))
        body.insert(vector.StoreOp(run, panel, [*ivs[:-1], strip, kv, lowering.index(offset)]))
    body.insert(scf.YieldOp())
    return panel


TRANSPOSE_LANES = 16
"""The square blocks `_pack_across_k` transposes in registers (16 vectors of 16)."""


def _pack_across_k(
    lowering: KernelContext,
    b: Builder,
    root: ops.DotGeneralOp,
    rhs: SSAValue,
    panel: SSAValue,
    panels: dot_packed.Panels,
) -> SSAValue:
    """A `rows`-form rhs (`k` its last dim) copied across K into `panel` (`Panels.transposed`:
    its other dims, strips, k, width), strips in parallel: element `(n, k)` goes to
    `(n // width, k, n % width)`. Each strip moves blocks of `TRANSPOSE_LANES` columns x
    as many positions of k: one vector load per column, the block transposed in registers
    (`transposed_block`), one vector store per position; the positions past the last
    whole block of k one element at a time."""
    shape = rhs.type.get_shape()  # type: ignore[attr-defined]
    element = rhs.type.get_element_type()  # type: ignore[attr-defined]
    tiling = dot_tiling(root, transposed_panels=True)
    assert tiling is not None
    k_dim, n_dim = len(shape) - 1, tiling.rhs_dims.index(tiling.n)  # k last: the rows form
    k_size, width, lanes = shape[k_dim], panels.width, TRANSPOSE_LANES
    others = [d for d in range(len(shape)) if d not in (k_dim, n_dim)]
    sizes = [lowering.index(shape[d]) for d in others] + [lowering.index(panels.strips)]
    nest, ivs = lowering.parallel_nest(b, sizes, parallel=len(sizes), per_iteration=k_size * width)
    place, strip = dict(zip(others, ivs)), ivs[-1]
    first = emit(nest, arith.MuliOp(strip, lowering.index(width)))

    def rhs_at(column: SSAValue, kv: SSAValue) -> list[SSAValue]:
        return [kv if d == k_dim else column if d == n_dim else place[d] for d in range(len(shape))]

    blocks = k_size // lanes
    if blocks:
        body, (kb, jb) = lowering.stepped_loop_nest(
            nest, [lowering.index(blocks * lanes), lowering.index(width)], [lanes, lanes]
        )
        base = emit(body, arith.AddiOp(first, jb))
        rows = []
        for i in range(lanes):
            column = emit(body, arith.AddiOp(base, lowering.index(i))) if i else base
            rows.append(
                emit(body, vector.LoadOp(rhs, rhs_at(column, kb), VectorType(element, [lanes])))
            )
        for i, row in enumerate(transposed_block(body, rows)):
            kv = emit(body, arith.AddiOp(kb, lowering.index(i))) if i else kb
            body.insert(vector.StoreOp(row, panel, [*ivs[:-1], strip, kv, jb]))
    if k_size % lanes:
        body, (kr, j) = lowering.stepped_loop_nest(
            nest, [lowering.index(k_size % lanes), lowering.index(width)], [1, 1]
        )
        kv = emit(body, arith.AddiOp(kr, lowering.index(blocks * lanes)))
        column = emit(body, arith.AddiOp(first, j))
        value = emit(body, memref.LoadOp.get(rhs, rhs_at(column, kv)))
        body.insert(memref.StoreOp.get(value, panel, [*ivs[:-1], strip, kv, j]))
    return panel


def transposed_block(b: Builder, rows: list[SSAValue]) -> list[SSAValue]:
    """The columns of the square block whose rows are the vectors `rows` (a power of two
    of them): log2 stages of two-source shuffles, each swapping the off-diagonal h x h
    sub-blocks of every 2h x 2h block (h = half the rows, then half that, ... 1)."""
    count = len(rows)
    t = rows[0].type
    h = count // 2
    while h:
        low = DenseArrayBase.from_list(
            i64, [l if not l & h else count + l - h for l in range(count)]
        )
        high = DenseArrayBase.from_list(
            i64, [l + h if not l & h else count + l for l in range(count)]
        )
        swapped = list(rows)
        for i in range(count):
            if not i & h:
                pair = rows[i], rows[i + h]
                swapped[i] = emit(b, vector.ShuffleOp(*pair, low, result_type=t))
                swapped[i + h] = emit(b, vector.ShuffleOp(*pair, high, result_type=t))
        rows, h = swapped, h // 2
    return rows


MAGNITUDE, SMALLEST_NORMAL = 0x7FFF, 0x0080
"""bf16 bits: a value is subnormal when its magnitude bits lie in [1, `SMALLEST_NORMAL`)."""

SUBNORMAL_LANES = 32
"""bf16 elements a step of `any_subnormal_bf16` checks (one 512-bit load)."""


def any_subnormal_bf16(lowering: KernelContext, b: Builder, buffers: Sequence[SSAValue]):
    """An i1 at `b`: whether any element of the bf16 `buffers` (contiguous memrefs) is
    subnormal, i.e. whether the least of their magnitude bits minus one (unsigned: zero
    wraps to the largest) is below `SMALLEST_NORMAL - 1`. One pass over each,
    `SUBNORMAL_LANES` elements a step, lane-wise minima (then the remainder one by one):
    O(M K + K N) reads before a product of M N K steps."""
    i16, bf16 = IntegerType(16), BFloat16Type()
    lanes = VectorType(i16, [SUBNORMAL_LANES])
    least = _int(b, 0xFFFF, i16)
    for buffer in buffers:
        flat = _flat(b, buffer)
        size = emit(b, memref.DimOp(flat, lowering.index(0)))
        steps = emit(b, arith.DivUIOp(size, lowering.index(SUBNORMAL_LANES)))
        top = emit(b, arith.ConstantOp(DenseIntOrFPElementsAttr.from_list(lanes, [0xFFFF])))
        loop, body, iv, (acc,) = lowering.loop(b, steps, [top])
        at = emit(body, arith.MuliOp(iv, lowering.index(SUBNORMAL_LANES)))
        chunk = emit(body, vector.LoadOp(flat, [at], VectorType(bf16, [SUBNORMAL_LANES])))
        key = _magnitude_less_one(body, emit(body, arith.BitcastOp(chunk, lanes)), lanes)
        body.insert(scf.YieldOp(emit(body, arith.MinUIOp(acc, key))))
        minui = vector.CombiningKindAttr(vector.CombiningKindFlag.MINUI)
        least = emit(b, arith.MinUIOp(least, emit(b, sum_of_lanes(loop.results[0], minui, None))))
        start = emit(b, arith.MuliOp(steps, lowering.index(SUBNORMAL_LANES)))
        rest = emit(b, arith.SubiOp(size, start))
        loop, body, iv, (acc,) = lowering.loop(b, rest, [least])
        element = emit(body, memref.LoadOp.get(flat, [emit(body, arith.AddiOp(start, iv))]))
        key = _magnitude_less_one(body, emit(body, arith.BitcastOp(element, i16)), i16)
        body.insert(scf.YieldOp(emit(body, arith.MinUIOp(acc, key))))
        least = loop.results[0]
    return emit(b, arith.CmpiOp(least, _int(b, SMALLEST_NORMAL - 1, i16), "ult"))


def _magnitude_less_one(b: Builder, bits: SSAValue, t: Attribute) -> SSAValue:
    """bf16 `bits` (i16, or a vector of them of type `t`): magnitude bits minus one."""

    def splat(value: int) -> SSAValue:
        if isinstance(t, VectorType):
            return emit(b, arith.ConstantOp(DenseIntOrFPElementsAttr.from_list(t, [value])))
        return _int(b, value, t)  # type: ignore[arg-type]

    magnitude = emit(b, arith.AndIOp(bits, splat(MAGNITUDE)))
    return emit(b, arith.SubiOp(magnitude, splat(1)))


def _flat(b: Builder, buffer: SSAValue) -> SSAValue:
    """`buffer` (a contiguous memref) as one dim."""
    shape = buffer.type.get_shape()  # type: ignore[attr-defined]
    if len(shape) == 1:
        return buffer
    count = -1 if DYNAMIC_INDEX in shape else math.prod(shape)
    return emit(
        b,
        memref.CollapseShapeOp.build(
            operands=[buffer],
            result_types=[MemRefType(buffer.type.get_element_type(), [count])],  # type: ignore[attr-defined]
            properties={
                "reassociation": ArrayAttr(
                    [ArrayAttr([IntegerAttr(d, i64) for d in range(len(shape))])]
                )
            },
        ),
    )


def _int(b: Builder, value: int, t: IntegerType) -> SSAValue:
    return emit(b, arith.ConstantOp(IntegerAttr(value, t)))


class DotTiles:
    """One parallel nest of tiles over output columns `start` to `start + extent` and
    every row (`mask` lanes of one vector in a columns-form remainder), built at `b`."""

    def __init__(
        self,
        lowering: KernelContext,
        b: Builder,
        item: WorkItem,
        root: ops.DotGeneralOp,
        tiling: DotTiling,
        start: int,
        extent: int,
        columns: int,
        mask: int | None,
        pairs: bool,
        panel: SSAValue | None = None,
        row_part: tuple[int, int, int] | None = None,
        slotted: bool = False,
    ):
        self.lowering, self.item, self.root, self.tiling = lowering, item, root, tiling
        self.panel = panel
        """The packed rhs the tiles read (`pack_rhs`), else None: the rhs in place."""
        self.pairs = pairs
        """Whether the tiles sum bf16 pairs with `DotBF16Op` (`emit_dot_tiles`)."""
        self.columns, self.mask = columns, mask
        self.out_shape = root.result.type.get_shape()  # type: ignore[attr-defined]
        self.k = root.lhs.type.get_shape()[root.contracting[0][0]]  # type: ignore[attr-defined]
        self.lanes = tiling.lanes
        self.rows = tiling.rows if row_part is None else row_part[2]
        first_row, row_count = (0, None) if row_part is None else row_part[:2]
        self.width = columns * self.lanes if tiling.form == "columns" else columns
        loops = [d for d in range(len(self.out_shape)) if d not in (tiling.m, tiling.n)]
        sizes = [lowering.index(self.out_shape[d]) for d in loops]
        steps = [1] * len(loops)
        if mask is None:
            sizes.append(lowering.index(extent))
            steps.append(self.width)
        if tiling.m is not None:
            m_size = self.out_shape[tiling.m] if row_count is None else row_count
            sizes.append(lowering.index(m_size))
            steps.append(self.rows)
        strips = math.prod(self.out_shape[d] for d in loops) * -(-extent // self.width)
        rows_inside = tiling.m is not None and mask is None and strips >= PARALLEL_STRIPS
        if slotted:
            assert panel is not None and mask is None and start == 0
            self.tile, ivs = self.strip_by_strip(b, panel, loops, extent, sizes, steps)
        else:
            self.tile, ivs = lowering.parallel_nest(
                b,
                sizes,
                steps=steps,
                parallel=len(sizes) - (1 if rows_inside else 0),
                per_iteration=self.k,
                min_work=DOT_PARALLEL_MIN_WORK,
            )
        self.at: dict[int, SSAValue] = dict(zip(loops, ivs))
        j = lowering.index(start) if mask is not None else ivs[len(loops)]
        i = ivs[-1] if tiling.m is not None else None
        if i is not None and first_row:
            i = emit(self.tile, arith.AddiOp(i, lowering.index(first_row)))
        self.row_ivs = [self._moved(i, r) for r in range(self.rows)]
        unit = self.lanes if tiling.form == "columns" else 1
        self.column_ivs = [self._moved(j, c * unit) for c in range(columns)]
        self.lhs_source = dot_operand_source(root.lhs)
        self.rhs_source = dot_operand_source(root.rhs)
        self.lhs = lowering.memref_of(self.lhs_source)
        self.rhs = lowering.memref_of(self.rhs_source)
        self.result = item.root.results[0]
        self.target = lowering.memref_of(self.result)
        self.element = element_type(root.result)
        self.stored = signless(self.element)
        """The result's element type in memory (unsigned integers are signless)."""
        self.accumulator = tiling.accumulator
        self.vector_type = VectorType(self.accumulator, [self.lanes])
        self.is_float = is_float(self.accumulator)
        if slotted:  # the task's slot
            self.panel_at = [self.slot]
        elif panel is not None:  # the strip's panel: the rhs's other dims, then the strip
            rank = len(root.rhs.type.get_shape())  # type: ignore[attr-defined]
            k_dim, n_dim = root.contracting[1][0], tiling.rhs_dims.index(tiling.n)
            dims = [tiling.rhs_dims[d] for d in range(rank) if d not in (k_dim, n_dim)]
            strip = emit(self.tile, arith.DivUIOp(j, lowering.index(self.width)))
            self.panel_at = [*(self.at[d] for d in dims), strip]  # type: ignore[index]

    def strip_by_strip(
        self, b: Builder, panel: SSAValue, loops: list[int], extent: int, sizes, steps
    ) -> tuple[Builder, list[SSAValue]]:
        """Strip panels (`dot_packed.Panels.slots`): one task per slot of `panel`, in
        parallel, each taking every slots-th strip in turn: the strip's rhs columns copied
        into the slot (k's runs a vector at a time), then its tiles over the output's
        other dims and rows (`sizes`/`steps` but the strips'). A builder inside the tile
        and the ivs of the output's other dims, the strip's first column, the rows."""
        lowering, k_dim = self.lowering, self.root.contracting[1][0]
        slots, strips = panel.type.get_shape()[0], extent // self.width  # type: ignore[attr-defined]
        outputs = math.prod(self.out_shape) // self.out_shape[self.tiling.n] * extent
        task, (slot,) = lowering.parallel_nest(  # a task's multiply-adds
            b,
            [lowering.index(slots)],
            parallel=1,
            per_iteration=self.k * outputs // slots,
            min_work=DOT_PARALLEL_MIN_WORK,
        )
        self.slot = slot
        later = emit(task, arith.SubiOp(lowering.index(strips + slots - 1), slot))
        count = emit(task, arith.DivUIOp(later, lowering.index(slots)))
        _, body, turn, _ = lowering.loop(task, count)
        strip = emit(
            body, arith.AddiOp(slot, emit(body, arith.MuliOp(turn, lowering.index(slots))))
        )
        first = emit(body, arith.MuliOp(strip, lowering.index(self.width)))
        rhs = lowering.memref_of(dot_operand_source(self.root.rhs))
        vector_type = VectorType(rhs.type.get_element_type(), [self.lanes])  # type: ignore[attr-defined]
        _, copy, kv, _ = lowering.loop(body, lowering.index(self.k))
        for offset in range(0, self.width, self.lanes):
            column = emit(copy, arith.AddiOp(first, lowering.index(offset)))
            at = [kv, column] if k_dim == 0 else [column, kv]
            run = emit(copy, vector.LoadOp(rhs, at, vector_type))
            copy.insert(vector.StoreOp(run, panel, [slot, kv, lowering.index(offset)]))
        copy.insert(scf.YieldOp())
        inner = [d for d in range(len(sizes)) if d != len(loops)]  # all but the strips
        tile, ivs = lowering.stepped_loop_nest(
            body, [sizes[d] for d in inner], [steps[d] for d in inner]
        )
        body.insert(scf.YieldOp())
        return tile, [*ivs[: len(loops)], first, *ivs[len(loops) :]]

    # ------------------------------------------------------------------------- helpers

    def _moved(self, iv: SSAValue | None, by: int) -> SSAValue | None:
        if iv is None or by == 0:
            return iv
        return emit(self.tile, arith.AddiOp(iv, self.lowering.index(by)))

    def index(self, dims, row, column, kv) -> list[SSAValue]:
        """Indices along `dims` (an operand's `lhs_dims`/`rhs_dims`, or the output's)."""
        place = dict(self.at)
        place[self.tiling.n] = column
        if self.tiling.m is not None:
            place[self.tiling.m] = row
        return [kv if d is None else place[d] for d in dims]

    def output_index(self, row, column) -> list[SSAValue]:
        return self.index(range(len(self.out_shape)), row, column, None)

    def mask_of(self, b: Builder, count: int, lanes: int) -> SSAValue:
        mask_type = VectorType(i1, [lanes])
        return emit(b, vector.CreateMaskOp([self.lowering.index(count)], mask_type))

    def rhs_at(self, c: int, kv: SSAValue) -> tuple[SSAValue, list[SSAValue]]:
        """The memref and indices of the tile's `c`-th rhs vector at contracting position
        `kv`: its panel's (`pack_rhs`), else the rhs's own."""
        if self.panel is not None:
            return self.panel, [*self.panel_at, kv, self.lowering.index(c * self.lanes)]
        return self.rhs, self.index(self.tiling.rhs_dims, None, self.column_ivs[c], kv)

    def load(self, b: Builder, source: SSAValue, at, lanes: int, mask) -> SSAValue:
        """`lanes` elements of memref `source` from `at`, the lanes past `mask` zero, in
        their stored type."""
        t = VectorType(source.type.get_element_type(), [lanes])  # type: ignore[attr-defined]
        if mask is None:
            return emit(b, vector.LoadOp(source, at, t))
        passthru = _splat(b, t, 0)
        return emit(b, vector.MaskedLoadOp(source, at, mask, passthru))

    def widened(self, b: Builder, loaded: SSAValue, value: SSAValue) -> SSAValue:
        """`loaded` (elements of tensor `value`) in the accumulators' type."""
        target = (
            VectorType(self.accumulator, loaded.type.get_shape())  # type: ignore[attr-defined]
            if isinstance(loaded.type, VectorType)
            else self.accumulator
        )
        return extend(b, loaded, element_type(value), target)

    def multiply_add(self, b: Builder, x: SSAValue, y: SSAValue, acc: SSAValue) -> SSAValue:
        if self.is_float:
            return emit(b, vector.FMAOp(x, y, acc))
        return emit(b, arith.AddiOp(acc, emit(b, arith.MuliOp(x, y))))

    def rounded(self, b: Builder, total: SSAValue, lanes: int) -> SSAValue:
        """A vector of sums in the result's element type."""
        stored = VectorType(self.element, [lanes])
        if total.type == stored or not self.is_float:
            return total
        return emit(b, arith.TruncFOp(total, stored))

    # --------------------------------------------------------------------- columns form

    def columns_form(self) -> None:
        """The columns form (see the module docstring)."""
        lane_mask = None if self.mask is None else self.mask_of(self.tile, self.mask, self.lanes)
        if self.pairs:
            totals = self._column_pairs(lane_mask)
        else:
            totals = self._column_products(lane_mask)
        self._store_columns(totals, lane_mask)

    def _column_products(self, lane_mask) -> list[SSAValue]:
        tiling, lowering = self.tiling, self.lowering
        zero = _splat(self.tile, self.vector_type, 0)
        loop, body, kv, acc = lowering.loop(
            self.tile, lowering.index(self.k), [zero] * (self.rows * self.columns)
        )
        vectors = [
            self.widened(
                body, self.load(body, *self.rhs_at(c, kv), self.lanes, lane_mask), self.rhs_source
            )
            for c in range(len(self.column_ivs))
        ]
        updated = []
        for row in self.row_ivs:
            at = self.index(tiling.lhs_dims, row, None, kv)
            scalar = self.widened(
                body, emit(body, memref.LoadOp.get(self.lhs, at)), self.lhs_source
            )
            broadcast = emit(body, vector.BroadcastOp(scalar, self.vector_type))
            for v in vectors:
                updated.append(self.multiply_add(body, broadcast, v, acc[len(updated)]))
        body.insert(scf.YieldOp(*updated))
        return list(loop.results)

    def _column_pairs(self, lane_mask) -> list[SSAValue]:
        """bf16 pairs of k: the rhs rows at k and k + 1 interleaved per vector, the lhs
        pair of each row in every lane pair (`_lhs_pairs`)."""
        lowering, lanes = self.lowering, self.lanes
        bf16 = BFloat16Type()
        row_type, pair_type = VectorType(bf16, [lanes]), VectorType(bf16, [2 * lanes])
        interleave = DenseArrayBase.from_list(
            i64, [x for lane in range(lanes) for x in (lane, lane + lanes)]
        )

        def step(b: Builder, kv: SSAValue, acc, paired: bool) -> list[SSAValue]:
            """Positions kv and kv + 1 (kv and a zero when not `paired`)."""
            after = emit(b, arith.AddiOp(kv, lowering.index(1))) if paired else None
            pairs = []
            for c in range(len(self.column_ivs)):
                first = self.load(b, *self.rhs_at(c, kv), lanes, lane_mask)
                if after is None:
                    second = _splat(b, row_type, 0)
                else:
                    second = self.load(b, *self.rhs_at(c, after), lanes, lane_mask)
                shuffle = vector.ShuffleOp(first, second, interleave, result_type=pair_type)
                pairs.append(emit(b, shuffle))
            updated = []
            for both in self._lhs_pairs(b, kv, after, pair_type):
                for pair in pairs:
                    updated.append(emit(b, DotBF16Op(acc[len(updated)], both, pair)))
            return updated

        totals = [_splat(self.tile, self.vector_type, 0)] * (self.rows * self.columns)
        if self.k // 2:
            loop, body, iv, acc = lowering.loop(self.tile, lowering.index(self.k // 2), totals)
            kv = emit(body, arith.MuliOp(iv, lowering.index(2)))
            body.insert(scf.YieldOp(*step(body, kv, acc, True)))
            totals = list(loop.results)
        if self.k % 2:
            totals = step(self.tile, lowering.index(self.k - 1), totals, False)
        return totals

    def _lhs_pairs(self, b: Builder, kv, after, pair_type: VectorType) -> list[SSAValue]:
        """Per tile row, `(lhs[row, kv], lhs[row, after])` in every lane pair (a zero for
        the second without `after`): one 32-bit broadcast per row where k is the lhs's
        last dim; where the rows are, the two runs of rows loaded, interleaved, and each
        row's pair broadcast; else two scalars."""
        bf16, dims, rows = BFloat16Type(), self.tiling.lhs_dims, self.rows

        def broadcast(word: SSAValue) -> SSAValue:
            words = emit(b, vector.BroadcastOp(word, VectorType(i32, [self.lanes])))
            return emit(b, vector.BitcastOp(words, pair_type))

        if after is not None and dims[-1] is None:
            words = []
            for row in self.row_ivs:
                two = emit(
                    b,
                    vector.LoadOp(self.lhs, self.index(dims, row, None, kv), VectorType(bf16, [2])),
                )
                word = emit(b, vector.BitcastOp(two, VectorType(i32, [1])))
                words.append(emit(b, vector.ExtractOp(word, [0], i32)))
            return [broadcast(w) for w in words]
        if after is not None and rows > 1 and dims[-1] == self.tiling.m:
            runs = [
                emit(
                    b,
                    vector.LoadOp(
                        self.lhs,
                        self.index(dims, self.row_ivs[0], None, at),
                        VectorType(bf16, [rows]),
                    ),
                )
                for at in (kv, after)
            ]
            mixed = DenseArrayBase.from_list(i64, [x for r in range(rows) for x in (r, r + rows)])
            both = emit(b, vector.ShuffleOp(*runs, mixed, result_type=VectorType(bf16, [2 * rows])))
            words = emit(b, vector.BitcastOp(both, VectorType(i32, [rows])))
            return [broadcast(emit(b, vector.ExtractOp(words, [r], i32))) for r in range(rows)]
        one = VectorType(bf16, [1])
        repeat = DenseArrayBase.from_list(i64, [0, 1] * self.lanes)
        pairs = []
        for row in self.row_ivs:
            first = emit(b, memref.LoadOp.get(self.lhs, self.index(dims, row, None, kv)))
            if after is None:
                second = emit(b, arith.ConstantOp(FloatAttr(0.0, bf16)))
            else:
                second = emit(b, memref.LoadOp.get(self.lhs, self.index(dims, row, None, after)))
            first, second = (emit(b, vector.BroadcastOp(x, one)) for x in (first, second))
            pairs.append(emit(b, vector.ShuffleOp(first, second, repeat, result_type=pair_type)))
        return pairs

    def _store_columns(self, totals: list[SSAValue], lane_mask: SSAValue | None) -> None:
        """Store a columns tile's sums (rows x column vectors, row-major), or with an
        epilogue stage them on the stack and store each element's epilogue value."""
        tile, columns, lanes = self.tile, self.columns, self.lanes
        if self.item.root is self.root:
            for position, total in enumerate(totals):
                r, c = divmod(position, columns)
                total = self.rounded(tile, total, lanes)
                out = self.output_index(self.row_ivs[r], self.column_ivs[c])
                if lane_mask is None:
                    tile.insert(vector.StoreOp(total, self.target, out))
                else:
                    tile.insert(vector.MaskedStoreOp(self.target, out, lane_mask, total))
            return
        # A stack buffer released after the tile, as memref.alloca_scope lowers (the scope
        # op cannot hold the loops once they are control flow).
        lowering = self.lowering
        saved = emit(tile, llvm.StackSaveOp())
        stage = emit(tile, memref.AllocaOp.get(self.stored, 64, [self.rows, columns * lanes]))
        for position, total in enumerate(totals):
            r, c = divmod(position, columns)
            at = [lowering.index(r), lowering.index(c * lanes)]
            tile.insert(vector.StoreOp(self.rounded(tile, total, lanes), stage, at))
        count = self.width if self.mask is None else self.mask
        body, (r, t) = lowering.stepped_loop_nest(
            tile, [lowering.index(self.rows), lowering.index(count)], [1, 1]
        )
        out = self.output_index(self.row_ivs[0], self.column_ivs[0])
        out[self.tiling.n] = emit(body, arith.AddiOp(out[self.tiling.n], t))
        if self.tiling.m is not None:
            out[self.tiling.m] = emit(body, arith.AddiOp(out[self.tiling.m], r))
        total = emit(body, memref.LoadOp.get(stage, [r, t]))
        value = lowering.epilogue_value(body, self.item, total, out)
        lowering.store(body, value, self.target, out)
        tile.insert(llvm.StackRestoreOp(saved))

    # ------------------------------------------------------------------------ rows form

    def rows_form(self) -> None:
        """The rows form (see the module docstring): k in steps of `lanes`, then one
        masked step for K's remainder; bf16 pairs: steps of 2 x `lanes` consecutive
        positions summed in pairs by `DotBF16Op` (16 lanes from K = 32 on, else 8)."""
        lowering, tiling, columns = self.lowering, self.tiling, self.columns
        pairs = self.pairs
        lanes = self.lanes
        if pairs:
            lanes = 16 if self.k >= 32 else 8
        accumulator_type = VectorType(self.accumulator, [lanes])
        chunk = 2 * lanes if pairs else lanes
        steps_k, tail = divmod(self.k, chunk)

        def accumulate(b: Builder, kv, acc, mask) -> list[SSAValue]:
            lhs = [
                self.load(b, self.lhs, self.index(tiling.lhs_dims, row, None, kv), chunk, mask)
                for row in self.row_ivs
            ]
            rhs = [
                self.load(b, self.rhs, self.index(tiling.rhs_dims, None, c, kv), chunk, mask)
                for c in self.column_ivs
            ]
            if pairs:
                return [
                    emit(b, DotBF16Op(acc[r * columns + c], x, y))
                    for r, x in enumerate(lhs)
                    for c, y in enumerate(rhs)
                ]
            lhs = [self.widened(b, x, self.lhs_source) for x in lhs]
            rhs = [self.widened(b, y, self.rhs_source) for y in rhs]
            return [
                self.multiply_add(b, x, y, acc[r * columns + c])
                for r, x in enumerate(lhs)
                for c, y in enumerate(rhs)
            ]

        totals = [_splat(self.tile, accumulator_type, 0)] * (self.rows * columns)
        if steps_k:
            loop, body, step, acc = lowering.loop(self.tile, lowering.index(steps_k), totals)
            kv = emit(body, arith.MuliOp(step, lowering.index(chunk)))
            body.insert(scf.YieldOp(*accumulate(body, kv, acc, None)))
            totals = list(loop.results)
        if tail:
            mask = self.mask_of(self.tile, tail, chunk)
            totals = accumulate(self.tile, lowering.index(steps_k * chunk), totals, mask)
        self._store_rows(totals)

    def _store_rows(self, totals: list[SSAValue]) -> None:
        """A row's sums stored as one vector, or each as its epilogue value."""
        tile, columns = self.tile, self.columns
        whole = self.item.root is self.root and columns > 1
        for row, sums in zip(self.row_ivs, self._row_sums(totals, rounded=whole)):
            if whole:
                tile.insert(
                    vector.StoreOp(sums, self.target, self.output_index(row, self.column_ivs[0]))
                )
                continue
            for c, column in enumerate(self.column_ivs):
                total = emit(tile, vector.ExtractOp(sums, [c], self.accumulator))
                out = self.output_index(row, column)
                if self.is_float and total.type != self.element:
                    total = emit(tile, arith.TruncFOp(total, self.element))
                value = self.lowering.epilogue_value(tile, self.item, total, out)
                self.lowering.store(tile, value, self.target, out)

    def _row_sums(self, totals: list[SSAValue], rounded: bool) -> list[SSAValue]:
        """Per tile row, a vector of its columns' sums (each accumulator summed across its
        lanes), in the result's element type if `rounded`: picked from `_lane_sums` (each
        rounded whole) where a row's columns divide the lanes, else built from one
        reduction per accumulator."""
        tile, columns = self.tile, self.columns
        lanes = totals[0].type.get_shape()[0]  # type: ignore[attr-defined]
        rows = []
        if lanes % columns == 0:
            vectors = self._lane_sums(totals)
            if rounded:
                vectors = [self.rounded(tile, v, lanes) for v in vectors]
            element = vectors[0].type.get_element_type()  # type: ignore[attr-defined]
            sums_type = VectorType(element, [columns])
            for first in range(0, len(totals), columns):
                source = vectors[first // lanes]
                picked = DenseArrayBase.from_list(
                    i64, range(first % lanes, first % lanes + columns)
                )
                rows.append(
                    emit(tile, vector.ShuffleOp(source, source, picked, result_type=sums_type))
                )
            return rows
        add = vector.CombiningKindAttr(vector.CombiningKindFlag.ADD)
        fastmath = arith.FastMathFlagsAttr(["reassoc"]) if self.is_float else None
        run_type = VectorType(self.accumulator, [columns])
        for first in range(0, len(totals), columns):
            sums = [
                emit(tile, sum_of_lanes(t, add, fastmath)) for t in totals[first : first + columns]
            ]
            run = emit(tile, vector.BroadcastOp(sums[0], run_type))
            for c, total in enumerate(sums[1:], 1):
                run = emit(tile, vector.InsertOp(total, run, [c]))
            rows.append(self.rounded(tile, run, columns) if rounded else run)
        return rows

    def _lane_sums(self, totals: list[SSAValue]) -> list[SSAValue]:
        """Each accumulator summed across its lanes, as a tree over all of them: each level
        adds the low and high halves of every lane group of two vectors (shuffled side by
        side), halving the groups, until every lane is one accumulator's sum: lane `j` of
        vector `q` holds accumulator `q * lanes + j` (zeros past the last). Sixteen
        accumulators of 16 lanes take 15 adds of two shuffles, where reducing each alone
        takes four adds and shuffles apiece."""
        tile = self.tile
        vector_type = totals[0].type
        lanes = vector_type.get_shape()[0]  # type: ignore[attr-defined]
        fastmath = arith.FastMathFlagsAttr(["reassoc"]) if self.is_float else None
        group, level = lanes, list(totals)
        while group > 1:
            if len(level) % 2:
                level.append(_splat(tile, vector_type, 0))
            half = group // 2
            low = [g * group + i for g in range(lanes // group) for i in range(half)]
            high = [x + half for x in low]
            pairs = []
            for x, y in zip(level[::2], level[1::2]):
                picks = [
                    emit(
                        tile,
                        vector.ShuffleOp(
                            x,
                            y,
                            DenseArrayBase.from_list(i64, [*part, *(lanes + p for p in part)]),
                            result_type=vector_type,
                        ),
                    )
                    for part in (low, high)
                ]
                if self.is_float:
                    pairs.append(emit(tile, arith.AddfOp(*picks, fastmath)))
                else:
                    pairs.append(emit(tile, arith.AddiOp(*picks)))
            level, group = pairs, half
        return level


__all__ = ["BF16_PAIRS", "DotTiles", "DotTiling", "dot_tiling", "emit_dot_tiles"]
