"""Racing sweeps: exact sweeps sharing a node budget, in one process or in several.

``stitch`` runs a full problem's sweeps (forward and backward, at the lower bound and one unit
above it) together and keeps one placement, the *winner*. So that the winner depends neither
on timing nor on the number of processes, the race is defined by node counts alone:

- each sweep gets an equal part of ``max_nodes`` as its *cap* (the first ones a node more
  where the parts do not divide evenly);
- a sweep *places* when it finds a placement within its cap; the winner is a placing sweep of
  the lowest rank, and among those the one that placed after the fewest nodes, then the one
  listed first;
- so a placement after ``n`` nodes by sweep ``i`` lowers the caps of the other sweeps of its
  rank to what could still beat it (``n`` nodes for those listed before ``i``, fewer for those
  after it) and stops the sweeps of later ranks; it leaves the earlier ranks alone.

Invariants: lowering a cap never changes the winner, it only ends sooner the sweeps that cannot
win; the winner's result is the only one with offsets (the others report their deepest
tilings where they stopped, which may depend on timing). When no sweep places, every sweep
ran to its cap or proved its problem has no placement, so every result is the same however
the sweeps were run. (A sweep that ends early leaves its nodes unused: which sweep would take
them would depend on timing.)

In one process the sweeps take turns, a restart run at a time, the one that has searched the
fewest nodes first. With ``workers`` > 1 they are dealt out to that many processes (sweep
``i`` to worker ``i mod workers``), each taking turns the same way; a worker reports each
placement to this process, which lowers the caps in an array shared with the workers (a sweep
reads its cap every 32 nodes). Workers are forked from a fork server (``multiprocessing``), so
a caller's threads are not copied into them, but, as with any ``multiprocessing`` start
method other than ``fork``, a script starting a race with workers needs the ``if __name__ ==
"__main__":`` guard. The deadline is a safety stop: results reached at it depend on timing.
"""

from __future__ import annotations

import multiprocessing
import os
import queue
import time
import traceback
from collections.abc import Callable, MutableSequence, Sequence

from accy.passes.arena.sections import Sections
from accy.passes.arena.sweep import SweepResult, _Sweep

MAX_WORKERS = 4
"""Processes per race, at most (a full problem has four sweeps)."""
_POLL_S = 0.05  # how often a race waiting on its workers checks that they are alive
_GRACE_S = 10.0  # how long after the deadline a race waits for its workers' results
_ENDED = object()  # a sweep's runs are over


def available_workers() -> int:
    """The processes a race can use here: the processors this process may run on, at most
    ``MAX_WORKERS`` (one where there is no fork server, as on Windows)."""
    if "forkserver" not in multiprocessing.get_all_start_methods():
        return 1
    try:
        processors = len(os.sched_getaffinity(0))
    except AttributeError:  # no affinity on this platform
        processors = os.cpu_count() or 1
    return max(1, min(processors, MAX_WORKERS))


class _Standings:
    """The caps of a race's sweeps (in ``caps``, which workers may share) and the placements
    reported so far."""

    def __init__(self, max_nodes: int, ranks: Sequence[int], caps: MutableSequence[int]) -> None:
        count = len(ranks)
        self.ranks, self.caps = ranks, caps
        for i in range(count):
            caps[i] = max_nodes // count + (i < max_nodes % count)
        self.placed: dict[int, int] = {}  # sweep -> nodes it had searched when it placed

    def place(self, i: int, nodes: int) -> None:
        """Sweep ``i`` placed after ``nodes`` nodes: lower the caps the module doc says."""
        self.placed[i] = nodes
        for j, rank in enumerate(self.ranks):
            if rank > self.ranks[i]:
                self.caps[j] = 0
            elif rank == self.ranks[i] and j != i:
                # a sweep stops on reaching its cap, so a cap of n + 1 allows n nodes
                self.caps[j] = min(self.caps[j], nodes + 1 if j < i else nodes)

    def winner(self) -> int | None:
        """The winning sweep, if any placed."""
        if not self.placed:
            return None
        return min(self.placed, key=lambda i: (self.ranks[i], self.placed[i], i))


def _take_turns(
    sweeps: dict[int, _Sweep],
    caps: Sequence[int],
    deadline: float,
    seed: int,
    placed: Callable[[int, int], None],
) -> dict[int, SweepResult]:
    """Run ``sweeps`` (by race index) a restart run at a time, the one with the fewest nodes
    first, each within its cap in ``caps``, until every one has ended; ``placed`` hears of each
    placement (the sweep and its nodes)."""
    running = {}
    for i, search in sweeps.items():
        search.deadline, search.max_nodes = deadline, caps[i]
        search.cap = lambda i=i: caps[i]
        running[i] = search.runs(seed)
    results: dict[int, SweepResult] = {}
    while running:
        i = min(running, key=lambda j: (sweeps[j].nodes, j))
        search = sweeps[i]
        step = _ENDED if search.interrupted() else next(running[i], _ENDED)
        if step is None:
            continue  # a restart run ended without a placement
        del running[i]
        offsets = step if isinstance(step, list) else None
        if offsets is not None:
            placed(i, search.nodes)
        results[i] = search.result(offsets)
    return results


def race(
    problems: Sequence[Sections],
    *,
    max_nodes: int,
    deadline: float,
    seed: int = 0,
    ranks: Sequence[int] | None = None,
    dominance: Sequence[bool] | None = None,
    workers: int = 1,
) -> list[SweepResult]:
    """Sweeps over ``problems`` (each exactly full) racing for ``max_nodes`` nodes in all, or
    until ``deadline`` (a ``time.perf_counter`` value); a result per problem, only the
    winner's with offsets (see the module doc).

    ``ranks`` orders the problems by preference (lowest first; all equal by default): a problem
    at a lower capacity, say, before one at a higher. ``dominance`` says per problem whether
    its sweep leaves out dominated splits (all do by default; see ``sweep._Sweep.blockings``).
    ``workers`` processes run the sweeps (one: this process); the winner, and every result when
    none places, do not depend on it.
    """
    count = len(problems)
    rank = [0] * count if ranks is None else list(ranks)
    skips = [True] * count if dominance is None else list(dominance)
    workers = max(1, min(workers, count))
    if workers == 1:
        caps = [0] * count
        standings = _Standings(max_nodes, rank, caps)
        sweeps = {i: _Sweep(problems[i], skips[i]) for i in range(count)}
        results = _take_turns(sweeps, caps, deadline, seed, standings.place)
    else:
        results, standings = _race_in_workers(
            problems, max_nodes, deadline, seed, rank, skips, workers
        )
    winner = standings.winner()
    return [
        results[i] if i == winner else SweepResult(None, results[i].depth, results[i].prefix)
        for i in range(count)
    ]


def _race_in_workers(
    problems: Sequence[Sections],
    max_nodes: int,
    deadline: float,
    seed: int,
    ranks: list[int],
    skips: list[bool],
    workers: int,
) -> tuple[dict[int, SweepResult], _Standings]:
    """The race's results and standings, its sweeps run by ``workers`` processes."""
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload([__name__])
    count = len(problems)
    caps = context.Array("q", count, lock=False)
    standings = _Standings(max_nodes, ranks, caps)
    messages = context.Queue()
    wall_deadline = time.time() + (deadline - time.perf_counter())  # clocks differ by process
    processes = []
    for w in range(workers):
        mine = list(range(w, count, workers))
        process = context.Process(
            target=_work,
            args=(mine, [problems[i] for i in mine], [skips[i] for i in mine], caps),
            kwargs={"wall_deadline": wall_deadline, "seed": seed, "messages": messages},
            daemon=True,
        )
        process.start()
        processes.append(process)
    results: dict[int, SweepResult] = {}
    try:
        while len(results) < count:
            try:
                kind, i, payload = messages.get(timeout=_POLL_S)
            except queue.Empty:
                if any(process.exitcode not in (None, 0) for process in processes):
                    raise RuntimeError("race: a worker process died") from None
                if time.time() > wall_deadline + _GRACE_S:
                    raise RuntimeError("race: workers did not stop at the deadline") from None
                continue
            if kind == "placed":
                standings.place(i, payload)
            elif kind == "result":
                results[i] = payload
            else:
                raise RuntimeError(f"race: a worker failed:\n{payload}")
    finally:
        for process in processes:  # done once they sent every result; stopped otherwise
            if len(results) < count:
                process.terminate()
            process.join()
    return results, standings


def _work(
    indices: list[int],
    problems: list[Sections],
    skips: list[bool],
    caps: Sequence[int],
    *,
    wall_deadline: float,
    seed: int,
    messages: multiprocessing.Queue,
) -> None:
    """A worker: runs the sweeps ``indices`` of a race, reporting placements and results (or
    the traceback of a failure) on ``messages``."""
    try:
        deadline = time.perf_counter() + (wall_deadline - time.time())
        sweeps = {i: _Sweep(problem, skip) for i, problem, skip in zip(indices, problems, skips)}

        def placed(i: int, nodes: int) -> None:
            messages.put(("placed", i, nodes))

        for i, result in _take_turns(sweeps, caps, deadline, seed, placed).items():
            messages.put(("result", i, result))
    except Exception:  # noqa: BLE001 - reported, so that the race does not wait for it
        messages.put(("error", -1, traceback.format_exc()))
