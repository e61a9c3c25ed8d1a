"""Small IR builders shared by the CUDA host and kernel lowerings.

Index arithmetic, structured control flow (`scf.for`, `scf.if`), GPU ids and barriers,
and memref types in the address spaces the NVPTX backend understands:

- `GLOBAL` (0): device global memory (kernel arguments, the arena);
- `WORKGROUP` (3): shared memory of a block (`device_shared`), declared as a module-level
  `memref.global` in the `gpu.module` (xDSL's `gpu.func` has no workgroup attributions;
  upstream's NVVM lowering turns such a global into a PTX `.shared` variable);
- `CONSTANT` (4): constant memory (`device_constant`), a `memref.global constant` with its
  initial value in the `gpu.module` (a PTX `.const` variable, loaded with the module).

Every helper inserts at a `Builder` and returns SSA values; nothing here knows about
accy ops or plans.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from accy.passes.element_types import signless
from accy.passes.lower.scalar import constant, emit
from xdsl.builder import Builder
from xdsl.dialects import arith, gpu, memref, scf
from xdsl.dialects.builtin import (
    IndexType,
    IntegerAttr,
    MemRefType,
    NoneAttr,
    StringAttr,
    UnitAttr,
    i8,
    i64,
)
from xdsl.ir import Attribute, Block, Region, SSAValue
from xdsl.rewriter import InsertPoint

INDEX = IndexType()

GLOBAL = 0
WORKGROUP = 3
CONSTANT = 4


def builder_at_end(block: Block) -> Builder:
    return Builder(InsertPoint.at_end(block))


def memref_type(element: Attribute, shape: Sequence[int], space: int = GLOBAL) -> MemRefType:
    """`memref<shape x element>` in address space `space` (0: no memory space), of
    `signless` elements."""
    memory_space = NoneAttr() if space == GLOBAL else IntegerAttr(space, i64)
    return MemRefType(signless(element), list(shape), NoneAttr(), memory_space)


def bytes_type(size: int) -> MemRefType:
    """`memref<size x i8>`: an arena or a workspace as raw bytes."""
    return memref_type(i8, [size])


def index(b: Builder, value: int) -> SSAValue:
    return constant(b, value, INDEX)


def add(b: Builder, lhs: SSAValue, rhs: SSAValue | int) -> SSAValue:
    if isinstance(rhs, int):
        if rhs == 0:
            return lhs
        rhs = index(b, rhs)
    return emit(b, arith.AddiOp(lhs, rhs))


def mul(b: Builder, lhs: SSAValue, rhs: SSAValue | int) -> SSAValue:
    if isinstance(rhs, int):
        if rhs == 1:
            return lhs
        rhs = index(b, rhs)
    return emit(b, arith.MuliOp(lhs, rhs))


def sub(b: Builder, lhs: SSAValue, rhs: SSAValue | int) -> SSAValue:
    if isinstance(rhs, int):
        rhs = index(b, rhs)
    return emit(b, arith.SubiOp(lhs, rhs))


def minimum(b: Builder, lhs: SSAValue, rhs: SSAValue | int) -> SSAValue:
    if isinstance(rhs, int):
        rhs = index(b, rhs)
    return emit(b, arith.MinUIOp(lhs, rhs))


def less(b: Builder, lhs: SSAValue, rhs: SSAValue | int) -> SSAValue:
    """`lhs < rhs` on unsigned index values."""
    if isinstance(rhs, int):
        rhs = index(b, rhs)
    return emit(b, arith.CmpiOp(lhs, rhs, "ult"))


def equal(b: Builder, lhs: SSAValue, rhs: SSAValue | int) -> SSAValue:
    if isinstance(rhs, int):
        rhs = index(b, rhs)
    return emit(b, arith.CmpiOp(lhs, rhs, "eq"))


def thread_id(b: Builder, dim: str = "x") -> SSAValue:
    return emit(b, gpu.ThreadIdOp(gpu.DimensionAttr(gpu.DimensionEnum(dim))))


def block_id(b: Builder, dim: str = "x") -> SSAValue:
    return emit(b, gpu.BlockIdOp(gpu.DimensionAttr(gpu.DimensionEnum(dim))))


def barrier(b: Builder) -> None:
    b.insert(gpu.BarrierOp())


def load(b: Builder, ref: SSAValue, indices: Sequence[SSAValue]) -> SSAValue:
    return emit(b, memref.LoadOp.get(ref, list(indices)))


def store(b: Builder, value: SSAValue, ref: SSAValue, indices: Sequence[SSAValue]) -> None:
    b.insert(memref.StoreOp.get(value, ref, list(indices)))


def if_then(b: Builder, condition: SSAValue, then: Callable[[Builder], None]) -> None:
    """`scf.if %condition { then }` with no results."""
    block = Block()
    inner = builder_at_end(block)
    then(inner)
    inner.insert(scf.YieldOp())
    b.insert(scf.IfOp(condition, [], Region(block)))


def select_if(
    b: Builder,
    condition: SSAValue,
    then: Callable[[Builder], SSAValue],
    otherwise: Callable[[Builder], SSAValue],
) -> SSAValue:
    """`scf.if %condition -> (T) { then } else { otherwise }`: a value computed on one
    side only (a load that must not run out of bounds)."""
    blocks = []
    values = []
    for build in (then, otherwise):
        block = Block()
        inner = builder_at_end(block)
        value = build(inner)
        inner.insert(scf.YieldOp(value))
        blocks.append(block)
        values.append(value)
    op = scf.IfOp(condition, [values[0].type], Region(blocks[0]), Region(blocks[1]))
    b.insert(op)
    return op.results[0]


def for_range(
    b: Builder,
    lower: SSAValue | int,
    upper: SSAValue | int,
    step: SSAValue | int,
    body: Callable[[Builder, SSAValue, Sequence[SSAValue]], Sequence[SSAValue]],
    carried: Sequence[SSAValue] = (),
) -> Sequence[SSAValue]:
    """`scf.for %i = lower to upper step step iter_args(carried)`; `body(builder, i,
    carried)` returns the next carried values. Returns the loop's results."""
    bounds = [index(b, v) if isinstance(v, int) else v for v in (lower, upper, step)]
    block = Block(arg_types=[INDEX, *(v.type for v in carried)])
    inner = builder_at_end(block)
    next_values = body(inner, block.args[0], block.args[1:])
    inner.insert(scf.YieldOp(*next_values))
    loop = scf.ForOp(*bounds, list(carried), Region(block))
    b.insert(loop)
    return loop.results


def ceil_div(numerator: int, denominator: int) -> int:
    return -(-numerator // denominator)


def global_buffer(
    name: str,
    type_: MemRefType,
    initial_value: Attribute | None = None,
) -> memref.GlobalOp:
    """A private module-level `memref.global`; constant when it has an initial value."""
    return memref.GlobalOp.get(
        StringAttr(name),
        type_,
        initial_value if initial_value is not None else UnitAttr(),
        constant=UnitAttr() if initial_value is not None else None,
        alignment=16,
    )


def get_global(b: Builder, op: memref.GlobalOp) -> SSAValue:
    return emit(b, memref.GetGlobalOp(op.sym_name.data, op.type))


def view(b: Builder, source: SSAValue, offset: int, type_: MemRefType) -> SSAValue:
    """`memref.view %source[offset][]`: `type_` at byte `offset` of an i8 buffer."""
    return emit(b, memref.ViewOp(source, index(b, offset), [], type_))
