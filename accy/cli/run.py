"""`accy-run`: compile an accy program and run one function on arrays from an `.npz` file.

    accy-run FILE.mlir --target cpu [--function NAME] (--inputs IN.npz | --random-inputs)
             [-o OUT.npz] [--print] [--threads N] [--rows N ...] [--import-stablehlo]
    accy-run FILE.mlir --target cuda --export DIR    # ahead of time: see accy.export

Inputs: the `.npz` arrays named `arg0`, `arg1`, ... are the function's parameters in order;
if there are no `argN` keys, the arrays are taken in the order they were stored (other
keys, e.g. `expected`, are then ignored only when `argN` keys exist). A function without
parameters needs no `--inputs`.

Output: per result a line `result #N: shape (..) dtype D` and its values (numpy's summary;
every element with `--print`), then a summary line
(`@f on cpu: arena B bytes, W work items, N threads, T ms`). `-o` writes the results to an
`.npz` with keys `result0`, `result1`, ... (at exactly that path).

Errors are `file:line:col: error: ...` (or `error: ...`) lines on stderr with exit
status 1, never a traceback. The CLI is a thin face over `accy.compile`.
"""

from __future__ import annotations

import argparse
import os
import sys
import zipfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from accy.diagnostics import AccyError
from accy.mlir_bridge import LibdeviceNotFoundError, MlirUnavailableError, UpstreamMlirError
from accy.runtime.loader import CudaRuntimeError


def load_inputs(path: str) -> list[np.ndarray]:
    """The arrays of an `.npz`, by `argN` keys when present, else in stored order."""
    try:
        archive = np.load(path, allow_pickle=False)
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as error:
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
                arrays.append(archive[key])
            except (OSError, ValueError, EOFError, zipfile.BadZipFile) as error:
                # Object arrays (pickles) are refused; a damaged member fails here.
                raise AccyError(f"cannot read input '{key}' of '{path}': {error}") from None
            if not isinstance(arrays[-1], np.ndarray):
                raise AccyError(f"cannot read input '{key}' of '{path}': not a .npy array")
        return arrays


def random_inputs(parameters, rows: int) -> list[np.ndarray]:
    """Arguments for `parameters` (tensor types): normal floats, integers in [-8, 8),
    random booleans; a `?` dim takes `rows`. Seeded: the same on every run."""
    from xdsl.dialects.builtin import DYNAMIC_INDEX

    from accy.dtypes import numpy_dtype

    rng = np.random.default_rng(0)
    arrays = []
    for t in parameters:
        shape = tuple(rows if d == DYNAMIC_INDEX else d for d in t.get_shape())
        dtype = numpy_dtype(t.get_element_type())
        if dtype == np.bool_:
            arrays.append(rng.random(shape) < 0.5)
        elif np.issubdtype(dtype, np.integer):
            arrays.append(rng.integers(-8, 8, shape).astype(dtype))
        else:
            arrays.append(rng.standard_normal(shape).astype(dtype))
    return arrays


def save_results(path: str, results: tuple[np.ndarray, ...]) -> None:
    """The results as `result0`, `result1`, ... in the `.npz` file `path` (the name as
    given), written whole or not at all."""
    target = Path(path)
    if target.is_dir():
        raise AccyError(f"cannot write results to '{path}': it is a directory")
    scratch = target.with_name(f".{target.name}.partial")
    try:
        with open(scratch, "wb") as stream:
            np.savez(stream, **{f"result{i}": r for i, r in enumerate(results)})
        os.replace(scratch, target)
    except OSError as error:
        scratch.unlink(missing_ok=True)
        raise AccyError(f"cannot write results to '{path}': {error.strerror}") from None


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="accy-run", description="Compile an accy program and run a function."
    )
    parser.add_argument("file", help="the accy program (.mlir)")
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
        "--rows", type=int, action="append", default=[], help="row counts to plan for"
    )
    parser.add_argument(
        "--threads",
        type=int,
        help="cpu: threads for the parallel loops (default: ACCY_NUM_THREADS, else all CPUs "
        "this process may use; 1 = sequential code)",
    )
    parser.add_argument(
        "--export",
        metavar="DIR",
        help="write the compiled program into DIR (shared library, PTX, runtime library, "
        "manifest) instead of running it; load it with accy.runtime.load",
    )
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:
        sys.exit(1 if exit_.code == 2 else exit_.code)
    try:
        _run(args)
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


def _run(args: argparse.Namespace) -> None:
    import time

    from accy.compiler import compile as accy_compile
    from accy.dialects import plan
    from accy.passes.lower.host import planned_functions

    path = Path(args.file)
    if not path.is_file():
        raise AccyError(f"cannot open input file '{args.file}'")
    from accy.source import parse

    if args.output and not Path(args.output).resolve().parent.is_dir():
        raise AccyError(f"cannot write results to '{args.output}': no such directory")
    if args.import_stablehlo:
        from accy.stablehlo import import_stablehlo

        module = import_stablehlo(path)
    else:
        module = parse(path)
    if args.target is None:
        from accy.passes.planned_form import is_planned, planned_target

        args.target = planned_target(module) if is_planned(module) else "cpu"
    if args.inputs and args.random_inputs:
        raise AccyError("give --inputs or --random-inputs, not both")
    options: dict = {"rows": args.rows} if args.rows else {}
    if args.threads is not None:
        options["threads"] = args.threads
    if args.export:
        from accy.aot import export

        directory = export(module, args.export, target=args.target, **options)
        print(f"exported {args.file} for {args.target} to {directory}")
        return
    exe = accy_compile(module, target=args.target, **options)
    names = exe.function_names
    if not names:
        raise AccyError(f"{args.file} has no function to run")
    name = (args.function or names[0]).removeprefix("@")
    function = exe[name]
    parameters = function.function.function_type.inputs
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
    start = time.perf_counter()
    results = function(*inputs)
    elapsed = time.perf_counter() - start
    threshold = sys.maxsize if args.print_all else 64
    for index, result in enumerate(results):
        shape = "(" + ", ".join(map(str, result.shape)) + ("," if result.ndim == 1 else "") + ")"
        print(f"result #{index}: shape {shape} dtype {result.dtype}")
        text = np.array2string(result, threshold=threshold, edgeitems=3, precision=6)
        print("  " + text.replace("\n", "\n  "))
    planned = next(f for f in planned_functions(exe.planned) if f.sym_name.data == name)
    arena = sum(op.size for op in planned.walk() if isinstance(op, plan.ArenaOp))
    items = sum(1 for op in planned.walk() if isinstance(op, (plan.KernelOp, plan.LoopOp)))
    threads = (
        f", {exe.threads} thread{'' if exe.threads == 1 else 's'}" if args.target == "cpu" else ""
    )
    print(
        f"@{name} on {args.target}: arena {arena} bytes, "
        f"{items} work item{'' if items == 1 else 's'}{threads}, {elapsed * 1e3:.3f} ms"
    )
    if args.output:
        save_results(args.output, results)


if __name__ == "__main__":
    main()
