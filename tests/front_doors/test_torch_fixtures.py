"""What `accy.torch.compile` exports, stored, so the importer is tested without PyTorch:
torch-mlir's StableHLO of a module with its parameters and buffers as arguments
(`accy.torch.Stateless`), the arguments and PyTorch's outputs.

`tests/data/torch/{encoder_layer,lstm}.*` were made with torch 2.13, torch-mlir 20261001
and transformers-free modules: `torch.manual_seed(0)`,
`nn.TransformerEncoderLayer(32, 4, 64, batch_first=True)` on `torch.randn(2, 6, 32)` and
`nn.LSTM(8, 16, batch_first=True)` on `torch.randn(2, 5, 8)`, in eval mode, exported as
`CompiledModule._compile` does (`argN`: the arguments, state first; `expectedN`: the
module's outputs, flattened)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import accy

DATA = Path(__file__).resolve().parents[1] / "data" / "torch"


@pytest.mark.parametrize("name", ["encoder_layer", "lstm"])
def test_a_stored_stateless_export_matches_pytorch(name):
    text = (DATA / f"{name}.stablehlo.mlir").read_text()
    assert "dense_resource" not in text  # the weights arrive as arguments
    data = np.load(DATA / f"{name}.npz")
    arguments = [data[f"arg{i}"] for i in range(sum(k.startswith("arg") for k in data))]
    expected = [data[f"expected{i}"] for i in range(sum(k.startswith("exp") for k in data))]
    outputs = accy.compile(text)["main"](*arguments)
    assert len(outputs) == len(expected)
    for got, want in zip(outputs, expected):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=2e-6)


@pytest.mark.parametrize("name", ["encoder_layer", "lstm"])
def test_the_same_export_imports_with_accy_opt(name, capsys):
    from accy.cli.opt import main

    main(["--import-stablehlo", str(DATA / f"{name}.stablehlo.mlir")])
    out = capsys.readouterr().out
    assert "func.func @main" in out and "accy.dot_general" in out
