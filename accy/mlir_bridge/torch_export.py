"""A PyTorch `ExportedProgram` to StableHLO text, with torch-mlir's FX importer (the
bindings' own Python package: `torch_mlir.fx`; `accy.torch` exports through it)."""

from __future__ import annotations

from typing import Any

from accy.mlir_bridge.errors import MlirUnavailableError


def stablehlo_of_exported_program(program: Any) -> str:
    """`program` (`torch.export.export`'s) decomposed and lowered to StableHLO by
    torch-mlir, as text."""
    try:
        from torch_mlir import fx
    except ImportError as error:
        raise MlirUnavailableError(f"torch-mlir's FX importer is not available ({error})") from None
    return str(fx.export_and_import(program, output_type="stablehlo"))
