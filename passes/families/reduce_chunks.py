"""`reduce.chunks` (CPU): a reduction split into chunks run in parallel.

A reduction with fewer than `REDUCE_SPLIT_ROWS` kept rows, all dims static, whose outermost
reduced dim holds more than one chunk (the fewest positions of it, a power of two, covering
at least `REDUCE_CHUNK` elements with the reduced dims inside it), and that is not a float
product (whose rounding suffers from restarting), runs the family: each chunk folds into
one accumulator per kept row, in the workspace `partials`, then each row folds its partials
in order. The workspace is planned like every other (an arena buffer the kernel names),
sized exactly: chunks * kept rows * the accumulator's bytes. Any other reduction runs no
family (one loop nest per kept row).

Invariants: `split_partials` is the one place that decides the split, for the planner (its
bytes) and for the CPU lowering (the loops it builds).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from accy.dialects import accy as ops
from accy.passes.element_types import compute_type, is_float
from accy.passes.families.family import ItemFamily
from accy.passes.schedule import WorkItem
from xdsl.dialects.builtin import DYNAMIC_INDEX, TensorType
from xdsl.ir import Attribute

REDUCE_SPLIT_ROWS = 256
"""Reductions with fewer (static) kept rows than this may be split into chunks."""

REDUCE_CHUNK = 1 << 16
"""The fewest elements one chunk of a split reduction folds (a power of two of positions
of the outermost reduced dim, times the reduced dims inside it)."""

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


class ReduceChunks(ItemFamily):
    """The family (see the module doc)."""

    id = "reduce.chunks"
    kinds = ("reduce",)
    workspace = WORKSPACE

    def bytes_of(self, item: WorkItem) -> int | None:
        root = item.root
        split = split_partials(root) if isinstance(root, ops.ReduceOp) else None
        return None if split is None else split.bytes


FAMILY = ReduceChunks()
