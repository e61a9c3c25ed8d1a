"""The conformance runner (`benchmarks/conformance.py`): suite files as cases, the checks'
rules, the watchdog's classes, and a whole run on a small suite written here."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import conformance
import conformance_cases as cc
import ml_dtypes
import numpy as np
from watchdog import run_in_workers

SUBSET = Path(__file__).resolve().parents[1] / "data" / "conformance"


# ---------------------------------------------------------------------------------------
# Suite files as cases
# ---------------------------------------------------------------------------------------

TESTDATA = """\
// RUN: stablehlo-opt -inline %s | stablehlo-translate --interpret

module @jit_main attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main() -> (tensor<2xf32> {jax.result_info = "", mhlo.layout_mode = "default"}) {
    %0:2 = call @inputs() : () -> (tensor<2xf32>, tensor<2xf32>)
    %1 = call @expected() : () -> tensor<2xf32>
    %2 = stablehlo.add %0#0, %0#1 : tensor<2xf32>
    stablehlo.custom_call @check.expect_close(%2, %1) {has_side_effect = true} : (tensor<2xf32>, tensor<2xf32>) -> ()
    return %2 : tensor<2xf32>
  }
  func.func private @inputs() -> (tensor<2xf32> {mhlo.layout_mode = "default"}, tensor<2xf32> {mhlo.layout_mode = "default"}) {
    %cst = stablehlo.constant dense<[1.0, 2.0]> : tensor<2xf32>
    %cst_0 = stablehlo.constant dense<[3.0, EXTRA]> : tensor<2xf32>
    return %cst, %cst_0 : tensor<2xf32>, tensor<2xf32>
  }
  func.func private @expected() -> (tensor<2xf32> {mhlo.layout_mode = "default"}) {
    %cst = stablehlo.constant dense<[4.0, 6.0]> : tensor<2xf32>
    return %cst : tensor<2xf32>
  }
}
"""

INTERPRET = """\
// RUN: stablehlo-translate --interpret -split-input-file %s

func.func @add_op_test_i64() {
  %0 = stablehlo.constant dense<[1, 2]> : tensor<2xi64>
  %1 = stablehlo.add %0, %0 : tensor<2xi64>
  check.expect_eq_const %1, dense<[2,
                                   4]> : tensor<2xi64>
  func.return
}

// -----

func.func @two_checks() {
  %0 = stablehlo.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %1 = stablehlo.multiply %0, %0 : tensor<2xf32>
  check.expect_almost_eq_const %1,
      dense<[1.0, 4.00001]> : tensor<2xf32>
  check.expect_eq %0, %0 : tensor<2xf32>
  func.return
}

// // -----

func.func @second_function() {
  %0 = stablehlo.constant dense<7> : tensor<i32>
  check.expect_eq_const %0, dense<7> : tensor<i32>
  func.return
}

// -----

func.func @f8_is_refused() {
  %0 = stablehlo.constant dense<1.0> : tensor<f8E4M3FN>
  check.expect_eq_const %0, dense<1.0> : tensor<f8E4M3FN>
  func.return
}
"""


def write_suite(root: Path, extra: str = "4.0") -> Path:
    (root / "testdata").mkdir(parents=True)
    (root / "interpret").mkdir()
    (root / "testdata" / "add_float32_2.mlir").write_text(TESTDATA.replace("EXTRA", extra))
    (root / "interpret" / "add.mlir").write_text(INTERPRET)
    return root


def test_testdata_case_takes_inputs_as_arguments_and_returns_the_checked_value(tmp_path):
    root = write_suite(tmp_path)
    (case,) = cc.collect(root, ("testdata",))
    assert case.id == "testdata/add_float32_2" and case.family == "add"
    assert "func.func public @main(%input0: tensor<2xf32>, %input1: tensor<2xf32>)" in case.program
    assert "stablehlo.add %input0, %input1" in case.program
    assert "@check" not in case.program and "@inputs" not in case.program
    assert "return %2 : tensor<2xf32>" in case.program
    assert case.checks == (cc.Check("close", 0, 0, tolerance=1e-4, max_ulp=3),)
    assert "func.func @main()" in case.inputs_program and "4.0, 6.0" in case.oracle_program


def test_interpret_chunks_multiline_checks_and_functions_after_a_commented_separator(tmp_path):
    root = write_suite(tmp_path)
    cases = {c.id: c for c in cc.collect(root, ("interpret",))}
    assert sorted(cases) == [
        "interpret/add#0",
        "interpret/add#1",
        "interpret/add#1.1",
        "interpret/add#2",
    ]
    first = cases["interpret/add#0"]
    assert "func.func @add_op_test_i64() -> (tensor<2xi64>) {" in first.program
    assert "func.return %1 : tensor<2xi64>" in first.program and "check." not in first.program
    assert first.checks == (cc.Check("eq", 0, 0, tolerance=1e-4),)
    two = cases["interpret/add#1"]
    assert two.function == "two_checks" and "check." not in two.program
    almost, equal = two.checks
    assert (almost.rule, almost.actual, almost.expected) == ("almost_eq", 0, 0)
    assert (equal.rule, equal.against_actual, equal.actual, equal.expected) == ("eq", True, 1, 1)
    assert cases["interpret/add#1.1"].function == "second_function"
    assert first.line_offset == 0 and cases["interpret/add#2"].line_offset > 20


def test_the_vendored_subset_reads_without_a_placeholder():
    cases = cc.collect(SUBSET)
    assert len(cases) > 800
    assert [c.id for c in cases if not c.function] == []


def test_dynamic_case_turns_dimension_arguments_into_constants_for_the_oracle():
    path = next((SUBSET / "testdata" / "dynamic").glob("*.mlir"))
    case = cc.collect(SUBSET, ("testdata",))
    case = next(c for c in case if c.id == f"testdata/dynamic/{path.stem}")
    assert case.rows == (cc.DYNAMIC_SIZE,)
    dims = [s for s in case.random_inputs if s.kind == "dim"]
    assert dims and all(s.shape == () for s in dims)
    assert case.oracle_arguments == tuple(range(len(dims), len(case.random_inputs)))
    assert f"stablehlo.constant dense<{cc.DYNAMIC_SIZE}> : tensor<i64>" in case.oracle_program


def test_families():
    assert cc.testdata_family("scatter_add_float32_1_2_3_float32_1") == "scatter_add"
    assert cc.testdata_family("cumsum_bool_8_9") == "cumsum"
    assert cc.testdata_family("iota_2x32_shape_") == "iota"
    assert cc.dynamic_family("vmap_scatter_max_non_x_dynamic", {"scatter", "scatter_max"}) == (
        "dynamic/scatter_max"
    )


# ---------------------------------------------------------------------------------------
# The rules
# ---------------------------------------------------------------------------------------


def f32(*values):
    return np.array(values, np.float32)


def test_eq_is_exact_but_matches_nans_and_zeros_of_either_sign():
    rule = cc.Check("eq", 0, 0)
    assert cc.compare(rule, f32(1, np.nan, -0.0), f32(1, np.nan, 0.0)) is None
    assert "1 of 2 elements differ" in cc.compare(
        rule, f32(1, 2), f32(1, np.nextafter(np.float32(2), np.float32(3)))
    )
    assert cc.compare(rule, np.array([3], np.int32), np.array([4], np.int32))


def test_close_counts_ulps():
    rule = cc.Check("close", 0, 0, max_ulp=3)
    one = np.float32(1)
    near = f32(np.nextafter(np.nextafter(np.nextafter(one, 2), 2), 2))
    assert cc.compare(rule, near, f32(1)) is None
    assert "(4 ULP)" in cc.compare(rule, f32(np.nextafter(near[0], 2)), f32(1))
    assert cc.compare(rule, f32(np.inf), f32(np.inf)) is None
    assert cc.compare(rule, f32(np.inf), f32(3.4e38))
    bf16 = np.array([1.0], ml_dtypes.bfloat16)
    assert cc.compare(rule, bf16, bf16) is None


def test_almost_eq_is_absolute_and_integers_stay_exact():
    rule = cc.Check("almost_eq", 0, 0, tolerance=1e-4)
    assert cc.compare(rule, f32(1000.0), f32(1000.00006)) is None
    assert cc.compare(rule, f32(1.0), f32(1.001))
    assert cc.compare(rule, f32(np.nan), f32(np.nan)) is None
    assert cc.compare(rule, f32(np.nan), f32(1.0))
    assert cc.compare(rule, np.array([1], np.int64), np.array([2], np.int64))
    assert "shape" in cc.compare(rule, f32(1, 2), f32(1))


def test_oracle_rule_is_either_float_rule():
    rule = cc.Check("oracle", 0, 0, tolerance=1e-4, max_ulp=3)
    assert cc.compare(rule, f32(1e6), f32(1e6 + 0.125)) is None  # 2 ULP, 0.125 apart
    assert cc.compare(rule, f32(1e-9), f32(2e-9)) is None  # many ULP, 1e-9 apart
    assert cc.compare(rule, f32(1.0), f32(1.01))


def test_refusal_key_drops_locations_and_types():
    key = conformance.refusal_key(
        "a.mlir:3:4: error: 'func.func' has element type f64 (tensor<2x3xf64>); accy ..."
    )
    assert key == "error: 'func.func' has element type f64 (tensor<...>); accy ..."
    assert "complex" not in conformance.refusal_key("x:1:1: error: t (tensor<2xcomplex<f32>>)")


# ---------------------------------------------------------------------------------------
# The watchdog and a whole run
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Item:
    id: str


def test_watchdog_classifies_a_dead_and_a_hanging_worker_and_replaces_them():
    # The timeout counts from when a worker begins an item, not from when it was given:
    # spawning and importing a worker (seconds on a loaded machine, and again after the
    # crash) is not charged to an item. So 3 s need only exceed an item that returns at
    # once; the hanging one waits forever.
    items = [Item("ok1"), Item("die"), Item("ok2"), Item("hang"), Item("ok3")]
    outcomes = run_in_workers(
        items, "worker_targets:act", jobs=2, timeout=3, options={"note": "seen"}
    )
    kinds = {o.id: o.kind for o in outcomes}
    assert kinds == {"ok1": "PASS", "die": "CRASH", "ok2": "PASS", "hang": "TIMEOUT", "ok3": "PASS"}
    died = outcomes[1]
    assert "signal 6" in died.detail and "about to abort" in died.detail and died.stage == "die"
    assert outcomes[3].stage == "hang" and outcomes[0].detail == "seen"


def test_a_workers_start_up_is_not_charged_to_its_item():
    # Importing the target takes 2 s, the item no time: within a timeout of 1 s.
    outcomes = run_in_workers([Item("first")], "worker_slow_start:act", jobs=1, timeout=1)
    assert [o.kind for o in outcomes] == ["PASS"]


def test_watchdog_times_out_a_worker_that_never_starts():
    # Its import never ends, so it never begins the item, however fast the machine.
    outcomes = run_in_workers(
        [Item("first")], "worker_never_starts:act", jobs=1, timeout=60, startup_timeout=1
    )
    assert [(o.kind, o.detail) for o in outcomes] == [
        ("TIMEOUT", "the worker did not begin the item within 1 s")
    ]


def test_a_whole_run_and_its_ratchet(tmp_path, capsys):
    root = write_suite(tmp_path / "suite", extra="5.0")  # expected 4.0, 6.0; computes 4.0, 7.0
    results = tmp_path / "results.json"
    status = conformance.main(
        ["--root", str(root), "--jobs", "2", "--quiet", "--json", str(results), "--ratchet"]
    )
    out = capsys.readouterr().out
    kinds = {r["id"]: r["kind"] for r in json.loads(results.read_text())}
    assert kinds == {
        "testdata/add_float32_2": "WRONG",
        "interpret/add#0": "PASS",
        "interpret/add#1": "PASS",
        "interpret/add#1.1": "PASS",
        "interpret/add#2": "REFUSED",
    }
    assert status == 1 and "ratchet failed: 1 WRONG" in out
    assert "1 of 2 elements are more than 3 ULP off" in out
    assert "has element type f8E4M3FN" in out  # the most common refusals

    (root / "testdata" / "add_float32_2.mlir").write_text(TESTDATA.replace("EXTRA", "4.0"))
    assert conformance.main(["--root", str(root), "--quiet", "--ratchet", "--update-ratchet"]) == 0
    assert json.loads((root / "ratchet.json").read_text())["pass"] == 4
    (root / "ratchet.json").write_text(json.dumps({"pass": 5}))
    assert conformance.main(["--root", str(root), "--quiet", "--ratchet"]) == 1
    assert "4 PASS, below the 5" in capsys.readouterr().out


def test_make_subset_copies_a_fixed_sample(tmp_path):
    root = write_suite(tmp_path / "suite")
    assert (
        conformance.main(
            ["--root", str(root), "--make-subset", str(tmp_path / "s"), "--every", "1"]
        )
        == 0
    )
    assert (tmp_path / "s" / "testdata" / "add_float32_2.mlir").read_text() == (
        root / "testdata" / "add_float32_2.mlir"
    ).read_text()
    assert (tmp_path / "s" / "interpret" / "add.mlir").exists()
    assert "(CRC-32)" in (tmp_path / "s" / "README.md").read_text()


def test_a_missing_suite_is_an_error(tmp_path, capsys):
    assert conformance.main(["--root", str(tmp_path)]) == 1
    assert "holds no testdata/ or interpret/ folder" in capsys.readouterr().err


CUMSUM = """\
module @jit_main {
  func.func public @main() -> (tensor<6xf32> {jax.result_info = ""}) {
    %0 = call @inputs() : () -> tensor<6xf32>
    %1 = call @expected() : () -> tensor<6xf32>
    %2 = call @cumsum(%0) : (tensor<6xf32>) -> tensor<6xf32>
    stablehlo.custom_call @check.expect_close(%2, %1) {has_side_effect = true} : (tensor<6xf32>, tensor<6xf32>) -> ()
    return %2 : tensor<6xf32>
  }
  func.func private @inputs() -> (tensor<6xf32>) {
    %cst = stablehlo.constant dense<[-0.605086624, 3.20973015, -0.268346637, 0.00158312498, 0.836728096, -3.3338871]> : tensor<6xf32>
    return %cst : tensor<6xf32>
  }
  func.func private @expected() -> (tensor<6xf32>) {
    %cst = stablehlo.constant dense<[-0.605086624, 2.60464358, 2.33629704, 2.33788013, 3.17460823, LAST]> : tensor<6xf32>
    return %cst : tensor<6xf32>
  }
  func.func private @cumsum(%arg0: tensor<6xf32>) -> tensor<6xf32> {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %1 = "stablehlo.reduce_window"(%arg0, %cst) <{padding = dense<[[5, 0]]> : tensor<1x2xi64>, window_dimensions = array<i64: 6>}> ({
    ^bb0(%arg1: tensor<f32>, %arg2: tensor<f32>):
      %2 = stablehlo.add %arg1, %arg2 : tensor<f32>
      stablehlo.return %2 : tensor<f32>
    }) : (tensor<6xf32>, tensor<f32>) -> tensor<6xf32>
    return %1 : tensor<6xf32>
  }
}
"""


def test_a_sum_closer_to_the_exact_value_than_its_expectation_passes_and_is_listed(
    tmp_path, capsys
):
    # StableHLO's expectation is the sequential f32 chain (-0.15927887, 8 ULP off the exact
    # -0.15927899); accy's scan rounds the exact prefix.
    root = tmp_path / "suite"
    (root / "testdata").mkdir(parents=True)
    (root / "testdata" / "cumsum_float32_6.mlir").write_text(CUMSUM.replace("LAST", "-0.15927887"))
    results = root / "results.json"
    assert conformance.main(["--root", str(root), "--quiet", "--json", str(results)]) == 0
    (result,) = json.loads(results.read_text())
    assert result["kind"] == "PASS"
    assert "passed closer to the exact value than the expectation (1)" in capsys.readouterr().out


def test_the_exact_value_arbitrates_only_what_it_can_vouch_for(tmp_path):
    from accy.mlir_bridge import eval_stablehlo

    root = tmp_path / "suite"
    (root / "testdata").mkdir(parents=True)
    (root / "testdata" / "cumsum_float32_6.mlir").write_text(CUMSUM.replace("LAST", "-0.15927887"))
    (case,) = cc.collect(root, ("testdata",))
    (check,) = case.checks
    inputs = eval_stablehlo(case.inputs_program)
    (expected,) = eval_stablehlo(case.oracle_program)
    exact = np.cumsum(inputs[0].astype(np.float64)).astype(np.float32)
    assert conformance._closer_to_exact(case, check, exact, expected, inputs, eval_stablehlo)
    off = exact.copy()
    off[-1] = np.float32(-0.1593)  # off both the expectation and the exact value
    assert not conformance._closer_to_exact(case, check, off, expected, inputs, eval_stablehlo)
    add = cc.collect(write_suite(tmp_path / "add", extra="5.0"), ("testdata",))[0]
    assert not conformance._closer_to_exact(  # no reduction: the expectation is the answer
        add, add.checks[0], np.float32([4, 7]), np.float32([4, 6]), [], eval_stablehlo
    )
