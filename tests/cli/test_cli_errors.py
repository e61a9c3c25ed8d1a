"""Command-line mistakes that used to give a traceback, a silently ignored option or a file
half-written: each is now one diagnostic and exit status 1 (or the option does its job)."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

import accy
from accy.diagnostics import AccyParseError

PROGRAM = """func.func @f(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %0 = accy.add %a, %b : tensor<4xf32>
  func.return %0 : tensor<4xf32>
}
"""
NOT_UTF8 = b"func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {\n  // caf\xe9\n" + (
    b"  func.return %a : tensor<4xf32>\n}\n"
)


def run(module: str, *args: str, stdin: bytes | None = None, cwd: Path | None = None):
    return subprocess.run(
        [sys.executable, "-m", f"accy.cli.{module}", *args],
        check=False,
        capture_output=True,
        input=stdin,
        cwd=cwd,
        timeout=300,
    )


def one_error(done: subprocess.CompletedProcess) -> str:
    stderr = done.stderr.decode()
    assert done.returncode == 1, stderr
    assert "Traceback" not in stderr, stderr
    lines = stderr.splitlines()
    assert len(lines) == 1, stderr
    return lines[0]


@pytest.fixture
def work(tmp_path: Path) -> Path:
    (tmp_path / "prog.mlir").write_text(PROGRAM)
    (tmp_path / "latin1.mlir").write_bytes(NOT_UTF8)
    np.savez(tmp_path / "in.npz", arg0=np.ones(4, np.float32), arg1=np.full(4, 2, np.float32))
    return tmp_path


NOT_UTF8_MESSAGE = ":2:9: error: the input is not UTF-8 text (byte 0xe9)"


def test_non_utf8_input_is_located(work: Path) -> None:
    path = work / "latin1.mlir"
    assert one_error(run("opt", str(path))) == f"{path}{NOT_UTF8_MESSAGE}"
    assert one_error(run("opt", "-", stdin=NOT_UTF8)) == f"<stdin>{NOT_UTF8_MESSAGE}"
    assert one_error(run("opt", stdin=NOT_UTF8)) == f"<stdin>{NOT_UTF8_MESSAGE}"
    assert one_error(run("opt", "--import-stablehlo", str(path))) == f"{path}{NOT_UTF8_MESSAGE}"
    assert one_error(run("run", str(path))) == f"{path}{NOT_UTF8_MESSAGE}"


def test_non_utf8_input_in_the_python_api(work: Path) -> None:
    with pytest.raises(AccyParseError, match="not UTF-8"):
        accy.parse(work / "latin1.mlir")
    with pytest.raises(AccyParseError, match="not UTF-8"):
        accy.import_stablehlo(work / "latin1.mlir")


def test_only_the_mlir_target_is_offered(work: Path) -> None:
    for target in ("llvm", "x86-asm"):
        done = run("opt", str(work / "prog.mlir"), "-t", target)
        stderr = done.stderr.decode()
        assert done.returncode == 1 and "Traceback" not in stderr, stderr
        assert stderr.splitlines()[-1].endswith(
            f"error: argument -t/--target: invalid choice: '{target}' (choose from mlir)"
        )


def test_an_arena_plot_in_an_unknown_format_is_refused_before_work(work: Path) -> None:
    pytest.importorskip("matplotlib")
    plot = work / "plot.xyz"
    line = one_error(
        run("opt", str(work / "prog.mlir"), "-p", "accy-plan-arena", f"--accy-arena-plot={plot}")
    )
    assert line.startswith(f"error: cannot draw the arena plot as '{plot}': unknown image format")
    assert not plot.exists()


def test_time_passes_and_print_between_passes_report(work: Path) -> None:
    done = run(
        "opt",
        str(work / "prog.mlir"),
        "-p",
        "accy-plan-shapes,accy-plan-fusion",
        "--time-passes",
        "--print-between-passes",
    )
    stderr = done.stderr.decode()
    assert done.returncode == 0, stderr
    assert stderr.count("// -----// IR Dump After ") == 2
    assert "IR Dump After accy-plan-shapes" in stderr and 'accy.layout = "16 bytes' in stderr
    assert "Pass execution timing report" in stderr
    assert [line.split()[-1] for line in stderr.splitlines() if "%)" in line] == [
        "accy-plan-shapes",
        "accy-plan-fusion",
        "Total",
    ]


def test_run_output_into_a_missing_directory_fails_before_running(work: Path) -> None:
    line = one_error(
        run("run", str(work / "prog.mlir"), "--inputs", str(work / "in.npz"), "-o", "no/out.npz")
    )
    assert line == "error: cannot write results to 'no/out.npz': no such directory"


def test_run_output_goes_to_the_path_given(work: Path) -> None:
    done = run("run", "prog.mlir", "--inputs", "in.npz", "-o", "results", cwd=work)
    assert done.returncode == 0, done.stderr.decode()
    assert not (work / "results.npz").exists()
    with np.load(work / "results") as archive:
        np.testing.assert_array_equal(archive["result0"], np.full(4, 3, np.float32))
    assert not list(work.glob(".*partial"))


def test_bad_npz_inputs_are_diagnostics(work: Path) -> None:
    data = (work / "in.npz").read_bytes()
    (work / "truncated.npz").write_bytes(data[: len(data) // 2])
    (work / "tail_cut.npz").write_bytes(data[:-40])
    np.savez(work / "objects.npz", arg0=np.array([object()], dtype=object), arg1=np.ones(4))
    np.save(work / "single.npy", np.ones(4, np.float32))
    with zipfile.ZipFile(work / "not_arrays.npz", "w") as archive:
        archive.writestr("arg0.npy", b"not an array")
        archive.writestr("arg1.npy", b"")
    expected = {
        "truncated.npz": "error: cannot read inputs 'truncated.npz': File is not a zip file",
        "tail_cut.npz": "error: cannot read inputs 'tail_cut.npz': File is not a zip file",
        "objects.npz": "error: cannot read input 'arg0' of 'objects.npz': Object arrays cannot "
        "be loaded when allow_pickle=False",
        "single.npy": "error: cannot read inputs 'single.npy': a single array (.npy), not an .npz",
        "not_arrays.npz": "error: cannot read input 'arg0' of 'not_arrays.npz': ",
    }
    for name, message in expected.items():
        line = one_error(run("run", "prog.mlir", "--inputs", name, cwd=work))
        assert line.startswith(message), line
