"""One program through accy, against the numpy reference: the watchdog workers' target.

`run_case(case, options, report_stage)` builds the case's program (generated from
`(seed, index)`, or given with its arguments by the shrinker), runs the reference (plain
and `compare.TRIALS` noisy runs), compiles it for the CPU target, runs it and compares;
with `options["cuda"]` a program that passed also exports for CUDA, its PTX goes through
`ptxas` and one call under the fake driver must follow the export's plan. The outcome:

    PASS      the results agree (and the CUDA export checks out)
    WRONG     a result differs beyond its tolerance (confirmed with `CONFIRM_TRIALS` more
              noisy runs), an argument was written, or the CUDA plan check failed
    INTERNAL  an `AccyError` whose message starts with "internal", or any other exception
    REFUSED   a clean `AccyError` diagnostic for a program the generator believed valid
    INVALID   the program did not build or verify (a generator bug, never accy's)

The watchdog adds CRASH (the worker died) and TIMEOUT (a hang). `signature(outcome)` is
what the shrinker keeps: the kind, the stage and the message with numbers, names and
types blanked.
"""

from __future__ import annotations

import re
import tempfile
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from watchdog import Outcome

from . import compare, generate, spec, values

TRIALS = 3
CONFIRM_TRIALS = 40
FAILURES = ("WRONG", "INTERNAL", "CRASH", "TIMEOUT")
"""The outcomes that fail a run (REFUSED and INVALID are reported, not failures)."""


@dataclass(frozen=True)
class Case:
    """A program to check: generated from `(seed, index)` when `program` is None."""

    id: str
    seed: int
    index: int
    program: spec.Program | None = None
    arguments: tuple[np.ndarray, ...] | None = None

    def materialize(self, ops: tuple[int, int] = (5, 25)) -> tuple[spec.Program, list]:
        program = self.program or generate.program(self.seed, self.index, ops=ops)
        if self.arguments is not None:
            return program, list(self.arguments)
        return program, values.arguments(program.params, self.seed, self.index)


def run_case(case: Case, options: dict[str, Any], report_stage) -> Outcome:
    """Check one case in this process (see the module doc)."""
    import accy

    stage = "generate"
    try:
        report_stage(stage)
        program, arguments = case.materialize(tuple(options.get("ops", (5, 25))))
        stage = "build"
        module = spec.build(program)
    except Exception as error:  # noqa: BLE001 - a generator bug
        return Outcome(case.id, "INVALID", _exception(error), stage)
    try:
        stage = "reference"
        report_stage(stage)
        expected = accy.reference.run(module, "f", *arguments)
        trials = compare.noisy_runs(module, "f", arguments, TRIALS)
        stage = "compile cpu"
        report_stage(stage)
        executable = accy.compile(module, target="cpu", threads=program.threads)
        stage = "run cpu"
        report_stage(stage)
        copies = [a.copy() for a in arguments]
        actual = executable["f"](*arguments)
    except accy.AccyError as error:
        kind = "INTERNAL" if error.message.startswith("internal") else "REFUSED"
        return Outcome(case.id, kind, error.diagnostic(), stage)
    except Exception as error:  # noqa: BLE001 - anything but a diagnostic is internal
        return Outcome(case.id, "INTERNAL", _exception(error), stage)
    for index, (before, after) in enumerate(zip(copies, arguments)):
        if before.tobytes() != after.tobytes():
            return Outcome(case.id, "WRONG", f"the call wrote argument #{index}", "run cpu")
    report_stage("compare")
    return against_reference(case.id, module, "f", arguments, actual, expected, trials,
                             options, report_stage)  # fmt: skip


def against_reference(case_id: str, module, function: str, arguments, actual, expected,
                      trials, options: dict, report_stage, note: str = "") -> Outcome:  # fmt: skip
    """`actual` against the reference's `expected` within the spread of the noisy `trials`
    (confirmed with more trials before it is WRONG, `note` appended), then the CUDA export
    when `options` ask for it."""
    if problem := compare.compare(actual, expected, trials):
        more = compare.noisy_runs(module, function, arguments, CONFIRM_TRIALS, first_seed=100)
        if problem := compare.compare(actual, expected, [*trials, *more]):
            return Outcome(case_id, "WRONG", problem + note, "compare")
    if options.get("cuda"):
        return _check_cuda(case_id, module, arguments, report_stage, function)
    return Outcome(case_id, "PASS", "", "compare")


def _check_cuda(case_id: str, module, arguments, report_stage, function: str = "f") -> Outcome:
    """The CUDA export: PTX that `ptxas` accepts and a fake-driver call that follows the
    plan (the fake runs no kernel: values were checked on the CPU)."""
    import accy
    from accy.runtime import plan_check

    stage = "cuda"
    report_stage(stage)
    with tempfile.TemporaryDirectory(prefix="accy-fuzz-programs-") as scratch:
        try:
            directory = accy.export(module, Path(scratch) / "export", target="cuda")
            problems = plan_check.ptxas_problems(directory)
            if not problems:
                result = plan_check.run_with_fake_driver(directory, arguments, function=function)
                problems = plan_check.plan_problems(directory, function, result)
        except accy.AccyError as error:
            kind = "INTERNAL" if error.message.startswith("internal") else "REFUSED"
            return Outcome(case_id, kind, f"cuda: {error.diagnostic()}", stage)
        except Exception as error:  # noqa: BLE001
            return Outcome(case_id, "INTERNAL", f"cuda: {_exception(error)}", stage)
    if problems:
        return Outcome(case_id, "WRONG", "cuda: " + "; ".join(problems), stage)
    return Outcome(case_id, "PASS", "", stage)


def _exception(error: BaseException) -> str:
    frames = traceback.extract_tb(error.__traceback__)[-3:]
    where = "; ".join(f"{Path(f.filename).name}:{f.lineno} {f.name}" for f in frames)
    return f"{type(error).__name__}: {error} (at {where})"


# ---------------------------------------------------------------------------------------
# Outcome classes
# ---------------------------------------------------------------------------------------

_BLANKS = (
    (re.compile(r"^[^:\s]*:\d+:\d+: "), ""),  # a location
    (re.compile(r"tensor<[^>]*>"), "T"),
    (re.compile(r"[%@^][\w.$-]+"), "%v"),
    (re.compile(r"\b(?:[if]\d+|bf16|ui\d+)\b"), "E"),
    (re.compile(r"0x[0-9a-f]+|-?\d+(?:\.\d+)?(?:e[-+]?\d+)?"), "N"),
    (re.compile(r"\[[N, ]*\]"), "[N]"),
)


def message_class(detail: str) -> str:
    """`detail` with locations, names, types and numbers blanked: what stays the same
    while a program shrinks."""
    text = detail.splitlines()[0] if detail else ""
    for pattern, blank in _BLANKS:
        text = pattern.sub(blank, text)
    return text.strip()[:200]


def signature(outcome: Outcome) -> tuple[str, str, str]:
    """(kind, stage, message class); a WRONG result keeps only its kind and stage (which
    result and how far move as the program shrinks), a CRASH its stage and signal."""
    if outcome.kind == "WRONG":
        cuda = outcome.detail.startswith("cuda")
        written = "wrote argument" in outcome.detail
        return ("WRONG", outcome.stage, "cuda" if cuda else "argument" if written else "value")
    if outcome.kind == "CRASH":
        signal = re.search(r"\((signal \d+|exit status -?\d+)\)", outcome.detail)
        return (
            "CRASH",
            outcome.stage,
            signal.group(1) if signal else message_class(outcome.detail),
        )
    if outcome.kind == "TIMEOUT":
        return ("TIMEOUT", outcome.stage, "")
    return (outcome.kind, outcome.stage, message_class(outcome.detail))
