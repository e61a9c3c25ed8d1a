"""Parallel loops on the CPU target: every kind of work item big enough to run as an
`scf.parallel` gives, on 2 and 3 threads, bit for bit what the sequential code
(`threads=1`) gives, and that matches the reference interpreter.

Parallel loops only split iterations that write disjoint elements, and a reduction split
into chunks (few rows, wide) folds fixed chunks into partials and then the partials in
order: every element is computed in an order fixed at lowering, so the results must not
change at all with the thread count.
"""

from __future__ import annotations

import numpy as np
import pytest
from accy.passes.lower.cpu_kernels.context import PARALLEL_MIN_WORK

import accy
from accy.diagnostics import AccyError
from accy.targets.cpu_executable import resolve_threads

RNG = np.random.default_rng(7)

PROGRAMS = {
    "elementwise_rows": (
        """
        func.func @f(%x: tensor<256x300xf32>, %y: tensor<300xf32>) -> tensor<256x300xf32> {
          %yb = accy.broadcast_in_dim %y, dims = [1] : (tensor<300xf32>) -> tensor<256x300xf32>
          %s = accy.add %x, %yb : tensor<256x300xf32>
          %e = accy.exponential %s : tensor<256x300xf32>
          %t = accy.tanh %e : tensor<256x300xf32>
          return %t : tensor<256x300xf32>
        }""",
        [(256, 300), (300,)],
    ),
    "elementwise_flat": (
        """
        func.func @f(%a: tensor<100003xf32>, %b: tensor<100003xf32>) -> tensor<100003xf32> {
          %s = accy.multiply %a, %b : tensor<100003xf32>
          %m = accy.maximum %s, %a : tensor<100003xf32>
          return %m : tensor<100003xf32>
        }""",
        [(100003,), (100003,)],
    ),
    "softmax": (
        """
        func.func @f(%x: tensor<333x257xf32>) -> tensor<333x257xf32> {
          %m = accy.reduce max %x, dims = [1] : (tensor<333x257xf32>) -> tensor<333xf32>
          %mb = accy.broadcast_in_dim %m, dims = [0] : (tensor<333xf32>) -> tensor<333x257xf32>
          %d = accy.subtract %x, %mb : tensor<333x257xf32>
          %e = accy.exponential %d : tensor<333x257xf32>
          %s = accy.reduce add %e, dims = [1] : (tensor<333x257xf32>) -> tensor<333xf32>
          %sb = accy.broadcast_in_dim %s, dims = [0] : (tensor<333xf32>) -> tensor<333x257xf32>
          %r = accy.divide %e, %sb : tensor<333x257xf32>
          return %r : tensor<333x257xf32>
        }""",
        [(333, 257)],
    ),
    "column_reduce": (
        """
        func.func @f(%x: tensor<300x400xf32>) -> tensor<400xf32> {
          %r = accy.reduce add %x, dims = [0] : (tensor<300x400xf32>) -> tensor<400xf32>
          return %r : tensor<400xf32>
        }""",
        [(300, 400)],
    ),
    "split_rows": (
        """
        func.func @f(%x: tensor<3x200003xf32>) -> tensor<3xf32> {
          %e = accy.exponential %x : tensor<3x200003xf32>
          %r = accy.reduce add %e, dims = [1] : (tensor<3x200003xf32>) -> tensor<3xf32>
          return %r : tensor<3xf32>
        }""",
        [(3, 200003)],
    ),
    "split_total": (
        """
        func.func @f(%x: tensor<300001xf32>) -> tensor<f32> {
          %r = accy.reduce add %x, dims = [0] : (tensor<300001xf32>) -> tensor<f32>
          return %r : tensor<f32>
        }""",
        [(300001,)],
    ),
    "dot": (
        """
        func.func @f(%a: tensor<3x66x70xf32>, %b: tensor<3x70x90xf32>) -> tensor<3x66x90xf32> {
          %d = accy.dot_general %a, %b, batching_dims = [0] x [0], contracting_dims = [2] x [1]
             : (tensor<3x66x70xf32>, tensor<3x70x90xf32>) -> tensor<3x66x90xf32>
          return %d : tensor<3x66x90xf32>
        }""",
        [(3, 66, 70), (3, 70, 90)],
    ),
    "transpose_slice_concat": (
        """
        func.func @f(%x: tensor<300x200xf32>) -> tensor<400x300xf32> {
          %t = accy.transpose %x, dims = [1, 0] : (tensor<300x200xf32>) -> tensor<200x300xf32>
          %s = accy.slice %x [0:300, 0:200] : (tensor<300x200xf32>) -> tensor<300x200xf32>
          %u = accy.transpose %s, dims = [1, 0] : (tensor<300x200xf32>) -> tensor<200x300xf32>
          %n = accy.negate %u : tensor<200x300xf32>
          %c = accy.concatenate %t, %n, dim = 0 : (tensor<200x300xf32>, tensor<200x300xf32>) -> tensor<400x300xf32>
          return %c : tensor<400x300xf32>
        }""",
        [(300, 200)],
    ),
    "scan_iota": (
        """
        func.func @f(%x: tensor<400x128xf32>) -> tensor<400x128xf32> {
          %i = accy.iota dim = 1 : tensor<400x128xf32>
          %s = accy.add %x, %i : tensor<400x128xf32>
          %z = accy.negate %s : tensor<400x128xf32>
          %c = accy.scan add %s, %z, dim = 1 : tensor<400x128xf32>
          return %c : tensor<400x128xf32>
        }""",
        [(400, 128)],
    ),
    "iterate": (
        """
        func.func @f(%x: tensor<256x256xf32>) -> tensor<256x256xf32> {
          %r = accy.iterate 4 iter_args(%c = %x) : tensor<256x256xf32> {
            %h = accy.constant dense<0.5> : tensor<256x256xf32>
            %m = accy.multiply %c, %h : tensor<256x256xf32>
            %t = accy.tanh %m : tensor<256x256xf32>
            accy.yield %t : tensor<256x256xf32>
          }
          return %r : tensor<256x256xf32>
        }""",
        [(256, 256)],
    ),
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_threads_give_the_sequential_results_bit_for_bit(name: str) -> None:
    text, shapes = PROGRAMS[name]
    arrays = [RNG.uniform(-2, 2, shape).astype(np.float32) for shape in shapes]
    one = accy.compile(text, target="cpu", threads=1)
    assert "scf.parallel" in one.lowered_text  # the program is big enough to split
    (want,) = one(*arrays)
    (reference,) = accy.reference.run(one.module, "f", *arrays)
    np.testing.assert_allclose(want, reference, rtol=2e-5, atol=1e-5)
    for threads in (2, 3):
        exe = accy.compile(text, target="cpu", threads=threads)
        assert exe.threads == threads
        for _ in range(3):  # repeated calls reuse the pool
            (got,) = exe(*arrays)
            np.testing.assert_array_equal(got, want)


def test_small_work_items_stay_sequential() -> None:
    side = int(PARALLEL_MIN_WORK**0.5) // 2
    t = f"tensor<{side}x{side}xf32>"
    exe = accy.compile(
        f"func.func @f(%x: {t}) -> {t} {{ %e = accy.exponential %x : {t} return %e : {t} }}",
        target="cpu",
        threads=2,
    )
    assert "scf.parallel" not in exe.lowered_text


def test_dynamic_rows_run_on_threads() -> None:
    text = """
    func.func @f(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
      %e = accy.exponential %x : tensor<?x64xf32>
      return %e : tensor<?x64xf32>
    }"""
    exe = accy.compile(text, target="cpu", threads=2)
    for rows in (1, 7, 1000):
        x = RNG.uniform(-1, 1, (rows, 64)).astype(np.float32)
        (got,) = exe(x)
        np.testing.assert_allclose(got, np.exp(x), rtol=2e-6)


def test_default_threads_follow_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    monkeypatch.delenv("ACCY_NUM_THREADS", raising=False)
    assert resolve_threads(None) == len(os.sched_getaffinity(0))
    monkeypatch.setenv("ACCY_NUM_THREADS", "3")
    assert resolve_threads(None) == 3
    monkeypatch.setenv("ACCY_NUM_THREADS", "many")
    with pytest.raises(AccyError, match="ACCY_NUM_THREADS must be a positive integer, got 'many'"):
        resolve_threads(None)


@pytest.mark.parametrize("bad", [0, -2, 1.5, True, "2"])
def test_bad_thread_counts_are_refused(bad) -> None:
    t = "tensor<4xf32>"
    text = f"func.func @f(%x: {t}) -> {t} {{ return %x : {t} }}"
    with pytest.raises(AccyError, match="threads must be a positive integer"):
        accy.compile(text, target="cpu", threads=bad)


def test_threads_are_a_cpu_option() -> None:
    t = "tensor<4xf32>"
    text = f"func.func @f(%x: {t}) -> {t} {{ return %x : {t} }}"
    with pytest.raises(AccyError, match="threads applies to the cpu target, not to cuda"):
        accy.compile(text, target="cuda", threads=2)


def test_a_forked_child_runs_parallel_code() -> None:
    # The child has none of the parent's worker threads: the runtime starts its own.
    import os

    text, shapes = PROGRAMS["elementwise_flat"]
    exe = accy.compile(text, target="cpu", threads=2)
    a, b = (RNG.uniform(-1, 1, s).astype(np.float32) for s in shapes)
    (want,) = exe(a, b)
    pid = os.fork()
    if pid == 0:  # the child: exit status 0 only if the result is right
        try:
            (got,) = exe(a, b)
            os._exit(0 if np.array_equal(got, want) else 1)
        except BaseException:  # noqa: BLE001 - a forked child must never return into pytest
            os._exit(2)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


def test_a_missing_async_runtime_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    from accy.runtime import libraries

    def missing():
        raise libraries.NativeLibraryNotFoundError(
            "accy's native library libaccy_async_runtime.so was not found"
        )

    monkeypatch.setattr(libraries, "async_runtime_library_path", missing)
    text, _ = PROGRAMS["elementwise_flat"]
    with pytest.raises(AccyError, match="libaccy_async_runtime.so was not found") as info:
        accy.compile(text, target="cpu", threads=2)
    assert "threads=1 compiles sequential code" in str(info.value)
    assert accy.compile(text, target="cpu", threads=1).threads == 1  # needs no runtime
