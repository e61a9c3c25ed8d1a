"""``accy-pack``: pack a MiniMalloc CSV problem and report the arena against its lower bound.

Alignment defaults to 1 byte: MiniMalloc problems give exact byte sizes and expect unaligned
offsets. Every user error (missing or malformed file, unmet capacity, a solution or report
that cannot be written) is one ``error:`` line on stderr and exit status 1. When the reader
of the report goes away (``accy-pack ... | head``), it stops quietly with status 141, as a
program stopped by SIGPIPE does.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from accy.cli.arguments import Integer, Number
from accy.passes.arena import lower_bound, pack, read_minimalloc, write_solution
from accy.passes.arena.pack import (
    DEFAULT_BUDGET_MS,
    IMPROVED,
    MAX_BUDGET_MS,
    SEARCHED,
    SEARCHES,
    WINDOWS,
    PackResult,
)
from accy.passes.arena.race import MAX_WORKERS, available_workers

CLOSED_PIPE_STATUS = 141
"""The exit status when the report's reader has gone: 128 + SIGPIPE, as a shell reports a
program stopped by the signal."""


class _WriteError(Exception):
    """An output that could not be written: names it and says why."""

    def __init__(self, name: str, error: OSError) -> None:
        super().__init__(f"cannot write {name}: {error.strerror or error}")


def _parser() -> argparse.ArgumentParser:
    workers = available_workers()
    parser = argparse.ArgumentParser(prog="accy-pack", description=__doc__.splitlines()[0])
    parser.add_argument(
        "problem",
        help="MiniMalloc CSV: id,lower,upper,size or buffer,start,end,size (upper/end exclusive)",
    )
    parser.add_argument(
        "--capacity",
        type=Integer(),
        metavar="N",
        help="fit the arena in N bytes first; fail if it does not",
    )
    parser.add_argument(
        "--alignment", type=Integer(), default=1, metavar="N", help="offset alignment (default 1)"
    )
    parser.add_argument(
        "--budget-ms",
        type=Number("milliseconds"),
        metavar="MS",
        default=DEFAULT_BUDGET_MS,
        help="time for the packers and the searches, in milliseconds (default "
        f"{DEFAULT_BUDGET_MS:g}); when it runs out the best placement so far is kept",
    )
    parser.add_argument(
        "--workers",
        type=Integer(),
        metavar="N",
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
    stages = (SEARCHED, WINDOWS, IMPROVED)
    if result.budget_ran_out:
        skipped = [name for name in result.skipped if name != SEARCHES]
        lines.append(
            f"budget:      ran out: {', '.join([*skipped, 'the searches'])} skipped "
            f"({result.conflicts} conflicting pairs; --budget-ms {result.greedy_ms:.0f} "
            "runs every packer)"
        )
    lines.append("per packer:")
    for name, size in result.packer_sizes.items():
        if name in stages and result.budget_ran_out:
            continue
        lines.append(f"  {name:<18} {size}")
    if result.budget_ran_out:
        lines += [f"  {name:<18} skipped" for name in (*skipped, *stages)]
    return "\n".join(lines)


def _print(text: str) -> None:
    """Write ``text`` and a newline to stdout now; ``_WriteError`` when it cannot be written
    (``BrokenPipeError`` when its reader has gone)."""
    try:
        sys.stdout.write(text + "\n")
        sys.stdout.flush()
    except BrokenPipeError:
        raise
    except OSError as error:
        raise _WriteError("standard output", error) from None


def _drop_stdout() -> None:
    """Point stdout at the null device, so that the flush at exit has nowhere to fail."""
    try:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, sys.stdout.fileno())
        os.close(null)
    except (OSError, ValueError):  # no stdout file descriptor: nothing to flush into either
        pass


def _check_options(args: argparse.Namespace) -> None:
    """Options that cannot work, refused before the file is read or the search spends its
    budget."""
    if args.alignment < 1:
        raise ValueError(f"--alignment must be at least 1, got {args.alignment}")
    if not args.budget_ms >= 0:  # also refuses nan
        raise ValueError(f"--budget-ms must be at least 0, got {args.budget_ms:g}")
    if args.budget_ms > MAX_BUDGET_MS:
        raise ValueError(
            f"--budget-ms must be at most {MAX_BUDGET_MS:.0f} (a week), got {args.budget_ms:g}"
        )
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
    _print(_report(result))
    size = result.placement.size
    if args.capacity is not None and size > args.capacity:
        raise ValueError(
            f"arena needs {size} bytes, capacity is {args.capacity} (searched for "
            f"{args.budget_ms:g} ms; --budget-ms gives the search more time)"
        )
    if args.output:
        try:
            write_solution(
                args.output,
                intervals,
                result.placement,
                names=problem.names,
                columns=problem.columns,
            )
        except OSError as error:  # also on closing: a full disk shows when the data is flushed
            raise _WriteError(args.output, error) from None
    return 0


def main(argv: Sequence[str] | None = None) -> None:
    """Entry point of ``accy-pack``; exits 1 with an ``error:`` line on a user error, and
    ``CLOSED_PIPE_STATUS`` without one when stdout's reader has gone."""
    try:
        try:
            args = _parser().parse_args(argv)  # --help writes to stdout too
        except SystemExit as exit_:  # argparse's status 2 for a bad command line: ours is 1
            sys.exit(1 if exit_.code == 2 else exit_.code)
        status = _run(args)
    except BrokenPipeError:  # stdout's reader has gone (`| head`): nobody to tell
        _drop_stdout()
        status = CLOSED_PIPE_STATUS
    except _WriteError as error:
        _drop_stdout()
        print(f"error: {error}", file=sys.stderr)
        status = 1
    except OSError as error:  # reading the problem
        print(f"error: {error.filename or 'input'}: {error.strerror or error}", file=sys.stderr)
        status = 1
    except ValueError as error:  # includes MiniMallocFormatError (FILE:LINE: message)
        print(f"error: {error}", file=sys.stderr)
        status = 1
    sys.exit(status)
