"""What a target's `build` returns: an `Executable` (its functions by name, callable with
numpy arrays), and `planned_input`, the planned form an executable runs.

A target's `build(module, preparation, **options)` runs the planned form of `module`:
`module` itself when it is planned (`accy-plan`; `preparation` is then None), else `module`
planned with `preparation`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from accy.diagnostics import AccyInputError
from accy.runtime.loader import UnknownFunctionError, function_name

if TYPE_CHECKING:  # an executable loaded from the compile cache runs without the compiler
    from xdsl.dialects.builtin import ModuleOp

    from accy.preparation import Preparation


def planned_input(module: ModuleOp, preparation: Preparation | None, target: str) -> ModuleOp:
    """The planned form an executable for `target` runs (see the module doc)."""
    from accy.passes.analysis import AnalysisManager
    from accy.passes.planned_form import is_planned, planned_for

    if preparation is None:
        assert is_planned(module), "an unplanned module is compiled with its preparation"
        return planned_for(module, AnalysisManager(), target)  # checks the planned target
    return planned_for(module, preparation.manager, target)


class Executable:
    """A compiled module: its functions by name, callable with numpy arrays.

    `exe(*arrays)` calls the first function, `exe["f"](*arrays)` or `exe.f(*arrays)` any
    other. Looking up a function by anything but a name is an `ArgumentTypeError`, by a
    name it lacks an `UnknownFunctionError` (`AccyInputError`s, also a `TypeError` and a
    `KeyError`).
    """

    target: str
    module: ModuleOp
    preparation: Preparation | None
    """The plan's analyses (None for a module compiled in its planned form)."""
    planned: ModuleOp
    """The planned form it runs."""
    functions: dict[str, Callable[..., tuple[np.ndarray, ...]]]

    @property
    def function_names(self) -> list[str]:
        return list(self.functions)

    def __getitem__(self, key: str) -> Callable[..., tuple[np.ndarray, ...]]:
        name = function_name(key)
        if name not in self.functions:
            known = ", ".join(f"@{n}" for n in self.functions) or "none"
            raise UnknownFunctionError(
                f"no function @{name} in the module; known functions: {known}"
            )
        return self.functions[name]

    def __getattr__(self, name: str) -> Callable[..., tuple[np.ndarray, ...]]:
        functions = self.__dict__.get("functions", {})
        if name in functions:
            return functions[name]
        raise AttributeError(name)

    def __call__(self, *arrays: Any, **keywords: Any) -> tuple[np.ndarray, ...]:
        if not self.functions:
            raise AccyInputError("the module has no function to run")
        return next(iter(self.functions.values()))(*arrays, **keywords)
