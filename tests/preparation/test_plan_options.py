"""Plan options are checked where they enter: a bad value is a user error, never a crash
deep inside a packer or a kernel."""

import subprocess
import sys
from pathlib import Path

import pytest

import accy

PROGRAM = """func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = accy.exponential %a : tensor<4xf32>
  func.return %0 : tensor<4xf32>
}"""


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("alignment", 0, "invalid plan option alignment=0: expected a byte alignment >= 1"),
        ("sm_count", 0, "invalid plan option sm_count=0: expected a multiprocessor count >= 1"),
        ("rows", [4, 0], "invalid plan option rows=(4, 0): expected row counts >= 1"),
        (
            "pack_budget_ms",
            -1.0,
            "invalid plan option pack_budget_ms=-1.0: expected milliseconds >= 0",
        ),
        ("shared_limit", -1, "invalid plan option shared_limit=-1: expected a byte count >= 0"),
        ("pack_workers", 0, "invalid plan option pack_workers=0: expected a process count >= 1"),
    ],
)
def test_prepare_rejects_bad_options(option, value, message):
    with pytest.raises(accy.AccyError) as caught:
        accy.prepare(accy.parse(PROGRAM), **{option: value})
    assert caught.value.diagnostic() == f"error: {message}"


def test_accy_opt_reports_a_bad_pass_option_in_one_line(tmp_path: Path):
    source = tmp_path / "f.mlir"
    source.write_text(PROGRAM)
    accy_opt = Path(sys.executable).with_name("accy-opt")
    done = subprocess.run(
        [str(accy_opt), str(source), "-p", "accy-plan-arena{alignment=0}"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 1
    assert done.stderr == "error: invalid plan option alignment=0: expected a byte alignment >= 1\n"


def test_accy_opt_takes_a_whole_number_of_milliseconds_and_workers(tmp_path: Path):
    # The pipeline syntax reads `50` as an integer: the budget takes it as well as `50.0`.
    source = tmp_path / "f.mlir"
    source.write_text(PROGRAM)
    accy_opt = Path(sys.executable).with_name("accy-opt")
    pipeline = "accy-plan-arena{pack-budget-ms=50 pack-workers=2 check=true}"
    done = subprocess.run(
        [str(accy_opt), str(source), "-p", pipeline], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert "accy.arena_size" in done.stdout
