"""`sort.merge`: a merge sort ping-ponging between the results and a scratch copy of every
operand (`merge_sort`: run widths, merge targets, scratch offsets).

On CUDA, pass p merges each pair of sorted runs of 2**p elements, one thread per element
finding its place by binary search in the other run (stable); every sort runs it. On the
CPU, each pair of runs is merged by one sequential loop, the pairs in parallel; a sort
that keeps few elements of each slice (`merge_sort.sorts_by_insertion`) inserts them into
the results instead and runs no family.
"""

from __future__ import annotations

from collections.abc import Mapping

from accy.dialects import accy as ops
from accy.passes.families.family import ExpressionFamily, KernelFamily, WorkspaceDecl
from accy.passes.merge_sort import sort_scratch_offsets, sorts_by_insertion
from accy.passes.schedule import WorkItem

ID = "sort.merge"
WORKSPACE = "scratch"

FAMILY = ExpressionFamily.of(ID, ["sort"], source=__name__, workspaces={WORKSPACE: "sort_bytes"})
"""The CUDA family: `scratch` is `sort_bytes`, one copy of every operand (each aligned)."""


class CpuSortMerge(KernelFamily):
    """The CPU family: the sorts that do not insert; `scratch` holds every copy the
    merge passes target (`sort_scratch_offsets`)."""

    id = ID
    kinds = ("sort",)
    targets = ("cpu",)
    workspaces = (WorkspaceDecl(WORKSPACE, (), True),)
    source = __name__
    sized_by_rows = False

    def applies(self, kind: str, env: Mapping[str, int], item: WorkItem | None = None) -> bool:
        return (
            kind in self.kinds
            and item is not None
            and isinstance(item.root, ops.SortOp)
            and not sorts_by_insertion(item.root)
        )

    def workspace_bytes(
        self, env: Mapping[str, int], item: WorkItem | None = None
    ) -> dict[str, int]:
        assert item is not None and isinstance(item.root, ops.SortOp)
        return {WORKSPACE: sort_scratch_offsets(item.root)[1]}


CPU_FAMILY = CpuSortMerge()
