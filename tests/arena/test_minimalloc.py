"""MiniMalloc CSV: upper-exclusive conversion, round trip, clear errors for malformed rows."""

from __future__ import annotations

from pathlib import Path

import pytest

from accy.passes.arena import (
    BufferInterval,
    MiniMallocFormatError,
    pack,
    read_problem,
    read_solution,
    write_solution,
)


def test_upper_is_exclusive(tmp_path: Path) -> None:
    problem = tmp_path / "p.csv"
    problem.write_text("id,lower,upper,size\n0,0,3,100\n1,3,4,8\n")
    # upper 3 (exclusive) -> end 2 (inclusive): buffers 0 and 1 never meet.
    assert read_problem(problem) == [BufferInterval(0, 0, 2, 100), BufferInterval(1, 3, 3, 8)]


def test_solution_round_trip(tmp_path: Path) -> None:
    intervals = [BufferInterval(1, 0, 1, 10), BufferInterval(0, 1, 4, 20)]
    placement = pack(intervals, alignment=1).placement
    path = tmp_path / "s.csv"
    write_solution(path, intervals, placement)
    assert path.read_text().splitlines() == [
        "id,lower,upper,size,offset",
        f"0,1,5,20,{placement.offsets[0]}",
        f"1,0,2,10,{placement.offsets[1]}",
    ]
    read_intervals, offsets = read_solution(path)
    assert sorted(read_intervals, key=lambda i: i.id) == sorted(intervals, key=lambda i: i.id)
    assert offsets == dict(placement.offsets)


def test_problem_has_no_offsets(tmp_path: Path) -> None:
    path = tmp_path / "p.csv"
    path.write_text("id,lower,upper,size\n0,0,1,4\n")
    assert read_solution(path)[1] is None


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", r"p\.csv:1: empty file"),
        ("id,start,end,size\n", r"p\.csv:1: header must be id,lower,upper,size\[,offset\]"),
        ("id,lower,upper,size\n0,0,1\n", r"p\.csv:2: expected 4 fields"),
        ("id,lower,upper,size\n0,0,1,4\n1,0,x,4\n", r"p\.csv:3: upper 'x' is not an integer"),
        ("id,lower,upper,size\n0,2,2,4\n", r"p\.csv:2: upper 2 must be greater than lower 2"),
        ("id,lower,upper,size\n0,0,1,-4\n", r"p\.csv:2: size -4 is negative"),
        ("id,lower,upper,size\n0,0,1,4\n\n0,1,2,4\n", r"p\.csv:4: duplicate id 0"),
    ],
)
def test_malformed_files_name_file_and_line(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "p.csv"
    path.write_text(text)
    with pytest.raises(MiniMallocFormatError, match=message):
        read_problem(path)
