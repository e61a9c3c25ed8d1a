"""MiniMalloc CSV interop.

A MiniMalloc problem is a CSV file with the header ``id,lower,upper,size`` and one buffer per
row; a solution adds an ``offset`` column. ``upper`` is *exclusive*: a row maps to
``BufferInterval(id, start=lower, end=upper - 1, size)``, and writing maps back. Every field
is a decimal integer, ``lower < upper``, ``size >= 0``, ids are unique. A malformed file
raises ``MiniMallocFormatError`` whose message starts with ``FILE:LINE:``.
"""

from __future__ import annotations

import csv
from collections.abc import Sequence
from pathlib import Path

from accy.passes.arena.problem import BufferInterval, Placement

PROBLEM_COLUMNS = ("id", "lower", "upper", "size")
SOLUTION_COLUMNS = (*PROBLEM_COLUMNS, "offset")


class MiniMallocFormatError(ValueError):
    """A malformed MiniMalloc CSV file; the message names the file and line."""

    def __init__(self, path: Path | str, line: int, message: str) -> None:
        super().__init__(f"{path}:{line}: {message}")


def _parse_row(path: Path | str, line: int, header: Sequence[str], row: list[str]) -> list[int]:
    """The row's fields as integers, in header order."""
    if len(row) != len(header):
        raise MiniMallocFormatError(
            path, line, f"expected {len(header)} fields ({','.join(header)}), got {len(row)}"
        )
    values = []
    for name, text in zip(header, row):
        try:
            values.append(int(text.strip()))
        except ValueError:
            raise MiniMallocFormatError(path, line, f"{name} '{text}' is not an integer") from None
    return values


def _to_interval(path: Path | str, line: int, fields: list[int]) -> BufferInterval:
    """The buffer of one row ``id, lower, upper (exclusive), size``."""
    buffer_id, lower, upper, size = fields[:4]
    if upper <= lower:
        raise MiniMallocFormatError(path, line, f"upper {upper} must be greater than lower {lower}")
    if size < 0:
        raise MiniMallocFormatError(path, line, f"size {size} is negative")
    return BufferInterval(buffer_id, lower, upper - 1, size)


def read_solution(path: Path | str) -> tuple[list[BufferInterval], dict[int, int] | None]:
    """The buffers of a problem or solution file, and the offsets when it has that column."""
    with open(path, newline="") as stream:
        rows = [(number, row) for number, row in enumerate(csv.reader(stream), 1) if row]
    if not rows:
        expected = ",".join(PROBLEM_COLUMNS)
        raise MiniMallocFormatError(path, 1, f"empty file, expected header {expected}")
    header_line, header = rows[0]
    header = tuple(name.strip() for name in header)
    if header not in (PROBLEM_COLUMNS, SOLUTION_COLUMNS):
        raise MiniMallocFormatError(
            path,
            header_line,
            f"header must be {','.join(PROBLEM_COLUMNS)}[,offset], got {','.join(header)}",
        )
    intervals: list[BufferInterval] = []
    offsets: dict[int, int] = {}
    for line, row in rows[1:]:
        fields = _parse_row(path, line, header, row)
        interval = _to_interval(path, line, fields)
        if interval.id in offsets:
            raise MiniMallocFormatError(path, line, f"duplicate id {interval.id}")
        intervals.append(interval)
        offsets[interval.id] = fields[4] if len(fields) == 5 else 0
    return intervals, (offsets if header == SOLUTION_COLUMNS else None)


def read_problem(path: Path | str) -> list[BufferInterval]:
    """The buffers of a problem file (an ``offset`` column, if present, is ignored)."""
    return read_solution(path)[0]


def write_solution(
    path: Path | str, intervals: Sequence[BufferInterval], placement: Placement
) -> None:
    """Write ``id,lower,upper,size,offset`` rows, in id order, with ``upper`` exclusive."""
    with open(path, "w", newline="") as stream:
        writer = csv.writer(stream, lineterminator="\n")
        writer.writerow(SOLUTION_COLUMNS)
        for interval in sorted(intervals, key=lambda interval: interval.id):
            writer.writerow(
                (
                    interval.id,
                    interval.start,
                    interval.end + 1,
                    interval.size,
                    placement.offsets[interval.id],
                )
            )
