"""Run the exported check programs on a GPU (run THERE: python3 + numpy, cupy and torch for
the peers; no xdsl or MLIR needed).

    python3 benchmarks/gpu/run_check.py                 # check values, time the large ones
    python3 benchmarks/gpu/run_check.py --fake-driver   # no GPU: load and call only

For each export in `artifacts/` (written by prepare.py): load it with
`accy.runtime.load` (only `accy/runtime` is imported, from this checkout), make the inputs
from a seed, call it and compare every result with the program's numpy oracle. If the
exported runtime library cannot load here, it is rebuilt with cmake from
`accy/runtime/native` and copied into the export.

The zoo's programs (checked against JAX's outputs) are then timed end to end against XLA
on the same GPU (`zoo_against_xla`, JAX's jit of the zoo's own functions), with the
geometric mean and the worst ratio.

The large programs are timed side by side with their peers, kernel time only (CUDA
events for cupy and torch; accy's own kernels are timed with torch.profiler, which sees
every kernel of the process): bandwidth in GB/s of the bytes a perfect kernel moves, and
the ratios to cupy, to torch and to torch's copy bandwidth on the same bytes. Whole run
well under 5 minutes. Exit status 1 when a check fails.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
ARTIFACTS = HERE / "artifacts"
sys.path.insert(0, str(ROOT))  # accy.runtime (stdlib + numpy only)
sys.path.insert(0, str(HERE))  # programs (numpy only)

from programs import program

from accy.runtime.loader import CudaRuntimeError, load

RUNTIME = "libaccy_runtime.so"


def build_runtime() -> Path:
    """Build libaccy_runtime.so (and the fake driver) with cmake from this checkout."""
    build = Path(tempfile.mkdtemp(prefix="accy-runtime-"))
    subprocess.run(
        ["cmake", "-S", str(ROOT), "-B", str(build), "-DCMAKE_BUILD_TYPE=Release"],
        check=True,
        capture_output=True,
    )
    subprocess.run(["cmake", "--build", str(build), "-j"], check=True, capture_output=True)
    return build


_built: Path | None = None


def load_export(directory: Path):
    """Load an export; on a loader error from the shipped runtime, rebuild it here."""
    global _built
    try:
        return load(directory)
    except OSError as error:
        print(f"  {directory.name}: the shipped runtime does not load ({error}); rebuilding")
        if _built is None:
            _built = build_runtime()
        shutil.copyfile(_built / RUNTIME, directory / RUNTIME)
        # The manifest records each library's size and hash: record the rebuilt one's.
        manifest_path = directory / "manifest.json"
        manifest = json.loads(manifest_path.read_text())
        data = (directory / RUNTIME).read_bytes()
        manifest["libraries"][RUNTIME] = {
            "bytes": len(data),
            "sha256": hashlib.sha256(data).hexdigest(),
        }
        manifest_path.write_text(json.dumps(manifest, indent=1) + "\n")
        return load(directory)


def compare(name, outputs, expected, tolerance) -> tuple[bool, float]:
    worst = 0.0
    ok = len(outputs) == len(expected)
    for out, exp in zip(outputs, expected):
        exp = np.asarray(exp)
        if out.shape != exp.shape:
            return False, float("inf")
        a, b = out.astype(np.float64), exp.astype(np.float64)
        error = np.abs(a - b) / (1.0 + np.abs(b))
        worst = max(worst, float(np.nanmax(error)) if error.size else 0.0)
        ok = ok and bool(np.all(np.isclose(a, b, rtol=tolerance, atol=tolerance)))
    return ok, worst


# ---------------------------------------------------------------------------------------
# Timing (GPU only)
# ---------------------------------------------------------------------------------------


def time_cuda(fn, repeats: int = 20) -> float:
    """Seconds per call of `fn` (device work, CUDA events of torch's current stream)."""
    import torch

    fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(repeats):
        fn()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / 1e3 / repeats


def accy_kernel_seconds(function, inputs, kernel_prefix: str, repeats: int = 5) -> float | None:
    """Device time of accy's kernels per call (torch.profiler sees every CUDA kernel of the
    process, accy's included); None when the profiler reports none."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    function(*inputs)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(repeats):
            function(*inputs)
        torch.cuda.synchronize()
    total_us = 0.0
    for event in prof.key_averages():
        if event.key.startswith(kernel_prefix):
            per_call = getattr(event, "device_time_total", None)
            if per_call is None:
                per_call = getattr(event, "cuda_time_total", 0.0)
            total_us += per_call
    return total_us / 1e6 / repeats if total_us else None


def peers(name: str, inputs):
    """(label, fn) of the peers of a large program, working on device-resident copies."""
    import cupy
    import torch

    t = [torch.from_numpy(a).cuda() for a in inputs]
    c = [cupy.asarray(a) for a in inputs]
    if name == "large_fused_elementwise":
        fused = cupy.ElementwiseKernel(
            "float32 a, float32 b, float32 c, float32 d",
            "float32 r",
            "r = (a + b) * c - d",
            "accy_peer_fused",
        )
        out = cupy.empty_like(c[0])
        return [
            ("cupy fused", lambda: fused(*c, out)),
            ("torch", lambda: torch.sub(torch.mul(torch.add(t[0], t[1]), t[2]), t[3])),
        ]
    if name == "large_row_reduce":
        return [("cupy", lambda: c[0].sum(axis=1)), ("torch", lambda: t[0].sum(dim=1))]
    return []


def torch_copy_seconds(nbytes: int) -> float:
    """torch's device-to-device copy of `nbytes / 2` bytes (reads and writes `nbytes`)."""
    import torch

    source = torch.empty(nbytes // 2, dtype=torch.uint8, device="cuda")
    target = torch.empty_like(source)
    return time_cuda(lambda: target.copy_(source))


def benchmark(p, function, inputs) -> None:
    nbytes = p.bytes_moved()
    gb = nbytes / 1e9
    kernel = accy_kernel_seconds(function, inputs, f"{p.name}_item")
    start = time.perf_counter()
    function(*inputs)
    end_to_end = time.perf_counter() - start
    copy = torch_copy_seconds(nbytes)
    print(
        f"  {p.name}: {gb:.2f} GB moved per call; end to end (with host copies) "
        f"{end_to_end * 1e3:.1f} ms"
    )
    print(f"    torch copy          {copy * 1e6:9.1f} us  {gb / copy:7.1f} GB/s")
    if kernel is None:
        print("    accy kernels        (not seen by torch.profiler)")
    else:
        print(
            f"    accy kernels        {kernel * 1e6:9.1f} us  {gb / kernel:7.1f} GB/s  "
            f"= {copy / kernel:.2f} x torch copy bandwidth"
        )
    for label, fn in peers(p.name, inputs):
        seconds = time_cuda(fn)
        ratio = f"  accy/peer time {kernel / seconds:.2f}" if kernel else ""
        print(f"    {label:19s} {seconds * 1e6:9.1f} us  {gb / seconds:7.1f} GB/s{ratio}")


def zoo_against_xla(checked: list[tuple[str, object, list]], repeats: int = 20) -> None:
    """Each zoo program that passed, end to end from host arrays to host arrays, against
    XLA on the same device (JAX's jit of the zoo's own function, its inputs passed as
    numpy arrays and its outputs copied back): median seconds per call and the ratio."""
    import importlib.util

    import jax

    spec = importlib.util.spec_from_file_location(
        "accy_zoo_programs", ROOT / "benchmarks" / "zoo" / "programs.py"
    )
    zoo = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = zoo
    spec.loader.exec_module(zoo)

    def median_seconds(call) -> float:
        call()
        samples = []
        for _ in range(repeats):
            start = time.perf_counter()
            call()
            samples.append(time.perf_counter() - start)
        return sorted(samples)[len(samples) // 2]

    print(f"\nzoo against XLA on {jax.devices()[0]} (end to end, median of {repeats} calls):")
    print(f"  {'program':24s} {'accy ms':>9s} {'XLA ms':>9s} {'XLA/accy':>9s}")
    ratios = []
    for name, function, inputs in checked:
        stem = name.removeprefix("zoo_")
        jitted = jax.jit(zoo.PROGRAMS[stem].function)
        accy_s = median_seconds(lambda f=function, x=inputs: f(*x))
        xla_s = median_seconds(
            lambda f=jitted, x=inputs: [np.asarray(v) for v in jax.tree_util.tree_leaves(f(*x))]
        )
        ratios.append((xla_s / accy_s, stem))
        print(f"  {stem:24s} {accy_s * 1e3:9.3f} {xla_s * 1e3:9.3f} {xla_s / accy_s:9.2f}")
    if ratios:
        geomean = float(np.exp(np.mean([np.log(r) for r, _ in ratios])))
        worst = min(ratios)
        print(f"  geomean XLA/accy {geomean:.2f}, worst {worst[0]:.2f} ({worst[1]})")


# ---------------------------------------------------------------------------------------


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--fake-driver",
        nargs="?",
        const="auto",
        default=None,
        help="use the fake CUDA driver (path, or built/installed one): "
        "load and call only, no values, no timing",
    )
    parser.add_argument("--only", nargs="*", default=None, help="program names")
    parser.add_argument(
        "--time-zoo",
        action="store_true",
        help="with --fake-driver: time the zoo against XLA anyway (a dry run of that part; "
        "on a GPU it always runs)",
    )
    args = parser.parse_args(argv)
    fake = args.fake_driver is not None
    if fake:
        path = args.fake_driver
        if path == "auto":
            from accy.runtime.libraries import fake_driver_library_path

            path = str(fake_driver_library_path())
        os.environ["ACCY_CUDA_DRIVER"] = path
    index = json.loads((ARTIFACTS / "index.json").read_text())
    failures = []
    zoo_checked: list[tuple[str, object, list]] = []
    started = time.perf_counter()
    for entry in index:
        name = entry["name"]
        if args.only and name not in args.only:
            continue
        p = program(name)
        try:
            module = load_export(ARTIFACTS / name)
            if fake and p.large:
                print(f"{name:28s} loaded (large: not called with the fake driver)")
                module.close()
                continue
            inputs = p.make_inputs(seed=0)
            function = module[p.function or name]
            outputs = function(*inputs)
            if fake:
                shapes = [o.shape for o in outputs]
                print(f"{name:28s} called: result shapes {shapes}")
                if args.time_zoo and name.startswith("zoo_"):
                    zoo_checked.append((name, function, inputs))
                continue
            ok, worst = compare(name, outputs, p.expected(*inputs), p.tolerance)
            print(f"{name:28s} {'PASS' if ok else 'FAIL'}  max rel error {worst:.2e}")
            if not ok:
                failures.append(name)
            elif p.large:
                benchmark(p, function, inputs)
            elif name.startswith("zoo_"):
                zoo_checked.append((name, function, inputs))
                continue  # kept loaded for the timing below
            module.close()
        except (CudaRuntimeError, OSError, ValueError, TypeError) as error:
            print(f"{name:28s} ERROR {error}")
            failures.append(name)
        except Exception:  # noqa: BLE001 - keep going: report every program
            traceback.print_exc()
            failures.append(name)
    print(
        f"{len(index) - len(failures)} of {len(index)} programs passed "
        f"({time.perf_counter() - started:.1f} s)" + (f"; failed: {failures}" if failures else "")
    )
    if zoo_checked:
        zoo_against_xla(zoo_checked)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
