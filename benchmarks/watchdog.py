"""Long-lived worker processes that run items one at a time under a watchdog.

    results = run_in_workers(items, "conformance:run_case", jobs=2, timeout=60, options={...})

Each worker is a fresh (spawned) Python process that imports the function named by
`target` ("module:function", the module importable from `sys.path`) once and then calls
`function(item, options, report_stage)` for every item it is given; the function returns
an `Outcome` and may call `report_stage("compile")` to say where it is. The parent gives
each idle worker the next item and watches it: a worker that dies (a signal, an abort,
an exit) yields a CRASH outcome naming the stage and the last lines the process printed
(its C-level output goes to a log file, not to the terminal); one that runs an item past
`timeout` seconds is killed and yields TIMEOUT. Either way a new worker takes its place.

An item's `timeout` counts from when its worker says it began the item, so the time a
fresh worker takes to start (spawning Python and importing the target: seconds on a
loaded machine) is not charged to the item. A worker that has not begun its item within
`startup_timeout` seconds of being given it (its start-up hangs) yields TIMEOUT too.
"""

from __future__ import annotations

import importlib
import multiprocessing as mp
import multiprocessing.connection
import os
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

KINDS = ("PASS", "WRONG", "REFUSED", "CRASH", "TIMEOUT")
STARTUP_TIMEOUT = 300.0
"""Seconds a worker may take to begin an item it was given (start-up included)."""


@dataclass
class Outcome:
    """What became of one item: `kind` (one of `KINDS`), a `detail` text, the `stage` it
    ended in, the seconds it took and any `facts` (measurements) its function recorded."""

    id: str
    kind: str
    detail: str = ""
    stage: str = ""
    seconds: float = 0.0
    facts: dict[str, Any] = field(default_factory=dict)


def _serve(connection, target: str, options: dict[str, Any], log_path: str) -> None:
    log = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(log, 1)
    os.dup2(log, 2)
    sys.stdout = sys.stderr = open(log, "w", buffering=1, closefd=False)  # noqa: SIM115
    module, _, name = target.partition(":")
    function = getattr(importlib.import_module(module), name)
    while True:
        try:
            item = connection.recv()
        except EOFError:
            return
        connection.send(("began", None))
        start = time.perf_counter()
        outcome = function(item, options, lambda stage: connection.send(("stage", stage)))
        outcome.seconds = time.perf_counter() - start
        connection.send(("outcome", outcome))


class _Worker:
    def __init__(self, context, target: str, options: dict[str, Any], log: Path):
        self.log = log
        self.connection, child = context.Pipe()
        self.process = context.Process(
            target=_serve, args=(child, target, options, str(log)), daemon=True
        )
        self.process.start()
        child.close()
        self.item: Any = None
        self.started = 0.0
        """When the item was given."""
        self.began: float | None = None
        """When the worker said it began the item (None before): its timeout's start."""
        self.stage = ""

    def give(self, item: Any) -> None:
        self.item, self.started, self.began, self.stage = item, time.monotonic(), None, "start"
        self.connection.send(item)

    def stop(self) -> None:
        self.connection.close()
        if self.process.is_alive():
            self.process.kill()
        self.process.join()

    def last_output(self) -> str:
        try:
            lines = self.log.read_text(errors="replace").strip().splitlines()
        except OSError:
            return ""
        return " | ".join(line.strip() for line in lines[-3:])

    def poll(self, timeout: float, startup_timeout: float = STARTUP_TIMEOUT) -> Outcome | None:
        """The item's outcome if it has one now (its own, a CRASH or a TIMEOUT: over
        `timeout` seconds since the worker began it, or `startup_timeout` since it was given
        without the worker beginning it)."""
        item_id = self.item.id
        try:
            while self.connection.poll():
                kind, value = self.connection.recv()
                if kind == "began":
                    self.began = time.monotonic()
                elif kind == "stage":
                    self.stage = value
                else:
                    return value
        except (EOFError, OSError):
            self.process.join(timeout=5)
            code = self.process.exitcode
            how = f"signal {-code}" if code and code < 0 else f"exit status {code}"
            detail = f"the process died ({how}) during {self.stage}: {self.last_output()}"
            return Outcome(item_id, "CRASH", detail, self.stage)
        now = time.monotonic()
        if self.began is None and now - self.started > startup_timeout:
            detail = f"the worker did not begin the item within {startup_timeout:g} s"
            return Outcome(item_id, "TIMEOUT", detail, self.stage)
        if self.began is not None and now - self.began > timeout:
            return Outcome(item_id, "TIMEOUT", f"over {timeout:g} s in {self.stage}", self.stage)
        return None


def progress_printer(total: int, noun: str) -> Callable[[int, Counter], None]:
    """A `progress` callback printing `done/total noun: KIND count, ...` to stderr."""

    def progress(done: int, counts: Counter) -> None:
        summary = ", ".join(f"{kind} {counts[kind]}" for kind in KINDS if counts[kind])
        print(f"  {done}/{total} {noun}: {summary}", file=sys.stderr, flush=True)

    return progress


def run_in_workers(
    items: Sequence[Any],
    target: str,
    *,
    jobs: int,
    timeout: float,
    options: dict[str, Any] | None = None,
    progress: Callable[[int, Counter], None] | None = None,
    startup_timeout: float = STARTUP_TIMEOUT,
) -> list[Outcome]:
    """Every item's outcome, in the order of `items` (each item has a unique `id`);
    `timeout` and `startup_timeout` as the module doc says."""
    context = mp.get_context("spawn")
    options = options or {}
    outcomes: dict[str, Outcome] = {}
    pending = list(reversed(items))
    with tempfile.TemporaryDirectory(prefix="accy-workers-") as logs:
        spawned = 0

        def worker() -> _Worker:
            nonlocal spawned
            spawned += 1
            return _Worker(context, target, options, Path(logs) / f"worker{spawned}.log")

        workers = [worker() for _ in range(max(1, min(jobs, len(items))))]
        last_report = time.monotonic()
        try:
            while len(outcomes) < len(items):
                for w in workers:
                    if w.item is None and pending:
                        w.give(pending.pop())
                busy = [w.connection for w in workers if w.item is not None]
                mp.connection.wait(busy, timeout=0.2)
                for i, w in enumerate(workers):
                    if w.item is None or (outcome := w.poll(timeout, startup_timeout)) is None:
                        continue
                    outcome.seconds = outcome.seconds or time.monotonic() - w.started
                    outcomes[w.item.id] = outcome
                    w.item = None
                    if outcome.kind == "TIMEOUT" or not w.process.is_alive():
                        w.stop()
                        workers[i] = worker()
                if progress and (
                    time.monotonic() - last_report > 10 or len(outcomes) == len(items)
                ):
                    progress(len(outcomes), Counter(o.kind for o in outcomes.values()))
                    last_report = time.monotonic()
        finally:
            for w in workers:
                w.stop()
    return [outcomes[item.id] for item in items]
