"""bf16 buffers as i16 in lowered CPU code: every memref of bf16 elements becomes one of
i16 (the same bytes), and each load or store of its elements bitcasts the value.

Why: LLVM holds bf16 values in f32 registers on x86 and narrows them with
`vcvtneps2bf16` where the CPU has AVX512_BF16; that instruction reads subnormals as zero,
so a bf16 element merely moved (padded, selected, sorted, copied out of a loop) lost its
subnormal value. Moved as i16 it keeps its bits; arithmetic still sees bf16 values
(`arith.bitcast` after the load), whose extension to f32 is exact. The C interface is
unchanged: a memref descriptor holds pointers, sizes and strides, not element types.

Invariants: afterwards no value of the module has a memref type of bf16 elements; every
load of such a buffer is followed by a bitcast to bf16 (vectors lane by lane) and every
store is preceded by a bitcast to i16; constants' data are their bits.
"""

from __future__ import annotations

import numpy as np
from xdsl.builder import Builder
from xdsl.dialects import arith, func, memref, vector
from xdsl.dialects.builtin import (
    BFloat16Type,
    DenseIntOrFPElementsAttr,
    FunctionType,
    IntegerType,
    MemRefType,
    ModuleOp,
    TensorType,
    VectorType,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from accy.dtypes import dense_values

BITS = IntegerType(16)


def _storage(t: Attribute) -> Attribute:
    """`t` with bf16 elements stored as i16 (memrefs only; others unchanged)."""
    if isinstance(t, MemRefType) and isinstance(t.element_type, BFloat16Type):
        return MemRefType(BITS, t.get_shape(), t.layout, t.memory_space)
    return t


def _bits_type(t: Attribute) -> Attribute:
    """The i16 counterpart of a bf16 scalar or vector type."""
    if isinstance(t, VectorType):
        return VectorType(BITS, t.get_shape(), t.scalable_dims)
    return BITS


LOADS = (memref.LoadOp, vector.LoadOp, vector.MaskedLoadOp)
"""Ops whose result holds elements read from a memref (a masked load's `pass_thru` too)."""

STORES = {memref.StoreOp: "value", vector.StoreOp: "vector", vector.MaskedStoreOp: "value_to_store"}
"""Ops that store a value into a memref, and the name of that operand."""


def store_bf16_as_i16(module: ModuleOp) -> None:
    """Rewrite `module` in place (see the module docstring)."""
    for op in module.walk():
        if isinstance(op, func.FuncOp):
            inputs = [_storage(t) for t in op.function_type.inputs]
            outputs = [_storage(t) for t in op.function_type.outputs]
            op.properties["function_type"] = FunctionType.from_lists(inputs, outputs)
        elif isinstance(op, memref.GlobalOp) and _storage(op.type) != op.type:
            _store_global_as_bits(op)
        for region in op.regions:
            for block in region.blocks:
                for arg in block.args:
                    Rewriter.replace_value_with_new_type(arg, _storage(arg.type))
    for op in list(module.walk()):
        old_types = [r.type for r in op.results]
        for result in list(op.results):
            if _storage(result.type) != result.type:
                Rewriter.replace_value_with_new_type(result, _storage(result.type))
        if isinstance(op, LOADS) and _is_bf16_value(old_types[0]):
            if isinstance(op, vector.MaskedLoadOp):
                _bitcast_operand(op, op.pass_thru)
            _bitcast_loaded(op, old_types[0])
        elif type(op) in STORES:
            _bitcast_operand(op, getattr(op, STORES[type(op)]))


def _is_bf16_value(t: Attribute) -> bool:
    element = t.element_type if isinstance(t, VectorType) else t
    return isinstance(element, BFloat16Type)


def _bitcast_loaded(op: Operation, value_type: Attribute) -> None:
    """`op` loads i16 bits; its users get them as bf16 again."""
    bits = Rewriter.replace_value_with_new_type(op.results[0], _bits_type(value_type))
    cast = arith.BitcastOp(bits, value_type)
    Rewriter.insert_op(cast, InsertPoint.after(op))
    bits.replace_uses_with_if(cast.result, lambda use: use.operation is not cast)


def _bitcast_operand(op: Operation, value: SSAValue) -> None:
    """`op` takes the i16 bits of its bf16 operand `value` (a value it stores)."""
    if not _is_bf16_value(value.type):
        return
    cast = Builder(InsertPoint.before(op)).insert(arith.BitcastOp(value, _bits_type(value.type)))
    op.operands[list(op.operands).index(value)] = cast.result


def _store_global_as_bits(op: memref.GlobalOp) -> None:
    t = op.type
    op.properties["type"] = _storage(t)
    initial = op.initial_value
    if isinstance(initial, DenseIntOrFPElementsAttr):
        bits = dense_values(initial).view(np.int16)
        data = TensorType(BITS, t.get_shape())
        op.properties["initial_value"] = DenseIntOrFPElementsAttr.from_list(
            data, bits.ravel().tolist()
        )


__all__ = ["store_bf16_as_i16"]
