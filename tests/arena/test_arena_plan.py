"""Liveness and the arena plan on hand-written and random programs.

- liveness: inputs from the function's first work item, outputs to its last; an
  `accy.iterate` keeps its carried buffers and yielded values live over the loop, and a
  value read inside a loop but written before it until the loop ends;
- the arena: with `check_arena=True` the placement is validated by the planner itself, and
  here again independently (no two buffers live at a common item overlap; offsets
  aligned; `temporaries_size <= size`, `lower_bound <= size`);
- in-place reuse: an elementwise item's output takes a dying temporary input of the same
  byte size when the path from it is pointwise — not across a size change (i1 → f32), not
  through a broadcast (a broadcast bias beside it is fine), not a function input, not
  inside (or out of) a loop;
- dynamic slots: separate allocations without `rows`, planned at the largest row count
  with them.
"""

from __future__ import annotations

import importlib.util
import itertools
import sys
from pathlib import Path

import numpy as np
import pytest
from accy.passes.arena import align_up
from accy.passes.arena_plan import planned_bytes
from accy.passes.buffers import value_names
from accy.passes.liveness import LIVENESS, LiveInterval
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from xdsl.dialects import func
from xdsl.ir import SSAValue

import accy
from accy.reference import run


def _load_generator():
    """The random-program strategy of tests/preparation/test_plan_properties.py (loaded by
    path: the test folders are not packages)."""
    path = Path(__file__).parents[1] / "preparation" / "test_plan_properties.py"
    spec = importlib.util.spec_from_file_location("_plan_properties_programs", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while it runs
    spec.loader.exec_module(module)
    return module.programs


programs = _load_generator()

TARGET = "cuda"
"""The target these plans are for: a device arena holding every buffer, 256-byte aligned."""


class Planned:
    """A prepared module, with slots looked up by the printed value names (`@f %x`)."""

    def __init__(self, module, **options):
        self.prep = accy.prepare(module, target=TARGET, **options)
        self.names: dict[tuple[str, str], SSAValue] = {}
        for op in module.walk():
            if isinstance(op, func.FuncOp):
                for value, name in value_names(op).items():
                    self.names[op.sym_name.data, name] = value

    def slot(self, function: str, name: str) -> int:
        slot = self.prep.buffers.get_slot(self.names[function, name])
        assert slot is not None, f"@{function} %{name} has no slot"
        return slot.id

    def live(self, function: str, name: str) -> tuple[int, int]:
        interval = self.prep.arena.intervals[self.slot(function, name)]
        return interval.start, interval.end

    def where(self, function: str, name: str) -> str:
        return self.prep.arena.describe_slot(self.slot(function, name))

    def reuses(self, function: str) -> dict[int, int]:
        return self.prep.arena.functions[function].reuses


def planned(text: str, **options) -> Planned:
    return Planned(accy.parse(text), **options)


# Liveness -----------------------------------------------------------------------------------

PACKING = """
func.func @packing(%a: tensor<4x3xf32>) -> tensor<3xf32> {
  %0 = accy.reduce add %a, dims = [1] : (tensor<4x3xf32>) -> tensor<4xf32>
  %1 = accy.reduce max %0, dims = [0] : (tensor<4xf32>) -> tensor<f32>
  %2 = accy.reduce add %a, dims = [0] : (tensor<4x3xf32>) -> tensor<3xf32>
  %b = accy.broadcast_in_dim %1, dims = [] : (tensor<f32>) -> tensor<3xf32>
  %3 = accy.add %2, %b : tensor<3xf32>
  func.return %3 : tensor<3xf32>
}
func.func @second(%x: tensor<4xf32>, %unused: tensor<4xf32>) -> (tensor<f32>, tensor<4xf32>) {
  %s = accy.reduce add %x, dims = [0] : (tensor<4xf32>) -> tensor<f32>
  %t = accy.reduce max %x, dims = [0] : (tensor<4xf32>) -> tensor<f32>
  %b = accy.broadcast_in_dim %t, dims = [] : (tensor<f32>) -> tensor<4xf32>
  %u = accy.add %b, %x : tensor<4xf32>
  func.return %s, %u : tensor<f32>, tensor<4xf32>
}
func.func @empty(%x: tensor<4xf32>) -> tensor<4xf32> {
  func.return %x : tensor<4xf32>
}
"""


def test_liveness_of_straight_line_functions():
    p = planned(PACKING)
    # @packing runs items 0..3: the input from 0 to its last read (2), temporaries from
    # their writer to their last reader, the output from its writer to the end.
    assert p.live("packing", "a") == (0, 2)
    assert p.live("packing", "0") == (0, 1)
    assert p.live("packing", "1") == (1, 3)
    assert p.live("packing", "2") == (2, 3)
    assert p.live("packing", "3") == (3, 3)
    # @second runs items 4..6: inputs start at its first item, even unused ones; an
    # output written at item 4 stays live to the function's last item.
    assert p.live("second", "x") == (4, 6)
    assert p.live("second", "unused") == (4, 4)
    assert p.live("second", "s") == (4, 6)
    assert p.live("second", "u") == (6, 6)
    liveness = p.prep.manager.get(LIVENESS, p.prep.module)
    assert liveness.function_range["packing"] == LiveInterval(0, 3)
    assert liveness.function_range["second"] == LiveInterval(4, 6)
    # A function without work items has the single time after every item.
    assert liveness.function_range["empty"] == LiveInterval(7, 7)
    assert p.live("empty", "x") == (7, 7)


LOOP = """
func.func @loop(%x: tensor<3xf32>, %y: tensor<4x3xf32>) -> tensor<3xf32> {
  %o = accy.reduce add %y, dims = [0] : (tensor<4x3xf32>) -> tensor<3xf32>
  %u = accy.reduce max %y, dims = [0] : (tensor<4x3xf32>) -> tensor<3xf32>
  %r = accy.iterate 4 iter_args(%p = %x) : tensor<3xf32> {
    %t = accy.add %p, %o : tensor<3xf32>
    %s = accy.reduce add %t, dims = [0] : (tensor<3xf32>) -> tensor<f32>
    %b = accy.broadcast_in_dim %s, dims = [] : (tensor<f32>) -> tensor<3xf32>
    %v = accy.multiply %b, %t : tensor<3xf32>
    accy.yield %v : tensor<3xf32>
  }
  %z = accy.add %r, %u : tensor<3xf32>
  func.return %z : tensor<3xf32>
}
"""


def test_liveness_over_a_loop():
    # Items: 0 %o, 1 %u, 2 the loop, 3..5 its body (%t, %s, %v), 6 %z.
    p = planned(LOOP)
    assert [w.parent for w in p.prep.schedule.work_items] == [None, None, None, 2, 2, 2, None]
    assert p.live("loop", "x") == (0, 2)  # the init is copied in at the loop item
    assert p.live("loop", "o") == (0, 5)  # read in the body: live until the loop ends
    assert p.live("loop", "u") == (1, 6)
    assert p.live("loop", "r") == (2, 6)  # the carried buffer: the whole loop and after
    assert p.live("loop", "t") == (3, 5)
    assert p.live("loop", "s") == (4, 5)
    assert p.live("loop", "v") == (5, 5)  # yielded: live to the loop's last item
    assert p.live("loop", "z") == (6, 6)


NESTED = """
func.func @nested(%x: tensor<3xf32>, %y: tensor<4x3xf32>) -> tensor<3xf32> {
  %o = accy.reduce add %y, dims = [0] : (tensor<4x3xf32>) -> tensor<3xf32>
  %r = accy.iterate 2 iter_args(%p = %x) : tensor<3xf32> {
    %q = accy.iterate 3 iter_args(%i = %p) : tensor<3xf32> {
      %t = accy.add %i, %o : tensor<3xf32>
      %s = accy.reduce add %t, dims = [0] : (tensor<3xf32>) -> tensor<f32>
      %b = accy.broadcast_in_dim %s, dims = [] : (tensor<f32>) -> tensor<3xf32>
      %w = accy.multiply %b, %i : tensor<3xf32>
      accy.yield %w : tensor<3xf32>
    }
    %m = accy.reduce max %y, dims = [0] : (tensor<4x3xf32>) -> tensor<3xf32>
    %v = accy.add %q, %m : tensor<3xf32>
    accy.yield %v : tensor<3xf32>
  }
  func.return %r : tensor<3xf32>
}
"""


def test_liveness_over_nested_loops():
    # Items: 0 %o, 1 outer loop, 2 inner loop, 3 %s (with %t fused in), 4 %w, 5 %m, 6 %v.
    p = planned(NESTED)
    assert [w.parent for w in p.prep.schedule.work_items] == [None, None, 1, 2, 2, 1, 1]
    assert p.live("nested", "x") == (0, 1)
    assert p.live("nested", "o") == (0, 6)  # read in the inner body: live to the OUTER end
    assert p.live("nested", "y") == (0, 6)  # read by %m in the outer body
    assert p.live("nested", "r") == (1, 6)  # outer carried
    assert p.live("nested", "q") == (2, 6)  # inner carried, read by %v in the outer body
    assert p.live("nested", "s") == (3, 4)  # written and read in the same body
    assert p.live("nested", "w") == (4, 4)  # yielded at the inner loop's last item
    assert p.live("nested", "m") == (5, 6)
    assert p.live("nested", "v") == (6, 6)


# The arena ----------------------------------------------------------------------------------


def buffer_roots(reuses: dict[int, int]) -> dict[int, int]:
    def root(slot: int) -> int:
        while slot in reuses:
            slot = reuses[slot]
        return slot

    return {slot: root(slot) for slot in reuses}


def check_independently(prep, alignment: int) -> None:
    """No two distinct buffers live at a common item overlap; offsets aligned; sizes."""
    arena, buffers = prep.arena, prep.buffers
    rows = arena.planned_rows
    for name, function in arena.functions.items():
        roots = buffer_roots(function.reuses)
        extents = []
        for slot_id, offset in function.offsets.items():
            assert offset % alignment == 0
            size = align_up(planned_bytes(buffers.slots[slot_id], rows), alignment)
            assert offset + size <= function.size
            extents.append((roots.get(slot_id, slot_id), arena.intervals[slot_id], offset, size))
        for w in function.workspaces:
            assert w.offset % alignment == 0
            size = align_up(w.term.bytes, alignment)
            assert w.offset + size <= function.size
            extents.append((("workspace", w.term.family, w.term.name), w.interval, w.offset, size))
        for i, (a, live_a, off_a, size_a) in enumerate(extents):
            for b, live_b, off_b, size_b in extents[i + 1 :]:
                if a == b or size_a == 0 or size_b == 0:
                    continue
                if live_a.start <= live_b.end and live_b.start <= live_a.end:
                    assert off_a + size_a <= off_b or off_b + size_b <= off_a, (name, a, b)
        assert function.lower_bound <= function.size
        assert function.temporaries_size <= function.size
        groups: dict[int, list[int]] = {}
        for slot_id, root in roots.items():
            groups.setdefault(root, [root]).append(slot_id)
        for members in groups.values():
            # One buffer, handed on in place: each holder dies where the next is written.
            assert len({function.offsets[s] for s in members}) == 1
            lives = sorted((arena.intervals[s].start, arena.intervals[s].end) for s in members)
            for (_, end), (start, _) in itertools.pairwise(lives):
                assert end == start, (name, members, lives)
    assert arena.temporaries_size <= arena.size
    assert arena.lower_bound <= arena.size


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(programs(), st.sampled_from([256, 64, 16, 1024]))
def test_arena_of_random_programs_checks(program, alignment):
    prep = accy.prepare(
        program.module, check_arena=True, alignment=alignment, pack_budget_ms=2, target=TARGET
    )
    check_independently(prep, alignment)
    # Every slot is somewhere: a function arena or the constant arena.
    for slot in prep.buffers.slots:
        prep.arena.describe_slot(slot.id)


@pytest.mark.parametrize("text", [PACKING, LOOP, NESTED])
@pytest.mark.parametrize("alignment", [256, 64])
def test_arena_of_hand_written_programs_checks(text, alignment):
    prep = accy.prepare(accy.parse(text), check_arena=True, alignment=alignment, target=TARGET)
    check_independently(prep, alignment)


def test_packing_offsets_and_sizes():
    p = planned(PACKING)
    arena = p.prep.arena.functions["packing"]
    # Five 256-byte buffers, at most three live at once: 768 bytes.
    assert arena.size == arena.lower_bound == 768
    # %0 (live [0, 1]) and %2 (live [2, 3]) share bytes; %3 takes %2's buffer in place
    # (the broadcast in its item only carries the %1 bias).
    assert p.prep.arena.offset_of(p.slot("packing", "0")) == p.prep.arena.offset_of(
        p.slot("packing", "2")
    )
    assert arena.reuses == {p.slot("packing", "3"): p.slot("packing", "2")}
    assert p.where("packing", "3").endswith(f"live [3, 3] reuses slot {p.slot('packing', '2')}")
    # Temporaries: %0 / %2 (/ %3, but that buffer is an output's) and %1.
    assert arena.temporaries_size <= arena.size
    assert p.prep.arena.size == sum(f.size for f in p.prep.arena.functions.values())


@pytest.mark.parametrize("alignment", [256, 64, 512])
def test_offsets_are_aligned(alignment):
    p = planned(PACKING, alignment=alignment)
    arena = p.prep.arena.functions["packing"]
    assert arena.offsets and all(o % alignment == 0 for o in arena.offsets.values())
    # Every buffer here is at most 48 bytes: each takes one alignment unit, three live.
    assert arena.size == 3 * alignment


def test_constants_go_to_the_constant_arena():
    p = planned(
        """
        func.func @c(%a: tensor<3xf32>) -> tensor<3xf32> {
          %k = accy.constant dense<1.0> : tensor<3xf32>
          %j = accy.constant dense<2.0> : tensor<3xf32>
          %s = accy.add %a, %k : tensor<3xf32>
          %t = accy.multiply %s, %j : tensor<3xf32>
          func.return %t : tensor<3xf32>
        }
        """,
        alignment=128,
    )
    assert p.where("c", "k") == "constant offset 0"
    assert p.where("c", "j") == "constant offset 128"
    assert p.prep.arena.constant_size == 256
    assert p.prep.arena.offset_of(p.slot("c", "k")) is None


# In-place reuse -----------------------------------------------------------------------------


def build(params, results, body, donated=()):
    b = accy.Builder()
    fb = b.begin_function(
        "f", [b.tensor(*t) for t in params], [b.tensor(*t) for t in results], donated=donated
    )
    fb.return_(list(body(fb, *[fb.parameter(i) for i in range(len(params))])))
    fb.finish()
    return b.finish()


def reuse_pairs(module, **options) -> tuple[dict[int, int], object]:
    prep = accy.prepare(module, check_arena=True, target=TARGET, **options)
    return prep.arena.functions["f"].reuses, prep


def test_in_place_pointwise():
    # Item 0 reduces into a 12-byte temporary; item 1 (negate + exponential, fused) writes
    # a 12-byte output reading only that temporary, which dies there.
    def body(fb, a):
        r = fb.reduce("add", a, [0])
        return [fb.exponential(fb.negate(r))]

    reuses, prep = reuse_pairs(build([("f32", [4, 3])], [("f32", [3])], body))
    r_slot, out_slot = 1, 2
    assert reuses == {out_slot: r_slot}
    assert prep.arena.describe_slot(out_slot) == "offset 0 live [1, 1] reuses slot 1"
    assert prep.arena.functions["f"].offsets[out_slot] == prep.arena.functions["f"].offsets[r_slot]


def test_in_place_chains_share_one_buffer():
    def body(fb, a):
        r = fb.reduce("add", a, [0])
        n = fb.negate(r)  # item 1: reuses r
        m = fb.reduce("max", fb.broadcast_in_dim(n, fb.owner.tensor("f32", [2, 3]), [1]), [0])
        e = fb.exponential(n)  # item 3: n dies here, e reuses n (and so r)
        return [e, m]

    reuses, prep = reuse_pairs(build([("f32", [4, 3])], [("f32", [3]), ("f32", [3])], body))
    arena = prep.arena.functions["f"]
    assert len(reuses) == 2
    roots = buffer_roots(reuses)
    assert len(set(roots.values())) == 1
    assert len({arena.offsets[s] for s in [*reuses, *reuses.values()]}) == 1


def test_same_width_convert_reuses_but_i1_to_f32_does_not():
    def converting(source: str, target: str):
        def body(fb, a):
            if source == "i1":
                r = fb.reduce("max", fb.compare("GT", a, a), [0])  # a 3-byte i1 temporary
            else:
                r = fb.reduce("add", a, [0])
            return [fb.convert(r, target)]

        return build([("f32", [4, 3])], [(target, [3])], body)

    assert reuse_pairs(converting("f32", "i32"))[0] == {2: 1}  # 12 bytes → 12 bytes
    reuses, prep = reuse_pairs(converting("i1", "f32"))  # 3 bytes → 12 bytes
    assert reuses == {}
    assert prep.arena.intervals[1].end == prep.arena.intervals[2].start  # it did die there
    assert reuse_pairs(converting("f32", "i1"))[0] == {}  # 12 bytes → 3 bytes


def test_in_place_beside_a_broadcast_bias():
    # The item reads %r (12 bytes, dying) directly and a broadcast scalar as a bias:
    # element i of the output reads only element i of %r.
    def body(fb, a):
        r = fb.reduce("add", a, [0])
        s = fb.reduce("max", a, [0, 1])
        return [fb.add(r, fb.broadcast_in_dim(s, fb.owner.tensor("f32", [3]), []))]

    reuses, _ = reuse_pairs(build([("f32", [4, 3])], [("f32", [3])], body))
    r_slot, out_slot = 1, 3
    assert reuses == {out_slot: r_slot}


@pytest.mark.parametrize("dims", [[1, 0], [0, 1]])
def test_no_in_place_through_a_broadcast(dims):
    # %r (16 bytes, dying) reaches the output through a broadcast_in_dim: with dims
    # [1, 0] element (i, j) reads (j, i). Not pointwise on that path, so never in place
    # (even when the broadcast happens to be the identity).
    def body(fb, a):
        r = fb.reduce("add", a, [0])
        t = fb.broadcast_in_dim(r, fb.owner.tensor("f32", [2, 2]), dims)
        return [fb.negate(t)]

    reuses, prep = reuse_pairs(build([("f32", [3, 2, 2])], [("f32", [2, 2])], body))
    assert reuses == {}
    r_slot = 1
    assert prep.arena.intervals[r_slot].end == prep.schedule.work_item_count() - 1


def test_no_in_place_for_function_inputs():
    def body(fb, a):
        return [fb.negate(a)]  # %a (12 bytes) dies at the only item

    reuses, prep = reuse_pairs(build([("f32", [3])], [("f32", [3])], body))
    assert reuses == {}
    assert prep.arena.intervals[0] == prep.arena.intervals[1] == LiveInterval(0, 0)
    # Both live at item 0: distinct addresses.
    offsets = prep.arena.functions["f"].offsets
    assert offsets[0] != offsets[1]


def test_donated_inputs_are_taken_over_in_place():
    # %a (12 bytes, donated) dies at the only item, which writes %n (12 bytes) reading
    # element i of %a for element i: %n takes %a's buffer, and the arena holds one buffer.
    def body(fb, a):
        return [fb.negate(a)]

    reuses, prep = reuse_pairs(build([("f32", [3])], [("f32", [3])], body, donated=[0]))
    assert reuses == {1: 0}
    assert prep.arena.describe_slot(1) == "offset 0 live [0, 0] reuses slot 0"
    assert prep.arena.size == 256
    assert str(prep.buffers.slots[0].role) == "input+donated"


def test_a_donated_temporary_buffer_is_not_a_temporary():
    # %s (4 KiB) takes the donated %x's buffer; two reductions read it. Without donation
    # %s is a temporary of its own: 4 KiB more arena, and 4 KiB of temporaries.
    def body(fb, x, y):
        s = fb.add(x, y)
        return [fb.reduce("add", s, [0]), fb.reduce("max", s, [1])]

    shapes = [("f32", [32, 32]), ("f32", [32, 32])], [("f32", [32]), ("f32", [32])]
    donated, prep = reuse_pairs(build(*shapes, body, donated=[0]))
    kept, plain = reuse_pairs(build(*shapes, body))
    assert donated == {2: 0} and kept == {}
    assert prep.arena.size == plain.arena.size - 4096
    assert (prep.arena.temporaries_size, plain.arena.temporaries_size) == (0, 4096)


def test_donated_inputs_that_are_returned_or_live_on_stay():
    def returned(fb, a):
        return [fb.negate(a), a]  # %a is also a result: the caller reads it back

    def lives_on(fb, a):
        return [fb.negate(a), fb.reduce("add", a, [0])]  # %a is read after the negate

    assert reuse_pairs(build([("f32", [3])], [("f32", [3])] * 2, returned, donated=[0]))[0] == {}
    outputs = [("f32", [3]), ("f32", [])]
    assert reuse_pairs(build([("f32", [3])], outputs, lives_on, donated=[0]))[0] == {}


def test_no_in_place_when_the_input_lives_on():
    def body(fb, a):
        r = fb.reduce("add", a, [0])
        return [fb.negate(r), fb.reduce("max", r, [0])]

    assert reuse_pairs(build([("f32", [4, 3])], [("f32", [3]), ("f32", [])], body))[0] == {}


def test_in_place_inside_a_loop_body_only_for_values_written_there():
    # Inside the body: %t is written and dies at the negate + add item, so the yielded sum
    # takes its buffer (copied into the carried buffer after each iteration). %u, written
    # before the loop, dies at the body's last item but is read again next iteration; the
    # loop's result after the loop is a carried buffer: neither is taken over.
    def body(fb, a, x):
        u = fb.reduce("max", a, [0])

        def loop(lb, p):
            t = lb.reduce("add", a, [0])
            s = lb.add(lb.negate(t), p)
            return [lb.multiply(s, u)]

        (r,) = fb.iterate(3, [x], loop)
        return [fb.exponential(r)]

    reuses, prep = reuse_pairs(build([("f32", [4, 3]), ("f32", [3])], [("f32", [3])], body))
    assert [w.kind.value for w in prep.schedule.work_items] == [
        "reduce",
        "iterate",
        "reduce",
        "elementwise",
        "elementwise",
    ]
    slots = prep.buffers.slots
    ((out, source),) = reuses.items()
    assert slots[out].producer.name == "accy.multiply"  # the body's yielded value ...
    assert prep.arena.describe_slot(source).endswith("live [2, 3]")  # ... takes %t's buffer


def test_no_in_place_over_a_value_the_body_yields():
    # %s is yielded (copied into its carried buffer after the body's last item) and read
    # by that last item: the item must not write its result over %s (random_gamma's
    # rejection loop computed a wrong sample that way).
    text = """
func.func @f(%x: tensor<4xf64>, %y: tensor<4xf64>) -> (tensor<4xf64>, tensor<4xf64>) {
  %r:2 = accy.iterate 3 iter_args(%p = %x, %q = %y) : tensor<4xf64>, tensor<4xf64> {
    %e = accy.exponential %p : tensor<4xf64>
    %m = accy.reduce max %e, dims = [0] : (tensor<4xf64>) -> tensor<f64>
    %mb = accy.broadcast_in_dim %m, dims = [] : (tensor<f64>) -> tensor<4xf64>
    %s = accy.divide %e, %mb : tensor<4xf64>
    %t = accy.add %s, %q : tensor<4xf64>
    accy.yield %s, %t : tensor<4xf64>, tensor<4xf64>
  }
  func.return %r#0, %r#1 : tensor<4xf64>, tensor<4xf64>
}
"""
    module = accy.parse(text)
    prep = accy.prepare(module, target="cpu")
    (reuses,) = (a.reuses for a in prep.arena.functions.values())
    producers = {prep.buffers.slots[source].producer.name for source in reuses.values()}
    assert producers == {"accy.exponential"}  # %s takes %e's buffer; nothing takes %s's
    x = np.array([0.5, -1.0, 2.0, 0.25])
    y = np.array([1.0, 2.0, -3.0, 0.0])
    for got, want in zip(accy.compile(module, target="cpu")(x, y), run(module, "f", x, y)):
        np.testing.assert_allclose(got, want, rtol=1e-12)


# Dynamic slots ------------------------------------------------------------------------------

DYNAMIC = """
func.func @dynamic(%a: tensor<?x3xf32>, %w: tensor<3xf32>) -> (tensor<?x3xf32>, tensor<3xf32>) {
  %e = accy.exponential %a : tensor<?x3xf32>
  %m = accy.reduce max %e, dims = [0] : (tensor<?x3xf32>) -> tensor<3xf32>
  %n = accy.negate %a : tensor<?x3xf32>
  %r = accy.add %m, %w : tensor<3xf32>
  func.return %n, %r : tensor<?x3xf32>, tensor<3xf32>
}
"""


def test_dynamic_slots_are_separate_without_rows():
    p = planned(DYNAMIC)
    arena = p.prep.arena.functions["dynamic"]
    assert p.prep.arena.planned_rows is None
    assert sorted(arena.separate) == [p.slot("dynamic", "a"), p.slot("dynamic", "n")]
    assert p.where("dynamic", "a") == "separate live [0, 1]"
    assert p.where("dynamic", "n").startswith("separate live ")
    assert p.prep.arena.offset_of(p.slot("dynamic", "a")) is None
    # Only the three static 12-byte buffers are packed.
    assert arena.size <= 3 * 256


def test_dynamic_slots_are_planned_at_the_largest_rows():
    p = planned(DYNAMIC, rows=[64, 100, 8], check_arena=True)
    arena = p.prep.arena.functions["dynamic"]
    assert p.prep.arena.planned_rows == 100
    assert arena.separate == []
    a, n = p.slot("dynamic", "a"), p.slot("dynamic", "n")
    assert planned_bytes(p.prep.buffers.slots[a], 100) == 100 * 3 * 4
    assert planned_bytes(p.prep.buffers.slots[a], None) is None
    assert arena.offsets[a] % 256 == 0 and arena.offsets[n] % 256 == 0
    # %a and %n are both live at item 1: the arena holds both at the upper bound.
    assert arena.size >= 2 * align_up(1200, 256)
    check_independently(p.prep, 256)
    separate = planned(DYNAMIC).prep.arena.functions["dynamic"].size
    assert arena.size > separate


def test_workspaces_in_the_arena():
    p = planned(
        """
        func.func @wide(%a: tensor<?x8192xf32>, %b: tensor<?x5000xf32>) -> (tensor<?xf32>, tensor<?xf32>) {
          %0 = accy.reduce add %a, dims = [1] : (tensor<?x8192xf32>) -> tensor<?xf32>
          %1 = accy.reduce max %b, dims = [1] : (tensor<?x5000xf32>) -> tensor<?xf32>
          func.return %0, %1 : tensor<?xf32>, tensor<?xf32>
        }
        """,
        rows=[1, 64],
        sm_count=100,
        check_arena=True,
    )
    arena = p.prep.arena.functions["wide"]
    (workspace,) = arena.workspaces
    assert workspace.term.bytes == 64 * 100 * 8 * 4
    assert workspace.interval == LiveInterval(0, 1)
    # The workspace is scratch: counted in the temporaries.
    assert arena.temporaries_size >= align_up(workspace.term.bytes, 256)
    check_independently(p.prep, 256)
