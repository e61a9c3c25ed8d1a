"""`dot.packed` (CPU): a product whose register tiles would read the rhs across pages packs
it into contiguous panels first.

The columns-form tiles (`dot_layout.dot_tiling`) walk the contraction reading, at each
position k, one strip of `width` output columns of the rhs. Where consecutive positions lie
`PACK_MIN_STRIDE` bytes or more apart, every step of a strip touches a page of its own: the reads miss the TLB and defeat the prefetchers as soon as the rhs leaves the caches.
This family first copies each strip, in parallel, into a panel of its own, `k x width`
elements in order (the workspace `panels`: the rhs's other dims, then strips, k and
width; the rhs in its stored type, so a widening prologue still extends as it loads), and
the tiles read the panels. Columns past the last whole strip (N's remainder) are read in
place. Every copy of an rhs element is made once per call, whatever M is.

A `rows`-form product (`A . B^T`: the rhs read along K, as GPT-2's Conv1D layers and
`x @ w.T` store their weights) whose rhs is larger than `PACK_MIN_BYTES`, N a multiple of
the tiles' width and at least `PACK_TRANSPOSED_MIN_ROWS` output rows sharing it is packed
across K into the same panels (`Panels.transposed`): its tiles then run in the `columns`
form (`dot_layout.dot_tiling(root, transposed_panels=True)`), whose steps load two rhs
vectors for sixteen multiply-adds where the `rows` form loads eight, and whose epilogue
runs along contiguous rows.

An rhs whose panels would not stay in the cache (over `PACK_CACHED_BYTES`) and which few
output rows share (under `PACK_MIN_ROWS`: a copy through memory would cost a large part
of the product) is packed strip by strip instead (`Panels.slots`, the BLIS scheme): the
workspace holds `PACK_SLOTS` strip panels, the tiles run as that many tasks, each taking
every `PACK_SLOTS`-th strip in turn, copying it into its own slot and running the strip's
tiles over every row while the panel is in its core's cache.

Invariants: `packed_panels` is the one place that decides the packing, for the planner (the
workspace's bytes) and for the CPU lowering (the panels it builds and reads).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from accy.dialects import accy as ops
from accy.passes.dot_layout import dot_tiling
from accy.passes.families.family import ItemFamily
from accy.passes.fusion import dot_operand_source
from accy.passes.schedule import WorkItem
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Attribute

PACK_MIN_STRIDE = 2048
"""Bytes between the rhs elements of consecutive contracting positions from which the
tiles read packed panels (half a page: each step's run of a strip then lies on a page of
its own, or shares it with one other)."""

PACK_MIN_K = 64
"""The fewest contracting positions worth packing for."""

PACK_MIN_BYTES = 1 << 20
"""Panels of at most this many bytes are not made: an rhs that small stays in one core's L2
cache, where the tiles read it as fast in place."""

PACK_CACHED_BYTES = 16 << 20
"""Panels up to this size (half the L3 cache of the machines measured) are packed however
few output rows share them; larger ones, copied through memory, only where at least
`PACK_MIN_ROWS` rows do (the copy then costs a fraction of the product)."""

PACK_MIN_ROWS = 256

PACK_TRANSPOSED_MIN_ROWS = 64
"""Output rows from which a `rows`-form product's rhs is packed across K: its copy (one
strided read per element) then costs a small part of the product."""

PACK_SLOTS = 16
"""Strip panels (`Panels.slots`): the tasks, each packing its strips into a slot of its own
(eight a thread on this 2-core machine: enough to balance the strips among threads)."""

WORKSPACE = "panels"


@dataclass(frozen=True)
class Panels:
    """The packed rhs: `shape` is (the rhs's dims but the contracting and last, in order,
    strips, k, width), of `element` (the rhs's stored type); `strips * width` columns are
    packed, the rest read in place. With `slots`, the shape is (slots, k, width): strip
    panels, each slot holding one strip at a time (the rhs has no other dims)."""

    shape: tuple[int, ...]
    element: Attribute
    slots: bool = False
    transposed: bool = False
    """Whether the rhs is read along K (`rows` form) and packed across it."""

    @property
    def strips(self) -> int:
        return self.shape[-3]

    @property
    def width(self) -> int:
        return self.shape[-1]

    @property
    def bytes(self) -> int:
        return math.prod(self.shape) * max(1, (self.element.bitwidth + 7) // 8)  # type: ignore[attr-defined]


def packed_panels(root: ops.DotGeneralOp) -> Panels | None:
    """The panels `root`'s tiles read, or None when they read the rhs in place."""
    tiling = dot_tiling(root)
    if tiling is not None and tiling.form == "rows":
        return _transposed_panels(root)
    if tiling is None or tiling.form != "columns":
        return None
    rhs = dot_operand_source(root.rhs)
    assert isinstance(rhs.type, TensorType)
    shape, element = rhs.type.get_shape(), rhs.type.get_element_type()
    k_dim = root.contracting[1][0]
    n_size = shape[-1]
    width = tiling.columns * tiling.lanes
    strips = (n_size - n_size % tiling.lanes) // width
    element_bytes = max(1, (element.bitwidth + 7) // 8)  # type: ignore[attr-defined]
    stride = math.prod(shape[k_dim + 1 :]) * element_bytes
    if strips == 0 or shape[k_dim] < PACK_MIN_K or stride < PACK_MIN_STRIDE:
        return None
    others = [size for d, size in enumerate(shape) if d not in (k_dim, len(shape) - 1)]
    panels = Panels((*others, strips, shape[k_dim], width), element)
    # the output rows that read each rhs column: the result's elements per rhs element but k
    outputs = math.prod(root.result.type.get_shape())  # type: ignore[attr-defined]
    rows = outputs // (math.prod(shape) // shape[k_dim])
    if panels.bytes <= PACK_MIN_BYTES:
        return None
    if panels.bytes > PACK_CACHED_BYTES and rows < PACK_MIN_ROWS:
        if others:
            return None
        return Panels((min(PACK_SLOTS, strips), shape[k_dim], width), element, slots=True)
    return panels


def _transposed_panels(root: ops.DotGeneralOp) -> Panels | None:
    """The panels of a `rows`-form product packed across K (see the module doc), or None."""
    tiling = dot_tiling(root, transposed_panels=True)
    assert tiling is not None
    rhs = dot_operand_source(root.rhs)
    assert isinstance(rhs.type, TensorType)
    shape, element = rhs.type.get_shape(), rhs.type.get_element_type()
    k_dim, n_dim = root.contracting[1][0], tiling.rhs_dims.index(tiling.n)
    width = tiling.columns * tiling.lanes
    outputs = math.prod(root.result.type.get_shape())  # type: ignore[attr-defined]
    rows = outputs // (math.prod(shape) // shape[k_dim])
    if shape[n_dim] % width or shape[k_dim] < PACK_MIN_K:
        return None
    others = [size for d, size in enumerate(shape) if d not in (k_dim, n_dim)]
    panels = Panels((*others, shape[n_dim] // width, shape[k_dim], width), element, False, True)
    if panels.bytes <= PACK_MIN_BYTES or panels.bytes > PACK_CACHED_BYTES:
        return None
    return panels if rows >= PACK_TRANSPOSED_MIN_ROWS else None


class DotPacked(ItemFamily):
    """The family (see the module doc)."""

    id = "dot.packed"
    kinds = ("dot",)
    workspace = WORKSPACE

    def bytes_of(self, item: WorkItem) -> int | None:
        root = item.contraction
        panels = packed_panels(root) if isinstance(root, ops.DotGeneralOp) else None
        return None if panels is None else panels.bytes


FAMILY = DotPacked()
