"""argparse types for the numeric options of accy's command lines.

argparse reports a `type` that raises `ValueError` as `invalid <function name> value`,
which shows a Python name (`invalid _non_negative value: 'abc'`); these raise
`ArgumentTypeError`, so the error names the option as written and what it takes:
`argument --threads: expected an integer >= 1, got 'abc'`.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass


@dataclass(frozen=True)
class Integer:
    """A decimal integer of at least `minimum` (any when None)."""

    minimum: int | None = None

    def expected(self) -> str:
        return "an integer" if self.minimum is None else f"an integer >= {self.minimum}"

    def __call__(self, text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {self.expected()}, got {text!r}") from None
        if self.minimum is not None and value < self.minimum:
            raise argparse.ArgumentTypeError(f"expected {self.expected()}, got {text!r}")
        return value


@dataclass(frozen=True)
class Number:
    """A decimal number (`unit` names what it counts); `inf` and `nan` parse, for the
    command's own range check to refuse with its message."""

    unit: str

    def __call__(self, text: str) -> float:
        try:
            return float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"expected a number of {self.unit}, got {text!r}"
            ) from None
