"""Random well-typed accy programs, deterministic from `(seed, index)`.

`program(seed, index)` grows a program pattern by pattern (`PATTERNS`, weighted): single
ops over the whole op set, and the shapes the planner treats specially - elementwise
chains into and out of products (prologues, epilogues), widening converts around
products, a product's epilogue feeding a convert feeding another product, broadcasts and
transposes into products, reductions after products, values with several consumers,
elementwise ops whose operand dies there (donated parameters included), loops carrying
values, windows after elementwise ops, gathers and scatters, sorts with iota.

Each pattern picks its operands among the values made so far (so the ops connect and
values get several consumers) or makes fresh parameters and constants, and appends nodes
whose result types come from building each node alone with `accy.Builder` and verifying
it; a pattern that meets a rule it did not plan for is rolled back (`Reject`), so every
program the generator returns verifies. Shapes stay small (at most `MAX_ELEMENTS` per
value, fewer for the ops the numpy reference runs element by element) so a program runs
in milliseconds.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import numpy as np
from accy.dialects import accy as ops
from xdsl.dialects import func

import accy

from .spec import (
    BINARY,
    BITWISE,
    BOOL,
    DTYPES,
    FLOAT_BINARY,
    FLOAT_UNARY,
    FLOATS,
    INTEGER_UNARY,
    INTEGERS,
    NUMERIC_UNARY,
    RECIPES,
    SHIFTS,
    SORT_ORDERS,
    Node,
    Program,
    Tensor,
    tensor_of,
)

MAX_ELEMENTS = 4096
"""The most elements of any value."""
SLOW_ELEMENTS = 256
"""The most elements of a sort's, fold's, scatter's or window's operand (the reference
runs their bodies element by element)."""
SIZES = (1, 2, 3, 4, 5, 6, 7, 8, 12, 16, 24, 32)
WIDTH = {"f64": 64, "f32": 32, "f16": 16, "bf16": 16, "i64": 64, "i32": 32, "i16": 16,
         "i8": 8, "ui8": 8, "ui32": 32, "i1": 1}  # fmt: skip
SAME_WIDTH = {w: [d for d in DTYPES if WIDTH[d] == w] for w in (1, 8, 16, 32, 64)}
NAN = float("nan")
"""The one NaN constants hold (so that equal programs compare equal: NaN is only equal
to itself as the same object)."""


class Reject(Exception):
    """The pattern cannot be built here; the generator rolls it back."""


def is_float(t: Tensor) -> bool:
    return t.dtype in FLOATS


def is_int(t: Tensor) -> bool:
    return t.dtype in INTEGERS


def infer(op: str, arg_types: Sequence[Tensor], attrs: dict[str, Any]) -> list[Tensor]:
    """The result types of one node built alone, after verifying its ops; `Reject` where
    the Builder or a verifier refuses it."""
    builder = accy.Builder()
    fb = builder.begin_function("scratch", [t.type() for t in arg_types], [])
    try:
        made = RECIPES[op](fb, [fb.parameter(i) for i in range(len(arg_types))], attrs)
        built = list(fb.block.ops)
        fb.block.add_op(func.ReturnOp())  # a terminator, so that the last op verifies
        for o in built:
            o.verify()
    except Exception as error:  # noqa: BLE001 - any refusal rolls the pattern back
        raise Reject(f"{op}: {error}") from None
    return [tensor_of(v.type) for v in made]  # type: ignore[arg-type]


class Generator:
    """Grows one program (or one loop body). Values are handles (indices into `types`);
    `program()` renumbers them (parameters first) into a `Program`."""

    def __init__(self, rng: random.Random, *, fixed_params: Sequence[Tensor] = ()):
        self.rng = rng
        self.types: list[Tensor] = []
        self.uses: list[int] = []
        self.params: list[int] = []
        self.nodes: list[tuple[Node, list[int]]] = []
        self.donated: set[int] = set()
        self.sizes = rng.sample(SIZES, 4)
        for t in fixed_params:
            self.param(t)

    # Values ---------------------------------------------------------------------------

    def _new(self, t: Tensor) -> int:
        self.types.append(t)
        self.uses.append(0)
        return len(self.types) - 1

    def param(self, t: Tensor) -> int:
        handle = self._new(t)
        self.params.append(handle)
        return handle

    def emit(self, op: str, args: Sequence[int], **attrs: Any) -> list[int]:
        """Append one node; its result handles."""
        made = infer(op, [self.types[a] for a in args], attrs)
        if any(t.size > MAX_ELEMENTS for t in made):
            raise Reject(f"{op} makes {max(t.size for t in made)} elements")
        for a in args:
            self.uses[a] += 1
        handles = [self._new(t) for t in made]
        n = Node(op, tuple(args), tuple(sorted(attrs.items())), len(made))
        self.nodes.append((n, handles))
        return handles

    def one(self, op: str, args: Sequence[int], **attrs: Any) -> int:
        return self.emit(op, args, **attrs)[0]

    def mark(self) -> tuple:
        return (len(self.types), len(self.params), len(self.nodes), list(self.uses),
                set(self.donated))  # fmt: skip

    def rollback(self, mark: tuple) -> None:
        types, params, nodes, uses, donated = mark
        del self.types[types:]
        del self.params[params:]
        del self.nodes[nodes:]
        self.uses = uses[:types]
        self.donated = donated

    def shape(self, rank: int | None = None, limit: int = 512) -> tuple[int, ...]:
        """A random shape of the program's sizes (mostly) with at most `limit` elements."""
        rank = self.rng.choice((0, 1, 1, 2, 2, 2, 3, 3, 4)) if rank is None else rank
        for _ in range(20):
            dims = tuple(
                self.rng.choice(self.sizes) if self.rng.random() < 0.8 else self.rng.choice(SIZES)
                for _ in range(rank)
            )
            if int(np.prod(dims)) <= limit:
                return dims
        return (1,) * rank

    def dtype(self, kinds: Sequence[str] | None = None) -> str:
        if kinds is None:
            kinds = ("f32",) * 6 + ("bf16", "bf16", "f16", "f64") + INTEGERS + ("i32", BOOL)
        return self.rng.choice(tuple(kinds))

    def constant(self, t: Tensor, value: Any = None) -> int:
        """A constant of type `t`: a splat of `value`, else random small values."""
        rng = self.rng
        if value is not None:
            values: tuple = (value,)
        elif rng.random() < 0.5 or t.size > 64:
            values = (self.element(t.dtype),)
        else:
            values = tuple(self.element(t.dtype) for _ in range(t.size))
        return self.one("constant", [], dtype=t.dtype, shape=t.shape, values=values)

    def element(self, dtype: str) -> Any:
        rng = self.rng
        if dtype == BOOL:
            return rng.random() < 0.5
        if dtype in FLOATS:
            special = (0.0, -0.0, 1.0, -1.0, 0.5, 2.0, 1e-3, 1e4, float("inf"), NAN)
            return rng.choice(special) if rng.random() < 0.3 else round(rng.gauss(0, 2), 3)
        info = np.iinfo(accy.dtypes.NUMPY_DTYPES[dtype])
        if rng.random() < 0.15:
            return int(rng.choice((info.min, info.max, 0, 1)))
        return int(min(max(rng.randint(-8, 8), info.min), info.max))

    def fresh(self, t: Tensor) -> int:
        """A new value of type `t`: a parameter mostly, else a constant."""
        if self.rng.random() < 0.8 or t.role == "index":
            return self.param(t)
        return self.constant(t)

    def candidates(self, test: Callable[[Tensor], bool]) -> list[int]:
        return [h for h, t in enumerate(self.types) if test(t)]

    def pick(self, test: Callable[[Tensor], bool], make: Callable[[], int], reuse=0.7) -> int:
        """An existing value that passes `test` (recent and unused ones first), with
        probability `reuse` when there is one, else `make()`."""
        found = self.candidates(test)
        if found and self.rng.random() < reuse:
            unused = [h for h in found if self.uses[h] == 0]
            pool = unused if unused and self.rng.random() < 0.7 else found
            return self.rng.choice(pool[-6:])
        return make()

    def like(self, handle: int, reuse: float = 0.5) -> int:
        """Another value of the type of `handle`."""
        t = self.types[handle]
        data = replace(t, role="data", bound=0)
        return self.pick(
            lambda u: u.dtype == t.dtype and u.shape == t.shape and u.role == "data",
            lambda: self.fresh(data),
            reuse,
        )

    def value(self, kinds: Sequence[str] | None = None, *, rank: int | None = None,
              limit: int = 512, reuse: float = 0.75) -> int:  # fmt: skip
        """A data value of one of `kinds` (any type when None)."""

        def ok(t: Tensor) -> bool:
            return (
                t.role == "data"
                and (kinds is None or t.dtype in kinds)
                and (rank is None or t.rank == rank)
                and t.size <= limit
            )

        return self.pick(ok, lambda: self.fresh(Tensor(self.dtype(kinds), self.shape(rank, limit))),
                         reuse)  # fmt: skip

    def convert(self, handle: int, dtype: str) -> int:
        return (
            handle
            if self.types[handle].dtype == dtype
            else self.one("convert", [handle], dtype=dtype)
        )

    def index_scalar(self, bound: int) -> int:
        """A rank-0 integer (a slice start): a parameter mostly in `[0, bound]`, a constant,
        or computed."""
        dtype = self.rng.choice(("i32", "i32", "i64", "ui32", "i8"))
        roll = self.rng.random()
        if roll < 0.6:
            return self.param(Tensor(dtype, (), "index", bound))
        if roll < 0.85:
            return self.constant(Tensor(dtype, ()), self.rng.randint(-1, bound + 1))
        base = self.param(Tensor(dtype, (), "index", bound))
        return self.one("remainder", [base, self.constant(Tensor(dtype, ()), max(bound, 1))])

    def indices(self, shape: tuple[int, ...], bound: int) -> int:
        dtype = self.rng.choice(("i32", "i32", "i64", "ui32"))
        if self.rng.random() < 0.8:
            return self.param(Tensor(dtype, shape, "index", bound))
        iota = self.one("iota", [], dtype=dtype, shape=shape, dim=self.rng.randrange(len(shape)))
        return iota if self.rng.random() < 0.5 else self.one("reverse", [iota], dims=(0,))

    # The program ----------------------------------------------------------------------

    def program(self, results: Sequence[int], threads: int = 1) -> Program:
        number: dict[int, int] = {h: i for i, h in enumerate(self.params)}
        nodes = []
        for n, handles in self.nodes:
            nodes.append(replace(n, args=tuple(number[a] for a in n.args)))
            for h in handles:
                number[h] = len(number)
        return Program(
            params=tuple(self.types[h] for h in self.params),
            nodes=tuple(nodes),
            results=tuple(number[h] for h in results),
            donated=tuple(sorted(number[h] for h in self.donated)),
            threads=threads,
        )

    def sinks(self) -> list[int]:
        made = [h for _, handles in self.nodes for h in handles]
        return [h for h in made if self.uses[h] == 0]

    def choose_results(self) -> list[int]:
        """Every unused value (at most 6), sometimes also a used one, a parameter or a
        value twice."""
        rng = self.rng
        results = self.sinks()[-6:]
        made = [h for _, handles in self.nodes for h in handles]
        if made and (not results or rng.random() < 0.2):
            results.append(rng.choice(made))
        if self.params and rng.random() < 0.05:
            results.append(rng.choice(self.params))
        if results and rng.random() < 0.05:
            results.append(rng.choice(results))
        return results


# ---------------------------------------------------------------------------------------
# Patterns: each appends a few nodes to a generator
# ---------------------------------------------------------------------------------------


def elementwise_op(g: Generator, t: Tensor) -> str:
    """A random unary op name for values of type `t` (None of these for i1 but `not_`)."""
    if t.dtype == BOOL:
        return "not_"
    if is_float(t):
        return g.rng.choice(FLOAT_UNARY + NUMERIC_UNARY + ("tanh", "exponential", "negate"))
    return g.rng.choice(NUMERIC_UNARY + INTEGER_UNARY + ("not_",))


def binary_op(g: Generator, t: Tensor) -> str:
    if t.dtype == BOOL:
        return g.rng.choice(BITWISE)
    if is_float(t):
        return g.rng.choice(BINARY + FLOAT_BINARY + ("add", "multiply", "maximum"))
    return g.rng.choice(BINARY + BITWISE + SHIFTS)


def p_unary(g: Generator) -> None:
    x = g.value()
    g.one(elementwise_op(g, g.types[x]), [x])


def p_binary(g: Generator) -> None:
    x = g.value()
    g.one(binary_op(g, g.types[x]), [x, g.like(x)])


def p_chain(g: Generator) -> None:
    """Two to four elementwise ops in a row (one fused kernel), some with two operands."""
    x = g.value(FLOATS if g.rng.random() < 0.8 else None)
    for _ in range(g.rng.randint(2, 4)):
        t = g.types[x]
        if g.rng.random() < 0.5:
            x = g.one(elementwise_op(g, t), [x])
        else:
            x = g.one(binary_op(g, t), [x, g.like(x)])


def p_compare_select(g: Generator) -> None:
    x = g.value()
    t = g.types[x]
    direction = g.rng.choice(("EQ", "NE", "LT", "LE", "GT", "GE"))
    total = is_float(t) and g.rng.random() < 0.2
    pred = g.one("compare", [x, g.like(x)], direction=direction, total_order=total)
    if g.rng.random() < 0.3 and is_float(t):
        pred = g.one("and_", [pred, g.one("is_finite", [x])])
    on_true = x if g.rng.random() < 0.5 else g.like(x)
    g.one("select", [pred, on_true, g.like(x)])


def p_convert(g: Generator) -> None:
    x = g.value()
    t = g.types[x]
    if g.rng.random() < 0.3 and t.dtype != BOOL:
        same = [d for d in SAME_WIDTH[WIDTH[t.dtype]] if d != t.dtype]
        if same:
            g.one("bitcast_convert", [x], dtype=g.rng.choice(same))
            return
    y = g.one("convert", [x], dtype=g.dtype(DTYPES))
    if g.rng.random() < 0.4:  # and back (a round trip through a narrower or wider type)
        g.one("convert", [y], dtype=t.dtype)


def p_constant_arith(g: Generator) -> None:
    x = g.value()
    t = g.types[x]
    c = g.constant(replace(t, role="data", bound=0))
    op = binary_op(g, t)
    g.one(op, [x, c] if g.rng.random() < 0.5 else [c, x])


def p_constant_expression(g: Generator) -> None:
    """Elementwise ops on constants only (what a compiler may fold), then a use."""
    t = Tensor(g.dtype(), g.shape())
    x = g.constant(t)
    for _ in range(g.rng.randint(1, 3)):
        if g.rng.random() < 0.5:
            x = g.one(elementwise_op(g, t), [x])
        else:
            other = g.constant(t)
            x = g.one(binary_op(g, t), [x, other] if g.rng.random() < 0.5 else [other, x])
        t = g.types[x]
    g.one(binary_op(g, t), [x, g.like(x)])


def p_iota(g: Generator) -> None:
    t = Tensor(g.dtype(("i32", "i64", "f32", "ui8", "bf16")), g.shape(g.rng.randint(1, 3)))
    i = g.one("iota", [], dtype=t.dtype, shape=t.shape, dim=g.rng.randrange(t.rank))
    g.one(binary_op(g, t) if t.dtype != BOOL else "xor", [i, g.like(i)])


def p_shape(g: Generator) -> None:
    """One data movement op on an existing value."""
    x = g.value()
    t = g.types[x]
    rng = g.rng
    kind = rng.choice(("broadcast", "reshape", "transpose", "slice", "reverse", "pad", "concat"))
    if kind == "broadcast" or t.rank == 0:
        new_rank = max(t.rank, min(t.rank + rng.randint(0, 2), 4))
        dims = tuple(sorted(rng.sample(range(new_rank), t.rank)))
        shape = list(g.shape(new_rank, MAX_ELEMENTS))
        for d, n in zip(dims, t.shape):
            shape[d] = n if n != 1 or rng.random() < 0.5 else shape[d]
        g.one("broadcast_in_dim", [x], shape=tuple(shape), dims=dims)
    elif kind == "reshape":
        g.one("reshape", [x], shape=regroup(rng, t.shape))
    elif kind == "transpose":
        g.one("transpose", [x], permutation=tuple(rng.sample(range(t.rank), t.rank)))
    elif kind == "slice":
        start, limit, strides = [], [], []
        for n in t.shape:
            lo = rng.randint(0, max(n - 1, 0))
            start.append(lo)
            limit.append(rng.randint(lo, n))
            strides.append(rng.choice((1, 1, 2, 3)))
        g.one("slice", [x], start=tuple(start), limit=tuple(limit), strides=tuple(strides))
    elif kind == "reverse":
        g.one("reverse", [x], dims=tuple(sorted(rng.sample(range(t.rank), rng.randint(1, t.rank)))))
    elif kind == "pad":
        pad_value = g.pick(lambda u: u.dtype == t.dtype and u.rank == 0 and u.role == "data",
                           lambda: g.constant(Tensor(t.dtype, ())))  # fmt: skip
        low = tuple(rng.choice((0, 0, 1, 2, -1)) for _ in t.shape)
        high = tuple(rng.choice((0, 0, 1, 3, -1)) for _ in t.shape)
        interior = tuple(rng.choice((0, 0, 0, 1, 2)) for _ in t.shape)
        g.one("pad", [x, pad_value], low=low, high=high, interior=interior)
    else:
        dim = rng.randrange(t.rank)
        parts = [x]
        for _ in range(rng.randint(1, 3)):
            shape = list(t.shape)
            shape[dim] = rng.choice((1, 2, 3, t.shape[dim]))
            parts.append(g.pick(lambda u, s=tuple(shape): u.dtype == t.dtype and u.shape == s
                                and u.role == "data",
                                lambda s=tuple(shape): g.fresh(Tensor(t.dtype, s))))  # fmt: skip
        rng.shuffle(parts)
        g.one("concatenate", parts, dim=dim)


def regroup(rng: random.Random, shape: tuple[int, ...]) -> tuple[int, ...]:
    """Another shape of the same element count: the dims' prime factors regrouped."""
    factors = []
    for n in shape:
        k = 2
        while n > 1:
            while n % k == 0:
                factors.append(k)
                n //= k
            k += 1
    rng.shuffle(factors)
    rank = rng.randint(0 if not factors else 1, 4)
    dims = [1] * rank
    for f in factors:
        dims[rng.randrange(rank)] *= f
    return tuple(dims)


def p_reduce(g: Generator) -> None:
    x = g.value(rank=g.rng.randint(1, 3))
    t = g.types[x]
    dims = tuple(sorted(g.rng.sample(range(t.rank), g.rng.randint(1, t.rank))))
    g.one("reduce", [x], kind=g.rng.choice(("add", "max", "min", "mul", "add")), dims=dims)


def p_fold(g: Generator) -> None:
    """An argmax-like fold, its indices from an iota (or a sum-and-max of two operands)."""
    x = g.value(FLOATS + ("i32", "i8"), rank=g.rng.randint(1, 2), limit=SLOW_ELEMENTS)
    t = g.types[x]
    dims = tuple(sorted(g.rng.sample(range(t.rank), g.rng.randint(1, t.rank))))
    if g.rng.random() < 0.75:
        body = g.rng.choice(("argmax", "argmin"))
        index = g.one("iota", [], dtype=g.rng.choice(("i32", "i64")), shape=t.shape, dim=dims[-1])
        g.emit("fold", [x, index], body=body, dims=dims)
    else:
        g.emit("fold", [x, g.like(x)], body="sum_and_max", dims=dims)


def p_scan(g: Generator) -> None:
    x = g.value(FLOATS + ("i32", "i64"), rank=g.rng.randint(1, 3))
    t = g.types[x]
    scratch = g.constant(replace(t, role="data", bound=0), 0) if g.rng.random() < 0.6 else g.like(x)
    rounded = t.dtype in ("f16", "bf16") and g.rng.random() < 0.5
    kind = g.rng.choice(("add", "add", "max", "min", "mul"))
    g.one("scan", [x, scratch], kind=kind, dim=g.rng.randrange(t.rank), rounded=rounded)


def p_sort(g: Generator) -> None:
    """A sort along one dim, often with an iota (an argsort) whose indices then gather."""
    rng = g.rng
    x = g.value(FLOATS + ("i32", "ui8", "i16"), rank=rng.randint(1, 2), limit=SLOW_ELEMENTS)
    t = g.types[x]
    dim = rng.randrange(t.rank)
    order = rng.choice(SORT_ORDERS)
    roll = rng.random()
    if roll < 0.5:
        index = g.one("iota", [], dtype="i32", shape=t.shape, dim=dim)
        _, perm = g.emit("sort", [x, index], dim=dim, order=order, stable=rng.random() < 0.5)
        if t.rank == 1 and rng.random() < 0.6:  # the permutation gathers another vector
            other = g.like(x)
            column = g.one("reshape", [perm], shape=(t.shape[0], 1))
            g.one("gather", [other, column], numbers=gather_numbers([0], [0], [1], 1))
    elif roll < 0.75 and order == "lex":
        g.emit("sort", [x, g.like(x)], dim=dim, order=order)
    else:
        g.emit("sort", [x], dim=dim, order="lt" if order == "lex" else order)


def gather_numbers(offset_dims, collapsed, slice_sizes, index_vector_dim, start_map=None):
    return tuple(
        sorted(
            {
                "offset_dims": tuple(offset_dims),
                "collapsed_slice_dims": tuple(collapsed),
                "start_index_map": tuple(start_map if start_map is not None else collapsed),
                "index_vector_dim": index_vector_dim,
                "slice_sizes": tuple(slice_sizes),
            }.items()
        )
    )


def p_gather(g: Generator) -> None:
    rng = g.rng
    if rng.random() < 0.4:  # an embedding lookup: rows of a table
        table = g.value(FLOATS, rank=2)
        rows, width = g.types[table].shape
        count = rng.choice((1, 3, 5, 8))
        ids = g.indices((count, 1), rows)
        g.one("gather", [table, ids], numbers=gather_numbers([1], [0], [1, width], 1))
        return
    x = g.value(rank=rng.randint(1, 3))
    t = g.types[x]
    k = rng.randint(1, t.rank)
    start_map = rng.sample(range(t.rank), k)
    collapsed = sorted(d for d in start_map if rng.random() < 0.6)
    sizes = [
        min(1, n) if d in collapsed else rng.randint(min(1, n), n) for d, n in enumerate(t.shape)
    ]
    batch = [rng.choice((1, 2, 3, 4)) for _ in range(rng.randint(0, 2))]
    vector_dim = rng.randint(0, len(batch))
    implicit = k == 1 and rng.random() < 0.3
    index_shape = list(batch) if implicit else batch[:vector_dim] + [k] + batch[vector_dim:]
    if implicit:
        vector_dim = len(batch)
    offsets = t.rank - len(collapsed)
    result_rank = len(batch) + offsets
    offset_dims = sorted(rng.sample(range(result_rank), offsets))
    ids = g.indices(tuple(index_shape), max(t.shape) if t.shape else 1) if index_shape else None
    if ids is None:
        ids = g.param(Tensor("i32", (), "index", max(t.shape)))
    g.one("gather", [x, ids],
          numbers=gather_numbers(offset_dims, collapsed, sizes, vector_dim, start_map))  # fmt: skip


def p_scatter(g: Generator) -> None:
    rng = g.rng
    x = g.value(rank=rng.randint(1, 3), limit=SLOW_ELEMENTS)
    t = g.types[x]
    k = rng.randint(1, t.rank)
    to_operand = rng.sample(range(t.rank), k)
    inserted = sorted(d for d in to_operand if rng.random() < 0.7)
    window = [d for d in range(t.rank) if d not in inserted]
    window_sizes = [rng.randint(min(1, t.shape[d]), t.shape[d]) if d in to_operand else t.shape[d]
                    for d in window]  # fmt: skip
    batch = [rng.choice((1, 2, 3, 5)) for _ in range(rng.randint(1, 2))]
    vector_dim = rng.randint(0, len(batch))
    index_shape = batch[:vector_dim] + [k] + batch[vector_dim:]
    update_rank = len(batch) + len(window)
    window_dims = sorted(rng.sample(range(update_rank), len(window)))
    sizes, rest = iter(window_sizes), iter(batch)
    update_shape = tuple(
        next(sizes) if d in window_dims else next(rest) for d in range(update_rank)
    )
    if int(np.prod(update_shape)) > SLOW_ELEMENTS:
        raise Reject("scatter updates too big")
    ids = g.indices(tuple(index_shape), max(t.shape))
    dtype = t.dtype
    combines = ["replace", "add"] if dtype != BOOL else ["replace", "and_", "or_"]
    if dtype != BOOL:
        combines += ["maximum", "minimum", "multiply"]
    numbers = {
        "update_window_dims": tuple(window_dims),
        "inserted_window_dims": tuple(inserted),
        "scatter_dims_to_operand_dims": tuple(to_operand),
        "index_vector_dim": vector_dim,
    }
    updates = g.fresh(Tensor(dtype, update_shape))
    g.one("scatter", [x, ids, updates], combine=rng.choice(combines),
          numbers=tuple(sorted(numbers.items())))  # fmt: skip


def p_dynamic(g: Generator) -> None:
    rng = g.rng
    x = g.value(rank=rng.randint(1, 3))
    t = g.types[x]
    sizes = tuple(rng.randint(0 if rng.random() < 0.05 else min(1, n), n) for n in t.shape)
    starts = [g.index_scalar(n) for n in t.shape]
    if rng.random() < 0.5:
        g.one("dynamic_slice", [x, *starts], sizes=sizes)
    else:
        update = g.pick(lambda u: u.dtype == t.dtype and u.shape == sizes and u.role == "data",
                        lambda: g.fresh(Tensor(t.dtype, sizes)))  # fmt: skip
        g.one("dynamic_update_slice", [x, update, *starts])


# Products ------------------------------------------------------------------------------


def product(g: Generator, lhs: int | None = None, dtype: str | None = None) -> int:
    """A dot_general of random form (batch dims, transposed operands, several contracting
    dims) whose lhs is `lhs` (or a value found or made), in `dtype` (f16/bf16 operands
    sometimes widened to f32 first: an operand prologue); its result."""
    rng = g.rng
    if lhs is None:
        lhs = g.value(FLOATS + ("i32",), rank=rng.randint(1, 3), limit=1024)
    t = g.types[lhs]
    if t.rank == 0:
        raise Reject("a scalar lhs")
    roles = [rng.choice("bccll") for _ in range(t.rank)]
    if "c" not in roles and rng.random() < 0.9:
        roles[rng.randrange(t.rank)] = "c"
    pairs = [d for d, r in enumerate(roles) if r in "bc"]
    rhs_free = [rng.choice((1, 2, 3, 4, 5, 8, 16)) for _ in range(rng.choice((0, 1, 1, 1, 2)))]
    rhs_dims = pairs + [-1 - i for i in range(len(rhs_free))]  # -1 - i: free dim i
    rng.shuffle(rhs_dims)
    rhs_shape = tuple(t.shape[d] if d >= 0 else rhs_free[-1 - d] for d in rhs_dims)
    batching = ([d for d in pairs if roles[d] == "b"], [])
    contracting = ([d for d in pairs if roles[d] == "c"], [])
    batching = (batching[0], [rhs_dims.index(d) for d in batching[0]])
    contracting = (contracting[0], [rhs_dims.index(d) for d in contracting[0]])
    rhs = g.pick(lambda u: u.shape == rhs_shape and u.dtype == t.dtype and u.role == "data",
                 lambda: g.fresh(Tensor(t.dtype, rhs_shape)), 0.5)  # fmt: skip
    target = dtype or t.dtype
    if t.dtype in ("f16", "bf16") and dtype is None and rng.random() < 0.6:
        target = "f32"  # a widening prologue on both operands
    if t.dtype in INTEGERS and rng.random() < 0.6:
        target = rng.choice(("f32", "i32"))
    if t.dtype == BOOL:
        target = "f32"
    left, right = g.convert(lhs, target), g.convert(rhs, target)
    return g.one("dot_general", [left, right],
                 batching=(tuple(batching[0]), tuple(batching[1])),
                 contracting=(tuple(contracting[0]), tuple(contracting[1])))  # fmt: skip


def epilogue(g: Generator, x: int) -> int:
    """One to three elementwise ops after a product: a bias broadcast along a dim, an
    activation, a scale or a residual add; the last value."""
    rng = g.rng
    for _ in range(rng.randint(1, 3)):
        t = g.types[x]
        kind = rng.choice(("bias", "relu", "activation", "scale", "residual"))
        if t.dtype not in FLOATS and kind in ("activation",):
            kind = "relu"
        if kind == "bias" and t.rank >= 1:
            d = rng.randrange(t.rank)
            vector = g.fresh(Tensor(t.dtype, (t.shape[d],)))
            wide = g.one("broadcast_in_dim", [vector], shape=t.shape, dims=(d,))
            x = g.one("add", [x, wide])
        elif kind == "relu":
            zero = g.constant(Tensor(t.dtype, t.shape), 0)
            x = g.one("maximum", [x, zero])
        elif kind == "activation":
            x = g.one(rng.choice(("tanh", "logistic", "exponential", "abs", "negate")), [x])
        elif kind == "scale":
            s = g.constant(Tensor(t.dtype, ()), rng.choice((0.5, 2, -1, 3)))
            wide = g.one("broadcast_in_dim", [s], shape=t.shape, dims=())
            x = g.one("multiply", [wide, x] if rng.random() < 0.5 else [x, wide])
        else:
            x = g.one(rng.choice(("add", "subtract", "multiply")), [x, g.like(x)])
    return x


def p_product(g: Generator) -> None:
    p = product(g)
    if g.rng.random() < 0.6:
        epilogue(g, p)


def p_prologue_product(g: Generator) -> None:
    """Elementwise ops (or a broadcast, or a transpose) feeding a product's operand."""
    rng = g.rng
    x = g.value(FLOATS, rank=rng.randint(1, 3), limit=1024)
    kind = rng.choice(("chain", "broadcast", "transpose", "convert"))
    t = g.types[x]
    if kind == "chain":
        x = g.one(rng.choice(("tanh", "negate", "abs", "exponential")), [x])
        x = g.one(rng.choice(("add", "multiply")), [x, g.like(x)])
    elif kind == "broadcast" and t.rank < 3:
        shape = (rng.choice((1, 2, 3, 4)), *t.shape)
        x = g.one("broadcast_in_dim", [x], shape=shape, dims=tuple(range(1, t.rank + 1)))
    elif kind == "transpose" and t.rank >= 2:
        x = g.one("transpose", [x], permutation=tuple(rng.sample(range(t.rank), t.rank)))
    elif t.dtype in ("f32", "f64"):
        x = g.one("convert", [x], dtype=rng.choice(("bf16", "f16")))
    product(g, x)


def p_mixed_precision(g: Generator) -> None:
    """bf16/f16 operands widened to f32 for the product, the result (after an epilogue)
    narrowed back; sometimes into a second product (epilogue -> convert -> product)."""
    rng = g.rng
    narrow = rng.choice(("bf16", "bf16", "f16"))
    x = g.value((narrow,), rank=rng.randint(1, 3), limit=1024)
    p = product(g, x, "f32")
    p = epilogue(g, p) if rng.random() < 0.7 else p
    back = g.one("convert", [p], dtype=narrow)
    if rng.random() < 0.6 and g.types[back].rank >= 1:
        product(g, back, rng.choice(("f32", narrow)))


def p_reduce_after_product(g: Generator) -> None:
    p = product(g)
    t = g.types[p]
    if t.rank == 0:
        return
    dims = tuple(sorted(g.rng.sample(range(t.rank), g.rng.randint(1, t.rank))))
    g.one("reduce", [p], kind=g.rng.choice(("add", "max", "min")), dims=dims)


def p_product_chain(g: Generator) -> None:
    """Two products in a row, the second reading the first (through an epilogue)."""
    p = epilogue(g, product(g))
    if g.types[p].rank >= 1:
        product(g, p)


def p_attention(g: Generator) -> None:
    """softmax(Q K^T) V as models write it (one `attention` kernel where it fuses): q, k
    and v with batch, heads, length and depth in random orders, sometimes a scale or a
    causal mask on the scores, the softmax with or without its max, the probabilities on
    either side of the values product; sometimes they are also a result (nothing fuses)."""
    rng = g.rng
    dtype = rng.choice(("f32", "f32", "f64", "bf16"))
    n = rng.randint(1, 9)
    size = {"b": rng.randint(1, 2), "h": rng.randint(1, 3), "n": n, "m": rng.randint(1, 40),
            "d": rng.choice((1, 3, 4, 8, 16)), "e": rng.choice((1, 3, 4, 8, 16))}  # fmt: skip
    if rng.random() < 0.4:
        size["m"] = n  # self-attention, the mask causal
    layouts = ["".join(rng.sample(names, 4)) for names in ("bhnd", "bhmd", "bhme")]
    q, k, v = (g.fresh(Tensor(dtype, tuple(size[c] for c in lay))) for lay in layouts)
    ql, kl, vl = layouts
    scores = g.one("dot_general", [q, k],
                   batching=((ql.index("b"), ql.index("h")), (kl.index("b"), kl.index("h"))),
                   contracting=((ql.index("d"),), (kl.index("d"),)))  # fmt: skip
    shape = g.types[scores].shape
    rows = shape[:-1]
    if rng.random() < 0.5:
        scale = g.constant(Tensor(dtype, ()), rng.choice((0.125, 0.5, 2)))
        wide = g.one("broadcast_in_dim", [scale], shape=shape, dims=())
        scores = g.one("multiply", [scores, wide])
    if size["m"] == n and rng.random() < 0.7:
        i = g.one("iota", [], dtype="i32", shape=shape, dim=2)
        j = g.one("iota", [], dtype="i32", shape=shape, dim=3)
        keep = g.one("compare", [i, j], direction="GE", total_order=False)
        low = g.constant(Tensor(dtype, shape), -1e4)
        scores = g.one("select", [keep, scores, low])
    x = scores
    if rng.random() < 0.8:
        most = g.one("reduce", [scores], kind="max", dims=(3,))
        x = g.one(
            "subtract", [scores, g.one("broadcast_in_dim", [most], shape=shape, dims=(0, 1, 2))]
        )
    e = g.one("exponential", [x])
    total = g.one("reduce", [e], kind="add", dims=(3,))
    if rng.random() < 0.5:
        total = g.one("broadcast_in_dim", [total], shape=(*rows, 1), dims=(0, 1, 2))
        total = g.one("broadcast_in_dim", [total], shape=shape, dims=(0, 1, 2, 3))
    else:
        total = g.one("broadcast_in_dim", [total], shape=shape, dims=(0, 1, 2))
    p = g.one("divide", [e, total])
    pair = ((0, 1), (vl.index("b"), vl.index("h"))), ((3,), (vl.index("m"),))
    if rng.random() < 0.7:
        out = g.one("dot_general", [p, v], batching=pair[0], contracting=pair[1])
    else:
        out = g.one("dot_general", [v, p], batching=pair[0][::-1], contracting=pair[1][::-1])
    if rng.random() < 0.2:
        g.one("negate", [p])  # the probabilities read elsewhere
    if rng.random() < 0.3:
        epilogue(g, out)


# In-place updates, several consumers --------------------------------------------------


def p_in_place(g: Generator) -> None:
    """An elementwise op whose operand dies there: a donated parameter, or a temporary."""
    rng = g.rng
    t = Tensor(g.dtype(), g.shape())
    if rng.random() < 0.6:
        p = g.param(t)
        g.donated.add(p)
    else:
        p = g.one(elementwise_op(g, t), [g.fresh(t)])
    op = binary_op(g, t)
    g.one(op, [p, g.like(p)] if rng.random() < 0.5 else [g.like(p), p])


def p_several_consumers(g: Generator) -> None:
    """Another consumer of a value that has one already."""
    used = [h for h, t in enumerate(g.types) if g.uses[h] > 0 and t.role == "data"]
    if not used:
        raise Reject("no used value")
    x = g.rng.choice(used[-8:])
    t = g.types[x]
    if g.rng.random() < 0.5:
        g.one(elementwise_op(g, t), [x])
    elif t.rank >= 1 and g.rng.random() < 0.5:
        g.one("reduce", [x], kind="add" if t.dtype != BOOL else "max", dims=(t.rank - 1,))
    else:
        g.one(binary_op(g, t), [x, g.like(x)])


# Windows and convolutions --------------------------------------------------------------


def window_numbers(g: Generator, shape: tuple[int, ...], dilations: bool) -> dict[str, Any]:
    rng = g.rng
    window = tuple(rng.randint(1, max(1, min(3, n))) for n in shape)
    numbers = {
        "window": window,
        "strides": tuple(rng.choice((1, 1, 2)) for _ in shape),
        "padding": tuple((rng.choice((0, 0, 1)), rng.choice((0, 0, 1, 2))) for _ in shape),
    }
    if dilations:
        numbers["base_dilations"] = tuple(rng.choice((1, 1, 1, 2)) for _ in shape)
        numbers["window_dilations"] = tuple(rng.choice((1, 1, 1, 2)) for _ in shape)
    return numbers


def p_reduce_window(g: Generator) -> None:
    """A pooling window, often after an elementwise op."""
    rng = g.rng
    x = g.value(FLOATS + ("i32",), rank=rng.randint(1, 3), limit=128)
    if rng.random() < 0.5:
        x = g.one(elementwise_op(g, g.types[x]), [x])
    numbers = window_numbers(g, g.types[x].shape, True)
    g.emit("reduce_window", [x], body=rng.choice(("add", "max", "min")),
           numbers=tuple(sorted(numbers.items())))  # fmt: skip


def p_select_and_scatter(g: Generator) -> None:
    rng = g.rng
    x = g.value(FLOATS, rank=rng.randint(1, 3), limit=128)
    t = g.types[x]
    numbers = window_numbers(g, t.shape, False)
    pads = numbers["padding"]
    source_shape = tuple(
        ops.window_positions(n, w, s, 1, 1, lo, hi)
        for n, w, s, (lo, hi) in zip(t.shape, numbers["window"], numbers["strides"], pads)
    )
    source = g.fresh(Tensor(t.dtype, source_shape))
    g.one("select_and_scatter", [x, source], select=rng.choice(("GE", "LE", "GT")),
          numbers=tuple(sorted(numbers.items())))  # fmt: skip


def p_convolution(g: Generator) -> None:
    """A convolution of random layout, padding, strides, dilations and groups, its input
    often made by an elementwise op."""
    rng = g.rng
    spatial = rng.choice((1, 1, 2, 2, 3)) if rng.random() < 0.9 else 1
    groups = rng.choice((1, 1, 1, 2, 3))
    batch_groups = 1 if groups > 1 or rng.random() < 0.85 else 2
    n = rng.choice((1, 2)) * batch_groups
    ci, co = rng.choice((1, 2, 3)), rng.choice((1, 2, 4))
    c_in, c_out = ci * groups, co * groups * batch_groups
    sizes = [rng.randint(2, 7 if spatial < 3 else 4) for _ in range(spatial)]
    kernel = [rng.randint(1, 3) for _ in range(spatial)]
    rank = spatial + 2
    lhs_dims = tuple(rng.sample(range(rank), rank)) if rng.random() < 0.5 else tuple(range(rank))
    rhs_dims = tuple(rng.sample(range(rank), rank)) if rng.random() < 0.5 else tuple(range(rank))
    result_dims = lhs_dims if rng.random() < 0.6 else tuple(rng.sample(range(rank), rank))
    lhs_shape = [0] * rank
    for role, size in zip(lhs_dims, [n, c_in, *sizes]):
        lhs_shape[role] = size
    rhs_shape = [0] * rank
    for role, size in zip(rhs_dims, [ci, c_out, *kernel]):
        rhs_shape[role] = size
    dtype = rng.choice(("f32", "f32", "f32", "bf16", "f16", "f64", "i32"))
    numbers = {
        "lhs_dims": lhs_dims,
        "rhs_dims": rhs_dims,
        "result_dims": result_dims,
        "strides": tuple(rng.choice((1, 1, 2)) for _ in range(spatial)),
        "padding": tuple(
            (rng.choice((0, 0, 1, 2, -1)), rng.choice((0, 0, 1))) for _ in range(spatial)
        ),
        "lhs_dilation": tuple(rng.choice((1, 1, 1, 2)) for _ in range(spatial)),
        "rhs_dilation": tuple(rng.choice((1, 1, 1, 2)) for _ in range(spatial)),
        "reversal": tuple(rng.random() < 0.2 for _ in range(spatial)),
        "feature_groups": groups,
        "batch_groups": batch_groups,
    }
    if dtype in ("bf16", "f16") and rng.random() < 0.5:
        numbers["dtype"] = "f32"
    lhs = g.pick(lambda u: u.shape == tuple(lhs_shape) and u.dtype == dtype and u.role == "data",
                 lambda: g.fresh(Tensor(dtype, tuple(lhs_shape))))  # fmt: skip
    if rng.random() < 0.5:
        lhs = g.one(elementwise_op(g, g.types[lhs]), [lhs])
    rhs = g.fresh(Tensor(dtype, tuple(rhs_shape)))
    result = g.one("convolution", [lhs, rhs], numbers=tuple(sorted(numbers.items())))
    if rng.random() < 0.4:
        epilogue(g, result)


# Loops ---------------------------------------------------------------------------------


def loop_body(g: Generator, carried: Sequence[Tensor], counter: bool) -> Program:
    """A body over `carried` (after an i32 trip counter when `counter`): one to four ops
    on the carried values and captured ones, yielding values of the carried types."""
    rng = g.rng
    first = (Tensor("i32", ()),) if counter else ()
    body = Generator(rng, fixed_params=(*first, *carried))
    body.sizes = g.sizes
    offset = len(first)
    for _ in range(rng.randint(1, 4)):
        mark = body.mark()
        try:
            rng.choice(BODY_PATTERNS)(body, offset)
        except Reject:
            body.rollback(mark)
    results = []
    for i, t in enumerate(carried):
        same = [h for h, u in enumerate(body.types) if u.dtype == t.dtype and u.shape == t.shape
                and h >= offset + len(carried)]  # fmt: skip
        results.append(rng.choice(same[-3:]) if same else offset + i)
    return body.program(results)


def body_elementwise(body: Generator, offset: int) -> None:
    x = body.rng.randrange(offset, len(body.types))
    t = body.types[x]
    if body.rng.random() < 0.5:
        body.one(elementwise_op(body, t), [x])
    else:
        body.one(binary_op(body, t), [x, body.like(x, 0.8)])


def body_damped(body: Generator, offset: int) -> None:
    """x * 0.5 + tanh(y): keeps carried floats bounded over the trips."""
    floats = [h for h in range(offset, len(body.types)) if is_float(body.types[h])]
    if not floats:
        raise Reject("no float carried")
    x = body.rng.choice(floats)
    t = body.types[x]
    half = body.constant(replace(t, role="data", bound=0), 0.5)
    body.one("add", [body.one("multiply", [x, half]), body.one("tanh", [body.like(x, 0.8)])])


def body_update_row(body: Generator, offset: int) -> None:
    """A row written at the trip counter (a while body's first parameter)."""
    if offset == 0:
        raise Reject("no counter")
    rows = [h for h in range(offset, len(body.types)) if body.types[h].rank == 2]
    if not rows:
        raise Reject("no matrix")
    x = body.rng.choice(rows)
    t = body.types[x]
    update = body.fresh(Tensor(t.dtype, (1, t.shape[1])))
    zero = body.constant(Tensor("i32", ()), 0)
    counter = 0  # the body's parameter #0
    body.one("dynamic_update_slice", [x, update, counter, zero])


def body_product(body: Generator, offset: int) -> None:
    square = [h for h in range(offset, len(body.types))
              if body.types[h].rank == 2 and body.types[h].dtype in ("f32", "f64")]  # fmt: skip
    if not square:
        raise Reject("no matrix")
    x = body.rng.choice(square)
    t = body.types[x]
    w = body.fresh(Tensor(t.dtype, (t.shape[1], t.shape[1])))
    p = body.one("dot_general", [x, w], batching=((), ()), contracting=((1,), (0,)))
    body.one("tanh", [p])


def body_reduce_broadcast(body: Generator, offset: int) -> None:
    x = body.rng.randrange(offset, len(body.types))
    t = body.types[x]
    if t.rank == 0 or t.dtype == BOOL:
        raise Reject("nothing to reduce")
    r = body.one("reduce", [x], kind="max", dims=(t.rank - 1,))
    wide = body.one("broadcast_in_dim", [r], shape=t.shape, dims=tuple(range(t.rank - 1)))
    body.one("subtract", [x, wide])


BODY_PATTERNS = (body_elementwise, body_elementwise, body_damped, body_damped, body_update_row,
                 body_product, body_reduce_broadcast)  # fmt: skip


def p_loop(g: Generator) -> None:
    """An iterate (a counted loop) or a while (bounded by a trip counter, sometimes also
    by the data) carrying one or two values, its body capturing outer values."""
    rng = g.rng
    carried = [g.value(rank=rng.randint(0, 2), limit=256) for _ in range(rng.randint(1, 2))]
    if rng.random() < 0.3:
        carried[0] = g.value(FLOATS, rank=2, limit=256)
    types = [g.types[h] for h in carried]
    use_while = rng.random() < 0.5
    body = loop_body(g, types, counter=use_while)
    inner = (1 if use_while else 0) + len(carried)
    captures = []
    for t in body.params[inner:]:
        captures.append(g.pick(lambda u, t=t: u == t, lambda t=t: g.fresh(t), 0.5))
    if use_while:
        cond = rng.choice(("count", "count_and_positive"))
        if types[0].dtype == BOOL:
            cond = "count"
        g.emit("while", [*carried, *captures], body=body, inits=len(carried),
               limit=rng.randint(0, 5), cond=cond)  # fmt: skip
    else:
        g.emit("iterate", [*carried, *captures], body=body, inits=len(carried),
               trips=rng.choice((0, 1, 2, 3, 4)))  # fmt: skip


PATTERNS: tuple[tuple[Callable[[Generator], None], int], ...] = (
    (p_unary, 6), (p_binary, 6), (p_chain, 6), (p_compare_select, 4), (p_convert, 5),
    (p_constant_arith, 3), (p_constant_expression, 2), (p_iota, 2), (p_shape, 8), (p_reduce, 4), (p_fold, 2), (p_scan, 2),
    (p_sort, 2), (p_gather, 3), (p_scatter, 3), (p_dynamic, 3), (p_product, 5),
    (p_prologue_product, 4), (p_mixed_precision, 4), (p_reduce_after_product, 3),
    (p_product_chain, 3), (p_attention, 3), (p_in_place, 3), (p_several_consumers, 4), (p_reduce_window, 3),
    (p_select_and_scatter, 1), (p_convolution, 3), (p_loop, 3),
)  # fmt: skip
"""The patterns and their weights."""


def program(seed: int, index: int, *, ops: tuple[int, int] = (5, 25)) -> Program:
    """The program `index` of the run with `seed`: between `ops` nodes (about)."""
    rng = random.Random(f"accy-fuzz-programs/{seed}/{index}")
    g = Generator(rng)
    target = rng.randint(*ops)
    functions, weights = zip(*PATTERNS)
    attempts = 0
    while len(g.nodes) < target and attempts < 200:
        attempts += 1
        pattern = rng.choices(functions, weights)[0]
        mark = g.mark()
        try:
            pattern(g)
        except Reject:
            g.rollback(mark)
    if not g.nodes:
        g.one("negate", [g.param(Tensor("f32", (4,)))])
    return g.program(g.choose_results(), threads=rng.choice((1, 1, 2)))
