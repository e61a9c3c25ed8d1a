"""Workspace size expressions: a tiny unsigned-integer language parsed by accy itself.

Kernel families size their workspaces and state when they apply with expressions such as
``n * ceil_div(k, 1024) * 4`` or ``k > 4096``. The grammar, lowest precedence first::

    expression  := sum (compare sum)?          compare := '<' | '<=' | '>' | '>=' | '==' | '!='
    sum         := product (('+' | '-') product)*
    product     := primary (('*' | '/' | '%') primary)*
    primary     := INTEGER | NAME | NAME '(' expression (',' expression)* ')' | '(' expression ')'

Binary operators are left-associative; comparisons yield 1 or 0 and do not chain. Functions
are ``ceil_div(a, b)``, ``min(a, ...)``, ``max(a, ...)`` and ``align(x, a)`` (x rounded up to
a multiple of a).

Invariants:
- Every value, intermediate or final, is an unsigned 64-bit integer: a result above
  ``2**64 - 1``, a subtraction below zero and a division, modulo or alignment by zero are
  errors at the operator's column, never wrapped or clamped.
- A name missing from the environment is an ``UnknownNameError``, never 0.
- Parsing recurses only into parentheses and call arguments, at most ``MAX_NESTING`` deep;
  operator chains are parsed by a loop, and evaluation runs a postfix program on a value
  stack, so inputs of any length with bounded nesting never hit Python's recursion limit.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum, auto
from typing import NamedTuple, NoReturn

MAX_NESTING = 256
"""The deepest nesting of parentheses and calls an expression may have."""

U64_MAX = 2**64 - 1
"""The largest value an expression may produce."""

_U64_MAX_DIGITS = len(str(U64_MAX))


class ExpressionError(Exception):
    """A malformed or failing expression, located at a 1-based column of its text."""

    def __init__(self, column: int, message: str):
        super().__init__(f"at column {column}: {message}")
        self.column = column
        self.message = message


class UnknownNameError(ExpressionError):
    """An expression read a name that the evaluation environment does not define."""

    def __init__(self, name: str, column: int):
        super().__init__(column, f"unknown name '{name}'")
        self.name = name


# --------------------------------------------------------------------------------------------
# Tokens
# --------------------------------------------------------------------------------------------


class _Kind(Enum):
    INTEGER = auto()
    NAME = auto()
    SYMBOL = auto()
    END = auto()


class _Token(NamedTuple):
    """One lexeme; ``column`` is the 1-based column of its first character.

    A named tuple rather than a frozen dataclass: inputs have ~10^5 tokens and tuples build fast.
    """

    kind: _Kind
    text: str
    column: int

    def describe(self) -> str:
        """How a diagnostic names this token."""
        return "end of input" if self.kind is _Kind.END else f"'{self.text}'"


_WHITESPACE = frozenset(" \t\r\n")
_DIGITS = frozenset("0123456789")
_NAME_START = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_")
_NAME_CONTINUE = _NAME_START | _DIGITS
_TWO_CHAR_SYMBOLS = frozenset({"<=", ">=", "==", "!="})
_ONE_CHAR_SYMBOLS = frozenset("+-*/%(),<>")


def _scan_while(text: str, start: int, allowed: frozenset[str]) -> int:
    """The index of the first character at or after ``start`` that is not in ``allowed``."""
    end = start
    while end < len(text) and text[end] in allowed:
        end += 1
    return end


def _tokenize(text: str) -> list[_Token]:
    """Split ``text`` into tokens ending with one END token (ASCII only, no regular expressions)."""
    tokens: list[_Token] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch in _WHITESPACE:
            i += 1
            continue
        if ch in _DIGITS:
            end = _scan_while(text, i, _DIGITS)
            kind = _Kind.INTEGER
        elif ch in _NAME_START:
            end = _scan_while(text, i, _NAME_CONTINUE)
            kind = _Kind.NAME
        elif text[i : i + 2] in _TWO_CHAR_SYMBOLS:
            end = i + 2
            kind = _Kind.SYMBOL
        elif ch in _ONE_CHAR_SYMBOLS:
            end = i + 1
            kind = _Kind.SYMBOL
        else:
            raise ExpressionError(i + 1, f"unexpected character {ch!r}")
        tokens.append(_Token(kind, text[i:end], i + 1))
        i = end
    tokens.append(_Token(_Kind.END, "", len(text) + 1))
    return tokens


# --------------------------------------------------------------------------------------------
# Operators and functions
# --------------------------------------------------------------------------------------------


class _Fault(Exception):
    """An arithmetic failure inside an operator; the caller adds the column."""


def _checked_floor_div(a: int, b: int) -> int:
    if b == 0:
        raise _Fault("division by zero")
    return a // b


def _checked_mod(a: int, b: int) -> int:
    if b == 0:
        raise _Fault("modulo by zero")
    return a % b


def _ceil_div(a: int, b: int) -> int:
    if b == 0:
        raise _Fault("division by zero in ceil_div")
    return -(-a // b)


def _align(x: int, a: int) -> int:
    if a == 0:
        raise _Fault("alignment to zero in align")
    return -(-x // a) * a


@dataclass(frozen=True)
class _Operator:
    """A binary operator: its precedence (higher binds tighter) and its unchecked result."""

    precedence: int
    apply: Callable[[int, int], int]


_COMPARISON_PRECEDENCE = 1
_BINARY: Mapping[str, _Operator] = {
    "<": _Operator(_COMPARISON_PRECEDENCE, lambda a, b: int(a < b)),
    "<=": _Operator(_COMPARISON_PRECEDENCE, lambda a, b: int(a <= b)),
    ">": _Operator(_COMPARISON_PRECEDENCE, lambda a, b: int(a > b)),
    ">=": _Operator(_COMPARISON_PRECEDENCE, lambda a, b: int(a >= b)),
    "==": _Operator(_COMPARISON_PRECEDENCE, lambda a, b: int(a == b)),
    "!=": _Operator(_COMPARISON_PRECEDENCE, lambda a, b: int(a != b)),
    "+": _Operator(2, lambda a, b: a + b),
    "-": _Operator(2, lambda a, b: a - b),
    "*": _Operator(3, lambda a, b: a * b),
    "/": _Operator(3, _checked_floor_div),
    "%": _Operator(3, _checked_mod),
}


@dataclass(frozen=True)
class _Function:
    """A built-in function: its argument count (None: one or more) and its unchecked result."""

    arity: int | None
    apply: Callable[[Sequence[int]], int]


_FUNCTIONS: Mapping[str, _Function] = {
    "ceil_div": _Function(2, lambda args: _ceil_div(args[0], args[1])),
    "align": _Function(2, lambda args: _align(args[0], args[1])),
    "min": _Function(None, min),
    "max": _Function(None, max),
}


# --------------------------------------------------------------------------------------------
# Postfix program
# --------------------------------------------------------------------------------------------


def _check_range(result: int, column: int, describe: Callable[[], str]) -> int:
    """``result`` if it is an unsigned 64-bit value, else an error naming ``describe()``."""
    if result < 0:
        raise ExpressionError(column, f"result of {describe()} is negative")
    if result > U64_MAX:
        raise ExpressionError(column, f"result of {describe()} overflows 64 bits")
    return result


@dataclass(frozen=True)
class _Push:
    """Push a literal."""

    value: int

    def run(self, stack: list[int], env: Mapping[str, int]) -> None:
        stack.append(self.value)


@dataclass(frozen=True)
class _Load:
    """Push the value of a name from the environment."""

    name: str
    column: int

    def run(self, stack: list[int], env: Mapping[str, int]) -> None:
        if self.name not in env:
            raise UnknownNameError(self.name, self.column)
        stack.append(_check_range(env[self.name], self.column, lambda: f"name '{self.name}'"))


@dataclass(frozen=True)
class _ApplyBinary:
    """Pop two operands, push ``lhs <spelling> rhs``."""

    spelling: str
    column: int

    def run(self, stack: list[int], env: Mapping[str, int]) -> None:
        rhs = stack.pop()
        lhs = stack.pop()
        describe = lambda: f"{lhs} {self.spelling} {rhs}"
        try:
            result = _BINARY[self.spelling].apply(lhs, rhs)
        except _Fault as fault:
            raise ExpressionError(self.column, f"{fault} ({describe()})") from None
        stack.append(_check_range(result, self.column, describe))


@dataclass(frozen=True)
class _ApplyFunction:
    """Pop ``arity`` arguments, push the function's result."""

    name: str
    arity: int
    column: int

    def run(self, stack: list[int], env: Mapping[str, int]) -> None:
        args = stack[len(stack) - self.arity :]
        del stack[len(stack) - self.arity :]
        describe = lambda: f"{self.name}({', '.join(map(str, args))})"
        try:
            result = _FUNCTIONS[self.name].apply(args)
        except _Fault as fault:
            raise ExpressionError(self.column, f"{fault} ({describe()})") from None
        stack.append(_check_range(result, self.column, describe))


_Instruction = _Push | _Load | _ApplyBinary | _ApplyFunction


# --------------------------------------------------------------------------------------------
# Parser
# --------------------------------------------------------------------------------------------


class _Parser:
    """Recursive descent over primaries, an operator-precedence loop over binary chains.

    The parser emits a postfix program as it goes: operands in source order, each operator
    once both of its operands have been emitted.
    """

    def __init__(self, text: str):
        self._tokens = _tokenize(text)
        self._index = 0
        self._depth = 0
        self.program: list[_Instruction] = []
        self.names: set[str] = set()

    def parse(self) -> None:
        """Parse the whole input as one expression."""
        self._expression()
        if self._peek().kind is not _Kind.END:
            self._fail_expected("an operator or end of input")

    # Token helpers ---------------------------------------------------------------------------

    def _peek(self) -> _Token:
        return self._tokens[self._index]

    def _advance(self) -> _Token:
        token = self._tokens[self._index]
        self._index += 1
        return token

    def _at_symbol(self, text: str) -> bool:
        token = self._peek()
        return token.kind is _Kind.SYMBOL and token.text == text

    def _expect_symbol(self, text: str, expected: str) -> None:
        if not self._at_symbol(text):
            self._fail_expected(expected)
        self._advance()

    def _fail_expected(self, expected: str) -> NoReturn:
        token = self._peek()
        raise ExpressionError(token.column, f"expected {expected}, got {token.describe()}")

    def _binary_operator(self) -> _Token | None:
        """The next token if it is a binary operator (not consumed), else None."""
        token = self._peek()
        if token.kind is _Kind.SYMBOL and token.text in _BINARY:
            return token
        return None

    # Grammar ---------------------------------------------------------------------------------

    def _expression(self) -> None:
        """``primary (binop primary)*`` with precedence and left associativity, iteratively."""
        pending: list[_Token] = []
        comparison: _Token | None = None
        self._primary()
        while (token := self._binary_operator()) is not None:
            precedence = _BINARY[token.text].precedence
            if precedence == _COMPARISON_PRECEDENCE:
                if comparison is not None:
                    raise ExpressionError(
                        token.column,
                        f"comparisons do not chain (after '{comparison.text}' at column "
                        f"{comparison.column}); add parentheses",
                    )
                comparison = token
            while pending and _BINARY[pending[-1].text].precedence >= precedence:
                self._emit_binary(pending.pop())
            pending.append(self._advance())
            self._primary()
        while pending:
            self._emit_binary(pending.pop())

    def _emit_binary(self, token: _Token) -> None:
        self.program.append(_ApplyBinary(token.text, token.column))

    def _primary(self) -> None:
        token = self._peek()
        if token.kind is _Kind.INTEGER:
            self._integer(self._advance())
        elif token.kind is _Kind.NAME:
            self._advance()
            if self._at_symbol("("):
                self._call(token)
            else:
                self.names.add(token.text)
                self.program.append(_Load(token.text, token.column))
        elif self._at_symbol("("):
            self._enter(self._advance())
            self._expression()
            self._expect_symbol(")", "an operator or ')'")
            self._depth -= 1
        else:
            self._fail_expected("an integer, a name or '('")

    def _integer(self, token: _Token) -> None:
        # Compare lengths first: int() of a huge digit string is slow and capped by Python.
        digits = token.text.lstrip("0") or "0"
        if len(digits) > _U64_MAX_DIGITS or int(digits) > U64_MAX:
            raise ExpressionError(token.column, "integer literal overflows 64 bits")
        self.program.append(_Push(int(digits)))

    def _call(self, callee: _Token) -> None:
        """Parse ``'(' expression (',' expression)* ')'`` after a function name."""
        function = _FUNCTIONS.get(callee.text)
        if function is None:
            known = ", ".join(sorted(_FUNCTIONS))
            raise ExpressionError(
                callee.column, f"unknown function '{callee.text}' (expected one of {known})"
            )
        self._enter(self._advance())
        arity = 1
        self._expression()
        while self._at_symbol(","):
            self._advance()
            self._expression()
            arity += 1
        self._expect_symbol(")", "an operator, ',' or ')'")
        self._depth -= 1
        if function.arity not in (None, arity):
            raise ExpressionError(
                callee.column, f"{callee.text} takes {function.arity} arguments, got {arity}"
            )
        self.program.append(_ApplyFunction(callee.text, arity, callee.column))

    def _enter(self, opener: _Token) -> None:
        """Go one nesting level deeper at ``opener``, refusing to exceed ``MAX_NESTING``.

        The caller leaves the level by decrementing ``_depth`` once its closer is consumed.
        """
        if self._depth == MAX_NESTING:
            raise ExpressionError(
                opener.column, f"expression nests deeper than {MAX_NESTING} levels"
            )
        self._depth += 1


# --------------------------------------------------------------------------------------------
# Public API
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Expression:
    """A parsed expression: its source text, the names it reads and its postfix program.

    Build one with ``Expression.parse``; equality and hashing follow the source text.
    """

    text: str
    names: frozenset[str] = field(compare=False)
    _program: tuple[_Instruction, ...] = field(compare=False, repr=False)

    @staticmethod
    def parse(text: str) -> Expression:
        """Parse ``text``; raises ``ExpressionError`` naming the column and what was expected."""
        parser = _Parser(text)
        parser.parse()
        return Expression(text, frozenset(parser.names), tuple(parser.program))

    def evaluate(self, env: Mapping[str, int]) -> int:
        """The value of the expression where each name has its value in ``env``.

        Raises ``UnknownNameError`` for a name ``env`` lacks and ``ExpressionError`` for an
        overflow, a negative result or a division, modulo or alignment by zero.
        """
        stack: list[int] = []
        for instruction in self._program:
            instruction.run(stack, env)
        (value,) = stack
        return value

    def __str__(self) -> str:
        return self.text
