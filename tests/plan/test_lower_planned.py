"""Lowering reads the planned form: the same IR whether the plan comes from the same
pipeline or from text, hand edits and non-default alignments reach the lowered program,
and a plan for one target is not lowered for another."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from accy.passes.analysis import AnalysisManager
from accy.passes.lower.lower_pass import lower_module
from accy.passes.options import PlanOptions
from accy.passes.planned_form import planned_module

import accy
from accy.diagnostics import AccyError

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted(ROOT.glob("examples/*.mlir"))

SOFTMAX = (ROOT / "tests" / "data" / "programs" / "softmax_8x16.mlir").read_text()


def _opt(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "accy.cli.opt", *args]
    return subprocess.run(command, input=stdin, capture_output=True, text=True, check=False)


@pytest.mark.parametrize("target", ["cpu", "cuda"])
@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_planned_text_lowers_to_what_the_pipeline_lowers(path, target):
    """`accy-plan,accy-lower` in one pipeline and `accy-plan | accy-lower` print the same."""
    plan = f"accy-plan{{target={target}}}"
    lower = f"accy-lower{{target={target}}}"
    together = _opt(str(path), "-p", f"{plan},{lower}")
    if together.returncode != 0:
        assert "error" in together.stderr and "Traceback" not in together.stderr
        pytest.skip(f"{target} refuses {path.name}")
    planned = _opt(str(path), "-p", plan)
    assert planned.returncode == 0, planned.stderr
    apart = _opt("-p", lower, stdin=planned.stdout)
    assert apart.returncode == 0, apart.stderr
    assert apart.stdout == together.stdout


@pytest.mark.parametrize("target", ["cpu", "cuda"])
def test_lowering_keeps_a_non_default_alignment(target):
    manager = AnalysisManager(options=PlanOptions(alignment=1024))
    planned = planned_module(accy.parse(SOFTMAX), manager, target)
    text = str(lower_module(planned, AnalysisManager(), target))
    offsets = [int(v) for v in re.findall(r"arith.constant (\d+) : index", text)]
    views = re.findall(r"memref.view %arena\[%(\w+)\]", text)
    assert views
    constants = dict(re.findall(r"%(\w+) = arith.constant (\d+) : index", text))
    assert all(int(constants[v]) % 1024 == 0 for v in views)
    assert any(o % 1024 == 0 and o > 0 for o in offsets)
    if target == "cpu":
        assert "memref.alloc() {alignment = 1024 : i64}" in text


def test_a_hand_edited_offset_reaches_the_lowered_program():
    planned = str(planned_module(accy.parse(SOFTMAX), AnalysisManager(), "cpu"))
    views = re.findall(r"accy.view %arena\[(\d+)\]", planned)
    assert views
    # planned for the CPU at its alignment (64), as accy.compile plans it
    size = int(re.search(r"accy.arena alignment 64 : memref<(\d+)xi8", planned).group(1))
    arena = f"memref<{size + 4096}xi8, #accy.space<host>>"
    edited = re.sub(r"memref<\d+xi8, #accy.space<host>>", arena, planned)
    edited = re.sub(
        r"accy.view %arena\[(\d+)\]",
        lambda m: f"accy.view %arena[{int(m.group(1)) + 4096}]",
        edited,
    )
    lowered = str(lower_module(accy.parse(edited), AnalysisManager(), "cpu"))
    assert f"memref<{size + 4096}xi8>" in lowered
    for offset in views:
        assert f"arith.constant {int(offset) + 4096} : index" in lowered


def test_planned_text_runs_as_the_program_does():
    """The planned text, parsed and lowered, runs as the program does."""
    import numpy as np

    x = np.random.default_rng(0).standard_normal((8, 16)).astype(np.float32)
    expected = accy.compile(SOFTMAX, threads=1)(x)[0]
    planned = str(planned_module(accy.parse(SOFTMAX), AnalysisManager(), "cpu"))
    from accy import mlir_bridge
    from accy.runtime.abi import host_symbol
    from accy.source import module_text
    from accy.targets.cpu import cpu_pipeline

    lowered = module_text(lower_module(accy.parse(planned), AnalysisManager(), "cpu"))
    jit = mlir_bridge.JitModule(lowered, opt_level=3, pipeline=cpu_pipeline(1))
    (out,) = jit.run(host_symbol("softmax"), [x], [((8, 16), np.dtype(np.float32))])
    np.testing.assert_array_equal(out, expected)


def test_a_plan_for_cuda_is_not_lowered_for_the_cpu():
    planned = planned_module(accy.parse(SOFTMAX), AnalysisManager(), "cuda")
    with pytest.raises(AccyError, match="planned for the cuda target"):
        lower_module(planned, AnalysisManager(), "cpu")
    result = _opt("-p", "accy-lower{target=cpu}", stdin=str(planned))
    assert result.returncode == 1
    assert "planned for the cuda target" in result.stderr and "Traceback" not in result.stderr


def test_compile_takes_a_planned_module():
    """`accy.compile` runs a planned module as planned: no preparation, the same results,
    and no plan options."""
    import numpy as np

    x = np.random.default_rng(1).standard_normal((8, 16)).astype(np.float32)
    planned = str(planned_module(accy.parse(SOFTMAX), AnalysisManager(), "cpu"))
    exe = accy.compile(planned, threads=1)
    assert exe.preparation is None
    np.testing.assert_array_equal(exe(x)[0], accy.compile(SOFTMAX, threads=1)(x)[0])
    with pytest.raises(AccyError, match="plan options \\(rows\\) do not apply"):
        accy.compile(planned, rows=[4])
    with pytest.raises(AccyError, match="planned for the cpu target, not for cuda"):
        accy.compile(planned, target="cuda")
    with pytest.raises(AccyError, match="already planned"):
        accy.prepare(accy.parse(planned))


def test_a_planned_row_limit_is_checked_from_the_views():
    """A dynamic program planned for 64 rows records it on its views (`max_rows 64`);
    compiled from that text, a call with more rows is refused before it runs."""
    import numpy as np

    source = (ROOT / "lit_tests/lower/cpu_dynamic_iterate.mlir").read_text()
    manager = AnalysisManager(options=PlanOptions(rows=(64,)))
    planned = str(planned_module(accy.parse(source), manager, "cpu"))
    assert "max_rows 64" in planned
    exe = accy.compile(planned, threads=1)
    v = np.ones(4, np.float32)
    t, r = exe(np.ones((64, 4), np.float32), v)
    assert t.shape == (64, 4) and r.shape == (4,)
    with pytest.raises(accy.AccyInputError, match="planned for at most 64 rows"):
        exe(np.ones((65, 4), np.float32), v)


def test_accy_run_runs_a_planned_module(tmp_path):
    path = tmp_path / "planned.mlir"
    path.write_text(str(planned_module(accy.parse(SOFTMAX), AnalysisManager(), "cpu")))
    command = [sys.executable, "-m", "accy.cli.run", str(path), "--random-inputs"]
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    assert "@softmax on cpu: arena" in result.stdout
