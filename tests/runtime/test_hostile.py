"""Compiled objects against hostile programs and callers.

- Functions named like the C library's symbols (`abs`, `exit`, `_start`, `main`), the
  runtimes' (`mgpuMemAlloc`) or accy's own (`accy_allocation_failed`, the host constant
  `accy_constant_0`, the kernel module `accy_kernels`, the export's
  `accy_export_signature`) run as written on the CPU JIT and in
  CPU and CUDA exports: every lowered function has a symbol of its own (`accy_fn_<name>`).
- A function of a closed module is refused (`ClosedModuleError`), and `close` waits for
  the calls in flight instead of unloading the code under them.
- A parameter far larger than memory compiles (nothing argument-sized is allocated).
- A re-export that fails part-way leaves the earlier export as it was, loadable.
- Wrong arguments and look-ups are `AccyError`s (also `TypeError`/`KeyError`/`ValueError`).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

import accy
import accy.aot
from accy import reference
from accy.diagnostics import AccyError, AccyInputError, AccyMemoryError
from accy.runtime import fake_driver_library_path, load
from accy.runtime.abi import host_symbol
from accy.runtime.loader import (
    ArgumentShapeError,
    ArgumentTypeError,
    ClosedModuleError,
    OutOfMemoryError,
    UnknownFunctionError,
    function_symbol,
)
from accy.runtime.plan_check import plan_problems, run_with_fake_driver

ROOT = Path(__file__).resolve().parents[2]

NAMES = [
    "abs",
    "exit",
    "_start",
    "main",
    "accy_allocation_failed",
    "mgpuMemAlloc",
    "accy_constant_0",
    "accy_kernels",
    "accy_export_signature",
]
"""The C library's, a runtime's and accy's own symbols (the export's glue defines
`accy_export_signature`): each was a crash, wrong results or a failed compile before
functions got symbols of their own."""


def _function(name: str, first: float) -> str:
    """A function with a host constant (its first element `first`), a product and a
    temporary in the arena (so the module calls `accy_allocation_failed`)."""
    return f"""func.func @{name}(%a: tensor<4x8xf32>, %b: tensor<8x4xf32>) -> tensor<4xf32> {{
  %c = accy.constant dense<[[{first}, 1.0, 2.0, 3.0], [4.0, 5.0, 6.0, 7.0], [8.0, 9.0, 10.0, 11.0], [12.0, 13.0, 14.0, 15.0]]> : tensor<4x4xf32>
  %d = accy.dot_general %a, %b, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<4x8xf32>, tensor<8x4xf32>) -> tensor<4x4xf32>
  %e = accy.add %d, %c : tensor<4x4xf32>
  %t = accy.transpose %e, dims = [1, 0] : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %r = accy.reduce add %t, dims = [1] : (tensor<4x4xf32>) -> tensor<4xf32>
  func.return %r : tensor<4xf32>
}}
"""


HOSTILE = "".join(_function(name, 100.0 * (i + 1)) for i, name in enumerate(NAMES))
"""One function per name in `NAMES`, each with its own constant (so each result tells
which function ran)."""

RNG = np.random.default_rng(54)
A = RNG.standard_normal((4, 8)).astype(np.float32)
B = RNG.standard_normal((8, 4)).astype(np.float32)


def expected(name: str) -> np.ndarray:
    return reference.run(accy.parse(HOSTILE), name, A, B)[0]


@pytest.mark.parametrize("threads", [1, 2])
def test_functions_named_like_other_symbols_run_on_the_cpu_jit(threads):
    exe = accy.compile(HOSTILE, threads=threads)
    assert "@accy_allocation_failed" in exe.lowered_text  # the module's own is declared
    for name in NAMES:
        assert f"func.func @{host_symbol(name)}(" in exe.lowered_text
        (result,) = exe[name](A, B)
        np.testing.assert_allclose(result, expected(name), rtol=1e-5, err_msg=name)


CALL_EACH = r"""
import json, sys
import numpy as np
sys.path.insert(0, sys.argv[1])
import accy.runtime
module = accy.runtime.load(sys.argv[2])
a, b = np.load(sys.argv[3]), np.load(sys.argv[4])
print(json.dumps({name: module[name](a, b)[0].tolist() for name in json.loads(sys.argv[5])}))
"""
"""Runs in a fresh interpreter (a function that ran `exit` or `_start` ended it)."""


def test_functions_named_like_other_symbols_run_in_a_cpu_export(tmp_path):
    # opt_level=0: each C interface calls its function (at -O3 it may inline it).
    directory = accy.export(HOSTILE, tmp_path / "out", target="cpu", threads=2, opt_level=0)
    manifest = json.loads((directory / "manifest.json").read_text())
    for name in NAMES:
        assert manifest["functions"][name]["symbol"] == f"_mlir_ciface_accy_fn_{name}"
        assert function_symbol(name) == f"_mlir_ciface_{host_symbol(name)}"
    np.save(tmp_path / "a.npy", A)
    np.save(tmp_path / "b.npy", B)
    process = subprocess.run(
        [sys.executable, "-c", CALL_EACH, str(ROOT), str(directory), str(tmp_path / "a.npy"),
         str(tmp_path / "b.npy"), json.dumps(NAMES)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert process.returncode == 0, process.stderr
    results = json.loads(process.stdout)
    for name in NAMES:
        np.testing.assert_allclose(results[name], expected(name), rtol=1e-5, err_msg=name)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.npy", "b.npy", "out"]


def test_functions_named_like_other_symbols_run_in_a_cuda_export(tmp_path):
    """Under the fake driver (which runs no kernel): each function loads, makes the calls
    its plan says, and the process lives."""
    directory = accy.export(HOSTILE, tmp_path / "out", target="cuda")
    for name in NAMES:
        result = run_with_fake_driver(directory, [A, B], function=name, import_root=ROOT)
        assert result["error"] is None, (name, result["error"])
        assert result["shapes"] == [[4]], name
        assert plan_problems(directory, name, result) == [], name


# ---------------------------------------------------------------------------------------
# close
# ---------------------------------------------------------------------------------------

ADD4 = """func.func @f(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %c = accy.add %a, %b : tensor<4xf32>
  func.return %c : tensor<4xf32>
}
"""
ONES = np.ones(4, np.float32)


@pytest.fixture(scope="module")
def add4(tmp_path_factory) -> Path:
    return accy.export(ADD4, tmp_path_factory.mktemp("add4") / "out", target="cpu", threads=1)


def test_a_call_after_close_is_refused(add4):
    module = load(add4)
    f = module.f
    module.close()
    for call in (lambda: f(ONES, ONES), lambda: module["f"](ONES, ONES)):
        with pytest.raises(ClosedModuleError, match="@f called after the export .* was closed"):
            call()
    assert issubclass(ClosedModuleError, AccyError)
    module.close()  # again: nothing left to do


def test_close_waits_for_the_calls_in_flight(add4):
    """A call that entered the module keeps its library loaded through a `close` in
    another thread; calls that come after the close began are refused."""
    module = load(add4)
    module.gate.enter("f")  # a call in flight
    closer = threading.Thread(target=module.close)
    closer.start()
    while not module.gate.closed:
        closer.join(0)  # lets the closer run until it waits for the call
    assert "library" in module.__dict__  # not unloaded under the call
    with pytest.raises(ClosedModuleError):
        module.f(ONES, ONES)
    module.gate.leave()
    closer.join()
    assert "library" not in module.__dict__


def test_calls_racing_a_close_finish_or_are_refused(add4):
    module = load(add4)
    outcomes: list[str] = []

    def caller() -> None:
        f = module.f
        for _ in range(2000):
            try:
                (y,) = f(ONES, ONES)
            except ClosedModuleError:
                outcomes.append("refused")
                return
            assert (y == 2).all()
        outcomes.append("finished")

    threads = [threading.Thread(target=caller) for _ in range(4)]
    for thread in threads:
        thread.start()
    module.close()
    for thread in threads:
        thread.join()
    assert set(outcomes) <= {"finished", "refused"} and len(outcomes) == 4


CUDA_JIT_CLOSE = r"""
import numpy as np, accy
from accy.runtime.loader import ClosedModuleError
exe = accy.compile(open(__import__("sys").argv[1]).read(), target="cuda")
f = exe.f
(y,) = f(np.ones(4, np.float32), np.ones(4, np.float32))
exe.close()
try:
    f(np.ones(4, np.float32), np.ones(4, np.float32))
except ClosedModuleError as error:
    print("refused:", error)
"""


def test_a_cuda_executable_refuses_calls_after_close(tmp_path):
    source = tmp_path / "add4.mlir"
    source.write_text(ADD4)
    process = subprocess.run(
        [sys.executable, "-c", CUDA_JIT_CLOSE, str(source)],
        env=dict(os.environ, ACCY_CUDA_DRIVER=str(fake_driver_library_path())),
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert process.returncode == 0, process.stderr
    assert process.stdout.startswith("refused: error: @f called after its executable was closed")


# ---------------------------------------------------------------------------------------
# A parameter larger than memory
# ---------------------------------------------------------------------------------------

HUGE = 1 << 45
"""f32 elements: 128 TiB, more than an x86-64 process can address."""


def test_a_parameter_larger_than_memory_compiles():
    text = f"""func.func @head(%x: tensor<{HUGE}xf32>) -> tensor<4xf32> {{
  %0 = accy.slice %x [0:4] : (tensor<{HUGE}xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}}"""
    exe = accy.compile(text, threads=1)
    with pytest.raises(AccyInputError, match=rf"expected shape \({HUGE},\), got \(4,\)"):
        exe(ONES)


# ---------------------------------------------------------------------------------------
# Re-export
# ---------------------------------------------------------------------------------------

MUL4 = ADD4.replace("accy.add", "accy.multiply")


def _files(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir())}


def _failing_at(step: int, function):
    """`function`, except that its call number `step` raises (once)."""
    calls = [0]

    def wrapper(*args, **kwargs):
        calls[0] += 1
        if calls[0] == step + 1:
            raise OSError(28, "No space left on device (injected)")
        return function(*args, **kwargs)

    return wrapper


@pytest.mark.parametrize(
    ("patched", "step"),
    [("_replace", 0), ("_replace", 1), ("rename", 0), ("rename", 1), ("rename", 2)],
)
def test_a_reexport_that_fails_part_way_leaves_the_earlier_export(
    tmp_path, monkeypatch, patched, step
):
    """The earlier export (3 files: threads=2 brings the async runtime) is replaced by one
    of 2 files; a move failing at any step (moving the earlier files aside, the manifest
    first, or the new ones in, the manifest last) puts the earlier export back."""
    target = accy.export(ADD4, tmp_path / "out", target="cpu", threads=2)
    before = _files(target)
    if patched == "_replace":
        monkeypatch.setattr(accy.aot, "_replace", _failing_at(step, accy.aot._replace))
    else:
        monkeypatch.setattr(os, "rename", _failing_at(step, os.rename))
    with pytest.raises(accy.aot.ExportError, match="earlier export is unchanged"):
        accy.export(MUL4, target, target="cpu", threads=1)
    monkeypatch.undo()
    assert _files(target) == before  # no scratch directory inside it either
    assert [p.name for p in tmp_path.iterdir()] == ["out"]
    (y,) = load(target).f(ONES, 3 * ONES)
    np.testing.assert_array_equal(y, 4 * ONES)


def test_a_reexport_replaces_only_the_earlier_exports_files(tmp_path):
    target = accy.export(ADD4, tmp_path / "out", target="cpu", threads=2)
    accy.export(MUL4, target, target="cpu", threads=1)
    assert sorted(_files(target)) == ["libaccy_program.so", "manifest.json"]
    assert [p.name for p in tmp_path.iterdir()] == ["out"]
    (y,) = load(target).f(ONES, 3 * ONES)
    np.testing.assert_array_equal(y, 3 * ONES)


# ---------------------------------------------------------------------------------------
# Wrong arguments
# ---------------------------------------------------------------------------------------


@pytest.fixture(scope="module", params=["jit", "export"])
def compiled(request, add4):
    return accy.compile(ADD4, threads=1) if request.param == "jit" else load(add4)


@pytest.mark.parametrize(
    ("call", "error", "builtin"),
    [
        (lambda m: m[0], ArgumentTypeError, TypeError),
        (lambda m: m[None], ArgumentTypeError, TypeError),
        (lambda m: m["nope"], UnknownFunctionError, KeyError),
        (lambda m: m.f(ONES), AccyInputError, None),
        (lambda m: m.f(ONES, b=ONES), ArgumentTypeError, TypeError),
        (lambda m: m.f(ONES, ONES.astype(np.float64)), AccyInputError, None),
        (lambda m: m.f(ONES, np.ones(5, np.float32)), AccyInputError, None),
        (lambda m: m.f(ONES, [[1.0], [1.0, 2.0]]), AccyInputError, None),
        (lambda m: m.f(ONES, object()), AccyInputError, None),
    ],
)
def test_wrong_arguments_are_accy_errors(compiled, call, error, builtin):
    with pytest.raises(error) as info:
        call(compiled)
    if builtin is not None:
        assert isinstance(info.value, builtin)
    assert "Traceback" not in str(info.value) and str(info.value).startswith("error: ")


def test_the_loaders_argument_errors_are_also_builtin_errors(add4):
    module = load(add4)
    with pytest.raises(ArgumentTypeError, match="takes 2 arguments, got 1"):
        module.f(ONES)
    with pytest.raises(ArgumentTypeError, match="dtype float64, expected float32"):
        module.f(ONES, ONES.astype(np.float64))
    with pytest.raises(ArgumentShapeError, match=r"shape \(5,\), expected \(4,\)"):
        module.f(ONES, np.ones(5, np.float32))
    assert issubclass(ArgumentTypeError, TypeError) and issubclass(ArgumentShapeError, ValueError)
    assert issubclass(OutOfMemoryError, AccyMemoryError)
    module.close()


def test_an_executable_called_with_keywords_says_so():
    with pytest.raises(ArgumentTypeError, match="takes its arguments by position"):
        accy.compile(ADD4, threads=1)(ONES, b=ONES)
