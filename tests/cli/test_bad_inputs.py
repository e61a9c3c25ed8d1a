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
        # A value defined later in the outer block, used inside an earlier op's region.
        (
            PROGRAM.replace(
                "  %0 = accy.add %a, %a : tensor<4xf32>\n",
                "  %r = accy.iterate 1 iter_args(%p = %a) : tensor<4xf32> {\n"
                "    %n = accy.add %p, %later : tensor<4xf32>\n"
                "    accy.yield %n : tensor<4xf32>\n  }\n"
                "  %later = accy.add %a, %a : tensor<4xf32>\n"
                "  %0 = accy.add %r, %later : tensor<4xf32>\n",
            ),
            "3:5: error: 'accy.add' op operand #1 is used before it is defined",
        ),
        # An element out of range deep inside a large literal: located at the element.
        (
            "func.func @c() -> tensor<100000xi8> {\n  %c = accy.constant dense<["
            + "1, " * 99999
            + "300]> : tensor<100000xi8>\n  func.return %c : tensor<100000xi8>\n}\n",
            "2:300026: error: invalid attribute: Integer value 300 is out of range for type i8",
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
        ("func.func @u(%a: tensor<4xui4>) -> tensor<4xui4> {\n  func.return %a : tensor<4xui4>\n}\n",
         "accy-plan-memory-spaces", "argument #0 has type tensor<4xui4>"),
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


def deeply_nested(kind: str, depth: int) -> str:
    if kind == "type":  # parentheses in a function type
        return "func.func private @g(" + "(" * depth + "i32" + ") -> i32" * depth + ")\n"
    if kind == "array":  # an array attribute
        return "func.func @f() attributes {x = " + "[" * depth + "1" + "]" * depth + "} {\n  func.return\n}\n"  # fmt: skip
    if kind == "dense":  # a dense literal
        return "func.func @f() attributes {x = dense<" + "[" * depth + "1.0" + "]" * depth + "> : tensor<" + "1x" * depth + "f32>} {\n  func.return\n}\n"  # fmt: skip
    # regions: accy.iterate in accy.iterate
    lines = ["func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {"]
    for i in range(depth):
        lines.append(f"%r{i} = accy.iterate 1 iter_args(%p{i} = %{'a' if i == 0 else f'p{i - 1}'}) : tensor<4xf32> {{")  # fmt: skip
    for i in reversed(range(depth)):
        lines.append(f"accy.yield %{f'p{i}' if i == depth - 1 else f'r{i + 1}'} : tensor<4xf32>\n}}")  # fmt: skip
    return "\n".join([*lines, "func.return %r0 : tensor<4xf32>\n}\n"])


@pytest.mark.parametrize(
    "kind,where",
    [("type", "1:149"), ("array", "1:159"), ("dense", "1:164"), ("regions", "129:33")],
)
def test_deep_nesting_is_a_diagnostic(tmp_path: Path, kind: str, where: str) -> None:
    """2000 levels ran xDSL's recursive parser out of Python stack (a RecursionError
    traceback); the 129th open bracket is now the error."""
    path = tmp_path / "deep.mlir"
    path.write_text(deeply_nested(kind, 2000))
    done = accy_opt(path)
    assert done.returncode == 1, done.stderr
    assert done.stderr.startswith(f"{path}:{where}: error: nesting deeper than 128 levels")
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("generic", [False, True])
def test_nesting_within_the_limit_prints_and_reads_back(tmp_path: Path, generic: bool) -> None:
    path = tmp_path / "nested.mlir"
    path.write_text(deeply_nested("regions", 100))
    done = accy_opt(path, *(["--print-op-generic"] if generic else []))
    assert done.returncode == 0, done.stderr
    (tmp_path / "printed.mlir").write_text(done.stdout)
    again = accy_opt(tmp_path / "printed.mlir")
    assert again.returncode == 0, again.stderr
