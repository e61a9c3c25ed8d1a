"""Options of the planning analyses, shared through the analysis manager."""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_CONSTANT_CAPACITY = 64 * 1024
"""Bytes of constant memory one kernel module may use (CUDA's `__constant__` bank)."""

DEFAULT_SHARED_LIMIT = 48 * 1024
"""Bytes of `device_shared` memory one block may use without opting in to more."""


@dataclass(frozen=True)
class PlanOptions:
    constant_capacity: int = DEFAULT_CONSTANT_CAPACITY
    shared_limit: int = DEFAULT_SHARED_LIMIT
