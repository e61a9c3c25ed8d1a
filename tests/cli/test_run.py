"""`accy-run`: compile a file, run a function on `.npz` inputs, print shapes and a summary;
user errors are one diagnostic line and exit status 1."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from accy.cli.run import main

PROGRAM = """func.func @f(%a: tensor<?x3xf32>, %b: tensor<3xf32>) -> (tensor<?x3xf32>, tensor<?xf32>) {
  %m = accy.multiply %a, %a : tensor<?x3xf32>
  %r = accy.reduce add %m, dims = [1] : (tensor<?x3xf32>) -> tensor<?xf32>
  return %m, %r : tensor<?x3xf32>, tensor<?xf32>
}
func.func @g() -> tensor<2xi32> {
  %c = accy.iota dim = 0 : tensor<2xi32>
  return %c : tensor<2xi32>
}
"""


@pytest.fixture()
def program(tmp_path: Path) -> Path:
    path = tmp_path / "prog.mlir"
    path.write_text(PROGRAM)
    return path


def run(argv, capsys) -> tuple[int, str, str]:
    try:
        main([str(a) for a in argv])
        code = 0
    except SystemExit as exit_:
        code = exit_.code or 0
    out, err = capsys.readouterr()
    return code, out, err


def test_run_prints_results_and_writes_npz(program: Path, tmp_path: Path, capsys) -> None:
    a = np.arange(12, dtype=np.float32).reshape(4, 3)
    np.savez(tmp_path / "in.npz", arg0=a, arg1=np.ones(3, np.float32), expected=a)
    code, out, err = run(
        [program, "--target", "cpu", "--inputs", tmp_path / "in.npz", "-o", tmp_path / "out.npz"],
        capsys,
    )
    assert code == 0, err
    lines = out.splitlines()
    assert lines[:6] == [
        "result #0: shape (4, 3) dtype float32",
        "  [[  0.   1.   4.]",
        "   [  9.  16.  25.]",
        "   [ 36.  49.  64.]",
        "   [ 81. 100. 121.]]",
        "result #1: shape (4,) dtype float32",
    ]
    assert lines[6] == "  [  5.  50. 149. 302.]"
    assert lines[7].startswith("@f on cpu: arena ") and "2 work items" in lines[7]
    assert lines[7].endswith(" ms")
    results = np.load(tmp_path / "out.npz")
    np.testing.assert_allclose(results["result0"], a * a)
    np.testing.assert_allclose(results["result1"], (a * a).sum(axis=1))


def test_positional_inputs_and_function(program: Path, tmp_path: Path, capsys) -> None:
    np.savez(tmp_path / "pos.npz", np.ones((2, 3), np.float32), np.ones(3, np.float32))
    code, out, err = run([program, "--inputs", tmp_path / "pos.npz"], capsys)
    assert code == 0, err
    code, out, err = run([program, "--function", "g"], capsys)
    assert code == 0, err
    assert out.splitlines()[0] == "result #0: shape (2,) dtype int32"
    assert "@g on cpu" in out


def test_argument_error_is_one_line(program: Path, tmp_path: Path, capsys) -> None:
    np.savez(tmp_path / "bad.npz", arg0=np.ones((2, 3)), arg1=np.ones(3, np.float32))
    code, _, err = run([program, "--inputs", tmp_path / "bad.npz"], capsys)
    assert code == 1
    assert err.strip() == ("error: argument #0 (%a) of @f: expected dtype float32, got float64")


def test_parse_error_has_location(tmp_path: Path, capsys) -> None:
    bad = tmp_path / "bad.mlir"
    bad.write_text("func.func @f() {\n  %x = accy.bogus\n}\n")
    code, _, err = run([bad], capsys)
    assert code == 1
    assert err.startswith(f"{bad}:") and "accy.bogus" in err
    assert "error:" in err and "Traceback" not in err


def test_missing_file_and_unknown_function(program: Path, capsys) -> None:
    code, _, err = run(["/nonexistent.mlir"], capsys)
    assert (code, err.strip()) == (1, "error: cannot open input file '/nonexistent.mlir'")
    code, _, err = run([program, "--function", "nope"], capsys)
    assert code == 1 and "no function @nope" in err


def test_console_script(program: Path) -> None:
    script = Path(sys.executable).with_name("accy-run")
    done = subprocess.run(
        [str(script), str(program), "--function", "g"], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert "result #0: shape (2,) dtype int32" in done.stdout
    done = subprocess.run(
        [str(script), str(program), "--bogus"], capture_output=True, text=True, check=False
    )
    assert done.returncode == 1


def test_export_writes_a_loadable_cpu_artifact(program: Path, tmp_path: Path, capsys) -> None:
    from accy.runtime import load

    code, out, err = run([program, "--target", "cpu", "--export", tmp_path / "art"], capsys)
    assert code == 0, err
    assert out.strip() == f"exported {program} for cpu to {tmp_path / 'art'}"
    module = load(tmp_path / "art")
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    squared, sums = module.f(a, np.ones(3, np.float32))
    np.testing.assert_allclose(squared, a * a)
    np.testing.assert_allclose(sums, (a * a).sum(axis=1))


def test_threads_option(program: Path, tmp_path: Path, capsys) -> None:
    np.savez(tmp_path / "in.npz", arg0=np.ones((4, 3), np.float32), arg1=np.ones(3, np.float32))
    code, out, err = run([program, "--inputs", tmp_path / "in.npz", "--threads", "1"], capsys)
    assert code == 0, err
    assert ", 1 thread, " in out.splitlines()[-1]
    code, out, err = run([program, "--inputs", tmp_path / "in.npz", "--threads", "0"], capsys)
    assert code == 1 and out == ""
    # Refused with the command line, naming the option as written.
    assert (
        err.splitlines()[-1]
        == "accy-run: error: argument --threads: expected an integer >= 1, got '0'"
    )


def test_parallel_cpu_export_carries_the_async_runtime(tmp_path: Path, capsys) -> None:
    import json
    import shutil

    from accy.runtime import load

    t = "tensor<512x256xf32>"
    source = tmp_path / "big.mlir"
    source.write_text(
        f"func.func @g(%x: {t}) -> {t} {{\n  %e = accy.exponential %x : {t}\n"
        f"  return %e : {t}\n}}\n"
    )
    code, _, err = run([source, "--export", tmp_path / "art", "--threads", "2"], capsys)
    assert code == 0, err
    manifest = json.loads((tmp_path / "art" / "manifest.json").read_text())
    assert manifest["threads"] == 2
    assert manifest["async_runtime"] == "libaccy_async_runtime.so"
    assert (tmp_path / "art" / "libaccy_async_runtime.so").is_file()
    readelf = shutil.which("readelf")
    if readelf:
        dynamic = subprocess.run(
            [readelf, "-d", str(tmp_path / "art" / "libaccy_program.so")],
            capture_output=True,
            text=True,
            check=False,
        ).stdout
        assert "libaccy_async_runtime.so" in dynamic and "[$ORIGIN]" in dynamic
    x = np.linspace(-2, 2, 512 * 256, dtype=np.float32).reshape(512, 256)
    (y,) = load(tmp_path / "art").g(x)
    np.testing.assert_allclose(y, np.exp(x), rtol=2e-6)


def test_export_replaces_only_an_earlier_export(program: Path, tmp_path: Path, capsys) -> None:
    target = tmp_path / "art"
    for _ in range(2):  # the second export replaces the first
        code, _, err = run([program, "--export", target], capsys)
        assert code == 0, err
    other = tmp_path / "notes"
    other.mkdir()
    (other / "keep.txt").write_text("mine")
    code, _, err = run([program, "--export", other], capsys)
    assert code == 1
    assert err == (
        f"error: cannot export to '{other}': it holds files that are not an accy export "
        "(keep.txt)\n"
    )
    assert [p.name for p in other.iterdir()] == ["keep.txt"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["art", "notes", "prog.mlir"]


def test_export_keeps_files_beside_an_empty_manifest(program: Path, tmp_path: Path, capsys) -> None:
    target = tmp_path / "w"
    target.mkdir()
    (target / "manifest.json").write_text("{}\n")
    (target / "keep.txt").write_text("x\n")
    code, out, err = run([program, "--target", "cpu", "--export", target], capsys)
    assert (code, out) == (1, "")
    assert err.startswith(
        f"error: cannot export to '{target}': it holds files that are not an accy export "
        "(keep.txt, manifest.json); its manifest.json is not accy's"
    )
    assert (target / "keep.txt").read_text() == "x\n"
    assert (target / "manifest.json").read_text() == "{}\n"


def test_export_to_the_working_directory(
    program: Path, tmp_path: Path, capsys, monkeypatch
) -> None:
    from accy.runtime import load

    work = tmp_path / "work"
    work.mkdir()
    (work / "manifest.json").write_text("{}\n")
    (work / "keep.txt").write_text("x\n")
    monkeypatch.chdir(work)
    code, _, err = run([program, "--export", "."], capsys)
    assert code == 1 and "Traceback" not in err
    assert err.startswith("error: cannot export to '.': it holds files that are not an accy export")
    assert sorted(p.name for p in work.iterdir()) == ["keep.txt", "manifest.json"]
    (work / "keep.txt").unlink()
    (work / "manifest.json").unlink()
    for _ in range(2):  # into the empty working directory, then over that export
        code, out, err = run([program, "--export", ".", "--threads", "1"], capsys)
        assert code == 0, err
        assert out.strip() == f"exported {program} for cpu to ."
        assert Path.cwd() == work and work.is_dir()
    assert sorted(p.name for p in work.iterdir()) == ["libaccy_program.so", "manifest.json"]
    (squared, _sums) = load(".").f(np.ones((2, 3), np.float32), np.ones(3, np.float32))
    np.testing.assert_array_equal(squared, np.ones((2, 3), np.float32))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["prog.mlir", "work"]


def test_parallel_cpu_export_loads_in_a_fresh_process(tmp_path: Path) -> None:
    """Exporting a parallel program must not depend on the async runtime being already
    in the process (an earlier JIT with threads > 1 used to hide that): both the export
    and the load run in fresh interpreters."""
    t = "tensor<512x256xf32>"
    source = tmp_path / "big.mlir"
    source.write_text(
        f"func.func @g(%x: {t}) -> {t} {{\n  %e = accy.exponential %x : {t}\n"
        f"  return %e : {t}\n}}\n"
    )
    script = Path(sys.executable).with_name("accy-run")
    done = subprocess.run(
        [str(script), str(source), "--export", str(tmp_path / "art"), "--threads", "2"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    check = (
        "import sys, numpy as np; from accy.runtime import load; "
        "x = np.linspace(-2, 2, 512 * 256, dtype=np.float32).reshape(512, 256); "
        "(y,) = load(sys.argv[1]).g(x); "
        "print(float(np.abs(y - np.exp(x)).max() / np.exp(2)), "
        "sorted(m for m in sys.modules if m.startswith(('xdsl', 'accy.mlir_bridge'))))"
    )
    done = subprocess.run(
        [sys.executable, "-c", check, str(tmp_path / "art")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    error, modules = done.stdout.split(" ", 1)
    assert float(error) < 1e-6 and modules.strip() == "[]"


def test_a_planned_module_runs_from_standard_input(program: Path) -> None:
    """`accy-opt prog.mlir -p accy-plan | accy-run - --random-inputs`, no target named."""
    bin_dir = Path(sys.executable).parent
    planned = subprocess.run(
        [str(bin_dir / "accy-opt"), str(program), "-p", "accy-plan"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    done = subprocess.run(
        [str(bin_dir / "accy-run"), "-", "--function", "g", "--random-inputs"],
        input=planned,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "@g on cpu: arena" in done.stdout
    done = subprocess.run(
        [str(bin_dir / "accy-run"), "-"], input="", capture_output=True, text=True, check=False
    )
    assert (done.returncode, done.stderr.strip()) == (1, "error: <stdin> has no function to run")
