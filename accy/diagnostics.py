"""Errors that accy reports to users: a message and, where known, a source location.

The CLI prints them as `file:line:col: error: message` and exits with status 1; the Python
API raises them. A location is an MLIR location attribute (`FileLineColLoc` when accy knows
the file position) or None.
"""

from __future__ import annotations

from xdsl.dialects.builtin import (
    FileLineColLoc,
    IntAttr,
    LocationAttr,
    NameLoc,
    StringAttr,
    UnknownLoc,
)


def format_location(location: LocationAttr | None) -> str | None:
    """`file:line:col` for a file location (looking through a name location), else None."""
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
        self.location = None if isinstance(location, UnknownLoc) else location

    def diagnostic(self) -> str:
        """The error in the compiler-diagnostic form users and FileCheck read."""
        where = format_location(self.location)
        prefix = f"{where}: " if where else ""
        return f"{prefix}error: {self.message}"

    def __str__(self) -> str:
        return self.diagnostic()


class AccyParseError(AccyError):
    """Text that is not a valid accy program (syntax)."""


class AccyVerifyError(AccyError):
    """A program whose ops break their shape and type rules."""


class AccyInputError(AccyError):
    """An argument passed to a function does not match its signature."""


def decode_source(data: bytes, filename: str, line_offset: int = 0) -> str:
    """`data` as UTF-8 text, or an AccyParseError located at the first byte that is not."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
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
