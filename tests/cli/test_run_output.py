"""What `accy-run` shows: each result's values (numpy's summary, or every element with
`--print`), runs on `--random-inputs`, reads StableHLO with `--import-stablehlo`, and says
what to give when a function needs arguments."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np

import accy

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"


def accy_run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "accy.cli.run", *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )


def test_results_are_summarized_and_printed_whole(tmp_path: Path) -> None:
    np.savez(tmp_path / "in.npz", np.linspace(0, 1, 2000, dtype=np.float32).reshape(2, 1000))
    summary = accy_run(str(EXAMPLES / "softmax.mlir"), "--inputs", str(tmp_path / "in.npz"))
    assert summary.returncode == 0, summary.stderr
    lines = summary.stdout.splitlines()
    assert lines[0] == "result #0: shape (2, 1000) dtype float32"
    assert "..." in summary.stdout  # a summary of 2000 values
    whole = accy_run(
        str(EXAMPLES / "softmax.mlir"), "--inputs", str(tmp_path / "in.npz"), "--print"
    )
    assert whole.returncode == 0, whole.stderr
    assert "..." not in whole.stdout
    assert len(whole.stdout.split()) > 2000


def test_random_inputs_take_the_row_count() -> None:
    done = accy_run(str(EXAMPLES / "softmax.mlir"), "--random-inputs", "--rows", "3")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("result #0: shape (3, 1000) dtype float32\n")


def test_a_function_with_parameters_needs_inputs() -> None:
    done = accy_run(str(EXAMPLES / "mlp.mlir"))
    assert done.returncode == 1
    assert done.stderr.strip() == (
        "error: @mlp takes 5 arguments: give --inputs IN.npz (arrays arg0, arg1, ...) or "
        "--random-inputs"
    )


def test_stablehlo_runs_with_import_stablehlo() -> None:
    done = accy_run(
        "--import-stablehlo", str(EXAMPLES / "layernorm_from_jax.stablehlo.mlir"), "--random-inputs"
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("result #0: shape (256, 768) dtype float32\n")


def test_a_compiled_function_is_an_attribute_too() -> None:
    exe = accy.compile(accy.parse(EXAMPLES / "mlp.mlir"), target="cpu", threads=1)
    assert exe.mlp is exe["mlp"]
    assert "mlp" in exe.function_names
