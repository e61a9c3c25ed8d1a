"""StableHLO's own conformance programs through accy's CPU target: what compiles, what is right.

    python benchmarks/conformance.py [--suite testdata|interpret] [--filter S] [--jobs N]
                                     [--root DIR] [--timeout S] [--show KINDS] [--json FILE]
    python benchmarks/conformance.py --root tests/data/conformance --ratchet   # CI

Each case (`conformance_cases.py`: a `testdata` file or an `interpret` chunk, turned into a
program with inputs as arguments and the checked values returned) is imported with
`accy.import_stablehlo`, compiled for the CPU target, run, and compared with the check's
own rule. Every case ends in one class:

    PASS      every checked value satisfies its rule
    WRONG     accy ran it and a value breaks its rule (the first difference is shown)
    REFUSED   accy refused it with its own diagnostic (an `AccyError`; the text is shown)
    CRASH     anything else: a Python exception, or the worker process died (its signal
              and the last lines it printed); also a suite file the runner cannot read
    TIMEOUT   the case ran past `--timeout` seconds (the worker is killed and replaced)

Cases run in `--jobs` long-lived worker processes that import accy once, each case under
a watchdog. The report: totals, a table per op family and per element type, and the most
common refusals. `--ratchet [FILE]` (default: `ratchet.json` under `--root`) exits 1 on
any CRASH, WRONG or TIMEOUT, or when fewer cases pass than the file records;
`--update-ratchet` writes the new pass count into it. `--make-subset DIR` copies a fixed
sample of the suites (every `--every`-th case by a hash of its id; whole `interpret`
files) into DIR, with the suite's LICENSE, for CI.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass
from pathlib import Path

import conformance_cases as cc

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_SUITE = ROOT.parent / "shared" / "conformance" / "stablehlo"
KINDS = ("PASS", "WRONG", "REFUSED", "CRASH", "TIMEOUT")


@dataclass
class Result:
    id: str
    kind: str
    detail: str = ""
    stage: str = ""
    seconds: float = 0.0


# ---------------------------------------------------------------------------------------
# The worker: one case at a time, accy imported once
# ---------------------------------------------------------------------------------------


def run_case(case: cc.Case, threads: int, report_stage) -> Result:
    """Import, compile, run and check one case in this process."""
    import numpy as np

    import accy
    from accy import dtypes
    from accy.mlir_bridge import UpstreamMlirError, eval_stablehlo

    if not case.function:
        return Result(case.id, "CRASH", f"the runner cannot read {case.source}", "collect")
    stage = "import"
    try:
        report_stage(stage)
        module = accy.import_stablehlo(
            case.program, filename=case.source, line_offset=case.line_offset
        )
        stage = "oracle"
        report_stage(stage)
        try:
            inputs = _inputs(case, np, dtypes, module, eval_stablehlo)
            expected = (
                eval_stablehlo(case.oracle_program, *(inputs[i] for i in case.oracle_arguments))
                if case.oracle_program
                else []
            )
        except UpstreamMlirError as error:
            return Result(case.id, "CRASH", f"the oracle failed: {error}", stage)
        stage = "compile"
        report_stage(stage)
        options = {"rows": list(case.rows)} if case.rows else {}
        executable = accy.compile(module, target="cpu", threads=threads, **options)
        stage = "run"
        report_stage(stage)
        outputs = executable[case.function](*inputs)
    except accy.AccyError as error:
        return Result(case.id, "REFUSED", error.diagnostic(), stage)
    except Exception as error:  # noqa: BLE001 - anything but a diagnostic is a crash
        frames = traceback.extract_tb(error.__traceback__)[-3:]
        where = "; ".join(f"{Path(f.filename).name}:{f.lineno} {f.name}" for f in frames)
        return Result(case.id, "CRASH", f"{type(error).__name__}: {error} (at {where})", stage)
    problems = []
    for check in case.checks:
        actual = outputs[check.actual]
        reference = outputs[check.expected] if check.against_actual else expected[check.expected]
        problem = cc.compare(check, actual, reference)
        if problem:
            problems.append(f"result #{check.actual} ({check.rule}): {problem}")
    if problems:
        return Result(case.id, "WRONG", "; ".join(problems), "check")
    return Result(case.id, "PASS")


def _inputs(case, np, dtypes, module, eval_stablehlo) -> list:
    if case.inputs_program is not None:
        return eval_stablehlo(case.inputs_program)
    rng = np.random.default_rng(case.seed)
    arrays = []
    for spec in case.random_inputs:
        dtype = dtypes.NUMPY_DTYPES.get(spec.element)
        if dtype is None:  # accy imported it, so this is a runner bug
            raise ValueError(f"no numpy dtype for input element type {spec.element}")
        arrays.append(cc.random_array(spec, rng, dtype))
    return arrays


def _worker(connection, log_path: str, threads: int) -> None:
    """Serve cases from `connection` until it closes; C-level output goes to `log_path`."""
    log = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(log, 1)
    os.dup2(log, 2)
    sys.stdout = sys.stderr = open(log, "w", buffering=1, closefd=False)  # noqa: SIM115
    import accy  # noqa: F401  - once, before the first case

    while True:
        try:
            case = connection.recv()
        except EOFError:
            return
        start = time.perf_counter()
        result = run_case(case, threads, lambda stage: connection.send(("stage", stage)))
        result.seconds = time.perf_counter() - start
        connection.send(("result", result))


class _Worker:
    def __init__(self, context, threads: int, logs: Path, number: int):
        self.log = logs / f"worker{number}.log"
        self.connection, child = context.Pipe()
        self.process = context.Process(
            target=_worker, args=(child, str(self.log), threads), daemon=True
        )
        self.process.start()
        child.close()
        self.case: cc.Case | None = None
        self.started = 0.0
        self.stage = ""

    def give(self, case: cc.Case) -> None:
        self.case, self.started, self.stage = case, time.monotonic(), "start"
        self.connection.send(case)

    def stop(self) -> None:
        if self.process.is_alive():
            self.process.kill()
        self.process.join()
        self.connection.close()

    def last_output(self) -> str:
        try:
            lines = self.log.read_text(errors="replace").strip().splitlines()
        except OSError:
            return ""
        return " | ".join(line.strip() for line in lines[-3:])


def run_cases(
    cases: list[cc.Case], jobs: int, timeout: float, threads: int, progress: bool
) -> list[Result]:
    """Every case's result, in the order of `cases`."""
    context = mp.get_context("spawn")
    results: dict[str, Result] = {}
    pending = list(reversed(cases))
    with tempfile.TemporaryDirectory(prefix="accy-conformance-") as logs:
        workers = [_Worker(context, threads, Path(logs), i) for i in range(max(1, jobs))]
        spawned = len(workers)
        done, last_print = 0, time.monotonic()
        try:
            while len(results) < len(cases):
                for i, worker in enumerate(workers):
                    if worker.case is None and pending:
                        worker.give(pending.pop())
                busy = [w for w in workers if w.case is not None]
                ready = mp.connection.wait([w.connection for w in busy], timeout=0.2)
                for i, worker in enumerate(workers):
                    if worker.case is None:
                        continue
                    case = worker.case
                    finished: Result | None = None
                    if worker.connection in ready:
                        try:
                            while worker.connection.poll():
                                kind, value = worker.connection.recv()
                                if kind == "stage":
                                    worker.stage = value
                                else:
                                    finished = value
                        except (EOFError, OSError):
                            worker.process.join(timeout=5)
                            code = worker.process.exitcode
                            how = f"signal {-code}" if code and code < 0 else f"exit status {code}"
                            finished = Result(
                                case.id,
                                "CRASH",
                                f"the process died ({how}) during {worker.stage}: "
                                + worker.last_output(),
                                worker.stage,
                            )
                    elapsed = time.monotonic() - worker.started
                    if finished is None and elapsed > timeout:
                        finished = Result(
                            case.id,
                            "TIMEOUT",
                            f"over {timeout:g} s in {worker.stage}",
                            worker.stage,
                        )
                    if finished is None:
                        continue
                    finished.seconds = finished.seconds or elapsed
                    results[case.id] = finished
                    worker.case = None
                    done += 1
                    if finished.kind in ("CRASH", "TIMEOUT"):
                        worker.stop()
                        workers[i] = _Worker(context, threads, Path(logs), spawned)
                        spawned += 1
                if progress and (time.monotonic() - last_print > 10 or done == len(cases)):
                    counts = Counter(r.kind for r in results.values())
                    summary = ", ".join(f"{k} {counts[k]}" for k in KINDS if counts[k])
                    print(f"  {done}/{len(cases)} cases: {summary}", file=sys.stderr, flush=True)
                    last_print = time.monotonic()
        finally:
            for worker in workers:
                worker.connection.close()
                worker.process.kill()
                worker.process.join()
    return [results[c.id] for c in cases]


# ---------------------------------------------------------------------------------------
# Report
# ---------------------------------------------------------------------------------------

_LOCATION = re.compile(r"^[^:\s]+:\d+:\d+: ")


def refusal_key(detail: str) -> str:
    """A refusal's diagnostic without its location and its types (to count alike ones)."""
    text = _LOCATION.sub("", detail.splitlines()[0] if detail else "")
    while (start := text.find("tensor<")) >= 0:
        try:
            end = cc.balanced_end(text, start + len("tensor"))
        except cc.CaseError:
            break
        text = text[:start] + "TENSOR" + text[end:]
    text = re.sub(r"\(found [^)]*\)", "(found ...)", text)
    return text.replace("TENSOR", "tensor<...>")


def table(title: str, rows: dict[str, Counter], markdown: bool) -> str:
    header = [title, "cases", *(k.lower() for k in KINDS)]
    body = [
        [name, str(sum(c.values())), *(str(c[k]) for k in KINDS)]
        for name, c in sorted(rows.items())
    ]
    total = Counter()
    for c in rows.values():
        total.update(c)
    body.append(["all", str(sum(total.values())), *(str(total[k]) for k in KINDS)])
    if markdown:
        lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        lines += ["| " + " | ".join(r) + " |" for r in body]
        return "\n".join(lines)
    widths = [max(len(r[i]) for r in [header, *body]) for i in range(len(header))]
    fmt = "  ".join(f"{{:{'<' if i == 0 else '>'}{w}}}" for i, w in enumerate(widths))
    return "\n".join(fmt.format(*r) for r in [header, *body])


def report(cases: list[cc.Case], results: list[Result], args) -> str:
    by_suite: dict[str, Counter] = defaultdict(Counter)
    by_family: dict[str, dict[str, Counter]] = defaultdict(lambda: defaultdict(Counter))
    by_element: dict[str, Counter] = defaultdict(Counter)
    refusals: Counter = Counter()
    for case, result in zip(cases, results, strict=True):
        by_suite[case.suite][result.kind] += 1
        by_family[case.suite][case.family][result.kind] += 1
        by_element[case.element][result.kind] += 1
        if result.kind == "REFUSED":
            refusals[refusal_key(result.detail)] += 1
    md = args.markdown
    out = [table("suite", by_suite, md), ""]
    if not args.totals_only:
        for suite, rows in sorted(by_family.items()):
            out += [table(f"{suite} family", rows, md), ""]
    out += [table("element type", by_element, md), ""]
    out.append(f"most common refusals (of {sum(refusals.values())}):")
    for text, count in refusals.most_common(args.refusals):
        out.append(f"{count:6}  {text}")
    shown = {k.strip().upper() for k in args.show.split(",") if k.strip()}
    listed = [r for r in results if r.kind in shown]
    if listed:
        out += ["", "cases:"]
        out += [f"{r.kind:8} {r.id}: {r.detail}" for r in listed]
    return "\n".join(out)


def commit() -> str:
    try:
        return subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


# ---------------------------------------------------------------------------------------
# Subset for CI
# ---------------------------------------------------------------------------------------


def make_subset(root: Path, target: Path, every: int) -> int:
    """Copy a fixed sample of the suites under `root` into `target`; the files copied."""
    cases = cc.collect(root, ("testdata",))
    chosen = {c.id for c in cc.sample(cases, every)}
    copied = 0
    for case_id in sorted(chosen):
        destination = target / f"{case_id}.mlir"
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(root / f"{case_id}.mlir", destination)
        copied += 1
    for path in sorted((root / "interpret").rglob("*.mlir")):
        destination = target / path.relative_to(root)
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, destination)
        copied += 1
    for name in ("LICENSE", "README.md"):
        if (root / name).exists():
            shutil.copyfile(root / name, target / name)
    return copied


# ---------------------------------------------------------------------------------------
# Command line
# ---------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--root", type=Path, default=DEFAULT_SUITE, help="the suites' folder")
    parser.add_argument("--suite", choices=cc.SUITES, action="append", help="default: both")
    parser.add_argument("--filter", default="", help="only cases whose id contains this")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--threads", type=int, default=1, help="accy's CPU threads per case")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds per case")
    parser.add_argument("--show", default="WRONG,CRASH,TIMEOUT", help="kinds of case to list")
    parser.add_argument("--refusals", type=int, default=15, help="how many refusals to list")
    parser.add_argument("--totals-only", action="store_true", help="no per-family tables")
    parser.add_argument("--markdown", action="store_true", help="tables as Markdown")
    parser.add_argument("--json", type=Path, help="write every case's result here")
    parser.add_argument(
        "--ratchet",
        nargs="?",
        const="",
        type=str,
        help="fail on CRASH/WRONG/TIMEOUT and on fewer passes than FILE records",
    )
    parser.add_argument("--update-ratchet", action="store_true", help="record the pass count")
    parser.add_argument("--make-subset", type=Path, help="copy a CI sample of --root here")
    parser.add_argument("--every", type=int, default=8, help="--make-subset: 1 in N testdata")
    parser.add_argument("--quiet", action="store_true", help="no progress lines")
    args = parser.parse_args(argv)

    if not (args.root / "testdata").is_dir() and not (args.root / "interpret").is_dir():
        print(f"error: {args.root} holds no testdata/ or interpret/ folder", file=sys.stderr)
        return 1
    if args.make_subset:
        count = make_subset(args.root, args.make_subset, args.every)
        print(f"copied {count} files into {args.make_subset}")
        return 0
    suites = tuple(args.suite or cc.SUITES)
    cases = [c for c in cc.collect(args.root, suites) if args.filter in c.id]
    if not cases:
        print("error: no cases match", file=sys.stderr)
        return 1
    print(
        f"{len(cases)} cases from {args.root} ({', '.join(suites)}), {args.jobs} worker(s), "
        f"accy at commit {commit()}, {time.strftime('%Y-%m-%d')}",
        flush=True,
    )
    start = time.monotonic()
    results = run_cases(cases, args.jobs, args.timeout, args.threads, not args.quiet)
    print(report(cases, results, args))
    print(f"\n{len(cases)} cases in {time.monotonic() - start:.0f} s")
    if args.json:
        args.json.write_text(json.dumps([asdict(r) for r in results], indent=1))
    if args.ratchet is None:
        return 0
    return check_ratchet(
        results, Path(args.ratchet or args.root / "ratchet.json"), args.update_ratchet
    )


def check_ratchet(results: list[Result], path: Path, update: bool) -> int:
    counts = Counter(r.kind for r in results)
    recorded = json.loads(path.read_text()) if path.exists() else {"pass": 0}
    failures = []
    for kind in ("CRASH", "WRONG", "TIMEOUT"):
        if counts[kind]:
            failures.append(f"{counts[kind]} {kind}")
    if counts["PASS"] < recorded["pass"]:
        failures.append(f"{counts['PASS']} PASS, below the {recorded['pass']} that {path} records")
    if update and not failures:
        path.write_text(
            json.dumps({"pass": counts["PASS"], "cases": len(results)}, indent=1) + "\n"
        )
        print(f"ratchet: {path} now records {counts['PASS']} passing cases")
    elif counts["PASS"] > recorded["pass"]:
        print(
            f"ratchet: {counts['PASS']} pass, {path} records {recorded['pass']}: raise it with --update-ratchet"
        )
    if failures:
        print("ratchet failed: " + ", ".join(failures))
        return 1
    print(
        f"ratchet held: {counts['PASS']} pass (at least {recorded['pass']}), no crash, wrong or timeout"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
