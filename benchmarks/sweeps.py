"""The exact sweeps alone, each at a fixed node budget: figures that do not depend on the machine.

``benchmarks/packing.py`` runs the whole of ``pack`` against the clock, and on a shared machine
identical runs differ by up to 1.7 times in speed (measured on the 2-core development machine,
2026-12-01), so its figures over a few dozen sets move by a set or two between runs. A sweep
capped by nodes alone searches the same way on every machine. This script runs the two sweeps
that ``stitch.fit`` races on a full problem, forward and over the problem's mirror image in time,
at the lower bound or one unit above it (``--above``, where ``pack``'s sweeps get most of their
nodes), on the generated sets of ``benchmarks/packing.py`` (the same sets as there, seed for
seed), each sweep alone with ``--nodes`` nodes and no deadline. Per set: whether each sweep
placed every buffer and the deepest section boundary it reached; then how many sweeps placed
and how many sets one of their two sweeps placed. CPU seconds are printed for reference only.

Run: ``python benchmarks/sweeps.py [--family F] [--size COUNT] [--seeds N] [--first K]
[--nodes N] [--above] [--restart-seed S]``. On the 400-buffer churn sets, seeds 0-39, one unit
above the bound, 2400 nodes a sweep: 47 of 80 sweeps place, 37 of 40 sets (2026-12-01).
"""

from __future__ import annotations

import argparse
import math
import time

from accy.passes.arena.sections import build_sections
from accy.passes.arena.sweep import suits, sweep_sections
from packing import ALIGNMENT, generated_case

FULL_FAMILIES = ("churn", "cut")
"""The families of ``benchmarks/packing.py`` whose sets are full at every work item (the sweep
applies at their lower bound)."""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--family", choices=FULL_FAMILIES, default="churn")
    parser.add_argument("--size", type=int, default=400, help="buffers per set (default 400)")
    parser.add_argument("--seeds", type=int, default=40, help="sets: seeds K..K+N-1 (default 40)")
    parser.add_argument("--first", type=int, default=0, help="the first seed K (default 0)")
    parser.add_argument("--nodes", type=int, default=2400, help="nodes per sweep (default 2400)")
    parser.add_argument("--above", action="store_true", help="one unit above the lower bound")
    parser.add_argument(
        "--restart-seed", type=int, default=0, help="the sweeps' seed for their restarts"
    )
    args = parser.parse_args()
    if args.nodes < 1 or args.seeds < 1 or args.size < 1:
        parser.error("--nodes, --seeds and --size must be at least 1")
    placed = sets = tried = 0
    cpu = 0.0
    for seed in range(args.first, args.first + args.seeds):
        intervals = generated_case(args.family, args.size, seed)
        intervals.sort(key=lambda interval: interval.id)  # as pack orders them
        sections = build_sections(intervals, ALIGNMENT)
        rows = sections.lower + (1 if args.above else 0)
        if not suits(sections, rows):
            print(f"{args.family}/{args.size}/s{seed}: not full at its lower bound, skipped")
            continue
        tried += 1
        padded = sections.padded(rows)
        cells = []
        got = False
        for name, problem in (("forward", padded), ("backward", padded.mirrored())):
            started = time.process_time()
            result = sweep_sections(
                problem, max_nodes=args.nodes, deadline=math.inf, seed=args.restart_seed
            )
            cpu += time.process_time() - started
            done = result.offsets is not None
            placed += done
            got |= done
            state = "placed" if done else "open"
            cells.append(f"{name} {state} {result.depth}/{len(problem.live)}")
        sets += got
        print(f"{args.family}/{args.size}/s{seed}  " + "  ".join(cells), flush=True)
    where = "one unit above the lower bound" if args.above else "at the lower bound"
    print(
        f"{placed} of {2 * tried} sweeps placed, {sets} of {tried} sets by one of "
        f"their two ({where}, {args.nodes} nodes a sweep, restart seed {args.restart_seed}; "
        f"{cpu:.0f} s of CPU)"
    )


if __name__ == "__main__":
    main()
