"""The order reductions accumulate in on the CPU target: no long sequential chain, so a
float sum of n elements is off by O(log n) roundings, not O(n) (see *Reductions* in
`passes/lower/cpu.py`).

A single f32 chain adding 2**24 copies of 1.1 ends about 1e-3 off (10**8 copies: 2.7%);
the blocked loops stay within a few roundings (under 1e-6 here). Each case below also
matches the reference (numpy, summing pairwise) and gives the same bits on 1 and 2
threads (every order is fixed at lowering).
"""

from __future__ import annotations

import re

import ml_dtypes
import numpy as np
import pytest
from accy.passes.families.reduce_chunks import REDUCE_CHUNK
from accy.passes.lower.cpu_kernels.reduction import REDUCE_FAN, REDUCE_LEAF
from accy.passes.lower.scalar import blocked_steps

import accy

BF16 = np.dtype(ml_dtypes.bfloat16)


def reduce_program(kind: str, shape: tuple[int, ...], dims: list[int], element: str) -> str:
    source = "tensor<" + "x".join(map(str, shape)) + f"x{element}>"
    kept = [size for d, size in enumerate(shape) if d not in dims]
    result = "tensor<" + "".join(f"{size}x" for size in kept) + f"{element}>"
    return f"""
func.func @f(%x: {source}) -> {result} {{
  %r = accy.reduce {kind} %x, dims = {dims} : ({source}) -> {result}
  func.return %r : {result}
}}"""


# name: (shape, dims, value); every element is `value`, so the exact sum is known.
SUMS = {
    "flat": ((2**24 + 5,), [0], 1.1),  # one row, 257 chunks (the last one 5 elements)
    "rows": ((4, 2**22), [1], 1.1),  # few rows: split, 64 chunks per row
    "columns": ((2**22, 4), [0], 0.1),  # the innermost reduced dim is strided
    "two_dims": ((32, 2, 65536), [0, 2], 1.1),  # an outer reduced dim and an inner one
}


@pytest.mark.parametrize("name", sorted(SUMS))
def test_f32_sums_are_accurate(name: str) -> None:
    shape, dims, value = SUMS[name]
    text = reduce_program("add", shape, dims, "f32")
    exe = accy.compile(text, target="cpu", threads=1)
    x = np.full(shape, value, np.float32)
    (got,) = exe(x)
    exact = float(np.float32(value)) * np.prod([shape[d] for d in dims], dtype=np.float64)
    relative = np.abs(got.astype(np.float64) - exact) / exact
    assert relative.max() < 1e-5, (got, exact)
    (reference,) = accy.reference.run(exe.module, "f", x)
    np.testing.assert_allclose(got, reference, rtol=1e-5)
    (parallel,) = accy.compile(text, target="cpu", threads=2)(x)
    np.testing.assert_array_equal(parallel, got)


def test_random_row_sums_match_the_reference_and_float64() -> None:
    rng = np.random.default_rng(3)
    x = rng.uniform(0.0, 1.0, (3, 1_000_003)).astype(np.float32)
    exe = accy.compile(reduce_program("add", x.shape, [1], "f32"), target="cpu")
    (got,) = exe(x)
    exact = x.astype(np.float64).sum(axis=1)
    np.testing.assert_allclose(got, exact, rtol=1e-6)
    (reference,) = accy.reference.run(exe.module, "f", x)
    np.testing.assert_allclose(got, reference, rtol=1e-6)


def test_other_kinds_of_split_reductions_are_exact() -> None:
    # max, min and wrapping integer sums and products do not depend on the order.
    rng = np.random.default_rng(5)
    x = rng.uniform(-1.0, 1.0, (2, 300_001)).astype(np.float32)
    x[1, 123_457] = 7.0
    n = rng.integers(-9, 10, (2, 300_001)).astype(np.int32)
    for kind, array, element in (("max", x, "f32"), ("min", x, "f32"), ("add", n, "i32"),
                                 ("mul", n | 1, "i32")):  # fmt: skip
        exe = accy.compile(reduce_program(kind, array.shape, [1], element), target="cpu")
        assert "%partials = memref.view %arena" in exe.lowered_text  # the planned workspace
        (got,) = exe(array)
        (reference,) = accy.reference.run(exe.module, "f", array)
        np.testing.assert_array_equal(got, reference)


def test_float_products_keep_one_chain() -> None:
    """A float product is neither blocked nor split: its rounding errors add up alike in
    any order, and accumulators restarting from 1 lose more of the sub-ulp parts of
    factors near 1."""
    rng = np.random.default_rng(5)
    x = rng.uniform(0.9999, 1.0001, (2, 300_001)).astype(np.float32)
    exe = accy.compile(reduce_program("mul", x.shape, [1], "f32"), target="cpu")
    assert "partials" not in exe.lowered_text
    assert exe.lowered_text.count("iter_args") == 1
    (got,) = exe(x)
    np.testing.assert_allclose(got, np.prod(x.astype(np.float64), axis=1), rtol=2e-3)


@pytest.mark.parametrize("element", ["bf16", "f16"])
def test_low_precision_sums_accumulate_in_f32(element: str) -> None:
    # A bf16 accumulator stalls at 256 (256 + 1 rounds to 256), an f16 one at 2048.
    dtype = BF16 if element == "bf16" else np.dtype(np.float16)
    width = 4096 if element == "f16" else 2**20
    x = np.ones((3, width), dtype)
    exe = accy.compile(reduce_program("add", x.shape, [1], element), target="cpu")
    (got,) = exe(x)
    assert got.dtype == dtype
    np.testing.assert_array_equal(got.astype(np.float64), [width] * 3)
    (reference,) = accy.reference.run(exe.module, "f", x)
    np.testing.assert_array_equal(got, reference)


def test_loops_are_blocked_and_split() -> None:
    """The 10**8-element sum: chunks of REDUCE_CHUNK in parallel, each in the loops of
    blocked_steps (whole blocks, then the last partial one), then the chunks' partials
    in loops of REDUCE_FAN."""
    n = 10**8
    assert (REDUCE_LEAF, REDUCE_FAN, REDUCE_CHUNK) == (256, 16, 65536)
    assert blocked_steps(n, REDUCE_LEAF, REDUCE_FAN) == [2**24, 2**20, 2**16, 2**12, 2**8]
    assert blocked_steps(REDUCE_CHUNK, REDUCE_LEAF, REDUCE_FAN) == [4096, 256]
    assert blocked_steps(200, REDUCE_LEAF, REDUCE_FAN) == []
    exe = accy.compile(reduce_program("add", (n,), [0], "f32"), target="cpu")
    text = exe.lowered_text
    chunks = -(-n // REDUCE_CHUNK)
    assert f"to memref<{chunks * 4}xi8>" in text  # the planned partials workspace,
    assert f"to memref<{chunks}xf32>" in text  # viewed as one f32 per chunk
    assert text.count("scf.parallel") == 1
    constants = dict(re.findall(r"(%\d+) = arith.constant (\d+) : index", text))
    steps = re.findall(r"scf.for %\d+ = %\w+ to %\w+ step (%\d+) iter_args", text)
    # Chunks: 4096-blocks of 256-blocks of elements; 1526 partials: 256-blocks of 16.
    assert {int(constants[s]) for s in steps} == {1, 256, 4096, 16}
    # Only the innermost loops' adds are reassociated: those of the whole 256-blocks of
    # whole 4096-blocks, of the last 4096-block's whole 256-blocks, and of its last.
    assert text.count("fastmath<reassoc>") == 3


def test_many_rows_are_not_split() -> None:
    exe = accy.compile(reduce_program("add", (512, 70000), [1], "f32"), target="cpu")
    assert "partials" not in exe.lowered_text
    assert exe.lowered_text.count("scf.parallel") == 1
