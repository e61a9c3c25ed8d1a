"""`accy-rematerialize`: recompute cheap elementwise values where they are read late instead
of keeping them stored.

A training step keeps the values of its forward pass for the backward one: BatchNorm's
`x - mean` and its normalised, scaled output are each read by the next forward op and again,
much later, by a gradient. Stored, each is a buffer as large as the activation, live across
every kernel between its two readers. Each is cheap to recompute from values that stay live
anyway (the convolution's output, which its weight gradient reads last) and per-channel
vectors, so for that later reader the pass clones the ops that compute it, which then fuse
into the reader's kernel: the stored value dies at its first reader.

The cost rule. A value `v` of an op in `CHEAP` (arithmetic, compare, select, convert,
broadcast, reshape: no transcendental), read only in its block and not returned or yielded
(a result is stored whole anyway), is recomputed for a reader `c` when

- `c` computes producers into its kernel (`fusion.takes_producers`: elementwise ops,
  reductions, non-overlapping pools, ...), so the clones fuse into it and nothing new is
  stored;
- a kernel boundary lies between `v`'s first reader and `c` (an op not in `CHEAP`): `v`
  would be stored across it;
- the clones, at most `max_ops` ops, reach back only to values that cost nothing to keep:
  parameters, constants, values read at or after `c` anyway, and values at most
  1/`small_fraction` of `v`'s bytes (per-channel statistics); a large value that would
  have to stay live longer is itself recomputed, through `CHEAP` ops, or the rule fails.

Each reader gets clones of its own (named `NAME_remat`); values are visited in program
order, so a value recomputed for a late reader no longer counts as read late when a later
value's clones reach it. The fusion report shows the clones inside their readers' kernels.
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass

from accy.dialects import accy as ops
from accy.passes.fusion import takes_producers
from accy.passes.shapes import ValueLayout
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Block, BlockArgument, Operation, SSAValue
from xdsl.passes import ModulePass

CHEAP = (
    ops.AddOp,
    ops.SubtractOp,
    ops.MultiplyOp,
    ops.DivideOp,
    ops.MaximumOp,
    ops.MinimumOp,
    ops.NegateOp,
    ops.AbsOp,
    ops.SignOp,
    ops.AndOp,
    ops.OrOp,
    ops.XorOp,
    ops.NotOp,
    ops.CompareOp,
    ops.SelectOp,
    ops.ConvertOp,
    ops.BroadcastInDimOp,
    ops.ReshapeOp,
)
"""Ops recomputed for a late reader: each result element from a few operand elements by
an instruction or two (no transcendental function, root or power: recomputing those costs
more than the memory it saves)."""

MAX_OPS = 16
"""The most ops cloned for one reader."""

SMALL_FRACTION = 8
"""A value at most 1/SMALL_FRACTION of the recomputed value's bytes is small enough to keep
live for it."""


def _bytes(value: SSAValue) -> int | None:
    """A tensor value's bytes (None for a dynamic shape or another type)."""
    t = value.type
    return ValueLayout.of(t).byte_size if isinstance(t, TensorType) else None


@dataclass
class _Order:
    """One block's ops in order, with the positions clones take (their reader's)."""

    block: Block
    position: dict[Operation, int]

    def last_read(self, value: SSAValue) -> int:
        """The position of `value`'s last reader in the block (a reader nested in an op
        of the block counts at that op)."""
        last = -1
        for use in value.uses:
            owner = self.block.find_ancestor_op_in_block(use.operation)
            if owner is None or owner not in self.position:
                return 1 << 62  # read elsewhere: live throughout
            last = max(last, self.position[owner])
        return last

    def chain(self, value: SSAValue, reader: int, limit: int, chosen: list[Operation]) -> bool:
        """Add to `chosen` (producers first) the ops that recompute `value` for the reader
        at position `reader`; False when the cost rule fails."""
        op = value.owner
        assert isinstance(op, Operation)
        if op in chosen:
            return True
        if len(chosen) >= MAX_OPS:
            return False
        for operand in op.operands:
            if not self.free(operand, reader, limit) and not (
                isinstance(operand.owner, CHEAP)
                and operand.owner.parent is self.block
                and self.chain(operand, reader, limit, chosen)
            ):
                return False
        chosen.append(op)
        return True

    def free(self, value: SSAValue, reader: int, limit: int) -> bool:
        """Whether keeping `value` live for the reader costs nothing (see the module doc)."""
        if isinstance(value, BlockArgument) or isinstance(value.owner, ops.ConstantOp):
            return True
        size = _bytes(value)
        if size is not None and size <= limit:
            return True
        return self.last_read(value) >= reader


def _rematerialize_block(block: Block) -> None:
    order = list(block.ops)
    place = _Order(block, {op: i for i, op in enumerate(order)})
    boundaries = [i for i, op in enumerate(order) if not isinstance(op, CHEAP)]
    for op in order:
        if not isinstance(op, CHEAP) or len(op.results) != 1:
            continue
        value = op.results[0]
        size = _bytes(value)
        readers = sorted(
            {use.operation for use in value.uses if use.operation.parent is block},
            key=place.position.__getitem__,
        )
        if (
            size is None
            or len(readers) < 2
            or len(readers) != len({use.operation for use in value.uses})
            or any(isinstance(r, (func.ReturnOp, ops.YieldOp)) for r in readers)
        ):
            continue  # dynamic, read once or in a region, or stored anyway as a result
        first = place.position[readers[0]]
        for reader in readers[1:]:
            at = place.position[reader]
            after_first = bisect_left(boundaries, first)  # the first boundary from `first`
            if not takes_producers(reader) or not (
                after_first < len(boundaries) and boundaries[after_first] < at
            ):
                continue
            chosen: list[Operation] = []
            if not place.chain(value, at, size // SMALL_FRACTION, chosen):
                continue
            mapping: dict[SSAValue, SSAValue] = {}
            for original in chosen:
                clone = original.clone(value_mapper=mapping)
                block.insert_op_before(clone, reader)
                place.position[clone] = at
                for old, new in zip(original.results, clone.results):
                    mapping[old] = new
                    new.name_hint = f"{old.name_hint}_remat" if old.name_hint else None
            for index, operand in enumerate(reader.operands):
                if operand is value:
                    reader.operands[index] = mapping[value]


def rematerialize(module: ModuleOp) -> None:
    """Recompute cheap values for their late readers in every function of `module` (see
    the module docstring)."""
    for function in module.walk():
        if isinstance(function, func.FuncOp) and function.body.blocks:
            _rematerialize_block(function.body.block)


@dataclass(frozen=True)
class RematerializePass(ModulePass):
    """Recomputes cheap elementwise values for the readers that read them late (the
    module doc)."""

    name = "accy-rematerialize"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        rematerialize(op)
