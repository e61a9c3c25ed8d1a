"""`accy-opt` as users run it: every user mistake exits with status 1 and one diagnostic
line on stderr (`error: ...` or `file:line:col: error: ...`), never a Python traceback;
`-o FILE` writes the output.

The tool starts in about a second (imports), so the subprocess runs of this module are all
started at once, in parallel, by one fixture, and the tests read the finished results; a few
further cases call `accy.cli.opt.main` in this process.
"""

from __future__ import annotations

import io
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

BIN_DIR = Path(sys.executable).parent


def accy_opt() -> str:
    """The `accy-opt` next to the running Python (the venv's), else the one on PATH."""
    candidate = BIN_DIR / "accy-opt"
    if candidate.is_file() and os.access(candidate, os.X_OK):
        return str(candidate)
    found = shutil.which("accy-opt")
    assert found is not None, "accy-opt is not installed (pip install -e '.[dev]')"
    return found


GOOD = """\
func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = accy.add %a, %a : tensor<4xf32>
  func.return %0 : tensor<4xf32>
}
"""

BAD_SYNTAX = """\
func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = accy.add %a, %a tensor<4xf32>
  func.return %0 : tensor<4xf32>
}
"""

BAD_VERIFY = """\
func.func @f(%a: tensor<4xi1>) -> tensor<4xi1> {
  %0 = accy.add %a, %a : tensor<4xi1>
  func.return %0 : tensor<4xi1>
}
"""

EXPECTED_GOOD = """\
builtin.module {
  func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {
    %0 = accy.add %a, %a : tensor<4xf32>
    func.return %0 : tensor<4xf32>
  }
}

"""


@dataclass
class Result:
    returncode: int
    stdout: str
    stderr: str


@pytest.fixture(scope="module")
def work(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("opt")
    (root / "good.mlir").write_text(GOOD)
    (root / "bad_syntax.mlir").write_text(BAD_SYNTAX)
    (root / "bad_verify.mlir").write_text(BAD_VERIFY)
    (root / "split.mlir").write_text(GOOD + "// -----\n" + BAD_VERIFY)
    (root / "existing_out.mlir").write_text("precious\n")
    return root


def cases(w: Path) -> dict[str, list[str]]:
    """The command lines run as subprocesses, by name."""
    good = str(w / "good.mlir")
    return {
        "missing_file": [str(w / "missing.mlir")],
        "bad_syntax": [str(w / "bad_syntax.mlir")],
        "bad_verify": [str(w / "bad_verify.mlir")],
        "unknown_pass": [good, "-p", "no-such-pass"],
        "malformed_pipeline": [good, "-p", "accy-plan-shapes{"],
        "bad_flag": [good, "--no-such-flag"],
        "output_file": [good, "-o", str(w / "out.mlir")],
        "error_with_output": [str(w / "bad_verify.mlir"), "-o", str(w / "error_out.mlir")],
    }


@pytest.fixture(scope="module")
def results(work) -> dict[str, Result]:
    tool = accy_opt()
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    running = {
        name: subprocess.Popen(
            [tool, *args],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=work,
            env=env,
        )
        for name, args in cases(work).items()
    }
    done = {}
    for name, process in running.items():
        stdout, stderr = process.communicate(timeout=120)
        done[name] = Result(process.returncode, stdout, stderr)
    return done


def run_in_process(argv: list[str], capsys) -> Result:
    """`accy.cli.opt.main(argv)` here: its exit status and what it printed."""
    from accy.cli.opt import main

    try:
        main(argv)
        code = 0
    except SystemExit as exit_:
        code = exit_.code if isinstance(exit_.code, int) else 1
    out, err = capsys.readouterr()
    return Result(code, out, err)


def assert_one_line_error(result: Result, pattern: str | None = None) -> str:
    """Status 1, nothing on stdout, exactly one stderr line, no traceback."""
    assert "Traceback" not in result.stderr, result.stderr
    assert result.returncode == 1, result
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    if pattern is not None:
        assert re.fullmatch(pattern, lines[0]), lines[0]
    return lines[0]


# ---------------------------------------------------------------------------------------
# User mistakes
# ---------------------------------------------------------------------------------------


def test_missing_file(results, work):
    line = assert_one_line_error(results["missing_file"])
    assert (
        line
        == f"error: cannot open input file '{work / 'missing.mlir'}': No such file or directory"
    )


def test_directory_as_input(work, capsys):
    line = assert_one_line_error(run_in_process([str(work)], capsys))
    assert line == f"error: cannot open input file '{work}': Is a directory"


def test_bad_syntax(results, work):
    line = assert_one_line_error(results["bad_syntax"])
    assert line == f"{work / 'bad_syntax.mlir'}:2:24: error: Expected ':'"


def test_verifier_failure(results, work):
    line = assert_one_line_error(results["bad_verify"])
    assert line == (
        f"{work / 'bad_verify.mlir'}:2:3: error: 'accy.add' op does not compute on i1 tensors"
    )


def test_unknown_pass(results):
    line = assert_one_line_error(results["unknown_pass"])
    assert line == (
        "error: invalid pass pipeline 'no-such-pass': Unrecognized passes: ['no-such-pass']"
    )


def test_bad_pass_option(work, capsys):
    result = run_in_process([str(work / "good.mlir"), "-p", "accy-plan-shapes{bogus=1}"], capsys)
    assert_one_line_error(
        result,
        r"error: invalid pass pipeline 'accy-plan-shapes\{bogus=1\}': .*bogus.*",
    )


@pytest.mark.parametrize(
    ("option", "says"),
    [
        ("accy-size-workspaces{rows=abc}", "'rows' of accy-size-workspaces takes integers separated by commas, not abc"),
        ("accy-plan-arena{alignment=1,2}", "'alignment' of accy-plan-arena takes an integer, not 1,2"),
        ("accy-plan-memory-spaces{constant-capacity=1.5}", "'constant-capacity' of accy-plan-memory-spaces takes an integer, not 1.5"),
        ("accy-plan-arena{pack-budget-ms=abc}", "'pack-budget-ms' of accy-plan-arena takes a number, not abc"),
        ("accy-plan-arena{check=3}", "'check' of accy-plan-arena takes true or false, not 3"),
    ],
)  # fmt: skip
def test_a_pass_option_of_the_wrong_kind_is_named_in_words(option, says, work, capsys):
    """xDSL says "Incompatible types: given ('abc',), expected tuple[int, ...] | None"."""
    result = run_in_process([str(work / "good.mlir"), "-p", option], capsys)
    line = assert_one_line_error(result)
    assert line == f"error: invalid pass pipeline '{option}': option {says}"


def test_malformed_pipeline_exits_1_without_traceback(results, work, capsys):
    empty_name = run_in_process([str(work / "good.mlir"), "-p", ",,"], capsys)
    for result in (results["malformed_pipeline"], empty_name):
        assert result.returncode == 1 and result.stdout == ""
        assert "Traceback" not in result.stderr
        assert result.stderr.startswith("error: invalid pass pipeline '")


def test_malformed_pipeline_is_one_line(results):
    assert_one_line_error(results["malformed_pipeline"], r"error: invalid pass pipeline '.*': .*")


def test_bad_flag(results):
    result = results["bad_flag"]
    assert "Traceback" not in result.stderr
    assert result.returncode == 1 and result.stdout == ""
    # argparse prints its usage, then one error line.
    error_lines = [line for line in result.stderr.splitlines() if "error:" in line]
    assert error_lines == ["accy-opt: error: unrecognized arguments: --no-such-flag"]
    assert result.stderr.splitlines()[-1] == error_lines[0]


# ---------------------------------------------------------------------------------------
# Output
# ---------------------------------------------------------------------------------------


def test_reads_stdin_without_an_input_file(capsys, monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(GOOD.encode())))
    result = run_in_process([], capsys)
    assert result.returncode == 0, result.stderr
    assert result.stdout == EXPECTED_GOOD
    assert result.stderr == ""


def test_output_file_gets_the_output(results, work):
    result = results["output_file"]
    assert result.returncode == 0, result.stderr
    assert result.stdout == "" and result.stderr == ""
    assert (work / "out.mlir").read_text() == EXPECTED_GOOD


def test_verify_diagnostics_succeeds_when_the_expected_error_is_produced(work, capsys):
    path = work / "expected.mlir"
    path.write_text("// expected-error @+2 {{does not compute on i1 tensors}}\n" + BAD_VERIFY)
    result = run_in_process([str(path), "--verify-diagnostics"], capsys)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""


def test_verify_diagnostics_fails_on_an_unexpected_error(work, capsys):
    result = run_in_process([str(work / "bad_verify.mlir"), "--verify-diagnostics"], capsys)
    line = assert_one_line_error(result)
    assert line == (
        f"{work / 'bad_verify.mlir'}:2:3: error: unexpected error: "
        "'accy.add' op does not compute on i1 tensors"
    )


def test_verify_diagnostics_fails_when_an_expected_error_is_not_produced(work, capsys):
    path = work / "never.mlir"
    path.write_text(
        "// expected-error @+1 {{is never emitted}}\n"
        "func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {\n"
        "  func.return %a : tensor<4xf32>\n}\n// -----\n"
        "func.func @g(%a: tensor<4xf32>) -> tensor<4xf32> {\n"
        "  // expected-error {{nor this}}\n"
        "  func.return %a : tensor<4xf32>\n}\n"
    )
    result = run_in_process([str(path), "--split-input-file", "--verify-diagnostics"], capsys)
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr.splitlines() == [
        f'{path}:1:4: error: expected error "is never emitted" was not produced',
        f'{path}:7:6: error: expected error "nor this" was not produced',
    ]


def test_verify_diagnostics_matches_the_line(work, capsys):
    path = work / "wrong_line.mlir"
    path.write_text(BAD_VERIFY.replace("  %", "  // expected-error @+2 {{i1 tensors}}\n  %", 1))
    result = run_in_process([str(path), "--verify-diagnostics"], capsys)
    assert result.returncode == 1
    assert "unexpected error" in result.stderr and "was not produced" in result.stderr


def test_error_with_output_file_reports_the_error(results, work):
    line = assert_one_line_error(results["error_with_output"])
    assert line.startswith(f"{work / 'bad_verify.mlir'}:2:3: error: 'accy.add' op")


def test_error_with_output_file_creates_no_file(results, work):
    assert results["error_with_output"].returncode == 1
    assert not (work / "error_out.mlir").exists()


def test_error_keeps_an_existing_output_file(work, capsys):
    target = work / "existing_out.mlir"
    result = run_in_process([str(work / "bad_syntax.mlir"), "-o", str(target)], capsys)
    assert_one_line_error(result)
    assert (work / "existing_out.mlir").read_text() == "precious\n"


def test_split_input_error_leaves_no_half_written_file(work, capsys):
    argv = [str(work / "split.mlir"), "--split-input-file", "-o", str(work / "split_out.mlir")]
    assert_one_line_error(
        run_in_process(argv, capsys), r".*split\.mlir:7:3: error: 'accy\.add' op .*"
    )
    assert not (work / "split_out.mlir").exists()


def test_output_into_a_missing_directory(work, capsys):
    target = work / "no" / "such" / "dir" / "out.mlir"
    line = assert_one_line_error(
        run_in_process([str(work / "good.mlir"), "-o", str(target)], capsys)
    )
    assert line.startswith("error: ") and "out.mlir" in line
