"""`sort.merge`: a merge sort ping-ponging between the results and a scratch copy of every
operand (`merge_sort`: run widths, merge targets, scratch offsets).

On CUDA, pass p merges each pair of sorted runs of 2**p elements, one thread per element
finding its place by binary search in the other run (stable); every sort runs it. On the
CPU, each pair of runs is merged by one sequential loop, the pairs in parallel; a sort
that keeps few elements of each slice (`merge_sort.sorts_by_insertion`) inserts them into
the results instead and runs no family.
"""

from __future__ import annotations

from accy.dialects import accy as ops
from accy.passes.families.family import ExpressionFamily, ItemFamily
from accy.passes.merge_sort import sort_scratch_offsets, sorts_by_insertion
from accy.passes.schedule import WorkItem

ID = "sort.merge"
WORKSPACE = "scratch"

FAMILY = ExpressionFamily.of(ID, ["sort"], source=__name__, workspaces={WORKSPACE: "sort_bytes"})
"""The CUDA family: `scratch` is `sort_bytes`, one copy of every operand (each aligned)."""


class CpuSortMerge(ItemFamily):
    """The CPU family: the sorts that do not insert; `scratch` holds every copy the
    merge passes target (`sort_scratch_offsets`)."""

    id = ID
    kinds = ("sort",)
    workspace = WORKSPACE

    def bytes_of(self, item: WorkItem) -> int | None:
        root = item.root
        if not isinstance(root, ops.SortOp) or sorts_by_insertion(root):
            return None
        return sort_scratch_offsets(root)[1]


CPU_FAMILY = CpuSortMerge()
