"""A sort's plan: whether the CPU inserts a slice's kept elements in place
(`sorts_by_insertion`) or merge-sorts it, and a merge sort's passes (`sort_run_widths`),
what each writes (`merge_targets`: the results or a copy in the `scratch` workspace) and
how many copies the workspace holds (`sort_scratch_copies`). Planning sizes the workspace
from these and lowering follows them: one home for both."""

from __future__ import annotations

from accy.dialects import accy as ops
from accy.dialects.plan import buffer_bytes
from accy.passes.element_types import shape_of


def sort_run_widths(op: ops.SortOp) -> list[int]:
    """The run widths of the sort's merge passes, 1, 2, 4, ... below the sorted extent:
    pass p merges pairs of sorted runs of that width into runs of twice it."""
    shape = shape_of(op.inputs[0])
    extent = shape[op.dim] if shape else 1
    widths, width = [], 1
    while width < extent:
        widths.append(width)
        width *= 2
    return widths


RESULTS = -1
"""`merge_targets`' name for the sort's results (scratch copies are numbered from 0)."""


def merge_targets(op: ops.SortOp) -> list[int]:
    """What each merge pass writes: the last pass the results; with whole slices kept the
    passes before alternate between scratch copy 0 and the results, with a prefix kept
    (a top-k: the results cannot hold a whole run) between scratch copies 0 and 1."""
    passes = len(sort_run_widths(op))
    whole = not shape_of(op.inputs[0]) or op.kept == shape_of(op.inputs[0])[op.dim]
    targets = []
    for p in range(passes):
        back = passes - 1 - p
        if back == 0:
            targets.append(RESULTS)
        elif whole:
            targets.append(RESULTS if back % 2 == 0 else 0)
        else:
            targets.append(0 if back % 2 == 1 else 1)
    return targets


def sort_scratch_copies(op: ops.SortOp) -> int:
    """How many copies of its operands a merge sort's `scratch` holds (`merge_targets`;
    one whenever there is a pass, as a sort of whole slices ping-pongs)."""
    targets = merge_targets(op)
    return max(1, *(t + 1 for t in targets)) if targets else 0


INSERTION_SORT_KEPT = 256
"""The CPU sorts by insertion (`insert_sorted`, no scratch) when the results keep at most
this many elements of each slice; longer results merge (`merge_runs`)."""


def sorts_by_insertion(op: ops.SortOp) -> bool:
    """Whether the CPU target sorts `op` by insertion (`INSERTION_SORT_KEPT`)."""
    return op.kept <= INSERTION_SORT_KEPT


SORT_SCRATCH_ALIGNMENT = 16
"""Byte alignment of each operand's part of a sort's scratch workspace."""


def sort_scratch_offsets(op: ops.SortOp) -> tuple[list[list[int]], int]:
    """Where each operand's part of each copy of a merge sort's `scratch` workspace lies
    (byte offsets, by copy then in operand order: `sort_scratch_copies`) and the bytes
    the copies span: one aligned buffer of each operand's shape per copy."""
    offsets, total = [], 0
    for _ in range(sort_scratch_copies(op)):
        copy = []
        for value in op.inputs:
            copy.append(total)
            size = buffer_bytes(value.type)  # type: ignore[arg-type]
            total += -(-size // SORT_SCRATCH_ALIGNMENT) * SORT_SCRATCH_ALIGNMENT
        offsets.append(copy)
    return offsets, total
