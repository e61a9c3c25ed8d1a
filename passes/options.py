"""Options of the planning analyses, shared through the analysis manager."""

from __future__ import annotations

from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from accy.diagnostics import AccyError

DEFAULT_CONSTANT_CAPACITY = 64 * 1024
"""Bytes of constant memory one kernel module may use (CUDA's `__constant__` bank)."""

DEFAULT_SHARED_LIMIT = 48 * 1024
"""Bytes of `device_shared` memory one block may use without opting in to more."""


DEFAULT_SM_COUNT = 132
"""Multiprocessors of the reference GPU (an H200)."""

DEFAULT_ALIGNMENT = 256
"""Byte alignment of every buffer in a CUDA arena."""

CPU_ALIGNMENT = 64
"""Byte alignment of every buffer in a CPU arena: a cache line, one AVX-512 vector."""

DEFAULT_PACK_BUDGET_MS = 20.0
"""Milliseconds the arena improvement search may spend per function."""


@dataclass(frozen=True)
class PlanOptions:
    """What the planner is told about the target and the program's sizes.

    `rows` are the plans to size for: the value bound to dynamic dims (and `n` in family
    expressions), several for a program that runs at several sizes; empty for a static
    program. `families` are user family files, searched before the package's.
    """

    constant_capacity: int = DEFAULT_CONSTANT_CAPACITY
    shared_limit: int = DEFAULT_SHARED_LIMIT
    rows: tuple[int, ...] = ()
    sm_count: int = DEFAULT_SM_COUNT
    families: tuple[Path, ...] = ()
    alignment: int | None = None
    """Byte alignment of every arena buffer; None: the target's (`DEFAULT_ALIGNMENT` on
    CUDA, `CPU_ALIGNMENT` on the CPU)."""
    pack_budget_ms: float = DEFAULT_PACK_BUDGET_MS
    pack_workers: int = 1
    check_arena: bool = False
    target: str = "cuda"
    """The target planned for: `cuda`, or `cpu` (whose loops need only the CPU's own
    workspace family, `reduce.chunks`, and whose arena holds only temporaries)."""

    @classmethod
    def of(cls, **options: Any) -> PlanOptions:
        """The options given by keyword (sequences for `rows` and `families` taken as
        tuples, family paths as `Path`s); `AccyError` for a name that is not an option."""
        names = [f.name for f in fields(cls)]
        unknown = sorted(set(options) - set(names))
        if unknown:
            raise AccyError(f"unknown plan option {unknown[0]!r}; plan options: {', '.join(names)}")
        if "rows" in options:
            options["rows"] = tuple(options["rows"])
        if "families" in options:
            options["families"] = tuple(Path(f) for f in options["families"])
        return cls(**options)

    def __post_init__(self) -> None:
        if self.alignment is None:
            target_alignment = CPU_ALIGNMENT if self.target == "cpu" else DEFAULT_ALIGNMENT
            object.__setattr__(self, "alignment", target_alignment)
        rules = (
            ("constant_capacity", self.constant_capacity >= 0, "a byte count >= 0"),
            ("shared_limit", self.shared_limit >= 0, "a byte count >= 0"),
            ("rows", all(r >= 1 for r in self.rows), "row counts >= 1"),
            ("sm_count", self.sm_count >= 1, "a multiprocessor count >= 1"),
            ("alignment", self.alignment >= 1, "a byte alignment >= 1"),
            ("pack_budget_ms", self.pack_budget_ms >= 0, "milliseconds >= 0"),
            ("pack_workers", self.pack_workers >= 1, "a process count >= 1"),
            ("target", self.target in ("cpu", "cuda"), "'cpu' or 'cuda'"),
        )
        for name, valid, expected in rules:
            if not valid:
                raise AccyError(
                    f"invalid plan option {name}={getattr(self, name)!r}: expected {expected}"
                )
