"""StableHLO's conformance programs as cases accy compiles, and the checks' own rules.

Three kinds of program (see the suite copy's README):

- `testdata/NAME.mlir`: a `@main()` that calls `@inputs()` and `@expected()` (private
  functions of constants), computes, and checks with `stablehlo.custom_call
  @check.expect_close / expect_eq / expect_almost_eq (actual, expected)`. The case passes
  the inputs as `@main`'s arguments (as JAX would), returns the checked values, and drops
  the checks and both constant functions; inputs and expected values come from
  StableHLO's reference interpreter evaluating `@inputs` and `@expected`.
- `testdata/dynamic/NAME.mlir`: shape-polymorphic exports with no expected values. The
  leading scalar i64 arguments are JAX's dimension variables: every one, and every `?`
  dimension, is given `DYNAMIC_SIZE`; the other inputs are seeded random values. The
  oracle is the reference interpreter on the same program with the dimension arguments
  turned into constants (`eval_stablehlo` refines the shapes).
- `interpret/NAME.mlir`: `// -----` chunks whose functions check with the `check`
  dialect (`check.expect_eq_const %v, dense<...>`, ...), which only StableHLO's own
  tools parse: the checks are removed, the checked values returned, and the expected
  constants evaluated by the interpreter. A chunk without checks (inputs given by the
  RUN line's `--args`) is checked against the interpreter on the same program.

The rules (`compare`) are StableHLO's (`stablehlo/tests/CheckOps.cpp` and the custom-call
fallback in `StablehloTranslateMain.cpp`): `eq` exact (NaN matches NaN, -0 matches +0);
`close` within `max_ulp` units in the last place (3 for the custom call), both NaN or
bitwise equal otherwise; `almost_eq` an absolute difference of at most `tolerance` for
finite values (1e-4 for the custom call, stricter than StableHLO's own 1e-3; the op's
`tolerance`, default 1e-4, otherwise);
integers and booleans are always compared exactly.

Everything here is text and numpy (and `accy.reference.ulp_difference`): the upstream
bindings are only used through accy's bridge, by the runner's workers.
"""

from __future__ import annotations

import re
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from accy.reference import ulp_difference

DYNAMIC_SIZE = 3
"""The size given to every dynamic dimension (and dimension variable) of `testdata/dynamic`."""

CUSTOM_CALL_ALMOST_EQ = 1e-4
"""The suite copy's README's figure; StableHLO's own fallback for the custom call allows
1e-3 (`StablehloTranslateMain.cpp`): accy is held to the stricter one."""
CUSTOM_CALL_MAX_ULP = 3
CHECK_ALMOST_EQ_DEFAULT = 1e-4
ORACLE_TOLERANCE = 1e-4
"""Programs checked against the interpreter: `close` (3 ULP) or `almost_eq` at this."""


class CaseError(Exception):
    """A suite file the runner cannot turn into a case (its shape is not the suite's)."""


@dataclass(frozen=True)
class Check:
    """Compare accy's result `actual` with the oracle's value `expected` by `rule`.

    `expected` indexes the oracle program's results, or accy's own results when
    `against_actual` (a `check.expect_eq %a, %b` of two computed values)."""

    rule: str  # "eq" | "close" | "almost_eq" | "oracle"
    actual: int
    expected: int
    tolerance: float = 0.0
    max_ulp: int = 0
    min_ulp: int = 0
    against_actual: bool = False


@dataclass(frozen=True)
class RandomInput:
    """An input made by the runner: `kind` "dim" (the value DYNAMIC_SIZE) or "random"."""

    element: str
    shape: tuple[int, ...]
    kind: str = "random"


@dataclass(frozen=True)
class Case:
    """One conformance case: the program accy compiles and how to check it.

    `inputs_program` (StableHLO text whose `@main` returns the inputs) or `random_inputs`
    give the arguments of `function`; `oracle_program`'s `@main` gives the expected
    values, called with the inputs at the indices `oracle_arguments`."""

    id: str
    suite: str
    family: str
    element: str
    program: str
    function: str
    checks: tuple[Check, ...]
    oracle_program: str
    oracle_arguments: tuple[int, ...] = ()
    inputs_program: str | None = None
    random_inputs: tuple[RandomInput, ...] = ()
    source: str = "<input>"
    line_offset: int = 0
    seed: int = 0
    rows: tuple[int, ...] = ()
    """accy's plan options `rows`: the size planned for dynamic dimensions."""


# ---------------------------------------------------------------------------------------
# Text helpers
# ---------------------------------------------------------------------------------------

_OPEN, _CLOSE = "<([{", ">)]}"


def balanced_end(text: str, start: int) -> int:
    """The index just past the bracketed group opening at `text[start]` (`<>`, `()`,
    `[]`, `{}` nest; the `>` of `->` is no bracket; string literals are skipped)."""
    depth, i = 0, start
    while i < len(text):
        c = text[i]
        if c == '"':
            i += 1
            while i < len(text) and text[i] != '"':
                i += 2 if text[i] == "\\" else 1
        elif text.startswith("//", i):
            i = text.find("\n", i)
            if i < 0:
                break
        elif c in _OPEN:
            depth += 1
        elif c in _CLOSE and not (c == ">" and text[i - 1] == "-"):
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    raise CaseError(f"unbalanced brackets in {text[start : start + 60]!r}")


def split_types(text: str) -> list[str]:
    """`(T1, T2)` or `T` as a list of type texts (commas inside `<>` do not split)."""
    text = text.strip()
    if text.startswith("(") and balanced_end(text, 0) == len(text):
        text = text[1:-1]
    return [_strip_attributes(t.strip()) for t in _split_top(text)]


def _strip_attributes(t: str) -> str:
    """A result type without its `{...}` attribute dictionary."""
    brace = t.find("{")
    return t[:brace].strip() if brace >= 0 else t


_TENSOR = re.compile(r"^tensor<(?:[0-9?]+x)*(.+)>$")


def element_of(type_text: str) -> str:
    """The element type of a tensor type text (`tensor<2x3xf32>` -> `f32`)."""
    match = _TENSOR.match(type_text.strip())
    return match.group(1) if match else type_text.strip()


def _shape_of(type_text: str) -> tuple[int | None, ...]:
    match = re.match(r"^tensor<((?:[0-9?]+x)*)", type_text.strip())
    dims = match.group(1).split("x")[:-1] if match else []
    return tuple(None if d == "?" else int(d) for d in dims)


def _function_span(lines: list[str], start: int) -> int:
    """The index of the line closing the function whose `func.func` line is `start` (its
    body opens with the `{` ending the first line from `start` that ends with one)."""
    opening = next((j for j in range(start, len(lines)) if lines[j].rstrip().endswith("{")), None)
    if opening is None:
        raise CaseError(f"no body after {lines[start].strip()[:60]}")
    text = "\n".join(lines[opening:])
    end = balanced_end(text, len(lines[opening].rstrip()) - 1)
    return opening + text[:end].count("\n")


# ---------------------------------------------------------------------------------------
# Families
# ---------------------------------------------------------------------------------------

_DTYPE_WORDS = {
    "bool",
    "bfloat16",
    "float16",
    "float32",
    "float64",
    "complex64",
    "complex128",
    *(f"int{n}" for n in (4, 8, 16, 32, 64)),
    *(f"uint{n}" for n in (4, 8, 16, 32, 64)),
}


def testdata_family(stem: str) -> str:
    """The op family of a `testdata` file: its name up to the first element type or
    number (`scatter_add_float32_...` -> `scatter_add`, `cumsum_...` -> `cumsum`)."""
    words = []
    for word in stem.split("_"):
        if word in _DTYPE_WORDS or word.startswith("float8") or not word or word[0].isdigit():
            break
        words.append(word)
    return "_".join(words) or stem


# ---------------------------------------------------------------------------------------
# testdata
# ---------------------------------------------------------------------------------------

_CALL = re.compile(r"^\s*(%[\w]+)(?::(\d+))? = call @(inputs|expected)\(\) : \(\) -> (.*)$")
_CHECK_CALL = re.compile(
    r"^\s*stablehlo\.custom_call @check\.(\w+)\((%[\w#]+), (%[\w#]+)\).*: \((.*)\) -> \(\)\s*$"
)
_RETURN = re.compile(r"^\s*(?:func\.)?return\b")


def _result_refs(name: str, count: int | None) -> list[str]:
    return [name] if count is None else [f"{name}#{i}" for i in range(count)]


def testdata_case(path: Path, root: Path) -> Case:
    """The case of one `testdata/NAME.mlir` file (not `dynamic/`)."""
    text = path.read_text()
    lines = text.split("\n")
    main_at = next((i for i, line in enumerate(lines) if "func.func public @main()" in line), None)
    if main_at is None:
        raise CaseError("no `func.func public @main()`")
    main_end = _function_span(lines, main_at)
    calls: dict[str, tuple[list[str], list[str]]] = {}
    checks_found: list[tuple[str, str, str]] = []
    body: list[str] = []
    for line in lines[main_at + 1 : main_end]:
        if m := _CALL.match(line):
            name, count, callee, types = m.groups()
            refs = _result_refs(name, int(count) if count else None)
            calls[callee] = (refs, split_types(types))
            continue
        if m := _CHECK_CALL.match(line):
            checks_found.append((m.group(1), m.group(2), m.group(3)))
            continue
        if "@check." in line:
            raise CaseError(f"a check the runner does not read: {line.strip()}")
        if _RETURN.match(line):
            continue
        body.append(line)
    if not checks_found:
        raise CaseError("no checks in @main")
    if "expected" not in calls:
        raise CaseError("no call of @expected")
    input_refs, input_types = calls.get("inputs", ([], []))
    expected_refs, expected_types = calls["expected"]
    rename = {ref: f"%input{i}" for i, ref in enumerate(input_refs)}
    checks, returned, returned_types = [], [], []
    rules = {"expect_eq": "eq", "expect_close": "close", "expect_almost_eq": "almost_eq"}
    for rule, actual, expected in checks_found:
        if rule not in rules:
            raise CaseError(f"unknown check @check.{rule}")
        if expected not in expected_refs:
            raise CaseError(f"@check.{rule} compares with {expected}, not an expected value")
        index = expected_refs.index(expected)
        if actual not in returned:
            returned.append(actual)
            returned_types.append(expected_types[index])
        checks.append(
            Check(
                rules[rule],
                returned.index(actual),
                index,
                tolerance=CUSTOM_CALL_ALMOST_EQ,
                max_ulp=CUSTOM_CALL_MAX_ULP,
            )
        )

    def renamed(line: str) -> str:
        return re.sub(r"%[\w]+(?:#\d+)?", lambda m: rename.get(m.group(0), m.group(0)), line)

    params = ", ".join(f"%input{i}: {t}" for i, t in enumerate(input_types))
    results = ", ".join(returned_types)
    program = [
        *lines[:main_at],
        f"  func.func public @main({params}) -> ({results}) {{",
        *(renamed(line) for line in body),
        f"    return {', '.join(renamed(v) for v in returned)} : {results}",
        "  }",
    ]
    kept_tail = _without_functions(lines[main_end + 1 :], ("inputs", "expected"))
    program += kept_tail
    constants = {name: _constant_function(lines, name) for name in calls}
    relative = path.relative_to(root).as_posix()
    return Case(
        id=relative.removesuffix(".mlir"),
        suite="testdata",
        family=testdata_family(path.stem),
        element=element_of(returned_types[0]),
        program="\n".join(program),
        function="main",
        checks=tuple(checks),
        oracle_program=constants["expected"],
        inputs_program=constants.get("inputs"),
        source=relative,
    )


def _function_at(lines: list[str], name: str) -> int:
    for i, line in enumerate(lines):
        if re.search(rf"func\.func (?:private |public )?@{name}\(", line):
            return i
    raise CaseError(f"no function @{name}")


def _without_functions(lines: list[str], names: tuple[str, ...]) -> list[str]:
    lines = list(lines)
    for name in names:
        try:
            start = _function_at(lines, name)
        except CaseError:
            continue
        del lines[start : _function_span(lines, start) + 1]
    return lines


def _constant_function(lines: list[str], name: str) -> str:
    """A module whose public `@main` is the suite's private function `@name`."""
    start = _function_at(lines, name)
    function = lines[start : _function_span(lines, start) + 1]
    function[0] = function[0].replace(f"func.func private @{name}(", "func.func @main(")
    return "\n".join(["module {", *function, "}"])


# ---------------------------------------------------------------------------------------
# testdata/dynamic
# ---------------------------------------------------------------------------------------

_MAIN_SIGNATURE = re.compile(r"^(\s*func\.func public @main)\((.*)\)( -> .*\{)\s*$")


def _parameters(text: str) -> list[tuple[str, str, str]]:
    """`(name, type, attributes)` of each parameter in a signature's parameter text."""
    params = []
    for part in _split_top(text):
        name, _, rest = part.partition(":")
        rest = rest.strip()
        brace = rest.find("{")
        t, attrs = (rest[:brace].strip(), rest[brace:]) if brace >= 0 else (rest, "")
        params.append((name.strip(), t, attrs))
    return params


def _split_top(text: str) -> list[str]:
    """`text` split at its commas outside brackets."""
    parts, depth, start = [], 0, 0
    for i, c in enumerate(text):
        if c in _OPEN:
            depth += 1
        elif c in _CLOSE and not (c == ">" and text[i - 1] == "-"):
            depth -= 1
        elif c == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    if text[start:].strip():
        parts.append(text[start:])
    return parts


def dynamic_family(stem: str, known: set[str]) -> str:
    """`dynamic/` and the longest known family that starts the file's name (its `vmap_`
    and `_dynamic` taken off): `vmap_scatter_max_non_...` -> `dynamic/scatter_max`."""
    name = stem.removesuffix("_dynamic").removeprefix("vmap_")
    matches = [f for f in known if name == f or name.startswith(f + "_")]
    return "dynamic/" + (max(matches, key=len) if matches else testdata_family(name))


def dynamic_case(path: Path, root: Path, family: str) -> Case:
    """The case of one `testdata/dynamic/NAME.mlir` file."""
    text = path.read_text()
    lines = text.split("\n")
    main_at = next((i for i, line in enumerate(lines) if "func.func public @main(" in line), None)
    if main_at is None:
        raise CaseError("no `func.func public @main(`")
    m = _MAIN_SIGNATURE.match(lines[main_at])
    if not m:
        raise CaseError("@main's signature is not on one line")
    params = _parameters(m.group(2))
    dims = 0
    while dims < len(params) and params[dims][1] in ("tensor<i64>", "tensor<i32>"):
        dims += 1
    if not any("?" in t for _, t, _ in params[dims:]):
        dims = 0
    inputs = []
    for i, (_, t, _) in enumerate(params):
        shape = tuple(DYNAMIC_SIZE if d is None else d for d in _shape_of(t))
        inputs.append(RandomInput(element_of(t), shape, "dim" if i < dims else "random"))
    oracle_lines = list(lines)
    kept = ", ".join(f"{n}: {t} {a}".rstrip() for n, t, a in params[dims:])
    oracle_lines[main_at] = f"{m.group(1)}({kept}){m.group(3)}"
    constants = [
        f"    {n} = stablehlo.constant dense<{DYNAMIC_SIZE}> : {t}" for n, t, _ in params[:dims]
    ]
    oracle_lines[main_at + 1 : main_at + 1] = constants
    results = split_types(m.group(3).removeprefix(" -> ").removesuffix("{").strip())
    relative = path.relative_to(root).as_posix()
    return Case(
        id=relative.removesuffix(".mlir"),
        suite="testdata",
        family=family,
        element=element_of(results[0]) if results else "-",
        program=text,
        function="main",
        checks=tuple(
            Check("oracle", i, i, tolerance=ORACLE_TOLERANCE, max_ulp=CUSTOM_CALL_MAX_ULP)
            for i in range(len(results))
        ),
        oracle_program="\n".join(oracle_lines),
        oracle_arguments=tuple(range(dims, len(params))),
        random_inputs=tuple(inputs),
        source=relative,
        seed=zlib.crc32(relative.encode()),
        rows=(DYNAMIC_SIZE,),
    )


# ---------------------------------------------------------------------------------------
# interpret
# ---------------------------------------------------------------------------------------

_CHECK_START = re.compile(r"^\s*check\.(\w+)\s+(%[\w#]+)\s*,\s*")
_SIGNATURE_HEAD = re.compile(r"^(\s*func\.func\s+(?:public\s+|private\s+)?@([\w.$-]+))\(")


@dataclass(frozen=True)
class _Signature:
    head: str
    """`func.func @name`, with its indentation."""
    name: str
    params: str
    results: str
    """The text after the parameters, without the body's `{`."""


def _signature(line: str) -> _Signature | None:
    """A one-line function signature ending with its body's `{`, or None."""
    m = _SIGNATURE_HEAD.match(line)
    if not m or not line.rstrip().endswith("{"):
        return None
    try:
        end = balanced_end(line, m.end() - 1)
    except CaseError:
        return None
    rest = line[end:].rstrip()[:-1].strip()
    return _Signature(m.group(1), m.group(2), line[m.end() : end - 1], rest)


_ARGS = re.compile(r'--args="(\[.*\])"')


def split_chunks(text: str) -> list[tuple[int, str]]:
    """`(first line number - 1, text)` of each `// -----` chunk."""
    chunks, start, current = [], 0, []
    for i, line in enumerate(text.split("\n")):
        if line.strip() == "// -----":
            chunks.append((start, "\n".join(current)))
            start, current = i + 1, []
        else:
            current.append(line)
    chunks.append((start, "\n".join(current)))
    return chunks


def _statements(lines: list[str], at: int) -> tuple[str, int]:
    """The check statement starting at line `at` (it may span lines) and its last line."""
    text, end = lines[at], at
    while True:
        depth = 0
        for i, c in enumerate(text):
            if c in _OPEN:
                depth += 1
            elif c in _CLOSE and not (c == ">" and text[i - 1] == "-"):
                depth -= 1
        if depth == 0 and not text.rstrip().endswith(","):
            return text, end
        end += 1
        if end >= len(lines):
            raise CaseError("a check statement does not end")
        text += " " + lines[end].strip()


def _parse_check(statement: str) -> tuple[str, str, str, str, dict[str, str]]:
    """`(op, operand, second operand or dense literal, type, options)` of a check line."""
    m = _CHECK_START.match(statement)
    if not m:
        raise CaseError(f"cannot read the check {statement.strip()[:80]}")
    op, operand = m.groups()
    rest = statement[m.end() :].strip()
    options: dict[str, str] = {}
    if rest.startswith("dense<"):
        end = balanced_end(rest, rest.index("<"))
        second, rest = rest[:end], rest[end:].strip()
        if not rest.startswith(":"):
            raise CaseError(f"cannot read the type of {statement.strip()[:80]}")
        type_start = rest.index("tensor<")
        type_end = balanced_end(rest, type_start + len("tensor"))
        t, rest = rest[type_start:type_end], rest[type_end:]
        second = f"{second} : {t}"
    else:
        second_m = re.match(r"(%[\w#]+)", rest)
        second = second_m.group(1) if second_m else ""
        rest = rest[second_m.end() :] if second_m else rest
        t = ""
    for key, value in re.findall(r"(\w+)\s*=\s*([^,:{}\s]+)", rest):
        options[key] = value
    if not t:
        colon = rest.rfind(":")
        t = split_types(rest[colon + 1 :])[0] if colon >= 0 else ""
    return op, operand, second, t, options


def interpret_cases(path: Path, root: Path) -> list[Case]:
    """The cases of one `interpret` file: one per function that checks, in each
    `// -----` chunk (`FILE#CHUNK`, `FILE#CHUNK.K` for a chunk's further ones)."""
    text = path.read_text()
    relative = path.relative_to(root).as_posix()
    family = relative.removeprefix("interpret/").removesuffix(".mlir")
    run_args = _ARGS.search(text)
    cases = []
    for number, (offset, chunk) in enumerate(split_chunks(text)):
        if "func.func" not in chunk:
            continue
        case_id = f"{relative.removesuffix('.mlir')}#{number}"
        try:
            cases += _chunk_cases(chunk, offset, case_id, family, relative, run_args)
        except CaseError as error:
            cases.append(_broken(case_id, family, relative, str(error)))
    return cases


def _broken(case_id: str, family: str, relative: str, why: str) -> Case:
    """A placeholder whose program is the runner's complaint (classified CRASH)."""
    return Case(case_id, "interpret", family, "-", "", "", (), "", source=relative + ": " + why)


@dataclass
class _Checking:
    """A function of a chunk that checks: what it returns instead, and its checks."""

    name: str
    returned: list[str] = field(default_factory=list)
    types: list[str] = field(default_factory=list)
    constants: list[tuple[str, str]] = field(default_factory=list)
    checks: list[Check] = field(default_factory=list)
    serialized: bool = False

    def result(self, value: str, t: str) -> int:
        if value not in self.returned:
            self.returned.append(value)
            self.types.append(t)
        return self.returned.index(value)

    def add(self, statement: str) -> None:
        op, operand, second, t, options = _parse_check(statement)
        tolerance = float(options.get("tolerance", CHECK_ALMOST_EQ_DEFAULT))
        if op in ("expect_eq_const", "expect_almost_eq_const"):
            literal, _, t = second.rpartition(" : ")
            self.constants.append((literal, t))
            rule = "eq" if op == "expect_eq_const" else "almost_eq"
            index = len(self.constants) - 1
            self.checks.append(Check(rule, self.result(operand, t), index, tolerance=tolerance))
        elif op in ("expect_eq", "expect_almost_eq", "expect_close"):
            rule = {"expect_eq": "eq", "expect_almost_eq": "almost_eq", "expect_close": "close"}
            self.checks.append(
                Check(
                    rule[op],
                    self.result(operand, t),
                    self.result(second, t),
                    tolerance=tolerance,
                    max_ulp=int(options.get("max_ulp_difference", 1)),
                    min_ulp=int(options.get("min_ulp_difference", 0)),
                    against_actual=True,
                )
            )
        elif op == "expect_serialized_eq":
            # The interpreter's probe recorded the value: the oracle recomputes it.
            self.result(operand, t)
            self.serialized = True
        else:
            raise CaseError(f"unknown check check.{op}")

    def oracle(self, program: str) -> tuple[str, tuple[Check, ...]]:
        """The oracle program and the checks against it."""
        if self.serialized:  # the interpreter on the program itself, every result equal
            return _as_main(program, self.name), tuple(
                Check("eq", k, k) for k in range(len(self.returned))
            )
        if not self.constants:  # every check compares two computed values
            return "", tuple(self.checks)
        types = ", ".join(t for _, t in self.constants)
        names = ", ".join(f"%e{k}" for k in range(len(self.constants)))
        return "\n".join(
            [
                "module {",
                f"  func.func @main() -> ({types}) {{",
                *(
                    f"    %e{k} = stablehlo.constant {literal} : {t}"
                    for k, (literal, t) in enumerate(self.constants)
                ),
                f"    func.return {names} : {types}",
                "  }",
                "}",
            ]
        ), tuple(self.checks)


def _chunk_cases(
    chunk: str, offset: int, case_id: str, family: str, relative: str, run_args: re.Match | None
) -> list[Case]:
    lines = chunk.split("\n")
    check_lines = [i for i, line in enumerate(lines) if _CHECK_START.match(line)]
    if not check_lines:
        case = _unchecked_case(lines, offset, case_id, family, relative, run_args)
        return [case] if case is not None else []
    functions = [i for i, line in enumerate(lines) if _SIGNATURE_HEAD.match(line)]
    checking: dict[int, _Checking] = {}  # by the line of the function's signature
    drop: set[int] = set()
    for at in check_lines:
        if at in drop:
            continue
        start = max((i for i in functions if i < at), default=None)
        signature = _signature(lines[start]) if start is not None else None
        if signature is None:
            raise CaseError(f"cannot read the function of the check at line {offset + at + 1}")
        if signature.params.strip():
            raise CaseError(f"the checking function @{signature.name} takes arguments")
        statement, last = _statements(lines, at)
        drop.update(range(at, last + 1))
        checking.setdefault(start, _Checking(signature.name)).add(statement)
    new = []
    ends = {start: _function_span(lines, start) for start in checking}
    for j, line in enumerate(lines):
        if j in drop:
            continue
        if j in checking:
            sig = _signature(line)
            line = f"{sig.head}() -> ({', '.join(checking[j].types)}) {{"
        else:
            owner = next((s for s, e in ends.items() if s < j < e), None)
            if owner is not None and _RETURN.match(line) and _depth_at(lines, owner, j) == 1:
                f = checking[owner]
                indent = line[: len(line) - len(line.lstrip())]
                line = f"{indent}func.return {', '.join(f.returned)} : {', '.join(f.types)}"
        new.append(line)
    program = "\n".join(new)
    cases = []
    for k, f in enumerate(checking.values()):
        oracle, checks = f.oracle(program)
        cases.append(
            Case(
                id=case_id if k == 0 else f"{case_id}.{k}",
                suite="interpret",
                family=family,
                element=element_of(f.types[0]),
                program=program,
                function=f.name,
                checks=checks,
                oracle_program=oracle,
                source=relative,
                line_offset=offset,
            )
        )
    return cases


def _depth_at(lines: list[str], start: int, line: int) -> int:
    """The region depth (1 = the function's body) at `line` of the function at `start`."""
    depth = 0
    for text in lines[start:line]:
        for i, c in enumerate(text):
            if c == "{":
                depth += 1
            elif c == "}":
                depth -= 1
    return depth


def _as_main(program: str, name: str) -> str:
    """`program` with function `@name` renamed `@main` (for the interpreter)."""
    if name == "main":
        return program
    program = re.sub(r"@main\b", "@accy_renamed_main", program)
    return re.sub(rf"@{re.escape(name)}\b", "@main", program)


def _unchecked_case(
    lines: list[str],
    offset: int,
    case_id: str,
    family: str,
    relative: str,
    run_args: re.Match | None,
) -> Case | None:
    """A chunk without checks: its `@main` (or only function) against the interpreter,
    with the RUN line's `--args` as inputs; None when it returns nothing (a chunk that
    only prints, or only orders side effects, checks nothing)."""
    signatures = {sig.name: sig for line in lines if (sig := _signature(line))}
    name = "main" if "main" in signatures else None
    if name is None and len(signatures) == 1:
        name = next(iter(signatures))
    if name is None:
        raise CaseError("a chunk without checks and without one entry function")
    signature = signatures[name]
    results_text = signature.results.removeprefix("->").strip()
    results = split_types(results_text) if results_text else []
    if not results:
        return None
    params = _parameters(signature.params) if signature.params.strip() else []
    inputs_program = None
    if params:
        if run_args is None:
            raise CaseError(f"@{name} takes arguments but the RUN line gives none")
        values = _split_top(run_args.group(1)[1:-1])
        if len(values) != len(params):
            raise CaseError(f"--args gives {len(values)} values for {len(params)} parameters")
        types = [t for _, t, _ in params]
        inputs_program = "\n".join(
            [
                "module {",
                f"  func.func @main() -> ({', '.join(types)}) {{",
                *(f"    %a{k} = stablehlo.constant {v.strip()}" for k, v in enumerate(values)),
                f"    func.return {', '.join(f'%a{k}' for k in range(len(values)))} : {', '.join(types)}",
                "  }",
                "}",
            ]
        )
    program = "\n".join(lines)
    return Case(
        id=case_id,
        suite="interpret",
        family=family,
        element=element_of(results[0]),
        program=program,
        function=name,
        checks=tuple(Check("eq", k, k) for k in range(len(results))),
        oracle_program=_as_main(program, name),
        oracle_arguments=tuple(range(len(params))),
        inputs_program=inputs_program,
        source=relative,
        line_offset=offset,
    )


# ---------------------------------------------------------------------------------------
# Collecting cases
# ---------------------------------------------------------------------------------------

SUITES = ("testdata", "interpret")


def collect(root: Path, suites: tuple[str, ...] = SUITES) -> list[Case]:
    """Every case of `suites` under `root` (the suite copy's folder), in a stable order;
    a file the runner cannot read becomes a placeholder case (its `function` empty)."""
    cases: list[Case] = []
    if "testdata" in suites:
        paths = sorted((root / "testdata").glob("*.mlir"))
        for path in paths:
            family = testdata_family(path.stem)
            cases.append(_guarded(lambda p, r, f=family: testdata_case(p, r), path, root, family))
        known = {testdata_family(p.stem) for p in paths}
        for path in sorted((root / "testdata" / "dynamic").glob("*.mlir")):
            family = dynamic_family(path.stem, known)
            cases.append(_guarded(lambda p, r, f=family: dynamic_case(p, r, f), path, root, family))
    if "interpret" in suites:
        for path in sorted((root / "interpret").rglob("*.mlir")):
            cases.extend(interpret_cases(path, root))
    return cases


def _guarded(make, path: Path, root: Path, family: str) -> Case:
    try:
        return make(path, root)
    except CaseError as error:
        relative = path.relative_to(root).as_posix()
        return Case(
            relative.removesuffix(".mlir"),
            "testdata",
            family,
            "-",
            "",
            "",
            (),
            "",
            source=f"{relative}: {error}",
        )


# ---------------------------------------------------------------------------------------
# Inputs and comparison
# ---------------------------------------------------------------------------------------


def random_array(spec: RandomInput, rng: np.random.Generator, dtype: np.dtype) -> np.ndarray:
    """A seeded input: the dimension size for "dim", else small random values."""
    if spec.kind == "dim":
        return np.full(spec.shape, DYNAMIC_SIZE, dtype=dtype)
    if dtype == np.bool_:
        return rng.integers(0, 2, spec.shape).astype(np.bool_)
    if np.issubdtype(dtype, np.integer):
        low = 0 if np.issubdtype(dtype, np.unsignedinteger) else -3
        return rng.integers(low, 4, spec.shape).astype(dtype)
    return rng.standard_normal(spec.shape).astype(dtype)


def compare(check: Check, actual: np.ndarray, expected: np.ndarray) -> str | None:
    """None when `actual` satisfies `check`'s rule against `expected`, else what differs."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    if actual.shape != expected.shape:
        return f"shape {actual.shape}, expected {expected.shape}"
    if actual.dtype != expected.dtype:
        return f"element type {actual.dtype}, expected {expected.dtype}"
    if actual.size == 0:
        return None
    a, e = actual.astype(np.float64), expected.astype(np.float64)
    is_float = actual.dtype.kind == "f" or actual.dtype.name == "bfloat16"
    if not is_float:
        return _mismatch(actual != expected, actual, expected, "differ")
    same = (a == e) | (np.isnan(a) & np.isnan(e))
    if check.rule == "eq":
        return _mismatch(~same, actual, expected, "differ")
    ulps = ulp_difference(actual, expected)
    if check.rule == "close":
        bad = (ulps > check.max_ulp) | (ulps < check.min_ulp)
        return _mismatch(bad, actual, expected, f"are more than {check.max_ulp} ULP off", ulps)
    with np.errstate(invalid="ignore"):
        near = same | (np.isfinite(a) & np.isfinite(e) & (np.abs(a - e) <= check.tolerance))
    if check.rule == "almost_eq":
        return _mismatch(~near, actual, expected, f"are more than {check.tolerance:g} off")
    # "oracle": either of StableHLO's float rules.
    bad = ~near & (ulps > check.max_ulp)
    what = f"are more than {check.max_ulp} ULP and {check.tolerance:g} off"
    return _mismatch(bad, actual, expected, what, ulps)


def _mismatch(
    bad: np.ndarray,
    actual: np.ndarray,
    expected: np.ndarray,
    what: str,
    ulps: np.ndarray | None = None,
) -> str | None:
    count = int(np.count_nonzero(bad))
    if count == 0:
        return None
    bad = np.reshape(bad, actual.shape)  # a 0-d comparison may come back 1-d
    if ulps is not None:
        ulps = np.reshape(ulps, actual.shape)
    index = tuple(int(i) for i in np.argwhere(bad)[0]) if bad.ndim else ()
    detail = ""
    if ulps is not None and ulps[index] < np.iinfo(np.uint64).max:
        detail = f" ({int(ulps[index])} ULP)"
    return (
        f"{count} of {bad.size} elements {what}; first at {list(index)}: "
        f"{actual[index]!r}, expected {expected[index]!r}{detail}"
    )


def sample(cases: list[Case], every: int) -> list[Case]:
    """A fixed, deterministic subset: the cases whose id hashes to 0 modulo `every`."""
    return [c for c in cases if zlib.crc32(c.id.encode()) % every == 0]
