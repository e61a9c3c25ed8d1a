"""`accy-plan{target=...}`: the whole preparation, written as the planned form.

Each accy function becomes a host function on buffers (`accy.dialects.plan`): its
parameters, then one out-parameter per result (`accy.output = i`), all in host memory.
Its body holds, in order:

1. the row count (`memref.dim` of the first argument with a `?`), when dims are dynamic
   (`dynamic_rows`);
2. the arena (`accy.arena`, the planned size and alignment) and every buffer's home, as
   the target's memory asks (`function_planner`):
   - a device target (CUDA): each slot planned in the arena is an `accy.view` at its
     planned offset (a slot that reuses another's buffer in place is a view at the same
     offset); a `device_constant` constant is an `accy.global` in constant memory; each
     arena workspace is a view of its bytes, each other workspace an `accy.alloc`;
   - a host target (CPU): a parameter is its argument, a kernel-written result its
     out-parameter (and so is a temporary that result takes over in place), a constant an
     `accy.global` in host memory, another temporary a view of the arena; a parameter or
     constant that a kernel writes (a scan's scratch) is first copied into an `accy.alloc`
     of its own, so the caller's array and the constant stay untouched;
   - a dynamic slot planned without rows is an `accy.alloc` sized by the row count;
3. the transfers (`accy.copy`): a device target copies every parameter whose transfer is
   host_to_device or bidirectional into its device buffer and uploads each
   `device_global` constant from a host `accy.global`; a host target copies an aliased or
   bidirectional slot into its out-parameter;
4. one `accy.kernel` per work item in schedule order: its fused members cloned into its
   body, block argument `i` read from `ins[i]`, the group's outputs yielded into `outs`,
   its family and workspaces; splat constants that the target reads as scalars are
   cloned into the bodies that read them instead of being passed as buffers. An
   `accy.iterate` is an `accy.loop`: inits copied into the carried buffers before it, its
   body's kernels, then the yielded values copied into the carried buffers (a yielded value
   that is another position's carried buffer is staged through an `accy.alloc` first); an
   `accy.while` is an `accy.while_loop` alike, its `cond` region the cond's kernels, which
   leave the condition in the host buffer the loop reads (device: copied back into an
   `accy.alloc` of its own each time; host: the condition's own buffer);
5. the copies of the results into the out-parameters (device: every result, device to
   host; host: a result whose home is not its out-parameter), and `func.return`.

The plan is the target's: the CPU plan's arena holds its temporaries and the CPU's
workspaces, not the CUDA families'. The module records the plan's target and
multiprocessor count (`accy.target`, `accy.sm_count`): lowering reads everything from here.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import ClassVar

from accy.dialects import plan
from accy.dialects.plan import TARGET
from accy.passes.analysis import AnalysisManager
from accy.passes.function_planner import planner_for
from accy.passes.plan_passes import (
    PlanArenaPass,
    PlanMemorySpacesPass,
    SizeWorkspacesPass,
    analysis_manager,
)
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    FunctionType,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    StringAttr,
    TensorType,
    i64,
)
from xdsl.ir import Block, Region, SSAValue
from xdsl.passes import ModulePass

from accy.diagnostics import AccyError
from accy.targets import TARGETS, target_named

SM_COUNT = "accy.sm_count"


def plan_target(manager: AnalysisManager, target: str) -> None:
    """Plan for `target` from now on (results planned for another are dropped)."""
    target_named(target)
    manager.configure(dataclasses.replace(manager.options, target=target))


def planned_module(module: ModuleOp, manager: AnalysisManager, target: str) -> ModuleOp:
    """A new module: `module` planned by `manager` for `target`, in the planned form."""
    plan_target(manager, target)
    planned = ModuleOp(
        [],
        attributes={
            TARGET: StringAttr(target),
            SM_COUNT: IntegerAttr(manager.options.sm_count, i64),
        },
    )
    planner = planner_for(TARGETS[target])
    for op in module.ops:
        if isinstance(op, func.FuncOp) and op.body.blocks:
            planned.body.block.add_op(planner(op, module, manager, TARGETS[target]).build())
    return planned


def planned_for(module: ModuleOp, manager: AnalysisManager, target: str) -> ModuleOp:
    """`module` in the planned form for `target`: itself when it is planned (for that
    target, else an `AccyError`), else a new module planned by `manager`."""
    if not is_planned(module):
        return planned_module(module, manager, target)
    planned = planned_target(module)
    if planned != target:
        raise AccyError(
            f"the module is planned for the {planned} target, not for {target}; use "
            f"target={planned} or plan the program again for {target}"
        )
    return module


def is_planned(module: ModuleOp) -> bool:
    """Whether `module` is in the planned form (`accy-plan` made it)."""
    return TARGET in module.attributes


def planned_target(module: ModuleOp) -> str:
    """The target a planned module was planned for (`accy.target`); `AccyError` when the
    attribute does not name one."""
    target = module.attributes.get(TARGET)
    if not isinstance(target, StringAttr) or target.data not in TARGETS:
        raise AccyError(
            f"the module's {TARGET} is {target}; a planned module names its target: "
            + " or ".join(f'"{t}"' for t in TARGETS)
        )
    return target.data


def signature_of(planned: func.FuncOp) -> func.FuncOp:
    """The tensor signature of a planned function: a `func.func` of the same name whose
    parameters are the planned parameters (names kept) and whose results are the
    out-parameters' tensors in `accy.output` order. Its body holds no ops (it is what
    callers check arguments against, not a program)."""
    attrs = planned.arg_attrs.data if planned.arg_attrs is not None else ()
    params: list[SSAValue] = []
    outputs: dict[int, TensorType] = {}
    for index, arg in enumerate(planned.body.block.args):
        t = arg.type
        assert isinstance(t, MemRefType)
        tensor = TensorType(t.get_element_type(), t.get_shape())
        entry = attrs[index].data.get(plan.OUTPUT) if index < len(attrs) else None
        if isinstance(entry, IntegerAttr):
            outputs[entry.value.data] = tensor
        else:
            params.append(arg)
    block = Block(
        arg_types=[TensorType(a.type.get_element_type(), a.type.get_shape()) for a in params]
    )  # type: ignore[attr-defined]
    for old, new in zip(params, block.args):
        new.name_hint = old.name_hint
    results = [outputs[i] for i in sorted(outputs)]
    return func.FuncOp(
        planned.sym_name.data,
        FunctionType.from_lists(list(block.arg_types), results),
        Region(block),
    )


def max_rows_of(planned: func.FuncOp) -> int | None:
    """The most rows a planned function's dynamic views were planned for (None when it
    has none: its dynamic buffers are allocations sized at the call's rows)."""
    rows = [op.rows for op in planned.body.walk() if isinstance(op, plan.ViewOp) and op.max_rows]
    return min(rows) if rows else None


@dataclass(frozen=True)
class PlanPass(ModulePass):
    """Run the whole preparation and replace the module by its planned form.

    Options (`accy.prepare`'s, each as the pass of that analysis takes it; what is not
    given is the pipeline's, never an earlier pass's):
    - target: the target planned for (`accy.targets`; default the pipeline's,
      `accy-opt --accy-target`, else `cpu` as everywhere); only that target's `accy-lower`
      takes the planned form.
    - alignment: byte alignment of every arena buffer (default the target's: 256 on CUDA,
      64 on the CPU, as `accy.compile` plans it).
    - rows, sm-count, families: as `accy-size-workspaces`'s; constant-capacity as
      `accy-plan-memory-spaces`'s; pack-budget-ms, pack-workers, check as
      `accy-plan-arena`'s.
    """

    name = "accy-plan"

    target: str | None = None
    alignment: int | None = None
    rows: tuple[int, ...] | None = None
    sm_count: int | None = None
    families: str | None = None
    constant_capacity: int | None = None
    pack_budget_ms: int | float | None = None  # the pipeline syntax reads `20` as an int
    pack_workers: int | None = None
    check: bool = False
    donate: bool = False

    preserves_all_analyses: ClassVar[bool] = False

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if is_planned(op):
            raise AccyError("the module is already planned (accy-plan ran on it)")
        if self.target is not None:
            target_named(self.target)
        # each option as the pass of its analysis reads it
        workspaces = SizeWorkspacesPass(
            rows=self.rows, sm_count=self.sm_count, families=self.families, target=self.target
        )
        memory = PlanMemorySpacesPass(constant_capacity=self.constant_capacity)
        arena = PlanArenaPass(
            alignment=self.alignment,
            pack_budget_ms=self.pack_budget_ms,
            pack_workers=self.pack_workers,
            rows=self.rows,
            check=self.check,
            donate=self.donate,
            target=self.target,
        )
        manager = analysis_manager(ctx, op)
        given = {**workspaces.plan_options(), **memory.plan_options(), **arena.plan_options()}
        manager.configure_pass(**given)
        planned = planned_module(op, manager, manager.options.target)
        replace_module_body(op, planned)


def replace_module_body(module: ModuleOp, new: ModuleOp) -> None:
    """Move `new`'s ops and attributes into `module` (whose old ops are dropped)."""
    for old in list(module.body.block.ops):
        old.detach()
        old.erase(safe_erase=False)
    for op in list(new.body.block.ops):
        op.detach()
        module.body.block.add_op(op)
    module.attributes.clear()
    module.attributes.update(new.attributes)


__all__ = [
    "PlanPass",
    "is_planned",
    "max_rows_of",
    "planned_for",
    "planned_module",
    "planned_target",
    "signature_of",
]
