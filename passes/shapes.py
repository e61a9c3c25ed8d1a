"""Shape/layout analysis: the shape, element bytes, byte size and row-major strides of
every tensor value.

Invariants: a value has a static byte size exactly when all its dims are static; strides
are in elements, row-major, and a stride is None where it depends on a dynamic dim.
"""

from __future__ import annotations

from dataclasses import dataclass

from accy.passes.analysis import (
    AnalysisDescriptor,
    AnalysisManager,
    Census,
    WorkBounds,
    WorkMeter,
    checked_add,
)
from accy.passes.options import PlanOptions
from xdsl.dialects.builtin import DYNAMIC_INDEX, TensorType
from xdsl.ir import Operation, SSAValue

from accy.dtypes import byte_width, element_name


@dataclass(frozen=True)
class ValueLayout:
    """How one tensor value lies in memory."""

    shape: tuple[int | None, ...]
    element: str
    element_bytes: int
    byte_size: int | None
    strides: tuple[int | None, ...]

    @property
    def is_dynamic(self) -> bool:
        return self.byte_size is None

    @staticmethod
    def of(tensor: TensorType) -> ValueLayout:
        shape = tuple(None if d == DYNAMIC_INDEX else d for d in tensor.get_shape())
        width = byte_width(tensor.get_element_type())
        strides: list[int | None] = []
        stride: int | None = 1
        for dim in reversed(shape):
            strides.append(stride)
            stride = None if stride is None or dim is None else stride * dim
        count = 1
        for dim in shape:
            count = count * dim if dim is not None and count is not None else None
        return ValueLayout(
            shape=shape,
            element=element_name(tensor.get_element_type()),
            element_bytes=width,
            byte_size=None if count is None else count * width,
            strides=tuple(reversed(strides)),
        )


@dataclass(frozen=True)
class ShapeLayoutAnalysis:
    """The layout of every tensor value under an op (function arguments included)."""

    layouts: dict[SSAValue, ValueLayout]

    def of(self, value: SSAValue) -> ValueLayout:
        return self.layouts[value]


def values_defined_by(op: Operation) -> list[SSAValue]:
    """The values an op defines: its results, then the arguments of its regions' blocks."""
    values: list[SSAValue] = list(op.results)
    for region in op.regions:
        for block in region.blocks:
            values.extend(block.args)
    return values


def compute_shapes(
    _manager: AnalysisManager, root: Operation, meter: WorkMeter
) -> ShapeLayoutAnalysis:
    layouts: dict[SSAValue, ValueLayout] = {}
    cache: dict[TensorType, ValueLayout] = {}
    for op in root.walk():
        meter.visit()
        for value in values_defined_by(op):
            meter.visit()
            if isinstance(value.type, TensorType):
                if value.type not in cache:
                    cache[value.type] = ValueLayout.of(value.type)
                layouts[value] = cache[value.type]
                meter.retain()
    return ShapeLayoutAnalysis(layouts)


def estimate_shapes(census: Census, _options: PlanOptions) -> WorkBounds:
    return WorkBounds(
        structural_visits=checked_add(census.operations, census.values),
        retained_entries=census.values,
    )


SHAPES = AnalysisDescriptor(
    name="accy-shape-layout",
    version=1,
    compute=compute_shapes,
    estimate=estimate_shapes,
)
