"""`--verify-diagnostics`: check the errors a chunk produces against the errors its text
expects, as `mlir-opt --verify-diagnostics` does.

An expectation is a comment holding `expected-error`, an optional designator, and the
message text (a substring of the diagnostic's message) in double braces:

    // expected-error {{message}}          on this line
    // expected-error @+1 {{message}}      N lines below (@-N: above)
    // expected-error @below {{message}}   the next line that is not an expectation
    // expected-error @above {{message}}   the previous line that is not an expectation
    // expected-error @unknown {{message}} a diagnostic with no location in this file

Every produced error must be expected and every expectation produced; otherwise each
mismatch is reported as a located error and the run fails.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from xdsl.dialects.builtin import FileLineColLoc, IntAttr, NameLoc, StringAttr

from accy.diagnostics import AccyError

_EXPECTATION = re.compile(
    r"expected-(?P<kind>[a-z]+)\s*(?:@\s*(?P<where>[+-]\d+|above|below|unknown))?"
    r"\s*\{\{(?P<message>.*?)\}\}"
)

UNKNOWN_LINE = 0


def _location(filename: str, line: int, column: int) -> FileLineColLoc:
    return FileLineColLoc(StringAttr(filename), IntAttr(line), IntAttr(column))


@dataclass(frozen=True)
class Expectation:
    """An expected error: its message, the line it names (UNKNOWN_LINE for @unknown),
    and where the annotation itself sits (line and column, 1-based)."""

    message: str
    line: int
    annotation_line: int
    annotation_column: int


def parse_expectations(text: str, filename: str, line_offset: int = 0) -> list[Expectation]:
    """The expectations in `text` (a chunk starting at line `line_offset + 1`)."""
    lines = text.split("\n")
    annotated = set()
    found: list[tuple[int, int, str, str | None, str]] = []
    for index, line in enumerate(lines):
        comment = line.find("//")
        if comment < 0:
            continue
        for match in _EXPECTATION.finditer(line, comment):
            annotated.add(index)
            found.append(
                (index, match.start() + 1, match["kind"], match["where"], match["message"])
            )
    expectations = []
    for index, column, kind, where, message in found:
        absolute = line_offset + index + 1
        if kind != "error":
            raise AccyError(
                f"expected-{kind} is not supported (accy reports errors only)",
                _location(filename, absolute, column),
            )
        if where is None:
            target = index
        elif where == "unknown":
            target = None
        elif where in ("above", "below"):
            step = -1 if where == "above" else 1
            target = index + step
            while 0 <= target < len(lines) and target in annotated:
                target += step
        else:
            target = index + int(where)
        if target is not None and not 0 <= target < len(lines):
            raise AccyError(
                f"expected-error @{where} names a line outside the input",
                _location(filename, absolute, column),
            )
        line = UNKNOWN_LINE if target is None else line_offset + target + 1
        expectations.append(Expectation(message, line, absolute, column))
    return expectations


def diagnostic_line(error: AccyError, filename: str) -> int:
    """The input line an error is located at, or UNKNOWN_LINE."""
    location = error.location
    if isinstance(location, NameLoc):
        location = location.child_loc
    if isinstance(location, FileLineColLoc) and location.filename.data == filename:
        return location.line.data
    return UNKNOWN_LINE


def check_expectations(
    expectations: list[Expectation], produced: AccyError | None, filename: str
) -> list[str]:
    """The mismatches between the expected errors and the one produced, as diagnostics."""
    problems = []
    unmatched = list(expectations)
    if produced is not None:
        line = diagnostic_line(produced, filename)
        match = next(
            (e for e in unmatched if e.line == line and e.message in produced.message), None
        )
        if match is None:
            problems.append(
                AccyError(f"unexpected error: {produced.message}", produced.location).diagnostic()
            )
        else:
            unmatched.remove(match)
    for expectation in unmatched:
        location = _location(filename, expectation.annotation_line, expectation.annotation_column)
        problems.append(
            AccyError(
                f'expected error "{expectation.message}" was not produced', location
            ).diagnostic()
        )
    return problems
