"""``accy-pack`` end to end, through the installed console script."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from accy.passes.arena import Placement, check_placement, read_solution

from accy.cli.pack import CLOSED_PIPE_STATUS

ACCY_PACK = str(Path(sys.executable).with_name("accy-pack"))

# Buffers 0 and 1 meet at item 1 (100 + 50 bytes live); 2 meets 1 at item 2 (50 + 70).
PROBLEM = "id,lower,upper,size\n0,0,2,100\n1,1,3,50\n2,2,4,70\n"


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [ACCY_PACK, *args], check=False, capture_output=True, text=True, timeout=60
    )


def _problem(tmp_path: Path, text: str = PROBLEM) -> str:
    path = tmp_path / "problem.csv"
    path.write_text(text)
    return str(path)


def test_packs_and_writes_a_valid_solution(tmp_path: Path) -> None:
    solution = tmp_path / "solution.csv"
    result = _run(_problem(tmp_path), "--capacity", "150", "-o", str(solution))
    assert result.returncode == 0, result.stderr
    assert "arena size:  150 bytes" in result.stdout
    assert "lower bound: 150 bytes" in result.stdout
    assert "ratio:       1.0000" in result.stdout
    assert "greedy_by_breadth" in result.stdout
    intervals, offsets = read_solution(solution)
    assert offsets is not None
    check_placement(intervals, Placement(offsets, 150, 150, "file"), 1)


def test_alignment_option_rounds_sizes(tmp_path: Path) -> None:
    result = _run(_problem(tmp_path), "--alignment", "64")
    assert result.returncode == 0, result.stderr
    # 100 -> 128, 50 -> 64, 70 -> 128: the widest item holds 128 + 64 (or 64 + 128).
    assert "lower bound: 192 bytes" in result.stdout


def test_capacity_not_met_is_one_error_line(tmp_path: Path) -> None:
    # The greedy packers need 700 bytes (see test_packers); with no budget nothing searches.
    path = _problem(
        tmp_path, "id,lower,upper,size\na,0,6,200\nb,0,2,100\nc,0,2,300\nd,2,6,200\ne,2,6,200\n"
    )
    result = _run(path, "--capacity", "650", "--budget-ms", "0")
    assert result.returncode == 1
    assert result.stderr == (
        "error: arena needs 700 bytes, capacity is 650 "
        "(searched for 0 ms; --budget-ms gives the search more time)\n"
    )


def test_missing_file_is_one_error_line(tmp_path: Path) -> None:
    result = _run(str(tmp_path / "absent.csv"))
    assert result.returncode == 1
    assert result.stderr.startswith("error: ")
    assert "absent.csv" in result.stderr and "Traceback" not in result.stderr


def test_malformed_file_names_the_line(tmp_path: Path) -> None:
    path = _problem(tmp_path, "id,lower,upper,size\n0,0,2,100\n1,1,one,50\n")
    result = _run(path)
    assert result.returncode == 1
    assert result.stderr == f"error: {path}:3: upper 'one' is not an integer\n"


def test_minimalloc_example_keeps_its_names_and_columns(tmp_path: Path) -> None:
    # MiniMalloc's README example: named buffers, solved within its 12-byte capacity.
    path = _problem(
        tmp_path, "id,lower,upper,size\nb1,0,3,4\nb2,3,9,4\nb3,0,9,4\nb4,9,21,4\nb5,0,21,4\n"
    )
    solution = tmp_path / "output.12.csv"
    result = _run(path, "--capacity", "12", "-o", str(solution))
    assert result.returncode == 0, result.stderr
    lines = solution.read_text().splitlines()
    assert lines[0] == "id,lower,upper,size,offset"
    assert [line.split(",")[0] for line in lines[1:]] == ["b1", "b2", "b3", "b4", "b5"]


def test_a_capacity_the_greedy_packers_miss_is_met(tmp_path: Path) -> None:
    # Every greedy packer needs 700 bytes here; the search fits --capacity 600 with the
    # tiling (see test_packers: a, c and b in items 0-1; a, d and e in items 2-5).
    path = _problem(
        tmp_path, "id,lower,upper,size\na,0,6,200\nb,0,2,100\nc,0,2,300\nd,2,6,200\ne,2,6,200\n"
    )
    result = _run(path, "--capacity", "600", "--budget-ms", "2000")
    assert result.returncode == 0, result.stderr
    assert "arena size:  600 bytes (search)" in result.stdout


def test_capacity_below_the_lower_bound_fails_before_packing(tmp_path: Path) -> None:
    result = _run(_problem(tmp_path), "--capacity", "100", "--budget-ms", "60000")
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr == (
        "error: capacity 100 is below the lower bound 150 (max live bytes): no placement fits\n"
    )


def test_unusable_options_fail_before_packing(tmp_path: Path) -> None:
    # A negative budget, or a solution path in a folder that does not exist, would only show
    # after the search has spent its budget: both are refused first, with nothing printed.
    problem = _problem(tmp_path)
    cases = {
        ("--budget-ms", "-5"): "error: --budget-ms must be at least 0, got -5\n",
        ("--workers", "0"): "error: --workers must be at least 1, got 0\n",
        ("-o", str(tmp_path / "missing" / "s.csv")): (
            f"error: {tmp_path / 'missing' / 's.csv'}: no such folder to write the solution in\n"
        ),
    }
    for options, message in cases.items():
        result = _run(problem, *options)
        assert result.returncode == 1
        assert result.stdout == ""
        assert result.stderr == message


def test_workers_search_a_full_problem_in_processes(tmp_path: Path, churn) -> None:
    # 1.5 s of budget gives the sweeps 0.9 s, enough to run them in two worker processes
    # (pack.PARALLEL_MS); the churn problem is full, so its bound is reachable. The tiling
    # search, before the sweeps, does not place this one in its share (it does seeds 1-5).
    intervals = churn(0, items=24, height=32)
    rows = [f"{b.id},{b.start},{b.end + 1},{b.size}" for b in intervals]
    path = _problem(tmp_path, "id,lower,upper,size\n" + "\n".join(rows) + "\n")
    result = _run(path, "--alignment", "256", "--budget-ms", "1500", "--workers", "2")
    assert result.returncode == 0, result.stderr
    assert "bytes (sweep)" in result.stdout and "ratio:       1.0000" in result.stdout


def test_many_identical_buffers_finish_within_the_budget_and_say_it_ran_out(
    tmp_path: Path,
) -> None:
    # 20000 buffers all live together (200 million conflicting pairs): more than 5 minutes
    # before the greedy packers were held to the budget; now the fallback, about a second.
    rows = "".join(f"{i},0,10,100\n" for i in range(20_000))
    path = _problem(tmp_path, "id,lower,upper,size\n" + rows)
    solution = tmp_path / "solution.csv"
    result = subprocess.run(
        [ACCY_PACK, path, "--budget-ms", "100", "-o", str(solution)],
        check=False,
        capture_output=True,
        text=True,
        timeout=120,  # coarse: a hang, not a slow machine
    )
    assert result.returncode == 0, result.stderr
    assert "arena size:  2000000 bytes (sweep_first_fit)" in result.stdout
    assert "ratio:       1.0000" in result.stdout
    assert (
        "budget:      ran out: best_fit, greedy_by_size, greedy_by_breadth, the searches "
        "skipped (199990000 conflicting pairs; --budget-ms 1200000 runs every packer)"
    ) in result.stdout
    assert "  best_fit           skipped\n" in result.stdout
    intervals, offsets = read_solution(solution)
    assert offsets is not None
    check_placement(intervals, Placement(offsets, 2_000_000, 2_000_000, "file"), 1)


def test_help_states_the_budget_default() -> None:
    result = _run("--help")
    assert result.returncode == 0
    assert "(default 100)" in " ".join(result.stdout.split())


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full")
def test_a_full_disk_is_one_error_line_naming_the_output(tmp_path: Path) -> None:
    result = _run(_problem(tmp_path), "-o", "/dev/full")
    assert result.returncode == 1
    assert result.stderr == "error: cannot write /dev/full: No space left on device\n"
    with open("/dev/full", "w") as full:  # the report itself on a full disk
        report = subprocess.run(
            [ACCY_PACK, _problem(tmp_path)],
            check=False,
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            timeout=60,
        )
    assert report.returncode == 1
    assert report.stderr == "error: cannot write standard output: No space left on device\n"


def test_a_closed_stdout_pipe_stops_quietly_with_status_141(tmp_path: Path) -> None:
    # As `accy-pack ... | head -c 10` once head has gone: the pipe's read end is closed
    # before the program starts, so its first write fails (Python ignores SIGPIPE).
    def run_into_closed_pipe(*args: str) -> subprocess.CompletedProcess[str]:
        read, write = os.pipe()
        os.close(read)
        try:
            return subprocess.run(
                [ACCY_PACK, *args],
                check=False,
                stdout=write,
                stderr=subprocess.PIPE,
                text=True,
                timeout=60,
            )
        finally:
            os.close(write)

    result = run_into_closed_pipe(_problem(tmp_path))
    assert result.returncode == CLOSED_PIPE_STATUS == 141
    assert result.stderr == ""
    assert run_into_closed_pipe("--help").stderr == ""  # argparse drops what it cannot write


@pytest.mark.parametrize("args", [["--bogus"], ["--budget-ms", "x", "p.csv"], []])
def test_a_bad_command_line_exits_1(args: list[str]) -> None:
    result = _run(*args)
    assert result.returncode == 1, result.stderr
    assert "error:" in result.stderr and "Traceback" not in result.stderr
