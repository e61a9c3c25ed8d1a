"""Inputs that used to give a traceback, a hang or a dead process: each is now a located
diagnostic and exit status 1 (found by `benchmarks/fuzz.py`). Run as processes, as a user
would meet them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

PROGRAM = """func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = accy.add %a, %a : tensor<4xf32>
  func.return %0 : tensor<4xf32>
}
"""


def accy_opt(path: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "accy.cli.opt", str(path), *args],
        check=False,
        capture_output=True,
        text=True,
        timeout=120,  # a hang fails the test instead of the suite
    )


@pytest.mark.parametrize(
    "text,message",
    [
        ("#", "1:1: error: Expected suffix identifier after '#'"),
        ("$", "1:1: error: Unexpected character: $"),
        ('"abc', "1:1: error: End of file reached before closing string literal."),
        # An unclosed string of 30 characters ran the pinned lexer's regex for minutes.
        (
            'func.func @f(%a: tensor<4xf32>, "a long unclosed string literal) {',
            "1:33: error: End of file reached before closing string literal.",
        ),
        (
            PROGRAM.replace(
                "%0 = accy.add %a, %a",
                "%1 = accy.negate %0 : tensor<4xf32>\n  %0 = accy.add %a, %a",
            ),
            "2:3: error: 'accy.negate' op operand #0 is used before it is defined",
        ),
        (
            PROGRAM.replace("dense", "")
            .replace("%a, %a", "%a, %k")
            .replace("  %0", "  %k = accy.constant dense<1.0> : tensor<4294967296xf32>\n  %0"),
            "2:22: error: a splat constant of 4294967296 elements",
        ),
    ],
)
def test_bad_text_is_a_diagnostic(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "bad.mlir"
    path.write_text(text)
    done = accy_opt(path)
    assert done.returncode == 1, done.stderr
    assert done.stderr.startswith(f"{path}:{message}"), done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(
    "text,passes,message",
    [
        (PROGRAM, "accy-lower{target=cpu},accy-plan-memory-spaces", "a lowered function"),
        ("func.func @u(%a: tensor<4xui32>) -> tensor<4xui32> {\n  func.return %a : tensor<4xui32>\n}\n",
         "accy-plan-memory-spaces", "argument #0 has type tensor<4xui32>"),
        ("func.func private @g(tensor<4xf32>) -> tensor<4xf32>\n" + PROGRAM, "accy-plan-buffers",
         "@g is a declaration"),
        ("func.func @h(%a: tensor<4xf32>) -> tensor<4xf32> {\n}\n", "accy-plan-shapes",
         "the body of @h is not one block ending in func.return"),
    ],
)  # fmt: skip
def test_what_the_planner_cannot_take_is_refused(
    tmp_path: Path, text: str, passes: str, message: str
) -> None:
    path = tmp_path / "p.mlir"
    path.write_text(text)
    done = accy_opt(path, "-p", passes)
    assert done.returncode == 1, done.stderr
    assert message in done.stderr and "Traceback" not in done.stderr
