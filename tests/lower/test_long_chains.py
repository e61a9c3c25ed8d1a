"""A fused group of any length lowers: its elements are built without recursion (a
transformer's layers fuse hundreds of elementwise ops into one kernel)."""

from __future__ import annotations

import numpy as np

import accy
from accy.reference import run
from accy.runtime.plan_check import ptxas_problems

CHAIN = 1200
"""Ops in the chain: RecursionError at about 450 before (two Python frames an op)."""


def _chain(ops: int):
    b = accy.Builder()
    t = b.tensor("f32", [16])
    fb = b.begin_function("chain", [t], [t])
    x = v = fb.parameter(0)
    for i in range(ops):
        v = fb.add(v, x) if i % 2 else fb.negate(v)
    fb.return_([v])
    fb.finish()
    return b.finish()


def test_a_chain_of_a_thousand_elementwise_ops_is_one_kernel_on_both_targets(tmp_path):
    module = _chain(CHAIN)
    preparation = accy.prepare(module)
    assert preparation.schedule.work_item_count() == 1
    x = np.linspace(-1, 1, 16).astype(np.float32)
    (got,) = accy.compile(module, target="cpu", threads=1)(x)
    np.testing.assert_allclose(got, run(module, "chain", x)[0], rtol=1e-6, atol=1e-6)
    assert not ptxas_problems(accy.export(module, tmp_path / "chain", target="cuda"))
