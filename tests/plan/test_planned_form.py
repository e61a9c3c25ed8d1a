"""The planned form (`accy-plan`): what it holds, that it round-trips through its text, and
that the planned-form verifier refuses broken plans."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest
from accy.dialects import plan
from accy.dialects.plan_verifier import verify_planned_module
from accy.passes.analysis import AnalysisManager
from accy.passes.lower.lower_pass import lower_module
from accy.passes.plan_passes import PLAN_PASSES
from accy.passes.planned_form import PlanPass, planned_module
from xdsl.context import Context

import accy
from accy.diagnostics import AccyError, AccyVerifyError

ROOT = Path(__file__).resolve().parents[2]
PROGRAMS = sorted(
    p
    for p in [*ROOT.glob("examples/*.mlir"), *ROOT.glob("lit_tests/*/*.mlir")]
    if "verify-diagnostics" not in p.read_text() and "stablehlo" not in p.name
)

WIDE_REDUCE = """
func.func @g(%x: tensor<64x100000xf32>) -> tensor<64xf32> {
  %s = accy.reduce add %x, dims = [1] : (tensor<64x100000xf32>) -> tensor<64xf32>
  func.return %s : tensor<64xf32>
}
"""


def _chunks(path: Path) -> list[str]:
    return [c for c in path.read_text().split("// -----") if "func.func" in c]


@pytest.mark.parametrize("target", ["cpu", "cuda"])
def test_every_program_plans_round_trips_and_lowers_from_its_text(target):
    planned = 0
    for path in PROGRAMS:
        for chunk in _chunks(path):
            try:
                module = accy.parse(chunk)
                result = planned_module(module, AnalysisManager(), target)
            except AccyError:
                continue  # a program the target refuses (dynamic dims on CUDA, ...)
            text = str(result)
            again = accy.parse(text)  # verifies, the planned-form rules included
            assert str(again) == text, path
            verify_planned_module(result)
            # No re-planning: the plan read back from its text lowers as the plan itself.
            lowered = str(lower_module(result, AnalysisManager(), target))
            assert str(lower_module(again, AnalysisManager(), target)) == lowered, path
            planned += 1
    assert planned >= {"cpu": 30, "cuda": 20}[target]


def test_cpu_plan_holds_only_its_own_workspace():
    """A 64x100000 sum runs reduce.split on CUDA (a 264 KiB partials workspace); the CPU
    plan has its own family, reduce.chunks, whose partials are 2 chunks x 64 rows x 4
    bytes, in its arena."""
    cuda = planned_module(accy.parse(WIDE_REDUCE), AnalysisManager(), "cuda")
    cpu = planned_module(accy.parse(WIDE_REDUCE), AnalysisManager(), "cpu")
    kernels = [op for op in cuda.walk() if isinstance(op, plan.KernelOp)]
    assert kernels[0].family.data == "reduce.split"
    assert list(kernels[0].named_workspaces()) == ["partials"]
    (kernel,) = [op for op in cpu.walk() if isinstance(op, plan.KernelOp)]
    assert kernel.family.data == "reduce.chunks"
    (partials,) = kernel.workspaces
    assert partials.type.get_shape() == (512,)
    (arena,) = [op for op in cpu.walk() if isinstance(op, plan.ArenaOp)]
    assert arena.size == 512


def test_cpu_arena_holds_only_temporaries():
    """The CPU reads parameters from the caller's arrays, writes results into the
    out-parameters and reads constants from globals: its arena holds the temporaries
    only, so it is smaller than the CUDA arena, which holds every device buffer."""
    text = (ROOT / "examples" / "mlp.mlir").read_text()
    cpu = accy.prepare(accy.parse(text), target="cpu")
    cuda = accy.prepare(accy.parse(text), target="cuda")
    slots = {s.id: s for s in cpu.buffers.slots}
    assert cpu.arena.functions["mlp"].offsets
    assert all(slots[i].is_temporary for i in cpu.arena.functions["mlp"].offsets)
    assert cpu.arena.functions["mlp"].size < cuda.arena.functions["mlp"].size
    assert cpu.arena.functions["mlp"].size == cpu.arena.functions["mlp"].temporaries_size


def test_lowering_plans_the_cpu_target_with_its_own_workspaces():
    from accy.passes.lower.lower_pass import lower_module

    module = accy.parse(WIDE_REDUCE)
    manager = AnalysisManager()
    lower_module(module, manager, "cpu")
    from accy.passes.workspace.sizing import WORKSPACES

    assert manager.options.target == "cpu"
    (term,) = manager.get(WORKSPACES, module).terms
    assert (term.family, term.bytes) == ("reduce.chunks", 512)


def test_plan_pass_replaces_the_module_and_refuses_a_planned_one():
    module = accy.parse(WIDE_REDUCE)
    PlanPass(target="cuda").apply(Context(), module)
    assert module.attributes["accy.target"].data == "cuda"
    with pytest.raises(AccyError, match="already planned"):
        PlanPass(target="cuda").apply(Context(), module)


def test_hand_edited_overlap_is_refused():
    text = str(planned_module(accy.parse(WIDE_REDUCE), AnalysisManager(), "cuda"))
    # Put the result's view on top of the live input's bytes.
    lines = text.splitlines()
    index = next(
        i
        for i, line in enumerate(lines)
        if "memref<64xf32, #accy.space<device_global>>" in line and "accy.view" in line
    )
    start = lines[index].index("[") + 1
    end = lines[index].index("]")
    lines[index] = lines[index][:start] + "0" + lines[index][end:]
    with pytest.raises(AccyVerifyError, match="overlaps .* in the arena while both are live"):
        accy.parse("\n".join(lines))


def test_no_module_level_analysis_cache():
    """The analysis manager of a pipeline lives on its context, not in a module global."""
    source = (ROOT / "passes" / "plan_passes.py").read_text()
    assert "WeakKeyDictionary" not in source
    assert "_MANAGERS" not in source


def test_cpu_result_holds_the_temporary_it_takes_over():
    """On the CPU a result that takes a temporary over in place holds it in its
    out-parameter: the temporary is not in the arena, and the results stay right."""
    import numpy as np

    text = (ROOT / "lit_tests" / "lower" / "cpu_fused.mlir").read_text()
    prep = accy.prepare(accy.parse(text), target="cpu")
    arena = prep.arena.functions["f"]
    assert arena.in_outputs == {3: 5} and 3 not in arena.offsets
    assert prep.arena.describe_slot(3) == "in the out-parameter of slot 5 live [0, 2]"
    planned = str(planned_module(accy.parse(text), AnalysisManager(), "cpu"))
    assert "outs(%out0 : memref<4xf32, #accy.space<host>>)" in planned.split("accy.kernel 1")[0]
    a, b = np.arange(4, dtype=np.float32) / 4, np.ones(4, np.float32)
    expected = accy.reference.run(accy.parse(text), "f", a, b)[0]
    np.testing.assert_allclose(accy.compile(text, threads=1)(a, b)[0], expected, rtol=1e-6)


# ---------------------------------------------------------------------------------------
# accy-plan's options: its own, never an earlier pass's
# ---------------------------------------------------------------------------------------

FUSED = ROOT / "lit_tests" / "lower" / "cpu_fused.mlir"


def _opt(pipeline: str, capsys) -> str:
    from accy.cli.opt import main

    main([str(FUSED), "-p", pipeline])
    return capsys.readouterr().out


def test_accy_plan_takes_the_plan_options(capsys):
    assert "accy.arena alignment 4096 :" in _opt("accy-plan{target=cuda alignment=4096}", capsys)
    assert "accy.arena alignment 256 :" in _opt("accy-plan{target=cuda}", capsys)
    every = (
        "accy-plan{target=cuda alignment=128 rows=4 sm-count=8 constant-capacity=0 "
        "pack-budget-ms=20 pack-workers=1 check=true}"
    )
    assert "accy.arena alignment 128 :" in _opt(every, capsys)


def test_the_cpu_plan_accy_opt_prints_is_the_one_accy_compile_runs(capsys):
    """`accy-plan{target=cpu}` planned at CUDA's 256-byte alignment; `accy.compile` at the
    CPU's 64."""
    printed = _opt("accy-plan{target=cpu}", capsys)
    assert "accy.arena alignment 64 :" in printed
    runs = accy.compile(accy.parse(FUSED.read_text()), target="cpu").planned
    assert printed.strip() == str(runs).strip()


def test_a_pass_plans_with_its_own_options_not_an_earlier_passs(capsys):
    """`accy-plan-arena{alignment=128},accy-plan` planned the planned form at 128."""
    printed = _opt("accy-plan-arena{alignment=128 target=cuda},accy-plan{target=cuda}", capsys)
    assert "accy.arena alignment 256 :" in printed
    assert printed == _opt("accy-plan{target=cuda}", capsys)


def test_the_planned_form_drops_the_annotating_passes_text(capsys):
    """Kernel bodies kept `accy.arena = "offset 0 live [0, 2]"` (and the other passes'
    strings): an analysis's text, stale in the planned form, which states the plan as IR."""
    every = ",".join(p.name for p in PLAN_PASSES)
    printed = _opt(f"{every},accy-plan", capsys)
    assert 'accy.arena = "' not in printed and "accy.slot" not in printed
    assert printed == _opt("accy-plan", capsys)


def test_no_target_named_means_the_cpu_everywhere(capsys):
    """Every entry point plans, lowers, compiles and exports for `DEFAULT_TARGET` when none is
    named, so `accy-plan,accy-lower` and `accy-plan | accy-run -` work as written."""
    from accy.passes.options import PlanOptions

    from accy.targets import DEFAULT_TARGET

    assert DEFAULT_TARGET == "cpu"
    module = accy.parse(FUSED.read_text())
    assert PlanOptions().target == DEFAULT_TARGET
    assert inspect.signature(accy.export).parameters["target"].default == DEFAULT_TARGET
    assert accy.prepare(module).manager.options.target == "cpu"
    assert accy.compile(module).target == "cpu"
    planned = _opt("accy-plan", capsys)
    assert 'accy.target = "cpu"' in planned and "accy.arena alignment 64 :" in planned
    assert planned.strip() == str(accy.compile(module).planned).strip()
    assert "accy.arena alignment 4096 :" in _opt("accy-plan{alignment=4096}", capsys)
    lowered = _opt("accy-plan,accy-lower", capsys)
    assert "accy." not in lowered.replace("accy_fn_", "")  # upstream ops only


def test_a_planned_module_lowers_for_its_own_target_when_none_is_named(capsys, tmp_path):
    from accy.cli.opt import main

    planned = tmp_path / "planned.mlir"
    main([str(FUSED), "--accy-target=cuda", "-p", "accy-plan", "-o", str(planned)])
    main([str(planned), "-p", "accy-lower"])
    assert "gpu.container_module" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main([str(planned), "-p", "accy-lower{target=cpu}"])
    assert "planned for the cuda target, not for cpu" in capsys.readouterr().err
