"""The errors of the MLIR bridge.

`MlirUnavailableError`: the bindings an operation needs are not installed;
`UpstreamMlirError`: MLIR rejected the input (parse, verification, pass or JIT failure),
with MLIR's own diagnostics; `UpstreamParseError`: StableHLO text that does not parse (an
`UpstreamMlirError` with the first error's message and location); `LibdeviceNotFoundError`:
kernels call libdevice's math and it was not found. A leaf: it imports nothing of accy,
and every other module of the bridge may import it.
"""

from __future__ import annotations


class MlirUnavailableError(ImportError):
    """The MLIR bindings needed for an operation are not installed."""


class UpstreamMlirError(RuntimeError):
    """MLIR rejected the input: parse, verification, pass or JIT failure.

    ``diagnostics`` holds MLIR's own diagnostic text (``loc: error: message`` lines).
    """

    def __init__(self, stage: str, diagnostics: str):
        self.stage = stage
        self.diagnostics = diagnostics.strip()
        super().__init__(
            f"{stage} failed:\n{self.diagnostics}" if self.diagnostics else f"{stage} failed"
        )


class LibdeviceNotFoundError(FileNotFoundError):
    """libdevice.10.bc is needed (kernels call ``__nv_*`` math) but was not found."""


class UpstreamParseError(UpstreamMlirError):
    """Upstream MLIR could not parse (or verify) the text; ``message`` is its first error
    and ``location`` that error's ``(file, line, col)`` (or ``None``)."""

    def __init__(self, diagnostics: str, message: str, location: tuple[str, int, int] | None):
        super().__init__("parsing upstream MLIR", diagnostics)
        self.message = message
        self.location = location
