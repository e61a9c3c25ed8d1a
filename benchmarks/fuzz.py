"""Mutation fuzzing: accy must answer every input with a result or a diagnostic, never a
traceback, a dead process or a hang.

    python benchmarks/fuzz.py [--mutants 2000] [--seed 0] [--jobs N] [--timeout 60]
                              [--keep DIR] [--show]

Seeds: the `.mlir` programs of `examples/`, every `// -----` chunk of `lit_tests/` (the accy dialect and StableHLO), the
StableHLO programs of `tests/data/stablehlo`, the zoo (`benchmarks/zoo/data`) and the
conformance cases of `tests/data/conformance` (as the runner turns them into programs);
`ACCEPTED_SHARE` of the mutants come from seeds accy accepts. A mutant is a seed with one to three edits drawn from `MUTATIONS`: lines deleted,
duplicated or swapped, tokens deleted or duplicated, numbers, element types and op names
replaced by others of their kind, characters flipped, the text truncated. Each runs in a
watchdog worker (`benchmarks/watchdog.py`) through `accy.import_stablehlo` (text with
`stablehlo.` ops) or `accy.parse`, `accy.prepare`, the CUDA lowering, `accy.compile` for
the CPU and, when every argument is small and static and no `accy.while` may run forever,
one call on random arguments;
then through `accy-opt` (`OPT_PIPELINES`: the default pipeline, `accy-plan-arena`,
`accy-lower` for both targets), which must exit 0, or 1 with a diagnostic.

Outcomes: PASS (ran, or refused with an `AccyError`), CRASH (any other exception, or the
process died), TIMEOUT. `--keep DIR` writes each CRASH and TIMEOUT mutant there, with what
happened, to reproduce it. The mutants depend only on `--seed` and `--mutants`: a run is
repeatable. Exit status 1 when any mutant crashed or hung.
"""

from __future__ import annotations

import argparse
import random
import re
import sys
import time
import traceback
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from watchdog import Outcome, progress_printer, run_in_workers

ROOT = Path(__file__).resolve().parents[1]
SMALL = 1 << 16
"""Mutants run on random arguments only when every argument and result has at most this
many elements (a mutated dim can ask for terabytes)."""


@dataclass(frozen=True)
class Mutant:
    id: str
    seed_name: str
    text: str
    edits: tuple[str, ...]


# ---------------------------------------------------------------------------------------
# Seeds
# ---------------------------------------------------------------------------------------


def split_chunks(text: str) -> list[str]:
    return [c for c in re.split(r"^// -----\s*$", text, flags=re.MULTILINE) if "func.func" in c]


def seeds() -> list[tuple[str, str]]:
    """`(name, text)` of every seed, in a fixed order."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import conformance_cases

    found = []
    for path in sorted((ROOT / "examples").glob("*.mlir")):
        found.append((str(path.relative_to(ROOT)), path.read_text()))
    for path in sorted((ROOT / "lit_tests").rglob("*.mlir")):
        for i, chunk in enumerate(split_chunks(path.read_text())):
            found.append((f"{path.relative_to(ROOT)}#{i}", chunk))
    for folder in (ROOT / "tests" / "data" / "stablehlo", ROOT / "benchmarks" / "zoo" / "data"):
        for path in sorted(folder.glob("*.stablehlo.mlir")):
            found.append((str(path.relative_to(ROOT)), path.read_text()))
    for case in conformance_cases.collect(ROOT / "tests" / "data" / "conformance"):
        if case.function and len(case.program) < 20000:
            found.append((case.id, case.program))
    return found


# ---------------------------------------------------------------------------------------
# Mutations
# ---------------------------------------------------------------------------------------

NUMBERS = ["0", "1", "-1", "2", "3", "7", "64", "1000", "65536", "2147483648",
           "9223372036854775808", "99999999999999999999", "1.5", "-0.0", "1e39", "nan"]  # fmt: skip
TYPES = ["f32", "f16", "bf16", "f64", "i1", "i8", "i32", "i64", "ui32", "index",
         "complex<f32>", "i4", "f8E4M3FN", "none"]  # fmt: skip
_NUMBER = re.compile(r"(?<![\w%#@.])-?\d+(?:\.\d+)?(?:e-?\d+)?(?=x|[^\w.]|$)")
"""A number, a dim of a shape (`4` of `tensor<4x8xf32>`) included."""
_TYPE = re.compile(r"(?<=[x<(:\s,])(?:f16|bf16|f32|f64|i1|i8|i16|i32|i64|ui8|ui32|index)(?!\w)")
"""An element type, in a shape (`f32` of `tensor<4xf32>`) or alone."""
_OP = re.compile(r"\b(?:accy|stablehlo)\.[a-z_]+\b")
_TOKEN = re.compile(r"\S+")


def _replace_match(rng: random.Random, text: str, pattern: re.Pattern, choices) -> str:
    matches = list(pattern.finditer(text))
    if not matches:
        return text
    m = rng.choice(matches)
    replacement = rng.choice(choices(m.group(0)))
    return text[: m.start()] + replacement + text[m.end() :]


def mutate(rng: random.Random, text: str, op_names: list[str]) -> tuple[str, str]:
    """One edit of `text`: the new text and a word for the edit."""
    lines = text.split("\n")
    kind = rng.choice(MUTATIONS)
    if kind in ("delete line", "duplicate line", "swap lines") and len(lines) > 1:
        i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
        if kind == "delete line":
            del lines[i]
        elif kind == "duplicate line":
            lines.insert(j, lines[i])
        else:
            lines[i], lines[j] = lines[j], lines[i]
        return "\n".join(lines), kind
    if kind in ("delete token", "duplicate token"):
        tokens = list(_TOKEN.finditer(text))
        if tokens:
            t = rng.choice(tokens)
            middle = "" if kind == "delete token" else t.group(0) + " " + t.group(0)
            return text[: t.start()] + middle + text[t.end() :], kind
    if kind == "number":
        return _replace_match(rng, text, _NUMBER, lambda _: NUMBERS), kind
    if kind == "element type":
        return _replace_match(rng, text, _TYPE, lambda _: TYPES), kind
    if kind == "op name":
        same = lambda name: [n for n in op_names if n.split(".")[0] == name.split(".")[0]]
        return _replace_match(rng, text, _OP, same), kind
    if kind == "flip character" and text:
        i = rng.randrange(len(text))
        character = rng.choice(['"', "{", "}", "(", ")", "<", ">", ":", ",", "%", "#", "$",
                                "\\", "\x00", "\xff", "é", " ", "\n", "x", "0"])  # fmt: skip
        return text[:i] + character + text[i + 1 :], kind
    if kind == "truncate" and text:
        return text[: rng.randrange(len(text))], kind
    return text, "none"


MUTATIONS = ("delete line", "duplicate line", "swap lines", "delete token", "duplicate token",
             "number", "number", "element type", "op name", "op name", "flip character",
             "truncate")  # fmt: skip
"""The edits, weighted by repetition (numbers and op names reach the verifiers and the
planner with well-formed text more often than the rest)."""


ACCEPTED_SHARE = 0.8
"""The share of mutants made from seeds accy accepts (the rest from seeds it refuses):
edits of a refused program mostly meet the same refusal again."""


def accepted(text: str) -> bool:
    """Whether accy imports (or parses) `text` without a diagnostic."""
    import accy

    try:
        if "stablehlo." in text:
            accy.import_stablehlo(text)
        else:
            accy.parse(text)
    except accy.AccyError:
        return False
    return True


def mutants(count: int, seed: int) -> list[Mutant]:
    rng = random.Random(seed)
    corpus = seeds()
    op_names = sorted({m.group(0) for _, text in corpus for m in _OP.finditer(text)})
    good = [s for s in corpus if accepted(s[1])]
    bad = [s for s in corpus if s not in good]
    made = []
    for n in range(count):
        pool = good if rng.random() < ACCEPTED_SHARE or not bad else bad
        name, text = pool[rng.randrange(len(pool))]
        edits = []
        for _ in range(rng.choice((1, 1, 2, 3))):
            text, edit = mutate(rng, text, op_names)
            edits.append(edit)
        made.append(Mutant(f"mutant{n}", name, text, tuple(edits)))
    return made


# ---------------------------------------------------------------------------------------
# One mutant, in a worker
# ---------------------------------------------------------------------------------------


def try_mutant(mutant: Mutant, options: dict, report_stage) -> Outcome:
    """Everything a user could do with the text; PASS unless something other than a
    diagnostic comes out."""
    import numpy as np
    from accy.passes.lower.lower_pass import lower_module

    import accy

    stage = "import"
    try:
        report_stage(stage)
        if "stablehlo." in mutant.text:
            module = accy.import_stablehlo(mutant.text, filename="mutant.mlir")
        else:
            module = accy.parse(mutant.text, filename="mutant.mlir")
        stage = "prepare"
        report_stage(stage)
        preparation = accy.prepare(module, target="cuda")
        stage = "lower cuda"
        report_stage(stage)
        lower_module(module.clone(), preparation.manager, "cuda")
        stage = "compile cpu"
        report_stage(stage)
        executable = accy.compile(module, target="cpu", threads=1)
        stage = "run"
        report_stage(stage)
        rng = np.random.default_rng(0)
        for name, function in executable.functions.items():
            arguments = _arguments(function.signature, rng)
            if arguments is not None and not _loops_on_data(module, name):
                executable[name](*arguments)
    except accy.AccyError:
        answer = "refused"
    except Exception as error:  # noqa: BLE001 - anything but a diagnostic is a finding
        return _crash(mutant, error, stage)
    else:
        answer = "ran"
    api_stage = stage
    for pipeline in OPT_PIPELINES:
        stage = f"accy-opt {pipeline or '(parse and print)'}"
        report_stage(stage)
        try:
            problem = _try_opt(mutant.text, pipeline)
        except Exception as error:  # noqa: BLE001
            return _crash(mutant, error, stage)
        if problem is not None:
            return Outcome(mutant.id, "CRASH", problem, stage)
    return Outcome(mutant.id, "PASS", answer, api_stage)


OPT_PIPELINES = ("", "accy-plan-arena", "accy-lower{target=cpu}", "accy-lower{target=cuda}")
"""The `accy-opt` runs of every mutant (in the worker, through `accy.cli.opt.main`)."""


def _try_opt(text: str, pipeline: str) -> str | None:
    """Run `accy-opt` on `text` with `-p pipeline`; what went wrong, or None when it
    answered with output (status 0) or one diagnostic (status 1)."""
    import contextlib
    import io
    import tempfile

    from accy.cli.opt import main as accy_opt

    with tempfile.TemporaryDirectory(prefix="accy-fuzz-") as scratch:
        path = Path(scratch) / "mutant.mlir"
        path.write_text(text)
        argv = [str(path), "-o", str(Path(scratch) / "out.mlir")]
        if pipeline:
            argv += ["-p", pipeline]
        if "stablehlo." in text:
            argv.append("--import-stablehlo")
        stderr = io.StringIO()
        status = 0
        with contextlib.redirect_stderr(stderr), contextlib.redirect_stdout(io.StringIO()):
            try:
                accy_opt(argv)
            except SystemExit as exit_:
                status = exit_.code if isinstance(exit_.code, int) else 1
    message = stderr.getvalue()
    if "Traceback" in message or status not in (0, 1):
        return f"accy-opt exited {status}: {message[-300:]}"
    if status == 1 and "error: " not in message:
        return f"accy-opt exited 1 without a diagnostic: {message[-300:]}"
    return None


def _crash(mutant: Mutant, error: Exception, stage: str) -> Outcome:
    frames = traceback.extract_tb(error.__traceback__)[-3:]
    where = "; ".join(f"{Path(f.filename).name}:{f.lineno} {f.name}" for f in frames)
    return Outcome(mutant.id, "CRASH", f"{type(error).__name__}: {error} (at {where})", stage)


def _loops_on_data(module, name: str) -> bool:
    """Whether the function `name` of `module` holds an `accy.while`: whether one stops
    depends on its arguments (halving until below a tolerance never ends for a negative
    one), so such functions are compiled but not run on random arguments."""
    from accy.dialects import accy as ops
    from xdsl.dialects import func

    for function in module.ops:
        if isinstance(function, func.FuncOp) and function.sym_name.data == name:
            return any(isinstance(op, ops.WhileOp) for op in function.walk())
    return False


def _arguments(signature, rng) -> list | None:
    """Random arguments for a function (its `CpuSignature`) whose parameters and results
    are all small and static, else None."""
    import numpy as np

    specs = [*signature.params, *signature.results]
    if not signature.static or any(int(np.prod(s.shape, dtype=np.int64)) > SMALL for s in specs):
        return None
    return [(rng.standard_normal(p.shape) * 3).astype(p.dtype) for p in signature.params]


# ---------------------------------------------------------------------------------------
# Command line
# ---------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mutants", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per mutant")
    parser.add_argument("--keep", type=Path, help="write crashing and hanging mutants here")
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args(argv)
    made = mutants(args.mutants, args.seed)
    start = time.monotonic()

    outcomes = run_in_workers(
        made,
        "fuzz:try_mutant",
        jobs=args.jobs,
        timeout=args.timeout,
        progress=None if args.quiet else progress_printer(len(made), "mutants"),
    )
    counts = Counter(o.kind for o in outcomes)
    stages = Counter((o.detail, o.stage) for o in outcomes if o.kind == "PASS")
    refused = sum(v for (detail, _), v in stages.items() if detail == "refused")
    print(
        f"{len(made)} mutants (seed {args.seed}) in {time.monotonic() - start:.0f} s: "
        f"{counts['PASS']} answered ({refused} refused with a diagnostic, "
        f"{counts['PASS'] - refused} ran), {counts['CRASH']} crashed, {counts['TIMEOUT']} hung"
    )
    reached = Counter(stage for (detail, stage), v in stages.items() for _ in range(v))
    print(
        "the Python API refused or finished at: "
        + ", ".join(f"{s} {n}" for s, n in reached.most_common())
    )
    bad = [(m, o) for m, o in zip(made, outcomes, strict=True) if o.kind != "PASS"]
    for mutant, outcome in bad:
        print(f"{outcome.kind} {mutant.id} (from {mutant.seed_name}, {', '.join(mutant.edits)}) "
              f"in {outcome.stage}: {outcome.detail[:300]}")  # fmt: skip
        if args.keep:
            args.keep.mkdir(parents=True, exist_ok=True)
            (args.keep / f"{mutant.id}.mlir").write_text(mutant.text)
            (args.keep / f"{mutant.id}.txt").write_text(
                f"{outcome.kind} in {outcome.stage}\nfrom {mutant.seed_name}, edits "
                f"{', '.join(mutant.edits)}\n{outcome.detail}\n"
            )
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
