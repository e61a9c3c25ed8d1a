"""Errors that accy reports to users: a message and, where known, a source location.

The CLI prints them as `file:line:col: error: message` and exits with status 1; the Python
API raises them. A location is an MLIR location attribute (`FileLineColLoc` when accy knows
the file position) or None.

xDSL is imported only where a location is given or made, so the runtime loader (numpy and
ctypes alone, `accy.runtime.loader`) raises these errors too.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from xdsl.dialects.builtin import FileLineColLoc, LocationAttr


def format_location(location: LocationAttr | None) -> str | None:
    """`file:line:col` for a file location (looking through a name location), else None."""
    if location is None:
        return None
    from xdsl.dialects.builtin import FileLineColLoc, NameLoc

    if isinstance(location, NameLoc):
        location = location.child_loc
    if isinstance(location, FileLineColLoc):
        return f"{location.filename.data}:{location.line.data}:{location.column.data}"
    return None


class AccyError(Exception):
    """A user-facing error: a message, a location, and a severity word for printing."""

    def __init__(self, message: str, location: LocationAttr | None = None):
        super().__init__(message)
        self.message = message
        self.location = None if _is_unknown(location) else location

    def diagnostic(self) -> str:
        """The error in the compiler-diagnostic form users and FileCheck read."""
        where = format_location(self.location)
        prefix = f"{where}: " if where else ""
        return f"{prefix}error: {self.message}"

    def __str__(self) -> str:
        return self.diagnostic()


def _is_unknown(location: LocationAttr | None) -> bool:
    if location is None:
        return False
    from xdsl.dialects.builtin import UnknownLoc

    return isinstance(location, UnknownLoc)


class AccyParseError(AccyError):
    """Text that is not a valid accy program (syntax)."""


class AccyVerifyError(AccyError):
    """A program whose ops break their shape and type rules."""


class AccyInputError(AccyError):
    """An argument passed to a function does not match its signature."""


class AccyTypeError(AccyError, TypeError):
    """An argument of accy's Python API of the wrong type (`accy.parse(None)`); the message
    names the function, the argument and what it takes."""


def wrong_type(function: str, argument: str, expected: str, value: object) -> AccyTypeError:
    """`function`'s `argument` is not `expected`: what it takes and what it was given."""
    return AccyTypeError(
        f"{function}: {argument} must be {expected}, not {type(value).__name__} ({value!r:.60})"
    )


class StableHloTextError(AccyParseError):
    """StableHLO (or CHLO) text given where an accy program was expected: names the op and
    how to import it (`remedy`: `accy.import_stablehlo` in the API, the flag in a CLI)."""

    def __init__(
        self, op_name: str, location: LocationAttr | None, remedy: str = "accy.import_stablehlo"
    ):
        super().__init__(
            f"'{op_name}' is a StableHLO op, not an accy op: StableHLO text (e.g. JAX's "
            f"lowered text) is read with {remedy}",
            location,
        )
        self.op_name = op_name

    def with_remedy(self, remedy: str) -> StableHloTextError:
        """The same error advising `remedy` (a command line's `--import-stablehlo`)."""
        return StableHloTextError(self.op_name, self.location, remedy)


def looks_like_path(text: str) -> bool:
    """Whether `text` reads as a file name rather than a program: one line, no `{`, ending
    in `.mlir` (no program's text does)."""
    return "\n" not in text and "{" not in text and text.strip().endswith(".mlir")


def decode_source(data: bytes, filename: str, line_offset: int = 0) -> str:
    """`data` as UTF-8 text, or an AccyParseError located at the first byte that is not."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        from xdsl.dialects.builtin import FileLineColLoc, IntAttr, StringAttr

        start = error.start
        line = data.count(b"\n", 0, start) + 1 + line_offset
        column = start - (data.rfind(b"\n", 0, start) + 1) + 1
        location = FileLineColLoc(StringAttr(filename), IntAttr(line), IntAttr(column))
        raise AccyParseError(
            f"the input is not UTF-8 text (byte 0x{data[start]:02x})", location
        ) from None


class AccyMemoryError(AccyError, MemoryError):
    """A compiled program could not allocate the memory its plan needs (its arena or a
    separately allocated buffer); nothing ran."""


MAX_NESTING = 128
"""The deepest bracket nesting (`(`, `[`, `{`, `<` together: regions, types, attributes,
dense literals) accy reads. xDSL's parser, verifier and printer recurse once or more per
level, so text nested thousands deep ran out of Python stack (a RecursionError traceback)
in one of them; deeper text is a located error instead. `parse` lends the parser enough
stack for this depth; verifying and printing at it fit Python's default limit."""


def nesting_error(location: FileLineColLoc) -> AccyParseError:
    return AccyParseError(
        f"nesting deeper than {MAX_NESTING} levels of brackets; accy reads up to "
        f"{MAX_NESTING} levels of nested regions, types, attributes and literals",
        location,
    )
