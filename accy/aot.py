"""`accy.export`: compile a program ahead of time into a directory that runs without the
compiler (numpy + ctypes + `accy.runtime.load`).

    accy.export(text_or_module, "out/program")   # the CPU; or target="cuda"
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
- `manifest.json`: format, target, chip, file names, each library's size and sha256
  (`libraries`), and per function its C symbol (`_mlir_ciface_accy_fn_<name>`: the
  lowered functions have a prefix of their own, `accy.passes.lower.host.host_symbol`, so
  no function name is a symbol of the C library or the runtimes), the shapes (`?` for
  dynamic dims) and numpy dtypes of its arguments and results, and a plan summary: arena
  bytes, work items (kind, family, launches with grid and block), planned transfers and
  output sources.

The program library also holds `accy_export_signature` (a small generated C file linked
in): the canonical JSON of the functions' names, symbols, shapes and dtypes
(`accy.runtime.loader.export_signature`), which the loader compares with the manifest.

An export never removes what it did not write. The target must be absent, empty, or an
earlier export: a manifest accy can read and only the files that manifest names. The
new export is built in a scratch directory beside the target, then moved in file by file
(`_move_into_place`: the earlier export's files moved aside, its manifest first, into a
scratch directory inside the target; the new files moved in, the manifest last; the
earlier files then removed), so the target directory itself stays in place (`.` works).
A failure at any step removes what it moved in and moves the earlier export back, so
the earlier export still loads; no scratch directory is left behind.

The object code is not position-independent: the link warns about text relocations
(`DT_TEXTREL`); the library loads on x86-64 Linux.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import shutil
import stat
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from xdsl.dialects import func
from xdsl.dialects.builtin import DYNAMIC_INDEX, ModuleOp, TensorType

from accy import compile_cache
from accy.compiler import collections_deferred
from accy.diagnostics import AccyError
from accy.dtypes import numpy_dtype
from accy.preparation import Preparation, prepare
from accy.runtime.loader import (
    MANIFEST_FORMAT,
    MANIFEST_NAME,
    PROGRAM_LIBRARY_NAME,
    SIGNATURE_SYMBOL,
    InvalidExportError,
    export_files,
    export_libraries,
    export_signature,
    read_manifest,
)
from accy.source import module_text
from accy.stablehlo import read_program
from accy.targets import DEFAULT_TARGET, check_target_options, target_named

PROGRAM_LIBRARY = PROGRAM_LIBRARY_NAME
REPLACEABLE_FORMATS = (1, 2, MANIFEST_FORMAT)
"""Manifest formats of earlier exports that an export may replace."""


class ExportError(AccyError):
    """Linking or writing an export failed (the message has the tool's output)."""


def export(
    module_or_text: ModuleOp | str | Path,
    path: str | Path,
    target: str = DEFAULT_TARGET,
    *,
    opt_level: int = 3,
    cc: str = "cc",
    chip: str | None = None,
    threads: int | None = None,
    **plan_options: Any,
) -> Path:
    """Write `module_or_text` compiled for `target` into the directory `path`.
    `plan_options` are `accy.prepare`'s; `threads` (cpu only) is `accy.compile`'s; `chip`
    (cuda only) the GPU architecture the kernels are compiled for (default sm_90).
    Returns the directory.

    The export is built in a scratch directory beside `path` and moved into place only
    when it is complete, so a failure leaves nothing half-written. An existing `path` must
    be empty or an earlier export (a manifest accy reads and only the files it names); only
    that export's files are then replaced or removed, and a failure leaves it as it was
    (see the module docstring)."""
    with collections_deferred():
        return _export(module_or_text, path, target, opt_level, cc, chip, threads, plan_options)


def _export(module_or_text, path, target, opt_level, cc, chip, threads, plan_options) -> Path:
    chosen = target_named(target)
    module = read_program(module_or_text, "accy.export")
    options = {k: v for k, v in (("chip", chip), ("threads", threads)) if v is not None}
    check_target_options(chosen, options)
    implementation = chosen.implementation()
    directory = Path(path)
    resolved = directory.resolve()
    _earlier_export(directory, resolved)  # refuse before compiling
    cache = compile_cache.directory()
    key = (
        None if cache is None else _cache_key(module, target, plan_options, opt_level, cc, options)
    )
    entry = None if cache is None or key is None else compile_cache.lookup(cache, key)
    preparation = None if entry is not None else prepare(module, target=target, **plan_options)
    try:
        resolved.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{resolved.name}-", dir=resolved.parent))
    except OSError as error:
        raise ExportError(f"cannot export to '{directory}': {error}") from None
    try:
        if entry is not None:  # exported before: the files of that export
            _copy_files(entry, staging)
        else:
            assert preparation is not None
            manifest = implementation.export(
                module, preparation, staging, opt_level=opt_level, cc=cc, **options
            )
            manifest["libraries"] = {
                name: _file_record(staging / name) for name in export_libraries(manifest)
            }
            (staging / MANIFEST_NAME).write_text(json.dumps(manifest, indent=1) + "\n")
            if cache is not None and key is not None:
                compile_cache.store(cache, key, lambda d: _copy_files(staging, d))
        _move_into_place(staging, directory, resolved)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return directory


def _cache_key(
    module: ModuleOp,
    target: str,
    plan_options: dict[str, Any],
    opt_level: int,
    cc: str,
    options: dict[str, Any],
) -> str | None:
    """The compile cache key of an export of `module` (None when a plan option is not plain
    data): the module's text, the options, the C compiler and what picks the defaults
    (the CPUs this process may use, `ACCY_NUM_THREADS`)."""
    from accy.runtime.cpu_features import host_flags

    try:
        plan = json.dumps(plan_options, sort_keys=True)
    except (TypeError, ValueError):
        return None
    return compile_cache.key(
        kind="export",
        target=target,
        module=compile_cache.digest(module_text(module).encode()),
        plan=plan,
        options=options,
        opt_level=opt_level,
        cc=shutil.which(cc) or cc,
        accy=compile_cache.source_digest(),
        features=sorted(host_flags()),
        cpus=len(os.sched_getaffinity(0)),
        threads_variable=os.environ.get("ACCY_NUM_THREADS"),
    )


def _copy_files(source: Path, target: Path) -> None:
    """The export's files in `source` (a staging directory or a cache entry) copied into
    `target`."""
    for file in compile_cache.files(source):
        shutil.copy(file, target / file.name)


def _file_record(path: Path) -> dict:
    data = path.read_bytes()
    return {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}


def _earlier_export(directory: Path, resolved: Path, ignore: frozenset[str] = frozenset()):
    """The names of the files in `resolved` (the target `directory`) that an export may
    replace: none when it is absent or empty, an earlier export's own files otherwise.
    Anything else is an `ExportError`: an export never removes what it did not write."""
    try:
        status = os.stat(resolved)
    except FileNotFoundError:
        return []
    except OSError as error:
        raise ExportError(f"cannot export to '{directory}': {error}") from None
    if not stat.S_ISDIR(status.st_mode):
        raise ExportError(f"cannot export to '{directory}': it exists and is not a directory")
    try:
        entries = sorted(set(os.listdir(resolved)) - ignore)
    except OSError as error:
        raise ExportError(f"cannot export to '{directory}': {error}") from None
    if not entries:
        return []
    if MANIFEST_NAME not in entries:
        raise ExportError(
            f"cannot export to '{directory}': it holds files that are not an accy export "
            f"({_listing(entries)})"
        )
    try:
        manifest = read_manifest(resolved, formats=REPLACEABLE_FORMATS)
    except (InvalidExportError, OSError) as error:
        reason = error.reason if isinstance(error, InvalidExportError) else str(error)
        raise ExportError(
            f"cannot export to '{directory}': it holds files that are not an accy export "
            f"({_listing(entries)}); its {MANIFEST_NAME} is not accy's: {reason}"
        ) from None
    owned = set(export_files(manifest))
    strangers = [
        name
        for name in entries
        if name not in owned or not stat.S_ISREG(os.lstat(resolved / name).st_mode)
    ]
    if strangers:
        raise ExportError(
            f"cannot export to '{directory}': it holds files that are not an accy export "
            f"({_listing(strangers)})"
        )
    return entries


def _listing(names: list[str], most: int = 5) -> str:
    shown = ", ".join(names[:most])
    return shown + (f" and {len(names) - most} more" if len(names) > most else "")


def _move_into_place(staging: Path, directory: Path, resolved: Path) -> None:
    """Move the complete export in `staging` to `resolved` (see `_earlier_export`). The
    earlier export's files go aside first (its manifest first: the directory stops being
    a loadable export), then the new files come in (the manifest last: it becomes one
    again); on a failure `_restore` puts the earlier export back."""
    ignore = frozenset([staging.name]) if staging.parent == resolved else frozenset()
    old = _earlier_export(directory, resolved, ignore)  # again: it may have changed
    try:
        if not resolved.exists():
            umask = os.umask(0o022)
            os.umask(umask)
            os.chmod(staging, 0o777 & ~umask)  # mkdtemp made it private
            staging.rename(resolved)
            return
        aside = Path(tempfile.mkdtemp(prefix=".accy-replaced-", dir=resolved))
    except OSError as error:
        raise ExportError(f"cannot export to '{directory}': {error}") from None
    moved_aside: list[str] = []
    moved_in: list[str] = []
    try:
        for name in sorted(old, key=lambda n: n != MANIFEST_NAME):  # the manifest first
            os.rename(resolved / name, aside / name)  # the same directory: never copies
            moved_aside.append(name)
        for name in sorted(os.listdir(staging), key=lambda n: n == MANIFEST_NAME):  # last
            _replace(staging / name, resolved / name)
            moved_in.append(name)
    except OSError as error:
        raise ExportError(
            f"cannot export to '{directory}': {error}"
            + _restore(resolved, aside, moved_aside, moved_in)
        ) from None
    shutil.rmtree(aside, ignore_errors=True)  # the earlier export's files, and only those


def _restore(resolved: Path, aside: Path, moved_aside: list[str], moved_in: list[str]) -> str:
    """Undo a failed `_move_into_place`: remove the files it moved in, move the earlier
    export's files back (its manifest last) and remove `aside`. Returns what to add to
    the error: nothing, or where the earlier export's files are when they cannot be moved
    back."""
    try:
        for name in reversed(moved_in):
            os.unlink(resolved / name)
        for name in reversed(moved_aside):
            os.rename(aside / name, resolved / name)
        os.rmdir(aside)
    except OSError as error:
        return f"; the earlier export could not be put back ({error}): its files are in '{aside}'"
    return " (the earlier export is unchanged)"


def _replace(source: Path, target: Path) -> None:
    """Rename `source` onto `target` (a process that has the old file open or mapped
    keeps it); across file systems, copy beside `target` first."""
    try:
        os.replace(source, target)
    except OSError as error:
        if error.errno != errno.EXDEV:
            raise
        scratch = target.with_name(f".{target.name}.accy-{os.getpid()}")
        try:
            shutil.copy2(source, scratch)
            os.replace(scratch, target)
        finally:
            scratch.unlink(missing_ok=True)


ALLOCATION_FAILURE_C = """
#include <stdint.h>
/* The host code calls this when an allocation of its plan fails, then returns without
   running anything (accy.passes.lower.cpu, Allocation failures); the loader takes the
   record after every call (accy_take_allocation_failure). One record per thread. */
static _Thread_local int64_t failed_bytes = -1;
__attribute__((visibility("default"))) void accy_allocation_failed(int64_t bytes) {
  failed_bytes = bytes;
}
__attribute__((visibility("default"))) int64_t accy_take_allocation_failure(void) {
  int64_t bytes = failed_bytes;
  failed_bytes = -1;
  return bytes;
}
"""


def _signature_source(manifest: dict) -> str:
    """C source defining the exported `accy_export_signature`: `export_signature` of the
    manifest as a string literal (the JSON is ASCII; `\\`, `"` and `?` are escaped, the
    last against trigraphs), in lines of at most 96 characters."""
    tokens = ["\\" + c if c in '\\"?' else c for c in export_signature(manifest)]
    lines, line = [], ""
    for token in tokens:
        if len(line) + len(token) > 96:
            lines.append(line)
            line = ""
        line += token
    lines.append(line)
    body = "\n".join(f'    "{text}"' for text in lines)
    return (
        '__attribute__((visibility("default"), used))\n'
        f"const char {SIGNATURE_SYMBOL}[] =\n{body};\n" + ALLOCATION_FAILURE_C
    )


def link_program(
    directory: Path,
    text: str,
    manifest: dict,
    *,
    target: str,
    opt_level: int,
    cc: str,
    pipeline: str | None = None,
    libraries: list[str] = (),  # type: ignore[assignment]
) -> None:
    """Compile the lowered module `text` to an object and link it, with the signature and
    (when the object has ORC init functions) the init stub, into the program library."""
    from accy import mlir_bridge

    with tempfile.TemporaryDirectory(prefix="accy-export-") as scratch:
        obj = mlir_bridge.dump_object(
            text, Path(scratch) / "program.o", target=target, opt_level=opt_level, pipeline=pipeline
        )
        sources = [str(obj), str(_write_signature(Path(scratch), manifest))]
        if _defines(obj, "__orc_init_func.LLVMDialectModule"):  # none without kernels
            stub = Path(scratch) / "orc_init.c"
            stub.write_text(mlir_bridge.ORC_INIT_STUB_C)
            sources.append(str(stub))
        link_shared(cc, directory / PROGRAM_LIBRARY, [*sources, *libraries])


def _write_signature(scratch: Path, manifest: dict) -> Path:
    source = scratch / "accy_export_signature.c"
    source.write_text(_signature_source(manifest))
    return source


def _defines(obj: Path, symbol: str) -> bool:
    nm = shutil.which("nm")
    if nm is None:
        return True
    out = subprocess.run([nm, str(obj)], capture_output=True, text=True, check=False).stdout
    return any(line.split()[-1:] == [symbol] and " U " not in line for line in out.splitlines())


def link_shared(cc: str, output: Path, arguments: list[str]) -> None:
    """`arguments` (objects, sources, libraries) linked by `cc` into the shared library
    `output`; an `ExportError` with the linker's message if it fails."""
    command = [cc, "-shared", "-fPIC", "-o", str(output), *arguments]
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


def export_manifest(module: ModuleOp, preparation: Preparation, target: str, programs) -> dict:
    """The manifest of an export (its functions, symbols, shapes and plan summaries);
    the target adds its own entries."""
    from accy.runtime.abi import host_symbol

    functions = {}
    for op in module.ops:
        if isinstance(op, func.FuncOp) and op.body.blocks:
            name = op.sym_name.data
            functions[name] = {
                "symbol": f"_mlir_ciface_{host_symbol(name)}",
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


def host_calls(function: func.FuncOp) -> dict:
    """What a planned CUDA function's host code asks of the driver in one call, read from
    its planned form: the bytes of each device allocation of its own (`accy.alloc`:
    workspaces of their own, staging buffers of loops), and its copies in order (an `accy.loop` body's
    once per iteration), host-to-device and device-to-host by bytes, device-to-device
    counted; empty copies are not made. An `accy.while_loop` counts as the fake driver
    runs it (`accy.runtime.plan_check`): its cond once, its body never."""
    from accy.dialects import plan

    def calls(block) -> tuple[list[int], list[int], list[int], int]:
        allocations: list[int] = []
        uploads: list[int] = []
        downloads: list[int] = []
        device_copies = 0
        for op in block.ops:
            if isinstance(op, plan.AllocOp):
                if plan.space_of(op.buffer.type) != plan.MemorySpace.HOST:  # not a loop's flag
                    allocations.append(plan.buffer_bytes(op.buffer.type))
            elif isinstance(op, (plan.LoopOp, plan.WhileLoopOp)):
                if isinstance(op, plan.WhileLoopOp):  # as the fake driver runs it (below)
                    trips = 0
                    test = calls(op.cond.block)
                    allocations += test[0]  # made once, at the start of the function
                    uploads += test[1]
                    downloads += test[2]
                    device_copies += test[3]
                else:
                    trips = op.trip_count.value.data
                inner = calls(op.body.block)
                allocations += inner[0]  # made once, at the start of the function
                uploads += inner[1] * trips
                downloads += inner[2] * trips
                device_copies += inner[3] * trips
            elif isinstance(op, plan.CopyOp) and (size := plan.buffer_bytes(op.source.type)):
                source = plan.space_of(op.source.type) == plan.MemorySpace.HOST
                target = plan.space_of(op.target.type) == plan.MemorySpace.HOST
                if source and not target:
                    uploads.append(size)
                elif target and not source:
                    downloads.append(size)
                elif not (source or target):
                    device_copies += 1
        return allocations, uploads, downloads, device_copies

    allocations, uploads, downloads, device_copies = calls(function.body.block)
    return {
        "allocations": allocations,
        "host_to_device": uploads,
        "device_to_host": downloads,
        "device_to_device": device_copies,
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
            trips = getattr(item.root, "trip_count", None)  # None: an accy.while
            entry["trip_count"] = trips.value.data if trips is not None else None
        if item.parent is not None:
            from accy.dialects.accy import WhileOp

            loop = preparation.schedule.work_items[item.parent].root
            if isinstance(loop, WhileOp):
                entry["region"] = "cond" if item.root.parent is loop.cond.block else "body"
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
