"""`accy.scatter`: the reference's semantics (against a definition written out per
element: duplicates combine in order, out-of-range updates are skipped), the CPU target's
loops (against the reference, bit for bit), the verifier's located errors, the builder,
StableHLO import (one operand or several scattered together), the plan's in-place update
and the CUDA target's kernels (atomic, or serial for coupled operands)."""

from __future__ import annotations

import itertools
import re
import tempfile
from pathlib import Path

import numpy as np
import pytest

import accy
from accy import reference
from accy.diagnostics import AccyError

NUMBERS = (
    "update_window_dims = [1], inserted_window_dims = [0], input_batching_dims = [], "
    "scatter_indices_batching_dims = [], scatter_dims_to_operand_dims = [0], "
    "index_vector_dim = 1"
)

ROWS = f"""
func.func @f(%table: tensor<6x3xf32>, %ids: tensor<4x1xi32>, %u: tensor<4x3xf32>) -> tensor<6x3xf32> {{
  %r = accy.scatter %table[%ids] updates(%u), {NUMBERS} : (tensor<6x3xf32>), tensor<4x1xi32>, (tensor<4x3xf32>) -> (tensor<6x3xf32>) {{
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %s = accy.add %a, %b : tensor<f32>
    accy.yield %s : tensor<f32>
  }}
  func.return %r : tensor<6x3xf32>
}}"""


def _rows_definition(combine, table, ids, updates):
    """Row scatter written out: update row n combines into row ids[n] when that row
    exists, in the order of n."""
    out = table.copy()
    for n, k in itertools.product(range(updates.shape[0]), range(updates.shape[1])):
        row = int(ids[n, 0])
        if 0 <= row < table.shape[0]:
            out[row, k] = combine(out[row, k], updates[n, k])
    return out


@pytest.mark.parametrize("ids", [[1, 4, 1, 1], [0, 6, -1, 5], [2, 2, 2, 2]])
def test_scatter_add_combines_duplicates_and_skips_out_of_range_rows(ids):
    rng = np.random.default_rng(1)
    table = rng.standard_normal((6, 3)).astype(np.float32)
    u = rng.standard_normal((4, 3)).astype(np.float32)
    indices = np.array(ids, np.int32)[:, None]
    expected = _rows_definition(np.add, table, indices, u)
    before = table.copy()
    np.testing.assert_array_equal(
        reference.run(accy.parse(ROWS), "f", table, indices, u)[0], expected
    )
    np.testing.assert_array_equal(accy.compile(ROWS, threads=1)(table, indices, u)[0], expected)
    np.testing.assert_array_equal(table, before)  # the caller's array is not written


POINTS = """
func.func @f(%x: tensor<3x4xi32>, %i: tensor<2x5x2xi64>, %u: tensor<2x5xi32>) -> tensor<3x4xi32> {
  %r = accy.scatter %x[%i] updates(%u), update_window_dims = [], inserted_window_dims = [0, 1], input_batching_dims = [], scatter_indices_batching_dims = [], scatter_dims_to_operand_dims = [1, 0], index_vector_dim = 2 : (tensor<3x4xi32>), tensor<2x5x2xi64>, (tensor<2x5xi32>) -> (tensor<3x4xi32>) {
  ^bb0(%a: tensor<i32>, %b: tensor<i32>):
    %m = accy.multiply %a, %b : tensor<i32>
    %s = accy.subtract %m, %a : tensor<i32>
    accy.yield %s : tensor<i32>
  }
  func.return %r : tensor<3x4xi32>
}"""


def test_point_scatter_with_a_general_body_and_permuted_index_vector():
    """Index vector (j, i) addresses x[i, j]; the body is `a * b - a`, which is neither
    commutative nor associative, so the update order shows."""
    rng = np.random.default_rng(2)
    x = rng.integers(-3, 4, (3, 4)).astype(np.int32)
    i = rng.integers(-1, 5, (2, 5, 2)).astype(np.int64)
    u = rng.integers(-3, 4, (2, 5)).astype(np.int32)
    expected = x.copy()
    for s, t in itertools.product(range(2), range(5)):
        column, row = int(i[s, t, 0]), int(i[s, t, 1])
        if 0 <= row < 3 and 0 <= column < 4:
            a = expected[row, column]
            expected[row, column] = a * u[s, t] - a
    np.testing.assert_array_equal(reference.run(accy.parse(POINTS), "f", x, i, u)[0], expected)
    np.testing.assert_array_equal(accy.compile(POINTS, threads=1)(x, i, u)[0], expected)


BATCHED = """
func.func @f(%x: tensor<2x5x3xf32>, %i: tensor<4x2x1xi32>, %u: tensor<4x2x2xf32>) -> tensor<2x5x3xf32> {
  %r = accy.scatter %x[%i] updates(%u), update_window_dims = [2], inserted_window_dims = [1], input_batching_dims = [0], scatter_indices_batching_dims = [1], scatter_dims_to_operand_dims = [1], index_vector_dim = 2 : (tensor<2x5x3xf32>), tensor<4x2x1xi32>, (tensor<4x2x2xf32>) -> (tensor<2x5x3xf32>) {
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    accy.yield %b : tensor<f32>
  }
  func.return %r : tensor<2x5x3xf32>
}"""


def test_batched_window_scatter_replaces_in_update_order():
    """Operand dim 0 follows the indices' dim 1; a window of 2 columns lands at column 0
    of the addressed row (a window running past the row is skipped element by element)."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 5, 3)).astype(np.float32)
    i = rng.integers(-1, 6, (4, 2, 1)).astype(np.int32)
    u = rng.standard_normal((4, 2, 2)).astype(np.float32)
    expected = x.copy()
    for n, b, k in itertools.product(range(4), range(2), range(2)):
        row = int(i[n, b, 0])
        if 0 <= row < 5:
            expected[b, row, k] = u[n, b, k]
    np.testing.assert_array_equal(reference.run(accy.parse(BATCHED), "f", x, i, u)[0], expected)
    np.testing.assert_array_equal(accy.compile(BATCHED, threads=1)(x, i, u)[0], expected)


def test_builder_scatter_with_a_method_name_and_a_callable():
    f32, i32 = np.dtype(np.float32), np.dtype(np.int32)
    for combine, numpy_combine in (
        ("maximum", np.maximum),
        (lambda b, a, u: b.add(a, b.multiply(u, u)), lambda a, u: a + u * u),
    ):
        b = accy.Builder()
        f = b.begin_function(
            "f",
            [
                accy.Builder.tensor(f32, [6, 3]),
                accy.Builder.tensor(i32, [4, 1]),
                accy.Builder.tensor(f32, [4, 3]),
            ],
            [accy.Builder.tensor(f32, [6, 3])],
        )
        r = f.scatter(
            *(f.parameter(n) for n in range(3)),
            combine,
            update_window_dims=[1],
            inserted_window_dims=[0],
            scatter_dims_to_operand_dims=[0],
            index_vector_dim=1,
        )
        f.return_([r])
        f.finish()
        table = np.arange(18, dtype=np.float32).reshape(6, 3) / 4
        ids = np.array([[5], [0], [5], [3]], np.int32)
        u = np.linspace(-2, 2, 12, dtype=np.float32).reshape(4, 3)
        np.testing.assert_array_equal(
            accy.compile(b.finish(), threads=1)(table, ids, u)[0],
            _rows_definition(numpy_combine, table, ids, u),
        )


@pytest.mark.parametrize(
    ("numbers", "body", "message"),
    [
        (
            NUMBERS.replace("inserted_window_dims = [0]", "inserted_window_dims = []"),
            None,
            "update_window_dims [1] name 1 dims for the operand's 2 window dims",
        ),
        (
            NUMBERS.replace("index_vector_dim = 1", "index_vector_dim = 3"),
            None,
            "index_vector_dim 3 is not within the scatter indices' 2 dims",
        ),
        (
            NUMBERS.replace(
                "scatter_dims_to_operand_dims = [0]", "scatter_dims_to_operand_dims = [0, 1]"
            ),
            None,
            "scatter_dims_to_operand_dims has 2 dims for index vectors of 1",
        ),
        (
            NUMBERS.replace("inserted_window_dims = [0]", "inserted_window_dims = [2]"),
            None,
            "inserted_window_dims [2] are not distinct dims below 2",
        ),
        (
            NUMBERS,
            "%s = accy.exponential %a : tensor<f32>\n    accy.yield %s, %b : tensor<f32>, tensor<f32>",
            "update computation must end in an accy.yield of tensor<f32>",
        ),
        (
            NUMBERS,
            "%s = accy.reshape %a : (tensor<f32>) -> tensor<f32>\n    accy.yield %s : tensor<f32>",
            "update computation holds 'accy.reshape'",
        ),
    ],
)
def test_scatter_verifier_errors_are_located(numbers, body, message):
    body = body or "%s = accy.add %a, %b : tensor<f32>\n    accy.yield %s : tensor<f32>"
    text = f"""
func.func @f(%table: tensor<6x3xf32>, %ids: tensor<4x1xi32>, %u: tensor<4x3xf32>) -> tensor<6x3xf32> {{
  %r = accy.scatter %table[%ids] updates(%u), {numbers} : (tensor<6x3xf32>), tensor<4x1xi32>, (tensor<4x3xf32>) -> (tensor<6x3xf32>) {{
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    {body}
  }}
  func.return %r : tensor<6x3xf32>
}}"""
    with pytest.raises(AccyError, match=re.escape(message)) as error:
        accy.parse(text)
    assert error.value.location is not None


SEGMENT_SUM = """
func.func public @main(%data: tensor<5x2xf32>, %segments: tensor<5xi32>) -> tensor<3x2xf32> {
  %zero = stablehlo.constant dense<0.0> : tensor<3x2xf32>
  %ids = stablehlo.reshape %segments : (tensor<5xi32>) -> tensor<5x1xi32>
  %r = "stablehlo.scatter"(%zero, %ids, %data) <{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [1], inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>, unique_indices = false}> ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %s = stablehlo.add %a, %b : tensor<f32>
    stablehlo.return %s : tensor<f32>
  }) : (tensor<3x2xf32>, tensor<5x1xi32>, tensor<5x2xf32>) -> tensor<3x2xf32>
  return %r : tensor<3x2xf32>
}"""


def test_stablehlo_segment_sum_imports_and_runs():
    module = accy.import_stablehlo(SEGMENT_SUM)
    assert "accy.scatter" in str(module)
    data = np.arange(10, dtype=np.float32).reshape(5, 2)
    segments = np.array([0, 2, 0, 1, 7], np.int32)  # 7 is out of range: dropped
    expected = np.zeros((3, 2), np.float32)
    for n in range(4):
        expected[segments[n]] += data[n]
    np.testing.assert_array_equal(reference.run(module, "main", data, segments)[0], expected)
    np.testing.assert_array_equal(accy.compile(module, threads=1)(data, segments)[0], expected)


TWO_OPERANDS = """
func.func public @main(%best: tensor<3xf32>, %where: tensor<3xi32>, %ids: tensor<6x1xi32>, %v: tensor<6xf32>, %at: tensor<6xi32>) -> (tensor<3xf32>, tensor<3xi32>) {
  %r:2 = "stablehlo.scatter"(%best, %where, %ids, %v, %at) <{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>, unique_indices = false}> ({
  ^bb0(%a: tensor<f32>, %ai: tensor<i32>, %b: tensor<f32>, %bi: tensor<i32>):
    %gt = stablehlo.compare GT, %b, %a, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
    %m = stablehlo.select %gt, %b, %a : tensor<i1>, tensor<f32>
    %k = stablehlo.select %gt, %bi, %ai : tensor<i1>, tensor<i32>
    stablehlo.return %m, %k : tensor<f32>, tensor<i32>
  }) : (tensor<3xf32>, tensor<3xi32>, tensor<6x1xi32>, tensor<6xf32>, tensor<6xi32>) -> (tensor<3xf32>, tensor<3xi32>)
  return %r#0, %r#1 : tensor<3xf32>, tensor<3xi32>
}"""


def test_stablehlo_scatter_of_two_operands_combines_them_together():
    """A segment argmax: each update carries a value and its position; the body keeps
    the greater value and, with it, its position (the two operands are coupled)."""
    module = accy.import_stablehlo(TWO_OPERANDS)
    best = np.full(3, -np.inf, np.float32)
    where = np.full(3, -1, np.int32)
    ids = np.array([[0], [2], [0], [1], [2], [5]], np.int32)
    v = np.array([1.0, 5.0, 3.0, -2.0, 4.0, 9.0], np.float32)
    at = np.arange(6, dtype=np.int32)
    expected = [np.array([3.0, -2.0, 5.0], np.float32), np.array([2, 3, 1], np.int32)]
    for outputs in (
        reference.run(module, "main", best, where, ids, v, at),
        accy.compile(module, threads=1)(best, where, ids, v, at),
    ):
        for out, want in zip(outputs, expected):
            np.testing.assert_array_equal(out, want)


def test_a_dying_operand_is_scattered_in_place():
    """The transposed table dies at the scatter: on CUDA the result takes its buffer (the
    plan's reuse) and no copy kernel runs; on the CPU it is the out-parameter."""
    transposed = ROWS.replace("%table: tensor<6x3xf32>", "%t: tensor<3x6xf32>").replace(
        "%r = accy.scatter %table[",
        "%table = accy.transpose %t, dims = [1, 0] : (tensor<3x6xf32>) -> tensor<6x3xf32>\n"
        "  %r = accy.scatter %table[",
    )
    cuda = accy.prepare(accy.parse(transposed), target="cuda").arena.functions["f"]
    assert len(cuda.reuses) == 1
    cpu = accy.prepare(accy.parse(transposed), target="cpu")
    assert list(cpu.arena.functions["f"].in_outputs.values())
    rng = np.random.default_rng(4)
    t = rng.standard_normal((3, 6)).astype(np.float32)
    u = rng.standard_normal((4, 3)).astype(np.float32)
    ids = np.array([[3], [3], [0], [9]], np.int32)
    expected = _rows_definition(np.add, t.T.copy(), ids, u)
    np.testing.assert_array_equal(accy.compile(transposed, threads=1)(t, ids, u)[0], expected)


def test_elementwise_producers_fuse_into_the_scatter():
    """`segment_sum` as JAX writes it: zeros broadcast into the table, ids reshaped and
    ones broadcast as updates are all computed in the scatter's kernel, never stored."""
    text = """
func.func @f(%ids: tensor<8xi32>, %scale: tensor<f32>) -> tensor<4xf32> {
  %zero = accy.constant dense<0.0> : tensor<f32>
  %table = accy.broadcast_in_dim %zero, dims = [] : (tensor<f32>) -> tensor<4xf32>
  %index = accy.reshape %ids : (tensor<8xi32>) -> tensor<8x1xi32>
  %ones = accy.broadcast_in_dim %scale, dims = [] : (tensor<f32>) -> tensor<8xf32>
  %r = accy.scatter %table[%index] updates(%ones), update_window_dims = [], inserted_window_dims = [0], input_batching_dims = [], scatter_indices_batching_dims = [], scatter_dims_to_operand_dims = [0], index_vector_dim = 1 : (tensor<4xf32>), tensor<8x1xi32>, (tensor<8xf32>) -> (tensor<4xf32>) {
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %s = accy.add %a, %b : tensor<f32>
    accy.yield %s : tensor<f32>
  }
  func.return %r : tensor<4xf32>
}"""
    for target in ("cpu", "cuda"):
        prep = accy.prepare(accy.parse(text), target=target)
        (item,) = prep.schedule.work_items
        assert item.kind.value == "scatter" and len(item.members) == 4
        assert prep.arena.functions["f"].temporaries_size == 0
    ids = np.array([0, 3, 3, 9, 1, 0, 0, -1], np.int32)
    expected = np.bincount(ids[(ids >= 0) & (ids < 4)], minlength=4).astype(np.float32) * 0.5
    np.testing.assert_array_equal(accy.compile(text, threads=1)(ids, np.float32(0.5))[0], expected)
    assert list(accy.export(text, Path(tempfile.mkdtemp()) / "f", target="cuda").glob("*.ptx"))


def test_cuda_exports_scatter_with_an_atomic_update(tmp_path):
    """A single add is one native atomic; any other combining body runs in a
    compare-and-swap loop; a replacing one stores."""
    for name, text, atomics in (
        ("rows", ROWS, {"add.f32"}),
        ("points", POINTS, {"cas.b32"}),
        ("batched", BATCHED, set()),
    ):
        directory = accy.export(text, tmp_path / name, target="cuda")
        (ptx,) = directory.glob("*.ptx")
        found = set(re.findall(r"atom\.[a-z_]+\.[a-z]+\.global\.([a-z0-9.]+)", ptx.read_text()))
        assert found == atomics, name


@pytest.mark.parametrize(("unique", "block"), [(False, "1,1,1"), (True, "256,1,1")])
def test_cuda_scatter_of_two_operands_is_serial_unless_indices_are_unique(tmp_path, unique, block):
    """No atomic updates two elements together: duplicates are combined in order by one
    thread; with `unique_indices` every update element has its own thread."""
    from accy.runtime.plan_check import plan_problems, run_with_fake_driver

    text = TWO_OPERANDS.replace("unique_indices = false", f"unique_indices = {str(unique).lower()}")
    directory = accy.export(accy.import_stablehlo(text), tmp_path / "two", target="cuda")
    inputs = [np.zeros(3, np.float32), np.zeros(3, np.int32), np.zeros((6, 1), np.int32)]
    inputs += [np.zeros(6, np.float32), np.zeros(6, np.int32)]
    result = run_with_fake_driver(directory, inputs)
    assert plan_problems(directory, "main", result) == []
    launches = [c for c in result["calls"] if c.startswith("launch name=main_item0_scatter ")]
    assert [f"block={block}" in c for c in launches] == [True]


NARROW = """func.func @f(%m: tensor<2x24xui8>, %b: tensor<4x2xi1>, %i: tensor<3x2xi32>) -> (tensor<2x24xui8>, tensor<4x2xi1>) {
  %zeros = accy.constant dense<0> : tensor<3xui8>
  %mins = accy.scatter %m[%i] updates(%zeros), update_window_dims = [], inserted_window_dims = [0, 1], input_batching_dims = [], scatter_indices_batching_dims = [], scatter_dims_to_operand_dims = [0, 1], index_vector_dim = 1 : (tensor<2x24xui8>), tensor<3x2xi32>, (tensor<3xui8>) -> (tensor<2x24xui8>) {
  ^bb0(%x: tensor<ui8>, %u: tensor<ui8>):
    %y = accy.minimum %x, %u : tensor<ui8>
    accy.yield %y : tensor<ui8>
  }
  %trues = accy.constant dense<true> : tensor<3xi1>
  %ors = accy.scatter %b[%i] updates(%trues), update_window_dims = [], inserted_window_dims = [0, 1], input_batching_dims = [], scatter_indices_batching_dims = [], scatter_dims_to_operand_dims = [0, 1], index_vector_dim = 1 : (tensor<4x2xi1>), tensor<3x2xi32>, (tensor<3xi1>) -> (tensor<4x2xi1>) {
  ^bb0(%p: tensor<i1>, %q: tensor<i1>):
    %r = accy.xor %p, %q : tensor<i1>
    accy.yield %r : tensor<i1>
  }
  func.return %mins, %ors : tensor<2x24xui8>, tensor<4x2xi1>
}"""


def test_cuda_scatters_no_compare_and_swap_can_update_run_in_order(tmp_path):
    # No compare-and-swap updates one i1 element (LLVM refuses the cmpxchg), and MLIR
    # folds a combiner of constant updates (unsigned min with 0) into a constant its
    # atomic body yields from outside, which its lowering refuses: such scatters combine in
    # order on one thread (found by the program fuzzer's CUDA run).
    from accy.runtime.plan_check import plan_problems, ptxas_problems, run_with_fake_driver

    m = np.arange(48, dtype=np.uint8).reshape(2, 24)
    b = np.zeros((4, 2), np.bool_)
    i = np.array([[1, 1], [1, 1], [0, 0]], np.int32)
    mins, ors = accy.compile(NARROW, threads=1)(m, b, i)
    assert mins[1, 1] == 0 and mins[0, 0] == 0 and mins[1, 2] == 26
    assert not ors[1, 1] and ors[0, 0]  # two xors of true, one
    directory = accy.export(NARROW, tmp_path / "narrow", target="cuda")
    assert not ptxas_problems(directory)
    result = run_with_fake_driver(directory, [m, b, i], function="f")
    assert plan_problems(directory, "f", result) == []
    launches = [
        c for c in result["calls"] if c.startswith("launch name=f_item") and "scatter " in c
    ]
    assert len(launches) == 2 and all("block=1,1,1" in c for c in launches), launches


DYNAMIC_ROWS = ROWS.replace("tensor<6x3xf32>", "tensor<?x3xf32>")


@pytest.mark.parametrize("rows", [2, 6])
def test_scatter_into_a_table_of_dynamic_rows_on_the_cpu(rows):
    """The table's row count is known at run time: updates past it are skipped."""
    table = np.arange(rows * 3, dtype=np.float32).reshape(rows, 3)
    ids = np.array([[1], [4], [1], [0]], np.int32)
    u = np.ones((4, 3), np.float32)
    expected = _rows_definition(np.add, table, ids, u)
    np.testing.assert_array_equal(
        reference.run(accy.parse(DYNAMIC_ROWS), "f", table, ids, u)[0], expected
    )
    outputs = accy.compile(DYNAMIC_ROWS, threads=1, rows=[rows])(table, ids, u)
    np.testing.assert_array_equal(outputs[0], expected)
