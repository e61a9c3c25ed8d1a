"""Workspace terms: the buffers a plan's kernel families need, one per (family, workspace),
and the family each work item runs. What sizing computes and planning and lowering read.

Invariants: one term per (family, workspace), sorted by (family, name); `bytes` is the
maximum over the term's nodes; `nodes` are work-item ids in schedule order.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class WorkspaceTerm:
    """One workspace of one family: the buffer every launch of the family shares."""

    family: str
    name: str
    bytes: int
    arena: bool
    nodes: tuple[int, ...]
    max_node: int
    """The work item whose evaluation set `bytes`."""
    rows: int | None
    """The plan (row count) that set `bytes`; None for a static program."""

    def describe(self) -> str:
        """`reduce.split partials 4224 bytes arena nodes [3]`."""
        where = "arena" if self.arena else "own"
        nodes = ", ".join(map(str, self.nodes))
        rows = "" if self.rows is None else f" rows {self.rows}"
        return f"{self.family} {self.name} {self.bytes} bytes {where} nodes [{nodes}]{rows}"


@dataclass(frozen=True)
class WorkspacePlan:
    terms: tuple[WorkspaceTerm, ...]
    family_of: Mapping[int, str]
    """Work item id → the family that runs it (items with no family are absent)."""

    def term(self, family: str, name: str) -> WorkspaceTerm | None:
        return next((t for t in self.terms if (t.family, t.name) == (family, name)), None)

    def terms_of(self, work_item: int) -> tuple[WorkspaceTerm, ...]:
        return tuple(t for t in self.terms if work_item in t.nodes)
