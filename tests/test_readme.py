"""The README's tour works as written: its Python block runs, and every command of its first
shell block runs from a copy of the checkout's examples and exits 0; where a command's comment
quotes an attribute (`accy.memory = "..."`), the output holds it."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def tour_blocks(kind: str) -> list[str]:
    text = (ROOT / "README.md").read_text()
    tour = text[text.index("## A tour") :]
    tour = tour[: tour.index("\n## ", 1)]
    return re.findall(rf"```{kind}\n(.*?)```", tour, flags=re.DOTALL)


def commands() -> list[str]:
    """The lines of the tour's first shell block (the command line; the next one lists the
    benchmarks, which their own tests run with small options)."""
    block = tour_blocks("sh")[0]
    return [line for line in block.splitlines() if line.strip()]


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    shutil.copytree(ROOT / "lit_tests" / "dialect", tmp_path / "lit_tests" / "dialect")
    return tmp_path


def test_the_tour_has_its_blocks() -> None:
    assert len(tour_blocks("python")) == 1
    assert len(commands()) >= 10


def test_the_python_block_runs(checkout: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (block,) = tour_blocks("python")
    monkeypatch.chdir(checkout)
    namespace: dict = {}
    exec(compile(block, "README.md", "exec"), namespace)  # noqa: S102 - the README's own code
    assert namespace["prep"].memory.total_static_bytes == 48  # as its comment says
    assert repr(namespace["prep"].memory.assignment_for_slot(2).output_source) == (
        "KernelWritten(work_item=0)"
    )


@pytest.mark.parametrize("command", commands())
def test_each_command_runs(command: str, checkout: Path) -> None:
    line = command.split("#")[0] if not command.lstrip().startswith("#") else ""
    bin_dir = Path(sys.executable).parent
    done = subprocess.run(
        ["bash", "-c", f"PATH={bin_dir}:$PATH; set -o pipefail; {line}"],
        cwd=checkout,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    for quoted in re.findall(r'(accy\.\w+ = "[^"]*")', command.split("#", 1)[-1]):
        assert quoted in done.stdout, quoted
