"""A kernel of the planned form (`accy.kernel`) as the work item the kernel patterns lower.

Invariants: the members are the kernel body's ops but its constants (splat constants, read
as scalars) and its `accy.yield`, in body order; the root is the op of the first yielded
value and the outputs are the yielded values (a work item leaves its root's results in
storage); every body argument and yielded value has its planned buffer, every workspace
its planned buffer by name.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from accy.dialects import accy as ops
from accy.dialects import plan
from accy.dialects.plan import MemorySpace, space_of
from accy.passes.schedule import WorkItem, WorkKind
from xdsl.ir import Operation, SSAValue

from accy.diagnostics import AccyError


@dataclass(frozen=True, kw_only=True, eq=False)
class PlannedKernel(WorkItem):
    """A work item read from an `accy.kernel` op (see the module doc)."""

    op: plan.KernelOp
    buffers: Mapping[SSAValue, SSAValue] = field(default_factory=dict)
    """Body value (argument or yielded value) → the planned buffer it is read from or
    written to."""
    workspaces: Mapping[str, SSAValue] = field(default_factory=dict)
    """Workspace name → its planned buffer."""

    @property
    def family(self) -> str | None:
        return self.op.family.data if self.op.family is not None else None

    @property
    def rows(self) -> SSAValue | None:
        return self.op.rows

    def buffer_of(self, value: SSAValue) -> SSAValue:
        """The planned buffer `value` is stored in."""
        if value not in self.buffers:
            raise AccyError(
                f"internal: kernel {self.id} reads {value.name_hint or value} from no buffer",
                self.op.location,
            )
        return self.buffers[value]

    def space_of(self, value: SSAValue) -> MemorySpace | None:
        """The memory space of `value`'s buffer (None for a value without one)."""
        buffer = self.buffers.get(value)
        return None if buffer is None else space_of(buffer.type)

    @classmethod
    def of(cls, op: plan.KernelOp, function: str) -> PlannedKernel:
        block = op.body.block
        yielded = op.yielded
        root = yielded[0].owner
        assert isinstance(root, Operation)
        members = tuple(
            member for member in block.ops if not isinstance(member, (ops.ConstantOp, ops.YieldOp))
        )
        buffers: dict[SSAValue, SSAValue] = dict(zip(block.args, op.ins))
        buffers.update(zip(yielded, op.outs))
        return cls(
            id=op.id.value.data,
            kind=WorkKind(op.kind.data),
            root=root,
            members=members,
            outputs=tuple(yielded),
            function=function,
            op=op,
            buffers=buffers,
            workspaces=op.named_workspaces(),
        )
