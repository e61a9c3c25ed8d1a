"""The CUDA target end to end without a GPU: every check program (benchmarks/gpu/programs.py)
is exported with `accy.export(target="cuda")`, loaded with `accy.runtime.load` in a fresh
process whose runtime uses the fake CUDA driver (`ACCY_CUDA_DRIVER`), called once, and
the driver's call log is checked against the plan in the export's manifest:

- device bytes allocated == the planned arena (+ workspaces outside the arena), once;
- host → device copies == the planned input transfers (count and bytes), plus one upload
  per constant planned in device_global; constants in device_constant are never copied;
- launches follow the schedule (iterate bodies repeated, host loops expanded), each with
  the grid and block of its kernel program;
- device → host copies == one per result, of its bytes;
- every allocation is freed, and the fake saw no misuse (nothing touched after free, no
  copy past an allocation, no leak).

The fake runs no kernel, so values are not checked here (run_check.py does that on a GPU).
Also here: PTX of every kernel pattern through `ptxas -arch=sm_90 --warning-as-error`,
the error paths (no driver, a failing driver call, out of memory), the JIT path, and the
loader's independence from the compiler packages (CPU target, real values).
"""

from __future__ import annotations

import importlib.util
import itertools
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import accy
from accy.aot import export
from accy.runtime import fake_driver_library_path
from accy.runtime.plan_check import (
    PTXAS,
    call_field,
    expected_launches,
    plan_problems,
    ptxas_problems,
    run_with_fake_driver,
)

ROOT = Path(__file__).resolve().parents[2]


def _load_programs():
    spec = importlib.util.spec_from_file_location(
        "accy_gpu_programs", ROOT / "benchmarks" / "gpu" / "programs.py"
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


programs = _load_programs()
PROGRAMS = {p.name: p for p in programs.PROGRAMS}


def run_export(
    directory: Path, inputs, env: dict[str, str] | None = None, driver: str | None = None
) -> dict:
    return run_with_fake_driver(directory, inputs, env=env, driver=driver, import_root=ROOT)


@pytest.fixture(scope="module")
def exports(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("exports")
    return {name: export(p.text, root / name, target="cuda") for name, p in PROGRAMS.items()}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_driver_calls_follow_the_plan(exports, name):
    result = run_export(exports[name], PROGRAMS[name].make_inputs())
    assert plan_problems(exports[name], name, result) == []


@pytest.mark.parametrize("program", programs.ZOO_PROGRAMS, ids=lambda p: p.name)
def test_every_zoo_program_follows_its_plan(program, tmp_path):
    """Every model of the zoo exports for CUDA with kernels ptxas accepts, and one call
    under the fake driver follows its plan (values: on a GPU, by run_check.py)."""
    directory = export(accy.import_stablehlo(program.text), tmp_path / program.name, target="cuda")
    if os.access(PTXAS, os.X_OK):
        assert not ptxas_problems(directory)
    result = run_with_fake_driver(directory, program.make_inputs(), function="main")
    assert not plan_problems(directory, "main", result)


def test_plan_features_are_covered(exports):
    """Every family and plan feature the brief lists is exercised by some program."""
    families = set()
    for name, directory in exports.items():
        plan = json.loads((directory / "manifest.json").read_text())["functions"][name]["plan"]
        families |= {i["family"] for i in plan["work_items"] if i["family"]}
        families |= {i["kind"] for i in plan["work_items"]}
    assert {
        "reduce.row",
        "reduce.split",
        "scan.block",
        "scan.multiblock",
        "dot.tiled",
        "dot.splitk",
        "elementwise",
        "broadcast",
        "transpose",
        "iterate",
        "scatter",
        "fold",
        "sort.merge",
        "window",
        "convolution",
    } <= families


def test_donated_parameter_is_taken_over_in_place():
    """The donated program's sum takes its donated parameter's device buffer (the arena
    copy the host's array is copied into): the arena is one 24 KiB buffer smaller."""
    program = PROGRAMS["donated"]
    donated = accy.prepare(accy.parse(program.text), target="cuda").arena.functions["donated"]
    kept = accy.prepare(accy.parse(program.text.replace(" {accy.donated}", "")), target="cuda")
    assert donated.reuses == {2: 0}
    assert donated.offsets[2] == donated.offsets[0]
    assert donated.size == kept.arena.functions["donated"].size - 64 * 96 * 4


def test_constants_live_in_constant_memory(exports):
    manifest = json.loads((exports["constants"] / "manifest.json").read_text())
    plan = manifest["functions"]["constants"]["plan"]
    constant_slots = [t for t in plan["transfers"] if "constant" in t["role"]]
    assert {t["space"] for t in constant_slots} == {"device_constant"}
    ptx = (exports["constants"] / "accy_kernels.ptx").read_text()
    assert ".const .align 16 .b8 accy_device_constant_" in ptx  # the 4x4 table, not the splat
    assert ptx.count(".const ") == 1


@pytest.mark.skipif(not os.access(PTXAS, os.X_OK), reason="needs ptxas (CUDA toolkit)")
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_ptxas_accepts_every_kernel(exports, name):
    assert ptxas_problems(exports[name]) == []


# ---------------------------------------------------------------------------------------
# Error paths
# ---------------------------------------------------------------------------------------


def test_missing_driver_is_a_clear_error(exports):
    result = run_export(
        exports["broadcast"],
        PROGRAMS["broadcast"].make_inputs(),
        driver="/nonexistent/libcuda.so.1",
    )
    assert result["error"].startswith(
        f"loading the kernels of {exports['broadcast'].resolve()}: accy runtime: cannot load "
        "the CUDA driver library '/nonexistent/libcuda.so.1'"
    )


def test_failing_driver_call_is_reported(exports):
    result = run_export(
        exports["broadcast"],
        PROGRAMS["broadcast"].make_inputs(),
        env={"ACCY_FAKE_CUDA_FAIL": "cuLaunchKernel=719"},
    )
    assert result["error"].startswith("running @broadcast: accy runtime: cuLaunchKernel(")
    assert "CUDA_ERROR_LAUNCH_FAILED" in result["error"]


def test_out_of_memory_names_the_arena(exports):
    manifest = json.loads((exports["reduce_row"] / "manifest.json").read_text())
    arena = manifest["functions"]["reduce_row"]["plan"]["arena_bytes"]
    result = run_export(
        exports["reduce_row"],
        PROGRAMS["reduce_row"].make_inputs(),
        env={"ACCY_FAKE_CUDA_MEMORY_LIMIT": str(arena // 2)},
    )
    assert result["error"] == (
        f"running @reduce_row: accy runtime: cannot allocate {arena} bytes of device memory: "
        "CUDA_ERROR_OUT_OF_MEMORY: out of memory (cuMemAlloc_v2)"
    )


def test_wrong_arguments_are_refused_before_running(exports):
    from accy.runtime.loader import check_arguments

    params = [{"shape": [64, 128], "dtype": "float32"}]
    with pytest.raises(TypeError, match=r"argument #0 of @f: dtype float64, expected float32"):
        check_arguments("f", params, (np.zeros((64, 128)),))
    with pytest.raises(
        ValueError, match=r"argument #0 of @f: shape \(64, 3\), expected \(64, 128\)"
    ):
        check_arguments("f", params, (np.zeros((64, 3), np.float32),))
    with pytest.raises(TypeError, match="@f takes 1 arguments, got 0"):
        check_arguments("f", params, ())


# ---------------------------------------------------------------------------------------
# JIT and the loader's independence
# ---------------------------------------------------------------------------------------


def test_jit_runs_the_plan_on_the_fake_driver():
    script = textwrap.dedent("""
        import ctypes, sys, numpy as np, accy
        sys.path.insert(0, sys.argv[1])
        from programs import program
        p = program("iterate")
        exe = accy.compile(p.text, target="cuda")
        (out,) = exe(*p.make_inputs())
        exe.close()
        fake = ctypes.CDLL(sys.argv[2])
        print(out.shape, fake.fake_cuda_error_count(), fake.fake_cuda_check_leaks())
    """)
    environment = dict(os.environ, ACCY_CUDA_DRIVER=str(fake_driver_library_path()))
    process = subprocess.run(
        [
            sys.executable,
            "-c",
            script,
            str(ROOT / "benchmarks" / "gpu"),
            str(fake_driver_library_path()),
        ],
        env=environment,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert process.returncode == 0, process.stderr
    assert process.stdout.split("\n")[0] == "(256,) 0 0"


def test_jit_without_a_driver_says_so(tmp_path):
    script = "import accy, sys; accy.compile(open(sys.argv[1]).read(), target='cuda')"
    source = tmp_path / "broadcast.mlir"
    source.write_text(PROGRAMS["broadcast"].text)
    environment = dict(os.environ, ACCY_CUDA_DRIVER="/nonexistent/libcuda.so.1")
    process = subprocess.run(
        [sys.executable, "-c", script, str(source)],
        env=environment,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert process.returncode != 0
    assert "CudaRuntimeError: loading the kernels: accy runtime: cannot load the CUDA driver" in (
        process.stderr
    )


LOADER_ONLY = r"""
import sys, importlib.abc
class Refuse(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("xdsl", "torch_mlir", "numba_cuda_mlir", "mlir", "ml_dtypes"):
            raise ImportError(f"{name} is not installed here")
        return None
sys.meta_path.insert(0, Refuse())
sys.path.insert(0, sys.argv[1])
import numpy as np
import accy.runtime
module = accy.runtime.load(sys.argv[2])
x, row, col = (np.load(p) for p in sys.argv[3:6])
(out,) = module.broadcast(x, row, col)
assert module["broadcast"] is module.broadcast
heavy = sorted(m for m in sys.modules if m.startswith(("accy.passes", "accy.dialects", "accy.mlir_bridge", "xdsl")))
print(float(np.abs(out - (x + row[None, :]) * col[:, None]).max()), heavy)
"""


def test_loader_needs_only_numpy_and_ctypes(tmp_path):
    program = PROGRAMS["broadcast"]
    directory = export(program.text, tmp_path / "cpu", target="cpu")
    manifest = json.loads((directory / "manifest.json").read_text())
    assert manifest["target"] == "cpu" and manifest["runtime"] is None
    paths = []
    for index, array in enumerate(program.make_inputs()):
        np.save(tmp_path / f"{index}.npy", array)
        paths.append(str(tmp_path / f"{index}.npy"))
    process = subprocess.run(
        [sys.executable, "-c", LOADER_ONLY, str(ROOT), str(directory), *paths],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert process.returncode == 0, process.stderr
    assert process.stdout.strip() == "0.0 []"


def test_export_is_callable_from_the_package(tmp_path):
    directory = accy.export(PROGRAMS["transpose"].text, tmp_path / "t", target="cuda")
    names = sorted(p.name for p in directory.iterdir())
    assert names == [
        "accy_kernels.ptx",
        "libaccy_program.so",
        "libaccy_runtime.so",
        "manifest.json",
    ]
    readelf = shutil.which("readelf")
    if readelf:
        dynamic = subprocess.run(
            [readelf, "-d", str(directory / "libaccy_program.so")],
            capture_output=True,
            text=True,
            check=False,
        ).stdout
        assert "[$ORIGIN]" in dynamic and "libaccy_runtime.so" in dynamic


# ---------------------------------------------------------------------------------------
# Reduction order: bounded per-thread chains (passes/lower/cuda_reductions.py)
# ---------------------------------------------------------------------------------------


def _reduction(name: str, shape: tuple[int, ...], dims: list[int], element: str) -> str:
    source = "tensor<" + "x".join(map(str, shape)) + f"x{element}>"
    kept = [size for d, size in enumerate(shape) if d not in dims]
    result = "tensor<" + "".join(f"{size}x" for size in kept) + f"{element}>"
    return f"""
func.func @{name}(%x: {source}) -> {result} {{
  %r = accy.reduce add %x, dims = {dims} : ({source}) -> {result}
  func.return %r : {result}
}}"""


# name: (shape, dims, element, family). Wide rows: the split; a wide reduced leading dim
# with a narrow last dim (the families look at the last dim): one block per row.
REDUCTIONS = {
    "sum_flat": ((2**22 + 7,), [0], "f32", "reduce.split"),
    "sum_rows": ((4, 2**20), [1], "f32", "reduce.split"),
    "sum_rows_f16": ((4, 2**20), [1], "f16", "reduce.split"),
    "sum_columns": ((2**20, 4), [0], "f32", "reduce.row"),
}


@pytest.fixture(scope="module")
def reduction_exports(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("reductions")
    return {
        name: export(_reduction(name, shape, dims, element), root / name, target="cuda")
        for name, (shape, dims, element, _) in REDUCTIONS.items()
    }


@pytest.mark.parametrize("name", sorted(REDUCTIONS))
def test_blocked_reductions_run_their_plan(reduction_exports, name):
    shape, _, element, family = REDUCTIONS[name]
    directory = reduction_exports[name]
    plan = json.loads((directory / "manifest.json").read_text())["functions"][name]["plan"]
    assert [i["family"] for i in plan["work_items"]] == [family]
    dtype = np.float32 if element == "f32" else np.float16
    result = run_export(directory, [np.full(shape, 1.1, dtype)])
    assert result["error"] is None, result["error"]
    assert result["misuse"] == [] and result["leaks"] == 0
    launches = [
        (
            call_field(c, "name"),
            [int(v) for v in call_field(c, "grid").split(",")],
            [int(v) for v in call_field(c, "block").split(",")],
        )
        for c in result["calls"]
        if c.startswith("launch ")
    ]
    assert launches == expected_launches(plan)
    if os.access(PTXAS, os.X_OK):
        for ptx in directory.glob("*.ptx"):
            process = subprocess.run(
                [PTXAS, "-arch=sm_90", "--warning-as-error", str(ptx), "-o", os.devnull],
                capture_output=True,
                text=True,
                check=False,
            )
            assert process.returncode == 0 and process.stderr == "", process.stderr


def _carried_loop_steps(module) -> dict[str, list[int]]:
    """Kernel name → the steps of its `scf.for`s carrying values, in nesting order."""
    from xdsl.dialects import arith, gpu, scf

    steps: dict[str, list[int]] = {}
    for op in module.walk():
        if isinstance(op, gpu.FuncOp):
            loops = [l for l in op.walk() if isinstance(l, scf.ForOp) and l.iter_args]
            assert all(isinstance(l.step.owner, arith.ConstantOp) for l in loops)
            steps[op.sym_name.data] = [l.step.owner.value.value.data for l in loops]
    return steps


@pytest.mark.parametrize(
    ("shape", "dims", "expected"),
    [
        # 10**8 elements over sm_count * 8 = 1056 blocks of 256 threads: 370 elements per
        # thread, in blocks of at most THREAD_LEAF = 64 (step 256), <= 6 blocks (16384).
        ((10**8,), [0], {"reduce_split_partials": [16384, 256], "reduce_split_fold": [256]}),
        # 4096 elements per thread: 4 x 16 blocks of 64.
        ((2**20, 4), [0], {"reduce_row": [262144, 16384, 256]}),
        # 16 elements per thread: one loop, as before.
        ((4, 4096), [1], {"reduce_row": [256]}),
    ],
)
def test_reduction_threads_fold_in_bounded_blocks(shape, dims, expected):
    from accy.passes.analysis import AnalysisManager
    from accy.passes.lower.cuda_reductions import THREAD_FAN, THREAD_LEAF
    from accy.passes.lower.lower_pass import lower_module
    from accy.passes.shared_memory import REDUCE_BLOCK

    module = accy.parse(_reduction("f", shape, dims, "f32"))
    lowered = lower_module(module, AnalysisManager(), "cuda")
    steps = _carried_loop_steps(lowered)
    got = {
        kernel: next(s for name, s in steps.items() if name.endswith(kernel)) for kernel in expected
    }
    assert got == expected
    for nest in got.values():  # each loop folds at most THREAD_LEAF (innermost) or FAN blocks
        assert nest[-1] == REDUCE_BLOCK
        for outer, inner in itertools.pairwise(nest):
            assert outer // inner <= max(THREAD_LEAF, THREAD_FAN)


# ---------------------------------------------------------------------------------------
# reduce.split's partials: one 4-byte partial per KEPT row (result element) and block
# ---------------------------------------------------------------------------------------


def _launches(result: dict) -> list[tuple[str, list[int], list[int]]]:
    return [
        (
            call_field(c, "name"),
            [int(v) for v in call_field(c, "grid").split(",")],
            [int(v) for v in call_field(c, "block").split(",")],
        )
        for c in result["calls"]
        if c.startswith("launch ")
    ]


def test_full_sum_of_1e8_elements_has_a_small_workspace(tmp_path):
    """A full sum keeps one row: partials = 1 * 132 * 8 * 4 = 4224 bytes, not the
    10**8 * 132 * 32 = 422.4 GB the plan's rows `n` gave (which no H200, nor the fake's
    64 GiB of address space, can allocate). The export runs on the fake driver."""
    n = 10**8
    directory = export(_reduction("total", (n,), [0], "f32"), tmp_path / "total", target="cuda")
    plan = json.loads((directory / "manifest.json").read_text())["functions"]["total"]["plan"]
    assert [i["family"] for i in plan["work_items"]] == ["reduce.split"]
    assert plan["own_workspaces"] == []
    assert [(w["family"], w["name"], w["bytes"]) for w in plan["arena_workspaces"]] == [
        ("reduce.split", "partials", 132 * 8 * 4)
    ]
    assert plan["arena_bytes"] < n * 4 + 16384  # the input, the workspace, the result
    result = run_export(directory, [np.ones(n, np.float32)])
    assert result["error"] is None, result["error"]
    assert result["misuse"] == [] and result["leaks"] == 0
    assert result["shapes"] == [[]]
    allocations = [int(call_field(c, "bytes")) for c in result["calls"] if c.startswith("alloc ")]
    assert allocations == [plan["arena_bytes"]]
    assert _launches(result) == expected_launches(plan)


@pytest.mark.parametrize(
    ("shape", "dims"),
    [
        ((8, 3, 5000), [0]),  # keeps 3 * 5000 rows; n (the leading dim) is 8
        ((6, 3, 4, 4100), [1, 3]),  # keeps 6 * 4 rows; n is 6
    ],
)
def test_split_partials_cover_kept_rows_beyond_n(tmp_path, shape, dims):
    """More kept rows than the plan's rows `n`: the workspace is sized by the kept rows,
    exactly what the kernels index (partials[row * grid + block]); before, the lowering
    refused it ("needs ... bytes of 'partials' but the plan sized it at ...")."""
    kept = int(np.prod([s for d, s in enumerate(shape) if d not in dims]))
    assert kept > shape[0]
    directory = export(_reduction("wide", shape, dims, "f32"), tmp_path / "wide", target="cuda")
    plan = json.loads((directory / "manifest.json").read_text())["functions"]["wide"]["plan"]
    assert [i["family"] for i in plan["work_items"]] == ["reduce.split"]
    (workspace,) = plan["arena_workspaces"]
    assert workspace["bytes"] == kept * 132 * 8 * 4
    assert workspace["offset"] + workspace["bytes"] <= plan["arena_bytes"]
    result = run_export(directory, [np.ones(shape, np.float32)])
    assert result["error"] is None, result["error"]
    assert result["misuse"] == [] and result["leaks"] == 0
    launches = _launches(result)
    assert launches == expected_launches(plan)
    assert [grid for _, grid, _ in launches] == [[132 * 8, 1, 1], [kept, 1, 1]]


def test_dims0_of_5000x3x5000_fits_its_workspace():
    """The brief's case: dims = [0] of 5000x3x5000 keeps 15000 rows (n = 5000): partials
    15000 * 4224 bytes, which the CUDA lowering (which checks the plan's bytes against what
    its kernels index) now accepts."""
    from accy.passes.analysis import AnalysisManager
    from accy.passes.lower.lower_pass import lower_module

    module = accy.parse(_reduction("cube", (5000, 3, 5000), [0], "f32"))
    prep = accy.prepare(module, target="cuda")
    assert prep.workspaces.term("reduce.split", "partials").bytes == 15000 * 132 * 8 * 4
    lower_module(module, AnalysisManager(), "cuda")  # raised CudaLoweringError before


def test_a_program_without_kernels_loads_and_follows_its_plan(tmp_path):
    """A pad to an empty result launches nothing: its library has no kernels to load (and
    no ORC init function to call), and its empty result is not copied."""
    text = """
func.func @empty(%x: tensor<2x3xf32>, %v: tensor<f32>) -> tensor<2x0xf32> {
  %r = accy.pad %x, %v, low = [0, -2], high = [0, -3], interior = [0, 1] : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x0xf32>
  func.return %r : tensor<2x0xf32>
}"""
    directory = accy.export(text, tmp_path / "empty", target="cuda")
    inputs = [np.zeros((2, 3), np.float32), np.float32(1.0)]
    result = run_export(directory, inputs)
    assert result["shapes"] == [[2, 0]]
    assert plan_problems(directory, "empty", result) == []


SWAPPING_LOOP = """func.func @f(%a: tensor<4xf32>, %b: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %r:2 = accy.iterate 3 iter_args(%p = %a, %q = %b) : tensor<4xf32>, tensor<4xf32> {
    %n = accy.negate %p : tensor<4xf32>
    accy.yield %q, %n : tensor<4xf32>, tensor<4xf32>
  }
  func.return %r#0, %r#1 : tensor<4xf32>, tensor<4xf32>
}"""


def test_a_loop_that_permutes_its_carried_values_follows_the_planned_form(tmp_path):
    """The yield writes each carried buffer from another one, so the planned form stages
    them through buffers of their own: the check reads those allocations and the loop's
    copies from the planned form (`plan.host_calls`)."""
    directory = accy.export(SWAPPING_LOOP, tmp_path / "swap", target="cuda")
    plan = json.loads((directory / "manifest.json").read_text())["functions"]["f"]["plan"]
    assert plan["host_calls"]["allocations"]  # the staging buffers
    result = run_with_fake_driver(directory, [np.ones(4, np.float32), np.zeros(4, np.float32)])
    assert plan_problems(directory, "f", result) == []
