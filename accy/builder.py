"""Build accy programs from Python, mirroring the seed's `semantic.Builder`.

    b = accy.Builder()
    f32_4 = b.tensor("f32", [4])
    fb = b.begin_function("memory_add4", [f32_4, f32_4], [f32_4])
    fb.return_([fb.add(fb.parameter(0), fb.parameter(1))])
    fb.finish()
    module = b.finish()

Ops are created directly (no text is parsed), so large programs build quickly; result
types are inferred where the op determines them. `set_location(file, line, col)` applies
to every op built after it. `Builder.finish()` verifies the module and raises an
`AccyVerifyError` at the location of the first op that breaks its rules.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from xdsl.dialects import func
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    ArrayAttr,
    DictionaryAttr,
    FileLineColLoc,
    IntAttr,
    LocationAttr,
    ModuleOp,
    StringAttr,
    TensorType,
    UnitAttr,
    UnknownLoc,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue

from accy import dtypes
from accy.diagnostics import AccyError
from accy.dialects import accy as ops
from accy.source import verify


def tensor_type(dtype: Any, dims: Sequence[int | None]) -> TensorType:
    """A ranked tensor type; `-1` or `None` marks a dynamic dim."""
    shape = [DYNAMIC_INDEX if d is None or d == -1 else int(d) for d in dims]
    if any(d < 0 and d != DYNAMIC_INDEX for d in shape):
        raise ValueError(f"negative dim in {list(dims)}")
    return TensorType(dtypes.element_type(dtype), shape)


class BlockBuilder:
    """Appends accy ops to one block; shared by function bodies and loop bodies."""

    def __init__(self, block: Block, location: LocationAttr):
        self.block = block
        self.location = location

    def set_location(self, file: str, line: int, col: int) -> None:
        """Give every op built from now on the location `file:line:col`."""
        self.location = FileLineColLoc(StringAttr(file), IntAttr(line), IntAttr(col))

    def _append(self, op: Operation) -> Operation:
        op.location = self.location
        self.block.add_op(op)
        return op

    def _add(self, op: Operation) -> SSAValue:
        """Append a single-result op and return its result."""
        return self._append(op).results[0]

    # Elementwise ------------------------------------------------------------------

    def add(self, lhs: SSAValue, rhs: SSAValue) -> SSAValue:
        return self._add(ops.AddOp(lhs, rhs))

    def subtract(self, lhs: SSAValue, rhs: SSAValue) -> SSAValue:
        return self._add(ops.SubtractOp(lhs, rhs))

    def multiply(self, lhs: SSAValue, rhs: SSAValue) -> SSAValue:
        return self._add(ops.MultiplyOp(lhs, rhs))

    mul = multiply

    def divide(self, lhs: SSAValue, rhs: SSAValue) -> SSAValue:
        return self._add(ops.DivideOp(lhs, rhs))

    def maximum(self, lhs: SSAValue, rhs: SSAValue) -> SSAValue:
        return self._add(ops.MaximumOp(lhs, rhs))

    def minimum(self, lhs: SSAValue, rhs: SSAValue) -> SSAValue:
        return self._add(ops.MinimumOp(lhs, rhs))

    def power(self, lhs: SSAValue, rhs: SSAValue) -> SSAValue:
        return self._add(ops.PowerOp(lhs, rhs))

    def and_(self, lhs: SSAValue, rhs: SSAValue) -> SSAValue:
        return self._add(ops.AndOp(lhs, rhs))

    def or_(self, lhs: SSAValue, rhs: SSAValue) -> SSAValue:
        return self._add(ops.OrOp(lhs, rhs))

    def xor(self, lhs: SSAValue, rhs: SSAValue) -> SSAValue:
        return self._add(ops.XorOp(lhs, rhs))

    def not_(self, x: SSAValue) -> SSAValue:
        return self._add(ops.NotOp(x))

    def negate(self, x: SSAValue) -> SSAValue:
        return self._add(ops.NegateOp(x))

    def abs(self, x: SSAValue) -> SSAValue:
        return self._add(ops.AbsOp(x))

    def exponential(self, x: SSAValue) -> SSAValue:
        return self._add(ops.ExponentialOp(x))

    def log(self, x: SSAValue) -> SSAValue:
        return self._add(ops.LogOp(x))

    def tanh(self, x: SSAValue) -> SSAValue:
        return self._add(ops.TanhOp(x))

    def sqrt(self, x: SSAValue) -> SSAValue:
        return self._add(ops.SqrtOp(x))

    def rsqrt(self, x: SSAValue) -> SSAValue:
        return self._add(ops.RsqrtOp(x))

    def remainder(self, lhs: SSAValue, rhs: SSAValue) -> SSAValue:
        return self._add(ops.RemainderOp(lhs, rhs))

    def shift_left(self, lhs: SSAValue, rhs: SSAValue) -> SSAValue:
        return self._add(ops.ShiftLeftOp(lhs, rhs))

    def shift_right_arithmetic(self, lhs: SSAValue, rhs: SSAValue) -> SSAValue:
        return self._add(ops.ShiftRightArithmeticOp(lhs, rhs))

    def shift_right_logical(self, lhs: SSAValue, rhs: SSAValue) -> SSAValue:
        return self._add(ops.ShiftRightLogicalOp(lhs, rhs))

    def sign(self, x: SSAValue) -> SSAValue:
        return self._add(ops.SignOp(x))

    def popcnt(self, x: SSAValue) -> SSAValue:
        return self._add(ops.PopcntOp(x))

    def count_leading_zeros(self, x: SSAValue) -> SSAValue:
        return self._add(ops.CountLeadingZerosOp(x))

    def round_nearest_even(self, x: SSAValue) -> SSAValue:
        return self._add(ops.RoundNearestEvenOp(x))

    def round_nearest_afz(self, x: SSAValue) -> SSAValue:
        return self._add(ops.RoundNearestAfzOp(x))

    def is_finite(self, x: SSAValue) -> SSAValue:
        return self._add(ops.IsFiniteOp(x))

    def sine(self, x: SSAValue) -> SSAValue:
        return self._add(ops.SineOp(x))

    def cosine(self, x: SSAValue) -> SSAValue:
        return self._add(ops.CosineOp(x))

    def tan(self, x: SSAValue) -> SSAValue:
        return self._add(ops.TanOp(x))

    def cbrt(self, x: SSAValue) -> SSAValue:
        return self._add(ops.CbrtOp(x))

    def log_plus_one(self, x: SSAValue) -> SSAValue:
        return self._add(ops.LogPlusOneOp(x))

    def exponential_minus_one(self, x: SSAValue) -> SSAValue:
        return self._add(ops.ExponentialMinusOneOp(x))

    def atan2(self, lhs: SSAValue, rhs: SSAValue) -> SSAValue:
        return self._add(ops.Atan2Op(lhs, rhs))

    def floor(self, x: SSAValue) -> SSAValue:
        return self._add(ops.FloorOp(x))

    def ceil(self, x: SSAValue) -> SSAValue:
        return self._add(ops.CeilOp(x))

    def logistic(self, x: SSAValue) -> SSAValue:
        return self._add(ops.LogisticOp(x))

    def compare(
        self, direction: str, lhs: SSAValue, rhs: SSAValue, *, total_order: bool = False
    ) -> SSAValue:
        """`direction` of "EQ", "NE", "LT", "LE", "GT", "GE"; `total_order` compares
        floats in StableHLO's TOTALORDER."""
        direction_enum = ops.ComparisonDirection(direction)
        return self._add(ops.CompareOp(direction_enum, lhs, rhs, total_order=total_order))

    def select(self, pred: SSAValue, on_true: SSAValue, on_false: SSAValue) -> SSAValue:
        return self._add(ops.SelectOp(pred, on_true, on_false))

    def convert(self, x: SSAValue, dtype: Any) -> SSAValue:
        assert isinstance(x.type, TensorType)
        result = TensorType(dtypes.element_type(dtype), x.type.get_shape())
        return self._add(ops.ConvertOp(x, result))

    def bitcast_convert(self, x: SSAValue, dtype: Any) -> SSAValue:
        """`x`'s bits as elements of `dtype` (of the same bit width)."""
        assert isinstance(x.type, TensorType)
        result = TensorType(dtypes.element_type(dtype), x.type.get_shape())
        return self._add(ops.BitcastConvertOp(x, result))

    # Constants and data movement --------------------------------------------------

    def constant(self, type: TensorType, values: Any) -> SSAValue:
        """A constant of `type` from a scalar (splat), a nested list or an array."""
        return self._add(ops.ConstantOp(dtypes.dense_attr(type, values)))

    def broadcast_in_dim(self, x: SSAValue, type: TensorType, dims: Sequence[int]) -> SSAValue:
        return self._add(ops.BroadcastInDimOp(x, type, dims))

    def reshape(self, x: SSAValue, type: TensorType) -> SSAValue:
        return self._add(ops.ReshapeOp(x, type))

    def transpose(self, x: SSAValue, permutation: Sequence[int]) -> SSAValue:
        source = _tensor(x)
        shape = [source.get_shape()[d] for d in permutation]
        result = TensorType(source.get_element_type(), shape)
        return self._add(ops.TransposeOp(x, permutation, result))

    def iota(self, type: TensorType, dim: int) -> SSAValue:
        """A tensor of `type` whose elements are their index along `dim`."""
        return self._add(ops.IotaOp(type, dim))

    def concatenate(self, values: Sequence[SSAValue], dim: int) -> SSAValue:
        """`values` joined along `dim` (the result size there is the sum of theirs)."""
        if not values:
            raise ValueError("concatenate needs at least one value")
        first = _tensor(values[0])
        shape = list(first.get_shape())
        if not 0 <= dim < len(shape):
            raise ValueError(f"dim {dim} is out of range for rank {len(shape)}")
        sizes = [
            _tensor(v).get_shape()[dim] if _tensor(v).get_num_dims() > dim else 0 for v in values
        ]
        shape[dim] = DYNAMIC_INDEX if DYNAMIC_INDEX in sizes else sum(sizes)
        result = TensorType(first.get_element_type(), shape)
        return self._add(ops.ConcatenateOp(list(values), dim, result))

    def slice(
        self,
        x: SSAValue,
        start: Sequence[int],
        limit: Sequence[int],
        strides: Sequence[int] | None = None,
    ) -> SSAValue:
        """Elements `start[d]:limit[d]:strides[d]` of each dim `d` (strides default to 1)."""
        strides = [1] * len(start) if strides is None else list(strides)
        shape = [-(-(hi - lo) // st) if st > 0 else 0 for lo, hi, st in zip(start, limit, strides)]
        result = TensorType(_tensor(x).get_element_type(), shape)
        return self._add(ops.SliceOp(x, start, limit, strides, result))

    def reverse(self, x: SSAValue, dims: Sequence[int]) -> SSAValue:
        """`x` with the order of its elements along each of `dims` reversed."""
        return self._add(ops.ReverseOp(x, dims))

    def pad(
        self,
        x: SSAValue,
        value: SSAValue,
        low: Sequence[int],
        high: Sequence[int],
        interior: Sequence[int] | None = None,
    ) -> SSAValue:
        """`x` padded with the rank-0 `value`: `low[d]` before, `high[d]` after (negative:
        cropped) and `interior[d]` between neighbours along each dim `d` (default 0)."""
        source = _tensor(x)
        interior = [0] * len(low) if interior is None else list(interior)
        shape = [
            ops.padded_size(n, lo, hi, inner)
            for n, lo, hi, inner in zip(source.get_shape(), low, high, interior)
        ]
        result = TensorType(source.get_element_type(), shape)
        return self._add(ops.PadOp(x, value, low, high, interior, result))

    def dynamic_slice(
        self, x: SSAValue, starts: Sequence[SSAValue], sizes: Sequence[int]
    ) -> SSAValue:
        """The `sizes` block of `x` at the run-time `starts` (rank-0 integer tensors, each
        clamped so that the block lies inside `x`)."""
        result = TensorType(_tensor(x).get_element_type(), list(sizes))
        return self._add(ops.DynamicSliceOp(x, starts, sizes, result))

    def dynamic_update_slice(
        self, x: SSAValue, update: SSAValue, starts: Sequence[SSAValue]
    ) -> SSAValue:
        """`x` with `update` written at the run-time `starts` (rank-0 integer tensors, each
        clamped so that the block lies inside `x`)."""
        return self._add(ops.DynamicUpdateSliceOp(x, update, starts))

    def gather(
        self,
        x: SSAValue,
        indices: SSAValue,
        *,
        offset_dims: Sequence[int],
        collapsed_slice_dims: Sequence[int],
        start_index_map: Sequence[int],
        index_vector_dim: int,
        slice_sizes: Sequence[int],
        operand_batching_dims: Sequence[int] = (),
        start_indices_batching_dims: Sequence[int] = (),
    ) -> SSAValue:
        """StableHLO's gather of `slice_sizes` blocks of `x` at the start index vectors in
        `indices` (see `accy.gather`); `emb[ids]` is `gather(emb, ids[:, None],
        offset_dims=[1], collapsed_slice_dims=[0], start_index_map=[0],
        index_vector_dim=1, slice_sizes=[1, width])`."""
        shape = ops.gather_shape(
            _tensor(indices).get_shape(),
            offset_dims,
            collapsed_slice_dims,
            operand_batching_dims,
            index_vector_dim,
            slice_sizes,
        )
        result = TensorType(_tensor(x).get_element_type(), shape)
        return self._add(
            ops.GatherOp(
                x,
                indices,
                offset_dims=offset_dims,
                collapsed_slice_dims=collapsed_slice_dims,
                operand_batching_dims=operand_batching_dims,
                start_indices_batching_dims=start_indices_batching_dims,
                start_index_map=start_index_map,
                index_vector_dim=index_vector_dim,
                slice_sizes=slice_sizes,
                result_type=result,
            )
        )

    # Reductions, contractions, scans ----------------------------------------------

    def scatter(
        self,
        x: SSAValue | Sequence[SSAValue],
        indices: SSAValue,
        updates: SSAValue | Sequence[SSAValue],
        combine: str | Callable[..., SSAValue | Sequence[SSAValue]],
        *,
        update_window_dims: Sequence[int],
        inserted_window_dims: Sequence[int],
        scatter_dims_to_operand_dims: Sequence[int],
        index_vector_dim: int,
        input_batching_dims: Sequence[int] = (),
        scatter_indices_batching_dims: Sequence[int] = (),
        unique_indices: bool = False,
    ) -> Any:
        """StableHLO's scatter of `updates` into `x` at the index vectors in `indices`
        (see `accy.scatter`). `combine` is the update computation: `"replace"`, the name
        of a binary builder method (`"add"`, `"maximum"`, ...) or `combine(builder,
        *currents, *updates)` returning the new element(s); `x.at[ids].add(u)` for rows is
        `scatter(x, ids[:, None], u, "add", update_window_dims=[1],
        inserted_window_dims=[0], scatter_dims_to_operand_dims=[0], index_vector_dim=1)`.
        With sequences of inputs and updates (scattered together) it returns a list."""
        several = not isinstance(x, SSAValue)
        inputs = list(x) if several else [x]  # type: ignore[arg-type]
        update_list = list(updates) if several else [updates]  # type: ignore[arg-type]
        scalars = [TensorType(_tensor(v).get_element_type(), []) for v in inputs]
        block = Block(arg_types=scalars * 2)
        inner = BlockBuilder(block, self.location)
        currents, elements = block.args[: len(inputs)], block.args[len(inputs) :]
        if combine == "replace":
            values: Any = list(elements)
        elif isinstance(combine, str):
            values = [getattr(inner, combine)(a, b) for a, b in zip(currents, elements)]
        else:
            values = combine(inner, *block.args)
        inner._append(ops.YieldOp([values] if isinstance(values, SSAValue) else list(values)))
        op = ops.ScatterOp(
            inputs,
            indices,
            update_list,
            Region(block),
            update_window_dims=update_window_dims,
            inserted_window_dims=inserted_window_dims,
            scatter_dims_to_operand_dims=scatter_dims_to_operand_dims,
            index_vector_dim=index_vector_dim,
            input_batching_dims=input_batching_dims,
            scatter_indices_batching_dims=scatter_indices_batching_dims,
            unique_indices=unique_indices,
        )
        results = list(self._append(op).results)
        return results if several else results[0]

    def fold(
        self,
        inputs: Sequence[SSAValue],
        inits: Sequence[SSAValue],
        dims: Sequence[int],
        body: Callable[..., Sequence[SSAValue]],
    ) -> list[SSAValue]:
        """StableHLO's general reduce (see `accy.fold`): `inputs` reduced together over
        `dims` from the rank-0 `inits`; `body(builder, *accumulated, *elements)` returns
        the new accumulated values (ops on rank-0 tensors)."""
        scalars = [TensorType(_tensor(x).get_element_type(), []) for x in inputs]
        block = Block(arg_types=scalars * 2)
        inner = BlockBuilder(block, self.location)
        inner._append(ops.YieldOp(list(body(inner, *block.args))))
        return list(self._append(ops.FoldOp(inputs, inits, dims, Region(block))).results)

    def sort(
        self,
        inputs: Sequence[SSAValue],
        dim: int,
        less: Callable[..., SSAValue],
        *,
        stable: bool = False,
    ) -> list[SSAValue]:
        """StableHLO's sort (see `accy.sort`): `inputs` permuted together along `dim`;
        `less(builder, lhs0, rhs0, lhs1, rhs1, ...)` returns whether lhs goes first."""
        scalars = [TensorType(_tensor(x).get_element_type(), []) for x in inputs]
        block = Block(arg_types=[t for t in scalars for _ in range(2)])
        inner = BlockBuilder(block, self.location)
        inner._append(ops.YieldOp([less(inner, *block.args)]))
        return list(self._append(ops.SortOp(inputs, dim, Region(block), stable=stable)).results)

    def reduce(self, kind: str, x: SSAValue, dims: Sequence[int]) -> SSAValue:
        source = _tensor(x)
        kept = [s for d, s in enumerate(source.get_shape()) if d not in dims]
        result = TensorType(source.get_element_type(), kept)
        return self._add(ops.ReduceOp(ops.CombinerKind(kind), x, dims, result))

    def dot_general(
        self,
        lhs: SSAValue,
        rhs: SSAValue,
        *,
        batching: tuple[Sequence[int], Sequence[int]] = ((), ()),
        contracting: tuple[Sequence[int], Sequence[int]],
    ) -> SSAValue:
        """A contraction; the result is batch dims, lhs free dims, rhs free dims."""
        left, right = _tensor(lhs).get_shape(), _tensor(rhs).get_shape()
        (lb, rb), (lc, rc) = batching, contracting
        shape = (
            [left[d] for d in lb]
            + [s for d, s in enumerate(left) if d not in lb and d not in lc]
            + [s for d, s in enumerate(right) if d not in rb and d not in rc]
        )
        result = TensorType(_tensor(lhs).get_element_type(), shape)
        op = ops.DotGeneralOp(
            lhs, rhs, batching=batching, contracting=contracting, result_type=result
        )
        return self._add(op)

    def scan(
        self, kind: str, x: SSAValue, scratch: SSAValue, dim: int, *, rounded: bool = False
    ) -> SSAValue:
        """An inclusive scan into `scratch`'s buffer (see `accy.scan`; `rounded`: the
        carry rounded to the element type every step)."""
        return self._add(ops.ScanOp(ops.CombinerKind(kind), x, scratch, dim, rounded=rounded))

    def reduce_window(
        self,
        inputs: Sequence[SSAValue],
        inits: Sequence[SSAValue],
        body: Callable[..., Sequence[SSAValue]],
        *,
        window: Sequence[int],
        strides: Sequence[int] | None = None,
        base_dilations: Sequence[int] | None = None,
        window_dilations: Sequence[int] | None = None,
        padding: Sequence[tuple[int, int]] | None = None,
    ) -> list[SSAValue]:
        """StableHLO's reduce_window (see `accy.reduce_window`): `body(builder,
        *accumulated, *elements)` returns the new accumulated values; strides and
        dilations default to 1, padding to none."""
        rank = len(window)
        ones = [1] * rank
        pads = list(padding) if padding is not None else [(0, 0)] * rank
        scalars = [TensorType(_tensor(x).get_element_type(), []) for x in inputs]
        block = Block(arg_types=scalars * 2)
        inner = BlockBuilder(block, self.location)
        inner._append(ops.YieldOp(list(body(inner, *block.args))))
        op = ops.ReduceWindowOp(
            inputs,
            inits,
            Region(block),
            window=window,
            strides=strides if strides is not None else ones,
            base_dilations=base_dilations if base_dilations is not None else ones,
            window_dilations=window_dilations if window_dilations is not None else ones,
            padding_low=[low for low, _ in pads],
            padding_high=[high for _, high in pads],
        )
        return list(self._append(op).results)

    def select_and_scatter(
        self,
        operand: SSAValue,
        source: SSAValue,
        init: SSAValue,
        select: Callable[..., SSAValue],
        scatter: Callable[..., SSAValue],
        *,
        window: Sequence[int],
        strides: Sequence[int] | None = None,
        padding: Sequence[tuple[int, int]] | None = None,
    ) -> SSAValue:
        """StableHLO's select_and_scatter (see `accy.select_and_scatter`): `select(builder,
        picked, element)` returns whether `picked` stays picked; `scatter(builder,
        accumulated, element)` combines."""
        rank = len(window)
        pads = list(padding) if padding is not None else [(0, 0)] * rank
        scalar = TensorType(_tensor(operand).get_element_type(), [])
        regions = []
        for build in (select, scatter):
            block = Block(arg_types=[scalar, scalar])
            inner = BlockBuilder(block, self.location)
            inner._append(ops.YieldOp([build(inner, *block.args)]))
            regions.append(Region(block))
        op = ops.SelectAndScatterOp(
            operand,
            source,
            init,
            *regions,
            window=window,
            strides=strides if strides is not None else [1] * rank,
            padding_low=[low for low, _ in pads],
            padding_high=[high for _, high in pads],
        )
        return self._add(op)

    def convolution(
        self,
        lhs: SSAValue,
        rhs: SSAValue,
        *,
        lhs_dims: Sequence[int],
        rhs_dims: Sequence[int],
        result_dims: Sequence[int],
        strides: Sequence[int] | None = None,
        padding: Sequence[tuple[int, int]] | None = None,
        lhs_dilation: Sequence[int] | None = None,
        rhs_dilation: Sequence[int] | None = None,
        reversal: Sequence[bool] | None = None,
        feature_groups: int = 1,
        batch_groups: int = 1,
        dtype: Any = None,
    ) -> SSAValue:
        """StableHLO's convolution (see `accy.convolution`); the layouts name the batch,
        feature and spatial dims (input, result) and the input feature, output feature
        and spatial dims (kernel). The result has the operands' element type unless
        `dtype` names another; window attributes default to stride 1, no padding, no
        dilation, no reversal."""
        spatial = len(lhs_dims) - 2
        ones = [1] * spatial
        pads = list(padding) if padding is not None else [(0, 0)] * spatial
        element = (
            dtypes.element_type(dtype) if dtype is not None else _tensor(lhs).get_element_type()
        )
        attributes: dict[str, Any] = {
            "lhs_dims": lhs_dims,
            "rhs_dims": rhs_dims,
            "result_dims": result_dims,
            "strides": strides if strides is not None else ones,
            "padding_low": [low for low, _ in pads],
            "padding_high": [high for _, high in pads],
            "lhs_dilation": lhs_dilation if lhs_dilation is not None else ones,
            "rhs_dilation": rhs_dilation if rhs_dilation is not None else ones,
            "reversal": [int(r) for r in reversal] if reversal is not None else [0] * spatial,
            "feature_groups": feature_groups,
            "batch_groups": batch_groups,
        }
        shape = ops.convolution_shape(
            _tensor(lhs).get_shape(),
            _tensor(rhs).get_shape(),
            lhs_dims=lhs_dims,
            rhs_dims=rhs_dims,
            result_dims=result_dims,
            window_strides=attributes["strides"],
            padding_low=attributes["padding_low"],
            padding_high=attributes["padding_high"],
            lhs_dilation=attributes["lhs_dilation"],
            rhs_dilation=attributes["rhs_dilation"],
            batch_groups=batch_groups,
        )
        result = TensorType(element, shape)
        return self._add(ops.ConvolutionOp(lhs, rhs, result_type=result, **attributes))

    def iterate(
        self,
        trip_count: int,
        inits: Sequence[SSAValue],
        body: Callable[..., Sequence[SSAValue]],
    ) -> tuple[SSAValue, ...]:
        """A counted loop: `body(builder, *carried)` returns the next carried values."""
        block = Block(arg_types=[v.type for v in inits])
        inner = BlockBuilder(block, self.location)
        yielded = body(inner, *block.args)
        inner._append(ops.YieldOp(list(yielded)))
        op = self._append(ops.IterateOp(trip_count, inits, Region(block)))
        return tuple(op.results)

    def while_(
        self,
        inits: Sequence[SSAValue],
        cond: Callable[..., SSAValue],
        body: Callable[..., Sequence[SSAValue]],
    ) -> tuple[SSAValue, ...]:
        """A loop while `cond(builder, *carried)` (a tensor<i1>) holds: `body(builder,
        *carried)` returns the next carried values."""
        regions = []
        for build in (lambda inner, *args: [cond(inner, *args)], body):
            block = Block(arg_types=[v.type for v in inits])
            inner = BlockBuilder(block, self.location)
            inner._append(ops.YieldOp(list(build(inner, *block.args))))
            regions.append(Region(block))
        op = self._append(ops.WhileOp(inits, *regions))
        return tuple(op.results)


class FunctionBuilder(BlockBuilder):
    """Builds one `func.func`; `finish()` closes it (after `return_`)."""

    def __init__(self, owner: Builder, function: func.FuncOp, results: Sequence[Attribute]):
        super().__init__(function.body.block, owner.location)
        self.owner = owner
        self.function = function
        self.results = list(results)
        self.returned = False

    def parameter(self, index: int) -> SSAValue:
        args = self.function.body.block.args
        if not 0 <= index < len(args):
            raise IndexError(
                f"function @{self.function.sym_name.data} has {len(args)} parameters, "
                f"no parameter {index}"
            )
        return args[index]

    def return_(self, values: Sequence[SSAValue]) -> None:
        types = [v.type for v in values]
        if types != self.results:
            raise AccyError(
                f"function @{self.function.sym_name.data} returns "
                f"({', '.join(map(str, types))}) but declares "
                f"({', '.join(map(str, self.results))})",
                self.location,
            )
        self._append(func.ReturnOp(*values))
        self.returned = True

    def finish(self) -> None:
        if not self.returned:
            raise AccyError(f"function @{self.function.sym_name.data} has no return", self.location)
        self.owner._close(self)


class Builder:
    """Builds a module of accy functions, one open function at a time."""

    def __init__(self) -> None:
        self.module = ModuleOp([])
        self.location: LocationAttr = UnknownLoc()
        self._open: FunctionBuilder | None = None

    @staticmethod
    def tensor(dtype: Any, dims: Sequence[int | None]) -> TensorType:
        return tensor_type(dtype, dims)

    def set_location(self, file: str, line: int, col: int) -> None:
        """Give every op built from now on (in the open function too) `file:line:col`."""
        self.location = FileLineColLoc(StringAttr(file), IntAttr(line), IntAttr(col))
        if self._open is not None:
            self._open.location = self.location

    def begin_function(
        self,
        name: str,
        params: Sequence[TensorType],
        results: Sequence[TensorType],
        *,
        donated: Sequence[int] = (),
    ) -> FunctionBuilder:
        """Begin `@name`; the parameters at the indices `donated` carry `accy.donated` (the
        caller gives their buffers up, see `accy.dialects.accy.DONATED`)."""
        if self._open is not None:
            raise AccyError(
                f"function @{self._open.function.sym_name.data} is still open; "
                "finish it before beginning another"
            )
        for index in donated:
            if not 0 <= index < len(params):
                raise AccyError(
                    f"function @{name}: donated parameter #{index} does not exist "
                    f"(it has {len(params)} parameters)"
                )
        arg_attrs = None
        if donated:
            arg_attrs = ArrayAttr(
                [
                    DictionaryAttr({ops.DONATED: UnitAttr()} if i in donated else {})
                    for i in range(len(params))
                ]
            )
        function = func.FuncOp(name, (list(params), list(results)), arg_attrs=arg_attrs)
        function.location = self.location
        self.module.body.block.add_op(function)
        self._open = FunctionBuilder(self, function, results)
        return self._open

    def _close(self, function: FunctionBuilder) -> None:
        assert self._open is function
        self._open = None

    def finish(self) -> ModuleOp:
        """The verified module."""
        if self._open is not None:
            raise AccyError(f"function @{self._open.function.sym_name.data} is not finished")
        verify(self.module)
        return self.module


def _tensor(value: SSAValue) -> TensorType:
    if not isinstance(value.type, TensorType):
        raise TypeError(f"expected a tensor value, got {value.type}")
    return value.type
