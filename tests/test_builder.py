"""`accy.Builder`: every op with its inferred result type, locations, loop bodies, constants
of every dtype, dynamic dims, the errors a user can make, and printing that `accy.parse`
reads back to the same text."""

from __future__ import annotations

import io

import ml_dtypes
import numpy as np
import pytest
from accy.dialects import accy as ops
from xdsl.dialects import func
from xdsl.dialects.builtin import DYNAMIC_INDEX, FileLineColLoc, ModuleOp, TensorType
from xdsl.printer import Printer

import accy
from accy import dtypes

DTYPES = [
    "f64",
    "f32",
    "f16",
    "bf16",
    "i1",
    "i8",
    "i16",
    "i32",
    "i64",
    "ui8",
    "ui16",
    "ui32",
    "ui64",
]
FLOATS = ["f64", "f32", "f16", "bf16"]
NUMBERS = [d for d in DTYPES if d != "i1"]


def T(dtype: str, *dims: int | None) -> TensorType:
    return accy.Builder.tensor(dtype, list(dims))


def text(module: ModuleOp) -> str:
    out = io.StringIO()
    Printer(stream=out).print_op(module)
    return out.getvalue()


def ops_of(module: ModuleOp, kind: type) -> list:
    return [op for op in module.walk() if isinstance(op, kind)]


def where(op) -> tuple[str, int, int]:
    loc = op.location
    assert isinstance(loc, FileLineColLoc), loc
    return loc.filename.data, loc.line.data, loc.column.data


def one_function(params, results, body):
    """Build `@f(params) -> results` whose body is `body(fb) -> returned values`."""
    b = accy.Builder()
    fb = b.begin_function("f", params, results)
    fb.return_(list(body(fb)))
    fb.finish()
    return b.finish()


# ---------------------------------------------------------------------------------------
# Types
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
def test_tensor_types_of_every_dtype(dtype):
    t = T(dtype, 2, 3)
    assert isinstance(t, TensorType)
    assert t.get_shape() == (2, 3)
    assert t.get_element_type() == dtypes.ELEMENT_TYPES[dtype]
    assert accy.Builder.tensor(np.dtype(dtypes.NUMPY_DTYPES[dtype]), [2, 3]) == t


def test_dynamic_dims_minus_one_and_none():
    assert T("f32", -1, 3) == T("f32", None, 3)
    assert T("f32", None, 3).get_shape() == (DYNAMIC_INDEX, 3)
    assert str(T("bf16", None, None)) == "tensor<?x?xbf16>"
    assert T("f32").get_shape() == ()


def test_bad_types():
    with pytest.raises(ValueError, match="unsupported element type"):
        T("f8E4M3FN", 2)
    with pytest.raises(ValueError, match="unsupported element type"):
        T("i4", 2)
    with pytest.raises(ValueError, match="negative dim"):
        T("f32", -2)


# ---------------------------------------------------------------------------------------
# Every op with its inferred result type
# ---------------------------------------------------------------------------------------

BINARY = ["add", "subtract", "multiply", "divide", "maximum", "minimum", "power"]
UNARY_ANY = ["negate", "abs"]
UNARY_FLOAT = ["exponential", "log", "tanh", "sqrt", "rsqrt", "logistic"]


@pytest.mark.parametrize("dtype", NUMBERS)
@pytest.mark.parametrize("name", BINARY)
def test_binary_ops(name, dtype):
    t = T(dtype, None, 3)
    module = one_function(
        [t, t], [t], lambda fb: [getattr(fb, name)(fb.parameter(0), fb.parameter(1))]
    )
    (op,) = [o for o in module.walk() if o.name == f"accy.{name}"]
    assert op.results[0].type == t


def test_mul_is_multiply():
    t = T("f32", 4)
    module = one_function([t], [t], lambda fb: [fb.mul(fb.parameter(0), fb.parameter(0))])
    assert len(ops_of(module, ops.MultiplyOp)) == 1


@pytest.mark.parametrize(
    "name, dtype",
    [(n, d) for n in UNARY_ANY for d in NUMBERS] + [(n, d) for n in UNARY_FLOAT for d in FLOATS],
)
def test_unary_ops(name, dtype):
    t = T(dtype, 2, None)
    module = one_function([t], [t], lambda fb: [getattr(fb, name)(fb.parameter(0))])
    (op,) = [o for o in module.walk() if o.name == f"accy.{name}"]
    assert op.results[0].type == t


@pytest.mark.parametrize("direction", ["EQ", "NE", "LT", "LE", "GT", "GE"])
def test_compare_gives_i1_of_the_operand_shape(direction):
    t = T("i32", 2, None)
    module = one_function(
        [t, t],
        [T("i1", 2, None)],
        lambda fb: [fb.compare(direction, fb.parameter(0), fb.parameter(1))],
    )
    (op,) = ops_of(module, ops.CompareOp)
    assert op.direction.data == ops.ComparisonDirection(direction)
    assert op.result.type == T("i1", 2, None)


def test_select_and_convert():
    f, p = T("f32", 4), T("i1", 4)

    def body(fb):
        chosen = fb.select(fb.parameter(0), fb.parameter(1), fb.parameter(1))
        return [chosen, fb.convert(chosen, "bf16"), fb.convert(fb.parameter(0), "i64")]

    module = one_function([p, f], [f, T("bf16", 4), T("i64", 4)], body)
    assert ops_of(module, ops.SelectOp)[0].result.type == f
    assert [c.result.type for c in ops_of(module, ops.ConvertOp)] == [T("bf16", 4), T("i64", 4)]


def test_data_movement():
    def body(fb):
        x = fb.parameter(0)
        return [
            fb.broadcast_in_dim(fb.parameter(1), T("f32", 2, 3), [1]),
            fb.reshape(x, T("f32", 6)),
            fb.transpose(x, [1, 0]),
        ]

    module = one_function(
        [T("f32", 2, 3), T("f32", 3)], [T("f32", 2, 3), T("f32", 6), T("f32", 3, 2)], body
    )
    (bcast,) = ops_of(module, ops.BroadcastInDimOp)
    assert list(bcast.broadcast_dimensions.get_values()) == [1]
    assert ops_of(module, ops.ReshapeOp)[0].result.type == T("f32", 6)
    (transpose,) = ops_of(module, ops.TransposeOp)
    assert transpose.result.type == T("f32", 3, 2)
    assert list(transpose.permutation.get_values()) == [1, 0]


def test_transpose_infers_dynamic_dims():
    module = one_function(
        [T("i32", None, 2, 5)],
        [T("i32", 5, None, 2)],
        lambda fb: [fb.transpose(fb.parameter(0), [2, 0, 1])],
    )
    assert ops_of(module, ops.TransposeOp)[0].result.type == T("i32", 5, None, 2)


@pytest.mark.parametrize(
    "kind, dims, shape",
    [("add", [1], (2, 4)), ("max", [0, 2], (3,)), ("min", [0, 1, 2], ()), ("mul", [], (2, 3, 4))],
)
def test_reduce_keeps_the_other_dims(kind, dims, shape):
    module = one_function(
        [T("f32", 2, 3, 4)], [T("f32", *shape)], lambda fb: [fb.reduce(kind, fb.parameter(0), dims)]
    )
    (op,) = ops_of(module, ops.ReduceOp)
    assert op.kind.data == ops.CombinerKind(kind)
    assert op.result.type == T("f32", *shape)


def test_dot_general_result_is_batch_then_lhs_free_then_rhs_free():
    def body(fb):
        l, r, a, b = (fb.parameter(i) for i in range(4))
        return [
            fb.dot_general(l, r, batching=([0], [0]), contracting=([2], [1])),
            fb.dot_general(a, b, contracting=([1], [0])),
        ]

    module = one_function(
        [T("f32", 8, 2, 3), T("f32", 8, 3, 4), T("f16", None, 3), T("f16", 3, 5)],
        [T("f32", 8, 2, 4), T("f16", None, 5)],
        body,
    )
    batched, plain = ops_of(module, ops.DotGeneralOp)
    assert batched.result.type == T("f32", 8, 2, 4)
    assert batched.batching == ((0,), (0,)) and batched.contracting == ((2,), (1,))
    assert plain.result.type == T("f16", None, 5)
    assert plain.batching == ((), ())


def test_scan_result_has_the_operand_type():
    t = T("i64", 2, 3)
    module = one_function(
        [t, t], [t], lambda fb: [fb.scan("add", fb.parameter(0), fb.parameter(1), 1)]
    )
    (op,) = ops_of(module, ops.ScanOp)
    assert op.result.type == t
    assert op.dimension.value.data == 1
    assert op.scratch is ops_of(module, func.FuncOp)[0].body.block.args[1]


# ---------------------------------------------------------------------------------------
# Loops
# ---------------------------------------------------------------------------------------


def test_iterate_body_gets_the_carried_values():
    f, i = T("f32", 4), T("i32", 2)
    seen = {}

    def loop(inner, p, q):
        seen["args"] = (p, q)
        return [inner.add(p, p), q]

    def body(fb):
        r = fb.iterate(3, [fb.parameter(0), fb.parameter(1)], loop)
        assert len(r) == 2
        return list(r)

    module = one_function([f, i], [f, i], body)
    (it,) = ops_of(module, ops.IterateOp)
    assert it.trip_count.value.data == 3
    assert [r.type for r in it.res] == [f, i]
    assert seen["args"] == tuple(it.body.block.args)
    inner = list(it.body.block.ops)
    assert [op.name for op in inner] == ["accy.add", "accy.yield"]
    assert list(inner[-1].operands) == [inner[0].results[0], it.body.block.args[1]]


def test_nested_iterate_and_outer_values():
    t = T("f32", 2, 3)

    def body(fb):
        y = fb.parameter(1)

        def outer(b, o):
            (inner,) = b.iterate(2, [o], lambda c, i: [c.maximum(i, y)])
            return [inner]

        return list(fb.iterate(0, [fb.parameter(0)], outer))

    module = one_function([t, t], [t], body)
    assert [op.trip_count.value.data for op in ops_of(module, ops.IterateOp)] == [0, 2]


def test_iterate_yielding_the_wrong_types_fails_at_finish():
    f = T("f32", 4)
    b = accy.Builder()
    fb = b.begin_function("f", [f, T("i32", 4)], [f])
    fb.set_location("loop.py", 7, 1)
    (r,) = fb.iterate(2, [fb.parameter(0)], lambda inner, p: [fb.parameter(1)])
    fb.return_([r])
    fb.finish()
    with pytest.raises(accy.AccyVerifyError) as caught:
        b.finish()
    assert caught.value.diagnostic().startswith(
        "loop.py:7:1: error: 'accy.iterate' op yields 1 values"
    )


# ---------------------------------------------------------------------------------------
# Locations
# ---------------------------------------------------------------------------------------


def test_set_location_reaches_the_ops_built_after_it():
    t = T("f32", 4)
    b = accy.Builder()
    b.set_location("prog.py", 1, 1)
    fb = b.begin_function("f", [t], [t])
    x = fb.negate(fb.parameter(0))
    fb.set_location("prog.py", 5, 9)
    y = fb.abs(x)
    z = fb.exponential(y)

    def loop(inner, p):
        first = inner.tanh(p)
        inner.set_location("prog.py", 8, 3)
        return [inner.sqrt(first)]

    (w,) = fb.iterate(2, [z], loop)
    fb.set_location("prog.py", 12, 2)
    fb.return_([w])
    fb.finish()
    module = b.finish()

    (function,) = ops_of(module, func.FuncOp)
    assert where(function) == ("prog.py", 1, 1)
    got = {
        op.name: where(op) for op in module.walk() if op.name.startswith(("accy.", "func.return"))
    }
    assert got == {
        "accy.negate": ("prog.py", 1, 1),
        "accy.abs": ("prog.py", 5, 9),
        "accy.exponential": ("prog.py", 5, 9),
        "accy.tanh": ("prog.py", 5, 9),
        "accy.sqrt": ("prog.py", 8, 3),
        "accy.yield": ("prog.py", 8, 3),
        "accy.iterate": ("prog.py", 5, 9),
        "func.return": ("prog.py", 12, 2),
    }


def test_no_location_by_default():
    t = T("f32", 4)
    module = one_function([t], [t], lambda fb: [fb.negate(fb.parameter(0))])
    assert accy.diagnostics.format_location(ops_of(module, ops.NegateOp)[0].location) is None


def test_builder_set_location_reaches_the_open_function():
    t = T("f32", 4)
    b = accy.Builder()
    fb = b.begin_function("f", [t], [t])
    b.set_location("late.py", 3, 4)
    fb.return_([fb.negate(fb.parameter(0))])
    fb.finish()
    module = b.finish()
    assert where(ops_of(module, ops.NegateOp)[0]) == ("late.py", 3, 4)


# ---------------------------------------------------------------------------------------
# Constants
# ---------------------------------------------------------------------------------------

SAMPLES = {
    "f64": [[1.5, -2.0, 0.1], [1e300, 4.0, -0.5]],
    "f32": [[1.5, -2.0, 0.25], [3.0, 4.0, -0.5]],
    "f16": [[1.5, -2.0, 0.25], [3.0, 4.0, -0.5]],
    "bf16": [[1.5, -2.0, 0.25], [3.0, 4.0, -0.5]],
    "i1": [[True, False, True], [False, False, True]],
    "i32": [[1, -2, 3], [2**31 - 1, -(2**31), 0]],
    "i64": [[1, -2, 3], [2**63 - 1, -(2**63), 0]],
    "i8": [[1, -2, 3], [127, -128, 0]],
    "i16": [[1, -2, 3], [2**15 - 1, -(2**15), 0]],
    "ui8": [[1, 2, 3], [255, 128, 0]],
    "ui16": [[1, 2, 3], [2**16 - 1, 2**15, 0]],
    "ui32": [[1, 2, 3], [2**32 - 1, 2**31, 0]],
    "ui64": [[1, 2, 3], [2**64 - 1, 2**63, 0]],
}
SCALARS = {
    "f64": 0.1,
    "f32": 2.5,
    "f16": -1.0,
    "bf16": 0.5,
    "i1": True,
    "i8": -7,
    "i16": -300,
    "i32": -7,
    "i64": 2**40,
    "ui8": 200,
    "ui16": 60000,
    "ui32": 2**32 - 2,
    "ui64": 2**64 - 2,
}


def constant_values(module: ModuleOp) -> list[np.ndarray]:
    return [dtypes.dense_values(op.value) for op in ops_of(module, ops.ConstantOp)]


@pytest.mark.parametrize("dtype", DTYPES)
def test_constants_from_scalars_lists_and_arrays(dtype):
    t = T(dtype, 2, 3)
    np_dtype = dtypes.NUMPY_DTYPES[dtype]
    array = np.asarray(SAMPLES[dtype], dtype=np_dtype)

    def body(fb):
        return [
            fb.constant(t, SCALARS[dtype]),
            fb.constant(t, SAMPLES[dtype]),
            fb.constant(t, array),
            fb.constant(T(dtype), SCALARS[dtype]),
        ]

    module = one_function([], [t, t, t, T(dtype)], body)
    splat, from_list, from_array, rank0 = constant_values(module)
    assert [op.result.type for op in ops_of(module, ops.ConstantOp)] == [t, t, t, T(dtype)]
    for values in (splat, from_list, from_array, rank0):
        assert values.dtype == np_dtype
    np.testing.assert_array_equal(splat, np.full((2, 3), SCALARS[dtype], dtype=np_dtype))
    np.testing.assert_array_equal(from_list, array)
    np.testing.assert_array_equal(from_array, array)
    assert rank0.shape == () and rank0 == np.asarray(SCALARS[dtype], dtype=np_dtype)


def test_bf16_constant_rounds_like_ml_dtypes():
    t = T("bf16", 3)
    values = [1.0 / 3.0, 1e-3, 12345.678]
    module = one_function([], [t], lambda fb: [fb.constant(t, values)])
    (got,) = constant_values(module)
    np.testing.assert_array_equal(got, np.asarray(values, dtype=ml_dtypes.bfloat16))


def test_constant_of_the_wrong_size():
    t = T("f32", 2, 3)
    b = accy.Builder()
    fb = b.begin_function("f", [], [t])
    with pytest.raises(ValueError, match="does not fill"):
        fb.constant(t, [1.0, 2.0])


def test_constant_of_a_dynamic_shape_is_refused():
    b = accy.Builder()
    fb = b.begin_function("f", [], [T("f32", None)])
    with pytest.raises((ValueError, accy.AccyError)):
        fb.constant(T("f32", None), 1.0)


def test_constant_prints_and_parses_back():
    t = T("i1", 3)
    module = one_function([], [t], lambda fb: [fb.constant(t, [True, False, True])])
    printed = text(module)
    assert "accy.constant dense<[true, false, true]> : tensor<3xi1>" in printed
    np.testing.assert_array_equal(constant_values(accy.parse(printed))[0], [True, False, True])


# ---------------------------------------------------------------------------------------
# Errors
# ---------------------------------------------------------------------------------------


def test_returning_the_wrong_types():
    b = accy.Builder()
    fb = b.begin_function("f", [T("f32", 4)], [T("f32", 4), T("i32", 4)])
    fb.set_location("ret.py", 9, 5)
    with pytest.raises(accy.AccyError) as caught:
        fb.return_([fb.parameter(0)])
    assert caught.value.diagnostic() == (
        "ret.py:9:5: error: function @f returns (tensor<4xf32>) but declares "
        "(tensor<4xf32>, tensor<4xi32>)"
    )


def test_unfinished_function():
    t = T("f32", 4)
    b = accy.Builder()
    fb = b.begin_function("open_fn", [t], [t])
    with pytest.raises(accy.AccyError, match="function @open_fn has no return"):
        fb.finish()
    with pytest.raises(accy.AccyError, match="function @open_fn is not finished"):
        b.finish()


def test_second_function_while_one_is_open():
    t = T("f32", 4)
    b = accy.Builder()
    b.begin_function("first", [t], [t])
    with pytest.raises(accy.AccyError, match="function @first is still open"):
        b.begin_function("second", [t], [t])


def test_several_functions_one_after_another():
    t = T("f32", 4)
    b = accy.Builder()
    for name in ("one", "two"):
        fb = b.begin_function(name, [t], [t])
        fb.return_([fb.negate(fb.parameter(0))])
        fb.finish()
    module = b.finish()
    assert [f.sym_name.data for f in ops_of(module, func.FuncOp)] == ["one", "two"]


@pytest.mark.parametrize("index", [-1, 2, 100])
def test_parameter_index_out_of_range(index):
    t = T("f32", 4)
    fb = accy.Builder().begin_function("f", [t, t], [t])
    with pytest.raises(IndexError, match=f"function @f has 2 parameters, no parameter {index}"):
        fb.parameter(index)


def test_verifier_failure_at_finish_carries_the_location():
    b = accy.Builder()
    fb = b.begin_function("f", [T("f32", 3)], [T("f32", 2, 3)])
    fb.set_location("model.py", 42, 7)
    y = fb.broadcast_in_dim(fb.parameter(0), T("f32", 2, 3), [0])
    fb.set_location("model.py", 43, 1)
    fb.return_([y])
    fb.finish()
    with pytest.raises(accy.AccyVerifyError) as caught:
        b.finish()
    error = caught.value
    assert accy.diagnostics.format_location(error.location) == "model.py:42:7"
    assert str(error) == (
        "model.py:42:7: error: 'accy.broadcast_in_dim' op operand dim 0 of size 3 cannot "
        "broadcast to result dim 0 of size 2"
    )


def test_float_only_op_on_integers_fails_at_finish():
    t = T("i32", 4)
    b = accy.Builder()
    fb = b.begin_function("f", [t], [t])
    fb.set_location("m.py", 2, 3)
    fb.return_([fb.exponential(fb.parameter(0))])
    fb.finish()
    with pytest.raises(
        accy.AccyVerifyError,
        match=r"^m\.py:2:3: error: 'accy\.exponential' op expects a floating-point element type, got i32$",
    ):
        b.finish()


# ---------------------------------------------------------------------------------------
# Printing and parsing back
# ---------------------------------------------------------------------------------------


def build_every_op() -> ModuleOp:
    f4, f23, f3 = T("f32", 4), T("f32", 2, 3), T("f32", 3)
    b = accy.Builder()
    fb = b.begin_function(
        "every_op",
        [f4, f4, f3, f23, T("f32", 8, 2, 3), T("f32", 8, 3, 4), T("bf16", None, 3)],
        [f4, T("bf16", None, 3)],
    )
    a, bb, s, x, l, r, d = (fb.parameter(i) for i in range(7))
    fb.constant(T("f32", 2), [1.0, 2.0])
    fb.constant(T("i1", 2), [True, False])
    fb.constant(T("bf16", 2), 1.5)
    fb.constant(T("i64", 2, 2), [[1, 2], [3, 4]])
    for name in BINARY:
        getattr(fb, name)(a, bb)
    for name in UNARY_ANY + UNARY_FLOAT:
        getattr(fb, name)(a)
    lt = fb.compare("LT", a, bb)
    fb.select(lt, a, bb)
    fb.convert(a, "i32")
    bc = fb.broadcast_in_dim(s, f23, [1])
    fb.reshape(x, T("f32", 6))
    fb.transpose(x, [1, 0])
    fb.reduce("add", x, [1])
    fb.dot_general(l, r, batching=([0], [0]), contracting=([2], [1]))
    fb.scan("max", x, bc, 1)
    p, _ = fb.iterate(5, [a, bb], lambda inner, p, q: [inner.add(p, q), q])
    t = fb.tanh(d)
    fb.return_([p, t])
    fb.finish()
    return b.finish()


def test_built_module_prints_text_that_parses_back_to_the_same_text():
    module = build_every_op()
    printed = text(module)
    for piece in [
        "func.func @every_op(",
        "accy.add %0, %1 : tensor<4xf32>",
        "accy.compare LT, %0, %1 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>",
        "accy.broadcast_in_dim %2, dims = [1] : (tensor<3xf32>) -> tensor<2x3xf32>",
        "accy.reduce add %3, dims = [1] : (tensor<2x3xf32>) -> tensor<2xf32>",
        "batching_dims = [0] x [0], contracting_dims = [2] x [1]",
        "accy.iterate 5 iter_args(",
        "accy.tanh %6 : tensor<?x3xbf16>",
    ]:
        assert piece in printed, piece
    reparsed = accy.parse(printed)
    assert text(reparsed) == printed
    generic = io.StringIO()
    Printer(stream=generic, print_generic_format=True).print_op(module)
    assert text(accy.parse(generic.getvalue())) == printed


def test_every_op_kind_is_built():
    names = {op.name for op in build_every_op().walk() if op.name.startswith("accy.")}
    expected = {f"accy.{n}" for n in BINARY + UNARY_ANY + UNARY_FLOAT} | {
        "accy.constant",
        "accy.compare",
        "accy.select",
        "accy.convert",
        "accy.broadcast_in_dim",
        "accy.reshape",
        "accy.transpose",
        "accy.reduce",
        "accy.dot_general",
        "accy.scan",
        "accy.iterate",
        "accy.yield",
    }
    assert expected <= names


# ---------------------------------------------------------------------------------------
# Donated parameters
# ---------------------------------------------------------------------------------------


def test_donated_parameters_carry_the_attribute():
    b = accy.Builder()
    fb = b.begin_function("f", [T("f32", 4)] * 3, [T("f32", 4)], donated=[0, 2])
    fb.return_([fb.add(fb.parameter(0), fb.parameter(1))])
    fb.finish()
    module = b.finish()
    (function,) = ops_of(module, func.FuncOp)
    assert ops.donated_parameters(function) == (True, False, True)
    assert "%0: tensor<4xf32> {accy.donated}, %1: tensor<4xf32>, %2" in text(module)
    assert accy.parse(text(module)).is_structurally_equivalent(module)


def test_no_parameter_is_donated_by_default():
    (function,) = ops_of(
        one_function([T("f32", 4)], [T("f32", 4)], lambda fb: [fb.parameter(0)]), func.FuncOp
    )
    assert function.arg_attrs is None
    assert ops.donated_parameters(function) == (False,)


def test_donating_a_missing_parameter_is_an_error():
    b = accy.Builder()
    with pytest.raises(accy.AccyError, match=r"@f: donated parameter #2 does not exist \(it has 2"):
        b.begin_function("f", [T("f32", 4)] * 2, [], donated=[2])
