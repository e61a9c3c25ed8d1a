"""Upstream MLIR's `arith.remf`, which xDSL's arith dialect lacks.

The lowerings build it and print it in generic form, which the upstream bindings parse;
LLVM's `frem` computes C's `fmod` (the sign of the dividend), on the CPU and on NVPTX.
"""

from __future__ import annotations

from xdsl.dialects.arith import FloatingPointLikeBinaryOperation
from xdsl.irdl import irdl_op_definition, traits_def
from xdsl.traits import Pure


@irdl_op_definition
class RemFOp(FloatingPointLikeBinaryOperation):
    """`%r = arith.remf %lhs, %rhs`: the remainder of the truncating division."""

    name = "arith.remf"

    traits = traits_def(Pure())
