"""Kernel-family workspaces: size expressions and the registry of families that declare them."""

from accy.passes.workspace.expr import (
    MAX_NESTING,
    U64_MAX,
    Expression,
    ExpressionError,
    UnknownNameError,
)
from accy.passes.workspace.registry import (
    KINDS,
    FamilyEvaluationError,
    FamilyRegistry,
    KernelFamily,
    RegistryError,
    WorkspaceDecl,
)

__all__ = [
    "KINDS",
    "MAX_NESTING",
    "U64_MAX",
    "Expression",
    "ExpressionError",
    "FamilyEvaluationError",
    "FamilyRegistry",
    "KernelFamily",
    "RegistryError",
    "UnknownNameError",
    "WorkspaceDecl",
]
