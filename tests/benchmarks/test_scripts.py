"""The README's benchmark commands that have no test of their own run, on small inputs: each
exits 0 and prints its figures with the ratio against its peer."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run_script(name: str, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / name), *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    return done.stdout


def test_parse_speed() -> None:
    out = run_script("parse_speed.py", "--dense", "2000", "--chain", "200", "--repeat", "1")
    assert "dense: 2,000 elements" in out and "chain: 200 ops" in out
    assert "accy/mlir = " in out


def test_pack_scaling() -> None:
    out = run_script("pack_scaling.py", "--size", "200", "--family", "same", "random")
    rows = [line.split() for line in out.splitlines()]
    assert [r[:2] for r in rows if r and r[0] in ("same", "random")] == [
        ["same", "200"],
        ["random", "200"],
    ]


def test_import_time() -> None:
    out = run_script("import_time.py")
    assert "accy-opt --version" in out and "x python -c pass" in out


def test_gemm() -> None:
    # One shape: both element types checked against numpy and timed side by side (XLA's
    # column only where JAX is installed).
    out = run_script("gemm.py", "--filter", "16x64.64x100", "--rounds", "1")
    rows = [line.split() for line in out.splitlines() if line.startswith("16x64.64x100")]
    assert [r[1] for r in rows] == ["f32", "bf16"]
    assert "wrong" not in out and "f32/bf16" in out
    assert "accy's f32 time over its bf16 time" in out
