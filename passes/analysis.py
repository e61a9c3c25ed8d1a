"""The analysis manager: analyses computed on demand, cached per op, charged to a budget.

xDSL has no analysis manager; this one is small and general.

- An analysis is registered by an `AnalysisDescriptor`: a name, a version, `compute`
  (which may request other analyses through the manager) and `estimate`, its *work
  contract*: from a cheap `Census` of the op (and the plan options) it bounds the
  structural visits the analysis will make and the entries it will keep.
- `AnalysisManager.get(descriptor)` returns the cached result or computes it. Before
  computing, it charges the estimate to the `Budget`: an analysis whose charge does not
  fit is refused before it runs (outcome `exhausted`, `WorkBudgetExhausted`); one that
  fails while running marks the outcome `rejected` and its error propagates.
- While an analysis runs, its `WorkMeter` counts the visits it actually makes and the
  entries it keeps; the manager checks them against the estimate (a broken contract is an
  internal error, never silently accepted).
- `invalidate(preserved)` drops every cached result except the preserved names; a pass
  that changes the IR calls it.

Invariants: estimates use checked unsigned 64-bit arithmetic (`WorkOverflow` past
2**64 - 1); a refused analysis leaves the cache and the budget's spending unchanged.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Generic, TypeVar

from accy.dialects.accy import (
    ADDRESSABLE_BYTES,
    DotGeneralOp,
    static_bytes,
    verify_program_function,
)
from accy.passes.options import PlanOptions
from xdsl.dialects import func
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Operation
from xdsl.utils.exceptions import VerifyException

from accy.diagnostics import AccyError, AccyVerifyError

U64_MAX = 2**64 - 1

T = TypeVar("T")


class WorkOverflow(ArithmeticError):
    """A work estimate does not fit in an unsigned 64-bit integer."""


def checked_add(*terms: int) -> int:
    total = 0
    for term in terms:
        total += term
        if total > U64_MAX:
            raise WorkOverflow("work estimate exceeds 2**64 - 1")
    return total


def checked_mul(*factors: int) -> int:
    product = 1
    for factor in factors:
        product *= factor
        if product > U64_MAX:
            raise WorkOverflow("work estimate exceeds 2**64 - 1")
    return product


@dataclass(frozen=True)
class Census:
    """What a single cheap walk of an op counts; every work estimate is a function of it.

    `symbol_bytes` counts the bytes of function names, which diagnostics repeat;
    `products` the `accy.dot_general` ops (fusion looks for an attention behind each).
    """

    operations: int = 0
    values: int = 0
    operands: int = 0
    symbol_bytes: int = 0
    products: int = 0

    @staticmethod
    def of(op: Operation) -> Census:
        operations = values = operands = symbol_bytes = products = 0
        for inner in op.walk():
            operations += 1
            products += isinstance(inner, DotGeneralOp)
            operands += len(inner.operands)
            values += len(inner.results)
            for region in inner.regions:
                for block in region.blocks:
                    values += len(block.args)
            if isinstance(inner, func.FuncOp):
                symbol_bytes += len(inner.sym_name.data.encode())
        return Census(operations, values, operands, symbol_bytes, products)


@dataclass(frozen=True)
class WorkBounds:
    """An upper bound on what an analysis does: visits made and entries kept."""

    structural_visits: int
    retained_entries: int


@dataclass
class WorkMeter:
    """Counts what a running analysis actually does."""

    structural_visits: int = 0
    retained_entries: int = 0

    def visit(self, count: int = 1) -> None:
        self.structural_visits += count

    def retain(self, count: int = 1) -> None:
        self.retained_entries += count


@dataclass(frozen=True)
class AnalysisDescriptor(Generic[T]):
    """An analysis: how to compute it and the work contract that bounds it."""

    name: str
    version: int
    compute: Callable[[AnalysisManager, Operation, WorkMeter], T]
    estimate: Callable[[Census, PlanOptions], WorkBounds]


class Outcome(str, Enum):
    """Where the work of a budget stands."""

    RUNNING = "running"
    EXHAUSTED = "exhausted"
    REJECTED = "rejected"


class WorkBudgetExhausted(AccyError):
    """An analysis was refused before it ran: its charge does not fit the budget."""

    def __init__(self, analysis: str, charge: int, remaining: int):
        super().__init__(
            f"work budget exhausted: analysis '{analysis}' needs {charge} structural "
            f"visits but only {remaining} remain; raise the budget (--accy-max-work)"
        )
        self.analysis = analysis
        self.charge = charge
        self.remaining = remaining


class WorkContractBroken(AssertionError):
    """An analysis did more than its estimate allowed: a bug in accy, never a user error."""


@dataclass
class Budget:
    """An allowance of work shared by every analysis and pass charged to it.

    `None` means unlimited. Once exhausted or rejected, the outcome stays so.
    """

    structural_visits: int | None = None
    retained_entries: int | None = None
    spent_visits: int = 0
    spent_entries: int = 0
    outcome: Outcome = Outcome.RUNNING
    charges: list[tuple[str, int]] = field(default_factory=list)

    def remaining_visits(self) -> int:
        if self.structural_visits is None:
            return U64_MAX
        return max(0, self.structural_visits - self.spent_visits)

    def admit(self, name: str, bounds: WorkBounds) -> None:
        """Charge `bounds` for `name`, or refuse it (outcome `exhausted`)."""
        over_visits = (
            self.structural_visits is not None
            and self.spent_visits + bounds.structural_visits > self.structural_visits
        )
        over_entries = (
            self.retained_entries is not None
            and self.spent_entries + bounds.retained_entries > self.retained_entries
        )
        if over_visits or over_entries:
            if self.outcome is Outcome.RUNNING:
                self.outcome = Outcome.EXHAUSTED
            raise WorkBudgetExhausted(name, bounds.structural_visits, self.remaining_visits())
        self.spent_visits += bounds.structural_visits
        self.spent_entries += bounds.retained_entries
        self.charges.append((name, bounds.structural_visits))

    def reject(self) -> None:
        self.outcome = Outcome.REJECTED


@dataclass
class AnalysisRecord:
    """A cached result with the work it was estimated at and actually did."""

    result: Any
    bounds: WorkBounds
    meter: WorkMeter


def check_program(root: Operation) -> None:
    """Raise `AccyVerifyError` at the first function under `root` that is no accy program
    (`verify_program_function`): every analysis starts from accy functions on tensors, so
    a lowered module, a declaration or a function on memrefs is refused before any runs."""
    for op in root.walk():
        if isinstance(op, func.FuncOp):
            try:
                verify_program_function(op)
            except VerifyException as error:
                raise AccyVerifyError(f"'func.func' op {error}", op.location) from None
            for inner in op.body.walk():
                _check_accy_op(inner)
                for result in inner.results:
                    t = result.type
                    if isinstance(t, TensorType) and (size := static_bytes(t)) > ADDRESSABLE_BYTES:
                        raise AccyVerifyError(
                            f"'{inner.name}' op result of type {t} takes {size} bytes; accy "
                            f"addresses at most {ADDRESSABLE_BYTES} bytes (2**48)",
                            inner.location,
                        )


def _check_accy_op(op: Operation) -> None:
    """Raise `AccyVerifyError` at an op of a program's body that is not accy's (nor the
    function's `func.return`): a call between functions, say, which accy does not plan."""
    if op.name.startswith("accy.") or isinstance(op, (func.ReturnOp, func.FuncOp)):
        return  # (a nested function is refused as a function)
    if isinstance(op, func.CallOp):
        raise AccyVerifyError(
            f"'func.call' op calls @{op.callee.string_value()}; accy plans each function on "
            "its own and does not call between them: write the callee's ops in place (the "
            "StableHLO importer inlines the calls JAX writes)",
            op.location,
        )
    raise AccyVerifyError(
        f"'{op.name}' op is not an accy op; accy functions hold accy ops and func.return",
        op.location,
    )


class AnalysisManager:
    """Computes analyses on demand and caches them per (analysis, op)."""

    def __init__(self, budget: Budget | None = None, options: PlanOptions | None = None):
        self.budget = budget if budget is not None else Budget()
        self.options = options if options is not None else PlanOptions()
        self.pipeline_options = self.options
        """The options it was made with (a pipeline's global flags): each pass plans with
        these and its own options, never with an earlier pass's (`configure_pass`)."""
        self._cache: dict[tuple[str, Operation], AnalysisRecord] = {}
        self._census: dict[Operation, Census] = {}
        self._programs: set[Operation] = set()
        """Roots checked to be accy programs (`check_program`)."""

    def census(self, op: Operation) -> Census:
        if op not in self._census:
            self._census[op] = Census.of(op)
        return self._census[op]

    def get(self, descriptor: AnalysisDescriptor[T], op: Operation) -> T:
        key = (descriptor.name, op)
        if (record := self._cache.get(key)) is not None:
            return record.result
        if op not in self._programs:
            check_program(op)
            self._programs.add(op)
        bounds = descriptor.estimate(self.census(op), self.options)
        self.budget.admit(descriptor.name, bounds)
        meter = WorkMeter()
        try:
            result = descriptor.compute(self, op, meter)
        except WorkBudgetExhausted:
            raise
        except Exception:
            self.budget.reject()
            raise
        if (
            meter.structural_visits > bounds.structural_visits
            or meter.retained_entries > bounds.retained_entries
        ):
            raise WorkContractBroken(
                f"analysis '{descriptor.name}' did {meter} beyond its estimate {bounds}"
            )
        self._cache[key] = AnalysisRecord(result, bounds, meter)
        return result

    def record(self, name: str, op: Operation) -> AnalysisRecord | None:
        """The cached record of an analysis on `op`, for reports and tests."""
        return self._cache.get((name, op))

    def cached_names(self) -> list[str]:
        return [name for name, _ in self._cache]

    def configure_pass(self, **given: object) -> None:
        """Plan with the pipeline's options and a pass's own `given` ones (None: not given)
        from now on: cached results are reused only under equal options."""
        own = {name: value for name, value in given.items() if value is not None}
        self.configure(dataclasses.replace(self.pipeline_options, **own))

    def configure(self, options: PlanOptions) -> None:
        """Plan with `options` from now on; cached results made under others are dropped."""
        if options != self.options:
            self.options = options
            self.invalidate()

    def invalidate(self, preserved: frozenset[str] = frozenset()) -> None:
        """Drop cached results after the IR changed, keeping the preserved analyses."""
        self._cache = {k: v for k, v in self._cache.items() if k[0] in preserved}
        self._census.clear()
        self._programs.clear()
