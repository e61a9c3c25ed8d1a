"""Upstream MLIR's `x86.avx512.dot` (AVX512_BF16's `vdpbf16ps`), which xDSL lacks.

The CPU lowering builds it where the host has the instruction and prints it in generic
form, which the upstream bindings parse; `convert-vector-to-llvm{enable-x86}` turns it
into the LLVM intrinsic.
"""

from __future__ import annotations

from xdsl.dialects.builtin import BFloat16Type, Float32Type, VectorType
from xdsl.ir import SSAValue
from xdsl.irdl import IRDLOperation, irdl_op_definition, operand_def, result_def, traits_def
from xdsl.traits import Pure


@irdl_op_definition
class DotBF16Op(IRDLOperation):
    """`%r = x86.avx512.dot %acc, %a, %b : vector<32xbf16> -> vector<16xf32>`: lane i of
    the result is lane i of `%acc` plus the products of the bf16 pairs at 2i and 2i+1 of
    `%a` and `%b` (exact in f32), added one at a time (2i+1 first), rounding to nearest
    even, denormal inputs and results as zero."""

    name = "x86.avx512.dot"

    src = operand_def(VectorType[Float32Type])
    a = operand_def(VectorType[BFloat16Type])
    b = operand_def(VectorType[BFloat16Type])
    dst = result_def(VectorType[Float32Type])

    traits = traits_def(Pure())

    def __init__(self, src: SSAValue, a: SSAValue, b: SSAValue):
        super().__init__(operands=[src, a, b], result_types=[src.type])
