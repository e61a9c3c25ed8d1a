"""Random JAX functions through accy against XLA, StableHLO's interpreter as the judge.

A `JaxProgram` is a small spec that is both executed and printed: parameters, lines
`vN = <expression over earlier names>` and the names it returns; `source()` is the Python
function a test can paste. `program(seed, index)` grows one from `TEMPLATES` (jnp
elementwise ops, casts to and from bf16/f16, `@`/einsum/`lax.dot_general` with
`preferred_element_type`, `lax.conv_general_dilated`, `lax.reduce_window` pooling,
`jnp.take` and `.at[].set/add/max`, `jnp.sort`/`argsort`/`lax.top_k`, `lax.fori_loop`,
`lax.while_loop`, `lax.scan`, `jnp.cumsum`, `jax.grad` of a scalar function, `jax.vmap`,
reductions, softmax, data movement), each line's type found with `jax.eval_shape`; some
programs enable `jax_enable_x64` (f64 values, f64 -> bf16 converts), some donate their
first argument.

`run_case` lowers the function with `jax.jit(f, keep_unused=True).lower(*args).as_text()`,
imports it with `accy.import_stablehlo`, compiles it for the CPU and compares accy's
results with XLA's (`jax.jit(f)(*args)`), each element within the spread of noisy runs
of accy's numpy reference on the imported program (`compare.py`). Where they disagree
and XLA agrees with accy's reference while accy's compiled result does not, accy is
WRONG; elsewhere StableHLO's reference interpreter (`accy.mlir_bridge.eval_stablehlo`,
in a child process) decides, element by element (`judge`): accy agreeing with it is
XLA_DIFFERS (XLA's CPU flushes subnormals, drops the sign of x*0, keeps f32 across a
fused bf16 chain; never counted against accy), accy disagreeing with it where XLA agrees
is WRONG, unless the program accumulates in an order StableHLO leaves open and accy
agrees with the program run in f64 (`exact_results`): EXACT (reported, not a failure;
IEEE 754 lets sums use a wider format); an interpreter that cannot run the program (JAX's
`chlo` ops other than `chlo.square`, which `interpret` rewrites) or that disagrees with
both leaves it UNDECIDED. JAX is imported only here, inside the functions.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
from watchdog import Outcome

from . import check, compare, values
from .spec import Tensor

JNP = {"f64": "jnp.float64", "f32": "jnp.float32", "f16": "jnp.float16",
       "bf16": "jnp.bfloat16", "i64": "jnp.int64", "i32": "jnp.int32", "i16": "jnp.int16",
       "i8": "jnp.int8", "ui8": "jnp.uint8", "ui32": "jnp.uint32", "i1": "jnp.bool_"}  # fmt: skip
FLOATS = ("f32", "f16", "bf16", "f64")
INTS = ("i32", "i8", "ui8", "i16", "ui32", "i64")
MAX_ELEMENTS = 4096


@dataclass(frozen=True)
class JaxProgram:
    """Parameters `a0, a1, ...`, lines `(name, expression, template)` and the returned
    names; `x64` runs it with `jax_enable_x64`, `donate` lists donated parameters."""

    params: tuple[Tensor, ...]
    lines: tuple[tuple[str, str, str], ...]
    results: tuple[str, ...]
    x64: bool = False
    donate: tuple[int, ...] = ()

    def source(self) -> str:
        names = ", ".join(f"a{i}" for i in range(len(self.params)))
        body = [f"    {name} = {expression}" for name, expression, _ in self.lines]
        returned = ", ".join(self.results)
        head = "import jax, jax.numpy as jnp, numpy as np\nfrom jax import lax\n"
        if self.x64:
            head += 'jax.config.update("jax_enable_x64", True)\n'
        signature = ", ".join(f"a{i}: {p.dtype}{list(p.shape)}" for i, p in enumerate(self.params))
        return (f"{head}\n\ndef f({names}):  # {signature}\n" + "\n".join(body)
                + f"\n    return ({returned},)\n")  # fmt: skip

    def function(self) -> Callable:
        namespace = _namespace()
        code = self.source().split("\n\n\n", 1)[1]
        exec(compile(code, "<fuzz program>", "exec"), namespace)  # noqa: S102 - our own text
        return namespace["f"]

    def op_names(self) -> list[str]:
        return [template for _, _, template in self.lines]

    def size(self) -> int:
        return len(self.lines) * 1_000_000 + sum(p.size + p.rank for p in self.params)


def _namespace() -> dict[str, Any]:
    import jax
    import jax.numpy as jnp
    from jax import lax

    return {"jax": jax, "jnp": jnp, "lax": lax, "np": np}


def set_x64(enabled: bool) -> None:
    import jax

    jax.config.update("jax_enable_x64", enabled)


def _name_of(dtype) -> str:
    from accy import dtypes

    return dtypes.element_name(dtypes.element_type(np.dtype(dtype)))


class Reject(Exception):
    pass


# ---------------------------------------------------------------------------------------
# The generator
# ---------------------------------------------------------------------------------------


class JaxGenerator:
    def __init__(self, rng: random.Random, x64: bool):
        self.rng = rng
        self.x64 = x64
        self.params: list[Tensor] = []
        self.lines: list[tuple[str, str, str]] = []
        self.types: dict[str, Tensor] = {}
        self.uses: dict[str, int] = {}
        self.sizes = rng.sample((1, 2, 3, 4, 5, 6, 8, 12, 16), 4)
        self.donate: list[int] = []

    def mark(self) -> tuple:
        return (len(self.params), len(self.lines), dict(self.types), dict(self.uses),
                list(self.donate))  # fmt: skip

    def rollback(self, mark: tuple) -> None:
        params, lines, types, uses, donate = mark
        del self.params[params:]
        del self.lines[lines:]
        self.types, self.uses, self.donate = types, uses, donate

    def dtype(self, kinds: Sequence[str] | None = None) -> str:
        if kinds is None:
            kinds = ("f32",) * 6 + ("bf16", "bf16", "f16", "i32", "i8", "ui8", "i1")
        kinds = [k for k in kinds if self.x64 or k not in ("f64", "i64")]
        return self.rng.choice(kinds)

    def shape(self, rank: int | None = None, limit: int = 512) -> tuple[int, ...]:
        rank = self.rng.choice((0, 1, 1, 2, 2, 2, 3, 3)) if rank is None else rank
        for _ in range(20):
            dims = tuple(self.rng.choice(self.sizes) for _ in range(rank))
            if int(np.prod(dims)) <= limit:
                return dims
        return (1,) * rank

    def fresh(self, t: Tensor) -> str:
        name = f"a{len(self.params)}"
        self.params.append(t)
        self.types[name] = t
        self.uses[name] = 0
        return name

    def pick(self, test: Callable[[Tensor], bool], make: Callable[[], str], reuse=0.75) -> str:
        found = [n for n, t in self.types.items() if t.role == "data" and test(t)]
        if found and self.rng.random() < reuse:
            unused = [n for n in found if self.uses[n] == 0]
            return self.rng.choice((unused if unused and self.rng.random() < 0.7 else found)[-6:])
        return make()

    def value(self, kinds=None, rank=None, limit=512, reuse=0.75) -> str:
        def ok(t: Tensor) -> bool:
            return ((kinds is None or t.dtype in kinds) and (rank is None or t.rank == rank)
                    and t.size <= limit)  # fmt: skip

        return self.pick(ok, lambda: self.fresh(Tensor(self.dtype(kinds), self.shape(rank, limit))),
                         reuse)  # fmt: skip

    def like(self, name: str, reuse: float = 0.5) -> str:
        t = self.types[name]
        return self.pick(lambda u: u.dtype == t.dtype and u.shape == t.shape,
                         lambda: self.fresh(replace(t, role="data", bound=0)), reuse)  # fmt: skip

    def index(self, shape: tuple[int, ...], bound: int) -> str:
        return self.fresh(Tensor("i32", shape, "index", bound))

    def add(self, template: str, expression: str) -> str:
        """Append `vN = expression`; its name. `Reject` when JAX refuses it or it makes
        anything but one array of at most `MAX_ELEMENTS`."""
        import jax

        used = sorted(set(re.findall(r"\b[av]\d+\b", expression)), key=lambda n: (n[0], int(n[1:])))
        try:
            function = eval(f"lambda {', '.join(used)}: {expression}", _namespace())
            avals = [jax.ShapeDtypeStruct(self.types[n].shape, values.numpy_dtype(self.types[n]))
                     for n in used]  # fmt: skip
            out = jax.eval_shape(function, *avals)
        except Exception as error:  # noqa: BLE001 - JAX refused the expression
            raise Reject(f"{expression}: {error}") from None
        if not isinstance(out, jax.ShapeDtypeStruct) or out.size > MAX_ELEMENTS:
            raise Reject(f"{expression} makes {out}")
        name = f"v{len(self.lines)}"
        self.lines.append((name, expression, template))
        self.types[name] = Tensor(_name_of(out.dtype), tuple(out.shape))
        self.uses[name] = 0
        for n in used:
            self.uses[n] += 1
        return name

    def program(self) -> JaxProgram:
        sinks = [n for n, _, _ in self.lines if self.uses[n] == 0][-6:]
        if not sinks:
            sinks = [self.lines[-1][0]]
        return JaxProgram(tuple(self.params), tuple(self.lines), tuple(sinks), self.x64,
                          tuple(self.donate))  # fmt: skip


# Templates ------------------------------------------------------------------------------

UNARY = ("jnp.tanh({x})", "jnp.exp({x})", "jnp.log(jnp.abs({x}) + 1)", "jnp.sqrt(jnp.abs({x}))",
         "jax.nn.relu({x})", "jax.nn.sigmoid({x})", "jax.nn.gelu({x})", "jax.nn.softplus({x})",
         "jnp.sin({x})", "jnp.cos({x})", "-{x}", "jnp.abs({x})", "jnp.square({x})",
         "jnp.floor({x})", "jnp.round({x})", "jax.nn.silu({x})", "lax.rsqrt(jnp.abs({x}) + 1)",
         "jnp.log1p(jnp.abs({x}))", "jnp.expm1({x})", "jnp.cbrt({x})", "jnp.sign({x})",
         "lax.erf({x})", "jnp.reciprocal({x})", "{x} * 0.5 + 1.0", "lax.logistic({x})")  # fmt: skip
BINARY = ("{x} + {y}", "{x} - {y}", "{x} * {y}", "{x} / {y}", "jnp.maximum({x}, {y})",
          "jnp.minimum({x}, {y})", "jnp.where({x} > {y}, {x}, {y})", "jnp.arctan2({x}, {y})",
          "{x} ** 2 + {y}", "jnp.remainder({x}, {y})")  # fmt: skip
INT_BINARY = ("{x} + {y}", "{x} * {y}", "{x} // {y}", "{x} % {y}", "{x} & {y}", "{x} | {y}",
              "{x} ^ {y}", "{x} << ({y} & 7)", "{x} >> 2", "jnp.clip({x}, -3, 3)",
              "jnp.maximum({x}, {y})")  # fmt: skip


def t_unary(g: JaxGenerator) -> None:
    x = g.value(FLOATS)
    g.add("unary", g.rng.choice(UNARY).format(x=x))


def t_binary(g: JaxGenerator) -> None:
    x = g.value()
    t = g.types[x]
    if t.dtype in FLOATS:
        g.add("binary", g.rng.choice(BINARY).format(x=x, y=g.like(x)))
    elif t.dtype == "i1":
        g.add("logical", f"{x} {g.rng.choice('&|^')} {g.like(x)}")
    else:
        g.add("int_binary", g.rng.choice(INT_BINARY).format(x=x, y=g.like(x)))


def t_broadcast_binary(g: JaxGenerator) -> None:
    """An operand broadcast along the last dims (a bias) or a Python scalar."""
    x = g.value(FLOATS, rank=g.rng.randint(1, 3))
    t = g.types[x]
    vector = g.pick(lambda u: u.dtype == t.dtype and u.shape == t.shape[-1:],
                    lambda: g.fresh(Tensor(t.dtype, t.shape[-1:])))  # fmt: skip
    g.add("broadcast", f"{x} {g.rng.choice('+-*')} {vector}")


def t_cast(g: JaxGenerator) -> None:
    x = g.value()
    t = g.types[x]
    rng = g.rng
    if rng.random() < 0.2:
        same = {"f32": "jnp.int32", "i32": "jnp.float32", "ui32": "jnp.float32",
                "f16": "jnp.int16", "bf16": "jnp.int16", "i16": "jnp.bfloat16",
                "i8": "jnp.uint8", "ui8": "jnp.int8"}  # fmt: skip
        if t.dtype in same:
            g.add("bitcast", f"lax.bitcast_convert_type({x}, {same[t.dtype]})")
            return
    target = g.dtype(("bf16", "f16", "f32", "f64", "i32", "i8", "ui8", "i1", "bf16"))
    y = g.add("cast", f"{x}.astype({JNP[target]})")
    if rng.random() < 0.5:
        g.add("cast", f"{y}.astype({JNP[t.dtype]})")


def t_product(g: JaxGenerator) -> None:
    """`@`, an einsum (batched, transposed) or `lax.dot_general` with a preferred type."""
    rng = g.rng
    x = g.value(FLOATS, rank=rng.randint(1, 3), limit=1024)
    t = g.types[x]
    k = t.shape[-1]
    n = rng.choice((1, 2, 3, 4, 8, 16))
    form = rng.choice(("matmul", "einsum_t", "dot_general", "mixed", "matmul"))
    if form == "einsum_t" and t.rank == 2:
        w = g.fresh(Tensor(t.dtype, (n, k)))
        g.add("einsum", f"jnp.einsum('ij,kj->ik', {x}, {w})")
    elif form == "einsum_t" and t.rank == 3:
        w = g.fresh(Tensor(t.dtype, (t.shape[0], k, n)))
        g.add("einsum", f"jnp.einsum('bij,bjk->bik', {x}, {w})")
    elif form in ("dot_general", "mixed"):
        narrow = rng.choice(("bf16", "f16"))
        w = g.fresh(Tensor(narrow, (k, n)))
        lhs = f"{x}.astype({JNP[narrow]})"
        g.add("dot_general", f"lax.dot_general({lhs}, {w}, ((({t.rank - 1},), (0,)), ((), ())), "
                             "preferred_element_type=jnp.float32)")  # fmt: skip
    else:
        w = g.pick(lambda u: u.dtype == t.dtype and u.shape == (k, n),
                   lambda: g.fresh(Tensor(t.dtype, (k, n))))  # fmt: skip
        p = g.add("matmul", f"{x} @ {w}")
        if rng.random() < 0.6:
            bias = g.fresh(Tensor(t.dtype, (n,)))
            g.add(
                "epilogue",
                f"{rng.choice(('jax.nn.relu', 'jnp.tanh', 'jax.nn.gelu'))}({p} + {bias})",
            )


def t_conv(g: JaxGenerator) -> None:
    rng = g.rng
    spatial = rng.choice((1, 2))
    groups = rng.choice((1, 1, 2))
    n, ci, co = rng.choice((1, 2)), rng.choice((1, 2, 3)) * groups, rng.choice((1, 2)) * groups
    sizes = tuple(rng.randint(3, 8) for _ in range(spatial))
    kernel = tuple(rng.randint(1, 3) for _ in range(spatial))
    dtype = rng.choice(("f32", "f32", "bf16"))
    x = g.fresh(Tensor(dtype, (n, ci, *sizes)))
    if rng.random() < 0.5:
        x = g.add("unary", f"jnp.tanh({x})")
    w = g.fresh(Tensor(dtype, (co, ci // groups, *kernel)))
    letters = "HW"[:spatial] if spatial == 2 else "H"
    numbers = (f"NC{letters}", f"OI{letters}", f"NC{letters}")
    strides = tuple(rng.choice((1, 1, 2)) for _ in range(spatial))
    padding = tuple((rng.choice((0, 1, 2)), rng.choice((0, 1))) for _ in range(spatial))
    lhs_dilation = tuple(rng.choice((1, 1, 2)) for _ in range(spatial))
    rhs_dilation = tuple(rng.choice((1, 1, 2)) for _ in range(spatial))
    preferred = (
        ", preferred_element_type=jnp.float32" if dtype == "bf16" and rng.random() < 0.5 else ""
    )
    g.add("conv", f"lax.conv_general_dilated({x}, {w}, {strides}, {padding}, {lhs_dilation}, "
                  f"{rhs_dilation}, {numbers}, feature_group_count={groups}{preferred})")  # fmt: skip


def t_pool(g: JaxGenerator) -> None:
    rng = g.rng
    x = g.value(FLOATS, rank=rng.randint(1, 3), limit=256)
    t = g.types[x]
    window = tuple(rng.randint(1, max(1, min(3, d))) for d in t.shape)
    strides = tuple(rng.choice((1, 2)) for _ in t.shape)
    pad = rng.choice(("'VALID'", "'SAME'"))
    if rng.random() < 0.5:
        g.add("max_pool", f"lax.reduce_window({x}, -jnp.inf, lax.max, {window}, {strides}, {pad})")
    elif rng.random() < 0.5:
        g.add("avg_pool", f"lax.reduce_window({x}, 0.0, lax.add, {window}, {strides}, {pad}) / "
                          f"{int(np.prod(window))}")  # fmt: skip
    else:  # the gradient of a max pool: a select_and_scatter
        y = f"lax.reduce_window(t, -jnp.inf, lax.max, {window}, {strides}, {pad})"
        g.add("pool_grad", f"jax.grad(lambda t: jnp.sum(jnp.sin({y})))({x})")


def t_take(g: JaxGenerator) -> None:
    rng = g.rng
    x = g.value(rank=rng.randint(1, 3), limit=512)
    t = g.types[x]
    axis = rng.randrange(t.rank)
    ids = g.index((rng.choice((1, 2, 3, 5)),), t.shape[axis])
    mode = rng.choice(("", ", mode='clip'", ", mode='fill', fill_value=0"))
    g.add("take", f"jnp.take({x}, {ids}, axis={axis}{mode})")


def t_scatter(g: JaxGenerator) -> None:
    rng = g.rng
    x = g.value(rank=rng.randint(1, 3), limit=256)
    t = g.types[x]
    count = rng.choice((1, 2, 3, 4))
    ids = g.index((count,), t.shape[0])
    u = g.fresh(Tensor(t.dtype, (count, *t.shape[1:])))
    how = rng.choice(("set", "add", "max", "min", "mul")) if t.dtype != "i1" else "set"
    g.add("scatter", f"{x}.at[{ids}].{how}({u})")


def t_slice_update(g: JaxGenerator) -> None:
    rng = g.rng
    x = g.value(rank=rng.randint(1, 3), limit=512)
    t = g.types[x]
    i = g.index((), t.shape[0])
    sizes = tuple(rng.randint(min(1, d), d) for d in t.shape)
    starts = (i, *["0"] * (t.rank - 1))
    if rng.random() < 0.5:
        g.add("dynamic_slice", f"lax.dynamic_slice({x}, ({', '.join(starts)},), {sizes})")
    else:
        u = g.fresh(Tensor(t.dtype, sizes))
        g.add("dynamic_update_slice", f"lax.dynamic_update_slice({x}, {u}, ({', '.join(starts)},))")


def t_sort(g: JaxGenerator) -> None:
    rng = g.rng
    x = g.value(FLOATS + ("i32",), rank=rng.randint(1, 2), limit=256)
    t = g.types[x]
    axis = rng.randrange(t.rank)
    form = rng.choice(("sort", "argsort", "top_k", "take_along"))
    if form == "sort":
        g.add("sort", f"jnp.sort({x}, axis={axis})")
    elif form == "argsort":
        # stable: an unstable argsort may order equal keys (0 and -0 too) any way
        g.add("argsort", f"jnp.argsort({x}, axis={axis}, stable=True)")
    elif form == "top_k":
        k = rng.randint(1, t.shape[-1]) if t.shape[-1] else 0
        g.add("top_k", f"lax.top_k({x}, {k})[{rng.randint(0, 1)}]")
    else:
        y = g.like(x)
        g.add("take_along", f"jnp.take_along_axis({y}, jnp.argsort({x}, axis={axis}), axis={axis})")


def t_cumulative(g: JaxGenerator) -> None:
    x = g.value(FLOATS + ("i32",), rank=g.rng.randint(1, 3))
    axis = g.rng.randrange(g.types[x].rank)
    how = g.rng.choice(("jnp.cumsum", "jnp.cumsum", "jnp.cumprod", "lax.cummax", "lax.cummin"))
    g.add("cumulative", f"{how}({x}, axis={axis})")


def t_reduce(g: JaxGenerator) -> None:
    rng = g.rng
    x = g.value(rank=rng.randint(1, 3))
    t = g.types[x]
    axis = rng.randrange(t.rank)
    if t.dtype in FLOATS:
        how = rng.choice(("jnp.sum", "jnp.max", "jnp.min", "jnp.mean", "jnp.prod", "jnp.argmax",
                          "jax.nn.softmax", "jax.nn.logsumexp", "jnp.var", "jnp.argmin"))  # fmt: skip
    elif t.dtype == "i1":
        how = rng.choice(("jnp.any", "jnp.all"))
    else:
        how = rng.choice(("jnp.sum", "jnp.max", "jnp.min", "jnp.argmax"))
    g.add("reduce", f"{how}({x}, axis={axis})")


def t_loop(g: JaxGenerator) -> None:
    rng = g.rng
    x = g.value(FLOATS, rank=rng.randint(0, 2), limit=256)
    n = rng.randint(0, 5)
    form = rng.choice(("fori", "while", "scan"))
    if form == "fori":
        y = g.like(x, 0.3)
        g.add("fori_loop", f"lax.fori_loop(0, {n}, lambda i, c: c * 0.5 + jnp.tanh({y}) "
                           f"+ i.astype(c.dtype), {x})")  # fmt: skip
    elif form == "while":
        g.add("while_loop", f"lax.while_loop(lambda c: (c[0] < {n}) & (jnp.max(c[1]) > -2), "
                            f"lambda c: (c[0] + 1, c[1] * 0.9 - 0.25), (0, {x}))[1]")  # fmt: skip
    elif g.types[x].rank >= 1:
        g.add("scan", f"lax.scan(lambda c, r: (c * 0.5 + r, c + r), jnp.zeros_like({x}[0]), "
                      f"{x})[{rng.randint(0, 1)}]")  # fmt: skip
    else:
        raise Reject("a scalar to scan")


def t_grad(g: JaxGenerator) -> None:
    rng = g.rng
    x = g.value(("f32",), rank=rng.randint(1, 2), limit=256)
    t = g.types[x]
    if t.rank == 2 and rng.random() < 0.5:
        w = g.fresh(Tensor("f32", (t.shape[1], rng.choice((2, 3, 4)))))
        g.add("grad", f"jax.grad(lambda t: jnp.sum(jnp.tanh(t @ {w}) ** 2))({x})")
    else:
        y = g.like(x)
        g.add("grad", f"jax.grad(lambda t: jnp.sum(jax.nn.softplus(t) * {y}))({x})")


def t_vmap(g: JaxGenerator) -> None:
    rng = g.rng
    x = g.value(FLOATS[:1], rank=2, limit=256)
    t = g.types[x]
    if rng.random() < 0.5:
        w = g.fresh(Tensor("f32", (t.shape[1], rng.choice((1, 2, 4)))))
        g.add("vmap", f"jax.vmap(lambda r: jnp.tanh(r @ {w}))({x})")
    else:
        y = g.like(x)
        g.add("vmap", f"jax.vmap(lambda r, s: jnp.sum(r * s) + jnp.max(r))({x}, {y})")


def t_shape(g: JaxGenerator) -> None:
    rng = g.rng
    x = g.value(rank=rng.randint(1, 3))
    t = g.types[x]
    form = rng.choice(("reshape", "transpose", "slice", "concat", "pad", "flip", "broadcast"))
    if form == "reshape":
        g.add("reshape", f"{x}.reshape({(-1,) if rng.random() < 0.5 else (t.size, 1)})")
    elif form == "transpose":
        g.add("transpose", f"jnp.transpose({x}, {tuple(rng.sample(range(t.rank), t.rank))})")
    elif form == "slice":
        parts = ", ".join(rng.choice(("1:", "::2", ":", ":-1", "::-1")) for _ in t.shape)
        g.add("slice", f"{x}[{parts}]")
    elif form == "concat":
        g.add("concatenate", f"jnp.concatenate([{x}, {g.like(x)}], axis={rng.randrange(t.rank)})")
    elif form == "pad":
        widths = tuple((rng.randint(0, 2), rng.randint(0, 2)) for _ in t.shape)
        g.add("pad", f"jnp.pad({x}, {widths})")
    elif form == "flip":
        g.add("flip", f"jnp.flip({x}, axis={rng.randrange(t.rank)})")
    else:
        g.add("broadcast", f"jnp.broadcast_to({x}[None], (3, *{x}.shape))")


def t_iota(g: JaxGenerator) -> None:
    x = g.value(("f32", "i32"), rank=g.rng.randint(1, 2))
    g.add("iota", f"{x} + jnp.arange({x}.shape[-1], dtype={x}.dtype)")


def t_in_place(g: JaxGenerator) -> None:
    """The first parameter donated and updated elementwise (XLA and accy may reuse it)."""
    if g.params:
        raise Reject("the donated parameter comes first")
    x = g.fresh(Tensor(g.dtype(FLOATS), g.shape()))
    g.donate.append(0)
    g.add("in_place", f"{x} * 2.0 + {g.like(x)}")


TEMPLATES = ((t_unary, 6), (t_binary, 6), (t_broadcast_binary, 3), (t_cast, 5), (t_product, 6),
             (t_conv, 3), (t_pool, 3), (t_take, 2), (t_scatter, 2), (t_slice_update, 2),
             (t_sort, 3), (t_cumulative, 2), (t_reduce, 4), (t_loop, 3), (t_grad, 2),
             (t_vmap, 2), (t_shape, 4), (t_iota, 1), (t_in_place, 2))  # fmt: skip


def program(seed: int, index: int, lines: tuple[int, int] = (4, 14)) -> JaxProgram:
    """The JAX program `index` of the run with `seed`."""
    rng = random.Random(f"accy-fuzz-jax/{seed}/{index}")
    x64 = rng.random() < 0.15
    set_x64(x64)
    g = JaxGenerator(rng, x64)
    target = rng.randint(*lines)
    functions, weights = zip(*TEMPLATES)
    attempts = 0
    while len(g.lines) < target and attempts < 100:
        attempts += 1
        mark = g.mark()
        try:
            rng.choices(functions, weights)[0](g)
        except Reject:
            g.rollback(mark)
    if not g.lines:
        g.add("unary", f"jnp.tanh({g.fresh(Tensor('f32', (4,)))})")
    return g.program()


# ---------------------------------------------------------------------------------------
# The check
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class JaxCase:
    id: str
    seed: int
    index: int
    program: JaxProgram | None = None
    arguments: tuple[np.ndarray, ...] | None = None

    def materialize(self) -> tuple[JaxProgram, list[np.ndarray]]:
        program = self.program or globals()["program"](self.seed, self.index)
        if self.arguments is not None:
            return program, list(self.arguments)
        return program, values.arguments(program.params, self.seed, self.index)


def lower(
    program: JaxProgram, arguments: Sequence[np.ndarray]
) -> tuple[str, list[np.ndarray] | str]:
    """The StableHLO text of `program` and XLA's results on `arguments`, or XLA's
    message where its CPU backend does not implement the program (`UNIMPLEMENTED`: a
    bf16 x bf16 -> f32 product it does not fuse, say): the program is valid all the same."""
    import jax

    set_x64(program.x64)
    function = program.function()
    jitted = jax.jit(function, keep_unused=True, donate_argnums=program.donate)
    text = jitted.lower(*arguments).as_text()
    try:
        outputs = jax.jit(function)(*[np.array(a) for a in arguments])
    except jax.errors.JaxRuntimeError as error:
        if "UNIMPLEMENTED" not in str(error):
            raise
        return text, " ".join(str(error).split())[:200]
    return text, [np.asarray(o) for o in jax.tree_util.tree_leaves(outputs)]


INTERPRETER = """
import pickle, sys
import ml_dtypes  # noqa: F401 - bf16 arguments unpickle through it
from accy.mlir_bridge import eval_stablehlo
text, arguments = pickle.load(sys.stdin.buffer)
try:
    answer = [__import__("numpy").asarray(r) for r in eval_stablehlo(text, *arguments)]
except Exception as error:
    answer = "failed: " + " ".join(str(error).split())[:300]
sys.stdout.buffer.write(pickle.dumps(answer))
"""
"""Runs StableHLO's interpreter in a child process on pickled (text, arguments)."""


SQUARE = re.compile(r"(%[\w#]+) = chlo\.square (%[\w#]+) : (tensor<[^>]*>)(?: -> \3)?")
"""`chlo.square` (jnp.square), which the interpreter's context cannot parse: rewritten
as the multiply it means."""


def interpret(text: str, arguments: Sequence[np.ndarray]) -> list[np.ndarray] | str:
    """StableHLO's reference interpreter's results for `text` on `arguments`, or what went
    wrong. It runs in a child process: an interpreter that dies (an integer division by
    zero raises SIGFPE in it) must not take the worker, and its verdict, with it."""
    import pickle
    import subprocess
    import sys

    text = SQUARE.sub(r"\1 = stablehlo.multiply \2, \2 : \3", text)
    done = subprocess.run(
        [sys.executable, "-c", INTERPRETER],
        input=pickle.dumps((text, [np.asarray(a) for a in arguments])),
        capture_output=True,
        check=False,
    )
    if done.returncode != 0:
        last = done.stderr.decode(errors="replace").strip().splitlines()[-1:]
        return f"died (status {done.returncode}): {' '.join(last)[:200]}"
    return pickle.loads(done.stdout)


def run_case(case: JaxCase, options: dict[str, Any], report_stage) -> Outcome:
    """One JAX program: accy against XLA, the interpreter deciding (see the module doc)."""
    import accy

    stage = "generate"
    try:
        report_stage(stage)
        program, arguments = case.materialize()
        stage = "jax"
        report_stage(stage)
        text, xla = lower(program, arguments)
    except Exception as error:  # noqa: BLE001 - a generator bug (or JAX's)
        return Outcome(case.id, "INVALID", check._exception(error), stage)
    try:
        stage = "import"
        report_stage(stage)
        module = accy.import_stablehlo(text, filename="program.stablehlo.mlir")
        stage = "reference"
        report_stage(stage)
        expected = accy.reference.run(module, "main", *arguments)
        trials = compare.noisy_runs(module, "main", arguments, check.TRIALS)
        stage = "compile cpu"
        report_stage(stage)
        executable = accy.compile(module, target="cpu")
        stage = "run cpu"
        report_stage(stage)
        actual = executable["main"](*arguments)
    except accy.AccyError as error:
        kind = "INTERNAL" if error.message.startswith("internal") else "REFUSED"
        return Outcome(case.id, kind, error.diagnostic(), stage)
    except Exception as error:  # noqa: BLE001
        return Outcome(case.id, "INTERNAL", check._exception(error), stage)
    stage = "compare"
    report_stage(stage)
    if isinstance(xla, str):  # no XLA to compare with: accy against its reference alone
        return check.against_reference(case.id, module, "main", arguments, actual, expected,
                                       trials, options, report_stage, f" (XLA: {xla})")  # fmt: skip
    if compare.compare(actual, xla, trials, expected, flushes=True) is None:
        if options.get("cuda"):
            return check._check_cuda(case.id, module, arguments, report_stage, "main")
        return Outcome(case.id, "PASS", "", stage)
    more = compare.noisy_runs(module, "main", arguments, check.CONFIRM_TRIALS, first_seed=100)
    trials = [*trials, *more]
    against_xla = compare.compare(actual, xla, trials, expected, flushes=True)
    if against_xla is None:
        return Outcome(case.id, "PASS", "", stage)
    kind, detail = judge(actual, xla, None, trials, expected)
    if kind == "WRONG":  # accy's compiled code left accy's own reference where XLA is
        return Outcome(case.id, kind, detail, stage)
    stage = "interpreter"
    report_stage(stage)
    judged = interpret(text, arguments)
    if isinstance(judged, str):
        return Outcome(case.id, "UNDECIDED", f"the interpreter {judged}; {detail}", stage)
    kind, detail = judge(actual, xla, judged, trials, expected)
    exact = exact_results(text, arguments, actual) if kind == "WRONG" else None
    if exact is not None and judge(actual, xla, exact, trials, expected)[0] != "WRONG":
        detail = f"accy agrees with the program run in f64, rounded: {detail}"
        return Outcome(case.id, "EXACT", detail, stage)
    return Outcome(case.id, kind, detail, stage)


UNORDERED = re.compile(r"stablehlo\.(?:reduce|reduce_window|dot_general|dot|convolution)\b")
"""Ops whose order of accumulation StableHLO leaves to the implementation (IEEE 754's
sums may also use a wider format)."""

NOT_PROMOTABLE = re.compile(r"bitcast_convert|reduce_precision|custom_call|complex<")


def exact_results(text: str, arguments, actual) -> list[np.ndarray] | None:
    """The interpreter's results for `text` with every float type promoted to f64, rounded
    to the types of `actual`, where the program accumulates in an order StableHLO leaves
    open and has nothing the promotion changes the meaning of; else None. An accy result
    the f32 chain disagrees with (a cumulative sum in f64 that the sequential f32 chain
    overflows) is right if it is the exact value's."""
    if not UNORDERED.search(text) or NOT_PROMOTABLE.search(text):
        return None
    promoted = re.sub(r"(?:bf16|f16|f32)\b", "f64", text)
    wide = [
        np.asarray(a).astype(np.float64) if compare.is_float(np.asarray(a).dtype) else a
        for a in arguments
    ]
    results = interpret(promoted, wide)
    if isinstance(results, str) or len(results) != len(actual):
        return None
    with np.errstate(all="ignore"):
        return [np.asarray(r).astype(np.asarray(a).dtype) for r, a in zip(results, actual)]


def judge(actual, xla, judged, trials, center) -> tuple[str, str]:
    """Where accy and XLA disagree, element by element: first against accy's numpy
    reference `center` - accy's compiled result away from it where XLA agrees with it is
    WRONG (a compiler bug the interpreter need not confirm); then, with the interpreter's
    results `judged` (None: not run yet, UNDECIDED), accy agreeing with the interpreter
    is XLA_DIFFERS, XLA agreeing with it (to the last subnormal: XLA flushes them) and
    accy not is WRONG, the three apart (the interpreter computes f16/bf16 products in
    their own type, and has been seen to sort NaNs wrongly) is UNDECIDED, and so is every
    disagreement in a result where the interpreter is off elements accy and XLA agree on
    (its sort of bf16 zeros, subnormals and NaNs: no judge of that result). The worst kind
    over all results, described at its first element."""
    found: dict[str, str] = {}

    def note(kind: str, k: int, mask: np.ndarray, values: dict[str, np.ndarray]) -> None:
        if mask.any() and kind not in found:
            at = tuple(int(i) for i in np.argwhere(mask)[0])
            shown = ", ".join(f"{name} {v[at]!r}" for name, v in values.items())
            found[kind] = f"result #{k}: {int(mask.sum())} elements, first at {list(at)}: {shown}"

    for k, (a, x) in enumerate(zip(actual, xla)):
        a, x, c = np.asarray(a), np.asarray(x), np.asarray(center[k])
        noisy = [t[k] for t in trials]
        if a.shape != x.shape or a.dtype != x.dtype:
            found.setdefault(
                "WRONG", f"result #{k}: accy {a.dtype}{a.shape}, XLA {x.dtype}{x.shape}"
            )
            continue
        differ = compare.verdict(a, x, noisy, c, flushes=True).bad
        compiled = differ & compare.verdict(a, c, noisy, c).bad
        compiled &= ~compare.verdict(x, c, noisy, c, flushes=True).bad
        note("WRONG", k, compiled, {"accy": a, "XLA": x, "accy's reference": c})
        if judged is None:
            note("UNDECIDED", k, differ & ~compiled, {"accy": a, "XLA": x, "accy's reference": c})
            continue
        j = np.asarray(judged[k])
        if j.shape != x.shape or j.dtype != x.dtype:
            found.setdefault("UNDECIDED", f"result #{k}: the interpreter's shape or type differs")
            continue
        accy_off = compare.verdict(a, j, noisy, c).bad
        xla_off = compare.verdict(x, j, noisy, c).bad
        values = {"accy": a, "XLA": x, "the interpreter": j}
        if (~differ & accy_off & xla_off).any():  # off where they agree: no judge here
            values["the interpreter (off where accy and XLA agree)"] = values.pop("the interpreter")
            note("UNDECIDED", k, differ, values)
            continue
        note("WRONG", k, differ & accy_off & ~xla_off, values)
        note("UNDECIDED", k, differ & accy_off & xla_off, values)
        note("XLA_DIFFERS", k, differ & ~accy_off, values)
    for kind in ("WRONG", "UNDECIDED", "XLA_DIFFERS"):
        if kind in found:
            return kind, found[kind]
    return "PASS", ""


# ---------------------------------------------------------------------------------------
# The command's mode, and shrinking
# ---------------------------------------------------------------------------------------


class JaxMode:
    target = "program_fuzz.jax_mode:run_case"

    def __init__(self, args):
        self.options = {"cuda": args.cuda}

    def cases(self, indices: Sequence[int], seed: int) -> list[JaxCase]:
        return [JaxCase(f"jax{i}", seed, i) for i in indices]

    def materialize(self, case: JaxCase):
        return case.materialize()

    def op_names(self, program: JaxProgram) -> list[str]:
        return program.op_names()

    def shrink_case(self, case_id: str, program: JaxProgram, arguments) -> JaxCase:
        return JaxCase(case_id, 0, 0, program, tuple(arguments))

    def candidates(self, program: JaxProgram, arguments) -> list:
        return candidates(program, arguments)

    def write(self, folder: Path, name: str, program: JaxProgram, arguments) -> list[str]:
        (folder / f"{name}.py").write_text(program.source())
        values.save(folder / f"{name}.npz", arguments)
        written = [f"{name}.py", f"{name}.npz"]
        try:
            text, _ = lower(program, arguments)
            (folder / f"{name}.stablehlo.mlir").write_text(text)
            import accy

            (folder / f"{name}.mlir").write_text(str(accy.import_stablehlo(text)))
        except Exception as error:  # noqa: BLE001 - the source and arguments are kept
            (folder / f"{name}.error.txt").write_text(check._exception(error))
            return [*written, f"{name}.error.txt"]
        return [*written, f"{name}.stablehlo.mlir", f"{name}.mlir"]

    def show(self, program: JaxProgram) -> str:
        return program.source()


def _compact(program: JaxProgram, arguments, results: Sequence[str]):
    """`program` returning `results`, without the lines and parameters nothing needs
    (parameters renamed in order); None if that changes nothing."""
    needed = set(results)
    lines = []
    for name, expression, template in reversed(program.lines):
        if name in needed:
            lines.append((name, expression, template))
            needed.update(re.findall(r"\b[av]\d+\b", expression))
    lines.reverse()
    kept = [i for i in range(len(program.params)) if f"a{i}" in needed]
    rename = {f"a{i}": f"a{k}" for k, i in enumerate(kept)}

    def renamed(expression: str) -> str:
        return re.sub(r"\ba\d+\b", lambda m: rename[m.group(0)], expression)

    shrunk = JaxProgram(
        params=tuple(program.params[i] for i in kept),
        lines=tuple((n, renamed(e), t) for n, e, t in lines),
        results=tuple(renamed(r) for r in results),
        x64=program.x64,
        donate=tuple(kept.index(d) for d in program.donate if d in kept),
    )
    return shrunk, [arguments[i] for i in kept]


def candidates(program: JaxProgram, arguments) -> list:
    """Fewer results; a line's value made a new parameter (holding XLA's value of it);
    parameters of smaller sizes; smallest first, each one JAX accepts."""
    set_x64(program.x64)
    made = []
    if len(program.results) > 1:
        for r in program.results:
            made.append(_compact(program, arguments, [r]))
    names = [n for n, _, _ in program.lines]
    every = replace(program, results=tuple(names))
    try:
        computed = dict(zip(names, lower(every, arguments)[1]))
    except Exception:  # noqa: BLE001
        computed = {}
    for name, _, _ in program.lines:
        if name not in computed:
            continue
        value = np.asarray(computed[name])
        t = Tensor(_name_of(value.dtype), tuple(value.shape))
        new = f"a{len(program.params)}"
        lines = tuple(l for l in program.lines if l[0] != name)
        lines = tuple((n, re.sub(rf"\b{name}\b", new, e), tp) for n, e, tp in lines)
        results = tuple(new if r == name else r for r in program.results)
        grown = replace(program, params=(*program.params, t), lines=lines, results=results)
        made.append(_compact(grown, [*arguments, value], results))
    sizes = sorted({d for p in program.params for d in p.shape if d > 1}, reverse=True)
    for size in sizes:
        for smaller in dict.fromkeys((1, size // 2)):
            params = tuple(replace(p, shape=tuple(smaller if d == size else d for d in p.shape))
                           for p in program.params)  # fmt: skip
            cut = [np.ascontiguousarray(a[tuple(slice(0, smaller) if d == size else slice(None)
                                              for d in a.shape)]) for a in arguments]  # fmt: skip
            made.append((replace(program, params=params), cut))
    kept, seen = [], {program}
    for shrunk, args in made:
        if shrunk in seen or shrunk.size() >= program.size():
            continue
        seen.add(shrunk)
        if _traces(shrunk, args):
            kept.append((shrunk, args))
    kept.sort(key=lambda c: c[0].size())
    return kept


def _traces(program: JaxProgram, arguments) -> bool:
    import jax

    try:
        jax.eval_shape(program.function(), *[np.asarray(a) for a in arguments])
    except Exception:  # noqa: BLE001 - JAX refuses the variant
        return False
    return True
