"""Every pass accy registers in `accy-opt`, by name, imported lazily.

Each entry maps a pass name to a factory returning the pass class, so that `accy-opt`
imports only the passes a pipeline uses.
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.passes import ModulePass


def accy_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    """Pass name → factory of the pass class."""
    return {}
