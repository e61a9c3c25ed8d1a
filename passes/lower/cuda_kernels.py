"""CUDA kernels: one `gpu.func` (or a few, for multi-phase families) per work item.

A kernel program is what one planned kernel (`accy.kernel`, read as a `PlannedKernel`)
becomes: the `gpu.func`s it adds to the module's `gpu.module` and the launches the host
makes, in order, each with its grid, block and arguments. The CUDA target's kernel patterns
(`cuda.CUDA_KERNEL_PATTERNS`) pick the builder by the kernel's planned family (`reduce.row`,
`reduce.split`, `scan.block`, `scan.multiblock`, `dot.tiled`, `dot.splitk`) and, for
kernels without a family, by their kind (elementwise, broadcast, reshape, transpose: the
one-thread-per-element `element_kernel`). Multi-phase families take their scratch only
from their planned workspace buffers.

This module holds the machinery every pattern shares (`KernelContext`, `Kernel`) and the
patterns whose threads each compute one element of the result (`element_kernel`); the
reductions and scans are in `cuda_reductions.py`, the contractions in `cuda_dot.py`.

Kernel arguments are the kernel's planned device buffers (a `memref` of the value's static
shape, a view into the arena that the host passes), its workspace buffers (`memref<N x i8>`)
and, for patterns that run in a host loop, the loop's index. Constants planned in
`device_constant` are not arguments: they are `memref.global constant`s in address space
4 of the `gpu.module` (PTX `.const`, part of the module image, so never copied by the
host). Splat constants are not read from memory at all.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
from accy.dialects import accy as ops
from accy.dialects import plan
from accy.dialects.memref_atomic import AtomicYieldOp, GenericAtomicRMWOp, atomic_rmw
from accy.dialects.plan import MemorySpace, buffer_bytes
from accy.passes import merge_sort
from accy.passes.element_types import is_unsigned
from accy.passes.families import sort_merge
from accy.passes.lower import cuda_ir as ir
from accy.passes.lower import indexing
from accy.passes.lower.indexing import (
    FusedGroup,
    delinearize,
    transpose_operand_indices,
)
from accy.passes.lower.planned_kernel import PlannedKernel
from accy.passes.lower.scalar import constant, element_type, lower_scalar_body, signless_dense
from accy.passes.merge_sort import sort_scratch_offsets
from accy.passes.schedule import WorkKind
from xdsl.builder import Builder
from xdsl.dialects import gpu
from xdsl.dialects.builtin import (
    Float32Type,
    FunctionType,
    IntegerType,
    MemRefType,
    TensorType,
)
from xdsl.ir import Block, Operation, SSAValue

from accy.diagnostics import AccyError
from accy.dtypes import dense_values

ELEMENT_BLOCK = 256
"""Threads per block of the one-thread-per-element kernels."""


class CudaLoweringError(AccyError):
    """A work item the CUDA target cannot lower (the message says why)."""


# ---------------------------------------------------------------------------------------
# What a work item becomes
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class BufferArg:
    """A kernel argument: a planned device buffer."""

    buffer: SSAValue
    type: MemRefType


@dataclass(frozen=True)
class Workspace:
    """A kernel's planned workspace: its name, its planned buffer and its bytes."""

    name: str
    buffer: SSAValue
    bytes: int


@dataclass(frozen=True)
class WorkspaceArg:
    """A kernel argument: a workspace's buffer, as bytes."""

    workspace: Workspace
    type: MemRefType


@dataclass(frozen=True)
class LoopIndexArg:
    """A kernel argument: the index of the host loop the launch runs in."""


KernelArg = BufferArg | WorkspaceArg | LoopIndexArg


@dataclass(frozen=True)
class Launch:
    """One `gpu.launch_func`: kernel symbol, grid and block sizes (x, y, z), arguments."""

    kernel: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    args: tuple[KernelArg, ...]


@dataclass(frozen=True)
class KernelProgram:
    """The launches of one work item, in order. With `host_loop`, the host runs them in
    a loop of that many iterations, passing the iteration as every `LoopIndexArg`."""

    launches: tuple[Launch, ...]
    host_loop: int | None = None


# ---------------------------------------------------------------------------------------
# The shared machinery
# ---------------------------------------------------------------------------------------


def static_shape(value: SSAValue) -> tuple[int, ...]:
    assert isinstance(value.type, TensorType), value.type
    if not value.type.has_static_shape():
        raise CudaLoweringError(
            f"the CUDA target needs static shapes; {value.type} is dynamic",
            _location(value),
        )
    return tuple(value.type.get_shape())


def _location(value: SSAValue):
    owner = value.owner
    return owner.location if isinstance(owner, Operation) else None


def storage_type(value: SSAValue) -> MemRefType:
    """The device buffer type of a tensor value: a memref of its shape and element."""
    return ir.memref_type(element_type(value), static_shape(value))


def splat_value(value: SSAValue) -> int | float | bool | None:
    """The single value of a splat `accy.constant`, or None."""
    owner = value.owner
    if not isinstance(owner, ops.ConstantOp):
        return None
    values = dense_values(owner.value)
    if values.size == 0 or not np.all(values == values.flat[0]):
        return None
    scalar = values.flat[0]
    return bool(scalar) if values.dtype == np.bool_ else scalar.item()


@dataclass
class KernelContext:
    """The multiprocessor count the plan was sized for and the `gpu.module` the kernels are
    added to."""

    sm_count: int
    module_block: Block
    constant_globals: dict[SSAValue, Operation] = field(default_factory=dict)
    """Planned constant-memory buffer (`accy.global`) → its `memref.global`."""
    names: set[str] = field(default_factory=set)

    def constant_global(self, buffer: SSAValue) -> Operation:
        """The `memref.global` in constant memory (address space 4) of a planned
        `accy.global` in device constant memory."""
        if buffer not in self.constant_globals:
            owner = buffer.owner
            assert isinstance(owner, plan.GlobalOp)
            t = owner.value.type
            global_op = ir.global_buffer(
                f"accy_device_constant_{len(self.constant_globals)}",
                ir.memref_type(t.get_element_type(), t.get_shape(), ir.CONSTANT),  # type: ignore[attr-defined]
                signless_dense(owner.value),
            )
            self.add_global(global_op)
            self.constant_globals[buffer] = global_op
        return self.constant_globals[buffer]

    def add_global(self, op: Operation) -> None:
        """Put a `memref.global` at the top of the `gpu.module`."""
        first = self.module_block.first_op
        if first is None:
            self.module_block.add_op(op)
        else:
            self.module_block.insert_op_before(op, first)

    def unique_name(self, base: str) -> str:
        """`base` as a PTX identifier (other characters than letters, digits, `_` and `$`
        become `_`: a function may be named `add_n.impl`), made unique."""
        base = re.sub(r"[^A-Za-z0-9_$]", "_", base)
        name, n = base, 1
        while name in self.names:
            n += 1
            name = f"{base}_{n}"
        self.names.add(name)
        return name

    def workspace_of(self, item: PlannedKernel, name: str, needed: int) -> Workspace:
        """The kernel's workspace `name`, checked to hold `needed` bytes."""
        family = item.family
        buffer = item.workspaces.get(name)
        if buffer is None:
            raise CudaLoweringError(
                f"work item {item.id} runs {family} but the plan has no '{name}' workspace for it",
                item.root.location,
            )
        size = buffer_bytes(buffer.type)  # type: ignore[arg-type]
        if size < needed:
            raise CudaLoweringError(
                f"work item {item.id} ({family}) needs {needed} bytes of '{name}' but the "
                f"plan sized it at {size} bytes (its expression does not cover this shape)",
                item.root.location,
            )
        return Workspace(name, buffer, size)

    def kernel(
        self,
        item: PlannedKernel,
        phase: str,
        *,
        reads: Sequence[SSAValue] = (),
        writes: Sequence[SSAValue] = (),
        workspaces: Sequence[Workspace] = (),
        loop_index: bool = False,
    ) -> Kernel:
        """A new `gpu.func` for a phase of a work item's kernel program."""
        name = self.unique_name(f"{item.function}_item{item.id}_{phase}")
        return Kernel(self, item, name, reads, writes, workspaces, loop_index)


class Kernel:
    """One `gpu.func` being built, with its arguments bound to the values it touches.

    Values that share a planned buffer share one argument; constants in constant memory and
    splat constants are read without an argument.
    """

    def __init__(
        self,
        context: KernelContext,
        item: PlannedKernel,
        name: str,
        reads: Sequence[SSAValue],
        writes: Sequence[SSAValue],
        workspaces: Sequence[Workspace],
        loop_index: bool,
    ):
        self.context = context
        self.item = item
        self.name = name
        args: list[KernelArg] = []
        buffer_index: dict[SSAValue, int] = {}
        for value in writes:
            if self.in_constant_memory(value):
                raise CudaLoweringError(
                    f"kernel {name} writes {value.name_hint or value}, which the plan put in "
                    "device_constant memory (a scan into a constant's buffer?)",
                    _location(value),
                )
        for value in (*writes, *reads):
            if value in writes or not self._without_argument(value):
                buffer = item.buffer_of(value)
                if buffer not in buffer_index:
                    buffer_index[buffer] = len(args)
                    args.append(BufferArg(buffer, storage_type(value)))
        workspace_index: dict[str, int] = {}
        for workspace in workspaces:
            workspace_index[workspace.name] = len(args)
            args.append(WorkspaceArg(workspace, ir.bytes_type(workspace.bytes)))
        if loop_index:
            args.append(LoopIndexArg())
        self.args = tuple(args)
        types = [ir.INDEX if isinstance(a, LoopIndexArg) else a.type for a in args]
        self.func = gpu.FuncOp(name, FunctionType.from_lists(types, []), kernel=True)
        self.block = self.func.body.block
        self._buffer_index = buffer_index
        self._workspace_index = workspace_index
        self.builder = ir.builder_at_end(self.block)
        self._globals: dict[SSAValue, SSAValue] = {}

    def in_constant_memory(self, value: SSAValue) -> bool:
        return self.item.space_of(value) is MemorySpace.DEVICE_CONSTANT

    def _without_argument(self, value: SSAValue) -> bool:
        return splat_value(value) is not None or self.in_constant_memory(value)

    def buffer(self, value: SSAValue) -> SSAValue:
        """The memref a value is stored in (an argument or a constant-memory global)."""
        buffer = self.item.buffer_of(value)
        if self.in_constant_memory(value):
            if buffer not in self._globals:
                self._globals[buffer] = ir.get_global(
                    self.builder, self.context.constant_global(buffer)
                )
            return self._globals[buffer]
        return self.block.args[self._buffer_index[buffer]]

    def workspace(self, workspace: Workspace) -> SSAValue:
        return self.block.args[self._workspace_index[workspace.name]]

    def loop_index(self) -> SSAValue:
        return self.block.args[-1]

    def load(self, b: Builder, value: SSAValue, indices: Sequence[SSAValue]) -> SSAValue:
        """One element of a stored value (a splat constant needs no load)."""
        splat = splat_value(value)
        if splat is not None:
            return constant(b, splat, element_type(value))
        return ir.load(b, self.buffer(value), indices)

    def store(
        self, b: Builder, element: SSAValue, value: SSAValue, indices: Sequence[SSAValue]
    ) -> None:
        ir.store(b, element, self.buffer(value), indices)

    def fused(
        self,
        item: PlannedKernel,
        members: Sequence[Operation] | None = None,
        load: indexing.Load | None = None,
    ) -> FusedGroup:
        """The item's members (or `members`) evaluated element by element, reading the
        values stored here (or through `load`)."""
        return FusedGroup(
            item.members if members is None else members,
            load=self.load if load is None else load,
            sizes=lambda value: [ir.index(self._current, d) for d in static_shape(value)],
        )

    def evaluate(
        self,
        b: Builder,
        group: FusedGroup,
        value: SSAValue,
        indices: Sequence[SSAValue],
        known: dict[SSAValue, SSAValue] | None = None,
    ) -> SSAValue:
        """`group.evaluate` at builder `b` (the group's static sizes are built there)."""
        self._current = b
        return group.evaluate(b, value, indices, known)

    def launch(self, grid: Sequence[int], block: Sequence[int]) -> Launch:
        """Close the kernel, add it to the module, and describe one launch of it."""
        self.builder.insert(gpu.ReturnOp([]))
        self.context.module_block.add_op(self.func)
        grid3 = (*grid, 1, 1, 1)[:3]
        block3 = (*block, 1, 1, 1)[:3]
        return Launch(self.name, grid3, block3, self.args)  # type: ignore[arg-type]

    def shared(self, element, count: int) -> SSAValue:
        """A block's shared-memory array of `count` elements (address space 3)."""
        global_op = ir.global_buffer(
            self.context.unique_name(f"{self.name}_shared"),
            ir.memref_type(element, [count], ir.WORKGROUP),
        )
        self.context.add_global(global_op)
        return ir.get_global(self.builder, global_op)


def linear_thread(b: Builder, threads: int) -> SSAValue:
    """`block_id.x * threads + thread_id.x`."""
    return ir.add(b, ir.mul(b, ir.block_id(b), threads), ir.thread_id(b))


def static_indices(b: Builder, linear: SSAValue, shape: Sequence[int]) -> list[SSAValue]:
    """Row-major indices of `linear` in a static shape (none for rank 0)."""
    if not shape:
        return []
    return delinearize(b, linear, [ir.index(b, d) for d in shape])


def gather_indices(
    outer: Sequence[SSAValue], inner: Sequence[SSAValue], inner_dims: Sequence[int], rank: int
) -> list[SSAValue]:
    """Indices of a rank-`rank` tensor whose dims `inner_dims` take `inner` (in order) and
    whose other dims take `outer` (in order)."""
    outer_iter, inner_iter = iter(outer), iter(inner)
    by_dim = dict(zip(inner_dims, inner_iter))
    return [by_dim[d] if d in by_dim else next(outer_iter) for d in range(rank)]


# ---------------------------------------------------------------------------------------
# One thread per element: fused elementwise groups and data movement
# ---------------------------------------------------------------------------------------

RootElement = Callable[[Builder, Kernel, Operation, list[SSAValue]], SSAValue]
"""`(builder, kernel, root, result indices) -> the root's element there`."""


def transpose_element(b: Builder, kernel: Kernel, op: Operation, indices: list[SSAValue]):
    """Result element `i` of a transpose is operand element `i` permuted back."""
    assert isinstance(op, ops.TransposeOp)
    return kernel.load(b, op.operand, transpose_operand_indices(op, indices))


def iota_element(b: Builder, kernel: Kernel, op: Operation, indices: list[SSAValue]):
    """The index along the iota dim, converted to the element type."""
    assert isinstance(op, ops.IotaOp)
    return indexing.iota_element(b, op, indices)


def concatenate_element(b: Builder, kernel: Kernel, op: Operation, indices: list[SSAValue]):
    """The operand whose range along the concatenation dim holds the index, chosen by a
    chain of `scf.if` (only the chosen operand is read)."""
    assert isinstance(op, ops.ConcatenateOp)
    dim = op.dim
    operands = list(op.operands)

    def pick(b: Builder, k: int, begin: int) -> SSAValue:
        size = static_shape(operands[k])[dim]
        if k == len(operands) - 1:
            return kernel.load(b, operands[k], _rebased(b, indices, dim, begin))
        return ir.select_if(
            b,
            ir.less(b, indices[dim], begin + size),
            lambda inner: kernel.load(inner, operands[k], _rebased(inner, indices, dim, begin)),
            lambda inner: pick(inner, k + 1, begin + size),
        )

    return pick(b, 0, 0)


def _rebased(b: Builder, indices: list[SSAValue], dim: int, begin: int) -> list[SSAValue]:
    local = list(indices)
    if begin:
        local[dim] = ir.sub(b, indices[dim], begin)
    return local


ROOT_ELEMENTS: dict[type[Operation], RootElement] = {
    ops.TransposeOp: transpose_element,
    ops.IotaOp: iota_element,
    ops.ConcatenateOp: concatenate_element,
}
"""Roots that are not fusible ops: how one element of their result is found."""


def element_kernel(context: KernelContext, item: PlannedKernel) -> KernelProgram:
    """One thread per result element (an exact grid of `ELEMENT_BLOCK`-thread blocks):
    the thread delinearizes its index into the result's indices and computes the element
    through the fused group (elementwise ops, broadcasts by index mapping, reshapes) or
    the root's own index mapping (transpose, iota, concatenate); a slice is fusible, so
    a slice root reads its operand, or computes it from fused producers, through the group."""
    root = item.root
    result = root.results[0]
    shape = static_shape(result)
    count = int(np.prod(shape, dtype=np.int64))
    kernel = context.kernel(item, item.kind.value, reads=item.inputs, writes=[result])
    b = kernel.builder
    linear = linear_thread(b, ELEMENT_BLOCK)
    root_element = ROOT_ELEMENTS.get(type(root))
    group = kernel.fused(item)

    def body(b: Builder) -> None:
        indices = static_indices(b, linear, shape)
        if root_element is not None:
            element = root_element(b, kernel, root, indices)
        else:
            element = kernel.evaluate(b, group, result, indices)
        kernel.store(b, element, result, indices)

    ir.if_then(b, ir.less(b, linear, count), body)
    grid = max(1, ir.ceil_div(count, ELEMENT_BLOCK))
    return KernelProgram((kernel.launch([grid], [ELEMENT_BLOCK]),) if count else ())


def update_kernel(context: KernelContext, item: PlannedKernel) -> KernelProgram:
    """A `dynamic_update_slice` whose result takes its operand's buffer: one thread per
    update element, writing it at its clamped place (the rest is already the result)."""
    root = item.root
    assert isinstance(root, ops.DynamicUpdateSliceOp)
    result = root.result
    shape = static_shape(root.update)
    count = int(np.prod(shape, dtype=np.int64))
    kernel = context.kernel(item, "update", reads=item.inputs, writes=[result])
    b = kernel.builder
    linear = linear_thread(b, ELEMENT_BLOCK)
    group = kernel.fused(item)

    def body(b: Builder) -> None:
        indices = static_indices(b, linear, shape)
        starts = [kernel.evaluate(b, group, start, []) for start in root.start_indices]
        extents = lambda value: [ir.index(b, d) for d in static_shape(value)]
        firsts = indexing.update_starts(b, root, starts, extents)
        element = kernel.evaluate(b, group, root.update, indices)
        kernel.store(b, element, result, [ir.add(b, f, i) for f, i in zip(firsts, indices)])

    ir.if_then(b, ir.less(b, linear, count), body)
    grid = max(1, ir.ceil_div(count, ELEMENT_BLOCK))
    return KernelProgram((kernel.launch([grid], [ELEMENT_BLOCK]),) if count else ())


def native_atomic(op: ops.ScatterOp) -> str | None:
    """The `memref.atomic_rmw` kind of a scatter whose update computation is one add (f32,
    32- and 64-bit integers), max, min (signed or unsigned), and or or (32- and 64-bit
    integers) of the current and the update element:
    a single native atomic instruction instead of a compare-and-swap loop."""
    block = op.update_computation.block
    body = list(block.ops)
    if len(body) != 2 or set(body[0].operands) != set(block.args) or len(body[0].operands) != 2:
        return None
    if body[1].operands[0] is not body[0].results[0]:
        return None
    element = block.args[0].type.get_element_type()  # type: ignore[attr-defined]
    integer = isinstance(element, IntegerType) and element.width.data in (32, 64)
    combiner = body[0]
    if isinstance(combiner, ops.AddOp):
        if isinstance(element, Float32Type):
            return "addf"
        return "addi" if integer else None
    sign = "u" if is_unsigned(element) else "s"
    kinds = {ops.MaximumOp: "max" + sign, ops.MinimumOp: "min" + sign}
    kinds |= {ops.OrOp: "ori", ops.AndOp: "andi"}
    return kinds.get(type(combiner)) if integer else None


def compare_and_swaps(op: ops.ScatterOp) -> bool:
    """Whether a one-input scatter's updates can combine by `memref.generic_atomic_rmw`
    (where they need an atomic, see `scatter_combine`): not into i1 elements (no
    compare-and-swap of one bit), nor updates computed from constants alone, which MLIR
    folds with the combiner into a constant the body yields from outside it (`minui(x,
    0)`), a body its lowering fails on."""
    if op.result.type.get_element_type() == IntegerType(1):  # type: ignore[attr-defined]
        return False
    return native_atomic(op) is not None or not _computed_from_constants(op.updates[0])


def _computed_from_constants(value: SSAValue) -> bool:
    """Whether a kernel body's `value` is computed from its constants alone (no argument:
    no buffer it reads)."""
    pending, seen = [value], set()
    while pending:
        owner = pending.pop().owner
        if isinstance(owner, Block):
            return False
        if owner in seen or isinstance(owner, ops.ConstantOp):
            continue
        seen.add(owner)
        pending.extend(owner.operands)
    return True


def scatter_kernel(context: KernelContext, item: PlannedKernel) -> KernelProgram:
    """A `scatter`: one thread per element copies the inputs into the results (but the
    first when its result took its buffer); then the updates combine into the elements
    they address, when inside (`scatter_combine`)."""
    root = item.root
    assert isinstance(root, ops.ScatterOp)
    launches = []
    copied = [
        (value, result)
        for index, (value, result) in enumerate(zip(root.inputs, root.res))
        if index or not indexing.updated_in_place(item)
    ]
    shape = static_shape(root.result)
    count = int(np.prod(shape, dtype=np.int64))
    if copied and count:
        copy = context.kernel(
            item, "scatter_copy", reads=item.inputs, writes=[r for _, r in copied]
        )
        copy_group = copy.fused(item)
        linear = linear_thread(copy.builder, ELEMENT_BLOCK)

        def copy_element(b: Builder) -> None:
            indices = static_indices(b, linear, shape)
            for value, result in copied:
                element = copy.evaluate(b, copy_group, value, indices)
                copy.store(b, element, result, indices)

        ir.if_then(copy.builder, ir.less(copy.builder, linear, count), copy_element)
        launches.append(copy.launch([ir.ceil_div(count, ELEMENT_BLOCK)], [ELEMENT_BLOCK]))
    combine = scatter_combine(context, item)
    return KernelProgram((*launches, *combine))


def scatter_combine(context: KernelContext, item: PlannedKernel) -> list[Launch]:
    """The updates of a `scatter` combined into its results. With one input: one thread
    per update element, with an atomic read-modify-write running the update computation
    (`memref.generic_atomic_rmw`, a compare-and-swap loop), so duplicate indices combine
    correctly, in an unspecified order (StableHLO leaves it to the implementation); a
    single add, max, min, and or or is a native atomic (`native_atomic`); a replacing
    scatter, or one whose `unique_indices` promises no duplicates, reads and stores
    plainly. With several inputs no atomic updates them together (nor where
    `compare_and_swaps` says no): one thread per update element when the indices are
    unique, else one thread combines every update in order."""
    root = item.root
    assert isinstance(root, ops.ScatterOp)
    shape = static_shape(root.updates[0])
    count = int(np.prod(shape, dtype=np.int64))
    if not count:
        return []
    several = len(root.inputs) > 1
    serial = root.unique_indices is None and (several or not compare_and_swaps(root))
    reads = [v for v in item.inputs if v not in root.inputs]  # (the results hold those)
    kernel = context.kernel(item, "scatter", reads=reads, writes=list(root.res))
    group = kernel.fused(item)
    block = root.update_computation.block

    def combine_element(b: Builder, linear: SSAValue) -> None:
        indices = static_indices(b, linear, shape)
        at, inside = indexing.scatter_result_indices(
            b,
            root,
            indices,
            lambda position: kernel.evaluate(b, group, root.scatter_indices, position),
        )

        def update(then: Builder) -> None:
            elements = [kernel.evaluate(then, group, u, indices) for u in root.updates]
            yielded = list(block.last_op.operands)  # type: ignore[union-attr]
            if not several and yielded[0] is block.args[1]:  # replacing: the last wins
                kernel.store(then, elements[0], root.result, at)
            elif not several and yielded[0] is block.args[0]:  # yields the current: no-op
                pass
            elif serial or root.unique_indices is not None:  # no other thread writes here
                currents = [kernel.load(then, r, at) for r in root.res]
                body = [*currents, *elements]
                values = lower_scalar_body(then, root.update_computation, body)
                for value, result in zip(values, root.res):
                    kernel.store(then, value, result, at)
            elif (kind := native_atomic(root)) is not None:
                then.insert(atomic_rmw(kind, elements[0], kernel.buffer(root.result), at))
            else:
                rmw = Block(arg_types=[elements[0].type])
                inner = ir.builder_at_end(rmw)
                (new,) = lower_scalar_body(
                    inner, root.update_computation, [rmw.args[0], elements[0]]
                )
                inner.insert(AtomicYieldOp(new))
                then.insert(GenericAtomicRMWOp(kernel.buffer(root.result), at, rmw))

        ir.if_then(b, inside, update)

    if serial:

        def in_order(b: Builder, n: SSAValue, _carried: Sequence[SSAValue]) -> list[SSAValue]:
            combine_element(b, n)
            return []

        ir.for_range(kernel.builder, 0, count, 1, in_order)
        return [kernel.launch([1], [1])]
    linear = linear_thread(kernel.builder, ELEMENT_BLOCK)
    ir.if_then(
        kernel.builder,
        ir.less(kernel.builder, linear, count),
        lambda b: combine_element(b, linear),
    )
    return [kernel.launch([ir.ceil_div(count, ELEMENT_BLOCK)], [ELEMENT_BLOCK])]


def fold_kernel(context: KernelContext, item: PlannedKernel) -> KernelProgram:
    """A `fold`: one thread per result element folds its reduced positions in order
    (`fold_element`, the operands through the fused members) and stores every result."""
    root = item.root
    assert isinstance(root, ops.FoldOp)
    shape = static_shape(root.res[0])
    count = int(np.prod(shape, dtype=np.int64))
    if not count:
        return KernelProgram(())
    kernel = context.kernel(item, "fold", reads=item.inputs, writes=list(root.res))
    group = kernel.fused(item)
    linear = linear_thread(kernel.builder, ELEMENT_BLOCK)

    def fold_one(b: Builder) -> None:
        indices = static_indices(b, linear, shape)
        values = indexing.fold_element(
            b, root, indices, lambda bb, value, at: kernel.evaluate(bb, group, value, at)
        )
        for result, value in zip(root.res, values):
            kernel.store(b, value, result, indices)

    ir.if_then(kernel.builder, ir.less(kernel.builder, linear, count), fold_one)
    return KernelProgram((kernel.launch([ir.ceil_div(count, ELEMENT_BLOCK)], [ELEMENT_BLOCK]),))


def window_kernel(context: KernelContext, item: PlannedKernel) -> KernelProgram:
    """A `window` or `convolution` item: one thread per result element runs its window's
    loops (`indexing.WINDOW_ELEMENTS`; a convolution and its epilogue through the fused
    group), the operands through the fused members, and stores every result."""
    root = item.root
    results = list(root.results)
    shape = static_shape(results[0])
    count = int(np.prod(shape, dtype=np.int64))
    if not count:
        return KernelProgram(())
    kernel = context.kernel(item, str(item.kind.value), reads=item.inputs, writes=results)
    group = kernel.fused(item)
    linear = linear_thread(kernel.builder, ELEMENT_BLOCK)
    element = indexing.WINDOW_ELEMENTS.get(type(root))

    def compute_one(b: Builder) -> None:
        indices = static_indices(b, linear, shape)
        if element is None:  # a convolution, its epilogue's last op the root
            values = [kernel.evaluate(b, group, results[0], indices)]
        else:
            values = element(
                b, root, indices, lambda bb, value, at: kernel.evaluate(bb, group, value, at)
            )
        for result, value in zip(results, values):
            kernel.store(b, value, result, indices)

    ir.if_then(kernel.builder, ir.less(kernel.builder, linear, count), compute_one)
    return KernelProgram((kernel.launch([ir.ceil_div(count, ELEMENT_BLOCK)], [ELEMENT_BLOCK]),))


def _with_shape(t: MemRefType, shape: Sequence[int]) -> MemRefType:
    return MemRefType(t.element_type, list(shape), memory_space=t.memory_space)


def sort_kernel(context: KernelContext, item: PlannedKernel) -> KernelProgram:
    """`sort.merge`: one launch per merge pass (`sort_run_widths`), one thread per element
    placing it in the merged run (`merge_destination`), the first pass reading the
    operands through the fused producers, each pass writing its `merge_targets` (copies
    in the `scratch` workspace or the results, the last pass the results, of which a
    top-k keeps the first places only); a sort of one element per slice copies."""
    root = item.root
    assert isinstance(root, ops.SortOp)
    shape = static_shape(root.inputs[0])
    count = int(np.prod(shape, dtype=np.int64))
    if not count or not root.kept:
        return KernelProgram(())
    widths = merge_sort.sort_run_widths(root)
    offsets, needed = sort_scratch_offsets(root)
    term = context.workspace_of(item, sort_merge.WORKSPACE, needed) if widths else None
    passes = list(zip(widths, merge_sort.merge_targets(root))) or [(0, merge_sort.RESULTS)]
    launches = []
    for p, (width, target) in enumerate(passes):
        kernel = context.kernel(
            item,
            f"sort_pass{p}",
            reads=list(item.inputs) if p == 0 else [],
            writes=list(root.res),
            workspaces=[term] if term is not None else [],
        )
        b = kernel.builder
        results = [kernel.buffer(r) for r in root.res]
        copies = [
            [
                ir.view(b, kernel.workspace(term), o, _with_shape(r.type, shape))  # type: ignore[arg-type]
                for o, r in zip(copy, results)
            ]
            for copy in offsets
        ]
        targets = results if target == merge_sort.RESULTS else copies[target]
        if p == 0:
            group = kernel.fused(item)

            def load(
                inner: Builder, at: Sequence[SSAValue], group: FusedGroup = group, kernel=kernel
            ) -> list[SSAValue]:
                return [kernel.evaluate(inner, group, v, at) for v in root.inputs]

        else:
            previous = passes[p - 1][1]
            load = indexing.memref_elements(
                results if previous == merge_sort.RESULTS else copies[previous]
            )
        kept = root.kept if target == merge_sort.RESULTS else shape[root.dim]
        linear = linear_thread(b, ELEMENT_BLOCK)

        def place(
            inner: Builder,
            linear: SSAValue = linear,
            load: indexing.SortLoad = load,
            targets: Sequence[SSAValue] = targets,
            width: int = width,
            kept: int = kept,
        ) -> None:
            at = static_indices(inner, linear, shape)
            if not widths:
                for element, target in zip(load(inner, at), targets):
                    ir.store(inner, element, target, at)
                return
            elements, destination = indexing.merge_destination(inner, root, at, width, load)
            to = [destination if d == root.dim else v for d, v in enumerate(at)]

            def store(then: Builder) -> None:
                for element, target in zip(elements, targets):
                    ir.store(then, element, target, to)

            if kept < shape[root.dim]:
                ir.if_then(inner, ir.less(inner, destination, kept), store)
            else:
                store(inner)

        ir.if_then(b, ir.less(b, linear, count), place)
        launches.append(kernel.launch([ir.ceil_div(count, ELEMENT_BLOCK)], [ELEMENT_BLOCK]))
    return KernelProgram(tuple(launches))


ELEMENT_KINDS = (WorkKind.ELEMENTWISE, WorkKind.BROADCAST, WorkKind.RESHAPE, WorkKind.TRANSPOSE)
"""The kinds `element_kernel` lowers (kernels without a family)."""
