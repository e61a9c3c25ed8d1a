"""The instruction sets of this machine's CPU, named as Linux's /proc/cpuinfo names them.

The CPU target compiles for the host CPU (MLIR's ExecutionEngine targets it, and the CPU
lowering emits `x86.avx512.dot` only where `avx512_bf16` is listed), so a CPU export
records the host's instruction sets and the loader refuses a machine that lacks one of
them, instead of stopping on an illegal instruction. Standard library only: the runtime
loader imports it.
"""

from __future__ import annotations

import functools
from pathlib import Path

INSTRUCTION_SET_PREFIXES = (
    "sse",
    "ssse",
    "avx",
    "fma",
    "f16c",
    "bmi",
    "amx",
    "popcnt",
    "movbe",
    "gfni",
    "vaes",
    "vpclmulqdq",
    "adx",
    "sha_ni",
)
"""Flags that name instruction sets compiled code may use (other flags, such as
`hypervisor`, describe the machine)."""

BF16_PAIRS = "avx512_bf16"
"""AVX512_BF16 (`vdpbf16ps`): sums of products of bf16 pairs into f32 lanes."""


@functools.cache
def host_flags() -> frozenset[str]:
    """Every flag of this machine's CPU (empty where /proc/cpuinfo is not readable)."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return frozenset()
    line = next((ln for ln in text.splitlines() if ln.startswith("flags")), "")
    return frozenset(line.partition(":")[2].split())


def instruction_sets(flags: frozenset[str] | None = None) -> list[str]:
    """The instruction-set flags among `flags` (default: the host's), sorted."""
    flags = host_flags() if flags is None else flags
    return sorted(f for f in flags if f.startswith(INSTRUCTION_SET_PREFIXES))


def missing_instruction_sets(needed: list[str]) -> list[str]:
    """Those of `needed` this machine's CPU lacks (none where its flags are unknown)."""
    flags = host_flags()
    return [] if not flags else [f for f in needed if f not in flags]
