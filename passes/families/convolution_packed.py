"""`convolution.packed` (CPU): an f32 convolution whose kernel keeps its output features
in another dim than its last (OIHW, or the `[0, 1, o, i]` kernel of every input gradient
JAX writes) copies the kernel first into the layout its register tiles read.

The tiles (`accy.passes.lower.cpu_kernels.convolution`) load, at each window position and
input feature, a vector of consecutive output features of the kernel. This family copies the
kernel, reversed where the op says, into the workspace `kernel`: window positions (in the
order of the op's spatial dims), input features, output features; the tiles then read it
as they read a kernel stored that way (`dot_layout.convolution_tile_read`).

Invariants: `packed_kernel` is the one place that decides it, for the planner (the
workspace's bytes) and the CPU lowering (the copy it makes and the tiles' reads).
"""

from __future__ import annotations

import math

from accy.dialects import accy as ops
from accy.passes.dot_layout import convolution_tile_read
from accy.passes.element_types import shape_of
from accy.passes.families.family import ItemFamily
from accy.passes.schedule import WorkItem

WORKSPACE = "kernel"


def packed_kernel(root: ops.ConvolutionOp) -> tuple[int, ...] | None:
    """The packed kernel's shape (window positions, input features, output features) of
    f32 elements, or None when the tiles read the kernel in place or have none."""
    if convolution_tile_read(root) != "packed":
        return None
    shape = shape_of(root.rhs)
    ri, ro, *spatial = root.window_list("rhs_dims")
    return (math.prod(shape[d] for d in spatial), shape[ri], shape[ro])


class ConvolutionPacked(ItemFamily):
    """The family (see the module doc)."""

    id = "convolution.packed"
    kinds = ("convolution",)
    workspace = WORKSPACE

    def bytes_of(self, item: WorkItem) -> int | None:
        root = item.contraction
        shape = packed_kernel(root) if isinstance(root, ops.ConvolutionOp) else None
        return None if shape is None else math.prod(shape) * 4


FAMILY = ConvolutionPacked()
