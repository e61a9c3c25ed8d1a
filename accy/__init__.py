"""accy: tensor programs to CUDA with an explicit memory plan.

The public API: `Builder` builds programs from Python, `parse` reads `.mlir` text,
`reference.run` evaluates a function with numpy (the oracle of every target).
"""

from accy.builder import Builder, BlockBuilder, FunctionBuilder, tensor_type
from accy.diagnostics import (
    AccyError,
    AccyInputError,
    AccyParseError,
    AccyVerifyError,
)
from accy.passes.analysis import Budget, Outcome, WorkBudgetExhausted
from accy.passes.memory import Aliased, KernelWritten, MissingOutputWriter
from accy.preparation import Preparation, prepare
from accy.source import make_context, parse, verify

__all__ = [
    "AccyError",
    "Aliased",
    "Budget",
    "KernelWritten",
    "MissingOutputWriter",
    "Outcome",
    "Preparation",
    "WorkBudgetExhausted",
    "prepare",
    "AccyInputError",
    "AccyParseError",
    "AccyVerifyError",
    "BlockBuilder",
    "Builder",
    "FunctionBuilder",
    "make_context",
    "parse",
    "tensor_type",
    "verify",
]
