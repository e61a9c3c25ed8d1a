"""Planning time: `accy.prepare` on long elementwise chains, built with `accy.Builder`.

Two chains per size (N ops each, one function):
- ``fused``: ``x = add(x, p)`` / ``x = exp(x)`` alternating; every value has one use, so
  the whole chain is one kernel (N - 1 elided values, 1 work item).
- ``unfused``: ``x = add(x, x)`` / ``x = multiply(x, x)``; every value has two uses, so
  every op is its own kernel (N work items, N slots).

Only planning is timed (the program is built, not parsed, before the clock starts). For
each chain the benchmark prints ops/second per size and the ratio of the largest size's
time to the smallest's, next to the ratio of their sizes: planning is linear when the two
ratios match (100k / 10k ≈ 10). Timings run with the cyclic garbage collector off (as
`timeit` does); ``--gc`` keeps it on, which shows the interpreter's share. With ``--breakdown`` (default) it also prints each
analysis's own time (children excluded) and its ratio, which names a superlinear one.

Run: ``python benchmarks/plan_time.py [--sizes 10000,50000,100000] [--kinds fused,unfused]``.
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from contextlib import contextmanager
from typing import ClassVar

from accy.passes.analysis import AnalysisManager

import accy
from accy import preparation


def fused_chain(size: int):
    b = accy.Builder()
    t = b.tensor("f32", [1024])
    fb = b.begin_function("fused", [t, t], [t])
    x, p = fb.parameter(0), fb.parameter(1)
    for i in range(size):
        x = fb.add(x, p) if i % 2 == 0 else fb.exponential(x)
    fb.return_([x])
    fb.finish()
    return b.finish()


def unfused_chain(size: int):
    b = accy.Builder()
    t = b.tensor("f32", [1024])
    fb = b.begin_function("unfused", [t], [t])
    x = fb.parameter(0)
    for i in range(size):
        x = fb.add(x, x) if i % 2 == 0 else fb.multiply(x, x)
    fb.return_([x])
    fb.finish()
    return b.finish()


CHAINS: dict[str, Callable[[int], object]] = {"fused": fused_chain, "unfused": unfused_chain}


class _TimedManager(AnalysisManager):
    """An analysis manager that records each analysis's own (exclusive) time."""

    own: ClassVar[dict[str, float]] = defaultdict(float)
    _stack: ClassVar[list[float]] = []

    def get(self, descriptor, op):
        if self.record(descriptor.name, op) is not None:
            return super().get(descriptor, op)
        start = time.perf_counter()
        self._stack.append(0.0)
        try:
            return super().get(descriptor, op)
        finally:
            children = self._stack.pop()
            elapsed = time.perf_counter() - start
            self.own[descriptor.name] += elapsed - children
            if self._stack:
                self._stack[-1] += elapsed


@contextmanager
def _timed_analyses():
    original = preparation.AnalysisManager
    _TimedManager.own = defaultdict(float)
    _TimedManager._stack = []
    preparation.AnalysisManager = _TimedManager
    try:
        yield _TimedManager.own
    finally:
        preparation.AnalysisManager = original


@contextmanager
def _no_gc():
    """Time with the cyclic garbage collector off (as `timeit` does): its full
    collections cost time proportional to the live heap, which would hide the scaling of
    the analyses themselves behind the interpreter's."""
    gc.collect()
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


@contextmanager
def _gc_unchanged():
    gc.collect()
    yield


def _time_prepare(module, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        with _no_gc():
            start = time.perf_counter()
            accy.prepare(module, target="cuda")  # the figures recorded: CUDA plans
            best = min(best, time.perf_counter() - start)
    return best


def run(sizes: list[int], kinds: list[str], repeat: int, breakdown: bool) -> None:
    smallest, largest = min(sizes), max(sizes)
    for kind in kinds:  # warm up: first-use imports and caches are not planning time
        accy.prepare(CHAINS[kind](100), target="cuda")
    for kind in kinds:
        print(f"\n{kind} chain")
        print(f"{'ops':>8}  {'plan s':>8}  {'ops/s':>10}")
        times: dict[int, float] = {}
        own: dict[int, dict[str, float]] = {}
        for size in sizes:
            module = CHAINS[kind](size)
            times[size] = _time_prepare(module, repeat)
            print(f"{size:>8}  {times[size]:>8.3f}  {size / times[size]:>10.0f}")
            if breakdown:
                with _no_gc(), _timed_analyses() as record:
                    accy.prepare(module, target="cuda")  # the figures recorded: CUDA plans
                own[size] = dict(record)
            del module
            gc.collect()
        if len(sizes) > 1:
            ratio = times[largest] / times[smallest]
            print(
                f"time ratio {largest}/{smallest}: {ratio:.1f} "
                f"(size ratio {largest / smallest:.1f}; linear when they match)"
            )
        if breakdown and len(sizes) > 1:
            print(f"  {'analysis':<26}  {'own s @' + str(largest):>14}  {'ratio':>7}")
            for name, seconds in sorted(own[largest].items(), key=lambda kv: -kv[1]):
                base = own[smallest].get(name, 0.0)
                ratio = seconds / base if base > 0 else float("inf")
                print(f"  {name:<26}  {seconds:>14.3f}  {ratio:>7.1f}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--sizes",
        default="10000,50000,100000",
        help="comma-separated chain lengths (ops); default 10000,50000,100000",
    )
    parser.add_argument(
        "--kinds", default="fused,unfused", help=f"chains to plan: {', '.join(CHAINS)}"
    )
    parser.add_argument("--repeat", type=int, default=1, help="best of N timings")
    parser.add_argument(
        "--gc", action="store_true", help="keep the cyclic garbage collector on while timing"
    )
    parser.add_argument("--no-breakdown", action="store_true", help="skip the per-analysis times")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",") if s]
    kinds = [k for k in args.kinds.split(",") if k]
    unknown = [k for k in kinds if k not in CHAINS]
    if unknown or not sizes or any(s <= 0 for s in sizes):
        parser.error(f"bad --kinds {unknown} or --sizes {args.sizes}")
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    global _no_gc
    if args.gc:
        _no_gc = _gc_unchanged
    run(sizes, kinds, args.repeat, not args.no_breakdown)


if __name__ == "__main__":
    main()
