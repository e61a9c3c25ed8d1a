"""Arena packing time against problem size: does the budget bound the whole ``pack``?

Families (``BufferInterval``s of 100 bytes unless said, alignment 1):
- ``same``: every buffer live over the same items 0-9 (all pairs conflict);
- ``staggered``: buffer ``i`` live over items ``i .. i + n - 1`` (all pairs conflict, every
  start a section of its own);
- ``window``: buffer ``i`` live over items ``i .. i + 15`` (30 conflicts a buffer);
- ``random``: random starts over ``n`` items, lifetimes up to 200 items, sizes up to 5000.

Per family and size: the wall time of ``pack`` (and of ``check_placement`` on its result),
the arena over the lower bound, the conflicting pairs, and what the budget left out. The
greedy packers visit every conflicting pair, so with all pairs conflicting they fit a small
budget only up to a few hundred buffers; beyond, ``pack`` keeps ``sweep_first_fit``'s
placement (O(n log n)). On 2026-12-02 (a shared 2-core machine, 100 ms): ``pack`` on 5000
``same`` buffers 0.04 s, on 20000 0.17 s; ``accy-pack`` on them 0.22 s and 0.51 s, reading the
file included (before the work cap: 22-26 s, and more than 5 minutes).

Run: ``python benchmarks/pack_scaling.py [--budget-ms M] [--family F ...] [--size N ...]``.
"""

from __future__ import annotations

import argparse
import random
import time
from collections.abc import Callable

from accy.passes.arena import BufferInterval, check_placement, pack
from accy.passes.arena.placer import conflict_pairs

Family = Callable[[int], list[BufferInterval]]


def same(n: int) -> list[BufferInterval]:
    """``n`` identical buffers, all live together."""
    return [BufferInterval(i, 0, 9, 100) for i in range(n)]


def staggered(n: int) -> list[BufferInterval]:
    """``n`` buffers of one size, each starting an item after the last, all live together."""
    return [BufferInterval(i, i, i + n - 1, 100) for i in range(n)]


def window(n: int) -> list[BufferInterval]:
    """``n`` buffers of one size, each meeting the 15 before it and the 15 after it."""
    return [BufferInterval(i, i, i + 15, 100) for i in range(n)]


def random_family(n: int) -> list[BufferInterval]:
    """``n`` buffers of random lifetimes (up to 200 items) and sizes (seeded)."""
    rng = random.Random(n)
    return [
        BufferInterval(
            i, (start := rng.randrange(n)), start + rng.randrange(200), rng.randrange(1, 5000)
        )
        for i in range(n)
    ]


FAMILIES: dict[str, Family] = {
    "same": same,
    "staggered": staggered,
    "window": window,
    "random": random_family,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget-ms", type=float, default=100.0)
    parser.add_argument("--family", nargs="+", choices=sorted(FAMILIES), default=list(FAMILIES))
    parser.add_argument("--size", nargs="+", type=int, default=[1000, 5000, 20000])
    args = parser.parse_args()
    print(f"budget {args.budget_ms:g} ms")
    print(
        f"{'family':<10} {'n':>6} {'pairs':>11} {'pack s':>7} {'check s':>7} {'ratio':>6}  skipped"
    )
    for name in args.family:
        for n in args.size:
            intervals = FAMILIES[name](n)
            started = time.perf_counter()
            result = pack(intervals, alignment=1, budget_ms=args.budget_ms)
            packed = time.perf_counter() - started
            check_placement(intervals, result.placement, 1)
            checked = time.perf_counter() - started - packed
            skipped = ", ".join(result.skipped) or "-"
            print(
                f"{name:<10} {n:>6} {conflict_pairs(intervals):>11} {packed:>7.2f} "
                f"{checked:>7.2f} {result.placement.ratio:>6.3f}  {skipped}"
            )


if __name__ == "__main__":
    main()
