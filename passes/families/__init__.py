"""Kernel families: how a target runs a work item, one module per family.

A family (`family.KernelFamily`) names the work-item kinds it runs and the targets it runs
on, says where it applies, declares its workspaces and sizes them; its module holds the
launch constants its kernel and its workspaces share. Planning selects a family for each
work item (`FamilyRegistry.select`) and sizes its workspaces (`workspace.sizing`); the
planned form records each kernel's family and both lowerings read it.

The package's families, in selection order (the first that applies runs the item):

    CUDA  convolution_tiled, dot_splitk, dot_tiled, reduce_split, reduce_row,
          scan_multiblock, scan_block, sort_merge
    CPU   reduce_chunks, dot_packed, convolution_packed, sort_merge (a work item no family
          takes runs as its kernel kind's own loops)

Users declare more families in TOML files (`declared.py`, the workspace seed's format: device
kernels, so they run on `cuda`); every file given is read and checked whatever the target,
and its families are searched before the package's, so a user family overrides the
package's of the same id.

Invariants: families keep their order; the first definition of an id wins (a later
family with that id is shadowed and never selected).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from accy.passes.families import (
    convolution_packed,
    convolution_tiled,
    dot_packed,
    dot_splitk,
    dot_tiled,
    reduce_chunks,
    reduce_row,
    reduce_split,
    scan_block,
    scan_multiblock,
    sort_merge,
)
from accy.passes.families.declared import RegistryError, read_declared
from accy.passes.families.expr import Expression, ExpressionError, UnknownNameError
from accy.passes.families.family import (
    KINDS,
    ExpressionFamily,
    FamilyEvaluationError,
    KernelFamily,
    WorkspaceDecl,
)
from accy.passes.schedule import WorkItem

from accy.targets import DEFAULT_TARGET

PACKAGE_FAMILIES: tuple[KernelFamily, ...] = (
    convolution_tiled.FAMILY,
    dot_splitk.FAMILY,
    dot_tiled.FAMILY,
    reduce_split.FAMILY,
    reduce_row.FAMILY,
    scan_multiblock.FAMILY,
    scan_block.FAMILY,
    sort_merge.FAMILY,
    reduce_chunks.FAMILY,
    dot_packed.FAMILY,
    convolution_packed.FAMILY,
    sort_merge.CPU_FAMILY,
)
"""Every family of the package, in selection order."""


@dataclass(frozen=True)
class FamilyRegistry:
    """One target's kernel families in selection order."""

    families: tuple[KernelFamily, ...]

    @staticmethod
    def load(
        paths: Sequence[Path] = (),
        include_package: bool = True,
        *,
        target: str = DEFAULT_TARGET,
    ) -> FamilyRegistry:
        """The families declared in the files `paths`, in order, then (if
        `include_package`) the package's, those of them that run on `target`. A family
        whose id an earlier one already defined is shadowed."""
        families: dict[str, KernelFamily] = {}
        package = PACKAGE_FAMILIES if include_package else ()
        for family in (*read_declared(paths), *package):
            if target in family.targets:
                families.setdefault(family.id, family)
        return FamilyRegistry(tuple(families.values()))

    def select(
        self, kind: str, env: Mapping[str, int], item: WorkItem | None = None
    ) -> KernelFamily | None:
        """The first family that runs `kind` and applies to `item` in `env`, or None."""
        if kind not in KINDS:
            known = ", ".join(sorted(KINDS))
            raise ValueError(f"unknown work-item kind '{kind}' (expected one of {known})")
        return next((f for f in self.families if f.applies(kind, env, item)), None)


__all__ = [
    "KINDS",
    "PACKAGE_FAMILIES",
    "Expression",
    "ExpressionError",
    "ExpressionFamily",
    "FamilyEvaluationError",
    "FamilyRegistry",
    "KernelFamily",
    "RegistryError",
    "UnknownNameError",
    "WorkspaceDecl",
]
