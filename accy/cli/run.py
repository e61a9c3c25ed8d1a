"""`accy-run`: compile an accy program and run one function on arrays from an `.npz` file.

    accy-run FILE.mlir [--target cpu] [--function NAME] (--inputs IN.npz | --random-inputs)
             [-o OUT.npz] [--print] [--threads N] [--rows N ...] [--import-stablehlo] [-v]
    accy-run FILE.mlir --target cuda --export DIR    # ahead of time: see accy.export
    accy-opt FILE.mlir -p accy-plan | accy-run - --random-inputs   # a planned module

FILE `-` reads the program from standard input. The target is the one a planned module was
planned for, else `--target`, else `cpu` (as everywhere).

Inputs: the `.npz` arrays named `arg0`, `arg1`, ... are the function's parameters in order;
if there are no `argN` keys, the arrays are taken in the order they were stored (other
keys, e.g. `expected`, are then ignored only when `argN` keys exist). A function without
parameters needs no `--inputs`.

Output: per result a line `result #N: shape (..) dtype D` and its values (numpy's summary;
every element with `--print`), then a summary line
(`@f on cpu: arena B bytes, W work items, N threads, T ms`). `-o` writes the results to an
`.npz` with keys `result0`, `result1`, ... (at exactly that path), written whole or not at
all. `-v` says on stderr what it does (`accy-run: running @f on cpu`) before it does it.

Errors are `file:line:col: error: ...` (or `error: ...`) lines on stderr with exit
status 1, never a traceback; inputs larger than the machine's memory are refused before
they are allocated. Ctrl-C stops it at once with status 130, during a compiled call too
(`call_interruptibly`). The CLI is a thin face over `accy.compile`.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import tempfile
import threading
import zipfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from accy.cli.arguments import Integer
from accy.diagnostics import AccyError, StableHloTextError
from accy.mlir_bridge.errors import (
    LibdeviceNotFoundError,
    MlirUnavailableError,
    UpstreamMlirError,
)
from accy.runtime.loader import CudaRuntimeError

INTERRUPTED_STATUS = 130
"""The exit status after Ctrl-C: 128 + SIGINT, as a shell reports a program it stopped."""

_READ_ERRORS = (OSError, ValueError, EOFError, zipfile.BadZipFile)


def physical_memory() -> int | None:
    """The bytes of memory this machine has, or None where the system does not say."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        return None


def check_allocation(what: str, nbytes: int) -> None:
    """Refuse `nbytes` for `what` when they exceed the machine's memory: numpy would raise
    `MemoryError` (or, memory being overcommitted, the process be killed while filling it)."""
    memory = physical_memory()
    if memory is not None and nbytes > memory:
        raise AccyError(
            f"{what} needs {nbytes} bytes, more than this machine's memory ({memory} bytes)"
        )


def _member_name(archive: np.lib.npyio.NpzFile, key: str) -> str:
    """The zip member holding `key` (numpy names arrays without their `.npy`)."""
    names = archive.zip.namelist()
    return f"{key}.npy" if f"{key}.npy" in names else key


def _check_declared_size(archive: np.lib.npyio.NpzFile, key: str, path: str) -> int:
    """The bytes `key`'s header declares (shape times item size), read from the header
    alone; `AccyError` when the member holds fewer bytes of data than that or the machine
    has less memory, before numpy allocates the array."""
    info = archive.zip.getinfo(_member_name(archive, key))
    with archive.zip.open(info) as stream:
        version = np.lib.format.read_magic(stream)
        if version == (1, 0):
            shape, _, dtype = np.lib.format.read_array_header_1_0(stream)
        elif version == (2, 0):
            shape, _, dtype = np.lib.format.read_array_header_2_0(stream)
        else:  # numpy's own reader refuses or reads other versions
            return 0
        data_bytes = info.file_size - stream.tell()
    declared = math.prod(shape) * dtype.itemsize
    if not dtype.hasobject and declared > data_bytes:
        raise AccyError(
            f"cannot read input '{key}' of '{path}': its header declares shape {shape} of "
            f"{dtype} ({declared} bytes) but it holds {data_bytes} bytes of data"
        )
    check_allocation(f"input '{key}' of '{path}' (shape {shape} of {dtype})", declared)
    return declared


def load_inputs(path: str) -> list[np.ndarray]:
    """The arrays of an `.npz`, by `argN` keys when present, else in stored order; each
    array's size is checked from its header before it is read."""
    try:
        archive = np.load(path, allow_pickle=False)
    except _READ_ERRORS as error:
        raise AccyError(f"cannot read inputs '{path}': {error}") from None
    if not isinstance(archive, np.lib.npyio.NpzFile):
        raise AccyError(f"cannot read inputs '{path}': a single array (.npy), not an .npz")
    with archive:
        keys = list(archive.keys())
        numbered = sorted((int(k[3:]), k) for k in keys if k.startswith("arg") and k[3:].isdigit())
        if numbered:
            if [n for n, _ in numbered] != list(range(len(numbered))):
                raise AccyError(
                    f"inputs '{path}': keys {', '.join(k for _, k in numbered)} must be "
                    "arg0, arg1, ... without gaps"
                )
            keys = [k for _, k in numbered]
        arrays = []
        for key in keys:
            try:
                declared = _check_declared_size(archive, key, path)
                arrays.append(archive[key])
            except _READ_ERRORS as error:
                # Object arrays (pickles) are refused; a damaged member fails here.
                raise AccyError(f"cannot read input '{key}' of '{path}': {error}") from None
            except MemoryError:
                raise AccyError(
                    f"cannot read input '{key}' of '{path}': {declared} bytes could not be "
                    "allocated"
                ) from None
            if not isinstance(arrays[-1], np.ndarray):
                raise AccyError(f"cannot read input '{key}' of '{path}': not a .npy array")
        return arrays


def random_inputs(parameters, rows: int) -> list[np.ndarray]:
    """Arguments for `parameters` (`accy.arguments.TensorSpec`s): normal floats, integers
    in [-8, 8), random booleans; a `?` dim takes `rows`. Seeded: the same on every run.
    Refused with `AccyError` before anything is allocated when they would not fit in
    memory."""
    from accy.builder import tensor_type

    shapes = [tuple(rows if d is None else d for d in t.shape) for t in parameters]
    dtypes = [t.dtype for t in parameters]
    sizes = [math.prod(shape) * dtype.itemsize for shape, dtype in zip(shapes, dtypes)]
    for index, (t, size) in enumerate(zip(parameters, sizes)):
        declared = tensor_type(t.dtype, t.shape)
        check_allocation(f"--random-inputs: argument #{index} ({declared}, {rows} rows)", size)
    # numpy draws each array in 64-bit values first, then converts it.
    drawn = max((8 * math.prod(shape) for shape in shapes), default=0)
    check_allocation(f"--random-inputs: the {len(sizes)} arguments", sum(sizes) + drawn)
    rng = np.random.default_rng(0)
    arrays = []
    try:
        for shape, dtype in zip(shapes, dtypes):
            if dtype == np.bool_:
                arrays.append(rng.random(shape) < 0.5)
            elif np.issubdtype(dtype, np.integer):
                arrays.append(rng.integers(-8, 8, shape).astype(dtype))
            else:
                arrays.append(rng.standard_normal(shape).astype(dtype))
    except MemoryError:
        raise AccyError(
            f"--random-inputs: the {len(sizes)} arguments ({sum(sizes)} bytes) could not be "
            "allocated"
        ) from None
    return arrays


def save_results(path: str, results: tuple[np.ndarray, ...]) -> None:
    """The results as `result0`, `result1`, ... in the `.npz` file `path` (the name as
    given), written whole or not at all: into a scratch file of a name of its own in the
    same directory, renamed over `path` when complete (no other file is touched)."""
    target = Path(path)
    if target.is_dir():
        raise AccyError(f"cannot write results to '{path}': it is a directory")
    try:
        descriptor, scratch = tempfile.mkstemp(
            prefix=f".{target.name}.", suffix=".partial", dir=target.parent
        )
    except OSError as error:
        raise AccyError(f"cannot write results to '{path}': {error.strerror}") from None
    try:
        with os.fdopen(descriptor, "wb") as stream:
            np.savez(stream, **{f"result{i}": r for i, r in enumerate(results)})
        os.chmod(scratch, 0o666 & ~_umask())  # mkstemp's file is private (0600)
        os.replace(scratch, target)
    except BaseException as error:  # also Ctrl-C: the scratch file is ours to remove
        Path(scratch).unlink(missing_ok=True)
        if isinstance(error, OSError):
            raise AccyError(f"cannot write results to '{path}': {error.strerror}") from None
        raise


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def call_interruptibly(function: Callable[..., Any], arguments: Sequence[Any]) -> Any:
    """`function(*arguments)` on a worker thread while this thread waits for it.

    A compiled function runs as one native call, during which Python's SIGINT handler does
    not run on the thread making it; the wait here does, so Ctrl-C raises
    `KeyboardInterrupt` at once. The native call cannot be stopped: the caller must end
    the process (`os._exit`), not return to code that might touch the call's memory."""
    outcome: dict[str, Any] = {}

    def call() -> None:
        try:
            outcome["value"] = function(*arguments)
        except BaseException as error:  # noqa: BLE001 (re-raised on the waiting thread)
            outcome["error"] = error

    worker = threading.Thread(target=call, name="accy-run call", daemon=True)
    worker.start()
    worker.join()
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


def _stop_interrupted() -> None:
    """Say that Ctrl-C stopped the run and end the process now (a compiled call may still
    be running on another thread: nothing may wait for it or free its memory)."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    try:
        os.write(2, b"accy-run: interrupted\n")
    except OSError:
        pass
    os._exit(INTERRUPTED_STATUS)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="accy-run", description="Compile an accy program and run a function."
    )
    parser.add_argument("file", help="the accy program (.mlir; - reads standard input)")
    parser.add_argument(
        "--target",
        default=None,
        help="cpu (default; a planned module's default is the target it was planned for) or cuda",
    )
    parser.add_argument("--function", help="the function to run (default: the first)")
    parser.add_argument("--inputs", help=".npz with arrays arg0, arg1, ... (or in order)")
    parser.add_argument(
        "--random-inputs",
        action="store_true",
        help="run on random arguments (normal floats, small integers; a '?' dim takes the "
        "largest --rows, default 8) instead of --inputs",
    )
    parser.add_argument(
        "--print",
        action="store_true",
        dest="print_all",
        help="print every element of the results (default: a summary, as numpy does)",
    )
    parser.add_argument(
        "--import-stablehlo",
        action="store_true",
        help="read the file as StableHLO (e.g. JAX's lowered text)",
    )
    parser.add_argument("-o", "--output", help="write the results to this .npz")
    parser.add_argument(
        "--rows",
        type=Integer(minimum=1),
        action="append",
        default=[],
        metavar="N",
        help="row counts to plan for (repeatable)",
    )
    parser.add_argument(
        "--threads",
        type=Integer(minimum=1),
        metavar="N",
        help="cpu: threads for the parallel loops (default: ACCY_NUM_THREADS, else all CPUs "
        "this process may use; 1 = sequential code)",
    )
    parser.add_argument(
        "--export",
        metavar="DIR",
        help="write the compiled program into DIR (shared library, PTX, runtime library, "
        "manifest) instead of running it; load it with accy.runtime.load",
    )
    parser.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="say on stderr what is done before doing it (compiling, running @f)",
    )
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:
        sys.exit(1 if exit_.code == 2 else exit_.code)
    try:
        _run(args)
    except KeyboardInterrupt:
        _stop_interrupted()
    except AccyError as error:
        print(error.diagnostic(), file=sys.stderr)
        sys.exit(1)
    except (
        MlirUnavailableError,
        UpstreamMlirError,
        LibdeviceNotFoundError,
        CudaRuntimeError,
    ) as error:
        # The toolchain or the device said no: missing packages, MLIR, libdevice, driver.
        message = str(error).strip().replace("\n", "\n  ")
        print(f"error: {message}", file=sys.stderr)
        sys.exit(1)


def _say(args: argparse.Namespace, text: str) -> None:
    """`text` on stderr, with `-v`."""
    if args.verbose:
        print(f"accy-run: {text}", file=sys.stderr, flush=True)


def _run(args: argparse.Namespace) -> None:
    import time

    from xdsl.dialects import func

    from accy.compiler import compile as accy_compile
    from accy.dialects import plan
    from accy.passes.lower.host import planned_functions
    from accy.source import parse

    if args.file == "-":  # `accy-opt prog.mlir -p accy-plan | accy-run -`
        source: str | Path = sys.stdin.read()
        filename = "<stdin>"
    else:
        source = Path(args.file)
        filename = args.file
        if not source.is_file():
            raise AccyError(f"cannot open input file '{args.file}'")

    if args.output and not Path(args.output).resolve().parent.is_dir():
        raise AccyError(f"cannot write results to '{args.output}': no such directory")
    if args.import_stablehlo:
        from accy.stablehlo import import_stablehlo

        module = import_stablehlo(source, filename=filename)
    else:
        try:
            module = parse(source, filename=filename)
        except StableHloTextError as error:
            raise error.with_remedy("--import-stablehlo") from None
    if not any(isinstance(op, func.FuncOp) for op in module.ops):
        raise AccyError(f"{filename} has no function to run")
    if args.target is None:
        from accy.passes.planned_form import is_planned, planned_target
        from accy.targets import DEFAULT_TARGET

        args.target = planned_target(module) if is_planned(module) else DEFAULT_TARGET
    if args.inputs and args.random_inputs:
        raise AccyError("give --inputs or --random-inputs, not both")
    options: dict = {"rows": args.rows} if args.rows else {}
    if args.threads is not None:
        options["threads"] = args.threads
    if args.export:
        from accy.aot import export

        _say(args, f"exporting {args.file} for {args.target} to {args.export}")
        directory = export(module, args.export, target=args.target, **options)
        print(f"exported {args.file} for {args.target} to {directory}")
        return
    _say(args, f"compiling {args.file} for {args.target}")
    exe = accy_compile(module, target=args.target, **options)
    names = exe.function_names
    if not names:
        raise AccyError(f"{filename} has no function to run")
    name = (args.function or names[0]).removeprefix("@")
    function = exe[name]
    parameters = function.params
    if args.inputs:
        inputs = load_inputs(args.inputs)
    elif args.random_inputs:
        inputs = random_inputs(parameters, max(args.rows) if args.rows else 8)
    elif parameters:
        raise AccyError(
            f"@{name} takes {len(parameters)} argument{'' if len(parameters) == 1 else 's'}: "
            "give --inputs IN.npz (arrays arg0, arg1, ...) or --random-inputs"
        )
    else:
        inputs = []

    def timed_call() -> tuple[tuple[np.ndarray, ...], float]:
        start = time.perf_counter()
        results = function(*inputs)
        return results, time.perf_counter() - start

    _say(args, f"running @{name} on {args.target}")
    results, elapsed = call_interruptibly(timed_call, ())
    threshold = sys.maxsize if args.print_all else 64
    for index, result in enumerate(results):
        shape = "(" + ", ".join(map(str, result.shape)) + ("," if result.ndim == 1 else "") + ")"
        print(f"result #{index}: shape {shape} dtype {result.dtype}")
        text = np.array2string(result, threshold=threshold, edgeitems=3, precision=6)
        print("  " + text.replace("\n", "\n  "))
    planned = next(f for f in planned_functions(exe.planned) if f.sym_name.data == name)
    arena = sum(
        op.size for op in planned.walk() if isinstance(op, plan.ArenaOp) and op.backing is None
    )
    items = sum(1 for op in planned.walk() if isinstance(op, (plan.KernelOp, plan.LoopOp)))
    count = getattr(exe, "threads", None)  # a target whose loops run on threads
    threads = f", {count} thread{'' if count == 1 else 's'}" if count is not None else ""
    print(
        f"@{name} on {args.target}: arena {arena} bytes, "
        f"{items} work item{'' if items == 1 else 's'}{threads}, {elapsed * 1e3:.3f} ms"
    )
    if args.output:
        save_results(args.output, results)


if __name__ == "__main__":
    main()
