"""The names lowered host code and the code that calls it agree on (the JIT, a compile
cache entry's library, an export's loader), kept where every side can import them
without the compiler.
"""

from __future__ import annotations

HOST_SYMBOL_PREFIX = "accy_fn_"
"""What every lowered host function's symbol starts with, and nothing else accy or
upstream MLIR emits."""

ALLOCATION_FAILED = "accy_allocation_failed"
"""`void accy_allocation_failed(int64_t bytes)`: what CPU host code calls, before returning
without running anything, when an allocation of its plan fails (`accy.passes.lower.cpu`,
*Allocation failures*). The JIT binds it to a recorder and checks the record after every
call (`accy.mlir_bridge.jit`); an export links a definition of its own (`accy.aot`)."""


def host_symbol(name: str) -> str:
    """The symbol of the lowered host function of the planned function `@name`."""
    return HOST_SYMBOL_PREFIX + name
