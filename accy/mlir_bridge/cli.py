"""The command line of the bridge, a debugging aid (``python -m accy.mlir_bridge``).

    python -m accy.mlir_bridge verify FILE
    python -m accy.mlir_bridge lower FILE [--target cpu|cuda] [--threads N]
    python -m accy.mlir_bridge ptx FILE [--chip sm_90] [--opt 3] [--extract]

FILE ``-`` reads stdin. MLIR's errors (and missing bindings or libdevice) are printed as
``FILE: error: ...`` with exit status 1. `argparse` is imported only when `main` runs.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from pathlib import Path

from accy.mlir_bridge.errors import LibdeviceNotFoundError, MlirUnavailableError, UpstreamMlirError
from accy.mlir_bridge.lowering import lower_to_llvm, verify_upstream
from accy.mlir_bridge.pipelines import cpu_pipeline
from accy.mlir_bridge.ptx import compile_kernels_to_ptx, extract_ptx

DESCRIPTION = "The one package of accy that imports the upstream MLIR Python bindings."
"""`--help`'s description: the first line of the package's docstring (the package imports
this module, so this module does not import the package)."""


def main(argv: Iterable[str] | None = None) -> int:
    import argparse

    ap = argparse.ArgumentParser(prog="python -m accy.mlir_bridge", description=DESCRIPTION)
    sub = ap.add_subparsers(dest="cmd", required=True)
    v = sub.add_parser("verify")
    v.add_argument("file")
    lo = sub.add_parser("lower")
    lo.add_argument("file")
    lo.add_argument("--target", choices=("cpu", "cuda"), default="cpu")
    lo.add_argument(
        "--threads",
        type=int,
        default=1,
        help="cpu: run scf.parallel loops as async tasks for this many threads",
    )
    px = sub.add_parser("ptx")
    px.add_argument("file")
    px.add_argument("--chip", default="sm_90")
    px.add_argument("--opt", type=int, default=3)
    px.add_argument("--libdevice", default=None)
    px.add_argument("--extract", action="store_true", help="print the PTX of each gpu.binary")
    args = ap.parse_args(list(argv) if argv is not None else None)
    text = sys.stdin.read() if args.file == "-" else Path(args.file).read_text()
    try:
        if args.cmd == "verify":
            verify_upstream(text)
        elif args.cmd == "lower":
            pipeline = cpu_pipeline(args.threads) if args.target == "cpu" else None
            sys.stdout.write(lower_to_llvm(text, target=args.target, pipeline=pipeline) + "\n")
        else:
            out = compile_kernels_to_ptx(
                text, chip=args.chip, opt=args.opt, libdevice=args.libdevice
            )
            if args.extract:
                for name, ptx in extract_ptx(out).items():
                    if ":" not in name:
                        sys.stdout.write(f"// ----- gpu.binary @{name}\n{ptx}\n")
            else:
                sys.stdout.write(out + "\n")
    except (UpstreamMlirError, MlirUnavailableError, LibdeviceNotFoundError) as e:
        sys.stderr.write(f"{args.file}: error: {e}\n")
        return 1
    return 0
