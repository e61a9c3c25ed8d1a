"""Programs PyTorch writes, through torch-mlir's exporter as written: weights as
`dense_resource` blobs in the file's `dialect_resources` section, scalars as
`arith.constant`, and the upcasts around each bf16 product (`convert` to f32, the product,
its bias, `convert` back), whose epilogue feeds the next product's operand prologue.

`tests/data/torch/bf16_mlp.*` was made with torch 2.13 and torch-mlir 20261001:
`torch.manual_seed(0)`, `nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 8))` in
bf16, `x = torch.randn(4, 16, dtype=torch.bfloat16)`,
`str(torch_mlir.fx.export_and_import(model, x, output_type="stablehlo"))`, and the model's
own output (`arg0_bits`, `expected_bits`: the bf16 bits as uint16). With torch installed,
the export is also made and checked anew."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import accy

DATA = Path(__file__).resolve().parents[1] / "data" / "torch"

RESOURCE = """module {
  func.func @main(%x: tensor<3xf32>) -> (tensor<3xf32>, tensor<2xi1>) {
    %w = stablehlo.constant dense_resource<torch_tensor_3_torch.float32> : tensor<3xf32>
    %m = stablehlo.constant dense_resource<mask> : tensor<2xi1>
    %s = arith.constant dense<2.0> : tensor<f32>
    %b = stablehlo.broadcast_in_dim %s, dims = [] : (tensor<f32>) -> tensor<3xf32>
    %y = stablehlo.multiply %x, %w : tensor<3xf32>
    %z = stablehlo.add %y, %b : tensor<3xf32>
    return %z, %m : tensor<3xf32>, tensor<2xi1>
  }
}

{-#
  dialect_resources: {
    builtin: {
      torch_tensor_3_torch.float32: "0x040000000000803F00000040000040C0",
      mask: "0x010000000100"
    }
  }
#-}
"""


def test_dense_resource_weights_and_arith_constants_import():
    module = accy.import_stablehlo(RESOURCE)
    x = np.array([1.0, 2.0, 3.0], np.float32)
    values, mask = accy.compile(module, target="cpu")(x)
    np.testing.assert_array_equal(values, x * np.array([1.0, 2.0, -3.0], np.float32) + 2)
    np.testing.assert_array_equal(mask, [True, False])


def test_a_dense_resource_without_its_blob_is_a_located_error():
    text = RESOURCE.replace("mask: ", "other: ")
    with pytest.raises(accy.AccyError) as error:
        accy.import_stablehlo(text, filename="model.mlir")
    message = error.value.diagnostic()
    assert message.startswith("model.mlir:4:10: error:"), message
    assert "dense_resource<mask>, whose blob the text does not hold" in message


def _bf16(bits: np.ndarray) -> np.ndarray:
    return bits.view(ml_dtypes.bfloat16)


def test_the_bf16_mlp_pytorch_exports_matches_pytorch():
    module = accy.import_stablehlo(DATA / "bf16_mlp.stablehlo.mlir")
    data = np.load(DATA / "bf16_mlp.npz")
    x, expected = _bf16(data["arg0_bits"]), _bf16(data["expected_bits"])
    (got,) = accy.compile(module, target="cpu")(x)
    assert got.dtype == expected.dtype
    np.testing.assert_array_equal(got, accy.reference.run(module, "main", x)[0])
    np.testing.assert_allclose(got.astype(np.float32), expected.astype(np.float32), atol=2e-2)


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="PyTorch not installed")
def test_a_fresh_export_of_a_bf16_mlp_matches_pytorch():
    import torch
    from torch_mlir import fx

    torch.manual_seed(1)
    model = torch.nn.Sequential(
        torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 32)
    ).to(torch.bfloat16)
    x = torch.randn(8, 64, dtype=torch.bfloat16)
    module = accy.import_stablehlo(str(fx.export_and_import(model, x, output_type="stablehlo")))
    bits = x.view(torch.int16).numpy().view(np.uint16)
    (got,) = accy.compile(module, target="cpu")(_bf16(bits))
    want = model(x).float().detach().numpy()
    np.testing.assert_allclose(got.astype(np.float32), want, atol=3e-2, rtol=2e-2)
