"""The packing's work, and its charge to the work budget of the arena plan.

- ``PackResult.work`` is the greedy packers' visits plus the node and iteration caps of the
  searches that ran, never more than ``pack.max_work`` of the same arguments (which does not
  depend on the buffers);
- the arena plan's estimate covers two packings per function at ``max_work``, its meter
  counts what each packing reports, and a work budget too small for the packing refuses the
  plan before anything is packed; a longer ``pack_budget_ms`` needs more budget.
"""

from __future__ import annotations

import importlib

import pytest
from accy.passes.analysis import Budget, Census, Outcome, WorkBudgetExhausted
from accy.passes.arena import BufferInterval, check_placement, pack
from accy.passes.arena.placer import placement_work
from accy.passes.arena_plan import ARENA, PACKINGS_PER_FUNCTION, PLACEMENT_VISITS, packing_work
from accy.passes.options import PlanOptions
from hypothesis import given, settings
from hypothesis import strategies as st
from xdsl.dialects.builtin import ModuleOp

import accy

pack_module = importlib.import_module("accy.passes.arena.pack")  # the function shadows it
arena_plan = importlib.import_module("accy.passes.arena_plan")
GREEDY_MISSES = [  # every greedy packer needs 700 bytes; the lower bound 600 is reachable
    BufferInterval(0, 0, 5, 200),
    BufferInterval(1, 0, 1, 100),
    BufferInterval(2, 0, 1, 300),
    BufferInterval(3, 2, 5, 200),
    BufferInterval(4, 2, 5, 200),
]


@st.composite
def problems(draw: st.DrawFn) -> list[BufferInterval]:
    count = draw(st.integers(0, 20))
    result = []
    for ident in range(count):
        start = draw(st.integers(0, 12))
        length = draw(st.integers(0, 6))
        size = draw(st.sampled_from([0, 1, 64, 100, 256, 700, 2000]))
        result.append(BufferInterval(ident, start, start + length, size))
    return result


caps = st.one_of(st.none(), st.integers(0, 200))


@settings(max_examples=60, deadline=None)
@given(
    problems(),
    st.sampled_from([1, 64, 256]),
    st.sampled_from([0.0, 1.0, 20.0, 150.0]),
    st.integers(0, 50),
    caps,
    caps,
    caps,
    caps,
    st.one_of(st.none(), st.integers(0, 3000)),
)
def test_the_work_of_pack_is_within_max_work(
    intervals, alignment, budget_ms, max_iterations, search, tiling, sweeps, windows, capacity
) -> None:
    options = {
        "budget_ms": budget_ms,
        "max_iterations": max_iterations,
        "search_nodes": search,
        "tiling_nodes": tiling,
        "sweep_nodes": sweeps,
        "windows_nodes": windows,
        "capacity": capacity,
    }
    result = pack(intervals, alignment=alignment, **options)
    check_placement(intervals, result.placement, alignment)
    assert result.work >= 3 * placement_work(intervals)  # every greedy packer ran
    assert result.work <= pack_module.max_work(**options)


def test_work_counts_the_greedy_visits_and_the_caps_of_the_stages_that_ran() -> None:
    assert pack([]).work == 0
    # Reaching the lower bound greedily: three packers' visits, no search, no improvement.
    alone = [BufferInterval(0, 0, 3, 256), BufferInterval(1, 4, 6, 512)]
    assert pack(alone).work == 3 * placement_work(alone)
    # Above it: the search stages' caps and the iteration cap come on top.
    options = {"budget_ms": 60_000, "max_iterations": 7}
    nodes = {"search_nodes": 11, "tiling_nodes": 13, "sweep_nodes": 17, "windows_nodes": 19}
    result = pack(GREEDY_MISSES, alignment=1, **options, **nodes)
    assert result.placement.size == 600
    greedy = 3 * placement_work(GREEDY_MISSES)
    # Full at its bound: the tiling comes first, and places (no sweeps, bisection, windows).
    assert result.placement.packer == "tiling"
    assert result.work == greedy + 13
    # A capacity fit costs its nodes: the skyline places within 650 bytes, at 600.
    fitted = pack(GREEDY_MISSES, alignment=1, capacity=650, **options, **nodes)
    assert fitted.placement.packer == "search" and fitted.work == greedy + 11
    assert result.work <= pack_module.max_work(**options, **nodes)
    assert fitted.work <= pack_module.max_work(capacity=650, **options, **nodes)


def test_max_work_grows_with_the_budget_and_the_workers() -> None:
    works = [pack_module.max_work(budget_ms) for budget_ms in (0, 20, 100, 1000, 10_000)]
    assert works == sorted(works) and len(set(works)) == len(works)
    # Even without a budget the greedy packers' floor (MIN_GREEDY_MS) and the iterations.
    assert works[0] == int(pack_module.MIN_GREEDY_MS * pack_module.GREEDY_WORK_PER_MS) + (
        pack_module.DEFAULT_MAX_ITERATIONS
    )
    # Sweeps in 4 processes get 4 times the nodes (here where the sweeps' share dominates).
    sweeps = pack_module.max_work(10_000, search_nodes=0, workers=4)
    assert sweeps > pack_module.max_work(10_000, search_nodes=0)


# The arena plan ---------------------------------------------------------------------------


def softmax(rows: int) -> ModuleOp:
    b = accy.Builder()
    t = b.tensor("f32", [rows, 8])
    fb = b.begin_function("softmax", [t], [t])
    e = fb.exponential(fb.subtract(fb.parameter(0), fb.constant(t, 0.5)))
    s = fb.reduce("add", fb.exponential(fb.parameter(0)), [1])
    fb.return_([fb.divide(e, fb.broadcast_in_dim(s, t, [0]))])
    fb.finish()
    return b.finish()


def test_the_arena_estimate_covers_the_packings_and_placements_per_function() -> None:
    census = Census(operations=10, values=30)
    for budget_ms in (0.0, 20.0, 500.0):
        options = PlanOptions(pack_budget_ms=budget_ms)
        bounds = ARENA.estimate(census, options)
        packings = PACKINGS_PER_FUNCTION * census.operations * packing_work(options)
        placements = census.values * PLACEMENT_VISITS  # temporaries in out-parameters
        assert bounds.structural_visits == 2 * census.values + packings + placements
        assert packing_work(options) == pack_module.max_work(budget_ms)
    assert packing_work(PlanOptions(pack_budget_ms=2000, pack_workers=2)) == (
        pack_module.max_work(2000, workers=2)
    )


def test_the_arena_meter_counts_the_work_each_packing_reports(monkeypatch) -> None:
    works: list[int] = []

    def spy(*args, **kwargs):
        result = pack(*args, **kwargs)
        works.append(result.work)
        return result

    monkeypatch.setattr(arena_plan, "pack", spy)
    module = softmax(7)
    prep = accy.prepare(module)
    record = prep.manager.record(ARENA.name, module)
    assert record is not None
    assert len(works) == PACKINGS_PER_FUNCTION * len(prep.arena.functions)
    assert sum(works) > 0
    assert sum(works) <= record.meter.structural_visits <= record.bounds.structural_visits


def _charges(module: ModuleOp, **options) -> tuple[int, int, int]:
    """What `accy.prepare` charges before the arena plan, the arena plan's charge and the
    total (the liveness it asks for, and later analyses, come after it)."""
    budget = accy.prepare(module, **options).budget
    names = [name for name, _ in budget.charges]
    at = names.index(ARENA.name)
    before = sum(visits for _, visits in budget.charges[:at])
    return before, budget.charges[at][1], budget.spent_visits


def test_a_budget_short_of_the_packing_refuses_the_arena_plan(monkeypatch) -> None:
    module = softmax(7)
    before, charge, total = _charges(module)
    census = Census.of(module)
    assert charge >= PACKINGS_PER_FUNCTION * packing_work(PlanOptions())
    packed: list[object] = []

    def spy(*args, **kwargs):
        packed.append(args)
        return pack(*args, **kwargs)

    monkeypatch.setattr(arena_plan, "pack", spy)
    # Enough for every analysis before it and for the plan's own visits, not the packing.
    for allowance in (before + 2 * census.values, before + charge - 1):
        budget = Budget(structural_visits=allowance)
        with pytest.raises(WorkBudgetExhausted) as refused:
            accy.prepare(module, budget=budget)
        assert refused.value.analysis == ARENA.name and refused.value.charge == charge
        assert budget.outcome is Outcome.EXHAUSTED and packed == []
    budget = Budget(structural_visits=total)
    accy.prepare(module, budget=budget)
    assert budget.outcome is Outcome.RUNNING and packed


def test_a_longer_packing_budget_needs_more_work_budget() -> None:
    module = softmax(7)
    _, charge, total = _charges(module)
    budget = Budget(structural_visits=total)
    with pytest.raises(WorkBudgetExhausted) as refused:
        accy.prepare(module, budget=budget, pack_budget_ms=2000)
    assert refused.value.analysis == ARENA.name and refused.value.charge > charge
