"""Reading accy programs: the context of dialects accy knows, parsing with locations, and
verification that reports the location of the first op that fails.

Ops parsed from text without an explicit `loc(...)` get a `FileLineColLoc` of where their
text starts, so every later diagnostic (verifier, planner) can point at the source.
"""

from __future__ import annotations

import bisect
import re
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
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.parser import Parser
from xdsl.parser.generic_parser import ParserState
from xdsl.traits import IsolatedFromAbove
from xdsl.utils.exceptions import DiagnosticException, ParseError, VerifyException
from xdsl.utils.lexer import Input
from xdsl.utils.mlir_lexer import MLIRLexer

from accy.diagnostics import AccyParseError, AccyVerifyError, decode_source
from accy.dialects.accy import Accy, verify_parameter_attributes

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

_SPLAT = re.compile(
    r'dense<\s*(?:[^\[\]<>"]{1,64}|"0x[0-9A-Fa-f]{1,32}")\s*>\s*:\s*tensor<((?:\d+x)+)'
)


class LinearLexer(MLIRLexer):
    """xDSL's lexer with a string-literal pattern that runs in linear time: the pinned
    one, `"(?:[^"...]+|\\...)*"`, nests quantifiers and backtracks exponentially over an
    unclosed string (30 characters took over a minute). One character or one escape per
    repetition matches the same strings."""

    _unescaped_characters_regex = re.compile(r'"(?:[^"\\\n\v\f]|\\(?:["nt\\]|[0-9A-Fa-f]{2}))*"')


class LocatingParser(Parser):
    """An xDSL parser that gives each op without `loc(...)` the file position of its text,
    reads with `LinearLexer` and reports attribute values out of range as parse errors.
    Constructing it lexes the first token (a `ParseError` for a bad one)."""

    def __init__(self, ctx: Context, text: str, filename: str, line_offset: int = 0):
        super().__init__(ctx, "", filename)
        self._parser_state = ParserState(LinearLexer(Input(text, filename)))
        self._filename = StringAttr(filename)
        self._line_offset = line_offset
        self._line_starts = [0] + [i + 1 for i, c in enumerate(text) if c == "\n"]

    def location_of(self, position: int) -> FileLineColLoc:
        line = bisect.bisect_right(self._line_starts, position)
        column = position - self._line_starts[line - 1] + 1
        return FileLineColLoc(self._filename, IntAttr(line + self._line_offset), IntAttr(column))

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

    def _op_name_at(self, position: int) -> str:
        """The op name in the text of the op that starts at `position`."""
        text = self.lexer.input.content[position : position + 400]
        head = text.split("=", 1)[1] if text.lstrip().startswith("%") else text
        return head.split()[0].strip('"') if head.split() else "<op>"


def parse_error(error: ParseError, line_offset: int = 0) -> AccyParseError:
    """An xDSL parse error as a located accy error."""
    location = error.span.get_location()
    # The pinned xDSL leaves one message's placeholder unfilled.
    message = error.msg.replace("{first_char}", repr(error.span.text[:1]))
    return AccyParseError(
        message,
        FileLineColLoc(
            StringAttr(location.file or "<input>"),
            IntAttr(location.line + line_offset),
            IntAttr(location.col),
        ),
    )


def parse(
    source: str | Path,
    *,
    filename: str | None = None,
    ctx: Context | None = None,
    line_offset: int = 0,
) -> ModuleOp:
    """Parse and verify an accy program from text or from a path to a `.mlir` file.

    Raises `AccyParseError` or `AccyVerifyError` carrying the location of the problem.
    """
    if isinstance(source, Path) or (
        "\n" not in source and source.endswith(".mlir") and Path(source).is_file()
    ):
        path = Path(source)
        filename = filename or str(path)
        text = decode_source(path.read_bytes(), filename)
    else:
        text = str(source)
    try:
        parser = LocatingParser(ctx or make_context(), text, filename or "<input>", line_offset)
        module = parser.parse_module()
    except ParseError as error:
        raise parse_error(error, line_offset) from None
    verify(module)
    return module


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
    then that every operand is defined before its use (`verify_dominance`)."""
    for op in module.walk(reverse=False, region_first=True):
        try:
            op.verify(verify_nested_ops=False)
            if isinstance(op, func.FuncOp):
                verify_parameter_attributes(op)
        except (VerifyException, DiagnosticException) as error:
            raise AccyVerifyError(verify_message(error, op.name), op.location) from None
    verify_dominance(module)


def verify_dominance(root: Operation) -> None:
    """Raise `AccyVerifyError` at the first op that reads a value not defined before it
    in its block or in a block around it (xDSL's parser accepts such forward uses, and its
    verifier does not check them). Regions of an op isolated from above (`func.func`) see
    nothing from outside. Iterative: nesting depth costs no Python stack."""
    stack: list[tuple[Block, frozenset[SSAValue]]] = [
        (block, frozenset()) for region in root.regions for block in region.blocks
    ]
    while stack:
        block, outer = stack.pop()
        visible = set(outer) | set(block.args)
        for op in block.ops:
            for index, operand in enumerate(op.operands):
                if operand not in visible:
                    raise AccyVerifyError(
                        f"'{op.name}' op operand #{index} is used before it is defined "
                        "(or outside the region that defines it)",
                        op.location,
                    )
            if op.regions:
                seen = frozenset() if op.has_trait(IsolatedFromAbove) else frozenset(visible)
                stack.extend((b, seen) for region in op.regions for b in region.blocks)
            visible.update(op.results)
