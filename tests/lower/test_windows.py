"""`accy.convolution`, `accy.reduce_window` and `accy.select_and_scatter` on the CPU target
and in the reference interpreter, against direct loops over StableHLO's definitions
written out here (one output element at a time), for the layouts, strides, paddings,
dilations, reversals and groups JAX emits; and the CUDA export of each."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import accy
from accy.builder import Builder
from accy.reference import run
from accy.runtime.plan_check import ptxas_problems

ROOT = Path(__file__).resolve().parents[2]
RNG = np.random.default_rng(7)


def direct_convolution(
    x, w, *, lhs, rhs, out, strides, padding, lhs_dil, rhs_dil, rev, fg, bg, dtype
):
    """StableHLO's convolution element by element (float64 or the integer type)."""
    lb, lf, *ls = lhs
    ri, ro, *rs = rhs
    ob, of, *os = out
    spatial = len(ls)
    kernel = [w.shape[d] for d in rs]
    inputs, outputs = w.shape[ri], w.shape[ro]
    sizes = []
    for i in range(spatial):
        n = x.shape[ls[i]]
        dilated = (n - 1) * lhs_dil[i] + 1
        padded = dilated + sum(padding[i])
        extent = (kernel[i] - 1) * rhs_dil[i] + 1
        sizes.append(max(0, (padded - extent) // strides[i] + 1))
    shape = [0] * x.ndim
    shape[ob], shape[of] = x.shape[lb] // bg, outputs
    for i in range(spatial):
        shape[os[i]] = sizes[i]
    wide = np.float64 if np.dtype(dtype).kind == "f" else dtype
    result = np.zeros(shape, wide)
    for at in np.ndindex(*shape):
        b, o = at[ob], at[of]
        if bg > 1:
            b += (o // (outputs // bg)) * (x.shape[lb] // bg)
        base = (o // (outputs // fg)) * inputs if fg > 1 else 0
        total = wide(0)
        for k in np.ndindex(*kernel):
            position = []
            for i in range(spatial):
                p = at[os[i]] * strides[i] + k[i] * rhs_dil[i] - padding[i][0]
                if p < 0 or p % lhs_dil[i] or p // lhs_dil[i] >= x.shape[ls[i]]:
                    break
                position.append(p // lhs_dil[i])
            else:
                for c in range(inputs):
                    xi = [0] * x.ndim
                    xi[lb], xi[lf] = b, base + c
                    wi = [0] * w.ndim
                    wi[ri], wi[ro] = c, o
                    for i in range(spatial):
                        xi[ls[i]] = position[i]
                        wi[rs[i]] = kernel[i] - 1 - k[i] if rev[i] else k[i]
                    total = total + wide(x[tuple(xi)]) * wide(w[tuple(wi)])
        result[at] = total
    return result.astype(dtype)


# (lhs shape, rhs shape, layouts, window attributes): NHWC/HWIO "SAME", NCHW/OIHW strided
# with negative and uneven padding, a transposed (lhs-dilated) 1-D one, atrous (rhs
# dilation) with reversal, depthwise, grouped, batch-grouped (a weight gradient), 3-D.
CONVOLUTIONS = {
    "nhwc_same": (
        (2, 7, 6, 3),
        (3, 3, 3, 4),
        ([0, 3, 1, 2], [2, 3, 0, 1], [0, 3, 1, 2]),
        {"padding": [(1, 1), (1, 1)]},
    ),
    "nchw_strided": (
        (2, 3, 9, 8),
        (5, 3, 3, 2),
        ([0, 1, 2, 3], [1, 0, 2, 3], [0, 1, 2, 3]),
        {"strides": [2, 3], "padding": [(2, -1), (0, 1)]},
    ),
    "transposed_1d": (
        (2, 6, 4),
        (3, 4, 5),
        ([0, 2, 1], [1, 2, 0], [0, 2, 1]),
        {"lhs_dilation": [2], "padding": [(2, 2)]},
    ),
    "atrous_reversed": (
        (1, 9, 9, 2),
        (3, 2, 2, 3),
        ([0, 3, 1, 2], [2, 3, 0, 1], [0, 3, 1, 2]),
        {"rhs_dilation": [2, 3], "reversal": [True, False]},
    ),
    "depthwise": (
        (2, 8, 8, 4),
        (3, 3, 1, 8),
        ([0, 3, 1, 2], [2, 3, 0, 1], [0, 3, 1, 2]),
        {"padding": [(1, 1), (1, 1)], "feature_groups": 4},
    ),
    "grouped_result_layout": (
        (1, 6, 5, 5),
        (4, 3, 2, 2),
        ([0, 1, 2, 3], [1, 0, 2, 3], [1, 0, 3, 2]),
        {"feature_groups": 2},
    ),
    "batch_groups": (
        (4, 5, 5, 2),
        (3, 3, 2, 6),
        ([0, 3, 1, 2], [2, 3, 0, 1], [3, 0, 1, 2]),
        {"batch_groups": 2},
    ),
    # register tiles (output features a multiple of 8, last in the result and the kernel)
    "tiles_nhwc": (
        (2, 7, 10, 3),
        (3, 3, 3, 16),
        ([0, 3, 1, 2], [2, 3, 0, 1], [0, 3, 1, 2]),
        {"padding": [(1, 1), (2, 0)], "strides": [1, 2], "rhs_dilation": [2, 1]},
    ),
    "tiles_transposed_reversed": (
        (1, 5, 6, 4),
        (2, 3, 4, 40),
        ([0, 3, 1, 2], [2, 3, 0, 1], [0, 3, 1, 2]),
        {"lhs_dilation": [2, 2], "padding": [(1, 1), (2, 2)], "reversal": [False, True]},
    ),
    "tiles_strided_input_gradient": (  # phased rows: a multiple of the dilation positions
        (2, 4, 5, 8),
        (3, 3, 8, 16),
        ([0, 3, 1, 2], [2, 3, 0, 1], [0, 3, 1, 2]),
        {
            "lhs_dilation": [2, 3],
            "padding": [(2, 1), (2, 4)],
            "strides": [1, 2],
            "reversal": [True, True],
        },
    ),
    "tiles_rows_across_lines": (  # 7x7 positions: rows of four across lines, one-row rest
        (1, 7, 7, 5),
        (3, 3, 5, 16),
        ([0, 3, 1, 2], [2, 3, 0, 1], [0, 3, 1, 2]),
        {"padding": [(1, 1), (1, 1)]},
    ),
    "tiles_weight_gradient": (  # rows over the result's batch (the input features)
        (2, 6, 6, 13),
        (2, 6, 6, 16),
        ([3, 0, 1, 2], [0, 3, 1, 2], [2, 3, 0, 1]),
        {"padding": [(1, 1), (1, 1)]},
    ),
    "tiles_batch_groups": (  # 8 output features per batch group: the group's batch part
        (4, 6, 6, 3),
        (3, 3, 3, 16),
        ([0, 3, 1, 2], [2, 3, 0, 1], [0, 3, 1, 2]),
        {"padding": [(1, 1), (1, 1)], "batch_groups": 2},
    ),
    "tiles_depthwise_weight_gradient": (  # one feature per batch group: lane-wise reads
        (2, 6, 6, 16),
        (2, 6, 6, 16),
        ([3, 0, 1, 2], [0, 3, 1, 2], [2, 3, 0, 1]),
        {"padding": [(1, 1), (1, 1)], "batch_groups": 16},
    ),
    "tiles_1d": (
        (2, 50, 1),
        (10, 1, 8),
        ([0, 2, 1], [1, 2, 0], [0, 2, 1]),
        {"strides": [5]},
    ),
    "tiles_nchw_input": (
        (2, 3, 6, 6),
        (3, 3, 3, 24),
        ([0, 1, 2, 3], [2, 3, 0, 1], [0, 3, 1, 2]),
        {"padding": [(1, 1), (1, 1)]},
    ),
    "volume": (
        (1, 4, 5, 3, 2),
        (2, 2, 2, 2, 3),
        ([0, 4, 1, 2, 3], [3, 4, 0, 1, 2], [0, 4, 1, 2, 3]),
        {"padding": [(1, 0), (0, 1), (1, 1)]},
    ),
}


def _window(attributes, spatial):
    ones = [1] * spatial
    return {
        "strides": attributes.get("strides", ones),
        "padding": attributes.get("padding", [(0, 0)] * spatial),
        "lhs_dil": attributes.get("lhs_dilation", ones),
        "rhs_dil": attributes.get("rhs_dilation", ones),
        "rev": attributes.get("reversal", [False] * spatial),
        "fg": attributes.get("feature_groups", 1),
        "bg": attributes.get("batch_groups", 1),
    }


def _convolution_module(lhs_shape, rhs_shape, layouts, attributes, dtype, result_dtype):
    b = Builder()
    x_t, w_t = b.tensor(dtype, lhs_shape), b.tensor(dtype, rhs_shape)
    probe = Builder()
    fb = probe.begin_function("probe", [x_t, w_t], [])
    y = fb.convolution(
        fb.parameter(0),
        fb.parameter(1),
        lhs_dims=layouts[0],
        rhs_dims=layouts[1],
        result_dims=layouts[2],
        dtype=result_dtype,
        **attributes,
    )
    fb = b.begin_function("conv", [x_t, w_t], [y.type])
    fb.return_(
        [
            fb.convolution(
                fb.parameter(0),
                fb.parameter(1),
                lhs_dims=layouts[0],
                rhs_dims=layouts[1],
                result_dims=layouts[2],
                dtype=result_dtype,
                **attributes,
            )
        ]
    )
    fb.finish()
    return b.finish()


@pytest.mark.parametrize("name", sorted(CONVOLUTIONS))
def test_convolution_matches_direct_loops(name):
    lhs_shape, rhs_shape, layouts, attributes = CONVOLUTIONS[name]
    x = RNG.standard_normal(lhs_shape).astype(np.float32)
    w = RNG.standard_normal(rhs_shape).astype(np.float32)
    module = _convolution_module(lhs_shape, rhs_shape, layouts, attributes, "f32", None)
    expected = direct_convolution(
        x,
        w,
        lhs=layouts[0],
        rhs=layouts[1],
        out=layouts[2],
        dtype=np.float32,
        **_window(attributes, len(lhs_shape) - 2),
    )
    (reference,) = run(module, "conv", x, w)
    (compiled,) = accy.compile(module, threads=1)(x, w)
    np.testing.assert_allclose(reference, expected, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(compiled, expected, rtol=1e-5, atol=1e-5)


def test_integer_convolution_accumulates_in_its_result_type():
    """i8 x i8 -> i32 (StableHLO's preferred element type): products beyond i8."""
    lhs_shape, rhs_shape, layouts, attributes = CONVOLUTIONS["nchw_strided"]
    x = RNG.integers(-128, 128, lhs_shape).astype(np.int8)
    w = RNG.integers(-128, 128, rhs_shape).astype(np.int8)
    module = _convolution_module(lhs_shape, rhs_shape, layouts, attributes, "i8", "i32")
    expected = direct_convolution(
        x.astype(np.int32),
        w.astype(np.int32),
        lhs=layouts[0],
        rhs=layouts[1],
        out=layouts[2],
        dtype=np.int32,
        **_window(attributes, 2),
    )
    assert np.abs(expected).max() > 127
    np.testing.assert_array_equal(run(module, "conv", x, w)[0], expected)
    np.testing.assert_array_equal(accy.compile(module, threads=1)(x, w)[0], expected)


def test_bf16_convolution_accumulates_in_f32_and_rounds_once():
    lhs_shape, rhs_shape, layouts, attributes = CONVOLUTIONS["nhwc_same"]
    bf16 = ml_dtypes.bfloat16
    x = RNG.standard_normal(lhs_shape).astype(bf16)
    w = RNG.standard_normal(rhs_shape).astype(bf16)
    module = _convolution_module(lhs_shape, rhs_shape, layouts, attributes, "bf16", None)
    expected = direct_convolution(
        x.astype(np.float64),
        w.astype(np.float64),
        lhs=layouts[0],
        rhs=layouts[1],
        out=layouts[2],
        dtype=np.float64,
        **_window(attributes, 2),
    ).astype(bf16)
    for got in (run(module, "conv", x, w)[0], accy.compile(module, threads=1)(x, w)[0]):
        assert got.dtype == bf16
        np.testing.assert_array_equal(got, expected)


def direct_reduce_window(xs, inits, body, window, strides, base, dilation, padding):
    """Each output element folds its window of the dilated, padded operands (init in the
    holes and the padding) from the inits, in row-major order."""
    rank = xs[0].ndim
    sizes = []
    for d in range(rank):
        n = xs[0].shape[d]
        dilated = (n - 1) * base[d] + 1
        padded = dilated + sum(padding[d])
        extent = (window[d] - 1) * dilation[d] + 1
        sizes.append(max(0, (padded - extent) // strides[d] + 1))
    results = [np.empty(sizes, x.dtype) for x in xs]
    for at in np.ndindex(*sizes):
        acc = list(inits)
        for k in np.ndindex(*window):
            elements = []
            for x, init in zip(xs, inits):
                index = []
                for d in range(rank):
                    p = at[d] * strides[d] + k[d] * dilation[d] - padding[d][0]
                    if p < 0 or p % base[d] or p // base[d] >= x.shape[d]:
                        break
                    index.append(p // base[d])
                elements.append(x[tuple(index)] if len(index) == rank else init)
            acc = body(*acc, *elements)
        for result, value in zip(results, acc):
            result[at] = value
    return results


def _reduce_window_module(shapes, dtypes_, body, **window):
    b = Builder()
    types = [b.tensor(t, s) for t, s in zip(dtypes_, shapes)]
    scalars = [b.tensor(t, []) for t in dtypes_]
    probe = Builder().begin_function("probe", [*types, *scalars], [])
    results = probe.reduce_window(
        [probe.parameter(i) for i in range(len(types))],
        [probe.parameter(len(types) + i) for i in range(len(types))],
        body,
        **window,
    )
    fb = b.begin_function("pool", [*types, *scalars], [r.type for r in results])
    count = len(types)
    fb.return_(
        fb.reduce_window(
            [fb.parameter(i) for i in range(count)],
            [fb.parameter(count + i) for i in range(count)],
            body,
            **window,
        )
    )
    fb.finish()
    return b.finish()


@pytest.mark.parametrize(
    "window",
    [
        {
            "window": [1, 3, 3, 1],
            "strides": [1, 2, 2, 1],
            "padding": [(0, 0), (1, 1), (0, 1), (0, 0)],
        },
        {
            "window": [2, 2, 1, 1],
            "base_dilations": [2, 1, 1, 1],
            "window_dilations": [1, 2, 1, 1],
            "padding": [(1, 0), (-1, 2), (0, 0), (0, 0)],
        },
        {"window": [1, 1, 2, 2], "strides": [1, 1, 3, 1]},
    ],
)
def test_reduce_window_max_and_sum_match_direct_loops(window):
    x = RNG.standard_normal((2, 7, 6, 3)).astype(np.float32)
    full = {
        "strides": [1] * 4,
        "base_dilations": [1] * 4,
        "window_dilations": [1] * 4,
        "padding": [(0, 0)] * 4,
    } | window
    for body, init, name in (
        (lambda bb, a, c: [bb.maximum(a, c)], np.float32(-np.inf), "max"),
        (lambda bb, a, c: [bb.add(a, c)], np.float32(0.5), "add"),
    ):
        module = _reduce_window_module([x.shape], ["f32"], body, **window)
        step = np.maximum if name == "max" else (lambda a, c: np.float32(a + c))
        (expected,) = direct_reduce_window(
            [x],
            [init],
            lambda a, c, step=step: [step(a, c)],
            full["window"],
            full["strides"],
            full["base_dilations"],
            full["window_dilations"],
            full["padding"],
        )
        (reference,) = run(module, "pool", x, init)
        (compiled,) = accy.compile(module, threads=1)(x, init)
        np.testing.assert_allclose(reference, expected, rtol=1e-6)
        np.testing.assert_allclose(compiled, expected, rtol=1e-6)


def test_reduce_window_with_a_general_body_folds_two_operands():
    """A windowed argmax: the greatest value and its position, ties to the first."""
    x = RNG.integers(0, 4, (5, 6)).astype(np.float32)
    positions = np.arange(30, dtype=np.int32).reshape(5, 6)

    def body(bb, value, index, candidate, position):
        better = bb.compare("GT", candidate, value)
        return [bb.select(better, candidate, value), bb.select(better, position, index)]

    window = {"window": [2, 3], "strides": [1, 2], "padding": [(0, 1), (1, 1)]}
    module = _reduce_window_module([x.shape, x.shape], ["f32", "i32"], body, **window)
    inits = (np.float32(-np.inf), np.int32(-1))

    def step(v, i, c, p):
        return [c, p] if c > v else [v, i]

    expected = direct_reduce_window(
        [x, positions], inits, step, [2, 3], [1, 2], [1, 1], [1, 1], window["padding"]
    )
    for got in (
        run(module, "pool", x, positions, *inits),
        accy.compile(module, threads=1)(x, positions, *inits),
    ):
        np.testing.assert_array_equal(got[0], expected[0])
        np.testing.assert_array_equal(got[1], expected[1])


def direct_select_and_scatter(x, source, init, window, strides, padding, ge=True):
    result = np.full(x.shape, init, x.dtype)
    for s in np.ndindex(*source.shape):
        picked = None
        for k in np.ndindex(*window):
            at = tuple(i * st + kk - lo for i, st, kk, (lo, _) in zip(s, strides, k, padding))
            if all(0 <= a < n for a, n in zip(at, x.shape)) and (
                picked is None or not (x[picked] >= x[at] if ge else x[picked] <= x[at])
            ):
                picked = at
        if picked is not None:
            result[picked] = result[picked] + source[s]
    return result


@pytest.mark.parametrize(
    ("shape", "window", "strides", "padding"),
    [
        ((2, 8, 8, 3), [1, 2, 2, 1], [1, 2, 2, 1], [(0, 0)] * 4),
        ((1, 7, 9, 2), [1, 3, 3, 1], [1, 2, 2, 1], [(0, 0), (1, 1), (1, 1), (0, 0)]),
        ((6, 5), [3, 2], [1, 1], [(2, 0), (0, 1)]),
        ((3, 4), [1, 1], [1, 1], [(0, 0), (0, 0)]),  # no dim moves (the fuzzer's)
    ],
)
def test_select_and_scatter_matches_direct_loops(shape, window, strides, padding):
    x = RNG.integers(0, 3, shape).astype(np.float32)  # ties: the first greatest is picked
    rank = len(shape)
    b = Builder()
    out = [(shape[d] + sum(padding[d]) - window[d]) // strides[d] + 1 for d in range(rank)]
    fb = b.begin_function(
        "grad",
        [b.tensor("f32", shape), b.tensor("f32", out), b.tensor("f32", [])],
        [b.tensor("f32", shape)],
    )
    fb.return_(
        [
            fb.select_and_scatter(
                fb.parameter(0),
                fb.parameter(1),
                fb.parameter(2),
                lambda bb, a, c: bb.compare("GE", a, c),
                lambda bb, a, c: bb.add(a, c),
                window=window,
                strides=strides,
                padding=padding,
            )
        ]
    )
    fb.finish()
    module = b.finish()
    source = RNG.standard_normal(out).astype(np.float32)
    init = np.float32(0.25)
    expected = direct_select_and_scatter(x, source, init, window, strides, padding)
    np.testing.assert_allclose(run(module, "grad", x, source, init)[0], expected, rtol=1e-6)
    np.testing.assert_allclose(
        accy.compile(module, threads=1)(x, source, init)[0], expected, rtol=1e-6
    )


def test_running_bf16_sum_rounds_every_step_and_stays_linear():
    """JAX's cumsum (a reduce_window over the whole axis) imports as an accy.scan; in bf16
    its carry is rounded every step, as the body's bf16 add computes."""
    text = """func.func @main(%x: tensor<4x300xbf16>) -> tensor<4x300xbf16> {
  %zero = stablehlo.constant dense<0.0> : tensor<bf16>
  %0 = "stablehlo.reduce_window"(%x, %zero) <{padding = dense<[[0, 0], [299, 0]]> : tensor<2x2xi64>, window_dimensions = array<i64: 1, 300>}> ({
  ^bb0(%a: tensor<bf16>, %b: tensor<bf16>):
    %s = stablehlo.add %a, %b : tensor<bf16>
    stablehlo.return %s : tensor<bf16>
  }) : (tensor<4x300xbf16>, tensor<bf16>) -> tensor<4x300xbf16>
  return %0 : tensor<4x300xbf16>
}"""
    module = accy.import_stablehlo(text)
    assert [op.name for op in module.walk() if op.name.startswith("accy.")] == [
        "accy.constant",
        "accy.broadcast_in_dim",
        "accy.scan",
    ]
    x = (RNG.standard_normal((4, 300)) * 0.3).astype(ml_dtypes.bfloat16)
    expected = np.empty_like(x)
    for row in range(4):
        total = ml_dtypes.bfloat16(0)
        for j in range(300):
            total = ml_dtypes.bfloat16(np.float32(total) + np.float32(x[row, j]))
            expected[row, j] = total
    np.testing.assert_array_equal(run(module, "main", x)[0], expected)
    np.testing.assert_array_equal(accy.compile(module, threads=1)(x)[0], expected)


def test_pool_takes_the_batch_norm_and_activation_before_it():
    """A 2x2 pool's windows do not overlap, so the elementwise chain before it fuses into
    its kernel: the convolution's output is the only temporary."""
    text = (ROOT / "benchmarks" / "zoo" / "data" / "cnn_block.stablehlo.mlir").read_text()
    prepared = accy.prepare(accy.import_stablehlo(text))
    kinds = [item.kind.value for item in prepared.schedule.work_items]
    assert kinds == ["convolution", "window"]


def _gpu_programs():
    spec = importlib.util.spec_from_file_location(
        "accy_gpu_programs_windows", ROOT / "benchmarks" / "gpu" / "programs.py"
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return {p.name: p for p in module.PROGRAMS}


@pytest.mark.parametrize("name", ["conv2d", "max_pool", "pool_gradient"])
def test_gpu_check_programs_match_their_oracle_on_the_cpu(name):
    """The GPU script's window programs and their numpy oracles agree on the CPU target
    (so a mismatch on the GPU is the GPU's)."""
    program = _gpu_programs()[name]
    inputs = program.make_inputs()
    got = accy.compile(program.text)(*inputs)
    for value, expected in zip(got, program.expected(*inputs)):
        np.testing.assert_allclose(value, expected, rtol=1e-4, atol=1e-4)


def test_every_window_kind_exports_for_cuda(tmp_path):
    """ptxas accepts the kernels (checked by the export) and the planned launches."""
    programs = _gpu_programs()
    for name in ("conv2d", "max_pool", "pool_gradient"):
        directory = accy.export(programs[name].text, tmp_path / name, target="cuda")
        assert list(directory.glob("*.ptx")), name


EPILOGUE = """func.func @main(%x: tensor<2x6x6x3xf32>, %w: tensor<3x3x3x{o}xf32>, %b: tensor<{o}xf32>) -> {result} {{
  %c = accy.convolution %x, %w, lhs_dims = [0, 3, 1, 2], rhs_dims = [2, 3, 0, 1], result_dims = [0, 3, 1, 2], strides = [1, 1], padding_low = [1, 1], padding_high = [1, 1], lhs_dilation = [1, 1], rhs_dilation = [1, 1], reversal = [0, 0], feature_groups = 1, batch_groups = 1 : (tensor<2x6x6x3xf32>, tensor<3x3x3x{o}xf32>) -> tensor<2x6x6x{o}xf32>
  %bb = accy.broadcast_in_dim %b, dims = [3] : (tensor<{o}xf32>) -> tensor<2x6x6x{o}xf32>
  %y = accy.add %c, %bb : tensor<2x6x6x{o}xf32>
  %zero = accy.constant dense<0.0> : tensor<2x6x6x{o}xf32>
  %r = accy.maximum %y, %zero : tensor<2x6x6x{o}xf32>
  {tail}
}}"""


def _epilogue_program(features: int, tail: str, result: str) -> str:
    return EPILOGUE.format(o=features, tail=tail, result=result)


@pytest.mark.parametrize("features", [16, 4])  # register tiles, and element by element
def test_convolution_computes_its_bias_and_activation_epilogue(features, tmp_path):
    t = f"tensor<2x6x6x{features}xf32>"
    text = _epilogue_program(features, f"func.return %r : {t}", t)
    prepared = accy.prepare(accy.parse(text))
    (item,) = prepared.schedule.work_items
    assert item.kind.value == "convolution" and item.root.name == "accy.maximum"
    x = RNG.standard_normal((2, 6, 6, 3)).astype(np.float32)
    w = RNG.standard_normal((3, 3, 3, features)).astype(np.float32)
    bias = RNG.standard_normal(features).astype(np.float32)
    conv = direct_convolution(
        x,
        w,
        lhs=[0, 3, 1, 2],
        rhs=[2, 3, 0, 1],
        out=[0, 3, 1, 2],
        dtype=np.float32,
        **_window({"padding": [(1, 1), (1, 1)]}, 2),
    )
    (got,) = accy.compile(text, threads=1)(x, w, bias)
    np.testing.assert_allclose(got, np.maximum(conv + bias, 0), rtol=1e-5, atol=1e-5)
    assert list(accy.export(text, tmp_path / "e", target="cuda").glob("*.ptx"))


@pytest.mark.parametrize(
    ("tail", "result"),
    [
        # the convolution is also returned: it is stored
        (
            "func.return %r, %c : tensor<2x6x6x16xf32>, tensor<2x6x6x16xf32>",
            "(tensor<2x6x6x16xf32>, tensor<2x6x6x16xf32>)",
        ),
        # the chain reshapes
        (
            "%s = accy.reshape %r : (tensor<2x6x6x16xf32>) -> tensor<72x16xf32>\n  func.return %s : tensor<72x16xf32>",
            "tensor<72x16xf32>",
        ),
    ],
)
def test_convolution_keeps_its_result_where_an_epilogue_cannot_take_it(tail, result):
    text = _epilogue_program(16, tail, result)
    prepared = accy.prepare(accy.parse(text))
    kinds = [(i.kind.value, i.root.name) for i in prepared.schedule.work_items]
    assert kinds[0] == ("convolution", "accy.convolution")
    x = RNG.standard_normal((2, 6, 6, 3)).astype(np.float32)
    w = RNG.standard_normal((3, 3, 3, 16)).astype(np.float32)
    bias = RNG.standard_normal(16).astype(np.float32)
    module = accy.parse(text)
    for got, expected in zip(
        accy.compile(text, threads=1)(x, w, bias), run(module, "main", x, w, bias)
    ):
        np.testing.assert_allclose(
            np.asarray(got, np.float32), np.asarray(expected, np.float32), rtol=1e-2
        )


def test_custom_syntax_round_trips_through_the_parser():
    """The dialect test's program (lit_tests/dialect/windows.mlir) parses, prints and
    parses back to the same text, and holds each window op once."""
    text = (ROOT / "lit_tests" / "dialect" / "windows.mlir").read_text()
    module = accy.parse(text)
    printed = str(module)
    assert str(accy.parse(printed)) == printed
    names = [op.name.removeprefix("accy.") for op in module.walk()]
    for name in ("convolution", "reduce_window", "select_and_scatter"):
        assert names.count(name) == (2 if name == "convolution" else 1), name


def test_a_convolution_family_of_the_users_runs_one_thread_per_element(tmp_path):
    """Another family for the `convolution` kind (a user's file) leaves the convolution and
    its epilogue to the one-thread-per-element kernel; ptxas accepts it."""
    families = tmp_path / "families.toml"
    families.write_text('[[family]]\nid = "convolution.direct"\nkinds = ["convolution"]\n')
    t = "tensor<2x6x6x16xf32>"
    text = _epilogue_program(16, f"func.return %r : {t}", t)
    directory = accy.export(text, tmp_path / "direct", target="cuda", families=[families])
    ptx = (directory / "accy_kernels.ptx").read_text()
    assert ".entry main_item0_convolution(" in ptx and "convolution_tiled" not in ptx


PADDED_TAPS = """func.func @conv(%x: tensor<1x1x4x{t}>, %w: tensor<1x1x3x{t}>) -> tensor<1x1x{n}x{t}> {{
  %c = accy.convolution %x, %w, lhs_dims = [0, 1, 2], rhs_dims = [1, 0, 2], result_dims = [0, 1, 2], strides = [1], padding_low = [1], padding_high = [1], lhs_dilation = [{d}], rhs_dilation = [1], reversal = [0], feature_groups = 1, batch_groups = 1 : (tensor<1x1x4x{t}>, tensor<1x1x3x{t}>) -> tensor<1x1x{n}x{t}>
  func.return %c : tensor<1x1x{n}x{t}>
}}"""


@pytest.mark.parametrize("t", ["f32", "bf16"])
@pytest.mark.parametrize("dilation", [1, 2])
def test_padded_taps_multiply_zero_by_the_weight(t, dilation, tmp_path):
    """A window position on padding (or a dilation hole) reads zero and multiplies it like
    any other: an inf weight there makes the element NaN, as StableHLO's interpreter
    and XLA say (it was skipped: [2, inf, inf, inf] for [nan, inf, inf, inf])."""
    n = 4 if dilation == 1 else 7
    module = accy.parse(PADDED_TAPS.format(t=t, d=dilation, n=n))
    dtype = ml_dtypes.bfloat16 if t == "bf16" else np.float32
    x = np.ones((1, 1, 4), dtype)
    w = np.array([np.inf, 1, 1], dtype).reshape(1, 1, 3)
    if dilation == 1:
        expected = [np.nan, np.inf, np.inf, np.inf]
    else:  # x dilated: 1 0 1 0 1 0 1, padded by one zero each side
        expected = [np.nan, np.inf, np.nan, np.inf, np.nan, np.inf, np.nan]
    expected = np.array(expected, np.float32).reshape(1, 1, n)
    (reference,) = run(module, "conv", x, w)
    (compiled,) = accy.compile(module, threads=1)(x, w)
    np.testing.assert_array_equal(reference.astype(np.float32), expected)
    np.testing.assert_array_equal(compiled.astype(np.float32), expected)
    assert not ptxas_problems(accy.export(module, tmp_path / "conv", target="cuda"))
