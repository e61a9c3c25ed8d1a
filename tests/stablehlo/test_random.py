"""The random-number ops: `rng_bit_generator` gives XLA's bits and next state for THREE_FRY
and PHILOX (8 to 64-bit outputs, scalars, odd sizes, every split of a shape), and `rng`
draws UNIFORM and NORMAL numbers of the right range and moments, the same on every call.

`tests/data/random/xla_rng_bit_generator.npz` holds what XLA's CPU backend returned for
`jax.lax.rng_bit_generator(state, shape, dtype, algorithm)` (JAX 0.10.2, x64 on) with the
states below: `<algorithm>_<dtype>_<shape>_bits` and `..._state`."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import accy

DATA = np.load(
    Path(__file__).resolve().parents[1] / "data" / "random" / "xla_rng_bit_generator.npz"
)

STATES = {
    "three_fry": [0x0000000400000001, 0x0000000100000000],
    "philox": [0x0000000400000001, 0xFFFFFFFFFFFFFFFE],  # the counter's low word wraps
}
ALGORITHMS = {"three_fry": "THREE_FRY", "philox": "PHILOX"}
DTYPES = {"uint8": "ui8", "uint16": "ui16", "uint32": "ui32", "uint64": "ui64"}


def _cases() -> list[tuple[str, str, tuple[int, ...]]]:
    cases = []
    for key in sorted(k.removesuffix("_bits") for k in DATA.files if k.endswith("_bits")):
        algorithm = key.split("_uint")[0]
        dtype, shape = key[len(algorithm) + 1 :].split("_")
        cases.append((algorithm, dtype, tuple(int(d) for d in shape.split("x") if d)))
    return cases


def _program(algorithm: str, element: str, shape: tuple[int, ...]) -> str:
    dims = "".join(f"{d}x" for d in shape)
    return f"""func.func @main(%s: tensor<2xui64>) -> (tensor<2xui64>, tensor<{dims}{element}>) {{
  %state, %bits = stablehlo.rng_bit_generator %s, algorithm = {ALGORITHMS[algorithm]} : (tensor<2xui64>) -> (tensor<2xui64>, tensor<{dims}{element}>)
  return %state, %bits : tensor<2xui64>, tensor<{dims}{element}>
}}"""


@pytest.mark.parametrize("algorithm,dtype,shape", _cases())
def test_rng_bit_generator_gives_xlas_bits_and_state(algorithm, dtype, shape):
    key = f"{algorithm}_{dtype}_{'x'.join(map(str, shape))}"
    text = _program(algorithm, DTYPES[dtype], shape)
    state = np.array(STATES[algorithm], np.uint64)
    module = accy.import_stablehlo(text)
    for outputs in (accy.compile(module)(state), accy.reference.run(module, "main", state)):
        np.testing.assert_array_equal(outputs[1], DATA[f"{key}_bits"])
        np.testing.assert_array_equal(outputs[0], DATA[f"{key}_state"])


def test_a_32_bit_state_is_read_as_pairs_of_words_and_given_back_so():
    text = """func.func @main(%s: tensor<4xui32>) -> (tensor<4xui32>, tensor<5xui64>) {
  %state, %bits = stablehlo.rng_bit_generator %s, algorithm = THREE_FRY : (tensor<4xui32>) -> (tensor<4xui32>, tensor<5xui64>)
  return %state, %bits : tensor<4xui32>, tensor<5xui64>
}"""
    state = np.array(STATES["three_fry"], np.uint64).view(np.uint32)
    new_state, bits = accy.compile(text)(state)
    np.testing.assert_array_equal(bits, DATA["three_fry_uint64_5_bits"])
    np.testing.assert_array_equal(new_state, DATA["three_fry_uint64_5_state"].view(np.uint32))


RNG = """func.func @main(%a: tensor<{t}>, %b: tensor<{t}>) -> tensor<4000x{t}> {{
  %shape = stablehlo.constant dense<[4000]> : tensor<1xi64>
  %r = "stablehlo.rng"(%a, %b, %shape) {{rng_distribution = #stablehlo<rng_distribution {d}>}} : (tensor<{t}>, tensor<{t}>, tensor<1xi64>) -> tensor<4000x{t}>
  return %r : tensor<4000x{t}>
}}"""


@pytest.mark.parametrize("element", ["f32", "f64", "bf16"])
def test_rng_uniform_floats_lie_in_the_range_and_repeat_on_every_call(element):
    exe = accy.compile(RNG.format(t=element, d="UNIFORM"))
    dtype = accy.dtypes.numpy_dtype(accy.dtypes.element_type(element))
    a, b = np.array(-2.0, dtype), np.array(3.0, dtype)
    (x,) = exe(a, b)
    wide = x.astype(np.float64)
    assert wide.min() >= -2.0 and wide.max() < 3.0
    assert abs(wide.mean() - 0.5) < 0.1 and abs(wide.std() - 5 / 12**0.5) < 0.1
    np.testing.assert_array_equal(exe(a, b)[0], x)


def test_rng_normal_floats_have_the_mean_and_deviation_asked_for():
    (x,) = accy.compile(RNG.format(t="f32", d="NORMAL"))(np.float32(1.5), np.float32(0.5))
    assert abs(x.mean() - 1.5) < 0.05 and abs(x.std() - 0.5) < 0.05
    assert np.isfinite(x).all()


def test_rng_uniform_integers_cover_the_range():
    (x,) = accy.compile(RNG.format(t="i32", d="UNIFORM"))(np.int32(-3), np.int32(4))
    assert x.min() == -3 and x.max() == 3 and len(np.unique(x)) == 7


def test_rng_normal_integers_are_refused_where_they_are_written():
    with pytest.raises(accy.AccyError, match=r"^<input>:3:8: error: mu and sigma must be floats"):
        accy.compile(RNG.format(t="i32", d="NORMAL"))  # (StableHLO's own verifier)
