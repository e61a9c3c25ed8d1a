"""The numpy reference interpreter: the oracle compiled targets are tested against.

`run(module, "f", *arrays)` evaluates the `func.func @f` of an accy program op by op with
numpy and returns its results as fresh arrays. Semantics are StableHLO's:

- dtypes: f32 -> float32, f16 -> float16, bf16 -> `ml_dtypes.bfloat16`, i1 -> bool,
  i32 -> int32, i64 -> int64. Every value has exactly the dtype of its element type.
- f16 and bf16 math is computed in float32 and rounded back to the element type after each
  op (float32 holds more than twice the bits of either, so for add, subtract, multiply,
  divide and sqrt this is exactly the correctly rounded result). Reductions, scans and
  dot_general on f16/bf16 accumulate in float32 and round once at the end. Float sums of a
  reduce are pairwise (`_reduce`), so their error does not grow with the number of
  elements (StableHLO leaves a reduce's order unspecified); float prefix sums of a scan
  accumulate in float64 and round once (a `rounded` scan rounds every step; products
  multiply in order in their compute type).
- Integer arithmetic wraps (two's complement). Integer divide truncates toward zero; as in
  XLA, `x / 0` is -1 and `MIN / -1` is MIN. Integer power is repeated multiplication
  (wrapping); a negative exponent gives 0, except for bases 1 (-> 1) and -1 (-> +-1).
- i1 arithmetic in reduce/scan/dot_general: add is OR, mul is AND, max is OR, min is AND.
- convert: float -> int truncates toward zero and saturates at the integer range (NaN -> 0,
  as XLA does); anything -> i1 is `!= 0`; i1 -> number is 0/1; int -> int wraps; float ->
  float rounds to nearest even; int -> float rounds via float64.
- Floats follow IEEE: division by zero, overflow and NaN give inf/NaN without warnings;
  maximum/minimum propagate NaN and order -0 below +0 (IEEE 754-2019's, as MLIR's).
- Dynamic dims (`?`) take the size of the actual arrays. Shapes that disagree at run time
  (two `?` operands of an elementwise op with different sizes, say) raise `AccyInputError`
  at the op's location instead of letting numpy broadcast.

Arguments are checked against the signature before anything runs; problems raise
`AccyInputError` naming the argument.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    ModuleOp,
)
from xdsl.ir import Block, Operation, SSAValue

from accy import arguments, op_semantics
from accy.diagnostics import AccyError, AccyInputError, wrong_type
from accy.dialects import accy
from accy.dtypes import is_bfloat16, numpy_dtype, tensor_spec
from accy.op_semantics import (
    _dtype_of,
    _is_float,
    _low_precision,
    _op_error,
    _shape_matches,
    _shape_text,
    _signed_zero,
    _tensor_type,
    _wide,
)

__all__ = ["check_arguments", "find_function", "run", "ulp_difference"]

Env = dict[SSAValue, np.ndarray]


def _transpose(op: accy.TransposeOp, operand: np.ndarray) -> np.ndarray:
    return np.transpose(operand, [int(d) for d in op.permutation.get_values()])


def _iota(op: accy.IotaOp) -> np.ndarray:
    shape = tuple(_tensor_type(op.result).get_shape())
    if DYNAMIC_INDEX in shape:
        raise _op_error(
            op, f"cannot tell the size of result dim {shape.index(DYNAMIC_INDEX)}: it is dynamic"
        )
    dim = op.dimension
    index = np.arange(shape[dim], dtype=np.int64).reshape(
        [shape[dim] if d == dim else 1 for d in range(len(shape))]
    )
    return np.broadcast_to(index, shape).astype(_dtype_of(op.result))


def _concatenate(op: accy.ConcatenateOp, *operands: np.ndarray) -> np.ndarray:
    dim = op.dim
    for index, operand in enumerate(operands[1:], 1):
        first = operands[0].shape
        if any(a != b for d, (a, b) in enumerate(zip(first, operand.shape)) if d != dim):
            raise _op_error(
                op,
                f"operand #{index} shape {operand.shape} does not match operand #0 "
                f"shape {first} outside dim {dim}",
            )
    return np.concatenate(operands, axis=dim)


def _slice(op: accy.SliceOp, operand: np.ndarray) -> np.ndarray:
    for d, ((_, limit, _), size) in enumerate(zip(op.ranges, operand.shape)):
        if limit > size:
            raise _op_error(op, f"limit {limit} of dim {d} is beyond its size {size} at run time")
    return operand[tuple(slice(lo, hi, st) for lo, hi, st in op.ranges)]


def _reverse(op: accy.ReverseOp, operand: np.ndarray) -> np.ndarray:
    return np.flip(operand, axis=op.dims) if op.dims else operand.copy()


def _pad(op: accy.PadOp, operand: np.ndarray, value: np.ndarray) -> np.ndarray:
    result = operand
    for d, (low, high, interior) in enumerate(op.edges):
        size = result.shape[d]
        if interior and size:  # interior first, then the edges
            shape = list(result.shape)
            shape[d] = size + (size - 1) * interior
            spread = np.full(shape, value, dtype=operand.dtype)
            index = [slice(None)] * result.ndim
            index[d] = slice(None, None, interior + 1)
            spread[tuple(index)] = result
            result = spread
        widths = [(0, 0)] * result.ndim  # the positive edges, then the negative ones crop
        widths[d] = (max(low, 0), max(high, 0))
        result = np.pad(result, widths, constant_values=value)
        keep = [slice(None)] * result.ndim
        keep[d] = slice(max(-low, 0), max(result.shape[d] - max(-high, 0), max(-low, 0)))
        result = result[tuple(keep)]
    return np.array(result, dtype=operand.dtype, order="C")


def _dynamic_slice(op: accy.DynamicSliceOp, operand: np.ndarray, *starts: np.ndarray) -> np.ndarray:
    index = []
    for start, size, extent in zip(starts, op.sizes, operand.shape):
        first = min(max(int(start), 0), extent - size)
        index.append(slice(first, first + size))
    return operand[tuple(index)].copy()


def _dynamic_update_slice(
    op: accy.DynamicUpdateSliceOp, operand: np.ndarray, update: np.ndarray, *starts: np.ndarray
) -> np.ndarray:
    result = operand.copy()
    index = []
    for start, size, extent in zip(starts, update.shape, operand.shape):
        first = min(max(int(start), 0), extent - size)
        index.append(slice(first, first + size))
    result[tuple(index)] = update
    return result


def _count(shape: Sequence[int]) -> int:
    """The elements of `shape` (a reshape to it may not write -1 when it holds none)."""
    count = 1
    for n in shape:
        count *= n
    return count


def _gather(op: accy.GatherOp, operand: np.ndarray, indices: np.ndarray) -> np.ndarray:
    shape = tuple(_tensor_type(op.result).get_shape())
    grid = np.indices(shape, dtype=np.int64).reshape(len(shape), _count(shape))
    offset_dims = op.dims("offset_dims")
    batch = [grid[d] for d in range(len(shape)) if d not in offset_dims]
    dropped = set(op.dims("collapsed_slice_dims")) | set(op.dims("operand_batching_dims"))
    position = np.zeros((operand.ndim, grid.shape[1]), dtype=np.int64)
    for k, d in enumerate(op.dims("start_index_map")):
        at = list(batch)
        if op.vector_dim < indices.ndim:
            at.insert(op.vector_dim, np.full(grid.shape[1], k, dtype=np.int64))
        start = indices[tuple(at)].astype(np.int64) if at else np.full(grid.shape[1], indices)
        position[d] += np.clip(start, 0, operand.shape[d] - op.sizes[d])
    for d, e in zip(op.dims("operand_batching_dims"), op.dims("start_indices_batching_dims")):
        position[d] += batch[e if e < op.vector_dim else e - 1]
    kept = (d for d in range(operand.ndim) if d not in dropped)
    for d, r in zip(kept, offset_dims):
        position[d] += grid[r]
    if operand.ndim == 0:
        return np.full(shape, operand, dtype=operand.dtype)
    return operand[tuple(position)].reshape(shape)


def scatter_positions(
    op: accy.ScatterOp, indices: np.ndarray, shape: tuple[int, ...]
) -> np.ndarray:
    """The operand index (one row per operand dim) each element of updates of `shape`
    addresses, in row-major order of the updates (StableHLO's scatter; out-of-bounds ones
    included)."""
    rank = _tensor_type(op.operand).get_num_dims()
    grid = np.indices(shape, dtype=np.int64).reshape(len(shape), _count(shape))
    window_dims = op.dims("update_window_dims")
    scatter = [grid[d] for d in range(len(shape)) if d not in window_dims]
    position = np.zeros((rank, grid.shape[1]), dtype=np.int64)
    for k, d in enumerate(op.dims("scatter_dims_to_operand_dims")):
        at = list(scatter)
        if op.vector_dim < indices.ndim:
            at.insert(op.vector_dim, np.full(grid.shape[1], k, dtype=np.int64))
        position[d] += indices[tuple(at)].astype(np.int64) if at else indices.astype(np.int64)
    for d, e in zip(op.dims("input_batching_dims"), op.dims("scatter_indices_batching_dims")):
        position[d] += scatter[e if e < op.vector_dim else e - 1]
    operand_window = accy.scatter_window_dims(
        rank, op.dims("inserted_window_dims"), op.dims("input_batching_dims")
    )
    for d, u in zip(operand_window, window_dims):
        position[d] += grid[u]
    return position


def _scatter(op: accy.ScatterOp, *arrays: np.ndarray) -> list[np.ndarray]:
    count = len(op.inputs)
    inputs, indices, updates = arrays[:count], arrays[count], arrays[count + 1 :]
    results = [x.copy() for x in inputs]
    position = scatter_positions(op, indices, updates[0].shape)
    extents = np.array(inputs[0].shape, dtype=np.int64).reshape(-1, 1)
    inside = np.all((position >= 0) & (position < extents), axis=0)
    flat = [u.reshape(-1)[inside] for u in updates]
    block = op.update_computation.block
    env: Env = {}
    for n, at in enumerate(position.T[inside]):
        where = tuple(at)
        values = [np.asarray(r[where]) for r in results] + [np.asarray(u[n]) for u in flat]
        for arg, value in zip(block.args, values):
            env[arg] = value
        for result, value in zip(results, _run_block(block, env)):
            result[where] = value
    return results


# ---------------------------------------------------------------------------------------
# Reductions, contractions, scans
# ---------------------------------------------------------------------------------------


def _sort(op: accy.SortOp, *inputs: np.ndarray) -> list[np.ndarray]:
    """Each slice along `dim` in the comparator's order, stably (Python's sort), of which
    the results keep the first `kept`."""
    block = op.comparator.block
    env: Env = {}

    def less(slices: list[np.ndarray], a: int, b: int) -> bool:
        for index, values in enumerate(slices):
            env[block.args[2 * index]] = np.asarray(values[a])
            env[block.args[2 * index + 1]] = np.asarray(values[b])
        return bool(_run_block(block, env)[0])

    def order(slices: list[np.ndarray], a: int, b: int) -> int:
        return -1 if less(slices, a, b) else (1 if less(slices, b, a) else 0)

    if inputs[0].ndim == 0:
        return [x.copy() for x in inputs]
    moved = [np.moveaxis(x, op.dim, -1) for x in inputs]
    results = [np.empty_like(m) for m in moved]
    for at in np.ndindex(*moved[0].shape[:-1]):
        slices = [m[at] for m in moved]
        key = functools.cmp_to_key(lambda a, b, slices=slices: order(slices, a, b))
        permutation = sorted(range(slices[0].shape[0]), key=key)
        for result, values in zip(results, slices):
            result[at] = values[permutation]
    return [np.moveaxis(r[..., : op.kept], -1, op.dim) for r in results]


def _fold(op: accy.FoldOp, *arrays: np.ndarray) -> list[np.ndarray]:
    count = len(op.inputs)
    inputs, inits = arrays[:count], arrays[count:]
    dims = op.dims
    kept = [d for d in range(inputs[0].ndim) if d not in dims]
    # each input with its kept dims first, then its reduced dims flattened in row-major order
    rows = [
        np.transpose(x, kept + list(dims)).reshape(
            *(x.shape[d] for d in kept), _count([x.shape[d] for d in dims])
        )
        for x in inputs
    ]
    results = [np.empty(r.shape[:-1], r.dtype) for r in rows]
    block = op.body.block
    env: Env = {}
    for at in np.ndindex(*results[0].shape):
        accumulated = [np.asarray(init) for init in inits]
        for k in range(rows[0].shape[-1]):
            for arg, value in zip(block.args, [*accumulated, *(r[at + (k,)] for r in rows)]):
                env[arg] = np.asarray(value)
            accumulated = _run_block(block, env)
        for result, value in zip(results, accumulated):
            result[at] = value
    return results


def _identity(kind: accy.CombinerKind, dtype: np.dtype) -> Any:
    """The neutral element of a combiner in `dtype` (for empty reductions)."""
    if kind == accy.CombinerKind.ADD:
        return np.zeros((), dtype)[()]
    if kind == accy.CombinerKind.MUL:
        return np.ones((), dtype)[()]
    maximum = kind == accy.CombinerKind.MAX
    if dtype == np.bool_:
        return not maximum
    if _is_float(dtype):
        return np.array(-np.inf if maximum else np.inf, dtype)[()]
    info = np.iinfo(dtype)
    return info.min if maximum else info.max


def _reduce(op: accy.ReduceOp, operand: np.ndarray) -> np.ndarray:
    """A sum moves the reduced dims last and flattens them into one contiguous axis, so
    numpy adds each row pairwise (its float sums are pairwise only along a contiguous
    axis: over a leading axis they are one sequential chain, whose error grows with its
    length). A product's rounding error is, to first order, the sum of every multiply's
    relative error whatever the order, so numpy's order serves."""
    axes = tuple(sorted(int(d) for d in op.dimensions.get_values()))
    kind = op.kind.data
    wide = _wide(operand)
    dtype = wide.dtype
    if kind == accy.CombinerKind.ADD and axes:
        kept = [d for d in range(wide.ndim) if d not in axes]
        width = int(np.prod([wide.shape[d] for d in axes], dtype=np.int64))
        rows = np.transpose(wide, [*kept, *axes]).reshape([wide.shape[d] for d in kept] + [width])
        result = np.add.reduce(np.ascontiguousarray(rows), axis=-1, dtype=dtype)
    elif kind == accy.CombinerKind.ADD:
        result = np.sum(wide, axis=axes, dtype=dtype)
    elif kind == accy.CombinerKind.MUL:
        result = np.prod(wide, axis=axes, dtype=dtype)
    elif kind == accy.CombinerKind.MAX:
        result = np.max(wide, axis=axes, initial=_identity(kind, dtype))
    else:
        result = np.min(wide, axis=axes, initial=_identity(kind, dtype))
    if _is_float(dtype) and kind in (accy.CombinerKind.MAX, accy.CombinerKind.MIN):
        # IEEE 754-2019's zeros: the maximum of zeros is +0 where any is, the minimum -0
        minimum = kind == accy.CombinerKind.MIN
        # a -0 among the zeros makes the minimum -0; a +0 makes the maximum +0
        found = np.any((wide == 0) & (np.signbit(wide) == minimum), axis=axes)
        zero = np.where(found == minimum, -0.0, 0.0).astype(dtype)
        result = np.where(np.asarray(result) == 0, zero, result)
    return np.asarray(result).astype(operand.dtype, copy=False)


def _dot_general(op: accy.DotGeneralOp, lhs: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    (lb, rb), (lc, rc) = op.batching, op.contracting
    for side, pairs in (("batching", zip(lb, rb)), ("contracting", zip(lc, rc))):
        for l_dim, r_dim in pairs:
            if lhs.shape[l_dim] != rhs.shape[r_dim]:
                raise _op_error(
                    op,
                    f"{side} dim sizes differ: lhs dim {l_dim} is {lhs.shape[l_dim]}, "
                    f"rhs dim {r_dim} is {rhs.shape[r_dim]}",
                )
    l_free = [d for d in range(lhs.ndim) if d not in lb and d not in lc]
    r_free = [d for d in range(rhs.ndim) if d not in rb and d not in rc]

    def size(array: np.ndarray, dims: Sequence[int]) -> int:
        return int(np.prod([array.shape[d] for d in dims], dtype=np.int64))

    # lhs -> (batch, M, K), rhs -> (batch, K, N), one batched matmul, then unflatten.
    batch, k = size(lhs, lb), size(lhs, lc)
    left = np.transpose(_wide(lhs), [*lb, *l_free, *lc]).reshape(batch, size(lhs, l_free), k)
    right = np.transpose(_wide(rhs), [*rb, *rc, *r_free]).reshape(batch, k, size(rhs, r_free))
    with np.errstate(all="ignore"):
        product = np.matmul(left, right)
    shape = (
        [lhs.shape[d] for d in lb] + [lhs.shape[d] for d in l_free] + [rhs.shape[d] for d in r_free]
    )
    return product.reshape(shape).astype(lhs.dtype, copy=False)


_SCANS = {
    accy.CombinerKind.ADD: lambda x, axis: np.cumsum(x, axis=axis, dtype=x.dtype),
    accy.CombinerKind.MUL: lambda x, axis: np.cumprod(x, axis=axis, dtype=x.dtype),
    accy.CombinerKind.MAX: lambda x, axis: _accumulate(x, axis, np.maximum, np.logical_and),
    accy.CombinerKind.MIN: lambda x, axis: _accumulate(x, axis, np.minimum, np.logical_or),
}


def _accumulate(x: np.ndarray, axis: int, ufunc, negative) -> np.ndarray:
    """A running maximum or minimum; of floats, with IEEE 754-2019's zeros (`_signed_zero`)."""
    if not _is_float(x.dtype):
        return ufunc.accumulate(x, axis=axis)
    moved = np.moveaxis(x, axis, 0).copy()
    for i in range(1, moved.shape[0]):
        moved[i] = _signed_zero(ufunc(moved[i - 1], moved[i]), moved[i - 1], moved[i], negative)
    return np.moveaxis(moved, 0, axis)


def _scan(op: accy.ScanOp, operand: np.ndarray, scratch: np.ndarray) -> np.ndarray:
    """An inclusive scan; the scratch operand only names the output buffer."""
    del scratch
    stepwise = op.rounded is not None and _low_precision(operand.dtype)
    exact = op.kind.data is accy.CombinerKind.ADD and not stepwise
    if exact and (operand.dtype.kind == "f" or is_bfloat16(operand.dtype)):
        operand_in = operand.astype(np.float64)  # rounded once, as the targets do
    else:
        operand_in = operand if stepwise else _wide(operand)
    with np.errstate(all="ignore"):  # (a bf16/f16 ufunc rounds every step)
        result = _SCANS[op.kind.data](operand_in, op.dimension.value.data)
    return result.astype(operand.dtype, copy=False)


# ---------------------------------------------------------------------------------------
# Windows and convolutions
# ---------------------------------------------------------------------------------------


def _dilate_and_pad(
    x: np.ndarray,
    fill: Any,
    dilations: Sequence[int],
    low: Sequence[int],
    high: Sequence[int],
    dims: Sequence[int] | None = None,
) -> np.ndarray:
    """`x` with `dims` (default: all) dilated (holes of `fill`) and padded by `low`/`high`
    with `fill` (negative pads crop)."""
    dims = list(range(x.ndim)) if dims is None else list(dims)
    shape = list(x.shape)
    for d, b in zip(dims, dilations):
        shape[d] = (x.shape[d] - 1) * b + 1 if x.shape[d] else 0
    dilated = np.full(shape, fill, x.dtype)
    dilated[
        tuple(slice(None, None, dict(zip(dims, dilations)).get(d, 1)) for d in range(x.ndim))
    ] = x
    width = [(0, 0)] * x.ndim
    for d, lo, hi in zip(dims, low, high):
        width[d] = (max(lo, 0), max(hi, 0))
    padded = np.pad(dilated, width, constant_values=np.asarray(fill, x.dtype))
    crop = [slice(None)] * x.ndim
    for d, lo, hi in zip(dims, low, high):
        crop[d] = slice(max(-lo, 0), padded.shape[d] - max(-hi, 0))
    return padded[tuple(crop)]


def _windows(
    padded: np.ndarray,
    window: Sequence[int],
    strides: Sequence[int],
    dilations: Sequence[int],
    out: Sequence[int],
    dims: Sequence[int] | None = None,
):
    """For each window position (row-major), the elements of `padded` at that position
    of every window along `dims` (default: all): arrays of the windows' count."""
    dims = list(range(padded.ndim)) if dims is None else list(dims)
    for position in np.ndindex(*window):
        at = [slice(None)] * padded.ndim
        for d, k, s, wd, n in zip(dims, position, strides, dilations, out):
            start = k * wd
            at[d] = slice(start, start + (n - 1) * s + 1, s) if n else slice(0, 0)
        yield position, padded[tuple(at)]


def _reduce_window(op: accy.ReduceWindowOp, *arrays: np.ndarray) -> list[np.ndarray]:
    count = len(op.inputs)
    inputs, inits = arrays[:count], arrays[count:]
    out = op.result_shape()
    padded = [
        _dilate_and_pad(
            x,
            init[()],
            op.window_list("base_dilations"),
            op.window_list("padding_low"),
            op.window_list("padding_high"),
        )
        for x, init in zip(inputs, inits)
    ]
    columns = [
        [
            part
            for _, part in _windows(
                p,
                op.window_list("window_dimensions"),
                op.window_list("window_strides"),
                op.window_list("window_dilations"),
                out,
            )
        ]
        for p in padded
    ]
    results = [np.empty(out, x.dtype) for x in inputs]
    block = op.body.block
    env: Env = {}
    for at in np.ndindex(*out):
        accumulated = [np.asarray(init) for init in inits]
        for k in range(len(columns[0])):
            values = [*accumulated, *(np.asarray(c[k][at]) for c in columns)]
            for arg, value in zip(block.args, values):
                env[arg] = value
            accumulated = _run_block(block, env)
        for result, value in zip(results, accumulated):
            result[at] = value
    return results


def _select_and_scatter(
    op: accy.SelectAndScatterOp, operand: np.ndarray, source: np.ndarray, init: np.ndarray
) -> np.ndarray:
    """Windows in row-major order; in each, the picked element among those inside the
    operand (padding is never picked), then its source element scattered onto it."""
    window = op.window_list("window_dimensions")
    strides = op.window_list("window_strides")
    low = op.window_list("padding_low")
    result = np.full(operand.shape, init[()], operand.dtype)
    select, scatter = op.select.block, op.scatter.block
    env: Env = {}

    def run(block: Block, a: Any, b: Any) -> Any:
        env[block.args[0]], env[block.args[1]] = np.asarray(a), np.asarray(b)
        return _run_block(block, env)[0]

    for s in np.ndindex(*source.shape):
        picked: tuple[int, ...] | None = None
        for k in np.ndindex(*window):
            at = tuple(i * st + kk - lo for i, st, kk, lo in zip(s, strides, k, low))
            if not all(0 <= a < n for a, n in zip(at, operand.shape)):
                continue
            if picked is None or not bool(run(select, operand[picked], operand[at])):
                picked = at
        if picked is not None:
            result[picked] = run(scatter, result[picked], source[s])
    return result


def _convolution(op: accy.ConvolutionOp, lhs: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """Per window position, one einsum over the kernel's input features, by groups, in
    the result's type (f16/bf16 in float32, rounded once)."""
    dtype = numpy_dtype(op.result.type.get_element_type())
    compute = np.float32 if _low_precision(dtype) else dtype
    lb, lf, *ls = op.window_list("lhs_dims")
    ri, ro, *rs = op.window_list("rhs_dims")
    result_dims = op.window_list("result_dims")
    x = np.transpose(lhs, [lb, lf, *ls]).astype(compute)
    w = np.transpose(rhs, [ri, ro, *rs]).astype(compute)
    spatial = list(range(2, x.ndim))
    reversed_dims = [2 + i for i, r in enumerate(op.window_list("window_reversal")) if r]
    if reversed_dims:
        w = np.flip(w, reversed_dims)
    x = _dilate_and_pad(
        x,
        0,
        op.window_list("lhs_dilation"),
        op.window_list("padding_low"),
        op.window_list("padding_high"),
        spatial,
    )
    shape = op.expected_shape()
    out_spatial = [shape[d] for d in result_dims[2:]]
    groups, batch_groups = op.feature_groups, op.batch_groups
    n, c = x.shape[:2]
    inputs, outputs = w.shape[:2]
    total = np.zeros((n // batch_groups, outputs, *out_spatial), compute)
    with np.errstate(all="ignore"):
        for position, part in _windows(
            x,
            w.shape[2:],
            op.window_list("window_strides"),
            op.window_list("rhs_dilation"),
            out_spatial,
            spatial,
        ):
            kernel = w[(slice(None), slice(None), *position)]  # (I, O)
            if batch_groups > 1:
                p = part.reshape(batch_groups, n // batch_groups, c, *out_spatial)
                k = kernel.reshape(inputs, batch_groups, outputs // batch_groups)
                term = np.einsum("bnc...,cbo->nbo...", p, k)
            else:
                p = part.reshape(n, groups, c // groups, *out_spatial)
                k = kernel.reshape(inputs, groups, outputs // groups)
                term = np.einsum("ngi...,igo->ngo...", p, k)
            total += term.reshape(total.shape)
    inverse = np.argsort([result_dims[0], result_dims[1], *result_dims[2:]])
    return np.transpose(total, inverse).astype(dtype)


# ---------------------------------------------------------------------------------------
# Dispatch
# ---------------------------------------------------------------------------------------

_EVALUATORS: dict[type[Operation], Callable[..., np.ndarray]] = {
    **op_semantics.EVALUATORS,
    accy.TransposeOp: _transpose,
    accy.IotaOp: _iota,
    accy.ConcatenateOp: _concatenate,
    accy.SliceOp: _slice,
    accy.ReverseOp: _reverse,
    accy.PadOp: _pad,
    accy.DynamicSliceOp: _dynamic_slice,
    accy.DynamicUpdateSliceOp: _dynamic_update_slice,
    accy.GatherOp: _gather,
    accy.ReduceOp: _reduce,
    accy.DotGeneralOp: _dot_general,
    accy.ScanOp: _scan,
    accy.SelectAndScatterOp: _select_and_scatter,
    accy.ConvolutionOp: _convolution,
}
"""One function per op kind: `(op, *operand arrays) -> result array`.

`accy.iterate`, `accy.yield` and `func.return` steer evaluation and live in `_run_block`.
"""


def evaluate(op: Operation, *arrays: np.ndarray) -> np.ndarray:
    """The result of one single-result op of `_EVALUATORS` on operand `arrays`."""
    return np.asarray(_EVALUATORS[type(op)](op, *arrays))


def _check_result(op: Operation, result: SSAValue, value: np.ndarray) -> None:
    declared = _tensor_type(result)
    if not _shape_matches(declared.get_shape(), value.shape):
        raise _op_error(
            op,
            f"result shape {value.shape} at run time differs from the declared "
            f"{_shape_text(declared.get_shape())}",
        )
    expected = numpy_dtype(declared.get_element_type())
    assert value.dtype == expected, f"{op.name} computed {value.dtype}, not {expected}"


def _iterate(op: accy.IterateOp, env: Env) -> list[np.ndarray]:
    carried = [env[v] for v in op.inits]
    block = op.body.block
    for _ in range(op.trip_count.value.data):
        for arg, value in zip(block.args, carried):
            env[arg] = value
        carried = _run_block(block, env)
    return carried


def _while(op: accy.WhileOp, env: Env) -> list[np.ndarray]:
    carried = [env[v] for v in op.inits]
    cond, body = op.cond.block, op.body.block
    while True:
        for arg, value in zip(cond.args, carried):
            env[arg] = value
        if not bool(_run_block(cond, env)[0]):
            return carried
        for arg, value in zip(body.args, carried):
            env[arg] = value
        carried = _run_block(body, env)


def _run_block(block: Block, env: Env) -> list[np.ndarray]:
    """Evaluate `block` with its arguments bound in `env`; the terminator's operands."""
    for op in block.ops:
        if isinstance(op, (func.ReturnOp, accy.YieldOp)):
            return [env[v] for v in op.operands]
        if isinstance(op, accy.IterateOp):
            values = _iterate(op, env)
        elif isinstance(op, accy.WhileOp):
            values = _while(op, env)
        elif isinstance(op, accy.FoldOp):
            values = _fold(op, *(env[v] for v in op.operands))
        elif isinstance(op, accy.SortOp):
            values = _sort(op, *(env[v] for v in op.operands))
        elif isinstance(op, accy.ReduceWindowOp):
            values = _reduce_window(op, *(env[v] for v in op.operands))
        elif isinstance(op, accy.ScatterOp):
            values = _scatter(op, *(env[v] for v in op.operands))
        elif type(op) in _EVALUATORS:
            values = [_EVALUATORS[type(op)](op, *(env[v] for v in op.operands))]
        else:
            raise AccyError(f"the reference interpreter does not evaluate '{op.name}'", op.location)
        for result, value in zip(op.results, values, strict=True):
            value = np.asarray(value)
            _check_result(op, result, value)
            env[result] = value
    raise AccyError("block has no terminator")


# ---------------------------------------------------------------------------------------
# Entry point
# ---------------------------------------------------------------------------------------


def _find_function(module: ModuleOp, name: str) -> func.FuncOp:
    functions = [op for op in module.ops if isinstance(op, func.FuncOp)]
    for function in functions:
        if function.sym_name.data == name:
            if not function.body.blocks:
                raise AccyInputError(f"function @{name} is a declaration without a body")
            return function
    known = ", ".join(f"@{f.sym_name.data}" for f in functions) or "none"
    raise AccyInputError(f"no function @{name} in the module; known functions: {known}")


def _check_arguments(function: func.FuncOp, arrays: Sequence[object]) -> list[np.ndarray]:
    params = [tensor_spec(p.type, p.name_hint) for p in function.body.block.args]
    return arguments.check_arguments(function.sym_name.data, params, arrays)


def run(module: ModuleOp, function_name: str, *arrays: np.ndarray) -> tuple[np.ndarray, ...]:
    """Evaluate `func.func @function_name` of `module` on `arrays` with numpy.

    Each argument must be a numpy array (or numpy scalar) of its parameter's dtype and
    shape (any size at a dynamic dim). Returns the function's results as fresh arrays that
    share no memory with the inputs. Raises `AccyInputError` for bad arguments or shapes
    that disagree at run time, `AccyError` for ops the interpreter does not evaluate.
    """
    if not isinstance(module, ModuleOp):
        raise wrong_type("accy.reference.run", "module", "a ModuleOp", module)
    if not isinstance(function_name, str):
        raise wrong_type("accy.reference.run", "function_name", "a str", function_name)
    function = _find_function(module, function_name.removeprefix("@"))
    env: Env = dict(zip(function.body.block.args, _check_arguments(function, arrays)))
    outputs = _run_block(function.body.block, env)
    return tuple(np.array(value, copy=True, order="C") for value in outputs)


def find_function(module: ModuleOp, name: str) -> func.FuncOp:
    """The defined `func.func @name` of `module`; `AccyInputError` naming the known
    functions when there is none (what `run` checks first)."""
    return _find_function(module, name.removeprefix("@"))


def check_arguments(function: func.FuncOp, arrays: Sequence[object]) -> list[np.ndarray]:
    """Check `arrays` against `function`'s parameters (count, numpy type, dtype, shape with
    any size at a `?` dim) exactly as `run` does; `AccyInputError` naming the parameter.
    Returns the arguments as numpy arrays. Compiled targets reuse it so that both report
    the same errors."""
    return _check_arguments(function, arrays)


def ulp_difference(actual: np.ndarray, expected: np.ndarray) -> np.ndarray:
    """How many floats lie between each element of `actual` and of `expected` (same
    float dtype and shape), as StableHLO's checks count: 0 for bitwise-equal values and
    for two NaNs, +0 and -0 are 0 apart, the largest uint64 when only one is finite or
    both are different infinities. An unsigned 64-bit array of the shape."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    width = actual.dtype.itemsize
    unsigned = {2: np.uint16, 4: np.uint32, 8: np.uint64}[width]
    ab = np.ascontiguousarray(actual).view(unsigned).astype(np.uint64)
    eb = np.ascontiguousarray(expected).view(unsigned).astype(np.uint64)
    sign = np.uint64(1 << (8 * width - 1))
    magnitude = np.uint64((1 << (8 * width - 1)) - 1)
    am, em = ab & magnitude, eb & magnitude
    same_sign = (ab & sign) == (eb & sign)
    diff = np.where(same_sign, np.maximum(am, em) - np.minimum(am, em), am + em)
    a, e = actual.astype(np.float64), expected.astype(np.float64)
    equal = (ab == eb) | (np.isnan(a) & np.isnan(e))
    finite = np.isfinite(a) & np.isfinite(e)
    return np.where(equal, np.uint64(0), np.where(finite, diff, np.iinfo(np.uint64).max))
