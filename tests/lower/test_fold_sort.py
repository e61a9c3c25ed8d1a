"""`accy.fold` (StableHLO's reduce with several operands or a general body: argmax as JAX
lowers it), `accy.sort` (and `chlo.top_k` built on it), floats compared in TOTALORDER and
the rounding ops around them (`accy.floor`, `accy.ceil`, StableHLO's clamp): the reference
against numpy, the CPU target against the reference, StableHLO import, the verifier's
located errors, the sort's workspace and CUDA export."""

from __future__ import annotations

import re

import ml_dtypes
import numpy as np
import pytest
from accy.passes.sort_prefixes import sort_prefixes

import accy
from accy import reference
from accy.diagnostics import AccyError

ARGMAX = """
func.func public @main(%x: tensor<5x7xf32>) -> (tensor<5xf32>, tensor<5xi32>) {
  %iota = stablehlo.iota dim = 1 : tensor<5x7xi32>
  %lowest = stablehlo.constant dense<0xFF800000> : tensor<f32>
  %zero = stablehlo.constant dense<0> : tensor<i32>
  %r:2 = stablehlo.reduce(%x init: %lowest), (%iota init: %zero) across dimensions = [1] : (tensor<5x7xf32>, tensor<5x7xi32>, tensor<f32>, tensor<i32>) -> (tensor<5xf32>, tensor<5xi32>)
   reducer(%a: tensor<f32>, %b: tensor<f32>) (%i: tensor<i32>, %j: tensor<i32>)  {
    %gt = stablehlo.compare  GT, %a, %b,  FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
    %nan = stablehlo.compare  NE, %a, %a,  FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
    %keep = stablehlo.or %gt, %nan : tensor<i1>
    %eq = stablehlo.compare  EQ, %a, %b,  FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
    %lt = stablehlo.compare  LT, %i, %j,  SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %tie = stablehlo.and %eq, %lt : tensor<i1>
    %first = stablehlo.or %keep, %tie : tensor<i1>
    %v = stablehlo.select %keep, %a, %b : tensor<i1>, tensor<f32>
    %k = stablehlo.select %first, %i, %j : tensor<i1>, tensor<i32>
    stablehlo.return %v, %k : tensor<f32>, tensor<i32>
  }
  return %r#0, %r#1 : tensor<5xf32>, tensor<5xi32>
}"""


def test_argmax_as_jax_lowers_it_matches_numpy_with_ties_and_nan():
    module = accy.import_stablehlo(ARGMAX)
    assert "accy.fold" in str(module)
    x = np.random.default_rng(0).standard_normal((5, 7)).astype(np.float32)
    x[1, 2] = x[1, 5] = 9.0  # a tie: the first index wins
    x[3, 4] = np.nan  # NaN wins, as numpy's argmax
    expected_index = np.argmax(x, axis=1).astype(np.int32)
    expected_value = np.max(x, axis=1)
    for values, indices in (
        reference.run(module, "main", x),
        accy.compile(module, threads=1)(x),
    ):
        np.testing.assert_array_equal(indices, expected_index)
        np.testing.assert_array_equal(values, expected_value)


FOLD = """
func.func @f(%x: tensor<3x4x2xi32>) -> tensor<4xi32> {
  %init = accy.constant dense<1> : tensor<i32>
  %r = accy.fold(%x : tensor<3x4x2xi32>) init(%init : tensor<i32>), dims = [0, 2] -> (tensor<4xi32>) {
  ^bb0(%acc: tensor<i32>, %e: tensor<i32>):
    %three = accy.constant dense<3> : tensor<i32>
    %m = accy.multiply %acc, %three : tensor<i32>
    %s = accy.add %m, %e : tensor<i32>
    accy.yield %s : tensor<i32>
  }
  func.return %r : tensor<4xi32>
}"""


def test_fold_visits_the_reduced_positions_in_row_major_order():
    """`acc * 3 + e` is not associative: the result spells the order of dims 0 then 2."""
    x = np.arange(24, dtype=np.int32).reshape(3, 4, 2) % 5
    expected = np.empty(4, np.int32)
    for j in range(4):
        acc = 1
        for i in range(3):
            for k in range(2):
                acc = acc * 3 + int(x[i, j, k])
        expected[j] = acc
    np.testing.assert_array_equal(reference.run(accy.parse(FOLD), "f", x)[0], expected)
    np.testing.assert_array_equal(accy.compile(FOLD, threads=1)(x)[0], expected)


def test_builder_fold_computes_a_sum_and_a_count_together():
    f32 = np.dtype(np.float32)
    b = accy.Builder()
    f = b.begin_function(
        "f", [accy.Builder.tensor(f32, [3, 6])], [accy.Builder.tensor(f32, [3])] * 2
    )
    x = f.parameter(0)
    zero = f.constant(accy.Builder.tensor(f32, []), 0.0)
    ones = f.constant(accy.Builder.tensor(f32, [3, 6]), 1.0)
    total, count = f.fold(
        [x, ones],
        [zero, zero],
        [1],
        lambda inner, s, n, e, one: [inner.add(s, e), inner.add(n, one)],
    )
    f.return_([total, count])
    f.finish()
    data = np.arange(18, dtype=np.float32).reshape(3, 6)
    total, count = accy.compile(b.finish(), threads=1)(data)
    np.testing.assert_array_equal(total, data.sum(axis=1))
    np.testing.assert_array_equal(count, np.full(3, 6, np.float32))


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            "^bb0(%acc: tensor<i32>, %e: tensor<i32>):\n    accy.yield %acc, %e : tensor<i32>, tensor<i32>",
            "body must end in an accy.yield of tensor<i32>",
        ),
        (
            "^bb0(%acc: tensor<f32>, %e: tensor<f32>):\n    accy.yield %acc : tensor<f32>",
            "body must take (tensor<i32>, tensor<i32>)",
        ),
    ],
)
def test_fold_verifier_errors_are_located(body, message):
    text = FOLD.replace(FOLD[FOLD.index("^bb0") : FOLD.index("\n  }")], body)
    with pytest.raises(AccyError, match=re.escape(message)) as error:
        accy.parse(text)
    assert error.value.location is not None


TOTAL_ORDER = """
func.func @f(%a: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<8xi1> {
  %r = accy.compare LT, %a, %b total_order : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xi1>
  func.return %r : tensor<8xi1>
}"""


def test_total_order_compare_orders_signed_zeros_and_nans():
    nan = np.float32(np.nan)
    a = np.array([-nan, -np.inf, -0.0, 0.0, 1.0, np.inf, nan, -1.0], np.float32)
    b = np.array([-np.inf, -nan, 0.0, -0.0, nan, nan, np.inf, -0.0], np.float32)
    expected = np.array([True, False, True, False, True, True, False, True])
    np.testing.assert_array_equal(reference.run(accy.parse(TOTAL_ORDER), "f", a, b)[0], expected)
    np.testing.assert_array_equal(accy.compile(TOTAL_ORDER, threads=1)(a, b)[0], expected)
    with pytest.raises(AccyError, match="total_order compares floats, not i32"):
        accy.parse(TOTAL_ORDER.replace("f32", "i32"))


def test_cuda_exports_fold_and_total_order(tmp_path):
    module = accy.import_stablehlo(ARGMAX)
    for name, program in (("argmax", module), ("fold", FOLD), ("total_order", TOTAL_ORDER)):
        directory = accy.export(program, tmp_path / name, target="cuda")
        assert list(directory.glob("*.ptx"))


SORT = """
func.func @f(%k: tensor<3xNxf32>, %v: tensor<3xNxi32>) -> (tensor<3xNxf32>, tensor<3xNxi32>) {
  %a, %b = accy.sort(%k, %v : tensor<3xNxf32>, tensor<3xNxi32>), dim = 1 stable -> (tensor<3xNxf32>, tensor<3xNxi32>) {
  ^bb0(%x: tensor<f32>, %y: tensor<f32>, %i: tensor<i32>, %j: tensor<i32>):
    %lt = accy.compare LT, %x, %y : (tensor<f32>, tensor<f32>) -> tensor<i1>
    accy.yield %lt : tensor<i1>
  }
  func.return %a, %b : tensor<3xNxf32>, tensor<3xNxi32>
}"""


@pytest.mark.parametrize("n", [1, 2, 7, 16, 33, 256, 300])
def test_sort_is_stable_and_permutes_every_operand(n):
    """Keys with many ties and their positions as payload: numpy's stable argsort (by
    insertion on the CPU up to 256 elements a slice, merge passes above)."""
    text = SORT.replace("xN", f"x{n}")
    rng = np.random.default_rng(n)
    keys = rng.integers(0, 4, (3, n)).astype(np.float32)
    positions = np.tile(np.arange(n, dtype=np.int32), (3, 1))
    order = np.argsort(keys, axis=1, kind="stable").astype(np.int32)
    expected = [np.take_along_axis(keys, order, 1), order]
    for outputs in (
        reference.run(accy.parse(text), "f", keys, positions),
        accy.compile(text, threads=1)(keys, positions),
    ):
        for out, want in zip(outputs, expected):
            np.testing.assert_array_equal(out, want)


def test_sort_plans_its_scratch_workspace_on_both_targets():
    text = SORT.replace("xN", "x33")
    (term,) = accy.prepare(accy.parse(text), target="cuda").workspaces.terms
    assert (term.family, term.name) == ("sort.merge", "scratch")
    assert term.bytes == 2 * 400  # two operands of 396 bytes, each aligned to 16
    assert accy.prepare(accy.parse(text), target="cpu").workspaces.terms == ()  # insertion
    text = SORT.replace("xN", "x300")
    for target in ("cpu", "cuda"):
        (term,) = accy.prepare(accy.parse(text), target=target).workspaces.terms
        assert (term.family, term.bytes) == ("sort.merge", 2 * 3600)


PREFIX = """
func.func @f(%k: tensor<3xNxf32>) -> (tensor<3xKxf32>, tensor<3xKxi32>) {
  %p = accy.iota dim = 1 : tensor<3xNxi32>
  %a, %b = accy.sort(%k, %p : tensor<3xNxf32>, tensor<3xNxi32>), dim = 1 -> (tensor<3xNxf32>, tensor<3xNxi32>) {
  ^bb0(%x: tensor<f32>, %y: tensor<f32>, %i: tensor<i32>, %j: tensor<i32>):
    %gt = accy.compare GT, %x, %y : (tensor<f32>, tensor<f32>) -> tensor<i1>
    accy.yield %gt : tensor<i1>
  }
  %ta = accy.slice %a [0:3, 0:K] : (tensor<3xNxf32>) -> tensor<3xKxf32>
  %tb = accy.slice %b [0:3, 0:K] : (tensor<3xNxi32>) -> tensor<3xKxi32>
  func.return %ta, %tb : tensor<3xKxf32>, tensor<3xKxi32>
}"""


def prefix_program(n: int, k: int) -> str:
    return PREFIX.replace("xN", f"x{n}").replace("xK", f"x{k}").replace("0:K", f"0:{k}")


@pytest.mark.parametrize(("n", "k"), [(6, 1), (6, 6), (100, 5), (600, 300), (9, 0)])
def test_a_sort_read_through_leading_slices_keeps_only_them(n, k):
    """accy-sort-prefixes folds the slices into the sort; the CPU inserts the k greatest
    (ties by position) straight into the results, or merges into scratch copies when k
    is over 256; the iota of positions is computed as the sort reads it (fused)."""
    module = accy.parse(prefix_program(n, k))
    sort_prefixes(module)
    text = str(module)
    assert "accy.slice" not in text
    assert f"-> (tensor<3x{k}xf32>, tensor<3x{k}xi32>)" in text
    rng = np.random.default_rng(n)
    keys = rng.integers(0, 5, (3, n)).astype(np.float32)
    order = np.argsort(-keys, axis=1, kind="stable")[:, :k]
    expected = [np.take_along_axis(keys, order, 1), order.astype(np.int32)]
    for outputs in (reference.run(module, "f", keys), accy.compile(module, threads=1)(keys)):
        for out, want in zip(outputs, expected):
            np.testing.assert_array_equal(out, want)
    prep = accy.prepare(module, target="cpu")
    (item,) = prep.schedule.work_items
    assert len(item.members) == 2  # the iota joins the sort's kernel
    copies = 2 if k > 256 else 0
    assert sum(t.bytes for t in prep.workspaces.terms) == copies * (3 * n * 4 + 3 * n * 4)


def test_sort_prefixes_keep_slices_that_are_not_leading():
    text = prefix_program(8, 3).replace(
        "[0:3, 0:3] : (tensor<3x8xi32>)", "[0:3, 1:4] : (tensor<3x8xi32>)"
    )
    module = accy.parse(text)
    sort_prefixes(module)
    assert str(module).count("accy.slice") == 2


def test_cuda_exports_a_top_k_with_two_scratch_copies(tmp_path):
    """The last of ceil(log2(600)) = 10 merge passes writes the 300 kept places; the
    passes before alternate between two copies of the operands."""
    module = accy.parse(prefix_program(600, 300))
    sort_prefixes(module)
    (term,) = accy.prepare(module, target="cuda").workspaces.terms
    assert term.bytes == 2 * 2 * 7200
    directory = accy.export(module, tmp_path / "top", target="cuda")
    manifest = (directory / "accy_kernels.ptx").read_text()
    assert [f"f_item0_sort_pass{p}" in manifest for p in range(11)] == [True] * 10 + [False]


DESCENDING = """
func.func public @main(%x: tensor<2x6xf32>) -> tensor<2x6xf32> {
  %0 = "stablehlo.sort"(%x) <{dimension = 0 : i64, is_stable = true}> ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %gt = stablehlo.compare GT, %a, %b, TOTALORDER : (tensor<f32>, tensor<f32>) -> tensor<i1>
    stablehlo.return %gt : tensor<i1>
  }) : (tensor<2x6xf32>) -> tensor<2x6xf32>
  return %0 : tensor<2x6xf32>
}"""


def test_stablehlo_sort_descending_in_total_order_along_dim_0():
    module = accy.import_stablehlo(DESCENDING)
    x = np.array(
        [[1.0, -0.0, np.nan, 2.0, -np.inf, 0.0], [3.0, 0.0, 1.0, np.nan, 5.0, -0.0]], np.float32
    )
    nan = np.nan  # +NaN is the greatest float in total order, -0.0 below 0.0
    expected = np.array(
        [[3.0, 0.0, nan, nan, 5.0, 0.0], [1.0, -0.0, 1.0, 2.0, -np.inf, -0.0]], np.float32
    )
    for (out,) in (reference.run(module, "main", x), accy.compile(module, threads=1)(x)):
        np.testing.assert_array_equal(out, expected)
        assert np.signbit(out[1, 1]) and np.signbit(out[1, 5])


def test_sort_results_longer_than_the_operands_are_a_located_error():
    text = (
        SORT.replace("xN", "x4")
        .replace(
            "-> (tensor<3x4xf32>, tensor<3x4xi32>) {", "-> (tensor<3x5xf32>, tensor<3x5xi32>) {"
        )
        .replace("func.return %a, %b : tensor<3x4xf32>, tensor<3x4xi32>", "func.return")
    )
    text = text.replace("-> (tensor<3x4xf32>, tensor<3x4xi32>) {\n  %a", "{\n  %a")
    with pytest.raises(
        AccyError, match=re.escape("results keep 5 elements along dim 1, of 4")
    ) as error:
        accy.parse(text)
    assert error.value.location is not None


def test_sort_verifier_errors_are_located():
    text = SORT.replace("xN", "x4").replace(
        "accy.yield %lt : tensor<i1>", "accy.yield %x : tensor<f32>"
    )
    with pytest.raises(
        AccyError, match=re.escape("comparator must end in an accy.yield of tensor<i1>")
    ) as error:
        accy.parse(text)
    assert error.value.location is not None


def test_cuda_exports_sort_as_merge_passes(tmp_path):
    directory = accy.export(SORT.replace("xN", "x33"), tmp_path / "sort", target="cuda")
    manifest = (directory / "accy_kernels.ptx").read_text()
    assert [f"f_item0_sort_pass{p}" in manifest for p in range(7)] == [True] * 6 + [False]


TOP_K = """
func.func public @main(%x: tensor<4x6xf32>) -> (tensor<4x3xf32>, tensor<4x3xi32>) {
  %values, %indices = chlo.top_k(%x, k = 3) : tensor<4x6xf32> -> (tensor<4x3xf32>, tensor<4x3xi32>)
  return %values, %indices : tensor<4x3xf32>, tensor<4x3xi32>
}"""


def test_chlo_top_k_imports_from_its_custom_form_and_breaks_ties_by_position():
    module = accy.import_stablehlo(TOP_K, filename="head.mlir")
    text = str(module)
    assert "accy.sort" in text and "total_order" in text
    x = np.random.default_rng(5).integers(0, 3, (4, 6)).astype(np.float32)
    x[2, 4] = np.nan  # the greatest in total order
    order = np.argsort(-np.nan_to_num(x, nan=np.inf), axis=1, kind="stable")[:, :3]
    expected = [np.take_along_axis(x, order, 1), order.astype(np.int32)]
    for outputs in (reference.run(module, "main", x), accy.compile(module, threads=1)(x)):
        for out, want in zip(outputs, expected):
            np.testing.assert_array_equal(out, want)


def test_chlo_top_k_errors_keep_the_line_of_the_op():
    bad = TOP_K.replace("k = 3", "k = 9").replace("4x3x", "4x9x")
    with pytest.raises(AccyError) as error:
        accy.import_stablehlo(bad, filename="head.mlir")
    assert error.value.diagnostic().startswith("head.mlir:3:")


ROUNDING = """
func.func public @main(%x: tensor<6xf32>, %lo: tensor<f32>, %hi: tensor<6xf32>) -> (tensor<6xf32>, tensor<6xf32>, tensor<6xf32>) {
  %f = stablehlo.floor %x : tensor<6xf32>
  %c = stablehlo.ceil %x : tensor<6xf32>
  %k = stablehlo.clamp %lo, %x, %hi : (tensor<f32>, tensor<6xf32>, tensor<6xf32>) -> tensor<6xf32>
  return %f, %c, %k : tensor<6xf32>, tensor<6xf32>, tensor<6xf32>
}"""


def test_floor_ceil_and_clamp_with_a_scalar_bound():
    """What `jnp.median` and `jnp.quantile` need around a sort: accy.floor, accy.ceil and
    StableHLO's clamp (min(max(x, lo), hi)) with a rank-0 lower bound."""
    module = accy.import_stablehlo(ROUNDING)
    text = str(module)
    assert "accy.floor " in text and "accy.ceil " in text
    x = np.array([-1.5, -0.0, 0.3, 2.0, np.inf, 7.5], np.float32)
    lo = np.float32(-1.0)
    hi = np.array([0.0, 1.0, 1.0, 1.0, 3.0, 9.0], np.float32)
    expected = [np.floor(x), np.ceil(x), np.minimum(np.maximum(x, lo), hi)]
    for outputs in (
        reference.run(module, "main", x, lo, hi),
        accy.compile(module, threads=1)(x, lo, hi),
    ):
        for out, want in zip(outputs, expected):
            np.testing.assert_array_equal(out, want)


def test_stablehlo_region_bodies_of_the_wrong_types_are_located_errors():
    """A comparator must take a pair of scalars per operand (here its second argument is
    an i32 for an f32 operand): a located diagnostic (StableHLO's verifier, which runs at
    parsing, names it before the importer's own check), not a crash."""
    bad = DESCENDING.replace(
        "^bb0(%a: tensor<f32>, %b: tensor<f32>):", "^bb0(%a: tensor<f32>, %b: tensor<i32>):"
    ).replace(
        "%gt = stablehlo.compare GT, %a, %b, TOTALORDER : (tensor<f32>, tensor<f32>)",
        "%c = stablehlo.convert %b : (tensor<i32>) -> tensor<f32>\n    %gt = stablehlo.compare GT, %a, %c, TOTALORDER : (tensor<f32>, tensor<f32>)",
    )
    with pytest.raises(
        AccyError,
        match=re.escape("comparator block argument #1 should be of type 'tensor<f32>'"),
    ) as error:
        accy.import_stablehlo(bad, filename="sort.mlir")
    assert error.value.diagnostic().startswith("sort.mlir:3:")


DYNAMIC_ARGMAX = """func.func @main(%x: tensor<?x5xf32>) -> (tensor<?xf32>, tensor<?xi32>) {
  %i = stablehlo.iota dim = 0 : tensor<5xi32>
  %n = stablehlo.get_dimension_size %x, dim = 0 : (tensor<?x5xf32>) -> tensor<i32>
  %n1 = stablehlo.reshape %n : (tensor<i32>) -> tensor<1xi32>
  %five = stablehlo.constant dense<5> : tensor<1xi32>
  %shape = stablehlo.concatenate %n1, %five, dim = 0 : (tensor<1xi32>, tensor<1xi32>) -> tensor<2xi32>
  %ids = stablehlo.dynamic_broadcast_in_dim %i, %shape, dims = [1] : (tensor<5xi32>, tensor<2xi32>) -> tensor<?x5xi32>
  %lo = stablehlo.constant dense<0xFF800000> : tensor<f32>
  %zero = stablehlo.constant dense<0> : tensor<i32>
  %r:2 = stablehlo.reduce(%x init: %lo), (%ids init: %zero) across dimensions = [1] : (tensor<?x5xf32>, tensor<?x5xi32>, tensor<f32>, tensor<i32>) -> (tensor<?xf32>, tensor<?xi32>)
    reducer(%a: tensor<f32>, %c: tensor<f32>) (%b: tensor<i32>, %d: tensor<i32>) {
      %gt = stablehlo.compare GT, %a, %c, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %v = stablehlo.select %gt, %a, %c : tensor<i1>, tensor<f32>
      %j = stablehlo.select %gt, %b, %d : tensor<i1>, tensor<i32>
      stablehlo.return %v, %j : tensor<f32>, tensor<i32>
    }
  return %r#0, %r#1 : tensor<?xf32>, tensor<?xi32>
}"""


@pytest.mark.parametrize("rows", [1, 4])
def test_a_fold_over_dynamic_rows_on_the_cpu(rows):
    """A general (two-operand) reduction of a tensor whose leading dim is dynamic."""
    x = np.random.default_rng(rows).standard_normal((rows, 5)).astype(np.float32)
    top, at = accy.compile(accy.import_stablehlo(DYNAMIC_ARGMAX), threads=1, rows=[rows])(x)
    np.testing.assert_array_equal(top, x.max(1))
    np.testing.assert_array_equal(at, x.argmax(1))


BF16_SORT = """func.func @f(%x: tensor<{n}xbf16>) -> (tensor<{n}xbf16>, tensor<{n}xi16>) {{
  %s = accy.sort(%x : tensor<{n}xbf16>), dim = 0 -> (tensor<{n}xbf16>) {{
  ^bb0(%a: tensor<bf16>, %b: tensor<bf16>):
    %lt = accy.compare LT, %a, %b {order} : (tensor<bf16>, tensor<bf16>) -> tensor<i1>
    accy.yield %lt : tensor<i1>
  }}
  %bits = accy.bitcast_convert %s : (tensor<{n}xbf16>) -> tensor<{n}xi16>
  func.return %s, %bits : tensor<{n}xbf16>, tensor<{n}xi16>
}}"""


@pytest.mark.parametrize("n", [4, 600])  # by insertion; by merging
@pytest.mark.parametrize("order", ["total_order", ""])
def test_bf16_sorts_and_bitcasts_keep_subnormal_bits(n, order):
    # LLVM holds bf16 values in f32 registers on x86 and narrows them back with
    # vcvtneps2bf16 (AVX512_BF16), which reads subnormals as zero: sorts move bf16
    # elements as their bits and bitcasts take them from the f32 extension (0x8001 came
    # out 0x8000, and the two compared equal; found by the program fuzzer).
    bits = np.random.default_rng(n).integers(0, 1 << 16, n).astype(np.uint16)
    bits[::2] &= 0x807F  # subnormals and zeros
    bits[(bits & 0x7F80) == 0x7F80] &= 0x807F  # no NaN: LT without total order is no order
    bits[:4] = [0x8000, 0x8001, 0x0001, 0xBF80]
    x = bits.view(ml_dtypes.bfloat16)
    module = accy.parse(BF16_SORT.format(n=n, order=order))
    got = accy.compile(module, threads=1)(x)
    want = reference.run(module, "f", x)
    np.testing.assert_array_equal(got[0].view(np.uint16), want[0].view(np.uint16))
    np.testing.assert_array_equal(got[1], want[1])
    assert sorted(got[0].view(np.uint16).tolist()) == sorted(bits.tolist())
