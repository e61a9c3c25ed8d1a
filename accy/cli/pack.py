"""``accy-pack``: pack a MiniMalloc CSV problem and report the arena against its lower bound.

Alignment defaults to 1 byte: MiniMalloc problems give exact byte sizes and expect unaligned
offsets. Every user error (missing or malformed file, unmet capacity) is one ``error:`` line
on stderr and exit status 1.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from accy.passes.arena import lower_bound, pack, read_minimalloc, write_solution
from accy.passes.arena.pack import DEFAULT_BUDGET_MS, PackResult
from accy.passes.arena.race import MAX_WORKERS, available_workers


def _parser() -> argparse.ArgumentParser:
    workers = available_workers()
    parser = argparse.ArgumentParser(prog="accy-pack", description=__doc__.splitlines()[0])
    parser.add_argument(
        "problem",
        help="MiniMalloc CSV: id,lower,upper,size or buffer,start,end,size (upper/end exclusive)",
    )
    parser.add_argument(
        "--capacity", type=int, help="fit the arena in N bytes first; fail if it does not"
    )
    parser.add_argument("--alignment", type=int, default=1, help="offset alignment (default 1)")
    parser.add_argument(
        "--budget-ms", type=float, default=DEFAULT_BUDGET_MS, help="search time (milliseconds)"
    )
    parser.add_argument(
        "--workers",
        type=int,
        default=workers,
        help="processes for the exact sweeps when the budget is long (default: this machine's "
        f"processors, at most {MAX_WORKERS}: {workers})",
    )
    parser.add_argument("-o", "--output", help="write the solution CSV (with offsets) here")
    return parser


def _report(result: PackResult) -> str:
    placement = result.placement
    lines = [
        f"arena size:  {placement.size} bytes ({placement.packer})",
        f"lower bound: {placement.lower_bound} bytes (max live bytes)",
        f"ratio:       {placement.ratio:.4f}",
    ]
    lines.append("per packer:")
    lines += [f"  {name:<18} {size}" for name, size in result.packer_sizes.items()]
    return "\n".join(lines)


def _check_options(args: argparse.Namespace) -> None:
    """Options that cannot work, refused before the file is read or the search spends its
    budget."""
    if args.alignment < 1:
        raise ValueError(f"--alignment must be at least 1, got {args.alignment}")
    if not args.budget_ms >= 0:  # also refuses nan
        raise ValueError(f"--budget-ms must be at least 0, got {args.budget_ms:g}")
    if args.workers < 1:
        raise ValueError(f"--workers must be at least 1, got {args.workers}")
    if args.output and not Path(args.output).resolve().parent.is_dir():
        raise ValueError(f"{args.output}: no such folder to write the solution in")


def _run(args: argparse.Namespace) -> int:
    _check_options(args)
    problem = read_minimalloc(args.problem)
    intervals = problem.intervals
    bound = lower_bound(intervals, args.alignment)
    if args.capacity is not None and args.capacity < bound:
        raise ValueError(
            f"capacity {args.capacity} is below the lower bound {bound} (max live bytes): "
            "no placement fits"
        )
    result = pack(
        intervals,
        alignment=args.alignment,
        budget_ms=args.budget_ms,
        capacity=args.capacity,
        workers=args.workers,
    )
    print(_report(result))
    size = result.placement.size
    if args.capacity is not None and size > args.capacity:
        raise ValueError(
            f"arena needs {size} bytes, capacity is {args.capacity} (searched for "
            f"{args.budget_ms:g} ms; --budget-ms gives the search more time)"
        )
    if args.output:
        write_solution(
            args.output,
            intervals,
            result.placement,
            names=problem.names,
            columns=problem.columns,
        )
    return 0


def main(argv: Sequence[str] | None = None) -> None:
    """Entry point of ``accy-pack``; exits 1 with an ``error:`` line on a user error."""
    args = _parser().parse_args(argv)
    try:
        status = _run(args)
    except OSError as error:
        print(f"error: {error.filename}: {error.strerror}", file=sys.stderr)
        status = 1
    except ValueError as error:  # includes MiniMallocFormatError (FILE:LINE: message)
        print(f"error: {error}", file=sys.stderr)
        status = 1
    sys.exit(status)
