"""`accy.export`: compile a program ahead of time into a directory that runs without the
compiler (numpy + ctypes + `accy.runtime.load`).

    accy.export(text_or_module, "out/program", target="cuda")   # or target="cpu"
    mod = accy.runtime.load("out/program")
    (y,) = mod.f(x)

The directory holds:

- `libaccy_program.so`: the host code. The lowered module is JIT-compiled by the
  ExecutionEngine and dumped as an object (`mlir_bridge.dump_object`), then linked with
  `cc -shared`. For CUDA the kernels' PTX is embedded in it; the object's hidden ORC
  init/deinit functions (which load and unload the kernels) are called by the
  constructor and destructor of a small C file linked in (`mlir_bridge.ORC_INIT_STUB_C`);
  the library links against `libaccy_runtime.so` with the run path `$ORIGIN`.
- `libaccy_runtime.so` (CUDA): a copy of accy's runtime library (the MLIR GPU runtime ABI
  over the CUDA driver, which it loads at run time).
- `libaccy_async_runtime.so` (CPU with `threads` > 1): a copy of accy's async runtime (the
  thread pool the parallel loops run on), linked the same way.
- `<kernel module>.ptx` (CUDA): each kernel module's PTX, for inspection and `ptxas`.
- `manifest.json`: format, target, chip, file names, and per function its C symbol, the
  shapes (`?` for dynamic dims) and numpy dtypes of its arguments and results, and a plan
  summary: arena bytes, work items (kind, family, launches with grid and block), planned
  transfers and output sources.

The object code is not position-independent: the link warns about text relocations
(`DT_TEXTREL`); the library loads on x86-64 Linux.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from xdsl.dialects import func
from xdsl.dialects.builtin import DYNAMIC_INDEX, ModuleOp, TensorType

from accy.diagnostics import AccyError
from accy.dtypes import numpy_dtype
from accy.preparation import Preparation, prepare
from accy.runtime.loader import MANIFEST_FORMAT, MANIFEST_NAME
from accy.source import parse, verify

PROGRAM_LIBRARY = "libaccy_program.so"
TARGETS = ("cpu", "cuda")


class ExportError(AccyError):
    """Linking or writing an export failed (the message has the tool's output)."""


def export(
    module_or_text: ModuleOp | str | Path,
    path: str | Path,
    target: str = "cuda",
    *,
    chip: str = "sm_90",
    opt_level: int = 3,
    cc: str = "cc",
    threads: int | None = None,
    **plan_options: Any,
) -> Path:
    """Write `module_or_text` compiled for `target` into the directory `path`.
    `plan_options` are `accy.prepare`'s; `threads` (cpu only) is `accy.compile`'s.
    Returns the directory.

    The export is built in a scratch directory beside `path` and moved into place only
    when it is complete, so a failure leaves nothing half-written. An existing `path` must
    be empty or an earlier export (it has a manifest); it is then replaced."""
    if target not in TARGETS:
        raise AccyError(f"unknown export target '{target}'; known targets: {', '.join(TARGETS)}")
    if isinstance(module_or_text, ModuleOp):
        module = module_or_text
        verify(module)
    else:
        module = parse(module_or_text)
    if threads is not None and target != "cpu":
        raise AccyError(f"threads applies to the cpu target, not to {target}")
    preparation = prepare(module, **plan_options)
    directory = Path(path)
    if directory.exists() and not (
        directory.is_dir()
        and (not any(directory.iterdir()) or (directory / MANIFEST_NAME).is_file())
    ):
        raise ExportError(
            f"cannot export to '{directory}': it exists and is not an earlier accy export"
        )
    directory.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{directory.name}-", dir=directory.parent))
    try:
        if target == "cuda":
            manifest = _export_cuda(module, preparation, staging, chip, opt_level, cc)
        else:
            manifest = _export_cpu(module, preparation, staging, opt_level, cc, threads)
        (staging / MANIFEST_NAME).write_text(json.dumps(manifest, indent=1) + "\n")
        if directory.exists():
            shutil.rmtree(directory)
        staging.rename(directory)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return directory


def _export_cuda(module, preparation, directory: Path, chip, opt_level, cc) -> dict:
    from accy import mlir_bridge
    from accy.runtime.libraries import RUNTIME_LIBRARY_NAME, runtime_library_path
    from accy.targets.cuda import compile_cuda

    code = compile_cuda(module, preparation, chip=chip, opt=opt_level)
    kernels = {}
    for name, ptx in code.ptx.items():
        (directory / f"{name}.ptx").write_text(ptx)
        kernels[name] = f"{name}.ptx"
    shutil.copyfile(runtime_library_path(), directory / RUNTIME_LIBRARY_NAME)
    with tempfile.TemporaryDirectory(prefix="accy-export-") as scratch:
        obj = mlir_bridge.dump_object(
            code.binary_text, Path(scratch) / "program.o", target="cuda", opt_level=opt_level
        )
        stub = Path(scratch) / "orc_init.c"
        stub.write_text(mlir_bridge.ORC_INIT_STUB_C)
        _link(
            cc,
            directory / PROGRAM_LIBRARY,
            [
                str(obj),
                str(stub),
                f"-L{directory}",
                "-l:" + RUNTIME_LIBRARY_NAME,
                "-Wl,-rpath,$ORIGIN",
            ],
        )
    manifest = _manifest(module, preparation, "cuda", code.programs)
    manifest.update(runtime=RUNTIME_LIBRARY_NAME, kernels=kernels, chip=chip)
    return manifest


def _export_cpu(module, preparation, directory: Path, opt_level, cc, threads) -> dict:
    from accy import mlir_bridge
    from accy.passes.lower.lower_pass import lower_module
    from accy.runtime.libraries import ASYNC_RUNTIME_LIBRARY_NAME, async_runtime_library_path
    from accy.targets.cpu import cpu_pipeline, module_text, resolve_threads

    threads = resolve_threads(threads)
    text = module_text(lower_module(module, preparation.manager, "cpu"))
    libraries = ["-lm"]
    if threads > 1:
        shutil.copyfile(async_runtime_library_path(), directory / ASYNC_RUNTIME_LIBRARY_NAME)
        libraries = [
            f"-L{directory}",
            "-l:" + ASYNC_RUNTIME_LIBRARY_NAME,
            "-Wl,-rpath,$ORIGIN",
            "-lm",
        ]
    with tempfile.TemporaryDirectory(prefix="accy-export-") as scratch:
        obj = mlir_bridge.dump_object(
            text,
            Path(scratch) / "program.o",
            target="cpu",
            opt_level=opt_level,
            pipeline=cpu_pipeline(threads),
        )
        sources = [str(obj)]
        if _defines(obj, "__orc_init_func.LLVMDialectModule"):
            stub = Path(scratch) / "orc_init.c"
            stub.write_text(mlir_bridge.ORC_INIT_STUB_C)
            sources.append(str(stub))
        _link(cc, directory / PROGRAM_LIBRARY, [*sources, *libraries])
    manifest = _manifest(module, preparation, "cpu", None)
    manifest.update(
        runtime=None,
        kernels={},
        threads=threads,
        async_runtime=ASYNC_RUNTIME_LIBRARY_NAME if threads > 1 else None,
    )
    return manifest


def _defines(obj: Path, symbol: str) -> bool:
    nm = shutil.which("nm")
    if nm is None:
        return True
    out = subprocess.run([nm, str(obj)], capture_output=True, text=True, check=False).stdout
    return any(line.split()[-1:] == [symbol] and " U " not in line for line in out.splitlines())


def _link(cc: str, output: Path, arguments: list[str]) -> None:
    command = [cc, "-shared", "-o", str(output), *arguments]
    process = subprocess.run(command, capture_output=True, text=True, check=False)
    if process.returncode != 0:
        raise ExportError(
            f"linking {output.name} failed ({' '.join(command)}):\n{process.stderr.strip()}"
        )


# ---------------------------------------------------------------------------------------
# The manifest
# ---------------------------------------------------------------------------------------


def _tensor_spec(t: Any) -> dict:
    assert isinstance(t, TensorType)
    shape = ["?" if d == DYNAMIC_INDEX else d for d in t.get_shape()]
    return {"shape": shape, "dtype": numpy_dtype(t.get_element_type()).name}


def _manifest(module: ModuleOp, preparation: Preparation, target: str, programs) -> dict:
    functions = {}
    for op in module.ops:
        if isinstance(op, func.FuncOp) and op.body.blocks:
            name = op.sym_name.data
            functions[name] = {
                "symbol": f"_mlir_ciface_{name}",
                "args": [_tensor_spec(t) for t in op.function_type.inputs],
                "results": [_tensor_spec(t) for t in op.function_type.outputs],
                "plan": plan_summary(preparation, op, programs),
            }
    return {
        "format": MANIFEST_FORMAT,
        "target": target,
        "library": PROGRAM_LIBRARY,
        "constant_bytes": preparation.arena.constant_size,
        "functions": functions,
    }


def plan_summary(preparation: Preparation, function: func.FuncOp, programs) -> dict:
    """What a function's plan decided, as JSON: arena bytes, separate allocations, work
    items (with their launches for CUDA), transfers and output sources."""
    name = function.sym_name.data
    arena = preparation.arena.functions.get(name)
    items = []
    for item in preparation.schedule.work_items:
        if item.function != name:
            continue
        entry: dict[str, Any] = {
            "id": item.id,
            "kind": item.kind.value,
            "family": preparation.workspaces.family_of.get(item.id),
            "parent": item.parent,
        }
        if programs is not None and item.id in programs:
            program = programs[item.id]
            entry["launches"] = [
                {"kernel": launch.kernel, "grid": list(launch.grid), "block": list(launch.block)}
                for launch in program.launches
            ]
            entry["host_loop"] = program.host_loop
        if item.kind.value == "iterate":
            entry["trip_count"] = item.root.trip_count.value.data
        items.append(entry)
    transfers = []
    outputs = []
    for assignment in preparation.memory.assignments:
        slot = preparation.buffers.slots[assignment.slot_id]
        if slot.function is not function:
            continue
        transfers.append(
            {
                "slot": slot.id,
                "role": str(assignment.role),
                "space": assignment.space.value,
                "transfer": assignment.transfer.value,
                "bytes": assignment.byte_size,
            }
        )
        if assignment.output_source is not None:
            outputs.append({"slot": slot.id, "source": str(assignment.output_source)})
    own_workspaces = [
        {"family": t.family, "name": t.name, "bytes": t.bytes}
        for t in preparation.workspaces.terms
        if not t.arena and any(preparation.schedule.work_items[n].function == name for n in t.nodes)
    ]
    return {
        "arena_bytes": arena.size if arena else 0,
        "separate_slots": list(arena.separate) if arena else [],
        "own_workspaces": own_workspaces,
        "arena_workspaces": [
            {
                "family": w.term.family,
                "name": w.term.name,
                "bytes": w.term.bytes,
                "offset": w.offset,
            }
            for w in (arena.workspaces if arena else [])
        ],
        "work_items": items,
        "transfers": transfers,
        "outputs": outputs,
    }
