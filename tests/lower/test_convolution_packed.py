"""`convolution.packed` (CPU): f32 convolutions whose kernel keeps its output features in
another dim than its last run on the register tiles, reading a packed copy of the kernel
(`accy.passes.families.convolution_packed`)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import accy
from accy.reference import run

CONV = """func.func @conv(%x: tensor<2x7x7x{i}x{t}>, %w: tensor<{wshape}x{t}>) -> tensor<2x7x7x{o}x{t}> {{
  %c = accy.convolution %x, %w, lhs_dims = [0, 3, 1, 2], rhs_dims = {rhs_dims}, result_dims = [0, 3, 1, 2], strides = [1, 1], padding_low = [1, 1], padding_high = [1, 1], lhs_dilation = [1, 1], rhs_dilation = [1, 1], reversal = {reversal}, feature_groups = 1, batch_groups = 1 : (tensor<2x7x7x{i}x{t}>, tensor<{wshape}x{t}>) -> tensor<2x7x7x{o}x{t}>
  %zero = accy.constant dense<0.0> : tensor<2x7x7x{o}x{t}>
  %r = accy.maximum %c, %zero : tensor<2x7x7x{o}x{t}>
  func.return %r : tensor<2x7x7x{o}x{t}>
}}"""
"""A 3x3 convolution, NHWC input and result, and a ReLU (its epilogue)."""

LAYOUTS = {
    # kernel layout: (rhs_dims = [input feature, output feature, spatial...], its shape)
    "HWIO": ("[2, 3, 0, 1]", "3x3x{i}x{o}"),
    "HWOI": ("[3, 2, 0, 1]", "3x3x{o}x{i}"),  # JAX's input gradients: [0, 1, o, i]
    "OIHW": ("[1, 0, 2, 3]", "{o}x{i}x3x3"),
}


def conv(layout: str, i: int, o: int, reversal: str = "[0, 0]", t: str = "f32") -> str:
    rhs_dims, wshape = LAYOUTS[layout]
    return CONV.format(
        i=i, o=o, rhs_dims=rhs_dims, wshape=wshape.format(i=i, o=o), reversal=reversal, t=t
    )


def _families(exe) -> list[str | None]:
    return [
        op.family.data if op.family else None
        for op in exe.planned.walk()
        if op.name == "accy.kernel"
    ]


@pytest.mark.parametrize(
    "layout, reversal, family",
    [
        ("HWIO", "[0, 0]", None),  # the tiles read the kernel in place
        ("HWOI", "[1, 1]", "convolution.packed"),  # an input gradient's reversed kernel
        ("OIHW", "[0, 0]", "convolution.packed"),
        ("OIHW", "[0, 1]", "convolution.packed"),
    ],
)
def test_convolutions_match_the_reference_whatever_the_kernel_layout(layout, reversal, family):
    module = accy.parse(conv(layout, 5, 16, reversal))
    exe = accy.compile(module)
    assert _families(exe) == [family]
    rng = np.random.default_rng(11)
    x = rng.uniform(-1, 1, (2, 7, 7, 5)).astype(np.float32)
    w = rng.uniform(-1, 1, exe.conv.params[1].shape)
    w = w.astype(np.float32)
    np.testing.assert_allclose(exe(x, w)[0], run(module, "conv", x, w)[0], rtol=1e-5, atol=1e-5)


def test_the_packed_kernel_is_a_planned_workspace():
    (term,) = accy.prepare(accy.parse(conv("OIHW", 5, 16))).workspaces.terms
    # 9 window positions x 5 input features x 16 output features of f32
    assert (term.family, term.name, term.bytes) == ("convolution.packed", "kernel", 9 * 5 * 16 * 4)


def test_a_convolution_without_tiles_packs_nothing():
    # 12 output features: not a multiple of the tiles' 8 lanes
    exe = accy.compile(accy.parse(conv("OIHW", 5, 12)))
    assert _families(exe) == [None]


@pytest.mark.parametrize("layout", ["HWIO", "OIHW"])
def test_bf16_convolutions_run_on_the_tiles_and_round_once(layout):
    """bf16 operands are extended as loaded (or packed in f32), the sums rounded once."""
    module = accy.parse(conv(layout, 5, 16, t="bf16"))
    exe = accy.compile(module)
    assert "vector.fma" in exe.lowered_text
    rng = np.random.default_rng(13)
    x = rng.uniform(-1, 1, (2, 7, 7, 5)).astype(ml_dtypes.bfloat16)
    shape = (3, 3, 5, 16) if layout == "HWIO" else (16, 5, 3, 3)
    w = rng.uniform(-1, 1, shape).astype(ml_dtypes.bfloat16)
    got = exe(x, w)[0].astype(np.float32)
    want = run(module, "conv", x, w)[0].astype(np.float32)
    np.testing.assert_allclose(got, want, rtol=2**-7, atol=2**-7)


GROUPED = """func.func @grouped(%x: tensor<2x7x7x6xf32>, %w: tensor<3x3x3x32xf32>) -> tensor<2x7x7x32xf32> {
  %c = accy.convolution %x, %w, lhs_dims = [0, 3, 1, 2], rhs_dims = [2, 3, 0, 1], result_dims = [0, 3, 1, 2], strides = [1, 1], padding_low = [1, 1], padding_high = [1, 1], lhs_dilation = [1, 1], rhs_dilation = [1, 1], reversal = [0, 0], feature_groups = 2, batch_groups = 1 : (tensor<2x7x7x6xf32>, tensor<3x3x3x32xf32>) -> tensor<2x7x7x32xf32>
  func.return %c : tensor<2x7x7x32xf32>
}"""


def test_grouped_convolutions_run_on_the_tiles_one_group_a_tile():
    """Two groups of 3 input and 16 output features: each tile reads its group's inputs."""
    module = accy.parse(GROUPED)
    exe = accy.compile(module)
    assert "vector.fma" in exe.lowered_text
    rng = np.random.default_rng(17)
    x = rng.uniform(-1, 1, (2, 7, 7, 6)).astype(np.float32)
    w = rng.uniform(-1, 1, (3, 3, 3, 32)).astype(np.float32)
    np.testing.assert_allclose(exe(x, w)[0], run(module, "grouped", x, w)[0], rtol=1e-5, atol=1e-5)


NCHW = """func.func @nchw(%x: tensor<2x5x7x7x{t}>, %w: tensor<16x5x3x3x{t}>, %b: tensor<16x{t}>) -> tensor<2x16x7x7x{t}> {{
  %c = accy.convolution %x, %w, lhs_dims = [0, 1, 2, 3], rhs_dims = [1, 0, 2, 3], result_dims = [0, 1, 2, 3], strides = [1, 1], padding_low = [1, 1], padding_high = [1, 1], lhs_dilation = [1, 1], rhs_dilation = [1, 1], reversal = [0, 0], feature_groups = 1, batch_groups = 1 : (tensor<2x5x7x7x{t}>, tensor<16x5x3x3x{t}>) -> tensor<2x16x7x7x{t}>
  %bb = accy.broadcast_in_dim %b, dims = [1] : (tensor<16x{t}>) -> tensor<2x16x7x7x{t}>
  %s = accy.add %c, %bb : tensor<2x16x7x7x{t}>
  func.return %s : tensor<2x16x7x7x{t}>
}}"""
"""PyTorch's layout: NCHW input and result, OIHW kernel, and a bias (the epilogue)."""


@pytest.mark.parametrize("t", ["f32", "bf16"])
def test_nchw_convolutions_run_on_the_tiles(t):
    """The features are not the result's last dim: each tile stores them one by one."""
    module = accy.parse(NCHW.format(t=t))
    exe = accy.compile(module)
    assert _families(exe) == ["convolution.packed"] and "vector.fma" in exe.lowered_text
    dtype = np.float32 if t == "f32" else ml_dtypes.bfloat16
    rng = np.random.default_rng(19)
    args = [rng.uniform(-1, 1, s).astype(dtype) for s in ((2, 5, 7, 7), (16, 5, 3, 3), (16,))]
    got = exe(*args)[0].astype(np.float32)
    want = run(module, "nchw", *args)[0].astype(np.float32)
    tolerance = 1e-5 if t == "f32" else 2**-7
    np.testing.assert_allclose(got, want, rtol=tolerance, atol=tolerance)


@pytest.mark.parametrize("layout", ["HWIO", "OIHW"])
def test_a_convolution_epilogue_may_end_in_a_narrowing_convert(layout, tmp_path):
    # ReLU then bf16: one kernel stores the bf16 value; the f32 result is never stored.
    text = (
        conv(layout, 5, 16)
        .replace(
            "func.return %r : tensor<2x7x7x16xf32>",
            "%n = accy.convert %r : (tensor<2x7x7x16xf32>) -> tensor<2x7x7x16xbf16>\n"
            "  func.return %n : tensor<2x7x7x16xbf16>",
        )
        .replace("-> tensor<2x7x7x16xf32> {", "-> tensor<2x7x7x16xbf16> {")
    )
    module = accy.parse(text)
    prepared = accy.prepare(module, target="cpu")
    assert [i.root.name for i in prepared.schedule.work_items] == ["accy.convert"]
    assert prepared.arena.functions["conv"].offsets == {}
    exe = accy.compile(module)
    rng = np.random.default_rng(5)
    x = rng.uniform(-1, 1, (2, 7, 7, 5)).astype(np.float32)
    w = rng.uniform(-1, 1, exe.conv.params[1].shape).astype(np.float32)
    got, want = exe(x, w)[0], run(module, "conv", x, w)[0]
    assert got.dtype == ml_dtypes.bfloat16
    np.testing.assert_allclose(
        got.astype(np.float32), want.astype(np.float32), rtol=1e-2, atol=1e-2
    )
    from accy.runtime.plan_check import plan_problems, ptxas_problems, run_with_fake_driver

    directory = accy.export(module, tmp_path / "conv", target="cuda")
    assert not ptxas_problems(directory)
    result = run_with_fake_driver(directory, [np.ones_like(x), np.ones_like(w)], function="conv")
    assert not plan_problems(directory, "conv", result)
