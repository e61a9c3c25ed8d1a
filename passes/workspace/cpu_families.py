"""The CPU target's kernel families that need scratch: a reduction split into chunks, and
a merge sort (`sort.merge`, whose `scratch` holds copies of every operand).

A reduction with fewer than `REDUCE_SPLIT_ROWS` kept rows, all dims static, whose outermost
reduced dim holds more than one chunk (the fewest positions of it, a power of two, covering
at least `REDUCE_CHUNK` elements with the reduced dims inside it), and that is not a float
product (whose rounding suffers from restarting), runs the family `reduce.chunks`: each
chunk folds into one accumulator per kept row, in the workspace `partials`, then each row
folds its partials in order. The workspace is planned like every other (an arena buffer
the kernel names), sized exactly: chunks * kept rows * the accumulator's bytes.

Invariants: `split_partials` is the one place that decides the split, for the planner (its
bytes) and for the CPU lowering (the loops it builds); one term per family workspace, its
bytes the largest over the work items that run it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from accy.dialects import accy as ops
from accy.passes.analysis import WorkMeter
from accy.passes.element_types import compute_type, is_float
from accy.passes.merge_sort import sorts_by_insertion
from accy.passes.schedule import SchedulePlan
from xdsl.dialects.builtin import DYNAMIC_INDEX, TensorType
from xdsl.ir import Attribute

REDUCE_SPLIT_ROWS = 256
"""Reductions with fewer (static) kept rows than this may be split into chunks."""

REDUCE_CHUNK = 1 << 16
"""The fewest elements one chunk of a split reduction folds (a power of two of positions
of the outermost reduced dim, times the reduced dims inside it)."""

FAMILY = "reduce.chunks"
WORKSPACE = "partials"


@dataclass(frozen=True)
class SplitReduce:
    """How a split reduction runs: `chunk` positions of its outermost reduced dim per chunk,
    `chunks` chunks, into partials of `shape` (chunks, then the kept dims) of `element`."""

    chunk: int
    chunks: int
    shape: tuple[int, ...]
    element: Attribute

    @property
    def bytes(self) -> int:
        count = 1
        for d in self.shape:
            count *= d
        return count * max(1, (self.element.bitwidth + 7) // 8)  # type: ignore[attr-defined]


def reduce_chunk(shape: Sequence[int], kept: Sequence[int], reduced: Sequence[int]) -> int | None:
    """Positions of the outermost reduced dim per chunk, or None when it is not split (see
    the module doc)."""
    if not reduced or DYNAMIC_INDEX in shape:
        return None
    rows = 1
    for d in kept:
        rows *= shape[d]
    inside = 1
    for d in reduced[1:]:
        inside *= shape[d]
    if rows >= REDUCE_SPLIT_ROWS or inside == 0:
        return None
    chunk = 1
    while chunk * inside < REDUCE_CHUNK:
        chunk *= 2
    return chunk if chunk < shape[reduced[0]] else None


def split_partials(root: ops.ReduceOp) -> SplitReduce | None:
    """The split of a reduction on the CPU, or None when it folds each row in one nest."""
    t = root.operand.type
    assert isinstance(t, TensorType)
    shape = list(t.get_shape())
    reduced = sorted(int(d) for d in root.dimensions.get_values())
    kept = [d for d in range(len(shape)) if d not in reduced]
    acc = compute_type(root.result.type.get_element_type())  # type: ignore[attr-defined]
    if root.kind.data == ops.CombinerKind.MUL and is_float(acc):
        return None
    chunk = reduce_chunk(shape, kept, reduced)
    if chunk is None:
        return None
    chunks = -(-shape[reduced[0]] // chunk)
    return SplitReduce(chunk, chunks, (chunks, *[shape[d] for d in kept]), acc)


SORT_FAMILY = "sort.merge"
SORT_WORKSPACE = "scratch"


def cpu_workspace_terms(schedule: SchedulePlan, meter: WorkMeter):
    """The CPU plan's workspace terms and the family of each work item that runs one: a
    split reduction's `partials`, a merge sort's `scratch` (copies of its operands, which
    its merge passes ping-pong with the results: `sort_scratch_offsets`; a sort that
    keeps few elements of each slice inserts them in place and needs none)."""
    from accy.passes.workspace.sizing import (
        WorkspacePlan,
        WorkspaceTerm,
        sort_scratch_offsets,
    )

    found: dict[tuple[str, str], tuple[list[int], int, int | None]] = {}
    for item in schedule.work_items:
        meter.visit()
        size = None
        if isinstance(item.root, ops.ReduceOp):
            split = split_partials(item.root)
            key, size = (FAMILY, WORKSPACE), None if split is None else split.bytes
        elif isinstance(item.root, ops.SortOp) and not sorts_by_insertion(item.root):
            key, size = (SORT_FAMILY, SORT_WORKSPACE), sort_scratch_offsets(item.root)[1]
        if size is None:
            continue
        nodes, widest, max_node = found.get(key, ([], 0, None))
        nodes.append(item.id)
        if size > widest or max_node is None:
            widest, max_node = max(size, widest), item.id
        found[key] = (nodes, widest, max_node)
    if not found:
        return WorkspacePlan((), {})
    terms = []
    family_of: dict[int, str] = {}
    for (family, name), (nodes, size, max_node) in sorted(found.items()):
        meter.retain()
        terms.append(
            WorkspaceTerm(
                family=family,
                name=name,
                bytes=size,
                arena=True,
                nodes=tuple(nodes),
                max_node=max_node,
                rows=None,
            )
        )
        family_of.update({node: family for node in nodes})
    return WorkspacePlan(tuple(terms), family_of)
