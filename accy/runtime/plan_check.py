"""Run an export under the fake CUDA driver and check its driver calls against the plan.

`run_with_fake_driver(directory, inputs)` loads an `accy.export(target="cuda")` directory in
a fresh interpreter whose runtime uses the fake driver (`ACCY_CUDA_DRIVER`), calls one
of its functions once and returns what the fake logged. `plan_problems(directory, name,
result)` lists every way those calls differ from the manifest's plan:

- device bytes allocated == the planned arena and the planned form's buffers of their own
  (workspaces outside the arena, a loop's staging buffers: the manifest's
  `plan.host_calls`, read from the planned form at export), once, and every allocation
  freed;
- host → device copies == the planned form's, in order (inputs, constant uploads, in loops
  once per iteration; an empty buffer is never copied);
- launches follow the schedule (iterate bodies repeated, host loops expanded; a while's
  cond once and its body never: the fake's copies back deliver zeros, so its condition
  reads false), each with the grid and block of its kernel program, from one module load
  (none without kernels);
- device → host copies == the planned form's (one per result, of its bytes), with the
  declared shapes;
- device → device copies == the planned form's (a loop's inits once, its yields and
  stagings per iteration);
- the fake saw no misuse and no leak.

`ptxas_problems(directory)` runs `ptxas -arch=sm_90 --warning-as-error` on every PTX file
of the export. The fake runs no kernel: values are checked on a GPU (benchmarks/gpu).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from accy.runtime.libraries import fake_driver_library_path

PTXAS = shutil.which("ptxas") or "/usr/local/cuda/bin/ptxas"
"""The `ptxas` that checks exported PTX (the CUDA toolkit's)."""

RUNNER = r"""
import ctypes, json, sys
import numpy as np
if sys.argv[1]:
    sys.path.insert(0, sys.argv[1])
from accy.runtime import load, CudaRuntimeError
fake = ctypes.CDLL(sys.argv[3])
for name, result in (("fake_cuda_event_count", ctypes.c_int), ("fake_cuda_error_count", ctypes.c_int),
                     ("fake_cuda_check_leaks", ctypes.c_int)):
    getattr(fake, name).restype = result
def read(count, entry):
    lines = []
    for i in range(count()):
        buffer = ctypes.create_string_buffer(4096)
        entry(i, buffer, len(buffer))
        lines.append(buffer.value.decode())
    return lines
error = None
try:
    module = load(sys.argv[2])
    import ml_dtypes  # noqa: F401 - names bfloat16 for np.dtype
    inputs = []
    for argument in sys.argv[5:]:
        path, dtype = argument.rsplit(":", 1)
        inputs.append(np.load(path).view(np.dtype(dtype)))
    outputs = module[sys.argv[4] or module.function_names[0]](*inputs)
    shapes = [list(o.shape) for o in outputs]
    module.close()
except CudaRuntimeError as e:
    error, shapes = str(e), None
calls = read(fake.fake_cuda_event_count, fake.fake_cuda_event)
leaks = fake.fake_cuda_check_leaks()
print(json.dumps({"error": error, "shapes": shapes, "calls": calls, "leaks": leaks,
                  "misuse": read(fake.fake_cuda_error_count, fake.fake_cuda_error)}))
"""
"""Runs in a fresh interpreter: load the export, call it, report the fake's logs as JSON."""


class FakeRunError(RuntimeError):
    """The process running an export under the fake driver failed (its stderr)."""


def run_with_fake_driver(
    directory: Path,
    inputs,
    *,
    env: dict[str, str] | None = None,
    driver: str | None = None,
    function: str | None = None,
    import_root: Path | None = None,
    timeout: float = 120,
) -> dict:
    """Call the export's `function` (default: its first) once under the fake driver (or
    `driver`); the fake's log: `error` (a `CudaRuntimeError`'s text or None), `shapes`,
    `calls`, `leaks`, `misuse`. `import_root` goes first on the runner's `sys.path`."""
    with tempfile.TemporaryDirectory(prefix="accy-fake-run-") as scratch:
        paths = []
        for index, array in enumerate(inputs):
            path = Path(scratch) / f"input_{index}.npy"
            array = np.asarray(array)
            # saved as raw bytes: np.save does not keep ml_dtypes' types (bfloat16)
            np.save(path, array.view(f"V{array.dtype.itemsize}"))
            paths.append(f"{path}:{array.dtype.name}")
        environment = {k: v for k, v in os.environ.items() if not k.startswith("ACCY_FAKE_CUDA")}
        environment["ACCY_CUDA_DRIVER"] = driver or str(fake_driver_library_path())
        environment["ACCY_FAKE_CUDA_ZERO_READBACK"] = "1"  # a while's condition: false
        environment.update(env or {})
        process = subprocess.run(
            [
                sys.executable,
                "-c",
                RUNNER,
                str(import_root or ""),
                str(directory),
                str(fake_driver_library_path()),
                function or "",
                *paths,
            ],
            env=environment,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    if process.returncode != 0:
        raise FakeRunError(process.stderr.strip() or f"exit status {process.returncode}")
    return json.loads(process.stdout.strip().splitlines()[-1])


def call_field(line: str, name: str) -> str:
    """The value of `name=` in one line of the fake's call log."""
    return line.split(f"{name}=")[1].split()[0]


def expected_launches(plan: dict) -> list[tuple[str, list[int], list[int]]]:
    """The launches the plan's schedule implies, in order: (kernel, grid, block)."""
    items = plan["work_items"]

    def run(item) -> list:
        if item["kind"] == "iterate":
            children = [i for i in items if i["parent"] == item["id"]]
            if item.get("trip_count") is None:  # a while: its cond once (see the docstring)
                cond = [i for i in children if i.get("region") == "cond"]
                return [launch for child in cond for launch in run(child)]
            return [
                launch
                for _ in range(item["trip_count"])
                for child in children
                for launch in run(child)
            ]
        once = [(l["kernel"], l["grid"], l["block"]) for l in item["launches"]]
        return once * (item["host_loop"] or 1)

    return [launch for item in items if item["parent"] is None for launch in run(item)]


def plan_problems(directory: Path, name: str, result: dict) -> list[str]:
    """How the fake's log of one call of function `name` differs from the export's plan
    (see the module docstring); empty when it follows the plan."""
    manifest = json.loads((Path(directory) / "manifest.json").read_text())
    function = manifest["functions"][name]
    plan = function["plan"]
    problems: list[str] = []

    def expect(what: str, actual, wanted) -> None:
        if actual != wanted:
            problems.append(f"{what}: {actual} (the plan: {wanted})")

    if result["error"] is not None:
        return [f"the run failed: {result['error']}"]
    expect("misuse", result["misuse"], [])
    expect("leaked allocations", result["leaks"], 0)
    calls = result["calls"]
    allocations = [c for c in calls if c.startswith("alloc ")]
    host_calls = plan.get("host_calls")
    own = (
        host_calls["allocations"]
        if host_calls is not None
        else [w["bytes"] for w in plan["own_workspaces"]]
    )
    expect(
        "device allocations (bytes)",
        sorted(int(call_field(c, "bytes")) for c in allocations),
        sorted(([plan["arena_bytes"]] if plan["arena_bytes"] else []) + own),
    )
    expect("slots outside the arena", plan["separate_slots"], [])
    freed = {call_field(c, "ptr") for c in calls if c.startswith("free ")}
    expect("freed allocations", freed, {call_field(c, "ptr") for c in allocations})
    transfers = plan["transfers"]
    planned_in = [
        t["bytes"] for t in transfers if t["transfer"] in ("host_to_device", "bidirectional")
    ]
    uploads = [
        t["bytes"] for t in transfers if "constant" in t["role"] and t["space"] == "device_global"
    ]
    expect(
        "host-to-device copies (bytes)",
        [int(call_field(c, "bytes")) for c in calls if c.startswith("memcpy_htod")],
        host_calls["host_to_device"]
        if host_calls is not None
        else [n for n in planned_in + uploads if n],  # an empty buffer is not copied
    )
    launches = [
        (
            call_field(c, "name"),
            [int(v) for v in call_field(c, "grid").split(",")],
            [int(v) for v in call_field(c, "block").split(",")],
        )
        for c in calls
        if c.startswith("launch ")
    ]
    expect("launches", launches, expected_launches(plan))
    expect(
        "module loads",
        sum(c.startswith("module_load") for c in calls),
        1 if manifest["kernels"] else 0,
    )
    result_bytes = [
        int(np.prod(r["shape"], dtype=np.int64)) * np.dtype(r["dtype"]).itemsize
        for r in function["results"]
    ]
    expect(
        "device-to-host copies (bytes)",
        [int(call_field(c, "bytes")) for c in calls if c.startswith("memcpy_dtoh")],
        host_calls["device_to_host"] if host_calls is not None else [n for n in result_bytes if n],
    )
    expect("result shapes", result["shapes"], [r["shape"] for r in function["results"]])
    loops = [i for i in plan["work_items"] if i["kind"] == "iterate"]
    expect(
        "device-to-device copies",
        sum(c.startswith("memcpy_dtod") for c in calls),
        host_calls["device_to_device"]
        if host_calls is not None
        else sum(1 + i["trip_count"] for i in loops),
    )
    return problems


def ptxas_problems(directory: Path, ptxas: str = PTXAS) -> list[str]:
    """`ptxas -arch=sm_90 --warning-as-error` on every PTX file of an export: one entry
    per file it rejects or warns about (empty when all pass)."""
    problems = []
    with tempfile.TemporaryDirectory(prefix="accy-ptxas-") as scratch:
        for ptx in sorted(Path(directory).glob("*.ptx")):
            process = subprocess.run(
                [ptxas, "-arch=sm_90", "--warning-as-error", str(ptx), "-o", f"{scratch}/k.cubin"],
                capture_output=True,
                text=True,
                check=False,
            )
            if process.returncode != 0 or process.stderr:
                problems.append(f"{ptx.name}: {process.stderr.strip()}")
    return problems
