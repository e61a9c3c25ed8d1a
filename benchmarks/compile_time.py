"""Compile time against the number of layers, side by side with XLA and IREE.

    python benchmarks/compile_time.py [--layers 1,2,4,8,12,24] [--runs 3] [--no-iree]

Each program is a transformers 4.57 Flax GPT-2 of GPT-2-small width (768 features, 12
heads, seq 128) with `n_layer` layers, random initialisation, parameters as arguments,
lowered to StableHLO by JAX. Three figures per program, each the median of `--runs`:

- accy cold: a new process compiling the text for the CPU (`accy.compile(text)`, which
  imports StableHLO), start-up included, with an empty compile cache (so a miss: the
  compile, then its entry written); accy cached: the same with the cache holding the
  program (a hit on the text's key: no import, no planning, no lowering, no LLVM); accy
  cached module: a new process compiling `accy.import_stablehlo(text)` with the cache
  holding the program (a hit on the planned module's key: the import and the planning
  run, then the library loads);
- accy, XLA and IREE in a warm process (each compiler's libraries already loaded, one
  program compiled first; accy's compile cache off): accy's import and compile, XLA's `compile_and_load` of the same
  text, IREE's `compile_str` for `llvm-cpu` on this host, then loading it.

Needs JAX, flax and transformers 4.57 (`pip install "transformers==4.57.*" flax`), and
IREE for its column (`pip install iree-base-compiler iree-base-runtime`); none of them are
test requirements.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from models import iree_runner
from timing import print_table

COLD = "import sys, accy; accy.compile(open(sys.argv[1]).read())"
"""What a cold (and a cached) compile runs in its new process."""
MODULE = "import sys, accy; accy.compile(accy.import_stablehlo(open(sys.argv[1]).read()))"
"""The same, compiling the imported module (the cache asked by the planned module)."""


def decoder(layers: int, seq: int = 128) -> tuple[str, list]:
    """`(StableHLO text, arguments)` of a GPT-2-small-width Flax decoder of `layers` layers."""
    import jax
    import jax.numpy as jnp
    import numpy as np
    import transformers as tf

    model = tf.FlaxGPT2Model(tf.GPT2Config(n_layer=layers), seed=0)
    leaves, tree = jax.tree_util.tree_flatten(model.params)
    ids = np.zeros((1, seq), np.int32)

    def forward(leaves, ids):
        params = jax.tree_util.tree_unflatten(tree, leaves)
        mask, positions = jnp.ones_like(ids), jnp.arange(seq)[None]
        return model.module.apply({"params": params}, ids, mask, positions, deterministic=True)[0]

    text = jax.jit(forward).lower(leaves, ids).as_text()
    return text, [np.asarray(leaf) for leaf in leaves] + [ids]


def xla_compile(text: str) -> None:
    """XLA's compile of `text` for the CPU (what `jax.jit(f).lower(...).compile()` runs)."""
    from jax.extend.backend import get_backend

    backend = get_backend("cpu")
    backend.compile_and_load(text, backend.devices()[:1])


def new_process(path: Path, cache: Path, empty: bool, script: str = COLD) -> None:
    """`script` on `path` in a new process with the compile cache in `cache` (`empty`:
    emptied first)."""
    if empty:
        shutil.rmtree(cache, ignore_errors=True)
    environment = {**os.environ, "ACCY_CACHE": "1", "ACCY_CACHE_DIR": str(cache)}
    subprocess.run([sys.executable, "-c", script, str(path)], check=True, env=environment)


def median_seconds(run, runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--layers", default="1,2,4,8,12,24")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--no-iree", action="store_true", help="leave IREE out")
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args(argv)

    import accy

    os.environ["ACCY_CACHE"] = "0"  # warm figures compile; the new processes set their own
    rows = []
    with tempfile.TemporaryDirectory() as directory:
        warm_text, _ = decoder(1)
        accy.compile(accy.import_stablehlo(warm_text))  # load every library once
        xla_compile(warm_text)
        for layers in [int(n) for n in args.layers.split(",")]:
            text, arguments = decoder(layers)
            path = Path(directory) / f"gpt2_{layers}.mlir"
            path.write_text(text)
            cache = Path(directory) / f"cache_{layers}"
            cold = median_seconds(lambda: new_process(path, cache, True), args.runs)  # noqa: B023
            cached = median_seconds(lambda: new_process(path, cache, False), args.runs)  # noqa: B023
            module = median_seconds(
                lambda: new_process(path, cache, False, MODULE),  # noqa: B023
                args.runs,
            )
            warm = median_seconds(
                lambda: accy.compile(accy.import_stablehlo(text)),  # noqa: B023
                args.runs,
            )
            xla = median_seconds(lambda: xla_compile(text), args.runs)  # noqa: B023
            iree = None
            if not args.no_iree:
                found = iree_runner(text, arguments)
                iree = found[2] if isinstance(found, tuple) else None
            rows.append(
                [
                    str(layers),
                    str(text.count("stablehlo.")),
                    f"{cold:.2f}",
                    f"{cached:.2f}",
                    f"{module:.2f}",
                    f"{warm:.2f}",
                    f"{xla:.2f}",
                    "" if iree is None else f"{iree:.2f}",
                ]
            )
            print("  ".join(rows[-1]), file=sys.stderr, flush=True)
    header = [
        "layers",
        "StableHLO ops",
        "accy cold s",
        "accy cached s",
        "accy cached module s",
        "accy warm s",
        "xla s",
        "iree s",
    ]
    print_table(header, rows, args.markdown)
    return 0


if __name__ == "__main__":
    sys.exit(main())
