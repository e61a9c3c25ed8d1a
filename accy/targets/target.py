"""A target: the facts planning asks of it, and the module that lowers, builds and exports
for it.

Invariants: planning reads a target only through these facts (never by its name), so a new
target with the same facts plans the same way; `implementation` is the only place a target's
module is imported, and a target that is not installed fails there with its name.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Any

from accy.diagnostics import AccyError

if TYPE_CHECKING:  # the registry loads on machines with only the runtime (numpy)
    from xdsl.dialects.builtin import ModuleOp


@dataclass(frozen=True)
class Target:
    """One execution target (see the module doc)."""

    name: str
    alignment: int
    """Byte alignment of every arena buffer unless the plan options give one."""
    device_memory: bool
    """Kernels run on a device with memory of its own: every buffer a kernel touches lives
    there, parameters are copied in and results out, constants uploaded or placed in
    constant memory, and splat constants passed to kernels as scalars. Else (a host
    target) kernels read the caller's arrays and write its result arrays in place, and the
    arena holds only temporaries."""
    dynamic_rows: bool
    """`?` dims are planned: every `?` is bound to one row count, read from the first
    argument that has one. Else every shape must be static."""
    lowering: str
    """The function that lowers the target's planned form to upstream MLIR
    (`module.function`; `lower` calls it)."""
    lowering_options: tuple[str, ...]
    """The keyword options its lowering takes beyond the planned module."""
    options: tuple[str, ...]
    """The keyword options its `build` and `export` take beyond `opt_level` (and `cc`)."""
    module: str
    """The module that builds (`build`), exports (`export`) and fills in plan options
    (`plan_defaults`) for the target."""
    summary: str
    """What the target runs on, in a few words (for messages and `--help`)."""
    text_cache: str | None = None
    """The function (`module.function`) that finds a compile of a program's text in the
    compile cache before the compiler is loaded (`accy.compiler`), or None: the target
    has no compile cache. Its `build` then takes the `text_key` that function returns."""

    def load_cached(self, *args: Any) -> tuple[Any, str | None]:
        """`text_cache` called: `(executable or None, text key or None)`."""
        if self.text_cache is None:
            return None, None
        module, _, function = self.text_cache.rpartition(".")
        return getattr(self._load(module), function)(*args)

    def implementation(self) -> ModuleType:
        """The target's module; `AccyError` when it is not installed."""
        return self._load(self.module)

    def lower(self, planned: ModuleOp, **options: Any) -> ModuleOp:
        """A new module: `planned` (planned for this target) lowered to upstream MLIR."""
        module, _, function = self.lowering.rpartition(".")
        return getattr(self._load(module), function)(planned, **options)

    def _load(self, module: str) -> ModuleType:
        try:
            return importlib.import_module(module)
        except ModuleNotFoundError as error:
            if error.name != module:
                raise
            path = module.removeprefix("accy.").replace(".", "/")
            raise AccyError(
                f"the {self.name} target is not available: {module} ({path}.py) is not installed"
            ) from None
