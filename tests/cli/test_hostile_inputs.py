"""What a hostile (or careless) user can hand accy's command lines and Python API: inputs
that would allocate terabytes, CSV fields past the csv module's limit, arguments of the wrong
type, a user's file named like accy's scratch file, truncated or empty programs, StableHLO
without `--import-stablehlo`, malformed numbers, Ctrl-C in a running program. Each is a
diagnostic naming what is wrong (or, for Ctrl-C, a prompt stop), never a traceback."""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

import accy
from accy.cli import run as accy_run
from accy.diagnostics import AccyError, AccyTypeError, StableHloTextError

ROOT = Path(__file__).resolve().parents[2]
STABLEHLO = ROOT / "examples" / "layernorm_from_jax.stablehlo.mlir"

PROGRAM = """func.func @f(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %0 = accy.add %a, %b : tensor<4xf32>
  func.return %0 : tensor<4xf32>
}
"""
ROWS = """func.func @f(%a: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %0 = accy.add %a, %a : tensor<?x4xf32>
  func.return %0 : tensor<?x4xf32>
}
"""
SPIN = """func.func @spin(%n: tensor<i64>) -> tensor<i64> {
  %r = accy.while (%n : tensor<i64>) -> (tensor<i64>) cond {
  ^bb0(%c: tensor<i64>):
    %limit = accy.constant dense<4611686018427387904> : tensor<i64>
    %more = accy.compare LT, %c, %limit : (tensor<i64>, tensor<i64>) -> tensor<i1>
    accy.yield %more : tensor<i1>
  } do {
  ^bb0(%b: tensor<i64>):
    %one = accy.constant dense<1> : tensor<i64>
    %next = accy.add %b, %one : tensor<i64>
    accy.yield %next : tensor<i64>
  }
  func.return %r : tensor<i64>
}
"""
"""Counts to 2**62: runs for centuries unless stopped."""


def cli(name: str, argv: list[str], capsys) -> tuple[int, str, str]:
    """`accy.cli.<name>.main(argv)` in this process: exit status, stdout, stderr."""
    main = {"opt": "accy.cli.opt", "run": "accy.cli.run", "pack": "accy.cli.pack"}[name]
    module = __import__(main, fromlist=["main"])
    try:
        module.main([str(a) for a in argv])
        code = 0
    except SystemExit as exit_:
        code = exit_.code if isinstance(exit_.code, int) else 1
    out, err = capsys.readouterr()
    return code, out, err


def one_error(result: tuple[int, str, str]) -> str:
    """The one stderr line of a run that failed with status 1 and printed no traceback."""
    code, _, err = result
    assert code == 1, err
    assert "Traceback" not in err, err
    lines = err.splitlines()
    assert len(lines) == 1, err
    return lines[0]


def last_error(result: tuple[int, str, str]) -> str:
    """The last stderr line of a run that failed with status 1 (argparse prints its usage
    first)."""
    code, _, err = result
    assert code == 1, err
    assert "Traceback" not in err, err
    return err.splitlines()[-1]


@pytest.fixture
def work(tmp_path: Path) -> Path:
    (tmp_path / "prog.mlir").write_text(PROGRAM)
    (tmp_path / "rows.mlir").write_text(ROWS)
    np.savez(tmp_path / "in.npz", arg0=np.ones(4, np.float32), arg1=np.full(4, 2, np.float32))
    return tmp_path


# ---------------------------------------------------------------------------------------
# 1. Inputs that would not fit in memory
# ---------------------------------------------------------------------------------------


def npz_with_header(path: Path, shape: tuple[int, ...], data: bytes = b"\0" * 16) -> None:
    """An .npz whose `arg0` declares `shape` of float32 but holds only `data`."""
    member = io.BytesIO()
    header = {"descr": "<f4", "fortran_order": False, "shape": shape}
    np.lib.format.write_array_header_1_0(member, header)
    member.write(data)
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("arg0.npy", member.getvalue())


def test_an_npz_header_declaring_terabytes_is_refused_before_allocating(work, capsys):
    npz_with_header(work / "big.npz", (10**12, 4))
    error = one_error(cli("run", [work / "prog.mlir", "--inputs", work / "big.npz"], capsys))
    assert error == (
        f"error: cannot read input 'arg0' of '{work / 'big.npz'}': its header declares shape "
        "(1000000000000, 4) of float32 (16000000000000 bytes) but it holds 16 bytes of data"
    )


def test_an_npz_array_larger_than_memory_is_refused_before_allocating(work, monkeypatch):
    # Its data is all there (as a compressed member of a zip bomb would be): the machine's
    # memory is what refuses it.
    monkeypatch.setattr(accy_run, "physical_memory", lambda: 15)
    with pytest.raises(AccyError) as raised:
        accy_run.load_inputs(str(work / "in.npz"))
    assert raised.value.message == (
        f"input 'arg0' of '{work / 'in.npz'}' (shape (4,) of float32) needs 16 bytes, more "
        "than this machine's memory (15 bytes)"
    )


def test_random_inputs_for_too_many_rows_are_refused_before_allocating(work, capsys):
    argv = [work / "rows.mlir", "--rows", "99999999999", "--random-inputs"]
    error = one_error(cli("run", argv, capsys))
    assert error.startswith(
        "error: --random-inputs: argument #0 (tensor<?x4xf32>, 99999999999 rows) needs "
        "1599999999984 bytes, more than this machine's memory ("
    )


# ---------------------------------------------------------------------------------------
# 2. accy-pack: CSV beyond the csv module's limits, budgets that are no number of ms
# ---------------------------------------------------------------------------------------


def test_a_csv_field_past_the_field_limit_names_the_file_and_line(tmp_path, capsys):
    path = tmp_path / "long.csv"
    path.write_text("id,lower,upper,size\n1,0,1,4\n" + "b" * 140_000 + ",0,1,4\n")
    error = one_error(cli("pack", [path], capsys))
    assert error == f"error: {path}:3: a field longer than 131072 characters"


def test_a_csv_that_is_not_utf8_names_the_file_and_line(tmp_path, capsys):
    path = tmp_path / "latin1.csv"
    path.write_bytes(b"id,lower,upper,size\n1,0,1,4\ncaf\xe9,0,1,4\n")
    error = one_error(cli("pack", [path], capsys))
    assert error == f"error: {path}:3: not UTF-8 text (byte 0xe9)"


@pytest.mark.parametrize(
    "budget,message",
    [
        ("inf", "error: --budget-ms must be at most 604800000 (a week), got inf"),
        ("1e300", "error: --budget-ms must be at most 604800000 (a week), got 1e+300"),
        ("nan", "error: --budget-ms must be at least 0, got nan"),
        ("-1", "error: --budget-ms must be at least 0, got -1"),
    ],
)
def test_a_budget_that_is_no_number_of_milliseconds_is_refused(tmp_path, capsys, budget, message):
    path = tmp_path / "many.csv"
    rows = [f"{i},{i % 1000},{i % 1000 + 1 + i % 7},{1 + i % 97}" for i in range(5000)]
    path.write_text("id,lower,upper,size\n" + "\n".join(rows) + "\n")
    assert one_error(cli("pack", [path, "--budget-ms", budget], capsys)) == message


def test_pack_refuses_an_infinite_budget():
    from accy.passes.arena import pack
    from accy.passes.arena.pack import MAX_BUDGET_MS
    from accy.passes.options import MAX_PACK_BUDGET_MS

    with pytest.raises(ValueError, match=r"budget_ms must be from 0 to 604800000 \(a week\)"):
        pack([], budget_ms=float("inf"))
    assert MAX_BUDGET_MS == MAX_PACK_BUDGET_MS


# ---------------------------------------------------------------------------------------
# 3. The Python API's arguments of the wrong type
# ---------------------------------------------------------------------------------------

MODULE = accy.parse(PROGRAM)


@pytest.mark.parametrize(
    "call,message",
    [
        (lambda: accy.parse(None), "accy.parse: source must be accy program text (str) or"),
        (lambda: accy.parse(123), "accy.parse: source must be accy program text (str) or"),
        (lambda: accy.prepare(MODULE, rows="abc"), "invalid plan option rows='abc': expected"),
        (lambda: accy.prepare(MODULE, rows=5), "invalid plan option rows=5: expected"),
        (lambda: accy.prepare("not a module"), "accy.prepare: module must be an accy module"),
        (lambda: accy.compile(None), "accy.compile: the program must be an accy module"),
        (lambda: accy.export(None, "out"), "accy.export: the program must be an accy module"),
        (
            lambda: accy.import_stablehlo(None),
            "accy.import_stablehlo: source must be StableHLO text",
        ),
    ],
)
def test_an_argument_of_the_wrong_type_is_an_accy_type_error(call, message):
    with pytest.raises(AccyTypeError) as raised:
        call()
    assert isinstance(raised.value, TypeError)
    assert raised.value.message.startswith(message), raised.value.message


def test_an_infinite_pack_budget_is_an_invalid_plan_option():
    with pytest.raises(AccyError, match=r"pack_budget_ms=inf: expected milliseconds <= "):
        accy.prepare(MODULE, pack_budget_ms=float("inf"))


# ---------------------------------------------------------------------------------------
# 4. -o never touches a file accy did not create
# ---------------------------------------------------------------------------------------


def test_results_are_written_without_touching_a_file_named_like_the_scratch_file(work, capsys):
    users = work / ".res.npz.partial"
    users.write_text("the user's own file")
    before = set(os.listdir(work))
    argv = [work / "prog.mlir", "--inputs", work / "in.npz", "-o", work / "res.npz"]
    code, _, err = cli("run", argv, capsys)
    assert code == 0, err
    assert users.read_text() == "the user's own file"
    assert set(os.listdir(work)) == before | {"res.npz"}  # no scratch file left
    with np.load(work / "res.npz") as results:
        np.testing.assert_array_equal(results["result0"], np.full(4, 3, np.float32))
    assert (work / "res.npz").stat().st_mode & 0o777 == 0o666 & ~accy_run._umask()


# ---------------------------------------------------------------------------------------
# 5-8. Truncated, empty, missing and StableHLO programs
# ---------------------------------------------------------------------------------------


def test_a_missing_closing_brace_says_what_is_missing_and_where(work, capsys):
    path = work / "open.mlir"
    path.write_text(PROGRAM.removesuffix("}\n"))
    assert one_error(cli("opt", [path], capsys)) == (
        f"{path}:4:1: error: expected '}}' to close the region opened at line 1, column 69, "
        "found the end of the input"
    )


def test_a_region_ending_in_a_stray_token_says_the_brace_is_missing(work, capsys):
    path = work / "stray.mlir"
    path.write_text(PROGRAM.replace("}\n", ")\n"))
    assert one_error(cli("opt", [path], capsys)) == (
        f"{path}:4:1: error: expected '}}' to close the region opened at line 1, column 69, "
        "found ')'"
    )


@pytest.mark.parametrize(
    "text",
    ["", "  \n\n", "// only a comment\n", "!t = tensor<4xf32>\n#a = dense<1> : tensor<i32>\n"],
)
def test_an_empty_file_is_an_empty_module(work, capsys, text):
    """Alias definitions alone said "Could not parse entire input!"."""
    path = work / "empty.mlir"
    path.write_text(text)
    assert cli("opt", [path], capsys) == (0, "builtin.module {\n}\n\n", "")
    assert one_error(cli("run", [path], capsys)) == f"error: {path} has no function to run"
    assert list(accy.parse(text).ops) == []


def test_parse_reads_a_path_and_says_when_there_is_no_such_file(work, monkeypatch):
    monkeypatch.chdir(work)
    assert [op.sym_name.data for op in accy.parse("prog.mlir").ops] == ["f"]
    for missing in ("missing.mlir", Path("missing.mlir")):
        with pytest.raises(AccyError) as raised:
            accy.parse(missing)
        assert raised.value.message == "cannot read 'missing.mlir': no such file"


def test_stablehlo_without_the_importer_says_how_to_import_it(capsys):
    location = f"{STABLEHLO}:6:31: error: 'stablehlo.constant' is a StableHLO op, not an accy op"
    advice = "StableHLO text (e.g. JAX's lowered text) is read with --import-stablehlo"
    for tool in ("opt", "run"):
        assert one_error(cli(tool, [STABLEHLO], capsys)) == f"{location}: {advice}"
    with pytest.raises(StableHloTextError, match="is read with accy.import_stablehlo"):
        accy.parse(STABLEHLO)


# ---------------------------------------------------------------------------------------
# 9, 11. Option errors name the option as written; --help says what the options do
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "tool,argv,message",
    [
        ("opt", ["--accy-max-work=abc"], "argument --accy-max-work: expected an integer >= 0"),
        ("opt", ["--accy-max-work=-1"], "argument --accy-max-work: expected an integer >= 0"),
        ("run", ["--threads", "abc"], "argument --threads: expected an integer >= 1"),
        ("run", ["--threads", "0"], "argument --threads: expected an integer >= 1"),
        ("run", ["--rows", "-1"], "argument --rows: expected an integer >= 1"),
        ("pack", ["--budget-ms", "abc"], "argument --budget-ms: expected a number of milliseconds"),
        ("pack", ["--workers", "1.5"], "argument --workers: expected an integer"),
        ("pack", ["--capacity", "x"], "argument --capacity: expected an integer"),
    ],
)
def test_a_malformed_number_names_the_option_and_what_it_takes(work, capsys, tool, argv, message):
    value = argv[-1].split("=")[-1]
    error = last_error(cli(tool, [work / "prog.mlir", *argv], capsys))
    # argparse starts the line with the program's name: in this process, pytest's for opt.
    assert error.split(": ", 1)[1] == f"error: {message}, got {value!r}"


def test_help_says_verify_diagnostics_fails_on_a_mismatch(capsys):
    code, out, _ = cli("opt", ["--help"], capsys)
    assert code == 0
    text = " ".join(out.split())
    assert "exits with code 0" not in text  # xDSL's help for both options
    assert "--parsing-diagnostics" not in text  # xDSL's: accy-opt always reports parse errors
    assert "exit 0 when they match, 1 on a mismatch" in text


# ---------------------------------------------------------------------------------------
# 10. Ctrl-C stops a running program
# ---------------------------------------------------------------------------------------


def test_ctrl_c_stops_a_running_program(tmp_path):
    path = tmp_path / "spin.mlir"
    path.write_text(SPIN)
    # Python's SIGINT handler, as a terminal's Ctrl-C meets it, even where this test runs
    # with SIGINT ignored (a background job): the child would inherit that.
    start = (
        "import runpy, signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
        "sys.argv[0] = 'accy-run'; runpy.run_module('accy.cli.run', run_name='__main__')"
    )
    child = subprocess.Popen(
        [sys.executable, "-c", start, str(path), "--random-inputs", "--verbose"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        said = []
        for line in child.stderr:  # the call starts right after this line
            said.append(line)
            if line == "accy-run: running @spin on cpu\n":
                break
        assert said[-1:] == ["accy-run: running @spin on cpu\n"], said
        child.send_signal(signal.SIGINT)
        status = child.wait(timeout=120)  # a hang guard: it stops at once
        assert (status, child.stderr.read()) == (130, "accy-run: interrupted\n")
        assert child.stdout.read() == ""
    finally:
        child.kill()
        child.wait()
        child.stdout.close()
        child.stderr.close()
