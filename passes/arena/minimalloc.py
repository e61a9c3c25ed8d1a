"""MiniMalloc CSV interop.

A MiniMalloc problem is a CSV file with the header ``id,lower,upper,size`` (MiniMalloc's own
benchmark files spell it ``buffer,start,end,size``) and one buffer per row; a solution adds an
``offset`` column. ``upper`` is *exclusive*: a row maps to ``BufferInterval(id, start=lower,
end=upper - 1, size)``, and writing maps back. Ids are names (MiniMalloc's examples use
``b1``, ``b2``, ...): when every id is a distinct decimal integer the buffers keep them as
ids, otherwise buffers are numbered in row order; either way the names are written back. The
other fields are decimal integers, ``lower < upper``, ``size >= 0``, ids are unique. The file
is UTF-8 text. A malformed file (text that is not UTF-8 or not CSV, a field longer than the
csv module's limit, 131072 characters) raises ``MiniMallocFormatError`` whose message starts
with ``FILE:LINE:``.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from accy.passes.arena.problem import BufferInterval, Placement

PROBLEM_COLUMNS = ("id", "lower", "upper", "size")
BENCHMARK_COLUMNS = ("buffer", "start", "end", "size")
"""The spelling of MiniMalloc's benchmark files (same meaning, ``end`` exclusive)."""
_DECIMAL = re.compile(r"-?[0-9]+")
_HEADERS = {
    header: offsets
    for columns in (PROBLEM_COLUMNS, BENCHMARK_COLUMNS)
    for header, offsets in ((columns, False), ((*columns, "offset"), True))
}


class MiniMallocFormatError(ValueError):
    """A malformed MiniMalloc CSV file; the message names the file and line."""

    def __init__(self, path: Path | str, line: int, message: str) -> None:
        super().__init__(f"{path}:{line}: {message}")


@dataclass(frozen=True)
class MiniMallocFile:
    """A problem or solution file: its buffers, the name each buffer has in the file (by
    buffer id), its four problem column names (written back with a solution) and its offsets
    (``None`` for a problem)."""

    intervals: list[BufferInterval]
    names: dict[int, str]
    columns: tuple[str, ...]
    offsets: dict[int, int] | None


def _integer(path: Path | str, line: int, name: str, text: str) -> int:
    try:
        return int(text.strip())
    except ValueError:
        raise MiniMallocFormatError(path, line, f"{name} '{text}' is not an integer") from None


def _text(path: Path | str) -> str:
    """The file's UTF-8 text; ``MiniMallocFormatError`` at the line of the first byte that
    is not UTF-8."""
    data = Path(path).read_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        byte = data[error.start]
        raise MiniMallocFormatError(path, line, f"not UTF-8 text (byte 0x{byte:02x})") from None


def _rows(path: Path | str) -> list[tuple[int, list[str]]]:
    """The non-empty rows of the file, each with the line it ends on."""
    reader = csv.reader(io.StringIO(_text(path), newline=""))
    rows = []
    try:
        for row in reader:
            if row:
                rows.append((reader.line_num, row))
    except csv.Error as error:  # the line being read is counted
        message = (
            f"a field longer than {csv.field_size_limit()} characters"
            if "field limit" in str(error)
            else f"not CSV: {error}"
        )
        raise MiniMallocFormatError(path, max(reader.line_num, 1), message) from None
    return rows


def read_minimalloc(path: Path | str) -> MiniMallocFile:
    """The buffers (and offsets, for a solution) of a MiniMalloc CSV file."""
    rows = _rows(path)
    if not rows:
        expected = ",".join(PROBLEM_COLUMNS)
        raise MiniMallocFormatError(path, 1, f"empty file, expected header {expected}")
    header_line, header_row = rows[0]
    header = tuple(name.strip() for name in header_row)
    if header not in _HEADERS:
        raise MiniMallocFormatError(
            path,
            header_line,
            f"header must be {','.join(PROBLEM_COLUMNS)}[,offset] (or "
            f"{','.join(BENCHMARK_COLUMNS)}[,offset]), got {','.join(header)}",
        )
    names: list[str] = []
    fields: list[tuple[int, ...]] = []
    seen: set[str] = set()
    for line, row in rows[1:]:
        if len(row) != len(header):
            raise MiniMallocFormatError(
                path, line, f"expected {len(header)} fields ({','.join(header)}), got {len(row)}"
            )
        name = row[0].strip()
        if not name:
            raise MiniMallocFormatError(path, line, f"{header[0]} is empty")
        if name in seen:
            raise MiniMallocFormatError(path, line, f"duplicate {header[0]} {name}")
        seen.add(name)
        values = tuple(_integer(path, line, *pair) for pair in zip(header[1:], row[1:]))
        lower, upper, size = values[:3]
        if upper <= lower:
            raise MiniMallocFormatError(
                path, line, f"{header[2]} {upper} must be greater than {header[1]} {lower}"
            )
        if size < 0:
            raise MiniMallocFormatError(path, line, f"size {size} is negative")
        names.append(name)
        fields.append(values)
    numbered = all(_DECIMAL.fullmatch(name) for name in names)
    ids = [int(name) for name in names] if numbered else []
    if len(set(ids)) < len(names):  # names, or decimals equal as numbers ("1" and "01")
        ids = list(range(len(names)))
    intervals = [
        BufferInterval(i, lower, upper - 1, size)
        for i, (lower, upper, size, *_) in zip(ids, fields)
    ]
    offsets = {i: values[3] for i, values in zip(ids, fields)} if _HEADERS[header] else None
    return MiniMallocFile(intervals, dict(zip(ids, names)), header[:4], offsets)


def read_solution(path: Path | str) -> tuple[list[BufferInterval], dict[int, int] | None]:
    """The buffers of a problem or solution file, and the offsets when it has that column."""
    read = read_minimalloc(path)
    return read.intervals, read.offsets


def read_problem(path: Path | str) -> list[BufferInterval]:
    """The buffers of a problem file (an ``offset`` column, if present, is ignored)."""
    return read_minimalloc(path).intervals


def write_solution(
    path: Path | str,
    intervals: Sequence[BufferInterval],
    placement: Placement,
    *,
    names: Mapping[int, str] | None = None,
    columns: Sequence[str] = PROBLEM_COLUMNS,
) -> None:
    """Write the ``columns`` (``id,lower,upper,size`` unless given) and ``offset``, a row per
    buffer in id order with ``upper`` exclusive, each buffer under its name in ``names`` (its
    id when absent)."""
    with open(path, "w", newline="") as stream:
        writer = csv.writer(stream, lineterminator="\n")
        writer.writerow((*columns, "offset"))
        for interval in sorted(intervals, key=lambda interval: interval.id):
            name = names[interval.id] if names is not None else interval.id
            writer.writerow(
                (
                    name,
                    interval.start,
                    interval.end + 1,
                    interval.size,
                    placement.offsets[interval.id],
                )
            )
