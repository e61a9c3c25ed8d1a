"""Arena packing quality: arena size over the lower bound, per packer, on generated problems.

Families:
- ``random``: random lifetimes and log-uniform sizes (the lower bound may be below optimum).
- ``cut``: a full time x address rectangle cut recursively into buffers (guillotine cuts).
- ``churn``: a full rectangle where, at each work item, random buffers end and the freed
  address runs (merged across neighbours) are re-cut into new buffers.
(both from ``accy.passes.arena.generated``)
In ``cut`` and ``churn`` every work item is exactly full, so the lower bound is the optimum
and the ratio is the distance from it. Sizes are a whole number of alignment units minus a
random slack, so rounding up to the alignment is exercised.

Per case: the ratio reached by each greedy packer, then ``search`` (the best after the exact
searches: the sweep and tiling searches at the lower bound, the sweeps one unit above it, and
the skyline search above it), ``windows`` (after window repacking from it) and ``improve``;
``by`` names the algorithm of the chosen placement. After each size, how many of its cases are
within ``GOAL`` (1.02) of the lower bound; each family ends with the worst and the mean of
the best ratios. Seeds 0-4 (``--seeds N``: 0..N-1), 150 and 400 buffers (``--size``). With
``--cpsat``, and OR-Tools installed, a peer: CP-SAT minimising the arena (``NoOverlap2D``, 2
workers) for as long as accy's budget, its best arena over the lower bound (``none`` when it
found none in time).

Then the arenas of real programs: the five JAX-exported StableHLO programs in
``tests/data/stablehlo``, imported and planned with ``accy.prepare``; per program and per
packer, the arena over its lower bound (``prep.arena.functions[name].packer_sizes``).

With ``--minimalloc DIR``, instead: MiniMalloc's benchmark problems, ``NAME.CAPACITY.csv`` as
in the ``benchmarks/asplos2024`` folder of github.com/google/minimalloc (not shipped here),
each packed with its capacity given (``pack(capacity=...)``, as ``accy-pack --capacity``):
whether it fits, the arena over the capacity and over the lower bound; with ``--cpsat``,
whether CP-SAT finds a placement within the capacity in the same time.

With ``--workers N``, accy's sweeps run in N processes (``pack(workers=N)``), searching N
times the nodes in the same budget; CP-SAT's 2 workers make ``--workers 2`` the even match.

The measurements behind the arena's tuning come from here: ``pack``'s shares of the budget
(``FULL_SHARES``, ``TILED_SHARES``, ``UNTILED_SHARES``), the searches' ``NODES_PER_MS`` and
``stitch.RELAXED_WEIGHT``; rerun it (at ``--budget-ms 3000``, with and without ``--workers 2``)
after changing one, and compare the counts within ``GOAL`` and the mean ratios.

Run: ``python benchmarks/packing.py [--quick] [--budget-ms M] [--family F ...] [--seeds N]
[--size COUNT ...] [--no-programs] [--cpsat] [--minimalloc DIR] [--workers N]``.
"""

from __future__ import annotations

import argparse
import math
import random
import time
from collections.abc import Callable
from pathlib import Path

from accy.passes.arena import PACKERS, BufferInterval, check_placement, pack, read_problem
from accy.passes.arena.generated import churn, cut_rectangle
from accy.passes.arena.pack import FALLBACK

ALIGNMENT = 256
GOAL = 1.02
"""Arena over lower bound aimed at on the generated sets: a line per family and size says how
many cases are within it."""
STABLEHLO = Path(__file__).resolve().parents[1] / "tests" / "data" / "stablehlo"
Generator = Callable[[random.Random, int], list[BufferInterval]]


def _buffer(rng: random.Random, ident: int, start: int, end: int, units: int) -> BufferInterval:
    """A buffer of ``units`` alignment units, less a random slack."""
    return BufferInterval(ident, start, end, units * ALIGNMENT - rng.randrange(ALIGNMENT))


def random_problem(rng: random.Random, count: int) -> list[BufferInterval]:
    """``count`` buffers with random starts, lifetimes up to 20 items, sizes 1..256 units."""
    items = max(count // 2, 1)
    buffers = []
    for ident in range(count):
        start = rng.randrange(items)
        units = int(2 ** rng.uniform(0, 8))
        buffers.append(_buffer(rng, ident, start, start + rng.randrange(20), units))
    return buffers


def cut_problem(rng: random.Random, count: int) -> list[BufferInterval]:
    """A 64-unit x 40-item rectangle cut by guillotine cuts into ``count`` pieces."""
    return cut_rectangle(rng, count, items=40, height=64, alignment=ALIGNMENT)


def churn_problem(rng: random.Random, count: int) -> list[BufferInterval]:
    """A 64-unit-high rectangle over ``count // 4`` items, re-cut where buffers end."""
    return churn(rng, items=max(count // 4, 2), height=64, max_width=16, alignment=ALIGNMENT)


FAMILIES: dict[str, Generator] = {
    "random": random_problem,
    "cut": cut_problem,
    "churn": churn_problem,
}


def generated_case(family: str, count: int, seed: int) -> list[BufferInterval]:
    """The set of ``family`` with ``count`` buffers for ``seed``, in a random order."""
    rng = random.Random(seed)
    intervals = FAMILIES[family](rng, count)
    rng.shuffle(intervals)
    return intervals


def cpsat_size(
    intervals: list[BufferInterval], seconds: float, upper: int, unit: int = ALIGNMENT
) -> int | None:
    """The smallest arena CP-SAT finds in ``seconds`` (in ``unit``-byte units, sizes rounded
    up to them, no larger than ``upper`` bytes), or ``None``."""
    from ortools.sat.python import cp_model

    model = cp_model.CpModel()
    height = model.new_int_var(0, upper // unit, "height")
    times, rows = [], []
    for interval in intervals:
        units = -(-interval.size // unit)
        if not units:
            continue
        offset = model.new_int_var(0, upper // unit - units, f"offset{interval.id}")
        model.add(offset + units <= height)
        duration = interval.end + 1 - interval.start
        times.append(model.new_fixed_size_interval_var(interval.start, duration, ""))
        rows.append(model.new_fixed_size_interval_var(offset, units, ""))
    model.add_no_overlap_2d(times, rows)
    model.minimize(height)
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = seconds
    solver.parameters.num_workers = 2
    status = solver.solve(model)
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return None
    return int(solver.value(height)) * unit


def run_case(
    name: str,
    intervals: list[BufferInterval],
    budget_ms: float,
    cpsat: bool = False,
    workers: int = 1,
) -> float:
    """Pack one case, check it, print one line; return the best ratio."""
    started = time.perf_counter()
    result = pack(
        intervals,
        alignment=ALIGNMENT,
        budget_ms=budget_ms,
        max_iterations=10**9,
        workers=workers,
    )
    elapsed_ms = (time.perf_counter() - started) * 1000
    check_placement(intervals, result.placement, ALIGNMENT)
    bound = result.placement.lower_bound
    sizes = result.packer_sizes.items()
    ratios = "  ".join(f"{packer}={size / bound:.3f}" for packer, size in sizes)
    best = result.placement.ratio
    chosen = f"best={best:.3f} by={result.placement.packer}"
    peer = ""
    if cpsat:
        # The greedy arena bounds CP-SAT's search, as accy's searches start from it too.
        greedy = min(size for packer, size in sizes if packer in {*dict(PACKERS), FALLBACK})
        found = cpsat_size(intervals, budget_ms / 1000, greedy)
        peer = f"  cpsat={found / bound:.3f}" if found else "  cpsat=none"
    print(f"{name:<16} n={len(intervals):<5} {ratios}  {chosen}{peer}  ({elapsed_ms:.0f} ms)")
    return best


def run_programs(budget_ms: float) -> None:
    """Arena over lower bound per packer for each JAX-exported program's functions."""
    import accy

    worst = []
    for path in sorted(STABLEHLO.glob("*.stablehlo.mlir")):
        module = accy.import_stablehlo(path)
        prep = accy.prepare(module, target="cuda", pack_budget_ms=budget_ms)
        for function, arena in prep.arena.functions.items():
            bound = arena.lower_bound
            ratios = "  ".join(
                f"{packer}={size / bound if bound else 1.0:.3f}"
                for packer, size in arena.packer_sizes.items()
            )
            best = arena.size / bound if bound else 1.0
            worst.append(best)
            name = f"{path.name.removesuffix('.stablehlo.mlir')}/@{function}"
            print(f"{name:<26} lb={bound:<8} {ratios}  best={best:.3f}")
    if worst:
        print(f"stablehlo: worst best={max(worst):.3f}  mean best={sum(worst) / len(worst):.3f}")


def run_minimalloc(directory: Path, budget_ms: float, cpsat: bool, workers: int = 1) -> None:
    """MiniMalloc's benchmark problems (``NAME.CAPACITY.csv``, as in its repository's
    ``benchmarks/`` folders): whether accy fits each in its capacity within the budget (and
    CP-SAT, with ``--cpsat``, in the same time), and the arena over capacity and lower bound."""
    paths = sorted(directory.glob("*.csv"))
    if not paths:
        raise SystemExit(f"error: no .csv files in {directory}")
    fitted = peer_fitted = 0
    for path in paths:
        try:
            capacity = int(path.stem.rsplit(".", 1)[1])
        except (IndexError, ValueError):
            raise SystemExit(f"error: {path.name}: expected NAME.CAPACITY.csv") from None
        intervals = read_problem(path)
        started = time.perf_counter()
        result = pack(
            intervals,
            alignment=1,
            budget_ms=budget_ms,
            max_iterations=10**9,
            capacity=capacity,
            workers=workers,
        )
        elapsed_ms = (time.perf_counter() - started) * 1000
        check_placement(intervals, result.placement, 1)
        placement = result.placement
        fits = placement.size <= capacity
        fitted += fits
        line = (
            f"{path.name:<20} n={len(intervals):<4} {'fits' if fits else 'over'}  "
            f"arena/capacity={placement.size / capacity:.4f}  ratio={placement.ratio:.4f}  "
            f"by={placement.packer}  ({elapsed_ms:.0f} ms)"
        )
        if cpsat:
            unit = math.gcd(capacity, *(interval.size for interval in intervals))
            found = cpsat_size(intervals, budget_ms / 1000.0, capacity, unit=unit)
            peer_fitted += found is not None
            line += f"  cpsat={'fits' if found is not None else 'none'}"
        print(line)
    peer = f" (CP-SAT {peer_fitted})" if cpsat else ""
    print(f"minimalloc: {fitted} of {len(paths)} fit their capacity{peer}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer and smaller cases")
    parser.add_argument("--budget-ms", type=float, default=3000.0, help="search budget per case")
    parser.add_argument(
        "--family",
        action="append",
        choices=sorted(FAMILIES),
        help="run only this family (repeatable; default: all)",
    )
    parser.add_argument(
        "--seeds", type=int, metavar="N", help="seeds 0..N-1 per family and size (default 5)"
    )
    parser.add_argument(
        "--size",
        type=int,
        action="append",
        metavar="COUNT",
        help="only this many buffers per case (repeatable; default 150 and 400)",
    )
    parser.add_argument(
        "--no-programs", action="store_true", help="skip the JAX-exported StableHLO programs"
    )
    parser.add_argument(
        "--cpsat", action="store_true", help="also run CP-SAT (OR-Tools) as a peer, per case"
    )
    parser.add_argument(
        "--minimalloc",
        type=Path,
        metavar="DIR",
        help="only run MiniMalloc's benchmark problems in DIR (NAME.CAPACITY.csv files)",
    )
    parser.add_argument(
        "--workers",
        type=int,
        default=1,
        metavar="N",
        help="processes for accy's sweeps (pack(workers=N); default 1)",
    )
    args = parser.parse_args()
    if args.workers < 1:
        parser.error("--workers must be at least 1")
    if args.cpsat:
        try:
            import ortools  # noqa: F401
        except ImportError:
            parser.error("--cpsat needs OR-Tools (pip install ortools)")
    if args.minimalloc:
        run_minimalloc(args.minimalloc, args.budget_ms, args.cpsat, args.workers)
        return
    seeds = range(args.seeds or (2 if args.quick else 5))
    counts = args.size or ((150,) if args.quick else (150, 400))
    budget = min(args.budget_ms, 200.0) if args.quick else args.budget_ms
    # the goal lines depend on both: the exact searches need seconds on the hardest sets
    setting = f"{budget:.0f} ms a case, sweeps in {args.workers} process(es)"
    print(f"accy: {setting}")
    for family in FAMILIES:
        if args.family and family not in args.family:
            continue
        bests = []
        for count in counts:
            sized = []
            for seed in seeds:
                intervals = generated_case(family, count, seed)
                name = f"{family}/{count}/s{seed}"
                sized.append(run_case(name, intervals, budget, args.cpsat, args.workers))
            within = sum(best <= GOAL for best in sized)
            print(
                f"{family}/{count}: {within} of {len(sized)} within {GOAL} of the lower bound "
                f"({setting})"
            )
            bests += sized
        print(f"{family}: worst best={max(bests):.3f}  mean best={sum(bests) / len(bests):.3f}")
    if not args.no_programs:
        run_programs(budget)


if __name__ == "__main__":
    main()
