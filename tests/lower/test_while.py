"""`accy.while`: loops whose trip count depends on data, on the CPU target against the
reference and against the loop written out in numpy; the CUDA export's plan (the
condition read back into a host buffer each time) under the fake driver."""

from __future__ import annotations

import numpy as np
import pytest

import accy
from accy.builder import Builder
from accy.reference import run
from accy.runtime.plan_check import plan_problems, ptxas_problems, run_with_fake_driver

HALVE = """func.func @halve(%x: tensor<64xf32>, %tol: tensor<f32>) -> (tensor<64xf32>, tensor<i32>) {
  %zero = accy.constant dense<0> : tensor<i32>
  %r, %n = accy.while (%x, %zero : tensor<64xf32>, tensor<i32>) -> (tensor<64xf32>, tensor<i32>) cond {
  ^bb0(%c: tensor<64xf32>, %k: tensor<i32>):
    %a = accy.abs %c : tensor<64xf32>
    %m = accy.reduce max %a, dims = [0] : (tensor<64xf32>) -> tensor<f32>
    %more = accy.compare GT, %m, %tol : (tensor<f32>, tensor<f32>) -> tensor<i1>
    accy.yield %more : tensor<i1>
  } do {
  ^bb0(%b: tensor<64xf32>, %j: tensor<i32>):
    %half = accy.constant dense<5.000000e-01> : tensor<64xf32>
    %next = accy.multiply %b, %half : tensor<64xf32>
    %one = accy.constant dense<1> : tensor<i32>
    %j1 = accy.add %j, %one : tensor<i32>
    accy.yield %next, %j1 : tensor<64xf32>, tensor<i32>
  }
  func.return %r, %n : tensor<64xf32>, tensor<i32>
}"""


def _halve(x, tol):
    count = 0
    while np.abs(x).max() > tol:
        x, count = x * np.float32(0.5), count + 1
    return x, count


@pytest.mark.parametrize("tol", [1e-3, 100.0])  # many iterations, and none
def test_a_convergence_loop_runs_until_its_condition_fails(tol):
    x = np.random.default_rng(0).standard_normal(64).astype(np.float32) * 10
    expected, count = _halve(x, np.float32(tol))
    module = accy.parse(HALVE)
    for got, n in (
        run(module, "halve", x, np.float32(tol)),
        accy.compile(HALVE)(x, np.float32(tol)),
    ):
        np.testing.assert_array_equal(got, expected)
        assert int(n) == count


def test_a_while_inside_a_counted_loop_and_a_carried_condition():
    """The condition may be a carried value itself (a do-while's flag), and a while may
    sit in an accy.iterate: collatz steps of each of three starts, counted."""
    b = Builder()
    i32 = b.tensor("i32", [])
    boolean = b.tensor("i1", [])
    fb = b.begin_function("collatz", [i32], [i32])

    def outer(ib, start, _last):
        one = ib.constant(i32, 1)

        def cond(cb, n, steps, going):
            return going

        def body(bb, n, steps, going):
            two = bb.constant(i32, 2)
            even = bb.compare("EQ", bb.remainder(n, two), bb.constant(i32, 0))
            half = bb.divide(n, two)
            triple = bb.add(bb.multiply(n, bb.constant(i32, 3)), bb.constant(i32, 1))
            nxt = bb.select(even, half, triple)
            return [
                nxt,
                bb.add(steps, bb.constant(i32, 1)),
                bb.compare("NE", nxt, bb.constant(i32, 1)),
            ]

        _, steps, _ = ib.while_(
            [start, ib.constant(i32, 0), ib.constant(boolean, True)], cond, body
        )
        return [ib.add(start, one), steps]

    _, last = fb.iterate(3, [fb.parameter(0), fb.constant(i32, 0)], outer)
    fb.return_([last])
    fb.finish()
    module = b.finish()

    def steps(n):
        count = 0
        while True:
            n = n // 2 if n % 2 == 0 else 3 * n + 1
            count += 1
            if n == 1:
                return count

    for start in (6, 27):
        expected = steps(start + 2)  # the last of the three starts
        assert int(run(module, "collatz", np.int32(start))[0]) == expected
        assert int(accy.compile(module, threads=1)(np.int32(start))[0]) == expected


def test_the_cuda_export_reads_the_condition_back_each_time(tmp_path):
    directory = accy.export(HALVE, tmp_path / "halve", target="cuda")
    assert not ptxas_problems(directory)
    x = np.ones(64, np.float32)
    result = run_with_fake_driver(directory, [x, np.float32(0.5)], function="halve")
    assert not plan_problems(directory, "halve", result)
    # the cond's kernels ran once and its 1-byte condition came back (the fake's zeros:
    # false), then the results
    copies_back = [c for c in result["calls"] if c.startswith("memcpy_dtoh")]
    assert [c.split("bytes=")[1] for c in copies_back] == ["1", "256", "4"]


SWAPS = """func.func @swaps(%a: tensor<4xf32>, %b: tensor<4xf32>, %n: tensor<i32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %zero = accy.constant dense<0> : tensor<i32>
  %x, %y, %k = accy.while (%a, %b, %zero : tensor<4xf32>, tensor<4xf32>, tensor<i32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<i32>) cond {
  ^bb0(%p: tensor<4xf32>, %q: tensor<4xf32>, %i: tensor<i32>):
    %more = accy.compare LT, %i, %n : (tensor<i32>, tensor<i32>) -> tensor<i1>
    accy.yield %more : tensor<i1>
  } do {
  ^bb0(%p: tensor<4xf32>, %q: tensor<4xf32>, %i: tensor<i32>):
    %s:2 = accy.iterate 3 iter_args(%u = %p, %v = %q) : tensor<4xf32>, tensor<4xf32> {
      accy.yield %v, %u : tensor<4xf32>, tensor<4xf32>
    }
    %one = accy.constant dense<1> : tensor<i32>
    %j = accy.add %i, %one : tensor<i32>
    accy.yield %s#0, %s#1, %j : tensor<4xf32>, tensor<4xf32>, tensor<i32>
  }
  func.return %x, %y : tensor<4xf32>, tensor<4xf32>
}"""


@pytest.mark.parametrize("n", [0, 1, 2])
def test_a_counted_loop_that_swaps_inside_a_while(n, tmp_path):
    """Three swaps per iteration: an odd number of iterations swaps the pair. On CUDA the
    inner loop's staging buffers are allocated once, at the start, like every buffer."""
    a, b = np.arange(4, dtype=np.float32), -np.arange(4, dtype=np.float32)
    expected = (b, a) if n % 2 else (a, b)
    for got in (
        run(accy.parse(SWAPS), "swaps", a, b, np.int32(n)),
        accy.compile(SWAPS)(a, b, np.int32(n)),
    ):
        np.testing.assert_array_equal(got[0], expected[0])
        np.testing.assert_array_equal(got[1], expected[1])
    if n == 0:
        directory = accy.export(SWAPS, tmp_path / "swaps", target="cuda")
        result = run_with_fake_driver(directory, [a, b, np.int32(n)], function="swaps")
        assert not plan_problems(directory, "swaps", result)


def test_a_function_name_that_is_no_ptx_identifier(tmp_path):
    """Kernel names derive from the function's: `add_n.impl` gives `add_n_impl_...`."""
    text = """func.func @add_n.impl(%x: tensor<8xf32>) -> tensor<8xf32> {
  %y = accy.add %x, %x : tensor<8xf32>
  func.return %y : tensor<8xf32>
}"""
    directory = accy.export(text, tmp_path / "dotted", target="cuda")
    assert not ptxas_problems(directory)
    assert ".entry add_n_impl_item0" in (directory / "accy_kernels.ptx").read_text()
