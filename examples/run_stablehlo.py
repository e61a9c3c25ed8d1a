"""Run StableHLO programs exported from JAX on accy's CPU target (no JAX needed).

    python examples/run_stablehlo.py                      # every program in tests/data/stablehlo
    python examples/run_stablehlo.py path/to/f.stablehlo.mlir ...

Each `NAME.stablehlo.mlir` is imported with `accy.import_stablehlo`, compiled with
`accy.compile(..., target="cpu")` and called with the inputs stored next to it in
`NAME.npz` (`arg0`, `arg1`, ... and the `expected` output JAX computed); the result is
compared with the expected output and the memory plan is summarised: the arena against its
lower bound, the planned temporaries and, when `NAME.xla.json` is there, XLA's
`temp_size_in_bytes` for the same program. Exit status 1 if any program does not match.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

import accy

DATA = Path(__file__).resolve().parents[1] / "tests" / "data" / "stablehlo"
SUFFIX = ".stablehlo.mlir"


def companion(path: Path, suffix: str) -> Path:
    """`dir/NAME.stablehlo.mlir` → `dir/NAME{suffix}`."""
    name = path.name[: -len(SUFFIX)] if path.name.endswith(SUFFIX) else path.stem
    return path.with_name(name + suffix)


def run(path: Path) -> bool:
    module = accy.import_stablehlo(path)
    exe = accy.compile(module, target="cpu")
    arena = exe.preparation.arena
    ratio = arena.size / arena.lower_bound if arena.lower_bound else 1.0
    print(f"{path.name}:")
    print(
        f"  memory plan: arena {arena.size} bytes (lower bound {arena.lower_bound}, "
        f"ratio {ratio:.3f}), temporaries {arena.temporaries_size} bytes, "
        f"constants {arena.constant_size} bytes"
    )
    xla = companion(path, ".xla.json")
    if xla.exists():
        temp = json.loads(xla.read_text())["temp_size_in_bytes"]
        print(f"  XLA (stored): temp_size_in_bytes {temp}")
    npz = companion(path, ".npz")
    if not npz.exists():
        print(f"  no inputs ({npz.name} missing): compiled, not run")
        return True
    data = np.load(npz)
    args = [data[f"arg{i}"] for i in range(sum(k.startswith("arg") for k in data.files))]
    outputs = exe(*args)
    expected = [data[k] for k in sorted(data.files) if k.startswith("expected")]
    ok = len(outputs) == len(expected)
    for got, want in zip(outputs, expected):
        error = float(np.max(np.abs(got.astype(np.float64) - want))) if got.size else 0.0
        match = got.shape == want.shape and np.allclose(got, want, rtol=1e-4, atol=1e-5)
        ok = ok and match
        print(
            f"  output {list(got.shape)} {got.dtype}: "
            f"{'matches' if match else 'DOES NOT MATCH'} JAX (max abs error {error:.2e})"
        )
    return ok


def main(argv: list[str]) -> int:
    paths = [Path(a) for a in argv] or sorted(DATA.glob(f"*{SUFFIX}"))
    failures = 0
    for path in paths:
        try:
            failures += not run(path)
        except accy.AccyError as error:
            print(error.diagnostic(), file=sys.stderr)
            failures += 1
        except OSError as error:
            print(f"{path}: error: {error.strerror}", file=sys.stderr)
            failures += 1
    print(f"{len(paths) - failures} of {len(paths)} program(s) match")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
