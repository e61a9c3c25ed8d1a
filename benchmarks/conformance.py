"""StableHLO's own conformance programs through accy's CPU target: what compiles, what is right.

    python benchmarks/conformance.py [--suite testdata|interpret] [--filter S] [--jobs N]
                                     [--root DIR] [--timeout S] [--show KINDS] [--json FILE]
    python benchmarks/conformance.py --root tests/data/conformance --ratchet   # CI

Each case (`conformance_cases.py`: a `testdata` file or an `interpret` chunk, turned into a
program with inputs as arguments and the checked values returned) is imported with
`accy.import_stablehlo`, compiled for the CPU target, run, and compared with the check's
own rule. Every case ends in one class:

    PASS      every checked value satisfies its rule, or, in a case with a reduction (whose
              order StableHLO leaves open), a float value breaks it where the expectation
              itself is off the exact value and accy's is not (the case run by StableHLO's
              interpreter with every float type promoted to f64 and rounded back; listed
              apart: an expectation computed with one order of a sum)
    WRONG     accy ran it and a value breaks its rule (the first difference is shown)
    REFUSED   accy refused it with its own diagnostic (an `AccyError`; the text is shown)
    CRASH     anything else: a Python exception, or the worker process died (its signal
              and the last lines it printed); also a suite file the runner cannot read
    TIMEOUT   the case ran past `--timeout` seconds (the worker is killed and replaced)

Cases run in `--jobs` long-lived worker processes that import accy once, each case under
a watchdog. The report: totals, a table per op family and per element type, and the most
common refusals. `--ratchet [FILE]` (default: `ratchet.json` under `--root`) exits 1 on
any CRASH, WRONG or TIMEOUT, or when fewer cases pass than the file records;
`--update-ratchet` writes the new pass count into it. `--cuda` holds a case to PASS only
when it also exports for `target="cuda"` with PTX that `ptxas -arch=sm_90` accepts and
one call under the fake CUDA driver follows the export's plan (`accy.runtime.plan_check`;
the fake runs no kernel, so values are checked on the CPU); cases with dynamic shapes
(`testdata/dynamic/`, which the CUDA target refuses) are held to the CPU only. `--make-subset DIR` copies a fixed
sample of the suites (every `--every`-th `testdata` case by a hash of its id, files up to
256 KiB; every `interpret` file) into DIR, with the suite's LICENSE and README, for CI.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
import traceback
from collections import Counter, defaultdict
from dataclasses import asdict
from pathlib import Path

import conformance_cases as cc
from watchdog import KINDS, Outcome, progress_printer, run_in_workers

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_SUITE = ROOT.parent / "shared" / "conformance" / "stablehlo"
SUBSET_FILE_LIMIT = 256 * 1024
"""`--make-subset` leaves out larger files (a few FFT programs of megabytes)."""


# ---------------------------------------------------------------------------------------
# The worker: one case at a time, accy imported once
# ---------------------------------------------------------------------------------------


def run_case(case: cc.Case, options: dict, report_stage) -> Outcome:
    """Import, compile, run and check one case in this process (a worker's target)."""
    import numpy as np

    import accy
    from accy import dtypes
    from accy.mlir_bridge import UpstreamMlirError, eval_stablehlo

    if not case.function:
        return Outcome(case.id, "CRASH", f"the runner cannot read {case.source}", "collect")
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
            return Outcome(case.id, "CRASH", f"the oracle failed: {error}", stage)
        stage = "compile"
        report_stage(stage)
        plan = {"rows": list(case.rows)} if case.rows else {}
        executable = accy.compile(module, target="cpu", threads=options["threads"], **plan)
        stage = "run"
        report_stage(stage)
        outputs = executable[case.function](*inputs)
    except accy.AccyError as error:
        return Outcome(case.id, "REFUSED", error.diagnostic(), stage)
    except Exception as error:  # noqa: BLE001 - anything but a diagnostic is a crash
        frames = traceback.extract_tb(error.__traceback__)[-3:]
        where = "; ".join(f"{Path(f.filename).name}:{f.lineno} {f.name}" for f in frames)
        return Outcome(case.id, "CRASH", f"{type(error).__name__}: {error} (at {where})", stage)
    problems, closer = [], []
    for check in case.checks:
        actual = outputs[check.actual]
        reference = outputs[check.expected] if check.against_actual else expected[check.expected]
        problem = cc.compare(check, actual, reference)
        if problem and _closer_to_exact(case, check, actual, reference, inputs, eval_stablehlo):
            closer.append(f"result #{check.actual}: {problem}")
        elif problem:
            problems.append(f"result #{check.actual} ({check.rule}): {problem}")
    if problems:
        return Outcome(case.id, "WRONG", "; ".join(problems), "check")
    if options.get("cuda") and not case.rows:
        outcome = _check_cuda(case, module, inputs, report_stage)
    else:
        outcome = Outcome(case.id, "PASS")
    if closer and outcome.kind == "PASS":
        outcome.facts["closer_to_exact"] = "; ".join(closer)
    return outcome


_NOT_PROMOTABLE = re.compile(
    r"bitcast_convert|reduce_precision|custom_call @(?!check\.)|\bcomplex<"
)


_UNORDERED = re.compile(r"stablehlo\.(?:reduce|reduce_window|dot|dot_general|convolution)\b")
"""Ops whose order of accumulation StableHLO leaves to the implementation."""


def _closer_to_exact(case: cc.Case, check, actual, expected, inputs, eval_stablehlo) -> bool:
    """Whether a float result that breaks its rule against the expectation is right all
    the same: the case accumulates in an order StableHLO leaves open (`_UNORDERED`), and
    the result is within the rule of the exact value (the case evaluated by StableHLO's
    interpreter with every float type promoted to f64, rounded to the result's type)
    where the expectation is not. An expectation recorded with one order of a sum (a
    cumulative sum's sequential f32 chain) is one of the answers StableHLO allows, not
    the only one; accy's blocked f64 scans round the exact prefix instead."""
    import numpy as np

    from accy.mlir_bridge import UpstreamMlirError

    kind = np.asarray(actual).dtype
    if check.against_actual or not (kind.kind == "f" or kind.name == "bfloat16"):
        return False
    if _NOT_PROMOTABLE.search(case.program) or not _UNORDERED.search(case.program):
        return False
    promoted = re.sub(r"(?:bf16|f16|f32)\b", "f64", case.program)
    wide = [
        a.astype(np.float64) if a.dtype.kind == "f" or a.dtype.name == "bfloat16" else a
        for a in map(np.asarray, inputs)
    ]
    try:
        exact = np.asarray(eval_stablehlo(promoted, *wide)[check.actual])
    except UpstreamMlirError:
        return False
    with np.errstate(all="ignore"):
        rounded = exact.astype(kind)
    return (
        cc.compare(check, actual, rounded) is None
        and cc.compare(check, expected, rounded) is not None
    )


def _check_cuda(case: cc.Case, module, inputs, report_stage) -> Outcome:
    """`--cuda`: a case that passed on the CPU also exports for CUDA, with PTX that
    `ptxas` accepts, and one call under the fake driver follows the export's plan."""
    import tempfile

    import accy
    from accy.runtime import plan_check

    stage = "cuda"
    report_stage(stage)
    with tempfile.TemporaryDirectory(prefix="accy-conformance-") as scratch:
        try:
            directory = accy.export(module, Path(scratch) / "export", target="cuda")
            problems = plan_check.ptxas_problems(directory)
            if not problems:
                result = plan_check.run_with_fake_driver(directory, inputs, function=case.function)
                problems = plan_check.plan_problems(directory, case.function, result)
        except accy.AccyError as error:
            return Outcome(case.id, "REFUSED", f"cuda: {error.diagnostic()}", stage)
        except Exception as error:  # noqa: BLE001 - anything but a diagnostic is a crash
            return Outcome(case.id, "CRASH", f"cuda: {type(error).__name__}: {error}", stage)
    if problems:
        return Outcome(case.id, "WRONG", "cuda: " + "; ".join(problems), stage)
    return Outcome(case.id, "PASS")


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


def report(cases: list[cc.Case], results: list[Outcome], args) -> str:
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
    if md:
        out += ["", "| cases | diagnostic |", "|---|---|"]
        out += [f"| {n} | {t.replace('|', '/')} |" for t, n in refusals.most_common(args.refusals)]
    else:
        out += [f"{count:6}  {text}" for text, count in refusals.most_common(args.refusals)]
    closer = [r for r in results if "closer_to_exact" in r.facts]
    if closer:
        out += ["", f"passed closer to the exact value than the expectation ({len(closer)}):"]
        out += [f"  {r.id}: {r.facts['closer_to_exact']}" for r in closer]
    shown = {k.strip().upper() for k in args.show.split(",") if k.strip()}
    listed = [r for r in results if r.kind in shown]
    if listed:
        out += ["", "cases:"]
        out += [f"{r.kind:8} {r.id}: {r.detail}" for r in listed]
    return "\n".join(out)


def commit() -> str:
    """The checkout's commit, and whether files differ from it."""

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", "-C", str(ROOT), *args], capture_output=True, text=True, check=True
        ).stdout.strip()

    try:
        head = git("rev-parse", "--short", "HEAD")
        changed = git("status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return f"{head} (with uncommitted changes)" if changed else head


# ---------------------------------------------------------------------------------------
# Subset for CI
# ---------------------------------------------------------------------------------------


def make_subset(root: Path, target: Path, every: int) -> int:
    """Copy a fixed sample of the suites under `root` into `target`; the files copied."""
    cases = cc.collect(root, ("testdata",))
    chosen = {
        c.id
        for c in cc.sample(cases, every)
        if (root / f"{c.id}.mlir").stat().st_size <= SUBSET_FILE_LIMIT
    }
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
    if (root / "LICENSE").exists():
        shutil.copyfile(root / "LICENSE", target / "LICENSE")
    (target / "README.md").write_text(SUBSET_README.format(every=every, files=copied))
    return copied


SUBSET_README = """# A sample of StableHLO's conformance programs (for CI)

Made by `python benchmarks/conformance.py --make-subset tests/data/conformance --every {every}`
from the copy in `../shared/conformance/stablehlo` (github.com/openxla/stablehlo at commit
3c9301c116f97fbaf696959a0ede32712aec587b, Apache-2.0: see LICENSE), unchanged: every
`interpret/` file, and the `testdata/` files (`dynamic/` included) whose case id hashes to 0
modulo {every} (CRC-32), up to 256 KiB each; {files} files.

`ratchet.json` records how many of these cases pass; CI
(`python benchmarks/conformance.py --root tests/data/conformance --ratchet`) fails on any
CRASH, WRONG or TIMEOUT and on fewer passes. Raise it with `--update-ratchet` when more pass.
"""


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
    parser.add_argument(
        "--cuda",
        action="store_true",
        help="also export each CPU pass for CUDA: ptxas and a fake-driver run's plan check",
    )
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

    results = run_in_workers(
        cases,
        "conformance:run_case",
        jobs=args.jobs,
        timeout=args.timeout,
        options={"threads": args.threads, "cuda": args.cuda},
        progress=None if args.quiet else progress_printer(len(cases), "cases"),
    )
    print(report(cases, results, args))
    print(f"\n{len(cases)} cases in {time.monotonic() - start:.0f} s")
    if args.json:
        args.json.write_text(json.dumps([asdict(r) for r in results], indent=1))
    if args.ratchet is None:
        return 0
    return check_ratchet(
        results, Path(args.ratchet or args.root / "ratchet.json"), args.update_ratchet
    )


def check_ratchet(results: list[Outcome], path: Path, update: bool) -> int:
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
