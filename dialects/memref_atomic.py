"""Upstream MLIR's `memref.generic_atomic_rmw` and `memref.atomic_yield`, which xDSL's
memref dialect lacks, and the kinds of `memref.atomic_rmw` (which it has) accy uses.

The CUDA lowering builds them inside kernels and prints them in generic form, which the
upstream bindings parse; MLIR lowers each to a compare-and-swap loop (any element type,
16-bit ones through a 32-bit word), so any combiner updates an element atomically.
"""

from __future__ import annotations

from xdsl.dialects.builtin import IndexType, IntegerAttr, MemRefType, i64
from xdsl.dialects.memref import AtomicRMWOp
from xdsl.ir import Attribute, Block, Region, SSAValue
from xdsl.irdl import (
    AnyAttr,
    IRDLOperation,
    irdl_op_definition,
    operand_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.traits import HasParent, IsTerminator


@irdl_op_definition
class GenericAtomicRMWOp(IRDLOperation):
    """`%old = memref.generic_atomic_rmw %m[%i...]`: the body maps the element's current
    value (its block argument) to the value stored, all as one atomic update; the result
    is the value before the update."""

    name = "memref.generic_atomic_rmw"

    memref = operand_def(MemRefType)
    indices = var_operand_def(IndexType)
    atomic_body = region_def("single_block")
    result = result_def(AnyAttr())

    def __init__(self, ref: SSAValue, indices: list[SSAValue], body: Block):
        assert isinstance(ref.type, MemRefType)
        element: Attribute = ref.type.get_element_type()
        super().__init__(operands=[ref, indices], result_types=[element], regions=[Region(body)])


@irdl_op_definition
class AtomicYieldOp(IRDLOperation):
    """`memref.atomic_yield %v`: the value a `generic_atomic_rmw` body stores."""

    name = "memref.atomic_yield"

    value = operand_def(AnyAttr())

    traits = traits_def(IsTerminator(), HasParent(GenericAtomicRMWOp))

    def __init__(self, value: SSAValue):
        super().__init__(operands=[value])


ATOMIC_RMW_KIND = {
    "addf": 0,
    "addi": 1,
    "andi": 2,
    "maxs": 6,
    "maxu": 7,
    "mins": 10,
    "minu": 11,
    "ori": 14,
}
"""`memref.atomic_rmw`'s `kind` (MLIR's `arith::AtomicRMWKind`, as the bundled MLIR
numbers it in generic form) for the combiners that lower to one native atomic."""


def atomic_rmw(kind: str, value: SSAValue, ref: SSAValue, indices: list[SSAValue]) -> AtomicRMWOp:
    """`memref.atomic_rmw <kind> %value, %ref[%indices]` (xDSL's op, built by kind name)."""
    return AtomicRMWOp.build(
        operands=[value, ref, indices],
        properties={"kind": IntegerAttr(ATOMIC_RMW_KIND[kind], i64)},
        result_types=[value.type],
    )
