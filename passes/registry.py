"""Every pass accy registers in `accy-opt`, by name.

Each entry maps a pass name to a factory returning the pass class, the form xDSL's
`PassPipeline` expects.
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.passes import ModulePass


def accy_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    """Pass name → factory of the pass class."""
    from accy.passes.plan_passes import PLAN_PASSES

    passes = {p.name: (lambda p=p: p) for p in PLAN_PASSES}
    passes["accy-eliminate-dead-code"] = lambda: (
        __import__(
            "accy.passes.dead_code", fromlist=["EliminateDeadCodePass"]
        ).EliminateDeadCodePass
    )
    passes["accy-fold-constants"] = lambda: (
        __import__("accy.passes.constant_fold", fromlist=["FoldConstantsPass"]).FoldConstantsPass
    )
    passes["accy-drop-loop-invariants"] = lambda: (
        __import__(
            "accy.passes.loop_invariants", fromlist=["DropLoopInvariantsPass"]
        ).DropLoopInvariantsPass
    )
    passes["accy-sort-prefixes"] = lambda: (
        __import__("accy.passes.sort_prefixes", fromlist=["SortPrefixesPass"]).SortPrefixesPass
    )
    passes["accy-fold-into-dots"] = lambda: (
        __import__("accy.passes.dot_folds", fromlist=["FoldIntoDotsPass"]).FoldIntoDotsPass
    )
    passes["accy-rematerialize"] = lambda: (
        __import__("accy.passes.rematerialize", fromlist=["RematerializePass"]).RematerializePass
    )
    passes["accy-plan"] = lambda: (
        __import__("accy.passes.planned_form", fromlist=["PlanPass"]).PlanPass
    )
    passes["accy-lower"] = lambda: (
        __import__("accy.passes.lower.lower_pass", fromlist=["LowerPass"]).LowerPass
    )
    return passes
