"""accy: tensor programs to CUDA with an explicit memory plan.

The public API: `Builder` builds programs from Python, `parse` reads `.mlir` text,
`prepare` plans them, `compile` and `export` compile them (or StableHLO text), `jit` a JAX
function and `torch.compile` a PyTorch module, `reference.run` evaluates a function with
numpy (the oracle of every target).

Names are imported on first use, so that `accy.runtime` (which loads compiled programs)
imports only the standard library and numpy on machines without the compiler packages.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS = {
    "AccyError": "accy.diagnostics",
    "AccyInputError": "accy.diagnostics",
    "AccyParseError": "accy.diagnostics",
    "AccyTypeError": "accy.diagnostics",
    "AccyVerifyError": "accy.diagnostics",
    "Aliased": "accy.passes.memory",
    "BlockBuilder": "accy.builder",
    "Budget": "accy.passes.analysis",
    "Builder": "accy.builder",
    "FunctionBuilder": "accy.builder",
    "KernelWritten": "accy.passes.memory",
    "MissingOutputWriter": "accy.passes.memory",
    "Outcome": "accy.passes.analysis",
    "Preparation": "accy.preparation",
    "WorkBudgetExhausted": "accy.passes.analysis",
    "compile": "accy.compiler",
    "export": "accy.aot",
    "import_stablehlo": "accy.stablehlo",
    "jit": "accy.jax_jit",
    "make_context": "accy.source",
    "parse": "accy.source",
    "prepare": "accy.preparation",
    "tensor_type": "accy.builder",
    "verify": "accy.source",
}

__all__ = [
    "AccyError",
    "AccyInputError",
    "AccyParseError",
    "AccyTypeError",
    "AccyVerifyError",
    "Aliased",
    "BlockBuilder",
    "Budget",
    "Builder",
    "FunctionBuilder",
    "KernelWritten",
    "MissingOutputWriter",
    "Outcome",
    "Preparation",
    "WorkBudgetExhausted",
    "compile",
    "export",
    "import_stablehlo",
    "jit",
    "make_context",
    "parse",
    "prepare",
    "tensor_type",
    "verify",
]


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        value = getattr(importlib.import_module(_EXPORTS[name]), name)
        globals()[name] = value
        return value
    if name in ("reference", "runtime", "reports", "torch"):
        return importlib.import_module(f"accy.{name}")
    raise AttributeError(f"module 'accy' has no attribute '{name}'")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))


if TYPE_CHECKING:
    from accy.aot import export as export
    from accy.builder import BlockBuilder as BlockBuilder
    from accy.builder import Builder as Builder
    from accy.builder import FunctionBuilder as FunctionBuilder
    from accy.builder import tensor_type as tensor_type
    from accy.compiler import compile as compile
    from accy.diagnostics import AccyError as AccyError
    from accy.diagnostics import AccyInputError as AccyInputError
    from accy.diagnostics import AccyParseError as AccyParseError
    from accy.diagnostics import AccyTypeError as AccyTypeError
    from accy.diagnostics import AccyVerifyError as AccyVerifyError
    from accy.jax_jit import jit as jit
    from accy.passes.analysis import Budget as Budget
    from accy.passes.analysis import Outcome as Outcome
    from accy.passes.analysis import WorkBudgetExhausted as WorkBudgetExhausted
    from accy.passes.memory import Aliased as Aliased
    from accy.passes.memory import KernelWritten as KernelWritten
    from accy.passes.memory import MissingOutputWriter as MissingOutputWriter
    from accy.preparation import Preparation as Preparation
    from accy.preparation import prepare as prepare
    from accy.source import make_context as make_context
    from accy.source import parse as parse
    from accy.source import verify as verify
    from accy.stablehlo import import_stablehlo as import_stablehlo
