"""Properties of the preparation plans on random programs built with `accy.Builder`.

A program is a random DAG over four tensor types (4x3, 12, 3 and a scalar) of
elementwise ops, broadcasts, reshapes, reductions and constants, returning a random
(possibly repeating) selection of its values, parameters and constants included.

Properties checked on `accy.prepare`:
- every returned value's slot is an output with exactly one output source (KernelWritten
  by an item that writes that slot, or Aliased to its own input/constant slot); no other
  slot has one;
- total_static_bytes == the sum of static slot sizes == the buffer plan's;
- elided values never get slots or assignments;
- work item ids are 0..n-1 and each item reads only parameters, constants and outputs of
  earlier items (a topological order).
"""

from __future__ import annotations

from dataclasses import dataclass

from accy.dialects import accy as ops
from accy.passes.memory import Aliased, KernelWritten, written_slots
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from xdsl.dialects import func
from xdsl.ir import BlockArgument, SSAValue

import accy

TYPES = {
    "A": ("f32", [4, 3]),
    "B": ("f32", [12]),
    "C": ("f32", [3]),
    "S": ("f32", []),
}


@dataclass(frozen=True)
class Step:
    kind: str
    type: str
    operands: tuple[int, ...]  # indices into the pool of values of the right type


def _steps() -> st.SearchStrategy[Step]:
    index = st.integers(0, 10_000)
    return st.one_of(
        st.builds(
            Step,
            st.just("binary"),
            st.sampled_from("ABCS"),
            st.tuples(index, index, st.integers(0, 4)),
        ),
        st.builds(
            Step, st.just("unary"), st.sampled_from("ABCS"), st.tuples(index, st.integers(0, 2))
        ),
        st.builds(Step, st.just("constant"), st.sampled_from("ABCS"), st.tuples()),
        st.builds(
            Step,
            st.just("broadcast"),
            st.sampled_from(["C>A", "S>A", "S>B", "S>C"]),
            st.tuples(index),
        ),
        st.builds(
            Step, st.just("reshape"), st.sampled_from(["A>B", "B>A", "C>C"]), st.tuples(index)
        ),
        st.builds(
            Step,
            st.just("reduce"),
            st.sampled_from(["A>C", "B>S", "C>S"]),
            st.tuples(index, st.integers(0, 1)),
        ),
        st.builds(Step, st.just("select"), st.sampled_from("ABC"), st.tuples(index, index, index)),
    )


@dataclass
class Program:
    module: ops.Operation
    returned: list[SSAValue]


@st.composite
def programs(draw) -> Program:
    params = draw(st.lists(st.sampled_from("ABCS"), min_size=1, max_size=4))
    steps = draw(st.lists(_steps(), min_size=0, max_size=14))
    b = accy.Builder()
    types = {k: b.tensor(*v) for k, v in TYPES.items()}
    picks = draw(st.lists(st.integers(0, 10_000), min_size=1, max_size=5))
    # The result types are known only after building; build into a draft first.
    pool: dict[str, list[SSAValue]] = {k: [] for k in TYPES}
    order: list[SSAValue] = []

    def build(fb) -> None:
        for i, name in enumerate(params):
            pool[name].append(fb.parameter(i))
            order.append(fb.parameter(i))
        for step in steps:
            value = _apply(fb, step, pool, types)
            if value is not None:
                pool[_type_name(value, types)].append(value)
                order.append(value)

    # Draft: discover the values, then pick the returned ones and rebuild for real.
    draft = accy.Builder()
    dfb = draft.begin_function("draft", [types[p] for p in params], [])
    build(dfb)
    chosen = [order[p % len(order)] for p in picks]
    positions = [order.index(v) for v in chosen]
    result_types = [v.type for v in chosen]

    pool = {k: [] for k in TYPES}
    order = []
    fb = b.begin_function("random", [types[p] for p in params], result_types)
    build(fb)
    returned = [order[i] for i in positions]
    fb.return_(returned)
    fb.finish()
    return Program(b.finish(), returned)


def _type_name(value: SSAValue, types) -> str:
    return next(k for k, t in types.items() if t == value.type)


def _apply(fb, step: Step, pool, types) -> SSAValue | None:
    def pick(name: str, index: int) -> SSAValue | None:
        values = pool[name]
        return values[index % len(values)] if values else None

    if step.kind == "binary":
        lhs, rhs = pick(step.type, step.operands[0]), pick(step.type, step.operands[1])
        if lhs is None:
            return None
        op = (fb.add, fb.multiply, fb.subtract, fb.maximum, fb.minimum)[step.operands[2]]
        return op(lhs, rhs)
    if step.kind == "unary":
        x = pick(step.type, step.operands[0])
        if x is None:
            return None
        return (fb.negate, fb.exponential, fb.tanh)[step.operands[1]](x)
    if step.kind == "constant":
        return fb.constant(types[step.type], 1.5)
    if step.kind == "select":
        a, b_, c = (pick(step.type, i) for i in step.operands)
        if a is None:
            return None
        return fb.select(fb.compare("GT", a, b_), b_, c)
    source, target = step.type.split(">")
    x = pick(source, step.operands[0])
    if x is None:
        return None
    if step.kind == "broadcast":
        dims = [1] if source == "C" else []
        return fb.broadcast_in_dim(x, types[target], dims)
    if step.kind == "reshape":
        return fb.reshape(x, types[target])
    if step.kind == "reduce":
        kind = ("add", "max")[step.operands[1]]
        return fb.reduce(kind, x, [0])
    raise AssertionError(step.kind)


def _is_parameter_or_constant(value: SSAValue) -> bool:
    if isinstance(value, BlockArgument):
        return isinstance(value.block.parent_op(), func.FuncOp)
    return isinstance(value.owner, ops.ConstantOp)


@settings(
    max_examples=50,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(programs())
def test_plans_of_random_programs(program: Program):
    prep = accy.prepare(program.module)
    buffers, memory, schedule, fusion = prep.buffers, prep.memory, prep.schedule, prep.fusion

    # One assignment per slot, in slot order.
    assert [a.slot_id for a in memory.assignments] == list(range(buffers.slot_count()))
    assert [s.id for s in buffers.slots] == list(range(buffers.slot_count()))

    # Returned values: an output slot with exactly one source.
    returned_slots = set()
    for value in program.returned:
        slot = buffers.get_slot(value)
        assert slot is not None
        assert slot.role.output
        returned_slots.add(slot.id)
        source = memory.assignment_for_slot(slot.id).output_source
        assert isinstance(source, (KernelWritten, Aliased))
        writers = [w.id for w in schedule.work_items if slot.id in written_slots(w, buffers)]
        if isinstance(source, KernelWritten):
            assert writers and source.work_item == writers[0]
        else:
            assert not writers
            assert source == Aliased(slot.id)
            assert slot.role.input or slot.role.constant
    for assignment in memory.assignments:
        has_source = assignment.output_source is not None
        assert has_source == (assignment.slot_id in returned_slots)
        assert assignment.role.output == (assignment.slot_id in returned_slots)

    # Bytes.
    static = sum(s.byte_size for s in buffers.slots if s.byte_size is not None)
    assert memory.total_static_bytes == static == buffers.total_static_bytes
    assert memory.dynamic_slot_count == 0

    # Elided values never get storage.
    assert memory.elided_value_count == len(fusion.elided_values) == buffers.elision_count()
    for value in fusion.elided_values:
        assert buffers.get_slot(value) is None
        assert memory.assignment_for_value(value) is None
        assert value not in program.returned

    # Work items: ids 0..n-1, in a topological order.
    assert [w.id for w in schedule.work_items] == list(range(schedule.work_item_count()))
    produced_by: dict[SSAValue, int] = {}
    for item in schedule.work_items:
        for value in item.inputs:
            assert _is_parameter_or_constant(value) or produced_by.get(value, item.id) < item.id, (
                f"work item {item.id} reads {value} before it is produced"
            )
        for value in item.outputs:
            produced_by[value] = item.id
    # Every live computing op is in exactly one work item; dead ops have no slot.
    members = [m for w in schedule.work_items for m in w.members]
    assert len(members) == len(set(members))
    computing = [
        op
        for op in program.module.walk()
        if op.dialect_name() == "accy"
        and not isinstance(op, ops.ConstantOp)
        and not fusion.is_dead(op)
    ]
    assert set(members) == set(computing)
    for op in program.module.walk():
        if fusion.is_dead(op):
            assert all(buffers.get_slot(r) is None for r in op.results)
            assert not any(r in program.returned for r in op.results)
