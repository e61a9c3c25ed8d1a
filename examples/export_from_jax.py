"""Export a small JAX model to StableHLO, import it with accy and run both.

    python examples/export_from_jax.py [--save model.stablehlo.mlir]

The model is a 2-layer MLP with GELU (tanh form): `gelu(x @ w1 + b1) @ w2 + b2`.
`jax.jit(f).lower(...).as_text()` gives the StableHLO text; `accy.import_stablehlo` turns
it into accy IR, `accy.compile(..., target="cpu")` runs it, and the result is compared
with JAX's. JAX is not a dependency of accy: without it this prints a note and exits 0
(`examples/run_stablehlo.py` runs programs JAX exported earlier, without JAX).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

import accy

BATCH, IN, HIDDEN, OUT = 32, 128, 256, 16


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--save", type=Path, help="also write the StableHLO text here")
    args = parser.parse_args()
    try:
        import jax
    except ImportError:
        print(
            "JAX is not installed: nothing to export (`pip install jax` to try this example).\n"
            "note: accy itself does not need JAX; examples/run_stablehlo.py runs the programs "
            "JAX exported into tests/data/stablehlo."
        )
        return 0

    def mlp(x, w1, b1, w2, b2):
        return jax.nn.gelu(x @ w1 + b1, approximate=True) @ w2 + b2

    rng = np.random.default_rng(0)
    inputs = [
        rng.standard_normal((BATCH, IN), dtype=np.float32),
        rng.standard_normal((IN, HIDDEN), dtype=np.float32) / np.float32(np.sqrt(IN)),
        rng.standard_normal(HIDDEN, dtype=np.float32) * np.float32(0.1),
        rng.standard_normal((HIDDEN, OUT), dtype=np.float32) / np.float32(np.sqrt(HIDDEN)),
        rng.standard_normal(OUT, dtype=np.float32) * np.float32(0.1),
    ]
    jitted = jax.jit(mlp)
    text = jitted.lower(*inputs).as_text()
    if args.save:
        args.save.write_text(text)
        print(f"wrote {args.save}")
    print(f"exported {len(text.splitlines())} lines of StableHLO from jax {jax.__version__}")

    module = accy.import_stablehlo(text, filename="mlp_gelu.stablehlo.mlir")
    exe = accy.compile(module, target="cpu")
    (ours,) = exe(*inputs)
    theirs = np.asarray(jitted(*inputs))
    error = float(np.max(np.abs(ours - theirs)))
    ok = np.allclose(ours, theirs, rtol=1e-4, atol=1e-5)
    print(
        f"accy vs JAX on {list(ours.shape)}: max abs error {error:.2e} -> "
        f"{'match' if ok else 'MISMATCH'}"
    )

    arena = exe.preparation.arena
    print(
        f"accy memory plan: arena {arena.size} bytes (lower bound {arena.lower_bound}), "
        f"temporaries {arena.temporaries_size} bytes"
    )
    stats = jitted.lower(*inputs).compile().memory_analysis()
    if stats is not None:
        print(f"XLA: temp_size_in_bytes {stats.temp_size_in_bytes}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
