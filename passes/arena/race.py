"""Racing sweeps: exact sweeps sharing a node budget, in one process or in several.

``stitch`` runs a full problem's sweeps (forward and backward, at the lower bound and one unit
above it) together and keeps one placement, the *winner*. So that the winner depends neither
on timing nor on the number of processes, the race is defined by node counts alone:

- each sweep gets a part of ``max_nodes`` as its *cap*, in proportion to its *weight* (equal
  by default; the first ones a node more where the parts do not divide evenly);
- a sweep *places* when it finds a placement within its cap; the winner is a placing sweep of
  the lowest rank, and among those the one that placed after the fewest nodes, then the one
  listed first;
- so a placement after ``n`` nodes by sweep ``i`` lowers the caps of the other sweeps of its
  rank to what could still beat it (``n`` nodes for those listed before ``i``, fewer for those
  after it) and stops the sweeps of later ranks; it leaves the earlier ranks alone;
- the nodes a rank with a placement leaves (its caps less what its sweeps could use once its
  winner placed: a count of nodes, not of time) are *handed down*, shared by the sweeps of
  the earlier ranks, unless one of those placed already; so a sweep that reaches its cap
  *waits* there while a sweep of a later rank is still running, and goes on if its cap rises.

Invariants: lowering a cap never changes the winner, it only ends sooner the sweeps that cannot
win; nor does handing nodes down to a rank with a placement within the caps it started with
(a sweep needing the extra nodes places after more nodes than that one); without such a
placement the later ranks run undisturbed, so what they hand down does not depend on timing.
The winner's result is the only one with offsets (the others report their deepest tilings
where they stopped, which may depend on timing). When no sweep places, every sweep ran to its
cap or proved its problem has no placement, so every result is the same however the sweeps
were run. (A sweep that proves early that its problem has no placement leaves its nodes
unused: which sweep would take them would depend on timing.)

In one process the sweeps take turns, a run at a time, the one that has searched the
fewest nodes first. With ``workers`` > 1 they are dealt out to that many processes (sweep
``i`` to worker ``i mod workers``), each taking turns the same way; a worker reports each
sweep's end (and placement) to this process, which changes the caps and the waiting flags in
arrays shared with the workers (a sweep reads its cap every 32 nodes; a worker whose sweeps
all wait polls them). Workers are forked from a fork server (``multiprocessing``), so
a caller's threads are not copied into them, but, as with any ``multiprocessing`` start
method other than ``fork``, a script starting a race with workers needs the ``if __name__ ==
"__main__":`` guard. The deadline is a safety stop: results reached at it depend on timing.
The cyclic garbage collector is off while the sweeps run (in this process and in the workers):
they make no reference cycles, so it would only slow them down.
"""

from __future__ import annotations

import gc
import multiprocessing
import os
import queue
import time
import traceback
from collections.abc import Callable, Generator, MutableSequence, Sequence
from typing import TypeVar

from accy.passes.arena.sections import Sections
from accy.passes.arena.sweep import PAUSED, SweepResult, _Sweep

MAX_WORKERS = 4
"""Processes per race, at most (a full problem has four sweeps)."""
_POLL_S = 0.05  # how often a race waiting on its workers checks that they are alive
_GRACE_S = 10.0  # how long after the deadline a race waits for its workers' results
_ENDED = object()  # a sweep's runs are over
_T = TypeVar("_T")


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
    """The caps of a race's sweeps and which of them wait at their caps (in ``caps`` and
    ``waiting``, which workers may share), and the placements reported so far."""

    def __init__(
        self,
        max_nodes: int,
        ranks: Sequence[int],
        caps: MutableSequence[int],
        waiting: MutableSequence[int],
        weights: Sequence[int] | None = None,
    ) -> None:
        count = len(ranks)
        self.ranks, self.caps, self.waiting = ranks, caps, waiting
        weights = [1] * count if weights is None else weights
        total = sum(weights)
        for i in range(count):
            caps[i] = max_nodes * weights[i] // total
        for i in range(max_nodes - sum(caps[:count])):  # fewer than count nodes left
            caps[i] += 1
        self.initial = list(caps)
        self.placed: dict[int, int] = {}  # sweep -> nodes it had searched when it placed
        self.done: set[int] = set()
        self._update_waiting()

    def place(self, i: int, nodes: int) -> None:
        """Sweep ``i`` placed after ``nodes`` nodes: lower the caps the module doc says."""
        self.placed[i] = nodes
        for j, rank in enumerate(self.ranks):
            if rank > self.ranks[i]:
                self.caps[j] = 0
            elif rank == self.ranks[i] and j != i:
                # a sweep stops on reaching its cap, so a cap of n + 1 allows n nodes
                self.caps[j] = min(self.caps[j], nodes + 1 if j < i else nodes)

    def ended(self, i: int, nodes: int | None) -> None:
        """Sweep ``i`` ended, after placing its problem in ``nodes`` nodes if they are given."""
        if nodes is not None:
            self.place(i, nodes)
        self.finish(i)

    def finish(self, i: int) -> None:
        """Sweep ``i`` ended: when it is the last of its rank, hand the nodes the rank left to
        the earlier ranks (raising their caps before they stop waiting for it)."""
        self.done.add(i)
        rank = self.ranks[i]
        members = [j for j, other in enumerate(self.ranks) if other == rank]
        if self.done.issuperset(members):
            self._hand_down(rank, members)
        self._update_waiting()

    def _hand_down(self, rank: int, members: list[int]) -> None:
        """The nodes a placement at ``rank`` left to its sweeps, shared by the earlier ranks'.

        Counted from the winner of the rank (what each sweep could use once it placed), not
        from what the sweeps used, which can depend on timing; left alone when an earlier rank
        placed already, as more nodes cannot make a sweep win there then."""
        winners = [j for j in members if j in self.placed]
        earlier = [j for j, other in enumerate(self.ranks) if other < rank]
        if not winners or not earlier or any(self.ranks[j] < rank for j in self.placed):
            return
        w = min(winners, key=lambda j: (self.placed[j], j))
        won = self.placed[w]
        used = [won if j == w else min(self.initial[j], won + (j < w)) for j in members]
        freed = sum(self.initial[j] for j in members) - sum(used)
        for k, j in enumerate(earlier):
            self.caps[j] += freed // len(earlier) + (k < freed % len(earlier))

    def _update_waiting(self) -> None:
        """A sweep waits at its cap while a sweep of a later rank has not ended."""
        for i, rank in enumerate(self.ranks):
            self.waiting[i] = any(
                other > rank and j not in self.done for j, other in enumerate(self.ranks)
            )

    def winner(self) -> int | None:
        """The winning sweep, if any placed."""
        if not self.placed:
            return None
        return min(self.placed, key=lambda i: (self.ranks[i], self.placed[i], i))


def _take_turns(
    sweeps: dict[int, _Sweep],
    caps: Sequence[int],
    waiting: Sequence[int],
    deadline: float,
    seed: int,
    ended: Callable[[int, SweepResult, int | None], None],
) -> None:
    """Run ``sweeps`` (by race index) a run at a time, the one with the fewest nodes
    first, each within its cap in ``caps`` (waiting at it while ``waiting`` says so, for a
    higher cap), until every one has ended; ``ended`` hears of each: its result and, when it
    placed, its nodes."""
    running = {}
    for i, search in sweeps.items():
        search.deadline, search.max_nodes = deadline, caps[i]
        search.cap = lambda i=i: caps[i]
        running[i] = search.runs(seed)
    paused: dict[int, Generator] = {}
    while running or paused:
        for i in list(paused):
            if caps[i] > sweeps[i].nodes:
                running[i] = paused.pop(i)
            elif not waiting[i] or time.perf_counter() > deadline:
                paused.pop(i).close()
                ended(i, sweeps[i].result(None), None)
        if not running:
            time.sleep(_POLL_S / 10)  # a worker's sweeps all wait for another worker's
            continue
        i = min(running, key=lambda j: (sweeps[j].nodes, j))
        search = sweeps[i]
        step = _ENDED if search.interrupted() else next(running[i], _ENDED)
        if step is None:
            continue  # a run ended without a placement
        if step is PAUSED:
            paused[i] = running.pop(i)
            continue
        del running[i]
        offsets = step if isinstance(step, list) else None
        ended(i, search.result(offsets), None if offsets is None else search.nodes)


def race(
    problems: Sequence[Sections],
    *,
    max_nodes: int,
    deadline: float,
    seed: int = 0,
    ranks: Sequence[int] | None = None,
    weights: Sequence[int] | None = None,
    workers: int = 1,
) -> list[SweepResult]:
    """Sweeps over ``problems`` (each exactly full) racing for ``max_nodes`` nodes in all, or
    until ``deadline`` (a ``time.perf_counter`` value); a result per problem, only the
    winner's with offsets (see the module doc).

    ``ranks`` orders the problems by preference (lowest first; all equal by default): a problem
    at a lower capacity, say, before one at a higher. ``weights`` (positive; all equal by
    default) share ``max_nodes`` out as the sweeps' caps.
    ``workers`` processes run the sweeps (one: this process); the winner, and every result when
    none places, do not depend on it.
    """
    count = len(problems)
    rank = [0] * count if ranks is None else list(ranks)
    weight = [1] * count if weights is None else list(weights)
    if len(rank) != count or len(weight) != count or min(weight, default=1) < 1:
        raise ValueError("race: one rank and one positive weight per problem")
    workers = max(1, min(workers, count))
    results, standings = _without_collector(
        lambda: _run(problems, max_nodes, deadline, seed, rank, weight, workers)
    )
    winner = standings.winner()
    return [
        results[i] if i == winner else SweepResult(None, results[i].depth, results[i].prefix)
        for i in range(count)
    ]


def _without_collector(run: Callable[[], _T]) -> _T:
    """``run()`` with the cyclic garbage collector off: the sweeps make no reference cycles,
    and the collector spent a fifth of their time going over their memories. Refcounting
    still frees everything they drop."""
    if not gc.isenabled():
        return run()
    gc.disable()
    try:
        return run()
    finally:
        gc.enable()


def _run(
    problems: Sequence[Sections],
    max_nodes: int,
    deadline: float,
    seed: int,
    rank: list[int],
    weight: list[int],
    workers: int,
) -> tuple[dict[int, SweepResult], _Standings]:
    """The race's results by sweep and its standings."""
    count = len(problems)
    if workers == 1:
        caps, waiting = [0] * count, [0] * count
        standings = _Standings(max_nodes, rank, caps, waiting, weight)
        sweeps = {i: _Sweep(problems[i]) for i in range(count)}
        results: dict[int, SweepResult] = {}

        def ended(i: int, result: SweepResult, nodes: int | None) -> None:
            results[i] = result
            standings.ended(i, nodes)

        _take_turns(sweeps, caps, waiting, deadline, seed, ended)
        return results, standings
    return _race_in_workers(problems, max_nodes, deadline, seed, rank, weight, workers)


def _race_in_workers(
    problems: Sequence[Sections],
    max_nodes: int,
    deadline: float,
    seed: int,
    ranks: list[int],
    weights: list[int],
    workers: int,
) -> tuple[dict[int, SweepResult], _Standings]:
    """The race's results and standings, its sweeps run by ``workers`` processes."""
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload([__name__])
    count = len(problems)
    caps = context.Array("q", count, lock=False)
    waiting = context.Array("b", count, lock=False)
    standings = _Standings(max_nodes, ranks, caps, waiting, weights)
    messages = context.Queue()
    wall_deadline = time.time() + (deadline - time.perf_counter())  # clocks differ by process
    processes = []
    for w in range(workers):
        mine = list(range(w, count, workers))
        process = context.Process(
            target=_work,
            args=(mine, [problems[i] for i in mine], caps, waiting),
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
            if kind == "error":
                raise RuntimeError(f"race: a worker failed:\n{payload}")
            results[i], nodes = payload
            standings.ended(i, nodes)
    finally:
        for process in processes:  # done once they sent every result; stopped otherwise
            if len(results) < count:
                process.terminate()
            process.join()
    return results, standings


def _work(
    indices: list[int],
    problems: list[Sections],
    caps: Sequence[int],
    waiting: Sequence[int],
    *,
    wall_deadline: float,
    seed: int,
    messages: multiprocessing.Queue,
) -> None:
    """A worker: runs the sweeps ``indices`` of a race, reporting each one's result as it
    ends (or the traceback of a failure) on ``messages``."""
    gc.disable()  # as in race: this process only sweeps
    try:
        deadline = time.perf_counter() + (wall_deadline - time.time())
        sweeps = {i: _Sweep(problem) for i, problem in zip(indices, problems)}

        def ended(i: int, result: SweepResult, nodes: int | None) -> None:
            messages.put(("result", i, (result, nodes)))

        _take_turns(sweeps, caps, waiting, deadline, seed, ended)
    except Exception:  # noqa: BLE001 - reported, so that the race does not wait for it
        messages.put(("error", -1, traceback.format_exc()))
