"""Planned modules written by hand (issue 54): the planned-form verifier refuses what
lowering would run wrongly, with a located `AccyVerifyError` (exit status 1 from the CLIs),
and accepts every plan `accy-plan` makes. `lit_tests/plan/invalid*.mlir` hold one case per
rule; these tests edit real plans and go through the API and the CLIs."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from accy.dialects import plan
from accy.dialects.plan_verifier import KERNEL_KINDS, verify_planned_module
from accy.passes.analysis import AnalysisManager
from accy.passes.planned_form import planned_module
from accy.passes.schedule import WorkKind
from xdsl.dialects.builtin import StringAttr

import accy
from accy.diagnostics import AccyError, AccyVerifyError

ROOT = Path(__file__).resolve().parents[2]

SOFTMAX = (ROOT / "tests" / "data" / "programs" / "softmax_8x16.mlir").read_text()

REAL_PROGRAMS = sorted(
    [
        *ROOT.glob("benchmarks/zoo/data/*.stablehlo.mlir"),
        *ROOT.glob("tests/data/stablehlo/*.stablehlo.mlir"),
        *ROOT.glob("examples/*.stablehlo.mlir"),
    ]
)


def _plan(target: str = "cpu") -> str:
    """The softmax's plan: on the CPU kernel 0 writes %slot1, kernel 1 reads it and %x and
    writes %out0, kernels 2 and 3 read %out0 (%slot3 in between)."""
    return str(planned_module(accy.parse(SOFTMAX), AnalysisManager(), target))


def _edit(text: str, old: str, new: str) -> str:
    assert old in text, old
    return text.replace(old, new, 1)


def _refused(text: str, message: str, line_of: str) -> None:
    """`text` is refused with `message`, located at the line holding `line_of`."""
    with pytest.raises(AccyVerifyError) as caught:
        accy.parse(text, filename="planned.mlir")
    assert message in caught.value.message
    line = next(i for i, t in enumerate(text.splitlines(), 1) if line_of in t)
    assert caught.value.diagnostic().startswith(f"planned.mlir:{line}:")


def test_the_unedited_plans_verify():
    for target in ("cpu", "cuda"):
        verify_planned_module(accy.parse(_plan(target)))


def test_a_kernel_that_writes_a_parameter_is_refused():
    edited = _edit(_plan(), "outs(%out0 : memref<8x16xf32", "outs(%x : memref<8x16xf32")
    _refused(edited, "'accy.kernel' op 1 writes the parameter %x (outs #0)", "accy.kernel 1")


def test_a_kernel_that_reads_an_unwritten_buffer_is_refused():
    edited = _edit(_plan(), "ins(%slot1, %x", "ins(%slot3, %x")
    message = "'accy.kernel' op 1 reads %slot3 (ins #0) before any kernel or copy writes it"
    _refused(edited, message, "accy.kernel 1")


def test_an_unknown_kernel_kind_is_a_diagnostic_not_a_value_error():
    _refused(
        _edit(_plan(), '"elementwise"', '"frobnicate"'),
        'has unknown kind "frobnicate"; kernel kinds: elementwise, broadcast',
        "accy.kernel 1",
    )
    # A module edited after parsing is checked again by `accy.compile`.
    module = accy.parse(_plan())
    kernel = next(op for op in module.walk() if isinstance(op, plan.KernelOp))
    kernel.kind = StringAttr("frobnicate")
    with pytest.raises(AccyVerifyError, match='unknown kind "frobnicate"'):
        accy.compile(module, target="cpu")


def test_kernel_kinds_are_the_work_kinds_but_iterate():
    assert set(KERNEL_KINDS) == {k.value for k in WorkKind} - {"iterate"}


@pytest.mark.parametrize(
    ("old", "new", "message", "line_of"),
    [
        ("accy.output = 0", "accy.output = 99", "has accy.output = 99, expected 0", "func.func"),
        (
            "accy.planned",
            'accy.planned = "cpu"',
            (
                'function @softmax has accy.planned = "cpu"; accy.planned is a unit attribute '
                "(the module's accy.target names the target)"
            ),
            "func.func",
        ),
        (
            "alignment 64",
            "alignment 3",
            "'accy.arena' op alignment 3 is not a power of two",
            "accy.arena",
        ),
    ],
)
def test_outputs_target_and_alignment_are_checked(old, new, message, line_of):
    _refused(_edit(_plan(), old, new), message, line_of)


def test_duplicate_kernel_ids_are_refused_at_the_second():
    edited = _edit(_plan(), "accy.kernel 2 ", "accy.kernel 1 ")
    _refused(edited, "'accy.kernel' op id 1 is used twice in @softmax", '"reduce" ins(%out0')


def test_the_clis_report_a_bad_plan_in_one_line(tmp_path: Path):
    path = tmp_path / "planned.mlir"
    path.write_text(_edit(_plan(), "ins(%slot1, %x", "ins(%slot3, %x"))
    for command in (
        [sys.executable, "-m", "accy.cli.opt", str(path), "-p", "accy-lower{target=cpu}"],
        [sys.executable, "-m", "accy.cli.run", str(path), "--random-inputs"],
    ):
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        assert done.returncode == 1, done.stderr
        assert done.stdout == ""
        assert done.stderr.startswith(f"{path}:") and done.stderr.count("\n") == 1
        assert "reads %slot3 (ins #0) before any kernel or copy writes it" in done.stderr


def test_alignment_option_must_be_a_power_of_two(tmp_path: Path):
    with pytest.raises(AccyError) as caught:
        accy.prepare(accy.parse(SOFTMAX), alignment=48)
    assert caught.value.diagnostic() == (
        "error: invalid plan option alignment=48: expected a power of two"
    )
    source = tmp_path / "softmax.mlir"
    source.write_text(SOFTMAX)
    command = [sys.executable, "-m", "accy.cli.opt", str(source)]
    pipeline = ["-p", "accy-plan-arena{alignment=3}"]
    done = subprocess.run([*command, *pipeline], capture_output=True, text=True, check=False)
    assert done.returncode == 1
    assert done.stderr == "error: invalid plan option alignment=3: expected a power of two\n"


def test_a_valid_hand_written_loop_verifies_and_runs():
    """The read rule's loop case from the accepted side: a carried buffer written before
    the loop and at the end of its body is read at the body's start (and the result is
    what three halvings give)."""
    text = """
    builtin.module attributes {accy.target = "cpu"} {
      func.func @halve(%x: memref<4xf32, #accy.space<host>>, %out0: memref<4xf32, #accy.space<host>> {accy.output = 0 : i64}) attributes {accy.planned} {
        %arena = accy.arena alignment 64 : memref<64xi8, #accy.space<host>>
        %n = accy.view %arena[0] : memref<64xi8, #accy.space<host>> to memref<4xf32, #accy.space<host>>
        accy.copy %x to %out0 : memref<4xf32, #accy.space<host>> to memref<4xf32, #accy.space<host>>
        accy.loop 3 {
          accy.kernel 0 "elementwise" ins(%out0 : memref<4xf32, #accy.space<host>>) outs(%n : memref<4xf32, #accy.space<host>>) {
          ^bb0(%t: tensor<4xf32>):
            %h = accy.constant dense<5.000000e-01> : tensor<4xf32>
            %e = accy.multiply %t, %h : tensor<4xf32>
            accy.yield %e : tensor<4xf32>
          }
          accy.copy %n to %out0 : memref<4xf32, #accy.space<host>> to memref<4xf32, #accy.space<host>>
        }
        func.return
      }
    }
    """
    (result,) = accy.compile(text, target="cpu", threads=1)(np.full(4, 8, np.float32))
    np.testing.assert_array_equal(result, np.ones(4, np.float32))
    # Without the copy before the loop, %out0 is read before anything wrote it.
    unwritten = text.replace("accy.copy %x to %out0", "// no init", 1)
    with pytest.raises(AccyVerifyError, match="reads %out0 .* not written before it"):
        accy.parse(unwritten)


@pytest.mark.parametrize("target", ["cpu", "cuda"])
def test_every_real_program_plans_into_a_plan_that_verifies(target):
    """The zoo, the StableHLO test programs and the examples (`test_planned_form` covers
    the accy-dialect programs): every plan made for them passes every rule."""
    verified = 0
    for path in REAL_PROGRAMS:
        module = accy.import_stablehlo(path.read_text(), filename=str(path))
        verify_planned_module(planned_module(module, AnalysisManager(), target))
        verified += 1
    assert verified >= 25
