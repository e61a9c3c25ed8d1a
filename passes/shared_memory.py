"""Shared memory: the `device_shared` bytes each work item's kernel needs per block,
checked against the per-block limit.

The kernels that stage data in shared memory and their block shapes (the CUDA lowering
reads these constants from here, so the plan and the kernels agree):
- reductions (`reduce.row`, `reduce.split`): a tree over `REDUCE_BLOCK` threads, one
  accumulator each;
- scans (`scan.block`, `scan.multiblock`): a Hillis-Steele scan over a block of the
  smallest power of two ≥ the scanned width (a warp at least, `SCAN_TILE` at most);
- dot (`dot.tiled`, `dot.splitk`) and convolution (`convolution.tiled`): two `DOT_TILE` ×
  `DOT_TILE` operand tiles.
Accumulators are in the compute type (f32 for f16/bf16). Other kinds use none.

Invariant: a work item whose bytes exceed `shared_limit` is an error at its location.
"""

from __future__ import annotations

from dataclasses import dataclass

from accy.dialects import accy as ops
from accy.passes.analysis import (
    AnalysisDescriptor,
    AnalysisManager,
    Census,
    WorkBounds,
    WorkMeter,
)
from accy.passes.options import PlanOptions
from accy.passes.schedule import SCHEDULE, WorkItem, WorkKind
from xdsl.dialects.builtin import DYNAMIC_INDEX, BFloat16Type, Float16Type, TensorType
from xdsl.ir import Attribute, Operation

from accy.diagnostics import AccyError
from accy.dtypes import byte_width

REDUCE_BLOCK = 256
"""Threads per block of the reduction kernels (a power of two: the tree halves it)."""

SCAN_TILE = 1024
"""Elements per tile of `scan.multiblock` (its workspace expression's 1024) and the
largest block of `scan.block`."""

DOT_TILE = 16
"""Threads per block side and contraction step of the dot kernels' shared tiles."""


class SharedMemoryExceeded(AccyError):
    """A kernel needs more shared memory per block than the limit allows."""


def compute_bytes(element: Attribute) -> int:
    """Bytes of one accumulator: f16 and bf16 accumulate in f32."""
    return 4 if isinstance(element, (Float16Type, BFloat16Type)) else byte_width(element)


def scan_block_size(width: int) -> int:
    """The smallest power of two >= width, between 32 (a warp) and `SCAN_TILE`."""
    size = 32
    while size < width and size < SCAN_TILE:
        size *= 2
    return size


def _element(value) -> Attribute:
    assert isinstance(value.type, TensorType)
    return value.type.get_element_type()


def shared_bytes(item: WorkItem) -> int:
    """The shared memory one block of the work item's kernel uses."""
    root = item.root
    if item.kind is WorkKind.REDUCE:
        return REDUCE_BLOCK * compute_bytes(_element(root.results[0]))
    if item.kind is WorkKind.SCAN:
        assert isinstance(root, ops.ScanOp)
        width = root.operand.type.get_shape()[root.dimension.value.data]
        threads = SCAN_TILE if width == DYNAMIC_INDEX else scan_block_size(width)
        return threads * compute_bytes(_element(root.results[0]))
    if item.kind in (WorkKind.DOT, WorkKind.CONVOLUTION):
        return 2 * DOT_TILE * DOT_TILE * compute_bytes(_element(item.head.results[0]))
    return 0


@dataclass(frozen=True)
class SharedMemoryPlan:
    bytes_of: dict[int, int]
    """Work item id → shared bytes per block (items that use none are absent)."""
    limit: int


def compute_shared_memory(
    manager: AnalysisManager, root: Operation, meter: WorkMeter
) -> SharedMemoryPlan:
    limit = manager.options.shared_limit
    bytes_of: dict[int, int] = {}
    for item in manager.get(SCHEDULE, root).work_items:
        meter.visit()
        if (size := shared_bytes(item)) == 0:
            continue
        if size > limit:
            raise SharedMemoryExceeded(
                f"work item {item.id} ({item.kind.value}) needs {size} bytes of shared "
                f"memory per block, over the limit of {limit}",
                item.root.location,
            )
        bytes_of[item.id] = size
        meter.retain()
    return SharedMemoryPlan(bytes_of, limit)


def estimate_shared_memory(census: Census, _options: PlanOptions) -> WorkBounds:
    return WorkBounds(structural_visits=census.operations, retained_entries=census.operations)


SHARED_MEMORY = AnalysisDescriptor(
    name="accy-shared-memory",
    version=1,
    compute=compute_shared_memory,
    estimate=estimate_shared_memory,
)
