"""Differential fuzzing with generated programs: accy's CPU target against its numpy
reference (and, with `--jax`, accy against XLA on random JAX functions).

    python benchmarks/fuzz_programs.py --programs 2000 --seed 0 [--jobs 1] [--jax] [--cuda]
                                       [--keep DIR] [--shrink] [--timeout 300]

Each program is generated from `(seed, index)` (`program_fuzz/generate.py`: the whole op
set and the planner's fusion boundaries; with `--jax`, `program_fuzz/jax_mode.py`) and
checked in a watchdog worker (`watchdog.py`), so a crash or a hang is classified, not
fatal:

    PASS      the results agree within tolerances measured per element (`program_fuzz/compare.py`)
    WRONG     a result differs (confirmed with more noisy reference runs)
    INTERNAL  an `AccyError` whose message starts with "internal", or any other exception
    CRASH     the worker process died
    HANG      the worker ran past `--timeout` (only a hang guard: generous)
    REFUSED   a clean diagnostic for a program the generator believed valid (a coverage
              gap: counted per message)
    INVALID   the generator made a program that does not verify (a generator bug)
JAX mode adds XLA_DIFFERS (accy disagrees with XLA and agrees with StableHLO's reference
interpreter: recorded, never counted as accy wrong), EXACT (accy disagrees with both in a
program that accumulates in an order StableHLO leaves open, and agrees with the
interpreter's run of it in f64: a sum accy rounds from its exact value, which the f32
chain overflowed) and UNDECIDED (accy and XLA disagree and the interpreter cannot say
who is right: it cannot parse JAX's `chlo` ops, or differs from both; reported with
whether accy agrees with its numpy reference; or the interpreter is off elements
accy and XLA agree on, so judges nothing in that result). A program XLA's CPU does not
implement (`UNIMPLEMENTED`) is checked against accy's reference alone.

`--cuda` also exports every program that passed for CUDA: its PTX through `ptxas` (the
CUDA toolkit's, /usr/local/cuda/bin; skipped when absent) and one call under the fake
driver checked against the export's plan. `--shrink` reduces the first `--shrink-each`
programs of each class of failure, refusal and disagreement (same outcome, stage and
message class) to minimal programs (`program_fuzz/shrink.py`), printed as accy dialect
text (and JAX source) unless an earlier one of the class had the same ops. `--keep DIR`
writes each of them there (`ID.mlir`, `ID.npz` arguments, `ID.txt` outcome; `ID.min.*`
shrunk; `ID.py` in JAX mode). Exit status 1 on any WRONG, INTERNAL, CRASH or HANG.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path

from program_fuzz import check, shrink, spec, values
from watchdog import Outcome, run_in_workers

from accy.runtime import plan_check

FAILING = check.FAILURES
ORDER = ("PASS", "WRONG", "INTERNAL", "CRASH", "TIMEOUT", "UNDECIDED", "XLA_DIFFERS", "EXACT",
         "REFUSED", "INVALID")  # fmt: skip
SHOWN = {"TIMEOUT": "HANG"}


def shown(kind: str) -> str:
    return SHOWN.get(kind, kind)


def progress(total: int) -> Callable[[int, Counter], None]:
    def report(done: int, counts: Counter) -> None:
        summary = ", ".join(f"{shown(k)} {counts[k]}" for k in ORDER if counts[k])
        print(f"  {done}/{total} programs: {summary}", file=sys.stderr, flush=True)

    return report


class BuilderMode:
    """Programs built with accy.Builder, checked against the numpy reference."""

    target = "program_fuzz.check:run_case"

    def __init__(self, args: argparse.Namespace):
        self.options = {"cuda": args.cuda, "ops": tuple(args.ops)}

    def cases(self, indices: Sequence[int], seed: int) -> list[check.Case]:
        return [check.Case(f"program{i}", seed, i) for i in indices]

    def materialize(self, case: check.Case):
        return case.materialize(self.options["ops"])

    def op_names(self, program) -> list[str]:
        return program.op_names()

    def shrink_case(self, case_id: str, program, arguments) -> check.Case:
        return check.Case(case_id, 0, 0, program, tuple(arguments))

    def candidates(self, program, arguments):
        return shrink.candidates(program, arguments)

    def write(self, folder: Path, name: str, program, arguments) -> list[str]:
        (folder / f"{name}.mlir").write_text(spec.text(program))
        values.save(folder / f"{name}.npz", arguments)
        return [f"{name}.mlir", f"{name}.npz"]

    def show(self, program) -> str:
        return spec.text(program)


def run(mode, cases: Sequence, args: argparse.Namespace, quiet: bool) -> list[Outcome]:
    return run_in_workers(
        cases,
        mode.target,
        jobs=args.jobs,
        timeout=args.timeout,
        options=mode.options,
        progress=None if quiet else progress(len(cases)),
    )


def shrink_failure(mode, case, outcome: Outcome, args: argparse.Namespace):
    """The smallest program found that fails as `outcome` did, with its arguments."""
    program, arguments = mode.materialize(case)
    target = check.signature(outcome)
    counter = [0]

    def failing(batch: list) -> list[bool]:
        made = []
        for p, a in batch:
            counter[0] += 1
            made.append(mode.shrink_case(f"{case.id}.try{counter[0]}", p, a))
        outcomes = run(mode, made, args, quiet=True)
        return [check.signature(o) == target for o in outcomes]

    return shrink.shrink(program, arguments, failing, rounds=args.shrink_rounds,
                         batch=max(4, 4 * args.jobs), candidates=mode.candidates)  # fmt: skip


def summary(mode, cases, outcomes: list[Outcome], seconds: float, seed: int) -> None:
    counts = Counter(o.kind for o in outcomes)
    print(f"{len(outcomes)} programs (seed {seed}) in {seconds:.0f} s: "
          + ", ".join(f"{shown(k)} {counts[k]}" for k in ORDER if counts[k]))  # fmt: skip
    refusals = Counter(check.message_class(o.detail) for o in outcomes if o.kind == "REFUSED")
    if refusals:
        print("refusals by message:")
        for message, n in refusals.most_common():
            print(f"  {n:5d}  {message}")
    failed = [(c, o) for c, o in zip(cases, outcomes) if o.kind in FAILING]
    if failed:
        every, bad = Counter(), Counter()
        for case, outcome in zip(cases, outcomes):
            if outcome.kind == "INVALID":
                continue
            names = set(mode.op_names(mode.materialize(case)[0]))
            every.update(names)
            if outcome.kind in FAILING:
                bad.update(names)
        print("ops in failing programs (failing / all programs with the op):")
        for name, n in sorted(bad.items(), key=lambda kv: (-kv[1] / every[kv[0]], kv[0])):
            print(f"  {name:24s} {n:4d} / {every[name]}")
    classes = Counter(check.signature(o) for o in outcomes if o.kind not in ("PASS", "REFUSED"))
    if classes:
        print("classes of failures and disagreements:")
        for (kind, stage, message), n in classes.most_common():
            print(f"  {n:5d}  {shown(kind)} in {stage}: {message}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--programs", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--start", type=int, default=0, help="the first program's index")
    parser.add_argument("--indices", type=lambda text: [int(i) for i in text.split(",")],
                        help="check these programs of the seed (comma-separated) instead")  # fmt: skip
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds per program")
    parser.add_argument("--ops", type=int, nargs=2, default=(5, 25), metavar=("MIN", "MAX"),
                        help="nodes per generated program")  # fmt: skip
    parser.add_argument("--jax", action="store_true", help="random JAX functions against XLA")
    parser.add_argument("--cuda", action="store_true", help="also check the CUDA export")
    parser.add_argument("--keep", type=Path, help="write every failure (and its shrunk form) here")
    parser.add_argument("--shrink", action="store_true", help="shrink each failure class")
    parser.add_argument("--shrink-rounds", type=int, default=60)
    parser.add_argument("--shrink-each", type=int, default=3,
                        help="shrink this many failures of each class (a WRONG class may "
                             "hold several bugs: minimal programs with new ops are shown)")  # fmt: skip
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args(argv)
    if args.cuda and not Path(plan_check.PTXAS).exists():
        print("warning: no ptxas; --cuda checks skipped", file=sys.stderr)
        args.cuda = False
    if args.jax:
        from program_fuzz import jax_mode

        mode = jax_mode.JaxMode(args)
    else:
        mode = BuilderMode(args)
    cases = mode.cases(args.indices or range(args.start, args.start + args.programs), args.seed)
    start = time.monotonic()
    outcomes = run(mode, cases, args, args.quiet)
    summary(mode, cases, outcomes, time.monotonic() - start, args.seed)
    shrunk = Counter()
    minimal: dict[tuple, str] = {}
    for case, outcome in zip(cases, outcomes):
        if outcome.kind == "PASS" or (
            outcome.kind in ("REFUSED", "XLA_DIFFERS") and not (args.keep or args.shrink)
        ):
            continue
        print(f"{shown(outcome.kind)} {case.id} in {outcome.stage}: {outcome.detail[:400]}")
        if outcome.kind == "INVALID":  # the generator failed: there is no program to keep
            continue
        signature = check.signature(outcome)
        small = None
        if args.shrink and shrunk[signature] < args.shrink_each:
            shrunk[signature] += 1
            small = shrink_failure(mode, case, outcome, args)
            ops = (signature, tuple(sorted(mode.op_names(small[0]))))
            if ops in minimal:
                print(f"  shrunk to the ops of {minimal[ops]}'s minimal program")
            else:
                minimal[ops] = case.id
                print(f"  shrunk to:\n{_indent(mode.show(small[0]))}")
        if args.keep:
            _keep(mode, args.keep, case, outcome, small)
    return 1 if any(o.kind in FAILING for o in outcomes) else 0


def _indent(text: str) -> str:
    return "\n".join("    " + line for line in text.splitlines())


def _keep(mode, folder: Path, case, outcome: Outcome, small) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    program, arguments = mode.materialize(case)
    written = mode.write(folder, case.id, program, arguments)
    if small is not None:
        written += mode.write(folder, f"{case.id}.min", *small)
    (folder / f"{case.id}.txt").write_text(
        f"{shown(outcome.kind)} in {outcome.stage}\n{outcome.detail}\n"
        f"signature: {check.signature(outcome)}\nfiles: {', '.join(written)}\n"
    )


if __name__ == "__main__":
    sys.exit(main())
