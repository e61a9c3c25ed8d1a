"""The conformance runner's modules live in `benchmarks/` (scripts, not the package)."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
for folder in (ROOT / "benchmarks", Path(__file__).parent):
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))
