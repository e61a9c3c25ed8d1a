"""A plan whose memory cannot be allocated is an error, not a crash: the host code checks
every allocation before it runs anything (`accy.passes.lower.cpu`, *Allocation failures*)
and reports the first that failed. The arena here (200 TB) exceeds the 128 TB of x86-64
user address space, so no allocator can grant it whatever the overcommit policy."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import accy
from accy.diagnostics import AccyMemoryError
from accy.runtime.loader import OutOfMemoryError

N = 5_000_000
PROGRAM = f"""func.func @f(%a: tensor<{N}xf32>) -> tensor<{N}xf32> {{
  %0 = accy.broadcast_in_dim %a, dims = [1] : (tensor<{N}xf32>) -> tensor<{N}x{N}xf32>
  %1 = accy.transpose %0, dims = [1, 0] : (tensor<{N}x{N}xf32>) -> tensor<{N}x{N}xf32>
  %2 = accy.reduce max %1, dims = [1] : (tensor<{N}x{N}xf32>) -> tensor<{N}xf32>
  func.return %2 : tensor<{N}xf32>
}}
"""
MESSAGE = r"@f could not allocate \d+ bytes for its plan .*; nothing ran"


@pytest.fixture(scope="module")
def module():
    return accy.parse(PROGRAM)


def test_the_arena_exceeds_the_address_space(module) -> None:
    arena = accy.prepare(module).arena.functions["f"].size
    assert 2**47 < arena < 2**48


@pytest.mark.parametrize("threads", [1, 2])
def test_a_failed_allocation_raises(module, threads: int) -> None:
    exe = accy.compile(module, target="cpu", threads=threads)
    x = np.ones(N, np.float32)
    with pytest.raises(AccyMemoryError, match=MESSAGE):
        exe["f"](x)
    with pytest.raises(MemoryError, match=MESSAGE):  # again: the record was taken
        exe["f"](x)


def test_a_failed_allocation_in_an_export_raises(module, tmp_path) -> None:
    loaded = accy.runtime.load(accy.export(module, tmp_path / "out", target="cpu", threads=1))
    with pytest.raises(OutOfMemoryError, match=MESSAGE):
        loaded.f(np.ones(N, np.float32))
    loaded.close()


def test_accy_run_reports_it(tmp_path) -> None:
    (tmp_path / "big.mlir").write_text(PROGRAM)
    np.savez(tmp_path / "in.npz", np.ones(N, np.float32))
    done = subprocess.run(
        [sys.executable, "-m", "accy.cli.run", "big.mlir", "--inputs", "in.npz"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert done.returncode == 1, done.stderr
    assert done.stderr.startswith("error: @f could not allocate "), done.stderr
    assert "Traceback" not in done.stderr
