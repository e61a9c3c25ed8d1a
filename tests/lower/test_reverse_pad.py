"""`accy.reverse` and `accy.pad`: the reference's semantics (checked against numpy), the CPU
target's loops (against the reference, bit for bit), fusion into their consumers, the
builder's shapes and the CUDA target's kernels (accepted by the plan and PTX)."""

from __future__ import annotations

import numpy as np
import pytest
from accy.passes.fusion import FUSION

import accy
from accy import reference
from accy.diagnostics import AccyError

PADS = [
    # (shape, low, high, interior)
    ((2, 3), [0, -2], [0, -3], [0, 1]),
    ((4, 5), [1, 2], [3, 0], [0, 0]),
    ((4, 5), [-1, 0], [0, -2], [2, 1]),
    ((3,), [2], [2], [3]),
    ((0, 3), [1, 1], [1, 0], [0, 2]),
    ((), [], [], []),
    ((2, 3, 4), [0, 1, -1], [1, 0, 0], [1, 0, 2]),
]


def _pad_text(shape, low, high, interior, element="f32"):
    t = f"tensor<{'x'.join(map(str, shape))}{'x' if shape else ''}{element}>"
    size = [lo + hi + n + max(n - 1, 0) * i for n, lo, hi, i in zip(shape, low, high, interior)]
    r = f"tensor<{'x'.join(map(str, size))}{'x' if size else ''}{element}>"
    return f"""
func.func @f(%x: {t}, %v: tensor<{element}>) -> {r} {{
  %p = accy.pad %x, %v, low = {low}, high = {high}, interior = {interior} : ({t}, tensor<{element}>) -> {r}
  func.return %p : {r}
}}"""


def _numpy_pad(x, v, low, high, interior):
    """Pad by definition: each result index maps back to an operand index or to `v`."""
    shape = [lo + hi + n + max(n - 1, 0) * i for n, lo, hi, i in zip(x.shape, low, high, interior)]
    out = np.full(shape, v, dtype=x.dtype)
    for index in np.ndindex(*shape):
        source = []
        for i, n, lo, inner in zip(index, x.shape, low, interior):
            j = i - lo
            if j < 0 or j % (inner + 1) or j // (inner + 1) >= n:
                break
            source.append(j // (inner + 1))
        else:
            out[index] = x[tuple(source)]
    return out


@pytest.mark.parametrize(("shape", "low", "high", "interior"), PADS)
def test_pad_matches_its_definition_on_both_paths(shape, low, high, interior):
    x = np.arange(1, int(np.prod(shape)) + 1, dtype=np.float32).reshape(shape)
    v = np.float32(-7.5)
    expected = _numpy_pad(x, v, low, high, interior)
    text = _pad_text(shape, low, high, interior)
    np.testing.assert_array_equal(reference.run(accy.parse(text), "f", x, v)[0], expected)
    np.testing.assert_array_equal(accy.compile(text, threads=1)(x, v)[0], expected)


def test_reverse_matches_numpy_and_fuses_into_its_consumer():
    text = """
func.func @f(%x: tensor<3x4x5xi32>) -> (tensor<3x4x5xi32>, tensor<4xi32>) {
  %r = accy.reverse %x, dims = [0, 2] : tensor<3x4x5xi32>
  %m = accy.multiply %r, %x : tensor<3x4x5xi32>
  %s = accy.reduce add %m, dims = [0, 2] : (tensor<3x4x5xi32>) -> tensor<4xi32>
  func.return %m, %s : tensor<3x4x5xi32>, tensor<4xi32>
}"""
    x = np.arange(60, dtype=np.int32).reshape(3, 4, 5)
    m = x[::-1, :, ::-1] * x
    for outputs in (reference.run(accy.parse(text), "f", x), accy.compile(text, threads=1)(x)):
        np.testing.assert_array_equal(outputs[0], m)
        np.testing.assert_array_equal(outputs[1], m.sum(axis=(0, 2)))
    module = accy.parse(text)
    prep = accy.prepare(module)
    reverse = next(op for op in module.walk() if op.name == "accy.reverse")
    assert prep.manager.get(FUSION, module).is_elided(reverse.results[0])


def test_pad_fuses_into_a_reduction_and_reads_a_splat_as_a_scalar():
    text = """
func.func @f(%x: tensor<6x7xbf16>) -> tensor<9xbf16> {
  %v = accy.constant dense<1.0> : tensor<bf16>
  %p = accy.pad %x, %v, low = [2, 0], high = [1, -2], interior = [0, 1] : (tensor<6x7xbf16>, tensor<bf16>) -> tensor<9x11xbf16>
  %s = accy.reduce max %p, dims = [1] : (tensor<9x11xbf16>) -> tensor<9xbf16>
  func.return %s : tensor<9xbf16>
}"""
    import ml_dtypes

    x = (np.arange(42).reshape(6, 7) - 20).astype(ml_dtypes.bfloat16)
    expected = reference.run(accy.parse(text), "f", x)[0]
    padded = _numpy_pad(x, ml_dtypes.bfloat16(1.0), [2, 0], [1, -2], [0, 1])
    np.testing.assert_array_equal(expected, padded.max(axis=1))
    np.testing.assert_array_equal(accy.compile(text, threads=1)(x)[0], expected)
    prep = accy.prepare(accy.parse(text))
    assert [w.kind.value for w in prep.schedule.work_items] == ["reduce"]


def test_booleans_reverse_and_pad():
    text = """
func.func @f(%x: tensor<2x3xi1>, %v: tensor<i1>) -> tensor<3x3xi1> {
  %r = accy.reverse %x, dims = [1] : tensor<2x3xi1>
  %p = accy.pad %r, %v, low = [1, 0], high = [0, 0], interior = [0, 0] : (tensor<2x3xi1>, tensor<i1>) -> tensor<3x3xi1>
  func.return %p : tensor<3x3xi1>
}"""
    x = np.array([[True, False, False], [False, True, True]])
    v = np.bool_(True)
    expected = np.concatenate([np.ones((1, 3), bool), x[:, ::-1]])
    np.testing.assert_array_equal(accy.compile(text, threads=1)(x, v)[0], expected)


def test_dynamic_rows_pass_through_an_unpadded_dim():
    text = """
func.func @f(%x: tensor<?x3xf32>, %v: tensor<f32>) -> tensor<?x5xf32> {
  %r = accy.reverse %x, dims = [0] : tensor<?x3xf32>
  %p = accy.pad %r, %v, low = [0, 1], high = [0, 1], interior = [0, 0] : (tensor<?x3xf32>, tensor<f32>) -> tensor<?x5xf32>
  func.return %p : tensor<?x5xf32>
}"""
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    v = np.float32(0.5)
    expected = np.pad(x[::-1], ((0, 0), (1, 1)), constant_values=0.5)
    np.testing.assert_array_equal(accy.compile(text, threads=1)(x, v)[0], expected)
    with pytest.raises(AccyError, match="pads a dynamic dim"):
        accy.compile(text.replace("interior = [0, 0]", "interior = [1, 0]"))


def test_builder_shapes():
    f32 = np.dtype(np.float32)
    b = accy.Builder()
    fb = b.begin_function(
        "f", [accy.Builder.tensor(f32, [4, 5])], [accy.Builder.tensor(f32, [7, 8])]
    )
    x = fb.parameter(0)
    r = fb.reverse(x, [1])
    p = fb.pad(r, fb.constant(accy.Builder.tensor(f32, []), 0.0), [1, -1], [2, 0], [0, 1])
    assert r.type == x.type
    assert tuple(p.type.get_shape()) == (7, 8)
    fb.return_([p])
    fb.finish()
    module = b.finish()
    x_ = np.arange(20, dtype=np.float32).reshape(4, 5)
    expected = _numpy_pad(x_[:, ::-1], np.float32(0.0), [1, -1], [2, 0], [0, 1])
    np.testing.assert_array_equal(accy.compile(module, threads=1)(x_)[0], expected)


def test_cuda_exports_reverse_and_pad(tmp_path):
    text = _pad_text((4, 5), [-1, 0], [0, -2], [2, 1])
    directory = accy.export(text, tmp_path / "pad", target="cuda")
    assert list(directory.glob("*.ptx"))


DYNAMIC_SLICE = """
func.func @f(%x: tensor<5x4xf32>, %i: tensor<i64>, %j: tensor<i32>) -> (tensor<2x3xf32>, tensor<2x3xf32>) {
  %one = accy.constant dense<1> : tensor<i64>
  %k = accy.add %i, %one : tensor<i64>
  %s = accy.dynamic_slice %x[%k, %j], sizes = [2, 3] : (tensor<5x4xf32>, tensor<i64>, tensor<i32>) -> tensor<2x3xf32>
  %t = accy.exponential %s : tensor<2x3xf32>
  func.return %s, %t : tensor<2x3xf32>, tensor<2x3xf32>
}"""


@pytest.mark.parametrize(("i", "j"), [(0, 0), (1, 1), (-5, 2), (2, -1), (9, 9), (3, 1)])
def test_dynamic_slice_clamps_its_starts(i, j):
    """Starts are clamped into [0, extent - size] (StableHLO's rule), per dim, at run time."""
    x = np.arange(20, dtype=np.float32).reshape(5, 4)
    args = (x, np.int64(i), np.int32(j))
    first = min(max(i + 1, 0), 3)
    second = min(max(j, 0), 1)
    block = x[first : first + 2, second : second + 3]
    outputs = reference.run(accy.parse(DYNAMIC_SLICE), "f", *args)
    np.testing.assert_array_equal(outputs[0], block)
    compiled = accy.compile(DYNAMIC_SLICE, threads=1)(*args)
    np.testing.assert_array_equal(compiled[0], block)
    np.testing.assert_allclose(compiled[1], outputs[1], rtol=1e-6)  # exp: a few ulps


def test_dynamic_slice_fuses_its_consumers_and_exports_for_cuda(tmp_path):
    module = accy.parse(DYNAMIC_SLICE)
    prep = accy.prepare(module)
    kinds = [w.kind.value for w in prep.schedule.work_items]
    # The start's add fuses into the slice's kernel (evaluated once, outside its loops);
    # the slice is stored (it is returned) and its exp reads it.
    assert kinds == ["elementwise", "elementwise"]
    directory = accy.export(DYNAMIC_SLICE, tmp_path / "dynamic_slice", target="cuda")
    assert list(directory.glob("*.ptx"))


UPDATE = """
func.func @f(%cache: tensor<6x4xf32>, %row: tensor<1x4xf32>, %t: tensor<i32>) -> tensor<6x4xf32> {
  %zero = accy.constant dense<0> : tensor<i32>
  %c = accy.dynamic_update_slice %cache, %row[%t, %zero] : (tensor<6x4xf32>, tensor<1x4xf32>, tensor<i32>, tensor<i32>) -> tensor<6x4xf32>
  func.return %c : tensor<6x4xf32>
}"""


@pytest.mark.parametrize("t", [0, 3, 5, -2, 17])
def test_dynamic_update_slice_writes_the_clamped_block(t):
    cache = np.arange(24, dtype=np.float32).reshape(6, 4)
    row = np.full((1, 4), -1.0, np.float32)
    expected = cache.copy()
    expected[min(max(t, 0), 5)] = -1.0
    args = (cache, row, np.int32(t))
    np.testing.assert_array_equal(reference.run(accy.parse(UPDATE), "f", *args)[0], expected)
    np.testing.assert_array_equal(accy.compile(UPDATE, threads=1)(*args)[0], expected)
    assert cache[0, 0] == 0.0  # the caller's array is not written


def test_dynamic_update_slice_exports_for_cuda(tmp_path):
    directory = accy.export(UPDATE, tmp_path / "update", target="cuda")
    assert list(directory.glob("*.ptx"))


TRANSPOSED_UPDATE = """
func.func @f(%cache: tensor<4x6xf32>, %row: tensor<1x4xf32>, %t: tensor<i32>) -> tensor<6x4xf32> {
  %zero = accy.constant dense<0> : tensor<i32>
  %c2 = accy.transpose %cache, dims = [1, 0] : (tensor<4x6xf32>) -> tensor<6x4xf32>
  %c = accy.dynamic_update_slice %c2, %row[%t, %zero] : (tensor<6x4xf32>, tensor<1x4xf32>, tensor<i32>, tensor<i32>) -> tensor<6x4xf32>
  func.return %c : tensor<6x4xf32>
}"""


@pytest.mark.parametrize("t", [0, 4, 11, -1])
def test_cpu_update_in_place_writes_only_the_block(t):
    """The transposed cache dies at the update, which returns it: on the CPU it lives in
    the out-parameter and the update kernel loops over the 1x4 block only."""
    prep = accy.prepare(accy.parse(TRANSPOSED_UPDATE), target="cpu")
    assert list(prep.arena.functions["f"].in_outputs.values()) == [prep.buffers.slots[-1].id]
    exe = accy.compile(TRANSPOSED_UPDATE, threads=1)
    text = exe.lowered_text
    assert "memref.view" not in text  # no arena: the transpose writes the out-parameter
    assert "memref.load %out0" not in text  # the update writes its block, reads no cache
    cache = np.arange(24, dtype=np.float32).reshape(4, 6)
    row = np.full((1, 4), -1.0, np.float32)
    args = (cache, row, np.int32(t))
    expected = reference.run(accy.parse(TRANSPOSED_UPDATE), "f", *args)[0]
    np.testing.assert_array_equal(exe(*args)[0], expected)


def test_cuda_update_of_a_donated_cache_is_in_place():
    """On CUDA the update takes the donated cache's device buffer (the plan's reuse; one
    view offset for both) and its kernel runs one thread per update element."""
    import re

    from accy.passes.analysis import AnalysisManager
    from accy.passes.lower.lower_pass import lower_module
    from accy.passes.planned_form import planned_module

    donated = UPDATE.replace("%cache: tensor<6x4xf32>", "%cache: tensor<6x4xf32> {accy.donated}")
    prep = accy.prepare(accy.parse(donated), target="cuda")
    (pair,) = prep.arena.functions["f"].reuses.items()
    assert pair[1] == 0  # the result takes slot 0, the donated cache
    planned = str(planned_module(accy.parse(donated), AnalysisManager(), "cuda"))
    views = dict(re.findall(r"%(\w+) = accy.view %arena\[(\d+)\]", planned))
    kernel = re.search(r"accy.kernel 0 \"elementwise\" ins\(%(\w+),.*outs\(%(\w+) ", planned)
    assert views[kernel.group(1)] == views[kernel.group(2)]
    lowered = str(lower_module(accy.parse(planned), AnalysisManager(), "cuda"))
    assert re.findall(r"@accy_kernels::@(\w+)", lowered) == ["f_item0_update"]


FUSED_INTO_SLICE = """func.func @f(%x: tensor<3x2xf32>) -> tensor<2x2xf32> {
  %e = accy.exponential %x : tensor<3x2xf32>
  %r = accy.reverse %e, dims = [0] : tensor<3x2xf32>
  %s = accy.slice %r [0:2, 0:2] : (tensor<3x2xf32>) -> tensor<2x2xf32>
  func.return %s : tensor<2x2xf32>
}"""


def test_a_slice_with_fused_producers_computes_them(tmp_path):
    """The reverse and the exponential fuse into the slice's kernel (a slice-rooted
    group is an elementwise kernel, not a plain copy of a stored operand)."""
    x = np.arange(6, dtype=np.float32).reshape(3, 2)
    (out,) = accy.compile(FUSED_INTO_SLICE, threads=1)(x)
    np.testing.assert_allclose(out, np.exp(x[::-1][:2]), rtol=1e-6)
    assert list(accy.export(FUSED_INTO_SLICE, tmp_path / "f", target="cuda").glob("*.ptx"))
