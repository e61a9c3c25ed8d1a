"""Options of the planning analyses, shared through the analysis manager."""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, fields
from numbers import Integral, Real
from pathlib import Path
from typing import Any

from accy.diagnostics import AccyError, AccyTypeError
from accy.targets import DEFAULT_TARGET, TARGETS, Target

DEFAULT_CONSTANT_CAPACITY = 64 * 1024
"""Bytes of constant memory one kernel module may use (CUDA's `__constant__` bank)."""

DEFAULT_SHARED_LIMIT = 48 * 1024
"""Bytes of `device_shared` memory one block may use without opting in to more."""


DEFAULT_SM_COUNT = 132
"""Multiprocessors of the reference GPU (an H200)."""

DEFAULT_PACK_BUDGET_MS = 20.0
"""Milliseconds the arena improvement search may spend per function."""

MAX_PACK_BUDGET_MS = 7 * 24 * 3600 * 1000.0
"""The longest packing budget, a week (`accy.passes.arena.pack.MAX_BUDGET_MS`)."""

_KINDS: dict[str, tuple[type | tuple[type, ...], str]] = {
    "constant_capacity": (Integral, "an integer"),
    "shared_limit": (Integral, "an integer"),
    "rows": (Integral, "a sequence of integers"),
    "sm_count": (Integral, "an integer"),
    "families": (Path, "a sequence of paths"),
    "alignment": (Integral, "an integer"),
    "pack_budget_ms": (Real, "a number"),
    "pack_workers": (Integral, "an integer"),
    "target": (str, "a target's name"),
    "donate": (bool, "True or False"),
}
"""The type of each option's value (of each element, for `rows` and `families`), and
what an error says it expects."""


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
    """Byte alignment of every arena buffer as given; None: the target's
    (`Target.alignment`). What planning uses is `arena_alignment`."""
    pack_budget_ms: float = DEFAULT_PACK_BUDGET_MS
    pack_workers: int = 1
    check_arena: bool = False
    donate: bool = False
    """(CPU) Results take donated parameters' buffers over (`accy.donor`): a call writes
    them into the caller's donated arrays, which it gives up, as JAX's donation does;
    otherwise the caller's arrays are never written, and results that are written last
    hold temporaries in their out-parameters instead."""
    target: str = DEFAULT_TARGET
    """The name of the target planned for (`accy.targets.TARGETS`); planning reads its
    facts through `planned_for`."""

    @classmethod
    def of(cls, **options: Any) -> PlanOptions:
        """The options given by keyword (sequences for `rows` and `families` taken as
        tuples, family paths as `Path`s); `AccyError` for a name that is not an option."""
        names = [f.name for f in fields(cls)]
        unknown = sorted(set(options) - set(names))
        if unknown:
            raise AccyError(f"unknown plan option {unknown[0]!r}; plan options: {', '.join(names)}")
        for name in ("rows", "families"):
            if name in options:
                options[name] = _sequence(name, options[name])
        if "families" in options:
            options["families"] = tuple(
                Path(f) if isinstance(f, str | os.PathLike) else f for f in options["families"]
            )
        return cls(**options)

    def __post_init__(self) -> None:
        for name, (kind, expected) in _KINDS.items():
            value = getattr(self, name)
            values = value if name in ("rows", "families") else (value,)
            if name == "alignment" and value is None:
                continue
            if not isinstance(values, tuple) or not all(isinstance(v, kind) for v in values):
                raise AccyTypeError(f"invalid plan option {name}={value!r}: expected {expected}")
        if self.target not in TARGETS:
            raise AccyError(
                f"invalid plan option target={self.target!r}: expected one of " + ", ".join(TARGETS)
            )
        rules = (
            ("constant_capacity", self.constant_capacity >= 0, "a byte count >= 0"),
            ("shared_limit", self.shared_limit >= 0, "a byte count >= 0"),
            ("rows", all(r >= 1 for r in self.rows), "row counts >= 1"),
            ("sm_count", self.sm_count >= 1, "a multiprocessor count >= 1"),
            ("alignment", self.arena_alignment >= 1, "a byte alignment >= 1"),
            ("alignment", self.arena_alignment & (self.arena_alignment - 1) == 0, "a power of two"),
            ("pack_budget_ms", self.pack_budget_ms >= 0, "milliseconds >= 0"),
            (
                "pack_budget_ms",
                self.pack_budget_ms <= MAX_PACK_BUDGET_MS,
                f"milliseconds <= {MAX_PACK_BUDGET_MS:.0f} (a week)",
            ),
            ("pack_workers", self.pack_workers >= 1, "a process count >= 1"),
        )
        for name, valid, expected in rules:
            if not valid:
                raise AccyError(
                    f"invalid plan option {name}={getattr(self, name)!r}: expected {expected}"
                )

    @property
    def planned_for(self) -> Target:
        """The target planned for."""
        return TARGETS[self.target]

    @property
    def arena_alignment(self) -> int:
        """The byte alignment of every arena buffer: `alignment`, else the target's."""
        if self.alignment is not None:
            return self.alignment
        return self.planned_for.alignment


def _sequence(name: str, value: object) -> tuple:
    """The option `name`'s sequence `value` as a tuple; `AccyTypeError` for a string or a
    value that is not iterable (`rows="abc"` is not three rows)."""
    if isinstance(value, str | bytes) or not isinstance(value, Iterable):
        raise AccyTypeError(f"invalid plan option {name}={value!r}: expected {_KINDS[name][1]}")
    return tuple(value)
