"""The kernel-family interface: what planning and lowering ask of a family.

A family runs work items of some kinds on some targets. Planning selects, for each work
item, the first family of the target's registry that `applies` and sizes the workspaces it
declares (`workspace_bytes`); the planned form records the family of each kernel, and
lowering reads it (and the family module's launch constants) instead of choosing again.

Two kinds of family implement it: `ExpressionFamily`, whose condition and workspace sizes
are expressions in the workspace language (`expr.py`) over the names sizing binds (the
package's device families, and every family a user declares in a TOML file), and families
that compute from the work item itself (the CPU's, whose choice depends on the op).

Invariants: `applies` never defaults a name (a missing one is a `FamilyEvaluationError`
naming the family); `workspace_bytes` returns one size per declared workspace, in
declaration order.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar

from accy.passes.families.expr import Expression, ExpressionError
from accy.passes.schedule import WorkItem, WorkKind

KINDS: frozenset[str] = frozenset(kind.value for kind in WorkKind)
"""The work-item kinds a family may run."""


class FamilyEvaluationError(Exception):
    """A family's ``when`` or workspace expression failed to evaluate.

    ``what`` is ``"when"`` or ``"workspace 'NAME'"``; ``error`` is the expression's error.
    """

    def __init__(self, family: str, what: str, error: ExpressionError):
        super().__init__(f"family '{family}' {what}: {error}")
        self.family = family
        self.what = what
        self.error = error


@dataclass(frozen=True)
class WorkspaceDecl:
    """A scratch buffer a family declares: its size is the largest of ``bytes`` (none for
    a family that computes its sizes from the work item)."""

    name: str
    bytes: tuple[Expression, ...]
    arena: bool
    """True: carved out of the arena; False: its own allocation."""


class KernelFamily(ABC):
    """A kernel family (see the module doc)."""

    id: str
    kinds: tuple[str, ...]
    targets: tuple[str, ...]
    workspaces: tuple[WorkspaceDecl, ...]
    source: str
    """Where the family is defined (its module or file), for diagnostics."""
    sized_by_rows: ClassVar[bool] = True
    """Whether its sizes may depend on the plan's rows (a term records the rows)."""

    @abstractmethod
    def applies(self, kind: str, env: Mapping[str, int], item: WorkItem | None = None) -> bool:
        """Whether the family runs `kind` and applies to `item` in `env`."""

    @abstractmethod
    def workspace_bytes(
        self, env: Mapping[str, int], item: WorkItem | None = None
    ) -> dict[str, int]:
        """Each workspace's size in bytes, keyed by name in declaration order."""


@dataclass(frozen=True)
class ExpressionFamily(KernelFamily):
    """A family whose condition (`when`) and workspace sizes are expressions."""

    id: str
    kinds: tuple[str, ...]
    when: Expression | None
    workspaces: tuple[WorkspaceDecl, ...]
    source: str
    targets: tuple[str, ...] = ("cuda",)

    @classmethod
    def of(
        cls,
        id: str,
        kinds: Sequence[str],
        *,
        source: str,
        when: str | None = None,
        workspaces: Mapping[str, str] = {},
        targets: Sequence[str] = ("cuda",),
    ) -> ExpressionFamily:
        """A family of a Python module: `workspaces` maps each name to its bytes
        expression (in the arena)."""
        return cls(
            id,
            tuple(kinds),
            None if when is None else Expression.parse(when),
            tuple(
                WorkspaceDecl(name, (Expression.parse(text),), True)
                for name, text in workspaces.items()
            ),
            source,
            tuple(targets),
        )

    def applies(self, kind: str, env: Mapping[str, int], item: WorkItem | None = None) -> bool:
        """Whether the family runs ``kind`` and its ``when`` (if any) is non-zero in ``env``."""
        if kind not in self.kinds:
            return False
        if self.when is None:
            return True
        try:
            return self.when.evaluate(env) != 0
        except ExpressionError as error:
            raise FamilyEvaluationError(self.id, "when", error) from error

    def workspace_bytes(
        self, env: Mapping[str, int], item: WorkItem | None = None
    ) -> dict[str, int]:
        """Each workspace's size in bytes in ``env`` (the largest of its expressions),
        keyed by name in declaration order."""
        sizes: dict[str, int] = {}
        for workspace in self.workspaces:
            try:
                sizes[workspace.name] = max(e.evaluate(env) for e in workspace.bytes)
            except ExpressionError as error:
                what = f"workspace '{workspace.name}'"
                raise FamilyEvaluationError(self.id, what, error) from error
        return sizes


class ItemFamily(KernelFamily, ABC):
    """A CPU family decided by the work item itself (its op's shapes and types, not
    expressions): one arena workspace, `workspace`, of `bytes_of(item)` bytes; the family
    applies where that is not None."""

    targets = ("cpu",)
    sized_by_rows = False
    workspace: ClassVar[str]

    def __init__(self) -> None:
        self.workspaces = (WorkspaceDecl(self.workspace, (), True),)
        self.source = type(self).__module__

    @abstractmethod
    def bytes_of(self, item: WorkItem) -> int | None:
        """The workspace's bytes for `item`, or None when the family does not run it."""

    def applies(self, kind: str, env: Mapping[str, int], item: WorkItem | None = None) -> bool:
        return kind in self.kinds and item is not None and self.bytes_of(item) is not None

    def workspace_bytes(
        self, env: Mapping[str, int], item: WorkItem | None = None
    ) -> dict[str, int]:
        size = None if item is None else self.bytes_of(item)
        assert size is not None, "sized only where it applies"
        return {self.workspace: size}
