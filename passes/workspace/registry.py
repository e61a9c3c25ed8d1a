"""The kernel-family registry: which family runs a work item, and the workspaces it declares.

Families live in TOML files, user files first and then the package's ``accy/families/*.toml``::

    [[family]]
    id = "reduce.split"
    kinds = ["reduce"]              # work-item kinds the family runs (see KINDS)
    when = "k > 4096"               # optional: the family applies where this is non-zero
    [[family.workspace]]
    name = "partials"
    bytes = ["kept * sm_count * 8 * 4"]  # the largest of these (names: sizing.py)
    arena = true                    # inside the device arena, or its own allocation

Invariants:
- Families keep file order, files keep load order; ``select`` returns the first family that
  runs the kind and whose ``when`` holds, so a user file overrides the package's files.
- The first definition of a family id wins: a later family with that id (in a later file) is
  shadowed and never selected. An id defined twice in one file is an error.
- Every malformed file is a ``RegistryError`` rendered ``FILE:LINE:COL: error: MESSAGE``;
  expressions are parsed at load time, so a loaded registry holds only well-formed ones.
- Evaluation never defaults a name: a failing ``when`` or workspace expression is a
  ``FamilyEvaluationError`` naming the family, the workspace and the underlying error.
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, NoReturn

from accy.passes.workspace.expr import Expression, ExpressionError
from xdsl.dialects.builtin import FileLineColLoc, IntAttr, StringAttr

from accy.diagnostics import AccyError

KINDS: frozenset[str] = frozenset(
    {
        "elementwise",
        "broadcast",
        "reshape",
        "transpose",
        "reduce",
        "scan",
        "dot",
        "scatter",
        "fold",
        "sort",
        "window",
        "convolution",
        "iterate",
    }
)
"""The work-item kinds a family may run."""

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


class FamilyEvaluationError(Exception):
    """A family's ``when`` or workspace expression failed to evaluate.

    ``what`` is ``"when"`` or ``"workspace 'NAME'"``; ``error`` is the expression's error.
    """

    def __init__(self, family: str, what: str, error: ExpressionError):
        super().__init__(f"family '{family}' {what}: {error}")
        self.family = family
        self.what = what
        self.error = error


@dataclass(frozen=True)
class WorkspaceDecl:
    """A scratch buffer a family declares: its size is the largest of ``bytes``."""

    name: str
    bytes: tuple[Expression, ...]
    arena: bool
    """True: carved out of the device arena; False: its own allocation."""


@dataclass(frozen=True)
class KernelFamily:
    """A kernel family: the work-item kinds it runs, where it applies, its workspaces."""

    id: str
    kinds: tuple[str, ...]
    when: Expression | None
    workspaces: tuple[WorkspaceDecl, ...]
    source: str
    """The file that declared the family, for diagnostics."""

    def applies(self, kind: str, env: Mapping[str, int]) -> bool:
        """Whether the family runs ``kind`` and its ``when`` (if any) is non-zero in ``env``."""
        if kind not in self.kinds:
            return False
        if self.when is None:
            return True
        try:
            return self.when.evaluate(env) != 0
        except ExpressionError as error:
            raise FamilyEvaluationError(self.id, "when", error) from error

    def workspace_bytes(self, env: Mapping[str, int]) -> dict[str, int]:
        """Each workspace's size in bytes in ``env`` (the largest of its expressions),
        keyed by name in declaration order."""
        sizes: dict[str, int] = {}
        for workspace in self.workspaces:
            try:
                sizes[workspace.name] = max(e.evaluate(env) for e in workspace.bytes)
            except ExpressionError as error:
                what = f"workspace '{workspace.name}'"
                raise FamilyEvaluationError(self.id, what, error) from error
        return sizes


@dataclass(frozen=True)
class FamilyRegistry:
    """Kernel families in selection order."""

    families: tuple[KernelFamily, ...]

    @staticmethod
    def load(paths: Sequence[Path] = (), include_package: bool = True) -> FamilyRegistry:
        """Load ``paths`` in order, then (if ``include_package``) the package's family files
        sorted by name. A family whose id an earlier one already defined is shadowed."""
        families: dict[str, KernelFamily] = {}
        for source, text in _sources(paths, include_package):
            for family in _parse_file(source, text):
                families.setdefault(family.id, family)
        return FamilyRegistry(tuple(families.values()))

    def select(self, kind: str, env: Mapping[str, int]) -> KernelFamily | None:
        """The first family that runs ``kind`` and applies in ``env``, or None."""
        if kind not in KINDS:
            raise ValueError(f"unknown work-item kind '{kind}' (expected one of {_listing(KINDS)})")
        return next((f for f in self.families if f.applies(kind, env)), None)


# --------------------------------------------------------------------------------------------
# Sources
# --------------------------------------------------------------------------------------------


def _sources(paths: Sequence[Path], include_package: bool) -> Iterator[tuple[str, str]]:
    """(name, text) of each family file in load order."""
    for path in paths:
        yield str(path), _read_user_file(path)
    if include_package:
        directory = resources.files("accy") / "families"
        entries = [e for e in directory.iterdir() if e.name.endswith(".toml") and e.is_file()]
        for entry in sorted(entries, key=lambda e: e.name):
            yield str(entry), entry.read_text(encoding="utf-8")


def _read_user_file(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise RegistryError(str(path), 1, 1, f"cannot read family file: {error}") from error


def _parse_file(source: str, text: str) -> list[KernelFamily]:
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
    """Turns one parsed family file into ``KernelFamily`` values, failing at the right line."""

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

    def families(self, document: dict[str, Any]) -> list[KernelFamily]:
        """Every ``[[family]]`` of the document, checked."""
        for key in document:
            if key != "family":
                self._fail(f"unknown top-level key '{key}' (expected 'family')", None, key=key)
        tables = document.get("family", [])
        if not isinstance(tables, list) or not all(isinstance(t, dict) for t in tables):
            self._fail("'family' must be an array of tables ([[family]])", None, key="family")
        families: list[KernelFamily] = []
        seen: set[str] = set()
        for index, table in enumerate(tables):
            family = self._family(index, table)
            if family.id in seen:
                self._fail(f"family '{family.id}' is defined twice in this file", index, key="id")
            seen.add(family.id)
            families.append(family)
        return families

    def _family(self, index: int, table: dict[str, Any]) -> KernelFamily:
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
        return KernelFamily(family_id, tuple(kinds), when, tuple(decls), self._source)

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
