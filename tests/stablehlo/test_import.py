"""`accy.import_stablehlo`: JAX's StableHLO text becomes accy IR that computes the same.

Two oracles: the outputs JAX stored next to the five programs in `tests/data/stablehlo`
(`argN` inputs, `expected` output), and, for the hand-written snippets, StableHLO's own
reference interpreter (`accy.mlir_bridge.eval_stablehlo`), run on the same text.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from accy.dialects import accy as ops
from xdsl.dialects.builtin import FileLineColLoc, ModuleOp

import accy
from accy.diagnostics import AccyError, AccyParseError
from accy.mlir_bridge import UpstreamMlirError, eval_stablehlo
from accy.reference import run

DATA = Path(__file__).resolve().parents[1] / "data" / "stablehlo"
PROGRAMS = ["fused_elementwise", "gelu_chain", "layernorm", "mlp", "softmax"]


def op_names(module: ModuleOp) -> list[str]:
    return [op.name for op in module.walk() if op.name.startswith("accy.")]


def location_of(error: AccyError) -> tuple[str, int, int]:
    loc = error.location
    assert isinstance(loc, FileLineColLoc), loc
    return loc.filename.data, loc.line.data, loc.column.data


def check(text: str, *args: np.ndarray, exact: bool = False) -> ModuleOp:
    """Import `text`, run `@main` with the reference and compare with StableHLO's."""
    module = accy.import_stablehlo(text)
    ours = run(module, "main", *args)
    theirs = eval_stablehlo(text, *args)
    assert len(ours) == len(theirs)
    for mine, expected in zip(ours, theirs):
        assert mine.dtype == expected.dtype and mine.shape == expected.shape
        if exact or mine.dtype.kind in "biu":
            np.testing.assert_array_equal(mine, expected)
        else:
            np.testing.assert_allclose(mine, expected, rtol=1e-6, atol=1e-6)
    return module


RNG = np.random.default_rng(7)
X = RNG.standard_normal((2, 3)).astype(np.float32)
Y = RNG.standard_normal((2, 3)).astype(np.float32)
POS = (np.abs(X) + 0.5).astype(np.float32)
I = np.array([[3, -7, 0], [12, 5, -1]], np.int32)
J = np.array([[2, 3, 1], [-5, 2, 4]], np.int32)


# ---------------------------------------------------------------------------------------
# The five JAX programs
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", PROGRAMS)
def test_jax_program_matches_stored_outputs(name: str) -> None:
    path = DATA / f"{name}.stablehlo.mlir"
    module = accy.import_stablehlo(path)
    data = np.load(DATA / f"{name}.npz")
    args = [data[f"arg{i}"] for i in range(sum(k.startswith("arg") for k in data.files))]
    (result,) = run(module, "main", *args)
    np.testing.assert_allclose(result, data["expected"], rtol=1e-4, atol=1e-5)
    # Locations point into the file; the private @relu of mlp is inlined, not kept.
    functions = [op for op in module.ops]
    assert [f.sym_name.data for f in functions] == ["main"]
    for op in module.walk():
        if op.name.startswith("accy."):
            assert isinstance(op.location, FileLineColLoc)
            assert op.location.filename.data == str(path)


def test_mlp_inlines_relu_and_keeps_its_location() -> None:
    module = accy.import_stablehlo(DATA / "mlp.stablehlo.mlir")
    maxima = [op for op in module.walk() if isinstance(op, ops.MaximumOp)]
    # relu's maximum comes from line 31 (inside @relu), softmax's from line 16.
    assert sorted(op.location.line.data for op in maxima) == [16, 31]
    assert op_names(module).count("accy.dot_general") == 2


def test_identity_inits_disappear() -> None:
    module = accy.import_stablehlo(DATA / "softmax.stablehlo.mlir")
    names = op_names(module)
    assert names.count("accy.reduce") == 2
    # -inf of the max and 0 of the add are identities; only the explicit maximum's
    # -inf operand remains as a constant.
    assert names.count("accy.constant") == 1


# ---------------------------------------------------------------------------------------
# Op families
# ---------------------------------------------------------------------------------------


def unary_program(op: str, t: str = "tensor<2x3xf32>") -> str:
    return f"""func.func @main(%a: {t}) -> {t} {{
  %0 = stablehlo.{op} %a : {t}
  return %0 : {t}
}}"""


def binary_program(op: str, t: str = "tensor<2x3xf32>") -> str:
    return f"""func.func @main(%a: {t}, %b: {t}) -> {t} {{
  %0 = stablehlo.{op} %a, %b : {t}
  return %0 : {t}
}}"""


@pytest.mark.parametrize(
    "op", ["add", "subtract", "multiply", "divide", "maximum", "minimum", "power"]
)
def test_binary_float(op: str) -> None:
    lhs = POS if op == "power" else X
    module = check(binary_program(op), lhs, Y)
    assert op_names(module) == [f"accy.{op}"]


@pytest.mark.parametrize("op", ["add", "subtract", "multiply", "divide", "maximum", "minimum"])
def test_binary_int(op: str) -> None:
    check(binary_program(op, "tensor<2x3xi32>"), I, J)


@pytest.mark.parametrize(
    "op", ["negate", "abs", "exponential", "log", "tanh", "sqrt", "rsqrt", "logistic"]
)
def test_unary(op: str) -> None:
    arg = POS if op in ("log", "sqrt", "rsqrt") else X
    module = check(unary_program(op), arg)
    assert op_names(module) == [f"accy.{op}"]


def test_unary_int() -> None:
    check(unary_program("negate", "tensor<2x3xi32>"), I)
    check(unary_program("abs", "tensor<2x3xi32>"), I)


@pytest.mark.parametrize("direction", ["EQ", "NE", "LT", "LE", "GT", "GE"])
def test_compare_and_select(direction: str) -> None:
    text = f"""func.func @main(%a: tensor<2x3xf32>, %b: tensor<2x3xf32>) -> tensor<2x3xf32> {{
  %0 = stablehlo.compare {direction}, %a, %b, FLOAT : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xi1>
  %1 = stablehlo.select %0, %a, %b : tensor<2x3xi1>, tensor<2x3xf32>
  return %1 : tensor<2x3xf32>
}}"""
    b = X.copy()
    b[0, 0] = X[0, 0]
    module = check(text, X, np.where(RNG.random((2, 3)) < 0.3, X, Y).astype(np.float32))
    compare = next(op for op in module.walk() if isinstance(op, ops.CompareOp))
    assert compare.direction.data == direction


def test_compare_signed_int_and_scalar_predicate_select() -> None:
    text = """func.func @main(%a: tensor<2x3xi32>, %b: tensor<2x3xi32>, %p: tensor<i1>) -> (tensor<2x3xi1>, tensor<2x3xi32>) {
  %0 = stablehlo.compare LT, %a, %b, SIGNED : (tensor<2x3xi32>, tensor<2x3xi32>) -> tensor<2x3xi1>
  %1 = stablehlo.select %p, %a, %b : tensor<i1>, tensor<2x3xi32>
  return %0, %1 : tensor<2x3xi1>, tensor<2x3xi32>
}"""
    check(text, I, J, np.array(True))
    check(text, I, J, np.array(False))


@pytest.mark.parametrize(
    "source,target",
    [("f32", "i32"), ("i32", "f32"), ("f32", "i1"), ("i1", "f32"), ("i32", "i64"), ("f32", "f16")],
)
def test_convert(source: str, target: str) -> None:
    text = f"""func.func @main(%a: tensor<2x3x{source}>) -> tensor<2x3x{target}> {{
  %0 = stablehlo.convert %a : (tensor<2x3x{source}>) -> tensor<2x3x{target}>
  return %0 : tensor<2x3x{target}>
}}"""
    arg = {"f32": X * 10, "i32": I, "i1": X > 0}[source]
    module = check(text, arg.astype({"f32": np.float32, "i32": np.int32, "i1": bool}[source]))
    assert op_names(module) == ["accy.convert"]


CONSTANTS = [
    ("f32", "dense<[1.5, -2.0, 0x7F800000]>", np.array([1.5, -2.0, np.inf], np.float32)),
    ("f32", "dense<2.5>", np.full(3, 2.5, np.float32)),
    ("f16", "dense<[1.5, -2.0, 65504.0]>", np.array([1.5, -2.0, 65504.0], np.float16)),
    ("f16", "dense<0.1>", np.full(3, 0.1, np.float16)),
    ("bf16", "dense<[1.5, -2.0, 0xFF80]>", np.array([1.5, -2.0, -np.inf], ml_dtypes.bfloat16)),
    ("bf16", "dense<3.0>", np.full(3, 3.0, ml_dtypes.bfloat16)),
    ("i1", "dense<[true, false, true]>", np.array([True, False, True])),
    ("i1", "dense<true>", np.full(3, True)),
    ("i32", "dense<[1, -2, 2147483647]>", np.array([1, -2, 2**31 - 1], np.int32)),
    ("i32", "dense<-7>", np.full(3, -7, np.int32)),
    ("i64", "dense<[1, -2, 9223372036854775807]>", np.array([1, -2, 2**63 - 1], np.int64)),
    ("i64", "dense<5>", np.full(3, 5, np.int64)),
]


@pytest.mark.parametrize("dtype,literal,expected", CONSTANTS)
def test_constant(dtype: str, literal: str, expected: np.ndarray) -> None:
    text = f"""func.func @main() -> tensor<3x{dtype}> {{
  %0 = stablehlo.constant {literal} : tensor<3x{dtype}>
  return %0 : tensor<3x{dtype}>
}}"""
    (result,) = run(accy.import_stablehlo(text), "main")
    assert result.dtype == expected.dtype
    np.testing.assert_array_equal(result, expected)


def test_large_bf16_constant_in_hex_form() -> None:
    values = np.arange(300, dtype=np.float32) / 4
    text = f"""func.func @main() -> tensor<300xbf16> {{
  %0 = stablehlo.constant dense<[{", ".join(map(str, values))}]> : tensor<300xbf16>
  return %0 : tensor<300xbf16>
}}"""
    (result,) = run(accy.import_stablehlo(text), "main")
    np.testing.assert_array_equal(result, values.astype(ml_dtypes.bfloat16))


def test_broadcast_reshape_transpose() -> None:
    text = """func.func @main(%a: tensor<3xf32>, %b: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<3x2xf32>, tensor<6xf32>) {
  %0 = stablehlo.broadcast_in_dim %a, dims = [1] : (tensor<3xf32>) -> tensor<2x3xf32>
  %1 = stablehlo.transpose %b, dims = [1, 0] : (tensor<2x3xf32>) -> tensor<3x2xf32>
  %2 = stablehlo.reshape %b : (tensor<2x3xf32>) -> tensor<6xf32>
  return %0, %1, %2 : tensor<2x3xf32>, tensor<3x2xf32>, tensor<6xf32>
}"""
    module = check(text, X[0], Y)
    assert op_names(module) == ["accy.broadcast_in_dim", "accy.transpose", "accy.reshape"]


def reduce_program(body_op: str, init: str, t: str = "f32") -> str:
    return f"""func.func @main(%a: tensor<2x3x{t}>) -> tensor<2x{t}> {{
  %init = stablehlo.constant dense<{init}> : tensor<{t}>
  %0 = stablehlo.reduce(%a init: %init) applies stablehlo.{body_op} across dimensions = [1] : (tensor<2x3x{t}>, tensor<{t}>) -> tensor<2x{t}>
  return %0 : tensor<2x{t}>
}}"""


@pytest.mark.parametrize(
    "body_op,kind,identity",
    [
        ("add", "add", "0.0"),
        ("maximum", "max", "0xFF800000"),
        ("minimum", "min", "0x7F800000"),
        ("multiply", "mul", "1.0"),
    ],
)
def test_reduce_kinds(body_op: str, kind: str, identity: str) -> None:
    module = check(reduce_program(body_op, identity), X)
    assert op_names(module) == ["accy.reduce"]
    reduce = next(op for op in module.walk() if isinstance(op, ops.ReduceOp))
    assert reduce.kind.data == kind
    # A non-identity init is combined after the reduction.
    module = check(reduce_program(body_op, "0.75"), X)
    assert op_names(module) == [
        "accy.constant",
        "accy.reduce",
        "accy.broadcast_in_dim",
        f"accy.{body_op}",
    ]


def test_reduce_int_with_identity_and_full_reduction() -> None:
    module = check(reduce_program("maximum", "-2147483648", "i32"), I)
    assert op_names(module) == ["accy.reduce"]
    text = """func.func @main(%a: tensor<2x3xf32>) -> tensor<f32> {
  %init = stablehlo.constant dense<2.0> : tensor<f32>
  %0 = stablehlo.reduce(%a init: %init) across dimensions = [0, 1] : (tensor<2x3xf32>, tensor<f32>) -> tensor<f32>
    reducer(%x: tensor<f32>, %y: tensor<f32>) {
      %s = stablehlo.add %y, %x : tensor<f32>
      stablehlo.return %s : tensor<f32>
    }
  return %0 : tensor<f32>
}"""
    check(text, X)


def test_dot_general_batching_and_dot() -> None:
    text = """func.func @main(%a: tensor<2x3x4xf32>, %b: tensor<2x4x5xf32>, %m: tensor<3x4xf32>, %v: tensor<4xf32>) -> (tensor<2x3x5xf32>, tensor<3xf32>) {
  %0 = stablehlo.dot_general %a, %b, batching_dims = [0] x [0], contracting_dims = [2] x [1], precision = [DEFAULT, DEFAULT] : (tensor<2x3x4xf32>, tensor<2x4x5xf32>) -> tensor<2x3x5xf32>
  %1 = stablehlo.dot %m, %v : (tensor<3x4xf32>, tensor<4xf32>) -> tensor<3xf32>
  return %0, %1 : tensor<2x3x5xf32>, tensor<3xf32>
}"""
    args = [RNG.standard_normal(s).astype(np.float32) for s in [(2, 3, 4), (2, 4, 5), (3, 4), (4,)]]
    # (StableHLO's interpreter aborts on dot_general in this build: numpy is the oracle.)
    module = accy.import_stablehlo(text)
    batched, matvec = run(module, "main", *args)
    np.testing.assert_allclose(batched, np.einsum("bik,bkj->bij", args[0], args[1]), rtol=1e-5)
    np.testing.assert_allclose(matvec, args[2] @ args[3], rtol=1e-5)
    dot = next(op for op in module.walk() if isinstance(op, ops.DotGeneralOp))
    assert dot.batching == ((0,), (0,)) and dot.contracting == ((2,), (1,))


def test_iota_concatenate_slice() -> None:
    text = """func.func @main(%a: tensor<2x3xf32>, %b: tensor<4x3xf32>) -> (tensor<4x3xi32>, tensor<6x3xf32>, tensor<2x2xf32>, tensor<3xf32>) {
  %0 = stablehlo.iota dim = 1 : tensor<4x3xi32>
  %1 = stablehlo.concatenate %a, %b, dim = 0 : (tensor<2x3xf32>, tensor<4x3xf32>) -> tensor<6x3xf32>
  %2 = stablehlo.slice %b [1:3, 0:3:2] : (tensor<4x3xf32>) -> tensor<2x2xf32>
  %3 = stablehlo.iota dim = 0 : tensor<3xf32>
  return %0, %1, %2, %3 : tensor<4x3xi32>, tensor<6x3xf32>, tensor<2x2xf32>, tensor<3xf32>
}"""
    b = RNG.standard_normal((4, 3)).astype(np.float32)
    module = check(text, X, b)
    assert op_names(module) == ["accy.iota", "accy.concatenate", "accy.slice", "accy.iota"]


def test_private_function_called_twice_is_inlined_twice() -> None:
    text = """func.func public @main(%a: tensor<3xf32>) -> tensor<3xf32> {
  %0 = call @twice(%a) : (tensor<3xf32>) -> tensor<3xf32>
  %1 = func.call @twice(%0) : (tensor<3xf32>) -> tensor<3xf32>
  return %1 : tensor<3xf32>
}
func.func private @twice(%x: tensor<3xf32>) -> tensor<3xf32> {
  %0 = stablehlo.add %x, %x : tensor<3xf32>
  return %0 : tensor<3xf32>
}"""
    module = check(text, X[0])
    assert op_names(module) == ["accy.add", "accy.add"]
    assert [f.sym_name.data for f in module.ops] == ["main"]


# ---------------------------------------------------------------------------------------
# Counted while loops
# ---------------------------------------------------------------------------------------


def fori_program(
    *,
    start: int = 0,
    limit: int = 5,
    step: int = 1,
    direction: str = "LT",
    body_extra: str = "",
    returns: str = "%0#1",
    return_types: str = "tensor<3xf32>",
) -> str:
    return f"""func.func @main(%arg0: tensor<3xf32>) -> ({return_types}) {{
  %c = stablehlo.constant dense<{start}> : tensor<i32>
  %0:2 = stablehlo.while(%i = %c, %x = %arg0) : tensor<i32>, tensor<3xf32>
   cond {{
    %n = stablehlo.constant dense<{limit}> : tensor<i32>
    %1 = stablehlo.compare {direction}, %i, %n, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %1 : tensor<i1>
  }} do {{
    %half = stablehlo.constant dense<0.5> : tensor<3xf32>
    %1 = stablehlo.multiply %x, %half : tensor<3xf32>
    {body_extra}
    %one = stablehlo.constant dense<{step}> : tensor<i32>
    %2 = stablehlo.add %i, %one : tensor<i32>
    stablehlo.return %2, %1 : tensor<i32>, tensor<3xf32>
  }}
  return {returns} : {return_types}
}}"""


def iterate_op(module: ModuleOp) -> ops.IterateOp:
    return next(op for op in module.walk() if isinstance(op, ops.IterateOp))


@pytest.mark.parametrize("start,limit,trips", [(0, 5, 5), (2, 5, 3), (7, 5, 0)])
def test_fori_loop_becomes_iterate(start: int, limit: int, trips: int) -> None:
    module = check(fori_program(start=start, limit=limit), X[0])
    loop = iterate_op(module)
    assert loop.trip_count.value.data == trips
    assert len(loop.inits) == 1  # the counter is not carried
    assert "accy.add" not in op_names(module)


def test_fori_loop_final_counter_is_a_constant() -> None:
    text = fori_program(
        start=1, limit=4, returns="%0#1, %0#0", return_types="tensor<3xf32>, tensor<i32>"
    )
    module = check(text, X[0])
    assert len(iterate_op(module).inits) == 1
    assert run(module, "main", X[0])[1] == 4


def test_fori_loop_reading_the_counter_carries_it() -> None:
    text = """func.func @main(%arg0: tensor<f32>) -> tensor<f32> {
  %c = stablehlo.constant dense<0> : tensor<i32>
  %0:2 = stablehlo.while(%i = %c, %x = %arg0) : tensor<i32>, tensor<f32>
   cond {
    %n = stablehlo.constant dense<4> : tensor<i32>
    %1 = stablehlo.compare LT, %i, %n, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %1 : tensor<i1>
  } do {
    %f = stablehlo.convert %i : (tensor<i32>) -> tensor<f32>
    %1 = stablehlo.add %x, %f : tensor<f32>
    %one = stablehlo.constant dense<1> : tensor<i32>
    %2 = stablehlo.add %i, %one : tensor<i32>
    stablehlo.return %2, %1 : tensor<i32>, tensor<f32>
  }
  return %0#1 : tensor<f32>
}"""
    module = check(text, np.array(10.0, np.float32))
    assert len(iterate_op(module).inits) == 2
    assert run(module, "main", np.array(10.0, np.float32))[0] == 16.0


def test_fori_loop_with_carried_bound() -> None:
    text = """func.func @main(%arg0: tensor<f32>) -> tensor<f32> {
  %c = stablehlo.constant dense<0> : tensor<i32>
  %n = stablehlo.constant dense<3> : tensor<i32>
  %0:3 = stablehlo.while(%i = %c, %ub = %n, %x = %arg0) : tensor<i32>, tensor<i32>, tensor<f32>
   cond {
    %1 = stablehlo.compare LT, %i, %ub, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %1 : tensor<i1>
  } do {
    %1 = stablehlo.multiply %x, %x : tensor<f32>
    %one = stablehlo.constant dense<1> : tensor<i32>
    %2 = stablehlo.add %one, %i : tensor<i32>
    stablehlo.return %2, %ub, %1 : tensor<i32>, tensor<i32>, tensor<f32>
  }
  return %0#2 : tensor<f32>
}"""
    module = check(text, np.array(1.5, np.float32))
    assert iterate_op(module).trip_count.value.data == 3


@pytest.mark.parametrize(
    ("kwargs", "halvings"),
    [({"direction": "GT"}, 0), ({"step": 2}, 3), ({"direction": "NE", "limit": 4}, 4)],
)
def test_uncounted_while_is_an_accy_while(kwargs: dict, halvings: int) -> None:
    """A while that is not a counted loop runs as an accy.while, as often as its cond
    says, on the CPU target and in the reference."""
    module = accy.import_stablehlo(fori_program(**kwargs))
    assert any(isinstance(op, ops.WhileOp) for op in module.walk())
    x = np.array([1.0, -2.0, 8.0], np.float32)
    for (got,) in (run(module, "main", x), accy.compile(module, threads=1)(x)):
        np.testing.assert_array_equal(got, x * np.float32(0.5**halvings))


def test_a_while_body_op_accy_cannot_express_is_reported_at_its_line() -> None:
    text = fori_program(
        direction="GT",
        body_extra="%bad = stablehlo.custom_call @opaque(%x) : (tensor<3xf32>) -> tensor<3xf32>",
    )
    with pytest.raises(AccyError) as info:
        accy.import_stablehlo(text, filename="loop.mlir")
    assert "'stablehlo.custom_call' is not supported" in info.value.message
    assert location_of(info.value) == ("loop.mlir", 11, 12)


@pytest.mark.parametrize("bound", [3, 0, -2])
def test_while_with_runtime_bound_counts_to_it(bound: int) -> None:
    text = """func.func @main(%arg0: tensor<f32>, %n: tensor<i32>) -> (tensor<i32>, tensor<f32>) {
  %c = stablehlo.constant dense<0> : tensor<i32>
  %0:2 = stablehlo.while(%i = %c, %x = %arg0) : tensor<i32>, tensor<f32>
   cond {
    %1 = stablehlo.compare LT, %i, %n, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %1 : tensor<i1>
  } do {
    %one = stablehlo.constant dense<1> : tensor<i32>
    %2 = stablehlo.add %i, %one : tensor<i32>
    %3 = stablehlo.multiply %x, %x : tensor<f32>
    stablehlo.return %2, %3 : tensor<i32>, tensor<f32>
  }
  return %0#0, %0#1 : tensor<i32>, tensor<f32>
}"""
    module = accy.import_stablehlo(text)
    x = np.float32(1.5)
    trips = max(bound, 0)
    for count, value in (
        run(module, "main", x, np.int32(bound)),
        accy.compile(module, threads=1)(x, np.int32(bound)),
    ):
        assert int(count) == trips
        assert float(value) == float(np.float32(1.5) ** (2**trips))


# ---------------------------------------------------------------------------------------
# Diagnostics and locations
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("attribute", ["tf.aliasing_output = 0 : i32", "jax.buffer_donor = true"])
def test_jax_donation_marks_the_parameter_donated(attribute: str) -> None:
    # What `jax.jit(f, donate_argnums=(0,))` exports: `tf.aliasing_output` where an output
    # can take the buffer over, `jax.buffer_donor` where none names it.
    text = (
        f'func.func @main(%a: tensor<4xf32> {{{attribute}, mhlo.sharding = "{{replicated}}"}}, '
        "%b: tensor<4xf32> {jax.buffer_donor = false}) -> tensor<4xf32> {\n"
        "  %0 = stablehlo.add %a, %b : tensor<4xf32>\n  return %0 : tensor<4xf32>\n}"
    )
    module = check(text, X[0, :3].repeat(2)[:4], Y[0, :3].repeat(2)[:4])
    (function,) = [op for op in module.walk() if op.name == "func.func"]
    assert ops.donated_parameters(function) == (True, False)


def test_malformed_text_reports_the_parser_error_and_location() -> None:
    text = "func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {\n  %0 = stablehlo.add %a, %b : tensor<4xf32>\n  return %0 : tensor<4xf32>\n}"
    with pytest.raises(AccyParseError) as info:
        accy.import_stablehlo(text, filename="bad.mlir")
    assert "undeclared SSA value" in info.value.message
    assert location_of(info.value) == ("bad.mlir", 2, 26)
    assert str(info.value).startswith("bad.mlir:2:26: error: ")


def test_type_errors_caught_by_the_upstream_verifier() -> None:
    text = "func.func @main(%a: tensor<4xf32>) -> tensor<5xf32> {\n  %0 = stablehlo.add %a, %a : (tensor<4xf32>, tensor<4xf32>) -> tensor<5xf32>\n  return %0 : tensor<5xf32>\n}"
    with pytest.raises(AccyParseError) as info:
        accy.import_stablehlo(text, filename="bad.mlir")
    assert location_of(info.value)[:2] == ("bad.mlir", 2)


def test_an_unsupported_op_is_refused_at_its_location() -> None:
    text = """func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "stablehlo.custom_call"(%a) {call_target_name = "opaque"} : (tensor<4xf32>) -> tensor<4xf32> loc("model.py":12:7)
  return %0 : tensor<4xf32>
}"""
    with pytest.raises(AccyError) as info:
        accy.import_stablehlo(text)
    assert info.value.diagnostic() == (
        "model.py:12:7: error: 'stablehlo.custom_call' is not supported by the StableHLO importer"
    )


def test_unsupported_element_type_at_the_function() -> None:
    text = "func.func @main(%a: tensor<4xi4>) -> tensor<4xi4> {\n  return %a : tensor<4xi4>\n}"
    with pytest.raises(AccyError) as info:
        accy.import_stablehlo(text, filename="u.mlir")
    assert "'func.func' has element type i4" in info.value.message
    assert location_of(info.value) == ("u.mlir", 1, 1)


@pytest.mark.parametrize(
    "snippet,message",
    [
        (
            (
                "%t = stablehlo.convert %a : (tensor<4xf32>) -> tensor<4xf8E4M3FN>\n"
                "  %0 = stablehlo.convert %t : (tensor<4xf8E4M3FN>) -> tensor<4xf32>"
            ),
            "'stablehlo.convert' has element type f8E4M3FN",
        ),
        (
            "%0 = stablehlo.exponential %a {result_accuracy = #stablehlo.result_accuracy<ulps = 2, mode = #stablehlo.result_accuracy_mode<TOLERANCE>>} : tensor<4xf32>",
            "requests result accuracy",
        ),
        (
            "%0 = stablehlo.add %a, %a {custom = 1 : i64} : tensor<4xf32>",
            "has attribute 'custom' that the importer does not support",
        ),
        (
            "%0 = stablehlo.compare LT, %i, %i, UNSIGNED : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi1>",
            "compares i32 integers as UNSIGNED",
        ),
    ],
)
def test_unsupported_ops_attributes_and_types(snippet: str, message: str) -> None:
    result = snippet.rsplit("-> ", 1)[-1] if "->" in snippet else snippet.rsplit(": ", 1)[-1]
    text = (
        f"func.func @main(%a: tensor<4xf32>, %i: tensor<4xi32>, %z: tensor<i32>) -> {result} {{\n"
        f"  {snippet}\n  return %0 : {result}\n}}"
    )
    with pytest.raises(AccyError) as info:
        accy.import_stablehlo(text, filename="u.mlir")
    assert message in info.value.message
    assert location_of(info.value)[:2] == ("u.mlir", 2)


def test_locations_look_through_name_callsite_and_fused() -> None:
    text = """func.func @main(%a: tensor<3xf32>) -> tensor<3xf32> {
  %0 = stablehlo.add %a, %a : tensor<3xf32> loc(#named)
  %1 = stablehlo.multiply %0, %a : tensor<3xf32> loc(callsite("f"("inner.py":4:5) at "outer.py":9:1))
  %2 = stablehlo.subtract %1, %a : tensor<3xf32> loc(fused["fused.py":7:8, "other.py":1:1])
  %3 = stablehlo.negate %2 : tensor<3xf32>
  return %3 : tensor<3xf32>
}
#named = loc("jit(f)/add"("model.py":3:11))
"""
    module = accy.import_stablehlo(text, filename="in.mlir")
    where = [
        (op.location.filename.data, op.location.line.data, op.location.column.data)
        for op in module.walk()
        if op.name.startswith("accy.")
    ]
    assert where == [
        ("model.py", 3, 11),
        ("inner.py", 4, 5),
        ("fused.py", 7, 8),
        ("in.mlir", 5, 8),
    ]


def test_path_and_text_inputs_and_line_offset(tmp_path: Path) -> None:
    path = tmp_path / "p.stablehlo.mlir"
    path.write_text(unary_program("negate"))
    from_path = accy.import_stablehlo(path)
    from_str = accy.import_stablehlo(str(path))
    from_text = accy.import_stablehlo(path.read_text(), filename="x.mlir", line_offset=10)
    locations = [
        next(op for op in m.walk() if isinstance(op, ops.NegateOp)).location
        for m in (from_path, from_str, from_text)
    ]
    assert locations[0].filename.data == str(path) == locations[1].filename.data
    assert (locations[2].filename.data, locations[2].line.data) == ("x.mlir", 12)


# ---------------------------------------------------------------------------------------
# accy-opt --import-stablehlo
# ---------------------------------------------------------------------------------------


def test_cli_imports_stablehlo(capsys: pytest.CaptureFixture[str]) -> None:
    from accy.cli.opt import main

    main(["--import-stablehlo", str(DATA / "softmax.stablehlo.mlir")])
    out = capsys.readouterr().out
    assert "accy.reduce max %arg0, dims = [1]" in out
    assert "stablehlo" not in out


def test_cli_reports_unsupported_ops(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from accy.cli.opt import main

    path = tmp_path / "bad.mlir"
    path.write_text(
        "func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {\n"
        "  %0 = stablehlo.custom_call @opaque(%a) : (tensor<4xf32>) -> tensor<4xf32>\n  return %0 : tensor<4xf32>\n}\n"
    )
    with pytest.raises(SystemExit) as info:
        main(["--import-stablehlo", str(path)])
    assert info.value.code == 1
    assert capsys.readouterr().err.strip() == (
        f"{path}:2:8: error: 'stablehlo.custom_call' is not supported by the StableHLO importer"
    )


# ---------------------------------------------------------------------------------------
# Inputs that used to abort the process or raise from deep inside the bridge
# ---------------------------------------------------------------------------------------

UNREADABLE_CONSTANTS = [
    ("dense<(3.0, 4.0)>", "complex<f64>", ""),
    ("dense<[(1.0, 2.0), (3.0, 4.0)]>", "complex<f32>", "2x"),
    ("dense<[1, -2, 3, 4]>", "i4", "4x"),
    ("dense<[1, -1]>", "i2", "2x"),
    ("dense<[1, 3]>", "ui2", "2x"),
    ("dense<[1, 15]>", "ui4", "2x"),
    ("dense<[1.0, 2.0]>", "f8E4M3FN", "2x"),
    ("dense<[1.0, 2.0]>", "f8E5M2", "2x"),
    ("dense<[1.0, 2.0]>", "f6E2M3FN", "2x"),
    ("dense<[1.0, 2.0]>", "f4E2M1FN", "2x"),
]
"""Constants whose element type has no numpy dtype: a complex one aborted the process
(SIGABRT, a Python error thrown through the bindings' attribute caster), sub-byte integers
raised KeyError and f8/f6/f4 TypeError."""


def import_in_a_process(path: Path) -> subprocess.CompletedProcess:
    """`accy-opt --import-stablehlo PATH` as its own process (an abort must not end pytest)."""
    return subprocess.run(
        [sys.executable, "-m", "accy.cli.opt", "--import-stablehlo", str(path)],
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize("literal,element,dims", UNREADABLE_CONSTANTS)
def test_unreadable_constants_are_refused_where_they_are(
    tmp_path: Path, literal: str, element: str, dims: str
) -> None:
    t = f"tensor<{dims}{element}>"
    path = tmp_path / "c.mlir"
    path.write_text(
        f"func.func @main() -> {t} {{\n  %0 = stablehlo.constant {literal} : {t}\n"
        f"  return %0 : {t}\n}}\n"
    )
    done = import_in_a_process(path)
    assert done.returncode == 1, done.stderr
    assert done.stderr.startswith(f"{path}:") and f"has element type {element} (" in done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""


def test_an_unreadable_attribute_on_any_op_is_refused_not_an_abort(tmp_path: Path) -> None:
    """Every op's attributes are read before conversion: a complex dense attribute on an op
    the importer then refuses must not abort on the way."""
    path = tmp_path / "a.mlir"
    path.write_text(
        "func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> {\n"
        "  %0 = stablehlo.add %a, %a {odd = dense<(1.0, 2.0)> : tensor<complex<f32>>} : tensor<2xf32>\n"
        "  return %0 : tensor<2xf32>\n}\n"
    )
    done = import_in_a_process(path)
    assert done.returncode == 1, done.stderr
    assert "has attribute 'odd' that the importer does not support" in done.stderr


def test_the_reference_interpreter_refuses_what_numpy_cannot_hold() -> None:
    text = (
        "func.func @main() -> tensor<complex<f32>> {\n"
        "  %0 = stablehlo.constant dense<(1.0, 2.0)> : tensor<complex<f32>>\n"
        "  return %0 : tensor<complex<f32>>\n}"
    )
    with pytest.raises(UpstreamMlirError, match="numpy cannot hold"):
        eval_stablehlo(text)
    dynamic = (
        "func.func @main(%a: tensor<?xf32>, %n: tensor<1xi32>) -> tensor<?xf32> {\n"
        "  %0 = stablehlo.dynamic_broadcast_in_dim %a, %n, dims = [0]"
        " : (tensor<?xf32>, tensor<1xi32>) -> tensor<?xf32>\n"
        "  return %0 : tensor<?xf32>\n}"
    )
    with pytest.raises(UpstreamMlirError, match="needs static shapes"):
        eval_stablehlo(dynamic, np.ones(3, np.float32), np.array([3], np.int32))


def test_an_op_of_an_unregistered_dialect_is_named() -> None:
    text = (
        "func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> {\n"
        '  %0 = "interpreter.probe"(%a) {probe_id = "p"} : (tensor<2xf32>) -> tensor<2xf32>\n'
        "  return %0 : tensor<2xf32>\n}"
    )
    with pytest.raises(AccyParseError) as info:
        accy.import_stablehlo(text, filename="p.mlir")
    assert info.value.diagnostic().startswith("p.mlir:2:")
    assert "'interpreter.probe' is an op of the 'interpreter' dialect" in info.value.message


def test_nesting_deeper_than_accy_reads_is_located() -> None:
    # The bindings parse it, but walking the attribute recursed in Python (RecursionError).
    depth = 2000
    text = (
        "func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> attributes {x = "
        + "[" * depth
        + "1"
        + "]" * depth
        + "} {\n  %0 = stablehlo.add %a, %a : tensor<4xf32>\n  return %0 : tensor<4xf32>\n}\n"
    )
    with pytest.raises(AccyParseError) as error:
        accy.import_stablehlo(text, filename="deep.mlir")
    assert error.value.diagnostic().startswith(
        "deep.mlir:1:196: error: nesting deeper than 128 levels of brackets"
    )


def test_a_large_splat_constant_is_imported_as_its_scalar_broadcast() -> None:
    # upstream simplification folds broadcasts of scalars into splats of the full shape;
    # 8192 elements: a scalar constant broadcast, not 32 KiB of data
    text = """func.func public @main(%x: tensor<64x128xf32>) -> tensor<64x128xf32> {
  %half = stablehlo.constant dense<5.000000e-01> : tensor<64x128xf32>
  %y = stablehlo.multiply %x, %half : tensor<64x128xf32>
  return %y : tensor<64x128xf32>
}"""
    module = accy.import_stablehlo(text)
    constants = [op for op in module.walk() if isinstance(op, ops.ConstantOp)]
    assert [c.result.type.get_shape() for c in constants] == [()]
    assert any(isinstance(op, ops.BroadcastInDimOp) for op in module.walk())
    x = np.random.default_rng(0).standard_normal((64, 128)).astype(np.float32)
    np.testing.assert_array_equal(accy.compile(module)(x)[0], x * np.float32(0.5))
