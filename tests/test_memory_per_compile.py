"""Compiling does not keep memory once the compiled object is dropped: each MLIR context
(and the JIT made in it) used to stay alive through its diagnostic handler, about 2.5 MB
per `accy.compile` or `accy.export`. Measured in a fresh process, with a generous bound."""

from __future__ import annotations

import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent(
    """
    import gc, sys, tempfile
    import numpy as np
    import accy

    TEXT = '''func.func @f(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
      %0 = accy.add %a, %b : tensor<4xf32>
      func.return %0 : tensor<4xf32>
    }
    '''
    a = np.ones(4, np.float32)
    scratch = tempfile.mkdtemp()

    def rss_mb():
        return int(open("/proc/self/statm").read().split()[1]) * 4096 / 2**20

    def step(kind):
        if kind == "compile":
            exe = accy.compile(TEXT, target="cpu", threads=1)
            assert exe["f"](a, a)[0][0] == 2.0
        else:
            accy.export(TEXT, f"{scratch}/out", target="cpu", threads=1)

    kind, warm, measured = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    for _ in range(warm):
        step(kind)
    gc.collect()
    base = rss_mb()
    for _ in range(measured):
        step(kind)
    gc.collect()
    print(rss_mb() - base)
    """
)


def growth_mb(kind: str, warm: int, measured: int) -> float:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, kind, str(warm), str(measured)],
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    return float(done.stdout.split()[-1])


def test_compiles_return_their_memory() -> None:
    # Before the fix: about 150 MB for 60 compiles.
    assert growth_mb("compile", 20, 60) < 40


def test_exports_return_their_memory() -> None:
    # Before the fix: about 50 MB for 20 exports.
    assert growth_mb("export", 5, 20) < 25
