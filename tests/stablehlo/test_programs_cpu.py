"""The five JAX programs end to end: import, compile for the CPU, run, compare; and the
memory plan against XLA's.

Oracles: the outputs JAX stored in `tests/data/stablehlo/NAME.npz` (`argN` inputs,
`expected` output) and XLA's memory analysis of the same program on the CPU
(`NAME.xla.json`, `temp_size_in_bytes`: the bytes XLA allocates for values that are
neither parameters nor outputs nor constants). `prep.arena.temporaries_size` is accy's
counterpart: the packed bytes of its temporaries and arena workspaces.

accy's temporaries must not exceed XLA's; a failure prints the arena report.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import numpy as np
import pytest

import accy
from accy.reports import arena_report

pytest.importorskip("torch_mlir.execution_engine", reason="torch-mlir not installed")

DATA = Path(__file__).resolve().parents[1] / "data" / "stablehlo"
PROGRAMS = ["fused_elementwise", "gelu_chain", "layernorm", "mlp", "softmax"]


def arguments(name: str) -> tuple[list[np.ndarray], np.ndarray]:
    data = np.load(DATA / f"{name}.npz")
    count = sum(key.startswith("arg") for key in data.files)
    return [data[f"arg{i}"] for i in range(count)], data["expected"]


@cache
def compiled(name: str):
    module = accy.import_stablehlo(DATA / f"{name}.stablehlo.mlir")
    return module, accy.compile(module, target="cpu")


def xla_temp_bytes(name: str) -> int:
    return json.loads((DATA / f"{name}.xla.json").read_text())["temp_size_in_bytes"]


@pytest.mark.parametrize("name", PROGRAMS)
def test_runs_on_cpu_and_matches_jax(name: str) -> None:
    _, exe = compiled(name)
    args, expected = arguments(name)
    (result,) = exe(*args)
    assert result.dtype == expected.dtype and result.shape == expected.shape
    np.testing.assert_allclose(result, expected, rtol=1e-4, atol=1e-5)
    # The caller's arrays are inputs only.
    again, _ = arguments(name)
    for before, after in zip(again, args):
        np.testing.assert_array_equal(before, after)


@pytest.mark.parametrize("name", PROGRAMS)
def test_arena_is_consistent(name: str) -> None:
    _, exe = compiled(name)
    arena = exe.preparation.arena
    assert 0 <= arena.temporaries_size <= arena.size
    assert arena.lower_bound <= arena.size
    for function in arena.functions.values():
        assert function.packer_sizes and min(function.packer_sizes.values()) == function.size


@pytest.mark.parametrize("name", PROGRAMS)
def test_temporaries_within_xla(name: str) -> None:
    module, exe = compiled(name)
    prep = exe.preparation
    ours, xla = prep.arena.temporaries_size, xla_temp_bytes(name)
    assert ours <= xla, (
        f"{name}: accy plans {ours} bytes of temporaries, XLA {xla}\n"
        + arena_report(module, prep.manager)
    )
