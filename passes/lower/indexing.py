"""Index arithmetic of fused groups: from the index of one element of a group's root to the
indices of the elements each member reads, as `arith` ops on `index` values.

Through the fusible ops:

- elementwise (incl. compare, select, convert): the identity;
- `broadcast_in_dim`: operand dim `i` reads result dim `dims[i]`, or 0 where the operand
  dim has size 1 (it is stretched);
- `reshape`: the row-major linear index is preserved. The longest common suffix of dims
  (same static sizes in both shapes) keeps its indices; only the leading dims are
  linearized and delinearized (so the innermost, contiguous loop stays free of divisions);
- `slice`: `start + i * stride` per dim;
- `reverse`, `pad`, `dynamic_slice`, `dynamic_update_slice` and `gather`: the indices
  their semantics name, reading run-time start indices as elements of other values;
- a convolution (as its epilogue's producer): its sum at the element
  (`convolution_element`), its operands read from storage;
- `iota` reads nothing: its element is the index along its dim, converted.

Target-neutral: the caller gives a builder, the root's element indices, a `load` callback
for values read from storage and a `sizes` callback giving a value's dim sizes as `index`
SSA values (static or bound at run time). `evaluate` then builds the scalar computation of
the whole group with `scalar.lower_scalar`.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Sequence

import numpy as np
from accy.dialects import accy as ops
from accy.passes.arena_plan import UPDATES
from accy.passes.element_types import compute_type, shape_of
from accy.passes.lower.scalar import (
    bits_of,
    combine,
    constant,
    convert_element,
    emit,
    lower_scalar,
    lower_scalar_body,
    narrow,
    select_value,
    widen,
)
from xdsl.builder import Builder
from xdsl.dialects import arith, memref, scf
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    BFloat16Type,
    IndexType,
    IntegerType,
    MemRefType,
    TensorType,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.rewriter import InsertPoint

Indices = list[SSAValue]
Load = Callable[[Builder, SSAValue, Sequence[SSAValue]], SSAValue]
"""`(builder, stored tensor value, element indices) -> element`."""
Sizes = Callable[[SSAValue], Sequence[SSAValue]]
"""`tensor value -> its dim sizes as index values`."""

INDEX = IndexType()


def linearize(b: Builder, indices: Sequence[SSAValue], sizes: Sequence[SSAValue]) -> SSAValue:
    """Row-major `((i0 * s1 + i1) * s2 + i2) ...`."""
    if not indices:
        return constant(b, 0, INDEX)
    linear = indices[0]
    for index, size in zip(indices[1:], sizes[1:]):
        linear = emit(b, arith.AddiOp(emit(b, arith.MuliOp(linear, size)), index))
    return linear


def delinearize(b: Builder, linear: SSAValue, sizes: Sequence[SSAValue]) -> Indices:
    """The row-major indices of `linear` in `sizes` (`remui`/`divui` from the last dim)."""
    indices: Indices = []
    for size in reversed(sizes[1:]):
        indices.append(emit(b, arith.RemUIOp(linear, size)))
        linear = emit(b, arith.DivUIOp(linear, size))
    indices.append(linear)
    return indices[::-1]


def broadcast_operand_indices(
    b: Builder, op: ops.BroadcastInDimOp, result_indices: Sequence[SSAValue]
) -> Indices:
    """Operand dim `i` reads result dim `dims[i]`, or 0 where it has static size 1."""
    dims = [int(d) for d in op.broadcast_dimensions.get_values()]
    operand_shape = shape_of(op.operand)
    result_shape = shape_of(op.result)
    indices: Indices = []
    for i, dim in enumerate(dims):
        if operand_shape[i] == 1 and result_shape[dim] != 1:
            indices.append(constant(b, 0, INDEX))
        else:
            indices.append(result_indices[dim])
    return indices


def common_suffix(source: Sequence[int], target: Sequence[int]) -> int:
    """How many trailing dims two shapes share (equal static sizes)."""
    count = 0
    while (
        count < min(len(source), len(target))
        and source[-1 - count] == target[-1 - count]
        and source[-1 - count] != DYNAMIC_INDEX
    ):
        count += 1
    return count


def reshape_operand_indices(
    b: Builder,
    op: ops.ReshapeOp,
    result_indices: Sequence[SSAValue],
    sizes: Sizes,
) -> Indices:
    """The operand element with the same row-major linear index."""
    source, target = shape_of(op.operand), shape_of(op.result)
    if source == target:
        return list(result_indices)
    keep = common_suffix(source, target)
    lead_target = len(target) - keep
    lead_source = len(source) - keep
    tail = list(result_indices[lead_target:])
    if lead_source == 0:
        return tail
    linear = linearize(b, result_indices[:lead_target], list(sizes(op.result))[:lead_target])
    return delinearize(b, linear, list(sizes(op.operand))[:lead_source]) + tail


def transpose_operand_indices(op: ops.TransposeOp, result_indices: Sequence[SSAValue]) -> Indices:
    """Result dim `i` is operand dim `perm[i]`: operand index `perm[i]` = result index `i`."""
    permutation = [int(d) for d in op.permutation.get_values()]
    indices: list[SSAValue | None] = [None] * len(permutation)
    for i, d in enumerate(permutation):
        indices[d] = result_indices[i]
    return indices  # type: ignore[return-value]


def slice_operand_indices(
    b: Builder, op: ops.SliceOp, result_indices: Sequence[SSAValue]
) -> Indices:
    """`start + i * stride` per dim."""
    indices: Indices = []
    for (start, _, stride), index in zip(op.ranges, result_indices):
        if stride != 1:
            index = emit(b, arith.MuliOp(index, constant(b, stride, INDEX)))
        if start != 0:
            index = emit(b, arith.AddiOp(index, constant(b, start, INDEX)))
        indices.append(index)
    return indices


def operand_indices(
    b: Builder,
    op: Operation,
    result_indices: Sequence[SSAValue],
    sizes: Sizes,
) -> Indices:
    """The indices a fusible member `op` reads its operands at, for one result element."""
    if isinstance(op, ops.BroadcastInDimOp):
        return broadcast_operand_indices(b, op, result_indices)
    if isinstance(op, ops.ReshapeOp):
        return reshape_operand_indices(b, op, result_indices, sizes)
    if isinstance(op, ops.SliceOp):
        return slice_operand_indices(b, op, result_indices)
    if isinstance(op, ops.ReverseOp):
        return reverse_operand_indices(b, op, result_indices, sizes)
    return list(result_indices)


def pad_operand_indices(
    b: Builder, op: ops.PadOp, result_indices: Sequence[SSAValue]
) -> tuple[Indices, SSAValue] | None:
    """The operand indices a pad's result element reads, clamped into the operand, and
    whether it is an operand element there rather than padding: along each padded dim,
    `j = i - low` must be a multiple of `interior + 1` and `j / (interior + 1)` an index of
    the operand. None when the operand is empty (a padded dim is static: the CPU target
    refuses padding a dynamic dim)."""
    shape = shape_of(op.operand)
    if 0 in shape:
        return None
    index = IndexType()
    indices: Indices = []
    inside: SSAValue | None = None
    for i, size, (low, high, interior) in zip(result_indices, shape, op.edges):
        if (low, high, interior) == (0, 0, 0):  # unpadded (the one way a dim may be dynamic)
            indices.append(i)
            continue
        j = emit(b, arith.SubiOp(i, constant(b, low, index))) if low else i
        conditions = [
            emit(b, arith.CmpiOp(j, constant(b, 0, index), "sge")),
        ]
        position = j
        if interior:
            step = constant(b, interior + 1, index)
            remainder = emit(b, arith.RemSIOp(j, step))
            conditions.append(emit(b, arith.CmpiOp(remainder, constant(b, 0, index), "eq")))
            position = emit(b, arith.DivSIOp(j, step))
        conditions.append(emit(b, arith.CmpiOp(position, constant(b, size, index), "slt")))
        clamped = emit(b, arith.MaxSIOp(position, constant(b, 0, index)))
        indices.append(emit(b, arith.MinSIOp(clamped, constant(b, size - 1, index))))
        for condition in conditions:
            inside = condition if inside is None else emit(b, arith.AndIOp(inside, condition))
    if inside is None:  # rank 0: the operand itself
        inside = constant(b, True, IntegerType(1))
    return indices, inside


def clamped_starts(
    b: Builder, starts: Sequence[SSAValue], extents: Sequence[SSAValue], sizes: Sequence[int]
) -> Indices:
    """Where a block of `sizes` begins along each dim of a tensor of `extents`:
    `clamp(start[d], 0, extent - size)`, as StableHLO clamps dynamic slices and updates
    (`starts`: the start index elements, integers of any width)."""
    index = IndexType()
    firsts: Indices = []
    for start, extent, size in zip(starts, extents, sizes):
        first = emit(b, arith.IndexCastOp(start, index))
        last = emit(b, arith.SubiOp(extent, constant(b, size, index)))
        first = emit(b, arith.MaxSIOp(first, constant(b, 0, index)))
        firsts.append(emit(b, arith.MinSIOp(first, last)))
    return firsts


def dynamic_slice_operand_indices(
    b: Builder,
    op: ops.DynamicSliceOp,
    result_indices: Sequence[SSAValue],
    starts: Sequence[SSAValue],
    sizes: Sizes,
) -> Indices:
    """Result index `i` of dim `d` reads operand index `clamp(start[d], 0, extent - size)
    + i`."""
    firsts = clamped_starts(b, starts, sizes(op.operand), op.sizes)
    return [emit(b, arith.AddiOp(first, i)) for first, i in zip(firsts, result_indices)]


def gather_operand_indices(
    b: Builder,
    op: ops.GatherOp,
    result_indices: Sequence[SSAValue],
    read_index: Callable[[Indices], SSAValue],
    sizes: Sizes,
) -> Indices:
    """The operand element a gather's result element reads (StableHLO's gather):
    `clamped start + batching index + offset index` per operand dim, where component `k`
    of the start vector is the `start_indices` element at the result's batch indices with
    `k` inserted at `index_vector_dim` (`read_index` loads it) and clamped as in
    `clamped_starts`."""
    offset_dims = op.dims("offset_dims")
    dropped = set(op.dims("collapsed_slice_dims")) | set(op.dims("operand_batching_dims"))
    vector_dim = op.vector_dim
    index_rank = len(shape_of(op.start_indices))
    shape = shape_of(op.operand)
    extents = sizes(op.operand)
    batch = [i for d, i in enumerate(result_indices) if d not in offset_dims]
    offsets = iter(result_indices[d] for d in offset_dims)
    parts: list[list[SSAValue]] = [[] for _ in shape]
    for k, d in enumerate(op.dims("start_index_map")):
        position = list(batch)
        if vector_dim < index_rank:
            position.insert(vector_dim, constant(b, k, INDEX))
        parts[d] += clamped_starts(b, [read_index(position)], [extents[d]], [op.sizes[d]])
    for d, e in zip(op.dims("operand_batching_dims"), op.dims("start_indices_batching_dims")):
        parts[d].append(batch[e if e < vector_dim else e - 1])
    for d in range(len(shape)):
        if d not in dropped:
            parts[d].append(next(offsets))
    indices: Indices = []
    for terms in parts:
        total = terms[0] if terms else constant(b, 0, INDEX)
        for term in terms[1:]:
            total = emit(b, arith.AddiOp(total, term))
        indices.append(total)
    return indices


def update_starts(
    b: Builder, op: ops.DynamicUpdateSliceOp, starts: Sequence[SSAValue], sizes: Sizes
) -> Indices:
    """Where the update's block begins along each dim (`clamped_starts`)."""
    return clamped_starts(b, starts, sizes(op.operand), shape_of(op.update))


def scatter_result_indices(
    b: Builder,
    op: ops.ScatterOp,
    update_indices: Sequence[SSAValue],
    read_index: Callable[[Indices], SSAValue],
    extents: Sequence[SSAValue] | None = None,
) -> tuple[Indices, SSAValue]:
    """The result element an update element combines into (StableHLO's scatter), and
    whether it lies inside the result: `start + batching index + window index` per
    operand dim, component `k` of the start vector being the `scatter_indices` element at
    the update's scatter indices with `k` inserted at `index_vector_dim` (`read_index`
    loads it; not clamped); `extents` are the result's dim sizes (default: its static
    shape)."""
    window_dims = op.dims("update_window_dims")
    vector_dim = op.vector_dim
    index_rank = len(shape_of(op.scatter_indices))
    shape = shape_of(op.operand)
    scatter = [i for d, i in enumerate(update_indices) if d not in window_dims]
    parts: list[list[SSAValue]] = [[] for _ in shape]
    for k, d in enumerate(op.dims("scatter_dims_to_operand_dims")):
        position = list(scatter)
        if vector_dim < index_rank:
            position.insert(vector_dim, constant(b, k, INDEX))
        parts[d].append(emit(b, arith.IndexCastOp(read_index(position), INDEX)))
    for d, e in zip(op.dims("input_batching_dims"), op.dims("scatter_indices_batching_dims")):
        parts[d].append(scatter[e if e < vector_dim else e - 1])
    operand_window = ops.scatter_window_dims(
        len(shape), op.dims("inserted_window_dims"), op.dims("input_batching_dims")
    )
    for d, u in zip(operand_window, window_dims):
        parts[d].append(update_indices[u])
    indices: Indices = []
    inside = constant(b, True, IntegerType(1))
    sizes = extents if extents is not None else [constant(b, n, INDEX) for n in shape]
    for terms, extent in zip(parts, sizes):
        total = terms[0] if terms else constant(b, 0, INDEX)
        for term in terms[1:]:
            total = emit(b, arith.AddiOp(total, term))
        indices.append(total)
        # One unsigned compare is `0 <= total < extent` for index values.
        below = emit(b, arith.CmpiOp(total, extent, "ult"))
        inside = emit(b, arith.AndIOp(inside, below))
    return indices, inside


def updated_in_place(kernel) -> bool:
    """Whether a kernel rooted at `dynamic_update_slice` or `scatter` writes its result
    over its operand's buffer (the plan's in-place reuse: two views of one arena at one
    offset), so that only the updated elements need writing."""
    from xdsl.dialects import memref

    root = kernel.root
    if not isinstance(root, UPDATES) or root.operand not in kernel.buffers:
        return False
    read, written = kernel.buffers[root.operand], kernel.buffers[root.result]
    if read is written:
        return True
    a, b = read.owner, written.owner
    return (
        isinstance(a, memref.ViewOp)
        and isinstance(b, memref.ViewOp)
        and a.source is b.source
        and a.byte_shift is b.byte_shift
        and read.type == written.type
    )


def update_indices(
    b: Builder,
    op: ops.DynamicUpdateSliceOp,
    result_indices: Sequence[SSAValue],
    starts: Sequence[SSAValue],
    sizes: Sizes,
) -> tuple[Indices, SSAValue] | None:
    """The update indices result element `i` reads, clamped into the update, and whether
    it lies in the update's block: along dim `d`, `j = i - clamp(start[d], 0, extent -
    size)` with `0 <= j < size`. None when the update is empty."""
    update_shape = shape_of(op.update)
    if 0 in update_shape:
        return None
    index = IndexType()
    indices: Indices = []
    inside: SSAValue | None = None
    firsts = update_starts(b, op, starts, sizes)
    for i, first, size in zip(result_indices, firsts, update_shape):
        j = emit(b, arith.SubiOp(i, first))
        conditions = [
            emit(b, arith.CmpiOp(j, constant(b, 0, index), "sge")),
            emit(b, arith.CmpiOp(j, constant(b, size, index), "slt")),
        ]
        clamped = emit(b, arith.MaxSIOp(j, constant(b, 0, index)))
        indices.append(emit(b, arith.MinSIOp(clamped, constant(b, size - 1, index))))
        for condition in conditions:
            inside = condition if inside is None else emit(b, arith.AndIOp(inside, condition))
    if inside is None:  # rank 0: the update replaces the operand
        inside = constant(b, True, IntegerType(1))
    return indices, inside


def reverse_operand_indices(
    b: Builder, op: ops.ReverseOp, result_indices: Sequence[SSAValue], sizes: Sizes
) -> Indices:
    """Result index `i` of a reversed dim reads operand index `size - 1 - i`."""
    indices = list(result_indices)
    if not op.dims:
        return indices
    extents = sizes(op.operand)
    for d in op.dims:
        last = emit(b, arith.SubiOp(extents[d], constant(b, 1, IndexType())))
        indices[d] = emit(b, arith.SubiOp(last, indices[d]))
    return indices


def iota_element(b: Builder, op: ops.IotaOp, result_indices: Sequence[SSAValue]) -> SSAValue:
    """The index along the iota's dim, converted to its element type."""
    position = emit(b, arith.IndexCastOp(result_indices[op.dimension], IntegerType(64)))
    return convert_element(b, position, op.result.type.get_element_type())  # type: ignore[attr-defined]


class FusedGroup:
    """Builds one element of a fused group's values.

    `members` are the group's ops; values produced outside them are read with `load`.
    Within one call of `evaluate`, an element computed twice (same value, same index
    values) is built once.
    """

    def __init__(
        self,
        members: Sequence[Operation],
        load: Load,
        sizes: Sizes,
        splat: Callable[[Builder, SSAValue], SSAValue | None] | None = None,
    ):
        self.members = set(members)
        self.load = load
        self.sizes = sizes
        self.splat = splat
        """Optional: a scalar for a stored value that is a splat constant (no load)."""

    def evaluate(
        self,
        b: Builder,
        value: SSAValue,
        indices: Sequence[SSAValue],
        known: dict[SSAValue, SSAValue] | None = None,
    ) -> SSAValue:
        """`value`'s element at `indices`; `known` gives values' elements at these very
        indices already computed (a convolution's, for its epilogue)."""
        cache: dict[tuple[SSAValue, tuple[SSAValue, ...]], SSAValue] = {
            (v, tuple(indices)): element for v, element in (known or {}).items()
        }
        return self._value(b, value, list(indices), cache)

    def _value(self, b, value: SSAValue, indices: Indices, cache) -> SSAValue:
        """`_element` run without recursion: each element it asks for is computed by a
        generator pushed on an explicit stack, so a chain of any length (a transformer
        fuses hundreds of ops) needs no Python stack depth."""
        key = (value, tuple(indices))
        if key in cache:
            return cache[key]
        stack = [self._element(b, value, indices, cache)]
        result: SSAValue | None = None
        while stack:
            try:
                wanted, at = stack[-1].send(result)
            except StopIteration as done:
                stack.pop()
                result = done.value
                continue
            result = cache.get((wanted, tuple(at)))
            if result is None:
                stack.append(self._element(b, wanted, at, cache))
        assert result is not None
        return result

    def _element(
        self, b, value: SSAValue, indices: Indices, cache
    ) -> Generator[tuple[SSAValue, Indices], SSAValue, SSAValue]:
        """`value`'s element at `indices`, stored in `cache`; yields `(value, indices)` for
        each element it needs and is sent that element back (see `_value`)."""
        owner = value.owner
        if isinstance(owner, ops.IotaOp) and owner in self.members:
            result = iota_element(b, owner, indices)
        elif isinstance(owner, ops.DynamicSliceOp) and owner in self.members:
            starts = []
            for start in owner.start_indices:
                starts.append((yield (start, [])))
            inner = dynamic_slice_operand_indices(b, owner, indices, starts, self.sizes)
            result = yield (owner.operand, inner)
        elif isinstance(owner, ops.GatherOp) and owner in self.members:
            inner = gather_operand_indices(
                b,
                owner,
                indices,
                lambda position: self._value(b, owner.start_indices, position, cache),
                self.sizes,
            )
            result = yield (owner.operand, inner)
        elif isinstance(owner, ops.ConvolutionOp) and owner in self.members:
            result = convolution_element(b, owner, indices, self.load)
        elif isinstance(owner, ops.DynamicUpdateSliceOp) and owner in self.members:
            starts = []
            for start in owner.start_indices:
                starts.append((yield (start, [])))
            original = yield (owner.operand, indices)
            read = update_indices(b, owner, indices, starts, self.sizes)
            if read is None:  # an empty update
                result = original
            else:
                inner, inside = read
                written = yield (owner.update, inner)
                result = select_value(b, inside, written, original)
        elif isinstance(owner, ops.PadOp) and owner in self.members:
            padding = yield (owner.padding_value, [])
            read = pad_operand_indices(b, owner, indices)
            if read is None:  # an empty operand: every element is padding
                result = padding
            else:
                inner, inside = read
                element = yield (owner.operand, inner)
                result = select_value(b, inside, element, padding)
        elif isinstance(owner, Operation) and owner in self.members:
            inner = operand_indices(b, owner, indices, self.sizes)
            if isinstance(owner, (ops.BroadcastInDimOp, ops.ReshapeOp, ops.SliceOp, ops.ReverseOp)):
                result = yield (owner.operands[0], inner)
            else:
                operands = []
                for operand in owner.operands:
                    operands.append((yield (operand, inner)))
                result = lower_scalar(b, owner, operands)
        else:
            result = self.splat(b, value) if self.splat is not None else None
            if result is None:
                result = self.load(b, value, indices)
        cache[(value, tuple(indices))] = result
        return result


def fold_element(
    b: Builder,
    op: ops.FoldOp,
    kept_indices: Sequence[SSAValue],
    load: Callable[[Builder, SSAValue, Sequence[SSAValue]], SSAValue],
    extents: Sequence[SSAValue] | None = None,
) -> list[SSAValue]:
    """The fold's results at `kept_indices` (one per kept dim): one `scf.for` over the
    reduced positions in row-major order, carrying the accumulated values from the
    inits through the body (`lower_scalar_body`); `load(b, value, indices)` reads an
    operand element. `extents` are the operands' sizes (index values defined at `b`;
    needed where a dim is dynamic), by default their static shape."""
    shape = shape_of(op.inputs[0])
    dims = op.dims
    if extents is None:
        extents = [constant(b, n, INDEX) for n in shape]
    reduced = [extents[d] for d in dims]
    count = constant(b, 1, INDEX)
    for n in reduced:
        count = emit(b, arith.MuliOp(count, n))
    accumulated = [load(b, init, []) for init in op.inits]
    body = Block(arg_types=[INDEX, *(v.type for v in accumulated)])
    inner = Builder(InsertPoint.at_end(body))
    positions = delinearize(inner, body.args[0], list(reduced)) if reduced else []
    kept = iter(kept_indices)
    by_dim = dict(zip(dims, positions))
    at = [by_dim[d] if d in by_dim else next(kept) for d in range(len(shape))]
    elements = [load(inner, value, at) for value in op.inputs]
    values = lower_scalar_body(inner, op.body, [*body.args[1:], *elements])
    inner.insert(scf.YieldOp(*values))
    zero, one = (constant(b, n, INDEX) for n in (0, 1))
    loop = scf.ForOp(zero, count, one, accumulated, body)
    b.insert(loop)
    return list(loop.results)


SortLoad = Callable[[Builder, Sequence[SSAValue]], list[SSAValue]]
"""Every operand's element of a sort at the given indices (from memrefs, or computed by
the fused producers)."""


def memref_elements(sources: Sequence[SSAValue]) -> SortLoad:
    """A `SortLoad` reading one memref per operand."""
    return lambda b, at: [emit(b, memref.LoadOp.get(source, list(at))) for source in sources]


def _less(b: Builder, op: ops.SortOp, lhs: Sequence[SSAValue], rhs: Sequence[SSAValue]):
    pairs = [v for pair in zip(lhs, rhs) for v in pair]
    types = [argument.type for argument in op.comparator.block.args]
    return lower_scalar_body(b, op.comparator, [_released(b, v, t) for v, t in zip(pairs, types)])[
        0
    ]


def _held(b: Builder, values: Sequence[SSAValue]) -> list[SSAValue]:
    """`values` as elements are held across blocks (a sort's, a carried sum): a bf16 one as
    its i16 bits (`bits_of`). LLVM holds a bf16 value in an f32 register on x86 and
    stores it with `vcvtneps2bf16` where the CPU has AVX512_BF16, which reads subnormals
    as zero: an element that is only moved or carried must keep its bits."""
    return [bits_of(b, v) if isinstance(v.type, BFloat16Type) else v for v in values]


def _released(b: Builder, value: SSAValue, t: Attribute) -> SSAValue:
    """A `_held` value as element type `t` (a tensor's, a buffer's or a scalar type)."""
    element = t.get_element_type() if isinstance(t, (TensorType, MemRefType)) else t
    if isinstance(element, BFloat16Type) and value.type != element:
        return emit(b, arith.BitcastOp(value, element))
    return value


def merge_destination(
    b: Builder,
    op: ops.SortOp,
    at: Sequence[SSAValue],
    width: int,
    load: SortLoad,
) -> tuple[list[SSAValue], SSAValue]:
    """The elements at `at` of the sort's sources (`load`, sorted in runs of `width` along
    `dim`) and where along `dim` they go once each pair of runs is merged: their place in
    their run plus how many elements of the other run go before them, found by binary
    search (a right-run element goes after the equal left-run ones: stable)."""
    dim = op.dim
    extent = shape_of(op.inputs[0])[dim]

    def number(n: int) -> SSAValue:
        return constant(b, n, INDEX)

    position = at[dim]
    start = emit(
        b, arith.MuliOp(emit(b, arith.DivUIOp(position, number(2 * width))), number(2 * width))
    )
    mid = emit(b, arith.MinUIOp(emit(b, arith.AddiOp(start, number(width))), number(extent)))
    end = emit(b, arith.MinUIOp(emit(b, arith.AddiOp(start, number(2 * width))), number(extent)))
    in_left = emit(b, arith.CmpiOp(position, mid, "ult"))
    mine = load(b, at)
    lo = emit(b, arith.SelectOp(in_left, mid, start))
    hi = emit(b, arith.SelectOp(in_left, end, mid))

    body = Block(arg_types=[INDEX, INDEX, INDEX])
    inner = Builder(InsertPoint.at_end(body))
    _, low, high = body.args
    active = emit(inner, arith.CmpiOp(low, high, "ult"))
    middle = emit(inner, arith.DivUIOp(emit(inner, arith.AddiOp(low, high)), number(2)))
    probe = emit(inner, arith.MinUIOp(middle, number(extent - 1)))
    probe_at = [probe if d == dim else v for d, v in enumerate(at)]
    other = load(inner, probe_at)
    before = _less(inner, op, other, mine)  # a left element: right-run elements before it
    after = _less(inner, op, mine, other)  # a right element: left-run elements not after it
    true = constant(inner, True, IntegerType(1))
    not_after = emit(inner, arith.XOrIOp(after, true))
    goes_before = emit(inner, arith.SelectOp(in_left, before, not_after))
    step_up = emit(inner, arith.AndIOp(active, goes_before))
    step_down = emit(inner, arith.AndIOp(active, emit(inner, arith.XOrIOp(goes_before, true))))
    next_low = emit(
        inner, arith.SelectOp(step_up, emit(inner, arith.AddiOp(middle, number(1))), low)
    )
    next_high = emit(inner, arith.SelectOp(step_down, middle, high))
    inner.insert(scf.YieldOp(next_low, next_high))
    loop = scf.ForOp(number(0), number(width.bit_length()), number(1), [lo, hi], body)
    b.insert(loop)
    first = loop.results[0]  # (in either run, the place is position - mid + first)
    destination = emit(b, arith.SubiOp(emit(b, arith.AddiOp(position, first)), mid))
    return mine, destination


def merge_runs(
    b: Builder,
    op: ops.SortOp,
    at: Sequence[SSAValue],
    width: int,
    load: SortLoad,
    targets: Sequence[SSAValue],
    kept: int,
) -> None:
    """Merge the pair of sorted runs of `width` that starts at `at[dim]` (the pair's first
    position; the other indices pick the slice) from the sources (`load`) into the first
    `kept` places of the merged run in `targets`, one element per step of an `scf.for`:
    the right run's next element goes first only when the comparator puts it strictly
    before the left run's (stable)."""
    dim = op.dim
    extent = shape_of(op.inputs[0])[dim]

    def number(n: int) -> SSAValue:
        return constant(b, n, INDEX)

    start = at[dim]
    mid = emit(b, arith.MinUIOp(emit(b, arith.AddiOp(start, number(width))), number(extent)))
    end = emit(b, arith.MinUIOp(emit(b, arith.AddiOp(start, number(2 * width))), number(extent)))
    stop = emit(b, arith.MinUIOp(end, emit(b, arith.AddiOp(start, number(kept)))))
    body = Block(arg_types=[INDEX, INDEX, INDEX])
    inner = Builder(InsertPoint.at_end(body))
    k, i, j = body.args

    def element_at(position: SSAValue, last: SSAValue) -> list[SSAValue]:
        clamped = emit(inner, arith.MinUIOp(position, last))
        return _held(inner, load(inner, [clamped if d == dim else v for d, v in enumerate(at)]))

    one = constant(inner, 1, INDEX)
    left = element_at(i, emit(inner, arith.SubiOp(mid, one)))
    right = element_at(j, number(extent - 1))
    right_less = _less(inner, op, right, left)
    left_done = emit(inner, arith.CmpiOp(i, mid, "uge"))
    right_left = emit(inner, arith.CmpiOp(j, end, "ult"))
    takes_right = emit(
        inner, arith.AndIOp(right_left, emit(inner, arith.OrIOp(left_done, right_less)))
    )
    out = [k if d == dim else v for d, v in enumerate(at)]
    for r, l, target in zip(right, left, targets):
        chosen = emit(inner, arith.SelectOp(takes_right, r, l))
        inner.insert(memref.StoreOp.get(_released(inner, chosen, target.type), target, out))
    step = emit(inner, arith.SelectOp(takes_right, one, constant(inner, 0, INDEX)))
    next_i = emit(inner, arith.SubiOp(emit(inner, arith.AddiOp(i, one)), step))
    next_j = emit(inner, arith.AddiOp(j, step))
    inner.insert(scf.YieldOp(next_i, next_j))
    b.insert(scf.ForOp(start, stop, number(1), [start, mid], body))


def insert_sorted(
    b: Builder,
    op: ops.SortOp,
    at: Sequence[SSAValue],
    load: SortLoad,
    targets: Sequence[SSAValue],
) -> None:
    """Sort the slice at `at` (its `dim` index unused) into the `kept` places of `targets`
    by binary insertion, in one sequential `scf.for` over the slice: element i (`load`)
    goes to the first place p among the min(i, kept) placed so far whose element the
    comparator puts after it (after equal ones: stable); when p < kept, the elements from
    p on move up one place (the last one falling off once all kept places are full)."""
    dim = op.dim
    extent = shape_of(op.inputs[0])[dim]
    kept = op.kept
    if not kept:
        return

    def number(bb: Builder, n: int) -> SSAValue:
        return constant(bb, n, INDEX)

    def at_position(position: SSAValue) -> list[SSAValue]:
        return [position if d == dim else v for d, v in enumerate(at)]

    body = Block(arg_types=[INDEX])
    inner = Builder(InsertPoint.at_end(body))
    (i,) = body.args
    element = _held(inner, load(inner, at_position(i)))
    placed = emit(inner, arith.MinUIOp(i, number(inner, kept)))

    search = Block(arg_types=[INDEX, INDEX, INDEX])
    step = Builder(InsertPoint.at_end(search))
    _, low, high = search.args
    active = emit(step, arith.CmpiOp(low, high, "ult"))
    middle = emit(step, arith.DivUIOp(emit(step, arith.AddiOp(low, high)), number(step, 2)))
    probe = emit(step, arith.MinUIOp(middle, number(step, kept - 1)))
    other = memref_elements(targets)(step, at_position(probe))
    before = _less(step, op, element, other)
    true = constant(step, True, IntegerType(1))
    down = emit(step, arith.AndIOp(active, before))
    up = emit(step, arith.AndIOp(active, emit(step, arith.XOrIOp(before, true))))
    next_low = emit(
        step, arith.SelectOp(up, emit(step, arith.AddiOp(middle, number(step, 1))), low)
    )
    next_high = emit(step, arith.SelectOp(down, middle, high))
    step.insert(scf.YieldOp(next_low, next_high))
    zero = number(inner, 0)
    bound = scf.ForOp(
        zero, number(inner, kept.bit_length()), number(inner, 1), [zero, placed], search
    )
    inner.insert(bound)
    place = bound.results[0]

    then = Block()
    insert = Builder(InsertPoint.at_end(then))
    last = emit(insert, arith.MinUIOp(placed, number(insert, kept - 1)))
    shift = Block(arg_types=[INDEX])
    move = Builder(InsertPoint.at_end(shift))
    to = emit(move, arith.SubiOp(last, shift.args[0]))
    below = at_position(emit(move, arith.SubiOp(to, number(move, 1))))
    for target in targets:
        (value,) = _held(move, [emit(move, memref.LoadOp.get(target, below))])
        stored = _released(move, value, target.type)
        move.insert(memref.StoreOp.get(stored, target, at_position(to)))
    move.insert(scf.YieldOp())
    moves = emit(insert, arith.SubiOp(last, place))
    insert.insert(scf.ForOp(number(insert, 0), moves, number(insert, 1), [], shift))
    for value, target in zip(element, targets):
        stored = _released(insert, value, target.type)
        insert.insert(memref.StoreOp.get(stored, target, at_position(place)))
    insert.insert(scf.YieldOp())
    fits = emit(inner, arith.CmpiOp(place, number(inner, kept), "ult"))
    inner.insert(scf.IfOp(fits, [], Region(then)))
    inner.insert(scf.YieldOp())
    b.insert(scf.ForOp(number(b, 0), number(b, extent), number(b, 1), [], body))


# ---------------------------------------------------------------------------------------
# Windows and convolutions
# ---------------------------------------------------------------------------------------


def _number(b: Builder, n: int) -> SSAValue:
    return constant(b, n, INDEX)


def _all(b: Builder, conditions: Sequence[SSAValue]) -> SSAValue | None:
    """The conjunction of `conditions`, None when there are none (always true)."""
    result = None
    for condition in conditions:
        result = condition if result is None else emit(b, arith.AndIOp(result, condition))
    return result


def window_source(
    b: Builder,
    position: SSAValue,
    offset: SSAValue | int,
    *,
    stride: int,
    dilation: int,
    low: int,
    base: int,
    size: int,
) -> tuple[SSAValue, SSAValue | None]:
    """The element of a dim of `size` (dilated by `base`, padded by `low` before) that
    window element `offset` (`dilation` apart) of the window at `position` (`stride`
    apart) reads, and whether it is one (None: always; else an i1, the index then 0
    where it is not)."""
    p = emit(b, arith.MuliOp(position, _number(b, stride))) if stride != 1 else position
    if isinstance(offset, int):
        shift = offset * dilation - low
    else:
        scaled = emit(b, arith.MuliOp(offset, _number(b, dilation))) if dilation != 1 else offset
        p = emit(b, arith.AddiOp(p, scaled))
        shift = -low
    if shift:
        p = emit(b, arith.AddiOp(p, _number(b, shift)))
    conditions = []
    conditions.append(emit(b, arith.CmpiOp(p, _number(b, 0), "sge")))
    conditions.append(emit(b, arith.CmpiOp(p, _number(b, (size - 1) * base + 1), "slt")))
    if base != 1:
        remainder = emit(b, arith.RemSIOp(p, _number(b, base)))
        conditions.append(emit(b, arith.CmpiOp(remainder, _number(b, 0), "eq")))
    inside = _all(b, conditions)
    assert inside is not None
    index = emit(b, arith.SelectOp(inside, p, _number(b, 0)))
    if base != 1:
        index = emit(b, arith.DivUIOp(index, _number(b, base)))
    return index, inside


def window_read(
    b: Builder,
    position: SSAValue,
    offset: SSAValue | int,
    *,
    window: int,
    stride: int,
    dilation: int,
    low: int,
    high: int,
    base: int,
    size: int,
) -> tuple[SSAValue, SSAValue | None]:
    """`window_source`, or the position itself (always inside) where the window leaves the
    dim untouched (window 1, stride 1, no dilation, no padding)."""
    if (window, stride, dilation, low, base, high) == (1, 1, 1, 0, 1, 0):
        return position, None
    return window_source(
        b, position, offset, stride=stride, dilation=dilation, low=low, base=base, size=size
    )


def reduce_window_element(
    b: Builder,
    op: ops.ReduceWindowOp,
    at: Sequence[SSAValue],
    load: Load,
) -> list[SSAValue]:
    """The reduce_window's results at `at`: one `scf.for` over the window's positions in
    row-major order carrying the accumulated values from the inits through the body;
    an element outside the operands (padding or a dilation hole) is the init."""
    shape = shape_of(op.inputs[0])
    window = op.window_list("window_dimensions")
    strides = op.window_list("window_strides")
    bases = op.window_list("base_dilations")
    dilations = op.window_list("window_dilations")
    lows = op.window_list("padding_low")
    highs = op.window_list("padding_high")
    inits = [load(b, init, []) for init in op.inits]
    if 0 in shape:  # every element is padding
        elements = list(inits)
        values = list(inits)
        for _ in range(int(np.prod(window))):
            values = lower_scalar_body(b, op.body, [*values, *elements])
        return values
    moving = [d for d in range(len(shape)) if window[d] != 1]
    count = int(np.prod([window[d] for d in moving]))
    body = Block(arg_types=[INDEX, *(v.type for v in inits)])
    inner = Builder(InsertPoint.at_end(body))
    offsets = delinearize(inner, body.args[0], [_number(inner, window[d]) for d in moving])
    offset_of = dict(zip(moving, offsets))
    indices, conditions = [], []
    for d in range(len(shape)):
        index, inside = window_read(
            inner,
            at[d],
            offset_of.get(d, 0),
            window=window[d],
            stride=strides[d],
            dilation=dilations[d],
            low=lows[d],
            high=highs[d],
            base=bases[d],
            size=shape[d],
        )
        indices.append(index)
        if inside is not None:
            conditions.append(inside)
    inside = _all(inner, conditions)
    elements = []
    for value, init in zip(op.inputs, inits):
        element = load(inner, value, indices)
        if inside is not None:
            element = emit(inner, arith.SelectOp(inside, element, init))
        elements.append(element)
    values = lower_scalar_body(inner, op.body, [*body.args[1:], *elements])
    inner.insert(scf.YieldOp(*values))
    loop = scf.ForOp(_number(b, 0), _number(b, count), _number(b, 1), inits, body)
    b.insert(loop)
    return list(loop.results)


def select_and_scatter_element(
    b: Builder,
    op: ops.SelectAndScatterOp,
    at: Sequence[SSAValue],
    load: Load,
) -> SSAValue:
    """The select_and_scatter's result at `at`, gathered instead of scattered: from the
    init, for each window that holds `at` (in row-major order of the windows), the
    window's pick (`select` over its elements inside the operand, row-major) and, when it
    is `at`, the window's source element combined in by `scatter`."""
    shape = shape_of(op.operand)
    source_shape = shape_of(op.source)
    window = op.window_list("window_dimensions")
    strides = op.window_list("window_strides")
    lows = op.window_list("padding_low")
    highs = op.window_list("padding_high")
    init = load(b, op.init, [])
    if 0 in source_shape:
        return init
    count = int(np.prod(window))
    # a window picks within the dims it moves along (the others are untouched: static
    # sizes are needed only for these)
    moving = [
        d
        for d in range(len(shape))
        if not ops.untouched(window[d], strides[d], padding=(lows[d], highs[d]))
    ]
    me = linearize(b, [at[d] for d in moving], [_number(b, shape[d]) for d in moving])
    sizes = [_number(b, w) for w in window]

    # The result is carried as its bits where it is bf16 (see `_held`): it is stored after
    # the loop, and the windows may combine nothing into it.
    element_type = init.type
    init = _held(b, [init])[0]
    body = Block(arg_types=[INDEX, init.type])
    inner = Builder(InsertPoint.at_end(body))
    # windows in row-major order: window offsets from the last one back
    backwards = emit(inner, arith.SubiOp(_number(inner, count - 1), body.args[0]))
    offsets = delinearize(inner, backwards, sizes)
    windows, conditions = [], []
    for d in range(len(shape)):
        if d not in moving:
            windows.append(at[d])
            continue
        t = emit(inner, arith.AddiOp(at[d], _number(inner, lows[d])))
        t = emit(inner, arith.SubiOp(t, offsets[d]))
        conditions.append(emit(inner, arith.CmpiOp(t, _number(inner, 0), "sge")))
        limit = (source_shape[d] - 1) * strides[d] + 1
        conditions.append(emit(inner, arith.CmpiOp(t, _number(inner, limit), "slt")))
        if strides[d] != 1:
            rem = emit(inner, arith.RemSIOp(t, _number(inner, strides[d])))
            conditions.append(emit(inner, arith.CmpiOp(rem, _number(inner, 0), "eq")))
        windows.append(t)
    holds = _all(inner, conditions)
    if holds is None:  # no dim moves (windows of 1, strides of 1): every window holds
        holds = constant(inner, True, IntegerType(1))

    then = Block()
    tb = Builder(InsertPoint.at_end(then))
    s = [
        emit(tb, arith.DivUIOp(t, _number(tb, stride))) if stride != 1 else t
        for t, stride in zip(windows, strides)
    ]
    # the window's pick: (linear index, value, found) through its elements in order
    pick_body = Block(arg_types=[INDEX, INDEX, element_type, IntegerType(1)])
    pb = Builder(InsertPoint.at_end(pick_body))
    k, picked_at, picked, found = pick_body.args
    ks = delinearize(pb, k, sizes)
    q, inside = [], []
    for d in range(len(shape)):
        if d not in moving:
            q.append(s[d])
            continue
        index, ok = window_source(
            pb, s[d], ks[d], stride=strides[d], dilation=1, low=lows[d], base=1, size=shape[d]
        )
        q.append(index)
        if ok is not None:
            inside.append(ok)
    valid = _all(pb, inside)
    element = load(pb, op.operand, q)
    (keep,) = lower_scalar_body(pb, op.select, [picked, element])
    keep = emit(pb, arith.AndIOp(found, keep))
    take = emit(pb, arith.XOrIOp(keep, constant(pb, True, IntegerType(1))))
    if valid is not None:
        take = emit(pb, arith.AndIOp(take, valid))
    here = linearize(pb, [q[d] for d in moving], [_number(pb, shape[d]) for d in moving])
    next_at = emit(pb, arith.SelectOp(take, here, picked_at))
    next_value = emit(pb, arith.SelectOp(take, element, picked))
    next_found = emit(pb, arith.OrIOp(found, take))
    pb.insert(scf.YieldOp(next_at, next_value, next_found))
    false = constant(tb, False, IntegerType(1))
    search = scf.ForOp(
        _number(tb, 0),
        _number(tb, count),
        _number(tb, 1),
        [_number(tb, 0), _released(tb, init, element_type), false],
        pick_body,
    )
    tb.insert(search)
    chosen = emit(tb, arith.CmpiOp(search.results[0], me, "eq"))
    chosen = emit(tb, arith.AndIOp(chosen, search.results[2]))
    source = load(tb, op.source, s)
    current = _released(tb, body.args[1], element_type)
    (combined,) = lower_scalar_body(tb, op.scatter, [current, source])
    (combined,) = _held(tb, [combined])
    tb.insert(scf.YieldOp(emit(tb, arith.SelectOp(chosen, combined, body.args[1]))))
    otherwise = Block()
    Builder(InsertPoint.at_end(otherwise)).insert(scf.YieldOp(body.args[1]))
    branch = scf.IfOp(holds, [init.type], Region(then), Region(otherwise))
    inner.insert(branch)
    inner.insert(scf.YieldOp(branch.results[0]))
    loop = scf.ForOp(_number(b, 0), _number(b, count), _number(b, 1), [init], body)
    b.insert(loop)
    return _released(b, loop.results[0], element_type)


def convolution_input(
    b: Builder,
    op: ops.ConvolutionOp,
    batch: SSAValue,
    positions: Sequence[SSAValue],
    offsets: Sequence[SSAValue],
) -> tuple[list[SSAValue | None], SSAValue | None]:
    """The input indices that window position `offsets` (one per spatial dim) of result
    spatial position `positions` reads, input batch `batch` (group offset included) and
    the feature index left to fill (None), and whether they fall on the input (an i1,
    the index then 0; None: always)."""
    lhs_shape = shape_of(op.lhs)
    lb, _lf, *ls = op.window_list("lhs_dims")
    kernel = [shape_of(op.rhs)[d] for d in op.window_list("rhs_dims")[2:]]
    strides = op.window_list("window_strides")
    lows, highs = op.window_list("padding_low"), op.window_list("padding_high")
    lhs_dil, rhs_dil = op.window_list("lhs_dilation"), op.window_list("rhs_dilation")
    indices: list[SSAValue | None] = [None] * len(lhs_shape)
    indices[lb] = batch
    conditions = []
    for i, (position, offset) in enumerate(zip(positions, offsets)):
        index, inside = window_read(
            b,
            position,
            offset,
            window=kernel[i],
            stride=strides[i],
            dilation=rhs_dil[i],
            low=lows[i],
            high=highs[i],
            base=lhs_dil[i],
            size=lhs_shape[ls[i]],
        )
        indices[ls[i]] = index
        if inside is not None:
            conditions.append(inside)
    return indices, _all(b, conditions)


def convolution_kernel(
    b: Builder, op: ops.ConvolutionOp, feature: SSAValue, offsets: Sequence[SSAValue]
) -> list[SSAValue | None]:
    """The kernel indices of output feature `feature` at window position `offsets`
    (reversed where the op says), the input feature index left to fill (None)."""
    _ri, ro, *rs = op.window_list("rhs_dims")
    rhs_shape = shape_of(op.rhs)
    indices: list[SSAValue | None] = [None] * len(rhs_shape)
    indices[ro] = feature
    for i, (d, offset) in enumerate(zip(rs, offsets)):
        if op.window_list("window_reversal")[i]:
            offset = emit(b, arith.SubiOp(_number(b, rhs_shape[d] - 1), offset))
        indices[d] = offset
    return indices


def convolution_groups(
    b: Builder, op: ops.ConvolutionOp, batch: SSAValue, feature: SSAValue
) -> tuple[SSAValue, SSAValue | None]:
    """For result batch `batch` and output feature `feature`: the input batch it reads
    (batch groups: the group's part of the input batch) and the first input feature of
    its group (feature groups; None without)."""
    lhs_shape, rhs_shape = shape_of(op.lhs), shape_of(op.rhs)
    ri, ro = op.window_list("rhs_dims")[:2]
    outputs = rhs_shape[ro]
    if op.batch_groups > 1:
        group = emit(b, arith.DivUIOp(feature, _number(b, outputs // op.batch_groups)))
        size = lhs_shape[op.window_list("lhs_dims")[0]] // op.batch_groups
        batch = emit(b, arith.AddiOp(batch, emit(b, arith.MuliOp(group, _number(b, size)))))
    if op.feature_groups > 1:
        group = emit(b, arith.DivUIOp(feature, _number(b, outputs // op.feature_groups)))
        return batch, emit(b, arith.MuliOp(group, _number(b, rhs_shape[ri])))
    return batch, None


def convolution_operand(
    b: Builder, op: ops.ConvolutionOp, load: Load, value: SSAValue, indices
) -> SSAValue:
    """An operand element converted to the result's element type, in its compute type."""
    result_type = op.result.type.get_element_type()  # type: ignore[attr-defined]
    element = load(b, value, indices)
    source = value.type.get_element_type()  # type: ignore[attr-defined]
    if source != result_type:
        element = convert_element(b, element, result_type, source)
    return widen(b, element)


def convolution_element(
    b: Builder,
    op: ops.ConvolutionOp,
    at: Sequence[SSAValue],
    load: Load,
) -> SSAValue:
    """The convolution's result element at `at`: one `scf.for` over the kernel's window
    positions (row-major) and, inside, one over its input features, accumulating input x
    kernel in the result's compute type (f32 for f16/bf16) from zero; rounded once. A
    position on padding or a dilation hole reads zero and is multiplied like any other
    (an inf or NaN weight there makes the element NaN, as the reference says)."""
    lhs_shape, rhs_shape = shape_of(op.lhs), shape_of(op.rhs)
    _lb, lf, *_ls = op.window_list("lhs_dims")
    ri, _ro, *rs = op.window_list("rhs_dims")
    ob, of, *os = op.window_list("result_dims")
    result_type = op.result.type.get_element_type()  # type: ignore[attr-defined]
    acc_type = compute_type(result_type)
    zero = constant(b, 0, acc_type)
    inputs = rhs_shape[ri]
    batch, feature_base = convolution_groups(b, op, at[ob], at[of])
    kernel_sizes = [rhs_shape[d] for d in rs]
    count = int(np.prod(kernel_sizes))
    if count == 0 or inputs == 0 or 0 in lhs_shape:
        return narrow(b, zero, result_type)

    body = Block(arg_types=[INDEX, acc_type])
    inner = Builder(InsertPoint.at_end(body))
    ks = delinearize(inner, body.args[0], [_number(inner, n) for n in kernel_sizes])
    lhs_index, inside = convolution_input(inner, op, batch, [at[d] for d in os], ks)
    rhs_index = convolution_kernel(inner, op, at[of], ks)

    def features(builder: Builder) -> SSAValue:
        loop_body = Block(arg_types=[INDEX, acc_type])
        fb = Builder(InsertPoint.at_end(loop_body))
        c = loop_body.args[0]
        channel = emit(fb, arith.AddiOp(feature_base, c)) if feature_base is not None else c
        lhs_at = list(lhs_index)
        rhs_at = list(rhs_index)
        lhs_at[lf] = channel
        rhs_at[ri] = c
        x = convolution_operand(fb, op, load, op.lhs, lhs_at)
        if inside is not None:  # the indices are 0 there: the load stays in bounds
            x = emit(fb, arith.SelectOp(inside, x, zero))
        w = convolution_operand(fb, op, load, op.rhs, rhs_at)
        product = combine(fb, ops.CombinerKind.MUL, x, w)
        fb.insert(scf.YieldOp(combine(fb, ops.CombinerKind.ADD, loop_body.args[1], product)))
        loop = scf.ForOp(
            _number(builder, 0),
            _number(builder, inputs),
            _number(builder, 1),
            [body.args[1]],
            loop_body,
        )
        builder.insert(loop)
        return loop.results[0]

    inner.insert(scf.YieldOp(features(inner)))
    loop = scf.ForOp(_number(b, 0), _number(b, count), _number(b, 1), [zero], body)
    b.insert(loop)
    return narrow(b, loop.results[0], result_type)


WINDOW_ELEMENTS = {
    ops.ReduceWindowOp: reduce_window_element,
    ops.SelectAndScatterOp: lambda b, op, at, load: [select_and_scatter_element(b, op, at, load)],
}
"""Root op type -> `(builder, op, result indices, load) -> its results' elements there`:
the work items of kind `window`, one result element at a time (a `convolution` item is
its fused group's root, the convolution a member `FusedGroup` evaluates)."""


def window_work(op: Operation) -> int:
    """Steps one result element of a `window` or `convolution` work item takes."""
    if isinstance(op, ops.ConvolutionOp):
        rhs = shape_of(op.rhs)
        return max(1, int(np.prod(rhs)) // max(1, rhs[op.window_list("rhs_dims")[1]]))
    window = int(np.prod(op.window_list("window_dimensions")))  # type: ignore[attr-defined]
    return window * window if isinstance(op, ops.SelectAndScatterOp) else window
