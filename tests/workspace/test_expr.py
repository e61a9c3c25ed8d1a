"""Workspace size expressions: grammar, unsigned 64-bit semantics, diagnostics, limits."""

import pytest
from accy.passes.families.expr import (
    MAX_NESTING,
    U64_MAX,
    Expression,
    ExpressionError,
    UnknownNameError,
)


def value(text: str, **env: int) -> int:
    return Expression.parse(text).evaluate(env)


def error(text: str, **env: int) -> str:
    with pytest.raises(ExpressionError) as info:
        Expression.parse(text).evaluate(env)
    return str(info.value)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2+3*4", 14),
        ("(2+3)*4", 20),
        ("2*3+4", 10),
        ("7/2", 3),
        ("7%4", 3),
        ("10-3-2", 5),
        ("64/4/2", 8),
        ("2*(3+(4-1))*2", 24),
        ("0", 0),
        ("007", 7),
        (str(U64_MAX), U64_MAX),
    ],
)
def test_arithmetic_and_precedence(text: str, expected: int) -> None:
    assert value(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("ceil_div(10, 4)", 3),
        ("ceil_div(8, 4)", 2),
        ("ceil_div(0, 4)", 0),
        ("align(13, 8)", 16),
        ("align(16, 8)", 16),
        ("min(3, 1, 2)", 1),
        ("max(3, 1, 2)", 3),
        ("min(7)", 7),
        ("max(min(5, 9), ceil_div(100, 3)) * 2", 68),
    ],
)
def test_functions(text: str, expected: int) -> None:
    assert value(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("3 < 4", 1),
        ("4 < 4", 0),
        ("4 <= 4", 1),
        ("5 > 4", 1),
        ("4 >= 5", 0),
        ("4 == 4", 1),
        ("4 != 4", 0),
        ("1 + 1 == 2", 1),  # comparisons bind loosest
        ("(1 < 2) + (3 < 4)", 2),
    ],
)
def test_comparisons_yield_one_or_zero(text: str, expected: int) -> None:
    assert value(text) == expected


def test_names_are_read_from_the_environment() -> None:
    expression = Expression.parse("ceil_div(k, 1024) * n * 4")
    assert expression.names == frozenset({"k", "n"})
    assert expression.evaluate({"k": 5000, "n": 3}) == 60
    assert expression.evaluate({"k": 1024, "n": 1, "unused": 9}) == 4


def test_function_names_are_not_names() -> None:
    assert Expression.parse("max(a, 1)").names == frozenset({"a"})


def test_unknown_name_is_an_error_naming_it() -> None:
    with pytest.raises(UnknownNameError) as info:
        Expression.parse("n * sm_count").evaluate({"n": 2})
    assert info.value.name == "sm_count"
    assert str(info.value) == "at column 5: unknown name 'sm_count'"


@pytest.mark.parametrize("text", ["1+2*3", " 1 + 2 * 3 ", "\t1\n+\r\n2*3\t", "1 +2*  3"])
def test_whitespace_is_insignificant(text: str) -> None:
    assert value(text) == 7


def test_text_round_trips() -> None:
    assert str(Expression.parse("n * 4")) == "n * 4"
    assert Expression.parse("n * 4") == Expression.parse("n * 4")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("18446744073709551615 + 1", "at column 22: result of 18446744073709551615 + 1 overflows"),
        ("4294967296 * 4294967296", "at column 12: result of 4294967296 * 4294967296 overflows"),
        ("18446744073709551616", "at column 1: integer literal overflows 64 bits"),
        ("1-2", "at column 2: result of 1 - 2 is negative"),
        ("10 - (3 - 4)", "at column 9: result of 3 - 4 is negative"),
        ("10 / (2-2)", "at column 4: division by zero (10 / 0)"),
        ("10 % 0", "at column 4: modulo by zero (10 % 0)"),
        ("ceil_div(1, 0)", "at column 1: division by zero in ceil_div (ceil_div(1, 0))"),
        ("align(5, 0)", "at column 1: alignment to zero in align (align(5, 0))"),
        ("align(18446744073709551615, 2)", "at column 1: result of align("),
    ],
)
def test_arithmetic_errors_name_the_column(text: str, message: str) -> None:
    assert error(text).startswith(message)


def test_environment_values_must_be_unsigned_64_bit() -> None:
    assert error("n", n=-1) == "at column 1: result of name 'n' is negative"
    assert error("n", n=U64_MAX + 1) == "at column 1: result of name 'n' overflows 64 bits"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "at column 1: expected an integer, a name or '(', got end of input"),
        ("1 +", "at column 4: expected an integer, a name or '(', got end of input"),
        ("(1 + 2", "at column 7: expected an operator or ')', got end of input"),
        ("1 2", "at column 3: expected an operator or end of input, got '2'"),
        ("1 + )", "at column 5: expected an integer, a name or '(', got ')'"),
        ("max(1, 2", "at column 9: expected an operator, ',' or ')', got end of input"),
        ("max()", "at column 5: expected an integer, a name or '(', got ')'"),
        ("n $ 2", "at column 3: unexpected character '$'"),
        ("-1", "at column 1: expected an integer, a name or '(', got '-'"),
        ("sqrt(4)", "at column 1: unknown function 'sqrt' (expected one of align, ceil_div,"),
        ("ceil_div(1)", "at column 1: ceil_div takes 2 arguments, got 1"),
        ("align(1, 2, 3)", "at column 1: align takes 2 arguments, got 3"),
        ("1 < 2 < 3", "at column 7: comparisons do not chain (after '<' at column 3)"),
        ("a = 1", "at column 3: unexpected character '='"),
    ],
)
def test_parse_errors_name_the_column_and_what_was_expected(text: str, message: str) -> None:
    with pytest.raises(ExpressionError) as info:
        Expression.parse(text)
    assert str(info.value).startswith(message)


def test_long_binary_chains_parse_and_evaluate() -> None:
    text = "1+" * 50_000 + "1"
    assert len(text) > 100_000
    assert Expression.parse(text).evaluate({}) == 50_001


def test_nesting_up_to_the_limit_is_accepted() -> None:
    assert value("(" * MAX_NESTING + "1" + ")" * MAX_NESTING) == 1
    assert value("max(" * MAX_NESTING + "1" + ")" * MAX_NESTING) == 1


@pytest.mark.parametrize("opener", ["(", "min("])
def test_nesting_beyond_the_limit_is_a_clear_error(opener: str) -> None:
    depth = MAX_NESTING + 1
    with pytest.raises(ExpressionError, match=f"nests deeper than {MAX_NESTING} levels"):
        Expression.parse(opener * depth + "1" + ")" * depth)


def test_very_deep_nesting_is_an_error_not_a_recursion_error() -> None:
    with pytest.raises(ExpressionError) as info:
        Expression.parse("(" * 10_000 + "1" + ")" * 10_000)
    assert info.value.column == MAX_NESTING + 1
