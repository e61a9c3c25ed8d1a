"""Programs as data: what the generator makes, the shrinker edits and `build` turns into an
accy module through `accy.Builder`.

A `Program` numbers its values: the parameters first, then each node's results in order
(`Node.count` of them). A node names a recipe of `RECIPES` (mostly one Builder method),
its operands by number and its attributes as sorted `(name, value)` pairs of hashable
values; a loop's body is itself a `Program` whose parameters are the carried values (for
`while`, the trip counter first) followed by the outer values it captures. Everything is
immutable and hashable, so the shrinker can compare and memoize programs.

`build(program)` is deterministic: the same program gives the same module text.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import SSAValue

import accy
from accy import dtypes

FLOATS = ("f64", "f32", "f16", "bf16")
INTEGERS = ("i64", "i32", "i16", "i8", "ui8", "ui32")
BOOL = "i1"
DTYPES = (*FLOATS, *INTEGERS, BOOL)


@dataclass(frozen=True)
class Tensor:
    """A value's type; `role` says what a parameter holds ("data", or "index" below
    `bound`: gather/scatter indices and slice starts, mostly in range)."""

    dtype: str
    shape: tuple[int, ...]
    role: str = "data"
    bound: int = 0

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def rank(self) -> int:
        return len(self.shape)

    def type(self) -> TensorType:
        return accy.Builder.tensor(self.dtype, self.shape)

    def text(self) -> str:
        return str(self.type())


def tensor_of(t: TensorType) -> Tensor:
    return Tensor(dtypes.element_name(t.get_element_type()), tuple(t.get_shape()))


@dataclass(frozen=True)
class Node:
    op: str
    args: tuple[int, ...]
    attrs: tuple[tuple[str, Any], ...] = ()
    count: int = 1

    def attr(self, name: str, default: Any = None) -> Any:
        return dict(self.attrs).get(name, default)

    def with_attrs(self, **changes: Any) -> Node:
        merged = dict(self.attrs) | changes
        return replace(self, attrs=tuple(sorted(merged.items())))


def node(op: str, args: Sequence[int], count: int = 1, **attrs: Any) -> Node:
    return Node(op, tuple(args), tuple(sorted(attrs.items())), count)


@dataclass(frozen=True)
class Program:
    params: tuple[Tensor, ...]
    nodes: tuple[Node, ...] = ()
    results: tuple[int, ...] = ()
    donated: tuple[int, ...] = ()
    threads: int = field(default=1, compare=False)

    def value_count(self) -> int:
        return len(self.params) + sum(n.count for n in self.nodes)

    def producers(self) -> list[tuple[int, int]]:
        """For each value: (node index or -1 for a parameter, result number)."""
        found = [(-1, i) for i in range(len(self.params))]
        for index, n in enumerate(self.nodes):
            found.extend((index, k) for k in range(n.count))
        return found

    def op_names(self) -> list[str]:
        """Every node's op, loop bodies included."""
        names = []
        for n in self.nodes:
            names.append(n.op)
            if isinstance(body := n.attr("body"), Program):
                names.extend(body.op_names())
        return names

    def size(self) -> int:
        """Nodes, loop bodies included, plus the elements of the parameters (the shrinker
        makes this smaller)."""
        nodes = sum(
            1 + (b.size() if isinstance(b := n.attr("body"), Program) else 0) for n in self.nodes
        )
        return nodes * 1_000_000 + sum(p.size + p.rank for p in self.params)


# ---------------------------------------------------------------------------------------
# Recipes: one per node op, (builder, operands, attributes) -> results
# ---------------------------------------------------------------------------------------

Recipe = Callable[[Any, list[SSAValue], dict[str, Any]], list[SSAValue]]
RECIPES: dict[str, Recipe] = {}

BINARY = ("add", "subtract", "multiply", "divide", "maximum", "minimum", "power", "remainder")
FLOAT_BINARY = ("atan2",)
BITWISE = ("and_", "or_", "xor")
SHIFTS = ("shift_left", "shift_right_arithmetic", "shift_right_logical")
NUMERIC_UNARY = ("negate", "abs", "sign")
FLOAT_UNARY = ("exponential", "log", "tanh", "sqrt", "rsqrt", "sine", "cosine", "tan", "cbrt",
               "log_plus_one", "exponential_minus_one", "floor", "ceil", "round_nearest_even",
               "round_nearest_afz", "logistic")  # fmt: skip
INTEGER_UNARY = ("popcnt", "count_leading_zeros")
LOGICAL_UNARY = ("not_",)

for _name in (*BINARY, *FLOAT_BINARY, *BITWISE, *SHIFTS):
    RECIPES[_name] = lambda fb, a, at, _n=_name: [getattr(fb, _n)(a[0], a[1])]
for _name in (*NUMERIC_UNARY, *FLOAT_UNARY, *INTEGER_UNARY, *LOGICAL_UNARY, "is_finite"):
    RECIPES[_name] = lambda fb, a, at, _n=_name: [getattr(fb, _n)(a[0])]


def recipe(name: str) -> Callable[[Recipe], Recipe]:
    def register(function: Recipe) -> Recipe:
        RECIPES[name] = function
        return function

    return register


def scalar(dtype: str) -> TensorType:
    return accy.Builder.tensor(dtype, [])


def dtype_of(value: SSAValue) -> str:
    assert isinstance(value.type, TensorType)
    return dtypes.element_name(value.type.get_element_type())


def extreme(dtype: str, low: bool) -> Any:
    """The lowest (or highest) value of `dtype`: the identity of max (min)."""
    if dtype in FLOATS:
        return -np.inf if low else np.inf
    if dtype == BOOL:
        return not low
    info = np.iinfo(dtypes.NUMPY_DTYPES[dtype])
    return int(info.min if low else info.max)


@recipe("compare")
def _compare(fb, a, at):
    return [fb.compare(at["direction"], a[0], a[1], total_order=at.get("total_order", False))]


@recipe("select")
def _select(fb, a, at):
    return [fb.select(a[0], a[1], a[2])]


@recipe("convert")
def _convert(fb, a, at):
    return [fb.convert(a[0], at["dtype"])]


@recipe("bitcast_convert")
def _bitcast(fb, a, at):
    return [fb.bitcast_convert(a[0], at["dtype"])]


@recipe("constant")
def _constant(fb, a, at):
    shape, values = at["shape"], at["values"]
    data = np.array(values, dtype=np.float64 if at["dtype"] in FLOATS else object)
    array = np.empty(shape, dtypes.NUMPY_DTYPES[at["dtype"]])
    array[...] = data.reshape(shape) if data.size > 1 else data.reshape(())
    return [fb.constant(accy.Builder.tensor(at["dtype"], shape), array)]


@recipe("iota")
def _iota(fb, a, at):
    return [fb.iota(accy.Builder.tensor(at["dtype"], at["shape"]), at["dim"])]


@recipe("broadcast_in_dim")
def _broadcast(fb, a, at):
    t = accy.Builder.tensor(dtype_of(a[0]), at["shape"])
    return [fb.broadcast_in_dim(a[0], t, at["dims"])]


@recipe("reshape")
def _reshape(fb, a, at):
    return [fb.reshape(a[0], accy.Builder.tensor(dtype_of(a[0]), at["shape"]))]


@recipe("transpose")
def _transpose(fb, a, at):
    return [fb.transpose(a[0], at["permutation"])]


@recipe("slice")
def _slice(fb, a, at):
    return [fb.slice(a[0], at["start"], at["limit"], at["strides"])]


@recipe("reverse")
def _reverse(fb, a, at):
    return [fb.reverse(a[0], at["dims"])]


@recipe("pad")
def _pad(fb, a, at):
    return [fb.pad(a[0], a[1], at["low"], at["high"], at["interior"])]


@recipe("concatenate")
def _concatenate(fb, a, at):
    return [fb.concatenate(a, at["dim"])]


@recipe("dynamic_slice")
def _dynamic_slice(fb, a, at):
    return [fb.dynamic_slice(a[0], a[1:], at["sizes"])]


@recipe("dynamic_update_slice")
def _dynamic_update_slice(fb, a, at):
    return [fb.dynamic_update_slice(a[0], a[1], a[2:])]


@recipe("gather")
def _gather(fb, a, at):
    return [fb.gather(a[0], a[1], **dict(at["numbers"]))]


@recipe("scatter")
def _scatter(fb, a, at):
    combine = at["combine"]
    return [fb.scatter(a[0], a[1], a[2], combine, **dict(at["numbers"]))]


@recipe("reduce")
def _reduce(fb, a, at):
    return [fb.reduce(at["kind"], a[0], at["dims"])]


FOLD_BODIES = ("argmax", "argmin", "sum_and_max")
"""`argmax`/`argmin`: (values, i32 indices) to the first extreme's value and index;
`sum_and_max`: two operands, the sum of the first and the max of the second."""


@recipe("fold")
def _fold(fb, a, at):
    body = at["body"]
    if body in ("argmax", "argmin"):
        direction = "GT" if body == "argmax" else "LT"
        value_type = dtype_of(a[0])
        inits = [fb.constant(scalar(value_type), extreme(value_type, body == "argmax")),
                 fb.constant(scalar(dtype_of(a[1])), 0)]  # fmt: skip

        def combine(inner, av, ai, bv, bi):
            better = inner.compare(direction, bv, av)
            tie = inner.and_(inner.compare("EQ", bv, av), inner.compare("LT", bi, ai))
            take = inner.or_(better, tie)
            return [inner.select(take, bv, av), inner.select(take, bi, ai)]

    else:
        inits = [fb.constant(scalar(dtype_of(a[0])), 0),
                 fb.constant(scalar(dtype_of(a[1])), extreme(dtype_of(a[1]), True))]  # fmt: skip

        def combine(inner, sa, ma, sb, mb):
            return [inner.add(sa, sb), inner.maximum(ma, mb)]

    return fb.fold(a, inits, at["dims"], combine)


SORT_ORDERS = ("lt", "gt", "lex")
"""The comparators: operand 0 ascending, descending, and operand 0 then operand 1
ascending. Floats compare in total order: LT on a NaN is no strict weak order, and the
order of a sort by one is not specified."""


@recipe("sort")
def _sort(fb, a, at):
    order = at["order"]

    def compare(inner, direction, lhs, rhs):
        total = dtype_of(lhs) in FLOATS
        return inner.compare(direction, lhs, rhs, total_order=total)

    def less(inner, *pairs):
        if order == "lex":
            first = compare(inner, "LT", pairs[0], pairs[1])
            tie = compare(inner, "EQ", pairs[0], pairs[1])
            return inner.or_(first, inner.and_(tie, compare(inner, "LT", pairs[2], pairs[3])))
        return compare(inner, "GT" if order == "gt" else "LT", pairs[0], pairs[1])

    return fb.sort(a, at["dim"], less, stable=at.get("stable", False))


@recipe("dot_general")
def _dot(fb, a, at):
    return [fb.dot_general(a[0], a[1], batching=at["batching"], contracting=at["contracting"])]


@recipe("convolution")
def _convolution(fb, a, at):
    return [fb.convolution(a[0], a[1], **dict(at["numbers"]))]


WINDOW_BODIES = ("add", "max", "min")


@recipe("reduce_window")
def _reduce_window(fb, a, at):
    body = at["body"]
    dtype = dtype_of(a[0])
    init = 0 if body == "add" else extreme(dtype, body == "max")
    method = {"add": "add", "max": "maximum", "min": "minimum"}[body]
    return fb.reduce_window(
        [a[0]],
        [fb.constant(scalar(dtype), init)],
        lambda inner, acc, x: [getattr(inner, method)(acc, x)],
        **dict(at["numbers"]),
    )


@recipe("select_and_scatter")
def _select_and_scatter(fb, a, at):
    direction = at["select"]
    init = fb.constant(scalar(dtype_of(a[0])), 0)
    return [
        fb.select_and_scatter(
            a[0],
            a[1],
            init,
            lambda inner, p, e: inner.compare(direction, p, e),
            lambda inner, acc, s: inner.add(acc, s),
            **dict(at["numbers"]),
        )
    ]


@recipe("scan")
def _scan(fb, a, at):
    return [fb.scan(at["kind"], a[0], a[1], at["dim"], rounded=at.get("rounded", False))]


@recipe("iterate")
def _iterate(fb, a, at):
    count = at["inits"]
    inits, captured = a[:count], a[count:]
    body: Program = at["body"]

    def step(inner, *carried):
        values = emit(inner, body, [*carried, *captured])
        return [values[r] for r in body.results]

    return list(fb.iterate(at["trips"], inits, step))


WHILE_CONDITIONS = ("count", "count_and_positive")
"""`count`: the counter below `limit`; `count_and_positive`: also the largest element of
the first carried value above zero."""


@recipe("while")
def _while(fb, a, at):
    count = at["inits"]
    inits, captured = a[:count], a[count:]
    body: Program = at["body"]
    counter = scalar("i32")

    def cond(inner, i, *carried):
        going = inner.compare("LT", i, inner.constant(counter, at["limit"]))
        if at["cond"] == "count_and_positive":
            first = carried[0]
            rank = len(first.type.get_shape())
            top = inner.reduce("max", first, list(range(rank)))
            zero = inner.constant(scalar(dtype_of(first)), 0)
            going = inner.and_(going, inner.compare("GT", top, zero))
        return going

    def step(inner, i, *carried):
        values = emit(inner, body, [i, *carried, *captured])
        return [inner.add(i, inner.constant(counter, 1)), *(values[r] for r in body.results)]

    results = fb.while_([fb.constant(counter, 0), *inits], cond, step)
    return list(results[1:])


# ---------------------------------------------------------------------------------------
# Building
# ---------------------------------------------------------------------------------------


def emit(fb, program: Program, inputs: Sequence[SSAValue]) -> list[SSAValue]:
    """Append `program`'s nodes to `fb` with its parameters bound to `inputs`; every value."""
    values = list(inputs)
    for n in program.nodes:
        made = RECIPES[n.op](fb, [values[i] for i in n.args], dict(n.attrs))
        if len(made) != n.count:
            raise ValueError(f"{n.op} made {len(made)} values, its node says {n.count}")
        values.extend(made)
    return values


def value_types(program: Program) -> list[Tensor]:
    """The type of every value (ops built into a scratch function, unverified)."""
    builder = accy.Builder()
    fb = builder.begin_function("scratch", [p.type() for p in program.params], [])
    values = emit(fb, program, [fb.parameter(i) for i in range(len(program.params))])
    return [tensor_of(v.type) for v in values]  # type: ignore[arg-type]


def build(program: Program, name: str = "f") -> ModuleOp:
    """The verified module of `program` (one function, `@name`); raises what the Builder
    and the verifier raise for a program that breaks a rule."""
    types = value_types(program)
    builder = accy.Builder()
    fb = builder.begin_function(
        name,
        [p.type() for p in program.params],
        [types[r].type() for r in program.results],
        donated=program.donated,
    )
    values = emit(fb, program, [fb.parameter(i) for i in range(len(program.params))])
    fb.return_([values[r] for r in program.results])
    fb.finish()
    return builder.finish()


def text(program: Program) -> str:
    """The accy dialect text of `program` (what `accy.parse` reads back)."""
    return str(build(program))
