"""MiniMalloc CSV: upper-exclusive conversion, round trip, clear errors for malformed rows."""

from __future__ import annotations

from pathlib import Path

import pytest
from accy.passes.arena import (
    BufferInterval,
    MiniMallocFormatError,
    pack,
    read_minimalloc,
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
        ("buffer,start,end,size\nb,0,1,4\nb,1,2,4\n", r"p\.csv:3: duplicate buffer b"),
        ("id,lower,upper,size\n ,0,1,4\n", r"p\.csv:2: id is empty"),
        ("buffer,start,end,size\nb,2,1,4\n", r"p\.csv:2: end 1 must be greater than start 2"),
    ],
)
def test_malformed_files_name_file_and_line(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "p.csv"
    path.write_text(text)
    with pytest.raises(MiniMallocFormatError, match=message):
        read_problem(path)


# MiniMalloc's own example (its README): named buffers, a 12-byte capacity that fits exactly.
EXAMPLE = "id,lower,upper,size\nb1,0,3,4\nb2,3,9,4\nb3,0,9,4\nb4,9,21,4\nb5,0,21,4\n"


def test_named_buffers_are_numbered_in_row_order_and_written_back_by_name(tmp_path: Path) -> None:
    problem = tmp_path / "input.12.csv"
    problem.write_text(EXAMPLE)
    read = read_minimalloc(problem)
    # b1 and b2 never meet (upper exclusive), so at most three 4-byte buffers live at once.
    assert read.intervals[0] == BufferInterval(0, 0, 2, 4)
    assert read.names == {0: "b1", 1: "b2", 2: "b3", 3: "b4", 4: "b5"}
    assert read.columns == ("id", "lower", "upper", "size") and read.offsets is None
    placement = pack(read.intervals, alignment=1).placement
    assert placement.size == 12
    solution = tmp_path / "output.12.csv"
    write_solution(solution, read.intervals, placement, names=read.names, columns=read.columns)
    lines = solution.read_text().splitlines()
    assert lines[0] == "id,lower,upper,size,offset"
    assert [line.split(",")[0] for line in lines[1:]] == ["b1", "b2", "b3", "b4", "b5"]
    again = read_minimalloc(solution)
    assert again.names == read.names and again.offsets == dict(placement.offsets)


def test_benchmark_spelling_of_the_header(tmp_path: Path) -> None:
    # MiniMalloc's benchmark files say buffer,start,end,size (end exclusive, as upper).
    problem = tmp_path / "A.csv"
    problem.write_text("buffer,start,end,size\n0,0,3,100\n1,3,4,8\n")
    read = read_minimalloc(problem)
    assert read.intervals == [BufferInterval(0, 0, 2, 100), BufferInterval(1, 3, 3, 8)]
    assert read.columns == ("buffer", "start", "end", "size")
    solution = tmp_path / "A.out.csv"
    placement = pack(read.intervals, alignment=1).placement
    write_solution(solution, read.intervals, placement, names=read.names, columns=read.columns)
    assert solution.read_text().splitlines() == [
        "buffer,start,end,size,offset",
        "0,0,3,100,0",
        "1,3,4,8,0",
    ]


def test_decimal_ids_equal_as_numbers_are_kept_as_names(tmp_path: Path) -> None:
    problem = tmp_path / "p.csv"
    problem.write_text("id,lower,upper,size\n1,0,1,4\n01,0,1,4\n")
    read = read_minimalloc(problem)
    assert [interval.id for interval in read.intervals] == [0, 1]
    assert read.names == {0: "1", 1: "01"}
