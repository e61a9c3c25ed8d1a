"""Reading accy programs: the context of dialects accy knows, parsing with locations, and
verification that reports the location of the first op that fails.

Ops parsed from text without an explicit `loc(...)` get a `FileLineColLoc` of where their
text starts, so every later diagnostic (verifier, planner) can point at the source.

On top of xDSL's parser: dense literals of numbers are read in bulk (`accy.dense_literal`),
nesting deeper than `MAX_NESTING` is a located error rather than a RecursionError, and
shaped types spelled the same are built once. `benchmarks/parse_speed.py` measures it.
"""

from __future__ import annotations

import bisect
import io
import os
import re
import sys
import threading
from contextlib import contextmanager
from math import prod
from pathlib import Path

from xdsl.context import Context
from xdsl.dialects import arith, builtin, func, gpu, llvm, math, memref, scf
from xdsl.dialects.builtin import (
    FileLineColLoc,
    IntAttr,
    ModuleOp,
    StringAttr,
    UnknownLoc,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.parser import Parser
from xdsl.parser.generic_parser import ParserState
from xdsl.printer import Printer
from xdsl.traits import IsolatedFromAbove
from xdsl.utils.exceptions import DiagnosticException, ParseError, VerifyException
from xdsl.utils.lexer import Input, Span
from xdsl.utils.mlir_lexer import MLIRLexer, MLIRToken, MLIRTokenKind

from accy.dense_literal import DenseLiteral, with_float_bit_patterns
from accy.diagnostics import (
    MAX_NESTING,
    AccyError,
    AccyParseError,
    AccyVerifyError,
    StableHloTextError,
    decode_source,
    looks_like_path,
    nesting_error,
    wrong_type,
)
from accy.dialects.accy import verify_parameter_attributes
from accy.dialects.dialect import Accy
from accy.dialects.plan_verifier import verify_planned_module

UPSTREAM_DIALECTS = (
    builtin.Builtin,
    func.Func,
    arith.Arith,
    math.Math,
    memref.MemRef,
    scf.Scf,
    gpu.GPU,
    llvm.LLVM,
)
"""The upstream dialects accy programs and their lowerings use."""


def make_context() -> Context:
    """A context with the accy dialect and the upstream dialects of its lowerings."""
    ctx = Context()
    for dialect in (*UPSTREAM_DIALECTS, Accy):
        ctx.load_dialect(dialect)
    return ctx


MAX_SPLAT_ELEMENTS = 1 << 28
"""The largest splat constant (`dense<1.0> : tensor<...>`) accy reads: xDSL stores every
element, so a few characters of text could otherwise ask for any amount of memory."""

_FRAMES_PER_LEVEL = 16
"""Python frames xDSL's parser may use per nesting level (11 measured, for attribute
dictionaries), for the recursion limit `parse` sets while it parses."""

_SPLAT = re.compile(
    r'dense<\s*(?:[^\[\]<>"]{1,64}|"0x[0-9A-Fa-f]{1,32}")\s*>\s*:\s*tensor<((?:\d+x)+)'
)

_SHAPED_TYPES = frozenset(("tensor", "memref", "vector"))
_SIMPLE_SHAPED_TYPE = re.compile(
    r"(?:tensor|memref|vector)<(?:[0-9]+x|\?x)*(?:[su]?i[0-9]+|f16|bf16|f32|f64|index)>",
    re.ASCII,
)
"""A shaped type with a static or dynamic shape, a scalar element type and nothing else
(no layout, encoding or memory space): the spelling fixes the type."""

_OPENERS = frozenset(
    (MLIRTokenKind.L_PAREN, MLIRTokenKind.L_SQUARE, MLIRTokenKind.L_BRACE, MLIRTokenKind.LESS)
)
_BRACKETS = _OPENERS | frozenset(
    (MLIRTokenKind.R_PAREN, MLIRTokenKind.R_SQUARE, MLIRTokenKind.R_BRACE, MLIRTokenKind.GREATER)
)


class LinearLexer(MLIRLexer):
    """xDSL's lexer with a string-literal pattern that runs in linear time and space, and
    a limit on bracket nesting (`MAX_NESTING`).

    The pinned string pattern, `"(?:[^"...]+|\\...)*"`, nests quantifiers and backtracks
    exponentially over an unclosed string (30 characters took over a minute); a pattern
    with one character per repetition is linear but keeps a backtracking frame per
    character (a `dense<"0x...">` of 8 MB took 8 s and 1 GB). Possessive quantifiers match
    the same strings with neither.

    The depth is the number of brackets open before a token, except that the `{` of a
    region list in the generic form, `({`, adds no level to its `(`: a region is one level
    in either form, so what accy prints in either form reads back. The parser sometimes
    re-lexes from an earlier position (`_resume_from`), so each change of depth is logged
    with its position and undone when lexing goes back past it."""

    _unescaped_characters_regex = re.compile(r'"(?:[^"\\\n\v\f]++|\\(?:["nt\\]|[0-9A-Fa-f]{2}))*+"')

    def __init__(self, input: Input, locate=None):
        super().__init__(input)
        self.depth = 0
        """The nesting depth before the current position."""
        self._open: list[tuple[int, bool]] = []
        """(position, counts as a level) of each bracket open before the current position."""
        self._depth_log: list[tuple[int, tuple[int, bool] | None]] = []
        """(position, None) for a bracket opened there, (position, its opener) for one
        closed there."""
        self._paren_end = -1  # where the last token ended if it was a `(`
        self._locate = locate

    def lex(self) -> MLIRToken:
        token = super().lex()
        kind = token.kind
        if kind in _BRACKETS:
            start = token.span.start
            log, open_ = self._depth_log, self._open
            while log and log[-1][0] >= start:  # lexing again from an earlier position
                _, opener = log.pop()
                if opener is None:
                    self.depth -= open_.pop()[1]
                else:
                    open_.append(opener)
                    self.depth += opener[1]
            if kind in _OPENERS:
                level = not (
                    kind is MLIRTokenKind.L_BRACE
                    and self._paren_end >= 0
                    and not self.input.content[self._paren_end : start].strip()
                )
                if level and self.depth >= MAX_NESTING:
                    raise nesting_error(self.location(start))
                open_.append((start, level))
                self.depth += level
                log.append((start, None))
            elif open_:
                opener = open_.pop()
                self.depth -= opener[1]
                log.append((start, opener))
        self._paren_end = token.span.end if kind is MLIRTokenKind.L_PAREN else -1
        return token

    def location(self, position: int) -> FileLineColLoc:
        if self._locate is not None:
            return self._locate(position)
        where = Span(position, position + 1, self.input).get_location()
        return FileLineColLoc(
            StringAttr(where.file or "<input>"), IntAttr(where.line), IntAttr(where.col)
        )


class LocatingParser(Parser):
    """An xDSL parser that gives each op without `loc(...)` the file position of its text,
    reads with `LinearLexer`, reports attribute values out of range as parse errors and
    reads dense literals of integers and floats itself (`parse_dense_int_or_fp_elements_attr`).
    Constructing it lexes the first token (a `ParseError` for a bad one)."""

    def __init__(self, ctx: Context, text: str, filename: str, line_offset: int = 0):
        super().__init__(ctx, "", filename)
        self._text = text
        self._filename = StringAttr(filename)
        self._line_offset = line_offset
        self._line_starts: list[int] | None = None
        self._int_attrs: dict[int, IntAttr] = {}
        self._types: dict[str, Attribute] = {}
        self._parser_state = ParserState(LinearLexer(Input(text, filename), self.location_of))
        self._open_regions: list[int] = []
        """The position of the `{` of each region being parsed, innermost last."""

    def location_of(self, position: int) -> FileLineColLoc:
        if self._line_starts is None:
            self._line_starts = _line_starts(self._text)
        line = bisect.bisect_right(self._line_starts, position)
        column = position - self._line_starts[line - 1] + 1
        return FileLineColLoc(
            self._filename, self._int_attr(line + self._line_offset), self._int_attr(column)
        )

    def _int_attr(self, value: int) -> IntAttr:
        # Attributes are immutable: one IntAttr per number serves every location.
        attr = self._int_attrs.get(value)
        if attr is None:
            attr = self._int_attrs[value] = IntAttr(value)
        return attr

    def parse_module(self, allow_implicit_module: bool = True) -> ModuleOp:
        """The module of the text; text without ops (empty, blank, only comments or
        alias definitions) is an empty module, as mlir-opt reads it."""
        while self._current_token.kind in (
            MLIRTokenKind.HASH_IDENT,
            MLIRTokenKind.EXCLAMATION_IDENT,
        ):
            self._parse_alias_def()
        if self._current_token.kind is MLIRTokenKind.EOF:
            return ModuleOp([])
        return super().parse_module(allow_implicit_module)

    def parse_optional_region(self, arguments=None):
        """xDSL's region, the position of its `{` recorded while it is parsed (for a
        missing `}`'s message)."""
        opening = self._current_token
        if opening.kind is not MLIRTokenKind.L_BRACE:
            return super().parse_optional_region(arguments)
        self._open_regions.append(opening.span.start)
        try:
            return super().parse_optional_region(arguments)
        finally:
            self._open_regions.pop()

    def _parse_block(self):
        # A region's ops end at a token that starts no op: there `}` closes the region and
        # a `^label` starts its next block; anything else means the `}` is missing (xDSL
        # says only " in block definition").
        token = self._current_token
        if token.kind is not MLIRTokenKind.CARET_IDENT and self._open_regions:
            opened = self.location_of(self._open_regions[-1])
            found = "the end of the input" if token.kind is MLIRTokenKind.EOF else f"'{token.text}'"
            raise AccyParseError(
                f"expected '}}' to close the region opened at line {opened.line.data}, "
                f"column {opened.column.data}, found {found}",
                self.location_of(token.span.start),
            )
        return super()._parse_block()

    def parse_operation(self) -> Operation:
        start = self.pos
        try:
            op = super().parse_operation()
        except VerifyException as error:
            # An op whose types break its constraints fails while it is being built.
            name = self._op_name_at(start)
            raise AccyVerifyError(verify_message(error, name), self.location_of(start)) from None
        if isinstance(op.location, UnknownLoc):
            op.location = self.location_of(start)
        return op

    def parse_optional_attribute(self) -> Attribute | None:
        # xDSL builds attributes as it reads them; a value out of its type's range (an i1
        # of 2, an i64 beyond 2**63) raises ValueError or OverflowError there.
        start = self.pos
        if (splat := _SPLAT.match(self.lexer.input.content, start)) is not None:
            count = prod(int(d) for d in splat.group(1).split("x")[:-1])
            if count > MAX_SPLAT_ELEMENTS:
                raise AccyParseError(
                    f"a splat constant of {count} elements; accy holds constants in memory, "
                    f"up to {MAX_SPLAT_ELEMENTS} elements (2**28)",
                    self.location_of(start),
                )
        try:
            return super().parse_optional_attribute()
        except (ValueError, OverflowError) as error:
            raise AccyParseError(f"invalid attribute: {error}", self.location_of(start)) from None

    def parse_optional_type(self) -> Attribute | None:
        # Programs repeat a few shaped types (`tensor<4xf32>`) on every op, and building
        # one is a third of xDSL's time per op: each spelling is built once per parse.
        token = self._current_token
        if token.kind is MLIRTokenKind.BARE_IDENT and token.text in _SHAPED_TYPES:
            start = token.span.start
            text = self.lexer.input.content
            spelled = _SIMPLE_SHAPED_TYPE.match(text, start)
            if spelled is not None:
                cached = self._types.get(spelled.group())
                if cached is not None:
                    if self.lexer.depth >= MAX_NESTING:  # its `<` is not lexed
                        raise nesting_error(self.location_of(text.index("<", start)))
                    self._resume_from(spelled.end())
                    return cached
                parsed = super().parse_optional_type()
                if parsed is not None and self.pos == spelled.end():
                    self._types[spelled.group()] = parsed
                return parsed
        return super().parse_optional_type()

    def parse_dense_int_or_fp_elements_attr(self, type):
        """`dense<...>` from its `<` on. A literal of numbers (or booleans for i1) of an
        integer, index, f16, bf16, f32 or f64 element type is read by `DenseLiteral`, in
        time and memory linear in its text; others (hex strings, complex numbers, other
        element types, syntax it does not take) by xDSL."""
        start = self._current_token.span.start
        if (literal := DenseLiteral.match(self, type)) is not None:
            return literal
        self._resume_from(start)
        try:
            attr = super().parse_dense_int_or_fp_elements_attr(type)
            text = self._text[start : self._current_token.span.start]
            try:
                return with_float_bit_patterns(attr, text)
            except ValueError as error:
                raise AccyParseError(str(error), self.location_of(start)) from None
        except NotImplementedError:  # xDSL packs no values of some types (f80, f128)
            raise AccyParseError(
                "dense literals of this element type are not supported", self.location_of(start)
            ) from None

    def _op_name_at(self, position: int) -> str:
        """The op name in the text of the op that starts at `position`."""
        text = self.lexer.input.content[position : position + 400]
        head = text.split("=", 1)[1] if text.lstrip().startswith("%") else text
        return head.split()[0].strip('"') if head.split() else "<op>"


def _line_starts(text: str) -> list[int]:
    """The position of each line's first character."""
    starts = [0]
    find = text.find
    index = find("\n")
    while index >= 0:
        starts.append(index + 1)
        index = find("\n", index + 1)
    return starts


_UNREGISTERED_STABLEHLO_OP = re.compile(
    r"Operation ((?:stablehlo|chlo)\.[\w.$]+) is not registered"
)


def parse_error(error: ParseError, line_offset: int = 0) -> AccyParseError:
    """An xDSL parse error as a located accy error (a `StableHloTextError` for an op of
    StableHLO or CHLO, which only the importer reads)."""
    where = error.span.get_location()
    location = FileLineColLoc(
        StringAttr(where.file or "<input>"),
        IntAttr(where.line + line_offset),
        IntAttr(where.col),
    )
    if stablehlo := _UNREGISTERED_STABLEHLO_OP.match(error.msg):
        return StableHloTextError(stablehlo.group(1), location)
    # The pinned xDSL leaves one message's placeholder unfilled.
    message = error.msg.replace("{first_char}", repr(error.span.text[:1]))
    return AccyParseError(message, location)


_SOURCE_KINDS = "accy program text (str) or the path of a .mlir file (str or os.PathLike)"


def module_text(module: Operation) -> str:
    """The text of a module (accy, planned or lowered upstream MLIR), as xDSL prints it."""
    stream = io.StringIO()
    Printer(stream=stream).print_op(module)
    return stream.getvalue() + "\n"


def read_source_file(path: Path, filename: str | None = None) -> str:
    """The UTF-8 text of the program file `path`; `AccyError` when it cannot be read,
    `AccyParseError` at the first byte that is not UTF-8."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise AccyError(f"cannot read '{path}': no such file") from None
    except OSError as error:
        raise AccyError(f"cannot read '{path}': {error.strerror or error}") from None
    return decode_source(data, filename or str(path))


def parse(
    source: str | Path,
    *,
    filename: str | None = None,
    ctx: Context | None = None,
    line_offset: int = 0,
) -> ModuleOp:
    """Parse and verify an accy program from its text, or from a `.mlir` file: a path
    (`os.PathLike`) or a string that `looks_like_path` (one line ending in `.mlir`).

    Raises `AccyParseError` or `AccyVerifyError` carrying the location of the problem
    (`StableHloTextError` for StableHLO text), `AccyError` for a file that cannot be read
    and `AccyTypeError` for a source that is neither text nor a path. Text without ops is
    an empty module.
    """
    if isinstance(source, os.PathLike) or (isinstance(source, str) and looks_like_path(source)):
        path = Path(source)
        filename = filename or str(path)
        text = read_source_file(path, filename)
    elif isinstance(source, str):
        text = source
    else:
        raise wrong_type("accy.parse", "source", _SOURCE_KINDS, source)
    parser = None
    try:
        with _stack_for_nesting():
            parser = LocatingParser(ctx or make_context(), text, filename or "<input>", line_offset)
            module = parser.parse_module()
    except ParseError as error:
        raise parse_error(error, line_offset) from None
    except RecursionError:
        # Not expected below MAX_NESTING; a diagnostic rather than a traceback if it is.
        where = parser.location_of(parser.pos) if parser is not None else None
        raise AccyParseError("the input is nested too deeply to parse", where) from None
    verify(module)
    return module


def program_module(module_or_text: object, function: str) -> ModuleOp:
    """The module `function` (`accy.compile`, `accy.export`) was given: a module verified as
    it is, text or a path parsed (`parse`; StableHLO text raises `StableHloTextError`,
    which `accy.stablehlo.read_program` takes up); `AccyTypeError` naming `function`
    otherwise."""
    if isinstance(module_or_text, ModuleOp):
        verify(module_or_text)
        return module_or_text
    if not isinstance(module_or_text, str | os.PathLike):
        raise wrong_type(
            function,
            "the program",
            "an accy module (ModuleOp), accy or StableHLO text (str) or the path of a .mlir "
            "file (str or os.PathLike)",
            module_or_text,
        )
    return parse(module_or_text)


_stack_lock = threading.Lock()
_stack_users = 0
_stack_limit_before = 0


@contextmanager
def _stack_for_nesting():
    """Python's recursion limit raised, while any thread parses, by what `MAX_NESTING`
    levels of xDSL's recursive descent take (the default limit of 1000 frames holds about
    90), and put back when the last parse ends."""
    global _stack_users, _stack_limit_before
    with _stack_lock:
        if _stack_users == 0:
            _stack_limit_before = sys.getrecursionlimit()
            sys.setrecursionlimit(_stack_limit_before + MAX_NESTING * _FRAMES_PER_LEVEL)
        _stack_users += 1
    try:
        yield
    finally:
        with _stack_lock:
            _stack_users -= 1
            if _stack_users == 0:
                sys.setrecursionlimit(_stack_limit_before)


def verify_message(error: Exception, op_name: str) -> str:
    """An xDSL verifier message in MLIR's one-line form: `'accy.add' op MESSAGE`."""
    message = str(error.args[0]) if error.args else str(error)
    message = message.removeprefix("Operation does not verify: ").strip()
    message = " ".join(line.strip() for line in message.splitlines() if line.strip())
    message = message.removeprefix(f"Operation {op_name} ")
    prefix = f"'{op_name}' "
    if message.startswith(prefix + "op "):
        return message
    return f"'{op_name}' op {message.removeprefix(prefix)}"


def verify(module: Operation) -> None:
    """Verify every op, innermost first, raising `AccyVerifyError` at the first failure;
    then that every operand is defined before its use (`verify_dominance`), and the
    planned form's rules for planned functions (`accy.dialects.plan_verifier`)."""
    for op in module.walk(reverse=False, region_first=True):
        try:
            op.verify(verify_nested_ops=False)
            if isinstance(op, func.FuncOp):
                verify_parameter_attributes(op)
        except (VerifyException, DiagnosticException) as error:
            raise AccyVerifyError(verify_message(error, op.name), op.location) from None
    verify_dominance(module)
    if isinstance(module, ModuleOp):
        verify_planned_module(module)  # the planned form's whole-function rules


def verify_dominance(root: Operation) -> None:
    """Raise `AccyVerifyError` at the first op (in text order) that reads a value not
    defined before it in its block, in an earlier block of its region (text order stands
    in for dominance: lowered functions branch only forward) or in a block around it
    (xDSL's parser accepts such forward uses, and its verifier does not check them).
    Regions of an op isolated from above (`func.func`) see nothing from outside.

    One depth-first walk with one set of the values in scope: a block's values are added
    as it is walked and removed when it ends, so the work is linear in the ops and
    operands however many regions there are (copying the scope into every region was
    quadratic: a block of n ops with regions copied n sets of up to n values). Iterative:
    nesting depth costs no Python stack."""
    visible: set[SSAValue] = set()
    # One frame per op whose regions are being walked: [op, its blocks, the scope to
    # restore after an op isolated from above, the block being walked, its ops, the
    # values it added].
    frames: list[list] = [[root, _blocks_of(root), None, None, None, None]]
    while frames:
        frame = frames[-1]
        if frame[3] is None:  # start the op's next block
            block = next(frame[1], None)
            if block is None:
                frames.pop()
                if frame[2] is not None:
                    visible = frame[2]
                if frames:  # the op's results are in scope after it in its block
                    frames[-1][5].extend(frame[0].results)
                    visible.update(frame[0].results)
                continue
            frame[3], frame[4] = block, iter(block.ops)
            frame[5] = [*(frame[5] or ()), *block.args]
            visible.update(block.args)
        op = next(frame[4], None)
        if op is None:  # the block ended
            if frame[3].next_block is None:  # and its region: its values go out of scope
                visible.difference_update(frame[5])
                frame[5] = None
            frame[3] = frame[4] = None
            continue
        for index, operand in enumerate(op.operands):
            if operand not in visible:
                raise AccyVerifyError(
                    f"'{op.name}' op operand #{index} is used before it is defined "
                    "(or outside the region that defines it)",
                    op.location,
                )
        if op.regions:
            saved = None
            if op.has_trait(IsolatedFromAbove):
                saved, visible = visible, set()
            frames.append([op, _blocks_of(op), saved, None, None, None])
        else:
            frame[5].extend(op.results)
            visible.update(op.results)


def _blocks_of(op: Operation):
    return (block for region in op.regions for block in region.blocks)
