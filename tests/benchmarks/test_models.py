"""`benchmarks/models.py` on the five JAX programs of tests/data/stablehlo (no JAX needed:
XLA's figures come from the stored `.xla.json`), and the zoo's files."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import ml_dtypes
import models
import numpy as np

ROOT = Path(__file__).resolve().parents[2]
ZOO = ROOT / "benchmarks" / "zoo" / "data"


def test_the_five_programs_are_correct_and_plan_xla_s_temporaries(capsys):
    assert models.main(["--data", str(ROOT / "tests" / "data" / "stablehlo"), "--repeat", "1"]) == 0
    out = capsys.readouterr().out
    assert "5 of 5 programs correct" in out
    for name, temp in (("mlp", 131072), ("layernorm", 2048), ("softmax", 512)):
        row = next(line for line in out.splitlines() if line.startswith(name + " "))
        assert row.split()[1:5] == ["correct", str(temp), str(temp), "1.00"], row


def test_a_refused_program_is_reported_with_its_diagnostic(capsys, tmp_path):
    """A program accy refuses (here an FFT of the zoo's cumulative inputs) is listed with
    the located diagnostic, and the run goes on."""
    for suffix in (".npz", ".xla.json"):
        shutil.copy(ZOO / f"cumulative{suffix}", tmp_path / f"spectrum{suffix}")
    (tmp_path / "spectrum.stablehlo.mlir").write_text(
        """func.func public @main(%x: tensor<8x256xf32>) -> tensor<8x129xcomplex<f32>> {
  %0 = stablehlo.fft %x, type = RFFT, length = [256] : (tensor<8x256xf32>) -> tensor<8x129xcomplex<f32>>
  return %0 : tensor<8x129xcomplex<f32>>
}"""
    )
    assert models.main(["--data", str(tmp_path), "--programs", "spectrum", "--repeat", "1"]) == 0
    out = capsys.readouterr().out
    assert "spectrum (refused): " in out and "spectrum.stablehlo.mlir:" in out


def test_every_zoo_program_has_its_text_data_and_xla_figures():
    names = sorted(p.name.removesuffix(".stablehlo.mlir") for p in ZOO.glob("*.stablehlo.mlir"))
    assert len(names) >= 15
    for name in names:
        inputs, outputs = models.load_arrays(ZOO / f"{name}.npz")
        assert inputs and outputs, name
        facts = json.loads((ZOO / f"{name}.xla.json").read_text())
        assert facts["temp_size_in_bytes"] >= 0 and facts["xla_cpu_seconds"] > 0, name
    inputs, outputs = models.load_arrays(ZOO / "mixed_precision_matmul.npz")
    assert inputs[0].dtype == ml_dtypes.bfloat16 and outputs[0].dtype == ml_dtypes.bfloat16
    assert np.isfinite(outputs[0].astype(np.float32)).all()
