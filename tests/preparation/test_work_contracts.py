"""Work contracts of the preparation analyses (DESIGN.md, "work contracts").

- The estimate computed from the census bounds what each analysis actually did (its
  meter) and what it actually kept (its result's size), on growing inputs.
- Admission at the boundary: a budget one visit short of the five estimates' sum is
  refused before the refused analysis runs (outcome `exhausted`, the memory plan is not
  cached); the exact sum and one more admit memory planning. `accy.prepare` (which also
  plans workspaces and the arena) is admitted at exactly the sum of what it runs.
- An analysis that fails marks the outcome `rejected`.
- Estimates past 2**64 - 1 raise `WorkOverflow`.
- `accy-opt --accy-max-work=N` refuses with exit status 1 and one line of error.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest
from accy.passes.analysis import (
    U64_MAX,
    AnalysisDescriptor,
    AnalysisManager,
    Budget,
    Census,
    Outcome,
    WorkBudgetExhausted,
    WorkOverflow,
)
from accy.passes.buffers import BUFFERS
from accy.passes.fusion import FUSION
from accy.passes.memory import MEMORY, MissingOutputWriter, plan_memory_spaces
from accy.passes.options import PlanOptions
from accy.passes.schedule import SCHEDULE, SchedulePlan
from accy.passes.shapes import SHAPES
from xdsl.dialects.builtin import ModuleOp

import accy

DESCRIPTORS = (SHAPES, FUSION, SCHEDULE, BUFFERS, MEMORY)
COUNTS = (0, 1, 6, 7, 16, 64)
ACCY_OPT = Path(sys.executable).with_name("accy-opt")


# Programs -------------------------------------------------------------------------------


def boundary(count: int, written: bool, dims=(2, 3)) -> ModuleOp:
    b = accy.Builder()
    typ = b.tensor("f32", dims)
    fb = b.begin_function("memory_boundary", [typ] * count, [typ] * count)
    values = [fb.parameter(i) for i in range(count)]
    if written:
        values = [fb.reshape(v, typ) for v in values]
    fb.return_(values)
    fb.finish()
    return b.finish()


def fusion_chain(length: int) -> ModuleOp:
    """A chain of elementwise ops, fully fused into one kernel."""
    b = accy.Builder()
    t = b.tensor("f32", [16])
    fb = b.begin_function("chain", [t, t], [t])
    x = fb.parameter(0)
    for i in range(length):
        x = fb.add(x, fb.parameter(1)) if i % 2 == 0 else fb.exponential(x)
    fb.return_([x])
    fb.finish()
    return b.finish()


def softmax_rows(rows: int) -> ModuleOp:
    """exp → reduce (with a fused prologue) → broadcast → divide; plus a constant."""
    b = accy.Builder()
    t = b.tensor("f32", [rows, 8])
    fb = b.begin_function("softmax", [t], [t])
    shift = fb.constant(t, 0.5)
    e = fb.exponential(fb.subtract(fb.parameter(0), shift))
    s = fb.reduce("add", fb.exponential(fb.parameter(0)), [1])
    bs = fb.broadcast_in_dim(s, t, [0])
    fb.return_([fb.divide(e, bs)])
    fb.finish()
    return b.finish()


def scan_program(count: int) -> ModuleOp:
    """`count` scans, each written into a parameter's scratch buffer and returned."""
    b = accy.Builder()
    t = b.tensor("f32", [4, 5])
    fb = b.begin_function("scans", [t] * (count + 1), [t] * count)
    x = fb.parameter(0)
    results = [fb.scan("add", fb.negate(x), fb.parameter(i + 1), 1) for i in range(count)]
    fb.return_(results)
    fb.finish()
    return b.finish()


def iterate_program(depth: int) -> ModuleOp:
    """Nested counted loops, each body a reduce/broadcast/divide and a scan."""
    b = accy.Builder()
    t = b.tensor("f32", [2, 3])
    fb = b.begin_function("loops", [t, t], [t, t])

    def body(level: int):
        def build(inner, acc, other):
            if level < depth:
                acc, other = inner.iterate(2, [acc, other], body(level + 1))
            s = inner.reduce("max", acc, [1])
            d = inner.divide(acc, inner.broadcast_in_dim(s, t, [0]))
            return [d, inner.scan("add", d, other, 0)]

        return build

    r0, r1 = fb.iterate(3, [fb.parameter(0), fb.parameter(1)], body(1))
    fb.return_([r0, r1])
    fb.finish()
    return b.finish()


def mixed_program(width: int) -> ModuleOp:
    """Several functions: a dot, a transpose, dynamic dims, constants returned."""
    b = accy.Builder()
    a = b.tensor("f32", [width + 1, 4])
    w = b.tensor("f32", [4, 3])
    fb = b.begin_function("dense", [a, w], [b.tensor("f32", [3, width + 1]), w])
    y = fb.dot_general(fb.parameter(0), fb.parameter(1), contracting=([1], [0]))
    y = fb.tanh(fb.add(y, fb.constant(y.type, 1.0)))
    fb.return_([fb.transpose(y, [1, 0]), fb.constant(w, 2.0)])
    fb.finish()
    d = b.tensor("i32", [-1, 3])
    fb = b.begin_function("dynamic", [d, d], [d])
    fb.return_([fb.maximum(fb.parameter(0), fb.negate(fb.parameter(1)))])
    fb.finish()
    return b.finish()


PROGRAMS: dict[str, Callable[[], ModuleOp]] = {}
for _count in COUNTS:
    PROGRAMS[f"boundary-{_count}-aliased"] = lambda c=_count: boundary(c, False)
    PROGRAMS[f"boundary-{_count}-written"] = lambda c=_count: boundary(c, True)
    PROGRAMS[f"boundary-{_count}-dynamic"] = lambda c=_count: boundary(c, True, (-1, 3))
    PROGRAMS[f"chain-{_count}"] = lambda c=_count: fusion_chain(c)
    PROGRAMS[f"scan-{_count}"] = lambda c=_count: scan_program(c)
    PROGRAMS[f"mixed-{_count}"] = lambda c=_count: mixed_program(c)
for _rows in (1, 7, 64):
    PROGRAMS[f"softmax-{_rows}"] = lambda r=_rows: softmax_rows(r)
for _depth in (1, 2, 4):
    PROGRAMS[f"iterate-{_depth}"] = lambda d=_depth: iterate_program(d)


def result_size(name: str, prep: accy.Preparation) -> int:
    """How many entries each analysis's result actually holds."""
    return {
        SHAPES.name: len(prep.shapes.layouts),
        FUSION.name: sum(len(g.members) for g in prep.fusion.groups),
        SCHEDULE.name: prep.schedule.work_item_count(),
        BUFFERS.name: len(prep.buffers.slot_of_value),
        MEMORY.name: prep.memory.assignment_count(),
    }[name]


def estimate(descriptor: AnalysisDescriptor, census: Census):
    return descriptor.estimate(census, PlanOptions())


def total_charge(module: ModuleOp) -> int:
    """The sum of the five memory-planning estimates (the seed's admission charge)."""
    census = Census.of(module)
    return sum(estimate(d, census).structural_visits for d in DESCRIPTORS)


# The estimate bounds what ran -----------------------------------------------------------


@pytest.mark.parametrize("program", sorted(PROGRAMS))
def test_estimates_bound_what_each_analysis_did(program: str):
    module = PROGRAMS[program]()
    prep = accy.prepare(module)
    census = Census.of(module)
    for descriptor in DESCRIPTORS:
        record = prep.manager.record(descriptor.name, module)
        assert record is not None, descriptor.name
        assert record.bounds == estimate(descriptor, census)
        meter, bounds = record.meter, record.bounds
        assert meter.structural_visits <= bounds.structural_visits, descriptor.name
        assert meter.retained_entries <= bounds.retained_entries, descriptor.name
        # The meter is honest about what was kept, and what was kept is in bounds.
        kept = result_size(descriptor.name, prep)
        assert meter.retained_entries >= kept, descriptor.name
        assert kept <= bounds.retained_entries, descriptor.name
    # Every analysis `prepare` ran (the five above and any later ones) kept its contract,
    # and each was charged exactly once, at its estimate.
    names = prep.manager.cached_names()
    for name in names:
        record = prep.manager.record(name, module)
        assert record.meter.structural_visits <= record.bounds.structural_visits, name
        assert record.meter.retained_entries <= record.bounds.retained_entries, name
    assert sorted(name for name, _ in prep.budget.charges) == sorted(names)
    assert prep.budget.spent_visits == sum(
        prep.manager.record(n, module).bounds.structural_visits for n in names
    )
    assert prep.budget.outcome is Outcome.RUNNING


def test_estimates_grow_with_the_input():
    charges = [total_charge(boundary(count, True)) for count in COUNTS]
    assert charges == sorted(charges)
    assert len(set(charges)) == len(charges)


# Admission at the boundary --------------------------------------------------------------

ADMISSION_PROGRAMS = [
    "boundary-0-aliased",
    "boundary-1-written",
    "boundary-7-written",
    "boundary-64-written",
    "boundary-64-aliased",
    "boundary-16-dynamic",
    "chain-16",
    "scan-6",
    "softmax-7",
    "iterate-2",
    "mixed-6",
]


@pytest.mark.parametrize("program", ADMISSION_PROGRAMS)
def test_one_visit_short_is_refused_before_it_runs(program: str):
    module = PROGRAMS[program]()
    charge = total_charge(module)
    budget = Budget(structural_visits=charge - 1)
    with pytest.raises(WorkBudgetExhausted) as caught:
        accy.prepare(module, budget=budget)
    assert budget.outcome is Outcome.EXHAUSTED
    assert budget.spent_visits <= charge - 1
    # The refused analysis was never charged, and it did not fit.
    assert caught.value.analysis not in [name for name, _ in budget.charges]
    assert caught.value.charge > caught.value.remaining

    # The same through a manager one can inspect: the memory plan is not cached, nor is
    # what was refused (the seed keeps 3 of 5 entries).
    manager = AnalysisManager(Budget(structural_visits=charge - 1))
    with pytest.raises(WorkBudgetExhausted) as again:
        manager.get(MEMORY, module)
    assert manager.budget.outcome is Outcome.EXHAUSTED
    assert manager.record(MEMORY.name, module) is None
    assert manager.record(again.value.analysis, module) is None
    assert len(manager.cached_names()) == 3


@pytest.mark.parametrize("program", ADMISSION_PROGRAMS)
@pytest.mark.parametrize("extra", [0, 1])
def test_exact_charge_and_one_more_are_admitted(program: str, extra: int):
    module = PROGRAMS[program]()
    charge = total_charge(module)
    budget = Budget(structural_visits=charge + extra)
    manager = AnalysisManager(budget)
    manager.get(MEMORY, module)
    assert budget.outcome is Outcome.RUNNING
    assert budget.spent_visits == charge
    assert budget.remaining_visits() == extra
    assert set(manager.cached_names()) == {d.name for d in DESCRIPTORS}


@pytest.mark.parametrize("program", ["boundary-7-written", "softmax-7", "iterate-2"])
def test_prepare_is_admitted_at_exactly_its_charge(program: str):
    """`accy.prepare` runs more than memory planning: its charge is the sum of the
    estimates of everything it runs; one visit less is refused."""
    module = PROGRAMS[program]()
    full = accy.prepare(module).budget.spent_visits
    assert full >= total_charge(module)
    short = Budget(structural_visits=full - 1)
    with pytest.raises(WorkBudgetExhausted):
        accy.prepare(module, budget=short)
    assert short.outcome is Outcome.EXHAUSTED
    for allowance in (full, full + 1):
        budget = Budget(structural_visits=allowance)
        accy.prepare(module, budget=budget)
        assert budget.outcome is Outcome.RUNNING
        assert budget.spent_visits == full


def test_retained_entries_allowance_is_enforced_too():
    module = boundary(7, True)
    census = Census.of(module)
    entries = sum(estimate(d, census).retained_entries for d in DESCRIPTORS)
    budget = Budget(retained_entries=entries - 1)
    with pytest.raises(WorkBudgetExhausted):
        AnalysisManager(budget).get(MEMORY, module)
    assert budget.outcome is Outcome.EXHAUSTED
    budget = Budget(retained_entries=entries)
    AnalysisManager(budget).get(MEMORY, module)
    assert budget.outcome is Outcome.RUNNING
    assert budget.spent_entries == entries


def test_a_refused_analysis_leaves_spending_unchanged():
    module = boundary(6, True)
    census = Census.of(module)
    budget = Budget(structural_visits=estimate(SHAPES, census).structural_visits - 1)
    manager = AnalysisManager(budget)
    with pytest.raises(WorkBudgetExhausted):
        manager.get(SHAPES, module)
    assert budget.spent_visits == 0
    assert budget.charges == []
    assert manager.cached_names() == []


# A failing analysis ---------------------------------------------------------------------


def _memory_without_writers(manager, op, meter):
    buffers = manager.get(BUFFERS, op)
    manager.get(SCHEDULE, op)
    return plan_memory_spaces(buffers, SchedulePlan(()), meter=meter)


WRITERLESS_MEMORY = AnalysisDescriptor(
    name="test-memory-without-writers",
    version=1,
    compute=_memory_without_writers,
    estimate=MEMORY.estimate,
)


@pytest.mark.parametrize("count", [1, 6, 64])
def test_a_failing_analysis_marks_the_outcome_rejected(count: int):
    module = boundary(count, True)
    budget = Budget(structural_visits=2 * total_charge(module))
    manager = AnalysisManager(budget)
    with pytest.raises(MissingOutputWriter) as caught:
        manager.get(WRITERLESS_MEMORY, module)
    assert budget.outcome is Outcome.REJECTED
    assert manager.record(WRITERLESS_MEMORY.name, module) is None
    assert set(manager.cached_names()) == {
        SHAPES.name,
        FUSION.name,
        SCHEDULE.name,
        BUFFERS.name,
    }
    assert caught.value.message.startswith("function @memory_boundary result #")
    # The outcome stays rejected even when later work is admitted.
    manager.get(MEMORY, module)
    assert budget.outcome is Outcome.REJECTED


def test_a_rejected_outcome_stays_rejected_when_later_work_is_refused():
    module = boundary(1, True)
    budget = Budget(structural_visits=total_charge(module))
    manager = AnalysisManager(budget)
    with pytest.raises(MissingOutputWriter):
        manager.get(WRITERLESS_MEMORY, module)
    assert budget.outcome is Outcome.REJECTED
    with pytest.raises(WorkBudgetExhausted):
        manager.get(MEMORY, module)
    assert budget.outcome is Outcome.REJECTED


def test_an_analysis_that_fails_without_writers_is_not_refused_for_want_of_budget():
    """Without writers the aliased boundary plans fine: nothing to reject."""
    module = boundary(6, False)
    manager = AnalysisManager()
    plan = manager.get(WRITERLESS_MEMORY, module)
    assert plan.assignment_count() == 6
    assert manager.budget.outcome is Outcome.RUNNING


# Overflow -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "descriptor,census",
    [
        (SHAPES, Census(operations=U64_MAX, values=1)),
        (SHAPES, Census(operations=1, values=U64_MAX)),
        (FUSION, Census(operations=U64_MAX)),
        (SCHEDULE, Census(operations=U64_MAX)),
        (BUFFERS, Census(operations=U64_MAX)),
        (BUFFERS, Census(values=U64_MAX)),
        (MEMORY, Census(values=U64_MAX)),
        (MEMORY, Census(operations=U64_MAX, values=1)),
        (MEMORY, Census(operations=1, symbol_bytes=U64_MAX)),
    ],
    ids=lambda v: getattr(v, "name", None),
)
def test_estimates_past_u64_raise_work_overflow(descriptor, census):
    with pytest.raises(WorkOverflow):
        estimate(descriptor, census)


@pytest.mark.parametrize("descriptor", DESCRIPTORS, ids=lambda d: d.name)
def test_estimates_just_below_the_limit_do_not_overflow(descriptor):
    bounds = estimate(descriptor, Census(operations=2**40, values=2**40, symbol_bytes=2**40))
    assert bounds.structural_visits <= U64_MAX
    assert bounds.retained_entries <= U64_MAX


def test_an_overflowing_estimate_refuses_nothing_silently():
    """A manager asked for an analysis whose estimate overflows raises WorkOverflow and
    caches nothing."""
    module = boundary(1, True)
    manager = AnalysisManager()
    manager._census[module] = replace(Census.of(module), values=U64_MAX)
    with pytest.raises(WorkOverflow):
        manager.get(MEMORY, module)
    assert manager.cached_names() == []
    assert manager.budget.spent_visits == 0


# accy-opt --accy-max-work ---------------------------------------------------------------


def run_opt(path: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(ACCY_OPT), str(path), "-p", "accy-plan-memory-spaces", *args],
        capture_output=True,
        check=False,
        text=True,
        timeout=120,
    )


def test_accy_opt_max_work_refuses_with_one_line(tmp_path: Path):
    module = boundary(7, True)
    source = tmp_path / "boundary.mlir"
    source.write_text(str(module))
    charge = total_charge(accy.parse(str(module)))

    refused = run_opt(source, f"--accy-max-work={charge - 1}")
    assert refused.returncode == 1
    assert refused.stdout == ""
    lines = refused.stderr.splitlines()
    assert len(lines) == 1, refused.stderr
    assert lines[0].startswith("error: work budget exhausted: analysis '")
    assert "Traceback" not in refused.stderr

    for allowance in (charge, charge + 1):
        admitted = run_opt(source, f"--accy-max-work={allowance}")
        assert admitted.returncode == 0, admitted.stderr
        assert "accy.memory" in admitted.stdout
        assert admitted.stderr == ""


def test_accy_opt_max_work_zero_refuses_the_first_analysis(tmp_path: Path):
    source = tmp_path / "empty.mlir"
    source.write_text(str(boundary(0, False)))
    refused = run_opt(source, "--accy-max-work=0")
    assert refused.returncode == 1
    needs = estimate(MEMORY, Census.of(accy.parse(source.read_text()))).structural_visits
    assert len(refused.stderr.splitlines()) == 1
    assert refused.stderr.startswith(
        "error: work budget exhausted: analysis 'accy-memory-space-plan' needs "
        f"{needs} structural visits but only 0 remain"
    )
