"""Families a user declares: TOML files in the workspace seed's format, read into
`ExpressionFamily`s (the interface every family implements, `family.py`)::

    [[family]]
    id = "reduce.split"
    kinds = ["reduce"]              # work-item kinds the family runs (see KINDS)
    when = "k > 4096"               # optional: the family applies where this is non-zero
    [[family.workspace]]
    name = "partials"
    bytes = ["kept * sm_count * 8 * 4"]  # the largest of these (names: sizing.py)
    arena = true                    # inside the device arena, or its own allocation

Invariants:
- Families keep file order (`read_declared`); an id defined twice in one file is an error.
- Every malformed file is a ``RegistryError`` rendered ``FILE:LINE:COL: error: MESSAGE``;
  expressions are parsed at load time, so a loaded registry holds only well-formed ones.
- Evaluation never defaults a name: a failing ``when`` or workspace expression is a
  ``FamilyEvaluationError`` naming the family, the workspace and the underlying error.
"""

from __future__ import annotations

import tomllib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

from accy.passes.families.expr import Expression, ExpressionError
from accy.passes.families.family import KINDS, ExpressionFamily, WorkspaceDecl
from xdsl.dialects.builtin import FileLineColLoc, IntAttr, StringAttr

from accy.diagnostics import AccyError

_FAMILY_KEYS = ("id", "kinds", "when", "workspace")
_WORKSPACE_KEYS = ("name", "bytes", "arena")


class RegistryError(AccyError):
    """A family file that cannot be read or is malformed, located at a line and column;
    printed `FILE:LINE:COL: error: MESSAGE`."""

    def __init__(self, source: str, line: int, column: int, message: str):
        location = FileLineColLoc(StringAttr(source), IntAttr(line), IntAttr(column))
        super().__init__(message, location)
        self.source = source
        self.line = line
        self.column = column
        self.message = message


# --------------------------------------------------------------------------------------------
# Sources
# --------------------------------------------------------------------------------------------


def read_declared(paths: Sequence[Path]) -> list[ExpressionFamily]:
    """The families of the files `paths`, in load order and file order."""
    return [family for path in paths for family in _parse_file(str(path), _read_user_file(path))]


def _read_user_file(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise RegistryError(str(path), 1, 1, f"cannot read family file: {error}") from error


def _parse_file(source: str, text: str) -> list[ExpressionFamily]:
    """The families of one file, in file order."""
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        message, line, column = _split_toml_error(str(error), text)
        raise RegistryError(source, line, column, message) from error
    return _FileReader(source, _Locator(text)).families(document)


def _split_toml_error(message: str, text: str) -> tuple[str, int, int]:
    """Split tomllib's ``MESSAGE (at line L, column C)`` or ``MESSAGE (at end of document)``
    into the message, line and column."""
    head, _, where = message.rpartition(" (at ")
    where = where.removesuffix(")")
    if where == "end of document":
        lines = text.split("\n")
        return head, len(lines), len(lines[-1]) + 1
    line_part, _, column_part = where.partition(", column ")
    line_text = line_part.removeprefix("line ")
    if head and line_text.isdigit() and column_part.isdigit():
        return head, int(line_text), int(column_part)
    return message, 1, 1


# --------------------------------------------------------------------------------------------
# Locating keys in the raw text
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Section:
    """A run of lines under one table header (or the top of the file: ``header`` 0).

    ``family`` and ``workspace`` index the ``[[family]]`` and, within it, the
    ``[[family.workspace]]`` the section belongs to; None where it is not inside one.
    """

    header: int
    end: int
    family: int | None
    workspace: int | None


class _Locator:
    """Maps (family index, workspace index, key) to a 1-based (line, column) of the raw text.

    TOML keeps no positions, so this scans the text: table headers split it into sections and
    a key is the first ``key =`` line of its section. Best effort: a key that cannot be found
    (an inline table, a quoted key) falls back to its section's header, then to line 1.
    """

    def __init__(self, text: str):
        self._lines = text.split("\n")
        self._sections = self._split_sections()

    def _split_sections(self) -> list[_Section]:
        starts: list[tuple[int, int | None, int | None]] = [(0, None, None)]
        family, workspace = -1, -1
        for number, line in enumerate(self._lines, start=1):
            header = _header_of(line)
            if header == "[[family]]":
                family, workspace = family + 1, -1
                starts.append((number, family, None))
            elif header == "[[family.workspace]]" and family >= 0:
                workspace += 1
                starts.append((number, family, workspace))
            elif header is not None:
                starts.append((number, None, None))
        ends = [start for start, _, _ in starts[1:]] + [len(self._lines) + 1]
        return [_Section(h, end, f, w) for (h, f, w), end in zip(starts, ends, strict=True)]

    def find(
        self, family: int | None, workspace: int | None = None, key: str | None = None
    ) -> tuple[int, int]:
        """Where ``key`` of the given family (or workspace, or the top level) is written."""
        section = next(
            (s for s in self._sections if (s.family, s.workspace) == (family, workspace)), None
        )
        if section is None:
            return 1, 1
        if key is not None:
            for number in range(section.header + 1, section.end):
                column = _key_column(self._lines[number - 1], key)
                if column is not None:
                    return number, column
        return max(section.header, 1), 1


def _header_of(line: str) -> str | None:
    """The table header a line opens, whitespace removed (``[[family]]``), or None."""
    stripped = line.strip()
    if not stripped.startswith("["):
        return None
    header, closer, _ = stripped.partition("]")
    if stripped.startswith("[["):
        header, closer, _ = stripped.partition("]]")
    return "".join((header + closer).split()) if closer else None


def _key_column(line: str, key: str) -> int | None:
    """The 1-based column of ``key`` if ``line`` assigns it (``key = ...``), else None."""
    body = line.lstrip()
    if body.startswith(key) and body[len(key) :].lstrip().startswith("="):
        return len(line) - len(body) + 1
    return None


# --------------------------------------------------------------------------------------------
# Validation
# --------------------------------------------------------------------------------------------


def _toml_type(value: object) -> str:
    """The TOML name of a parsed value's type."""
    names = ((bool, "a boolean"), (int, "an integer"), (float, "a float"), (str, "a string"))
    names += ((list, "an array"), (dict, "a table"))
    return next((name for kind, name in names if isinstance(value, kind)), "a date or time")


def _listing(names: frozenset[str] | Sequence[str]) -> str:
    return ", ".join(sorted(names))


class _FileReader:
    """Turns one parsed family file into ``ExpressionFamily`` values, failing at the right
    line."""

    def __init__(self, source: str, locator: _Locator):
        self._source = source
        self._locator = locator

    def _fail(
        self,
        message: str,
        family: int | None,
        workspace: int | None = None,
        key: str | None = None,
    ) -> NoReturn:
        """Raise ``message`` at ``key`` of the family or workspace (its header without a key)."""
        line, column = self._locator.find(family, workspace, key)
        raise RegistryError(self._source, line, column, message)

    def families(self, document: dict[str, Any]) -> list[ExpressionFamily]:
        """Every ``[[family]]`` of the document, checked."""
        for key in document:
            if key != "family":
                self._fail(f"unknown top-level key '{key}' (expected 'family')", None, key=key)
        tables = document.get("family", [])
        if not isinstance(tables, list) or not all(isinstance(t, dict) for t in tables):
            self._fail("'family' must be an array of tables ([[family]])", None, key="family")
        families: list[ExpressionFamily] = []
        seen: set[str] = set()
        for index, table in enumerate(tables):
            family = self._family(index, table)
            if family.id in seen:
                self._fail(f"family '{family.id}' is defined twice in this file", index, key="id")
            seen.add(family.id)
            families.append(family)
        return families

    def _family(self, index: int, table: dict[str, Any]) -> ExpressionFamily:
        self._check_keys(table, _FAMILY_KEYS, f"family #{index + 1}", index)
        family_id = self._string(table, "id", f"family #{index + 1}", index)
        label = f"family '{family_id}'"
        kinds = self._strings(table, "kinds", label, index)
        for kind in kinds:
            if kind not in KINDS:
                message = f"{label}: unknown kind '{kind}' (expected one of {_listing(KINDS)})"
                self._fail(message, index, key="kinds")
        when = None
        if "when" in table:
            text = self._string(table, "when", label, index)
            when = self._expression(text, f"{label} when", index, "when")
        workspaces = table.get("workspace", [])
        if not isinstance(workspaces, list) or not all(isinstance(w, dict) for w in workspaces):
            message = f"{label}: 'workspace' must be an array of tables ([[family.workspace]])"
            self._fail(message, index, key="workspace")
        decls: list[WorkspaceDecl] = []
        for w_index, w_table in enumerate(workspaces):
            decl = self._workspace(label, index, w_index, w_table)
            if any(d.name == decl.name for d in decls):
                message = f"{label}: workspace '{decl.name}' is declared twice"
                self._fail(message, index, w_index, "name")
            decls.append(decl)
        return ExpressionFamily(family_id, tuple(kinds), when, tuple(decls), self._source)

    def _workspace(
        self, label: str, family: int, index: int, table: dict[str, Any]
    ) -> WorkspaceDecl:
        self._check_keys(table, _WORKSPACE_KEYS, f"{label} workspace", family, index)
        name = self._string(table, "name", f"{label} workspace", family, index)
        label = f"{label} workspace '{name}'"
        texts = self._strings(table, "bytes", label, family, index)
        sizes = tuple(
            self._expression(text, f"{label} bytes[{i}]", family, "bytes", index)
            for i, text in enumerate(texts)
        )
        if "arena" not in table:
            self._fail(f"{label}: missing key 'arena' (true or false)", family, index)
        if not isinstance(table["arena"], bool):
            message = f"{label}: 'arena' must be a boolean, got {_toml_type(table['arena'])}"
            self._fail(message, family, index, "arena")
        return WorkspaceDecl(name, sizes, table["arena"])

    def _check_keys(
        self,
        table: dict[str, Any],
        allowed: tuple[str, ...],
        label: str,
        family: int,
        workspace: int | None = None,
    ) -> None:
        for key in table:
            if key not in allowed:
                message = f"{label}: unknown key '{key}' (expected one of {_listing(allowed)})"
                self._fail(message, family, workspace, key)

    def _string(
        self,
        table: dict[str, Any],
        key: str,
        label: str,
        family: int,
        workspace: int | None = None,
    ) -> str:
        """A required, non-empty string value."""
        if key not in table:
            self._fail(f"{label}: missing key '{key}'", family, workspace)
        value = table[key]
        if not isinstance(value, str) or not value:
            got = "an empty string" if value == "" else _toml_type(value)
            message = f"{label}: '{key}' must be a non-empty string, got {got}"
            self._fail(message, family, workspace, key)
        return value

    def _strings(
        self,
        table: dict[str, Any],
        key: str,
        label: str,
        family: int,
        workspace: int | None = None,
    ) -> list[str]:
        """A required, non-empty array of strings."""
        if key not in table:
            self._fail(f"{label}: missing key '{key}'", family, workspace)
        value = table[key]
        if not isinstance(value, list) or not value:
            got = "an empty array" if value == [] else _toml_type(value)
            message = f"{label}: '{key}' must be a non-empty array of strings, got {got}"
            self._fail(message, family, workspace, key)
        for item in value:
            if not isinstance(item, str):
                message = f"{label}: '{key}' must hold strings, got {_toml_type(item)}"
                self._fail(message, family, workspace, key)
        return value

    def _expression(
        self, text: str, label: str, family: int, key: str, workspace: int | None = None
    ) -> Expression:
        try:
            return Expression.parse(text)
        except ExpressionError as error:
            self._fail(f"{label}: bad expression '{text}': {error}", family, workspace, key)
