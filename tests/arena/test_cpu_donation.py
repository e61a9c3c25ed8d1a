"""Donated parameters on the CPU, planned with `donate=True`: a result that takes a donated
parameter's buffer over in place (an optimizer's `p - lr * g`) is planned with `accy.donor`
on its out-parameter, and a call writes it into the caller's array and returns that array;
an array that cannot be given up (read-only, or shared with another argument) gets a fresh
result. Without `donate` no argument is ever written."""

from __future__ import annotations

import numpy as np
import pytest

import accy
from accy.reference import run
from accy.targets.cpu_executable import CpuSignature

STEP = """func.func @step(%p: tensor<256xf32> {accy.donated}, %g: tensor<256xf32>) -> (tensor<256xf32>, tensor<f32>) {
  %lr = accy.constant dense<0.5> : tensor<256xf32>
  %u = accy.multiply %lr, %g : tensor<256xf32>
  %q = accy.subtract %p, %u : tensor<256xf32>
  %n = accy.reduce add %g, dims = [0] : (tensor<256xf32>) -> tensor<f32>
  func.return %q, %n : tensor<256xf32>, tensor<f32>
}"""

RNG = np.random.default_rng(23)


def _arrays() -> tuple[np.ndarray, np.ndarray]:
    return (RNG.standard_normal(256).astype(np.float32) for _ in range(2))  # type: ignore[return-value]


def test_the_update_is_planned_to_take_the_parameter_over():
    executable = accy.compile(accy.parse(STEP), target="cpu", donate=True)
    assert "accy.output = 0 : i64, accy.donor = 0 : i64" in str(executable.planned)
    assert executable.step.signature.donors == (0, None)
    signature = executable.step.signature
    assert CpuSignature.from_json(signature.to_json()) == signature


def test_a_call_writes_the_result_into_the_donated_array():
    module = accy.parse(STEP)
    step = accy.compile(module, target="cpu", donate=True).step
    p, g = _arrays()
    want = run(module, "step", p.copy(), g.copy())
    given = p
    q, n = step(p, g)
    assert q is given  # the caller's array, now holding the result
    np.testing.assert_allclose(q, want[0], rtol=1e-6)
    np.testing.assert_allclose(n, want[1], rtol=1e-5)


def test_without_donate_no_argument_is_written():
    module = accy.parse(STEP)
    executable = accy.compile(module, target="cpu")
    assert "accy.donor" not in str(executable.planned)
    step = executable.step
    p, g = _arrays()
    before = p.copy()
    q, _ = step(p, g)
    assert q is not p
    np.testing.assert_array_equal(p, before)
    np.testing.assert_allclose(q, run(module, "step", p, g)[0], rtol=1e-6)


@pytest.mark.parametrize("case", ["read-only", "shared", "passed twice"])
def test_an_array_that_cannot_be_given_up_gets_a_fresh_result(case):
    module = accy.parse(STEP)
    step = accy.compile(module, target="cpu", donate=True).step
    p, g = _arrays()
    if case == "read-only":
        p.setflags(write=False)
    elif case == "shared":  # g overlaps p's second half
        whole = np.concatenate([p, g])
        p, g = whole[:256], whole[128:384]
    else:
        g = p
    before = p.copy()
    want = run(module, "step", before, g.copy() if g is not p else before)
    q, n = step(p, g)
    assert q is not p
    np.testing.assert_array_equal(p, before)
    np.testing.assert_allclose(q, want[0], rtol=1e-6)
    np.testing.assert_allclose(n, want[1], rtol=1e-5)


def test_the_cuda_target_takes_its_own_arena_copy_over():
    # The device arena holds a copy of the donated parameter: donating writes no host array.
    module = accy.parse(STEP)
    prepared = accy.prepare(module, target="cuda", donate=True)
    assert prepared.arena.functions["step"].donors == {}
