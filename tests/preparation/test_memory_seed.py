"""The seed planner's memory-space tests (shared/seeds/accy-preparation-memory.zig), ported
with the same programs and the same numbers.

Each seed test also re-plans from scratch and compares (`checkMemoryStorage`): here
`recompute` re-runs `plan_memory_spaces` on the cached buffer and schedule plans and checks
the result equals the cached plan, field by field, and that the work meter stayed within
the estimate.
"""

from __future__ import annotations

import pytest
from accy.dialects import accy as ops
from accy.passes.analysis import AnalysisManager, Census, WorkMeter
from accy.passes.buffers import BUFFERS, BufferRole
from accy.passes.memory import (
    MEMORY,
    MISSING_OUTPUT_FORMAT,
    Aliased,
    BoundaryTransfer,
    KernelWritten,
    MemoryAccess,
    MemorySpace,
    MemorySpacePlan,
    MissingOutputWriter,
    estimate_memory,
    plan_memory_spaces,
)
from accy.passes.options import PlanOptions
from accy.passes.plan_passes import PlanMemorySpacesPass, attach_analysis_manager
from accy.passes.schedule import SCHEDULE, SchedulePlan
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, FileLineColLoc, ModuleOp

import accy

COUNTERS = (
    "host_slot_count",
    "device_global_slot_count",
    "device_constant_slot_count",
    "device_shared_slot_count",
    "unified_slot_count",
    "host_input_transfer_count",
    "host_output_transfer_count",
    "dynamic_slot_count",
    "elided_value_count",
    "total_static_bytes",
)


def first_op(module: ModuleOp, op_type: type) -> ops.Operation:
    return next(op for op in module.walk() if isinstance(op, op_type))


def function_named(module: ModuleOp, name: str) -> func.FuncOp:
    return next(
        op for op in module.walk() if isinstance(op, func.FuncOp) and op.sym_name.data == name
    )


def recompute(prep: accy.Preparation) -> MemorySpacePlan:
    """Plan again from the cached inputs; the result must equal the cached plan and stay
    within the memory analysis's estimate (the seed's `checkMemoryStorage`)."""
    expected = prep.memory
    meter = WorkMeter()
    actual = plan_memory_spaces(prep.buffers, prep.schedule, meter=meter)
    for name in COUNTERS:
        assert getattr(actual, name) == getattr(expected, name), name
    assert actual.assignment_count() == expected.assignment_count()
    for left, right in zip(expected.assignments, actual.assignments):
        assert left == right
        assert actual.assignment_for_slot(right.slot_id).value is right.value
    bounds = estimate_memory(Census.of(prep.module), PlanOptions())
    assert meter.structural_visits <= bounds.structural_visits
    assert meter.retained_entries <= bounds.retained_entries
    assert meter.retained_entries == actual.assignment_count()
    assert expected.assignment_count() == prep.buffers.slot_count()
    assert expected.total_static_bytes == prep.buffers.total_static_bytes
    return actual


# memory_add4 --------------------------------------------------------------------------


def build_add4(name: str = "memory_add4") -> ModuleOp:
    b = accy.Builder()
    f32_4 = b.tensor("f32", [4])
    fb = b.begin_function(name, [f32_4, f32_4], [f32_4])
    fb.return_([fb.add(fb.parameter(0), fb.parameter(1))])
    fb.finish()
    return b.finish()


def test_memory_add4_classifies_function_boundary_transfers():
    module = build_add4()
    prep = accy.prepare(module)
    plan = prep.memory
    recompute(prep)
    assert plan.assignment_count() == 3
    assert plan.device_global_slot_count == 3
    assert plan.host_input_transfer_count == 2
    assert plan.host_output_transfer_count == 1
    assert plan.device_constant_slot_count == 0
    assert plan.dynamic_slot_count == 0
    assert plan.total_static_bytes == 48

    function = function_named(module, "memory_add4")
    first_arg = plan.assignment_for_slot(prep.buffers.get_slot(function.args[0]).id)
    assert first_arg is not None
    assert first_arg.space is MemorySpace.DEVICE_GLOBAL
    assert first_arg.access is MemoryAccess.READ_ONLY
    assert first_arg.transfer is BoundaryTransfer.HOST_TO_DEVICE
    assert first_arg.output_source is None

    add = first_op(module, ops.AddOp)
    output = plan.assignment_for_value(add.results[0])
    assert output is not None
    assert output.space is MemorySpace.DEVICE_GLOBAL
    assert output.access is MemoryAccess.WRITE_ONLY
    assert output.transfer is BoundaryTransfer.DEVICE_TO_HOST
    assert isinstance(output.output_source, KernelWritten)
    assert output.output_source == KernelWritten(prep.schedule.work_items[0].id)


# backed_outputs -----------------------------------------------------------------------


def test_returned_input_and_constant_are_aliased_to_their_own_slots():
    b = accy.Builder()
    f32_2 = b.tensor("f32", [2])
    fb = b.begin_function("backed_outputs", [f32_2], [f32_2, f32_2])
    constant = fb.constant(f32_2, [3.0, -4.0])
    parameter = fb.parameter(0)
    fb.return_([parameter, constant])
    fb.finish()
    prep = accy.prepare(b.finish())
    recompute(prep)
    for value in (parameter, constant):
        slot = prep.buffers.get_slot(value)
        assert slot is not None
        assignment = prep.memory.assignment_for_slot(slot.id)
        assert isinstance(assignment.output_source, Aliased)
        assert assignment.output_source == Aliased(slot.id)
    # A returned constant is an output, so it is not in constant memory.
    assert prep.memory.assignment_for_value(constant).space is MemorySpace.DEVICE_GLOBAL
    assert prep.memory.assignment_for_value(parameter).transfer is BoundaryTransfer.BIDIRECTIONAL


# writerless ---------------------------------------------------------------------------


def build_writerless():
    b = accy.Builder()
    scalar = b.tensor("f32", [])
    vector = b.tensor("f32", [8])
    fb = b.begin_function("writerless", [scalar], [scalar, vector])
    fb.set_location("writerless.accy", 12, 7)
    broadcast = fb.broadcast_in_dim(fb.parameter(0), vector, [])
    fb.return_([fb.parameter(0), broadcast])
    fb.finish()
    return b.finish(), broadcast


WRITERLESS_MESSAGE = (
    "function @writerless result #1 (%1) has no kernel writer or backing alias; "
    "schedule its producer or provide an input/constant alias"
)


def test_writerless_broadcast_is_kernel_written_by_work_item_zero():
    module, broadcast = build_writerless()
    prep = accy.prepare(module)
    recompute(prep)
    assert prep.schedule.work_item_count() == 1
    assert prep.schedule.work_items[0].id == 0
    assignment = prep.memory.assignment_for_value(broadcast)
    assert assignment.output_source == KernelWritten(0)


def test_writerless_refuses_a_removed_writer_at_its_location():
    module, _ = build_writerless()
    prep = accy.prepare(module)
    with pytest.raises(MissingOutputWriter) as caught:
        plan_memory_spaces(prep.buffers, SchedulePlan(()))
    error = caught.value
    # The broadcast result is %1: the single parameter is %0.
    assert error.message == WRITERLESS_MESSAGE
    assert error.message == MISSING_OUTPUT_FORMAT.format(function="writerless", index=1, value=1)
    assert isinstance(error.location, FileLineColLoc)
    assert error.location.filename.data == "writerless.accy"
    assert (error.location.line.data, error.location.column.data) == (12, 7)
    assert error.diagnostic() == f"writerless.accy:12:7: error: {WRITERLESS_MESSAGE}"
    # Exactly one error: the parameter output is aliased and fails nothing.
    assert str(error).count("error:") == 1


def test_writerless_failure_through_the_manager_marks_the_outcome_rejected():
    """The seed swaps in an empty schedule under the cache and asks for the memory plan:
    the analysis fails (rejected) and the four other analyses stay cached."""
    module, _ = build_writerless()
    manager = AnalysisManager()
    manager.get(BUFFERS, module)
    manager.get(SCHEDULE, module)
    schedule = manager.record(SCHEDULE.name, module)
    schedule.result = SchedulePlan(())
    with pytest.raises(MissingOutputWriter) as caught:
        manager.get(MEMORY, module)
    assert caught.value.message == WRITERLESS_MESSAGE
    assert manager.budget.outcome is accy.Outcome.REJECTED
    assert manager.record(MEMORY.name, module) is None
    assert len(manager.cached_names()) == 4


# memory_const_add ---------------------------------------------------------------------


def test_non_returned_constant_goes_to_constant_memory():
    b = accy.Builder()
    i32_4 = b.tensor("i32", [4])
    fb = b.begin_function("memory_const_add", [i32_4], [i32_4])
    constant = fb.constant(i32_4, [1, 2, 3, 4])
    fb.return_([fb.add(fb.parameter(0), constant)])
    fb.finish()
    prep = accy.prepare(b.finish())
    plan = prep.memory
    recompute(prep)
    assert plan.assignment_count() == 3
    assert plan.device_global_slot_count == 2
    assert plan.device_constant_slot_count == 1
    assert plan.host_input_transfer_count == 1
    assert plan.host_output_transfer_count == 1
    assert plan.total_static_bytes == 48
    assignment = plan.assignment_for_value(constant)
    assert assignment.space is MemorySpace.DEVICE_CONSTANT
    assert assignment.access is MemoryAccess.READ_ONLY
    assert assignment.transfer is BoundaryTransfer.NONE
    assert assignment.output_source is None


# fused add -> mul ---------------------------------------------------------------------


def test_fusion_elisions_get_no_storage():
    b = accy.Builder()
    f32_4 = b.tensor("f32", [4])
    fb = b.begin_function("memory_fused_add_mul", [f32_4, f32_4, f32_4], [f32_4])
    total = fb.add(fb.parameter(0), fb.parameter(1))
    fb.return_([fb.multiply(total, fb.parameter(2))])
    fb.finish()
    prep = accy.prepare(b.finish())
    plan = prep.memory
    recompute(prep)
    assert plan.assignment_count() == 4
    assert plan.elided_value_count == 1
    assert plan.device_global_slot_count == 4
    assert plan.host_input_transfer_count == 3
    assert plan.host_output_transfer_count == 1
    assert prep.buffers.get_slot(total) is None
    assert plan.assignment_for_value(total) is None


# the pass preserves IR ----------------------------------------------------------------


def strip_plan_attributes(module: ModuleOp) -> None:
    for op in module.walk():
        for key in [k for k in op.attributes if k.startswith("accy.")]:
            del op.attributes[key]
        if isinstance(op, func.FuncOp) and op.arg_attrs is not None:
            kept = [
                DictionaryAttr({k: v for k, v in d.data.items() if not k.startswith("accy.")})
                for d in op.arg_attrs.data
            ]
            op.arg_attrs = None if all(not d.data for d in kept) else ArrayAttr(kept)


def test_memory_space_pass_changes_only_attributes():
    module = build_add4("memory_pass_add4")
    before = str(module)
    ops_before = [type(op) for op in module.walk()]
    manager = AnalysisManager()
    ctx = Context()
    attach_analysis_manager(ctx, module, manager)
    PlanMemorySpacesPass().apply(ctx, module)
    annotated = str(module)
    assert annotated != before
    assert (
        'accy.memory = "slot 2 device_global write_only device_to_host 16 bytes kernel 0"'
        in annotated
    )
    assert [type(op) for op in module.walk()] == ops_before
    strip_plan_attributes(module)
    assert str(module) == before
    # The pass preserves every analysis: nothing cached was dropped and the plan is cached.
    assert set(manager.cached_names()) == {
        "accy-shape-layout",
        "accy-fusion-plan",
        "accy-schedule-plan",
        "accy-buffer-plan",
        "accy-memory-space-plan",
    }
    assert PlanMemorySpacesPass.preserves_all_analyses


# the 0…64 boundary ------------------------------------------------------------------------


def build_boundary(count: int, written: bool, dims: tuple[int, ...]):
    b = accy.Builder()
    typ = b.tensor("f32", dims)
    fb = b.begin_function("memory_boundary", [typ] * count, [typ] * count)
    values = []
    for index in range(count):
        parameter = fb.parameter(index)
        values.append(fb.reshape(parameter, typ) if written else parameter)
    fb.return_(values)
    fb.finish()
    return b.finish(), values


@pytest.mark.parametrize("dims", [(2, 3), (-1, 3)], ids=["static", "dynamic"])
@pytest.mark.parametrize("written", [True, False], ids=["written", "aliased"])
@pytest.mark.parametrize("count", [0, 1, 6, 7, 16, 64])
def test_boundary_parameters(count: int, written: bool, dims: tuple[int, ...]):
    module, values = build_boundary(count, written, dims)
    prep = accy.prepare(module)
    plan = prep.memory
    recompute(prep)
    slots = count * (2 if written else 1)
    assert plan.assignment_count() == slots
    assert plan.host_input_transfer_count == count
    assert plan.host_output_transfer_count == count
    assert plan.elided_value_count == 0
    assert prep.schedule.work_item_count() == (count if written else 0)
    dynamic = dims[0] == -1
    assert plan.dynamic_slot_count == (slots if dynamic else 0)
    assert plan.total_static_bytes == (0 if dynamic else slots * 24)
    for index, value in enumerate(values):
        slot_id = count + index if written else index
        assignment = plan.assignment_for_slot(slot_id)
        assert assignment is not None
        assert assignment.value is value
        if written:
            assert assignment.output_source == KernelWritten(index)
            assert assignment.transfer is BoundaryTransfer.DEVICE_TO_HOST
        else:
            assert assignment.output_source == Aliased(slot_id)
            assert assignment.transfer is BoundaryTransfer.BIDIRECTIONAL
            assert assignment.access is MemoryAccess.READ_WRITE
        assert assignment.is_dynamic is dynamic


# 4096-character function names ----------------------------------------------------------


@pytest.mark.parametrize("length", [1, 64, 4096])
def test_long_function_symbols_in_the_missing_writer_message(length: int):
    name = "n" * length
    b = accy.Builder()
    scalar = b.tensor("f32", [])
    vector = b.tensor("f32", [8])
    fb = b.begin_function(name, [scalar], [vector])
    fb.return_([fb.broadcast_in_dim(fb.parameter(0), vector, [])])
    fb.finish()
    module = b.finish()
    census = Census.of(module)
    assert census.symbol_bytes == length
    prep = accy.prepare(module)
    with pytest.raises(MissingOutputWriter) as caught:
        plan_memory_spaces(prep.buffers, SchedulePlan(()))
    message = caught.value.message
    assert message == (
        f"function @{name} result #0 (%1) has no kernel writer or backing alias; "
        "schedule its producer or provide an input/constant alias"
    )
    # The diagnostic grows with the symbol and the estimate charges for those bytes.
    assert len(message) == len(MISSING_OUTPUT_FORMAT.format(function="", index=0, value=1)) + length
    assert estimate_memory(census, PlanOptions()).structural_visits >= census.symbol_bytes
    # No location was set: the diagnostic has none.
    assert caught.value.location is None
    assert caught.value.diagnostic() == f"error: {message}"


def test_roles_print_as_the_seed_names_them():
    assert str(BufferRole(input=True, output=True)) == "input+output"
    assert str(BufferRole()) == "temporary"
